//! NV-Logging Figs. 12 and 13 (§6.3): TPC-C (Fig. 12), TATP and TPC-B (Fig. 13) throughput
//! against the NVM write latency, for NV-Disk, NV-Disk with decentralized logging, NV-Logging
//! with flush-on-insert and flush-on-commit, and distributed logging; and the verdict they
//! share, per workload and delay (Fig. 14 reuses its pieces on the PMEP setting).

use crate::bench::ConfigResult;
use crate::common::WorkloadKind;
use crate::report::experiments::{Bench, Body, Experiment, Run, cores, run, top};
use crate::report::plot::{Chart, Figure, Key, X, Y};
use crate::report::verdict::{
    DIRECTION_TOLERANCE, Kind, Measured, Part, Verdict, band, data, k, pct, per_flush, times,
};

use super::{
    COMMIT, COMMITS, DECENTRALIZED, DISTRIBUTED, INSERT, PAPER_THREADS, decentralized_var,
    distributed_var, nvdisk_var, pertxn_vars, rmw,
};

/// The NVM write delays swept, ns per persisted line (the paper's slowdowns of 1-8x DRAM).
const DELAYS: &[u64] = &[0, 800];

/// Throughput against the NVM delay per persisted line, a line per configuration.
pub(super) fn vs_delay(stem: &str, title: String) -> Figure {
    Figure {
        stem: stem.to_string(),
        title,
        x_label: "extra ns per persisted line",
        y_label: "txn/s",
        chart: Chart::Lines {
            x: X::NvmDelay,
            y: Y::TxnPerS,
            key: Key::Label,
            skip_none: true,
        },
    }
}

/// A run of `bench` over the NVM delays, NV-Disk against NV-Logging's two flush policies and
/// distributed logging (and, with `decentralized`, NV-Disk+decentralized-logging). Its callers
/// run it at the top of this machine's thread sweep, the thread count the verdict looks its
/// rows up at.
fn delay_run(id: &str, title: &str, mut bench: Bench, decentralized: bool) -> Run {
    bench.nvm_delays = Some(DELAYS.to_vec());
    let mut vars = vec![nvdisk_var(&["none", "nvdisk"])];
    vars.extend(pertxn_vars());
    vars.push(distributed_var());
    if decentralized {
        vars.push(decentralized_var());
    }
    let figure = vs_delay(
        id,
        format!(
            "{title}: throughput vs NVM write delay ({} threads)",
            top(PAPER_THREADS)
        ),
    );
    run(id, bench, vars, Some(figure))
}

/// How Figs. 12 and 13 are scaled, with the thread count they run at here.
fn scaled_delay() -> String {
    format!(
        "{} worker threads (the top of this machine's sweep; the paper: 8-64 on Shore-MT). {SCALED_DELAY} {COMMITS}",
        top(PAPER_THREADS)
    )
}

const SCALED_DELAY: &str = "NVM is emulated by /dev/shm \
    files with a busy-wait per persisted line of 0 and 800 ns (the ends of the paper's 1-8x DRAM slowdowns), \
    paid by the thread that writes the line. NV-Disk's log files pay the same delay per line \
    they write, on its log flusher alone: in Shore-MT the workers copy records into the DRAM \
    log buffer and only the log flush daemon writes the log files (log_core::flush_daemon), \
    kicked by commits, not by update records. Every scheme logs per update (--records update). \
    \"distributed\" is gsn at its defaults (transaction partitioning, passive group commit). \
    \"nv-disk+decentralized\" (TPC-C) is the paper's NV-Disk+decentralized-logging (§6.1: \"the \
    log buffer is decentralized, but logs are still placed on file system via the same way as \
    implemented in NV-Disk\"): NV-Logging's per-transaction log objects, each object and its \
    state word written with pwrite and fdatasync into the log's file on /dev/shm by the worker \
    that inserts it (pertxn place=file).";

pub(super) fn fig12() -> Experiment {
    Experiment {
        id: "nvlog-fig12",
        title: "TPC-C against NVM write latency (NV-Logging Fig. 12)",
        paper: "Huang et al., VLDB 2014",
        figure: "Fig. 12",
        claim: "on TPC-C NV-Logging has 1.62-2.72x NV-Disk's throughput and 13.8-26.8% more than distributed \
                logging; NV-Disk + decentralized logging performs worse than NV-Disk; at 4-8x NVRAM \
                slowdown flush-on-commit beats flush-on-insert by 7.9-13.8%",
        scaled: scaled_delay(),
        body: Body::Runs(vec![delay_run(
            "nvlog-fig12",
            "TPC-C",
            Bench::new(WorkloadKind::Tpcc, &[top(PAPER_THREADS)]),
            true,
        )]),
        verdict: |m| delay_verdict(m, &["nvlog-fig12"]),
    }
}

