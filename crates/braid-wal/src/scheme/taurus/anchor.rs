//! Anchors (Taurus Alg. 5, `FlushPLV` / `LPLV`): what each stream remembers of the anchor
//! records its workers append, so that record LVs can be compressed against the stream's last
//! anchor and checkpoint truncation can keep the newest anchor before its cut. The worker that
//! notices an anchor is due appends it ([`AnchorState::append_if_due`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::Shared;
use crate::lv::MAX_STREAMS;
use crate::proxy::ProxyCounter;
use crate::record::{Kind, RecordSpec, Stamp};
use crate::stream::StreamWriter;

/// Per-stream anchor state (Alg. 5 `LPLV`).
pub(crate) struct AnchorState {
    pub(crate) lplv: Box<[AtomicU64]>,
    /// The next anchor is due once the stream passes this LSN.
    pub(crate) next: AtomicU64,
    pub(crate) busy: AtomicBool,
    /// Start LSNs of this stream's recent anchors, oldest first (checkpoint truncation keeps
    /// the newest anchor before the cut, so the records after it still decompress).
    pub(crate) recent: parking_lot::Mutex<std::collections::VecDeque<u64>>,
}

/// Anchor positions remembered per stream.
pub(crate) const RECENT_ANCHORS: usize = 1024;

impl AnchorState {
    /// The start of the newest anchor at or before `lsn`.
    pub(crate) fn anchor_before(&self, lsn: u64) -> Option<u64> {
        self.recent
            .lock()
            .iter()
            .rev()
            .find(|&&a| a <= lsn)
            .copied()
    }

    /// Alg. 5 `FlushPLV` on stream `i`: if an anchor is due once the stream reached `end` and
    /// no other worker is appending one, append the committed vector as an anchor through
    /// `w`, remember it, and raise the stream's LPLV to it.
    pub(crate) fn append_if_due(
        &self,
        sh: &Shared,
        i: usize,
        w: &mut StreamWriter,
        proxy: &ProxyCounter,
        end: u64,
    ) {
        if !sh.compress || end < self.next.load(Ordering::Relaxed) || {
            proxy.shared(1, 1);
            self.busy.swap(true, Ordering::Acquire)
        } {
            return;
        }
        let n = sh.n;
        let mut clv = vec![0u64; n];
        sh.tracker.clv_into(&mut clv);
        let stamp = Stamp::Lv(clv);
        let spec = RecordSpec {
            kind: Kind::Anchor,
            flags: 0,
            txn: 0,
            stamp: &stamp,
            payload: &[],
        };
        if let Ok((s, e)) = w.append(&spec) {
            // The append; the tracker's queue (lock and unlock, the lock's line and the queue
            // entry's); the recent-anchor lock; one fetch_max per LPLV entry, on their line.
            proxy.append(w.cost());
            proxy.shared(2 + 2 + n as u64, 2 + 1 + 1);
            sh.tracker.register(i, s, e, &[0u64; MAX_STREAMS][..n]);
            {
                let mut r = self.recent.lock();
                if r.len() == RECENT_ANCHORS {
                    r.pop_front();
                }
                r.push_back(s);
            }
            if let Stamp::Lv(clv) = &stamp {
                for (a, &v) in self.lplv.iter().zip(clv) {
                    a.fetch_max(v, Ordering::Release);
                }
            }
            self.next.store(e + sh.anchor_every, Ordering::Relaxed);
        }
        self.busy.store(false, Ordering::Release);
    }
}
