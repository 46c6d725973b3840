//! [`FileDevice`]: a log stream on segment files ([`SegmentLog`]) behind a DRAM ring buffer,
//! made durable by group fdatasync. This is the SSD log of every scheme: the "log buffer
//! flushed to the log file" of serial logging, one per log manager in Taurus (Alg. 1-2: workers
//! fill the buffer, the log manager flushes it), and the disk under de-staged NVM buffers.
//!
//! * The ring is a [`BufferedDevice`]'s, in front of [`FileStore`] (the segment files): writers
//!   copy records into it ([`Device::fill`]); the flusher writes `[from, to)` out to the segment
//!   files ([`Store::write_at`]) and fdatasyncs ([`Store::sync`]) before `flush` returns.
//!   [`Device::reusable`] advances once the bytes are written out (before the fdatasync, so
//!   writers can refill the ring meanwhile): a flush whose writes fail (for example with
//!   `NoSpace`) leaves it alone and can be retried from the ring; a failed fdatasync poisons
//!   the stream, so its bytes are never needed again.
//! * With O_DIRECT (`cfg.direct`) the flusher copies the range into a 4096-aligned buffer
//!   (an over-allocated `Vec`, no `unsafe`), zero-pads the last partial block and writes whole
//!   blocks; the partial last block is written again by the next flush, so `reusable` is the
//!   flushed end aligned down to 4096 and the ring keeps that block ([`Store::align`]). A file system that refuses
//!   O_DIRECT (tmpfs answers EINVAL) is an error at open (`WalError::Unsupported`) rather than a
//!   silent fallback: a benchmark asking for direct I/O must not quietly measure something else.
//! * `ensure_space` keeps the segment holding `upto` and one more ahead created (and
//!   preallocated); its fast path is one atomic load. Failing to create the segment *ahead* is
//!   not an error (it is retried on the next call); failing to create the needed one is
//!   `NoSpace`.
//! * After a sync failure the segment log refuses further work with the same error; a flush
//!   never retries an fdatasync.

pub(crate) mod segment;
#[cfg(test)]
pub(crate) use segment::{meta_file_name, segment_file_name};

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::device::DEFAULT_BUFFER_SIZE;
#[cfg(doc)]
use crate::device::Device;
use crate::device::ring::DramRing;
use crate::device::{BufferedDevice, DeviceInfo, Store};
use crate::fs::{AlignedBuf, DIRECT_ALIGN, Fs};
use crate::scan::StreamSource;
use crate::{BadSize, Lsn, WalError};

#[cfg(test)]
pub(crate) use segment::SEGMENT_HEADER;
pub(crate) use segment::SegmentLog;

/// Where and how a [`FileDevice`] stores its stream. [`FileDeviceConfig::new`] gives the
/// defaults: 64 MiB segments, a 16 MiB buffer, no O_DIRECT, preallocation on.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FileDeviceConfig {
    /// Directory of the segment files (shared by the streams of one log).
    pub dir: PathBuf,
    /// The stream's index; names its files and is checked against their headers.
    pub stream: u32,
    /// Bytes of records per segment file (excluding its 4 KiB header); a multiple of 4096.
    pub segment_size: u64,
    /// DRAM ring that writers fill before the flusher writes it out.
    /// At least 1 byte, or 8192 with `direct`.
    pub buffer_size: usize,
    /// Write segments with O_DIRECT; opening fails with [`WalError::Unsupported`] where the file
    /// system refuses it.
    pub direct: bool,
    /// Reserve each segment's space (`fallocate`) when it is created, so running out of space
    /// shows at segment creation rather than in the middle of a write.
    pub preallocate: bool,
    /// Emulated NVRAM under the files (NV-Logging's NV-Disk, whose log files live on NVRAM
    /// used as a disk): busy-wait this long per 64-byte line written to a segment, as the
    /// pmem device waits per line it persists. 0 (the default): no delay.
    pub nvm_write_delay_ns: u64,
    /// Emulated NVRAM under the files as Intel's PMEP shows it to a file system made for it
    /// (PMFS): busy-wait this long once per write into a segment, the persistent barrier that
    /// ends each such write, instead of per line. 0 (the default): no delay.
    pub nvm_barrier_delay_ns: u64,
}

