//! A standby's replay of gsn logs ([`crate::scheme::follow`]): each round runs the two-step
//! parallel redo pipeline of recovery (Wang & Johnson Section 3.2, `recovery.rs`: N scanners,
//! partitioning by page, M appliers sorting by GSN) over what the logs gained since the last
//! round, up to a bound `D` chosen so that what the standby has replayed is exactly a prefix of
//! every log.
//!
//! # The round's bound
//!
//! GSNs grow with LSNs inside a log (one insert at a time under the log's lock; a recovery's
//! void marker starts the next GSNs above every GSN in the logs), so "GSN at most `D`" is a
//! prefix of each log. A round:
//!
//! 1. scans every log from where the last round stopped to what the standby has read;
//! 2. takes `B = min over logs of M_s`, where `M_s` is the largest GSN read from log `s` that no
//!    void marker read so far covers (at least the last round's `D`, since every record up to
//!    it was read). Every record at or below `B`, in every log, has been read, as in recovery;
//! 3. lowers `B` to `D`, the largest value not inside any page-partitioned transaction, i.e.
//!    not in `[first part, commit)` of a transaction whose parts are read (an open transaction
//!    counts until its commit or abort record is read; one the standby's checkpoint holds
//!    does not count). So a transaction's records all lie at or below
//!    `D`, or all above it;
//! 4. replays what recovery would replay among the records in `(last D, D]`: whole
//!    transactions, and the parts of page-partitioned ones whose commit record and every part
//!    are found; then resumes each log at its first record above `D`.
//!
//! Rounds apply the records of each page in GSN order, as one recovery would: round `r + 1`
//! applies only GSNs above round `r`'s `D`. A transaction is replayed whole in one round, so the
//! tables hold a transaction-consistent state between rounds, and a promotion's recovery with the
//! resume positions as its cut (records before them covered) replays exactly the rest.
//!
//! # Crashes of the writer
//!
//! The writer's recovery voids what lay above its own bound `B'` with a marker `(B', base)` in
//! every log. A round never replays a record a later marker voids: the writer read at least
//! what the standby read before each log's marker, so until the standby reads a marker its `B`
//! is at most `B'`; once it has, it knows the range. Parts whose commit record the crash lost
//! would hold `D` below them forever; they are dropped once every log's marker is read with
//! its `base` above them (the commit record, in the committing worker's log, would have come
//! before that log's marker).
//!
//! Per-update records are parts too (one per write, and a commit record in the worker's log):
//! a transaction still running holds `D` below its first update record until its commit or
//! abort record is read, so the resume positions never pass an open transaction's records and
//! they are also the standby's keep positions ([`Follower::keeps`]).
//!
//! On persistent memory recovery replays every complete transaction (it takes no bound); a
//! standby keeps to `D`, which is safe there too, and a promotion's recovery replays the rest.
//!
//! Remote Flush Avoidance: a commit marked local may lie above the writer's bound and was
//! replayed by the writer's recovery all the same (`recovery.rs`); a round replays it, and its
//! parts, once `D` reaches it, even where a marker voids its GSN. Until then it waits like any
//! record above `D`: a standby's `D` is a prefix of every log, which the local commit's own
//! dependencies (its log before it, and GSNs acknowledged when it committed) lie in.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::GsnConfig;
use super::live::Voids;
use super::recovery::{RecKind, StreamScan, Threads, redo, scan};
use crate::scan::StreamSource;
use crate::scheme::follow::{Follower, Resumed};
use crate::scheme::{RecoveryReport, Replay, SchemeConfig};
use crate::{Lsn, WalError};

pub(super) struct GsnFollower {
    cfg: SchemeConfig,
    rows_per_page: u64,
    threads: Threads,
    /// Per log: the next round scans from here; every record before it is replayed or dead.
    at: Vec<Lsn>,
    /// Every record with a GSN at or below this, in every log, lies before `at` (`D`).
    done: u64,
    /// Per log: a GSN up to which the log is known durable (`done`, or the GSN clock of the
    /// checkpoint the standby started from once the log is read past the checkpoint's end).
    floors: Vec<u64>,
    /// Every void marker read: its `(B', base)` range and the writer's decisions in it.
    voids: Voids,
}

