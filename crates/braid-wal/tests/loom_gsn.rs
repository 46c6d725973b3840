//! Model check of passive group commit (Wang & Johnson 2014, Section 4.1) with loom, on the
//! real worker and daemon steps of `scheme::gsn::commit` ([`mark_dirty`] and [`min_dgsn`],
//! generic over the published word so they run on loom's atomics here):
//!
//! Two workers with a log each (transaction-level partitioning, one log per worker: the
//! default) commit one and two transactions: set the dirty bit (reading the floor `dgsn`),
//! take a GSN from their log's clock (`max(floor, clock) + 1`, under the log's insert lock),
//! write the record, publish the new `dgsn` with the bit cleared, and join the commit queue by
//! storing the GSN in its own queue word (`wants[w]`, which no other thread writes). A worker's
//! GSN carries over from one transaction to the next.
//! The daemon reads the queue's target as the largest of the workers' words ([`queue_target`])
//! and computes `min_dgsn` for it twice, raising clean words below it (with one log per
//! worker, only that raise keeps a late worker's GSNs above the target).
//! Checked: every record with a GSN at or below what the daemon acknowledges is written and
//! visible to the daemon when it acknowledges (docs/design.md invariant 1: nothing acknowledged
//! can be missing after a crash), and the daemon never acknowledges past its target.
//!
//! Two more models check Remote Flush Avoidance's page writer ([`raise_word`]): two logs'
//! raises of one page and a reader between them, and (autonomous commit) the same with the
//! first writer's settled GSN moving meanwhile.
//!
//! Not modelled: the straggler signal (its handler publishes the staged value on the
//! thread's behalf, from signal context, which loom cannot interleave) and the durable-cache
//! and file-device (watermark) protocols.
//!
//! Model check (seconds in release mode):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p braid-wal --lib loom_gsn
//! ```
//!
//! Without `--cfg loom` the same scenario runs as a stress test on real threads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU64};
#[cfg(loom)]
use loom::sync::{Arc, Mutex};
#[cfg(loom)]
use loom::thread;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicU64};
#[cfg(not(loom))]
use std::sync::{Arc, Mutex};
#[cfg(not(loom))]
use std::thread;

use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use braid_wal::scheme::gsn::commit::{DgsnWord, mark_dirty, min_dgsn, queue_target};
use braid_wal::scheme::gsn::pages::{MULTI, PageWord, raise_word, split};

use crate::integration::loom_harness::model;

/// Rounds of the stress variant (without `--cfg loom`).
const ROUNDS: usize = 5000;

/// A worker's published word (the real one is a `PublishCell`'s `std` atomic).
struct Word(AtomicU64);

impl DgsnWord for Word {
    fn load(&self) -> u64 {
        self.0.load(SeqCst)
    }
    fn fetch_or(&self, v: u64) -> u64 {
        self.0.fetch_or(v, SeqCst)
    }
    fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.0.compare_exchange(current, new, SeqCst, SeqCst)
    }
}

/// GSNs stay small: three commits.
const MAX_GSN: usize = 8;

struct Group {
    words: [Word; 2],
    /// Each worker's log clock (the log's insert critical section).
    clocks: [Mutex<u64>; 2],
    /// Worker `w`'s record with this GSN is written (and fenced): relaxed, only the protocol
    /// may publish it. (Two logs may hand out the same GSN.)
    written: [Vec<AtomicBool>; 2],
    /// (worker, GSN) of every record.
    taken: Mutex<Vec<(usize, u64)>>,
    /// The commit queue: per worker, the largest GSN it waits for (written by it only).
    wants: [Word; 2],
}

impl Group {
    /// `commits` transactions; a worker's GSN carries over from one to the next.
    fn worker(&self, w: usize, commits: usize) {
        let mut tx = 0;
        for _ in 0..commits {
            // Dirty before taking a GSN; the floor bounds every GSN used from here on.
            let (dirty, floor) = mark_dirty(&self.words[w]);
            tx = tx.max(floor);
            let gsn = {
                let mut clock = self.clocks[w].lock().unwrap();
                let g = tx.max(*clock) + 1;
                *clock = g;
                g
            };
            tx = gsn;
            self.taken.lock().unwrap().push((w, gsn));
            self.written[w][gsn as usize].store(true, Relaxed);
            // Written and fenced: publish, clearing the bit (`PublishCell::publish`; nothing
            // but the signal handler, not modelled, changes a dirty word meanwhile).
            let v = tx.max(floor);
            assert!(self.words[w].compare_exchange(dirty, v).is_ok());
            // A store, no read-modify-write: only this worker writes its queue word, and its
            // GSNs only grow.
            self.wants[w].0.store(gsn, SeqCst);
        }
    }

    /// One daemon round: returns the acknowledged bound and what it saw written below it.
    fn daemon_round(&self) -> Option<(u64, [Vec<bool>; 2])> {
        let target = queue_target(self.wants.iter());
        if target == 0 {
            return None;
        }
        let bound = min_dgsn(self.words.iter(), target);
        assert!(bound <= target);
        let seen = [0, 1].map(|w| {
            (0..=bound as usize)
                .map(|g| self.written[w][g].load(Relaxed))
                .collect()
        });
        Some((bound, seen))
    }
}

