//! Opening a stream: creating or checking its meta file, listing its segment files and
//! checking their headers and sequence, removing a torn trailing segment left by a crash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::header::{
    HeaderProblem, META_LEN, Meta, SEG_HEADER_USED, SegHeader, decode_meta, decode_seg_header,
    write_meta,
};
use super::name::{lock_file_name, meta_file_name, parse_segment_name};
use super::{Inner, SEGMENT_HEADER, Segment, SegmentLog, ZERO_CHECK_CHUNK, bad, io_err};
use crate::device::file::FileDeviceConfig;
use crate::fs::{Fs, FsFile, OpenOpts, is_invalid_input};
use crate::{BadSize, Lsn, SegmentDamage, Unsupported, WalError};

impl SegmentLog {
    /// Open the segments of `cfg.stream` in `cfg.dir`, or create the stream (its meta file)
    /// if it has none. Uses `cfg.dir`, `stream`, `segment_size`, `direct` and `preallocate`.
    pub(crate) fn open(fs: Arc<dyn Fs>, cfg: &FileDeviceConfig) -> Result<SegmentLog, WalError> {
        let seg_size = cfg.segment_size;
        if seg_size == 0 || seg_size & (SEGMENT_HEADER - 1) != 0 {
            return Err(WalError::BadSize(BadSize::Segment { bytes: seg_size }));
        }
        let dir = cfg.dir.clone();
        fs.create_dir_all(&dir)
            .map_err(|e| io_err("create directory", &dir, e))?;
        let ram = fs.is_ram_backed(&dir);
        // Before anything of the stream is read or changed: another writer refuses us here.
        let lock = fs.lock(&dir.join(lock_file_name(cfg.stream)))?;
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
                    SegmentDamage::OtherStream {
                        found: m.stream,
                        expected: cfg.stream,
                    },
                ));
            }
            if m.segment_size != seg_size {
                return Err(bad(
                    &meta_path,
                    SegmentDamage::SegmentSize {
                        created: m.segment_size,
                        configured: seg_size,
                    },
                ));
            }
            m
        } else {
            if let Some((_, p)) = names.first() {
                return Err(bad(
                    &meta_path,
                    SegmentDamage::MetaMissing { example: p.clone() },
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
                    return Err(WalError::Unsupported(Unsupported::Direct {
                        dir: dir.clone(),
                        source: std::sync::Arc::new(e),
                    }));
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
            nvm_delay_ns: cfg.nvm_write_delay_ns,
            nvm_barrier_ns: cfg.nvm_barrier_delay_ns,
            preallocate: cfg.preallocate,
            zero_fill: cfg.preallocate && !cfg.direct && !ram,
            meta_path,
            inner: Mutex::new(Inner {
                segs: Vec::new(),
                start: meta.start,
                failed: None,
            }),
            _lock: lock,
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
                    SegmentDamage::Unaligned {
                        first: *first,
                        segment_size: self.seg_size,
                    },
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
                        SegmentDamage::Header {
                            fault: Box::new(r),
                            data_after: is_last,
                        },
                    ));
                }
            }
            let prev_index = segs.last().map(|prev| prev.index);
            if prev_index.is_some_and(|p| index != p + 1) {
                return Err(bad(
                    path,
                    SegmentDamage::Gap {
                        previous: prev_index.unwrap_or(0) * self.seg_size,
                    },
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
                zeroed: 0,
            });
        }
        // Trailing segments created ahead of the data hold only zeros: they do not seal the
        // segments before them.
        for seg in segs.iter_mut().rev() {
            if seg.extent > 0 && !self.data_is_zero(seg.file.as_ref(), &seg.path, seg.extent)? {
                break;
            }
            seg.has_data = false;
            // Its zeros (a preallocated segment is full-size) are nothing written: the stream's
            // limit ends before it.
            seg.extent = 0;
        }
        Ok(segs)
    }

    fn check_header(&self, path: &Path, first: Lsn, h: &SegHeader) -> Result<(), WalError> {
        if h.stream != self.stream {
            return Err(bad(
                path,
                SegmentDamage::OtherStream {
                    found: h.stream,
                    expected: self.stream,
                },
            ));
        }
        if h.first_lsn != first {
            return Err(bad(
                path,
                SegmentDamage::FirstLsn {
                    header: h.first_lsn,
                    name: first,
                },
            ));
        }
        if h.segment_size != self.seg_size {
            return Err(bad(
                path,
                SegmentDamage::HeaderSegmentSize {
                    found: h.segment_size,
                    expected: self.seg_size,
                },
            ));
        }
        if h.salt != self.salt {
            return Err(bad(
                path,
                SegmentDamage::Salt {
                    found: h.salt,
                    expected: self.salt,
                },
            ));
        }
        Ok(())
    }

    fn data_is_zero(&self, file: &dyn FsFile, path: &Path, extent: u64) -> Result<bool, WalError> {
        let mut buf = vec![0u8; ZERO_CHECK_CHUNK];
        let mut off = 0;
        while off < extent {
            // Reserved space that was never written is skipped, not read: a segment created
            // ahead of the data is 64 MiB of it, and reading it was most of a reopen's time
            // with a stream per thread (braid-engine on taurus with 64 streams after kill -9
            // at 100,000 transactions: 16.0 s, 3.9 s without this read; the scan's look past
            // the end is the rest, `StreamSource::data_end`).
            match file
                .next_data(SEGMENT_HEADER + off)
                .map_err(|e| io_err("seek", path, e))?
            {
                None => break,
                Some(at) => off = off.max(at.saturating_sub(SEGMENT_HEADER)),
            }
            if off >= extent {
                break;
            }
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

    pub(super) fn open_direct(&self, path: &Path) -> Result<Option<Box<dyn FsFile>>, WalError> {
        if !self.direct {
            return Ok(None);
        }
        self.fs
            .open(path, OpenOpts::existing().with_direct(true))
            .map(Some)
            .map_err(|e| io_err("open O_DIRECT", path, e))
    }
}
