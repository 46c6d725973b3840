//! A log ring in persistent memory: the NVM log buffer of Wang & Johnson 2014 (Section 4: log
//! buffers in NVM, de-staged to disk when full) serving as the log of a Taurus log manager
//! (Xia et al. 2021, Alg. 1-2), where every writer persists its own record so the durable point
//! is simply the ready point.
//!
//! Layout of the region's usable area:
//!
//! ```text
//! 0..4096   ring header
//!   0..8      magic "BRAIDRNG"
//!   8..12     format version (u32 LE)
//!   12..16    stream id (u32 LE)
//!   16..20    random ring salt (u32 LE)
//!   20..24    zero
//!   24..32    capacity in bytes (u64 LE)
//!   32..36    crc32c of bytes 0..32
//!   64..72    head LSN (u64 LE, an atomic 8-byte word): the oldest byte the ring still holds
//!   128..136  start LSN (u64 LE, atomic): the oldest byte still needed (checkpoint release)
//! 4096..    the ring: stream position `lsn` lives at ring offset `lsn % capacity`
//! ```
//!
//! * The ring holds `[head, head + capacity)`; a record may wrap (it is copied in two pieces).
//!   [`Device::fill`] copies with streaming stores ([`PmemWrite::NonTemporal`]) or plain
//!   stores and cache-line write-backs ([`PmemWrite::StoreFlush`]), then fences, on the
//!   writer's own thread: a record is durable when `fill` returns. ADR versus eADR is the
//!   region's configuration (braid-pmem skips write-backs under eADR).
//! * Media: on a region file that is not DAX persistent memory, flush + fence only reach the
//!   page cache; a region with [`braid_pmem::Media::Msync`] also `msync`s every flushed or
//!   streamed range inside `fill`. `fill` cannot fail, so a failed `msync` is kept by the
//!   region, and [`Device::check_fills`] reports it ([`braid_pmem::Region::check`]): the stream
//!   asks before it publishes a durable point, so the failure poisons the stream and nothing
//!   written since is acknowledged. Header words, formatting and `reset_tail` check the region
//!   after persisting too. A region with `Media::Emulated` is not power-safe.
//! * Salts: a record starting at `lsn` is checksummed with a mix of the ring salt and the lap
//!   number `lsn / capacity`, so a record left over from an earlier lap (or an earlier ring
//!   in the same region) never decodes, even before its stored LSN is compared.
//! * Concurrent writers persist out of order, so after a crash the ring may hold valid records
//!   after a hole; the scanner stops at the hole (records carry the durable point they were
//!   written under, which tells a hole no one acknowledged from corruption), and
//!   [`Device::reset_tail`] zeroes every ring byte outside `[head, end)` — the records after
//!   the hole and the stale bytes of earlier laps — so nothing beyond the recovered end can
//!   ever decode later.
//! * Without de-staging the ring drains only by [`Device::release`] (checkpoint truncation),
//!   and `ensure_space` beyond the window is [`WalError::LogFull`]: the stream waits a little
//!   for a checkpoint and then fails the append.
//! * De-staging (`destage = Some(..)`): a background thread ("braid-destage-N") copies durable
//!   ring bytes `[head, durable)` to a [`SegmentLog`] when more than half the ring is durable
//!   and not yet copied (and when an append finds the ring full, and when the device is
//!   dropped), fdatasyncs it, and only then advances `head`. As a [`StreamSource`] the device
//!   presents the files for `[start, head)` and the ring after that as one stream; records keep
//!   the ring's salts. The durable point comes from [`Device::note_durable`]. Segment writes
//!   are buffered (O_DIRECT is turned off for de-staging: ring ranges are not block-aligned).
//!   At open, file bytes at or beyond `head` (a crash between writing the files and moving
//!   `head`; possibly unsynced) are truncated away — the ring still holds them. A directory
//!   that does not reach `head`, or starts after it, is refused, as is enabling de-staging on a
//!   ring that has already recycled space without it.
//! * Formatting is crash-safe: bytes 8..36 of the header are written and persisted first, then
//!   the magic. A header without the magic whose bytes outside 8..36 are all zero is a new ring
//!   or such an interrupted format, and is formatted (again); anything else without the magic
//!   is refused as not a ring. The head and start words are updated one 8-byte atomic word at a
//!   time and persisted; at open, words that are not record-aligned or a start beyond the ring
//!   window (`head + capacity`, which no release can pass) are refused as a damaged header.
//!
//! One file per mechanism: `header` (ring header codec, formatting, lap salts), `ring`
//! (ring offsets, header words, read-back as a stream source), `destage` (the copy to segment
//! files) and `device_impl` (the [`Device`] operations: fill, space, tail reset, release).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Acquire;
use std::thread::JoinHandle;

