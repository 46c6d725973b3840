//! Writing a stream: creating segments (header synced before any record byte), sealing every
//! earlier segment before a later one gets data, and syncing dirty segments in LSN order.

use super::header::{SegHeader, encode_seg_header};
use super::name::segment_file_name;
use super::{Inner, SEGMENT_HEADER, Segment, SegmentLog, io_err};
use crate::fs::{OpenOpts, is_direct_aligned};
use crate::{Lsn, Misuse, WalError};

/// How far ahead of the writes [`SegmentLog::zero_ahead`] fills a segment with zeros.
const ZERO_AHEAD: u64 = 1 << 20;
/// The zeros it writes, one piece at a time.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

fn align_up(x: u64) -> u64 {
    x.div_ceil(SEGMENT_HEADER) * SEGMENT_HEADER
}

impl SegmentLog {
    pub(super) fn sync_segment(&self, inner: &mut Inner, i: usize) -> Result<(), WalError> {
        let seg = &mut inner.segs[i];
        if let Err(e) = seg.file.sync_data() {
            let err = WalError::io("fdatasync", &seg.path, e);
            inner.failed = Some(err.clone());
            return Err(err);
        }
        seg.dirty = false;
        Ok(())
    }

    /// Reserve a segment's space and set the file to its full size (zeros), so that no record
    /// write changes the file's size: `fdatasync` then has only data to write, not the inode's
    /// size (on ext4 about 30-45 us per sync on this machine's disk, see the module doc).
    pub(super) fn preallocate_full(
        &self,
        file: &dyn crate::fs::FsFile,
        path: &std::path::Path,
    ) -> Result<(), WalError> {
        let full = SEGMENT_HEADER + self.seg_size;
        file.allocate(full)
            .map_err(|e| io_err("preallocate", path, e))?;
        if file.len().map_err(|e| io_err("stat", path, e))? < full {
            file.set_len(full)
                .map_err(|e| io_err("preallocate", path, e))?;
        }
        Ok(())
    }

    /// Before data up to `end` (data-area offset) goes into `seg`: if it lies past what was
    /// zero-filled, write zeros from the end of the written extent (rounded up to a block) to
    /// [`ZERO_AHEAD`] past `end`, through the page cache; the next sync writes them out with
    /// the data.
    ///
    /// Why: space reserved with `fallocate` is *unwritten* to ext4 (and XFS): the first write
    /// into a block converts its extent, a metadata change the next `fdatasync` must commit
    /// to the journal. A record that starts a new block thus cost its sync a journal commit:
    /// every append of 4 KiB records, one in 25 of 160-byte ones. Measured on this machine's
    /// ext4 disk with `pwrite` + `fdatasync` of 4096-byte records: 194 us at the median into
    /// reserved space, 128 us with zeros written 1 MiB ahead (the conversion then rides on
    /// one sync per MiB: p99 273 us, p999 1.0 ms); 160-byte records: mean 169 -> 132 us.
    /// Zeros are what readers take for "nothing written", so a crash with these writes
    /// partly done leaves the stream as it was; nothing at or before the written extent is
    /// touched.
    fn zero_ahead(&self, seg: &mut Segment, end: u64) -> Result<(), WalError> {
        if !self.zero_fill || end <= seg.zeroed {
            return Ok(());
        }
        let from = align_up(seg.zeroed.max(seg.extent));
        let to = (align_up(end) + ZERO_AHEAD).min(self.seg_size);
        let mut off = from;
        while off < to {
            let n = (to - off).min(ZEROS.len() as u64);
            seg.file
                .write_all_at(SEGMENT_HEADER + off, &ZEROS[..n as usize])
                .map_err(|e| io_err("write zeros", &seg.path, e))?;
            off += n;
        }
        seg.zeroed = to;
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
                self.preallocate_full(file.as_ref(), &path)?;
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
                    zeroed: 0,
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
    pub(crate) fn prepare(&self, upto: Lsn) -> Result<Lsn, WalError> {
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
    pub(crate) fn write(&self, lsn: Lsn, bytes: &[u8]) -> Result<(), WalError> {
        let mut inner = self.inner.lock();
        Self::check_failed(&inner)?;
        if self.direct && !is_direct_aligned(lsn, bytes.as_ptr() as usize, bytes.len()) {
            return Err(WalError::Misuse(Misuse::Unaligned {
                op: "O_DIRECT segment write",
                lsn: Some(lsn),
                len: bytes.len() as u64,
                align: 4096,
                on: None,
            }));
        }
        let first_index = match inner.segs.first() {
            Some(s) => s.index,
            None => inner.start / self.seg_size,
        };
        if lsn / self.seg_size < first_index {
            return Err(WalError::Misuse(Misuse::BeforeStart {
                op: "write",
                lsn,
                start: first_index * self.seg_size,
                on: None,
            }));
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
            self.zero_ahead(seg, off + n as u64)?;
            let file = seg.dfile.as_ref().unwrap_or(&seg.file);
            file.write_all_at(SEGMENT_HEADER + off, &rest[..n])
                .map_err(|e| io_err("write", &seg.path, e))?;
            if self.nvm_delay_ns != 0 {
                braid_pmem::busy_wait_ns(self.nvm_delay_ns.saturating_mul(n.div_ceil(64) as u64));
            }
            braid_pmem::busy_wait_ns(self.nvm_barrier_ns);
            seg.dirty = true;
            seg.has_data = true;
            seg.extent = seg.extent.max(off + n as u64);
            pos += n as u64;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// fdatasync every segment written since its last sync, in LSN order.
    pub(crate) fn sync(&self) -> Result<(), WalError> {
        let mut inner = self.inner.lock();
        Self::check_failed(&inner)?;
        for i in 0..inner.segs.len() {
            if inner.segs[i].dirty {
                self.sync_segment(&mut inner, i)?;
            }
        }
        Ok(())
    }
}
