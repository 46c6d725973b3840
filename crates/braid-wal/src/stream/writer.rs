//! Appending: a writer's slot and scratch buffer, the reservation of ring space by advancing the
//! tail (checked against the space the device can reuse), the fill, and the wake-up of a
//! flusher waiting for it (Taurus, Xia et al. 2021, Alg. 1 `WriteLogBuffer`; the reservation
//! protocol itself is in `ready.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

use super::RING_FULL_WAIT;
use super::close::Handle;
use super::lead::CHECK_WAKE_BYTES;
use super::state::{CLOSED, Inner, NO_WAKE, POISONED, STALLED};
use crate::proxy::AppendCost;
use crate::record::{ALIGN, RecordSpec};
use crate::sync::fence;
use crate::{Lsn, WalError};

/// How often a writer waiting for ring space looks again although nothing notified it: space
/// a device frees by itself (a checkpoint's `release`, a pmem de-stager) does not pass through
/// the stream.
const SPACE_RECHECK: Duration = Duration::from_millis(1);

/// One thread's append handle: a claimed slot and a scratch buffer.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct StreamWriter {
    pub(super) h: Arc<Handle>,
    pub(super) slot: usize,
    pub(super) buf: Vec<u8>,
    /// What the last append did to shared memory ([`StreamWriter::cost`]).
    pub(super) cost: AppendCost,
    /// Leave waking the flusher to the waiter ([`StreamWriter::set_commits_waited`]).
    pub(super) defer_wake: bool,
    /// The device's reusable point as this writer last read it (see `Inner::reserve`).
    pub(super) reusable_seen: Lsn,
    /// A reservation made by [`StreamWriter::reserve`] and not yet filled: dropping the
    /// writer with one poisons the stream (the slot stays busy, so nothing after it could
    /// ever become durable).
    pub(super) pending: Option<Lsn>,
}

/// Space reserved by [`StreamWriter::reserve`], to be filled by [`StreamWriter::fill`] of the
/// same writer. Its position in the stream is fixed at reservation: records reserved one
/// after the other lie in that order, whenever they are filled.
#[must_use = "reserved space must be filled, or nothing after it ever becomes durable"]
#[derive(Debug)]
pub(crate) struct Reserved {
    lsn: Lsn,
    len: usize,
    attempts: u64,
}

impl Reserved {
    /// Where the reserved space starts.
    #[cfg(test)]
    pub(crate) fn lsn(&self) -> Lsn {
        self.lsn
    }
}

impl std::fmt::Debug for StreamWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamWriter")
            .field("stream", &self.h.inner.id)
            .field("slot", &self.slot)
            .finish()
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        if let Some(lsn) = self.pending {
            // The slot stays busy: see `Inner::poison_unfilled`.
            self.h.inner.poison_unfilled(lsn);
            return;
        }
        self.h.inner.res.release(self.slot);
        super::state::BUSY_THREADS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Poisons the stream if a writer unwinds between reserving and filling (see the module docs).
pub(super) struct FillGuard<'a> {
    pub(super) inner: &'a Inner,
    pub(super) lsn: Lsn,
    pub(super) armed: bool,
}

impl Drop for FillGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.inner.poison_unfilled(self.lsn);
        }
    }
}

impl Inner {
    /// A writer went (its thread unwinding) between reserving `lsn` and filling it: its slot
    /// stays busy at `lsn`, so the ready point can never pass the hole; fail every waiter.
    fn poison_unfilled(&self, lsn: Lsn) {
        self.poison(
            format!("filling LSN {lsn}"),
            WalError::ThreadPanicked {
                thread: "a writer between reserving its LSN and filling it",
            },
        );
    }
}

