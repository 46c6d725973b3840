//! The file system's image: every file's live, durable and pending bytes, the live and
//! durable namespaces, how an operation's effect changes them, and the image a power failure
//! leaves.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::ops::Effect;
use super::opts::{CrashOpts, Unsynced};

pub(super) type FileId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Node {
    Dir,
    File(FileId),
}

#[derive(Debug, Clone)]
pub(super) enum Pending {
    Write { off: u64, data: Arc<[u8]> },
    SetLen(u64),
}

#[derive(Debug, Clone, Default)]
pub(super) struct FileData {
    pub(super) live: Vec<u8>,
    pub(super) durable: Vec<u8>,
    pub(super) pending: Vec<Pending>,
    pub(super) allocated: u64,
}

pub(super) fn write_into(buf: &mut Vec<u8>, off: u64, data: &[u8]) {
    let off = usize::try_from(off).unwrap_or(usize::MAX);
    let end = off.saturating_add(data.len());
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[off..end].copy_from_slice(data);
}

pub(super) fn set_len_of(buf: &mut Vec<u8>, len: u64) {
    buf.resize(usize::try_from(len).unwrap_or(usize::MAX), 0);
}

pub(super) fn apply_pending(buf: &mut Vec<u8>, p: &Pending, keep: Option<usize>) {
    match p {
        Pending::Write { off, data } => {
            let n = keep.unwrap_or(data.len()).min(data.len());
            write_into(buf, *off, &data[..n]);
        }
        Pending::SetLen(len) => set_len_of(buf, *len),
    }
}

/// The files and both namespaces; everything a crash needs.
#[derive(Debug, Clone, Default)]
pub(super) struct Image {
    pub(super) files: BTreeMap<FileId, FileData>,
    pub(super) live: BTreeMap<PathBuf, Node>,
    pub(super) durable: BTreeMap<PathBuf, Node>,
    pub(super) next_id: FileId,
}

pub(super) fn parent_of(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

pub(super) fn is_root(p: &Path) -> bool {
    p.as_os_str().is_empty() || p.components().all(|c| matches!(c, Component::RootDir))
}

impl Image {
    pub(super) fn dir_exists(&self, p: &Path) -> bool {
        is_root(p) || self.live.get(p) == Some(&Node::Dir)
    }

    pub(super) fn apply(&mut self, e: &Effect) {
        match e {
            Effect::CreateDir(path) => {
                for anc in path.ancestors() {
                    if is_root(anc) {
                        continue;
                    }
                    self.live.entry(anc.to_path_buf()).or_insert(Node::Dir);
                    self.durable.entry(anc.to_path_buf()).or_insert(Node::Dir);
                }
            }
            Effect::Create(path, id) => {
                self.files.insert(*id, FileData::default());
                self.live.insert(path.clone(), Node::File(*id));
                self.next_id = self.next_id.max(id + 1);
            }
            Effect::Write(id, off, data) => {
                if let Some(f) = self.files.get_mut(id) {
                    write_into(&mut f.live, *off, data);
                    f.pending.push(Pending::Write {
                        off: *off,
                        data: data.clone(),
                    });
                }
            }
            Effect::SetLen(id, len) => {
                if let Some(f) = self.files.get_mut(id) {
                    set_len_of(&mut f.live, *len);
                    f.pending.push(Pending::SetLen(*len));
                }
            }
            Effect::Allocate(id, len) => {
                if let Some(f) = self.files.get_mut(id) {
                    f.allocated = f.allocated.max(*len);
                }
            }
            Effect::Sync(id) => {
                if let Some(f) = self.files.get_mut(id) {
                    let pending = std::mem::take(&mut f.pending);
                    for p in &pending {
                        apply_pending(&mut f.durable, p, None);
                    }
                }
            }
            Effect::SyncFailed(id) => {
                if let Some(f) = self.files.get_mut(id) {
                    f.pending.clear();
                }
            }
            Effect::Rename(from, to) => {
                if let Some(node) = self.live.remove(from) {
                    self.live.insert(to.clone(), node);
                }
            }
            Effect::Remove(path) => {
                self.live.remove(path);
            }
            Effect::SyncDir(dir) => {
                self.durable
                    .retain(|p, n| matches!(n, Node::Dir) || parent_of(p) != *dir);
                for (p, n) in &self.live {
                    if matches!(n, Node::File(_)) && parent_of(p) == *dir {
                        self.durable.insert(p.clone(), *n);
                    }
                }
            }
        }
    }

    pub(super) fn used(&self) -> u64 {
        self.live
            .values()
            .filter_map(|n| match n {
                Node::File(id) => self.files.get(id),
                Node::Dir => None,
            })
            .map(|f| (f.live.len() as u64).max(f.allocated))
            .sum()
    }

    /// The image after a power failure.
    pub(super) fn crash(&self, opts: &CrashOpts) -> Image {
        let mut rng = SmallRng::seed_from_u64(opts.seed);
        let mut files = BTreeMap::new();
        let mut ids: Vec<FileId> = self
            .durable
            .values()
            .filter_map(|n| match n {
                Node::File(id) => Some(*id),
                Node::Dir => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let Some(f) = self.files.get(&id) else {
                continue;
            };
            let mut data = f.durable.clone();
            let n = f.pending.len();
            for (i, p) in f.pending.iter().enumerate() {
                match opts.unsynced {
                    Unsynced::Drop => {}
                    Unsynced::TearLast => {
                        if i + 1 < n {
                            apply_pending(&mut data, p, None);
                        } else {
                            match p {
                                Pending::Write { data: d, .. } => {
                                    let keep = rng.gen_range(0..=d.len());
                                    apply_pending(&mut data, p, Some(keep));
                                }
                                Pending::SetLen(_) => {
                                    if rng.gen_bool(0.5) {
                                        apply_pending(&mut data, p, None);
                                    }
                                }
                            }
                        }
                    }
                    Unsynced::KeepSubset => {
                        if rng.gen_bool(0.5) {
                            apply_pending(&mut data, p, None);
                        }
                    }
                }
            }
            files.insert(
                id,
                FileData {
                    live: data.clone(),
                    durable: data,
                    pending: Vec::new(),
                    allocated: f.allocated,
                },
            );
        }
        Image {
            files,
            live: self.durable.clone(),
            durable: self.durable.clone(),
            next_id: self.next_id,
        }
    }
}
