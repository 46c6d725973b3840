//! `braid crash-test`: crash a running database and prove recovery.
//!
//! * `--mode kill` runs the workload in a child process (`braid crash-child`) and SIGKILLs it at
//!   a random moment; the parent then recovers the directory and checks it.
//! * `--mode power` runs in-process on simulated hardware (CrashSim persistent memory and the
//!   fault-injecting file system) and cuts power at a random moment, mid-flush included: the
//!   post-crash image holds only what was persisted (pmem: optionally plus a random subset of
//!   unpersisted 8-byte words; files: unsynced writes dropped, torn, or a random subset kept).
//!
//! The workload is marked YCSB: every write names its transaction, every transaction declares
//! its intent (keys written, writers read) just before its commit, and reports its commit once
//! acknowledged as durable. [`crate::oracle`] checks durability, atomicity, closure and the state
//! after recovery, and recovery runs twice to check it is idempotent.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use braid_engine::{Db, Env, LogKind, LogPlace, PmemEnv, SimPmem};
use braid_pmem::CrashMode;
use braid_wal::fs::{CrashOpts, FaultFs};
use braid_workloads::Workload;
use braid_workloads::ycsb::{self, Ycsb, YcsbConfig};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::common::{self, DeviceKind, EngineArgs, OltpArgs, WorkloadKind};
use crate::oracle::{self, Intent, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CrashKind {
    /// SIGKILL a child process.
    Kill,
    /// Simulated power failure in-process.
    Power,
}

#[derive(Debug, Clone, Args)]
pub struct CrashArgs {
    /// Scheme under test.
    #[arg(long, default_value = "serial", value_parser = common::scheme_name)]
    pub scheme: &'static str,
    /// data or command.
    #[arg(long, default_value = "data")]
    pub logging: LogKind,
    #[arg(long, value_enum, default_value_t = DeviceKind::Pmem)]
    pub device: DeviceKind,
    #[arg(long, value_enum, default_value_t = CrashKind::Power)]
    pub mode: CrashKind,
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Log streams.
    #[arg(long)]
    pub logs: Option<usize>,
    /// Rows of the (small, contended) YCSB table.
    #[arg(long, default_value_t = 500)]
    pub rows: u64,
    /// Accesses per transaction.
    #[arg(long, default_value_t = 4)]
    pub accesses: usize,
    /// Zipf skew.
    #[arg(long, default_value_t = 0.8)]
    pub theta: f64,
    /// Longest run before the crash, milliseconds (the crash comes at a random time up to it).
    #[arg(long, default_value_t = 300)]
    pub max_ms: u64,
    /// Workload: marked YCSB (full oracle), or TPC-C / TATP / TPC-B (consistency conditions
    /// and idempotence checked after every recovery).
    #[arg(long, value_enum, default_value_t = WorkloadKind::Ycsb)]
    pub workload: WorkloadKind,
    #[command(flatten)]
    pub oltp: OltpArgs,
    /// Parent directory for kill-mode databases.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Run the whole matrix instead: every scheme x logging kind x device x crash mode it
    /// supports (--scheme, --logging, --device and --mode are ignored), with a summary table.
    #[arg(long)]
    pub all: bool,
    /// Kill mode: every round reopens (recovers) and goes on with the database the previous
    /// round was killed in, instead of a new one (TPC-C, TATP, TPC-B; not the YCSB oracle).
    #[arg(long)]
    pub same_db: bool,
    /// Kill mode: shortest run before the kill, milliseconds (the kill comes at a random
    /// time between this and --max-ms).
    #[arg(long, default_value_t = 5)]
    pub min_ms: u64,
    /// With --all: kill rounds per combination (default --rounds).
    #[arg(long)]
    pub kill_rounds: Option<usize>,
    /// With --all: power-failure rounds per combination (default --rounds).
    #[arg(long)]
    pub power_rounds: Option<usize>,
    /// With --all: --kill-rounds and --power-rounds are per scheme, shared out evenly over
    /// that scheme's combinations.
    #[arg(long)]
    pub per_scheme: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl CrashArgs {
    /// The workload under test: marked YCSB, or another workload at the scale given.
    fn workload(&self) -> Result<Arc<dyn Workload>, String> {
        match self.workload {
            WorkloadKind::Ycsb => Ok(Arc::new(Ycsb::new(self.ycsb()))),
            kind => {
                let y = crate::common::YcsbArgs {
                    rows: self.rows,
                    theta: self.theta,
                    read_fraction: 0.5,
                    accesses: self.accesses,
                    columns: 4,
                    column_bytes: 32,
                };
                common::workload(kind, &y, &self.oltp, false)
            }
        }
    }

    fn ycsb(&self) -> YcsbConfig {
        YcsbConfig {
            rows: self.rows,
            columns: 4,
            column_bytes: 32,
            theta: self.theta,
            accesses: self.accesses,
            read_fraction: 0.5,
            marked: true,
        }
    }

    fn options(&self) -> Result<braid_engine::Options, String> {
        let mut o = self.engine.options(
            self.engine.spec(self.scheme)?,
            self.logging,
            self.device,
            self.logs.unwrap_or(self.threads),
            self.threads,
        );
        // Small rings and segments so runs wrap, de-stage and roll segments.
        if let braid_engine::DeviceConfig::Pmem(p) = &mut o.device {
            p.ring_size = p.ring_size.min(1 << 20);
        }
        if let braid_engine::DeviceConfig::File(f) = &mut o.device {
            f.segment_size = f.segment_size.min(256 << 10);
            f.buffer_size = 1 << 20;
        }
        Ok(o)
    }
}

/// Arguments of the hidden child process of kill mode.
#[derive(Debug, Clone, Args)]
pub struct ChildArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    #[arg(long)]
    pub child_seed: u64,
    #[command(flatten)]
    pub crash: CrashArgs,
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Summary {
    scheme: String,
    logging: String,
    device: String,
    mode: String,
    rounds: usize,
    acknowledged: usize,
    recovered: usize,
    violations: usize,
    /// Rounds whose recovery started from a checkpoint.
    from_checkpoint: usize,
    failures: Vec<String>,
}

/// Run one worker of a marked-YCSB crash run until `stop`, reporting intents and acks.
fn drive(
    db: &Db,
    workload: &Ycsb,
    index: usize,
    seed: u64,
    stop: &AtomicBool,
    intent: &(dyn Fn(Intent) + Sync),
    ack: &(dyn Fn(u64) + Sync),
) -> Result<(), String> {
    let mut worker = db.worker().map_err(|e| e.to_string())?;
    let mut client = workload.ycsb_client(index, seed);
    let mut pending: std::collections::VecDeque<(u64, braid_engine::Ticket)> = Default::default();
    while !stop.load(Ordering::Relaxed) {
        client.generate();
        let writes: Vec<u64> = client.written_keys().collect();
        ycsb::take_observed();
        let mut txn_id = 0;
        let params = client.params().to_vec();
        let r = worker.call_hooked(ycsb::YCSB_TXN, &params, &mut |txn| {
            txn_id = txn;
            let reads = ycsb::take_observed()
                .into_iter()
                .map(|o| (o.key, o.writer))
                .collect();
            intent(Intent {
                txn,
                writes: writes.clone(),
                reads,
            });
        });
        match r {
            Ok(t) => pending.push_back((txn_id, t)),
            Err(e) if e.is_retryable() => {}
            Err(e) => return Err(e.to_string()),
        }
        while let Some((id, t)) = pending.front() {
            let block = pending.len() > 64;
            let ok = if block {
                t.wait().map(|_| true)
            } else {
                t.is_durable()
            };
            match ok {
                Ok(true) => {
                    ack(*id);
                    pending.pop_front();
                }
                Ok(false) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(())
}

/// Run one worker of a non-YCSB crash run until `stop`, reporting each acknowledged commit.
fn drive_generic(
    db: &Db,
    workload: &dyn Workload,
    index: usize,
    seed: u64,
    stop: &AtomicBool,
    ack: &(dyn Fn(u64) + Sync),
) -> Result<(), String> {
    let mut worker = db.worker().map_err(|e| e.to_string())?;
    let mut client = workload.client(index, seed);
    let mut pending: std::collections::VecDeque<braid_engine::Ticket> = Default::default();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match client.run_one(&mut worker) {
            Ok(t) => pending.push_back(t),
            Err(e) if e.is_retryable() || matches!(e, braid_engine::TxError::UserAbort(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
        while let Some(t) = pending.front() {
            let ok = if pending.len() > 64 {
                t.wait().map(|_| true)
            } else {
                t.is_durable()
            };
            match ok {
                Ok(true) => {
                    n += 1;
                    // Unique across workers: the worker index in the high bits.
                    ack((index as u64) << 40 | n);
                    pending.pop_front();
                }
                Ok(false) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(())
}

/// Drive `threads` workers of the crash run's workload.
#[allow(clippy::too_many_arguments)]
fn drive_any(
    args: &CrashArgs,
    db: &Db,
    workload: &Arc<dyn Workload>,
    index: usize,
    seed: u64,
    stop: &AtomicBool,
    intent: &(dyn Fn(Intent) + Sync),
    ack: &(dyn Fn(u64) + Sync),
) -> Result<(), String> {
    match args.workload {
        WorkloadKind::Ycsb => drive(db, &Ycsb::new(args.ycsb()), index, seed, stop, intent, ack),
        _ => drive_generic(db, &**workload, index, seed, stop, ack),
    }
}

/// The hidden `crash-child` subcommand: open (create) the database and run until killed.
pub fn child(args: ChildArgs) -> Result<(), String> {
    let workload = args.crash.workload()?;
    let mut opts = args.crash.options()?;
    opts.app = common::app_blob(&*workload);
    let (db, _) = Db::open(
        &args.db,
        opts,
        workload.catalog(),
        workload.procedures(),
        &|l| workload.load(l, &|_| {}),
    )
    .map_err(|e| e.to_string())?;
    let out = Mutex::new(std::io::stdout());
    let emit = |line: String| {
        let mut o = out.lock();
        let _ = o.write_all(line.as_bytes());
        let _ = o.write_all(b"\n");
        let _ = o.flush();
    };
    emit("READY".into());
    let stop = AtomicBool::new(false);
    let result: Result<(), String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..args.crash.threads)
            .map(|i| {
                let (db, workload, stop, emit) = (&db, &workload, &stop, &emit);
                let crash = &args.crash;
                s.spawn(move || {
                    drive_any(
                        crash,
                        db,
                        workload,
                        i,
                        args.child_seed,
                        stop,
                        &|i: Intent| emit(i.to_line()),
                        &|t| emit(format!("A {t}")),
                    )
                })
            })
            .collect();
        // Run at most a minute if nobody kills us.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) && !hs.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        hs.into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|_| Err("worker panicked".into())))
    });
    result
}

/// Recover the database in `dir` on `env` twice, check it, and compare the two recoveries.
fn recover_and_check(
    args: &CrashArgs,
    dir: &Path,
    env: Env,
    intents: &[Intent],
    acked: &HashSet<u64>,
) -> Result<Verdict, String> {
    let cfg = args.ycsb();
    let workload = args.workload()?;
    let mut opts = args.options()?;
    opts.env = env;
    opts.app = common::app_blob(&*workload);
    let open = |opts: braid_engine::Options| {
        Db::open(dir, opts, workload.catalog(), workload.procedures(), &|l| {
            workload.load(l, &|_| {})
        })
        .map_err(|e| format!("recovery failed: {e}"))
    };
    let (db, report) = open(opts.clone())?;
    let mut verdict = if args.workload == WorkloadKind::Ycsb {
        oracle::check(&cfg, &db, intents, acked)
    } else {
        let mut v = Verdict {
            acknowledged: acked.len(),
            ..Verdict::default()
        };
        if let Err(e) = workload.check(&db) {
            v.violations
                .push(format!("consistency after recovery: {e}"));
        }
        v
    };
    verdict.from_checkpoint = report.checkpoint.as_ref().is_some_and(|c| c.epoch > 0);
    let digest1 = digest(&db);
    db.close().map_err(|e| e.to_string())?;
    drop(db);
    let (db2, _) = open(opts)?;
    if digest(&db2) != digest1 {
        verdict
            .violations
            .push("idempotence: a second recovery gave another state".into());
    }
    let _ = db2.close();
    Ok(verdict)
}

/// An order-independent digest of every row of every table.
fn digest(db: &Db) -> u64 {
    let mut acc = 0u64;
    for (t, _) in db.table_names().iter().enumerate() {
        db.for_each_row(braid_engine::TableId(t as u32), |k, img| {
            let mut h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (t as u64) << 56;
            for c in img.chunks(8) {
                let mut b = [0u8; 8];
                b[..c.len()].copy_from_slice(c);
                h = (h ^ u64::from_le_bytes(b)).wrapping_mul(0x100_0000_01B3);
            }
            acc = acc.wrapping_add(h);
        });
    }
    acc
}

/// The parent's own options (everything after `crash-test`), with the combination under test
/// stated explicitly (under `--all` the command line does not name it) and the parent-only
/// flags left out.
fn child_args(args: &CrashArgs) -> Vec<String> {
    const REPLACED: &[&str] = &[
        "--scheme",
        "--logging",
        "--device",
        "--mode",
        "--json",
        "--rounds",
        "--kill-rounds",
        "--power-rounds",
    ];
    let mut out = Vec::new();
    let mut it = std::env::args().skip_while(|a| a != "crash-test").skip(1);
    while let Some(a) = it.next() {
        let name = a.split('=').next().unwrap_or_default();
        if a == "--all" || a == "--per-scheme" {
            continue;
        }
        if REPLACED.contains(&name) {
            if !a.contains('=') {
                it.next();
            }
            continue;
        }
        out.push(a);
    }
    out.extend([
        "--scheme".to_string(),
        args.scheme.to_string(),
        "--logging".to_string(),
        args.logging.name().to_string(),
        "--device".to_string(),
        args.device.name().to_string(),
    ]);
    out
}

fn kill_round(
    args: &CrashArgs,
    round: usize,
    rng: &mut SmallRng,
    shared: Option<&Path>,
) -> Result<Verdict, String> {
    let dir =
        common::run_dir(args.dir.as_ref(), args.device, "crash").map_err(|e| e.to_string())?;
    let db_dir = shared.map_or_else(|| dir.path().join("db"), Path::to_path_buf);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    // The child gets the parent's own options (everything after `crash-test`), so every
    // engine, scheme and workload flag reaches it.
    let forwarded = child_args(args);
    cmd.arg("crash-child")
        .arg("--db")
        .arg(&db_dir)
        .arg("--child-seed")
        .arg((args.seed.wrapping_mul(1_000_003) + round as u64).to_string())
        .args(&forwarded);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let ready = Arc::new(AtomicBool::new(false));
    let reader = {
        let lines = lines.clone();
        let ready = ready.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == "READY" {
                    ready.store(true, Ordering::Release);
                } else {
                    lines.lock().push(line);
                }
            }
        })
    };
    let start = Instant::now();
    while !ready.load(Ordering::Acquire) {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return Err(format!("crash child exited early ({status}): {err}"));
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            return Err("crash child did not get ready within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let lo = args.min_ms.min(args.max_ms);
    std::thread::sleep(Duration::from_millis(
        rng.gen_range(lo..=args.max_ms.max(lo)),
    ));
    child.kill().map_err(|e| format!("kill: {e}"))?;
    let _ = child.wait();
    let _ = reader.join();
    let lines = std::mem::take(&mut *lines.lock());
    let mut intents = Vec::new();
    let mut acked = HashSet::new();
    for l in &lines {
        if let Some(i) = Intent::parse(l) {
            intents.push(i);
        } else if let Some(t) = l.strip_prefix("A ").and_then(|t| t.parse().ok()) {
            acked.insert(t);
        }
    }
    let v = recover_and_check(args, &db_dir, Env::default(), &intents, &acked);
    if v.as_ref().map(|v| !v.violations.is_empty()).unwrap_or(true) {
        let kept = dir.keep();
        eprintln!("round {round}: database kept at {}", kept.display());
    }
    v
}

fn power_round(args: &CrashArgs, round: usize, rng: &mut SmallRng) -> Result<Verdict, String> {
    let workload = args.workload()?;
    let fs = FaultFs::new();
    let sim = SimPmem::new();
    let env = Env {
        fs: Arc::new(fs.clone()),
        pmem: if args.device == DeviceKind::Pmem {
            PmemEnv::Sim(sim.clone())
        } else {
            PmemEnv::Files
        },
    };
    let dir = PathBuf::from(format!("/braid-power/{round}"));
    let mut opts = args.options()?;
    opts.env = env;
    opts.app = common::app_blob(&*workload);
    let (db, _) = Db::open(
        &dir,
        opts,
        workload.catalog(),
        workload.procedures(),
        &|l| workload.load(l, &|_| {}),
    )
    .map_err(|e| format!("open: {e}"))?;
    let intents: Mutex<Vec<Intent>> = Mutex::default();
    let acks: Mutex<HashSet<u64>> = Mutex::default();
    let stop = AtomicBool::new(false);
    let crash_after = Duration::from_micros(rng.gen_range(200..=args.max_ms.max(1) * 1000 / 10));
    let pmem_mode = if rng.gen_bool(0.5) {
        CrashMode::DropUnpersisted
    } else {
        CrashMode::KeepRandom {
            seed: rng.r#gen(),
            keep_probability: 0.5,
        }
    };
    let fs_opts = match rng.gen_range(0..3) {
        0 => CrashOpts::drop_unsynced(),
        1 => CrashOpts::tear_last(rng.r#gen()),
        _ => CrashOpts::keep_subset(rng.r#gen()),
    };
    let seed = args.seed.wrapping_mul(7919) + round as u64;
    let crashed = std::thread::scope(|s| -> Result<(Env, HashSet<u64>), String> {
        let hs: Vec<_> = (0..args.threads)
            .map(|i| {
                let (db, workload, stop, intents, acks) = (&db, &workload, &stop, &intents, &acks);
                s.spawn(move || {
                    drive_any(
                        args,
                        db,
                        workload,
                        i,
                        seed,
                        stop,
                        &|i: Intent| intents.lock().push(i),
                        &|t| {
                            acks.lock().insert(t);
                        },
                    )
                })
            })
            .collect();
        std::thread::sleep(crash_after);
        // Cut power: nothing acknowledged after this instant counts.
        let crashed = {
            let acks = acks.lock();
            // Each region's image is taken atomically (its live and durable images under one
            // lock) at the moment it is crashed; freezing first and crashing later would let
            // random eviction keep stores made after the cut. The file system is cut at the
            // same instant (its operations wait meanwhile).
            let (fs2, pm) = fs.crash_with(fs_opts, || {
                sim.crash(|i| match pmem_mode {
                    CrashMode::KeepRandom {
                        seed,
                        keep_probability,
                    } => CrashMode::KeepRandom {
                        seed: seed.wrapping_add(i as u64),
                        keep_probability,
                    },
                    m => m,
                })
            });
            let pm = pm.map_err(|e| e.to_string())?;
            let env = Env {
                fs: Arc::new(fs2),
                pmem: if args.device == DeviceKind::Pmem {
                    PmemEnv::Sim(pm)
                } else {
                    PmemEnv::Files
                },
            };
            (env, acks.clone())
        };
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            // Workers may fail after the crash (e.g. a frozen device): only pre-crash acks count.
            let _ = h.join();
        }
        Ok(crashed)
    })?;
    let _ = db.close();
    drop(db);
    let intents = std::mem::take(&mut *intents.lock());
    let verdict = recover_and_check(args, &dir, crashed.0, &intents, &crashed.1);
    // Everything of a power-mode run lives on the simulated devices.
    if Path::new("/braid-power").exists() {
        return Err("power mode wrote to the real file system under /braid-power".into());
    }
    verdict
}

/// `braid crash-test`: one combination, or the matrix with `--all`. `Ok(false)` if any
/// violation was found.
pub fn run(args: CrashArgs) -> Result<bool, String> {
    if args.all {
        return run_all(&args);
    }
    let sum = run_one(&args)?;
    if let Some(p) = &args.json {
        crate::output::write_json(p, &serde_json::to_value(&sum).map_err(|e| e.to_string())?)?;
    }
    Ok(sum.violations == 0)
}

/// Every (scheme, logging, device) a database can be opened with (under concurrency control
/// `cc`), crash-tested in kill and power modes.
fn matrix(cc: braid_engine::Cc) -> Vec<(&'static str, LogKind, DeviceKind)> {
    let mut out = Vec::new();
    for reg in braid_engine::SCHEMES {
        let scheme = (reg.default)();
        let place = scheme.log_place();
        if place == LogPlace::Nowhere
            || (cc == braid_engine::Cc::Mvcc && scheme.mvcc_refusal().is_some())
        {
            continue;
        }
        for logging in [LogKind::Data, LogKind::Command] {
            if logging == LogKind::Command && scheme.command_logging_refusal().is_some() {
                continue;
            }
            for device in [DeviceKind::Pmem, DeviceKind::File] {
                let fits = match place {
                    LogPlace::Region => device == DeviceKind::Pmem,
                    LogPlace::NvramFiles => device == DeviceKind::File,
                    LogPlace::Devices | LogPlace::Nowhere => true,
                };
                let scheme = reg.name;
                if fits {
                    out.push((scheme, logging, device));
                }
            }
        }
    }
    out
}

fn run_all(args: &CrashArgs) -> Result<bool, String> {
    let started = Instant::now();
    let mut rows: Vec<Summary> = Vec::new();
    let all = matrix(args.engine.cc);
    for &(scheme, logging, device) in &all {
        let share = if args.per_scheme {
            all.iter().filter(|c| c.0 == scheme).count()
        } else {
            1
        };
        for mode in [CrashKind::Kill, CrashKind::Power] {
            let mut a = args.clone();
            a.all = false;
            a.scheme = scheme;
            a.logging = logging;
            a.device = device;
            a.mode = mode;
            a.rounds = match mode {
                CrashKind::Kill => args.kill_rounds.unwrap_or(args.rounds),
                CrashKind::Power => args.power_rounds.unwrap_or(args.rounds),
            }
            .div_ceil(share);
            let sum = run_one(&a).unwrap_or_else(|e| Summary {
                scheme: scheme.into(),
                logging: logging.name().into(),
                device: device.name().into(),
                mode: format!("{mode:?}").to_lowercase(),
                violations: 1,
                failures: vec![e],
                ..Summary::default()
            });
            rows.push(sum);
        }
    }
    println!();
    println!(
        "{:<8} {:<8} {:<5} {:<6} {:>7} {:>13} {:>11} {:>10}",
        "scheme", "logging", "dev", "mode", "rounds", "acked checked", "from ckpt", "violations"
    );
    for r in &rows {
        println!(
            "{:<8} {:<8} {:<5} {:<6} {:>7} {:>13} {:>11} {:>10}",
            r.scheme,
            r.logging,
            r.device,
            r.mode,
            r.rounds,
            r.acknowledged,
            r.from_checkpoint,
            r.violations
        );
    }
    let total: usize = rows.iter().map(|r| r.violations).sum();
    let rounds: usize = rows.iter().map(|r| r.rounds).sum();
    let acked: usize = rows.iter().map(|r| r.acknowledged).sum();
    println!(
        "crash-test --all: {} combinations, {rounds} rounds, {acked} acknowledged commits checked, {total} violations in {:.0} s",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    if let Some(p) = &args.json {
        crate::output::write_json(
            p,
            &serde_json::json!({
                "combinations": rows,
                "rounds": rounds,
                "acknowledged": acked,
                "violations": total,
                "seconds": started.elapsed().as_secs_f64(),
                "machine": crate::output::machine(),
            }),
        )?;
    }
    Ok(total == 0)
}

/// Crash-test one combination and print its summary line.
pub fn run_one(args: &CrashArgs) -> Result<Summary, String> {
    let args = args.clone();
    if args.mode == CrashKind::Kill && args.device == DeviceKind::Null {
        return Err("crash tests need a log device: --device pmem or file".into());
    }
    // A configuration no database can be opened with is refused once, here, with the
    // engine's reason, rather than by every child (which would read as violations).
    args.options()?
        .check()
        .map_err(|e| format!("cannot crash-test this configuration: {e}"))?;
    let bar = ProgressBar::new(args.rounds as u64);
    bar.set_style(
        ProgressStyle::with_template("crash-test {msg} [{bar:30}] {pos}/{len} rounds, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(
        format!(
            "{} {} {} {:?}",
            args.scheme,
            args.logging,
            args.device.name(),
            args.mode
        )
        .to_lowercase(),
    );
    let mut rng = SmallRng::seed_from_u64(args.seed);
    if args.same_db && args.workload == WorkloadKind::Ycsb {
        return Err(
            "--same-db needs a workload checked by its consistency conditions: --workload tpcc, \
             tatp or tpcb (the YCSB oracle judges one run at a time)"
                .into(),
        );
    }
    let shared = if args.same_db && args.mode == CrashKind::Kill {
        Some(common::run_dir(args.dir.as_ref(), args.device, "soak").map_err(|e| e.to_string())?)
    } else {
        None
    };
    let shared_db = shared.as_ref().map(|d| d.path().join("db"));
    let mut sum = Summary {
        scheme: args.scheme.into(),
        logging: args.logging.name().into(),
        device: args.device.name().into(),
        mode: format!("{:?}", args.mode).to_lowercase(),
        ..Summary::default()
    };
    for round in 0..args.rounds {
        let v = match args.mode {
            CrashKind::Kill => kill_round(&args, round, &mut rng, shared_db.as_deref()),
            CrashKind::Power => power_round(&args, round, &mut rng),
        };
        sum.rounds += 1;
        match v {
            Ok(v) => {
                sum.acknowledged += v.acknowledged;
                sum.recovered += v.recovered_visible;
                sum.from_checkpoint += v.from_checkpoint as usize;
                if !v.violations.is_empty() {
                    sum.violations += v.violations.len();
                    for x in &v.violations {
                        bar.suspend(|| eprintln!("round {round}: VIOLATION {x}"));
                    }
                    sum.failures.extend(
                        v.violations
                            .into_iter()
                            .map(|x| format!("round {round}: {x}")),
                    );
                }
            }
            Err(e) => {
                sum.violations += 1;
                bar.suspend(|| eprintln!("round {round}: FAILED {e}"));
                sum.failures.push(format!("round {round}: {e}"));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    sum.failures.truncate(100);
    println!(
        "crash-test {} {} {} on {} ({}): {} rounds, {} acknowledged commits checked, {} visible recovered writers, {} violations",
        format!("{:?}", args.workload).to_lowercase(),
        sum.scheme,
        sum.logging,
        sum.device,
        sum.mode,
        sum.rounds,
        sum.acknowledged,
        sum.recovered,
        sum.violations
    );
    if sum.from_checkpoint > 0 {
        println!(
            "  {} of {} recoveries started from a checkpoint",
            sum.from_checkpoint, sum.rounds
        );
    }
    Ok(sum)
}
