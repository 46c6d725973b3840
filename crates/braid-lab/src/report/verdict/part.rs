//! One part of a paper's claim ([`Part`]): what the paper claims, of which [`Kind`]
//! (direction, magnitude, ordering, crossover), braid's measured value, whether it holds and,
//! when it does not, why; and the tolerances a part is judged by ([`DIRECTION_TOLERANCE`],
//! [`MAGNITUDE_SLACK`], [`SIMILAR`]; see the [parent module](super)).

use serde::Serialize;

use super::times;

/// How far from 1 a ratio must be to count as a direction: "A beats B" needs A/B above
/// 1 + 0.03, "A is below B" needs it below 1 - 0.03. Repeated short runs on a shared machine
/// move by a percent or two, so a ratio within 1 +/- 0.03 is a tie, never a direction.
pub const DIRECTION_TOLERANCE: f64 = 0.03;

/// How far braid's magnitude may be from the paper's: the paper's gain (its ratio less 1) is
/// halved at the low end of its range and doubled at the high end. A paper range of 1.6-3.2x
/// accepts 1.3x-5.4x; "up to 42.6x" accepts 21.8x-84.2x.
pub const MAGNITUDE_SLACK: f64 = 2.0;

/// Where the paper calls two levels similar ("plateau at a similar level", "close to"), the
/// ratio of braid's two must lie within this factor either way (0.75x-1.33x).
pub const SIMILAR: f64 = 4.0 / 3.0;

/// A configuration's name and its value, in an ordering.
pub type Named<'a> = (&'a str, f64);

/// What a part of a claim asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// One configuration beats another (or falls, or rises), beyond the tolerance.
    Direction,
    /// How much: the paper's number or range.
    Magnitude,
    /// Several configurations in the paper's order.
    Ordering,
    /// Where a trend turns or one configuration overtakes another.
    Crossover,
}

impl Kind {
    /// The kind in words.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Direction => "direction",
            Kind::Magnitude => "magnitude",
            Kind::Ordering => "ordering",
            Kind::Crossover => "crossover",
        }
    }

    /// Direction and ordering parts decide whether braid agrees in direction.
    pub(super) fn is_direction(self) -> bool {
        matches!(self, Kind::Direction | Kind::Ordering)
    }
}

/// One part of a paper's claim: what the paper claims, braid's measured value and whether it
/// holds, and when it does not, why in measured terms.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    /// What the paper claims, in words, with its number where it gives one.
    claim: String,
    pub(super) kind: Kind,
    /// braid's value for it, with the number.
    measured: String,
    pub(super) holds: bool,
    /// Why it does not hold, with numbers from the run (empty when it holds).
    because: String,
    /// Whether braid measured it at all.
    #[serde(skip)]
    pub(super) ran: bool,
    /// Computed from a model, not measured: shown, but in no tally and no level.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) projected: bool,
}

/// `x` with three decimals when it is near 1, where two would hide a tie's size.
fn fine(x: f64) -> String {
    if (x - 1.0).abs() < 0.1 {
        format!("{x:.3}x")
    } else {
        times(x)
    }
}

/// The accepted range of a paper magnitude `lo..=hi` (ratios of at least 1): its gain over 1
/// halved at the low end and doubled at the high end ([`MAGNITUDE_SLACK`]).
pub fn band(lo: f64, hi: f64) -> (f64, f64) {
    (
        1.0 + (lo - 1.0) / MAGNITUDE_SLACK,
        1.0 + (hi - 1.0) * MAGNITUDE_SLACK,
    )
}

/// A `ratio` that is not above 1 by the tolerance, in words.
fn not_above(ratio: f64) -> String {
    if !ratio.is_finite() {
        "no finite ratio was measured".to_string()
    } else if ratio < 1.0 - DIRECTION_TOLERANCE {
        format!("the ratio is {}, the other way round", fine(ratio))
    } else {
        format!(
            "the ratio is {}, within 1 +/- {DIRECTION_TOLERANCE} (a tie within run-to-run noise)",
            fine(ratio)
        )
    }
}

