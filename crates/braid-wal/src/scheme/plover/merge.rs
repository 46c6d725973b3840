//! The merge of Plover recovery (`recovery.rs`, steps 2 and 4): what may be replayed while
//! the logs are still being read, and the cut of the rest once they are read.
//!
//! Each log's reader publishes its records (sequence number, transaction, record count) a
//! chunk at a time with its read frontier, the sequence number of the last record it read.
//! The published records of all logs are merged in sequence-number order up to `m`, the
//! smallest frontier of a log still being read. A transaction's records all carry its
//! sequence number and a log's numbers strictly increase, so every log has published all of
//! its records numbered `m` or less: each transaction at or below `m` is seen whole. Its
//! records are checked to agree on the record count and to be no more than it claims, and
//! its id must not have been merged before (at another number, or twice in one log: the log
//! was not written by this scheme). It is *complete* if it has all of its records.
//!
//! The records below `bound = min(first incomplete transaction's number, m + 1)` are
//! *admitted*: they form a prefix of every log (numbers increase along a log) in which every
//! transaction is complete, so they belong to every cut's kept set (`cut.rs` keeps the
//! largest set of log prefixes in which every transaction is complete, and the union of two
//! such sets is one). The bound only grows: frontiers grow and the first incomplete number,
//! once found, is above the bound before it.
//!
//! Once every log is read (`m` is unbounded), the records from the first incomplete
//! transaction's number on, the *tails*, are cut with [`cut`]. A transaction lies entirely
//! below that number or entirely in the tails, so the admitted records plus the kept part of
//! the tails is a set of prefixes of complete transactions, and any such set's part in the
//! tails is one for the tails alone: the result is exactly the cut of the whole logs. The
//! tails are empty for logs that end cleanly, and a few records at a crash.

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use super::cut::{Entry, cut};
use super::record::{Head, Rec};
use crate::{Lsn, WalError};
use rustc_hash::FxHasher;

/// A record as the merge sees it.
#[derive(Clone, Copy)]
pub(super) struct Key {
    start: Lsn,
    txn: u64,
    head: Head,
}

impl Key {
    pub(super) fn of(r: &Rec) -> Key {
        Key {
            start: r.start,
            txn: r.txn,
            head: r.head,
        }
    }
}

/// The records of one log merged at or after the first incomplete transaction.
#[derive(Default)]
struct Tail {
    entries: Vec<Entry>,
    /// Whether each is the first record of its transaction in the merge (to count them).
    first: Vec<bool>,
}

/// What the cut of the tails decided once every log was read.
pub(super) struct Fin {
    /// Per log, how many of its tail records are kept.
    pub(super) keep: Vec<usize>,
    /// Transactions kept among the tails.
    pub(super) txns: u64,
}

/// The merge of the published records (see the module doc).
pub(super) struct Merge {
    /// Per log: records published and not merged yet, in log order.
    queued: Vec<VecDeque<Key>>,
    /// Per log: the sequence number of the last record read (covered ones included).
    last: Vec<Option<u64>>,
    /// Per log: read to its end (or failed).
    done: Vec<bool>,
    /// Per transaction merged: its logs (a bit each).
    seen: HashMap<u64, u64, BuildHasherDefault<FxHasher>>,
    /// The sequence number of the first incomplete transaction, once merged.
    stuck: Option<u64>,
    /// Per log: its records merged from `stuck` on.
    tails: Vec<Tail>,
    /// Transactions merged.
    pub(super) txns: u64,
    /// Transactions merged below `stuck`.
    pub(super) admitted: u64,
    /// Scratch: the records of one sequence number, with their logs.
    group: Vec<(usize, Key)>,
    /// Transactions whose records disagree (the first found).
    pub(super) error: Option<WalError>,
    /// Set once every log is read and merged.
    pub(super) fin: Option<Arc<Fin>>,
}

