//! Anchors (Taurus Alg. 5, `FlushPLV` / `LPLV`): what each stream remembers of the anchor
//! records its workers append, so that record LVs can be compressed against the stream's last
//! anchor and checkpoint truncation can keep the newest anchor before its cut. The worker that
//! notices an anchor is due appends it (`worker.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64};

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
}
