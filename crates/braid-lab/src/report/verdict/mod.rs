//! What an experiment measured ([`Measured`]), looked up by run, scheme, variant, logging kind
//! and threads, and the verdict each experiment draws from it ([`Verdict`]): the paper's claim
//! split into [`Part`]s, each with braid's measured value, whether it holds and, when it does
//! not, why in measured terms; and the verdict's [`Level`], computed from the parts.
//!
//! How a part is judged:
//! - **direction** ("A beats B", "falls", "rises"): the ratio must be beyond 1 +/- 0.03
//!   ([`DIRECTION_TOLERANCE`]): above 1.03 for "beats", below 0.97 for "is below". A ratio
//!   within 1 +/- 0.03 is a tie within run-to-run noise and holds neither way.
//! - **ordering**: every named configuration above the next by the same margin.
//! - **magnitude**: braid's ratio inside the paper's range with the paper's gain over 1 halved
//!   at the low end and doubled at the high end ([`MAGNITUDE_SLACK`]; "up to 42.6x" accepts
//!   21.8x-84.2x); levels the paper calls similar within a factor of 4/3 either way
//!   ([`SIMILAR`]).
//! - **crossover**: braid's measurements must reach both sides of the point the paper names.
//! - **projection**: a part computed from a model rather than measured (the proxies' projection
//!   of a crossover at core counts this machine does not have, [`super::projection`]) is
//!   shown, labelled a projection, and counted in no tally or level ([`Part::projection`]).
//!
//! The level ([`level_of`]): **agrees** when every part holds; **agrees in direction** when
//! every direction and ordering part holds but a magnitude or crossover part does not;
//! **differs** when a measured direction or ordering part does not hold; **not measured** when
//! the configurations did not run (no part measured, or a direction or ordering part not
//! measured and no measured one failing, or no direction measured beside unmeasured parts),
//! never counted as agreeing. Projections take no part in it.
//!
//! An entry that is braid's own experiment on a section of a paper with no figure to match
//! ([`Verdict::own_experiment`]) keeps its parts and level but is not counted among the
//! figures' verdicts.
//!
//! What was measured, and the numbers' text, are in [`measured`](mod@measured), a claim's parts
//! in [`part`](mod@part); the levels and verdicts here.

mod measured;
mod part;

pub use measured::{
    Key, Measured, RecoveryRow, cpu_per_txn, data, k, log_threads_per_txn, log_threads_text, pct,
    per_flush, times, worker_cpu,
};

pub use part::{DIRECTION_TOLERANCE, Kind, MAGNITUDE_SLACK, Named, Part, SIMILAR, band};

use serde::Serialize;

/// A verdict's level, computed from its parts ([`Verdict::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Every part holds.
    Agrees,
    /// Every direction and ordering part holds; some magnitude or crossover part does not.
    AgreesInDirection,
    /// A direction or ordering part that was measured does not hold.
    Differs,
    /// What the verdict compares did not run (no part was measured, or a direction or
    /// ordering part was not and none that was measured fails).
    NotMeasured,
}

impl Level {
    /// The level in words, as the summary shows it.
    pub fn word(self) -> &'static str {
        match self {
            Level::Agrees => "agrees",
            Level::AgreesInDirection => "agrees in direction",
            Level::Differs => "differs",
            Level::NotMeasured => "not measured",
        }
    }
}

/// The level of a verdict of `parts`: **agrees** when every part holds; **agrees in
/// direction** when every direction and ordering part holds but a magnitude or crossover part
/// does not; **differs** when a measured direction or ordering part does not hold; **not
/// measured** when no part was measured, or a direction or ordering part was not (and no
/// measured one fails), or no direction or ordering part was measured while some part was
/// not (nothing measured to agree in direction with).
pub fn level_of(parts: &[Part]) -> Level {
    let parts: Vec<&Part> = parts.iter().filter(|p| !p.projected).collect();
    if parts.iter().all(|p| !p.ran) {
        return Level::NotMeasured;
    }
    let direction = parts.iter().filter(|p| p.kind.is_direction());
    if direction.clone().any(|p| p.ran && !p.holds) {
        return Level::Differs;
    }
    if direction.clone().any(|p| !p.ran) {
        return Level::NotMeasured;
    }
    // "Agrees in direction" needs a direction that was measured: parts left unmeasured
    // beside measured magnitudes alone leave nothing to agree in direction with.
    if !direction.clone().any(|p| p.ran) && parts.iter().any(|p| !p.ran) {
        return Level::NotMeasured;
    }
    if parts.iter().all(|p| p.holds) {
        Level::Agrees
    } else {
        Level::AgreesInDirection
    }
}

/// A figure's verdict: the parts of the paper's claim, each measured, and the level they give.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Computed from the parts by [`level_of`].
    level: Level,
    parts: Vec<Part>,
    /// What did not run, when nothing could be judged.
    #[serde(skip_serializing_if = "String::is_empty")]
    missing: String,
    /// braid's own experiment on a section of the paper that has no figure (and so no number)
    /// to match: not counted among the figures' verdicts.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    own_experiment: bool,
}

