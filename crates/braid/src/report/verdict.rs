//! What an experiment measured ([`Measured`]), looked up by run, scheme, variant, logging kind
//! and threads, and the verdict each experiment draws from it ([`Verdict`]): braid's result
//! beside the paper's claim, and whether they agree or why they differ, in measured terms.

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

    /// The ratio of two configurations' throughputs in run `id`.
    pub fn ratio(&self, id: &str, a: Key<'_>, b: Key<'_>) -> Option<f64> {
        let (x, y) = (self.tps(id, a)?, self.tps(id, b)?);
        (y > 0.0).then(|| x / y)
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

/// braid's result beside the paper's claim, and the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// What braid measured, in a sentence or two with the numbers.
    pub result: String,
    pub agrees: bool,
    /// Why the result differs, in measured terms (empty when it agrees).
    pub because: String,
}

impl Verdict {
    /// `agrees`, or differs `because`.
    pub fn new(result: String, agrees: bool, because: impl Into<String>) -> Verdict {
        Verdict {
            result,
            agrees,
            because: if agrees {
                String::new()
            } else {
                because.into()
            },
        }
    }

    /// Nothing to judge: a configuration the verdict needs was not measured.
    pub fn missing(what: &str) -> Verdict {
        Verdict {
            result: format!("not measured ({what})"),
            agrees: false,
            because: "the configurations this verdict compares did not run".into(),
        }
    }

    /// The summary's line.
    pub fn line(&self) -> String {
        if self.agrees {
            format!("**braid:** {}\n\n**Verdict:** agrees.", self.result)
        } else {
            format!(
                "**braid:** {}\n\n**Verdict:** differs, because {}.",
                self.result, self.because
            )
        }
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

/// `x` as "1.23x".
pub fn times(x: f64) -> String {
    format!("{x:.2}x")
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
