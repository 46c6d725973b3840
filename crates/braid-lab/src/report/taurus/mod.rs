//! Taurus (Xia et al., VLDB 2021) §5: logging and recovery of Taurus against serial logging,
//! serial logging on RAID-0, Plover and Silo-R, on NVMe-class devices under 2PL (Figs. 5, 7)
//! and OCC (Figs. 6, 8), on bandwidth-limited disks (Figs. 9, 10), and against contention
//! (Fig. 13), on logs in DRAM (Fig. 11, [`mod@dram`]) and on the full TPC-C mix (Fig. 12,
//! [`full_mix`]), throughput against transaction length (Fig. 14, [`fig14`]) and its time
//! breakdown (Fig. 15, [`fig15`]), and the LV overhead with SIMD on and off against the number
//! of log files (Fig. 16, [`fig16`]). The verdicts of Figs. 5-10 and 13 are in [`verdict`].

mod dram;
mod fig14;
mod fig15;
mod fig16;
mod full_mix;
mod verdict;

use super::experiments::{
    BOTH, Bench, Body, DATA, Experiment, PAPER_DEVICES, RECOVERY_TXNS, Run, SILOR_INFLIGHT,
    TAURUS_WORKERS, Var, bars, cores, devices, list, occ, paced, parallel, raid0, run, sweep, top,
    vs_threads,
};
use super::plot::{Chart, Figure, Key, X, Y};
use crate::bench::BenchArgs;
use crate::common::WorkloadKind;
use braid_wal::scheme::RecoveryPlan;

/// One of the paper's NVMe drives, MB/s ("around 2 GB/s bandwidth" each, §5.2).
const PAPER_NVME_MBPS: f64 = 2_000.0;

/// An emulated NVMe drive's bandwidth on this machine, MB/s: the paper's drive shared by
/// its 80 workers gives each 25 MB/s; a drive here gives as many workers as the figure runs
/// (the top of the sweep) the same share, so that one drive runs out where the paper's
/// does relative to its workers (on 2 cores 50 MB/s; on 80 the paper's 2 GB/s).
pub(super) fn nvme_mbps() -> f64 {
    PAPER_NVME_MBPS * top(TAURUS_WORKERS) as f64 / TAURUS_WORKERS as f64
}

/// NVMe-class log devices: segment files in /dev/shm paced to [`nvme_mbps`] each (reads at
/// recovery too), no added latency per flush.
fn nvme(a: &mut BenchArgs) {
    paced(a, nvme_mbps(), 0);
}

/// Logs on a DRAM file system, not paced (§5.4, Fig. 11: persistent memory "simulated by a
/// RAM disk").
fn dram(a: &mut BenchArgs) {
    paced(a, 0.0, 0);
}

/// The bandwidth of one emulated disk, MB/s.
const HDD_MBPS: f64 = 10.0;

/// Disk-class log devices, scaled so that one saturates at 2 worker threads as one of the
/// paper's 160 MB/s HDDs does at its 8-16: 10 MB/s and 50 us per flush each.
fn hdd(a: &mut BenchArgs) {
    paced(a, HDD_MBPS, 50);
}

/// How the NVMe-class devices are emulated, for the `scaled` texts.
fn nvme_text() -> String {
    format!(
        "Log devices emulate NVMe drives scaled to the workers: segment files in /dev/shm written \
         with pwrite and fdatasync, each paced to {:.0} MB/s, writes and recovery's reads alike \
         (`--device-mbps`; the paper's drive gives 2 GB/s to its {TAURUS_WORKERS} workers, 25 MB/s \
         each, and a drive here gives the {} workers of this machine the same share).",
        nvme_mbps(),
        top(TAURUS_WORKERS)
    )
}
const HDD: &str = "Log devices emulate disks, scaled to 2 cores: files in /dev/shm paced to 10 MB/s and \
    50 us per flush each (`--device-mbps 10 --device-sync-us 50`), so that serial logging saturates its \
    one device at 2 threads as the paper's serial logging saturates one 160 MB/s HDD.";
/// The variant label of serial logging on RAID-0.
pub(super) const RAID0: &str = "raid0";

