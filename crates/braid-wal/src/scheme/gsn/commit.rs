//! Commit protection for the GSN scheme: when may a commit be acknowledged?
//!
//! A commit with GSN `g` may be acknowledged once every log is durable up to `g` (Wang &
//! Johnson 2014, Section 4): every record it depends on has a smaller GSN. Three ways:
//!
//! * **Durable cache** (`CommitProtocol::DurableCache`, persistent memory; Section 4.2): the
//!   insert's own fence makes the record durable, inserts into a log are serialised, and what
//!   a transaction depends on was inserted before it could be read; the commit is
//!   acknowledged as soon as its records are inserted ([`Ticket::Durable`]).
//! * **Passive group commit** (`CommitProtocol::Passive`, persistent memory with volatile
//!   caches; Section 4.1): each worker has a published word, `dgsn` with a dirty bit, in a
//!   [`PublishCell`]. A worker sets the dirty bit (reading its `dgsn`, the floor of every GSN
//!   it will use) before it takes a GSN for a record, and after its records are written and
//!   fenced it stages the commit GSN and publishes it with the bit cleared. The committing
//!   transaction then joins the commit queue: here the queue is one word per worker, the
//!   largest GSN that worker waits for, which only it writes (a store; `shared.rs`), and
//!   `acked`, the GSN up to which everything is acknowledged, which only the daemon writes;
//!   the daemon's target is the largest of the workers' words ([`queue_target`]), and it
//!   acknowledges in GSN order. No word of the commit path is written by every worker. The daemon computes `min_dgsn` as the minimum over dirty
//!   workers of their `dgsn`, raising the word of every clean worker that is below the target
//!   to the target (a compare-and-swap, so the worker's next dirty-bit `fetch_or` sees it and
//!   its later GSNs exceed it); everything at or below `min_dgsn` is durable, so `acked`
//!   becomes `min_dgsn`. A worker that keeps `min_dgsn` below the target for longer than
//!   `straggler_after` is sent a signal ([`braid_pmem::signal`]); its handler fences and
//!   publishes the staged value unless the worker is in the middle of an insert. With
//!   per-update records a worker is dirty from its transaction's first insert to its commit,
//!   so a long transaction is a real straggler: between its inserts it stages its GSN, which
//!   the handler publishes. A signal *helped* when its handler published (the cell's handled
//!   count moved) and the daemon's bound then rose above the value that held it back when it
//!   signalled; both sent and helped signals are counted.
//! * **Per-log durable GSN watermarks** (file devices, whatever the protocol): each log keeps
//!   the (end LSN, GSN) of its records not yet known durable; its durable GSN is the GSN of the
//!   newest record below the stream's durable LSN. The daemon appends a clock record (GSN =
//!   target) to every log whose clock is below the target, waits until every log is flushed
//!   past its last record, and acknowledges up to the minimum durable GSN. Clock records are
//!   what make the recovery bound reach acknowledged commits (see [`super::recovery`]).
//!
//! The daemon polls while commits wait (yield, then 20 us sleeps), keeps polling (yielding)
//! for 200 us after the queue drains, and only then sleeps on a condition variable; a
//! committing worker wakes it only if it sleeps. Signals and rounds are
//! counted per scheme instance ([`super::GsnStats`]).
//!
//! [`Ticket::Durable`]: crate::scheme::Ticket::Durable
//! [`PublishCell`]: braid_pmem::signal::PublishCell

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

use braid_pmem::signal::DIRTY;

use super::{Mode, Shared};
use crate::WalError;
use crate::record::Kind;
use crate::scheme::DurabilityWait;

/// How long the daemon keeps trying to acknowledge outstanding commits at close.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// A worker's handle on the shared state for its tickets. Each ticket clones the worker's
/// link, whose reference count lives in the worker's own allocation, rather than the shared
/// state's `Arc`, whose count every worker's commits would write (two atomic
/// read-modify-writes on one line per commit, shared by all workers).
pub(super) struct Link(pub Arc<Shared>);

/// A waiting commit: durable once `acked >= gsn`.
pub(super) struct GsnWait {
    pub link: Arc<Link>,
    pub gsn: u64,
}

