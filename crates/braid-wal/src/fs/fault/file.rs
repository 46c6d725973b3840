//! Files opened on a [`FaultFs`](super::FaultFs): reads, writes (with injected short writes and
//! O_DIRECT checks), `sync_data` (with injected failures), space reservation and length.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::Rng;
use rustix::io::Errno;

use super::image::FileId;
use super::ops::{Effect, FsOp};
use super::state::{State, err, trip_point};
use crate::fs::{DIRECT_ALIGN, FsFile, is_direct_aligned};

/// A file opened on a [`FaultFs`].
pub(super) struct FaultFile {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) id: FileId,
    pub(super) path: PathBuf,
    pub(super) direct: bool,
}

impl std::fmt::Debug for FaultFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultFile")
            .field("path", &self.path)
            .field("direct", &self.direct)
            .finish()
    }
}

impl FaultFile {
    fn check_direct(&self, off: u64, buf: *const u8, len: usize) -> io::Result<()> {
        if self.direct && !is_direct_aligned(off, buf as usize, len) {
            return Err(io::Error::from(Errno::INVAL));
        }
        Ok(())
    }
}

impl FsFile for FaultFile {
    fn write_at(&self, off: u64, data: &[u8]) -> io::Result<usize> {
        self.check_direct(off, data.as_ptr(), data.len())?;
        if data.is_empty() {
            return Ok(0);
        }
        let mut s = self.state.lock();
        let mut n = data.len();
        let direct = self.direct;
        if let Some(rng) = s.faults.short_writes.as_mut() {
            if direct {
                let blocks = n / DIRECT_ALIGN;
                if blocks > 1 && rng.gen_bool(0.5) {
                    n = rng.gen_range(1..blocks) * DIRECT_ALIGN;
                }
            } else if n > 1 && rng.gen_bool(0.5) {
                n = rng.gen_range(1..n);
            }
        }
        s.check_space(self.id, off + n as u64)?;
        if n < data.len() {
            s.stats.short_writes += 1;
        }
        s.stats.writes += 1;
        s.stats.bytes_written += n as u64;
        let bytes: Arc<[u8]> = Arc::from(&data[..n]);
        s.run(
            FsOp::Write {
                path: self.path.clone(),
                off,
                len: n as u64,
            },
            Effect::Write(self.id, off, bytes),
        );
        Ok(n)
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.check_direct(off, buf.as_ptr(), buf.len())?;
        let s = self.state.lock();
        let Some(f) = s.image.files.get(&self.id) else {
            return Ok(0);
        };
        let len = f.live.len() as u64;
        if off >= len {
            return Ok(0);
        }
        // off < len <= usize::MAX, so the casts are exact.
        let start = off as usize;
        let n = buf.len().min(f.live.len() - start);
        buf[..n].copy_from_slice(&f.live[start..start + n]);
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        trip_point(&self.state);
        let mut s = self.state.lock();
        let path = self.path.to_string_lossy().into_owned();
        let mut fail = false;
        if let Some(fault) = s.faults.sync.as_mut() {
            let matches = fault
                .path_contains
                .as_deref()
                .is_none_or(|needle| path.contains(needle));
            if matches {
                if fault.after > 0 {
                    fault.after -= 1;
                } else {
                    fail = true;
                    if !fault.sticky {
                        s.faults.sync = None;
                    }
                }
            }
        }
        if fail {
            s.stats.failed_syncs += 1;
            s.run(
                FsOp::SyncDataFailed {
                    path: self.path.clone(),
                },
                Effect::SyncFailed(self.id),
            );
            return Err(err(Errno::IO, "fdatasync (injected)", &self.path));
        }
        s.stats.syncs += 1;
        s.run(
            FsOp::SyncData {
                path: self.path.clone(),
            },
            Effect::Sync(self.id),
        );
        Ok(())
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check_space(self.id, len)?;
        s.stats.allocates += 1;
        s.run(
            FsOp::Allocate {
                path: self.path.clone(),
                len,
            },
            Effect::Allocate(self.id, len),
        );
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check_space(self.id, len)?;
        s.run(
            FsOp::SetLen {
                path: self.path.clone(),
                len,
            },
            Effect::SetLen(self.id, len),
        );
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let s = self.state.lock();
        Ok(s.image
            .files
            .get(&self.id)
            .map_or(0, |f| f.live.len() as u64))
    }
}