use braid_pmem::{CACHE_LINE, Region};
use parking_lot::{Condvar, Mutex};

#[cfg(test)]
use crate::Lsn;
use crate::device::file::{FileDeviceConfig, SegmentLog};
use crate::fs::{Fs, RealFs};
use crate::{RingFault, SegmentDamage, WalError};

mod destage;
mod device_impl;
mod header;
mod ring;

#[cfg(doc)]
use crate::device::Device;
#[cfg(doc)]
use crate::scan::StreamSource;
use header::open_header;

/// How [`Device::fill`] copies a record into the ring and persists it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    strum::Display,
    strum::EnumString,
    strum::VariantNames,
)]
pub enum PmemWrite {
    /// Streaming (non-temporal) stores, then a fence (`nt`).
    #[default]
    #[strum(serialize = "nt")]
    NonTemporal,
    /// Ordinary stores, cache-line flushes, then a fence (`flush`).
    #[strum(serialize = "flush")]
    StoreFlush,
}

/// How a [`PmemDevice`] uses its region.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PmemDeviceConfig {
    /// The stream's index; stored in the ring header and checked at open.
    pub stream: u32,
    /// How records are copied in.
    pub write: PmemWrite,
    /// De-stage full ring space to segment files (Wang & Johnson: NVM log buffers go to disk when full).
    pub destage: Option<FileDeviceConfig>,
}

impl PmemDeviceConfig {
    /// A ring for `stream`, written with streaming stores, without de-staging.
    pub fn new(stream: u32) -> PmemDeviceConfig {
        PmemDeviceConfig {
            stream,
            write: PmemWrite::NonTemporal,
            destage: None,
        }
    }
}

/// Magic bytes at the start of a ring header.
pub(crate) const RING_MAGIC: [u8; 8] = *b"BRAIDRNG";
/// Ring header format version.
pub(crate) const RING_VERSION: u32 = 1;
/// Bytes of the usable area taken by the ring header.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) const RING_HEADER: usize = 4096;
/// Smallest ring accepted.
pub(crate) const MIN_RING: u64 = 4096;

const OFF_VERSION: usize = 8;
const OFF_STREAM: usize = 12;
const OFF_SALT: usize = 16;
const OFF_CAP: usize = 24;
const OFF_CRC: usize = 32;
const CONST_LEN: usize = 36;
const OFF_HEAD: usize = 64;
const OFF_START: usize = 128;

/// Bytes copied from the ring per segment write while de-staging.
const DESTAGE_CHUNK: usize = 1 << 20;
/// Chunk for scanning the ring for non-zero bytes in `reset_tail`.
const ZERO_CHUNK: usize = 64 << 10;

/// De-staging state shared with the background thread.
struct Destage {
    log: SegmentLog,
    /// One de-staging round at a time (the thread, `destage_now`).
    round: Mutex<()>,
    /// A de-staging round is wanted (fast check without the lock).
    requested: AtomicBool,
    lock: Mutex<DestageState>,
    cv: Condvar,
}

#[derive(Default)]
struct DestageState {
    requested: bool,
    stop: bool,
    /// The last round's error, until a round succeeds.
    error: Option<WalError>,
}

struct Ring {
    region: Region,
    name: String,
    stream: u32,
    salt: u32,
    cap: u64,
    write: PmemWrite,
    /// Mirror of the persistent head word.
    head: AtomicU64,
    /// Mirror of the persistent start word.
    start: AtomicU64,
    /// The stream's durable point, from `note_durable` (and `reset_tail`).
    durable: AtomicU64,
    /// Serialises header word updates (head / start) and their persists.
    header: Mutex<()>,
    destage: Option<Destage>,
}

