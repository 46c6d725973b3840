//! [`SegmentLog`]: one stream's bytes in LSN space, stored in fixed-size segment files.
//!
//! No paper prescribes the file layout; this is the "log file" of every scheme's log manager
//! (Taurus Sec. 3: one log file per log manager) and the disk behind de-staged NVM buffers
//! (Wang & Johnson Sec. 4). The choices made here:
//!
//! * Segment `k` of stream `s` holds LSNs `[k * segment_size, (k + 1) * segment_size)` in the
//!   file `s{s:03}-{k * segment_size:016x}.log`, at file offset `4096 + (lsn - first_lsn)`.
//!   Because segment boundaries are fixed multiples of the segment size, the segment (and so
//!   the salt) of any LSN is known before its file exists. A record may span two segments: the
//!   stream is a plain byte stream. `segment_size` must be a multiple of 4096 (O_DIRECT).
//! * Segment header (4096 bytes, little endian): `0..8` magic `BRAIDSEG`, `8..12` format
//!   version, `12..16` stream id, `16..24` first LSN, `24..32` segment size, `32..36` stream
//!   salt, `36..40` crc32c of bytes `0..36`; zeros after.
//! * Stream meta file `s{s:03}.meta` (64 bytes): `0..8` magic `BRAIDMET`, `8..12` version,
//!   `12..16` stream id, `16..20` random stream salt, `20..24` zero, `24..32` segment size,
//!   `32..40` start LSN (where the first record begins after a truncation), `40..44` crc32c of
//!   `0..40`. It is written to `s{s:03}.meta.tmp`, fdatasynced, renamed over the old one and
//!   the directory fsynced, so it is always whole; it exists (durably) before any segment does.
//!   The start LSN is what lets [`SegmentLog::remove_before`] drop whole segments although a
//!   record may straddle the first kept segment's beginning.
//! * A new segment's header is written and fdatasynced (and space reserved with `allocate`
//!   when preallocating) and the directory fsynced before any record byte goes into it. Before
//!   the first byte goes into a segment, every earlier segment with unsynced writes is
//!   fdatasynced: every segment before the last one holding data is sealed (fully durable).
//!   Segments may be created ahead of the data (preallocation), so at open the sealed point is
//!   the first LSN of the *last segment that holds data* (a trailing empty segment does not
//!   vouch for the one before it).
//! * Preallocation reserves space without growing the file, so a file's size is its written
//!   extent. Where the file system grows the file instead, the extent is overstated and the
//!   tail reads as zeros, which readers already treat as "nothing written". The stream's
//!   `limit` is the end of the written extent of the last segment holding any bytes (empty
//!   segments created ahead do not count); unwritten parts of earlier segments read as zeros.
//! * A damaged record may start in a sealed segment and continue into the next, unsealed one
//!   (torn there by a crash); the scanner therefore treats `sealed` as proof of corruption
//!   only for records lying wholly before it.
//! * At open, a last segment whose header is torn (short, bad magic or bad checksum: a crash
//!   while creating it) and which holds no data is removed. A torn header anywhere else, a
//!   header of another stream, salt or segment size, or a gap in the sequence is an error
//!   naming the file.
//! * A failed fdatasync is latched: every later write, sync or truncation returns the same
//!   error (the page cache may have dropped the data; retrying and claiming success would lie).
//! * `reset_tail(end)` removes every segment after the one holding `end`, then truncates that
//!   one to `end` (truncation is how "zero the stale tail" is done: nothing beyond `end` can
//!   be read back), fdatasyncs every remaining segment so the recovered prefix is durable
//!   before new records follow it, and re-reserves the truncated segment's space.
//! * `remove_before(upto)` never removes the last segment, so the stream position survives a
//!   truncation that releases everything; `upto` must be a record boundary (it becomes the
//!   start LSN).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::device::file::FileDeviceConfig;
use crate::fs::{Fs, FsFile, OpenOpts, is_direct_aligned, is_invalid_input, is_no_space};
use crate::scan::StreamSource;
use crate::{Lsn, WalError};