impl FileDeviceConfig {
    /// Stream `stream` in `dir`, with the defaults.
    pub fn new(dir: impl Into<PathBuf>, stream: u32) -> Self {
        FileDeviceConfig {
            dir: dir.into(),
            stream,
            segment_size: 64 << 20,
            buffer_size: DEFAULT_BUFFER_SIZE,
            direct: false,
            preallocate: true,
            nvm_write_delay_ns: 0,
            nvm_barrier_delay_ns: 0,
        }
    }
}

/// Bytes copied from the ring per segment write.
const CHUNK: usize = 256 << 10;

fn align_down(x: u64) -> u64 {
    x / DIRECT_ALIGN as u64 * DIRECT_ALIGN as u64
}

struct FlushState {
    /// Where the next flush is expected to start (end of the last successful one).
    pos: Lsn,
    buf: AlignedBuf,
}

/// A stream on segment files, with a DRAM ring buffer and group fdatasync: [`FileStore`]
/// behind the ring of a [`BufferedDevice`].
pub type FileDevice = BufferedDevice<FileStore>;

/// The [`Store`] of a [`FileDevice`]: segment files written by the flusher and made durable
/// by fdatasync (see the module doc).
pub struct FileStore {
    cfg: FileDeviceConfig,
    log: SegmentLog,
    /// `ensure_space(upto)` with `upto <= prepared` has nothing to do. Read by every append,
    /// written once per segment: on a line of its own, away from the flusher's lock, which
    /// the flusher takes at every flush (sharing its line cost each append a cache miss).
    prepared: CachePadded<AtomicU64>,
    flusher: Mutex<FlushState>,
    /// The log directory is on a RAM file system (see [`Fs::is_ram_backed`]).
    ram: bool,
}

impl std::fmt::Debug for FileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStore")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl FileDevice {
    /// Open the stream `cfg.stream` in `cfg.dir`, or create it. The write position is the end
    /// of the written extent until [`Device::reset_tail`] sets it to the recovered end.
    pub fn open(fs: Arc<dyn Fs>, cfg: FileDeviceConfig) -> Result<FileDevice, WalError> {
        let min_buffer = if cfg.direct { 2 * DIRECT_ALIGN } else { 1 };
        if cfg.buffer_size < min_buffer {
            return Err(WalError::BadSize(BadSize::Buffer {
                bytes: cfg.buffer_size,
                min: min_buffer,
                direct: cfg.direct,
            }));
        }
        let ram = fs.is_ram_backed(&cfg.dir);
        let log = SegmentLog::open(fs, &cfg)?;
        let end = log.end();
        let buffer = cfg.buffer_size;
        let store = FileStore {
            ram,
            log,
            prepared: CachePadded::new(AtomicU64::new(0)),
            flusher: Mutex::new(FlushState {
                pos: 0,
                buf: AlignedBuf::new(CHUNK),
            }),
            cfg,
        };
        store.set_position(&mut store.flusher.lock(), end);
        BufferedDevice::new(store, buffer)
    }

    /// The segment files behind the device.
    #[cfg(test)]
    pub(crate) fn segment_log(&self) -> &SegmentLog {
        &self.store().log
    }
}

impl FileStore {
    /// Make `end` the next flush position.
    fn set_position(&self, st: &mut FlushState, end: Lsn) {
        st.pos = end;
        let seg = self.log.segment_size();
        self.prepared
            .store(self.log.covered().saturating_sub(seg), Ordering::Release);
    }