/// A stream's log ring in a persistent-memory region, optionally de-staged to segment files.
pub struct PmemDevice {
    ring: Arc<Ring>,
    destager: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PmemDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmemDevice")
            .field("region", &self.ring.name)
            .field("stream", &self.ring.stream)
            .field("capacity", &self.ring.cap)
            .field("head", &self.ring.head.load(Acquire))
            .field("destage", &self.ring.destage.is_some())
            .finish()
    }
}

impl PmemDevice {
    /// Format `region` as an empty log ring, or open the ring it holds.
    pub fn open(region: Region, cfg: PmemDeviceConfig) -> Result<PmemDevice, WalError> {
        PmemDevice::open_with_fs(region, cfg, Arc::new(RealFs))
    }

    /// [`PmemDevice::open`] with the file system used for de-staging.
    pub fn open_with_fs(
        region: Region,
        cfg: PmemDeviceConfig,
        fs: Arc<dyn Fs>,
    ) -> Result<PmemDevice, WalError> {
        let name = region
            .path()
            .map_or_else(|| "pmem".to_string(), |p| p.display().to_string());
        let usable = region.len() as u64;
        let cap = usable.saturating_sub(RING_HEADER as u64) / CACHE_LINE as u64 * CACHE_LINE as u64;
        if cap < MIN_RING {
            return Err(WalError::BadSize(crate::BadSize::Region {
                region: name,
                bytes: usable,
                min: RING_HEADER as u64 + MIN_RING,
            }));
        }
        let salt = open_header(&region, &name, cfg.stream, cap)?;
        let head = u64::from_le(region.load_u64(OFF_HEAD));
        let start = u64::from_le(region.load_u64(OFF_START));
        if !head.is_multiple_of(8) || !start.is_multiple_of(8) {
            return Err(WalError::BadSegment {
                file: name,
                damage: SegmentDamage::RingHeader {
                    fault: RingFault::Misaligned { head, start },
                },
            });
        }
        // Space is released only below the durable point, which never passes the ring window:
        // a start beyond it would make every record look released.
        if head.checked_add(cap).is_none_or(|limit| start > limit) {
            return Err(WalError::BadSegment {
                file: name,
                damage: SegmentDamage::RingHeader {
                    fault: RingFault::StartOutside { start, head, cap },
                },
            });
        }
        let destage = match cfg.destage {
            None => None,
            Some(mut fcfg) => {
                fcfg.stream = cfg.stream;
                fcfg.direct = false;
                let log = SegmentLog::open(fs, &fcfg)?;
                Some(Destage {
                    log,
                    round: Mutex::new(()),
                    requested: AtomicBool::new(false),
                    lock: Mutex::new(DestageState::default()),
                    cv: Condvar::new(),
                })
            }
        };
        let ring = Arc::new(Ring {
            region,
            name,
            stream: cfg.stream,
            salt,
            cap,
            write: cfg.write,
            head: AtomicU64::new(head),
            start: AtomicU64::new(start),
            durable: AtomicU64::new(head),
            header: Mutex::new(()),
            destage,
        });
        if let Some(d) = &ring.destage {
            ring.reconcile_files(d)?;
        }
        let destager = if ring.destage.is_some() {
            let r = Arc::clone(&ring);
            let h = std::thread::Builder::new()
                .name(format!("braid-destage-{}", cfg.stream))
                .spawn(move || r.destage_main())
                .map_err(|e| WalError::thread_start("de-staging", e))?;
            Some(h)
        } else {
            None
        };
        Ok(PmemDevice { ring, destager })
    }

    /// The oldest LSN the ring holds.
    #[cfg(test)]
    pub(crate) fn head(&self) -> Lsn {
        self.ring.head.load(Acquire)
    }

    /// The ring's random salt (from its header).
    #[cfg(test)]
    pub(crate) fn salt(&self) -> u32 {
        self.ring.salt
    }
}

impl Drop for PmemDevice {
    fn drop(&mut self) {
        if let (Some(d), Some(h)) = (&self.ring.destage, self.destager.take()) {
            {
                let mut g = d.lock.lock();
                g.stop = true;
                d.cv.notify_all();
            }
            // A panicked de-staging thread has nothing left to report here.
            let _ = h.join();
        }
    }
}