#[test]
fn passive_group_commit_acknowledges_only_written_records() {
    model(ROUNDS, || {
        let g = Arc::new(Group {
            words: [Word(AtomicU64::new(0)), Word(AtomicU64::new(0))],
            clocks: [Mutex::new(0), Mutex::new(0)],
            written: [0, 1].map(|_| (0..MAX_GSN).map(|_| AtomicBool::new(false)).collect()),
            taken: Mutex::new(Vec::new()),
            wants: [Word(AtomicU64::new(0)), Word(AtomicU64::new(0))],
        });
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let g = g.clone();
                thread::spawn(move || g.worker(w, 1 + w))
            })
            .collect();
        let mut acks = Vec::new();
        for _ in 0..2 {
            if let Some(a) = g.daemon_round() {
                acks.push(a);
            }
            thread::yield_now();
        }
        for w in workers {
            w.join().unwrap();
        }
        // Every worker published: the next round acknowledges everything waited for.
        let (bound, seen) = g.daemon_round().expect("commits wait");
        assert_eq!(bound, queue_target(g.wants.iter()));
        acks.push((bound, seen));
        let taken = g.taken.lock().unwrap().clone();
        for (bound, seen) in acks {
            for &(w, gsn) in &taken {
                if gsn <= bound {
                    assert!(
                        seen[w][gsn as usize],
                        "acknowledged up to GSN {bound}, but worker {w}'s record with GSN {gsn} was not written yet"
                    );
                }
            }
        }
    });
}

/// A page clock's word on loom's (or `std`'s) atomic.
struct Page(AtomicU64);

impl PageWord for Page {
    fn load(&self) -> u64 {
        self.0.load(SeqCst)
    }
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.0.compare_exchange_weak(current, new, SeqCst, SeqCst)
    }
}

/// Remote Flush Avoidance's page writer (`scheme::gsn::pages`, [`raise_word`]): two logs
/// write one page (rows that share it) with nothing acknowledged, log 1 at GSN 10 and log 2 at
/// 12, in either order, while a reader looks. Checked: once a raise has returned, a reader never
/// sees another log named alone as the writer (it would take a commit that read log 1's write
/// as needing no flush of log 1), and the page ends with both: MULTI at GSN 12.
#[test]
fn loom_rfa_a_page_never_hides_a_volatile_writer() {
    model(ROUNDS, || {
        let page = Arc::new(Page(AtomicU64::new(0)));
        let done = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let writers: Vec<_> = [(1u16, 10u64), (2, 12)]
            .into_iter()
            .enumerate()
            .map(|(i, (log, gsn))| {
                let (page, done) = (Arc::clone(&page), Arc::clone(&done));
                thread::spawn(move || {
                    let after = raise_word(&*page, gsn, log, |_| 0);
                    assert!(after >= gsn);
                    done[i].store(true, SeqCst);
                })
            })
            .collect();
        let (d1, d2) = (done[0].load(SeqCst), done[1].load(SeqCst));
        let (g, w) = split(page.load());
        if d1 {
            assert!(
                g >= 10 && (w == 1 || w == MULTI),
                "log 1 hidden: ({g}, {w})"
            );
        }
        if d2 {
            assert!(
                g >= 12 && (w == 2 || w == MULTI),
                "log 2 hidden: ({g}, {w})"
            );
        }
        for h in writers {
            h.join().unwrap();
        }
        assert_eq!(split(page.load()), (12, MULTI));
    });
}

/// Autonomous commit's page test (`raise_word` with each writer log's settled GSN): log 1
/// writes the page at GSN 10 while its settled GSN moves to 10 (a settler), and log 2 writes
/// it at 12. Checked: once log 1's raise has returned, the page names log 2 alone only if log
/// 1's write was settled (a reader that then finds log 2 alone records no dependency on log
/// 1, so log 1's write must need none), and it never names log 1 alone after log 2's raise.
#[test]
fn loom_rfa_a_page_names_one_writer_only_past_the_others_settled_gsn() {
    model(ROUNDS, || {
        let page = Arc::new(Page(AtomicU64::new(0)));
        let settled1 = Arc::new(AtomicU64::new(0));
        let done1 = Arc::new(AtomicBool::new(false));
        let w1 = {
            let (page, done1) = (Arc::clone(&page), Arc::clone(&done1));
            thread::spawn(move || {
                raise_word(&*page, 10, 1, |_| 0);
                done1.store(true, SeqCst);
            })
        };
        let settler = {
            let settled1 = Arc::clone(&settled1);
            thread::spawn(move || settled1.store(10, SeqCst))
        };
        let w2 = {
            let (page, settled1) = (Arc::clone(&page), Arc::clone(&settled1));
            thread::spawn(move || {
                raise_word(&*page, 12, 2, |w| {
                    if w == 1 { settled1.load(SeqCst) } else { 0 }
                });
            })
        };
        let d1 = done1.load(SeqCst);
        let (g, w) = split(page.load());
        if d1 && w == 2 {
            assert!(
                settled1.load(SeqCst) >= 10,
                "log 1's unsettled write hidden: ({g}, {w})"
            );
        }
        for h in [w1, settler, w2] {
            h.join().unwrap();
        }
        let (g, w) = split(page.load());
        assert_eq!(g, 12);
        assert!(w == 2 || w == MULTI, "log 2's write hidden: ({g}, {w})");
    });
}