/// A `ratio` that is not below 1 by the tolerance, in words.
fn not_below(ratio: f64) -> String {
    if !ratio.is_finite() {
        "no finite ratio was measured".to_string()
    } else if ratio > 1.0 + DIRECTION_TOLERANCE {
        format!("the ratio is {}, the other way round", fine(ratio))
    } else {
        format!(
            "the ratio is {}, within 1 +/- {DIRECTION_TOLERANCE} (a tie within run-to-run noise)",
            fine(ratio)
        )
    }
}

impl Part {
    fn new(claim: String, kind: Kind, measured: String, holds: bool, why_not: String) -> Part {
        Part {
            claim,
            kind,
            measured,
            holds,
            because: if holds { String::new() } else { why_not },
            ran: true,
            projected: false,
        }
    }

    /// Direction "A beats B" (or "rises"): `ratio` (A over B) above 1 + [`DIRECTION_TOLERANCE`].
    pub fn above(claim: impl Into<String>, ratio: f64) -> Part {
        let holds = ratio > 1.0 + DIRECTION_TOLERANCE;
        Part::new(
            claim.into(),
            Kind::Direction,
            times(ratio),
            holds,
            not_above(ratio),
        )
    }

    /// Direction "A is below B" (or "falls"): `ratio` (A over B) below 1 - [`DIRECTION_TOLERANCE`].
    pub fn below(claim: impl Into<String>, ratio: f64) -> Part {
        let holds = ratio < 1.0 - DIRECTION_TOLERANCE;
        Part::new(
            claim.into(),
            Kind::Direction,
            times(ratio),
            holds,
            not_below(ratio),
        )
    }

    /// Magnitude: `value` (a ratio) within the paper's `lo..=hi` widened by [`band`].
    pub fn within(claim: impl Into<String>, value: f64, lo: f64, hi: f64) -> Part {
        let (a, b) = band(lo, hi);
        let holds = value.is_finite() && (a..=b).contains(&value);
        let paper = if lo == hi {
            format!("the paper's {}", times(lo))
        } else {
            format!("the paper's {}-{}", times(lo), times(hi))
        };
        let side = if value < a { "below" } else { "above" };
        Part::new(
            claim.into(),
            Kind::Magnitude,
            times(value),
            holds,
            format!(
                "{} is {side} the accepted {}-{} ({paper}, its gain over 1 halved and doubled)",
                times(value),
                times(a),
                times(b)
            ),
        )
    }

    /// Magnitude: two levels the paper calls similar, `ratio` within [`SIMILAR`] either way.
    pub fn similar(claim: impl Into<String>, ratio: f64) -> Part {
        let holds = ratio.is_finite() && (1.0 / SIMILAR..=SIMILAR).contains(&ratio);
        Part::new(
            claim.into(),
            Kind::Magnitude,
            times(ratio),
            holds,
            format!(
                "{} is outside {}-{}, the band a similar level is given",
                times(ratio),
                times(1.0 / SIMILAR),
                times(SIMILAR)
            ),
        )
    }

    /// Ordering: in every pair the first is above the second by more than the tolerance.
    /// `show` prints a value.
    pub fn ordering(
        claim: impl Into<String>,
        pairs: &[(Named<'_>, Named<'_>)],
        show: fn(f64) -> String,
    ) -> Part {
        let mut measured = Vec::new();
        let mut wrong = Vec::new();
        for &((a, va), (b, vb)) in pairs {
            measured.push(format!("{a} {} against {b} {}", show(va), show(vb)));
            let r = va / vb;
            let ahead = r > 1.0 + DIRECTION_TOLERANCE;
            if !ahead {
                wrong.push(format!(
                    "{a} ({}) is not above {b} ({}) by more than {:.0}%: {}",
                    show(va),
                    show(vb),
                    DIRECTION_TOLERANCE * 100.0,
                    fine(r)
                ));
            }
        }
        Part::new(
            claim.into(),
            Kind::Ordering,
            measured.join("; "),
            wrong.is_empty(),
            wrong.join("; "),
        )
    }

