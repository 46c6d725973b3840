//! Kill mode: the workload runs in a child process (`braid crash-child`) that reports its
//! intents and acknowledgements as JSON lines ([`super::protocol`]); the parent SIGKILLs it at
//! a random moment, then recovers the directory and checks it.

use std::collections::HashSet;
use std::io::BufReader;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use braid_engine::testing::Env;
use parking_lot::Mutex;
use rand::Rng;
use rand::rngs::SmallRng;

use super::args::{ChildArgs, CrashArgs};
use super::check::recover_and_check;
use super::drive::drive_any;
use super::protocol::{self, Message};
use super::repro;
use crate::common::{self, DeviceKind};
use crate::oracle::{Intent, Verdict};

/// The hidden `crash-child` subcommand: open (create) the database and run until killed.
pub fn child(mut args: ChildArgs) -> anyhow::Result<()> {
    if let Some(id) = args.child_db_id.take() {
        args.crash.engine.db_id = Some(id);
    }
    let workload = args.crash.workload()?;
    let mut opts = args.crash.options()?;
    opts.app = common::app_blob(&*workload);
    let (db, _) = workload.db(&args.db).options(opts).open()?;
    let out = Mutex::new(std::io::stdout());
    // The parent reads what it can; a write that fails (the parent is gone) loses nothing it
    // could check.
    let emit = |m: Message| {
        let _ = m.write_to(&mut *out.lock());
    };
    emit(Message::Ready);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
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
                        &|i: Intent| emit(Message::Intent(i)),
                        &|txn| emit(Message::Ack { txn }),
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
        hs.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("worker panicked")))
        })
    })
}

/// What the child reported before it was killed.
#[derive(Default)]
struct Reported {
    ready: bool,
    intents: Vec<Intent>,
    acked: HashSet<u64>,
}

/// One kill round: start the child on a new database (or on `shared`, the one the previous
/// round was killed in), kill it once it has run a random while, recover and check.
pub fn kill_round(
    args: &CrashArgs,
    round: usize,
    rng: &mut SmallRng,
    shared: Option<&Path>,
) -> anyhow::Result<Verdict> {
    let dir = common::run_dir(args.dir.as_ref(), args.device, "crash")
        .context("creating the round's directory")?;
    let db_dir = shared.map_or_else(|| dir.path().join("db"), Path::to_path_buf);
    // The nats device: the round's database gets an id of its own, and recovery runs in an
    // empty directory, from the cluster alone (the machine is gone with its directory).
    let nats_id =
        (args.device == DeviceKind::Nats).then(|| format!("{}-r{round}", common::new_db_id()));
    let exe = std::env::current_exe().context("finding the braid executable")?;
    let mut cmd = Command::new(exe);
    // The child gets the parent's own options (everything after `crash-test`), so every
    // engine, scheme and workload flag reaches it.
    let forwarded = repro::child_args(args, std::env::args());
    cmd.arg("crash-child")
        .arg("--db")
        .arg(&db_dir)
        .arg("--child-seed")
        .arg((args.seed.wrapping_mul(1_000_003) + round as u64).to_string())
        .args(
            nats_id
                .iter()
                .flat_map(|id| ["--child-db-id".to_string(), id.clone()]),
        )
        .args(&forwarded);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting the crash child")?;
    let stdout = child.stdout.take().context("no child stdout")?;
    let reported: Arc<Mutex<Reported>> = Arc::default();
    let reader = {
        let reported = reported.clone();
        std::thread::spawn(move || {
            protocol::read(BufReader::new(stdout), |m| {
                let mut r = reported.lock();
                match m {
                    Message::Ready => r.ready = true,
                    Message::Intent(i) => r.intents.push(i),
                    Message::Ack { txn } => {
                        r.acked.insert(txn);
                    }
                }
            })
        })
    };
    // Ready, and a first commit acknowledged: the random wait runs from there, so that every
    // round checks at least one acknowledged commit (a kill 5 ms after `Ready` on a loaded
    // machine could come before any, and a round would then check nothing).
    let start = Instant::now();
    while !{
        let r = reported.lock();
        r.ready && !r.acked.is_empty()
    } {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            bail!("crash child exited before acknowledging a commit ({status}): {err}");
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            bail!("crash child did not get ready and acknowledge a commit within 60 s");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let lo = args.min_ms.min(args.max_ms);
    std::thread::sleep(Duration::from_millis(
        rng.gen_range(lo..=args.max_ms.max(lo)),
    ));
    if args.kill_in_checkpoint {
        let found = wait_for_checkpoint_file(&db_dir, &mut child);
        if let Err(e) = found {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    }
    child.kill().context("kill")?;
    let _ = child.wait();
    let _ = reader.join();
    let Reported { intents, acked, .. } = std::mem::take(&mut *reported.lock());
    let v = match &nats_id {
        Some(id) => {
            let mut args = args.clone();
            args.engine.db_id = Some(id.clone());
            recover_and_check(
                &args,
                &dir.path().join("recovered"),
                Env::default(),
                &intents,
                &acked,
            )
        }
        None => recover_and_check(args, &db_dir, Env::default(), &intents, &acked),
    };
    if v.as_ref().map(|v| !v.violations.is_empty()).unwrap_or(true) {
        let kept = dir.keep();
        eprintln!("round {round}: database kept at {}", kept.display());
    }
    v
}

/// Wait until the child is writing a checkpoint while an earlier one is complete: a
/// `checkpoints/*.tmp` file (the new checkpoint's rows being written or sealed; it is renamed
/// into place when done) beside a `checkpoints/*.ckpt`. Recovery then starts from the complete
/// checkpoint and must pass over the half-written one. Waiting for the complete one too, rather
/// than trusting the random wait to outlast the first checkpoint, keeps a loaded machine (whose
/// first checkpoint may still be in progress when the wait ends) from killing every round
/// before any checkpoint exists.
fn wait_for_checkpoint_file(db: &Path, child: &mut std::process::Child) -> anyhow::Result<()> {
    let dir = db.join("checkpoints");
    let start = Instant::now();
    loop {
        let (mut writing, mut complete) = (false, false);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.filter_map(Result::ok) {
                match e.path().extension().and_then(|x| x.to_str()) {
                    Some("tmp") => writing = true,
                    Some("ckpt") => complete = true,
                    _ => {}
                }
            }
        }
        if writing && complete {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            bail!("the crash child exited ({status}) before it wrote a checkpoint");
        }
        if start.elapsed() > Duration::from_secs(30) {
            bail!(
                "--kill-in-checkpoint: the child began no checkpoint after a complete one \
                 within 30 s (in {}); \
                 give it automatic checkpoints (--checkpoint-log-mb, --checkpoint-interval)",
                dir.display()
            );
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}
