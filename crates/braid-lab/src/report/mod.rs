//! `braid report`: one entry per figure of the papers braid implements, each the paper's own
//! experiment (its schemes, variants, workload and parameters) scaled to this machine and
//! saying how, with medians of repeated runs, ratios named by logging kind, and a verdict: the
//! paper's claim in parts, braid's measured value for each, whether it holds or why not in
//! measured terms, and a level computed from them (agrees, agrees in direction, differs, not
//! measured).
//! It writes every result as JSON and CSV, draws the plots (SVG and PNG) and a markdown
//! summary, in well under 30 minutes on a 2-core machine; `--quick` is a smoke run of a few
//! minutes.
//!
//! [`experiments`] holds the experiments' types, [`wj`], [`nvlog`], [`taurus`] and [`rewind`]
//! the experiments of each paper, [`beyond`] those of two designs published since (Remote
//! Flush Avoidance and autonomous commit), [`verdict`] what they measured and how it is judged; this
//! module runs them, [`plot`] draws their figures and [`summary`] writes the markdown. Each
//! verdict is a list of the claim's parts with a level computed from them (see [`verdict`]);
//! a scalability figure's crossover part sets the paper's crossover against the core count at
//! which the scheme's global read-modify-writes per commit would cap it ([`projection`], where
//! the model and its constant are written). `--scaling` runs only the figures a bigger
//! machine's cores can draw further, sized to finish within minutes there ([`scaling`]).

mod beyond;
mod experiments;
mod highlights;
mod nvlog;
mod plot;
mod projection;
mod rewind;
mod scaling;
mod summary;
mod taurus;
mod verdict;
mod wj;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::bench::{self, BenchArgs, ConfigResult, Variant};
use braid_wal::scheme::RecoveryPlan;
use experiments::{Body, Experiment, Run};
use plot::Data;
use verdict::{Measured, RecoveryRow};

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Where the summary, data and plots go.
    #[arg(long, default_value = "target/braid/report")]
    pub out: PathBuf,
    /// Seconds per benchmark run.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Runs per configuration, and recoveries per recovered database (medians are reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Run only the experiments whose id contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Shrink every experiment (smaller tables, 1 repeat, short runs): a smoke test of the
    /// report, whose figures are not results.
    #[arg(long)]
    pub quick: bool,
    /// Run only the scaling subset: Wang & Johnson Fig. 4 and Taurus Figs. 5-6, whose thread
    /// sweeps go up to this machine's cores, with the runs' seconds and repeats chosen from
    /// how many configurations that gives so that it takes under 8 minutes on 16 cores (the
    /// plan and its estimate are printed first; it sets --seconds and --repeat itself).
    #[arg(long)]
    pub scaling: bool,
    /// Run nothing: rewrite the highlights block of this file (the committed one is
    /// docs/results.md) from the report already in --out (its data/all.json).
    #[arg(long)]
    pub readme: Option<PathBuf>,
}

/// A report in the making: its options, progress bars, summary and every result.
pub struct Ctx<'a> {
    args: &'a ReportArgs,
    mp: MultiProgress,
    md: String,
    all: Vec<serde_json::Value>,
    /// One line per experiment: its figure, verdict and result.
    verdicts: Vec<(String, verdict::Verdict)>,
    /// `braid bench rewind`'s results, once run.
    rewind: Option<serde_json::Value>,
    /// The results of every run made so far (not kept for recovery), by run id: a breakdown
    /// takes an earlier entry's runs from here.
    done: std::collections::HashMap<String, Vec<ConfigResult>>,
    /// `--scaling`: the plan, in words, for the summary's header.
    scaling: Option<String>,
}

