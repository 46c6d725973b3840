//! The layout of a Plover record: one per (transaction, partition it accessed).
//!
//! * kind [`Kind::Redo`], flags `FLAG_COMMIT` (every record stands for itself: a transaction
//!   is committed once all of its records are found) and the checkpoint epoch bit;
//! * the transaction id in the header;
//! * stamp: a two-entry dense vector `[global sequence number, records of the transaction]`;
//! * payload: the redo operations of the rows the transaction wrote in this partition, in
//!   [`crate::payload`]'s format, so `braid inspect` shows them; empty for a partition the
//!   transaction only read.

use crate::record::{Kind, Record, Stamp, StampKind};
use crate::{Lsn, RecordProblem, WalError};

/// The stamp of a record of a transaction with global number `seq` and `parts` records.
pub(crate) fn stamp(seq: u64, parts: u32) -> Stamp {
    Stamp::Lv(vec![seq, u64::from(parts)])
}

/// Set `stamp` (made by [`stamp`]) to `seq` and `parts` without allocating.
pub(crate) fn restamp(stamp: &mut Stamp, seq: u64, parts: u32) {
    match stamp {
        Stamp::Lv(v) if v.len() == 2 => {
            v[0] = seq;
            v[1] = u64::from(parts);
        }
        s => *s = self::stamp(seq, parts),
    }
}

/// What a Plover record says about its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) parts: u32,
}

/// Decode the head of a record of log `log`; an error names what is wrong and where.
pub(crate) fn head(rec: &Record<'_>, log: usize, n: usize) -> Result<Head, WalError> {
    let h = &rec.header;
    let bad = |problem: RecordProblem| {
        WalError::WrongLog(crate::WrongLog::Record {
            scheme: "plover",
            stream: log,
            txn: Some(h.txn),
            lsn: h.lsn,
            problem,
        })
    };
    if h.kind != Kind::Redo {
        return Err(bad(RecordProblem::Kind(h.kind.into())));
    }
    if rec.stamp.kind() != StampKind::Lv || rec.stamp.lv_len() != 2 {
        return Err(bad(RecordProblem::NoStamp("[sequence number, records]")));
    }
    let mut v = [0u64; 2];
    rec.stamp.lv_into(&mut v);
    if v[1] == 0 || v[1] > n as u64 {
        return Err(bad(RecordProblem::Parts {
            claimed: v[1],
            logs: n,
        }));
    }
    Ok(Head {
        seq: v[0],
        parts: v[1] as u32,
    })
}

/// One record of a log as recovery keeps it.
#[derive(Debug, Clone)]
pub(crate) struct Rec {
    pub(crate) start: Lsn,
    pub(crate) txn: u64,
    pub(crate) head: Head,
    /// Its payload in the log's arena.
    pub(crate) payload: (usize, usize),
}