    /// Ordering of `items`, each above the next by more than the tolerance.
    pub fn chain(claim: impl Into<String>, items: &[Named<'_>], show: fn(f64) -> String) -> Part {
        let pairs: Vec<_> = items.windows(2).map(|w| (w[0], w[1])).collect();
        let listed: Vec<String> = items
            .iter()
            .map(|(n, v)| format!("{n} {}", show(*v)))
            .collect();
        Part::ordering(claim, &pairs, show).measured(listed.join(", "))
    }

    /// Any other check: `holds` as computed by the verdict, `why_not` its measured reason.
    pub fn check(
        claim: impl Into<String>,
        kind: Kind,
        measured: impl Into<String>,
        holds: bool,
        why_not: impl Into<String>,
    ) -> Part {
        Part::new(claim.into(), kind, measured.into(), holds, why_not.into())
    }

    /// A part braid did not measure, and `why`.
    pub fn not_measured(claim: impl Into<String>, kind: Kind, why: impl Into<String>) -> Part {
        Part {
            claim: claim.into(),
            kind,
            measured: "not measured".into(),
            holds: false,
            because: format!("not measured: {}", why.into()),
            ran: false,
            projected: false,
        }
    }

    /// The same part as a projection: computed from a model (the proxies' projection to core
    /// counts this machine does not have), not measured. It is shown, but neither raises nor
    /// lowers nor decides the verdict's level, and no tally counts it.
    pub fn projection(mut self) -> Part {
        self.projected = true;
        self
    }

    /// Magnitude "A is slightly ahead of B": `ratio` (A over B) beyond the tie band
    /// ([`DIRECTION_TOLERANCE`]) and within [`SIMILAR`]. A tie is not "ahead", slightly or not.
    pub fn slightly_above(claim: impl Into<String>, ratio: f64) -> Part {
        let holds = ratio.is_finite() && ratio > 1.0 + DIRECTION_TOLERANCE && ratio <= SIMILAR;
        let why = if ratio.is_finite() && ratio > SIMILAR {
            format!(
                "{} is beyond {}, the band a similar level is given: far ahead, not slightly",
                times(ratio),
                times(SIMILAR)
            )
        } else {
            not_above(ratio)
        };
        Part::new(claim.into(), Kind::Magnitude, fine(ratio), holds, why)
    }

    /// The same check as a part of kind `kind` (a direction test that locates a crossover).
    pub fn with_kind(mut self, kind: Kind) -> Part {
        self.kind = kind;
        self
    }

    /// Show `text` as braid's measured value instead of the bare number.
    pub fn measured(mut self, text: impl Into<String>) -> Part {
        self.measured = text.into();
        self
    }

    /// When the part does not hold, add the measured cause to its reason.
    pub fn because(mut self, cause: impl Into<String>) -> Part {
        if !self.holds && self.ran {
            let cause = cause.into();
            if !cause.is_empty() {
                self.because = format!("{}; {cause}", self.because);
            }
        }
        self
    }

    pub fn claim(&self) -> &str {
        &self.claim
    }
    pub fn kind(&self) -> Kind {
        self.kind
    }
    pub fn measured_text(&self) -> &str {
        &self.measured
    }
    pub fn holds(&self) -> bool {
        self.holds
    }
    pub fn reason(&self) -> &str {
        &self.because
    }
    /// Whether braid measured it.
    pub fn ran(&self) -> bool {
        self.ran
    }
    /// Whether it is a projection from a model ([`Part::projection`]), not a measurement.
    pub fn projected(&self) -> bool {
        self.projected
    }
}
