//! A pool's log stream behind one interface, one-layer (a [`LogStore`], REWIND §3.1) or
//! two-layer (an AVL tree over a bottom log, §3.3), and where a record is in it.

use super::CommitClear;
use crate::RewindError;
use crate::avl::TwoLayer;
use crate::log::{LogStore, Pos};
use crate::record::Rec;

/// A log stream: one- or two-layer.
pub(crate) enum Log {
    One(LogStore),
    Two(TwoLayer),
}

/// Where a record is: a slot of a one-layer log, or a key of a two-layer log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecRef {
    Pos(Pos),
    Key(u64),
}

impl Log {
    /// Append a record of transaction `rec.txid` whose per-transaction number is `n`.
    pub fn append(&self, rec: &Rec, n: u64, hold: Option<usize>) -> Result<RecRef, RewindError> {
        match self {
            Log::One(l) => l.append(rec, hold).map(RecRef::Pos),
            Log::Two(t) => t
                .append(crate::avl::key(rec.txid, n), rec, hold)
                .map(RecRef::Key),
        }
    }

    /// Append the records `recs` of one transaction, each with the reservation it makes
    /// (`hold = Some(h)` of [`Log::append`]), numbered from `n`: all of them (one lock for a
    /// one-layer log) or none (`LogFull`). Their places are pushed to `out`.
    pub fn append_many(
        &self,
        recs: &[(Rec, usize)],
        n: u64,
        out: &mut Vec<RecRef>,
    ) -> Result<(), RewindError> {
        match self {
            Log::One(l) => l.append_many(recs, |p| out.push(RecRef::Pos(p))),
            Log::Two(t) => {
                for (i, (rec, h)) in recs.iter().enumerate() {
                    let k = crate::avl::key(rec.txid, n + i as u64);
                    out.push(RecRef::Key(t.append(k, rec, Some(*h))?));
                }
                Ok(())
            }
        }
    }

    /// A transaction's END: append its records `pre` not yet in the log (as
    /// [`Log::append_many`], numbered from `n`, places pushed to `out`), then END, give back
    /// `release` reserved records and sync (one lock for a one-layer log). Returns where END
    /// is and the records now in the log.
    pub fn append_end(
        &self,
        pre: &[(Rec, usize)],
        out: &mut Vec<RecRef>,
        rec: &Rec,
        n: u64,
        hold: Option<usize>,
        release: usize,
    ) -> Result<(RecRef, usize), RewindError> {
        match self {
            Log::One(l) => l
                .append_end(pre, |p| out.push(RecRef::Pos(p)), rec, hold, release)
                .map(|(p, live)| (RecRef::Pos(p), live)),
            Log::Two(t) => {
                self.append_many(pre, n, out)?;
                let n = n + pre.len() as u64;
                let at = t.append(crate::avl::key(rec.txid, n), rec, hold)?;
                t.unreserve(release);
                Ok((RecRef::Key(at), t.live()))
            }
        }
    }

    pub fn unreserve(&self, n: usize) {
        match self {
            Log::One(l) => l.unreserve(n),
            Log::Two(t) => t.unreserve(n),
        }
    }

    /// Whether user writes wait for the records covering them to be synced (Batch, Sealed).
    pub fn is_batch(&self) -> bool {
        matches!(self, Log::One(l) if l.is_grouped())
    }

    pub fn sync(&self) {
        if let Log::One(l) = self {
            l.sync();
        }
    }

    pub fn clear(&self, recs: &[RecRef], last: Option<RecRef>) -> Result<(), RewindError> {
        match self {
            Log::One(l) => {
                let ps = positions(recs);
                let last = match last {
                    Some(RecRef::Pos(p)) => Some(p),
                    _ => None,
                };
                l.clear(&ps, last);
                Ok(())
            }
            Log::Two(t) => {
                let ks: Vec<u64> = recs
                    .iter()
                    .filter_map(|r| match r {
                        RecRef::Key(k) => Some(*k),
                        RecRef::Pos(_) => None,
                    })
                    .collect();
                let last = match last {
                    Some(RecRef::Key(k)) => Some(k),
                    _ => None,
                };
                t.clear(&ks, last)
            }
        }
    }

    /// Clear a finished transaction `txid` under force: its records `recs` and its END
    /// record `end` last. A one-layer log under [`CommitClear::Scan`] finds them by reading
    /// the log backwards (REWIND §4.6) rather than by `recs`; a two-layer log removes them by
    /// key from its index.
    pub fn clear_tx(
        &self,
        txid: u64,
        recs: &[RecRef],
        end: RecRef,
        mode: CommitClear,
    ) -> Result<(), RewindError> {
        match (self, end, mode) {
            (Log::One(l), RecRef::Pos(p), CommitClear::Scan) => {
                l.clear_tx_scan(txid, p);
                Ok(())
            }
            _ => self.clear(recs, Some(end)),
        }
    }

