//! `braid crash-test --all`: every (scheme, logging, device) a database can be opened with,
//! and per-update records (`--records update`) for every scheme that logs them, and gsn with
//! Remote Flush Avoidance on files (`--gsn-rfa on`), crash-tested in kill and power modes,
//! with a summary table and the command line that replays each failure.

use std::time::Instant;

use braid_engine::log::{LogKind, LogPlace, Records};

use super::{CrashArgs, CrashKind, Summary, repro, run_one};
use crate::common::DeviceKind;

/// Members of the striped device the matrix tests serial logging on (the Taurus paper's
/// serial logging on RAID-0), and its unit in KiB: small, so group commits cross units.
const RAID_MEMBERS: usize = 3;
const RAID_UNIT_KB: u64 = 4;

/// One combination: scheme, logging, device, RAID-0 members per stream (1: none), the record
/// unit, and gsn's Remote Flush Avoidance.
type Combination = (&'static str, LogKind, DeviceKind, usize, Records, bool);

/// Every (scheme, logging, device) a database can be opened with (under concurrency control
/// `cc`), crash-tested in kill and power modes, and serial logging on RAID-0.
fn matrix(cc: braid_engine::Cc) -> Vec<Combination> {
    let mut out = Vec::new();
    for reg in braid_wal::scheme::SCHEMES {
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
                } && !(device == DeviceKind::Pmem && scheme.pmem_refusal().is_some());
                if fits {
                    out.push((reg.name, logging, device, 1, Records::Txn, false));
                }
                if fits && reg.name == "serial" && device == DeviceKind::File {
                    out.push((reg.name, logging, device, RAID_MEMBERS, Records::Txn, false));
                }
                // Remote Flush Avoidance acknowledges commits by one log's flush: on files,
                // where that differs from waiting for every log.
                let rfa = fits && reg.name == "gsn" && device == DeviceKind::File;
                if rfa {
                    out.push((reg.name, logging, device, 1, Records::Txn, true));
                }
                // Per-update records (data logging; not under MVCC, whose records carry a
                // timestamp drawn at commit).
                if fits
                    && logging == LogKind::Data
                    && cc != braid_engine::Cc::Mvcc
                    && scheme.update_records_refusal().is_none()
                {
                    out.push((reg.name, logging, device, 1, Records::Update, false));
                    if rfa {
                        out.push((reg.name, logging, device, 1, Records::Update, true));
                    }
                }
            }
        }
    }
    out
}

/// The options of one combination of the matrix: `args` with the combination, its mode and
/// its share of the rounds.
fn combination(
    args: &CrashArgs,
    (scheme, logging, device, stripe, records, rfa): Combination,
    mode: CrashKind,
    share: usize,
) -> CrashArgs {
    let mut a = args.clone();
    a.all = false;
    a.scheme = scheme;
    a.logging = logging;
    a.device = device;
    a.engine.records = records;
    a.engine.gsn.rfa = rfa;
    if stripe > 1 {
        a.engine.stripe = stripe;
        a.engine.stripe_kb = RAID_UNIT_KB;
    }
    a.mode = mode;
    a.rounds = match mode {
        CrashKind::Kill => args.kill_rounds.unwrap_or(args.rounds),
        CrashKind::Power => args.power_rounds.unwrap_or(args.rounds),
    }
    .div_ceil(share);
    a
}

pub(super) fn run_all(args: &CrashArgs) -> anyhow::Result<bool> {
    let started = Instant::now();
    let mut rows: Vec<Summary> = Vec::new();
    let all = matrix(args.engine.cc);
    for &c in &all {
        let share = if args.per_scheme {
            all.iter().filter(|x| x.0 == c.0).count()
        } else {
            1
        };
        for mode in [CrashKind::Kill, CrashKind::Power] {
            let a = combination(args, c, mode, share);
            let sum = run_one(&a).unwrap_or_else(|e| {
                let cmd = repro::command(&a, std::env::args(), None);
                eprintln!(
                    "{} {} {} {}: FAILED {e:#}\nreproduce with:\n{cmd}",
                    a.scheme,
                    a.logging.name(),
                    Summary::new(&a).device,
                    super::mode_name(mode)
                );
                Summary {
                    violations: 1,
                    failures: vec![format!("{e:#}")],
                    reproduce: vec![cmd],
                    ..Summary::new(&a)
                }
            });
            rows.push(sum);
        }
    }
    println!();
    println!(
        "{:<8} {:<8} {:<7} {:<6} {:>7} {:>13} {:>11} {:>10}",
        "scheme", "logging", "dev", "mode", "rounds", "acked checked", "from ckpt", "violations"
    );
    for r in &rows {
        println!(
            "{:<8} {:<8} {:<7} {:<6} {:>7} {:>13} {:>11} {:>10}",
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
    // The failures again after the table, each followed by the line that replays it.
    for r in rows.iter().filter(|r| r.violations > 0) {
        eprintln!(
            "{} {} {} {}: {}",
            r.scheme,
            r.logging,
            r.device,
            r.mode,
            r.failures.first().map_or("", String::as_str)
        );
        for cmd in &r.reproduce {
            eprintln!("{cmd}");
        }
    }
    if let Some(p) = &args.json {
        crate::output::write_json(
            p,
            &serde_json::json!({
                "combinations": rows,
                "rounds": rounds,
                "acknowledged": acked,
                "violations": total,
                "seconds": started.elapsed().as_secs_f64(),
                "params": {
                    "cc": args.engine.cc.to_string(),
                    "recovery_threads": args.engine.recovery_threads,
                    "checkpoint_interval_s": args.engine.checkpoint_interval,
                    "kill_rounds": args.kill_rounds,
                    "power_rounds": args.power_rounds,
                    "max_ms": args.max_ms,
                },
                "machine": crate::output::machine(),
            }),
        )?;
    }
    Ok(total == 0)
}
