//! [`SnapshotFs`]: a private in-memory copy of directories of the real file system, so a log can
//! be read and recovered without a byte of the real files changing.
//!
//! No paper section; this is how a database is opened read-only (`Db::open_read_only`,
//! `braid inspect`, `braid recover --read-only`) while its writer may be running. Recovery
//! trims torn tails, rewrites headers and preallocates segments; on a copy all of that stays in
//! memory, so every scheme's own recovery runs unchanged on what was durable when the copy was
//! read, and the real directory is never written, locked or created.
//!
//! The copy is taken file by file (in the order [`SnapshotFs::copy_tree`] is called), not at one
//! instant: each log file is a prefix of what its writer had made durable when it was read,
//! which is what a crash leaves too, and the scan's checksums find where each prefix ends. What
//! a live writer removes or rewrites between two files (a truncation after a checkpoint) can make
//! the copy unrecoverable; the caller copies again.
//!
//! Written here rather than taken from a crate: the copy must implement this crate's [`Fs`]
//! seam, and an in-memory map of files behind one lock is all it needs (the fault-injecting
//! file system of the tests models durability and crashes, which a copy does not have).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::{Fs, FsFile, FsLock, OpenOpts};

type Bytes = Arc<RwLock<Vec<u8>>>;

#[derive(Debug, Default)]
struct Tree {
    files: BTreeMap<PathBuf, Bytes>,
    dirs: BTreeSet<PathBuf>,
}

impl Tree {
    fn add_dirs(&mut self, path: &Path) {
        for a in path.ancestors() {
            if a.as_os_str().is_empty() {
                break;
            }
            self.dirs.insert(a.to_path_buf());
        }
    }
}

/// An in-memory copy of directories of the real file system (see the module doc). Cheap to
/// clone: clones share one copy.
#[derive(Debug, Clone, Default)]
pub struct SnapshotFs {
    tree: Arc<Mutex<Tree>>,
}

fn not_found(op: &str, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{op} {}: not in the copy", path.display()),
    )
}

impl SnapshotFs {
    /// An empty copy.
    pub fn new() -> SnapshotFs {
        SnapshotFs::default()
    }

