//! Model checks of Taurus's lock-free protocols with loom, on the real code (its atomics
//! and locks are loom's under `--cfg loom`, through `braid_wal::sync`):
//!
//! * **PLV publication and the committed vector** (Taurus Alg. 1 line 20 and Alg. 2;
//!   `scheme::taurus::clv`): two streams each publish their durable point (`PLV[i]`, with the
//!   `fetch_max` a pmem stream uses) after their record is written, the writers register their
//!   records (stream 1's record depends on stream 0's), and two helpers advance CLV while
//!   they check, like an acknowledging commit, that whatever CLV covers is written and visible
//!   to them (durability) and that CLV is closed: seeing stream 1's record committed implies
//!   seeing stream 0's (closure, docs/design.md invariant 3).
//! * **RLV updates during recovery** (Alg. 4; `scheme::taurus::pools`): replay workers claim
//!   ready records (`T.LV <= RLV`, with `RLV` derived from the pools' heads) and advance the
//!   heads lock-free; every record is replayed exactly once, and only after the effects of
//!   every record it depends on are visible to the worker replaying it (invariant 4).
//!
//! Model check (each model takes seconds in release mode):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p braid-wal --lib loom_taurus
//! ```
//!
//! (`LOOM_MAX_PREEMPTIONS=n` widens the search; the default bound here is 3.) Without
//! `--cfg loom` the same scenarios run as stress tests on real threads, many rounds each.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(loom)]
use loom::sync::Arc;
#[cfg(loom)]
use loom::thread;
#[cfg(not(loom))]
use std::sync::Arc;
#[cfg(not(loom))]
use std::thread;

use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};

use braid_wal::lv;
use braid_wal::scheme::taurus::clv::Clv;
use braid_wal::scheme::taurus::pools::{Flags, Heads, Pools, Slots};
use braid_wal::sync::{AtomicBool, AtomicU64, AtomicUsize};

use crate::integration::loom_harness::model;

/// Rounds of the stress variant.
const ROUNDS: usize = 3000;

// ---------------------------------------------------------------------------------------------
// PLV publication and CLV

/// Two streams: record 0 of stream `i` is `[0, 8)`; stream 1's read what stream 0's wrote.
const LVS: [[u64; 2]; 2] = [[8, 0], [8, 8]];

struct Plv {
    clv: Clv,
    /// `PLV[i]`, published by the stream.
    plv: [AtomicU64; 2],
    /// The record of stream `i` is written (relaxed: only the protocol may make it visible).
    written: [AtomicBool; 2],
}

impl Plv {
    /// Stream `i`: write the record, register it, and publish the durable point, in the
    /// order `publish_first` says (a pmem writer's record is durable before it registers; a
    /// file stream's flusher publishes whenever it gets to it).
    fn stream(&self, i: usize, publish_first: bool) {
        self.written[i].store(true, Relaxed);
        if publish_first {
            self.plv[i].fetch_max(8, SeqCst);
            self.clv.register(i, 0, 8, &LVS[i]);
        } else {
            self.clv.register(i, 0, 8, &LVS[i]);
            self.plv[i].fetch_max(8, SeqCst);
        }
    }

    fn advance(&self, i: usize) {
        self.clv
            .advance(i, |end| Ok(self.plv[i].load(Acquire) >= end))
            .unwrap();
    }

    /// What an acknowledging commit relies on: read CLV (stream 1 first) and check it.
    fn check(&self) {
        let c1 = self.clv.committed(1);
        let c0 = self.clv.committed(0);
        if c1 >= 8 {
            assert!(
                c0 >= 8,
                "CLV is not closed: stream 1 committed past a record that depends on stream 0 beyond its CLV"
            );
            assert!(
                self.written[1].load(Relaxed),
                "CLV covers an unwritten record of stream 1"
            );
        }
        if c0 >= 8 {
            assert!(
                self.written[0].load(Relaxed),
                "CLV covers an unwritten record of stream 0"
            );
        }
        assert!(
            c0 <= self.plv[0].load(Acquire) && c1 <= self.plv[1].load(Acquire),
            "CLV passed PLV"
        );
    }
}

fn plv_model(publish_first: bool) {
    model(ROUNDS, move || {
        let p = Arc::new(Plv {
            clv: Clv::new(&[0, 0]),
            plv: [AtomicU64::new(0), AtomicU64::new(0)],
            written: [AtomicBool::new(false), AtomicBool::new(false)],
        });
        let streams: Vec<_> = (0..2)
            .map(|i| {
                let p = p.clone();
                thread::spawn(move || p.stream(i, publish_first))
            })
            .collect();
        let helper = {
            let p = p.clone();
            thread::spawn(move || {
                p.advance(1);
                p.advance(0);
                p.check();
            })
        };
        p.advance(0);
        p.advance(1);
        p.check();
        for h in streams {
            h.join().unwrap();
        }
        helper.join().unwrap();
        // Once everything is published and registered, helping gets CLV all the way.
        for _ in 0..2 {
            p.advance(0);
            p.advance(1);
        }
        p.check();
        assert_eq!((p.clv.committed(0), p.clv.committed(1)), (8, 8));
    });
}

#[test]
fn plv_publication_and_clv_publish_then_register() {
    plv_model(true);
}

#[test]
fn plv_publication_and_clv_register_then_publish() {
    plv_model(false);
}

// ---------------------------------------------------------------------------------------------
// RLV updates during recovery

