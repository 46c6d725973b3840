//! Taurus (Xia et al., VLDB 2021) Fig. 14 (§5.6, "Transaction Impact"): throughput against the
//! number of tuples a YCSB transaction accesses, 2 to 2,000. The paper: "We evaluate YCSB-500G
//! on an EC2 i3en.metal instance and vary the number of tuples every transaction accesses from
//! 2 to 2,000. Fig. 14 shows the throughput is inversely proportional with the transaction
//! length."
//!
//! The text names no schemes for Fig. 14; its i3en.metal is the NVMe machine of §5.2, so braid
//! runs Fig. 5's 2PL schemes on the NVMe-class devices (no logging, serial data and command,
//! Plover, Taurus data and command; serial on RAID-0 is left out: Fig. 14 is about the
//! transaction, not the devices). Taurus data logging's runs are also Fig. 15's (its time
//! breakdown, [`super::fig15`]), which draws from them rather than running them again.
//!
//! The verdict, per scheme: a direction part (throughput falls at every step, 2 -> 20 -> 200
//! -> 2,000 tuples) and a magnitude part, "inversely proportional": 100x fewer transactions
//! per second from 20 to 2,000 tuples, a slope of -1 on a log-log plot, with the report's
//! magnitude band (the paper's 100x gain halved and doubled: 50.5x-199x, slopes -0.85 to
//! -1.15). From 2 to 20 tuples a transaction's fixed costs (its commit, log record and the
//! client) weigh as much as its accesses, so the slope there is shown, not judged.

use super::{BOTH, DATA, nvme, nvme_text, on, parallel};
use crate::bench::ConfigResult;
use crate::common::WorkloadKind;
use crate::report::experiments::{
    Bench, Body, Experiment, Run, TAURUS_WORKERS, Var, list, run, top,
};
use crate::report::plot::{Chart, Figure, Key as LineKey};
use crate::report::verdict::{Key, Measured, Part, Verdict, data, times};

/// The tuples per transaction of the paper's Figs. 14-15 ("from 2 to 2,000").
pub(super) const TUPLES: [usize; 4] = [2, 20, 200, 2000];

/// "inversely proportional": throughput from 20 to 2,000 tuples falls by their ratio.
const INVERSE: f64 = 100.0;

/// The run of `tuples` per transaction (Fig. 15 draws from the same runs).
pub(super) fn run_id(tuples: usize) -> String {
    format!("taurus-fig14-{tuples}")
}

/// Fig. 5's 2PL schemes on the NVMe-class devices, without serial on RAID-0.
fn vars() -> Vec<Var> {
    vec![
        on(nvme, "", &["none", "serial"], BOTH, &[]),
        on(nvme, "", &["plover"], DATA, &[parallel]),
        on(nvme, "", &["taurus"], BOTH, &[parallel]),
    ]
}

/// The runs, one per transaction length, at the top of the machine's thread sweep.
pub(super) fn runs() -> Vec<(f64, Run)> {
    TUPLES
        .iter()
        .map(|&n| {
            let mut b = Bench::new(WorkloadKind::Ycsb, &[top(TAURUS_WORKERS)]);
            b.accesses = Some(n);
            (n as f64, run(&run_id(n), b, vars(), None))
        })
        .collect()
}

/// The schemes of the verdict: name, scheme, command logging.
const SCHEMES: [(&str, &str, bool); 6] = [
    ("no logging", "none", false),
    ("serial data", "serial", false),
    ("serial command", "serial", true),
    ("Plover", "plover", false),
    ("Taurus data", "taurus", false),
    ("Taurus command", "taurus", true),
];

fn key(scheme: &str, command: bool, threads: usize) -> Key<'_> {
    let k = data(scheme, threads);
    if command { k.command() } else { k }
}

pub(super) fn fig14() -> Experiment {
    let n = top(TAURUS_WORKERS);
    Experiment {
        id: "taurus-fig14",
        title: "Throughput against transaction length (Taurus Fig. 14)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 14",
        claim: "as the tuples a YCSB transaction accesses grow from 2 to 2,000, the throughput is \
                inversely proportional with the transaction length",
        scaled: format!(
            "YCSB (1M rows of 1 KB, Zipf 0.6, half the accesses reads; the paper: YCSB-500G) \
             with {} tuples per transaction (the paper's axis: \"from 2 to 2,000\"), {n} workers \
             (the paper does not give its count; it ran on the 96-vCPU i3en.metal), 2PL \
             NO_WAIT. The paper names no schemes for Fig. 14; its i3en.metal is the NVMe machine \
             of its Sec. 5.2, so these are Fig. 5's schemes on the NVMe-class devices: no \
             logging, serial data and command logging on one device, Plover, and Taurus data and \
             command logging on {d} logs and devices (serial on RAID-0 left out). {} \
             \"Inversely proportional\" is judged from 20 to 2,000 tuples: 100x fewer \
             transactions per second, a log-log slope of -1 (the report's magnitude band: \
             50.5x-199x); from 2 to 20 a transaction's fixed costs (commit, log record, the \
             bench's client) weigh as much as its accesses, and that slope is shown only. Taurus \
             data logging's runs are also Fig. 15's.",
            list(&TUPLES),
            nvme_text(),
            d = super::devices(),
        ),
        body: Body::Sweep {
            runs: runs(),
            figure: Figure {
                stem: "taurus-fig14".into(),
                title: format!("YCSB: throughput vs tuples per transaction ({n} threads)"),
                x_label: "tuples accessed per transaction (log scale)",
                y_label: "txn/s (log scale)",
                chart: Chart::LogLog {
                    key: LineKey::SchemeLogging,
                },
            },
        },
        verdict,
    }
}

