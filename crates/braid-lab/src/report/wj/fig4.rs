//! Wang & Johnson (VLDB 2014) Fig. 4: centralized logging (Baseline: Shore-MT's log with a
//! plain lock and no ELR; Aether: consolidation array, decoupled fill, flush pipelining, ELR)
//! against distributed logging with transaction-level (TX-D) and page-level (PG-D)
//! partitioning on a durable processor cache, each "ideal" and with the 1.2 us NVM insert
//! delay, on TATP Update-Location, TPC-B and TPC-C Payment. Every scheme logs per update, as
//! Shore-MT does (`--records update`). The verdict checks §5.2's claim per workload: TX-D
//! ahead of Aether and scaling where it does not, PG-D below TX-D, the TATP ratios, and the
//! delay's cost.

use super::{
    DELAY_COST, delayed, durable, gsn_var, page, per_workload, proxies, tx, write_intensive,
};
use crate::bench::BenchArgs;
use crate::report::experiments::{Bench, Experiment, Var, list, sweep, top};
use crate::report::verdict::{Key, Kind, Measured, Part, Verdict, band, data, k, pct, times};

/// The paper's largest thread count in Fig. 4 (80 threads on 24 cores).
pub(super) const PAPER_THREADS: usize = 80;
/// The paper's physical cores, up to which distributed logging scales "near-linearly".
const PAPER_CORES: usize = 24;

pub(super) fn vars() -> Vec<Var> {
    vec![
        Var::per_update(&["none", "baseline", "aether"]),
        gsn_var("TX-D", vec![tx, durable]),
        gsn_var("TX-D 1.2us", vec![tx, durable, delayed, at_fig4_top]),
        gsn_var("PG-D", vec![page, durable, at_fig4_top]),
        gsn_var("PG-D 1.2us", vec![page, durable, delayed, at_fig4_top]),
    ]
}

/// Only at the top of Fig. 4's sweep.
fn at_fig4_top(a: &mut BenchArgs) {
    a.threads = vec![top(PAPER_THREADS)];
}

/// The runs: (id, title, bench).
pub(super) fn runs() -> [(&'static str, &'static str, Bench); 3] {
    write_intensive(
        ["wj-fig4-tatp", "wj-fig4-tpcb", "wj-fig4-payment"],
        &sweep(PAPER_THREADS),
    )
}

pub(super) fn fig4() -> Experiment {
    Experiment {
        id: "wj-fig4",
        title: "Centralized vs distributed logging (Wang & Johnson Fig. 4)",
        paper: "Wang & Johnson, VLDB 2014",
        figure: "Fig. 4",
        claim: "with a durable processor cache, distributed logging scales where the centralized log \
                (Aether) saturates: on TATP, TX-D (ideal) is 1.6-3.2x Aether and PG-D (ideal) 1.3-2.7x, \
                with the same trend on TPC-B and TPC-C Payment; the 1.2 us NVM delay costs up to 15%",
        scaled: format!(
            "{} worker threads, doubling up to the machine's {} cores (the paper: up to \
             {PAPER_THREADS} on 24 cores; PG-D and the delayed variants at {} only). Every scheme \
             logs per update (--records update). `baseline` and `aether` are the centralized \
             log; gsn runs with commit=durable (the durable-cache variants) and partition=tx \
             (TX-D) or page (PG-D); \"1.2us\" adds the paper's NVM delay to every log insert. \
             Logs on persistent memory emulated by /dev/shm files. On a few cores the central \
             log's contention barely shows: the shared and global read-modify-writes per commit \
             beside each row say what more cores would do.",
            list(&sweep(PAPER_THREADS)),
            crate::report::experiments::cores(),
            top(PAPER_THREADS)
        ),
        body: per_workload(runs(), vars),
        verdict,
    }
}

/// The paper's TATP figures (§5.2): TX-D (ideal) 1.6-3.2x Aether, PG-D (ideal) 1.3-2.7x.
const TXD_TATP: (f64, f64) = (1.6, 3.2);
const PGD_TATP: (f64, f64) = (1.3, 2.7);