/// Pool 0: records `[0, 8)` and `[8, 16)`, the second depending on the first; pool 1: one
/// record `[0, 8)` depending on all of stream 0.
const STARTS: [&[u64]; 2] = [&[0, 8], &[0]];
const ENDS: [u64; 2] = [16, 8];
const REC_LVS: [&[[u64; 2]]; 2] = [&[[0, 0], [8, 0]], &[[16, 0]]];
const TOTAL: usize = 3;

struct Replay {
    pools: Pools,
    applied: [Vec<AtomicBool>; 2],
    finished: AtomicUsize,
}

impl Replay {
    /// `RLV[j]`: the start of pool `j`'s first unreplayed record (its end once all are).
    fn rlv(&self) -> [u64; 2] {
        let mut rlv = [0; 2];
        for (j, r) in rlv.iter_mut().enumerate() {
            let h = self.pools.head(j);
            *r = STARTS[j].get(h).copied().unwrap_or(ENDS[j]);
        }
        rlv
    }

    /// Replay (data logging): every record it depends on must be applied and visible.
    fn apply(&self, s: usize, k: usize) {
        let lv = REC_LVS[s][k];
        for (j, &upto) in lv.iter().enumerate() {
            for (m, &start) in STARTS[j].iter().enumerate() {
                let end = STARTS[j].get(m + 1).copied().unwrap_or(ENDS[j]);
                if end <= upto && start < upto {
                    assert!(
                        self.applied[j][m].load(Relaxed),
                        "record {k} of pool {s} replayed before record {m} of pool {j}, which it depends on"
                    );
                }
            }
        }
        assert!(
            !self.applied[s][k].swap(true, Relaxed),
            "record {k} of pool {s} replayed twice"
        );
    }

    fn worker(&self, w: usize) {
        while self.finished.load(Acquire) < TOTAL {
            let rlv = self.rlv();
            match self
                .pools
                .claim_ready(w, 8, |s, k| lv::le(&REC_LVS[s][k], &rlv))
            {
                Some((s, k)) => {
                    self.apply(s, k);
                    self.pools.finish(s, k);
                    self.finished.fetch_add(1, SeqCst);
                }
                None => thread::yield_now(),
            }
        }
    }
}

#[test]
fn rlv_updates_during_parallel_replay() {
    model(ROUNDS, || {
        let r = Arc::new(Replay {
            pools: Pools::new(&[2, 1]),
            applied: [
                (0..2).map(|_| AtomicBool::new(false)).collect(),
                vec![AtomicBool::new(false)],
            ],
            finished: AtomicUsize::new(0),
        });
        let other = {
            let r = r.clone();
            thread::spawn(move || r.worker(1))
        };
        r.worker(0);
        other.join().unwrap();
        assert_eq!((r.pools.head(0), r.pools.head(1)), (2, 1));
        assert!(r.applied.iter().flatten().all(|a| a.load(Relaxed)));
    });
}

// ---------------------------------------------------------------------------------------------
// Heads over growing pools (pipelined recovery)

/// A worker's snapshot of one pool of two independent records: the first snapshot holds
/// record 0 only, the later one both (the flags are shared, as in the readers' batches).
struct Snap<'a> {
    flags: &'a Flags,
    seen: usize,
}

impl Slots for Snap<'_> {
    fn admitted(&self, _s: usize) -> usize {
        self.seen
    }
    fn seen(&self, _s: usize) -> usize {
        self.seen
    }
    fn flags(&self, _s: usize, k: usize) -> (&AtomicBool, &AtomicBool) {
        self.flags.get(k)
    }
}

struct Growing {
    heads: Heads,
    flags: Flags,
    /// Record 1 is published (the feed's version, SeqCst as there).
    published: AtomicBool,
}

impl Growing {
    fn snap(&self) -> Snap<'_> {
        let seen = if self.published.load(SeqCst) { 2 } else { 1 };
        Snap {
            flags: &self.flags,
            seen,
        }
    }

    /// Claim from the snapshot, replay, finish; on `false`, one retry with a fresh snapshot
    /// (as `replay.rs` does).
    fn worker(&self, snap: Snap<'_>) {
        if let Some((s, k)) = self.heads.claim_ready(&snap, 0, 8, |_, _| true)
            && !self.heads.finish(&snap, s, k)
        {
            let _ = self.heads.advance(&self.snap(), s);
        }
    }
}

/// A worker holding the first snapshot finishes record 0 while record 1 is published and
/// replayed by a worker with the later snapshot: the head must end past both (a head left
/// behind a finished record would stall replay).
#[test]
fn heads_move_across_snapshots() {
    model(ROUNDS, || {
        let g = Arc::new(Growing {
            heads: Heads::new(1),
            flags: Flags::new(2),
            published: AtomicBool::new(false),
        });
        let late = {
            let g = g.clone();
            thread::spawn(move || {
                g.published.store(true, SeqCst);
                // Replays whatever its snapshot lets it claim, until record 1 is done.
                while !g.flags.get(1).1.load(Acquire) {
                    g.worker(g.snap());
                    thread::yield_now();
                }
            })
        };
        let early = Snap {
            flags: &g.flags,
            seen: 1,
        };
        g.worker(early);
        late.join().unwrap();
        // Record 0 may have been claimed by the late worker, in which case it finished it.
        assert!(g.flags.get(0).1.load(Acquire), "record 0 never replayed");
        assert_eq!(
            g.heads.head(0),
            2,
            "the head stayed behind a finished record"
        );
    });
}
