//! The [`Fs`] operations of a [`FaultFs`]: namespace changes, opening files, directory syncs.

use std::io;
use std::path::{Path, PathBuf};

use rustix::io::Errno;

use super::FaultFs;
use super::file::FaultFile;
use super::image::{Node, is_root, parent_of};
use super::ops::{Effect, FsOp};
use super::state::{err, norm, trip_point};
use crate::fs::{Fs, FsFile, OpenOpts};

/// A lock of a [`FaultFs`]: removes its path from the lock table when dropped.
struct FaultLock {
    state: std::sync::Weak<parking_lot::Mutex<super::state::State>>,
    path: PathBuf,
}

impl Drop for FaultLock {
    fn drop(&mut self) {
        if let Some(s) = self.state.upgrade() {
            s.lock().locks.remove(&self.path);
        }
    }
}

impl Fs for FaultFs {
    fn lock(&self, path: &Path) -> Result<crate::fs::FsLock, braid_pmem::lock::LockError> {
        let p = norm(path);
        let mut s = self.state.lock();
        if !s.locks.insert(p.clone()) {
            return Err(braid_pmem::lock::LockError::InUse {
                path: p,
                holder: Some(std::process::id()),
            });
        }
        Ok(crate::fs::FsLock::new(FaultLock {
            state: std::sync::Arc::downgrade(&self.state),
            path: p,
        }))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        for anc in p.ancestors() {
            if matches!(s.image.live.get(anc), Some(Node::File(_))) {
                return Err(err(Errno::NOTDIR, "create_dir_all", anc));
            }
        }
        s.run(FsOp::CreateDir { path: p.clone() }, Effect::CreateDir(p));
        Ok(())
    }

    fn open(&self, path: &Path, opts: OpenOpts) -> io::Result<Box<dyn FsFile>> {
        let p = norm(path);
        let mut s = self.state.lock();
        if opts.direct && s.faults.direct_refused {
            return Err(err(Errno::INVAL, "open O_DIRECT", &p));
        }
        let id = match s.image.live.get(&p).copied() {
            Some(Node::Dir) => return Err(err(Errno::ISDIR, "open", &p)),
            Some(Node::File(id)) => {
                if opts.truncate {
                    s.run(
                        FsOp::SetLen {
                            path: p.clone(),
                            len: 0,
                        },
                        Effect::SetLen(id, 0),
                    );
                }
                id
            }
            None => {
                if !opts.create {
                    return Err(err(Errno::NOENT, "open", &p));
                }
                if !s.image.dir_exists(&parent_of(&p)) {
                    return Err(err(Errno::NOENT, "open (no parent directory)", &p));
                }
                let id = s.image.next_id;
                s.run(
                    FsOp::Create { path: p.clone() },
                    Effect::Create(p.clone(), id),
                );
                id
            }
        };
        Ok(Box::new(FaultFile {
            state: self.state.clone(),
            id,
            path: p,
            direct: opts.direct,
        }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        match s.image.live.get(&p) {
            Some(Node::File(_)) => {
                s.run(FsOp::Remove { path: p.clone() }, Effect::Remove(p));
                Ok(())
            }
            Some(Node::Dir) => Err(err(Errno::ISDIR, "remove_file", &p)),
            None => Err(err(Errno::NOENT, "remove_file", &p)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (norm(from), norm(to));
        let mut s = self.state.lock();
        match s.image.live.get(&from) {
            Some(Node::File(_)) => {}
            Some(Node::Dir) => {
                return Err(err(
                    Errno::ISDIR,
                    "rename (directories are not supported)",
                    &from,
                ));
            }
            None => return Err(err(Errno::NOENT, "rename", &from)),
        }
        if s.image.live.get(&to) == Some(&Node::Dir) {
            return Err(err(Errno::ISDIR, "rename onto", &to));
        }
        if !s.image.dir_exists(&parent_of(&to)) {
            return Err(err(Errno::NOENT, "rename (no parent directory)", &to));
        }
        s.run(
            FsOp::Rename {
                from: from.clone(),
                to: to.clone(),
            },
            Effect::Rename(from, to),
        );
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let p = norm(path);
        let s = self.state.lock();
        if !s.image.dir_exists(&p) {
            return Err(err(Errno::NOENT, "list_dir", &p));
        }
        // BTreeMap order is sorted order.
        Ok(s.image
            .live
            .keys()
            .filter(|k| **k != p && parent_of(k) == p)
            .cloned()
            .collect())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        trip_point(&self.state);
        let p = norm(path);
        let mut s = self.state.lock();
        if !s.image.dir_exists(&p) {
            return Err(err(Errno::NOENT, "sync_dir", &p));
        }
        s.stats.dir_syncs += 1;
        s.run(FsOp::SyncDir { path: p.clone() }, Effect::SyncDir(p));
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let p = norm(path);
        is_root(&p) || self.state.lock().image.live.contains_key(&p)
    }
}
