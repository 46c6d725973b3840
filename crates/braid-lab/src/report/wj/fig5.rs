//! Wang & Johnson (VLDB 2014) Fig. 5: time breakdowns of TX-D (ideal) on the write-intensive
//! workloads of Fig. 4 against threads. §5.2 reads them as: logging keeps performing well as
//! load grows while other contention (Shore-MT's buffer manager) grows on TPC-B and TPC-C;
//! TATP shows no significant growth of contention. Drawn from Fig. 4's runs (the same runs,
//! not run again) with [`super::breakdown`]'s split.

use super::breakdown::{self, HOW, Split};
use super::fig4;
use crate::bench::ConfigResult;
use crate::report::experiments::{Body, Experiment, list, run, sweep, top};
use crate::report::plot::{Chart, Figure, Stack};
use crate::report::verdict::{Kind, Measured, Part, Verdict};

/// The workloads' titles, in the order of Fig. 4's runs.
const TITLES: [&str; 3] = ["TATP UL", "TPC-B", "Payment"];

fn stacks(rows: &[(f64, ConfigResult)]) -> Vec<Stack> {
    breakdown::stacks(rows, &TITLES, "TX-D")
}

pub(super) fn fig5() -> Experiment {
    let threads = sweep(fig4::PAPER_THREADS);
    Experiment {
        id: "wj-fig5",
        title: "Time breakdowns of TX-D on write-intensive transactions (Wang & Johnson Fig. 5)",
        paper: "Wang & Johnson, VLDB 2014",
        figure: "Fig. 5",
        claim: "with transaction-level partitioning on a durable cache, logging continues to \
                perform well as load grows, while other sources of contention gradually become \
                larger for TPC-B and TPC-C; TATP shows no significant increase in contention",
        scaled: format!(
            "TX-D (ideal) in Fig. 4's runs (TATP Update-Location, TPC-B and TPC-C Payment, \
             every scheme logging per update, logs on persistent memory emulated by /dev/shm \
             files) at {} threads, the machine's sweep (the paper: up to {} threads on 24 \
             cores); none at the same thread counts in the same runs. {HOW}",
            list(&threads),
            fig4::PAPER_THREADS
        ),
        body: Body::Breakdown {
            runs: fig4::runs()
                .into_iter()
                .enumerate()
                .map(|(i, (id, _, bench))| (i as f64, run(id, bench, fig4::vars(), None)))
                .collect(),
            figure: Figure {
                stem: "wj-fig5".into(),
                title: "TX-D: CPU time per committed transaction, every thread".into(),
                x_label: "",
                y_label: "% of CPU time per transaction",
                chart: Chart::Stacked(stacks),
            },
        },
        verdict,
    }
}

/// The split of TX-D on workload `i` at 1 thread and at the top of the sweep.
fn ends(m: &Measured, i: usize) -> Option<(Split, Split)> {
    let id = fig4::runs()[i].0;
    let rows: Vec<(f64, ConfigResult)> = m.run(id).iter().map(|c| (i as f64, c.clone())).collect();
    let s = breakdown::splits(&rows, i as f64, "TX-D");
    let (a, b) = (s.first()?, s.last()?);
    (b.threads > a.threads).then_some((*a, *b))
}

fn verdict(m: &Measured) -> Verdict {
    let all: Vec<Option<(Split, Split)>> = (0..TITLES.len()).map(|i| ends(m, i)).collect();
    let [Some(tatp), Some(tpcb), Some(pay)] = [all[0], all[1], all[2]] else {
        return Verdict::missing("TX-D and none at two thread counts on every workload");
    };
    let n = top(fig4::PAPER_THREADS);
    let shares = format!(
        "TATP {}; TPC-B {}; Payment {}",
        tatp.1.text(),
        tpcb.1.text(),
        pay.1.text()
    );
    // Other contention's growth: none's CPU time per transaction at the top over 1 thread.
    let growth = |s: &(Split, Split)| (s.1.other_work + s.1.other_contention) / s.1.other_work;
    let b = format!("TPC-B at {n} threads");
    let p = format!("Payment at {n} threads");
    Verdict::of(vec![
        Part::ordering(
            "logging continues to perform well as load grows: on TPC-B and TPC-C log \
             contention stays below other contention",
            &[
                (
                    (
                        "TPC-B other contention",
                        tpcb.1.share(tpcb.1.other_contention),
                    ),
                    ("log contention", tpcb.1.share(tpcb.1.log_contention)),
                ),
                (
                    (
                        "Payment other contention",
                        pay.1.share(pay.1.other_contention),
                    ),
                    ("log contention", pay.1.share(pay.1.log_contention)),
                ),
            ],
            |x| format!("{:.1}%", x * 100.0),
        )
        .because(shares.clone()),
        Part::ordering(
            "other sources of contention become larger with load on TPC-B and TPC-C (the \
             transaction without logging takes longer per thread)",
            &[
                ((b.as_str(), growth(&tpcb)), ("1 thread", 1.0)),
                ((p.as_str(), growth(&pay)), ("1 thread", 1.0)),
            ],
            |x| format!("{x:.2}x"),
        )
        .with_kind(Kind::Direction)
        .because(shares.clone()),
        Part::ordering(
            "TATP shows no significant increase in contention: its other contention grows less \
             than TPC-B's and TPC-C's",
            &[
                (("TPC-B", growth(&tpcb)), ("TATP", growth(&tatp))),
                (("Payment", growth(&pay)), ("TATP", growth(&tatp))),
            ],
            |x| format!("{x:.2}x"),
        )
        .because(shares),
    ])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::super::breakdown::tests::row;
    use super::*;
    use crate::common::NONE;
    use crate::report::verdict::Level;

    /// One workload's rows: none at 1 us per transaction at 1 thread and `none2` us at 2;
    /// TX-D at 2 us and 3 us with inserts of 300 ns and `insert2` ns.
    fn workload(none2: f64, insert2: f64) -> Vec<ConfigResult> {
        vec![
            row(NONE, "", 1, 1e6, 0.0),
            row(NONE, "", 2, 2e6 / none2, 0.0),
            row("gsn", "TX-D", 1, 5e5, 300.0),
            row("gsn", "TX-D", 2, 2e6 / 3.0, insert2),
        ]
    }

    fn measured(tatp: f64, tpcb: f64, pay: f64, insert2: f64) -> Measured {
        let mut m = Measured::default();
        for ((id, _, _), none2) in fig4::runs().into_iter().zip([tatp, tpcb, pay]) {
            m.runs
                .push((id.to_string(), None, workload(none2, insert2)));
        }
        m
    }

    #[test]
    fn contention_growing_outside_the_log_agrees_and_log_contention_above_it_differs() {
        if top(fig4::PAPER_THREADS) < 2 {
            return;
        }
        // TATP's none grows 1%, TPC-B's and Payment's 50%; insertion grows 100 ns.
        let v = verdict(&measured(1.01, 1.5, 1.5, 400.0));
        assert_eq!(v.level(), Level::Agrees, "{v:?}");
        // Insertion grows 900 ns, beyond other contention's 500 ns.
        let v = verdict(&measured(1.01, 1.5, 1.5, 1200.0));
        assert_eq!(v.level(), Level::Differs, "{v:?}");
        assert!(!v.parts()[0].holds());
        // TATP's contention growing as much as TPC-B's.
        let v = verdict(&measured(1.6, 1.5, 1.5, 400.0));
        assert!(!v.parts()[2].holds(), "{v:?}");
        assert_eq!(verdict(&Measured::default()).level(), Level::NotMeasured);
    }
}
