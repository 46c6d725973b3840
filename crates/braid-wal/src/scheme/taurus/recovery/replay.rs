//! Replay of a pipelined Taurus recovery (Alg. 4 and the serial fallback of Section 3.5),
//! over the admitted prefixes a [`Feed`] publishes while the streams are still being read:
//! parallel workers over the lock-free pools of [`super::super::pools`], the serial order,
//! and the planner that picks between them. See `recovery.rs` for why running admitted
//! records early is safe.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use super::super::pools::Heads;
use super::feed::{Feed, View};
use super::{MIN_PARALLELISM, SAMPLE, STUCK_ROUNDS, WINDOW};
use crate::lv::{self, MAX_STREAMS};
use crate::scheme::{RecoveryPlan, Replay, replay_failed};
use crate::{Lsn, WalError};

/// How long a parallel worker of the final cut waits, with nobody replaying and nothing
/// ready, before it counts one stuck look ([`STUCK_ROUNDS`] of them end the replay as a
/// dependency cycle). Only a damaged log waits this out: any finished record or publication
/// notifies the feed's `Progress`.
const STUCK_LOOK: Duration = Duration::from_millis(1);

/// When the first record was applied (nanoseconds after `started`, 0 while none was).
pub(crate) struct FirstApply {
    started: Instant,
    at: AtomicU64,
}

