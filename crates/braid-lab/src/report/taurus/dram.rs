//! Taurus (Xia et al., VLDB 2021) §5.4, Fig. 11: logs on a DRAM file system, the paper's
//! stand-in for persistent memory, where the log's bandwidth no longer binds and what remains
//! is each scheme's CPU and memory cost. Logging against threads (Fig. 11a) and recovery
//! (Fig. 11b) on YCSB, the 2PL schemes of Fig. 5 with Silo-R beside them as in Figs. 9-10.
//! The paper: command logging's advantage "is greatly reduced when the bandwidth is
//! sufficient"; Taurus command scales linearly while serial command is "restricted by the
//! cache coherence traffic"; every parallel scheme scales in recovery, Silo-R slightly ahead
//! of Taurus (it resolves no dependencies).

use braid_engine::log::LogKind;

use super::super::experiments::{
    BOTH, Bench, Body, DATA, Experiment, RECOVERY_TXNS, Run, TAURUS_WORKERS, Var, bars, cores,
    list, parallel, run, sweep, top, vs_threads,
};
use super::super::projection;
use super::super::verdict::{Key, Kind, Measured, Part, Verdict, data, k, times};
use super::{dram, occ_deep, on, shape};
use crate::common::WorkloadKind;

const PAPER: &str = "Xia et al., VLDB 2021";

const DRAM: &str = "Logs on a DRAM file system, as the paper's Fig. 11: segment files in \
    /dev/shm written with pwrite and fdatasync, not paced (persistent memory simulated by a RAM \
    disk, every write through the OS).";

/// The schemes of Fig. 11 on logs in DRAM: no logging (`with_none`), serial and Taurus with
/// data and command logging, Plover, and Silo-R under OCC.
fn vars(with_none: bool) -> Vec<Var> {
    let serial: &'static [&'static str] = if with_none {
        &["none", "serial"]
    } else {
        &["serial"]
    };
    vec![
        on(dram, "", serial, BOTH, &[]),
        on(dram, "", &["plover"], DATA, &[parallel]),
        on(dram, "", &["taurus"], BOTH, &[parallel]),
        on(dram, "OCC", &["silor"], DATA, &[parallel, occ_deep]),
    ]
}

/// The recovery threads of Fig. 11b: one, and the top of the sweep.
fn recovery_threads() -> Vec<usize> {
    let mut t = vec![1, top(TAURUS_WORKERS)];
    t.dedup();
    t
}

pub(super) fn logging() -> Experiment {
    Experiment {
        id: "taurus-fig11",
        title: "Logging on a DRAM file system (Taurus Fig. 11a)",
        paper: PAPER,
        figure: "Fig. 11a",
        claim: "with logs in DRAM command logging's advantage is greatly reduced; Taurus command \
                logging scales linearly while serial command logging is restricted by the cache \
                coherence traffic",
        scaled: format!(
            "YCSB at {} worker threads, doubling up to this machine's {} cores (the paper: up to \
             {TAURUS_WORKERS}). {DRAM} {} Silo-R runs OCC with 65,536 commits in flight, the \
             rest 2PL.",
            list(&sweep(TAURUS_WORKERS)),
            cores(),
            shape()
        ),
        body: Body::Runs(vec![run(
            "taurus-fig11",
            Bench::new(WorkloadKind::Ycsb, &sweep(TAURUS_WORKERS)),
            vars(true),
            Some(vs_threads(
                "taurus-fig11",
                "YCSB, logs in DRAM: throughput vs threads",
            )),
        )]),
        verdict: logging_verdict,
    }
}

pub(super) fn recovery() -> Experiment {
    let mut bench = Bench::new(WorkloadKind::Ycsb, &[top(TAURUS_WORKERS)]);
    bench.commits = Some(RECOVERY_TXNS);
    bench.repeat = Some(1);
    let runs: Vec<Run> = vec![run("taurus-fig11b", bench, vars(false), None)];
    Experiment {
        id: "taurus-fig11b",
        title: "Recovery from a DRAM file system (Taurus Fig. 11b)",
        paper: PAPER,
        figure: "Fig. 11b",
        claim: "with logs in DRAM every parallel scheme scales in recovery, and Silo-R outperforms \
                Taurus data slightly as it does not resolve dependencies",
        scaled: format!(
            "{DRAM} Each scheme logs {RECOVERY_TXNS} YCSB transactions with {} workers, and its \
             database is recovered three times with {} recovery threads (the paper: up to \
             {TAURUS_WORKERS}); the table gives the medians.",
            top(TAURUS_WORKERS),
            list(&recovery_threads())
        ),
        body: Body::Recovery {
            runs,
            threads: recovery_threads(),
            plans: &[None],
            figure: bars(
                "taurus-fig11b",
                "YCSB recovery throughput, logs in DRAM",
                "replayed txn/s",
            ),
        },
        verdict: recovery_verdict,
    }
}

