//! Replay mode: recovery re-executing a logged command (stored procedure). The transaction
//! takes no locks, calls no scheme hooks and logs nothing, because the recovery planner
//! guarantees that no conflicting replay runs concurrently; inserts and deletes go straight to
//! the index. Under MVCC it reads and writes at its logged commit timestamp (Taurus Sec. 4.4).

use std::sync::Arc;

use braid_wal::scheme::Ticket;

use super::{Mode, Txn};
use crate::row::{Row, RowState};
use crate::table::Table;

impl Txn<'_> {
    /// MVCC replay: read and write at the logged commit timestamp `ts`.
    pub(crate) fn set_replay_ts(&mut self, ts: u64) {
        debug_assert!(self.mode == Mode::Replay);
        self.snap = ts;
        self.ts = Some(ts);
    }

    /// Replay insert: into the index at once (a version at the logged timestamp under MVCC).
    pub(super) fn replay_insert(&self, tab: &Table, key: u64, image: &[u8]) {
        match self.ts {
            Some(ts) => tab.upsert_at(key, image.into(), ts),
            None => {
                let row = Arc::new(Row::new(image.to_vec().into_boxed_slice(), RowState::Live));
                tab.upsert(key, row);
            }
        }
    }

    /// Replay delete: out of the index at once; returns whether the row existed.
    pub(super) fn replay_delete(&self, tab: &Table, key: u64) -> bool {
        match self.ts {
            // A tombstone version: earlier timestamps still see the row.
            Some(ts) => match tab.get(key) {
                Some(r) if r.read_at(ts, |img| img.is_some()).0 => {
                    r.install_at(ts, 0, |_| None);
                    true
                }
                _ => false,
            },
            None => tab.remove(key),
        }
    }

    /// Replay commit: install the writes; nothing to validate or log.
    pub(super) fn commit_replay(&mut self) -> Ticket {
        self.install();
        self.finished = true;
        self.st.reset();
        Ticket::DURABLE
    }
}

/// A replay read of `row`: its committed image, if live.
pub(super) fn read_committed<R>(row: &Row, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    if row.state() != RowState::Live {
        return None;
    }
    Some(row.read(f).0)
}