/// Bytes at the start of every segment file before its first record byte.
pub const SEGMENT_HEADER: u64 = 4096;
const SEG_MAGIC: &[u8; 8] = b"BRAIDSEG";
const META_MAGIC: &[u8; 8] = b"BRAIDMET";
/// Format version of segment headers and meta files.
pub const SEGMENT_FORMAT_VERSION: u32 = 1;
const META_LEN: usize = 64;
const SEG_HEADER_USED: usize = 40;
const ZERO_CHECK_CHUNK: usize = 64 << 10;

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The checksum salt of segment `index` of a stream whose salt is `stream_salt`: a 64-bit mix
/// (splitmix64 finaliser) of both, folded to 32 bits.
pub fn segment_salt(stream_salt: u32, index: u64) -> u32 {
    let mut x = (u64::from(stream_salt) << 32 | u64::from(stream_salt))
        ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    // Folding: the truncation to the low half is intended.
    (x ^ (x >> 32)) as u32
}

/// File name of the segment of `stream` starting at `first_lsn`.
pub fn segment_file_name(stream: u32, first_lsn: Lsn) -> String {
    format!("s{stream:03}-{first_lsn:016x}.log")
}

/// File name of the meta file of `stream`.
pub fn meta_file_name(stream: u32) -> String {
    format!("s{stream:03}.meta")
}

fn parse_segment_name(stream: u32, name: &str) -> Option<Lsn> {
    let rest = name
        .strip_prefix(&format!("s{stream:03}-"))?
        .strip_suffix(".log")?;
    if rest.len() != 16 || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(rest, 16).ok()
}

struct SegHeader {
    stream: u32,
    first_lsn: Lsn,
    segment_size: u64,
    salt: u32,
}

fn encode_seg_header(h: &SegHeader) -> Vec<u8> {
    let mut b = vec![0u8; SEGMENT_HEADER as usize];
    b[0..8].copy_from_slice(SEG_MAGIC);
    b[8..12].copy_from_slice(&SEGMENT_FORMAT_VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&h.stream.to_le_bytes());
    b[16..24].copy_from_slice(&h.first_lsn.to_le_bytes());
    b[24..32].copy_from_slice(&h.segment_size.to_le_bytes());
    b[32..36].copy_from_slice(&h.salt.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..36]);
    b[36..40].copy_from_slice(&crc.to_le_bytes());
    b
}

enum HeaderProblem {
    /// Unreadable: short, bad magic or bad checksum (a crash while writing it, or damage).
    Torn(&'static str),
    /// Well-formed but not what this stream expects.
    Foreign(String),
}

fn decode_seg_header(b: &[u8]) -> Result<SegHeader, HeaderProblem> {
    if b.len() < SEG_HEADER_USED {
        return Err(HeaderProblem::Torn(
            "the header is incomplete (file shorter than its header)",
        ));
    }
    if &b[0..8] != SEG_MAGIC {
        return Err(HeaderProblem::Torn(
            "bad magic (not a braid segment header)",
        ));
    }
    if crc32c::crc32c(&b[0..36]) != u32_at(b, 36) {
        return Err(HeaderProblem::Torn("header checksum mismatch"));
    }
    let version = u32_at(b, 8);
    if version != SEGMENT_FORMAT_VERSION {
        return Err(HeaderProblem::Foreign(format!(
            "segment format version {version}, this braid reads version {SEGMENT_FORMAT_VERSION}"
        )));
    }
    Ok(SegHeader {
        stream: u32_at(b, 12),
        first_lsn: u64_at(b, 16),
        segment_size: u64_at(b, 24),
        salt: u32_at(b, 32),
    })
}

struct Meta {
    stream: u32,
    salt: u32,
    segment_size: u64,
    start: Lsn,
}

fn encode_meta(m: &Meta) -> Vec<u8> {
    let mut b = vec![0u8; META_LEN];
    b[0..8].copy_from_slice(META_MAGIC);
    b[8..12].copy_from_slice(&SEGMENT_FORMAT_VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&m.stream.to_le_bytes());
    b[16..20].copy_from_slice(&m.salt.to_le_bytes());
    b[24..32].copy_from_slice(&m.segment_size.to_le_bytes());
    b[32..40].copy_from_slice(&m.start.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..40]);
    b[40..44].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode_meta(b: &[u8]) -> Result<Meta, String> {
    if b.len() < 44 {
        return Err(format!(
            "meta file is {} bytes, expected {META_LEN}",
            b.len()
        ));
    }
    if &b[0..8] != META_MAGIC {
        return Err("bad magic (not a braid stream meta file)".into());
    }
    if crc32c::crc32c(&b[0..40]) != u32_at(b, 40) {
        return Err("meta checksum mismatch".into());
    }
    let version = u32_at(b, 8);
    if version != SEGMENT_FORMAT_VERSION {
        return Err(format!(
            "format version {version}, this braid reads version {SEGMENT_FORMAT_VERSION}"
        ));
    }
    Ok(Meta {
        stream: u32_at(b, 12),
        salt: u32_at(b, 16),
        segment_size: u64_at(b, 24),
        start: u64_at(b, 32),
    })
}

fn io_err(op: &'static str, path: &Path, e: io::Error) -> WalError {
    if is_no_space(&e) {
        WalError::NoSpace {
            path: path.to_path_buf(),
        }
    } else {
        WalError::io(op, path, e)
    }
}

fn bad(path: &Path, reason: impl Into<String>) -> WalError {
    WalError::BadSegment {
        file: path.display().to_string(),
        reason: reason.into(),
    }
}

struct Segment {
    index: u64,
    path: PathBuf,
    /// Buffered handle: header, reads, truncation, syncs.
    file: Box<dyn FsFile>,
    /// O_DIRECT handle for record writes, when configured.
    dfile: Option<Box<dyn FsFile>>,
    /// Bytes of the data area written (an upper bound after reopening).
    extent: u64,
    /// Some data byte was written (decides what is sealed).
    has_data: bool,
    /// Written since its last fdatasync.
    dirty: bool,
}

struct Inner {
    /// Contiguous segment indices, ascending.
    segs: Vec<Segment>,
    start: Lsn,
    failed: Option<WalError>,
}

/// The segment files of one stream: sequential writes at LSNs, sync, read-back for recovery.
/// Used by [`FileDevice`](crate::device::file::FileDevice) and by the pmem device's de-staging.
pub struct SegmentLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    stream: u32,
    seg_size: u64,
    salt: u32,
    direct: bool,
    preallocate: bool,
    meta_path: PathBuf,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for SegmentLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentLog")
            .field("dir", &self.dir)
            .field("stream", &self.stream)
            .field("segment_size", &self.seg_size)
            .finish_non_exhaustive()
    }
}