impl StreamWriter {
    /// Reserve, encode and fill one record; returns its (start, end) LSNs. Does not wait.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn append(&mut self, spec: &RecordSpec<'_>) -> Result<(Lsn, Lsn), WalError> {
        let len = spec.check()?;
        self.append_with(len, |lsn, synced, salt, out| {
            spec.encode(lsn, synced, salt, out)
        })
    }

    /// [`StreamWriter::append`] without waking a sleeping flusher for this record, unless
    /// [`CHECK_WAKE_BYTES`] are pending: a record nobody waits for (Shore-MT's log insert of an
    /// update record, which leaves the log flush daemon asleep until a commit kicks it or the
    /// buffer runs short of space). It becomes durable with the next flush that someone's
    /// record, a wait ([`Stream::wait_durable`] wakes the flusher), a backlog or the ring's
    /// space asks for, or at close.
    ///
    /// [`Stream::wait_durable`]: super::Stream::wait_durable
    pub(crate) fn append_quiet(&mut self, spec: &RecordSpec<'_>) -> Result<(Lsn, Lsn), WalError> {
        let len = spec.check()?;
        self.append_kicking(len, false, |lsn, synced, salt, out| {
            spec.encode(lsn, synced, salt, out)
        })
    }

    /// Append `len` bytes encoded by `encode(lsn, synced, salt, out)`, which must fill all of
    /// `out` with whole records for position `lsn` (checksummed with `salt`, with `synced` as
    /// their synced point), or readers will find damage. `len` must be a positive multiple of
    /// the record alignment. Returns (start, end). Does not wait for durability.
    pub(crate) fn append_with(
        &mut self,
        len: usize,
        encode: impl FnOnce(Lsn, Lsn, u32, &mut [u8]),
    ) -> Result<(Lsn, Lsn), WalError> {
        self.append_kicking(len, true, encode)
    }

    /// [`StreamWriter::append_with`]; `kick`: wake a flusher sleeping for this record (see
    /// [`StreamWriter::append_quiet`]).
    fn append_kicking(
        &mut self,
        len: usize,
        kick: bool,
        encode: impl FnOnce(Lsn, Lsn, u32, &mut [u8]),
    ) -> Result<(Lsn, Lsn), WalError> {
        let r = self.reserve(len)?;
        Ok(self.fill_kicking(r, kick, encode))
    }

    /// Reserve `len` bytes (a positive multiple of the record alignment) at the stream's tail,
    /// to be filled by [`StreamWriter::fill`] before this writer reserves again. Between the
    /// two, nothing at or after the reservation becomes durable, so the caller fills it
    /// promptly; the reservation alone fixes the record's place in the stream, which lets a
    /// caller that orders its records under a lock (Plover's latches) hold the lock for the
    /// reservation only and encode and copy the record after releasing it.
    pub(crate) fn reserve(&mut self, len: usize) -> Result<Reserved, WalError> {
        let inner = &*self.h.inner;
        if let Some(lsn) = self.pending {
            return Err(WalError::Internal(crate::Invariant::Unfilled {
                stream: inner.id,
                lsn,
            }));
        }
        if len == 0 || !len.is_multiple_of(ALIGN) {
            return Err(WalError::Misuse(crate::Misuse::Unaligned {
                op: "append",
                lsn: None,
                len: len as u64,
                align: ALIGN as u64,
                on: Some(format!("stream {}", inner.id)),
            }));
        }
        let len64 = len as u64;
        if len64 > inner.capacity {
            return Err(WalError::RecordTooLarge {
                len,
                max: usize::try_from(inner.capacity).unwrap_or(usize::MAX),
            });
        }
        let mut attempts = 0u64;
        let lsn = inner.reserve(self.slot, len64, &mut attempts, &mut self.reusable_seen)?;
        self.pending = Some(lsn);
        Ok(Reserved { lsn, len, attempts })
    }

    /// Fill space `r` reserved by this writer with `encode(lsn, synced, salt, out)`, which
    /// must fill all of `out` with whole records for position `lsn` (as for
    /// [`StreamWriter::append_with`]); returns (start, end). Does not wait for durability.
    pub(crate) fn fill(
        &mut self,
        r: Reserved,
        encode: impl FnOnce(Lsn, Lsn, u32, &mut [u8]),
    ) -> (Lsn, Lsn) {
        self.fill_kicking(r, true, encode)
    }

    fn fill_kicking(
        &mut self,
        r: Reserved,
        kick: bool,
        encode: impl FnOnce(Lsn, Lsn, u32, &mut [u8]),
    ) -> (Lsn, Lsn) {
        let inner = &*self.h.inner;
        let Reserved { lsn, len, attempts } = r;
        debug_assert_eq!(self.pending, Some(lsn), "a reservation of another writer");
        let len64 = len as u64;
        let mut guard = FillGuard {
            inner,
            lsn,
            armed: true,
        };
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        let out = &mut self.buf[..len];
        let synced = inner.durable.load(Relaxed);
        encode(lsn, synced, inner.device.salt_for(lsn), out);
        inner.device.fill(lsn, out);
        guard.armed = false;
        self.pending = None;
        inner.res.count(self.slot, len64);
        inner.res.finish(self.slot);
        let end = lsn + len64;
        // A deferring writer (or a quiet record) still wakes a sleeping flusher once a backlog
        // has built up, so that a long group is written while it grows rather than all at
        // once by its waiter.
        let locked = if self.defer_wake && end.saturating_sub(synced) < CHECK_WAKE_BYTES {
            false
        } else if !kick && end.saturating_sub(synced) < CHECK_WAKE_BYTES {
            inner.wake_flusher_for_waiters(end)
        } else {
            inner.wake_flusher(end)
        };
        // The tail's line, the flusher's mutex if taken (lock and unlock), and the partial
        // buffer lines a neighbouring record also writes.
        self.cost = AppendCost {
            rmw: attempts + if locked { 2 } else { 0 },
            lines: 1 + u64::from(locked) + AppendCost::boundary_lines(lsn, end),
        };
        (lsn, end)
    }

    /// What the last successful append did to memory other writers also write: its
    /// compare-and-swap attempts on the tail, the flusher's mutex if it took it, and the lines
    /// it shares with them (see [`crate::proxy`]).
    pub(crate) fn cost(&self) -> AppendCost {
        self.cost
    }

    /// Declare that what this writer appends is waited for with [`Stream::wait_durable`] or
    /// checked with [`Stream::check_durable`] (as a scheme's commit ticket does): its fills then
    /// do not wake the flusher thread, because the waiter flushes them itself when no flush is
    /// under way (leader-based group commit, `stream/lead.rs`) and a check that finds its
    /// record not durable wakes the flusher. Something appended and never waited for nor
    /// checked is still flushed by the flusher's poll (every few milliseconds) or at close.
    /// No effect where waiters do not lead (pmem devices, or a group-commit delay).
    ///
    /// [`Stream::wait_durable`]: super::Stream::wait_durable
    /// [`Stream::check_durable`]: super::Stream::check_durable
    pub(crate) fn set_commits_waited(&mut self, yes: bool) {
        let inner = &*self.h.inner;
        self.defer_wake = yes && inner.lead;
        if self.defer_wake && !inner.defers.swap(true, SeqCst) {
            // A flusher that went to sleep before this store sleeps without a timeout, and no
            // fill of this writer would wake it: wake it once, so that it sleeps again with
            // the poll. Under the mutex it sleeps under, after the store: either it read the
            // flag before it slept (and is woken here) or it reads it set.
            let _g = inner.lock.lock();
            inner.flusher_cv.notify_all();
        }
    }
}

