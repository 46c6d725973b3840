//! The proxies' projection: from what one commit costs in shared memory traffic on this machine,
//! the core count at which a scheme would stop scaling, set against a paper's crossover.
//!
//! The model, written once here. A read-modify-write on a word every worker writes (the bench's
//! `global_rmw_per_commit`, counted by `braid_wal::proxy`: a central log's tail or lock, a
//! global LSN) moves that word's cache line to the writing core, and the moves of one line
//! serialise. With `g` of them per commit and [`LINE_TRANSFER_NS`] per move, no number of cores
//! commits faster than `1 / (g * LINE_TRANSFER_NS)`. A scheme that scales linearly from its
//! 1-thread rate `r1` meets that ceiling at `1 / (g * LINE_TRANSFER_NS * r1)` cores: its
//! projected cap. A scheme with no global word (per-log or per-row words only) has no such cap
//! from its log; more logs spread its shared words. The model is an upper bound on scaling: it
//! ignores everything else a bigger machine adds (NUMA, the workload's own contention), so a
//! projected cap beyond a paper's crossover says only that the log would not be the limit there.
//!
//! [`LINE_TRANSFER_NS`] is an assumption, not a measurement, and a scheme with no global word
//! passes any projection. So every part made here is a projection ([`Part::projection`]):
//! shown beside the verdict's measured parts, labelled so, and counted in no tally or level.

use super::verdict::{Kind, Part};
use crate::bench::ConfigResult;

/// One cache-line move between cores under contention, in nanoseconds: the proxies' constant
/// (`braid_wal::proxy`: roughly 50-100 ns, across sockets the upper end).
pub const LINE_TRANSFER_NS: f64 = 70.0;

/// Below this many global read-modify-writes per commit a scheme has no global word.
const NONE: f64 = 0.01;

/// The commits per second `g` global read-modify-writes per commit allow at most.
pub fn ceiling(g: f64) -> f64 {
    1e9 / (g * LINE_TRANSFER_NS)
}

/// The projected cap of `c` (its proxies at any thread count) whose 1-thread rate is `r1`, in
/// cores; `None` when it has no global word or its proxies were not counted.
pub fn cap_cores(c: &ConfigResult, r1: f64) -> Option<f64> {
    let g = c.global_rmw_per_commit?;
    (g >= NONE && r1 > 0.0).then(|| ceiling(g) / r1)
}

/// `name`'s projection in words.
pub fn describe(name: &str, c: &ConfigResult, r1: f64) -> String {
    match (c.global_rmw_per_commit, cap_cores(c, r1)) {
        (None, _) => format!("{name}'s proxies were not counted"),
        (Some(g), None) => {
            format!("{name} makes {g:.2} global read-modify-writes per commit: no cap from its log")
        }
        (Some(g), Some(n)) => format!(
            "{name}: {g:.2} global read-modify-writes per commit x {LINE_TRANSFER_NS:.0} ns cap it \
             at {:.0} K commits/s, {n:.1} times its 1-thread {:.0} K",
            ceiling(g) / 1e3,
            r1 / 1e3
        ),
    }
}

/// The crossover part of a scalability figure: the paper sees `central` stop scaling before
/// `paper_threads` while `parallel` goes on; the proxies' projection agrees when `central`'s
/// cap falls below `paper_threads` cores and `parallel`'s does not (or it has none). Each
/// scheme is (name, its result at the top of the sweep, its 1-thread rate).
pub fn crossover(
    claim: impl Into<String>,
    central: (&str, &ConfigResult, f64),
    parallel: (&str, &ConfigResult, f64),
    paper_threads: usize,
) -> Part {
    let (cn, cc, c1) = central;
    let (pn, pc, p1) = parallel;
    let measured = format!("{}; {}", describe(cn, cc, c1), describe(pn, pc, p1));
    let (Some(_), Some(_)) = (cc.global_rmw_per_commit, pc.global_rmw_per_commit) else {
        return Part::not_measured(claim, Kind::Crossover, measured).projection();
    };
    let limit = paper_threads as f64;
    let central_caps = cap_cores(cc, c1).is_some_and(|n| n < limit);
    let parallel_goes_on = cap_cores(pc, p1).is_none_or(|n| n >= limit);
    let why = match (central_caps, parallel_goes_on) {
        (false, _) => {
            format!("{cn}'s projected cap is not below the paper's {paper_threads} threads")
        }
        (true, false) => {
            format!("{pn}'s projected cap is below the paper's {paper_threads} threads too")
        }
        (true, true) => String::new(),
    };
    Part::check(
        claim,
        Kind::Crossover,
        measured,
        central_caps && parallel_goes_on,
        why,
    )
    .projection()
}

