//! `braid recover`: recover a database directory left by a run (`braid bench --keep`) or a
//! crash, and report how fast the log was replayed.
//!
//! `--threads` sets the recovery threads; for the gsn pipeline (Wang & Johnson Sec. 3.2)
//! `--scan-threads N` and `--apply-threads M` set its scanners and appliers apart (each
//! defaulting to `--threads`), and the stages the planner timed are printed.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use braid_engine::{
    EngineError, Meta, Options,
    log::{LogKind, SchemeSpec},
};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::common::{self, DeviceKind, EngineArgs};

#[derive(Debug, Clone, Args)]
pub struct RecoverArgs {
    /// The database directory.
    #[arg(long)]
    pub dir: PathBuf,
    /// Threads replaying the log (gsn: the default of --scan-threads and --apply-threads).
    #[arg(long, default_value_t = Options::default().recovery_threads)]
    pub threads: usize,
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep the valid prefix before mid-log corruption instead of refusing to open.
    #[arg(long)]
    pub salvage: bool,
    /// Recover a copy in memory and write nothing: works while another process writes the
    /// database (which a plain recover refuses), and trims, creates and locks nothing.
    #[arg(long)]
    pub read_only: bool,
    /// The database's log device, for a directory that holds no database yet: `nats` recovers
    /// the database `--db-id` from the cluster at `--nats-url` into it (a database killed with
    /// its machine). Otherwise the device `braid.json` records.
    #[arg(long, value_enum)]
    pub device: Option<DeviceKind>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// What one recovery measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RecoveryStats {
    pub scheme: String,
    pub streams: usize,
    pub device: String,
    pub threads: usize,
    /// gsn: N scanners and M appliers of the pipeline (None for other schemes).
    pub scan_threads: Option<usize>,
    pub apply_threads: Option<usize>,
    pub txns: u64,
    pub records: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub txn_per_s: f64,
    pub records_per_s: f64,
    pub gb_per_s: f64,
    pub load_seconds: f64,
    /// Seconds per stage, where the scheme's planner times them (gsn).
    pub stages: Vec<(String, f64)>,
    /// taurus: how the log was replayed (`parallel`, or `serial` for the fallback).
    pub plan: Option<String>,
    /// What the recovery's devices emulate (the device speed recorded in braid.json among
    /// it: an emulated device is read back at its speed).
    pub emulation: Option<String>,
}