impl Inner {
    /// Reserve `len` bytes for `slot`; on success the slot is busy and the caller must fill.
    /// `attempts` counts the compare-and-swaps on the tail.
    ///
    /// `seen` is the caller's last reading of the device's reusable point (0 if it keeps
    /// none): that point only grows, so a reservation below `seen + capacity` has room
    /// without reading it again, and the line the flusher writes at every flush is read
    /// once per ring's worth of appends instead of at every append.
    pub(super) fn reserve(
        &self,
        slot: usize,
        len: u64,
        attempts: &mut u64,
        seen: &mut Lsn,
    ) -> Result<Lsn, WalError> {
        self.check_state(true)?;
        let mut t = self.res.tail();
        let mut full_since: Option<Instant> = None;
        match self.device.ensure_space(t + len) {
            Ok(()) => {}
            Err(WalError::LogFull { .. }) => {}
            Err(e) => return Err(e),
        }
        loop {
            if t + len > *seen + self.capacity {
                *seen = self.device.reusable();
            }
            if t + len > *seen + self.capacity {
                // Withdraw the announcement a failed reservation may have left, so the flusher
                // is free to make progress while we wait.
                self.finish_unfilled(slot);
                self.wait_for_space(t + len, &mut full_since)?;
                t = self.res.tail();
                continue;
            }
            self.res.announce(slot, t);
            // After the announcement: a closer either sees it or we see its flag.
            if let Err(e) = self.check_state(true) {
                self.finish_unfilled(slot);
                return Err(e);
            }
            *attempts += 1;
            match self.res.try_reserve(t, len) {
                Ok(lsn) => return Ok(lsn),
                Err(cur) => t = cur,
            }
        }
    }

    /// Give up an announcement that reserved nothing.
    fn finish_unfilled(&self, slot: usize) {
        self.res.finish(slot);
        if self.durable_on_fill {
            // A closer may be waiting for this slot to go idle.
            self.progress.notify();
            return;
        }
        // A closing flusher may be waiting for this slot to go idle. The fence orders the
        // release store S3 before the load, as `wake_flusher` says.
        fence(SeqCst);
        if self.wake_at.load(SeqCst) != NO_WAKE {
            let _g = self.lock.lock();
            self.flusher_cv.notify_all();
        }
    }

