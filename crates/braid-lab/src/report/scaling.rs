//! `braid report --scaling`: the figures whose curves a machine with few cores cannot draw,
//! Wang & Johnson Fig. 4 and Taurus Figs. 5-6, for a bigger machine to draw them. Their thread
//! sweeps already double up to the machine's cores (the papers' points where it has them,
//! [`super::experiments::sweep`]), and the Taurus devices scale with the top of the sweep
//! (`super::taurus`); so the subset runs those experiments unchanged and sizes only the runs'
//! length and repeats from how many configurations the machine's sweeps give: the most
//! repeats, then the longest runs, that keep the estimate within [`BUDGET_S`] (on 16 cores:
//! 153 configurations, one run of 1 s each, about 6 minutes; on 2 cores: 81 configurations,
//! two runs each). The estimate is the configurations times the repeats times the seconds of
//! a run and [`SETUP_S`] of opening and loading its database; the plan and its estimate are
//! printed before the first run.

/// The experiments of the subset.
pub const IDS: [&str; 3] = ["wj-fig4", "taurus-fig5", "taurus-fig6"];

/// Seconds a run costs beyond its measured ones (creating and loading its database, closing
/// it): the committed full report (results/report at 691dc50, 2 cores) took 1.9 s per
/// 1-second run in W&J Fig. 4 and 2.3-2.4 s in Taurus Figs. 5-6.
pub const SETUP_S: f64 = 1.4;

/// The same for `--quick`'s small tables.
pub const QUICK_SETUP_S: f64 = 0.3;

/// The subset's time budget, s: under 8 minutes with room for the summary and plots.
pub const BUDGET_S: f64 = 450.0;

/// (repeats, seconds per run) in order of preference: medians of three, then of two, then
/// single runs, then shorter ones.
const CHOICES: [(usize, f64); 4] = [(3, 1.0), (2, 1.0), (1, 1.0), (1, 0.5)];

/// What the subset will run and how long that should take.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Configurations per experiment (each a point of a sweep: scheme, variant, logging,
    /// threads).
    pub configs: Vec<(&'static str, usize)>,
    pub repeat: usize,
    pub seconds: f64,
    /// Estimated seconds.
    pub estimate_s: f64,
    pub quick: bool,
}

impl Plan {
    /// The plan for `configs` (per experiment): `--quick`'s one short run each, or the first
    /// of [`CHOICES`] whose estimate is within [`BUDGET_S`] (the last if none is).
    pub fn new(configs: Vec<(&'static str, usize)>, quick: bool) -> Plan {
        let total: usize = configs.iter().map(|c| c.1).sum();
        let estimate =
            |repeat: usize, seconds: f64, setup: f64| (total * repeat) as f64 * (seconds + setup);
        let (repeat, seconds, estimate_s) = if quick {
            (1, 0.3, estimate(1, 0.3, QUICK_SETUP_S))
        } else {
            let fits = CHOICES
                .iter()
                .find(|&&(r, s)| estimate(r, s, SETUP_S) <= BUDGET_S);
            let &(r, s) = fits.unwrap_or(&CHOICES[CHOICES.len() - 1]);
            (r, s, estimate(r, s, SETUP_S))
        };
        Plan {
            configs,
            repeat,
            seconds,
            estimate_s,
            quick,
        }
    }

    /// The plan in words, for the terminal and the summary.
    pub fn text(&self, cores: usize) -> String {
        let total: usize = self.configs.iter().map(|c| c.1).sum();
        let each: Vec<String> = self
            .configs
            .iter()
            .map(|(id, n)| format!("{id} {n}"))
            .collect();
        let over = if !self.quick && self.estimate_s > BUDGET_S {
            format!(
                " (over the {:.1}-minute budget even with the shortest runs)",
                BUDGET_S / 60.0
            )
        } else {
            String::new()
        };
        format!(
            "Scaling subset on {cores} cores: {total} configurations ({}), each run {} time(s) \
             for {} s{}; estimated {:.1} minutes{over} ({:.1} s per run of setup).",
            each.join(", "),
            self.repeat,
            self.seconds,
            if self.quick { " (--quick)" } else { "" },
            self.estimate_s / 60.0,
            if self.quick { QUICK_SETUP_S } else { SETUP_S },
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use crate::report::experiments::{all, sweep};

    #[test]
    fn the_subset_is_its_three_figures_and_counts_their_sweeps() {
        let args = crate::report::ReportArgs {
            out: std::env::temp_dir().join("braid-scaling-test"),
            seconds: 1.0,
            repeat: 3,
            only: None,
            quick: false,
            scaling: true,
            readme: None,
        };
        let chosen: Vec<_> = all()
            .into_iter()
            .filter(|e| crate::report::wanted(&args, e.id))
            .collect();
        let ids: Vec<&str> = chosen.iter().map(|e| e.id).collect();
        assert_eq!(ids, IDS);
        // W&J Fig. 4: none, Baseline, Aether and TX-D at every thread count, three variants
        // at the top, on three workloads; Taurus Fig. 5: eight configurations at every count
        // on YCSB and at the top on Payment and New-Order; Fig. 6: four.
        let s = sweep(80).len();
        let cx = crate::report::ctx(&args);
        let counts: Vec<usize> = chosen
            .iter()
            .map(|e| cx.configs(e).expect("the subset's runs expand"))
            .collect();
        assert_eq!(counts, [3 * (4 * s + 3), 8 * s + 16, 4 * s + 8]);
        let only = crate::report::ReportArgs {
            only: Some("taurus".into()),
            ..args
        };
        assert!(!crate::report::wanted(&only, "wj-fig4"));
        assert!(crate::report::wanted(&only, "taurus-fig6"));
        assert!(!crate::report::wanted(&only, "taurus-fig7"));
    }

    #[test]
    fn the_plan_keeps_the_most_repeats_that_fit_the_budget() {
        // 2 cores (threads 1 and 2): 33 + 32 + 16 configurations; 3 repeats would take 9.7
        // minutes, 2 take 6.5.
        let p = Plan::new(
            vec![("wj-fig4", 33), ("taurus-fig5", 32), ("taurus-fig6", 16)],
            false,
        );
        assert_eq!((p.repeat, p.seconds), (2, 1.0));
        assert!((p.estimate_s - 81.0 * 2.0 * 2.4).abs() < 1e-9);
        // 16 cores (threads 1 to 16): 69 + 56 + 28: one run of a second each, 6.1 minutes.
        let p = Plan::new(
            vec![("wj-fig4", 69), ("taurus-fig5", 56), ("taurus-fig6", 28)],
            false,
        );
        assert_eq!((p.repeat, p.seconds), (1, 1.0));
        assert!(p.estimate_s <= BUDGET_S, "{}", p.estimate_s);
        const { assert!(BUDGET_S < 8.0 * 60.0) };
        assert!(p.text(16).contains("153 configurations"), "{}", p.text(16));
        // Beyond what half-second runs fit: the shortest plan, and the text says so.
        let p = Plan::new(vec![("wj-fig4", 400)], false);
        assert_eq!((p.repeat, p.seconds), (1, 0.5));
        assert!(p.text(256).contains("over the 7.5-minute budget"));
        // --quick: one short run each.
        let p = Plan::new(vec![("wj-fig4", 33)], true);
        assert_eq!((p.repeat, p.seconds), (1, 0.3));
        assert!((p.estimate_s - 33.0 * 0.6).abs() < 1e-9);
    }
}
