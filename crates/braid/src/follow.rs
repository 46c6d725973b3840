//! `braid follow` and `braid promote`: a hot standby of a database on the nats device, and the
//! request that makes it take over.
//!
//! `braid follow --nats-url URL --db-id ID --dir DIR` takes `braid.json` and the newest
//! checkpoint from the cluster, then replays the writer's log in rounds as it grows
//! ([`braid_engine::Standby`]), reporting the lag of each message (from the time the cluster
//! stored it to the end of the round that made it visible). On `braid promote` (or after
//! `--promote-after` seconds) it fences the old writer, recovers what it had not replayed,
//! commits the workload's transactions for `--then-run` seconds as the new writer, answers the
//! request with what it measured, and checks the workload's invariants.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use braid_engine::{Db, Standby};
use clap::Args;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use braid_lab::common::{self, EngineArgs};
use braid_lab::recover::{meta_from_cluster, reopen_options};

#[derive(Debug, Clone, Args)]
pub struct FollowArgs {
    /// The standby's local directory (empty, or a standby's earlier one).
    #[arg(long)]
    pub dir: PathBuf,
    /// Stop following after this many seconds, unless promoted before.
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// Pause after a round that found nothing new, ms.
    #[arg(long, default_value_t = 5)]
    pub idle_ms: u64,
    /// Promote itself after this many seconds (as if `braid promote` had asked).
    #[arg(long)]
    pub promote_after: Option<f64>,
    /// After promotion, run the workload as the new writer for this many seconds.
    #[arg(long, default_value_t = 2.0)]
    pub then_run: f64,
    /// Threads replaying each round.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct PromoteArgs {
    /// How long to wait for the standby to take over and commit, seconds.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// What a standby measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FollowStats {
    pub scheme: String,
    pub streams: usize,
    pub db_id: String,
    pub rounds: u64,
    /// Times the standby fell behind the writer's purges and started again from the newest
    /// checkpoint.
    pub restarts: u64,
    pub txns_replayed: u64,
    pub bytes_read: u64,
    pub followed_seconds: f64,
    /// Seconds the rounds spent reading the streams, and replaying (readers waiting).
    pub read_seconds: f64,
    pub replay_seconds: f64,
    /// Messages stored after the standby started and made visible, and their lag (stored by
    /// the cluster -> visible on the standby), microseconds.
    pub messages: u64,
    pub lag_p50_us: f64,
    pub lag_p99_us: f64,
    pub lag_max_us: f64,
    pub promoted: bool,
    /// From the promote request to the database open as the writer, seconds.
    pub promote_seconds: Option<f64>,
    /// From the promote request to the first commit acknowledged as the writer, seconds.
    pub first_commit_seconds: Option<f64>,
    /// Transactions promotion replayed (what the last round had not).
    pub promote_replayed: Option<u64>,
    /// Commits as the new writer during `--then-run`.
    pub commits_after: u64,
    pub consistency: Option<String>,
}