fn logging_verdict(m: &Measured) -> Verdict {
    let id = "taurus-fig11";
    let n = top(TAURUS_WORKERS);
    let at = |key: Key<'_>, t: usize| m.get(id, Key { threads: t, ..key });
    let (td_k, tc_k, sc_k) = (
        data("taurus", n),
        data("taurus", n).command(),
        data("serial", n).command(),
    );
    let (Some(td), Some(tc), Some(sc), Some(tc1), Some(sc1)) = (
        at(td_k, n),
        at(tc_k, n),
        at(sc_k, n),
        at(tc_k, 1),
        at(sc_k, 1),
    ) else {
        return Verdict::missing(id);
    };
    let (td, tc, sc) = (td.txn_per_s, tc, sc);
    let speedup = tc.txn_per_s / tc1.txn_per_s.max(1.0);
    let rmw = |c: &crate::bench::ConfigResult| {
        c.shared_rmw_per_commit
            .map_or("?".into(), |x| format!("{x:.2}"))
    };
    let mut parts = vec![
        Part::similar(
            "command logging's advantage is greatly reduced: Taurus command and data logging \
             run at a similar level",
            tc.txn_per_s / td.max(1.0),
        )
        .measured(format!(
            "at {n} threads Taurus command {} against Taurus data {}",
            k(tc.txn_per_s),
            k(td)
        ))
        .because(format!(
            "a Taurus command commit's log insert takes {:.0} ns and makes {} shared \
             read-modify-writes; the bench's log-insert time is what logging kinds differ in \
             when the log's bandwidth does not bind",
            tc.log_insert_ns,
            rmw(tc)
        )),
        Part::above(
            "Taurus command outperforms serial command, which the cache coherence traffic \
             restricts",
            tc.txn_per_s / sc.txn_per_s.max(1.0),
        )
        .measured(format!(
            "at {n} threads Taurus command {} against serial command {}",
            k(tc.txn_per_s),
            k(sc.txn_per_s)
        ))
        .because(format!(
            "with {n} workers serial command's shared LSN takes {} shared read-modify-writes \
             per commit against Taurus command's {}: too few rivals for the coherence traffic \
             to bind",
            rmw(sc),
            rmw(tc)
        )),
        Part::within(
            "Taurus command logging scales linearly with the workers",
            speedup,
            n as f64,
            n as f64,
        )
        .measured(format!(
            "Taurus command {} from 1 to {n} threads ({} to {})",
            times(speedup),
            k(tc1.txn_per_s),
            k(tc.txn_per_s)
        ))
        .because(format!(
            "no logging scales {} over the same threads on this machine",
            m.tps(id, data("none", n))
                .zip(m.tps(id, data("none", 1)))
                .map_or("?".into(), |(a, b)| times(a / b.max(1.0)))
        )),
    ];
    parts.push(projection::crossover(
        "serial command stops scaling where Taurus command goes on (the paper's sweep: up to \
         80 threads; braid's from its proxies)",
        ("serial command", sc, sc1.txn_per_s),
        ("Taurus command", tc, tc1.txn_per_s),
        TAURUS_WORKERS,
    ));
    Verdict::of(parts)
}

