//! The access set: every row a transaction touched, with the lock it holds, the version it read
//! and the write it buffered, plus the per-worker buffers ([`TxnState`]) reused by every
//! transaction so running one allocates little.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use braid_wal::payload::RedoBuf;
use braid_wal::scheme::{Access, AccessSet, RowRef, Written};

use super::phantom::ScanCheck;
use crate::index::key_hash::KeyHash;
use crate::row::Row;

/// Above this many accesses, lookups of the access set go through a hash map.
const LINEAR_LIMIT: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lock {
    None,
    Shared,
    Exclusive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    None,
    Update {
        mask: u64,
        img: usize,
    },
    Insert {
        img: usize,
    },
    Delete,
    /// Inserted and deleted again by this transaction: nothing to install.
    Gone,
    /// MVCC: an insert over the tombstone of a deleted row (a new version of that row).
    Revive {
        img: usize,
    },
}

pub(super) struct Entry {
    pub(super) table: u32,
    pub(super) key: u64,
    pub(super) row: Arc<Row>,
    pub(super) lock: Lock,
    pub(super) read: bool,
    pub(super) version: u64,
    pub(super) write: Write,
}

/// The access set as the scheme sees it (each row with its [`braid_wal::scheme::RowMeta`]).
pub(super) struct Accesses<'a>(pub(super) &'a [Entry]);

impl AccessSet for Accesses<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    fn get(&self, i: usize) -> Access<'_> {
        let e = &self.0[i];
        Access {
            row: RowRef {
                table: e.table,
                key: e.key,
                meta: Some(e.row.meta()),
            },
            read: e.read,
            write: e.write != Write::None,
        }
    }
}

/// Per-worker buffers reused by every transaction, so running one allocates little.
#[derive(Default)]
pub(crate) struct TxnState {
    pub(super) entries: Vec<Entry>,
    pub(super) lookup: HashMap<(u32, u64), usize, KeyHash>,
    pub(super) images: Vec<Vec<u8>>,
    pub(super) images_used: usize,
    pub(super) scans: Vec<ScanCheck>,
    pub(super) redo: RedoBuf,
    /// Per-update records: the one operation being logged.
    pub(super) op: RedoBuf,
    /// Per-update records: how many this transaction has logged.
    pub(super) updates: u32,
    /// The rows the redo payload writes, with each one's operation's bytes in it.
    pub(super) written: Vec<Written>,
    pub(super) command: Vec<u8>,
    pub(super) has_command: bool,
    pub(super) order: Vec<usize>,
    /// MVCC: the payload with its commit timestamp.
    pub(super) envelope: Vec<u8>,
    /// MVCC: rows this worker deleted, with the tombstone's timestamp, waiting until no
    /// snapshot can see them any more to leave the index.
    pub(crate) tombstones: VecDeque<(u32, u64, Arc<Row>, u64)>,
    /// MVCC: rows this worker gave a new version at a timestamp, whose older versions go once
    /// every snapshot is at or above it.
    pub(super) superseded: VecDeque<(Arc<Row>, u64)>,
    /// Sampled time spent putting records in the log (see [`InsertTiming`]).
    pub(crate) insert_timing: InsertTiming,
}

/// Log insertion latency, sampled: one commit in [`InsertTiming::EVERY`] times the scheme's
/// `commit` call (the record's way into the log buffer, not the wait for durability) and, with
/// per-update records, each of the transaction's `log_update` calls, so the two clock reads
/// cost next to nothing on the rest. It keeps the time per timed transaction (`ns` over
/// `samples`) and per log insertion (`record_ns` over `records`: every record the timed
/// transactions put into the log, each update record and the commit record). NV-Logging Fig. 11
/// plots the latter against threads ("the average latency of log insertion"). The same
/// transactions also time their accesses' 2PL locks (taking and releasing them) and the
/// scheme's access hooks (`on_read`/`on_write`: Taurus's LSN-vector updates), the parts of
/// Taurus Fig. 15's time breakdown the engine can see; an attempt that aborts keeps none of
/// them.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct InsertTiming {
    commits: u64,
    pub(crate) samples: u64,
    pub(crate) ns: u64,
    /// Log insertions (records put into the log) of the timed transactions.
    pub(crate) records: u64,
    /// Their time, ns: `ns` less the commit calls that inserted no record.
    pub(crate) record_ns: u64,
    /// Per-update records: time the transaction to be timed next spent logging its writes.
    updates_ns: u64,
    /// Per-update records: how many writes it logged in that time.
    updates: u64,
    /// Of the timed commits: time spent taking and releasing 2PL locks, ns.
    pub(crate) lock_ns: u64,
    /// Of the timed commits: time spent in the scheme's access hooks, ns.
    pub(crate) hook_ns: u64,
    /// The running attempt's lock and hook time, kept if it commits as a timed commit.
    pending_lock_ns: u64,
    pending_hook_ns: u64,
}