/// How the schemes use the devices, for the `scaled` texts.
fn shape() -> String {
    let d = devices();
    format!(
        "Serial logging writes one device; serial on RAID-0 stripes one stream over {d} devices \
         in 16 KiB units; Taurus, Plover and Silo-R write {d} logs on {d} devices, one log per \
         device and per worker at the top of the sweep (the paper: 16 logs on 8 devices for its \
         80 workers; with more devices than workers, Taurus, whose worker i writes log i mod n, \
         would leave devices idle that RAID-0 stripes over), record LVs compressed (Alg. 5, \
         `--lv-compress on`). YCSB has 1M rows of 1 KB (the paper: 10-500 GB), TPC-C 2 \
         warehouses (the paper: 80)."
    )
}

/// The three workloads of Figs. 5-10, YCSB at `ycsb_threads`, the TPC-C ones at 2 threads.
fn workloads(ycsb_threads: &[usize]) -> [(&'static str, &'static str, Bench); 3] {
    [
        ("ycsb", "YCSB", Bench::new(WorkloadKind::Ycsb, ycsb_threads)),
        (
            "payment",
            "TPC-C Payment",
            Bench::tpcc("payment-only", &[top(TAURUS_WORKERS)]),
        ),
        (
            "neworder",
            "TPC-C New-Order",
            Bench::tpcc("new-order-only", &[top(TAURUS_WORKERS)]),
        ),
    ]
}

/// One variant of `schemes` and `logging` on `device`, with `more` settings after it.
fn on(
    device: fn(&mut BenchArgs),
    label: &'static str,
    schemes: &'static [&'static str],
    logging: &'static [braid_engine::log::LogKind],
    more: &[fn(&mut BenchArgs)],
) -> Var {
    let mut set = vec![device];
    set.extend_from_slice(more);
    Var {
        label,
        schemes,
        logging,
        set,
    }
}

/// The 2PL schemes of Figs. 5, 7, 9 and 10 on `device`: serial, serial on RAID-0, Plover and
/// Taurus (and no logging, `with_none`).
fn twopl(device: fn(&mut BenchArgs), with_none: bool) -> Vec<Var> {
    let serial: &'static [&'static str] = if with_none {
        &["none", "serial"]
    } else {
        &["serial"]
    };
    vec![
        on(device, "", serial, BOTH, &[]),
        on(device, RAID0, &["serial"], BOTH, &[raid0]),
        on(device, "", &["plover"], DATA, &[parallel]),
        on(device, "", &["taurus"], BOTH, &[parallel]),
    ]
}

/// OCC and a deep pipeline (Silo-R acknowledges at epoch boundaries; every scheme of an OCC
/// figure gets the same pipeline).
fn occ_deep(a: &mut BenchArgs) {
    occ(a);
    a.inflight = Some(SILOR_INFLIGHT);
}

/// The OCC schemes of Figs. 6 and 8 on NVMe-class devices: Silo-R and Taurus (and no
/// logging, `with_none`).
fn occ_vars(with_none: bool) -> Vec<Var> {
    let mut v = Vec::new();
    if with_none {
        v.push(Var {
            label: "",
            schemes: &["none"],
            logging: DATA,
            set: vec![occ_deep],
        });
    }
    v.push(on(nvme, "", &["silor"], DATA, &[parallel, occ_deep]));
    v.push(on(nvme, "", &["taurus"], BOTH, &[parallel, occ_deep]));
    v
}

/// Silo-R beside the 2PL schemes on disks (the paper shows them together in Figs. 9-10).
fn silor_hdd() -> Var {
    on(hdd, "OCC", &["silor"], DATA, &[parallel, occ_deep])
}

/// A bar per configuration of a run at one thread count.
fn throughput_bars(id: &str, title: &str) -> Figure {
    bars(
        id,
        &format!("{title}: throughput, {} threads", top(TAURUS_WORKERS)),
        "txn/s",
    )
}

/// Runs of logging experiments: one per workload.
fn logging_runs(fig: &str, ycsb_threads: &[usize], vars: fn() -> Vec<Var>) -> Vec<Run> {
    workloads(ycsb_threads)
        .into_iter()
        .map(|(w, title, bench)| {
            let id = format!("{fig}-{w}");
            let figure = if bench.threads.len() > 1 {
                vs_threads(&id, &format!("{title}: throughput vs threads"))
            } else {
                throughput_bars(&id, title)
            };
            run(&id, bench, vars(), Some(figure))
        })
        .collect()
}

