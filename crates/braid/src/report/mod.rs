//! `braid report`: a fixed set of experiments mirroring the headline figures of the papers braid
//! implements, sized to finish in well under 30 minutes on a 2-core machine. It writes every
//! result as JSON and CSV, draws the plots (SVG and PNG), and a markdown summary that sets each
//! result beside the paper's claim and says plainly where a 2-core machine cannot show it.
//! Experiments whose schemes do not exist yet are skipped with a note.
//!
//! [`experiments`] holds the experiments as values; this module runs them, [`plot`] draws their
//! figures and [`summary`] writes the markdown.

mod experiments;
mod plot;
mod summary;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::bench::{self, BenchArgs, ConfigResult};
use experiments::{Bench, Body, Experiment, Run};
use plot::Data;

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Where the summary, data and plots go.
    #[arg(long, default_value = "target/braid/report")]
    pub out: PathBuf,
    /// Seconds per benchmark run.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Runs per configuration (medians are reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Run only the experiments whose id contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Shrink every experiment (smaller tables, 1 repeat, short runs): a smoke test of the report.
    #[arg(long)]
    pub quick: bool,
}

/// The schemes of `wanted` that exist, and the ones that do not.
fn available(wanted: &[&'static str]) -> (Vec<&'static str>, Vec<&'static str>) {
    wanted
        .iter()
        .partition(|s| braid_wal::scheme::registry::names().any(|n| n == **s))
}

/// A report in the making: its options, progress bars, summary and every result.
pub struct Ctx<'a> {
    args: &'a ReportArgs,
    mp: MultiProgress,
    md: String,
    all: Vec<serde_json::Value>,
}