impl Verdict {
    /// The verdict of `parts`, its level computed from them.
    pub fn of(parts: Vec<Part>) -> Verdict {
        Verdict {
            level: level_of(&parts),
            parts,
            missing: String::new(),
            own_experiment: false,
        }
    }

    /// The verdict of braid's own experiment on a section with no figure to match: its
    /// parts judged as any, but not counted among the figures' verdicts.
    pub fn own_experiment(mut self) -> Verdict {
        self.own_experiment = true;
        self
    }

    /// Whether it is braid's own experiment ([`Verdict::own_experiment`]).
    pub fn is_own_experiment(&self) -> bool {
        self.own_experiment
    }

    /// Nothing to judge: a configuration the verdict needs (`what`) was not measured.
    pub fn missing(what: &str) -> Verdict {
        Verdict {
            level: Level::NotMeasured,
            parts: Vec::new(),
            missing: what.to_string(),
            own_experiment: false,
        }
    }

    pub fn level(&self) -> Level {
        self.level
    }

    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The claims of the measured parts that do not hold (for tests; projections left out).
    #[cfg(test)]
    pub fn failing(&self) -> Vec<&str> {
        self.counted()
            .filter(|p| !p.holds())
            .map(|p| p.claim())
            .collect()
    }

    /// The parts the level and tally count: every part but the projections.
    fn counted(&self) -> impl Iterator<Item = &Part> + Clone {
        self.parts.iter().filter(|p| !p.projected)
    }

    /// The parts that hold, and all of them, projections left out.
    pub fn tally(&self) -> (usize, usize) {
        (
            self.counted().filter(|p| p.holds).count(),
            self.counted().count(),
        )
    }

    /// The summary's verdict line: the level and what it rests on.
    pub fn line(&self) -> String {
        let (held, all) = self.tally();
        let failing = |direction: bool| {
            self.counted()
                .filter(|p| p.kind.is_direction() == direction && p.ran && !p.holds)
                .count()
        };
        let unmeasured = self.counted().filter(|p| !p.ran).count();
        let why = match self.level {
            Level::Agrees => format!("all {all} parts hold"),
            Level::AgreesInDirection => {
                let mut short = Vec::new();
                if failing(false) > 0 {
                    short.push(format!(
                        "{} magnitude or crossover part(s) do not hold",
                        failing(false)
                    ));
                }
                if unmeasured > 0 {
                    short.push(format!("{unmeasured} part(s) were not measured"));
                }
                format!(
                    "every direction and ordering part holds; {} ({held} of {all} hold)",
                    short.join(" and ")
                )
            }
            Level::Differs => format!(
                "{} direction or ordering part(s) do not hold ({held} of {all} parts hold)",
                failing(true)
            ),
            Level::NotMeasured if self.parts.is_empty() => format!(
                "{} did not run, so nothing the paper claims could be compared",
                if self.missing.is_empty() {
                    "what this verdict compares"
                } else {
                    &self.missing
                }
            ),
            Level::NotMeasured => format!(
                "{unmeasured} part(s) were not measured, among them a direction or ordering part \
                 ({held} of {all} hold)"
            ),
        };
        let projections = self.parts.len() - all;
        let projections = if projections > 0 {
            format!(
                " {projections} projection(s) from the proxies are shown beside them and counted \
                 in neither."
            )
        } else {
            String::new()
        };
        let own = if self.own_experiment {
            " braid's own experiment on a section with no figure to match: not counted among the \
             figures' verdicts."
        } else {
            ""
        };
        format!(
            "**Verdict:** {}: {why}.{projections}{own}",
            self.level.word()
        )
    }
}

#[cfg(test)]
mod level_tests {
    use super::*;

    fn dir(holds: bool) -> Part {
        Part::above("A beats B", if holds { 1.5 } else { 0.5 })
    }

    fn mag(holds: bool) -> Part {
        Part::within("A is 2x B", if holds { 2.0 } else { 1.1 }, 2.0, 2.0)
    }

    #[test]
    fn every_part_holding_agrees() {
        let v = Verdict::of(vec![dir(true), mag(true)]);
        assert_eq!(v.level(), Level::Agrees);
        assert!(
            v.line().contains("agrees: all 2 parts hold"),
            "{}",
            v.line()
        );
    }

    #[test]
    fn directions_holding_with_a_magnitude_failing_agree_in_direction() {
        let v = Verdict::of(vec![dir(true), mag(false)]);
        assert_eq!(v.level(), Level::AgreesInDirection);
        let crossover = Part::check("turns at 80", Kind::Crossover, "2 threads", false, "x");
        assert_eq!(
            Verdict::of(vec![dir(true), crossover]).level(),
            Level::AgreesInDirection
        );
    }

    #[test]
    fn a_direction_or_ordering_failing_differs() {
        assert_eq!(
            Verdict::of(vec![dir(false), mag(true)]).level(),
            Level::Differs
        );
        let order = Part::chain("A > B > C", &[("A", 3.0), ("B", 1.0), ("C", 2.0)], times);
        assert!(!order.holds() && order.reason().contains("B (1.00x) is not above C"));
        assert_eq!(Verdict::of(vec![dir(true), order]).level(), Level::Differs);
        // A measured failure outweighs a part that was not measured.
        let nm = Part::not_measured("A beats C", Kind::Direction, "C did not run");
        assert_eq!(Verdict::of(vec![dir(false), nm]).level(), Level::Differs);
    }

