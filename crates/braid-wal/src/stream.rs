//! Streams: reserve / fill / flush with a durable watermark (Taurus, Xia et al. 2021, Alg. 1
//! `WriteLogBuffer` and Alg. 2, the log manager).
//!
//! A [`Stream`] appends records to one [`Device`]. Writers ([`StreamWriter`], one per thread,
//! each owning a cache-padded slot) reserve space by advancing the tail, encode their record
//! into a private scratch buffer and copy it into the device's buffer ([`Device::fill`]). The
//! *ready point* (everything before it is filled) is computed from the tail and the writers'
//! busy words; the protocol and its memory-ordering argument are in `stream/ready.rs`.
//!
//! * File devices (`durable_on_fill() == false`) get one flusher thread, `braid-flush-<id>`. It
//!   sleeps until a writer finishes a record past the durable point, then (group commit) waits
//!   up to `group_delay` or until `group_bytes` are ready, writes `[durable, ready)` with
//!   [`Device::flush`], publishes the new durable point and wakes the commits waiting for it
//!   and the writers waiting for ring space.
//! * Pmem devices (`durable_on_fill() == true`) make each record durable in `fill`, on the
//!   writer's own thread. There is no flusher: [`Stream::wait_durable`] computes the ready
//!   point itself and publishes it with `fetch_max`. A waiter that finds the point short of
//!   its LSN (another writer is mid-fill) spins briefly, then yields, then sleeps for short,
//!   growing intervals: on a machine with few cores a spinning waiter steals the CPU from the
//!   writer it waits for.
//!
//! Hot path: an append allocates nothing (the scratch buffer only grows) and takes no lock; it
//! touches the tail (one compare-and-swap), its own slot, and one word the flusher publishes
//! when it sleeps (`wake_at`), so a writer takes the mutex only when the flusher is asleep
//! waiting for exactly this record. Lost wake-ups are excluded by `SeqCst` store-then-load
//! pairs: a writer stores its idle busy word and then loads `wake_at`, the flusher stores
//! `wake_at` and then recomputes the ready point (under the mutex it sleeps on); a commit
//! waiter registers in `waiters` and then loads `durable`, the flusher stores `durable` and
//! then loads `waiters`. A file-device waiter yields a few times before it sleeps, which on a
//! machine with few cores hands the core to the flusher.
//!
//! The device hears of every new durable point ([`Device::note_durable`]) *before* the stream
//! publishes it, so a caller may pass [`Stream::durable`] straight to [`Device::release`].
//!
//! Failures:
//!
//! * A flush error other than `NoSpace` poisons the stream: the cause is stored, everyone is
//!   woken, the durable point never advances again, and every waiter and every later append
//!   gets [`WalError::Poisoned`] naming the stream and the cause. A wait for an LSN that was
//!   durable before the failure still succeeds: it was acknowledged legitimately. On pmem
//!   devices the same holds for a persistence failure that [`Device::check_fills`] reports
//!   (a failed `msync`), checked before every advance of the durable point.
//! * `NoSpace` stalls the stream: the waiters whose LSNs lie in the range that failed get the
//!   `NoSpace` error (their commits are not acknowledged), new appends fail fast with it, and
//!   the flusher retries with exponential backoff (1 ms to 100 ms). Once a flush succeeds the
//!   stall is lifted and everything works again. `close()` during a stall gives up after one
//!   more failed attempt and returns the error.
//! * A writer that reserved space must fill it, or the stream would have a hole. Nothing in the
//!   append path after the reservation returns an error; if it panics (a bug), a guard
//!   poisons the stream and leaves the slot busy, so the ready point never passes the hole.
//!
//! Design choices where the specification is open:
//!
//! * Ring space is checked *before* reserving (the reservation is a compare-and-swap that
//!   only succeeds when `lsn + len <= reusable() + capacity()`), see `stream/ready.rs`.
//!   Writers short of ring space wait without holding a reservation: on a file device for the
//!   flusher (which they wake at once, cutting a group-commit delay short); on a pmem device by
//!   publishing the durable point themselves (so de-staging can free space) and polling. If
//!   the device says the ring cannot drain by itself ([`WalError::LogFull`] from
//!   `ensure_space`: a pmem ring without de-staging), the append waits up to
//!   [`RING_FULL_WAIT`] for a checkpoint to release space and then fails with `LogFull`,
//!   having reserved nothing.
//! * `wait_durable` / `check_durable` of an LSN beyond the tail is an error (no append returned
//!   it, so waiting could never end).
//! * The stream shuts down (as by [`Stream::close`]) when the last [`Stream`] handle and the
//!   last [`StreamWriter`] are dropped.
//! * `StreamConfig::max_writers == 0` is treated as 1.