    fn flush_direct(
        &self,
        ring: &DramRing,
        st: &mut FlushState,
        from: Lsn,
        to: Lsn,
    ) -> Result<(), WalError> {
        let mut lsn = align_down(from);
        while lsn < to {
            let end = (lsn + CHUNK as u64).min(to);
            let n = (end - lsn) as usize;
            let padded = n.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
            let buf = &mut st.buf.as_mut_slice()[..padded];
            if lsn < from && from != st.pos {
                // The ring may not hold the bytes before `from`: take them from the file.
                let head = (from - lsn) as usize;
                self.log.read_exact_at(lsn, &mut buf[..head])?;
                ring.read(from, &mut buf[head..n]);
            } else {
                ring.read(lsn, &mut buf[..n]);
            }
            buf[n..].fill(0);
            self.log.write(lsn, buf)?;
            lsn = end;
        }
        Ok(())
    }
}

impl Store for FileStore {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "file",
            location: self.cfg.dir.display().to_string(),
            emulation: match (
                self.ram,
                self.cfg.nvm_write_delay_ns,
                self.cfg.nvm_barrier_delay_ns,
            ) {
                (false, 0, 0) => None,
                (true, 0, 0) => Some(
                    "log files in RAM (tmpfs): fdatasync is a no-op, not power-safe".to_string(),
                ),
                (ram, line, barrier) => Some(format!(
                    "NVRAM emulated by {}:{}{}{}",
                    if ram {
                        "log files in RAM (tmpfs)"
                    } else {
                        "log files"
                    },
                    if line > 0 {
                        format!(" +{line} ns per 64-byte line written")
                    } else {
                        String::new()
                    },
                    if barrier > 0 {
                        format!(" +{barrier} ns per write (its persistent barrier)")
                    } else {
                        String::new()
                    },
                    if ram { ", not power-safe" } else { "" }
                )),
            },
        }
    }

    fn end(&self) -> Lsn {
        self.flusher.lock().pos
    }

    fn align(&self) -> u64 {
        if self.cfg.direct {
            DIRECT_ALIGN as u64
        } else {
            1
        }
    }

    fn write_at(&self, ring: &DramRing, from: Lsn, to: Lsn) -> Result<(), WalError> {
        let mut st = self.flusher.lock();
        if self.cfg.direct {
            self.flush_direct(ring, &mut st, from, to)?;
        } else {
            let mut lsn = from;
            while lsn < to {
                let n = (to - lsn).min(CHUNK as u64) as usize;
                let buf = &mut st.buf.as_mut_slice()[..n];
                ring.read(lsn, buf);
                self.log.write(lsn, buf)?;
                lsn += n as u64;
            }
        }
        st.pos = to;
        Ok(())
    }

    fn sync(&self) -> Result<(), WalError> {
        self.log.sync()
    }

    // Asked by every append through `BufferedDevice::ensure_space`: inlined there, so the fast
    // path stays one call and one load, as before the seam.
    #[inline]
    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError> {
        if upto <= self.prepared.load(Ordering::Acquire) {
            return Ok(());
        }
        let seg = self.log.segment_size();
        let needed = self.log.prepare(upto)?;
        let covered = match self.log.prepare(upto.saturating_add(seg)) {
            Ok(c) => c,
            // Only the segment ahead is missing: retried on the next call.
            Err(WalError::NoSpace { .. }) => needed,
            Err(e) => return Err(e),
        };
        self.prepared
            .fetch_max(covered.saturating_sub(seg), Ordering::AcqRel);
        Ok(())
    }

    fn truncate(&self, end: Lsn) -> Result<(), WalError> {
        let mut st = self.flusher.lock();
        self.log.reset_tail(end)?;
        self.set_position(&mut st, end);
        Ok(())
    }

    fn release(&self, upto: Lsn) -> Result<(), WalError> {
        self.log.remove_before(upto)
    }
}

impl StreamSource for FileStore {
    fn start(&self) -> Lsn {
        self.log.start()
    }

    fn limit(&self) -> Lsn {
        self.log.limit()
    }

    fn sealed(&self) -> Lsn {
        self.log.sealed()
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        self.log.read_at(lsn, buf)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        self.log.salt_for(lsn)
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        self.log.locate(lsn)
    }

    fn data_end(&self, from: Lsn) -> Result<Lsn, WalError> {
        self.log.data_end(from)
    }
}