pub(super) fn fig13() -> Experiment {
    Experiment {
        id: "nvlog-fig13",
        title: "TATP and TPC-B against NVM write latency (NV-Logging Fig. 13)",
        paper: "Huang et al., VLDB 2014",
        figure: "Fig. 13",
        claim: "NV-Logging has 1.10-1.62x NV-Disk's throughput on TATP and 1.26-1.99x on TPC-B, and 9-21% \
                more than distributed logging; flush-on-commit beats flush-on-insert by up to 24-29% as NVRAM slows",
        scaled: scaled_delay(),
        body: Body::Runs(vec![
            delay_run(
                "nvlog-fig13-tatp",
                "TATP",
                Bench::new(WorkloadKind::Tatp, &[top(PAPER_THREADS)]),
                false,
            ),
            delay_run(
                "nvlog-fig13-tpcb",
                "TPC-B",
                Bench::new(WorkloadKind::Tpcb, &[top(PAPER_THREADS)]),
                false,
            ),
        ]),
        verdict: |m| delay_verdict(m, &["nvlog-fig13-tatp", "nvlog-fig13-tpcb"]),
    }
}

/// The configuration `k` at NVM delay `ns`.
pub(super) fn at<'m>(
    m: &'m Measured,
    id: &str,
    k: crate::report::verdict::Key<'_>,
    ns: u64,
) -> Option<&'m ConfigResult> {
    m.run(id).iter().find(|c| {
        c.scheme == k.scheme
            && c.variant == k.variant
            && c.threads == k.threads
            && c.nvm_delay_ns == ns
    })
}

/// What Figs. 12 and 13 claim for one workload, as ratios: NV-Logging over NV-Disk and over
/// distributed logging across the NVM slowdowns, and flush-on-commit over flush-on-insert at
/// the slowest NVM.
struct DelayClaim {
    workload: &'static str,
    nvdisk: (f64, f64),
    distributed: (f64, f64),
    commit: (f64, f64),
    /// The run has NV-Disk+decentralized-logging, which the paper finds worse than NV-Disk
    /// (TPC-C, Fig. 12).
    decentralized: bool,
    /// The paper's words for each.
    nvdisk_text: &'static str,
    distributed_text: &'static str,
    commit_text: &'static str,
}

/// §6.3's numbers per workload.
fn delay_claim(id: &str) -> Option<DelayClaim> {
    match id {
        "nvlog-fig12" => Some(DelayClaim {
            workload: "TPC-C",
            nvdisk: (1.62, 2.72),
            distributed: (1.138, 1.2681),
            commit: (1.0789, 1.1379),
            decentralized: true,
            nvdisk_text: "1.62-2.72x",
            distributed_text: "13.8-26.81% more throughput than distributed logging",
            commit_text: "flush-on-commit performs 7.89-13.79% better than flush-on-insert at 4-8x \
                          NVRAM slowdown",
        }),
        "nvlog-fig13-tatp" => Some(DelayClaim {
            workload: "TATP",
            nvdisk: (1.10, 1.62),
            distributed: (1.0894, 1.1097),
            commit: (1.2432, 1.2432),
            decentralized: false,
            nvdisk_text: "1.10-1.62x",
            distributed_text: "8.94-10.97% more throughput than distributed logging",
            commit_text: "flush-on-commit performs better than flush-on-insert by up to 24.32%",
        }),
        "nvlog-fig13-tpcb" => Some(DelayClaim {
            workload: "TPC-B",
            nvdisk: (1.26, 1.99),
            distributed: (1.15, 1.21),
            commit: (1.2918, 1.2918),
            decentralized: false,
            nvdisk_text: "1.26-1.99x",
            distributed_text: "1.15-1.21x distributed logging's throughput",
            commit_text: "as NVRAM slows, flush-on-commit performs up to 29.18% better than \
                          flush-on-insert",
        }),
        _ => None,
    }
}

