//! The storage seam: a [`Store`] is where a stream's bytes are written out and made durable
//! (write-at, sync, truncate, and reading back as a [`StreamSource`]), and a
//! [`BufferedDevice`] puts the DRAM ring writers fill in front of one. The ring, its `reusable`
//! watermark and the flush (write out, let the ring be refilled, sync) are written here once,
//! for every storage: the segment files of [`FileDevice`](crate::device::FileDevice), a
//! replicated device's messages, a test's toy storage. Group commit (when to flush what) is
//! the stream's (`crate::stream`).
//!
//! A device whose fills are durable in place (the persistent-memory ring, the null device)
//! implements [`Device`] itself: it has no DRAM ring and no flush to make.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::device::ring::DramRing;
use crate::device::{Device, DeviceInfo};
use crate::scan::StreamSource;
use crate::{Lsn, WalError};

/// The DRAM ring per stream that a [`BufferedDevice`] gets unless its configuration says
/// otherwise (the file device's `buffer_size`, a replicated device's).
pub const DEFAULT_BUFFER_SIZE: usize = 16 << 20;

/// Where a [`BufferedDevice`]'s bytes go: storage addressed by stream position.
///
/// The device calls `write_at` and `sync` from one flusher at a time, with increasing,
/// contiguous ranges; each range starts where the last successful write ended (or where
/// [`Store::end`] or [`Store::truncate`] put the stream), except that a write that failed
/// is retried from the same start, possibly with a longer end. The [`StreamSource`] half reads
/// the stream back for the scanner (and, with [`Store::align`] above 1, for the device
/// itself).
pub trait Store: Send + Sync + StreamSource {
    /// What the storage is, for reports ([`Device::info`]).
    fn info(&self) -> DeviceInfo;
    /// Where the next write goes, as opened (the end of the written extent): the stream
    /// appends there until [`Store::truncate`] says otherwise.
    fn end(&self) -> Lsn;
    /// Writes cover whole blocks of this many bytes (O_DIRECT: 4096), so the block holding the
    /// end of the last write is written again by the next one: the device keeps it in the ring
    /// (its `reusable` point is the written end aligned down). 1 (the default): no block.
    fn align(&self) -> u64 {
        1
    }
    /// Write `[from, to)` out, reading the bytes from `ring` (`ring.read(lsn, buf)`). The
    /// bytes need not be durable until [`Store::sync`]. A failure here leaves the ring as it
    /// is, so the same range can be written again: `NoSpace` (and a replicated storage's
    /// `Remote`) stall the stream, which retries; other errors poison it.
    fn write_at(&self, ring: &DramRing, from: Lsn, to: Lsn) -> Result<(), WalError>;
    /// Make everything written so far durable. A failure poisons the stream (a failed fsync is
    /// never retried: the kernel may have dropped the dirty pages), and the ring's bytes are
    /// never asked for again.
    fn sync(&self) -> Result<(), WalError>;
    /// Check (and prepare, e.g. preallocate) space for bytes up to `upto`; `NoSpace` if there
    /// is none ([`Device::ensure_space`], asked on every append: keep its fast path to a
    /// load). Default: always room.
    fn ensure_space(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    /// After recovery: discard everything at and after `end` durably, so no stale byte
    /// beyond it can ever decode as a record; the next write starts at `end`
    /// ([`Device::reset_tail`]).
    fn truncate(&self, end: Lsn) -> Result<(), WalError>;
    /// Space before `upto` is no longer needed (checkpoint truncation, [`Device::release`]).
    fn release(&self, upto: Lsn) -> Result<(), WalError>;
}

/// A [`Device`] made of a DRAM ring in front of a [`Store`] (see the module doc).
///
/// * Writers copy records into the ring at `lsn % capacity` ([`Device::fill`]); a flush of
///   `[from, to)` writes the range out ([`Store::write_at`]), advances `reusable` (before
///   the sync, so writers can refill the ring meanwhile) and syncs ([`Store::sync`]). A
///   flush whose write fails (for example with `NoSpace`) leaves `reusable` alone, so it can be
///   retried from the ring; a failed sync poisons the stream, so its bytes are never needed
///   again.
/// * Hot path: a fill is one copy into the ring; `reusable` is one atomic load.
pub struct BufferedDevice<S> {
    store: S,
    ring: DramRing,
    reusable: AtomicU64,
    /// [`Store::align`], asked once.
    align: u64,
}

impl<S: std::fmt::Debug> std::fmt::Debug for BufferedDevice<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferedDevice")
            .field("store", &self.store)
            .field("buffer", &self.ring.capacity())
            .finish_non_exhaustive()
    }
}