impl SegmentLog {
    /// Open the segments of `cfg.stream` in `cfg.dir`, or create the stream (its meta file)
    /// if it has none. Uses `cfg.dir`, `stream`, `segment_size`, `direct` and `preallocate`.
    pub fn open(fs: Arc<dyn Fs>, cfg: &FileDeviceConfig) -> Result<SegmentLog, WalError> {
        let seg_size = cfg.segment_size;
        if seg_size == 0 || seg_size & (SEGMENT_HEADER - 1) != 0 {
            return Err(WalError::Config(format!(
                "segment size {seg_size} must be a positive multiple of 4096"
            )));
        }
        let dir = cfg.dir.clone();
        fs.create_dir_all(&dir)
            .map_err(|e| io_err("create directory", &dir, e))?;
        let meta_path = dir.join(meta_file_name(cfg.stream));
        let tmp_path = dir.join(format!("{}.tmp", meta_file_name(cfg.stream)));
        if fs.exists(&tmp_path) {
            fs.remove_file(&tmp_path)
                .map_err(|e| io_err("remove", &tmp_path, e))?;
        }

        let mut names = Vec::new();
        for p in fs
            .list_dir(&dir)
            .map_err(|e| io_err("list directory", &dir, e))?
        {
            let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if let Some(first) = parse_segment_name(cfg.stream, name) {
                names.push((first, p.clone()));
            }
        }
        names.sort();

        let meta = if fs.exists(&meta_path) {
            let f = fs
                .open(&meta_path, OpenOpts::existing())
                .map_err(|e| io_err("open", &meta_path, e))?;
            let mut b = vec![0u8; META_LEN];
            let n = f
                .read_full_at(0, &mut b)
                .map_err(|e| io_err("read", &meta_path, e))?;
            let m = decode_meta(&b[..n]).map_err(|r| bad(&meta_path, r))?;
            if m.stream != cfg.stream {
                return Err(bad(
                    &meta_path,
                    format!("belongs to stream {}, not {}", m.stream, cfg.stream),
                ));
            }
            if m.segment_size != seg_size {
                return Err(bad(
                    &meta_path,
                    format!(
                        "the stream was created with segment size {}, but {} is configured; open it with its segment size",
                        m.segment_size, seg_size
                    ),
                ));
            }
            m
        } else {
            if let Some((_, p)) = names.first() {
                return Err(bad(
                    &meta_path,
                    format!(
                        "missing, but segment files of the stream exist (e.g. {})",
                        p.display()
                    ),
                ));
            }
            let m = Meta {
                stream: cfg.stream,
                salt: rand::random::<u32>(),
                segment_size: seg_size,
                start: 0,
            };
            write_meta(fs.as_ref(), &dir, &meta_path, &tmp_path, &m)?;
            m
        };

        if cfg.direct {
            match fs.open(&meta_path, OpenOpts::existing().with_direct(true)) {
                Ok(_) => {}
                Err(e) if is_invalid_input(&e) => {
                    return Err(WalError::Config(format!(
                        "the file system of {} refuses O_DIRECT ({e}); configure the log without direct I/O or put it on another file system",
                        dir.display()
                    )));
                }
                Err(e) => return Err(io_err("open O_DIRECT", &meta_path, e)),
            }
        }

        let mut log = SegmentLog {
            fs,
            dir,
            stream: cfg.stream,
            seg_size,
            salt: meta.salt,
            direct: cfg.direct,
            preallocate: cfg.preallocate,
            meta_path,
            inner: Mutex::new(Inner {
                segs: Vec::new(),
                start: meta.start,
                failed: None,
            }),
        };
        let segs = log.load_segments(&names)?;
        let inner = log.inner.get_mut();
        if let Some(first) = segs.first() {
            inner.start = inner.start.max(first.index * seg_size);
        }
        inner.segs = segs;
        Ok(log)
    }

