//! Command recovery: the live transactions re-executed in parallel, each log in GSN order and
//! each transaction once every other log is replayed up to its replay floor (Taurus's
//! parallel command replay, Xia et al., VLDB 2021, Section 3.3 and Alg. 4, with one GSN per
//! log in place of an LSN vector).
//!
//! Which transactions are live is decided exactly as for data logging (`live.rs`: the bound,
//! the void markers' decisions, the sparse dependencies); only how they are replayed differs.
//! Under command logging a transaction's GSN is above the GSN of every transaction it read from
//! (read-after-write), overwrote (write-after-write) or overwrote a read of (write-after-read,
//! `reads.rs`), and its *replay floor* (`deps.rs`, written by `worker.rs`) is the largest page
//! clock or read GSN it took its GSN above, other than its own raises: every transaction of
//! another log it conflicts with has a GSN at or below the floor. Its own log's are before it
//! in that log.
//!
//! So recovery keeps one pool per log, its records sorted by the GSN each runs at (a log's
//! records are in GSN order; a transaction written as a part and a commit record runs at its
//! commit record's GSN, which is, like the part's, above everything it depends on and below
//! everything that depends on it), and replays them with M threads through Taurus's pools
//! (`taurus/pools.rs`, loom-checked): a thread claims the head of a log (its first record not
//! yet replayed) when every other log's head runs above the record's floor or that log is
//! done; this is Alg. 4's `T.LV <= RLV` with `LV[j]` = the floor for every `j` but the
//! record's own log. The head with the smallest GSN is always ready (its floor is below its
//! GSN, which is at most every other head's), so the replay never stalls. A command written
//! without a floor, and a data record (a transaction that ran no stored procedure: applied as
//! redo), waits for every smaller GSN, as in a serial replay by GSN; two records with equal
//! GSNs do not conflict. One thread (M = 1) replays in GSN order.
//!
//! Departure: Taurus's vector has an entry per log; one floor for all other logs orders a
//! transaction after some it does not conflict with (those of other logs between its real
//! dependencies and its floor), which costs parallelism, never correctness. A floor kept per
//! log would need the page's writer for every write, and a page word names only the last
//! one (`pages.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use super::recovery::{Rec, RecKind, StreamScan};
use crate::WalError;
use crate::scheme::taurus::pools::Pools;
use crate::scheme::{LogKind, RecoveryReport, Replay, replay_failed};

/// One record to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Item {
    /// The GSN it runs at.
    at: u64,
    /// Position in its log's records.
    rec: usize,
    /// Every other log's records up to this GSN run before it.
    after: u64,
}

/// Re-execute the records `take` selects in `scans` (given a record's log) with up to
/// `threads` threads; `commits[txn]` is the commit record's GSN of a transaction whose parts
/// are replayed. Adds the `apply` stage to `report`.
pub(super) fn reexecute(
    scans: &[StreamScan],
    take: &(dyn Fn(usize, &Rec) -> bool + Sync),
    commits: &HashMap<u64, u64>,
    threads: usize,
    replay: &dyn Replay,
    report: &mut RecoveryReport,
) -> Result<(), WalError> {
    let t = Instant::now();
    let pools = pools(scans, take, commits);
    let busy = pools.iter().filter(|p| !p.is_empty()).count();
    let threads = threads.clamp(1, busy.max(1));
    if threads == 1 {
        serial(scans, &pools, replay)?;
    } else {
        parallel(scans, &pools, threads, replay)?;
    }
    report.stages.push(("apply", t.elapsed().as_secs_f64()));
    Ok(())
}

/// Per log, the records to replay in the order they run.
fn pools(
    scans: &[StreamScan],
    take: &(dyn Fn(usize, &Rec) -> bool + Sync),
    commits: &HashMap<u64, u64>,
) -> Vec<Vec<Item>> {
    scans
        .iter()
        .enumerate()
        .map(|(s, sc)| {
            let mut v: Vec<Item> = sc
                .recs
                .iter()
                .enumerate()
                .filter(|(_, r)| take(s, r))
                .map(|(rec, r)| {
                    let at = match r.kind {
                        RecKind::Part => commits.get(&r.txn).copied().unwrap_or(r.gsn),
                        _ => r.gsn,
                    };
                    // A floor is below its GSN as written; a damaged one is held there, so
                    // that the smallest head stays ready.
                    let below = at.saturating_sub(1);
                    let after = r.floor.map_or(below, |f| f.min(below));
                    Item { at, rec, after }
                })
                .collect();
            // Records of one log are in GSN order, and a transaction's parts keep theirs.
            v.sort_unstable();
            v
        })
        .collect()
}

fn apply(scans: &[StreamScan], s: usize, rec: usize, replay: &dyn Replay) -> Result<(), WalError> {
    let r = &scans[s].recs[rec];
    let kind = if r.command {
        LogKind::Command
    } else {
        LogKind::Data
    };
    replay
        .apply(r.txn, kind, &r.payload)
        .map_err(|e| replay_failed(s as u32, r.lsn, r.txn, e))
}

/// One thread: everything in GSN order (equal GSNs by log).
fn serial(scans: &[StreamScan], pools: &[Vec<Item>], replay: &dyn Replay) -> Result<(), WalError> {
    let mut order: Vec<(u64, usize, usize)> = pools
        .iter()
        .enumerate()
        .flat_map(|(s, p)| p.iter().map(move |i| (i.at, s, i.rec)))
        .collect();
    order.sort_unstable();
    for (_, s, rec) in order {
        apply(scans, s, rec, replay)?;
    }
    Ok(())
}

/// `threads` threads over the pools (see the module doc); the first error stops them all.
fn parallel(
    scans: &[StreamScan],
    pools: &[Vec<Item>],
    threads: usize,
    replay: &dyn Replay,
) -> Result<(), WalError> {
    let lens: Vec<usize> = pools.iter().map(Vec::len).collect();
    let total: usize = lens.iter().sum();
    let flags = Pools::new(&lens);
    let finished = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failed: Mutex<Option<WalError>> = Mutex::new(None);
    let n = pools.len();
    // Whether record `k` of log `s` may run: every other log replayed up to its floor.
    let ready = |s: usize, k: usize| {
        let after = pools[s][k].after;
        (0..n).all(|l| {
            if l == s {
                return true;
            }
            let h = flags.head(l);
            h >= lens[l] || pools[l][h].at > after
        })
    };
    std::thread::scope(|sc| {
        for w in 0..threads {
            let (flags, finished, stop, failed, ready) =
                (&flags, &finished, &stop, &failed, &ready);
            sc.spawn(move || {
                let mut idle = 0u32;
                while !stop.load(Ordering::Acquire) && finished.load(Ordering::Acquire) < total {
                    // Only a log's head is claimed (window 1): each log replays in order.
                    let Some((s, k)) = flags.claim_ready(w % n, 1, ready) else {
                        idle += 1;
                        if idle < 64 {
                            std::hint::spin_loop();
                        } else {
                            std::thread::yield_now();
                        }
                        continue;
                    };
                    idle = 0;
                    if let Err(e) = apply(scans, s, pools[s][k].rec, replay) {
                        failed.lock().get_or_insert(e);
                        stop.store(true, Ordering::Release);
                        return;
                    }
                    flags.finish(s, k);
                    finished.fetch_add(1, Ordering::AcqRel);
                }
            });
        }
    });
    match failed.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
