//! REWIND's skip-record figures (§5.1): the right half of Fig. 3 (logging overhead against
//! skip records, a part of [`super`]'s Fig. 3 verdict), Fig. 4 (single-transaction rollback
//! and recovery against skip records, one and two layers, force) and Fig. 5 (logging plus
//! recovery against the fraction of transactions recovered, one layer, force and no-force);
//! from the `skip_records` result of `braid bench rewind --experiment all`.

use super::super::experiments::{Body, Experiment};
use super::super::verdict::{DIRECTION_TOLERANCE, Kind, Measured, Named, Part, Verdict, times};
use super::{emulation, f, json, variant_rows};

/// The paper's crossovers: two layers overtake one at about 600 skip records (Fig. 3 right)
/// and catch up on rollback at about 400 (Fig. 4 left).
const COMMIT_CROSSOVER: f64 = 600.0;
const ROLLBACK_CROSSOVER: f64 = 400.0;

fn scaled() -> String {
    format!(
        "One thread, as the paper's single application context. A target transaction writes 10 \
         words; one other transaction, running on the same log, writes the skip records between \
         them (100, 400, 700 and 1,000; --quick 100 and 400); 30 targets per measurement and the \
         medians over the report's repeats. Fig. 3 right's overhead is the target's own time \
         (its logged writes and its commit, timed apart from the other transaction's writes) \
         over its stores persisted without a log. Under force a one-layer commit reads the \
         whole log backwards for its records and clears them (REWIND Section 4.6: \"To clear \
         the log when forcing, we scan the log backwards\"), as rollback does; a one-layer \
         variant clearing by the positions it kept (not the paper's) is drawn beside it and \
         not judged. Recovery: the other transaction logs its END and \
         stops before clearing (a crash between the two), the target is left unfinished, and \
         the pool is reopened. Fig. 5: 50 such targets per run (--quick 20) with 10, 150 and \
         300 skip records (--quick 10 and 150), a fraction of them left unfinished; force's \
         run is timed again with every commit stopped before clearing, to factor clearing \
         out as the paper does; no-force takes no checkpoint. {}",
        emulation()
    )
}

pub fn fig4() -> Experiment {
    Experiment {
        id: "rewind-fig4",
        title: "Single-transaction rollback and recovery against skip records (REWIND Fig. 4)",
        paper: "Chatzistergiou et al., VLDB 2015",
        figure: "Fig. 4",
        claim: "under force, one-layer rollback grows faster with skip records than two-layer \
                rollback, which catches up at around 400 skip records; recovering one \
                unfinished transaction amid committed but uncleared records, one-layer logging \
                significantly outperforms two-layer logging",
        scaled: scaled(),
        body: Body::Rewind {
            plots: &["rewind-fig4-rollback", "rewind-fig4-recovery"],
        },
        verdict: fig4_verdict,
    }
}

pub fn fig5() -> Experiment {
    Experiment {
        id: "rewind-fig5",
        title: "Logging and recovery cost against the fraction recovered (REWIND Fig. 5)",
        paper: "Chatzistergiou et al., VLDB 2015",
        figure: "Fig. 5",
        claim: "with one layer and log clearing factored out, the total time of logging and \
                commit or recovery grows with the fraction of transactions recovered and with \
                the skip records (10, 150, 300); no-force has a slight advantage at a very low \
                crash probability and is overtaken by force as the fraction grows (its extra \
                recovery phase), the more so with more skip records",
        scaled: scaled(),
        body: Body::Rewind {
            plots: &["rewind-fig5"],
        },
        verdict: fig5_verdict,
    }
}

/// A Figs. 3-4 point: (skip, overhead, commit us, rollback us, recovery us, target us).
type SkipPt = (f64, f64, f64, f64, f64, f64);

/// The points of `variant` by skip count.
fn skip_points(m: &Measured, variant: &str) -> Vec<SkipPt> {
    variant_rows(
        m,
        "skip_records",
        variant,
        |p| {
            Some((
                f(p, "skip")?,
                f(p, "overhead")?,
                f(p, "commit_us")?,
                f(p, "rollback_us")?,
                f(p, "recovery_us")?,
                f(p, "target_us").unwrap_or(f64::NAN),
            ))
        },
        |p| p.0,
    )
}

/// Both layerings' points, or `None` when either has fewer than two.
fn both(m: &Measured) -> Option<(Vec<SkipPt>, Vec<SkipPt>)> {
    let one = skip_points(m, "optimized-1l-f");
    let two = skip_points(m, "optimized-2l-f");
    (one.len() >= 2 && two.len() >= 2).then_some((one, two))
}

