//! Checkpoint epochs: the cheap per-commit protocol that lets a checkpoint find a
//! transaction-consistent point without stopping transactions.
//!
//! Every updating transaction, once it holds all its locks (2PL) or has locked its write set
//! (OCC, before validating), *enters* the current epoch: it announces the epoch in its worker's
//! slot, so the checkpoint can wait for every transaction of the old epoch to finish installing
//! (`drain`). The transaction's log record carries the epoch's low bit (see
//! `braid_wal::scheme::cut`). While a checkpoint of epoch `E` is being captured, a transaction
//! of epoch `>= E` saves a row's old image before it first changes it (copy-on-write, as in
//! CALC, Ren et al., SIGMOD 2016), so the checkpoint sees every row as the old epoch left it.
//!
//! Why the point is consistent: a transaction reads the epoch after it has acquired every lock
//! that orders it after others, and epochs only grow, so if `T2` depends on `T1` (reads or
//! overwrites what `T1` wrote, or under command logging overwrites what `T1` read) then `T2`'s
//! epoch is at least `T1`'s. The set of transactions of epochs below `E` is therefore closed
//! under dependencies.
//!
//! The checkpoint waits for the workers (`drain`, `end_capture`) in a
//! [`Progress`](braid_wal::Progress): it spins briefly, yields, then parks until a worker
//! leaves its commit (`exit`) or moves its announcement to the new epoch (`enter`), both of
//! which notify after their stores.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use braid_wal::Progress;
use crossbeam_utils::CachePadded;

/// A slot's value when its worker is not inside a commit.
const IDLE: u64 = u64::MAX;

struct Slot {
    owned: AtomicBool,
    at: AtomicU64,
    exits: AtomicU64,
}

/// The epoch, the per-worker announcements and the copy-on-write images.
pub(crate) struct Epochs {
    epoch: AtomicU64,
    /// The epoch being captured, or 0.
    capture: AtomicU64,
    slots: Box<[CachePadded<Slot>]>,
    /// Images saved by writers for the checkpoint being captured: `(table, key)` -> the row
    /// as the checkpoint must hold it (`None`: it did not exist).
    pub(crate) side: scc::HashMap<(u32, u64), Option<Box<[u8]>>>,
    /// The checkpoint waits here for workers to leave their commits.
    left: Progress,
}

impl Epochs {
    pub(crate) fn new(slots: usize, epoch: u64) -> Epochs {
        Epochs {
            epoch: AtomicU64::new(epoch),
            capture: AtomicU64::new(0),
            slots: (0..slots.max(1))
                .map(|_| {
                    CachePadded::new(Slot {
                        owned: AtomicBool::new(false),
                        at: AtomicU64::new(IDLE),
                        exits: AtomicU64::new(0),
                    })
                })
                .collect(),
            side: scc::HashMap::new(),
            left: Progress::new(),
        }
    }

    /// Claim a free slot for a worker.
    pub(crate) fn claim(&self) -> Option<usize> {
        self.slots.iter().position(|s| {
            s.owned
                .compare_exchange(false, true, SeqCst, SeqCst)
                .is_ok()
        })
    }

    pub(crate) fn release(&self, slot: usize) {
        if let Some(s) = self.slots.get(slot) {
            s.at.store(IDLE, SeqCst);
            s.owned.store(false, SeqCst);
            self.left.notify();
        }
    }

    /// Enter the current epoch from `slot`; returns it.
    #[inline]
    pub(crate) fn enter(&self, slot: usize) -> u64 {
        let s = &self.slots[slot];
        let mut e = self.epoch.load(SeqCst);
        let mut again_announced = false;
        loop {
            s.at.store(e, SeqCst);
            if again_announced {
                // A drain may have seen the old epoch announced here and parked.
                self.left.notify();
            }
            // Re-read: either the checkpoint's drain sees our announcement, or we see its
            // new epoch (both sides use SeqCst store-then-load).
            let again = self.epoch.load(SeqCst);
            if again == e {
                return e;
            }
            e = again;
            again_announced = true;
        }
    }

    /// Leave the commit entered from `slot`.
    #[inline]
    pub(crate) fn exit(&self, slot: usize) {
        let s = &self.slots[slot];
        s.at.store(IDLE, SeqCst);
        s.exits.fetch_add(1, SeqCst);
        // A checkpoint may be parked waiting for this commit to leave.
        self.left.notify();
    }

    /// The epoch being captured if a transaction of epoch `mine` must save old images.
    #[inline]
    pub(crate) fn capturing(&self, mine: u64) -> Option<u64> {
        let c = self.capture.load(SeqCst);
        (c != 0 && mine >= c).then_some(c)
    }

    /// Start checkpoint epoch `current + 1`: capturing first, then the epoch, so no
    /// transaction of the new epoch can miss the capture.
    pub(crate) fn advance(&self) -> u64 {
        let e = self.epoch.load(SeqCst) + 1;
        self.side.clear_sync();
        self.capture.store(e, SeqCst);
        self.epoch.store(e, SeqCst);
        e
    }

    /// Wait until no transaction of an epoch below `e` is inside its commit.
    pub(crate) fn drain(&self, e: u64) {
        for s in self.slots.iter() {
            self.left.wait(|| (s.at.load(SeqCst) >= e).then_some(()));
        }
    }

    /// Stop capturing, then wait until every commit that might still be saving an image has
    /// left (a grace period), so `side` is complete.
    pub(crate) fn end_capture(&self) {
        self.capture.store(0, SeqCst);
        let seen: Vec<(u64, u64)> = self
            .slots
            .iter()
            .map(|s| (s.at.load(SeqCst), s.exits.load(SeqCst)))
            .collect();
        for (s, (at, exits)) in self.slots.iter().zip(seen) {
            if at == IDLE {
                continue;
            }
            self.left.wait(|| {
                (s.at.load(SeqCst) == IDLE || s.exits.load(SeqCst) != exits).then_some(())
            });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn drain_waits_for_the_old_epoch_only() {
        let ep = Arc::new(Epochs::new(4, 1));
        let a = ep.claim().unwrap();
        let b = ep.claim().unwrap();
        assert_ne!(a, b);
        assert_eq!(ep.enter(a), 1);
        let e = ep.advance();
        assert_eq!(e, 2);
        assert_eq!(ep.enter(b), 2);
        assert_eq!(ep.capturing(2), Some(2));
        assert_eq!(ep.capturing(1), None);
        let ep2 = Arc::clone(&ep);
        let started = Arc::new(std::sync::Barrier::new(2));
        let gate = Arc::clone(&started);
        let t = std::thread::spawn(move || {
            gate.wait();
            ep2.drain(2);
        });
        // Whenever the drain runs, it cannot return before epoch 1 leaves its commit.
        started.wait();
        assert!(
            !t.is_finished(),
            "drain returned while epoch 1 was inside a commit"
        );
        ep.exit(a);
        t.join().unwrap();
        // b (epoch 2) never blocked the drain; end_capture waits for it to leave.
        let ep3 = Arc::clone(&ep);
        let t = std::thread::spawn(move || ep3.end_capture());
        // end_capture has begun once it stopped the capture; it then waits for b to leave.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while ep.capturing(2).is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "end_capture never began"
            );
            std::thread::yield_now();
        }
        assert!(
            !t.is_finished(),
            "end_capture returned while a commit could be capturing"
        );
        ep.exit(b);
        t.join().unwrap();
        assert_eq!(ep.capturing(2), None);
        ep.release(a);
        assert_eq!(ep.claim(), Some(a));
    }
}