/// Runs whose databases recovery reads: one short run per workload.
fn recovery_runs(fig: &str, workloads_: &[&str], vars: fn() -> Vec<Var>) -> Vec<Run> {
    workloads(&[top(TAURUS_WORKERS)])
        .into_iter()
        .filter(|(w, _, _)| workloads_.contains(w))
        .map(|(w, _, mut bench)| {
            bench.commits = Some(RECOVERY_TXNS);
            bench.repeat = Some(1);
            run(&format!("{fig}-{w}"), bench, vars(), None)
        })
        .collect()
}

/// How the recovery figures run, on this machine.
fn recovery_scaled() -> String {
    format!(
        "Each scheme logs {} transactions with {} workers (every run stops at that count, so \
         every recovery replays a log of the same size), and its database is recovered three \
         times with {} recovery threads (the paper: up to {TAURUS_WORKERS}); the table gives the \
         median and the replay plan taurus chose (auto: parallel, or serial when the log's \
         dependency chains leave little parallelism).",
        RECOVERY_TXNS,
        top(TAURUS_WORKERS),
        top(TAURUS_WORKERS)
    )
}

/// The worker threads Figs. 5 and 6 sweep on this machine, and where the other figures and
/// every verdict take their single point.
fn workers() -> String {
    format!(
        "YCSB at {} worker threads, doubling up to this machine's {} cores (the paper: up to \
         {TAURUS_WORKERS}); TPC-C, recoveries and single-point figures at {}.",
        list(&sweep(TAURUS_WORKERS)),
        cores(),
        top(TAURUS_WORKERS)
    )
}

