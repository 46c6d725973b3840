//! Taurus (Xia et al., VLDB 2021) §5.5, Fig. 12: the full TPC-C mix (45% New-Order, 43%
//! Payment, 4% each of Order-Status, Delivery and Stock-Level) under 2PL, with the range scans,
//! inserts and deletes it needs: logging against threads (Fig. 12a) and recovery (Fig. 12b).
//! The paper: Taurus costs about 11.7% against no logging, and Taurus command logging recovers
//! 12.8x faster than the serial baselines.

use super::super::experiments::{
    Bench, Body, Experiment, RECOVERY_TXNS, TAURUS_WORKERS, bars, run, sweep, top, vs_threads,
};
use super::super::experiments::{cores, list};
use super::super::verdict::{Key, Measured, Part, Verdict, data, k, pct, times};
use super::{nvme, nvme_text, recovery_scaled, shape, twopl};

/// "Compared to No Logging, the overhead caused by Taurus is around 11.7%."
const TAURUS_OVERHEAD: f64 = 0.117;
/// "In recovery, Taurus command logging outperforms the serial baselines by 12.8x."
const COMMAND_RECOVERY_GAIN: f64 = 12.8;

const CLAIM_LOGGING: &str = "on the full TPC-C mix Taurus costs about 11.7% of no logging's \
    throughput and scales until the workload's parallelism limits every scheme (from 32 threads)";
const CLAIM_RECOVERY: &str = "on the full TPC-C mix Taurus command logging recovers 12.8x faster \
    than the serial baselines";

fn full_mix(threads: &[usize]) -> Bench {
    Bench::tpcc("full", threads)
}

pub(super) fn logging() -> Experiment {
    Experiment {
        id: "taurus-fig12",
        title: "Logging on the full TPC-C mix (Taurus Fig. 12a)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 12a",
        claim: CLAIM_LOGGING,
        scaled: format!(
            "TPC-C's full mix at {} worker threads, doubling up to this machine's {} cores (the \
             paper: up to {TAURUS_WORKERS}). {} {}",
            list(&sweep(TAURUS_WORKERS)),
            cores(),
            nvme_text(),
            shape()
        ),
        body: Body::Runs(vec![run(
            "taurus-fig12",
            full_mix(&sweep(TAURUS_WORKERS)),
            twopl(nvme, true),
            Some(vs_threads(
                "taurus-fig12",
                "TPC-C full mix: throughput vs threads",
            )),
        )]),
        verdict: logging_verdict,
    }
}

pub(super) fn recovery() -> Experiment {
    let mut bench = full_mix(&[top(TAURUS_WORKERS)]);
    bench.commits = Some(RECOVERY_TXNS);
    bench.repeat = Some(1);
    Experiment {
        id: "taurus-fig12b",
        title: "Recovery of the full TPC-C mix (Taurus Fig. 12b)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 12b",
        claim: CLAIM_RECOVERY,
        scaled: format!("{} {}", nvme_text(), recovery_scaled()),
        body: Body::Recovery {
            runs: vec![run("taurus-fig12b", bench, twopl(nvme, false), None)],
            threads: vec![top(TAURUS_WORKERS)],
            plans: &[None],
            figure: bars(
                "taurus-fig12b",
                "TPC-C full mix: recovery throughput",
                "replayed txn/s",
            ),
        },
        verdict: recovery_verdict,
    }
}

fn logging_verdict(m: &Measured) -> Verdict {
    let id = "taurus-fig12";
    let n = top(TAURUS_WORKERS);
    let taurus = data("taurus", n);
    let (Some(none), Some(td), Some(tc), Some(td1)) = (
        m.get(id, data("none", n)),
        m.tps(id, taurus),
        m.tps(id, taurus.command()),
        m.tps(
            id,
            Key {
                threads: 1,
                ..taurus
            },
        ),
    ) else {
        return Verdict::missing(id);
    };
    // What a Taurus commit pays that a serial one does not, per logging kind.
    let cost = |key: Key<'_>, serial: Key<'_>| match (m.get(id, key), m.get(id, serial)) {
        (Some(t), Some(s)) => format!(
            "a Taurus commit's log insert takes {:.0} ns against serial's {:.0} ns, with {} \
             shared read-modify-writes per commit against serial's {}",
            t.log_insert_ns,
            s.log_insert_ns,
            t.shared_rmw_per_commit
                .map_or("?".into(), |x| format!("{x:.2}")),
            s.shared_rmw_per_commit
                .map_or("?".into(), |x| format!("{x:.2}"))
        ),
        _ => "serial's run at the same threads is missing".to_string(),
    };
    let paper = 1.0 / (1.0 - TAURUS_OVERHEAD);
    let mut parts = Vec::new();
    for (kind, tps, key, serial) in [
        ("data", td, taurus, data("serial", n)),
        ("command", tc, taurus.command(), data("serial", n).command()),
    ] {
        let slowdown = none.txn_per_s / tps.max(1.0);
        parts.push(
            Part::within(
                format!("Taurus {kind} logging costs about 11.7% of no logging's throughput"),
                slowdown,
                paper,
                paper,
            )
            .measured(format!(
                "costs {} at {n} threads (no logging {}, Taurus {kind} {})",
                pct(1.0 - 1.0 / slowdown),
                k(none.txn_per_s),
                k(tps)
            ))
            .because(cost(key, serial)),
        );
    }
    parts.push(
        Part::above(
            "Taurus scales with the workers until the workload's parallelism limits it",
            td / td1.max(1.0),
        )
        .measured(format!(
            "Taurus data {} from 1 to {n} threads",
            times(td / td1.max(1.0))
        )),
    );
    Verdict::of(parts)
}