fn us(x: f64) -> String {
    format!("{x:.1} us")
}

/// The skip count at which a line through `one`'s first and last points reaches `target`
/// (`None` when it does not grow).
fn reach(one: &[SkipPt], value: fn(&SkipPt) -> f64, target: f64) -> Option<f64> {
    let (a, b) = (one.first()?, one.last()?);
    let slope = (value(b) - value(a)) / (b.0 - a.0);
    (slope > 0.0).then(|| a.0 + (target - value(a)) / slope)
}

/// A crossover part: two layers (`two`) at or below one layer (`one`) at some skip count,
/// first reached within the paper's `paper` halved or doubled.
fn crossover(
    claim: &str,
    one: &[SkipPt],
    two: &[SkipPt],
    value: fn(&SkipPt) -> f64,
    show: fn(f64) -> String,
    paper: f64,
) -> Part {
    let at = one
        .iter()
        .zip(two)
        .find(|(a, b)| value(b) <= value(a))
        .map(|(a, _)| a.0);
    let (Some(a1), Some(b1), Some(a2), Some(b2)) =
        (one.first(), one.last(), two.first(), two.last())
    else {
        return Part::not_measured(claim, Kind::Crossover, "fewer than two skip counts ran");
    };
    let measured = format!(
        "one layer {} at {:.0} to {} at {:.0} skip records, two layers {} to {}",
        show(value(a1)),
        a1.0,
        show(value(b1)),
        b1.0,
        show(value(a2)),
        show(value(b2))
    );
    let holds = at.is_some_and(|s| (paper / 2.0..=paper * 2.0).contains(&s));
    let why = match at {
        Some(s) => format!("two layers catch up at {s:.0} skip records, not near {paper:.0}"),
        None => match reach(one, value, value(b2)) {
            Some(s) => format!(
                "no crossover up to {:.0} skip records; one layer's growth, drawn on, reaches \
                 two layers' {} at about {s:.0}",
                b1.0,
                show(value(b2))
            ),
            None => format!(
                "no crossover up to {:.0} skip records, and one layer's time does not grow with \
                 them",
                b1.0
            ),
        },
    };
    Part::check(claim, Kind::Crossover, measured, holds, why)
}

/// Fig. 3 right, for [`super`]'s Fig. 3 verdict: one layer's overhead grows with skip
/// records, and two layers overtake it at about 600.
pub fn fig3_parts(m: &Measured) -> Vec<Part> {
    let grows = "one-layer logging's overhead grows sharply with skip records (Fig. 3 right; \
                 the target transaction's writes and commit over its stores without a log)";
    let cross = "two-layer logging outperforms one-layer logging after around 600 skip records \
                 (Fig. 3 right)";
    let Some((one, two)) = both(m) else {
        return vec![
            Part::not_measured(grows, Kind::Direction, "the skip-record points are missing"),
            Part::not_measured(cross, Kind::Crossover, "the skip-record points are missing"),
        ];
    };
    let (a, b) = (one[0], one[one.len() - 1]);
    let (c, d) = (two[0], two[two.len() - 1]);
    let kept = skip_points(m, "optimized-1l-f-kept");
    let kept = match (kept.first(), kept.last()) {
        (Some(x), Some(y)) if y.0 > x.0 => format!(
            "; clearing by kept positions instead (not the paper's, not judged) the commit takes \
             {} and {} and the overhead goes {} to {}",
            us(x.2),
            us(y.2),
            times(x.1),
            times(y.1)
        ),
        _ => String::new(),
    };
    let commit = format!(
        "the target's commit takes {} at {:.0} and {} at {:.0} skip records with one layer, \
         whose force commit reads the whole log backwards for the target's records (REWIND \
         §4.6; {:.1} ns more per skip record), against the target's writes of a few \
         microseconds; two layers' commit takes {} and {}, each record an AVL tree operation \
         of its own (the target's whole time {} and {}){kept}",
        us(a.2),
        a.0,
        us(b.2),
        b.0,
        (b.2 - a.2) / (b.0 - a.0) * 1e3,
        us(c.2),
        us(d.2),
        us(c.5),
        us(d.5)
    );
    vec![
        Part::above(grows, b.1 / a.1)
            .measured(format!(
                "{} at {:.0} to {} at {:.0} skip records ({})",
                times(a.1),
                a.0,
                times(b.1),
                b.0,
                times(b.1 / a.1)
            ))
            .because(commit.clone()),
        crossover(cross, &one, &two, |p| p.1, times, COMMIT_CROSSOVER).because(commit),
    ]
}

