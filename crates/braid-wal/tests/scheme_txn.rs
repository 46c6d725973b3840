//! One transaction against any scheme, as the engine runs it: the reads and writes announced
//! row by row, the writes' redo operations placed in the payload (so partitioning schemes can
//! place them without decoding it), then the commit. Shared by the scheme tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_wal::payload::{RedoBuf, RedoOp};
use braid_wal::scheme::{CommitRequest, LogKind, NoRows, RowRef, SchemeWorker, Ticket, Written};

/// Run one transaction: read `reads`, write `writes` (table 0) with `value`.
pub fn txn(w: &mut dyn SchemeWorker, id: u64, reads: &[u64], writes: &[u64], value: u8) -> Ticket {
    for &k in reads {
        w.on_read(RowRef::new(0, k));
    }
    let mut buf = RedoBuf::default();
    let mut written = Vec::new();
    for &k in writes {
        w.on_write(RowRef::new(0, k));
        let start = buf.bytes.len() as u32;
        buf.push(&RedoOp::Insert {
            table: 0,
            key: k,
            data: &[value; 4],
        });
        written.push(Written {
            table: 0,
            key: k,
            op: start..buf.bytes.len() as u32,
        });
    }
    let req = CommitRequest {
        txn: id,
        kind: LogKind::Data,
        payload: &buf.bytes,
        read_only: writes.is_empty(),
        epoch: 0,
        writes: &written,
        rows: &NoRows,
        updates: 0,
    };
    w.commit(&req).unwrap()
}