    /// Copy every regular file below the real directory `root` (recursively, symbolic links
    /// not followed) that is not in the copy yet and that `skip` does not name. A `root` that
    /// does not exist copies nothing; a file that disappears while the tree is walked is
    /// passed over, as if it had been removed before. Returns the bytes copied.
    pub fn copy_tree(&self, root: &Path, skip: &dyn Fn(&Path) -> bool) -> io::Result<u64> {
        let entries = match std::fs::read_dir(root) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        self.tree.lock().add_dirs(root);
        let mut names: Vec<(PathBuf, std::fs::FileType)> = Vec::new();
        for entry in entries {
            let entry = entry?;
            names.push((entry.path(), entry.file_type()?));
        }
        names.sort_by(|a, b| a.0.cmp(&b.0));
        let mut bytes = 0;
        for (path, kind) in names {
            if skip(&path) {
                continue;
            }
            if kind.is_dir() {
                bytes += self.copy_tree(&path, skip)?;
            } else if kind.is_file() && !self.tree.lock().files.contains_key(&path) {
                match std::fs::read(&path) {
                    Ok(data) => {
                        bytes += data.len() as u64;
                        self.tree
                            .lock()
                            .files
                            .insert(path, Arc::new(RwLock::new(data)));
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(bytes)
    }
}

/// A file of a [`SnapshotFs`].
#[derive(Debug)]
struct SnapshotFile {
    data: Bytes,
}

impl FsFile for SnapshotFile {
    fn write_at(&self, off: u64, data: &[u8]) -> io::Result<usize> {
        let mut d = self.data.write();
        let off = usize::try_from(off).map_err(|_| io::Error::other("offset too large"))?;
        let end = off + data.len();
        if d.len() < end {
            d.resize(end, 0);
        }
        d[off..end].copy_from_slice(data);
        Ok(data.len())
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        let d = self.data.read();
        let off = usize::try_from(off).unwrap_or(usize::MAX).min(d.len());
        let n = buf.len().min(d.len() - off);
        buf[..n].copy_from_slice(&d[off..off + n]);
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn allocate(&self, _len: u64) -> io::Result<()> {
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::Error::other("length too large"))?;
        self.data.write().resize(len, 0);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.data.read().len() as u64)
    }
}

impl Fs for SnapshotFs {
    /// Nothing to lock: the copy is this handle's own.
    fn lock(&self, _path: &Path) -> Result<FsLock, braid_pmem::lock::LockError> {
        Ok(FsLock::new(()))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.tree.lock().add_dirs(path);
        Ok(())
    }

    fn open(&self, path: &Path, opts: OpenOpts) -> io::Result<Box<dyn FsFile>> {
        let mut t = self.tree.lock();
        let data = match t.files.get(path) {
            Some(d) => {
                if opts.truncate {
                    d.write().clear();
                }
                Arc::clone(d)
            }
            None if opts.create => {
                let d: Bytes = Arc::default();
                if let Some(parent) = path.parent() {
                    t.add_dirs(parent);
                }
                t.files.insert(path.to_path_buf(), Arc::clone(&d));
                d
            }
            None => return Err(not_found("open", path)),
        };
        Ok(Box::new(SnapshotFile { data }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        match self.tree.lock().files.remove(path) {
            Some(_) => Ok(()),
            None => Err(not_found("remove", path)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut t = self.tree.lock();
        let d = t
            .files
            .remove(from)
            .ok_or_else(|| not_found("rename", from))?;
        t.files.insert(to.to_path_buf(), d);
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let t = self.tree.lock();
        if !t.dirs.contains(path) {
            return Err(not_found("list", path));
        }
        let child = |p: &&PathBuf| p.parent() == Some(path);
        let mut out: Vec<PathBuf> = t
            .files
            .keys()
            .filter(child)
            .chain(t.dirs.iter().filter(child))
            .cloned()
            .collect();
        out.sort();
        Ok(out)
    }

    fn sync_dir(&self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let t = self.tree.lock();
        t.files.contains_key(path) || t.dirs.contains(path)
    }

    /// Where the real directory the copy was taken from lies (the copy says what the original
    /// would be, not that it is itself in RAM).
    fn is_ram_backed(&self, path: &Path) -> bool {
        path.ancestors()
            .find(|a| a.exists())
            .is_some_and(braid_pmem::is_ram_backed)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_copy_changes_nothing_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("db");
        std::fs::create_dir_all(root.join("log")).unwrap();
        std::fs::write(root.join("braid.json"), b"{}").unwrap();
        std::fs::write(root.join("log/a.log"), b"hello").unwrap();
        let fs = SnapshotFs::new();
        assert_eq!(fs.copy_tree(&root, &|_| false).unwrap(), 7);
        let f = fs
            .open(&root.join("log/a.log"), OpenOpts::existing())
            .unwrap();
        f.write_all_at(3, b"p!").unwrap();
        f.set_len(4).unwrap();
        let mut b = [0u8; 8];
        assert_eq!(f.read_at(0, &mut b).unwrap(), 4);
        assert_eq!(&b[..4], b"help");
        fs.create_dir_all(&root.join("checkpoints")).unwrap();
        fs.open(&root.join("checkpoints/x"), OpenOpts::create())
            .unwrap();
        fs.remove_file(&root.join("braid.json")).unwrap();
        assert_eq!(
            fs.list_dir(&root).unwrap(),
            vec![root.join("checkpoints"), root.join("log")]
        );
        assert_eq!(std::fs::read(root.join("log/a.log")).unwrap(), b"hello");
        assert!(root.join("braid.json").exists());
        assert!(!root.join("checkpoints").exists());
        let _held = fs.lock(&root.join("LOCK")).unwrap();
        assert!(!root.join("LOCK").exists());
    }
}