    fn load_segments(&self, names: &[(Lsn, PathBuf)]) -> Result<Vec<Segment>, WalError> {
        let mut segs: Vec<Segment> = Vec::new();
        for (i, (first, path)) in names.iter().enumerate() {
            let is_last = i + 1 == names.len();
            if first % self.seg_size != 0 {
                return Err(bad(
                    path,
                    format!(
                        "first LSN {first} is not a multiple of the segment size {}",
                        self.seg_size
                    ),
                ));
            }
            let index = first / self.seg_size;
            let file = self
                .fs
                .open(path, OpenOpts::existing())
                .map_err(|e| io_err("open", path, e))?;
            let len = file.len().map_err(|e| io_err("stat", path, e))?;
            let mut hb = vec![0u8; SEG_HEADER_USED];
            let n = file
                .read_full_at(0, &mut hb)
                .map_err(|e| io_err("read", path, e))?;
            let extent = len.saturating_sub(SEGMENT_HEADER).min(self.seg_size);
            match decode_seg_header(&hb[..n]) {
                Ok(h) => self.check_header(path, *first, &h)?,
                Err(HeaderProblem::Foreign(r)) => return Err(bad(path, r)),
                Err(HeaderProblem::Torn(r)) => {
                    if is_last && self.data_is_zero(file.as_ref(), path, extent)? {
                        drop(file);
                        self.fs
                            .remove_file(path)
                            .map_err(|e| io_err("remove", path, e))?;
                        self.fs
                            .sync_dir(&self.dir)
                            .map_err(|e| io_err("fsync directory", &self.dir, e))?;
                        break;
                    }
                    return Err(bad(
                        path,
                        format!(
                            "damaged segment header ({r}){}",
                            if is_last { " with data after it" } else { "" }
                        ),
                    ));
                }
            }
            let prev_index = segs.last().map(|prev| prev.index);
            if prev_index.is_some_and(|p| index != p + 1) {
                return Err(bad(
                    path,
                    format!(
                        "segment missing before it (previous segment starts at LSN {})",
                        prev_index.unwrap_or(0) * self.seg_size
                    ),
                ));
            }
            let dfile = self.open_direct(path)?;
            segs.push(Segment {
                index,
                path: path.clone(),
                file,
                dfile,
                extent,
                has_data: extent > 0,
                dirty: false,
            });
        }
        // Trailing segments created ahead of the data hold only zeros: they do not seal the
        // segments before them.
        for seg in segs.iter_mut().rev() {
            if seg.extent > 0 && !self.data_is_zero(seg.file.as_ref(), &seg.path, seg.extent)? {
                break;
            }
            seg.has_data = false;
        }
        Ok(segs)
    }