    /// After a quiet fill ([`StreamWriter::append_quiet`]): wake the flusher as
    /// [`Inner::wake_flusher`] does only if someone waits in `progress` (a waiter for this
    /// record or a later one, which the flusher would otherwise leave waiting until the next
    /// kick). A store-then-load pair with the waiter, which registers in `progress` and then
    /// wakes a sleeping flusher itself (`durable.rs`): the fence orders this fill's busy store
    /// before the load of the count, so either the waiter's look at the flusher comes after
    /// this fill (and the flusher, if asleep, had stored `wake_at` before it looked at the
    /// ready point, so the waiter sees it) or this load sees the waiter and wakes the flusher.
    /// Returns whether it took a mutex.
    #[inline]
    pub(super) fn wake_flusher_for_waiters(&self, end: Lsn) -> bool {
        if self.durable_on_fill {
            return self.progress.notify();
        }
        fence(SeqCst);
        if self.progress.parked() == 0 {
            return false;
        }
        self.wake_flusher(end)
    }

    /// After a fill: wake the flusher if it sleeps waiting for a record ending here or later;
    /// on pmem (no flusher), wake the waiters parked in `progress`, who publish the ready
    /// point themselves. Returns whether it took a mutex to do so.
    #[inline]
    pub(super) fn wake_flusher(&self, end: Lsn) -> bool {
        if self.durable_on_fill {
            // The same store-then-load pair, with the fence inside `notify`.
            return self.progress.notify();
        }
        // A store-then-load pair with the flusher, which stores `wake_at` and then recomputes
        // the ready point: the fence orders the busy store (S3, a release store) before this
        // load, so either the flusher sees this fill or this load sees its `wake_at`.
        fence(SeqCst);
        if self.wake_at.load(SeqCst) <= end {
            let _g = self.lock.lock();
            self.flusher_cv.notify_all();
            return true;
        }
        false
    }

    /// Wait until `[.., upto)` fits in the ring, or fail.
    ///
    /// Space the stream frees (a flush on a file device; on pmem, a fill that lets the
    /// durable point, and with it de-staging, move on) notifies `progress`. Space the device
    /// frees by itself (a checkpoint's `release`, a de-stager catching up) does not pass
    /// through the stream, so these waits look again every [`SPACE_RECHECK`] as well.
    #[cold]
    fn wait_for_space(&self, upto: Lsn, full_since: &mut Option<Instant>) -> Result<(), WalError> {
        if self.durable_on_fill {
            return self.wait_for_space_on_fill(upto, full_since);
        }
        self.space_waiters.fetch_add(1, SeqCst);
        {
            // The flusher may be gathering a group commit; cut it short.
            let _g = self.lock.lock();
            self.flusher_cv.notify_all();
        }
        let r = loop {
            let recheck = Instant::now() + SPACE_RECHECK;
            if let Some(r) = self.progress.wait_until(recheck, || self.poll_space(upto)) {
                break r;
            }
        };
        self.space_waiters.fetch_sub(1, SeqCst);
        r
    }

    /// A file-device writer's look at the ring: `Some` once `upto` fits or the stream fails.
    fn poll_space(&self, upto: Lsn) -> Option<Result<(), WalError>> {
        let st = self.state.load(SeqCst);
        if st & (POISONED | CLOSED) != 0 {
            return Some(Err(self.state_error(st & !STALLED)));
        }
        if st & STALLED != 0 {
            let g = self.lock.lock();
            return Some(Err(g
                .nospace
                .clone()
                .unwrap_or_else(|| self.default_nospace())));
        }
        (upto <= self.device.reusable() + self.capacity).then_some(Ok(()))
    }

    /// [`Inner::wait_for_space`] on pmem: publish the durable point (so de-staging can free
    /// space) at every look; give up with `LogFull` once a ring that cannot drain by itself
    /// has stayed full for [`RING_FULL_WAIT`].
    fn wait_for_space_on_fill(
        &self,
        upto: Lsn,
        full_since: &mut Option<Instant>,
    ) -> Result<(), WalError> {
        loop {
            let recheck = Instant::now() + SPACE_RECHECK;
            let r = self.progress.wait_until(recheck, || {
                if let Err(e) = self.check_state(true) {
                    return Some(Err(e));
                }
                self.advance_durable();
                if upto <= self.device.reusable() + self.capacity {
                    return Some(Ok(()));
                }
                match self.device.ensure_space(upto) {
                    Ok(()) => *full_since = None,
                    Err(e @ WalError::LogFull { .. }) => {
                        let since = *full_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= RING_FULL_WAIT {
                            return Some(Err(e));
                        }
                    }
                    Err(e) => return Some(Err(e)),
                }
                None
            });
            if let Some(r) = r {
                return r;
            }
        }
    }
}