// Public only for the loom model (`tests/loom_stream.rs`).
#[doc(hidden)]
pub mod ready;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use crate::device::Device;
use crate::record::{ALIGN, RecordSpec};
use crate::{Lsn, WalError};
use ready::Reservations;

/// How a [`Stream`] runs. The default: stream 0, 64 writers, no group-commit delay,
/// `group_bytes` 1 MiB.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// The stream's index: names its flusher thread and appears in errors.
    pub id: u32,
    /// Most writers (threads) at once.
    pub max_writers: usize,
    /// Group commit: the flusher waits at most this long for more bytes...
    pub group_delay: Duration,
    /// ...or until this many bytes are pending.
    pub group_bytes: usize,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            id: 0,
            max_writers: 64,
            group_delay: Duration::ZERO,
            group_bytes: 1 << 20,
        }
    }
}

/// Counters of a stream since it started ([`Stream::stats`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamStats {
    /// Bytes appended (records with their padding).
    pub bytes: u64,
    /// Records appended.
    pub records: u64,
    /// Times the durable point advanced (device flushes for files, publications for pmem).
    pub flushes: u64,
}

/// How long an append waits for a ring that cannot drain by itself (a pmem ring without
/// de-staging) to get space released by a checkpoint before failing with `LogFull`.
pub const RING_FULL_WAIT: Duration = Duration::from_millis(250);

/// First and longest pause between flush attempts while the device is out of space.
const NOSPACE_BACKOFF_MIN: Duration = Duration::from_millis(1);
const NOSPACE_BACKOFF_MAX: Duration = Duration::from_millis(100);

/// Yields of a file-device waiter before it blocks.
const SPIN_YIELDS: u32 = 4;

/// `wake_at` value while the flusher is awake.
const NO_WAKE: u64 = u64::MAX;

/// State bits.
const CLOSED: u8 = 1;
const POISONED: u8 = 2;
const STALLED: u8 = 4;

/// State behind the stream's mutex (slow paths only).
#[derive(Default)]
struct Locked {
    /// The `NoSpace` error of the current stall.
    nospace: Option<WalError>,
    /// The flusher thread has exited (or there is none and the stream is closed).
    flusher_done: bool,
    /// Why the flusher stopped without flushing everything (NoSpace at close).
    close_error: Option<WalError>,
}

struct Inner {
    id: u32,
    device: Arc<dyn Device>,
    capacity: u64,
    durable_on_fill: bool,
    group_delay: Duration,
    group_bytes: u64,
    res: Reservations,
    durable: CachePadded<AtomicU64>,
    state: CachePadded<AtomicU8>,
    /// The flusher sleeps until a writer finishes a record ending at or beyond this.
    wake_at: CachePadded<AtomicU64>,
    /// Threads blocked in `wait_durable` (file devices) and writers waiting for ring space.
    waiters: AtomicUsize,
    space_waiters: AtomicUsize,
    /// During a stall: the end of the largest range whose flush failed with `NoSpace`.
    nospace_upto: AtomicU64,
    flushes: AtomicU64,
    cause: OnceLock<String>,
    lock: Mutex<Locked>,
    /// The flusher sleeps here.
    flusher_cv: Condvar,
    /// Commit waiters and writers waiting for ring space sleep here.
    durable_cv: Condvar,
}

