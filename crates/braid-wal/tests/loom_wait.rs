//! Model check of [`braid_wal::Progress`] with loom (its count, lock and condition variable
//! are loom's under `--cfg loom`, through `braid_wal::sync`): no wake-up is lost. A waiter
//! that parks while its value is published concurrently would sleep forever, which loom
//! reports as a deadlock; every interleaving and every weak-memory outcome loom explores must
//! end with every waiter returned.
//!
//! * a publisher stores a value (relaxed: only the fences inside `Progress` order it) and
//!   notifies; two waiters for different targets;
//! * a waiter for a value that never comes, woken by a failure flag stored and notified like
//!   a publication (poisoning): it returns the error.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p braid-wal --lib loom_wait --release`.
#![cfg(loom)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::Ordering::Relaxed;

use braid_wal::Progress;

use crate::integration::loom_harness::model;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU64};
use loom::thread;

#[test]
fn loom_wait_publish_wakes_waiters_for_different_targets() {
    model(1, || {
        let shared = Arc::new((AtomicU64::new(0), Progress::new()));
        let waiters: Vec<_> = [1u64, 2]
            .into_iter()
            .map(|target| {
                let s = Arc::clone(&shared);
                thread::spawn(move || s.1.wait(|| (s.0.load(Relaxed) >= target).then_some(())))
            })
            .collect();
        for v in 1..=2 {
            shared.0.store(v, Relaxed);
            shared.1.notify();
        }
        for w in waiters {
            w.join().unwrap();
        }
    });
}

#[test]
fn loom_wait_poison_wakes_a_waiter_with_the_error() {
    model(1, || {
        let shared = Arc::new((AtomicU64::new(0), AtomicBool::new(false), Progress::new()));
        let s = Arc::clone(&shared);
        let waiter = thread::spawn(move || {
            s.2.wait(|| {
                if s.0.load(Relaxed) >= 1 {
                    return Some(Ok(()));
                }
                s.1.load(Relaxed).then_some(Err(()))
            })
        });
        shared.1.store(true, Relaxed);
        shared.2.notify();
        assert_eq!(waiter.join().unwrap(), Err(()));
    });
}
