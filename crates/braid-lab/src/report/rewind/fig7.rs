//! REWIND Fig. 7 (§5.2): the persistent B+-tree's logging against the non-recoverable tree
//! (Simple, Optimized, Batch) and against Berkeley DB (and PMDK, where built) on the same mix.

use serde_json::Value;

use crate::report::verdict::{Kind, Measured, Part, SIMILAR, Verdict, times};

use super::{f, json, secs};

/// The B+-tree mix point of `system` at update fraction `u`.
fn mix<'a>(m: &'a Measured, system: &str, u: f64) -> Option<&'a Value> {
    json(m)?["btree_mix"]["points"]
        .as_array()?
        .iter()
        .find(|p| {
            p["system"] == system && f(p, "update_fraction").is_some_and(|x| (x - u).abs() < 1e-9)
        })
}

pub(super) fn fig7(m: &Measured) -> Verdict {
    let point = |s: &str| mix(m, s, 1.0);
    let time = |s: &str| point(s).and_then(|p| f(p, "seconds"));
    let (Some(simple), Some(batch), Some(opt), Some(nvm)) = (
        time("simple"),
        time("batch"),
        time("optimized"),
        time("nvm"),
    ) else {
        return Verdict::missing("the B+-tree mix at 100% updates");
    };
    let fences = |s: &str| {
        point(s)
            .and_then(|p| f(p, "fences_per_op"))
            .map_or_else(|| "?".into(), |x| format!("{x:.1}"))
    };
    let fence_counts = format!(
        "fences per operation: Simple {}, Optimized {}, Batch {}, the non-recoverable tree {}; \
         every system, the non-recoverable tree too, pays {} ns per persisted line",
        fences("simple"),
        fences("optimized"),
        fences("batch"),
        fences("nvm"),
        crate::rewind::NVM_WRITE_NS
    );
    let improves = |by: f64| 1.0 / (1.0 - by);
    let improvement = |t: f64| {
        format!(
            "{} ({:.0}% less time)",
            times(simple / t),
            (1.0 - t / simple) * 100.0
        )
    };
    let close: Vec<(&str, f64)> = vec![
        ("Simple", simple / nvm),
        ("Optimized", opt / nvm),
        ("Batch", batch / nvm),
    ];
    let far: Vec<String> = close
        .iter()
        .filter(|(_, r)| *r > SIMILAR)
        .map(|(n, r)| format!("{n} {}", times(*r)))
        .collect();
    let mut parts = vec![
        Part::chain(
            "Optimized improves on Simple and Batch improves on it more (27% and 37%)",
            &[("Simple", simple), ("Optimized", opt), ("Batch", batch)],
            secs,
        )
        .because(fence_counts.clone()),
        Part::within(
            "Optimized improves Simple by 27% (Simple's time 1.37x Optimized's)",
            simple / opt,
            improves(0.27),
            improves(0.27),
        )
        .measured(improvement(opt))
        .because(fence_counts.clone()),
        Part::within(
            "Batch improves Simple by 37% (Simple's time 1.59x Batch's)",
            simple / batch,
            improves(0.37),
            improves(0.37),
        )
        .measured(improvement(batch))
        .because(fence_counts.clone()),
        Part::check(
            "all REWIND configurations perform well and close to the non-recoverable NVM tree",
            Kind::Magnitude,
            close
                .iter()
                .map(|(n, r)| format!("{n} {}", times(*r)))
                .collect::<Vec<_>>()
                .join(", ")
                + " the NVM tree's time",
            far.is_empty(),
            format!(
                "{} the NVM tree's time, beyond the {} taken as close; {fence_counts}",
                far.join(", "),
                times(SIMILAR)
            ),
        ),
    ];
    let bdb_claim = "REWIND (Batch) outperforms Berkeley DB at 100% update queries";
    let bdb_mag = "REWIND outperforms Berkeley DB by 10.5x at 100% update queries";
    match time("berkeley-db") {
        Some(b) => {
            let pmdk = time("pmdk")
                .map(|p| {
                    format!(
                        "; PMDK, not in the paper and not charged the NVM latency, {} Batch's",
                        times(p / batch)
                    )
                })
                .unwrap_or_default();
            let shown = format!("Berkeley DB takes {} Batch's time{pmdk}", times(b / batch));
            let lines = |s: &str| {
                point(s)
                    .and_then(|p| f(p, "lines_per_op"))
                    .map_or_else(|| "?".into(), |x| format!("{x:.1}"))
            };
            let why = format!(
                "both pay {} ns per line written to the emulated NVM, Berkeley DB per 64-byte line \
                 of file data it writes (as the paper charged its writes to PMFS): {} lines per \
                 operation against Batch's {} persisted lines and {} fences; Berkeley DB takes \
                 {} against Batch's {}",
                crate::rewind::NVM_WRITE_NS,
                lines("berkeley-db"),
                lines("batch"),
                fences("batch"),
                secs(b),
                secs(batch)
            );
            parts.push(
                Part::above(bdb_claim, b / batch)
                    .measured(shown.clone())
                    .because(why.clone()),
            );
            parts.push(
                Part::within(bdb_mag, b / batch, 10.5, 10.5)
                    .measured(shown)
                    .because(why),
            );
        }
        None => {
            let why = "Berkeley DB was not built (scripts/rewind-peers.sh)";
            parts.push(Part::not_measured(bdb_claim, Kind::Direction, why));
            parts.push(Part::not_measured(bdb_mag, Kind::Magnitude, why));
        }
    }
    parts.push(Part::not_measured(
        "REWIND outperforms Stasis by 8.5x and Shore-MT by 20.5x at 100% update queries",
        Kind::Magnitude,
        "neither Stasis nor Shore-MT can be obtained here",
    ));
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rewind::fixtures::with;
    use crate::report::verdict::Level;

    fn mix_points(simple: f64, opt: f64, batch: f64, bdb: Option<f64>) -> Measured {
        let mut points = vec![];
        for (s, t) in [
            ("nvm", batch / 1.2),
            ("simple", simple),
            ("optimized", opt),
            ("batch", batch),
        ] {
            points.push(serde_json::json!({
                "system": s, "update_fraction": 1.0, "seconds": t, "fences_per_op": 2.0
            }));
        }
        if let Some(b) = bdb {
            points.push(
                serde_json::json!({"system": "berkeley-db", "update_fraction": 1.0, "seconds": b}),
            );
        }
        with(serde_json::json!({"btree_mix": {"points": points}}))
    }

    #[test]
    fn fig7_peers_missing_is_not_measured_and_a_slow_peer_is_a_magnitude() {
        // Simple 1.0 s, Optimized 0.73 s (27%), Batch 0.63 s (37%), close to the NVM tree.
        let v = fig7(&mix_points(1.0, 0.73, 0.63, None));
        assert_eq!(v.level(), Level::NotMeasured);
        let v = fig7(&mix_points(1.0, 0.73, 0.63, Some(0.63 * 1.79)));
        assert_eq!(v.level(), Level::AgreesInDirection);
        let v = fig7(&mix_points(1.0, 0.73, 0.63, Some(0.6)));
        assert_eq!(v.level(), Level::Differs);
    }
}
