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

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Release, SeqCst};
use std::thread::JoinHandle;
use std::time::Duration;

use braid_pmem::{CACHE_LINE, HEADER_SIZE, Region};
use parking_lot::{Condvar, Mutex};

use crate::device::file::{FileDeviceConfig, SegmentLog};
use crate::device::{Device, DeviceInfo};
use crate::fs::{Fs, RealFs};
use crate::scan::StreamSource;
use crate::{Lsn, WalError};

/// How [`Device::fill`] copies a record into the ring and persists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PmemWrite {
    /// Streaming (non-temporal) stores, then a fence.
    #[default]
    NonTemporal,
    /// Ordinary stores, cache-line flushes, then a fence.
    StoreFlush,
}

/// How a [`PmemDevice`] uses its region.
#[derive(Debug, Clone)]
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
pub const RING_MAGIC: [u8; 8] = *b"BRAIDRNG";
/// Ring header format version.
pub const RING_VERSION: u32 = 1;
/// Bytes of the usable area taken by the ring header.
pub const RING_HEADER: usize = 4096;
/// Smallest ring accepted.
pub const MIN_RING: u64 = 4096;

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

/// The checksum salt of ring lap `lap` (splitmix64 finaliser of the ring salt and the lap).
fn lap_salt(salt: u32, lap: u64) -> u32 {
    let mut x = (u64::from(salt) << 32 | u64::from(salt))
        ^ lap.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ 0x5249_4E47;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    // Folding: the truncation to the low half is intended.
    (x ^ (x >> 32)) as u32
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The constant part of a ring header (magic included), with its crc.
fn encode_header(stream: u32, salt: u32, cap: u64) -> [u8; CONST_LEN] {
    let mut b = [0u8; CONST_LEN];
    b[..8].copy_from_slice(&RING_MAGIC);
    b[OFF_VERSION..OFF_VERSION + 4].copy_from_slice(&RING_VERSION.to_le_bytes());
    b[OFF_STREAM..OFF_STREAM + 4].copy_from_slice(&stream.to_le_bytes());
    b[OFF_SALT..OFF_SALT + 4].copy_from_slice(&salt.to_le_bytes());
    b[OFF_CAP..OFF_CAP + 8].copy_from_slice(&cap.to_le_bytes());
    let crc = crc32c::crc32c(&b[..OFF_CRC]);
    b[OFF_CRC..CONST_LEN].copy_from_slice(&crc.to_le_bytes());
    b
}

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
            return Err(WalError::Config(format!(
                "pmem region {name} of {usable} bytes is too small for a log ring (at least {} bytes)",
                RING_HEADER as u64 + MIN_RING
            )));
        }
        let salt = open_header(&region, &name, cfg.stream, cap)?;
        let head = u64::from_le(region.load_u64(OFF_HEAD));
        let start = u64::from_le(region.load_u64(OFF_START));
        if !head.is_multiple_of(8) || !start.is_multiple_of(8) {
            return Err(WalError::BadSegment {
                file: name,
                reason: format!(
                    "damaged log ring header (head {head} / start {start} not record-aligned)"
                ),
            });
        }
        // Space is released only below the durable point, which never passes the ring window:
        // a start beyond it would make every record look released.
        if head.checked_add(cap).is_none_or(|limit| start > limit) {
            return Err(WalError::BadSegment {
                file: name,
                reason: format!(
                    "damaged log ring header (start {start} beyond the ring window of head {head} and {cap} bytes)"
                ),
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
                .map_err(|e| {
                    WalError::Config(format!("cannot start the de-staging thread: {e}"))
                })?;
            Some(h)
        } else {
            None
        };
        Ok(PmemDevice { ring, destager })
    }

    /// The region holding the ring.
    pub fn region(&self) -> &Region {
        &self.ring.region
    }

    /// The oldest LSN the ring holds.
    pub fn head(&self) -> Lsn {
        self.ring.head.load(Acquire)
    }

    /// The ring's random salt (from its header).
    pub fn salt(&self) -> u32 {
        self.ring.salt
    }

    /// The segment files behind the ring, when de-staging.
    pub fn destage_log(&self) -> Option<&SegmentLog> {
        self.ring.destage.as_ref().map(|d| &d.log)
    }

    /// Run one de-staging round now, on the calling thread: copy `[head, durable)` to the files,
    /// sync them and advance the head. A no-op without de-staging.
    pub fn destage_now(&self) -> Result<(), WalError> {
        match &self.ring.destage {
            Some(d) => self.ring.destage_once(d, &mut Vec::new()),
            None => Ok(()),
        }
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

/// Check (or write) the ring header; returns the ring salt.
fn open_header(region: &Region, name: &str, stream: u32, cap: u64) -> Result<u32, WalError> {
    let mut hdr = vec![0u8; RING_HEADER];
    region.read(0, &mut hdr);
    let not_ring = |why: String| WalError::BadSegment {
        file: name.to_string(),
        reason: why,
    };
    if hdr[..8] == RING_MAGIC {
        let version = le_u32(&hdr, OFF_VERSION);
        if version != RING_VERSION {
            return Err(not_ring(format!(
                "log ring format version {version}, this braid reads version {RING_VERSION}"
            )));
        }
        if crc32c::crc32c(&hdr[..OFF_CRC]) != le_u32(&hdr, OFF_CRC) {
            return Err(not_ring(
                "damaged log ring header (checksum mismatch)".to_string(),
            ));
        }
        let found = le_u32(&hdr, OFF_STREAM);
        if found != stream {
            return Err(WalError::Config(format!(
                "pmem region {name} holds the log ring of stream {found}, not of stream {stream}; \
                 give each stream its own region"
            )));
        }
        let found_cap = le_u64(&hdr, OFF_CAP);
        if found_cap != cap {
            return Err(not_ring(format!(
                "log ring of {found_cap} bytes, but the region has room for {cap}; open the region with \
                 the size it was created with"
            )));
        }
        return Ok(le_u32(&hdr, OFF_SALT));
    }
    // No magic: a new ring (all zero) or a format interrupted before its magic was written
    // (which writes nothing but bytes 8..36 before the magic; see the module docs).
    let blank = hdr[..8].iter().chain(&hdr[CONST_LEN..]).all(|b| *b == 0);
    if !blank {
        return Err(not_ring(
            "not a braid log ring (no ring magic and not empty); point the stream at another region".to_string(),
        ));
    }
    let salt: u32 = rand::random();
    let h = encode_header(stream, salt, cap);
    // Everything but the magic first, then the magic: a torn format is recognisable.
    region.write(8, &h[8..]);
    region.persist(0, CONST_LEN);
    region.write(0, &h[..8]);
    region.persist(0, 8);
    region.check()?;
    Ok(salt)
}

impl Ring {
    #[inline]
    fn off(&self, lsn: Lsn) -> usize {
        // lsn % cap < cap <= region length, which is a usize.
        RING_HEADER + (lsn % self.cap) as usize
    }

    /// Apply `f(region offset, range in the slice)` to the ring pieces of `[lsn, lsn + len)`.
    #[inline]
    fn pieces(&self, lsn: Lsn, len: usize, mut f: impl FnMut(usize, std::ops::Range<usize>)) {
        let first = len.min((self.cap - lsn % self.cap) as usize);
        f(self.off(lsn), 0..first);
        if first < len {
            f(RING_HEADER, first..len);
        }
    }

    /// Store and persist a header word; an error if the region's persistence failed.
    fn set_word(&self, off: usize, v: Lsn) -> Result<(), WalError> {
        self.region.store_u64(off, v.to_le());
        self.region.persist(off, 8);
        Ok(self.region.check()?)
    }

    fn set_head(&self, head: Lsn) -> Result<(), WalError> {
        let _g = self.header.lock();
        if head > self.head.load(Acquire) {
            self.set_word(OFF_HEAD, head)?;
            self.head.store(head, Release);
        }
        Ok(())
    }

    fn full_error(&self) -> WalError {
        WalError::LogFull {
            what: format!("{} (stream {}, {} bytes)", self.name, self.stream, self.cap),
        }
    }

    /// At open: make the de-staged files and the ring agree (see the module docs).
    fn reconcile_files(&self, d: &Destage) -> Result<(), WalError> {
        let head = self.head.load(Acquire);
        let (fstart, fend) = (d.log.start(), d.log.end());
        let dir = d.log.dir().display().to_string();
        if fend > head {
            if fstart > head {
                return Err(WalError::BadSegment {
                    file: dir,
                    reason: format!(
                        "de-staged files start at LSN {fstart}, after the ring head {head}"
                    ),
                });
            }
            // Bytes the ring still holds; they may not have been synced.
            d.log.reset_tail(head)?;
        } else if fend < head {
            let reason = if fend <= fstart {
                format!(
                    "the ring has recycled LSNs before {head} but the de-staging directory holds nothing; \
                     de-staging must be enabled from the ring's first use (or use a fresh region)"
                )
            } else {
                format!(
                    "de-staged files end at LSN {fend} but the ring starts at {head}: files are missing"
                )
            };
            return Err(WalError::BadSegment { file: dir, reason });
        }
        Ok(())
    }

    /// One de-staging round: copy `[head, durable)` to the files, sync, advance the head.
    fn destage_once(&self, d: &Destage, buf: &mut Vec<u8>) -> Result<(), WalError> {
        let _round = d.round.lock();
        let head = self.head.load(Acquire);
        let durable = self.durable.load(Acquire);
        if durable <= head {
            return Ok(());
        }
        if buf.len() < DESTAGE_CHUNK {
            buf.resize(DESTAGE_CHUNK, 0);
        }
        let mut at = head;
        while at < durable {
            let n = DESTAGE_CHUNK.min((durable - at) as usize);
            let chunk = &mut buf[..n];
            self.read_ring(at, chunk);
            d.log.write(at, chunk)?;
            at += n as u64;
        }
        d.log.sync()?;
        self.set_head(durable)
    }

    fn destage_main(self: Arc<Self>) {
        let Some(d) = &self.destage else { return };
        let mut buf = Vec::new();
        let mut backoff = Duration::from_millis(1);
        loop {
            let stop = {
                let mut g = d.lock.lock();
                while !g.requested && !g.stop {
                    d.cv.wait(&mut g);
                }
                g.requested = false;
                d.requested.store(false, SeqCst);
                g.stop
            };
            let r = self.destage_once(d, &mut buf);
            let mut g = d.lock.lock();
            match r {
                Ok(()) => {
                    g.error = None;
                    backoff = Duration::from_millis(1);
                }
                Err(e) => {
                    g.error = Some(e);
                    if !stop {
                        // Retry after a pause (a stop or a new request ends it early).
                        d.cv.wait_for(&mut g, backoff);
                        g.requested = true;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                }
            }
            if stop {
                return;
            }
        }
    }

    fn request_destage(&self, d: &Destage) {
        if !d.requested.swap(true, SeqCst) {
            let mut g = d.lock.lock();
            g.requested = true;
            d.cv.notify_all();
        }
    }

    /// Copy ring bytes at `[lsn, lsn + buf.len())` (inside the window) into `buf`.
    fn read_ring(&self, lsn: Lsn, buf: &mut [u8]) {
        self.pieces(lsn, buf.len(), |off, r| self.region.read(off, &mut buf[r]));
    }
}

impl StreamSource for PmemDevice {
    fn start(&self) -> Lsn {
        let r = &self.ring;
        let start = r.start.load(Acquire);
        match &r.destage {
            Some(d) => start.max(d.log.start()),
            None => r.head.load(Acquire).max(start),
        }
    }

    fn limit(&self) -> Lsn {
        self.ring.head.load(Acquire) + self.ring.cap
    }

    fn sealed(&self) -> Lsn {
        self.ring.head.load(Acquire)
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let r = &self.ring;
        let head = r.head.load(Acquire);
        let limit = head + r.cap;
        let mut done = 0usize;
        let mut at = lsn;
        if at < head {
            let Some(d) = &r.destage else { return Ok(0) };
            let n = buf
                .len()
                .min(usize::try_from(head - at).unwrap_or(usize::MAX));
            let got = d.log.read_at(at, &mut buf[..n])?;
            done += got;
            at += got as u64;
            if got < n {
                return Ok(done);
            }
        }
        if at >= limit || done == buf.len() {
            return Ok(done);
        }
        let n = (buf.len() - done).min(usize::try_from(limit - at).unwrap_or(usize::MAX));
        r.read_ring(at, &mut buf[done..done + n]);
        Ok(done + n)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        lap_salt(self.ring.salt, lsn / self.ring.cap)
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        let r = &self.ring;
        if lsn < r.head.load(Acquire)
            && let Some(d) = &r.destage
        {
            return d.log.locate(lsn);
        }
        let file_header = if r.region.path().is_some() {
            HEADER_SIZE as u64
        } else {
            0
        };
        (r.name.clone(), file_header + (r.off(lsn) as u64))
    }
}

impl Device for PmemDevice {
    fn info(&self) -> DeviceInfo {
        let location = self
            .ring
            .region
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let r = &self.ring.region;
        let emulation = r.emulation();
        DeviceInfo {
            kind: "pmem",
            location,
            emulation,
        }
    }

    fn capacity(&self) -> u64 {
        self.ring.cap
    }

    #[inline]
    fn reusable(&self) -> Lsn {
        self.ring.head.load(Acquire)
    }

    #[inline]
    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        let r = &*self.ring;
        match r.write {
            PmemWrite::NonTemporal => r.pieces(lsn, bytes.len(), |off, rg| {
                r.region.write_nt(off, &bytes[rg])
            }),
            PmemWrite::StoreFlush => r.pieces(lsn, bytes.len(), |off, rg| {
                let len = rg.len();
                r.region.write(off, &bytes[rg]);
                r.region.flush(off, len);
            }),
        }
        r.region.fence();
    }

    fn durable_on_fill(&self) -> bool {
        true
    }

    fn check_fills(&self) -> Result<(), WalError> {
        Ok(self.ring.region.check()?)
    }

    fn flush(&self, _from: Lsn, _to: Lsn) -> Result<(), WalError> {
        // Fills are durable by themselves; only a persistence failure is left to report.
        self.check_fills()
    }

    #[inline]
    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError> {
        let r = &*self.ring;
        if upto <= r.head.load(Acquire) + r.cap {
            return Ok(());
        }
        match &r.destage {
            None => Err(r.full_error()),
            Some(d) => {
                r.request_destage(d);
                match &d.lock.lock().error {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                }
            }
        }
    }

    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        let r = &*self.ring;
        let head = r.head.load(Acquire);
        if end < head || end > head + r.cap || !end.is_multiple_of(8) {
            return Err(WalError::Config(format!(
                "reset_tail({end}) outside the ring window [{head}, {}] of {}",
                head + r.cap,
                r.name
            )));
        }
        // Zero the ring bytes for LSNs [end, head + cap): every byte outside [head, end).
        // Only chunks holding something are written (reads are cheaper than persists).
        let mut chunk = vec![0u8; ZERO_CHUNK];
        let mut at = end;
        let stop = head + r.cap;
        let mut wrote = false;
        while at < stop {
            // Stop at the ring end so a chunk is one contiguous region range.
            let to_wrap = r.cap - at % r.cap;
            let n = (ZERO_CHUNK as u64).min(stop - at).min(to_wrap) as usize;
            let off = r.off(at);
            r.region.read(off, &mut chunk[..n]);
            if chunk[..n].iter().any(|b| *b != 0) {
                r.region.fill(off, n, 0);
                r.region.flush(off, n);
                wrote = true;
            }
            at += n as u64;
        }
        if wrote {
            r.region.fence();
        }
        r.region.check()?;
        r.durable.fetch_max(end, SeqCst);
        Ok(())
    }

    fn mark_clean_end(&self, end: Lsn) -> Result<(), WalError> {
        // The ring past `end` holds records of earlier laps: zero the header slot at `end` so
        // the scan reads a clean end there (an earlier lap's record never decodes at a later
        // position, so nothing after the zeros counts as a record either).
        let r = &*self.ring;
        let stop = r.head.load(Acquire) + r.cap;
        let len = (crate::record::HEADER_LEN as u64).min(stop.saturating_sub(end)) as usize;
        if len == 0 {
            return Ok(());
        }
        let zeros = [0u8; crate::record::HEADER_LEN];
        r.pieces(end, len, |off, range| {
            r.region.write(off, &zeros[range.clone()]);
            r.region.flush(off, range.len());
        });
        r.region.fence();
        Ok(())
    }

    fn release(&self, upto: Lsn) -> Result<(), WalError> {
        let r = &*self.ring;
        let durable = r.durable.load(Acquire);
        if upto > durable {
            return Err(WalError::Config(format!(
                "release({upto}) beyond the durable point {durable} of {}",
                r.name
            )));
        }
        let _g = r.header.lock();
        if upto <= r.start.load(Acquire) {
            return Ok(());
        }
        r.set_word(OFF_START, upto)?;
        r.start.store(upto, Release);
        match &r.destage {
            None => {
                if upto > r.head.load(Acquire) {
                    r.set_word(OFF_HEAD, upto)?;
                    r.head.store(upto, Release);
                }
                Ok(())
            }
            Some(d) => d.log.remove_before(upto.min(r.head.load(Acquire))),
        }
    }

    #[inline]
    fn note_durable(&self, durable: Lsn) {
        let r = &*self.ring;
        r.durable.fetch_max(durable, SeqCst);
        if let Some(d) = &r.destage
            && durable.saturating_sub(r.head.load(Acquire)) > r.cap / 2
        {
            r.request_destage(d);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn lap_salts_differ() {
        let s = 0x1234_5678;
        let salts: Vec<u32> = (0..64).map(|l| lap_salt(s, l)).collect();
        for i in 0..salts.len() {
            for j in i + 1..salts.len() {
                assert_ne!(salts[i], salts[j]);
            }
        }
        assert_ne!(lap_salt(1, 0), lap_salt(2, 0));
    }

    #[test]
    fn header_round_trip() {
        let h = encode_header(3, 77, 1 << 20);
        assert_eq!(&h[..8], &RING_MAGIC);
        assert_eq!(le_u32(&h, OFF_STREAM), 3);
        assert_eq!(le_u32(&h, OFF_SALT), 77);
        assert_eq!(le_u64(&h, OFF_CAP), 1 << 20);
        assert_eq!(crc32c::crc32c(&h[..OFF_CRC]), le_u32(&h, OFF_CRC));
    }
}