    #[test]
    fn nothing_measured_is_not_measured_never_agrees() {
        assert_eq!(Verdict::missing("run x").level(), Level::NotMeasured);
        assert_eq!(Verdict::of(Vec::new()).level(), Level::NotMeasured);
        let nm = Part::not_measured("A beats C", Kind::Direction, "C did not run");
        assert_eq!(Verdict::of(vec![nm.clone()]).level(), Level::NotMeasured);
        assert_eq!(Verdict::of(vec![dir(true), nm]).level(), Level::NotMeasured);
        // An unmeasured magnitude only keeps the verdict from agreeing outright.
        let nm = Part::not_measured("A is 9x C", Kind::Magnitude, "C did not run");
        assert_eq!(
            Verdict::of(vec![dir(true), nm.clone()]).level(),
            Level::AgreesInDirection
        );
        // Measured magnitudes beside an unmeasured part, and no direction measured: nothing
        // measured to agree in direction with.
        assert_eq!(
            Verdict::of(vec![mag(true), nm.clone()]).level(),
            Level::NotMeasured
        );
        assert_eq!(
            Verdict::of(vec![mag(false), nm]).level(),
            Level::NotMeasured
        );
        assert!(
            Verdict::missing("run x")
                .line()
                .contains("run x did not run")
        );
    }

    #[test]
    fn a_direction_needs_a_margin_beyond_noise() {
        let tie = Part::above("TX-D beats Aether", 1.0037);
        assert!(!tie.holds());
        assert!(
            tie.reason().contains("1.004x, within 1 +/- 0.03"),
            "{}",
            tie.reason()
        );
        assert!(Part::above("x", 1.031).holds());
        assert!(!Part::above("x", 0.5).reason().contains("within"));
        assert!(Part::below("x", 0.96).holds() && !Part::below("x", 0.98).holds());
        let causes = Part::above("x", 0.9).because("a measured cause");
        assert!(
            causes.reason().ends_with("; a measured cause"),
            "{}",
            causes.reason()
        );
        assert_eq!(Part::above("x", 1.5).because("unused").reason(), "");
    }

    #[test]
    fn magnitudes_are_the_papers_range_with_its_gain_halved_and_doubled() {
        let (lo, hi) = band(42.6, 42.6);
        assert!((lo - 21.8).abs() < 1e-9 && (hi - 84.2).abs() < 1e-9);
        assert!(!Part::within("up to 42.6x", 1.43, 42.6, 42.6).holds());
        assert!(Part::within("1.6-3.2x", 1.35, 1.6, 3.2).holds());
        assert!(!Part::within("1.6-3.2x", 1.25, 1.6, 3.2).holds());
        assert!(Part::similar("similar", 0.8).holds() && !Part::similar("similar", 0.7).holds());
    }

    #[test]
    fn the_json_names_the_level_and_parts_in_snake_case() {
        let v = Verdict::of(vec![dir(true), mag(false)]);
        let j = serde_json::to_value(&v).unwrap_or_default();
        assert_eq!(j["level"], "agrees_in_direction");
        assert_eq!(j["parts"][1]["kind"], "magnitude");
        assert_eq!(j["parts"][1]["holds"], false);
        let mut keys: Vec<&String> = j["parts"][0]
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        keys.sort();
        assert_eq!(keys, ["because", "claim", "holds", "kind", "measured"]);
    }

    #[test]
    fn slightly_ahead_needs_more_than_a_tie_and_less_than_far() {
        // Taurus Fig. 11b's +0.8%: a tie, not "slightly ahead".
        let tie = Part::slightly_above("Silo-R slightly ahead", 1.008);
        assert!(!tie.holds() && tie.kind() == Kind::Magnitude);
        assert!(
            tie.reason().contains("1.008x, within 1 +/- 0.03"),
            "{tie:?}"
        );
        assert!(Part::slightly_above("x", 1.1).holds());
        let far = Part::slightly_above("x", 2.0);
        assert!(
            !far.holds() && far.reason().contains("far ahead"),
            "{far:?}"
        );
        assert!(!Part::slightly_above("x", 0.9).holds());
    }

    #[test]
    fn projections_are_in_the_json_and_no_tally() {
        let p = Part::check("cap", Kind::Crossover, "x", false, "y").projection();
        let v = Verdict::of(vec![dir(true), p]);
        assert_eq!(v.level(), Level::Agrees);
        assert_eq!(v.tally(), (1, 1));
        let j = serde_json::to_value(&v).unwrap_or_default();
        assert_eq!(j["parts"][1]["projected"], true);
        assert!(j["parts"][0].get("projected").is_none());
        assert!(j.get("own_experiment").is_none());
        let own =
            serde_json::to_value(Verdict::of(vec![dir(true)]).own_experiment()).unwrap_or_default();
        assert_eq!(own["own_experiment"], true);
    }
}
