//! Wang & Johnson (VLDB 2014) Fig. 6: Fig. 4's comparison on the full TATP and TPC-C mixes,
//! which write less and contend less, with the "ideal" variants only: Baseline and Aether (the
//! centralized log), TX-D and PG-D (distributed logging on a durable cache), and TX-V and PG-V
//! (on a volatile cache, committing by passive group commit). §5.2 claims that on TATP Aether
//! scales almost as well as distributed logging, a little below it, while Baseline does not
//! scale; that on TPC-C the centralized logs scale up to 16 threads and only distributed
//! logging after; that PG-D stays below TX-D; and that after 32 threads the V variants lose
//! throughput. Each is checked on the part of the curve the machine draws, as what it is: a
//! turn the machine reaches is a direction; below it, the central logs' scaling is a
//! direction and the levels the paper shows together there are alike (a magnitude).

use super::{PAPER_CPUS, at_top, durable, gsn_var, page, passive, per_workload, proxies, tx};
use crate::common::WorkloadKind;
use crate::report::experiments::{Bench, Experiment, Var, list, sweep, top};
use crate::report::projection;
use crate::report::verdict::{Key, Kind, Measured, Part, Verdict, data, k, times};

/// TPC-C: "both Baseline and Aether scaled up to 16 threads, after which only distributed
/// logging variants can scale".
const CENTRAL_SCALES_TO: usize = 16;
/// TPC-C: "both TX-V and PG-V have lower throughput after 32 threads".
const PASSIVE_DROPS_AFTER: usize = 32;

fn vars() -> Vec<Var> {
    vec![
        Var::per_update(&["baseline", "aether"]),
        gsn_var("TX-D", vec![tx, durable]),
        gsn_var("PG-D", vec![page, durable, at_top]),
        gsn_var("TX-V", vec![tx, passive, at_top]),
        gsn_var("PG-V", vec![page, passive, at_top]),
    ]
}

/// The runs: (id, title, bench).
fn runs() -> [(&'static str, &'static str, Bench); 2] {
    let threads = sweep(PAPER_CPUS);
    [
        (
            "wj-fig6-tatp",
            "TATP (full mix)",
            Bench::new(WorkloadKind::Tatp, &threads),
        ),
        (
            "wj-fig6-tpcc",
            "TPC-C (full mix)",
            Bench::tpcc("full", &threads),
        ),
    ]
}

pub(super) fn fig6() -> Experiment {
    Experiment {
        id: "wj-fig6",
        title: "Centralized vs distributed logging on the full mixes (Wang & Johnson Fig. 6)",
        paper: "Wang & Johnson, VLDB 2014",
        figure: "Fig. 6",
        claim: "with fewer writes, Aether scales almost as well as distributed logging on TATP, \
                though slightly lower, while Baseline cannot scale; on TPC-C, Baseline and Aether \
                scale up to 16 threads, after which only distributed logging scales; PG-D stays \
                below TX-D; after 32 threads TX-V and PG-V lose throughput",
        scaled: format!(
            "{} worker threads, doubling up to the machine's {} cores (the paper: up to \
             {PAPER_CPUS} threads on 24 cores with hyper-threading; PG-D, TX-V and PG-V at {} \
             only). Every scheme logs per update (--records update); gsn runs with \
             commit=durable (D) or passive (V, passive group commit) and partition=tx or page, \
             without the NVM delay (the paper's \"ideal\"). Logs on persistent memory emulated \
             by /dev/shm files. What the paper says past 16 threads (only distributed logging \
             scales on TPC-C) and past 32 (TX-V and PG-V lose throughput) is checked, as the \
             direction it is, where the machine reaches those counts; below them the central \
             logs must scale (a direction) and the levels the paper's curves show together \
             there must be alike (magnitudes). PG-V is judged as TX-V is, against its \
             durable-cache twin PG-D.",
            list(&sweep(PAPER_CPUS)),
            crate::report::experiments::cores(),
            top(PAPER_CPUS)
        ),
        body: per_workload(runs(), vars),
        verdict,
    }
}