pub fn run(args: FollowArgs) -> anyhow::Result<()> {
    let meta = meta_from_cluster(&args.engine)?;
    let workload = common::workload_from_app(&meta.app)?;
    let db_id = args.engine.db_id.clone().unwrap_or_default();
    let url = args.engine.nats_url.clone().unwrap_or_default();
    let control = braid_nats::Cluster::connect(braid_nats::NatsConfig::new(&url, &db_id))?;
    let mut requests = braid_nats::control::PromoteRequests::listen(std::sync::Arc::new(control))?;
    let open = || -> anyhow::Result<Standby> {
        let (opts, _) = reopen_options(&meta, &args.engine, args.threads)?;
        workload
            .db(&args.dir)
            .options(opts)
            .standby()
            .context("opening the standby")
    };
    let mut standby = open()?;
    let mut st = FollowStats {
        scheme: meta.scheme.clone(),
        streams: meta.streams,
        db_id: db_id.clone(),
        ..FollowStats::default()
    };
    let mut lag = Histogram::<u64>::new(3)?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} following {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let start = Instant::now();
    let started_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let until = Duration::from_secs_f64(args.seconds.max(0.0));
    let promote_at = args.promote_after.map(Duration::from_secs_f64);
    let mut request = None;
    while start.elapsed() < until {
        if let Some(r) = requests.take() {
            request = Some(r);
            break;
        }
        if promote_at.is_some_and(|p| start.elapsed() >= p) {
            break;
        }
        let r = match standby.catch_up() {
            Ok(r) => r,
            // The writer's checkpoints purged what this standby had not replayed: start again
            // from the newest checkpoint.
            Err(braid_engine::EngineError::Wal(braid_engine::log::WalError::Behind { .. })) => {
                drop(standby);
                standby = open()?;
                st.restarts += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        st.rounds += 1;
        st.txns_replayed += r.txns;
        st.bytes_read += r.bytes_read;
        st.read_seconds += r.read_seconds;
        st.replay_seconds += r.replay_seconds;
        // The backlog written before the standby started is not lag.
        for &(stored, l) in &r.lag_us {
            if stored >= started_ns {
                lag.record(l)?;
            }
        }
        bar.set_message(format!(
            "{db_id}: {} rounds, {} txns, lag p50 {:.1} ms",
            st.rounds,
            st.txns_replayed,
            lag.value_at_quantile(0.5) as f64 / 1e3
        ));
        bar.tick();
        if r.bytes_read == 0 {
            std::thread::sleep(Duration::from_millis(args.idle_ms));
        }
    }
    bar.finish_and_clear();
    st.followed_seconds = start.elapsed().as_secs_f64();
    st.messages = lag.len();
    st.lag_p50_us = lag.value_at_quantile(0.5) as f64;
    st.lag_p99_us = lag.value_at_quantile(0.99) as f64;
    st.lag_max_us = lag.max() as f64;
    let promote = request.is_some() || promote_at.is_some_and(|p| start.elapsed() >= p);
    if promote {
        let asked = Instant::now();
        let (db, report) = standby.promote().context("promoting the standby")?;
        st.promoted = true;
        st.promote_seconds = Some(asked.elapsed().as_secs_f64());
        st.promote_replayed = Some(report.recovery.txns);
        let (commits, first) = run_workload(&db, &*workload, args.then_run)?;
        st.first_commit_seconds = first.map(|f| (f - asked).as_secs_f64());
        st.commits_after = commits;
        st.consistency = workload.check(&db).err().map(|e| e.to_string());
        if let Some(r) = request {
            requests.answer(r, &summary(&st))?;
        }
        db.close()?;
    }
    println!("{}", summary(&st));
    if let Some(p) = &args.json {
        braid_lab::output::write_json(
            p,
            &serde_json::json!({ "follow": st, "machine": braid_lab::output::machine() }),
        )?;
    }
    if let Some(e) = &st.consistency {
        anyhow::bail!("the promoted database fails its workload's check: {e}");
    }
    Ok(())
}

/// Commit the workload's transactions for `seconds`; returns the commits and when the first
/// was acknowledged.
fn run_workload(
    db: &Db,
    workload: &dyn braid_workloads::Workload,
    seconds: f64,
) -> anyhow::Result<(u64, Option<Instant>)> {
    let mut client = workload.client(0, 0x5eed_f011);
    let mut worker = db.worker()?;
    let until = Instant::now() + Duration::from_secs_f64(seconds.max(0.0));
    let mut commits = 0u64;
    let mut first = None;
    loop {
        match client.run_one(&mut worker) {
            Ok(()) => {
                commits += 1;
                first.get_or_insert_with(Instant::now);
            }
            // A conflict, or an abort the workload asks for (TPC-C's invalid items).
            Err(e) if e.is_retryable() || matches!(e, braid_engine::TxError::UserAbort { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        if Instant::now() >= until && first.is_some() {
            return Ok((commits, first));
        }
    }
}

fn summary(st: &FollowStats) -> String {
    let mut s = format!(
        "followed {} ({} on {} streams) for {:.1} s: {} rounds ({} restarts from a checkpoint), \
         {} transactions replayed, {:.1} MB read; {:.1} s reading, {:.1} s replaying; lag of \
         the {} messages written since it started: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        st.db_id,
        st.scheme,
        st.streams,
        st.followed_seconds,
        st.rounds,
        st.restarts,
        st.txns_replayed,
        st.bytes_read as f64 / 1e6,
        st.read_seconds,
        st.replay_seconds,
        st.messages,
        st.lag_p50_us / 1e3,
        st.lag_p99_us / 1e3,
        st.lag_max_us / 1e3
    );
    if st.promoted {
        s.push_str(&format!(
            "\npromoted: writer in {:.3} s ({} transactions replayed at promotion), first \
             commit {:.3} s after the request, {} commits as the new writer",
            st.promote_seconds.unwrap_or(0.0),
            st.promote_replayed.unwrap_or(0),
            st.first_commit_seconds.unwrap_or(0.0),
            st.commits_after
        ));
    }
    s
}

/// `braid promote`: ask the standby of `--db-id` to take over, print its answer.
pub fn promote(args: PromoteArgs) -> anyhow::Result<()> {
    let url = args
        .engine
        .nats_url
        .clone()
        .context("braid promote needs --nats-url")?;
    let id = args
        .engine
        .db_id
        .clone()
        .context("braid promote needs --db-id")?;
    let c = braid_nats::Cluster::connect(braid_nats::NatsConfig::new(&url, &id))?;
    let asked = Instant::now();
    let answer = braid_nats::control::request_promote(&c, Duration::from_secs_f64(args.timeout))?;
    println!("{answer}");
    println!(
        "(answered {:.3} s after the request)",
        asked.elapsed().as_secs_f64()
    );
    Ok(())
}