    fn check_header(&self, path: &Path, first: Lsn, h: &SegHeader) -> Result<(), WalError> {
        if h.stream != self.stream {
            return Err(bad(
                path,
                format!("belongs to stream {}, not {}", h.stream, self.stream),
            ));
        }
        if h.first_lsn != first {
            return Err(bad(
                path,
                format!(
                    "header says first LSN {}, the file name says {first}",
                    h.first_lsn
                ),
            ));
        }
        if h.segment_size != self.seg_size {
            return Err(bad(
                path,
                format!(
                    "segment size {} in the header, the stream uses {}",
                    h.segment_size, self.seg_size
                ),
            ));
        }
        if h.salt != self.salt {
            return Err(bad(
                path,
                format!(
                    "salt {:#010x} differs from the stream's {:#010x} (a segment of another incarnation of the stream)",
                    h.salt, self.salt
                ),
            ));
        }
        Ok(())
    }

    fn data_is_zero(&self, file: &dyn FsFile, path: &Path, extent: u64) -> Result<bool, WalError> {
        let mut buf = vec![0u8; ZERO_CHECK_CHUNK];
        let mut off = 0;
        while off < extent {
            let want = (extent - off).min(ZERO_CHECK_CHUNK as u64) as usize;
            let n = file
                .read_full_at(SEGMENT_HEADER + off, &mut buf[..want])
                .map_err(|e| io_err("read", path, e))?;
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            if n < want {
                break;
            }
            off += want as u64;
        }
        Ok(true)
    }

    fn open_direct(&self, path: &Path) -> Result<Option<Box<dyn FsFile>>, WalError> {
        if !self.direct {
            return Ok(None);
        }
        self.fs
            .open(path, OpenOpts::existing().with_direct(true))
            .map(Some)
            .map_err(|e| io_err("open O_DIRECT", path, e))
    }

    /// The stream's index.
    pub fn stream(&self) -> u32 {
        self.stream
    }

    /// The directory holding the stream's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Record bytes per segment.
    pub fn segment_size(&self) -> u64 {
        self.seg_size
    }

    /// The stream's random salt (from its meta file).
    pub fn salt(&self) -> u32 {
        self.salt
    }

    /// Whether record writes use O_DIRECT (then [`SegmentLog::write`] needs aligned input).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Path of the meta file.
    pub fn meta_path(&self) -> &Path {
        &self.meta_path
    }

    /// Path of the segment file that holds (or will hold) `lsn`.
    pub fn segment_path(&self, lsn: Lsn) -> PathBuf {
        self.dir.join(segment_file_name(
            self.stream,
            lsn / self.seg_size * self.seg_size,
        ))
    }

    /// The existing segments as (first LSN, path), ascending.
    pub fn segments(&self) -> Vec<(Lsn, PathBuf)> {
        self.inner
            .lock()
            .segs
            .iter()
            .map(|s| (s.index * self.seg_size, s.path.clone()))
            .collect()
    }

    /// End of the last existing segment's LSN range (where the next segment would start).
    pub fn covered(&self) -> Lsn {
        let inner = self.inner.lock();
        self.covered_of(&inner)
    }

    fn covered_of(&self, inner: &Inner) -> Lsn {
        match inner.segs.last() {
            Some(s) => (s.index + 1) * self.seg_size,
            None => inner.start / self.seg_size * self.seg_size,
        }
    }

    /// End of the written extent: the end of the data of the last segment holding any
    /// (segments created ahead of the data do not count).
    fn limit_of(&self, inner: &Inner) -> Lsn {
        match inner.segs.iter().rev().find(|s| s.extent > 0) {
            Some(s) => (s.index * self.seg_size + s.extent).max(inner.start),
            None => inner.start,
        }
    }

    /// LSN just past the written extent (same as [`StreamSource::limit`]).
    pub fn end(&self) -> Lsn {
        let inner = self.inner.lock();
        self.limit_of(&inner)
    }

    /// The error of an earlier failed fdatasync, if any (then the log refuses further work).
    pub fn failure(&self) -> Option<WalError> {
        self.inner.lock().failed.clone()
    }