pub fn all() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "taurus-fig5",
            title: "Logging, 2PL, NVMe-class devices (Taurus Fig. 5)",
            paper: "Xia et al., VLDB 2021",
            figure: "Fig. 5",
            claim: "Taurus command logging scales where serial command's shared LSN and Plover's per-log \
                    counters limit them (up to 2.4x Plover on YCSB) and performs best on Payment; serial \
                    data saturates its one disk; on New-Order serial command scales well and Taurus shows \
                    advantages only with enough workers (serial command's limit is projected at 120)",
            scaled: [workers(), nvme_text(), shape()].join(" "),
            body: Body::Runs(logging_runs("taurus-fig5", &sweep(TAURUS_WORKERS), || {
                twopl(nvme, true)
            })),
            verdict: verdict::fig5,
        },
        Experiment {
            id: "taurus-fig6",
            title: "Logging, OCC, NVMe-class devices (Taurus Fig. 6)",
            paper: "Xia et al., VLDB 2021",
            figure: "Fig. 6",
            claim: "under OCC, Silo-R and Taurus data logging plateau at a similar level (Silo-R slightly \
                    ahead, tracking no LSN vectors), and Taurus command logging beats Silo-R on every \
                    workload, by up to 2.8x",
            scaled: format!(
                "{} {} Every scheme, and no logging, runs OCC with 65,536 commits in flight per \
                 worker (Silo-R acknowledges a commit only when its 40 ms epoch is durable); Silo-R \
                 and Taurus write {d} logs on {d} devices; the rest as in Fig. 5.",
                workers(),
                nvme_text(),
                d = devices()
            ),
            body: Body::Runs(logging_runs("taurus-fig6", &sweep(TAURUS_WORKERS), || {
                occ_vars(true)
            })),
            verdict: verdict::fig6,
        },
        Experiment {
            id: "taurus-fig7",
            title: "Recovery, 2PL, NVMe-class devices (Taurus Fig. 7)",
            paper: "Xia et al., VLDB 2021",
            figure: "Fig. 7",
            claim: "Taurus recovers in parallel where the serial baselines are bound by the log's total \
                    order (Taurus up to 42.6x them); Plover, needing no dependency resolution, leads Taurus \
                    data below 80 threads",
            scaled: format!("{} {}", nvme_text(), recovery_scaled()),
            body: Body::Recovery {
                runs: recovery_runs("taurus-fig7", &["ycsb", "payment", "neworder"], || {
                    twopl(nvme, false)
                }),
                threads: vec![top(TAURUS_WORKERS)],
                plans: &[None],
                figure: bars(
                    "taurus-fig7",
                    "Recovery throughput (2PL logs)",
                    "replayed txn/s",
                ),
            },
            verdict: verdict::fig7,
        },
        Experiment {
            id: "taurus-fig8",
            title: "Recovery, OCC, NVMe-class devices (Taurus Fig. 8)",
            paper: "Xia et al., VLDB 2021",
            figure: "Fig. 8",
            claim: "Silo-R recovers faster than Taurus data logging (no dependency resolution), and Taurus \
                    command logging beats Silo-R by up to 9.7x",
            scaled: format!("{} {}", nvme_text(), recovery_scaled()),
            body: Body::Recovery {
                runs: recovery_runs("taurus-fig8", &["ycsb", "payment", "neworder"], || {
                    occ_vars(false)
                }),
                threads: vec![top(TAURUS_WORKERS)],
                plans: &[None],
                figure: bars(
                    "taurus-fig8",
                    "Recovery throughput (OCC logs)",
                    "replayed txn/s",
                ),
            },
            verdict: verdict::fig8,
        },
        Experiment {
            id: "taurus-fig9",
            title: "Logging on bandwidth-limited disks (Taurus Fig. 9)",
            paper: "Xia et al., VLDB 2021",
            figure: "Fig. 9",
            claim: "serial data logging saturates one disk; Taurus data logging is 7.1x serial data on \
                    YCSB (8 disks), as are RAID-0, Silo-R and Plover (the same on TPC-C, where Plover \
                    plateaus); serial command beats serial data but its one disk limits it; Taurus \
                    command logging is 9.2x Silo-R and Plover on YCSB and 5.2x Silo-R on Payment",
            scaled: format!(
                "{HDD} {} With {d} devices, {d}x is the most any parallel scheme can gain over \
                 one (the paper's 7.1x with 8 disks scales to {:.2}x). Silo-R runs OCC with \
                 65,536 commits in flight, the rest 2PL.",
                shape(),
                7.1 * devices() as f64 / PAPER_DEVICES as f64,
                d = devices(),
            ),
            body: Body::Runs(logging_runs("taurus-fig9", &[top(TAURUS_WORKERS)], || {
                let mut v = twopl(hdd, true);
                v.push(silor_hdd());
                v
            })),
            verdict: verdict::fig9,
        },
        Experiment {
            id: "taurus-fig10",
            title: "Recovery of bandwidth-limited logs (Taurus Fig. 10)",
            paper: "Xia et al., VLDB 2021",
            figure: "Fig. 10",
            claim: "the serial baselines' recovery is bound by the total order; on YCSB Taurus data \
                    recovers up to 1.7x faster than serial data on RAID-0 (5.5x the serial baseline at \
                    its peak) and Taurus command up to 11.3x; Taurus data matches Silo-R, Taurus command \
                    is up to 6.3x faster, and Plover parallels Silo-R except on Payment, where it \
                    devolves into single-stream logging; Taurus command recovers 7.1x serial command on \
                    Payment, and on New-Order Taurus recovers 17.5x serial command and 6.7x serial data",
            scaled: format!(
                "{} The logs are written as in Fig. 9 (YCSB, Payment and New-Order), on the \
                 emulated disks, and read back at their bandwidth.",
                recovery_scaled()
            ),
            body: Body::Recovery {
                runs: recovery_runs("taurus-fig10", &["ycsb", "payment", "neworder"], || {
                    let mut v = twopl(hdd, false);
                    v.push(silor_hdd());
                    v
                }),
                threads: vec![top(TAURUS_WORKERS)],
                plans: &[None],
                figure: bars(
                    "taurus-fig10",
                    "Recovery throughput (disk logs)",
                    "replayed txn/s",
                ),
            },
            verdict: verdict::fig10,
        },
        dram::logging(),
        dram::recovery(),
        full_mix::logging(),
        full_mix::recovery(),
        contention(),
        contention_recovery(),
        fig14::fig14(),
        fig15::fig15(),
        fig16::fig16(),
    ]
}

