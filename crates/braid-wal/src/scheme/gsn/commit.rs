//! Commit protection for the GSN scheme: when may a commit be acknowledged?
//!
//! A commit with GSN `g` may be acknowledged once every log is durable up to `g` (Wang &
//! Johnson 2014, Section 4): every record it depends on has a smaller GSN. Three ways:
//!
//! * **Durable cache** (`CommitProtocol::DurableCache`, persistent memory; Section 4.2): the
//!   insert's own fence makes the record durable, inserts into a log are serialised, and what
//!   a transaction depends on was inserted before it could be read; the commit is
//!   acknowledged as soon as its records are inserted ([`Ticket::DURABLE`]).
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
//! The daemon and the tickets wait through [`Progress`](crate::wait::Progress) (spin, yield,
//! park until notified). The idle daemon waits for a commit to join the queue, yielding for
//! 200 us before it parks (a parked daemon costs every commit a wake-up); between two
//! rounds of passive group commit that left the bound below the target it waits for a
//! worker's publication (every commit and abort notifies after its worker published) or for
//! the moment to signal stragglers, whichever comes first. A straggler's signal handler
//! publishes from signal context, where it cannot take the lock a notify may take, so while a
//! signal is outstanding the daemon also looks every [`SIGNAL_RECHECK`]. A committing worker
//! pays for a wake-up (a lock and a futex call) only when the daemon is parked. Signals and
//! rounds are counted per scheme instance ([`super::GsnStats`]).
//!
//! [`Ticket::DURABLE`]: crate::scheme::Ticket::DURABLE
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
/// How often the daemon looks for a signalled straggler's publication, which its signal
/// handler cannot notify.
const SIGNAL_RECHECK: Duration = Duration::from_micros(20);
/// Durable GSN watermarks: how long the daemon waits, after a round that left the bound below
/// the target (a record registered after the round's look: transient), before the next round
/// unless a commit or the stop notifies it first. A safety net: the streams' durable points
/// do not notify the daemon.
const WATERMARK_RECHECK: Duration = Duration::from_millis(1);

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
        // `advance`, `fail` and the close notify `acked_wait` after their stores.
        s.acked_wait
            .wait(|| {
                if s.acked.load(SeqCst) >= self.gsn {
                    return Some(Ok(()));
                }
                s.blocked(self.gsn).err().map(Err)
            })
            .and_then(|()| s.fills_ok())
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
                    // A retry interval after a transient failure (out of space), as the
                    // flusher's: nothing publishes that space is back.
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
            },
            Mode::Immediate => target,
        };
        if bound > acked {
            s.advance(bound.min(target));
        }
        if bound < target {
            wait_for_round(s, target, bound, stuck_since, !signalled.is_empty());
        }
    }
}

/// Between two rounds that left `bound` below `target`: wait until a round may get further
/// (a new target, a worker's publication that lifts the bound, the stop, a poison), or until
/// the stragglers are due a signal (passive group commit; see the module docs).
fn wait_for_round(
    s: &Shared,
    target: u64,
    bound: u64,
    stuck_since: Option<Instant>,
    signalled: bool,
) {
    let now = Instant::now();
    let deadline = match s.mode {
        Mode::Passive => {
            let due = stuck_since.map_or(now, |t| t + s.cfg.straggler_after);
            if signalled {
                due.min(now + SIGNAL_RECHECK)
            } else {
                due
            }
        }
        Mode::Watermark | Mode::Immediate => now + WATERMARK_RECHECK,
    };
    s.daemon_wait.wait_until(deadline, || {
        if s.stop.load(SeqCst) || s.poison.get().is_some() || s.target() > target {
            return Some(());
        }
        if s.mode != Mode::Passive {
            return None;
        }
        let cells = s.cells.lock();
        (min_dgsn(cells.iter().map(|c| c.word()), target) > bound).then_some(())
    });
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
        log.prune(&mut g);
        bound = bound.min(g.durable_gsn);
    }
    Ok(bound)
}
