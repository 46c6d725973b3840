//! Autonomous commit (Nguyen, Alhomssi, Ziegler, Leis, SIGMOD 2025) beside central group
//! commit (`serial`), passive group commit (gsn TX-V), Taurus's per-log commit and gsn with
//! Remote Flush Avoidance: YCSB, each worker waiting for its commit, on NVMe with power-loss
//! protection emulated (log files on /dev/shm, each flush paced to 30 us per device, the
//! paper's class of device) and on the root disk. The paper claims that group commit's
//! queueing and single acknowledging thread, not the device, dominate commit latency on such
//! a device: autonomous commit's YCSB p90 is 175 us, orders of magnitude below group commit's
//! at comparable throughput. The target: at 16 threads on the emulated NVMe,
//! autonomous commit's p99 below serial group commit's at no less than 0.9x its throughput.
//! On the root disk, where a sync costs 90-170 us and concurrent syncs queue in the disk, the
//! verdict asks which answers closer to the disk's own sync latency (the floor bench measures
//! before each run).

use super::{THREADS, p99_vs_threads, rfa_on, row, us, var};
use crate::bench::{BenchArgs, ConfigResult};
use crate::common::WorkloadKind;
use crate::report::experiments::{Bench, Body, Experiment, Var, paced, run};
use crate::report::verdict::{Kind, Measured, Part, Verdict, times};

const NVME: &str = "beyond-autonomous-nvme30";
const DISK: &str = "beyond-autonomous-disk";

/// The emulated NVMe's sync latency, us (enterprise NVMe with power-loss protection answers
/// a small durable write in tens of microseconds).
const SYNC_US: u64 = 30;

/// Autonomous commit's throughput against group commit's that counts as comparable (the
/// issue's target).
const COMPARABLE: f64 = 0.9;

fn nvme(a: &mut BenchArgs) {
    paced(a, 0.0, SYNC_US);
}

fn vars(on_nvme: bool) -> Vec<Var> {
    let more: &[fn(&mut BenchArgs)] = if on_nvme { &[nvme] } else { &[] };
    let rfa: &[fn(&mut BenchArgs)] = if on_nvme { &[nvme, rfa_on] } else { &[rfa_on] };
    vec![
        var("", &["serial", "taurus", "autonomous"], more),
        var("TX-V", &["gsn"], more),
        var("RFA", &["gsn"], rfa),
    ]
}

pub(super) fn autonomous() -> Experiment {
    Experiment {
        id: "beyond-autonomous",
        title: "Autonomous commit against group commit (Nguyen et al. 2025)",
        paper: "Nguyen, Alhomssi, Ziegler, Leis, SIGMOD 2025",
        figure: "YCSB commit latency",
        claim: "on NVMe SSDs group commit's queueing, not the device, dominates commit \
                latency: with each worker flushing its own log and acknowledging its own \
                commits, YCSB's p90 commit latency is 175 us, far below group commit's at \
                comparable throughput",
        scaled: format!(
            "YCSB (1,000,000 rows, Zipf 0.6, 2 accesses per transaction, each a read or a one-column \
             update with equal odds), each worker waiting for its commit, one log per worker for the \
             per-worker schemes, at 4 and 16 worker threads (the paper: up to 192 workers on \
             io_uring with many transactions in flight each). Two devices: NVMe with \
             power-loss protection emulated by log files on /dev/shm (tmpfs, not power-safe), \
             each flush paced to {SYNC_US} us per device; and segment files on the root disk \
             (ext4, fdatasync). Autonomous commit here acknowledges a commit that needs another \
             log only once every log is durable up to it (the paper: the logs it depends on), \
             see the scheme's module doc."
        ),
        body: Body::Runs(vec![
            run(
                NVME,
                Bench::new(WorkloadKind::Ycsb, THREADS),
                vars(true),
                Some(p99_vs_threads(
                    NVME,
                    "Emulated PLP NVMe (30 us syncs): p99 commit latency vs threads",
                )),
            ),
            run(
                DISK,
                Bench::new(WorkloadKind::Ycsb, THREADS),
                vars(false),
                Some(p99_vs_threads(
                    DISK,
                    "Root disk (fdatasync): p99 commit latency vs threads",
                )),
            ),
        ]),
        verdict,
    }
}