impl Ctx<'_> {
    fn seconds(&self, b: &experiments::Bench) -> f64 {
        if self.args.quick {
            0.3
        } else {
            b.seconds.unwrap_or(self.args.seconds)
        }
    }

    fn repeat(&self) -> usize {
        if self.args.quick { 1 } else { self.args.repeat }
    }

    /// The `braid bench` options every variant of run `r` starts from.
    fn bench_args(&self, r: &Run) -> anyhow::Result<BenchArgs> {
        let b = &r.bench;
        let mut a = BenchArgs::defaults()?;
        // The papers' devices only, never the bench's default file row beside them.
        a.device = Some(vec![crate::common::DeviceKind::Pmem]);
        a.workload = b.workload;
        a.threads = b.threads.clone();
        a.nvm_delays = b.nvm_delays.clone();
        if let Some(t) = b.theta {
            a.ycsb.theta = t;
        }
        if let Some(n) = b.accesses {
            a.ycsb.accesses = n;
        }
        if let Some(n) = b.logs {
            a.logs = Some(vec![n]);
        }
        if let Some(m) = b.tatp_mix {
            a.oltp.tatp_mix = m.into();
        }
        if let Some(m) = b.tpcc_mix {
            a.oltp.tpcc_mix = m.into();
        }
        a.seconds = Some(self.seconds(b));
        if let Some(n) = b.commits {
            a.commits = Some(if self.args.quick {
                (n / 20).max(1_000)
            } else {
                n
            });
            a.seconds = Some(experiments::COMMITS_CAP_S);
        }
        a.repeat = if self.args.quick {
            1
        } else {
            b.repeat.unwrap_or(self.repeat())
        };
        let data = self.args.out.join("data");
        a.json = data.join(format!("{}.json", r.id));
        a.csv = Some(data.join(format!("{}.csv", r.id)));
        if self.args.quick {
            a.ycsb.rows = 20_000;
            a.oltp.items = 2_000;
            a.oltp.customers = 300;
            a.oltp.subscribers = 5_000;
            a.oltp.accounts_per_branch = 2_000;
        }
        Ok(a)
    }

    /// The bench options of run `r` and of each of its variants (databases kept if `keep`).
    fn variants(&self, r: &Run, keep: bool) -> anyhow::Result<(BenchArgs, Vec<Variant>)> {
        let base = self.bench_args(r)?;
        let variants: Vec<Variant> = r
            .vars
            .iter()
            .map(|v| {
                let mut args = base.clone();
                args.scheme = Some(v.schemes.to_vec());
                args.logging = v.logging.to_vec();
                args.keep = keep;
                for f in &v.set {
                    f(&mut args);
                }
                Variant {
                    label: v.label.to_string(),
                    args,
                }
            })
            .collect();
        Ok((base, variants))
    }

    /// The configurations (points of the runs' sweeps) experiment `e` measures, each run
    /// `--repeat` times.
    fn configs(&self, e: &Experiment) -> anyhow::Result<usize> {
        let runs: Vec<&Run> = match &e.body {
            Body::Runs(r) | Body::Recovery { runs: r, .. } | Body::Pipelines { runs: r, .. } => {
                r.iter().collect()
            }
            Body::Sweep { runs, .. } | Body::Breakdown { runs, .. } => {
                runs.iter().map(|(_, r)| r).collect()
            }
            Body::Rewind { .. } => Vec::new(),
        };
        let mut n = 0;
        for r in runs {
            let (_, variants) = self.variants(r, false)?;
            n += bench::variant_points(&variants)
                .with_context(|| format!("experiment {}", r.id))?
                .len();
        }
        Ok(n)
    }

    /// Run `braid bench` over the variants of run `r`; its results are saved under `data/`.
    fn bench(&mut self, r: &Run, keep: bool) -> anyhow::Result<Vec<ConfigResult>> {
        let (base, variants) = self.variants(r, keep)?;
        let context = || format!("experiment {}", r.id);
        let workload = crate::common::workload(base.workload, &base.ycsb, &base.oltp, false)
            .with_context(context)?;
        let points = bench::variant_points(&variants).with_context(context)?;
        let bar = self
            .mp
            .add(ProgressBar::new((points.len() * base.repeat.max(1)) as u64));
        bar.set_style(
            ProgressStyle::with_template("  {msg:28} [{bar:30}] {pos}/{len} runs, {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(r.id.clone());
        let res = bench::measure_variants(&variants, &workload, &points, &self.mp, &bar)
            .with_context(context)?;
        bar.finish_and_clear();
        self.mp.remove(&bar);
        bench::save_quiet(&base, &res)?;
        self.all
            .push(serde_json::json!({ "run": r.id, "x": r.x, "results": res }));
        if !keep {
            self.done.insert(r.id.clone(), res.clone());
        }
        Ok(res)
    }

    /// Run one experiment and write its section with its verdict.
    fn experiment(&mut self, e: &Experiment) -> anyhow::Result<()> {
        let _ = self
            .mp
            .println(format!("{}: {}, {}", e.id, e.paper, e.figure));
        let started = std::time::Instant::now();
        self.section(e);
        let mut m = Measured::default();
        match &e.body {
            Body::Runs(runs) => {
                for r in runs {
                    let res = self.bench(r, false)?;
                    self.table(&res);
                    if let Some(f) = &r.figure {
                        let rows: Vec<(f64, ConfigResult)> =
                            res.iter().map(|c| (0.0, c.clone())).collect();
                        self.figure(f, Data::Results(&rows))?;
                    }
                    m.runs.push((r.id.clone(), r.x, res));
                }
            }
            Body::Sweep { runs, figure } => {
                let mut rows: Vec<(f64, ConfigResult)> = Vec::new();
                for (x, r) in runs {
                    let res = self.bench(r, false)?;
                    // One table per run, named: the swept value is in no column.
                    self.note(&format!("`{}`:", r.id));
                    self.table(&res);
                    rows.extend(res.iter().map(|c| (*x, c.clone())));
                    m.runs.push((r.id.clone(), Some(*x), res));
                }
                self.figure(figure, Data::Results(&rows))?;
            }
            Body::Recovery {
                runs,
                threads,
                plans,
                figure,
            } => {
                for r in runs {
                    let (res, rows) = self.recoveries(r, threads, plans)?;
                    // The logging runs stay beside their recoveries: their scalability proxies
                    // are part of the verdicts' reasons.
                    m.runs.push((r.id.clone(), r.x, res));
                    m.recoveries.extend(rows);
                }
                self.recovery_table(&m.recoveries);
                let sweep = runs.iter().any(|r| r.x.is_some());
                if sweep {
                    let rows: Vec<(f64, ConfigResult)> = m
                        .recoveries
                        .iter()
                        .map(|r| (r.x.unwrap_or(0.0), recovery_as_result(r)))
                        .collect();
                    self.figure(figure, Data::Results(&rows))?;
                } else {
                    self.recovery_bars(figure, &m.recoveries)?;
                }
            }
            Body::Pipelines {
                runs,
                pipelines,
                figure,
            } => {
                for r in runs {
                    let (res, rows) = self.pipeline_recoveries(r, pipelines)?;
                    m.runs.push((r.id.clone(), r.x, res));
                    m.recoveries.extend(rows);
                }
                self.recovery_table(&m.recoveries);
                self.recovery_bars(figure, &m.recoveries)?;
            }
            Body::Breakdown { runs, figure } => {
                let mut rows: Vec<(f64, ConfigResult)> = Vec::new();
                let mut earlier = Vec::new();
                for (x, r) in runs {
                    let res = match self.done.get(&r.id) {
                        Some(res) => {
                            earlier.push(format!("`{}`", r.id));
                            res.clone()
                        }
                        None => {
                            let res = self.bench(r, false)?;
                            self.table(&res);
                            res
                        }
                    };
                    rows.extend(res.iter().map(|c| (*x, c.clone())));
                    m.runs.push((r.id.clone(), Some(*x), res));
                }
                if !earlier.is_empty() {
                    self.note(&format!(
                        "Drawn from the runs {} above (their tables are there).",
                        earlier.join(", ")
                    ));
                }
                self.figure(figure, Data::Results(&rows))?;
            }
            Body::Rewind { plots } => {
                if self.rewind.is_none() {
                    self.rewind = Some(self.run_rewind()?);
                }
                let dir = self.args.out.join("plots");
                let files: Vec<PathBuf> =
                    plots.iter().map(|f| dir.join(format!("{f}.png"))).collect();
                self.note("Tables: `data/rewind.json` (printed by `braid bench rewind`).");
                self.images(&files);
                m.rewind = self.rewind.clone();
            }
        }
        let v = (e.verdict)(&m);
        self.verdict(&v);
        self.all.push(serde_json::json!({
            "experiment": e.id,
            "figure": format!("{}, {}", e.paper, e.figure),
            "claim": e.claim,
            "scaled": e.scaled,
            "verdict": v,
            "recoveries": m.recoveries,
            "seconds": started.elapsed().as_secs_f64(),
        }));
        let _ = self.mp.println(format!(
            "{}: {:.0} s",
            e.id,
            started.elapsed().as_secs_f64()
        ));
        self.verdicts
            .push((format!("{} {}", short_paper(e.paper), e.figure), v));
        Ok(())
    }

    /// A bar per recovered configuration of `rows`, its median.
    fn recovery_bars(&mut self, figure: &plot::Figure, rows: &[RecoveryRow]) -> anyhow::Result<()> {
        let bars: Vec<(String, f64)> = rows
            .iter()
            .map(|r| (recovery_label(r), r.txn_per_s))
            .collect();
        self.figure(figure, Data::Bars(&bars))
    }

    /// Keep the databases of run `r`'s variants, recover each with every thread count (and for
    /// taurus every plan) `repeat` times: the logging run's results, and one row per
    /// recovered configuration, with the median.
    fn recoveries(
        &mut self,
        r: &Run,
        threads: &[usize],
        plans: &[Option<RecoveryPlan>],
    ) -> anyhow::Result<(Vec<ConfigResult>, Vec<RecoveryRow>)> {
        self.recover_each(r, |c| {
            let plans: &[Option<RecoveryPlan>] = if c.scheme == "taurus" { plans } else { &[None] };
            let mut v = Vec::new();
            for &threads in threads {
                for &plan in plans {
                    v.push(Replay {
                        threads,
                        pipeline: None,
                        plan,
                        asked: plan.map(<&str>::from).unwrap_or("").to_string(),
                    });
                }
            }
            v
        })
    }

    /// Keep the databases of run `r`'s variants and recover each `repeat` times with every
    /// (scanners, appliers) pair of `pipelines`: the logging run's results, and one row per
    /// pair (its threads: the appliers; its plan: "N scan, M apply").
    fn pipeline_recoveries(
        &mut self,
        r: &Run,
        pipelines: &[(usize, usize)],
    ) -> anyhow::Result<(Vec<ConfigResult>, Vec<RecoveryRow>)> {
        self.recover_each(r, |_| {
            pipelines
                .iter()
                .map(|&(scan, apply)| Replay {
                    threads: apply,
                    pipeline: Some((scan, apply)),
                    plan: None,
                    asked: pipeline_name(scan, apply),
                })
                .collect()
        })
    }

    /// Keep the databases of run `r`'s variants and recover each `repeat` times in every way
    /// `replays` gives for it: the logging run's results, and one row per way, with the median.
    fn recover_each(
        &mut self,
        r: &Run,
        replays: impl Fn(&ConfigResult) -> Vec<Replay>,
    ) -> anyhow::Result<(Vec<ConfigResult>, Vec<RecoveryRow>)> {
        let res = self.bench(r, true)?;
        let mut rows = Vec::new();
        for c in res.iter().filter(|c| c.scheme != crate::common::NONE) {
            let Some(dir) = c.runs.first().and_then(|run| run.dir.clone()) else {
                continue;
            };
            for rp in replays(c) {
                let (scan, apply) = rp.pipeline.unzip();
                let mut tps = Vec::new();
                let mut last = None;
                for _ in 0..self.repeat() {
                    let st = crate::recover::recover_quiet(
                        Path::new(&dir),
                        rp.threads,
                        scan,
                        apply,
                        rp.plan,
                    )
                    .with_context(|| format!("recovering {dir}"))?;
                    tps.push(st.txn_per_s);
                    last = Some(st);
                }
                let Some(st) = last else { continue };
                rows.push(RecoveryRow {
                    run: r.id.clone(),
                    x: r.x,
                    scheme: c.scheme.clone(),
                    variant: c.variant.clone(),
                    logging: c.logging.clone(),
                    device: c.device.clone(),
                    threads: rp.threads,
                    plan_asked: rp.asked,
                    plan_used: st.plan.clone().unwrap_or_default(),
                    txns: st.txns,
                    txn_per_s: crate::bench::median(&mut tps.clone()),
                    repeats: tps,
                });
            }
            if let Some(parent) = Path::new(&dir).parent() {
                crate::common::remove_databases_in(parent);
            }
        }
        Ok((res, rows))
    }

    /// `braid bench rewind --experiment all` with the peers beside it; its JSON.
    fn run_rewind(&mut self) -> anyhow::Result<serde_json::Value> {
        let dir = self.args.out.join("plots");
        let json = self.args.out.join("data").join("rewind.json");
        let ra = crate::rewind::RewindArgs {
            experiment: crate::rewind::Experiment::All,
            runs: self.repeat(),
            quick: self.args.quick,
            json: json.clone(),
            plot: dir,
            dir: "/dev/shm".into(),
            transactions: None,
            keys: None,
            variants: None,
            threads: Some(rewind::fig9_threads()),
        };
        crate::rewind::run(ra)?;
        let text = std::fs::read_to_string(&json)
            .with_context(|| format!("reading {}", json.display()))?;
        Ok(serde_json::from_str(&text)?)
    }
}

/// One way to recover a database: with `threads` recovery threads, or a gsn pipeline of
/// (scanners, appliers), or a taurus plan; `asked` names it in the tables.
struct Replay {
    threads: usize,
    pipeline: Option<(usize, usize)>,
    plan: Option<RecoveryPlan>,
    asked: String,
}

/// A recovery pipeline of `scan` scanners and `apply` appliers, as a plan's name.
pub(crate) fn pipeline_name(scan: usize, apply: usize) -> String {
    format!("{scan} scan, {apply} apply")
}

/// A recovery configuration's name in plots.
fn recovery_label(r: &RecoveryRow) -> String {
    let mut s = r.scheme.clone();
    for part in [&r.variant, &r.logging] {
        if !part.is_empty() {
            s.push(' ');
            s.push_str(part);
        }
    }
    s.push_str(&format!(" {}t", r.threads));
    if !r.plan_asked.is_empty() {
        s.push_str(&format!(" {}", r.plan_asked));
    }
    s
}

/// A recovery drawn as a bench result (its txn/s and label), for line charts of sweeps.
fn recovery_as_result(r: &RecoveryRow) -> ConfigResult {
    result(&recovery_label(r), "", "", r.threads, r.txn_per_s)
}

/// A bench result with only its configuration and throughput (a recovery in a chart, or a
/// verdict's test).
fn result(
    scheme: &str,
    variant: &str,
    logging: &str,
    threads: usize,
    txn_per_s: f64,
) -> ConfigResult {
    ConfigResult {
        scheme: scheme.to_string(),
        variant: variant.to_string(),
        logging: logging.to_string(),
        threads,
        txn_per_s,
        txn_per_s_min: txn_per_s,
        txn_per_s_max: txn_per_s,
        ..ConfigResult::default()
    }
}

/// "Wang & Johnson" of "Wang & Johnson, VLDB 2014".
fn short_paper(p: &str) -> &str {
    p.split(',').next().unwrap_or(p)
}

/// A report in the making for `args`, nothing run yet.
fn ctx(args: &ReportArgs) -> Ctx<'_> {
    Ctx {
        args,
        mp: MultiProgress::new(),
        md: String::new(),
        all: Vec::new(),
        verdicts: Vec::new(),
        rewind: None,
        done: std::collections::HashMap::new(),
        scaling: None,
    }
}

