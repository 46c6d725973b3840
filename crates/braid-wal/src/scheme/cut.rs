//! The log cut of a checkpoint: which records a transaction-consistent checkpoint already
//! contains, so recovery replays exactly the rest.
//!
//! A checkpoint (see `braid_engine::checkpoint`) moves the engine's *checkpoint epoch* from
//! `E - 1` to `E` and captures the state of every transaction that committed in an epoch below
//! `E`. Each transaction's records carry the low bit of its epoch ([`FLAG_EPOCH`]). On every
//! stream the checkpoint notes two positions:
//!
//! * `start`: the stream's reserved end just *before* the epoch moved. A record reserved before
//!   it belongs to a transaction that read the old epoch first, so it is in the checkpoint.
//! * `end`: the stream's reserved end once every transaction of the old epoch has finished
//!   installing. A record at or after it belongs to a transaction of the new epoch.
//!
//! Between the two both kinds interleave, and the epoch bit tells them apart (two checkpoints
//! never overlap, so only epochs `E - 1` and `E` can meet there). The positions are in each
//! stream's own units: byte LSNs for device streams, object LSNs for `pertxn`.
//!
//! With per-update records ([`super::Records::Update`]) a transaction's writes reach the log
//! before its commit decides its epoch, so a transaction still open when the epoch moves may
//! have records before `start`. Whether a transaction is in the checkpoint is then decided by
//! its commit record alone (which obeys the rule above), and the checkpoint also notes `keep`:
//! the first record of any transaction open at `start` ([`super::open_txns`]), where recovery
//! from the checkpoint must begin reading and before which the log may be truncated. Without
//! per-update records `keep` is `start`.
//!
//! Schemes also get a per-stream `mark`, a scheme-specific value captured with `end` (the gsn
//! scheme keeps each log's GSN clock there, so a log truncated to nothing still proves how far
//! it was durable).

use crate::Lsn;

/// Caller flag bit carrying the low bit of the transaction's checkpoint epoch.
pub(crate) const FLAG_EPOCH: u8 = 2;

/// The record flag for a transaction of checkpoint epoch `epoch`.
#[inline]
pub(crate) fn epoch_flag(epoch: u64) -> u8 {
    if epoch & 1 == 1 { FLAG_EPOCH } else { 0 }
}

/// What a checkpoint already contains, per stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cut {
    /// The checkpoint's epoch: transactions of earlier epochs are in it.
    pub epoch: u64,
    /// Per stream: every record before this is in the checkpoint.
    pub starts: Vec<Lsn>,
    /// Per stream: no record at or after this is in the checkpoint.
    pub ends: Vec<Lsn>,
    /// Per stream: a scheme-specific value noted with `ends` (gsn: the log's GSN clock).
    pub marks: Vec<u64>,
    /// Per stream: where recovery from the checkpoint begins reading, at or before `starts`
    /// (the first record of a transaction open at `starts`); empty: at `starts`.
    pub keeps: Vec<Lsn>,
}

impl Cut {
    /// Whether the record at `lsn` of `stream` with caller flags `flags` belongs to a
    /// transaction the checkpoint already contains.
    #[inline]
    pub(crate) fn covers(&self, stream: usize, lsn: Lsn, flags: u8) -> bool {
        let start = self.starts.get(stream).copied().unwrap_or(0);
        let end = self.ends.get(stream).copied().unwrap_or(0);
        if lsn < start {
            return true;
        }
        if lsn >= end {
            return false;
        }
        (flags & FLAG_EPOCH != 0) != (self.epoch & 1 == 1)
    }

    /// Whether `cut` (if any) covers the record.
    #[inline]
    pub(crate) fn covered(cut: Option<&Cut>, stream: usize, lsn: Lsn, flags: u8) -> bool {
        cut.is_some_and(|c| c.covers(stream, lsn, flags))
    }

    /// Where recovery from `cut` begins reading `stream`: its `keep` (0 without a cut).
    pub fn start_of(cut: Option<&Cut>, stream: usize) -> Lsn {
        cut.map_or(0, |c| c.keep(stream))
    }

    /// Where recovery from this cut begins reading `stream` (its `keep`, else its `start`):
    /// the log before it may be truncated.
    pub(crate) fn keep(&self, stream: usize) -> Lsn {
        let start = self.starts.get(stream).copied().unwrap_or(0);
        self.keeps.get(stream).map_or(start, |&k| k.min(start))
    }

    /// `Cut::keep` of every stream.
    pub fn keeps(&self) -> Vec<Lsn> {
        (0..self.starts.len()).map(|s| self.keep(s)).collect()
    }
}

/// A scheme's positions at one instant, for a cut.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Positions {
    /// Per stream: the reserved end (the next record goes here).
    pub lsns: Vec<Lsn>,
    /// Per stream: the scheme-specific mark (see [`Cut::marks`]).
    pub marks: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_by_position_and_epoch_bit() {
        let cut = Cut {
            epoch: 3,
            starts: vec![100, 10],
            ends: vec![200, 10],
            marks: vec![0, 0],
            keeps: vec![],
        };
        // Before start: always covered, whatever the bit.
        assert!(cut.covers(0, 99, 0));
        assert!(cut.covers(0, 99, FLAG_EPOCH));
        // After end: never.
        assert!(!cut.covers(0, 200, 0));
        assert!(!cut.covers(0, 250, FLAG_EPOCH));
        // In between: the old epoch (2, bit 0) is covered, the new one (3, bit 1) is not.
        assert!(cut.covers(0, 150, epoch_flag(2)));
        assert!(!cut.covers(0, 150, epoch_flag(3)));
        // Empty window on stream 1.
        assert!(cut.covers(1, 9, FLAG_EPOCH));
        assert!(!cut.covers(1, 10, 0));
        // Unknown stream: nothing covered.
        assert!(!cut.covers(7, 0, 0));
        assert!(!Cut::covered(None, 0, 0, 0));
    }
}
