//! `braid crash-test`: crash a running database and prove recovery.
//!
//! * `--mode kill` runs the workload in a child process (`braid crash-child`) and SIGKILLs it at
//!   a random moment; the parent then recovers the directory and checks it ([`kill`]).
//! * `--mode power` runs in-process on simulated hardware (CrashSim persistent memory and the
//!   fault-injecting file system) and cuts power at a random moment, mid-flush included: the
//!   post-crash image holds only what was persisted (pmem: optionally plus a random subset of
//!   unpersisted 8-byte words; files: unsynced writes dropped, torn, or a random subset kept)
//!   ([`power`]).
//!
//! The workload is marked YCSB: every write names its transaction, every transaction declares
//! its intent (keys written, writers read) just before its commit, and reports its commit once
//! acknowledged as durable ([`drive`]). [`crate::oracle`] checks durability, atomicity, closure
//! and the state after recovery, and recovery runs twice to check it is idempotent ([`check`]).
//! `--all` runs the matrix of every combination ([`matrix`]).
//!
//! Every round draws its randomness from the seed and its number alone, so `--seed S --round K`
//! replays round K; every failure report ends with that command line ([`repro`]).

mod args;
mod check;
mod drive;
mod kill;
mod matrix;
mod power;
mod protocol;
mod repro;

use anyhow::{Context as _, ensure};
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::common::{self, DeviceKind, WorkloadKind};

pub use args::{ChildArgs, CrashArgs, CrashKind};
pub use kill::child;

/// What crash-testing one combination found.
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
    /// Power rounds cut by timeout before their persist event (not replayable exactly).
    cuts_by_timeout: usize,
    failures: Vec<String>,
    /// For each failed round (or the combination, if it failed before its rounds), the
    /// `braid crash-test` command line that replays it.
    reproduce: Vec<String>,
}

impl Summary {
    fn new(args: &CrashArgs) -> Summary {
        Summary {
            scheme: if args.engine.gsn.rfa && args.scheme == "gsn" {
                "gsn+rfa".into()
            } else {
                args.scheme.into()
            },
            logging: match args.engine.records {
                braid_engine::log::Records::Update => format!("{}/upd", args.logging.name()),
                braid_engine::log::Records::Txn => args.logging.name().into(),
            },
            device: match args.device {
                DeviceKind::File if args.engine.stripe > 1 => {
                    format!("raid0x{}", args.engine.stripe)
                }
                d => d.name().into(),
            },
            mode: mode_name(args.mode).into(),
            ..Summary::default()
        }
    }
}

fn mode_name(mode: CrashKind) -> &'static str {
    match mode {
        CrashKind::Kill => "kill",
        CrashKind::Power => "power",
    }
}

/// `braid crash-test`: one combination, or the matrix with `--all`. `Ok(false)` if any
/// violation was found.
pub fn run(args: CrashArgs) -> anyhow::Result<bool> {
    if args.all {
        return matrix::run_all(&args);
    }
    let sum = run_one(&args)?;
    if let Some(p) = &args.json {
        crate::output::write_json(p, &serde_json::to_value(&sum)?)?;
    }
    Ok(sum.violations == 0)
}

/// The random source of one round: a function of the seed and the round's number alone, so
/// that `--round` can replay any round by itself.
fn round_rng(seed: u64, round: usize) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ (round as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Report a failed round on stderr: its messages, then the command line that replays it.
fn report_failure(bar: &ProgressBar, round: usize, what: &str, messages: &[String], cmd: &str) {
    bar.suspend(|| {
        for m in messages {
            eprintln!("round {round}: {what} {m}");
        }
        eprintln!("round {round}: reproduce with:");
        eprintln!("{cmd}");
    });
}

/// Crash-test one combination and print its summary line.
pub fn run_one(args: &CrashArgs) -> anyhow::Result<Summary> {
    let args = args.clone();
    ensure!(
        !(args.mode == CrashKind::Kill && args.device == DeviceKind::Null),
        "crash tests need a log device: --device pmem or file"
    );
    ensure!(
        args.device != DeviceKind::Nats || (args.mode == CrashKind::Kill && !args.same_db),
        "the nats device is crash-tested in kill mode (--mode kill), each round on a database \
         of its own recovered into an empty directory (no --same-db)"
    );
    // A configuration no database can be opened with is refused once, here, with the
    // engine's reason, rather than by every child (which would read as violations).
    args.options()?
        .check()
        .context("cannot crash-test this configuration")?;
    ensure!(
        !(args.same_db && args.workload == WorkloadKind::Ycsb),
        "--same-db needs a workload checked by its consistency conditions: --workload tpcc, \
         tatp or tpcb (the YCSB oracle judges one run at a time)"
    );
    ensure!(
        !(args.same_db && args.round.is_some()),
        "--round replays one round on a database of its own; with --same-db replay with \
         --rounds (the rounds before it made its database)"
    );
    let rounds: Vec<usize> = match args.round {
        Some(k) => vec![k],
        None => (0..args.rounds).collect(),
    };
    let bar = ProgressBar::new(rounds.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("crash-test {msg} [{bar:30}] {pos}/{len} rounds, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(format!(
        "{} {} {} {}",
        args.scheme,
        args.logging,
        args.device.name(),
        mode_name(args.mode)
    ));
    let shared = if args.same_db && args.mode == CrashKind::Kill {
        Some(
            common::run_dir(args.dir.as_ref(), args.device, "soak")
                .context("creating the shared directory")?,
        )
    } else {
        None
    };
    let shared_db = shared.as_ref().map(|d| d.path().join("db"));
    let mut sum = Summary::new(&args);
    for round in rounds {
        let mut rng = round_rng(args.seed, round);
        let v = match args.mode {
            CrashKind::Kill => kill::kill_round(&args, round, &mut rng, shared_db.as_deref()),
            CrashKind::Power => power::power_round(&args, round, &mut rng),
        };
        sum.rounds += 1;
        let (what, messages) = match v {
            Ok(v) => {
                sum.acknowledged += v.acknowledged;
                sum.recovered += v.recovered_visible;
                sum.from_checkpoint += v.from_checkpoint as usize;
                sum.violations += v.violations.len();
                sum.cuts_by_timeout += v.cut_by_timeout as usize;
                let mut messages = v.violations;
                if !messages.is_empty() {
                    messages.extend(v.notes);
                }
                ("VIOLATION", messages)
            }
            Err(e) => {
                sum.violations += 1;
                ("FAILED", vec![format!("{e:#}")])
            }
        };
        if !messages.is_empty() {
            let cmd = repro::command(&args, std::env::args(), Some(round));
            report_failure(&bar, round, what, &messages, &cmd);
            sum.failures
                .extend(messages.iter().map(|x| format!("round {round}: {x}")));
            sum.reproduce.push(cmd);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    sum.failures.truncate(100);
    sum.reproduce.truncate(100);
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
    if sum.cuts_by_timeout > 0 {
        println!(
            "  {} of {} power cuts came by timeout before their persist event",
            sum.cuts_by_timeout, sum.rounds
        );
    }
    Ok(sum)
}