fn fig4_verdict(m: &Measured) -> Verdict {
    let Some((one, two)) = both(m) else {
        return Verdict::missing("the skip-record points");
    };
    let (a, b) = (one[0], one[one.len() - 1]);
    let (c, d) = (two[0], two[two.len() - 1]);
    let growth = |x: &SkipPt, y: &SkipPt| y.3 / x.3;
    let per_record = format!(
        "one layer's rollback scans the whole log for the target's records: {:.1} ns more per \
         skip record; two layers walk the target's key range of the AVL index, whose updates \
         persist more lines: {} at {:.0} skip records against one layer's {}",
        (b.3 - a.3) / (b.0 - a.0) * 1e3,
        us(c.3),
        c.0,
        us(a.3)
    );
    let names: Vec<String> = one.iter().map(|p| format!("{:.0}", p.0)).collect();
    let pairs: Vec<_> = one
        .iter()
        .zip(&two)
        .zip(&names)
        .map(|((x, y), n)| ((n.as_str(), y.4), (n.as_str(), x.4)))
        .collect();
    Verdict::of(vec![
        Part::above(
            "one-layer rollback time grows with skip records",
            growth(&a, &b),
        )
        .measured(format!(
            "{} at {:.0} to {} at {:.0} skip records",
            us(a.3),
            a.0,
            us(b.3),
            b.0
        ))
        .because(per_record.clone()),
        Part::above(
            "one-layer rollback grows faster than two-layer rollback",
            growth(&a, &b) / growth(&c, &d),
        )
        .measured(format!(
            "one layer {} from {:.0} to {:.0} skip records, two layers {}",
            times(growth(&a, &b)),
            a.0,
            b.0,
            times(growth(&c, &d))
        ))
        .because(per_record.clone()),
        crossover(
            "two-layer rollback catches up with one-layer rollback at around 400 skip records",
            &one,
            &two,
            |p| p.3,
            us,
            ROLLBACK_CROSSOVER,
        )
        .because(per_record),
        Part::ordering(
            "recovering one unfinished transaction amid committed but uncleared records, \
             one-layer logging outperforms two-layer logging (two layers' recovery is the \
             longer at every skip count)",
            &pairs,
            us,
        )
        .measured(format!(
            "two layers {} against one layer {} at {:.0} skip records, {} against {} at {:.0}",
            us(c.4),
            us(a.4),
            a.0,
            us(d.4),
            us(b.4),
            b.0
        ))
        .because(
            "recovery's analysis reads every record through the layer's scan, and two layers \
             iterate the AVL index",
        ),
    ])
}

/// A Fig. 5 point: (run ms, clear ms, recovery ms, total ms, records redone).
type FracPt = (f64, f64, f64, f64, f64);

fn frac(m: &Measured, policy: &str, skip: f64, fraction: f64) -> Option<FracPt> {
    json(m)?["skip_records"]["fraction_points"]
        .as_array()?
        .iter()
        .find(|p| {
            p["policy"] == policy
                && f(p, "skip") == Some(skip)
                && f(p, "fraction").is_some_and(|x| (x - fraction).abs() < 1e-9)
        })
        .and_then(|p| {
            Some((
                f(p, "run_ms")?,
                f(p, "clear_ms")?,
                f(p, "recovery_ms")?,
                f(p, "total_ms")?,
                f(p, "redone_records").unwrap_or(f64::NAN),
            ))
        })
}