/// What a clone of [`Stream`] and every [`StreamWriter`] share; closing happens when it drops.
struct Handle {
    inner: Arc<Inner>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Nobody can observe the result any more; the errors were delivered to the waiters.
        let _ = self.close();
    }
}

/// A log stream on one device. Cheap to clone (a shared handle).
#[derive(Clone)]
pub struct Stream {
    h: Arc<Handle>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.h.inner;
        f.debug_struct("Stream")
            .field("id", &i.id)
            .field("tail", &i.res.tail())
            .field("durable", &i.durable.load(Relaxed))
            .finish()
    }
}

impl Stream {
    /// Start appending at `end` (the valid end found by scanning the device).
    ///
    /// Calls `device.reset_tail(end)` so nothing stale beyond `end` can ever decode, then (for
    /// devices that are not `durable_on_fill`) starts the flusher thread.
    pub fn start(device: Arc<dyn Device>, end: Lsn, cfg: StreamConfig) -> Result<Stream, WalError> {
        if !end.is_multiple_of(ALIGN as u64) {
            return Err(WalError::Config(format!(
                "stream {}: start position {end} is not a multiple of {ALIGN}",
                cfg.id
            )));
        }
        device.reset_tail(end)?;
        let durable_on_fill = device.durable_on_fill();
        let inner = Arc::new(Inner {
            id: cfg.id,
            capacity: device.capacity(),
            durable_on_fill,
            group_delay: cfg.group_delay,
            group_bytes: (cfg.group_bytes as u64).max(1),
            res: Reservations::new(end, cfg.max_writers.max(1)),
            durable: CachePadded::new(AtomicU64::new(end)),
            state: CachePadded::new(AtomicU8::new(0)),
            wake_at: CachePadded::new(AtomicU64::new(NO_WAKE)),
            waiters: AtomicUsize::new(0),
            space_waiters: AtomicUsize::new(0),
            nospace_upto: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            cause: OnceLock::new(),
            lock: Mutex::new(Locked::default()),
            flusher_cv: Condvar::new(),
            durable_cv: Condvar::new(),
            device,
        });
        inner.device.note_durable(end);
        let flusher = if durable_on_fill {
            None
        } else {
            let fl = Arc::clone(&inner);
            let h = std::thread::Builder::new()
                .name(format!("braid-flush-{}", cfg.id))
                .spawn(move || fl.flusher_main())
                .map_err(|e| {
                    WalError::Config(format!(
                        "stream {}: cannot start the flusher thread: {e}",
                        cfg.id
                    ))
                })?;
            Some(h)
        };
        Ok(Stream {
            h: Arc::new(Handle {
                inner,
                flusher: Mutex::new(flusher),
            }),
        })
    }

    /// The stream's index ([`StreamConfig::id`]).
    pub fn id(&self) -> u32 {
        self.h.inner.id
    }

    /// A writer for the calling thread: claims one of `max_writers` slots until dropped.
    pub fn writer(&self) -> Result<StreamWriter, WalError> {
        let inner = &self.h.inner;
        let slot = inner.res.claim().ok_or_else(|| {
            WalError::Config(format!(
                "stream {}: all {} writer slots are in use (raise max_writers)",
                inner.id,
                inner.res.slots()
            ))
        })?;
        // Checked after claiming: a writer that panicked mid-append frees its slot only after
        // poisoning the stream, so a new owner of that slot always sees the poison.
        if let Err(e) = inner.check_state(false) {
            inner.res.release(slot);
            return Err(e);
        }
        Ok(StreamWriter {
            h: Arc::clone(&self.h),
            slot,
            buf: Vec::new(),
        })
    }

    /// Everything before this LSN is durable.
    pub fn durable(&self) -> Lsn {
        self.h.inner.durable.load(Acquire)
    }

    /// The next append goes here.
    pub fn tail(&self) -> Lsn {
        self.h.inner.res.tail()
    }