fn verdict(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let n = top(PAPER_THREADS);
    for (id, title, _) in runs() {
        let txd = data("gsn", n).variant("TX-D");
        let aether = data("aether", n);
        let baseline = data("baseline", n);
        let one = |k: Key<'_>| m.tps(id, Key { threads: 1, ..k });
        let (Some(a), Some(t), Some(p), Some(d), Some(pd), Some(b), Some(a1), Some(t1), Some(b1)) = (
            m.get(id, aether),
            m.get(id, txd),
            m.get(id, data("gsn", n).variant("PG-D")),
            m.get(id, data("gsn", n).variant("TX-D 1.2us")),
            m.get(id, data("gsn", n).variant("PG-D 1.2us")),
            m.get(id, baseline),
            one(aether),
            one(txd),
            one(baseline),
        ) else {
            return Verdict::missing(id);
        };
        let r = |x: f64, y: f64| x / y.max(1.0);
        let (vs_aether, pg_aether) = (r(t.txn_per_s, a.txn_per_s), r(p.txn_per_s, a.txn_per_s));
        let (s_aether, s_txd) = (r(a.txn_per_s, a1), r(t.txn_per_s, t1));
        let s_base = r(b.txn_per_s, b1);
        let contention = format!(
            "at {n} threads the central log has {} rival(s): Aether scales {} from 1 to {n} \
             threads, with {} (TX-D: {}); those proxies, not {n} threads, say what more cores \
             would do",
            n - 1,
            times(s_aether),
            proxies(a),
            proxies(t)
        );
        parts.push(
            Part::above(
                format!(
                    "{title}: TX-D (ideal) outperforms Aether, the centralized log (TATP: 1.6-3.2x; \
                     \"a similar trend for TPC-B and TPC-C\")"
                ),
                vs_aether,
            )
            .measured(format!("TX-D {} Aether at {n} threads", times(vs_aether)))
            .because(contention.clone()),
        );
        parts.push(
            Part::above(
                format!(
                    "{title}: distributed logging scales where the centralized log saturates \
                     (\"neither Baseline nor Aether scales well\")"
                ),
                s_txd / s_aether,
            )
            .measured(format!(
                "1 to {n} threads: TX-D {}, Aether {}",
                times(s_txd),
                times(s_aether)
            ))
            .because(contention.clone()),
        );
        parts.push(
            Part::above(
                format!(
                    "{title}: distributed logging scales where Baseline, the centralized log \
                     without Aether's optimizations, does not (\"neither Baseline nor Aether \
                     scales well\")"
                ),
                s_txd / s_base,
            )
            .measured(format!(
                "1 to {n} threads: TX-D {}, Baseline {}",
                times(s_txd),
                times(s_base)
            ))
            .because(format!(
                "Baseline takes {}; at {n} threads its lock has {} rival(s)",
                proxies(b),
                n - 1
            )),
        );
        parts.push(
            Part::ordering(
                format!(
                    "{title}: PG-D (ideal) below TX-D (ideal) (\"lower throughput in all \
                     benchmarks\")"
                ),
                &[(("TX-D", t.txn_per_s), ("PG-D", p.txn_per_s))],
                k,
            )
            .because(format!(
                "PG-D takes {} against TX-D's {}",
                proxies(p),
                proxies(t)
            )),
        );
        parts.push(crate::report::projection::crossover(
            format!(
                "{title}: the centralized log stops scaling within the paper's {PAPER_CORES} \
                 cores while distributed logging goes on (projected from the proxies)"
            ),
            ("Aether", a, a1),
            ("TX-D", t, t1),
            PAPER_CORES,
        ));
        if id == "wj-fig4-tatp" {
            parts.push(
                Part::within(
                    "TATP: TX-D (ideal) 1.6-3.2x Aether",
                    vs_aether,
                    TXD_TATP.0,
                    TXD_TATP.1,
                )
                .because(contention.clone()),
            );
            parts.push(
                Part::within(
                    "TATP: PG-D (ideal) 1.3-2.7x Aether",
                    pg_aether,
                    PGD_TATP.0,
                    PGD_TATP.1,
                )
                .because(contention),
            );
        }
        // "the imposed NVM delay shows an overhead of up to 15% for all the three workloads",
        // of TX-D and PG-D alike ("both TX-D and PG-D (with and without the delay)").
        let (_, most) = band(1.0, 1.0 / (1.0 - DELAY_COST));
        let most_cost = 1.0 - 1.0 / most;
        for (name, ideal, delayed) in [("TX-D", t, d), ("PG-D", p, pd)] {
            let slowdown = r(ideal.txn_per_s, delayed.txn_per_s);
            let cost = 1.0 - 1.0 / slowdown;
            parts.push(Part::check(
                format!("{title}: the 1.2 us NVM delay costs {name} up to 15%"),
                Kind::Magnitude,
                format!("costs {name} {}", pct(cost)),
                slowdown <= most,
                format!(
                    "{} is more than the accepted {} (the paper's 15%, its slowdown doubled): \
                     {name}'s log insert takes {:.0} ns with the delay against {:.0} ns \
                     without, and with {n} threads nothing else contended hides it",
                    pct(cost),
                    pct(most_cost),
                    delayed.log_insert_ns,
                    ideal.log_insert_ns
                ),
            ));
        }
    }
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::ConfigResult;
    use crate::report::result;
    use crate::report::verdict::Level;

    /// Fig. 4's measurements: Aether scaling `scale` from 1 to the top of the sweep, TX-D
    /// twice that and at `txd` of Aether at the top, the delay costing `cost` of TX-D's.
    fn measured(txd: f64, cost: f64, scale: f64) -> Measured {
        measured_with(txd, cost, scale, 10.0)
    }

    /// As [`measured`], Aether making `aether_global` global read-modify-writes per commit.
    fn measured_with(txd: f64, cost: f64, scale: f64, aether_global: f64) -> Measured {
        let mut m = Measured::default();
        let n = top(PAPER_THREADS);
        for (id, _, _) in runs() {
            let a1 = 100_000.0;
            let a2 = a1 * scale;
            let global = |mut c: ConfigResult, g: f64| {
                c.global_rmw_per_commit = Some(g);
                c
            };
            let res = vec![
                result("aether", "", "data", 1, a1),
                global(result("aether", "", "data", n, a2), aether_global),
                result("baseline", "", "data", 1, a1 * 0.9),
                result("baseline", "", "data", n, a2 * 0.7),
                result("gsn", "TX-D", "data", 1, a2 * txd / 2.0),
                global(result("gsn", "TX-D", "data", n, a2 * txd), 0.0),
                result("gsn", "TX-D 1.2us", "data", n, a2 * txd * (1.0 - cost)),
                result("gsn", "PG-D", "data", n, a2 * txd * 0.9),
                result(
                    "gsn",
                    "PG-D 1.2us",
                    "data",
                    n,
                    a2 * txd * 0.9 * (1.0 - cost),
                ),
            ];
            m.runs.push((id.to_string(), None, res));
        }
        m
    }

    #[test]
    fn fig4_agrees_only_when_every_part_holds() {
        let v = verdict(&measured(2.0, 0.1, 1.5));
        assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        // Per workload: 2 directions on Aether, Baseline's, PG-D's ordering, the projection
        // and the two delays; TATP's two ratios.
        assert_eq!(v.parts().len(), 3 * 7 + 2);
        assert_eq!(v.tally(), (3 * 6 + 2, 3 * 6 + 2));
    }

    #[test]
    fn fig4_a_tie_with_aether_is_not_a_direction() {
        // TX-D at 1.0037x Aether on every workload: the old `< 1.0` test let this pass.
        let v = verdict(&measured(1.0037, 0.1, 1.5));
        assert_eq!(v.level(), Level::Differs);
        let tie = &v.parts()[0];
        assert!(
            !tie.holds() && tie.reason().contains("within 1 +/- 0.03"),
            "{tie:?}"
        );
        assert!(tie.reason().contains("Aether scales 1.50x"), "{tie:?}");
    }

    #[test]
    fn fig4_a_small_lead_or_a_costly_delay_agrees_in_direction_only() {
        let v = verdict(&measured(1.2, 0.1, 1.5));
        assert_eq!(v.level(), Level::AgreesInDirection);
        assert_eq!(
            v.failing(),
            [
                "TATP: TX-D (ideal) 1.6-3.2x Aether",
                "TATP: PG-D (ideal) 1.3-2.7x Aether"
            ]
        );
        let v = verdict(&measured(2.0, 0.5, 1.5));
        assert_eq!(v.level(), Level::AgreesInDirection);
        let p = v.parts().iter().find(|p| !p.holds());
        assert!(
            p.is_some_and(|p| p.reason().starts_with("50% is more than")),
            "{p:?}"
        );
        // PG-D's delay is judged as TX-D's.
        assert!(
            v.failing()
                .iter()
                .any(|c| c.ends_with("the 1.2 us NVM delay costs PG-D up to 15%")),
            "{:?}",
            v.failing()
        );
    }

    #[test]
    fn fig4_aether_scaling_as_well_as_tx_d_differs() {
        let v = verdict(&measured(2.0, 0.1, 2.0));
        assert_eq!(v.level(), Level::Differs);
        assert!(
            v.failing().iter().all(|c| c.contains("scales")),
            "{:?}",
            v.failing()
        );
        assert_eq!(verdict(&Measured::default()).level(), Level::NotMeasured);
    }

    #[test]
    fn fig4_a_central_log_the_proxies_do_not_cap_misses_only_a_projection() {
        // 2 global read-modify-writes per commit at 100 K commits/s per thread: capped at 71
        // cores, beyond the paper's 24. A projection: shown, failing, and not counted.
        let v = verdict(&measured_with(2.0, 0.1, 1.5, 2.0));
        assert_eq!(v.level(), Level::Agrees);
        let missed: Vec<_> = v.parts().iter().filter(|p| !p.holds()).collect();
        assert_eq!(missed.len(), 3);
        assert!(
            missed
                .iter()
                .all(|p| p.projected() && p.claim().contains("projected from the proxies")),
            "{missed:?}"
        );
    }

    #[test]
    fn fig4_a_baseline_scaling_as_well_as_tx_d_differs() {
        let mut m = measured(2.0, 0.1, 1.5);
        for (_, _, rows) in &mut m.runs {
            for c in rows
                .iter_mut()
                .filter(|c| c.scheme == "baseline" && c.threads > 1)
            {
                // Baseline scaling 2x (TX-D's scaling) from its 90 K at 1 thread.
                c.txn_per_s = 180_000.0;
            }
        }
        let v = verdict(&m);
        if top(PAPER_THREADS) > 1 {
            assert_eq!(v.level(), Level::Differs);
            assert!(
                v.failing().iter().all(|c| c.contains("where Baseline")),
                "{:?}",
                v.failing()
            );
        }
    }
}
