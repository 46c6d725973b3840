//! The markdown summary of `braid report`: its header, each experiment's section with the
//! paper's claim, result tables, notes and images, and what a 2-core machine cannot show.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::bench::ConfigResult;
use crate::recover::RecoveryStats;

use super::Ctx;
use super::experiments::Experiment;

/// The closing section.
const LIMITS: &str = "\n## What a 2-core machine cannot show\n\n\
    The papers ran on 12 to 80 cores with real NVM or many SSDs. With 2 cores, the schemes' scalability \
    curves (where a central log saturates and parallel logs keep climbing) cannot appear: at most two \
    workers contend for anything. What the figures here do show is each scheme's per-transaction overhead \
    against no logging, commit latency, log volume, recovery speed and how they change with NVM speed and \
    contention. Persistent memory is emulated by DRAM-backed files with the flush and fence instructions \
    of the real CPU, plus a configurable busy-wait per persisted line.";

impl Ctx<'_> {
    /// The summary's title and how its figures were measured.
    pub fn header(&mut self, machine: &serde_json::Value) {
        let _ = writeln!(
            self.md,
            "# braid report\n\nMachine: {} cores, {}; persistent memory emulated by /dev/shm files; git {}.\n\
             Every figure is the median of {} runs of {} s; ratios are to `none` (no logging) measured in the same experiment.\n\
             Produced by `braid report --out {}`.",
            machine["cores"],
            machine["cpu"].as_str().unwrap_or("?"),
            machine["git"].as_str().unwrap_or("?"),
            self.repeat(),
            self.seconds(),
            self.args.out.display()
        );
    }

    /// The closing section.
    pub fn limits(&mut self) {
        let _ = writeln!(self.md, "{LIMITS}");
    }

    /// Start an experiment's section: its title, paper and claim.
    pub fn section(&mut self, e: &Experiment) {
        let _ = writeln!(
            self.md,
            "\n## {}\n\n*{}* — claim: {}\n",
            e.title, e.paper, e.claim
        );
    }

    pub fn note(&mut self, text: &str) {
        let _ = writeln!(self.md, "{text}\n");
    }

    /// A table of bench results.
    pub fn table(&mut self, res: &[ConfigResult]) {
        let _ = writeln!(
            self.md,
            "| workload | scheme | logging | device | threads | logs | NVM ns | txn/s (median) | x none | p50 us | p99 us |"
        );
        let _ = writeln!(
            self.md,
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in res {
            let _ = writeln!(
                self.md,
                "| {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {:.1} | {:.1} |",
                r.workload,
                r.scheme,
                r.logging,
                r.device,
                r.threads,
                r.logs,
                r.nvm_delay_ns,
                r.txn_per_s,
                r.ratio_to_none
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "-".into()),
                r.p50_us,
                r.p99_us
            );
        }
        self.md.push('\n');
    }

    /// The head of a table of recoveries.
    pub fn recovery_table_head(&mut self) {
        let _ = writeln!(
            self.md,
            "| scheme | logging | recovery threads | txns | MB | seconds | txn/s | GB/s |\n|---|---|---:|---:|---:|---:|---:|---:|"
        );
    }

    /// A row of the table of recoveries.
    pub fn recovery_row(&mut self, scheme: &str, logging: &str, st: &RecoveryStats) {
        let _ = writeln!(
            self.md,
            "| {scheme} | {logging} | {} | {} | {:.1} | {:.3} | {:.0} | {:.3} |",
            st.threads,
            st.txns,
            st.bytes as f64 / 1e6,
            st.seconds,
            st.txn_per_s,
            st.gb_per_s
        );
    }

    /// Show the PNG files among `files`.
    pub fn images(&mut self, files: &[PathBuf]) {
        for f in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "png"))
        {
            let rel = f.strip_prefix(&self.args.out).unwrap_or(f);
            let _ = writeln!(self.md, "![{}]({})\n", rel.display(), rel.display());
        }
    }
}