    /// Block until everything before `lsn` is durable, or fail with the error that prevents it
    /// (poisoned stream, `NoSpace` for this LSN, or the stream was closed without it).
    pub fn wait_durable(&self, lsn: Lsn) -> Result<(), WalError> {
        self.h.inner.wait_durable(lsn)
    }

    /// Non-blocking [`Stream::wait_durable`]: `Ok(false)` if not durable yet.
    pub fn check_durable(&self, lsn: Lsn) -> Result<bool, WalError> {
        self.h.inner.check_durable(lsn)
    }

    /// Flush everything appended, stop the flusher and join it. Later appends fail with
    /// [`WalError::Closed`]. Idempotent; returns the error that prevented flushing everything.
    pub fn close(&self) -> Result<(), WalError> {
        self.h.close()
    }

    /// Counters since the stream started.
    pub fn stats(&self) -> StreamStats {
        let inner = &self.h.inner;
        let (records, bytes) = inner.res.totals();
        StreamStats {
            bytes,
            records,
            flushes: inner.flushes.load(Relaxed),
        }
    }

    /// The device the stream appends to.
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.h.inner.device
    }
}

/// One thread's append handle: a claimed slot and a scratch buffer.
pub struct StreamWriter {
    h: Arc<Handle>,
    slot: usize,
    buf: Vec<u8>,
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
        self.h.inner.res.release(self.slot);
    }
}

/// Poisons the stream if a writer unwinds between reserving and filling (see the module docs).
struct FillGuard<'a> {
    inner: &'a Inner,
    lsn: Lsn,
    armed: bool,
}

impl Drop for FillGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            // The slot stays busy at `lsn`, so the ready point can never pass the hole.
            self.inner.poison(format!(
                "a writer failed between reserving LSN {} and filling it",
                self.lsn
            ));
        }
    }
}

impl StreamWriter {
    /// Reserve, encode and fill one record; returns its (start, end) LSNs. Does not wait.
    pub fn append(&mut self, spec: &RecordSpec<'_>) -> Result<(Lsn, Lsn), WalError> {
        let len = spec.check()?;
        self.append_with(len, |lsn, synced, salt, out| {
            spec.encode(lsn, synced, salt, out)
        })
    }

    /// Append `len` bytes encoded by `encode(lsn, synced, salt, out)`, which must fill all of
    /// `out` with whole records for position `lsn` (checksummed with `salt`, with `synced` as
    /// their synced point), or readers will find damage. `len` must be a positive multiple of
    /// the record alignment. Returns (start, end). Does not wait for durability.
    pub fn append_with(
        &mut self,
        len: usize,
        encode: impl FnOnce(Lsn, Lsn, u32, &mut [u8]),
    ) -> Result<(Lsn, Lsn), WalError> {
        let inner = &*self.h.inner;
        if len == 0 || !len.is_multiple_of(ALIGN) {
            return Err(WalError::Config(format!(
                "stream {}: append of {len} bytes (must be a positive multiple of {ALIGN})",
                inner.id
            )));
        }
        let len64 = len as u64;
        if len64 > inner.capacity {
            return Err(WalError::RecordTooLarge {
                len,
                max: usize::try_from(inner.capacity).unwrap_or(usize::MAX),
            });
        }
        let lsn = inner.reserve(self.slot, len64)?;
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
        inner.res.count(self.slot, len64);
        inner.res.finish(self.slot);
        let end = lsn + len64;
        inner.wake_flusher(end);
        Ok((lsn, end))
    }

    /// The stream this writer appends to.
    pub fn stream_id(&self) -> u32 {
        self.h.inner.id
    }
}

impl Handle {
    fn close(&self) -> Result<(), WalError> {
        let inner = &*self.inner;
        let first = inner.state.fetch_or(CLOSED, SeqCst) & CLOSED == 0;
        self.drain_and_stop()?;
        // Only the first closer, and only once everything is durable: the end it marks is the
        // stream's final one.
        if first {
            let end = inner.durable.load(SeqCst);
            if end >= inner.res.tail() {
                inner.device.mark_clean_end(end)?;
            }
        }
        Ok(())
    }