impl Ctx<'_> {
    fn seconds(&self) -> f64 {
        if self.args.quick {
            0.3
        } else {
            self.args.seconds
        }
    }

    fn repeat(&self) -> usize {
        if self.args.quick { 1 } else { self.args.repeat }
    }

    /// The `braid bench` options of run `id`.
    fn bench_args(
        &self,
        id: &str,
        b: &Bench,
        schemes: &[&'static str],
    ) -> anyhow::Result<BenchArgs> {
        let mut a = BenchArgs::defaults()?;
        a.workload = b.workload;
        a.scheme = Some(schemes.to_vec());
        a.threads = b.threads.clone();
        a.logging = b.logging.clone();
        a.nvm_delays = b.nvm_delays.clone();
        if let Some(t) = b.theta {
            a.ycsb.theta = t;
        }
        if let Some(m) = b.tatp_mix {
            a.oltp.tatp_mix = m.into();
        }
        if let Some(m) = b.tpcc_mix {
            a.oltp.tpcc_mix = m.into();
        }
        if b.keep {
            a.keep = true;
            a.dir = Some(self.args.out.join("keep"));
        }
        a.seconds = Some(self.seconds());
        a.repeat = b.repeat.unwrap_or(self.repeat());
        let data = self.args.out.join("data");
        a.json = data.join(format!("{id}.json"));
        a.csv = Some(data.join(format!("{id}.csv")));
        if self.args.quick {
            a.ycsb.rows = 20_000;
            a.oltp.items = 2_000;
            a.oltp.customers = 300;
            a.oltp.subscribers = 5_000;
            a.oltp.accounts_per_branch = 2_000;
        }
        Ok(a)
    }

    /// Run `braid bench` for run `id` over `schemes`; its results are saved under `data/`.
    fn bench(
        &mut self,
        id: &str,
        b: &Bench,
        schemes: &[&'static str],
    ) -> anyhow::Result<Vec<ConfigResult>> {
        let a = self.bench_args(id, b, schemes)?;
        let context = || format!("experiment {id}");
        let workload =
            crate::common::workload(a.workload, &a.ycsb, &a.oltp, false).with_context(context)?;
        let points = bench::sweep_points(&a).with_context(context)?;
        let bar = self
            .mp
            .add(ProgressBar::new((points.len() * a.repeat.max(1)) as u64));
        bar.set_style(
            ProgressStyle::with_template("  {msg:24} [{bar:30}] {pos}/{len} runs, {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(id.to_string());
        let res = bench::measure(&a, &workload, &points, &self.mp, &bar).with_context(context)?;
        bar.finish_and_clear();
        self.mp.remove(&bar);
        bench::save_quiet(&a, &res)?;
        self.all
            .push(serde_json::json!({ "experiment": id, "results": res }));
        Ok(res)
    }

    /// Run one experiment and write its section.
    fn experiment(&mut self, e: &Experiment) -> anyhow::Result<()> {
        let _ = self
            .mp
            .println(format!("{}: {}, {}", e.id, e.paper, e.figure));
        self.section(e);
        let (have, missing) = available(e.schemes);
        if !missing.is_empty() {
            self.note(&format!(
                "Schemes not built yet, skipped: {}.",
                missing.join(", ")
            ));
        }
        match &e.body {
            Body::Runs {
                runs,
                needs_logging,
                ratio_notes,
                note,
            } => {
                if *needs_logging && !have.iter().any(|s| *s != crate::common::NONE) {
                    return Ok(());
                }
                for r in runs {
                    self.run(r, &have, ratio_notes)?;
                }
                if let Some(n) = note {
                    self.note(n);
                }
            }
            Body::Sweep { runs, figure } => {
                let mut rows: Vec<(f64, ConfigResult)> = Vec::new();
                for (x, r) in runs {
                    let res = self.bench(&r.id, &r.bench, &have)?;
                    rows.extend(res.into_iter().map(|c| (*x, c)));
                }
                let table: Vec<ConfigResult> = rows.iter().map(|(_, c)| c.clone()).collect();
                self.table(&table);
                self.figure(figure, Data::Results(&rows))?;
            }
            Body::Recovery {
                bench,
                loggings,
                recovery_threads,
                figure,
            } => {
                let bars = self.recoveries(e.id, bench, &have, loggings, recovery_threads)?;
                self.figure(figure, Data::Bars(&bars))?;
            }
            Body::Rewind { plots } => self.rewind(plots)?,
        }
        Ok(())
    }

    /// One bench run of an experiment: its table, figure and notes.
    fn run(
        &mut self,
        r: &Run,
        schemes: &[&'static str],
        ratio_notes: &[&str],
    ) -> anyhow::Result<()> {
        let res = self.bench(&r.id, &r.bench, schemes)?;
        self.table(&res);
        let rows: Vec<(f64, ConfigResult)> = res.iter().map(|c| (0.0, c.clone())).collect();
        if let Some(f) = &r.figure {
            self.figure(f, Data::Results(&rows))?;
        }
        for s in ratio_notes {
            let parts: Vec<String> = ratios(&res, s, 2)
                .into_iter()
                .map(|(logging, x)| format!("{logging} logging {:.0}%", x * 100.0))
                .collect();
            if !parts.is_empty() {
                self.note(&format!(
                    "{s} at 2 threads, of no logging: {}.",
                    parts.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Bench each scheme and logging kind keeping the database, recover it with each number of
    /// recovery threads; returns a bar per recovery.
    fn recoveries(
        &mut self,
        id: &str,
        bench: &Bench,
        schemes: &[&'static str],
        loggings: &[braid_engine::LogKind],
        recovery_threads: &[usize],
    ) -> anyhow::Result<Vec<(String, f64)>> {
        let mut bars = Vec::new();
        self.recovery_table_head();
        for &scheme in schemes {
            for &logging in loggings {
                let mut b = bench.clone();
                b.logging = vec![logging];
                let res = self.bench(&format!("{id}-{scheme}-{logging}"), &b, &[scheme])?;
                let Some(dir) = res
                    .iter()
                    .find(|r| r.scheme == scheme)
                    .and_then(|r| r.runs.first())
                    .and_then(|r| r.dir.clone())
                else {
                    continue;
                };
                for &threads in recovery_threads {
                    let st = crate::recover::recover_quiet(Path::new(&dir), threads, None, None)?;
                    self.recovery_row(scheme, logging.name(), &st);
                    bars.push((format!("{scheme} {logging} {threads}t"), st.txn_per_s));
                    self.all
                        .push(serde_json::json!({ "experiment": id, "recovery": st }));
                }
                if let Some(parent) = Path::new(&dir).parent() {
                    let _ = std::fs::remove_dir_all(parent);
                }
            }
        }
        self.md.push('\n');
        Ok(bars)
    }

    /// `braid bench rewind --experiment all`, its data under `data/` and its `plots`.
    fn rewind(&mut self, plots: &[&str]) -> anyhow::Result<()> {
        let dir = self.args.out.join("plots");
        let ra = crate::rewind::RewindArgs {
            experiment: crate::rewind::Experiment::All,
            runs: self.repeat(),
            quick: self.args.quick,
            json: self.args.out.join("data").join("rewind.json"),
            plot: dir.clone(),
            dir: "/dev/shm".into(),
            transactions: None,
            keys: None,
        };
        crate::rewind::run(ra)?;
        self.note("Tables: `data/rewind.json` (printed by `braid bench rewind`).");
        let files: Vec<PathBuf> = plots.iter().map(|f| dir.join(format!("{f}.png"))).collect();
        self.images(&files);
        Ok(())
    }
}

/// The ratios to no logging of `scheme` at `threads`, one per logging kind it ran with (never
/// the best of them: each is named).
fn ratios(res: &[ConfigResult], scheme: &str, threads: usize) -> Vec<(String, f64)> {
    res.iter()
        .filter(|r| r.scheme == scheme && r.threads == threads)
        .filter_map(|r| Some((r.logging.clone(), r.ratio_to_none?)))
        .collect()
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(args.out.join("data"))
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut cx = Ctx {
        args: &args,
        mp: MultiProgress::new(),
        md: String::new(),
        all: Vec::new(),
    };
    let machine = crate::output::machine();
    cx.header(&machine);
    let want = |id: &str| args.only.as_deref().is_none_or(|o| id.contains(o));
    for e in experiments::all().iter().filter(|e| want(e.id)) {
        cx.experiment(e)?;
    }
    cx.limits();
    crate::output::write_text(&args.out.join("summary.md"), &cx.md)?;
    crate::output::write_json(
        &args.out.join("data").join("all.json"),
        &serde_json::json!({ "machine": machine, "experiments": cx.all }),
    )?;
    println!(
        "report written to {}",
        args.out.join("summary.md").display()
    );
    Ok(())
}