fn disagree(s: usize, k: &Key, what: &'static str) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "plover",
        stream: s,
        txn: Some(k.txn),
        lsn: k.start,
        problem: crate::RecordProblem::Merge(what),
    })
}

const DISAGREES: &str =
    "disagrees with another record of it on its sequence number or record count";

impl Merge {
    pub(super) fn new(n: usize) -> Merge {
        Merge {
            queued: (0..n).map(|_| VecDeque::new()).collect(),
            last: vec![None; n],
            done: vec![false; n],
            seen: HashMap::default(),
            stuck: None,
            tails: (0..n).map(|_| Tail::default()).collect(),
            txns: 0,
            admitted: 0,
            group: Vec::new(),
            error: None,
            fin: None,
        }
    }

    /// Log `s` read `keys` (after those published before) up to sequence number `last`, and
    /// is `done`: merge what every log has read past (and, once every log is read, cut the
    /// tails); returns the new bound (records below it are admitted).
    pub(super) fn publish(
        &mut self,
        s: usize,
        keys: impl Iterator<Item = Key>,
        last: Option<u64>,
        done: bool,
    ) -> Result<u64, WalError> {
        self.queued[s].extend(keys);
        self.last[s] = last;
        self.done[s] |= done;
        let b = self.advance()?;
        if self.fin.is_none() && self.done.iter().all(|&d| d) {
            self.finish();
        }
        Ok(b)
    }

    /// Merge what every log has read past; returns the new bound.
    fn advance(&mut self) -> Result<u64, WalError> {
        let n = self.queued.len();
        // Every log still being read has read past `m`.
        let mut m = u64::MAX;
        for t in 0..n {
            if !self.done[t] {
                match self.last[t] {
                    Some(l) => m = m.min(l),
                    None => return Ok(0),
                }
            }
        }
        while let Some(q) = self
            .queued
            .iter()
            .filter_map(|d| d.front().map(|k| k.head.seq))
            .min()
            .filter(|&q| q <= m)
        {
            self.group.clear();
            for (t, d) in self.queued.iter_mut().enumerate() {
                if d.front().is_some_and(|k| k.head.seq == q)
                    && let Some(k) = d.pop_front()
                {
                    self.group.push((t, k));
                }
            }
            self.merge_group(q)?;
        }
        let below = m.saturating_add(1);
        Ok(self.stuck.map_or(below, |s| s.min(below)))
    }

    /// Check and classify the records of sequence number `q` (in `self.group`, by log).
    fn merge_group(&mut self, q: u64) -> Result<(), WalError> {
        // Transactions of one sequence number wrote disjoint partitions; sort by transaction.
        self.group.sort_by_key(|&(t, k)| (k.txn, t));
        let mut whole = true;
        let mut i = 0;
        while i < self.group.len() {
            let txn = self.group[i].1.txn;
            let j = i + self.group[i..].partition_point(|(_, k)| k.txn == txn);
            let parts = self.group[i].1.head.parts;
            let mut mask = 0u64;
            for &(t, k) in &self.group[i..j] {
                if k.head.parts != parts {
                    return Err(disagree(t, &k, DISAGREES));
                }
                mask |= 1 << t;
            }
            if j - i > parts as usize {
                let (t, k) = self.group[i + parts as usize];
                return Err(disagree(t, &k, "is one more record than it claims to have"));
            }
            match self.seen.entry(txn) {
                MapEntry::Occupied(e) => {
                    let logs = *e.get();
                    let again = self.group[i..j].iter().find(|(t, _)| logs & (1 << t) != 0);
                    return Err(match again {
                        Some(&(t, k)) => disagree(t, &k, "is its second record in this log"),
                        None => {
                            let (t, k) = self.group[i];
                            disagree(t, &k, DISAGREES)
                        }
                    });
                }
                MapEntry::Vacant(e) => {
                    e.insert(mask);
                }
            }
            whole &= j - i == parts as usize;
            self.txns += 1;
            i = j;
        }
        if whole && self.stuck.is_none() {
            // Transactions of one number go together: all admitted or all in the tails.
            let mut i = 0;
            while i < self.group.len() {
                let txn = self.group[i].1.txn;
                i += self.group[i..].partition_point(|(_, k)| k.txn == txn);
                self.admitted += 1;
            }
            return Ok(());
        }
        self.stuck.get_or_insert(q);
        for (i, &(t, k)) in self.group.iter().enumerate() {
            let tail = &mut self.tails[t];
            tail.entries.push(Entry {
                txn: k.txn,
                parts: k.head.parts,
            });
            tail.first.push(i == 0 || self.group[i - 1].1.txn != k.txn);
        }
        Ok(())
    }

