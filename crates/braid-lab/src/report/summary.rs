//! The markdown summary of `braid report`: its header with every figure's verdict level, each
//! experiment's section with the paper's claim, result tables, notes, images and a table of
//! the claim's parts (what the paper claims, what braid measured, whether it holds), and what a
//! machine with fewer cores than the papers' cannot show.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::Ctx;
use super::experiments::Experiment;
use super::verdict::{Level, RecoveryRow, Verdict};
use crate::bench::ConfigResult;

/// The closing section: what this machine's cores (`cores`) cannot show of the papers'.
/// How many of the figures' verdicts reached each level (in the order first met), and how
/// many entries are braid's own experiments, counted apart.
fn count_line(counts: &[(Level, usize)], own: usize) -> String {
    let figures: usize = counts.iter().map(|(_, n)| n).sum();
    let levels: Vec<String> = counts
        .iter()
        .map(|(l, n)| format!("{n} {}", l.word()))
        .collect();
    let own = if own > 0 {
        format!(
            "; {own} more entr{} braid's own experiment on a paper section with no figure, not \
             counted",
            if own == 1 { "y is" } else { "ies are" }
        )
    } else {
        String::new()
    };
    format!(
        "{figures} paper figures: {}{own}.",
        if levels.is_empty() {
            "none".to_string()
        } else {
            levels.join(", ")
        }
    )
}

fn limits(cores: usize) -> String {
    format!(
        "\n## What a {cores}-core machine cannot show\n\n\
        The papers ran on 12 to 96 cores with real NVM, NVMe drives or disk arrays. Every thread \
        sweep here ends at this machine's {cores} cores, so the part of the schemes' scalability \
        curves beyond them (where a central log saturates and parallel logs keep climbing) cannot \
        appear: at most {cores} workers contend for anything, and each verdict says where that, and \
        not the scheme, decides the result. Persistent memory is emulated by DRAM-backed files \
        under /dev/shm with the real CPU's flush and fence instructions, plus a busy-wait per \
        persisted line where a figure sweeps NVM latency; NVMe drives and disks are emulated by \
        /dev/shm files paced to a bandwidth and a per-flush latency. Each figure's text names its \
        emulation, and every row of `data/` records it."
    )
}

