//! REWIND Fig. 3 (§5.1): the logging overhead of 1-word transactions against the
//! non-recoverable twin, one- and two-layer logs, force and no-force: at full update intensity,
//! against the update intensity, and against skip records (the right half, with Figs. 4 and 5
//! in [`skip`](super::skip)).

use crate::report::verdict::{Kind, Measured, Part, Verdict, times};

use super::{f, json, skip};

/// A slowdown or time ratio as text.
fn x1(x: f64) -> String {
    format!("{x:.1}x")
}

pub(super) fn fig3(m: &Measured) -> Verdict {
    let Some(rows) = json(m).and_then(|j| j["word_tx"]["rows"].as_array()) else {
        return Verdict::missing("word_tx");
    };
    let slow = |label: &str| {
        rows.iter()
            .find(|r| r["label"] == label)
            .and_then(|r| Some((f(r, "slowdown_vs_raw")?, f(r, "fences_per_tx")?)))
    };
    let (Some(o1n), Some(o1f), Some(o2n), Some(o2f)) = (
        slow("optimized-1l-nf"),
        slow("optimized-1l-f"),
        slow("optimized-2l-nf"),
        slow("optimized-2l-f"),
    ) else {
        return Verdict::missing("a word-tx configuration");
    };
    let fences = format!(
        "fences per transaction: one layer {:.1} (no-force) and {:.1} (force), two layers {:.1} \
         (no-force) and {:.1} (force); a two-layer no-force commit inserts its UPDATE and END \
         records into the AVL index (two tree operations, each logging its words as one group) \
         while force also removes both at commit (two more); a checkpoint that covers the \
         whole index empties it with one store",
        o1n.1, o1f.1, o2n.1, o2f.1
    );
    let mut parts = vec![
        Part::ordering(
            "at full update intensity the two-layer configurations' overheads are higher than the \
             one-layer ones (the AVL tree and the transaction table)",
            &[
                (("2L no-force", o2n.0), ("1L no-force", o1n.0)),
                (("2L force", o2f.0), ("1L force", o1f.0)),
            ],
            x1,
        )
        .because(fences.clone()),
        Part::ordering(
            "the force policy costs more than no-force with either layering (non-temporal writes \
             of the user updates, clearing the log at commit)",
            &[
                (("1L force", o1f.0), ("1L no-force", o1n.0)),
                (("2L force", o2f.0), ("2L no-force", o2n.0)),
            ],
            x1,
        )
        .because(format!(
            "two-layer no-force's transactions take {:.1} fences and cost {} two-layer force's \
             time; {fences}",
            o2n.1,
            times(o2n.0 / o2f.0)
        )),
        Part::within(
            "one-layer force's overhead exceeds no-force's by 2-35%",
            o1f.0 / o1n.0,
            1.02,
            1.35,
        )
        .because(fences.clone()),
        Part::within(
            "two-layer force's overhead exceeds no-force's by 24-74%",
            o2f.0 / o2n.0,
            1.24,
            1.74,
        )
        .because(fences),
    ];
    parts.extend(intensity_parts(m, o1n.0, o2n.0));
    parts.extend(skip::fig3_parts(m));
    Verdict::of(parts)
}

/// Fig. 3 left: the no-force overheads fall as update intensity decreases, to the paper's
/// 1.5x (one layer) and 8.5x (two layers) at 10%; `full1` and `full2` are their overheads at
/// 100%.
fn intensity_parts(m: &Measured, full1: f64, full2: f64) -> Vec<Part> {
    let at = |label: &str, i: f64| {
        json(m)?["word_tx"]["intensity"]
            .as_array()?
            .iter()
            .find(|p| {
                p["label"] == label && f(p, "intensity").is_some_and(|x| (x - i).abs() < 1e-9)
            })
            .and_then(|p| f(p, "overhead"))
    };
    let falls = "the overhead falls steeply as update intensity decreases (Fig. 3 left)";
    let (Some(a), Some(b)) = (at("optimized-1l-nf", 0.1), at("optimized-2l-nf", 0.1)) else {
        return vec![Part::not_measured(
            falls,
            Kind::Direction,
            "the update-intensity points are missing",
        )];
    };
    vec![
        Part::ordering(
            falls,
            &[
                (("1L no-force at 100%", full1), ("at 10%", a)),
                (("2L no-force at 100%", full2), ("at 10%", b)),
            ],
            x1,
        )
        .with_kind(Kind::Direction),
        Part::within(
            "at 10% update intensity one-layer no-force costs 1.5x",
            a,
            1.5,
            1.5,
        ),
        Part::within(
            "at 10% update intensity two-layer no-force costs 8.5x",
            b,
            8.5,
            8.5,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::report::rewind::fixtures::with;
    use crate::report::verdict::Level;

    fn word_tx(o2f: f64) -> Measured {
        fn row(label: &str, s: f64) -> Value {
            serde_json::json!({
                "label": label, "slowdown_vs_raw": s, "fences_per_tx": 4.0
            })
        }
        // Fig. 3 right as the paper has it: one layer's overhead overtaken at 1,000.
        fn skip(v: &str, skip: f64, overhead: f64) -> Value {
            serde_json::json!({"variant": v, "skip": skip, "overhead": overhead,
                "commit_us": 1.0, "rollback_us": 1.0, "recovery_us": 1.0})
        }
        with(serde_json::json!({"word_tx": {"rows": [
            row("optimized-1l-nf", 6.3),
            row("optimized-1l-f", 7.5),
            row("optimized-2l-nf", 109.9),
            row("optimized-2l-f", o2f),
        ], "intensity": [
            {"label": "optimized-1l-nf", "intensity": 0.1, "overhead": 1.6},
            {"label": "optimized-2l-nf", "intensity": 0.1, "overhead": 30.0},
        ]}, "skip_records": {"points": [
            skip("optimized-1l-f", 100.0, 2.0),
            skip("optimized-2l-f", 100.0, 8.0),
            skip("optimized-1l-f", 1000.0, 15.0),
            skip("optimized-2l-f", 1000.0, 9.0),
        ]}}))
    }

    #[test]
    fn fig3_two_layer_force_beating_no_force_differs() {
        // The old report's 40.1x (force) against 109.9x (no-force) with two layers.
        let v = fig3(&word_tx(40.1));
        assert_eq!(v.level(), Level::Differs);
        let p = &v.parts()[1];
        assert!(
            !p.holds()
                && p.reason()
                    .contains("2L force (40.1x) is not above 2L no-force (109.9x)"),
            "{p:?}"
        );
        // Force costlier in both layers: the ordering holds; two layers' 30x at 10% update
        // intensity (the paper's 8.5x) keeps it from agreeing outright.
        let v = fig3(&word_tx(150.0));
        assert_eq!(v.level(), Level::AgreesInDirection, "{v:?}");
        assert_eq!(v.tally(), (8, 9));
        assert_eq!(fig3(&Measured::default()).level(), Level::NotMeasured);
    }
}