/// p50, p99 and throughput of `c`, as text.
fn shown(name: &str, c: &ConfigResult) -> String {
    format!(
        "{name} p50 {}, p99 {}, {:.0} txn/s",
        us(c.p50_us),
        us(c.p99_us),
        c.txn_per_s
    )
}

fn verdict(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let top = THREADS[THREADS.len() - 1];
    let nvme = m.run(NVME);
    for &t in THREADS {
        let (Some(a), Some(s)) = (row(nvme, "autonomous", "", t), row(nvme, "serial", "", t))
        else {
            return Verdict::missing(&format!("autonomous and serial on NVMe at {t} threads"));
        };
        let both = format!("{}; {}", shown("autonomous", a), shown("serial", s));
        let tail = |q: &str, x: f64, y: f64| {
            Part::below(
                format!(
                    "on the emulated NVMe at {t} threads autonomous commit's {q} is below \
                     central group commit's"
                ),
                x / y,
            )
        };
        parts.push(tail("p90", a.p90_us, s.p90_us).measured(format!(
            "p90 {} against {}",
            us(a.p90_us),
            us(s.p90_us)
        )));
        if t == top {
            parts.push(tail("p99", a.p99_us, s.p99_us).measured(both.clone()));
            let r = a.txn_per_s / s.txn_per_s;
            parts.push(Part::check(
                format!(
                    "... at no less than {} group commit's throughput",
                    times(COMPARABLE)
                ),
                Kind::Magnitude,
                times(r),
                r >= COMPARABLE,
                format!("{} of group commit's throughput: {both}", times(r)),
            ));
        }
    }
    let disk = m.run(DISK);
    for &t in THREADS {
        let (Some(a), Some(s)) = (row(disk, "autonomous", "", t), row(disk, "serial", "", t))
        else {
            return Verdict::missing(&format!("autonomous and serial on the disk at {t} threads"));
        };
        let claim = format!(
            "on the root disk at {t} threads autonomous commit's median is closer to the \
             disk's own sync than group commit's"
        );
        let (Some(fa), Some(fs)) = (a.floor_p50_us, s.floor_p50_us) else {
            parts.push(Part::not_measured(
                claim,
                Kind::Direction,
                "the disk's floor was not measured (logs not on a disk)",
            ));
            continue;
        };
        let (ga, gs) = (a.p50_us - fa, s.p50_us - fs);
        parts.push(Part::below(claim, ga / gs).measured(format!(
            "{} and {} above the floor ({} and {}); {}; {}",
            us(ga),
            us(gs),
            us(fa),
            us(fs),
            shown("autonomous", a),
            shown("serial", s)
        )));
    }
    Verdict::of(parts).own_experiment()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::report::verdict::Level;

    fn at(scheme: &str, threads: usize, tps: f64, p: (f64, f64, f64), floor: f64) -> ConfigResult {
        ConfigResult {
            scheme: scheme.into(),
            logging: "data".into(),
            threads,
            txn_per_s: tps,
            p50_us: p.0,
            p90_us: p.1,
            p99_us: p.2,
            floor_p50_us: Some(floor),
            ..ConfigResult::default()
        }
    }

    fn measured(auto_tps: f64, auto_p99: f64) -> Measured {
        let rows = |floor: f64| -> Vec<ConfigResult> {
            THREADS
                .iter()
                .flat_map(|&t| {
                    [
                        at("serial", t, 100.0, (80.0, 150.0, 300.0), floor),
                        at("autonomous", t, auto_tps, (35.0, 60.0, auto_p99), floor),
                    ]
                })
                .collect()
        };
        Measured {
            runs: vec![
                (NVME.to_string(), None, rows(30.0)),
                (DISK.to_string(), None, rows(30.0)),
            ],
            ..Measured::default()
        }
    }

    #[test]
    fn a_lower_tail_at_comparable_throughput_agrees_and_a_higher_tail_differs() {
        assert_eq!(verdict(&measured(95.0, 200.0)).level(), Level::Agrees);
        assert_eq!(
            verdict(&measured(50.0, 200.0)).level(),
            Level::AgreesInDirection
        );
        assert_eq!(verdict(&measured(95.0, 900.0)).level(), Level::Differs);
    }
}