/// The Zipf thetas of Fig. 13 (the paper: 0 to 1.6 or so).
const THETAS: &[f64] = &[0.6, 0.9, 1.2, 1.5];
/// The thetas whose logs Fig. 13b recovers.
const RECOVERY_THETAS: &[f64] = &[0.6, 0.9, 1.5];

fn contention_vars() -> Vec<Var> {
    vec![
        on(hdd, "", &["none", "serial"], BOTH, &[]),
        on(hdd, "", &["taurus"], BOTH, &[parallel]),
    ]
}

fn theta_run(id: &str, theta: f64) -> Run {
    let mut bench = Bench::new(WorkloadKind::Ycsb, &[top(TAURUS_WORKERS)]);
    bench.theta = Some(theta);
    Run {
        id: format!("{id}-theta{theta}"),
        x: Some(theta),
        bench,
        vars: contention_vars(),
        figure: None,
    }
}

fn contention() -> Experiment {
    Experiment {
        id: "taurus-fig13",
        title: "Logging against contention (Taurus Fig. 13a)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 13a",
        claim: "as YCSB's Zipf theta rises past 1.0 every scheme's throughput falls with the workload's \
                parallelism",
        scaled: format!(
            "{HDD} {} workers (the paper: 56), theta 0.6 (the paper's default) to 1.5, {d} logs on \
             {d} devices for Taurus.",
            top(TAURUS_WORKERS),
            d = devices()
        ),
        body: Body::Sweep {
            runs: THETAS
                .iter()
                .map(|&t| (t, theta_run("taurus-fig13", t)))
                .collect(),
            figure: Figure {
                stem: "taurus-fig13".into(),
                title: format!(
                    "YCSB: throughput vs contention ({} threads, disk-class logs)",
                    top(TAURUS_WORKERS)
                ),
                x_label: "Zipf theta",
                y_label: "txn/s",
                chart: Chart::Lines {
                    x: X::Sweep,
                    y: Y::TxnPerS,
                    key: Key::SchemeLogging,
                    skip_none: false,
                },
            },
        },
        verdict: verdict::fig13,
    }
}

fn contention_recovery() -> Experiment {
    Experiment {
        id: "taurus-fig13b",
        title: "Recovery against contention, and the serial fallback (Taurus Fig. 13b)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 13b",
        claim: "Taurus's parallel recovery slows beyond theta 0.8 as dependencies between logs lengthen, \
                while serial recovery, slow at low contention, gains from the skew; above theta 1 Taurus \
                replays serially, which restores its performance",
        scaled: format!(
            "Logs written as in Fig. 13a by serial and taurus ({RECOVERY_TXNS} transactions each, \
             so every recovery replays a log of the same size), recovered three times with {} \
             threads; taurus both with its parallel plan forced and with auto, which picks the \
             serial fallback when the log offers little parallelism.",
            top(TAURUS_WORKERS)
        ),
        body: Body::Recovery {
            runs: RECOVERY_THETAS
                .iter()
                .map(|&t| {
                    let mut r = theta_run("taurus-fig13b", t);
                    r.bench.commits = Some(RECOVERY_TXNS);
                    r.bench.repeat = Some(1);
                    r.vars[0].schemes = &["serial"];
                    r
                })
                .collect(),
            threads: vec![top(TAURUS_WORKERS)],
            plans: &[Some(RecoveryPlan::Parallel), Some(RecoveryPlan::Auto)],
            figure: Figure {
                stem: "taurus-fig13b".into(),
                title: format!(
                    "YCSB: recovery throughput vs contention ({} threads)",
                    top(TAURUS_WORKERS)
                ),
                x_label: "Zipf theta",
                y_label: "replayed txn/s",
                chart: Chart::Lines {
                    x: X::Sweep,
                    y: Y::TxnPerS,
                    key: Key::Label,
                    skip_none: true,
                },
            },
        },
        verdict: verdict::fig13b,
    }
}

/// The parallel schemes' log count ([`devices`]), for the verdicts' texts: displays as, and
/// [`Devices::n`] is, the count.
pub(super) const DEVICES: Devices = Devices;

/// See [`DEVICES`].
#[derive(Clone, Copy)]
pub(super) struct Devices;

impl Devices {
    pub(super) fn n(self) -> usize {
        devices()
    }
}

impl std::fmt::Display for Devices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.n())
    }
}