impl InsertTiming {
    /// One commit in this many is timed.
    const EVERY: u64 = 16;

    /// A start time if this commit is to be timed.
    #[inline]
    pub(super) fn start(&mut self) -> Option<std::time::Instant> {
        self.commits += 1;
        self.commits
            .is_multiple_of(Self::EVERY)
            .then(std::time::Instant::now)
    }

    /// Count the commit timed from `start`, with the time its writes' records took (and keep
    /// its accesses' lock and hook times); `inserted` says whether the commit call put a record
    /// into the log (a read-only transaction's does not).
    #[inline]
    pub(super) fn stop(&mut self, start: Option<std::time::Instant>, inserted: bool) {
        if let Some(t) = start {
            let commit_ns = t.elapsed().as_nanos() as u64;
            self.samples += 1;
            self.ns += commit_ns + self.updates_ns;
            self.records += self.updates + u64::from(inserted);
            self.record_ns += self.updates_ns + if inserted { commit_ns } else { 0 };
            self.lock_ns += self.pending_lock_ns;
            self.hook_ns += self.pending_hook_ns;
        }
        self.updates_ns = 0;
        self.updates = 0;
        self.discard_pending();
    }

    /// A start time if the transaction that commits next is timed (per-update records: its
    /// writes' records count in its insertion latency; and its accesses' locks and hooks).
    #[inline]
    pub(super) fn start_update(&self) -> Option<std::time::Instant> {
        (self.commits + 1)
            .is_multiple_of(Self::EVERY)
            .then(std::time::Instant::now)
    }

    /// Add the time of one write's record timed from `start`.
    #[inline]
    pub(super) fn stop_update(&mut self, start: Option<std::time::Instant>) {
        if let Some(t) = start {
            self.updates_ns += t.elapsed().as_nanos() as u64;
            self.updates += 1;
        }
    }

    /// Add the time of one access's lock, timed from `start` ([`Self::start_update`]).
    #[inline]
    pub(super) fn stop_lock(&mut self, start: Option<std::time::Instant>) {
        if let Some(t) = start {
            self.pending_lock_ns += t.elapsed().as_nanos() as u64;
        }
    }

    /// Add the time of one access hook, timed from `start` ([`Self::start_update`]).
    #[inline]
    pub(super) fn stop_hook(&mut self, start: Option<std::time::Instant>) {
        if let Some(t) = start {
            self.pending_hook_ns += t.elapsed().as_nanos() as u64;
        }
    }

    /// A start time if the commit just counted ([`Self::start`]) was timed: its lock release.
    #[inline]
    pub(super) fn start_release(&self) -> Option<std::time::Instant> {
        self.commits
            .is_multiple_of(Self::EVERY)
            .then(std::time::Instant::now)
    }

    /// Add a timed commit's lock release, timed from `start` ([`Self::start_release`]).
    #[inline]
    pub(super) fn stop_release(&mut self, start: Option<std::time::Instant>) {
        if let Some(t) = start {
            self.lock_ns += t.elapsed().as_nanos() as u64;
        }
    }

    /// Forget the running attempt's lock and hook times (it aborted, or a new one begins).
    #[inline]
    pub(super) fn discard_pending(&mut self) {
        self.pending_lock_ns = 0;
        self.pending_hook_ns = 0;
    }
}

impl TxnState {
    pub(super) fn reset(&mut self) {
        self.insert_timing.discard_pending();
        self.entries.clear();
        self.lookup.clear();
        self.images_used = 0;
        self.scans.clear();
        self.redo.clear();
        self.updates = 0;
        self.written.clear();
        self.command.clear();
        self.has_command = false;
    }

    pub(super) fn find(&mut self, table: u32, key: u64) -> Option<usize> {
        if self.entries.len() <= LINEAR_LIMIT {
            self.entries
                .iter()
                .position(|e| e.table == table && e.key == key)
        } else {
            if self.lookup.len() != self.entries.len() {
                self.lookup.clear();
                for (i, e) in self.entries.iter().enumerate() {
                    self.lookup.insert((e.table, e.key), i);
                }
            }
            self.lookup.get(&(table, key)).copied()
        }
    }

    pub(super) fn push(&mut self, e: Entry) -> usize {
        let i = self.entries.len();
        if i >= LINEAR_LIMIT {
            if self.lookup.len() != i {
                self.lookup.clear();
                for (j, e) in self.entries.iter().enumerate() {
                    self.lookup.insert((e.table, e.key), j);
                }
            }
            self.lookup.insert((e.table, e.key), i);
        }
        self.entries.push(e);
        i
    }

    pub(super) fn new_image(&mut self) -> usize {
        if self.images_used == self.images.len() {
            self.images.push(Vec::new());
        }
        self.images_used += 1;
        self.images_used - 1
    }
}