    fn check_failed(inner: &Inner) -> Result<(), WalError> {
        match &inner.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn sync_segment(&self, inner: &mut Inner, i: usize) -> Result<(), WalError> {
        let seg = &mut inner.segs[i];
        if let Err(e) = seg.file.sync_data() {
            let err = WalError::io("fdatasync", &seg.path, e);
            inner.failed = Some(err.clone());
            return Err(err);
        }
        seg.dirty = false;
        Ok(())
    }

    /// Create segment `index`: header written and synced (space reserved first when
    /// preallocating), directory synced. On failure the file is removed again.
    fn create_segment(&self, inner: &mut Inner, index: u64) -> Result<(), WalError> {
        let first = index * self.seg_size;
        let path = self.dir.join(segment_file_name(self.stream, first));
        let file = self
            .fs
            .open(&path, OpenOpts::create_truncate())
            .map_err(|e| io_err("create", &path, e))?;
        let header = encode_seg_header(&SegHeader {
            stream: self.stream,
            first_lsn: first,
            segment_size: self.seg_size,
            salt: self.salt,
        });
        let made = (|| {
            if self.preallocate {
                file.allocate(SEGMENT_HEADER + self.seg_size)
                    .map_err(|e| io_err("preallocate", &path, e))?;
            }
            file.write_all_at(0, &header)
                .map_err(|e| io_err("write header", &path, e))?;
            file.sync_data()
                .map_err(|e| io_err("fdatasync", &path, e))?;
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| io_err("fsync directory", &self.dir, e))?;
            self.open_direct(&path)
        })();
        match made {
            Ok(dfile) => {
                inner.segs.push(Segment {
                    index,
                    path,
                    file,
                    dfile,
                    extent: 0,
                    has_data: false,
                    dirty: false,
                });
                Ok(())
            }
            Err(e) => {
                drop(file);
                // Best effort: a leftover file with a torn header at the end is removed at the
                // next open anyway.
                let _ = self.fs.remove_file(&path);
                Err(e)
            }
        }
    }

    /// Make sure segment `index` (and every one between the last and it) exists.
    fn ensure_segment(&self, inner: &mut Inner, index: u64) -> Result<(), WalError> {
        let mut next = match inner.segs.last() {
            Some(s) => s.index + 1,
            None => inner.start / self.seg_size,
        };
        while next <= index {
            self.create_segment(inner, next)?;
            next += 1;
        }
        Ok(())
    }

    /// Create the segments needed to hold every LSN below `upto`; returns
    /// [`SegmentLog::covered`]. `NoSpace` if a segment cannot be created or reserved.
    pub fn prepare(&self, upto: Lsn) -> Result<Lsn, WalError> {
        let mut inner = self.inner.lock();
        Self::check_failed(&inner)?;
        if upto > 0 {
            self.ensure_segment(&mut inner, (upto - 1) / self.seg_size)?;
        }
        Ok(self.covered_of(&inner))
    }

    /// Write `bytes` at stream position `lsn`, creating segments as needed and sealing
    /// (fdatasyncing) every earlier segment before the first byte goes into a later one. Not
    /// durable until [`SegmentLog::sync`]. With O_DIRECT, `lsn`, the length and the buffer
    /// address must be multiples of 4096.
    pub fn write(&self, lsn: Lsn, bytes: &[u8]) -> Result<(), WalError> {
        let mut inner = self.inner.lock();
        Self::check_failed(&inner)?;
        if self.direct && !is_direct_aligned(lsn, bytes.as_ptr() as usize, bytes.len()) {
            return Err(WalError::Config(format!(
                "O_DIRECT segment write at LSN {lsn} of {} bytes is not 4096-aligned",
                bytes.len()
            )));
        }
        let first_index = match inner.segs.first() {
            Some(s) => s.index,
            None => inner.start / self.seg_size,
        };
        if lsn / self.seg_size < first_index {
            return Err(WalError::Config(format!(
                "write at LSN {lsn} before the first segment (LSN {})",
                first_index * self.seg_size
            )));
        }
        let mut pos = lsn;
        let mut rest = bytes;
        while !rest.is_empty() {
            let index = pos / self.seg_size;
            self.ensure_segment(&mut inner, index)?;
            let first_index = inner.segs[0].index;
            let i = (index - first_index) as usize;
            for j in 0..i {
                if inner.segs[j].dirty {
                    self.sync_segment(&mut inner, j)?;
                }
            }
            let seg = &mut inner.segs[i];
            let off = pos - index * self.seg_size;
            // Bounded by the segment size, which fits in memory-sized slices here.
            let n = rest.len().min((self.seg_size - off) as usize);
            let file = seg.dfile.as_ref().unwrap_or(&seg.file);
            file.write_all_at(SEGMENT_HEADER + off, &rest[..n])
                .map_err(|e| io_err("write", &seg.path, e))?;
            seg.dirty = true;
            seg.has_data = true;
            seg.extent = seg.extent.max(off + n as u64);
            pos += n as u64;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// fdatasync every segment written since its last sync, in LSN order.
    pub fn sync(&self) -> Result<(), WalError> {
        let mut inner = self.inner.lock();
        Self::check_failed(&inner)?;
        for i in 0..inner.segs.len() {
            if inner.segs[i].dirty {
                self.sync_segment(&mut inner, i)?;
            }
        }
        Ok(())
    }

    /// Discard everything at and after `end` durably (see the module doc), leaving `end` as
    /// the end of the written extent.
    pub fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        let mut inner = self.inner.lock();
        Self::check_failed(&inner)?;
        let limit = self.limit_of(&inner);
        if end < inner.start || end > limit {
            return Err(WalError::Config(format!(
                "reset_tail({end}) outside the stream's extent [{}, {limit}]",
                inner.start
            )));
        }
        let keep = end / self.seg_size;
        let mut removed = false;
        while inner.segs.last().is_some_and(|s| s.index > keep) {
            if let Some(seg) = inner.segs.pop() {
                let Segment {
                    path, file, dfile, ..
                } = seg;
                drop((file, dfile));
                self.fs
                    .remove_file(&path)
                    .map_err(|e| io_err("remove", &path, e))?;
                removed = true;
            }
        }
        if removed {
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| io_err("fsync directory", &self.dir, e))?;
        }
        if let Some(seg) = inner.segs.last_mut().filter(|s| s.index == keep) {
            let data = end - keep * self.seg_size;
            let want = SEGMENT_HEADER + data;
            let len = seg.file.len().map_err(|e| io_err("stat", &seg.path, e))?;
            if len > want {
                seg.file
                    .set_len(want)
                    .map_err(|e| io_err("truncate", &seg.path, e))?;
                seg.dirty = true;
                if self.preallocate {
                    match seg.file.allocate(SEGMENT_HEADER + self.seg_size) {
                        Ok(()) => {}
                        // The reservation is an optimisation; writes report ENOSPC later.
                        Err(e) if is_no_space(&e) => {}
                        Err(e) => return Err(io_err("preallocate", &seg.path, e)),
                    }
                }
            }
            seg.extent = data;
            seg.has_data = data > 0;
        }
        // Whatever recovery read must be durable before anything is appended after it.
        for i in 0..inner.segs.len() {
            self.sync_segment(&mut inner, i)?;
        }
        Ok(())
    }