fn recovery_verdict(m: &Measured) -> Verdict {
    let id = "taurus-fig11b";
    let n = top(TAURUS_WORKERS);
    let rec = |scheme: &str, variant: &str, kind: LogKind, t: usize| {
        let mut key = data(scheme, t).variant(variant);
        if kind == LogKind::Command {
            key = key.command();
        }
        m.recovery(id, key, "").map(|r| r.txn_per_s)
    };
    let parallel = [
        ("Plover", "plover", "", LogKind::Data),
        ("Taurus data", "taurus", "", LogKind::Data),
        ("Taurus command", "taurus", "", LogKind::Command),
        ("Silo-R", "silor", "OCC", LogKind::Data),
    ];
    let mut scaling = Vec::new();
    for (name, scheme, variant, kind) in parallel {
        let (Some(one), Some(top_)) =
            (rec(scheme, variant, kind, 1), rec(scheme, variant, kind, n))
        else {
            return Verdict::missing(id);
        };
        scaling.push((name, top_ / one.max(1.0), one, top_));
    }
    let mut parts = Vec::new();
    if n > 1 {
        let worst = scaling
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(0.0, |s| s.1);
        let shown: Vec<String> = scaling
            .iter()
            .map(|(name, r, one, t)| format!("{name} {} ({} to {})", times(*r), k(*one), k(*t)))
            .collect();
        parts.push(
            Part::above(
                format!("every parallel scheme's recovery scales from 1 to {n} threads"),
                worst,
            )
            .measured(shown.join(", "))
            .because(format!(
                "the weakest scales {}: its replay is bound by what one thread does for all \
                 (see the recovery table)",
                times(worst)
            )),
        );
    } else {
        parts.push(Part::not_measured(
            "every parallel scheme's recovery scales with the threads",
            Kind::Direction,
            "this machine has one core",
        ));
    }
    let (Some(sr), Some(td)) = (
        rec("silor", "OCC", LogKind::Data, n),
        rec("taurus", "", LogKind::Data, n),
    ) else {
        return Verdict::missing(id);
    };
    let shown = format!(
        "at {n} recovery threads Silo-R {} against Taurus data {}",
        k(sr),
        k(td)
    );
    parts.push(
        Part::above(
            "Silo-R outperforms Taurus data in recovery (no dependencies to resolve)",
            sr / td.max(1.0),
        )
        .measured(shown.clone())
        .because(format!(
            "Taurus data's replay resolves its records' LSN vectors and Silo-R's applies by \
             version: with {n} threads they replay {} and {}",
            k(td),
            k(sr)
        )),
    );
    parts.push(
        Part::slightly_above(
            "Silo-R is only slightly ahead of Taurus data",
            sr / td.max(1.0),
        )
        .measured(shown),
    );
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;
    use crate::report::verdict::{Level, RecoveryRow};

    fn logging_measured(tc_gain: f64, serial_g: f64) -> Measured {
        let n = top(TAURUS_WORKERS);
        let with = |s: &str, l: &str, t: usize, tps: f64, g: f64| crate::bench::ConfigResult {
            global_rmw_per_commit: Some(g),
            ..result(s, "", l, t, tps)
        };
        let mut rows = vec![
            with("none", "data", 1, 500_000.0, 0.0),
            with("none", "data", n, 500_000.0 * n as f64, 0.0),
            with("taurus", "data", n, 400_000.0 * n as f64, 0.0),
            with("taurus", "command", 1, 400_000.0, 0.0),
            with("serial", "command", 1, 400_000.0, serial_g),
            with("taurus", "command", n, 400_000.0 * n as f64 * tc_gain, 0.0),
            with("serial", "command", n, 300_000.0 * n as f64, serial_g),
        ];
        rows.dedup_by(|a, b| {
            a.scheme == b.scheme && a.logging == b.logging && a.threads == b.threads
        });
        let mut m = Measured::default();
        m.runs.push(("taurus-fig11".into(), None, rows));
        m
    }

    #[test]
    fn fig11_needs_linear_taurus_command_and_a_capped_serial_command() {
        // 1.0 global RMW per commit at 400 K/s caps serial command near 36 cores.
        let v = logging_verdict(&logging_measured(1.0, 1.0));
        if top(TAURUS_WORKERS) > 1 {
            assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        }
        // Taurus command at a third of Taurus data: not a similar level, and below serial.
        let v = logging_verdict(&logging_measured(0.3, 1.0));
        assert_eq!(v.level(), Level::Differs, "{v:?}");
        assert_eq!(
            logging_verdict(&Measured::default()).level(),
            Level::NotMeasured
        );
    }

    fn recovery_measured(silor: f64, scale: f64) -> Measured {
        let n = top(TAURUS_WORKERS);
        let row = |scheme: &str, variant: &str, logging: &str, t: usize, tps: f64| RecoveryRow {
            run: "taurus-fig11b".into(),
            x: None,
            scheme: scheme.into(),
            variant: variant.into(),
            logging: logging.into(),
            device: "file".into(),
            threads: t,
            plan_asked: String::new(),
            plan_used: String::new(),
            txns: 1000,
            txn_per_s: tps,
            repeats: vec![tps],
        };
        let mut v = Vec::new();
        for (s, var, l, base) in [
            ("plover", "", "data", 100_000.0),
            ("taurus", "", "data", 100_000.0),
            ("taurus", "", "command", 80_000.0),
            ("silor", "OCC", "data", 100_000.0 * silor),
        ] {
            v.push(row(s, var, l, 1, base));
            if n > 1 {
                v.push(row(s, var, l, n, base * scale));
            }
        }
        Measured {
            recoveries: v,
            ..Measured::default()
        }
    }

    #[test]
    fn fig11b_silor_slightly_ahead_and_every_scheme_scaling_agrees() {
        if top(TAURUS_WORKERS) == 1 {
            return;
        }
        let v = recovery_verdict(&recovery_measured(1.1, 1.8));
        assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        // Nothing scales: a direction part fails.
        assert_eq!(
            recovery_verdict(&recovery_measured(1.1, 1.0)).level(),
            Level::Differs
        );
        // Silo-R far ahead: the direction holds, "slightly" does not.
        assert_eq!(
            recovery_verdict(&recovery_measured(3.0, 1.8)).level(),
            Level::AgreesInDirection
        );
        // A tie (+0.8%) is neither ahead nor slightly ahead.
        let v = recovery_verdict(&recovery_measured(1.008, 1.8));
        assert_eq!(v.level(), Level::Differs);
        assert_eq!(
            v.failing(),
            [
                "Silo-R outperforms Taurus data in recovery (no dependencies to resolve)",
                "Silo-R is only slightly ahead of Taurus data"
            ]
        );
    }
}
