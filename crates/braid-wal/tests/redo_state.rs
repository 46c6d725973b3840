//! A replay target for the scheme tests that drive schemes directly: redo payloads applied to a
//! key -> first-byte map.

use std::collections::HashMap;

use braid_wal::payload::{RedoOp, decode_redo};
use braid_wal::scheme::{LogKind, Replay, ReplayError};
use parking_lot::Mutex;

/// Replays into a key -> value map (the first byte of the row image).
#[derive(Default)]
pub struct State {
    pub rows: Mutex<HashMap<u64, u8>>,
}

impl Replay for State {
    fn apply(&self, _txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        assert_eq!(kind, LogKind::Data);
        for op in decode_redo(payload) {
            match op? {
                RedoOp::Insert { key, data, .. } | RedoOp::Update { key, data, .. } => {
                    self.rows.lock().insert(key, data[0]);
                }
                RedoOp::Delete { key, .. } => {
                    self.rows.lock().remove(&key);
                }
            }
        }
        Ok(())
    }
}

impl State {
    pub fn get(&self, key: u64) -> Option<u8> {
        self.rows.lock().get(&key).copied()
    }
}