    /// Every log is read and merged: cut the tails.
    fn finish(&mut self) {
        let logs: Vec<Vec<Entry>> = self
            .tails
            .iter_mut()
            .map(|t| std::mem::take(&mut t.entries))
            .collect();
        let keep = cut(&logs);
        let txns = self
            .tails
            .iter()
            .zip(&keep)
            .map(|(t, &k)| t.first[..k].iter().filter(|&&f| f).count() as u64)
            .sum();
        self.fin = Some(Arc::new(Fin { keep, txns }));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    fn key(txn: u64, seq: u64, parts: u32) -> Key {
        Key {
            start: seq * 100 + txn,
            txn,
            head: Head { seq, parts },
        }
    }

    /// Logs as Plover writes them: each transaction (a non-empty set of logs) takes one more
    /// than the largest counter of its logs as its number and sets those counters to it, so
    /// transactions on disjoint logs can share a number.
    fn written(n: usize, masks: &[u8]) -> Vec<Vec<Key>> {
        let mut logs: Vec<Vec<Key>> = vec![Vec::new(); n];
        let mut counters = vec![0u64; n];
        for (i, m) in masks.iter().enumerate() {
            let mask = match u32::from(*m) & ((1 << n) - 1) {
                0 => 1,
                x => x,
            };
            let logs_of = (0..n).filter(|t| mask & (1 << t) != 0);
            let seq = logs_of.clone().map(|t| counters[t]).max().unwrap_or(0) + 1;
            for t in logs_of {
                counters[t] = seq;
                logs[t].push(key(i as u64 + 1, seq, mask.count_ones()));
            }
        }
        logs
    }

    fn entries(logs: &[Vec<Key>]) -> Vec<Vec<Entry>> {
        logs.iter()
            .map(|l| {
                l.iter()
                    .map(|k| Entry {
                        txn: k.txn,
                        parts: k.head.parts,
                    })
                    .collect()
            })
            .collect()
    }

    /// Publish every log in chunks, the logs taking turns as `turns` says (cycled), chunks of
    /// the sizes it gives; checks that the bound only grows and admits only what the cut of
    /// the whole logs keeps. Returns the merge and, per log, the records below its last bound.
    fn publish_all(
        logs: &[Vec<Key>],
        turns: &[(usize, usize)],
    ) -> Result<(Merge, Vec<usize>), WalError> {
        let n = logs.len();
        let keep = cut(&entries(logs));
        let mut m = Merge::new(n);
        let mut pos = vec![0usize; n];
        let mut done = vec![false; n];
        let mut bound = 0u64;
        let mut turn = turns.iter().cycle();
        while !done.iter().all(|&d| d) {
            let &(t, len) = turn.next().unwrap();
            // The turn's log, or the next one still being read.
            let s = (0..n).map(|i| (t + i) % n).find(|&s| !done[s]).unwrap();
            let to = (pos[s] + len).min(logs[s].len());
            let last = to.checked_sub(1).map(|i| logs[s][i].head.seq);
            done[s] = to == logs[s].len();
            let b = m.publish(s, logs[s][pos[s]..to].iter().copied(), last, done[s])?;
            pos[s] = to;
            assert!(b >= bound, "the bound went back from {bound} to {b}");
            bound = b;
            for (t, l) in logs.iter().enumerate() {
                let below = l[..pos[t]].iter().filter(|k| k.head.seq < bound).count();
                assert!(
                    below <= keep[t],
                    "log {t}: {below} admitted, the cut keeps {}",
                    keep[t]
                );
            }
        }
        let below = logs
            .iter()
            .map(|l| l.iter().filter(|k| k.head.seq < bound).count())
            .collect();
        Ok((m, below))
    }

    #[test]
    fn disagreeing_records_are_errors() {
        let err = |logs: Vec<Vec<Key>>| {
            publish_all(&logs, &[(0, 1), (1, 1), (2, 1)])
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let e = err(vec![vec![key(1, 1, 2)], vec![key(1, 1, 1)]]);
        assert!(e.contains("record count"), "{e}");
        let e = err(vec![
            vec![key(1, 1, 2)],
            vec![key(1, 1, 2)],
            vec![key(1, 1, 2)],
        ]);
        assert!(e.contains("one more record"), "{e}");
        let e = err(vec![vec![key(1, 1, 1), key(1, 2, 1)], vec![]]);
        assert!(e.contains("log 0") && e.contains("second record"), "{e}");
        let e = err(vec![vec![key(1, 1, 2)], vec![key(1, 2, 2)]]);
        assert!(e.contains("log 1") && e.contains("sequence number"), "{e}");
    }

    #[test]
    fn an_unread_log_holds_the_bound() {
        let logs = written(2, &[3, 1, 3, 2, 1]);
        let mut m = Merge::new(2);
        let b = m
            .publish(0, logs[0].iter().copied(), Some(9), false)
            .unwrap();
        assert_eq!(b, 0, "log 1 may still hold a record of any number");
        let b = m
            .publish(1, logs[1][..1].iter().copied(), Some(1), false)
            .unwrap();
        assert_eq!(b, 2, "both logs read past 1");
        // Log 0 read records past its last one published (covered by a checkpoint).
        let b = m
            .publish(1, logs[1][1..].iter().copied(), Some(4), true)
            .unwrap();
        assert_eq!(b, 10);
        assert_eq!((m.txns, m.admitted), (5, 5));
        assert!(m.fin.is_none());
        let b = m.publish(0, std::iter::empty(), Some(9), true).unwrap();
        assert_eq!(b, u64::MAX);
        assert_eq!(m.fin.as_ref().unwrap().keep, vec![0, 0]);
    }

    proptest! {
        /// Whatever order the logs are read in, the admitted records plus the cut of the tails
        /// are the cut of the whole logs, and the transactions counted are those it keeps.
        #[test]
        fn admitted_and_cut_tails_are_the_cut(
            n in 1usize..5,
            masks in prop::collection::vec(1u8..16, 0..80),
            lost in prop::collection::vec(0usize..6, 4),
            turns in prop::collection::vec((0usize..4, 1usize..5), 1..6),
        ) {
            let mut logs = written(n, &masks);
            for (l, &x) in logs.iter_mut().zip(&lost) {
                l.truncate(l.len().saturating_sub(x));
            }
            let keep = cut(&entries(&logs));
            let (m, below) = publish_all(&logs, &turns).unwrap();
            let fin = m.fin.as_ref().unwrap();
            for s in 0..n {
                prop_assert_eq!(below[s] + fin.keep[s], keep[s], "log {}", s);
            }
            let all: std::collections::HashSet<u64> =
                logs.iter().flatten().map(|k| k.txn).collect();
            let kept: std::collections::HashSet<u64> = logs
                .iter()
                .zip(&keep)
                .flat_map(|(l, &k)| l[..k].iter().map(|k| k.txn))
                .collect();
            prop_assert_eq!(m.txns, all.len() as u64);
            prop_assert_eq!(m.admitted + fin.txns, kept.len() as u64);
        }
    }
}