fn recovery_verdict(m: &Measured) -> Verdict {
    let id = "taurus-fig12b";
    let n = top(TAURUS_WORKERS);
    let rec = |key| m.recovery(id, key, "").map(|r| r.txn_per_s);
    let (Some(tc), Some(sc), Some(sd)) = (
        rec(data("taurus", n).command()),
        rec(data("serial", n).command()),
        rec(data("serial", n)),
    ) else {
        return Verdict::missing(id);
    };
    let (vs_sc, vs_sd) = (tc / sc.max(1.0), tc / sd.max(1.0));
    let plan = m
        .recovery(id, data("taurus", n).command(), "")
        .map_or("", |r| r.plan_used.as_str());
    let why = format!(
        "recovery runs {n} replay threads (the paper: up to {TAURUS_WORKERS}), so a parallel \
         replay can at most multiply one bound to a single thread by {n}; taurus's planner chose \
         the {plan} replay for the command log"
    );
    let shown = format!(
        "at {n} recovery threads: Taurus command {} ({} serial command, {} serial data)",
        k(tc),
        times(vs_sc),
        times(vs_sd)
    );
    Verdict::of(vec![
        Part::above(
            "Taurus command recovers faster than the serial baselines",
            vs_sc.min(vs_sd),
        )
        .measured(shown.clone())
        .because(why.clone()),
        Part::within(
            "Taurus command recovers 12.8x faster than the serial baselines",
            vs_sc.min(vs_sd),
            COMMAND_RECOVERY_GAIN,
            COMMAND_RECOVERY_GAIN,
        )
        .measured(shown)
        .because(why),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;
    use crate::report::verdict::{Level, RecoveryRow};

    fn logging_measured(overhead: f64) -> Measured {
        let n = top(TAURUS_WORKERS);
        let none = 100_000.0;
        let taurus = none * (1.0 - overhead);
        let mut m = Measured::default();
        m.runs.push((
            "taurus-fig12".to_string(),
            None,
            vec![
                result("none", "", "data", n, none),
                result("taurus", "", "data", 1, taurus / 1.8),
                result("taurus", "", "data", n, taurus),
                result("taurus", "", "command", n, taurus),
            ],
        ));
        m
    }

    #[test]
    fn fig12_overhead_near_the_paper_s_agrees_and_far_above_it_does_not() {
        assert_eq!(
            logging_verdict(&logging_measured(0.12)).level(),
            Level::Agrees
        );
        let v = logging_verdict(&logging_measured(0.5));
        assert_eq!(v.level(), Level::AgreesInDirection);
        assert_eq!(v.failing().len(), 2, "{:?}", v.failing());
        assert_eq!(
            logging_verdict(&Measured::default()).level(),
            Level::NotMeasured
        );
    }

    fn recovery_measured(gain: f64) -> Measured {
        let n = top(TAURUS_WORKERS);
        let row = |scheme: &str, logging: &str, tps: f64| RecoveryRow {
            run: "taurus-fig12b".into(),
            x: None,
            scheme: scheme.into(),
            variant: String::new(),
            logging: logging.into(),
            device: "file".into(),
            threads: n,
            plan_asked: String::new(),
            plan_used: String::new(),
            txns: 1000,
            txn_per_s: tps,
            repeats: vec![tps],
        };
        Measured {
            recoveries: vec![
                row("taurus", "command", 100_000.0 * gain),
                row("serial", "command", 100_000.0),
                row("serial", "data", 90_000.0),
            ],
            ..Measured::default()
        }
    }

    #[test]
    fn fig12b_a_small_gain_agrees_in_direction_and_a_loss_differs() {
        assert_eq!(
            recovery_verdict(&recovery_measured(12.0)).level(),
            Level::Agrees
        );
        let v = recovery_verdict(&recovery_measured(1.5));
        assert_eq!(v.level(), Level::AgreesInDirection);
        assert!(
            v.parts()[1].reason().contains("replay threads"),
            "{:?}",
            v.parts()
        );
        assert_eq!(
            recovery_verdict(&recovery_measured(0.8)).level(),
            Level::Differs
        );
    }
}