impl FirstApply {
    pub(crate) fn new(started: Instant) -> FirstApply {
        FirstApply {
            started,
            at: AtomicU64::new(0),
        }
    }
    #[inline]
    fn mark(&self) {
        if self.at.load(Ordering::Relaxed) == 0 {
            let ns = self.started.elapsed().as_nanos().max(1) as u64;
            let _ = self
                .at
                .compare_exchange(0, ns, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
    /// Seconds after the start of recovery, if a record was applied.
    pub(crate) fn seconds(&self) -> Option<f64> {
        match self.at.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(ns as f64 / 1e9),
        }
    }
}

pub(crate) fn cycle_error() -> WalError {
    WalError::WrongLog(crate::WrongLog::DependencyCycle)
}

fn apply(
    v: &View,
    s: usize,
    k: usize,
    replay: &dyn Replay,
    first: &FirstApply,
) -> Result<(), WalError> {
    let r = v.rec(s, k);
    first.mark();
    replay
        .apply(r.txn, r.kind, v.payload(s, k))
        .map_err(|e| replay_failed(s as u32, r.start, r.txn, e))
}

/// A fresh view if the feed published since `ver`.
#[inline]
fn refresh(feed: &Feed, ver: &mut u64, view: &mut Arc<View>) {
    let v = feed.version();
    if v != *ver {
        *ver = v;
        *view = feed.view();
    }
}

/// One pass of the serial order over `v` from `cur` (pools in turn, each while its next
/// admitted record is ready), calling `visit` for each record, at most `limit` records.
/// Returns how many were visited.
fn serial_pass(
    v: &View,
    cur: &mut [usize],
    limit: usize,
    mut visit: impl FnMut(usize, usize, &[usize]) -> Result<(), WalError>,
) -> Result<usize, WalError> {
    let n = v.n;
    let mut rlv = [0 as Lsn; MAX_STREAMS];
    let mut done = 0usize;
    for s in 0..n {
        while cur[s] < v.admitted[s] && done < limit {
            for (j, r) in rlv[..n].iter_mut().enumerate() {
                *r = v.rlv_at(j, cur[j]);
            }
            if !lv::le(v.lv(s, cur[s]), &rlv[..n]) {
                break;
            }
            visit(s, cur[s], cur)?;
            cur[s] += 1;
            done += 1;
        }
    }
    Ok(done)
}

/// Serial replay: visit the admitted records in the serial order as they are admitted,
/// parking when nothing admitted is ready, until the final cut is replayed.
pub(crate) fn replay_serial(
    feed: &Feed,
    replay: &dyn Replay,
    first: &FirstApply,
) -> Result<(), WalError> {
    let mut ver = feed.version();
    let mut view = feed.view();
    let mut cur = vec![0usize; view.n];
    loop {
        if feed.failed() {
            return Ok(());
        }
        let v = view.clone();
        let done = serial_pass(&v, &mut cur, usize::MAX, |s, k, _| {
            apply(&v, s, k, replay, first)
        })?;
        if done == 0 {
            let all = cur.iter().zip(&v.admitted).all(|(c, a)| c >= a);
            if v.last {
                return if all { Ok(()) } else { Err(cycle_error()) };
            }
            feed.wait(ver);
        }
        refresh(feed, &mut ver, &mut view);
    }
}

/// Records per link of the longest dependency chain, over the first [`SAMPLE`] admitted
/// records in the serial order.
fn parallelism(v: &View) -> Result<f64, WalError> {
    let n = v.n;
    // Prefix maximum of the chain depth, per pool, over the records visited so far.
    let mut pd: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut deepest = 0u32;
    let mut cur = vec![0usize; n];
    let mut visited = 0usize;
    while visited < SAMPLE.min(v.total) {
        let done = serial_pass(v, &mut cur, SAMPLE - visited, |s, k, cur| {
            let lv = v.lv(s, k);
            let mut d = 0u32;
            for (j, &upto) in lv.iter().enumerate().take(n) {
                // The records of pool j ending at or before lv[j] (all visited: lv <= RLV).
                let (mut lo, mut hi) = (0usize, cur[j]);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if v.rec(j, mid).end <= upto {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                if lo > 0 {
                    d = d.max(pd[j][lo - 1]);
                }
            }
            let d = d + 1;
            deepest = deepest.max(d);
            let prev = pd[s].last().copied().unwrap_or(0);
            pd[s].push(prev.max(d));
            Ok(())
        })?;
        if done == 0 {
            return Err(cycle_error());
        }
        visited += done;
    }
    Ok(if deepest == 0 {
        f64::INFINITY
    } else {
        visited as f64 / deepest as f64
    })
}

/// The `Auto` plan with more than one thread: wait until [`SAMPLE`] records are admitted (or
/// the log is read), then measure the parallelism of the admitted prefix. `None` if a
/// reader failed meanwhile.
pub(crate) fn plan_auto(feed: &Feed) -> Result<Option<RecoveryPlan>, WalError> {
    loop {
        if feed.failed() {
            return Ok(None);
        }
        let ver = feed.version();
        let v = feed.view();
        if v.last && v.total == 0 {
            return Ok(Some(RecoveryPlan::Serial));
        }
        if v.last || v.total >= SAMPLE {
            return Ok(Some(if parallelism(&v)? < MIN_PARALLELISM {
                RecoveryPlan::Serial
            } else {
                RecoveryPlan::Parallel
            }));
        }
        feed.wait(ver);
    }
}

/// Parallel replay by `threads` workers (this thread and `threads - 1` more), of which only
/// the first `early` run while the streams are still being read (the others wait for the
/// final cut): readers and workers share the cores, and a worker waiting on a preempted one
/// only burns the time the readers need.
///
/// What a worker shares per record is only what Alg. 4 needs: the record's flags and its
/// pool's head. Its `RLV` is a cached lower bound (`RLV` only grows), re-read from the heads
/// only when a record does not pass against it; how many records it finished and whether it
/// is replaying are its own cache lines, summed only by a worker that found nothing to do.
pub(crate) fn replay_parallel(
    feed: &Feed,
    threads: usize,
    early: usize,
    replay: &dyn Replay,
    first: &FirstApply,
) -> Result<(), WalError> {
    let n = feed.view().n;
    let heads = Heads::new(n);
    // Per worker: records finished, and whether it is replaying one right now.
    let finished: Box<[CachePadded<AtomicUsize>]> = (0..threads)
        .map(|_| CachePadded::new(AtomicUsize::new(0)))
        .collect();
    let busy: Box<[CachePadded<AtomicBool>]> = (0..threads)
        .map(|_| CachePadded::new(AtomicBool::new(false)))
        .collect();
    let failed = AtomicBool::new(false);
    let error: Mutex<Option<WalError>> = Mutex::new(None);
    let work = |w: usize| {
        if w >= early {
            loop {
                let ver = feed.version();
                if feed.failed() || feed.view().last {
                    break;
                }
                feed.wait(ver);
            }
        }
        // With no worker replaying, nothing ready and nothing finishing for STUCK_ROUNDS looks
        // after the last admission, the remaining records wait for each other (a damaged
        // log): (looks, records finished at the last look).
        let mut idle = (0usize, usize::MAX);
        let mut rlv = [0 as Lsn; MAX_STREAMS];
        let mut mine = 0usize;
        let mut ver = feed.version();
        let mut view = feed.view();
        loop {
            if failed.load(Ordering::Relaxed) || feed.failed() {
                return;
            }
            refresh(feed, &mut ver, &mut view);
            // Borrowed, not cloned: an `Arc` clone per record would bounce its count between
            // the workers' caches.
            let v: &View = &view;
            let mut fresh = false;
            let found = heads.claim_ready(v, w % n, WINDOW, |s, k| {
                let lv = v.lv(s, k);
                if lv::le(lv, &rlv[..n]) {
                    return true;
                }
                if fresh {
                    return false;
                }
                // Once per look: the cached RLV may only be behind.
                fresh = true;
                for (j, r) in rlv[..n].iter_mut().enumerate() {
                    *r = v.rlv_at(j, heads.head(j));
                }
                lv::le(lv, &rlv[..n])
            });
            let Some((s, k)) = found else {
                #[cfg(test)]
                if v.last {
                    replay.replay_idle();
                }
                let f: usize = finished.iter().map(|c| c.load(Ordering::Acquire)).sum();
                if v.last && f >= v.total {
                    return;
                }
                let replaying = busy.iter().any(|b| b.load(Ordering::Acquire));
                if f != idle.1 || replaying {
                    idle = (0, f);
                }
                // Wait until another worker finishes a record or stops replaying, the readers
                // publish, or replay fails (each notifies the feed's `Progress`), then look
                // again. What made this look wait is what the poll looks at: the finished
                // count, the version, and (if someone was replaying) the busy marks.
                let moved = || {
                    let now: usize = finished.iter().map(|c| c.load(Ordering::Acquire)).sum();
                    let idle_now = replaying && !busy.iter().any(|b| b.load(Ordering::Acquire));
                    (now != f
                        || idle_now
                        || feed.version() != ver
                        || failed.load(Ordering::Acquire))
                    .then_some(())
                };
                if !v.last || replaying {
                    // Someone will notify: a reader still publishing, a worker replaying.
                    feed.progress().wait(moved);
                    continue;
                }
                // Final cut, nobody replaying: a dependency cycle unless something still
                // moves (a worker between its claim and its busy mark).
                if feed
                    .progress()
                    .wait_until(Instant::now() + STUCK_LOOK, moved)
                    .is_none()
                {
                    idle.0 += 1;
                    if idle.0 > STUCK_ROUNDS {
                        error.lock().get_or_insert_with(cycle_error);
                        failed.store(true, Ordering::Release);
                        feed.progress().notify();
                        return;
                    }
                }
                continue;
            };
            idle = (0, usize::MAX);
            busy[w].store(true, Ordering::Release);
            if let Err(err) = apply(v, s, k, replay, first) {
                busy[w].store(false, Ordering::Release);
                error.lock().get_or_insert(err);
                failed.store(true, Ordering::Release);
                feed.progress().notify();
                return;
            }
            if !heads.finish(v, s, k) {
                // The head reached a record this view does not hold: a fresher view has it
                // if it was published before, else whoever replays it moves the head on
                // (pools.rs).
                refresh(feed, &mut ver, &mut view);
                let _ = heads.advance(&*view, s);
            }
            mine += 1;
            finished[w].store(mine, Ordering::Release);
            busy[w].store(false, Ordering::Release);
            // Workers waiting for something to become ready look again.
            feed.progress().notify();
        }
    };
    std::thread::scope(|sc| {
        let work = &work;
        let hs: Vec<_> = (1..threads).map(|w| sc.spawn(move || work(w))).collect();
        work(0);
        for h in hs {
            if h.join().is_err() {
                failed.store(true, Ordering::Relaxed);
                error.lock().get_or_insert(WalError::ThreadPanicked {
                    thread: "a taurus recovery worker",
                });
            }
        }
    });
    match error.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