/// The crossover part of a figure whose schemes all keep scaling across the paper's axis:
/// it holds when no scheme's projected cap falls below `paper_threads` cores. Each scheme is
/// (name, its result at the top of the sweep, its 1-thread rate).
pub fn keeps_scaling(
    claim: impl Into<String>,
    schemes: &[(&str, &ConfigResult, f64)],
    paper_threads: usize,
) -> Part {
    let measured: Vec<String> = schemes
        .iter()
        .map(|(n, c, r1)| describe(n, c, *r1))
        .collect();
    let measured = measured.join("; ");
    if schemes
        .iter()
        .any(|(_, c, _)| c.global_rmw_per_commit.is_none())
    {
        return Part::not_measured(claim, Kind::Crossover, measured).projection();
    }
    let capped: Vec<String> = schemes
        .iter()
        .filter_map(|(n, c, r1)| {
            cap_cores(c, *r1)
                .filter(|&cap| cap < paper_threads as f64)
                .map(|cap| format!("{n}'s projected cap, {cap:.0} cores, is below the paper's {paper_threads} threads"))
        })
        .collect();
    Part::check(
        claim,
        Kind::Crossover,
        measured,
        capped.is_empty(),
        capped.join("; "),
    )
    .projection()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;

    fn with_global(g: Option<f64>) -> ConfigResult {
        ConfigResult {
            global_rmw_per_commit: g,
            ..result("x", "", "data", 2, 100_000.0)
        }
    }

    #[test]
    fn one_global_word_per_commit_caps_near_fourteen_million_commits() {
        assert!((ceiling(1.0) - 1e9 / 70.0).abs() < 1.0);
        // 10 per commit at 100 K/s per thread: 1.43 M commits/s, 14.3 cores.
        let n = cap_cores(&with_global(Some(10.0)), 100_000.0);
        assert!(n.is_some_and(|n| (n - 14.285).abs() < 0.01), "{n:?}");
        assert_eq!(cap_cores(&with_global(Some(0.0)), 100_000.0), None);
        assert_eq!(cap_cores(&with_global(None), 100_000.0), None);
    }

    #[test]
    fn keeping_on_scaling_fails_on_the_first_scheme_capped_inside_the_paper_s_axis() {
        let free = with_global(Some(0.0));
        let central = with_global(Some(10.0));
        let p = keeps_scaling("k", &[("a", &free, 1e5), ("b", &central, 1e5)], 8);
        assert!(p.holds(), "{p:?}");
        let p = keeps_scaling("k", &[("a", &free, 1e5), ("b", &central, 1e5)], 48);
        assert!(
            !p.holds() && p.reason().contains("b's projected cap, 14 cores"),
            "{p:?}"
        );
        assert!(!keeps_scaling("k", &[("a", &with_global(None), 1e5)], 8).ran());
    }

    #[test]
    fn projections_neither_raise_nor_lower_a_verdict() {
        use crate::report::verdict::{Level, Verdict};
        let free = with_global(Some(0.0));
        let central = with_global(Some(10.0));
        let passes = keeps_scaling("k", &[("a", &free, 1e5)], 48);
        let fails = keeps_scaling("k", &[("b", &central, 1e5)], 48);
        assert!(passes.projected() && passes.holds());
        assert!(fails.projected() && !fails.holds());
        let measured = Part::above("A beats B", 1.5);
        // A failing projection does not pull a measured agreement down.
        let v = Verdict::of(vec![measured.clone(), fails.clone()]);
        assert_eq!(v.level(), Level::Agrees);
        assert_eq!(v.tally(), (1, 1));
        assert!(v.line().contains("1 projection(s)"), "{}", v.line());
        // A passing one does not lift a verdict whose measured parts were not made.
        let nm = Part::not_measured("A beats C", Kind::Direction, "C did not run");
        assert_eq!(
            Verdict::of(vec![nm, passes.clone()]).level(),
            Level::NotMeasured
        );
        // Alone, it measures nothing.
        assert_eq!(Verdict::of(vec![passes]).level(), Level::NotMeasured);
        assert_eq!(
            Verdict::of(vec![Part::below("A falls", 1.5), fails]).level(),
            Level::Differs
        );
    }

    #[test]
    fn the_crossover_holds_only_when_the_central_log_caps_inside_the_paper_s_range() {
        let central = with_global(Some(10.0));
        let parallel = with_global(Some(0.0));
        let p = crossover(
            "c",
            ("central", &central, 1e5),
            ("parallel", &parallel, 1e5),
            24,
        );
        assert!(p.holds(), "{p:?}");
        let p = crossover(
            "c",
            ("central", &central, 1e5),
            ("parallel", &parallel, 1e5),
            8,
        );
        assert!(
            !p.holds() && p.reason().contains("not below the paper's 8"),
            "{p:?}"
        );
        let p = crossover("c", ("central", &central, 1e5), ("also", &central, 1e5), 24);
        assert!(
            !p.holds() && p.reason().contains("also's projected cap"),
            "{p:?}"
        );
        let none = with_global(None);
        let p = crossover(
            "c",
            ("central", &none, 1e5),
            ("parallel", &parallel, 1e5),
            24,
        );
        assert!(!p.ran());
    }
}