/// The slope of throughput against tuples on a log-log plot between `(t0, v0)` and `(t1, v1)`.
fn slope((t0, v0): (f64, f64), (t1, v1): (f64, f64)) -> f64 {
    (v1.max(1e-9) / v0.max(1e-9)).log10() / (t1 / t0).log10()
}

/// `x` txn/s, short.
fn tps(x: f64) -> String {
    format!("{} txn/s", crate::plot::human(x))
}

/// Aborts per committed transaction.
fn abort_rate(c: &ConfigResult) -> f64 {
    c.aborts_per_s / c.txn_per_s.max(1e-9)
}

fn verdict(m: &Measured) -> Verdict {
    let n = top(TAURUS_WORKERS);
    let mut parts = Vec::new();
    for (name, scheme, command) in SCHEMES {
        let got: Option<Vec<&ConfigResult>> = TUPLES
            .iter()
            .map(|&t| m.get(&run_id(t), key(scheme, command, n)))
            .collect();
        let Some(got) = got else {
            let what = format!("{name} at every transaction length");
            parts.push(Part::not_measured(
                format!("{name}: throughput falls as the transactions grow"),
                crate::report::verdict::Kind::Ordering,
                format!("{what} did not run"),
            ));
            continue;
        };
        let v: Vec<f64> = got.iter().map(|c| c.txn_per_s).collect();
        let labels = ["2 tuples", "20", "200", "2,000"];
        let chain: Vec<(&str, f64)> = labels.iter().copied().zip(v.iter().copied()).collect();
        parts.push(Part::chain(
            format!(
                "{name}: throughput falls as the transactions grow (2 -> 20 -> 200 -> 2,000 tuples)"
            ),
            &chain,
            tps,
        ));
        let ratio = v[1] / v[3].max(1e-9);
        let far = slope((20.0, v[1]), (2000.0, v[3]));
        let near = slope((2.0, v[0]), (20.0, v[1]));
        let last = got[3];
        parts.push(
            Part::within(
                format!(
                    "{name}: throughput inversely proportional to the tuples accessed, 20 to \
                     2,000 (100x fewer txn/s, a log-log slope of -1)"
                ),
                ratio,
                INVERSE,
                INVERSE,
            )
            .measured(format!(
                "{} fewer from 20 to 2,000 tuples: slope {far:.2} (2 to 20: {near:.2})",
                times(ratio)
            ))
            .because({
                // Attempts, aborted ones included: the work the workers did per second.
                let attempts = |c: &ConfigResult| c.txn_per_s + c.aborts_per_s;
                let work = attempts(got[1]) / attempts(last).max(1e-9);
                format!(
                    "NO_WAIT aborts {:.2} attempts per commit at 2,000 tuples ({:.3} at 20); counting every attempt, aborted or not, the attempts per second fall {} from 20 to 2,000 tuples (slope {:.2}); {:.1} KB of log per transaction at 2,000 tuples",
                    abort_rate(last),
                    abort_rate(got[1]),
                    times(work),
                    -work.log10() / 2.0,
                    last.log_bytes_per_s / last.txn_per_s.max(1e-9) / 1e3,
                )
            }),
        );
    }
    if parts.iter().all(|p| !p.ran()) {
        return Verdict::missing("the schemes at every transaction length");
    }
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;
    use crate::report::verdict::Level;

    /// Every scheme's throughput at 2, 20, 200 and 2,000 tuples: `base` at 2 tuples, then
    /// falling by `k` per decade from 20 on (2 to 20: by half a decade's worth).
    fn measured(base: f64, per_decade: f64) -> Measured {
        let n = top(TAURUS_WORKERS);
        let mut m = Measured::default();
        for (i, &t) in TUPLES.iter().enumerate() {
            let tps = match i {
                0 => base,
                _ => base / per_decade.sqrt() / per_decade.powi(i as i32 - 1),
            };
            let mut rows = Vec::new();
            for (_, scheme, command) in SCHEMES {
                if scheme == "none" {
                    rows.push(result("none", "", "data", n, tps * 1.2));
                } else {
                    let logging = if command { "command" } else { "data" };
                    rows.push(result(scheme, "", logging, n, tps));
                }
            }
            m.runs.push((run_id(t), Some(t as f64), rows));
        }
        m
    }

    #[test]
    fn inverse_proportion_agrees_and_a_flatter_fall_is_a_magnitude_miss() {
        // 10x per decade from 20 tuples on: slope -1.
        let v = verdict(&measured(400_000.0, 10.0));
        assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        assert_eq!(v.tally(), (12, 12));
        // 4x per decade: throughput falls, but 16x from 20 to 2,000, not 100x.
        let v = verdict(&measured(400_000.0, 4.0));
        assert_eq!(v.level(), Level::AgreesInDirection, "{v:?}");
        assert_eq!(v.tally(), (6, 12));
        // Throughput that rises with the length contradicts the direction.
        let v = verdict(&measured(400_000.0, 0.5));
        assert_eq!(v.level(), Level::Differs, "{v:?}");
        assert_eq!(verdict(&Measured::default()).level(), Level::NotMeasured);
    }

    #[test]
    fn the_slope_is_read_on_log_scales() {
        assert!((slope((20.0, 1000.0), (2000.0, 10.0)) + 1.0).abs() < 1e-12);
        assert!((slope((2.0, 100.0), (20.0, 100.0))).abs() < 1e-12);
        assert!((slope((20.0, 1.0), (200.0, 100.0)) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_scheme_that_did_not_run_is_not_measured() {
        let mut m = measured(400_000.0, 10.0);
        for (_, _, rows) in &mut m.runs {
            rows.retain(|c| c.scheme != "plover");
        }
        let v = verdict(&m);
        assert_eq!(v.level(), Level::NotMeasured, "{v:?}");
    }
}