impl DurabilityWait for GsnWait {
    fn wait(&self) -> Result<(), WalError> {
        let s = &*self.link.0;
        for _ in 0..8 {
            if s.acked.load(SeqCst) >= self.gsn {
                return s.fills_ok();
            }
            s.blocked(self.gsn)?;
            std::thread::yield_now();
        }
        let mut g = s.lock.lock();
        s.waiters.fetch_add(1, SeqCst);
        let r = loop {
            if s.acked.load(SeqCst) >= self.gsn {
                break Ok(());
            }
            if let Err(e) = s.blocked(self.gsn) {
                break Err(e);
            }
            s.waiter_cv.wait_for(&mut g, Duration::from_millis(2));
        };
        s.waiters.fetch_sub(1, SeqCst);
        r.and_then(|()| s.fills_ok())
    }

    fn is_durable(&self) -> Result<bool, WalError> {
        let s = &*self.link.0;
        if s.acked.load(SeqCst) >= self.gsn {
            return s.fills_ok().map(|()| true);
        }
        s.blocked(self.gsn).map(|()| false)
    }
}

/// The commit daemon's thread body.
pub(super) fn daemon(shared: Arc<Shared>) {
    let s = &*shared;
    let mut stuck_since: Option<Instant> = None;
    let mut signalled: Vec<Signalled> = Vec::new();
    let mut closing_since: Option<Instant> = None;
    let mut step = 0u32;
    loop {
        let target = s.target();
        let acked = s.acked.load(SeqCst);
        let stopping = s.stop.load(SeqCst);
        if stopping {
            let since = *closing_since.get_or_insert_with(Instant::now);
            if target <= acked || s.poison.get().is_some() || since.elapsed() > CLOSE_GRACE {
                return;
            }
        }
        if target <= acked {
            stuck_since = None;
            step = 0;
            s.sleep_daemon();
            continue;
        }
        s.counters.rounds.fetch_add(1, Relaxed);
        let bound = match s.mode {
            Mode::Passive => passive_round(s, target, &mut stuck_since, &mut signalled),
            Mode::Watermark => match watermark_round(s, target) {
                Ok(b) => b,
                Err(e) => {
                    s.fail(e, target);
                    if s.poison.get().is_some() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
            },
            Mode::Immediate => target,
        };
        if bound > acked {
            s.advance(bound.min(target));
            step = 0;
        }
        if bound < target {
            backoff(&mut step);
        }
    }
}

fn backoff(step: &mut u32) {
    *step += 1;
    if *step < 8 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(20));
    }
}

/// A worker's published word (`dgsn`, with [`DIRTY`]) as passive group commit uses it: a
/// [`braid_pmem::signal::PublishCell`]'s `std` atomic in production, loom's in
/// `tests/loom_gsn.rs`, which model-checks [`mark_dirty`] and [`min_dgsn`] through this trait.
/// Every operation is `SeqCst`.
pub(crate) trait DgsnWord {
    /// The word's value.
    fn load(&self) -> u64;
    /// Or `v` into the word; returns the value before.
    fn fetch_or(&self, v: u64) -> u64;
    /// Replace `current` by `new`; `Err` holds the value found instead.
    fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64>;
}

impl DgsnWord for std::sync::atomic::AtomicU64 {
    #[inline]
    fn load(&self) -> u64 {
        std::sync::atomic::AtomicU64::load(self, SeqCst)
    }
    #[inline]
    fn fetch_or(&self, v: u64) -> u64 {
        std::sync::atomic::AtomicU64::fetch_or(self, v, SeqCst)
    }
    #[inline]
    fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
        std::sync::atomic::AtomicU64::compare_exchange(self, current, new, SeqCst, SeqCst)
    }
}

/// Worker side, before it takes a GSN for a record: set the dirty bit. Returns the dirty
/// word (what the worker later publishes over, clearing the bit) and the floor of every GSN
/// it may use from now on (the published value, possibly raised by the daemon).
#[inline]
pub(crate) fn mark_dirty<W: DgsnWord + ?Sized>(word: &W) -> (u64, u64) {
    let w = word.fetch_or(DIRTY);
    (w | DIRTY, w & !DIRTY)
}

