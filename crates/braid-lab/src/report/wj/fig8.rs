//! Wang & Johnson (VLDB 2014) Fig. 8 (§5.3, the impact of passive group commit): the
//! volatile-cache variants, whose commits wait until every log's durable point passes them,
//! beside TX-D, on TATP Update-Location, TPC-B and TPC-C Payment. The paper claims that the TX
//! variants keep scaling, that against the durable-cache variants TX-V loses 4-10% on TATP
//! ("TPC-B and TPC-C results show the similar trend"), and that PG-V with log buffers from
//! malloc, "PG-V (malloc)", scales like TX-V a little below it. braid's PG-V is that variant:
//! its log buffers are ordinary memory, never one NUMA node's write-combining memory as the
//! paper's driver gave its plain PG-V, whose drop after 32 threads (and its worse NVM delay) the
//! paper puts down to that driver, so it is not a claim about passive group commit and is not
//! checked. The 1.2 us variants are drawn, and TX-V's checked against the paper's "up to 15%".

use super::{
    DELAY_COST, PAPER_CPUS, at_top, delayed, durable, gsn_var, page, passive, per_workload,
    proxies, tx, write_intensive,
};
use crate::report::experiments::{Bench, Experiment, Var, list, sweep, top};
use crate::report::projection;
use crate::report::verdict::{Key, Kind, Measured, Part, Verdict, band, data, k, pct, times};

/// TATP Update-Location: "The overhead ranges from 4% to 10% for TX-V (ideal)"; "TPC-B and
/// TPC-C results show the similar trend", so the same range is checked on all three.
const TXV_COST: (f64, f64) = (0.04, 0.10);

fn vars() -> Vec<Var> {
    vec![
        gsn_var("TX-D", vec![tx, durable]),
        gsn_var("TX-V", vec![tx, passive]),
        gsn_var("TX-V 1.2us", vec![tx, passive, delayed, at_top]),
        gsn_var("PG-V", vec![page, passive, at_top]),
        gsn_var("PG-V 1.2us", vec![page, passive, delayed, at_top]),
    ]
}

/// The runs: (id, title, bench).
fn runs() -> [(&'static str, &'static str, Bench); 3] {
    write_intensive(
        ["wj-fig8-tatp", "wj-fig8-tpcb", "wj-fig8-payment"],
        &sweep(PAPER_CPUS),
    )
}

