//! Plover's recovery cut: which records of each log are replayed.
//!
//! A transaction is *complete* when all of its records (as many as each record says) lie in
//! the kept prefixes of their logs. Each log is cut at its first record of a transaction that
//! is not complete, and everything after it in that log is dropped too; dropping records can
//! leave other transactions incomplete, so the cut is repeated until nothing changes (the
//! analogue of Taurus's ELV cut, Alg. 3, with "complete" in place of "`LV <= ELV`").
//!
//! Why everything after the first incomplete transaction goes, not just that transaction: a
//! record later in the same log may depend on it (it wrote or read a row of this partition
//! after the incomplete one did: two transactions that conflict on a row both log to the
//! row's partition, in the order they held the row). Dropping only the incomplete one would
//! recover a dependent without what it depends on. Cutting the whole suffix is conservative
//! (independent later records go as well) but needs no dependency tracking: the log order
//! is the dependency order. What is kept is the largest set of log prefixes in which every
//! transaction is complete, and it contains every transaction all of whose records and all of
//! whose predecessors' records (earlier in any of its logs, transitively) are in the valid
//! prefixes, which the commit protocol guarantees for every acknowledged one.
//!
//! The fixpoint is computed with a work list: each record is dropped at most once, so the cut
//! costs O(records) after one pass to index the transactions. Recovery (`recovery.rs`) admits
//! and replays the records below the first incomplete transaction's sequence number while it
//! reads, and cuts only the records from there on, which is the same cut (see there).

use std::collections::HashMap;

/// A record as the cut sees it: its transaction and how many records that transaction has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The transaction id.
    pub txn: u64,
    /// Records the transaction wrote (one per partition it accessed).
    pub parts: u32,
}

