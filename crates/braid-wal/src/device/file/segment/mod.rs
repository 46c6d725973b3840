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
//! * Preallocation (the default) reserves a segment's space and sets the file to its full
//!   size when the segment is created, so that no record write changes a file's size: an
//!   `fdatasync` then writes data only, not the inode's size. Appending to a file reserved with
//!   `FALLOC_FL_KEEP_SIZE` instead made every sync commit the new size: on this machine's ext4
//!   disk a 200-byte `pwrite` + `fdatasync` took 169-179 us at the median that way and 119-130
//!   us into a full-size file. So a file's size overstates its written extent and the unwritten
//!   tail reads as zeros, which readers treat as "nothing written" (a zero header ends the
//!   scan; see [`crate::scan`]). The stream's `limit` is the end of the extent of the last
//!   segment holding any non-zero byte (empty segments created ahead do not count); unwritten
//!   parts of earlier segments read as zeros. Reserved space is still *unwritten* to the file
//!   system, and the first write into each block made the next sync commit a metadata change:
//!   so buffered writes to a preallocated segment on a disk also write zeros ahead of the data
//!   (`zero_ahead` in `writer`, which says what that saves). Without preallocation the files
//!   grow with the writes.
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
//!
//! The mechanisms live one per file: `name` (file names and salts), `header` (segment
//! header and meta file codecs), `discover` (opening a stream and checking its files),
//! `writer` (creating, writing and syncing segments), `release` (tail reset and removal of
//! old segments) and `read` (read-back for recovery).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::fs::{Fs, FsFile, is_no_space};
#[cfg(doc)]
use crate::scan::StreamSource;
use crate::{Lsn, SegmentDamage, WalError};

mod discover;
mod header;
pub(crate) mod name;
mod read;
mod release;
mod writer;

#[cfg(test)]
pub(crate) use name::meta_file_name;
pub(crate) use name::segment_file_name;

/// Bytes at the start of every segment file before its first record byte.
pub(crate) const SEGMENT_HEADER: u64 = 4096;
const ZERO_CHECK_CHUNK: usize = 64 << 10;

fn io_err(op: &'static str, path: &Path, e: io::Error) -> WalError {
    if is_no_space(&e) {
        WalError::NoSpace {
            path: path.to_path_buf(),
        }
    } else {
        WalError::io(op, path, e)
    }
}

fn bad(path: &Path, damage: SegmentDamage) -> WalError {
    WalError::BadSegment {
        file: path.display().to_string(),
        damage,
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
    /// The data area below this was zero-filled by a write (or holds data): see
    /// [`SegmentLog::zero_ahead`].
    zeroed: u64,
}

struct Inner {
    /// Contiguous segment indices, ascending.
    segs: Vec<Segment>,
    start: Lsn,
    failed: Option<WalError>,
}

/// The segment files of one stream: sequential writes at LSNs, sync, read-back for recovery.
/// Used by [`FileDevice`](crate::device::file::FileDevice) and by the pmem device's de-staging.
pub(crate) struct SegmentLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    stream: u32,
    seg_size: u64,
    salt: u32,
    direct: bool,
    preallocate: bool,
    /// Zero-fill the data area ahead of the writes (preallocated, buffered, not on a RAM file
    /// system): see [`SegmentLog::zero_ahead`].
    zero_fill: bool,
    /// See [`FileDeviceConfig::nvm_write_delay_ns`](crate::device::file::FileDeviceConfig).
    nvm_delay_ns: u64,
    /// See [`FileDeviceConfig::nvm_barrier_delay_ns`](crate::device::file::FileDeviceConfig).
    nvm_barrier_ns: u64,
    meta_path: PathBuf,
    inner: Mutex<Inner>,
    /// The stream's lock (`sNNN.lock`), held while the log is open: one writer per stream.
    _lock: crate::fs::FsLock,
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
    /// The directory holding the stream's files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Record bytes per segment.
    pub(crate) fn segment_size(&self) -> u64 {
        self.seg_size
    }

    /// The stream's random salt (from its meta file).
    #[cfg(test)]
    pub(crate) fn salt(&self) -> u32 {
        self.salt
    }

    /// Path of the segment file that holds (or will hold) `lsn`.
    pub(crate) fn segment_path(&self, lsn: Lsn) -> PathBuf {
        self.dir.join(segment_file_name(
            self.stream,
            lsn / self.seg_size * self.seg_size,
        ))
    }

    /// The existing segments as (first LSN, path), ascending.
    #[cfg(test)]
    pub(crate) fn segments(&self) -> Vec<(Lsn, PathBuf)> {
        self.inner
            .lock()
            .segs
            .iter()
            .map(|s| (s.index * self.seg_size, s.path.clone()))
            .collect()
    }

    /// End of the last existing segment's LSN range (where the next segment would start).
    pub(crate) fn covered(&self) -> Lsn {
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
    pub(crate) fn end(&self) -> Lsn {
        let inner = self.inner.lock();
        self.limit_of(&inner)
    }

    /// The error of an earlier failed fdatasync, if any (then the log refuses further work).
    #[cfg(test)]
    pub(crate) fn failure(&self) -> Option<WalError> {
        self.inner.lock().failed.clone()
    }

    fn check_failed(inner: &Inner) -> Result<(), WalError> {
        match &inner.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