/// The pipeline's (N, M) for a scheme whose recovery is a scan/apply pipeline (its options
/// name `scan_threads` and `apply_threads`, 0 meaning the recovery threads), as the scheme
/// will resolve them; None for other schemes.
fn pipeline(spec: &SchemeSpec, threads: usize) -> (Option<usize>, Option<usize>) {
    let opts = spec.options();
    let get = |key: &str| {
        opts.iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    let t = threads.max(1);
    let pick = |x: Option<usize>| x.map(|v| if v == 0 { t } else { v });
    (pick(get("scan_threads")), pick(get("apply_threads")))
}

/// The concurrency control to recover with: multi-versioning is a property of the database
/// (its records carry commit timestamps), so it follows what the database was created with.
fn cc_for(mvcc: bool, asked: braid_engine::Cc) -> braid_engine::Cc {
    match (mvcc, asked) {
        (true, _) => braid_engine::Cc::Mvcc,
        (false, braid_engine::Cc::Mvcc) => braid_engine::Cc::TwoPl,
        (false, cc) => cc,
    }
}

/// The device kind `braid.json` records.
fn device_of(meta: &Meta) -> DeviceKind {
    match meta.device.as_str() {
        "pmem" => DeviceKind::Pmem,
        "file" => DeviceKind::File,
        "nats" => DeviceKind::Nats,
        _ => DeviceKind::Null,
    }
}

/// `braid.json` of the database to recover: the directory's own, or, for `--device nats` and
/// a directory without one, the copy kept in the cluster.
fn read_meta(args: &RecoverArgs) -> anyhow::Result<Meta> {
    if args.device != Some(DeviceKind::Nats) || args.dir.join("braid.json").exists() {
        return Ok(Meta::read(&args.dir)?);
    }
    meta_from_cluster(&args.engine)
}

/// `braid.json` of the database `--db-id` as kept on the cluster at `--nats-url`.
pub fn meta_from_cluster(engine: &EngineArgs) -> anyhow::Result<Meta> {
    let url = engine
        .nats_url
        .clone()
        .context("a database on a NATS cluster needs --nats-url")?;
    let id = engine.db_id.clone().context(
        "a database on a NATS cluster needs --db-id (the id the database was created with)",
    )?;
    let factory = braid_nats::NatsFactory::new(braid_nats::NatsConfig::new(&url, &id));
    let bytes = braid_engine::DeviceFactory::load_meta(&factory)?
        .with_context(|| format!("the cluster at {url} holds no database {id}"))?;
    serde_json::from_slice(&bytes).with_context(|| format!("braid.json of {id} in the cluster"))
}

/// The options that reopen the database `meta` describes, with `threads` recovery threads,
/// and its workload.
pub fn reopen_options(
    meta: &Meta,
    engine: &EngineArgs,
    threads: usize,
) -> anyhow::Result<(braid_engine::Options, SchemeSpec)> {
    let logging: LogKind = meta.logging.parse().map_err(anyhow::Error::msg)?;
    let device = device_of(meta);
    let mut engine = engine.clone();
    engine.nats_from_location(meta.location.as_deref());
    if let Some(r) = meta.ring_size {
        engine.ring_mb = (r >> 20).max(1);
    }
    if let Some(s) = meta.segment_size {
        engine.segment_mb = (s >> 20).max(1);
    }
    engine.recovery_threads = threads;
    let spec = engine.spec(&meta.scheme)?;
    let mut opts = engine.options(spec.clone(), logging, device, meta.streams, 1);
    if let (Some(r), braid_engine::DeviceConfig::Pmem(p)) = (meta.ring_size, &mut opts.device) {
        p.ring_size = r;
    }
    if let (Some(s), braid_engine::DeviceConfig::File(f)) = (meta.segment_size, &mut opts.device) {
        f.segment_size = s;
    }
    opts.app = meta.app.clone();
    opts.cc = cc_for(meta.mvcc, opts.cc);
    Ok((opts, spec))
}

pub fn run(args: RecoverArgs) -> anyhow::Result<()> {
    let meta = read_meta(&args)?;
    let workload = common::workload_from_app(&meta.app)?;
    let (mut opts, spec) = reopen_options(&meta, &args.engine, args.threads)?;
    if args.salvage {
        opts.scan_mode = braid_wal::scan::ScanMode::Salvage;
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {bytes} of log read, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(format!(
        "recovering {} ({} {})",
        args.dir.display(),
        meta.scheme,
        meta.device
    ));
    let b = bar.clone();
    let start = Instant::now();
    let writer = braid_engine::Db::writer_pid(&args.dir);
    let (db, report) = if args.read_only {
        workload.db(&args.dir).options(opts).open_read_only()?
    } else {
        workload
            .db(&args.dir)
            .options(opts)
            .progress(&move |n| b.inc(n))
            .open()
            .map_err(in_use_hint)?
    };
    let total = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let r = &report.recovery;
    let secs = r.seconds.max(1e-9);
    let (scan_threads, apply_threads) = pipeline(&spec, args.threads);
    println!(
        "recovered {}: scheme {}, {} streams, device {}",
        args.dir.display(),
        meta.scheme,
        meta.streams,
        meta.device
    );
    if let Some(e) = db.emulation() {
        println!("  emulation:     {e}");
    }
    if args.read_only {
        println!(
            "  read-only:     recovered a copy in memory of what was durable when read; nothing \
             written or locked ({})",
            match writer {
                Some(pid) => format!("process {pid} is writing the database"),
                None => "no process had it open".to_string(),
            }
        );
    }
    match &report.checkpoint {
        Some(c) if c.epoch > 0 => println!(
            "  checkpoint:    {} (epoch {}): {} rows, {:.1} MB loaded with {} threads in {:.3} s",
            c.path.display(),
            c.epoch,
            c.rows,
            c.bytes as f64 / 1e6,
            c.threads,
            c.seconds
        ),
        _ => println!(
            "  initial image: {} rows rebuilt by the loader in {:.3} s (no checkpoint)",
            report.rows_loaded, report.load_seconds
        ),
    }
    if let Some(c) = &report.checkpoint {
        for f in &c.fallbacks {
            println!("  skipped a damaged checkpoint: {f}");
        }
    }
    if let (Some(n), Some(m)) = (scan_threads, apply_threads) {
        println!("  gsn pipeline:  {n} scan threads, {m} apply threads");
    }
    println!(
        "  log replay:    {} transactions ({} records, {} skipped, {} already in the checkpoint), {:.1} MB read in {:.3} s: {:.0} txn/s, {:.3} GB/s",
        r.txns,
        r.records,
        r.skipped,
        r.covered,
        r.bytes as f64 / 1e6,
        r.seconds,
        r.txns as f64 / secs,
        r.bytes as f64 / secs / 1e9
    );
    println!("  records:       {:.0} records/s", r.records as f64 / secs);
    if !r.stages.is_empty() {
        let st: Vec<String> = r
            .stages
            .iter()
            .map(|(name, s)| format!("{name} {s:.3} s"))
            .collect();
        println!("  stages:        {}", st.join(", "));
    }
    for (i, e) in r.ends.iter().enumerate() {
        println!("  stream {i}: {e}");
    }
    let consistency = workload.check(&db).err().map(|e| e.to_string());
    if let Some(e) = &consistency {
        println!("  consistency check FAILED: {e}");
    }
    println!("  total {:.3} s", total);
    if let Some(p) = &args.json {
        crate::output::write_json(
            p,
            &serde_json::json!({
                "dir": args.dir.display().to_string(),
                "scheme": meta.scheme,
                "streams": meta.streams,
                "device": meta.device,
                "emulation": db.emulation(),
                "read_only": args.read_only,
                "threads": args.threads,
                "scan_threads": scan_threads,
                "apply_threads": apply_threads,
                "txns": r.txns,
                "records": r.records,
                "bytes": r.bytes,
                "seconds": r.seconds,
                "txn_per_s": r.txns as f64 / secs,
                "records_per_s": r.records as f64 / secs,
                "stages": r.stages.iter().map(|(n, s)| serde_json::json!({ "stage": n, "seconds": s })).collect::<Vec<_>>(),
                "gb_per_s": r.bytes as f64 / secs / 1e9,
                "load_seconds": report.load_seconds,
                "checkpoint": report.checkpoint,
                "covered": r.covered,
                "consistency": consistency,
                "machine": crate::output::machine(),
            }),
        )?;
    }
    let _ = db.close();
    Ok(())
}

/// Recover `dir` quietly with `threads` replay threads (for `braid report`); for gsn,
/// `scan_threads` and `apply_threads` (N and M of its pipeline) default to `threads`.
pub fn recover_quiet(
    dir: &std::path::Path,
    threads: usize,
    scan_threads: Option<usize>,
    apply_threads: Option<usize>,
    plan: Option<braid_wal::scheme::RecoveryPlan>,
) -> anyhow::Result<RecoveryStats> {
    let meta = Meta::read(dir)?;
    let workload = common::workload_from_app(&meta.app)?;
    let logging: LogKind = meta.logging.parse().map_err(anyhow::Error::msg)?;
    let device = device_of(&meta);
    let mut engine = <EngineArgs as clap::FromArgMatches>::from_arg_matches(
        &<EngineArgs as clap::Args>::augment_args(clap::Command::new("x")).get_matches_from(["x"]),
    )?;
    engine.gsn.scan_threads = scan_threads.unwrap_or(0);
    engine.gsn.apply_threads = apply_threads.unwrap_or(0);
    if let Some(p) = plan {
        engine.taurus_recovery = p;
    }
    engine.nats_from_location(meta.location.as_deref());
    let spec = engine.spec(&meta.scheme)?;
    let mut opts = engine.options(spec.clone(), logging, device, meta.streams, 1);
    opts.recovery_threads = threads;
    if let (Some(r), braid_engine::DeviceConfig::Pmem(p)) = (meta.ring_size, &mut opts.device) {
        p.ring_size = r;
    }
    if let (Some(s), braid_engine::DeviceConfig::File(f)) = (meta.segment_size, &mut opts.device) {
        f.segment_size = s;
    }
    if let (Some((n, unit)), braid_engine::DeviceConfig::File(f)) = (meta.stripe, &mut opts.device)
    {
        f.stripe = n;
        f.stripe_unit = unit;
    }
    opts.app = meta.app.clone();
    opts.cc = cc_for(meta.mvcc, opts.cc);
    let (db, report) = workload.db(dir).options(opts).open().map_err(in_use_hint)?;
    let emulation = db.emulation();
    let _ = db.close();
    let r = &report.recovery;
    let secs = r.seconds.max(1e-9);
    let (scan_threads, apply_threads) = pipeline(&spec, threads);
    Ok(RecoveryStats {
        scheme: meta.scheme.clone(),
        streams: meta.streams,
        device: meta.device.clone(),
        threads,
        scan_threads,
        apply_threads,
        txns: r.txns,
        records: r.records,
        bytes: r.bytes,
        seconds: r.seconds,
        txn_per_s: r.txns as f64 / secs,
        records_per_s: r.records as f64 / secs,
        gb_per_s: r.bytes as f64 / secs / 1e9,
        load_seconds: report.load_seconds,
        stages: r
            .stages
            .iter()
            .map(|(n, s)| ((*n).to_string(), *s))
            .collect(),
        plan: r.plan.map(str::to_string),
        emulation,
    })
}

/// An open refused because another process writes the database, with what this command offers
/// for reading it meanwhile; any other error as it is.
fn in_use_hint(e: EngineError) -> anyhow::Error {
    let hint = matches!(e, EngineError::InUse { .. });
    let e = anyhow::Error::new(e);
    if hint {
        e.context(
            "recovering needs the database to itself; read it meanwhile with \
             `braid recover --read-only` or `braid inspect`",
        )
    } else {
        e
    }
}