    /// Remove whole segments that end at or before `upto` (never the last one) and make
    /// `upto` the stream's start (clamped to the end of the written extent). `upto` must be a
    /// record boundary. Nothing changes, not even the start, if no segment can be removed.
    pub fn remove_before(&self, upto: Lsn) -> Result<(), WalError> {
        let mut inner = self.inner.lock();
        let removable = inner
            .segs
            .iter()
            .take_while(|s| (s.index + 1) * self.seg_size <= upto)
            .count();
        let n = removable.min(inner.segs.len().saturating_sub(1));
        if n == 0 {
            return Ok(());
        }
        let start = inner.start.max(upto.min(self.limit_of(&inner)));
        let tmp_path = self
            .dir
            .join(format!("{}.tmp", meta_file_name(self.stream)));
        let meta = Meta {
            stream: self.stream,
            salt: self.salt,
            segment_size: self.seg_size,
            start,
        };
        write_meta(
            self.fs.as_ref(),
            &self.dir,
            &self.meta_path,
            &tmp_path,
            &meta,
        )?;
        inner.start = start;
        let gone: Vec<Segment> = inner.segs.drain(..n).collect();
        for seg in gone {
            let Segment {
                path, file, dfile, ..
            } = seg;
            drop((file, dfile));
            self.fs
                .remove_file(&path)
                .map_err(|e| io_err("remove", &path, e))?;
        }
        self.fs
            .sync_dir(&self.dir)
            .map_err(|e| io_err("fsync directory", &self.dir, e))?;
        Ok(())
    }

    /// Read exactly `buf.len()` bytes at `lsn`; an error if the range passes the limit.
    pub fn read_exact_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<(), WalError> {
        let n = self.read_at(lsn, buf)?;
        if n < buf.len() {
            return Err(WalError::Config(format!(
                "read of {} bytes at LSN {lsn} passes the end of the log at {}",
                buf.len(),
                lsn + n as u64
            )));
        }
        Ok(())
    }
}