fn verdict(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let n = top(PAPER_CPUS);
    for (id, title, _) in runs() {
        let at = |scheme, threads, variant: &'static str| {
            m.get(id, data(scheme, threads).variant(variant))
        };
        let tps1 = |k: Key<'_>| m.tps(id, Key { threads: 1, ..k });
        let (Some(a), Some(b), Some(t), Some(p), Some(tv), Some(a1), Some(b1), Some(t1)) = (
            at("aether", n, ""),
            at("baseline", n, ""),
            at("gsn", n, "TX-D"),
            at("gsn", n, "PG-D"),
            at("gsn", n, "TX-V"),
            tps1(data("aether", n)),
            tps1(data("baseline", n)),
            tps1(data("gsn", n).variant("TX-D")),
        ) else {
            return Verdict::missing(id);
        };
        let r = |x: f64, y: f64| x / y.max(1.0);
        let (s_a, s_b, s_t) = (r(a.txn_per_s, a1), r(b.txn_per_s, b1), r(t.txn_per_s, t1));
        let scaling = format!(
            "1 to {n} threads: TX-D {}, Aether {}, Baseline {}; Aether takes {}, TX-D {}",
            times(s_t),
            times(s_a),
            times(s_b),
            proxies(a),
            proxies(t)
        );
        let tatp = id == "wj-fig6-tatp";
        if tatp {
            parts.push(
                Part::above(
                    format!("{title}: distributed logging ahead of Aether, though only slightly"),
                    r(t.txn_per_s, a.txn_per_s),
                )
                .measured(format!(
                    "TX-D {} Aether at {n} threads",
                    times(r(t.txn_per_s, a.txn_per_s))
                ))
                .because(scaling.clone()),
            );
            parts.push(
                Part::similar(
                    format!("{title}: Aether scales almost equally well as distributed logging"),
                    s_a / s_t,
                )
                .measured(scaling.clone()),
            );
            parts.push(
                Part::below(
                    format!("{title}: Baseline cannot scale as the load increases"),
                    s_b / s_a,
                )
                .measured(scaling.clone())
                .because(format!("Baseline takes {}", proxies(b))),
            );
        } else if n <= CENTRAL_SCALES_TO {
            // Below the paper's 16 threads: the centralized logs scale, and the curves the
            // paper draws there lie together.
            parts.push(
                Part::above(
                    format!(
                        "{title}: up to {CENTRAL_SCALES_TO} threads both Baseline and Aether \
                         scale (the slower of the two from 1 to {n} threads)"
                    ),
                    s_a.min(s_b),
                )
                .measured(scaling.clone()),
            );
            parts.push(
                Part::similar(
                    format!(
                        "{title}: up to {CENTRAL_SCALES_TO} threads Baseline and Aether keep up \
                         with distributed logging (at {n} threads: TX-D beside Aether)"
                    ),
                    r(t.txn_per_s, a.txn_per_s),
                )
                .measured(scaling.clone()),
            );
        } else {
            parts.push(
                Part::above(
                    format!(
                        "{title}: after {CENTRAL_SCALES_TO} threads only distributed logging \
                         scales (TX-D's scaling over Aether's)"
                    ),
                    s_t / s_a,
                )
                .measured(scaling.clone()),
            );
        }
        if tatp {
            let cap = projection::cap_cores(a, a1);
            parts.push(
                Part::check(
                    format!(
                        "{title}: Aether keeps scaling within the paper's {PAPER_CPUS} threads \
                         (projected from the proxies)"
                    ),
                    Kind::Crossover,
                    projection::describe("Aether", a, a1),
                    a.global_rmw_per_commit.is_some() && cap.is_none_or(|n| n >= PAPER_CPUS as f64),
                    format!("Aether's projected cap is below the paper's {PAPER_CPUS} threads"),
                )
                .projection(),
            );
        } else {
            parts.push(projection::crossover(
                format!(
                    "{title}: the centralized log stops scaling within the paper's {PAPER_CPUS} \
                     threads while distributed logging goes on (projected from the proxies)"
                ),
                ("Aether", a, a1),
                ("TX-D", t, t1),
                PAPER_CPUS,
            ));
        }
        parts.push(
            Part::ordering(
                format!("{title}: PG-D below TX-D"),
                &[(("TX-D", t.txn_per_s), ("PG-D", p.txn_per_s))],
                k,
            )
            .because(format!(
                "PG-D takes {} against TX-D's {}",
                proxies(p),
                proxies(t)
            )),
        );
        if !tatp {
            // "both TX-V and PG-V have lower throughput after 32 threads": each against its
            // durable-cache twin.
            let Some(pv) = at("gsn", n, "PG-V") else {
                return Verdict::missing(id);
            };
            for (name, v, d, vc, dc) in [
                ("TX-V", r(tv.txn_per_s, t.txn_per_s), "TX-D", tv, t),
                ("PG-V", r(pv.txn_per_s, p.txn_per_s), "PG-D", pv, p),
            ] {
                let why = format!("{name} takes {} against {d}'s {}", proxies(vc), proxies(dc));
                parts.push(if n <= PASSIVE_DROPS_AFTER {
                    Part::similar(
                        format!(
                            "{title}: up to {PASSIVE_DROPS_AFTER} threads passive group commit \
                             keeps {name} beside {d}"
                        ),
                        v,
                    )
                    .measured(format!("{name} {} {d} at {n} threads", times(v)))
                    .because(why)
                } else {
                    Part::below(
                        format!(
                            "{title}: after {PASSIVE_DROPS_AFTER} threads {name} loses throughput \
                             against {d}"
                        ),
                        v,
                    )
                    .measured(format!("{name} {} {d} at {n} threads", times(v)))
                    .because(why)
                });
            }
        }
    }
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;
    use crate::report::verdict::Level;

    /// Fig. 6's measurements: Aether scaling `scale` from 1 to the top, TX-D at `txd` of Aether
    /// and scaling `txd_scale`, Baseline scaling `base_scale`, TX-V at `txv` of TX-D.
    fn measured(txd: f64, txd_scale: f64, base_scale: f64, txv: f64) -> Measured {
        let mut m = Measured::default();
        let n = top(PAPER_CPUS);
        let scale = 1.8;
        for (id, _, _) in runs() {
            let a1 = 100_000.0;
            let a2 = a1 * scale;
            let t2 = a2 * txd;
            // TATP's Aether makes few global read-modify-writes per commit (its cap lies beyond
            // the paper's threads), TPC-C's many (it lies within).
            let mut aether = result("aether", "", "data", n, a2);
            aether.global_rmw_per_commit = Some(if id.ends_with("tatp") { 0.1 } else { 20.0 });
            let mut txd_top = result("gsn", "TX-D", "data", n, t2);
            txd_top.global_rmw_per_commit = Some(0.0);
            let res = vec![
                result("aether", "", "data", 1, a1),
                aether,
                result("baseline", "", "data", 1, a1),
                result("baseline", "", "data", n, a1 * base_scale),
                result("gsn", "TX-D", "data", 1, t2 / txd_scale),
                txd_top,
                result("gsn", "PG-D", "data", n, t2 * 0.9),
                result("gsn", "TX-V", "data", n, t2 * txv),
                result("gsn", "PG-V", "data", n, t2 * txv * 0.9),
            ];
            m.runs.push((id.to_string(), None, res));
        }
        m
    }

    #[test]
    fn fig6_agrees_when_aether_keeps_up_and_baseline_does_not() {
        let v = verdict(&measured(1.1, 1.9, 1.2, 0.95));
        assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        // TATP: 3 parts, a projection and PG-D's; TPC-C: the 16-thread part(s), the
        // projection, PG-D's and TX-V's and PG-V's.
        let sixteen = if top(PAPER_CPUS) <= CENTRAL_SCALES_TO {
            2
        } else {
            1
        };
        assert_eq!(v.parts().len(), 3 + 1 + 1 + sixteen + 1 + 1 + 2);
        assert_eq!(v.parts().iter().filter(|p| p.projected()).count(), 2);
        assert_eq!(verdict(&Measured::default()).level(), Level::NotMeasured);
    }

    #[test]
    fn fig6_a_scaling_baseline_or_a_tie_with_aether_differs() {
        let v = verdict(&measured(1.1, 1.9, 1.8, 0.95));
        assert_eq!(v.level(), Level::Differs);
        assert_eq!(
            v.failing(),
            ["TATP (full mix): Baseline cannot scale as the load increases"]
        );
        let v = verdict(&measured(1.0, 1.8, 1.2, 0.95));
        assert_eq!(v.level(), Level::Differs);
        assert!(
            v.failing()[0].contains("ahead of Aether"),
            "{:?}",
            v.failing()
        );
    }

    #[test]
    fn fig6_crossovers_are_checked_where_the_machine_reaches_them() {
        // TX-D far ahead of Aether on TPC-C: below 16 threads the paper's curves are alike.
        let v = verdict(&measured(2.0, 3.6, 1.2, 0.95));
        let n = top(PAPER_CPUS);
        if n <= CENTRAL_SCALES_TO {
            let p = v
                .parts()
                .iter()
                .find(|p| p.claim().contains("keep up with distributed logging"));
            assert!(
                p.is_some_and(|p| p.kind() == Kind::Magnitude && !p.holds()),
                "{p:?}"
            );
            assert_eq!(v.level(), Level::AgreesInDirection, "{:?}", v.failing());
        }
        // A passive group commit that halves TX-V and PG-V is not "beside" TX-D and PG-D
        // below 32 threads (a magnitude), and after 32 a measured drop (a direction).
        let v = verdict(&measured(1.1, 1.9, 1.2, 0.5));
        if n <= PASSIVE_DROPS_AFTER {
            assert_eq!(
                v.failing(),
                [
                    "TPC-C (full mix): up to 32 threads passive group commit keeps TX-V beside TX-D",
                    "TPC-C (full mix): up to 32 threads passive group commit keeps PG-V beside PG-D"
                ]
            );
            assert_eq!(v.level(), Level::AgreesInDirection);
        }
    }

    #[test]
    fn fig6_the_scaling_of_the_central_logs_is_a_direction() {
        // Aether and Baseline not scaling below 16 threads: a measured direction fails.
        let v = verdict(&measured(1.1, 1.9, 1.0, 0.95));
        if top(PAPER_CPUS) <= CENTRAL_SCALES_TO && top(PAPER_CPUS) > 1 {
            assert_eq!(v.level(), Level::Differs);
            let p = v
                .parts()
                .iter()
                .find(|p| p.claim().contains("both Baseline and Aether scale"));
            assert!(
                p.is_some_and(|p| p.kind() == Kind::Direction && !p.holds()),
                "{p:?}"
            );
        }
        // No part is a crossover but the proxies' projections.
        assert!(
            v.parts()
                .iter()
                .all(|p| p.kind() != Kind::Crossover || p.projected()),
            "{:?}",
            v.parts()
        );
    }
}
