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
//!   and the writers waiting for ring space. Without a group-commit delay a committer that
//!   waits and finds no flush under way flushes itself (leader-based group commit,
//!   `stream/lead.rs`); flushes are one at a time whoever runs them.
//! * Pmem devices (`durable_on_fill() == true`) make each record durable in `fill`, on the
//!   writer's own thread. There is no flusher: [`Stream::wait_durable`] computes the ready
//!   point itself and publishes it with `fetch_max`. A waiter that finds the point short of
//!   its LSN (another writer is mid-fill) waits in the stream's
//!   [`Progress`](crate::wait::Progress): it spins briefly, yields, then parks until a writer
//!   finishes a fill (every fill notifies): on a machine with few cores a spinning waiter
//!   steals the CPU from the writer it waits for.
//!
//! Hot path: an append allocates nothing (the scratch buffer only grows) and takes no lock; it
//! touches the tail (one compare-and-swap), its own slot, and one word the flusher publishes
//! when it sleeps (`wake_at`), so a writer takes the mutex only when the flusher is asleep
//! waiting for exactly this record. Lost wake-ups are excluded by `SeqCst` store-then-load
//! pairs: a writer stores its idle busy word (a release store, then a `SeqCst` fence, taken
//! only by a writer that goes on to load `wake_at`) and then loads `wake_at`, the flusher stores
//! `wake_at` and then recomputes the ready point (under the mutex it sleeps on); a commit
//! waiter registers in the stream's `Progress` and then loads `durable`, the flusher stores
//! `durable` and then loads the count of registered waiters (`crate::wait` has the argument).
//! A file-device waiter spins briefly and yields a few times before it parks, which on a
//! machine with few cores hands the core to the flusher.
//!
//! The device hears of every new durable point ([`Device::note_durable`]) *before* the stream
//! publishes it, so a caller may pass [`Stream::durable`] straight to [`Device::release`].
//!
//! Failures:
//!
//! * A flush error other than `NoSpace` and `Remote` poisons the stream: the cause is stored,
//!   everyone is woken, the durable point never advances again, and every waiter and every
//!   later append gets [`WalError::Poisoned`] naming the stream and the cause. A wait for an LSN that was
//!   durable before the failure still succeeds: it was acknowledged legitimately. On pmem
//!   devices the same holds for a persistence failure that [`Device::check_fills`] reports
//!   (a failed `msync`), checked before every advance of the durable point.
//! * `NoSpace`, and `Remote` (a replicated device whose service did not answer in time), stall
//!   the stream: the waiters whose LSNs lie in the range that failed get the error (their
//!   commits are not acknowledged; their records may still become durable with the next
//!   flush, as a commit whose outcome is unknown can), new appends fail fast with it, and
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
//!
//! Files: `writer.rs` (reservation and fill), `group.rs` (one reservation filled by several
//! threads: Aether's consolidated inserts), `ready.rs` (the ready point), `durable.rs` (the
//! durable watermark and its waiters), `flusher.rs` (the file-device flusher), `lead.rs`
//! (committers that flush themselves, and the flush token), `state.rs` (state
//! bits, poisoning and stalls), `close.rs` (shutdown).

mod close;
mod durable;
mod flusher;
mod group;
mod lead;
// Public only for the loom model (`tests/loom_stream.rs`).
pub(crate) mod ready;
mod state;
mod writer;

#[cfg(test)]
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use crate::device::Device;
use crate::record::ALIGN;
use crate::wait::Progress;
use crate::{Lsn, WalError};
use close::Handle;
use ready::Reservations;
use state::{FlushClock, Inner, Locked, NO_WAKE};

pub(crate) use group::GroupWriter;
pub(crate) use state::{BusyThread, spare_core};
pub(crate) use writer::Reserved;
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) use writer::StreamWriter;

/// Most log streams a scheme runs: an LSN vector has one entry per stream (`crate::lv`; 64
/// keeps each vector within one 512-byte block, and the `u8` index of sparse record stamps
/// allows 256), and Plover's partitions of a transaction are a `u64` mask.
pub(crate) const MAX_STREAMS: usize = 64;