fn write_meta(
    fs: &dyn Fs,
    dir: &Path,
    meta_path: &Path,
    tmp_path: &Path,
    m: &Meta,
) -> Result<(), WalError> {
    let f = fs
        .open(tmp_path, OpenOpts::create_truncate())
        .map_err(|e| io_err("create", tmp_path, e))?;
    f.write_all_at(0, &encode_meta(m))
        .map_err(|e| io_err("write", tmp_path, e))?;
    f.sync_data()
        .map_err(|e| io_err("fdatasync", tmp_path, e))?;
    drop(f);
    fs.rename(tmp_path, meta_path)
        .map_err(|e| io_err("rename", tmp_path, e))?;
    fs.sync_dir(dir)
        .map_err(|e| io_err("fsync directory", dir, e))
}

impl StreamSource for SegmentLog {
    fn start(&self) -> Lsn {
        self.inner.lock().start
    }

    fn limit(&self) -> Lsn {
        self.end()
    }

    fn sealed(&self) -> Lsn {
        let inner = self.inner.lock();
        let last_with_data = inner
            .segs
            .iter()
            .rev()
            .find(|s| s.has_data)
            .map(|s| s.index * self.seg_size);
        last_with_data.unwrap_or(inner.start).max(inner.start)
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let inner = self.inner.lock();
        let limit = self.limit_of(&inner);
        if lsn >= limit || buf.is_empty() {
            return Ok(0);
        }
        let Some(first) = inner.segs.first() else {
            return Ok(0);
        };
        let first_index = first.index;
        if lsn / self.seg_size < first_index {
            return Err(WalError::Config(format!(
                "read at LSN {lsn} before the first segment (LSN {})",
                first_index * self.seg_size
            )));
        }
        let want = buf
            .len()
            .min(usize::try_from(limit - lsn).unwrap_or(usize::MAX));
        let mut done = 0usize;
        while done < want {
            let pos = lsn + done as u64;
            let index = pos / self.seg_size;
            let seg = &inner.segs[(index - first_index) as usize];
            let off = pos - index * self.seg_size;
            let n = (want - done).min((self.seg_size - off) as usize);
            let dst = &mut buf[done..done + n];
            let got = seg
                .file
                .read_full_at(SEGMENT_HEADER + off, dst)
                .map_err(|e| io_err("read", &seg.path, e))?;
            // Unwritten parts of a segment (before a later one) read as zeros.
            dst[got..].fill(0);
            done += n;
        }
        Ok(want)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        segment_salt(self.salt, lsn / self.seg_size)
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        (
            self.segment_path(lsn).display().to_string(),
            SEGMENT_HEADER + lsn % self.seg_size,
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = segment_file_name(7, 0x1234_0000);
        assert_eq!(n, "s007-0000000012340000.log");
        assert_eq!(parse_segment_name(7, &n), Some(0x1234_0000));
        assert_eq!(parse_segment_name(70, &n), None);
        assert_eq!(parse_segment_name(7, "s007-00000000123400.log"), None);
        assert_eq!(parse_segment_name(7, "s007.meta"), None);
        assert_eq!(
            parse_segment_name(1000, &segment_file_name(1000, 4096)),
            Some(4096)
        );
    }

    #[test]
    fn header_round_trip_and_damage() {
        let h = SegHeader {
            stream: 3,
            first_lsn: 8192,
            segment_size: 4096,
            salt: 0xdead_beef,
        };
        let mut b = encode_seg_header(&h);
        let d = decode_seg_header(&b).ok().unwrap();
        assert_eq!(
            (d.stream, d.first_lsn, d.segment_size, d.salt),
            (3, 8192, 4096, 0xdead_beef)
        );
        b[20] ^= 1;
        assert!(matches!(decode_seg_header(&b), Err(HeaderProblem::Torn(_))));
        assert!(matches!(
            decode_seg_header(&b[..10]),
            Err(HeaderProblem::Torn(_))
        ));
    }

    #[test]
    fn meta_round_trip() {
        let m = Meta {
            stream: 1,
            salt: 42,
            segment_size: 65536,
            start: 777,
        };
        let b = encode_meta(&m);
        let d = decode_meta(&b).unwrap();
        assert_eq!(
            (d.stream, d.salt, d.segment_size, d.start),
            (1, 42, 65536, 777)
        );
        let mut b2 = b.clone();
        b2[33] ^= 4;
        assert!(decode_meta(&b2).is_err());
    }

    #[test]
    fn segment_salts_differ() {
        let s: Vec<u32> = (0..64).map(|i| segment_salt(0x1234_5678, i)).collect();
        let mut d = s.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), s.len());
        assert_ne!(segment_salt(1, 0), segment_salt(2, 0));
    }
}