pub(super) fn fig8() -> Experiment {
    Experiment {
        id: "wj-fig8",
        title: "Passive group commit on a volatile cache (Wang & Johnson Fig. 8)",
        paper: "Wang & Johnson, VLDB 2014",
        figure: "Fig. 8",
        claim: "with passive group commit the TX variants still scale; TX-V (ideal) loses 4-10% \
                against the durable-cache TX-D on TATP Update-Location, with a similar trend on \
                TPC-B and TPC-C Payment; PG-V with malloc'd log buffers scales like TX-V, \
                slightly lower",
        scaled: format!(
            "{} worker threads, doubling up to the machine's {} cores (the paper: up to \
             {PAPER_CPUS} threads on 24 cores with hyper-threading; the 1.2 us and PG variants \
             at {} only). Every scheme logs per update (--records update); gsn runs with \
             commit=passive (the V variants: a commit waits until every log's durable point \
             passes it) or commit=durable (TX-D, the reference), partition=tx or page; \"1.2us\" \
             adds the paper's NVM delay to every log insert. braid's PG-V takes ordinary memory \
             for its log buffers, as the paper's PG-V (malloc); the paper's plain PG-V used a \
             driver's write-combining memory on one NUMA node, which braid does not emulate. \
             Logs on persistent memory emulated by /dev/shm files.",
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
        let at = |variant| m.get(id, data("gsn", n).variant(variant));
        let tps1 = |variant| {
            m.tps(
                id,
                Key {
                    threads: 1,
                    ..data("gsn", n).variant(variant)
                },
            )
        };
        let (Some(t), Some(tv), Some(tvd), Some(pv), Some(tv1)) = (
            at("TX-D"),
            at("TX-V"),
            at("TX-V 1.2us"),
            at("PG-V"),
            tps1("TX-V"),
        ) else {
            return Verdict::missing(id);
        };
        let r = |x: f64, y: f64| x / y.max(1.0);
        let passive = format!(
            "TX-V takes {} against TX-D's {}; TX-V's commit waits {:.1} us at the median",
            proxies(tv),
            proxies(t),
            tv.p50_us
        );
        parts.push(
            Part::above(
                format!("{title}: TX-V scales as the core count increases"),
                r(tv.txn_per_s, tv1),
            )
            .measured(format!(
                "TX-V {} from 1 to {n} threads",
                times(r(tv.txn_per_s, tv1))
            ))
            .because(passive.clone()),
        );
        parts.push(projection::keeps_scaling(
            format!(
                "{title}: TX-V keeps scaling to the paper's {PAPER_CPUS} threads (braid's \
                 projection from its proxies)"
            ),
            &[("TX-V", tv, tv1)],
            PAPER_CPUS,
        ));
        let slowdown = r(t.txn_per_s, tv.txn_per_s);
        parts.push(
            Part::above(
                format!("{title}: passive group commit costs TX-V throughput against TX-D"),
                slowdown,
            )
            .measured(format!("TX-D {} TX-V at {n} threads", times(slowdown)))
            .because(passive.clone()),
        );
        let cost = |c: f64| 1.0 / (1.0 - c);
        let similar_trend = if id == "wj-fig8-tatp" {
            ""
        } else {
            " (TATP's 4-10%: \"TPC-B and TPC-C results show the similar trend\")"
        };
        parts.push(
            Part::within(
                format!("{title}: TX-V's overhead 4-10% of TX-D{similar_trend}"),
                slowdown,
                cost(TXV_COST.0),
                cost(TXV_COST.1),
            )
            .measured(format!("costs {}", pct(1.0 - 1.0 / slowdown)))
            .because(passive.clone()),
        );
        parts.push(
            Part::similar(
                format!("{title}: PG-V (malloc) scales like TX-V"),
                r(pv.txn_per_s, tv.txn_per_s),
            )
            .because(format!(
                "PG-V takes {} against TX-V's {}",
                proxies(pv),
                proxies(tv)
            )),
        );
        parts.push(
            Part::ordering(
                format!("{title}: PG-V (malloc) slightly below TX-V"),
                &[(("TX-V", tv.txn_per_s), ("PG-V", pv.txn_per_s))],
                k,
            )
            .because(format!(
                "PG-V takes {} against TX-V's {}",
                proxies(pv),
                proxies(tv)
            )),
        );
        let delay = r(tv.txn_per_s, tvd.txn_per_s);
        let (_, most) = band(1.0, 1.0 / (1.0 - DELAY_COST));
        parts.push(Part::check(
            format!("{title}: the 1.2 us NVM delay costs TX-V up to 15%"),
            Kind::Magnitude,
            format!("costs TX-V {}", pct(1.0 - 1.0 / delay)),
            delay <= most,
            format!(
                "{} is more than the accepted {} (the paper's 15%, its slowdown doubled): \
                 TX-V's log insert takes {:.0} ns with the delay against {:.0} ns without",
                pct(1.0 - 1.0 / delay),
                pct(1.0 - 1.0 / most),
                tvd.log_insert_ns,
                tv.log_insert_ns
            ),
        ));
    }
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::ConfigResult;
    use crate::report::result;
    use crate::report::verdict::Level;

    /// Fig. 8's measurements: TX-V scaling `scale` from 1 to the top, at `txv` of TX-D there,
    /// PG-V at `pgv` of TX-V, the delay costing TX-V `cost`.
    fn measured(scale: f64, txv: f64, pgv: f64, cost: f64) -> Measured {
        with_global(scale, txv, pgv, cost, 0.0)
    }

    /// [`measured`] with `global` read-modify-writes per commit in every row.
    fn with_global(scale: f64, txv: f64, pgv: f64, cost: f64, global: f64) -> Measured {
        let mut m = Measured::default();
        let n = top(PAPER_CPUS);
        for (id, _, _) in runs() {
            let t = 200_000.0;
            let v = t * txv;
            let res = vec![
                result("gsn", "TX-D", "data", 1, t / scale),
                result("gsn", "TX-D", "data", n, t),
                result("gsn", "TX-V", "data", 1, v / scale),
                result("gsn", "TX-V", "data", n, v),
                result("gsn", "TX-V 1.2us", "data", n, v * (1.0 - cost)),
                result("gsn", "PG-V", "data", n, v * pgv),
                result("gsn", "PG-V 1.2us", "data", n, v * pgv * (1.0 - cost)),
            ];
            let res = res
                .into_iter()
                .map(|c| ConfigResult {
                    global_rmw_per_commit: Some(global),
                    ..c
                })
                .collect();
            m.runs.push((id.to_string(), None, res));
        }
        m
    }

    #[test]
    fn fig8_agrees_when_passive_group_commit_costs_a_few_percent() {
        let v = verdict(&measured(1.8, 0.93, 0.92, 0.1));
        assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        assert_eq!(v.parts().len(), 3 * 7);
        // The projections are shown but not counted.
        assert_eq!(v.tally(), (3 * 6, 3 * 6));
        assert_eq!(verdict(&Measured::default()).level(), Level::NotMeasured);
    }

    #[test]
    fn fig8_a_free_passive_group_commit_differs_and_a_costly_one_is_direction_only() {
        let v = verdict(&measured(1.8, 1.0, 0.92, 0.1));
        assert_eq!(v.level(), Level::Differs);
        assert!(
            v.failing()
                .iter()
                .any(|c| c.contains("costs TX-V throughput")),
            "{:?}",
            v.failing()
        );
        let v = verdict(&measured(1.8, 0.6, 0.92, 0.1));
        assert_eq!(v.level(), Level::AgreesInDirection);
        // TX-V's 40% is outside the band on every workload, TPC-B's and Payment's included.
        let tail = " (TATP's 4-10%: \"TPC-B and TPC-C results show the similar trend\")";
        assert_eq!(
            v.failing(),
            [
                "TATP Update-Location: TX-V's overhead 4-10% of TX-D".to_string(),
                format!("TPC-B: TX-V's overhead 4-10% of TX-D{tail}"),
                format!("TPC-C Payment: TX-V's overhead 4-10% of TX-D{tail}"),
            ]
        );
    }

    #[test]
    fn fig8_tx_v_s_cost_is_checked_on_tpc_b_and_payment_too() {
        // The committed report's 25% and 21% on TPC-B and Payment, 13% on TATP.
        let mut m = Measured::default();
        for (i, cost) in [0.13, 0.25, 0.21].into_iter().enumerate() {
            let one = measured(1.8, 1.0 - cost, 0.92, 0.1);
            m.runs.push(one.runs[i].clone());
        }
        let v = verdict(&m);
        assert_eq!(v.level(), Level::AgreesInDirection);
        assert_eq!(v.failing().len(), 2, "{:?}", v.failing());
        assert!(
            v.failing()
                .iter()
                .all(|c| c.contains("overhead 4-10%") && !c.starts_with("TATP")),
            "{:?}",
            v.failing()
        );
    }

    #[test]
    fn fig8_tx_v_capped_by_a_global_word_before_48_threads_is_a_projection_only() {
        // 10 global read-modify-writes per commit at 103 K/s per thread cap TX-V near 14 cores:
        // the projection misses, is shown, and moves nothing.
        let v = verdict(&with_global(1.8, 0.93, 0.92, 0.1, 10.0));
        assert_eq!(v.level(), Level::Agrees);
        let missed: Vec<_> = v.parts().iter().filter(|p| !p.holds()).collect();
        assert_eq!(missed.len(), 3);
        assert!(
            missed
                .iter()
                .all(|p| p.projected() && p.claim().contains("keeps scaling")),
            "{missed:?}"
        );
    }

    #[test]
    fn fig8_pg_v_above_tx_v_or_far_below_fails() {
        let v = verdict(&measured(1.8, 0.93, 1.05, 0.1));
        assert_eq!(v.level(), Level::Differs);
        let v = verdict(&measured(1.8, 0.93, 0.5, 0.1));
        assert_eq!(v.level(), Level::AgreesInDirection);
        assert!(
            v.failing().iter().all(|c| c.contains("scales like TX-V")),
            "{:?}",
            v.failing()
        );
    }
}