/// Whether experiment `id` runs: `--only` matches it, and with `--scaling` it is one of the
/// subset's.
fn wanted(args: &ReportArgs, id: &str) -> bool {
    args.only.as_deref().is_none_or(|o| id.contains(o))
        && (!args.scaling || scaling::IDS.contains(&id))
}

pub fn run(mut args: ReportArgs) -> anyhow::Result<()> {
    if let Some(readme) = &args.readme {
        return highlights::write_readme(&args.out, readme);
    }
    std::fs::create_dir_all(args.out.join("data"))
        .with_context(|| format!("creating {}", args.out.display()))?;
    let selected: Vec<Experiment> = experiments::all()
        .into_iter()
        .filter(|e| wanted(&args, e.id))
        .collect();
    let mut plan = None;
    if args.scaling {
        let probe = ctx(&args);
        let configs = selected
            .iter()
            .map(|e| Ok((e.id, probe.configs(e)?)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let p = scaling::Plan::new(configs, args.quick);
        let text = p.text(experiments::cores());
        println!("{text}");
        args.seconds = p.seconds;
        args.repeat = p.repeat;
        plan = Some(text);
    }
    let mut cx = ctx(&args);
    cx.scaling = plan;
    let machine = crate::output::machine();
    let started = std::time::Instant::now();
    for e in &selected {
        cx.experiment(e)?;
    }
    // The runs' parent directory in /dev/shm goes with the last of them (removing a directory
    // that is not empty fails, and is meant to: another report may be running).
    let _ = std::fs::remove_dir(experiments::SHM);
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    let body = std::mem::take(&mut cx.md);
    cx.header(&machine, minutes);
    cx.verdict_table();
    cx.md.push_str(&body);
    cx.limits();
    crate::output::write_text(&args.out.join("summary.md"), &cx.md)?;
    crate::output::write_json(
        &args.out.join("data").join("all.json"),
        &serde_json::json!({
            "machine": machine,
            "quick": args.quick,
            "scaling": cx.scaling,
            "seconds": args.seconds,
            "repeat": cx.repeat(),
            "minutes": minutes,
            "experiments": cx.all,
        }),
    )?;
    println!(
        "report written to {} ({minutes:.1} minutes)",
        args.out.join("summary.md").display()
    );
    Ok(())
}