/// The values of `key` over Fig. 5's points, sorted and deduplicated.
fn axis(m: &Measured, key: &str) -> Vec<f64> {
    let mut v: Vec<f64> = json(m)
        .and_then(|j| j["skip_records"]["fraction_points"].as_array())
        .map(|a| a.iter().filter_map(|p| f(p, key)).collect())
        .unwrap_or_default();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// Two named values of an ordering, the first expected above the second.
pub(super) type Pair = (String, String, f64, f64);

/// `pairs` as an ordering's borrowed pairs.
pub(super) fn named(pairs: &[Pair]) -> Vec<(Named<'_>, Named<'_>)> {
    pairs
        .iter()
        .map(|(a, b, x, y)| ((a.as_str(), *x), (b.as_str(), *y)))
        .collect()
}

fn ms(x: f64) -> String {
    format!("{x:.2} ms")
}

fn fig5_verdict(m: &Measured) -> Verdict {
    let skips = axis(m, "skip");
    let fractions = axis(m, "fraction");
    let (Some(&lo), Some(&hi), Some(&s_lo), Some(&s_hi)) = (
        fractions.first(),
        fractions.last(),
        skips.first(),
        skips.last(),
    ) else {
        return Verdict::missing("the fraction-recovered points");
    };
    if lo >= hi || s_lo >= s_hi {
        return Verdict::missing("two fractions and two skip counts");
    }
    let get = |p: &str, s: f64, x: f64| frac(m, p, s, x);
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    // Fraction: the last over the first, for each policy and skip count.
    let names: Vec<Pair> = ["force", "no-force"]
        .iter()
        .flat_map(|p| skips.iter().map(move |s| (*p, *s)))
        .filter_map(|(p, s)| {
            Some((
                format!("{p}, {s:.0} skip records, {} recovered", pct(hi)),
                format!("{} recovered", pct(lo)),
                get(p, s, hi)?.3,
                get(p, s, lo)?.3,
            ))
        })
        .collect();
    let by_fraction = named(&names);
    // Skip records: the most over the fewest, at the middle fraction.
    let mid = fractions[fractions.len() / 2];
    let skip_names: Vec<Pair> = ["force", "no-force"]
        .iter()
        .filter_map(|p| {
            Some((
                format!("{p}, {s_hi:.0} skip records"),
                format!("{s_lo:.0}"),
                get(p, s_hi, mid)?.3,
                get(p, s_lo, mid)?.3,
            ))
        })
        .collect();
    let by_skip = named(&skip_names);
    // At the lowest fraction, no-force ahead, slightly.
    let low: Vec<Pair> = skips
        .iter()
        .filter_map(|&s| {
            Some((
                format!("force, {s:.0} skip records"),
                format!("no-force, {s:.0} skip records"),
                get("force", s, lo)?.3,
                get("no-force", s, lo)?.3,
            ))
        })
        .collect();
    let low_pairs = named(&low);
    let (Some(f_hi), Some(n_hi), Some(f_lo), Some(n_lo)) = (
        get("force", s_hi, hi),
        get("no-force", s_hi, hi),
        get("force", s_hi, lo),
        get("no-force", s_hi, lo),
    ) else {
        return Verdict::missing("a fraction-recovered point");
    };
    let costs = format!(
        "with {s_hi:.0} skip records force's run, clearing factored out, takes {} against \
         no-force's {} ({}: every user store non-temporal and fenced before END), while \
         recovering {} of the transactions takes force {} and no-force {}, redo of {:.0} \
         records included",
        ms(f_lo.0),
        ms(n_lo.0),
        times(f_lo.0 / n_lo.0),
        pct(hi),
        ms(f_hi.2),
        ms(n_hi.2),
        n_hi.4
    );
    // Crossover: force at or below no-force at some fraction, for every skip count.
    let crossings: Vec<String> = skips
        .iter()
        .map(|&s| {
            let at = fractions.iter().find(|&&x| {
                matches!((get("force", s, x), get("no-force", s, x)),
                    (Some(a), Some(b)) if a.3 < b.3 * (1.0 - DIRECTION_TOLERANCE))
            });
            match at {
                Some(x) => format!("{s:.0} skip records: force ahead from {}", pct(*x)),
                None => format!("{s:.0} skip records: no-force ahead at every fraction"),
            }
        })
        .collect();
    let crossed = crossings.iter().all(|c| c.contains("force ahead from"));
    Verdict::of(vec![
        Part::ordering(
            "the total time grows with the fraction of transactions recovered",
            &by_fraction,
            ms,
        )
        .with_kind(Kind::Direction)
        .because(costs.clone()),
        Part::ordering("the total time grows with the skip records", &by_skip, ms)
            .with_kind(Kind::Direction),
        Part::ordering(
            "at the lowest fraction recovered no-force is ahead of force",
            &low_pairs,
            ms,
        )
        .because(costs.clone()),
        Part::similar(
            "no-force's advantage at the lowest fraction is slight",
            f_lo.3 / n_lo.3,
        )
        .because(costs.clone()),
        Part::check(
            "force overtakes no-force as the fraction recovered grows",
            Kind::Crossover,
            crossings.join("; "),
            crossed,
            costs,
        ),
    ])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::super::super::verdict::Level;
    use super::*;
    use serde_json::Value;

    fn measured(points: Value, fraction_points: Value) -> Measured {
        Measured {
            rewind: Some(serde_json::json!({"skip_records": {
                "points": points, "fraction_points": fraction_points}})),
            ..Measured::default()
        }
    }

    fn pt(v: &str, skip: f64, over: f64, commit: f64, rb: f64, rec: f64) -> Value {
        serde_json::json!({"variant": v, "skip": skip, "overhead": over, "commit_us": commit,
            "rollback_us": rb, "recovery_us": rec})
    }

    fn paper_like() -> Value {
        serde_json::json!([
            pt("optimized-1l-f", 100.0, 2.0, 5.0, 100.0, 10.0),
            pt("optimized-2l-f", 100.0, 8.0, 9.0, 300.0, 50.0),
            pt("optimized-1l-f", 400.0, 6.0, 20.0, 320.0, 30.0),
            pt("optimized-2l-f", 400.0, 8.5, 9.0, 310.0, 90.0),
            pt("optimized-1l-f", 1000.0, 15.0, 60.0, 900.0, 60.0),
            pt("optimized-2l-f", 1000.0, 9.0, 9.5, 330.0, 200.0),
        ])
    }

    /// The paper's shape agrees; a one layer that never meets two layers fails the
    /// crossover and says where it would.
    #[test]
    fn fig4_agrees_with_the_paper_shape_and_misses_the_crossover_otherwise() {
        let m = measured(paper_like(), Value::Null);
        assert_eq!(
            fig4_verdict(&m).level(),
            Level::Agrees,
            "{:?}",
            fig4_verdict(&m)
        );
        let parts = fig3_parts(&m);
        assert!(parts.iter().all(|p| p.holds()), "{parts:?}");
        let flat = serde_json::json!([
            pt("optimized-1l-f", 100.0, 6.0, 3.6, 16.0, 21.0),
            pt("optimized-2l-f", 100.0, 68.0, 110.0, 300.0, 189.0),
            pt("optimized-1l-f", 1000.0, 5.3, 3.6, 32.0, 62.0),
            pt("optimized-2l-f", 1000.0, 66.0, 104.0, 308.0, 312.0),
        ]);
        let m = measured(flat, Value::Null);
        let v = fig4_verdict(&m);
        assert_eq!(v.level(), Level::AgreesInDirection, "{v:?}");
        let cross = crossover_part(&v);
        assert!(cross.reason().contains("reaches"), "{}", cross.reason());
        let parts = fig3_parts(&m);
        assert!(parts.iter().all(|p| !p.holds()), "{parts:?}");
        assert!(
            parts[0].reason().contains("reads the whole log backwards"),
            "{}",
            parts[0].reason()
        );
        assert_eq!(
            fig4_verdict(&Measured::default()).level(),
            Level::NotMeasured
        );
    }

    /// The verdict's crossover part.
    fn crossover_part(v: &Verdict) -> &Part {
        v.parts()
            .iter()
            .find(|p| p.kind() == Kind::Crossover)
            .unwrap()
    }

    fn fp(policy: &str, skip: f64, fraction: f64, run: f64, rec: f64) -> Value {
        serde_json::json!({"policy": policy, "skip": skip, "fraction": fraction,
            "run_ms": run, "clear_ms": 0.0, "recovery_ms": rec, "total_ms": run + rec,
            "redone_records": 10})
    }

    fn fractions(force_run: f64) -> Value {
        let mut v = Vec::new();
        for (s, k) in [(10.0, 1.0), (300.0, 5.0)] {
            for x in [0.0, 0.5, 1.0] {
                v.push(fp("force", s, x, force_run * k, 10.0 * k * x));
                v.push(fp("no-force", s, x, 10.0 * k, 30.0 * k * x));
            }
        }
        Value::Array(v)
    }

    /// Force's run a little slower than no-force's and its recovery much cheaper: the paper's
    /// crossover, so every part holds; force's run twice no-force's: no crossover, and the
    /// slight advantage is not slight.
    #[test]
    fn fig5_needs_force_to_overtake_no_force() {
        let v = fig5_verdict(&measured(Value::Null, fractions(10.8)));
        assert_eq!(v.level(), Level::Agrees, "{v:?}");
        let v = fig5_verdict(&measured(Value::Null, fractions(40.0)));
        assert_eq!(v.level(), Level::AgreesInDirection, "{v:?}");
        let cross = crossover_part(&v);
        assert!(!cross.holds());
        assert!(
            cross
                .measured_text()
                .contains("no-force ahead at every fraction")
        );
        assert_eq!(
            fig5_verdict(&Measured::default()).level(),
            Level::NotMeasured
        );
    }
}
