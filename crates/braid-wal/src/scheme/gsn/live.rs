//! Which commits a gsn recovery replays: the bound `B` (Wang & Johnson Section 3.2), the void
//! markers of earlier recoveries, and, above `B`, the decision commit by commit that Remote
//! Flush Avoidance's local commits and autonomous commit's sparse dependency vectors
//! (Nguyen et al., SIGMOD 2025) need.
//!
//! A commit record (a `Redo` + COMMIT record or a `Commit` record, not covered by the
//! checkpoint) of log `x` with GSN `g` is replayed if
//!
//! * `g` lies in the open range of a void marker: every marker whose range holds it replayed
//!   it (the marker's decision for log `x`, `deps.rs`). Decisions are stored, not recomputed:
//!   records written after the marker raise the logs' clocks, which would make a commit that
//!   was dead (and never replayed, so nothing after it read it) look alive;
//! * else `g <= B`: every record at or below `B` in every log is present;
//! * else, deciding such commits in GSN order (each log's first *dead* commit above `B` is
//!   `dead_x`, unset at first): `g < dead_x` (no earlier commit of its own log above `B` is
//!   dead: a transaction may read its own log's earlier writes without recording them), its
//!   parts are all found, and either it carries [`super::recovery::FLAG_LOCAL`] (it depends
//!   on its own log and on what was settled when it committed), or every dependency `(y, q)`
//!   it records holds: `q <= B`, or `q <= M_y` (log `y` holds every record up to `q`) and
//!   `q < dead_y` (every commit of `y` up to `q` is replayed); `y` = every log for the
//!   fallback entry. A commit with neither (a commit that waited for every log, or any commit
//!   of gsn without RFA) is dead above `B`, as before. Otherwise it is dead and `dead_x = g`.
//!
//! A dependency's GSN is below the commit's, so the GSN order decides every `dead_y` up to `q`
//! before a commit that names `(y, q)`: transitive dependencies need nothing more (if `y`'s
//! commit at or below `q` depended on a lost record of a third log, it is dead, `dead_y <= q`,
//! and so is every commit that names `(y, q)`). What is replayed above `B` is, per log, a GSN
//! prefix of its commits, which is what the recovery's void marker records (`dead_x` for each
//! log that has one).

use std::collections::HashMap;

use super::deps::{ALL_LOGS, Marker};
use super::recovery::{RecKind, StreamScan};

/// The void markers read: every earlier recovery's `(B, base)` and its decisions.
#[derive(Debug, Default, Clone)]
pub(crate) struct Voids(Vec<Marker>);

impl Voids {
    /// Note a marker (each recovery writes the same one into every log).
    pub(crate) fn add(&mut self, m: Marker) {
        if !self.0.iter().any(|x| x.lo == m.lo && x.hi == m.hi) {
            self.0.push(m);
        }
    }

    /// Whether GSN `g` lies in a marker's open range.
    pub(crate) fn void(&self, g: u64) -> bool {
        self.0.iter().any(|m| m.covers(g))
    }

    /// Whether every marker whose range holds a commit of log `log` with GSN `g` replayed it.
    pub(crate) fn replayed(&self, log: usize, g: u64, local: bool) -> bool {
        self.0
            .iter()
            .filter(|m| m.covers(g))
            .all(|m| m.replayed(log, g, local))
    }

    /// The largest bound of a marker: everything at or below it was present when it was
    /// written, and still is.
    pub(crate) fn floor(&self) -> u64 {
        self.0.iter().map(|m| m.lo).max().unwrap_or(0)
    }

    /// The markers in `scans`, added.
    pub(crate) fn read(&mut self, scans: &[StreamScan]) {
        for sc in scans {
            for r in &sc.recs {
                if let RecKind::Marker(lo, hi) = r.kind {
                    self.add(Marker {
                        lo,
                        hi,
                        dead: r.pairs.clone(),
                    });
                }
            }
        }
    }
}

/// The decisions: see the module doc.
pub(super) struct Liveness {
    pub bound: u64,
    pub voids: Voids,
    /// Per log: its first dead commit above the bound (`u64::MAX`: none).
    pub dead: Vec<u64>,
}

impl Liveness {
    /// Decide the commits above `bound` in `scans`, where `tops[s]` is the largest GSN up to
    /// which log `s` is present and `parts[txn]` the parts found of each transaction.
    pub(super) fn decide(
        scans: &[StreamScan],
        bound: u64,
        tops: &[u64],
        voids: Voids,
        parts: &HashMap<u64, u32>,
    ) -> Liveness {
        let n = scans.len();
        let mut above: Vec<(u64, usize, usize)> = Vec::new();
        for (s, sc) in scans.iter().enumerate() {
            for (i, r) in sc.recs.iter().enumerate() {
                if matches!(r.kind, RecKind::Txn | RecKind::Commit(_))
                    && r.gsn > bound
                    && !voids.void(r.gsn)
                {
                    above.push((r.gsn, s, i));
                }
            }
        }
        above.sort_unstable();
        let mut dead = vec![u64::MAX; n];
        for (g, s, i) in above {
            if dead[s] != u64::MAX {
                continue;
            }
            let r = &scans[s].recs[i];
            let whole = match r.kind {
                RecKind::Commit(k) => parts.get(&r.txn).copied().unwrap_or(0) == k,
                _ => true,
            };
            let holds = |y: usize, q: u64| q <= bound || (q <= tops[y] && q < dead[y]);
            let ok = whole
                && (r.local
                    || r.pairs.as_ref().is_some_and(|d| {
                        d.iter().all(|&(y, q)| {
                            if y == ALL_LOGS {
                                (0..n).all(|y| holds(y, q))
                            } else {
                                usize::from(y) < n && holds(usize::from(y), q)
                            }
                        })
                    }));
            if !ok {
                dead[s] = g;
            }
        }
        Liveness { bound, voids, dead }
    }

    /// Whether a commit record of log `s` (parts aside) is replayed.
    pub(super) fn commit(&self, s: usize, gsn: u64, local: bool) -> bool {
        if self.voids.void(gsn) {
            self.voids.replayed(s, gsn, local)
        } else {
            gsn <= self.bound || gsn < self.dead[s]
        }
    }

    /// The decisions for the recovery's void marker: each log's first dead commit.
    pub(super) fn decisions(&self) -> Vec<(u16, u64)> {
        self.dead
            .iter()
            .enumerate()
            .filter(|&(_, &d)| d != u64::MAX)
            .map(|(s, &d)| (s as u16, d))
            .collect()
    }
}