    /// A checkpoint's removal of whole finished transactions: their records `recs`, then
    /// (after a fence) their END records `ends`. A one-layer log unlinks the buckets they
    /// empty ([`LogStore::clear_checkpoint`]); a two-layer log that holds nothing else is
    /// emptied at once ([`TwoLayer::clear_checkpoint`]).
    pub fn clear_checkpoint(&self, recs: &[RecRef], ends: &[RecRef]) -> Result<(), RewindError> {
        match self {
            Log::Two(t) => {
                let keys = |v: &[RecRef]| -> Vec<u64> {
                    v.iter()
                        .filter_map(|r| match r {
                            RecRef::Key(k) => Some(*k),
                            RecRef::Pos(_) => None,
                        })
                        .collect()
                };
                t.clear_checkpoint(&keys(recs), &keys(ends))?;
                Ok(())
            }
            Log::One(l) => {
                l.clear_checkpoint(&positions(recs), &positions(ends));
                Ok(())
            }
        }
    }

    /// Remove records behind a persisted checkpoint cut, `recs` then `ends`: from the
    /// volatile state only where the layout allows it (Sealed), else as [`Log::clear`] with
    /// no last record.
    pub fn forget(&self, recs: &[RecRef], ends: &[RecRef]) -> Result<(), RewindError> {
        if let Log::One(l) = self
            && l.forget(recs.iter().chain(ends).filter_map(|r| match r {
                RecRef::Pos(p) => Some(*p),
                RecRef::Key(_) => None,
            }))
        {
            return Ok(());
        }
        let all: Vec<RecRef> = recs.iter().chain(ends).copied().collect();
        self.clear(&all, None)
    }

    /// Every record: log order (one layer) or key order (two layers).
    pub fn scan(&self) -> Result<Vec<(RecRef, Rec)>, RewindError> {
        match self {
            Log::One(l) => Ok(l
                .scan()
                .into_iter()
                .map(|(p, r)| (RecRef::Pos(p), r))
                .collect()),
            Log::Two(t) => Ok(t
                .scan()?
                .into_iter()
                .map(|(k, r)| (RecRef::Key(k), r))
                .collect()),
        }
    }

    /// The records of one transaction, newest first. One layer: a backward scan of the whole
    /// log (§3.2: "we need to scan the entire log just for the rolled back transaction"); two
    /// layers: a walk down the transaction's key range in the AVL index.
    pub fn tx_records_rev(&self, txid: u64) -> Result<Vec<(RecRef, Rec)>, RewindError> {
        match self {
            Log::One(l) => Ok(l
                .scan_tx_rev(txid)
                .into_iter()
                .map(|(p, r)| (RecRef::Pos(p), r))
                .collect()),
            Log::Two(t) => {
                let low = crate::avl::key(txid, 0);
                let mut bound = crate::avl::key(txid + 1, 0);
                let mut out = Vec::new();
                while let Some((k, r)) = t.below(low, bound)? {
                    out.push((RecRef::Key(k), r));
                    bound = k;
                }
                Ok(out)
            }
        }
    }

    pub fn recover(&self) -> Result<(), RewindError> {
        match self {
            Log::One(l) => l.recover(),
            Log::Two(t) => t.recover(),
        }
    }

    pub fn reset(&self) {
        match self {
            Log::One(l) => l.reset(),
            Log::Two(t) => t.reset(),
        }
    }

    pub fn format(&self) {
        match self {
            Log::One(l) => l.format(),
            Log::Two(t) => t.format(),
        }
    }

    pub fn live(&self) -> usize {
        match self {
            Log::One(l) => l.live(),
            Log::Two(t) => t.live(),
        }
    }

    pub fn capacity(&self) -> usize {
        match self {
            Log::One(l) => l.capacity(),
            Log::Two(t) => t.capacity(),
        }
    }
}

/// The one-layer log positions among `recs`.
fn positions(recs: &[RecRef]) -> Vec<Pos> {
    // Sized once: collected from a filter, the vector would grow by doubling, copying a
    // checkpoint's worth of positions several times.
    let mut v = Vec::with_capacity(recs.len());
    v.extend(recs.iter().filter_map(|r| match r {
        RecRef::Pos(p) => Some(*p),
        RecRef::Key(_) => None,
    }));
    v
}
