//! The transaction's side of checkpoints (`crate::checkpoint`): entering the checkpoint epoch
//! once every lock that orders the transaction is held, and copy-on-write of the rows it
//! changes while a checkpoint is being captured (CALC, Ren et al., SIGMOD 2016).

use super::access::{Entry, Write};
use super::{Mode, Txn};
use crate::db::DbInner;

impl Txn<'_> {
    /// Enter the current checkpoint epoch: called once the transaction holds every lock that
    /// orders it (2PL: all of them; OCC: the write set, before validation).
    pub(super) fn enter_epoch(&mut self) {
        // Without a log (scheme `none`) no checkpoint is ever taken, so none waits for the
        // epochs: a commit skips their barriers.
        if self.epoch.is_none() && self.mode == Mode::Normal && self.db.logs && !self.is_read_only()
        {
            self.epoch = Some(self.db.epochs.enter(self.slot));
        }
    }

    pub(super) fn exit_epoch(&mut self) {
        if self.epoch.take().is_some() {
            self.db.epochs.exit(self.slot);
        }
    }

    /// The checkpoint being captured whose image this transaction's writes must save first.
    pub(super) fn capture(&self) -> Option<u64> {
        self.epoch.and_then(|ep| self.db.epochs.capturing(ep))
    }
}

/// Copy-on-write for the checkpoint being taken: before `e`'s write is installed, save the
/// row's image for checkpoint `capture`, if one is being taken.
pub(super) fn save_for_checkpoint(db: &DbInner, capture: Option<u64>, e: &Entry) {
    if let Some(c) = capture
        && !matches!(e.write, Write::None | Write::Gone)
    {
        e.row.capture(c, |img| {
            let _ = db
                .epochs
                .side
                .insert_sync((e.table, e.key), img.map(Box::from));
        });
    }
}
