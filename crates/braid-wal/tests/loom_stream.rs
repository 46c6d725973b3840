//! Model check of the stream's reservation protocol (Taurus Alg. 1 `WriteLogBuffer` and Alg. 2)
//! with loom: the real `braid_wal::stream::ready::Reservations` (its atomics are loom's under
//! `--cfg loom`), two writers and a flusher. In every interleaving and every weak-memory
//! outcome loom explores, the flusher never computes a ready point past a byte that is not
//! filled (and visible to it).
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p braid-wal --lib loom_stream --release`.
#![cfg(loom)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::Ordering::Relaxed;

use braid_wal::stream::ready::Reservations;

use crate::integration::loom_harness::model;
use loom::sync::Arc;
use loom::sync::atomic::AtomicBool;
use loom::thread;

/// Reserve `len` bytes from `slot` the way `StreamWriter::append` does; returns the LSN.
fn reserve(res: &Reservations, slot: usize, len: u64) -> u64 {
    let mut t = res.tail();
    loop {
        res.announce(slot, t);
        match res.try_reserve(t, len) {
            Ok(lsn) => return lsn,
            Err(cur) => t = cur,
        }
    }
}

/// The "fill": mark the bytes written. Relaxed on purpose: only the protocol's own
/// synchronisation may make them visible to the flusher.
fn fill(filled: &[AtomicBool], lsn: u64, len: u64) {
    for b in lsn..lsn + len {
        filled[b as usize].store(true, Relaxed);
    }
}

/// What the flusher does before flushing: compute the ready point and check every byte
/// before it.
fn flusher_check(res: &Reservations, filled: &[AtomicBool]) -> u64 {
    let (ready, _) = res.ready();
    for b in 0..ready {
        assert!(
            filled[b as usize].load(Relaxed),
            "ready point {ready} passes unfilled byte {b}"
        );
    }
    ready
}

#[test]
fn two_writers_and_a_flusher() {
    model(1, || {
        let res = Arc::new(Reservations::new(0, 2));
        let filled: Arc<Vec<AtomicBool>> =
            Arc::new((0..4).map(|_| AtomicBool::new(false)).collect());
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let res = res.clone();
                let filled = filled.clone();
                thread::spawn(move || {
                    let slot = res.claim().unwrap();
                    let len = 1 + w;
                    let lsn = reserve(&res, slot, len);
                    fill(&filled, lsn, len);
                    res.finish(slot);
                })
            })
            .collect();
        let r1 = flusher_check(&res, &filled);
        let r2 = flusher_check(&res, &filled);
        // Callers keep the maximum; both were safe on their own.
        let _ = r1.max(r2);
        for w in writers {
            w.join().unwrap();
        }
        let (ready, busy) = res.ready();
        assert_eq!(ready, 3);
        assert!(!busy);
        flusher_check(&res, &filled);
    });
}

/// One writer appends twice from the same slot (the second announcement follows the first
/// fill), another writer once; the flusher looks twice.
#[test]
fn slot_reuse_across_appends() {
    model(1, || {
        let res = Arc::new(Reservations::new(0, 2));
        let filled: Arc<Vec<AtomicBool>> =
            Arc::new((0..3).map(|_| AtomicBool::new(false)).collect());
        let a = {
            let res = res.clone();
            let filled = filled.clone();
            thread::spawn(move || {
                let slot = res.claim().unwrap();
                for _ in 0..2 {
                    let lsn = reserve(&res, slot, 1);
                    fill(&filled, lsn, 1);
                    res.finish(slot);
                }
            })
        };
        let b = {
            let res = res.clone();
            let filled = filled.clone();
            thread::spawn(move || {
                let slot = res.claim().unwrap();
                let lsn = reserve(&res, slot, 1);
                fill(&filled, lsn, 1);
                res.finish(slot);
            })
        };
        flusher_check(&res, &filled);
        flusher_check(&res, &filled);
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(flusher_check(&res, &filled), 3);
    });
}