/// How a [`Stream`] runs. The default: stream 0, 64 writers, no group-commit delay,
/// `group_bytes` 1 MiB; these are the defaults of every scheme's streams too
/// ([`SchemeConfig::default`](crate::scheme::SchemeConfig) takes them from here). Outside the
/// crate (the `testing` feature), built from the default with its setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct StreamConfig {
    /// The stream's index: names its flusher thread and appears in errors.
    pub id: u32,
    /// Most writers (threads) at once.
    pub max_writers: usize,
    /// Group commit: the flusher waits at most this long for more bytes...
    pub group_delay: Duration,
    /// ...or until this many bytes are pending.
    pub group_bytes: usize,
    /// Only the flusher thread writes and syncs (Shore-MT's log flush daemon, which NV-Disk
    /// keeps): a waiter never leads a flush itself (`lead.rs`), it wakes the flusher and waits.
    pub flusher_only: bool,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            id: 0,
            max_writers: 64,
            group_delay: Duration::ZERO,
            group_bytes: 1 << 20,
            flusher_only: false,
        }
    }
}

// Setters for the benches and test kits outside the crate, where the type is public (the
// `testing` feature) and `#[non_exhaustive]`; inside it a literal names what it sets.
#[cfg(feature = "testing")]
impl StreamConfig {
    /// [`StreamConfig::id`] set to `id`.
    pub fn id(mut self, id: u32) -> StreamConfig {
        self.id = id;
        self
    }
    /// [`StreamConfig::max_writers`] set to `n`.
    pub fn max_writers(mut self, n: usize) -> StreamConfig {
        self.max_writers = n;
        self
    }
    /// [`StreamConfig::group_delay`] set to `d`.
    pub fn group_delay(mut self, d: Duration) -> StreamConfig {
        self.group_delay = d;
        self
    }
    /// [`StreamConfig::group_bytes`] set to `n`.
    pub fn group_bytes(mut self, n: usize) -> StreamConfig {
        self.group_bytes = n;
        self
    }
    /// [`StreamConfig::flusher_only`] set to `on`.
    pub fn flusher_only(mut self, on: bool) -> StreamConfig {
        self.flusher_only = on;
        self
    }
}

/// Counters of a log stream since it started (summed over a database's streams by the engine).
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
pub(crate) const RING_FULL_WAIT: Duration = Duration::from_millis(250);