    fn drain_and_stop(&self) -> Result<(), WalError> {
        let inner = &*self.inner;
        inner.set_state(CLOSED);
        if inner.durable_on_fill {
            return inner.close_durable_on_fill();
        }
        // Holding the lock across the join makes concurrent closers wait for the first one.
        let mut flusher = self.flusher.lock();
        if let Some(h) = flusher.take()
            && h.join().is_err()
        {
            // `flusher_main` catches panics; this is only a belt for the braces.
            inner.poison("the flusher thread panicked".to_string());
        }
        drop(flusher);
        if let Some(e) = inner.poison_error() {
            return Err(e);
        }
        let g = inner.lock.lock();
        if let Some(e) = &g.close_error {
            return Err(e.clone());
        }
        Ok(())
    }
}

impl Inner {
    // ----- state -------------------------------------------------------------------------

    /// Set state bits, then wake every sleeper (under the lock, so no wake-up is lost).
    fn set_state(&self, bits: u8) {
        self.state.fetch_or(bits, SeqCst);
        let _g = self.lock.lock();
        self.flusher_cv.notify_all();
        self.durable_cv.notify_all();
    }

    fn poison(&self, cause: String) {
        // The cause is set before the flag, so whoever sees the flag sees the cause.
        let _ = self.cause.set(cause);
        self.set_state(POISONED);
    }

    fn poison_error(&self) -> Option<WalError> {
        if self.state.load(SeqCst) & POISONED == 0 {
            return None;
        }
        let cause = self
            .cause
            .get()
            .cloned()
            .unwrap_or_else(|| "unknown failure".to_string());
        Some(WalError::Poisoned {
            stream: self.id,
            cause,
        })
    }

    /// Fail fast if appends are refused: poisoned, closed, or (`stall` = check it) stalled.
    #[inline]
    fn check_state(&self, stall: bool) -> Result<(), WalError> {
        let st = self.state.load(SeqCst);
        let mask = if stall {
            POISONED | CLOSED | STALLED
        } else {
            POISONED | CLOSED
        };
        if st & mask == 0 {
            return Ok(());
        }
        Err(self.state_error(st))
    }

    #[cold]
    fn state_error(&self, st: u8) -> WalError {
        if st & POISONED != 0
            && let Some(e) = self.poison_error()
        {
            return e;
        }
        if st & CLOSED != 0 {
            return WalError::Closed(self.id);
        }
        self.nospace_error()
    }

    /// The error of the current stall. Takes the lock.
    fn nospace_error(&self) -> WalError {
        let g = self.lock.lock();
        g.nospace.clone().unwrap_or_else(|| self.default_nospace())
    }

    fn default_nospace(&self) -> WalError {
        WalError::NoSpace {
            path: self.device.info().location.into(),
        }
    }

    // ----- writers -------------------------------------------------------------------------