/// Per log, how many leading records are kept (see the module doc). `logs[s]` lists log `s`'s
/// records in log order; a transaction has at most one record per log (recovery checks this
/// before cutting).
pub(crate) fn cut(logs: &[Vec<Entry>]) -> Vec<usize> {
    let mut keep: Vec<usize> = logs.iter().map(Vec::len).collect();
    // Per transaction: records kept so far, and where its records are.
    let mut txns: HashMap<u64, (u32, Vec<(usize, usize)>)> = HashMap::new();
    for (s, log) in logs.iter().enumerate() {
        for (k, e) in log.iter().enumerate() {
            let t = txns.entry(e.txn).or_insert((0, Vec::new()));
            t.0 += 1;
            t.1.push((s, k));
        }
    }
    let mut work: Vec<u64> = logs
        .iter()
        .flatten()
        .filter(|e| txns[&e.txn].0 < e.parts)
        .map(|e| e.txn)
        .collect();
    work.sort_unstable();
    work.dedup();
    while let Some(t) = work.pop() {
        // Taken, so a transaction is cut once however often it is queued.
        let positions = txns
            .get_mut(&t)
            .map(|x| std::mem::take(&mut x.1))
            .unwrap_or_default();
        for (s, k) in positions {
            if k >= keep[s] {
                continue;
            }
            for e in &logs[s][k..keep[s]] {
                if let Some(x) = txns.get_mut(&e.txn) {
                    // The transaction was complete until now: it is cut from every log too.
                    if x.0 == e.parts {
                        work.push(e.txn);
                    }
                    x.0 -= 1;
                }
            }
            keep[s] = k;
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    fn e(txn: u64, parts: u32) -> Entry {
        Entry { txn, parts }
    }

    /// The definition, computed the slow way: cut each log at its first record whose
    /// transaction is not complete within the kept prefixes, until nothing changes.
    fn naive(logs: &[Vec<Entry>]) -> Vec<usize> {
        let mut keep: Vec<usize> = logs.iter().map(Vec::len).collect();
        loop {
            let mut count: HashMap<u64, u32> = HashMap::new();
            for (s, log) in logs.iter().enumerate() {
                for x in &log[..keep[s]] {
                    *count.entry(x.txn).or_default() += 1;
                }
            }
            let mut changed = false;
            for (s, log) in logs.iter().enumerate() {
                if let Some(k) = (0..keep[s]).find(|&k| count[&log[k].txn] < log[k].parts) {
                    keep[s] = k;
                    changed = true;
                }
            }
            if !changed {
                return keep;
            }
        }
    }

    #[test]
    fn complete_logs_are_kept_whole() {
        let logs = vec![vec![e(1, 2), e(2, 1), e(3, 2)], vec![e(1, 2), e(3, 2)]];
        assert_eq!(cut(&logs), vec![3, 2]);
        assert_eq!(cut(&[]), Vec::<usize>::new());
    }

    #[test]
    fn a_missing_record_drops_its_transaction_and_what_follows_it() {
        // Transaction 2 has two records but only the one in log 0 survived. Transaction 3
        // follows it in log 0 (it may have read or overwritten a row 2 wrote) and is dropped,
        // which drops its record in log 1 and transaction 4 after it there; transaction 1,
        // before the cut everywhere, stays.
        let logs = vec![
            vec![e(1, 2), e(2, 2), e(3, 2)],
            vec![e(1, 2), e(3, 2), e(4, 1)],
            vec![e(5, 1)],
        ];
        assert_eq!(cut(&logs), vec![1, 1, 1]);
        assert_eq!(naive(&logs), vec![1, 1, 1]);
    }

    #[test]
    fn cuts_ping_pong_between_logs_until_stable() {
        // 9 (two records, one found) is last in log 2: only it goes.
        let logs = vec![
            vec![e(1, 1), e(6, 2), e(8, 2)],
            vec![e(6, 2), e(7, 2)],
            vec![e(7, 2), e(8, 2), e(9, 2)],
        ];
        assert_eq!(cut(&logs), vec![3, 2, 2]);
        // 9 first in log 2: log 2 is cut to nothing, which leaves 7 (logs 1, 2) and 8 (logs
        // 0, 2) incomplete, which cuts log 1 after 6 and log 0 after 6.
        let logs = vec![
            vec![e(1, 1), e(6, 2), e(8, 2)],
            vec![e(6, 2), e(7, 2)],
            vec![e(9, 2), e(7, 2), e(8, 2)],
        ];
        assert_eq!(cut(&logs), vec![2, 1, 0]);
        assert_eq!(naive(&logs), vec![2, 1, 0]);
    }

    /// Random logs built the way Plover writes them (each transaction appends one record to
    /// each of a random set of logs, all at once), then a random suffix of each log lost: the
    /// work-list cut equals the definition, and every transaction kept is complete.
    fn lossy_logs() -> impl Strategy<Value = Vec<Vec<Entry>>> {
        (
            1usize..5,
            prop::collection::vec(1u8..16, 1..60),
            any::<u64>(),
        )
            .prop_map(|(n, masks, seed)| {
                let mut logs: Vec<Vec<Entry>> = vec![Vec::new(); n];
                for (i, m) in masks.iter().enumerate() {
                    let mask = u32::from(*m) & ((1 << n) - 1);
                    let mask = if mask == 0 { 1 } else { mask };
                    for (s, log) in logs.iter_mut().enumerate() {
                        if mask & (1 << s) != 0 {
                            log.push(e(i as u64 + 1, mask.count_ones()));
                        }
                    }
                }
                let mut x = seed | 1;
                for log in &mut logs {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let keep = (x % (log.len() as u64 + 1)) as usize;
                    log.truncate(keep);
                }
                logs
            })
    }

    proptest! {
        #[test]
        fn work_list_cut_equals_the_definition(logs in lossy_logs()) {
            let keep = cut(&logs);
            prop_assert_eq!(&keep, &naive(&logs));
            let mut count: HashMap<u64, (u32, u32)> = HashMap::new();
            for (s, log) in logs.iter().enumerate() {
                for x in &log[..keep[s]] {
                    let c = count.entry(x.txn).or_insert((0, x.parts));
                    c.0 += 1;
                }
            }
            for (t, (have, want)) in count {
                prop_assert_eq!(have, want, "transaction {} kept incomplete", t);
            }
        }
    }
}