impl GsnFollower {
    pub(super) fn boxed(cfg: &SchemeConfig, gsn: &GsnConfig, streams: usize) -> Box<dyn Follower> {
        Box::new(GsnFollower {
            cfg: cfg.clone(),
            rows_per_page: gsn.rows_per_page,
            threads: Threads::of(cfg, gsn),
            at: (0..streams)
                .map(|s| crate::scheme::cut::Cut::start_of(cfg.cut.as_ref(), s))
                .collect(),
            done: 0,
            floors: vec![0; streams],
            voids: Voids::default(),
        })
    }
}

/// A page-partitioned transaction as one round sees it.
struct Split {
    /// The smallest GSN of its parts read (`u64::MAX` without one).
    first: u64,
    parts: u32,
    /// Its commit record's GSN and part count, if read and not void.
    commit: Option<(u64, u32)>,
    /// Its commit record lies in a voided range, or it aborted, or the checkpoint the
    /// standby started from holds it: it is not replayed and bounds nothing.
    void_commit: bool,
}

impl Default for Split {
    fn default() -> Split {
        Split {
            first: u64::MAX,
            parts: 0,
            commit: None,
            void_commit: false,
        }
    }
}

/// The largest value at most `bound` that lies in none of the closed ranges `forbidden`.
fn below_ranges(bound: u64, mut forbidden: Vec<(u64, u64)>) -> u64 {
    forbidden.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in forbidden {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut d = bound;
    for &(a, b) in merged.iter().rev() {
        if a <= d && d <= b {
            // Merged ranges are disjoint and not adjacent, so `a - 1` lies in none.
            d = a.saturating_sub(1);
        }
    }
    d
}

impl GsnFollower {
    /// Steps 2 and 3 of the module doc: the round's `D` and the page-partitioned transactions
    /// it replays.
    fn plan(&mut self, scans: &[StreamScan]) -> (u64, HashSet<u64>, u64) {
        let cut = self.cfg.cut.as_ref();
        self.voids.read(scans);
        let voids = &self.voids;
        for (s, sc) in scans.iter().enumerate() {
            if let Some(c) = cut
                && sc.end.end >= c.ends.get(s).copied().unwrap_or(0)
            {
                self.floors[s] = self.floors[s].max(c.marks.get(s).copied().unwrap_or(0));
            }
        }
        let bound = scans
            .iter()
            .zip(&self.floors)
            .map(|(sc, &floor)| super::recovery::top(sc, voids, floor).max(self.done))
            .min()
            .unwrap_or(self.done);
        let mut split: HashMap<u64, Split> = HashMap::new();
        for (s, sc) in scans.iter().enumerate() {
            for r in &sc.recs {
                // A commit the writer's recovery replayed although its marker voids it (its
                // decisions, or the local flag for an older marker); a part is held like any
                // other until its commit record says (a part in a void whose commit was not
                // replayed has a void commit, or one lost with the writer).
                let void = voids.void(r.gsn) && !voids.replayed(s, r.gsn, r.local);
                match r.kind {
                    RecKind::Part => {
                        let e = split.entry(r.txn).or_default();
                        e.first = e.first.min(r.gsn);
                        e.parts += 1;
                    }
                    RecKind::Commit(k) => {
                        let e = split.entry(r.txn).or_default();
                        if void {
                            e.void_commit = true;
                        } else {
                            e.commit = Some((r.gsn, k));
                        }
                    }
                    RecKind::Abort | RecKind::Covered => {
                        split.entry(r.txn).or_default().void_commit = true;
                    }
                    _ => {}
                }
            }
        }
        // The newest marker read this round in every log (the smallest over the logs of each
        // log's newest): a transaction's commit record lies in its worker's log, so the
        // commit records of transactions from before it lie before it.
        let marker0 = scans
            .iter()
            .map(|sc| {
                sc.recs
                    .iter()
                    .filter_map(|r| match r.kind {
                        RecKind::Marker(_, hi) => Some(hi),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0)
            })
            .min()
            .unwrap_or(0);
        let forbidden: Vec<(u64, u64)> = split
            .values()
            .filter(|t| t.parts > 0 && !t.void_commit)
            .filter_map(|t| match t.commit {
                Some((c, _)) if c > t.first => Some((t.first, c - 1)),
                Some(_) => None,
                None if marker0 > t.first => None, // its commit was lost with the writer
                None => Some((t.first, u64::MAX)),
            })
            .collect();
        let d = below_ranges(bound, forbidden).max(self.done);
        let mut skipped = 0;
        let committed = split
            .iter()
            .filter_map(|(&txn, t)| {
                let (c, k) = t.commit?;
                if c > d {
                    return None;
                }
                if t.parts != k {
                    skipped += 1;
                    return None;
                }
                Some(txn)
            })
            .collect();
        (d, committed, skipped)
    }
}

impl Follower for GsnFollower {
    fn round(
        &mut self,
        sources: &[&(dyn StreamSource + Sync)],
        replay: &dyn Replay,
    ) -> Result<RecoveryReport, WalError> {
        let n = self.at.len();
        let resumed = Resumed::all(sources, &self.at, "gsn")?;
        let views: Vec<&(dyn StreamSource + Sync)> = resumed.iter().map(|r| r as _).collect();
        let started = Instant::now();
        let mut report = RecoveryReport::default();
        let scans = scan(
            &views,
            self.threads.scan,
            self.cfg.scan_mode,
            self.cfg.cut.as_ref(),
            &mut report,
        )?;

        let t = Instant::now();
        let (d, committed, skipped) = self.plan(&scans);
        // Where each log resumes: its first record above `D` (checking the GSN order the
        // prefix rests on).
        let mut at = Vec::with_capacity(n);
        for (s, sc) in scans.iter().enumerate() {
            let first = sc.recs.iter().position(|r| r.gsn > d);
            if let Some(i) = first
                && let Some(r) = sc.recs[i..].iter().find(|r| r.gsn <= d)
            {
                let (file, offset) = resumed[s].locate(r.lsn);
                return Err(WalError::Corrupt {
                    file,
                    offset,
                    damage: crate::Corruption::GsnOrder {
                        log: s,
                        gsn: r.gsn,
                        lsn: r.lsn,
                    },
                });
            }
            at.push(first.map_or(sc.end.end, |i| sc.recs[i].lsn));
        }
        let voids = &self.voids;
        let live = |s: usize, r: &super::recovery::Rec| {
            r.gsn <= d && (!voids.void(r.gsn) || voids.replayed(s, r.gsn, r.local))
        };
        report.txns = committed.len() as u64;
        report.skipped = skipped;
        for (s, sc) in scans.iter().enumerate() {
            report.txns += sc
                .recs
                .iter()
                .filter(|r| r.kind == RecKind::Txn && live(s, r))
                .count() as u64;
        }
        report.stages.push(("plan", t.elapsed().as_secs_f64()));
        let take = |s: usize, r: &super::recovery::Rec| match r.kind {
            RecKind::Txn => live(s, r),
            RecKind::Part => r.gsn <= d && committed.contains(&r.txn),
            _ => false,
        };
        redo(
            &scans,
            &take,
            self.rows_per_page,
            self.threads.scan,
            self.threads.apply,
            replay,
            &mut report,
        )?;
        self.at = at;
        self.done = d;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    fn resume(&self) -> Vec<Lsn> {
        self.at.clone()
    }

    /// Every log is durable up to `D` (read, and before its resume position).
    fn marks(&self) -> Vec<u64> {
        self.floors.iter().map(|&f| f.max(self.done)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::below_ranges;

    #[test]
    fn the_bound_steps_below_every_range_it_falls_in() {
        assert_eq!(below_ranges(10, vec![]), 10);
        assert_eq!(below_ranges(10, vec![(12, 20)]), 10);
        assert_eq!(below_ranges(10, vec![(5, 10)]), 4);
        // Overlapping and adjacent ranges chain downwards.
        assert_eq!(below_ranges(10, vec![(7, 12), (3, 6)]), 2);
        assert_eq!(below_ranges(10, vec![(7, u64::MAX), (3, 5)]), 6);
        assert_eq!(below_ranges(10, vec![(0, 10)]), 0);
    }
}