    /// Reserve `len` bytes for `slot`; on success the slot is busy and the caller must fill.
    fn reserve(&self, slot: usize, len: u64) -> Result<Lsn, WalError> {
        self.check_state(true)?;
        let mut t = self.res.tail();
        let mut full_since: Option<Instant> = None;
        match self.device.ensure_space(t + len) {
            Ok(()) => {}
            Err(WalError::LogFull { .. }) => {}
            Err(e) => return Err(e),
        }
        loop {
            if t + len > self.device.reusable() + self.capacity {
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
            match self.res.try_reserve(t, len) {
                Ok(lsn) => return Ok(lsn),
                Err(cur) => t = cur,
            }
        }
    }

    /// Give up an announcement that reserved nothing.
    fn finish_unfilled(&self, slot: usize) {
        self.res.finish(slot);
        // A closing flusher may be waiting for this slot to go idle.
        if self.wake_at.load(SeqCst) != NO_WAKE {
            let _g = self.lock.lock();
            self.flusher_cv.notify_all();
        }
    }

    /// After a fill: wake the flusher if it sleeps waiting for a record ending here or later.
    #[inline]
    fn wake_flusher(&self, end: Lsn) {
        // SeqCst after the busy store (S3): the flusher stores `wake_at` and then recomputes
        // the ready point, so either it sees this fill or this load sees its `wake_at`.
        if self.wake_at.load(SeqCst) <= end {
            let _g = self.lock.lock();
            self.flusher_cv.notify_all();
        }
    }

    /// Wait until `[.., upto)` fits in the ring, or fail.
    #[cold]
    fn wait_for_space(&self, upto: Lsn, full_since: &mut Option<Instant>) -> Result<(), WalError> {
        if self.durable_on_fill {
            let mut step = 0u32;
            loop {
                self.check_state(true)?;
                // Publishing the durable point lets de-staging free ring space.
                self.advance_durable();
                if upto <= self.device.reusable() + self.capacity {
                    return Ok(());
                }
                match self.device.ensure_space(upto) {
                    Ok(()) => *full_since = None,
                    Err(e @ WalError::LogFull { .. }) => {
                        let since = *full_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= RING_FULL_WAIT {
                            return Err(e);
                        }
                    }
                    Err(e) => return Err(e),
                }
                backoff(&mut step);
            }
        }
        let mut g = self.lock.lock();
        self.space_waiters.fetch_add(1, SeqCst);
        // The flusher may be gathering a group commit; cut it short.
        self.flusher_cv.notify_all();
        let r = loop {
            let st = self.state.load(SeqCst);
            if st & (POISONED | CLOSED) != 0 {
                break Err(self.state_error(st & !STALLED));
            }
            if st & STALLED != 0 {
                break Err(g.nospace.clone().unwrap_or_else(|| self.default_nospace()));
            }
            if upto <= self.device.reusable() + self.capacity {
                break Ok(());
            }
            if g.flusher_done {
                break Err(WalError::Closed(self.id));
            }
            // The timeout covers space freed other than by the flusher (release()).
            self.durable_cv.wait_for(&mut g, Duration::from_millis(10));
        };
        self.space_waiters.fetch_sub(1, SeqCst);
        r
    }

    // ----- durability ----------------------------------------------------------------------

    /// Pmem: publish the ready point as the durable point; returns the durable point.
    fn advance_durable(&self) -> Lsn {
        let d = self.durable.load(SeqCst);
        let (ready, _) = self.res.ready();
        // Nothing is published once the stream is poisoned (checked after computing `ready`).
        if ready <= d || self.state.load(SeqCst) & POISONED != 0 {
            return d;
        }
        // Asked after computing `ready`: a fill that failed to persist recorded its failure
        // before it finished, so every fill below `ready` is covered by this check.
        if let Err(e) = self.device.check_fills() {
            self.poison(format!("persisting LSNs {d}..{ready} failed: {e}"));
            return d;
        }
        // The device learns the point before anyone can read it from the stream (a caller may
        // hand `durable()` straight to `Device::release`).
        self.device.note_durable(ready);
        let prev = self.durable.fetch_max(ready, SeqCst);
        if prev < ready {
            self.flushes.fetch_add(1, Relaxed);
            ready
        } else {
            prev
        }
    }

    fn beyond_tail(&self, lsn: Lsn) -> WalError {
        WalError::Config(format!(
            "stream {}: waiting for LSN {lsn} beyond the tail {} (no append returned it)",
            self.id,
            self.res.tail()
        ))
    }

    fn check_durable(&self, lsn: Lsn) -> Result<bool, WalError> {
        if self.durable.load(Acquire) >= lsn {
            return Ok(true);
        }
        if let Some(e) = self.poison_error() {
            return Err(e);
        }
        if lsn > self.res.tail() {
            return Err(self.beyond_tail(lsn));
        }
        if self.durable_on_fill {
            return Ok(self.advance_durable() >= lsn);
        }
        let g = self.lock.lock();
        self.blocked(lsn, &g)
            .map(|()| self.durable.load(SeqCst) >= lsn)
    }

    /// Under the lock, for a file-device waiter of `lsn` that is not durable: the error that
    /// will keep it from ever becoming durable, if any.
    fn blocked(&self, lsn: Lsn, g: &Locked) -> Result<(), WalError> {
        if let Some(e) = self.poison_error() {
            return Err(e);
        }
        let st = self.state.load(SeqCst);
        if st & STALLED != 0
            && lsn <= self.nospace_upto.load(SeqCst)
            && let Some(e) = &g.nospace
        {
            return Err(e.clone());
        }
        if g.flusher_done && self.durable.load(SeqCst) < lsn {
            return Err(g.close_error.clone().unwrap_or(WalError::Closed(self.id)));
        }
        Ok(())
    }

    fn wait_durable(&self, lsn: Lsn) -> Result<(), WalError> {
        if self.durable.load(Acquire) >= lsn {
            return Ok(());
        }
        if lsn > self.res.tail() {
            return Err(self.beyond_tail(lsn));
        }
        if self.durable_on_fill {
            return self.wait_durable_on_fill(lsn);
        }
        // A few yields first: a flush of a small group is often shorter than a sleep and
        // wake-up, and yielding hands the core to the flusher on a machine with few cores.
        for _ in 0..SPIN_YIELDS {
            std::thread::yield_now();
            if self.durable.load(Acquire) >= lsn {
                return Ok(());
            }
        }
        let mut g = self.lock.lock();
        self.waiters.fetch_add(1, SeqCst);
        let r = loop {
            // SeqCst after the increment: the flusher stores `durable` and then loads
            // `waiters`, so either we see its store or it sees us (and takes the lock, which
            // we hold until we sleep).
            if self.durable.load(SeqCst) >= lsn {
                break Ok(());
            }
            if let Err(e) = self.blocked(lsn, &g) {
                break Err(e);
            }
            self.durable_cv.wait(&mut g);
        };
        self.waiters.fetch_sub(1, SeqCst);
        r
    }

    fn wait_durable_on_fill(&self, lsn: Lsn) -> Result<(), WalError> {
        let mut step = 0u32;
        loop {
            if self.advance_durable() >= lsn {
                return Ok(());
            }
            if let Some(e) = self.poison_error() {
                return Err(e);
            }
            backoff(&mut step);
        }
    }

    fn close_durable_on_fill(&self) -> Result<(), WalError> {
        let mut step = 0u32;
        loop {
            if let Some(e) = self.poison_error() {
                return Err(e);
            }
            // CLOSED is set: a writer either saw it (and gave up) or announced before our
            // look at the slots below, so waiting for no slot to be busy catches every append.
            let (_, busy) = self.res.ready();
            let d = self.advance_durable();
            if !busy && d >= self.res.tail() {
                let mut g = self.lock.lock();
                g.flusher_done = true;
                self.durable_cv.notify_all();
                return Ok(());
            }
            backoff(&mut step);
        }
    }

    // ----- the flusher -----------------------------------------------------------------------

    fn flusher_main(self: Arc<Self>) {
        let r = catch_unwind(AssertUnwindSafe(|| self.flusher_loop()));
        if r.is_err() {
            self.poison("the flusher thread panicked".to_string());
        }
        let mut g = self.lock.lock();
        g.flusher_done = true;
        self.durable_cv.notify_all();
    }

    fn flusher_loop(&self) {
        let mut nospace_backoff = NOSPACE_BACKOFF_MIN;
        loop {
            let st = self.state.load(SeqCst);
            if st & POISONED != 0 {
                return;
            }
            let closing = st & CLOSED != 0;
            let d = self.durable.load(SeqCst);
            let (mut ready, busy) = self.res.ready();
            if ready <= d {
                if closing && !busy && self.res.tail() <= d {
                    return;
                }
                self.sleep_until_filled(d, st);
                continue;
            }
            if !self.group_delay.is_zero() && !closing && ready - d < self.group_bytes {
                ready = ready.max(self.gather(d, st));
            }
            match self.device.flush(d, ready) {
                Ok(()) => {
                    nospace_backoff = NOSPACE_BACKOFF_MIN;
                    self.publish(ready);
                }
                Err(e @ WalError::NoSpace { .. }) => {
                    self.stall(ready, e.clone());
                    if closing {
                        let mut g = self.lock.lock();
                        g.close_error = Some(e);
                        return;
                    }
                    let mut g = self.lock.lock();
                    if self.state.load(SeqCst) & (CLOSED | POISONED) == 0 {
                        self.flusher_cv.wait_for(&mut g, nospace_backoff);
                    }
                    nospace_backoff = (nospace_backoff * 2).min(NOSPACE_BACKOFF_MAX);
                }
                Err(e) => {
                    self.poison(format!("flushing LSNs {d}..{ready} failed: {e}"));
                    return;
                }
            }
        }
    }

    /// Sleep until a writer finishes a record past `d` (or the state changes).
    fn sleep_until_filled(&self, d: Lsn, st: u8) {
        let mut g = self.lock.lock();
        self.wake_at.store(d + 1, SeqCst);
        let (ready, busy) = self.res.ready();
        let closing_done = st & CLOSED != 0 && !busy && self.res.tail() <= d;
        if ready <= d && self.state.load(SeqCst) == st && !closing_done {
            self.flusher_cv.wait(&mut g);
        }
        self.wake_at.store(NO_WAKE, SeqCst);
    }

    /// Group commit: wait up to `group_delay` for `group_bytes` to be ready; returns the ready
    /// point reached.
    fn gather(&self, d: Lsn, st: u8) -> Lsn {
        let deadline = Instant::now() + self.group_delay;
        let mut best = d;
        let mut g = self.lock.lock();
        loop {
            self.wake_at.store(d + self.group_bytes, SeqCst);
            best = best.max(self.res.ready().0);
            if best - d >= self.group_bytes
                || self.state.load(SeqCst) != st
                || self.space_waiters.load(SeqCst) > 0
                || self.flusher_cv.wait_until(&mut g, deadline).timed_out()
            {
                break;
            }
        }
        self.wake_at.store(NO_WAKE, SeqCst);
        drop(g);
        best.max(self.res.ready().0)
    }

    /// A flush up to `ready` succeeded: publish it and wake whoever waits for it.
    fn publish(&self, ready: Lsn) {
        self.device.note_durable(ready);
        self.durable.store(ready, SeqCst);
        self.flushes.fetch_add(1, Relaxed);
        if self.state.load(SeqCst) & STALLED != 0 {
            let mut g = self.lock.lock();
            self.state.fetch_and(!STALLED, SeqCst);
            self.nospace_upto.store(0, SeqCst);
            g.nospace = None;
        }
        if self.waiters.load(SeqCst) > 0 || self.space_waiters.load(SeqCst) > 0 {
            let _g = self.lock.lock();
            self.durable_cv.notify_all();
        }
    }

    /// A flush up to `ready` failed with `NoSpace`: fail its waiters, refuse new appends.
    fn stall(&self, ready: Lsn, e: WalError) {
        let mut g = self.lock.lock();
        g.nospace = Some(e);
        self.nospace_upto.fetch_max(ready, SeqCst);
        self.state.fetch_or(STALLED, SeqCst);
        self.durable_cv.notify_all();
    }
}

/// Spin briefly, then yield, then sleep for growing short intervals (at most 1 ms).
fn backoff(step: &mut u32) {
    let s = *step;
    *step = s.saturating_add(1);
    if s < 16 {
        for _ in 0..(1u32 << (s / 4).min(3)) * 8 {
            std::hint::spin_loop();
        }
    } else if s < 32 {
        std::thread::yield_now();
    } else {
        let us = 10u64 << ((s - 32) / 8).min(6);
        std::thread::sleep(Duration::from_micros(us.min(1000)));
    }
}