/// A log stream on one device, as a scheme shows it for inspection ([`Scheme::streams`](crate::scheme::Scheme::streams)):
/// how far it is durable and what it has written. Cheap to clone (a shared handle).
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
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn start(
        device: Arc<dyn Device>,
        end: Lsn,
        cfg: StreamConfig,
    ) -> Result<Stream, WalError> {
        if !end.is_multiple_of(ALIGN as u64) {
            return Err(WalError::Misuse(crate::Misuse::UnalignedStart {
                lsn: end,
                align: ALIGN as u64,
                on: Some(format!("stream {}", cfg.id)),
            }));
        }
        device.reset_tail(end)?;
        // Prepare the space of the first appends now (a file device creates and preallocates
        // the segment they go to and the one ahead), so the first commit does not pay it:
        // on tmpfs, where emulated devices keep their files, preallocating two 64 MiB segments
        // took about 30 ms, inside the first commit of each stream of a measured run (a
        // Taurus stall found by the open-loop bench). A ring that is full or a disk out of
        // space is left to the first append, which waits or stalls as it always does.
        match device.ensure_space(end.saturating_add(ALIGN as u64)) {
            Ok(()) | Err(WalError::LogFull { .. } | WalError::NoSpace { .. }) => {}
            Err(e) => return Err(e),
        }
        let durable_on_fill = device.durable_on_fill();
        let inner = Arc::new(Inner {
            id: cfg.id,
            capacity: device.capacity(),
            durable_on_fill,
            lead: !durable_on_fill && cfg.group_delay.is_zero() && !cfg.flusher_only,
            flushing: CachePadded::new(AtomicBool::new(false)),
            token_wanted: AtomicBool::new(false),
            defers: AtomicBool::new(false),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            epoch: Instant::now(),
            clock: CachePadded::new(FlushClock {
                last_flush_ns: AtomicU64::new(u64::MAX),
                last_publish_ns: AtomicU64::new(0),
                flushes: AtomicU64::new(0),
                idle_passes: AtomicU64::new(0),
            }),
            group_delay: cfg.group_delay,
            group_bytes: (cfg.group_bytes as u64).max(1),
            res: Reservations::new(end, cfg.max_writers.max(1)),
            durable: CachePadded::new(AtomicU64::new(end)),
            state: CachePadded::new(AtomicU8::new(0)),
            wake_at: CachePadded::new(AtomicU64::new(NO_WAKE)),
            space_waiters: AtomicUsize::new(0),
            nospace_upto: AtomicU64::new(0),
            cause: OnceLock::new(),
            lock: Mutex::new(Locked::default()),
            flusher_cv: Condvar::new(),
            progress: Progress::new(),
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
                .map_err(|e| WalError::thread_start("stream flusher", e))?;
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
    pub(crate) fn id(&self) -> u32 {
        self.h.inner.id
    }

    /// Claim one of the `max_writers` writer slots.
    pub(crate) fn claim_slot(&self) -> Result<usize, WalError> {
        let inner = &self.h.inner;
        let slot = inner.res.claim().ok_or_else(|| WalError::TooMany {
            what: "writer slots of a log stream",
            max: inner.res.slots(),
            remedy: "raise max_writers",
        })?;
        // Checked after claiming: a writer that panicked mid-append frees its slot only after
        // poisoning the stream, so a new owner of that slot always sees the poison.
        if let Err(e) = inner.check_state(false) {
            inner.res.release(slot);
            return Err(e);
        }
        state::BUSY_THREADS.fetch_add(1, Relaxed);
        Ok(slot)
    }

    /// A writer for the calling thread: claims one of `max_writers` slots until dropped.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn writer(&self) -> Result<StreamWriter, WalError> {
        let slot = self.claim_slot()?;
        Ok(StreamWriter {
            h: Arc::clone(&self.h),
            slot,
            buf: Vec::new(),
            cost: crate::proxy::AppendCost::default(),
            defer_wake: false,
            reusable_seen: 0,
            pending: None,
        })
    }

    /// Everything before this LSN is durable.
    pub fn durable(&self) -> Lsn {
        self.h.inner.durable.load(Acquire)
    }

    /// The next append goes here.
    pub(crate) fn tail(&self) -> Lsn {
        self.h.inner.res.tail()
    }

    /// Block until everything before `lsn` is durable, or fail with the error that prevents it
    /// (poisoned stream, `NoSpace` for this LSN, or the stream was closed without it).
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn wait_durable(&self, lsn: Lsn) -> Result<(), WalError> {
        self.h.inner.wait_durable(lsn)
    }

    /// Non-blocking [`Stream::wait_durable`]: `Ok(false)` if not durable yet.
    pub(crate) fn check_durable(&self, lsn: Lsn) -> Result<bool, WalError> {
        self.h.inner.check_durable(lsn)
    }

    /// Flush everything appended, stop the flusher and join it. Later appends fail with
    /// [`WalError::Closed`]. Idempotent; returns the error that prevented flushing everything.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn close(&self) -> Result<(), WalError> {
        self.h.close()
    }

    /// Counters since the stream started.
    pub fn stats(&self) -> StreamStats {
        let inner = &self.h.inner;
        let (records, bytes) = inner.res.totals();
        StreamStats {
            bytes,
            records,
            flushes: inner.clock.flushes.load(Relaxed),
        }
    }

    /// Test hook: wake the flusher and wait until it has gone back to sleep having found
    /// nothing to flush, its look at the ready point taken after this call began. `false` if
    /// that did not happen within `timeout` (the flusher is flushing, or has stopped). A
    /// stream without a flusher (`durable_on_fill`) returns `true` at once.
    #[cfg(test)]
    pub(crate) fn flusher_idle_pass(&self, timeout: Duration) -> bool {
        let inner = &self.h.inner;
        if inner.durable_on_fill {
            return true;
        }
        let deadline = Instant::now() + timeout;
        // Read under the lock the flusher holds from its look at the ready point to its
        // count: a count past `seen` comes from a look taken after this point.
        let seen = {
            let _g = inner.lock.lock();
            inner.flusher_cv.notify_all();
            inner.clock.idle_passes.load(SeqCst)
        };
        // The flusher notifies `progress` after counting an idle pass and when it exits.
        inner
            .progress
            .wait_until(deadline, || {
                if inner.clock.idle_passes.load(SeqCst) != seen {
                    return Some(true);
                }
                inner.lock.lock().flusher_done.then_some(false)
            })
            .unwrap_or(false)
    }

    /// Test hook: threads blocked in [`Stream::wait_durable`] right now (file devices).
    #[cfg(test)]
    pub(crate) fn blocked_waiters(&self) -> usize {
        self.h.inner.progress.parked()
    }

    /// The device the stream appends to.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn device(&self) -> &Arc<dyn Device> {
        &self.h.inner.device
    }
}
