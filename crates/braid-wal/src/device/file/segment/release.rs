//! Giving bytes back: discarding a torn tail after recovery (`reset_tail`) and removing whole
//! segments before a truncation point (`remove_before`).

use super::header::{Meta, write_meta};
use super::name::meta_file_name;
use super::{SEGMENT_HEADER, Segment, SegmentLog, io_err};
use crate::{Lsn, Misuse, WalError};

impl SegmentLog {
    /// Discard everything at and after `end` durably (see the module doc), leaving `end` as
    /// the end of the written extent.
    pub(crate) fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        let mut inner = self.inner.lock();
        Self::check_failed(&inner)?;
        let limit = self.limit_of(&inner);
        if end < inner.start || end > limit {
            return Err(WalError::Misuse(Misuse::Outside {
                op: "reset_tail",
                lsn: end,
                from: inner.start,
                to: limit,
                on: None,
            }));
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
                    match self.preallocate_full(seg.file.as_ref(), &seg.path) {
                        Ok(()) => {}
                        // The reservation is an optimisation; writes report ENOSPC later.
                        Err(WalError::NoSpace { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            seg.extent = data;
            seg.has_data = data > 0;
            // What lay after `end` is unwritten again (truncated and reserved anew).
            seg.zeroed = 0;
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
    pub(crate) fn remove_before(&self, upto: Lsn) -> Result<(), WalError> {
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
}