/// Ratios at each NVM delay, as text.
fn by_delay(r: &[(u64, f64)]) -> String {
    r.iter()
        .map(|(ns, x)| format!("{} at {ns} ns", times(*x)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Magnitude: every ratio of `r` within the paper's `range` widened by [`band`].
fn every_within(claim: String, r: &[(u64, f64)], range: (f64, f64)) -> Part {
    let (a, b) = band(range.0, range.1);
    let out: Vec<String> = r
        .iter()
        .filter(|(_, x)| !(a..=b).contains(x))
        .map(|(ns, x)| format!("{} at {ns} ns", times(*x)))
        .collect();
    Part::check(
        claim,
        Kind::Magnitude,
        by_delay(r),
        out.is_empty(),
        format!(
            "{} outside the accepted {}-{} (the paper's {}-{}, its gain over 1 halved and doubled)",
            out.join(", "),
            times(a),
            times(b),
            times(range.0),
            times(range.1)
        ),
    )
}

/// The least ratio of `r`.
/// NV-Logging against another scheme over the delays `vs_disk` (delay, ratio): the direction
/// part `beats` (above at every delay) and the magnitude part `within` (every ratio in
/// `range`), both explained by `grouping`.
pub(super) fn beats_at_every_delay(
    beats: String,
    within: String,
    vs_disk: &[(u64, f64)],
    range: (f64, f64),
    grouping: String,
) -> [Part; 2] {
    [
        Part::above(beats, least(vs_disk))
            .measured(by_delay(vs_disk))
            .because(grouping.clone()),
        every_within(within, vs_disk, range).because(grouping),
    ]
}

fn least(r: &[(u64, f64)]) -> f64 {
    r.iter().map(|(_, x)| *x).fold(f64::INFINITY, f64::min)
}

fn delay_verdict(m: &Measured, ids: &[&str]) -> Verdict {
    let mut parts = Vec::new();
    for id in ids {
        let Some(claim) = delay_claim(id) else {
            return Verdict::missing(id);
        };
        let w = claim.workload;
        let ins = data("pertxn", top(PAPER_THREADS)).variant(INSERT);
        let mut vs_disk = Vec::new();
        let mut vs_gsn = Vec::new();
        for &ns in DELAYS {
            let (Some(p), Some(d), Some(g)) = (
                at(m, id, ins, ns),
                at(m, id, data("nvdisk", top(PAPER_THREADS)), ns),
                at(
                    m,
                    id,
                    data("gsn", top(PAPER_THREADS)).variant(DISTRIBUTED),
                    ns,
                ),
            ) else {
                return Verdict::missing(id);
            };
            vs_disk.push((ns, p.txn_per_s / d.txn_per_s.max(1.0)));
            vs_gsn.push((ns, p.txn_per_s / g.txn_per_s.max(1.0)));
        }
        let (fast, slow) = (*DELAYS.first().unwrap_or(&0), *DELAYS.last().unwrap_or(&0));
        let (Some(ins0), Some(ins1), Some(com), Some(disk0), Some(disk), Some(gsn)) = (
            at(m, id, ins, fast),
            at(m, id, ins, slow),
            at(
                m,
                id,
                data("pertxn", top(PAPER_THREADS)).variant(COMMIT),
                slow,
            ),
            at(m, id, data("nvdisk", top(PAPER_THREADS)), fast),
            at(m, id, data("nvdisk", top(PAPER_THREADS)), slow),
            at(
                m,
                id,
                data("gsn", top(PAPER_THREADS)).variant(DISTRIBUTED),
                slow,
            ),
        ) else {
            return Verdict::missing(id);
        };
        let grouping = format!(
            "NV-Disk's log flusher writes {:.1} transactions per file flush at {fast} ns and {:.1} \
             at {slow} ns, paying the NVM delay per line it writes off the workers' path (they \
             commit asynchronously), while NV-Logging's worker persists each record itself; with {} \
             threads NV-Disk's central buffer ({} shared read-modify-writes per commit) has few \
             rivals",
            per_flush(disk0),
            per_flush(disk),
            top(PAPER_THREADS),
            rmw(disk)
        );
        // A slower NVRAM must not make NV-Disk faster: every line of the paper's figures is
        // flat or falls with the slowdown.
        let kept = disk.txn_per_s / disk0.txn_per_s.max(1.0);
        parts.push(Part::check(
            format!(
                "{w}: NV-Disk's throughput does not rise as NVRAM slows (no line of the figure \
                     rises with the slowdown)"
            ),
            Kind::Direction,
            format!(
                "{} from {fast} to {slow} ns ({} to {} txn/s)",
                times(kept),
                k(disk0.txn_per_s),
                k(disk.txn_per_s)
            ),
            kept <= 1.0 + DIRECTION_TOLERANCE,
            format!(
                "NV-Disk runs {} faster at {slow} ns: its flusher wrote {:.1} transactions per \
                     flush at {fast} ns and {:.1} at {slow} ns, so the slower NVRAM saved it more \
                     per-flush work than it cost",
                times(kept),
                per_flush(disk0),
                per_flush(disk)
            ),
        ));
        if claim.decentralized {
            let mut vs_central = Vec::new();
            for &ns in DELAYS {
                let (Some(dec), Some(d)) = (
                    at(
                        m,
                        id,
                        data("pertxn", top(PAPER_THREADS)).variant(DECENTRALIZED),
                        ns,
                    ),
                    at(m, id, data("nvdisk", top(PAPER_THREADS)), ns),
                ) else {
                    return Verdict::missing(id);
                };
                vs_central.push((ns, dec.txn_per_s / d.txn_per_s.max(1.0)));
            }
            let most = vs_central
                .iter()
                .map(|(_, x)| *x)
                .fold(f64::NEG_INFINITY, f64::max);
            parts.push(
                Part::below(
                    format!(
                        "{w}: NV-Disk + decentralized logging performs worse than NV-Disk (it \
                         \"hurts the ability of grouping logs, and increases the frequency of disk \
                         accesses\")"
                    ),
                    most,
                )
                .measured(format!(
                    "NV-Disk+decentralized over NV-Disk: {}",
                    by_delay(&vs_central)
                ))
                .because(format!(
                    "every log object of NV-Disk+decentralized is its own pwrite and fdatasync by \
                     its worker (two per object, with its state word), where NV-Disk's flusher \
                     writes {:.1} transactions per flush; at {} threads NV-Disk's central buffer \
                     has few rivals to lose to",
                    per_flush(disk0),
                    top(PAPER_THREADS)
                )),
            );
        }
        parts.extend(beats_at_every_delay(
            format!("{w}: NV-Logging (flush-on-insert) outperforms NV-Disk at every NVM slowdown"),
            format!("{w}: NV-Logging {} NV-Disk's throughput", claim.nvdisk_text),
            &vs_disk,
            claim.nvdisk,
            grouping,
        ));
        let lsn = format!(
            "NV-Logging takes {} shared read-modify-writes per commit (a global LSN per record) \
             against distributed logging's {} at {slow} ns; and NV-Logging copies every object \
             again into its backup files (§5.1's asynchronous backup) on a thread of its own, \
             which with {} workers on this machine's {} cores has no idle core to run on",
            rmw(ins1),
            rmw(gsn),
            top(PAPER_THREADS),
            cores()
        );
        parts.extend(beats_at_every_delay(
            format!("{w}: NV-Logging outperforms distributed logging at every NVM slowdown"),
            format!("{w}: NV-Logging has {}", claim.distributed_text),
            &vs_gsn,
            claim.distributed,
            lsn,
        ));
        let gain = com.txn_per_s / ins1.txn_per_s.max(1.0);
        let daemon = format!(
            "flush-on-commit's persist daemon runs beside the {} workers (a third busy thread on 2 \
             cores): {} txn/s \
             against flush-on-insert's {}, while flush-on-insert loses {} from 0 to {slow} ns",
            top(PAPER_THREADS),
            k(com.txn_per_s),
            k(ins1.txn_per_s),
            pct(1.0 - ins1.txn_per_s / ins0.txn_per_s.max(1.0))
        );
        parts.push(
            Part::above(
                format!(
                    "{w}: flush-on-commit outperforms flush-on-insert as NVRAM slows (objects \
                     persisted asynchronously)"
                ),
                gain,
            )
            .measured(format!("{} at {slow} ns", times(gain)))
            .because(daemon.clone()),
        );
        parts.push(
            Part::within(
                format!("{w}: {}", claim.commit_text),
                gain,
                claim.commit.0,
                claim.commit.1,
            )
            .measured(format!("{} at {slow} ns", times(gain)))
            .because(daemon),
        );
    }
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;
    use crate::report::verdict::Level;

    /// Figs. 12-13's runs with NV-Logging at `disk` of NV-Disk and `gsn` of distributed logging
    /// at every delay, flush-on-commit at `commit` of flush-on-insert.
    fn delays(ids: &[&str], disk: f64, gsn: f64, commit: f64) -> Measured {
        delays_with(ids, disk, gsn, commit, 1.0, 0.5)
    }

    /// [`delays`], NV-Disk at `slower` of its throughput at the slowest NVM, and
    /// NV-Disk+decentralized at `dec` of NV-Disk's.
    fn delays_with(
        ids: &[&str],
        disk: f64,
        gsn: f64,
        commit: f64,
        slower: f64,
        dec: f64,
    ) -> Measured {
        let mut m = Measured::default();
        for id in ids {
            let mut res = Vec::new();
            for &ns in DELAYS {
                let p = 100_000.0;
                let d = if ns == 0 { p / disk } else { p / disk * slower };
                for (scheme, variant, tps) in [
                    ("pertxn", INSERT, p),
                    ("pertxn", COMMIT, p * commit),
                    ("pertxn", DECENTRALIZED, d * dec),
                    ("nvdisk", "", d),
                    ("gsn", "distributed", p / gsn),
                ] {
                    let mut c = result(scheme, variant, "data", top(PAPER_THREADS), tps);
                    c.nvm_delay_ns = ns;
                    res.push(c);
                }
            }
            m.runs.push((id.to_string(), None, res));
        }
        m
    }

    #[test]
    fn fig13_checks_the_ratio_to_distributed_logging() {
        let ids = ["nvlog-fig13-tatp", "nvlog-fig13-tpcb"];
        let v = delay_verdict(&delays(&ids, 1.5, 1.15, 1.25), &ids);
        assert_eq!(v.level(), Level::Agrees, "{v:?}");
        // Distributed logging ahead of NV-Logging: a direction part fails.
        let v = delay_verdict(&delays(&ids, 1.5, 0.88, 1.25), &ids);
        assert_eq!(v.level(), Level::Differs);
        assert!(
            v.parts()
                .iter()
                .any(|p| !p.holds() && p.claim().contains("outperforms distributed logging")),
            "{v:?}"
        );
        // Ahead of distributed logging by only 2%: a tie, not a direction.
        let v = delay_verdict(&delays(&ids, 1.5, 1.02, 1.25), &ids);
        assert_eq!(v.level(), Level::Differs);
    }

    #[test]
    fn fig12_a_small_lead_over_nv_disk_agrees_in_direction() {
        let ids = ["nvlog-fig12"];
        let v = delay_verdict(&delays(&ids, 1.2, 1.2, 1.1), &ids);
        assert_eq!(v.level(), Level::AgreesInDirection, "{v:?}");
        let v = delay_verdict(&delays(&ids, 1.5, 1.2, 0.95), &ids);
        assert_eq!(v.level(), Level::Differs);
        let p = v
            .parts()
            .iter()
            .find(|p| !p.holds() && p.kind() == Kind::Direction);
        assert!(
            p.is_some_and(|p| p.reason().contains("third busy thread")),
            "{p:?}"
        );
    }

    #[test]
    fn nv_disk_rising_with_the_delay_or_decentralized_ahead_is_a_difference() {
        let ids = ["nvlog-fig12"];
        // NV-Disk 1.1x faster at 800 ns: the rise fails, as a direction.
        let v = delay_verdict(&delays_with(&ids, 1.5, 1.2, 1.1, 1.1, 0.5), &ids);
        assert_eq!(v.level(), Level::Differs);
        assert!(
            v.failing()
                .iter()
                .any(|c| c.contains("NV-Disk's throughput does not rise")),
            "{:?}",
            v.failing()
        );
        // NV-Disk+decentralized ahead of NV-Disk: fails.
        let v = delay_verdict(&delays_with(&ids, 1.5, 1.2, 1.1, 0.9, 1.2), &ids);
        assert_eq!(v.level(), Level::Differs);
        assert!(
            v.failing()
                .iter()
                .any(|c| c.contains("decentralized logging performs worse")),
            "{:?}",
            v.failing()
        );
        // Neither: both parts hold, and TATP's runs have no decentralized line to look for.
        let v = delay_verdict(&delays_with(&ids, 1.5, 1.2, 1.1, 0.9, 0.6), &ids);
        assert!(v.failing().is_empty(), "{:?}", v.failing());
        let tatp = ["nvlog-fig13-tatp"];
        let v = delay_verdict(&delays_with(&tatp, 1.5, 1.1, 1.25, 0.9, 0.6), &tatp);
        assert!(
            !v.parts()
                .iter()
                .any(|p| p.claim().contains("decentralized")),
            "{v:?}"
        );
    }
}
