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

use serde::Serialize;

use crate::bench::ConfigResult;

/// Everything one experiment measured.
#[derive(Debug, Default)]
pub struct Measured {
    /// Bench results of each run: its id, its x value, its configurations.
    pub runs: Vec<(String, Option<f64>, Vec<ConfigResult>)>,
    pub recoveries: Vec<RecoveryRow>,
    /// `braid bench rewind`'s JSON.
    pub rewind: Option<serde_json::Value>,
}

/// One recovery configuration: the median of its repeated recoveries.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryRow {
    pub run: String,
    pub x: Option<f64>,
    pub scheme: String,
    pub variant: String,
    pub logging: String,
    pub device: String,
    pub threads: usize,
    /// The taurus plan asked for (`auto`, `parallel`, `serial`), or "" for other schemes.
    pub plan_asked: String,
    /// The plan recovery used (taurus), or "".
    pub plan_used: String,
    pub txns: u64,
    pub txn_per_s: f64,
    /// Each recovery's txn/s.
    pub repeats: Vec<f64>,
}

/// What to look a configuration up by (`variant` "" for the schemes' defaults).
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    pub scheme: &'a str,
    pub variant: &'a str,
    pub logging: &'a str,
    pub threads: usize,
}

/// `scheme` with data logging at its defaults, at `threads`.
pub fn data(scheme: &str, threads: usize) -> Key<'_> {
    Key {
        scheme,
        variant: "",
        logging: "data",
        threads,
    }
}

impl<'a> Key<'a> {
    pub fn variant(mut self, v: &'a str) -> Key<'a> {
        self.variant = v;
        self
    }
    pub fn command(mut self) -> Key<'a> {
        self.logging = "command";
        self
    }
}

impl Measured {
    /// The results of run `id`.
    pub fn run(&self, id: &str) -> &[ConfigResult] {
        self.runs
            .iter()
            .find(|(r, _, _)| r == id)
            .map(|(_, _, c)| c.as_slice())
            .unwrap_or(&[])
    }

    /// The configuration of run `id` that `k` names (no logging: `none` at `k.threads`).
    pub fn get(&self, id: &str, k: Key<'_>) -> Option<&ConfigResult> {
        self.run(id).iter().find(|c| {
            c.scheme == k.scheme
                && c.threads == k.threads
                && (c.scheme == crate::common::NONE
                    || (c.variant == k.variant && c.logging == k.logging))
        })
    }

    /// Median txn/s of what `k` names in run `id`.
    pub fn tps(&self, id: &str, k: Key<'_>) -> Option<f64> {
        self.get(id, k).map(|c| c.txn_per_s)
    }

    /// The recovery row of run `id` for `k` (threads: recovery threads) and `plan` asked.
    pub fn recovery(&self, id: &str, k: Key<'_>, plan: &str) -> Option<&RecoveryRow> {
        self.recoveries.iter().find(|r| {
            r.run == id
                && r.scheme == k.scheme
                && r.variant == k.variant
                && r.logging == k.logging
                && r.threads == k.threads
                && r.plan_asked == plan
        })
    }
}

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
    fn is_direction(self) -> bool {
        matches!(self, Kind::Direction | Kind::Ordering)
    }
}

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

/// One part of a paper's claim: what the paper claims, braid's measured value and whether it
/// holds, and when it does not, why in measured terms.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    /// What the paper claims, in words, with its number where it gives one.
    claim: String,
    kind: Kind,
    /// braid's value for it, with the number.
    measured: String,
    holds: bool,
    /// Why it does not hold, with numbers from the run (empty when it holds).
    because: String,
    /// Whether braid measured it at all.
    #[serde(skip)]
    ran: bool,
    /// Computed from a model, not measured: shown, but in no tally and no level.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    projected: bool,
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

/// Every engine thread's CPU time per committed transaction of `c`, ns: its workers and the
/// log's own threads (flushers, daemons, ...), not the bench's own thread (see
/// `crate::bench::cpu`); `None` where it was not read. What the time breakdowns split.
pub fn cpu_per_txn(c: &ConfigResult) -> Option<f64> {
    if c.cpu_ns_per_txn.is_empty() {
        return None;
    }
    Some(
        c.cpu_ns_per_txn
            .iter()
            .filter(|(r, _)| r.as_str() != crate::bench::cpu::HARNESS)
            .fold(0.0, |a, (_, v)| a + v),
    )
}

/// A worker-side timer's `ns` of `c` (log insertion, locks, access hooks, aborted attempts:
/// wall time on the worker) as CPU time: times the workers' share of their runnable time on a
/// CPU ([`crate::bench::cpu::CpuTime::workers_on_cpu`]), since a worker waiting for a CPU
/// inside a timed stretch lengthens it without working; unchanged where that share was not
/// read.
pub fn worker_cpu(c: &ConfigResult, ns: f64) -> f64 {
    ns * c.workers_on_cpu.unwrap_or(1.0)
}

/// The CPU time of `c`'s log threads (flushers, daemons, backup, destage, checkpoint; see
/// `crate::bench::cpu::is_log_thread`) per committed transaction, ns (0 where none ran or
/// it was not read).
pub fn log_threads_per_txn(c: &ConfigResult) -> f64 {
    c.cpu_ns_per_txn
        .iter()
        .filter(|(r, _)| crate::bench::cpu::is_log_thread(r))
        .fold(0.0, |a, (_, v)| a + v)
}

/// `c`'s log threads' CPU per committed transaction by role, as "flusher 120 ns, daemon 40 ns"
/// ("none" where none ran).
pub fn log_threads_text(c: &ConfigResult) -> String {
    let t: Vec<String> = c
        .cpu_ns_per_txn
        .iter()
        .filter(|(r, _)| crate::bench::cpu::is_log_thread(r))
        .map(|(r, v)| format!("{r} {v:.0} ns"))
        .collect();
    if t.is_empty() {
        "none".to_string()
    } else {
        t.join(", ")
    }
}

/// Transactions per log flush over the runs of `c` (group commit's batch size).
pub fn per_flush(c: &ConfigResult) -> f64 {
    let (commits, flushes) = c
        .runs
        .iter()
        .fold((0u64, 0u64), |(a, b), r| (a + r.commits, b + r.log_flushes));
    commits as f64 / flushes.max(1) as f64
}

/// `x` as "1.23x" (or "42.6x" from 10 up).
pub fn times(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.2}x")
    }
}

/// `x` txn/s as "123.4 K".
pub fn k(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else {
        format!("{:.1} K", x / 1e3)
    }
}

/// `x` as a percentage.
pub fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
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