/// Daemon side: `min_dgsn` for `target`, the minimum over dirty words of their value (and
/// `target` if none is lower). A clean word below `target` is raised to `target` with a
/// compare-and-swap, so that its worker's next [`mark_dirty`] sees it and every GSN it takes
/// afterwards exceeds `target`: then everything at or below the result is written.
pub(crate) fn min_dgsn<'a, W: DgsnWord + ?Sized + 'a>(
    words: impl IntoIterator<Item = &'a W>,
    target: u64,
) -> u64 {
    let mut bound = target;
    for word in words {
        let mut w = word.load();
        loop {
            if w & DIRTY != 0 {
                bound = bound.min(w & !DIRTY);
                break;
            }
            if w >= target {
                break;
            }
            match word.compare_exchange(w, target) {
                Ok(_) => break,
                Err(now) => w = now,
            }
        }
    }
    bound
}

/// A straggler signal not yet known to have helped.
struct Signalled {
    /// The cell's identity in `Shared::cells` (its address; the entry is dropped once the
    /// cell leaves the list, so no cell is kept claimed past its worker).
    cell: usize,
    /// The cell's handled count before the signal.
    handled: u64,
    /// The straggler's published value that held the bound back.
    held: u64,
}

/// The commit queue's target: the largest GSN waited for, over the workers' words (each
/// written by its worker only).
pub(crate) fn queue_target<'a, W: DgsnWord + ?Sized + 'a>(
    words: impl IntoIterator<Item = &'a W>,
) -> u64 {
    words.into_iter().map(|w| w.load()).max().unwrap_or(0)
}

/// One round of passive group commit; returns `min_dgsn`. Signals stragglers that held it
/// below `target` for `straggler_after`, and counts those signals that helped.
fn passive_round(
    s: &Shared,
    target: u64,
    stuck_since: &mut Option<Instant>,
    signalled: &mut Vec<Signalled>,
) -> u64 {
    let cells = s.cells.lock();
    let bound = min_dgsn(cells.iter().map(|c| c.word()), target);
    // A signal helped if its handler published and the bound then passed what it held.
    signalled.retain(|g| {
        let Some(cell) = cells.iter().find(|c| Arc::as_ptr(c) as usize == g.cell) else {
            return false;
        };
        if cell.handled() == g.handled {
            // Not handled yet: keep waiting, unless the worker published by itself.
            return cell.word().load(SeqCst) & DIRTY != 0;
        }
        if bound > g.held {
            s.counters.signals_helped.fetch_add(1, Relaxed);
            return false;
        }
        true
    });
    if bound >= target {
        *stuck_since = None;
        return bound;
    }
    let since = *stuck_since.get_or_insert_with(Instant::now);
    if since.elapsed() >= s.cfg.straggler_after {
        for c in cells.iter() {
            let w = c.word().load(SeqCst);
            if w & DIRTY != 0 && (w & !DIRTY) < target {
                let handled = c.handled();
                if c.signal_if_dirty() {
                    s.counters.signals.fetch_add(1, Relaxed);
                    let id = Arc::as_ptr(c) as usize;
                    signalled.retain(|g| g.cell != id);
                    signalled.push(Signalled {
                        cell: id,
                        handled,
                        held: w & !DIRTY,
                    });
                }
            }
        }
        *stuck_since = Some(Instant::now());
    }
    bound
}

/// One round of per-log durable GSN watermarks; returns the minimum durable GSN.
fn watermark_round(s: &Shared, target: u64) -> Result<u64, WalError> {
    let mut last_end = Vec::with_capacity(s.logs.len());
    for log in &s.logs {
        let mut g = log.inner.lock();
        if g.clock < target {
            log.insert_locked(
                &mut g,
                &s.cfg,
                target - 1,
                Kind::Checkpoint,
                0,
                0,
                &[],
                true,
            )?;
            s.counters.clock_records.fetch_add(1, Relaxed);
        }
        last_end.push(g.pending.back().map(|p| p.0));
    }
    for (log, end) in s.logs.iter().zip(last_end) {
        if let Some(end) = end {
            log.stream.wait_durable(end)?;
        }
    }
    let mut bound = u64::MAX;
    for log in &s.logs {
        let mut g = log.inner.lock();
        let d = log.stream.durable();
        while let Some(&(end, gsn)) = g.pending.front() {
            if end > d {
                break;
            }
            g.durable_gsn = gsn;
            g.pending.pop_front();
        }
        bound = bound.min(g.durable_gsn);
    }
    Ok(bound)
}