impl Ctx<'_> {
    /// The summary's title and how its figures were measured.
    pub fn header(&mut self, machine: &serde_json::Value, minutes: f64) {
        let dirty = if machine["git_dirty"].as_bool().unwrap_or(false) {
            " (with uncommitted changes)"
        } else {
            ""
        };
        let _ = writeln!(
            self.md,
            "# braid report\n\nMachine: {} cores, {}, {} GiB, host {}, kernel {}; git {}{dirty}.\n\
             Every figure is the median of {} runs of {} s unless its text says otherwise; ratios are to \
             `none` (no logging) measured in the same sweep, and each is named by logging kind. {}\n\
             Produced by `braid report{}{}` in {minutes:.1} minutes.{}",
            machine["cores"],
            machine["cpu"].as_str().unwrap_or("?"),
            machine["memory_gib"],
            machine["host"].as_str().unwrap_or("?"),
            machine["kernel"].as_str().unwrap_or("?"),
            machine["git"].as_str().unwrap_or("?"),
            self.repeat(),
            if self.args.quick {
                0.3
            } else {
                self.args.seconds
            },
            if self.args.quick {
                "**This is a `--quick` smoke run: small tables, one short run each; its numbers are not results.**"
            } else {
                ""
            },
            if self.args.quick { " --quick" } else { "" },
            if self.args.scaling { " --scaling" } else { "" },
            match &self.scaling {
                Some(plan) => format!(
                    "\n\n**This is the `--scaling` subset** (the figures whose thread sweeps a \
                     bigger machine draws further). {plan}"
                ),
                None => String::new(),
            },
        );
    }

    /// Every experiment's verdict level in one table, after the header.
    pub fn verdict_table(&mut self) {
        let _ = writeln!(
            self.md,
            "\n| figure | verdict | parts that hold |\n|---|---|---:|"
        );
        let mut counts: Vec<(Level, usize)> = Vec::new();
        let mut own = 0;
        for (fig, v) in &self.verdicts {
            let (held, all) = v.tally();
            let level = if v.is_own_experiment() {
                own += 1;
                format!("{} (braid's own experiment: not counted)", v.level().word())
            } else {
                match counts.iter_mut().find(|(l, _)| *l == v.level()) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((v.level(), 1)),
                }
                v.level().word().to_string()
            };
            let _ = writeln!(self.md, "| {fig} | {level} | {held} of {all} |");
        }
        let _ = writeln!(self.md, "\n{}", count_line(&counts, own));
        let _ = writeln!(
            self.md,
            "\n*agrees*: every part of the paper's claim holds; *agrees in direction*: every \
             direction and ordering part holds, some magnitude or crossover part does not; \
             *differs*: a direction or ordering part does not hold; *not measured*: what the \
             verdict compares did not run. A direction needs a ratio beyond 1 +/- {} \
             (run-to-run noise). Parts projected from the proxies (an assumed cost per cache-line \
             move) are shown in the entries but counted in no tally and no level.",
            super::verdict::DIRECTION_TOLERANCE
        );
    }

    /// The closing section.
    pub fn limits(&mut self) {
        let _ = writeln!(self.md, "{}", limits(super::experiments::cores()));
    }

    /// Start an experiment's section: its title, paper, claim and scaling.
    pub fn section(&mut self, e: &Experiment) {
        let _ = writeln!(
            self.md,
            "\n## {}\n\n**Paper** ({}, {}): {}.\n\n**Scaled to this machine:** {}\n",
            e.title, e.paper, e.figure, e.claim, e.scaled
        );
    }

    /// An experiment's verdict: a table of the claim's parts, then the level.
    pub fn verdict(&mut self, v: &Verdict) {
        if !v.parts().is_empty() {
            let _ = writeln!(self.md, "| claim | braid measured | holds |\n|---|---|---|");
            for p in v.parts() {
                let holds = if p.holds() {
                    "yes".to_string()
                } else if p.ran() {
                    format!("**no**: {}", p.reason())
                } else {
                    p.reason().to_string()
                };
                let (kind, holds) = if p.projected() {
                    (
                        format!("{}, a projection: not counted", p.kind().word()),
                        format!("projected {holds}"),
                    )
                } else {
                    (p.kind().word().to_string(), holds)
                };
                let _ = writeln!(
                    self.md,
                    "| {} *({kind})* | {} | {} |",
                    cell(p.claim()),
                    cell(p.measured_text()),
                    cell(&holds)
                );
            }
            self.md.push('\n');
        }
        let _ = writeln!(self.md, "{}\n", v.line());
    }

    pub fn note(&mut self, text: &str) {
        let _ = writeln!(self.md, "{text}\n");
    }

    /// A table of bench results.
    pub fn table(&mut self, res: &[ConfigResult]) {
        let _ = writeln!(
            self.md,
            "| workload | scheme | variant | logging | device | threads | logs | NVM ns | txn/s (median) | x none | p50 us | p99 us | insert ns | shared RMW/commit | global RMW/commit |"
        );
        let _ = writeln!(
            self.md,
            "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        let fixed = |v: Option<f64>| v.map_or_else(|| "-".into(), |x| format!("{x:.2}"));
        for r in res {
            let _ = writeln!(
                self.md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {:.1} | {:.1} | {:.0} | {} | {} |",
                r.workload,
                r.scheme,
                r.variant,
                if r.records == "update" {
                    format!("{}/upd", r.logging)
                } else {
                    r.logging.clone()
                },
                r.device,
                r.threads,
                r.logs,
                r.nvm_delay_ns,
                r.txn_per_s,
                r.ratio_to_none
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "-".into()),
                r.p50_us,
                r.p99_us,
                r.log_insert_ns,
                fixed(r.shared_rmw_per_commit),
                fixed(r.global_rmw_per_commit)
            );
        }
        self.md.push('\n');
    }

    /// A table of recoveries: medians of repeated recoveries of each database.
    pub fn recovery_table(&mut self, rows: &[RecoveryRow]) {
        let _ = writeln!(
            self.md,
            "| run | scheme | variant | logging | device | recovery threads | plan asked | plan used | txns | txn/s (median) |\n|---|---|---|---|---|---:|---|---|---:|---:|"
        );
        for r in rows {
            let _ = writeln!(
                self.md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
                r.run,
                r.scheme,
                r.variant,
                r.logging,
                r.device,
                r.threads,
                r.plan_asked,
                r.plan_used,
                r.txns,
                r.txn_per_s
            );
        }
        self.md.push('\n');
    }

    /// Show the PNG files among `files` that exist.
    pub fn images(&mut self, files: &[PathBuf]) {
        for f in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "png") && f.exists())
        {
            let rel = f.strip_prefix(&self.args.out).unwrap_or(f);
            let _ = writeln!(self.md, "![{}]({})\n", rel.display(), rel.display());
        }
    }
}

/// `text` fit for a markdown table's cell.
pub(super) fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_count_leaves_braid_s_own_experiments_apart() {
        let line = super::count_line(
            &[
                (super::Level::Differs, 3),
                (super::Level::AgreesInDirection, 2),
            ],
            1,
        );
        assert_eq!(
            line,
            "5 paper figures: 3 differs, 2 agrees in direction; 1 more entry is braid's own \
             experiment on a paper section with no figure, not counted."
        );
        assert_eq!(super::count_line(&[], 0), "0 paper figures: none.");
    }
}