fn align_down(x: u64, align: u64) -> u64 {
    x / align * align
}

/// Read exactly `buf.len()` bytes of `src` at `lsn`; an error if the stream ends first.
pub(crate) fn read_exact(
    src: &(impl StreamSource + ?Sized),
    lsn: Lsn,
    buf: &mut [u8],
) -> Result<(), WalError> {
    let n = src.read_at(lsn, buf)?;
    if n < buf.len() {
        return Err(WalError::Misuse(crate::Misuse::PastEnd {
            op: "read",
            lsn,
            len: buf.len() as u64,
            end: lsn + n as u64,
            on: None,
        }));
    }
    Ok(())
}

impl<S: Store> BufferedDevice<S> {
    /// `store` behind a DRAM ring of `buffer_size` bytes (at least 1; with
    /// [`Store::align`] above 1, at least twice the alignment), appending at
    /// [`Store::end`] until [`Device::reset_tail`] says otherwise.
    pub fn new(store: S, buffer_size: usize) -> Result<BufferedDevice<S>, WalError> {
        let align = store.align().max(1);
        let dev = BufferedDevice {
            ring: DramRing::new(buffer_size.max(1)),
            reusable: AtomicU64::new(0),
            align,
            store,
        };
        dev.set_position(dev.store.end())?;
        Ok(dev)
    }

    /// The store behind the ring.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Make `end` the next write position: with blocks ([`Store::align`]), load the
    /// partial block before it into the ring, which the next write writes again.
    fn set_position(&self, end: Lsn) -> Result<(), WalError> {
        let reusable = align_down(end, self.align);
        let head = (end - reusable) as usize;
        if head > 0 {
            let mut tmp = vec![0u8; head];
            read_exact(&self.store, reusable, &mut tmp)?;
            self.ring.write(reusable, &tmp);
        }
        self.reusable.store(reusable, Ordering::Release);
        Ok(())
    }
}

impl<S: Store> Device for BufferedDevice<S> {
    fn info(&self) -> DeviceInfo {
        self.store.info()
    }

    fn capacity(&self) -> u64 {
        self.ring.capacity()
    }

    fn reusable(&self) -> Lsn {
        self.reusable.load(Ordering::Acquire)
    }

    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        self.ring.write(lsn, bytes);
    }

    fn durable_on_fill(&self) -> bool {
        false
    }

    fn flush(&self, from: Lsn, to: Lsn) -> Result<(), WalError> {
        if to <= from {
            return Ok(());
        }
        self.store.write_at(&self.ring, from, to)?;
        // Written out: the ring may be refilled while the sync runs (only the write phase can
        // fail with a retryable NoSpace or Remote; a failed sync poisons the stream).
        self.reusable
            .fetch_max(align_down(to, self.align), Ordering::AcqRel);
        self.store.sync()
    }

    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError> {
        self.store.ensure_space(upto)
    }

    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        self.store.truncate(end)?;
        self.set_position(end)
    }

    fn release(&self, upto: Lsn) -> Result<(), WalError> {
        self.store.release(upto)
    }
}

impl<S: Store> StreamSource for BufferedDevice<S> {
    fn start(&self) -> Lsn {
        self.store.start()
    }

    fn limit(&self) -> Lsn {
        self.store.limit()
    }

    fn sealed(&self) -> Lsn {
        self.store.sealed()
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        self.store.read_at(lsn, buf)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        self.store.salt_for(lsn)
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        self.store.locate(lsn)
    }

    fn data_end(&self, from: Lsn) -> Result<Lsn, WalError> {
        self.store.data_end(from)
    }
}
