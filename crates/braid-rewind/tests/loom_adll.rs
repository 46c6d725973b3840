//! Model check of REWIND's atomic doubly-linked list (Chatzistergiou et al. 2015, Section 3.2,
//! Algorithm 1: append; "Removal") with loom, on the real `braid_rewind::adll::Adll` code run
//! over a simulated persistent memory (`Sim` below, through the `adll::PMem` seam):
//!
//! * the live memory is loom atomics accessed like a braid-pmem `Region` (acquire loads,
//!   release stores), so an append and a removal made by two threads, serialised by a lock as
//!   the log's callers serialise them, are checked under loom's weak memory model;
//! * a durable image next to it, as in `CrashSim`: `flush` snapshots the lines it covers,
//!   `fence` makes the snapshots durable;
//! * a power failure at any point: the main thread takes the durable image (and the live one)
//!   at one instant, wherever loom schedules it among the two operations' stores, flushes and
//!   fences. Each crash image (durable only; every dirty line also evicted; each dirty line
//!   alone evicted) is recovered with `Adll::recover` and must hold a consistent list equal to
//!   the list before or after each operation (REWIND's atomicity, docs/design.md invariants 2 and
//!   6), and one that includes every operation that had returned before the crash.
//!
//! Model check (seconds in release mode):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p braid-rewind --test integration loom_adll
//! ```
//!
//! Without `--cfg loom` the same scenario runs as a stress test on real threads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;

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

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

use braid_rewind::adll::{Adll, AdllError, PMem};

#[cfg(not(loom))]
const ROUNDS: usize = 3000;

fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        b.check(f);
    }
    #[cfg(not(loom))]
    for _ in 0..ROUNDS {
        f();
    }
}

const LINE_WORDS: usize = 8;
/// Header line, then three nodes of one line each.
const LINES: usize = 4;
const WORDS: usize = LINES * LINE_WORDS;
const N1: usize = 64;
const N2: usize = 128;
const N3: usize = 192;

fn lines(off: usize, len: usize) -> std::ops::Range<usize> {
    off / 64..(off + len).div_ceil(64)
}

struct Dur {
    durable: Vec<u64>,
    /// (word, value) snapshots taken by `flush`, made durable by the next `fence`.
    pending: Vec<(usize, u64)>,
}

/// Simulated persistent memory. Every store, flush and fence takes the `dur` lock, so a crash
/// (which takes it too) sees the live and durable images of one instant.
struct Sim {
    live: Vec<AtomicU64>,
    dur: Mutex<Dur>,
}

impl Sim {
    fn new() -> Sim {
        Sim {
            live: (0..WORDS).map(|_| AtomicU64::new(0)).collect(),
            dur: Mutex::new(Dur {
                durable: vec![0; WORDS],
                pending: Vec::new(),
            }),
        }
    }

    /// The durable and live images now.
    fn crash(&self) -> (Vec<u64>, Vec<u64>) {
        let d = self.dur.lock().unwrap();
        let live = self.live.iter().map(|w| w.load(Relaxed)).collect();
        (d.durable.clone(), live)
    }
}

impl PMem for Sim {
    fn load_u64(&self, off: usize) -> u64 {
        self.live[off / 8].load(Acquire)
    }
    fn store_u64(&self, off: usize, v: u64) {
        let _d = self.dur.lock().unwrap();
        self.live[off / 8].store(v, Release);
    }
    fn flush(&self, off: usize, len: usize) {
        let mut d = self.dur.lock().unwrap();
        for line in lines(off, len) {
            for w in line * LINE_WORDS..(line + 1) * LINE_WORDS {
                let v = self.live[w].load(Relaxed);
                d.pending.push((w, v));
            }
        }
    }
    fn fence(&self) {
        let mut d = self.dur.lock().unwrap();
        let p = std::mem::take(&mut d.pending);
        for (w, v) in p {
            d.durable[w] = v;
        }
    }
    fn fill(&self, off: usize, len: usize, byte: u8) {
        let v = u64::from_ne_bytes([byte; 8]);
        for w in off / 8..(off + len) / 8 {
            self.store_u64(w * 8, v);
        }
    }
}

/// A crash image, recovered on one thread.
struct Image(RefCell<Vec<u64>>);

impl PMem for Image {
    fn load_u64(&self, off: usize) -> u64 {
        self.0.borrow()[off / 8]
    }
    fn store_u64(&self, off: usize, v: u64) {
        self.0.borrow_mut()[off / 8] = v;
    }
    fn flush(&self, _: usize, _: usize) {}
    fn fence(&self) {}
    fn fill(&self, off: usize, len: usize, byte: u8) {
        let v = u64::from_ne_bytes([byte; 8]);
        for w in off / 8..(off + len) / 8 {
            self.0.borrow_mut()[w] = v;
        }
    }
}

fn valid(n: usize) -> bool {
    [N1, N2, N3].contains(&n)
}

/// Recover a crash image and return its list.
fn recover(words: Vec<u64>) -> Result<Vec<usize>, String> {
    let img = Image(RefCell::new(words));
    let l = Adll { hdr: 0 };
    let describe = |e: AdllError| e.to_string();
    l.recover(&img, valid).map_err(describe)?;
    let first = l.nodes(&img, valid, 8).map_err(describe)?;
    // Recovery is idempotent: a second pass changes nothing.
    l.recover(&img, valid).map_err(describe)?;
    let again = l.nodes(&img, valid, 8).map_err(describe)?;
    if again != first {
        return Err(format!("second recovery changed {first:?} into {again:?}"));
    }
    Ok(first)
}

/// The images a power failure may leave: the durable one, with every dirty line evicted, and
/// with each dirty line alone evicted.
fn images(durable: &[u64], live: &[u64]) -> Vec<Vec<u64>> {
    let dirty: Vec<usize> = (0..LINES)
        .filter(|&l| (l * LINE_WORDS..(l + 1) * LINE_WORDS).any(|w| durable[w] != live[w]))
        .collect();
    let evict = |ls: &[usize]| {
        let mut img = durable.to_vec();
        for &l in ls {
            img[l * LINE_WORDS..(l + 1) * LINE_WORDS]
                .copy_from_slice(&live[l * LINE_WORDS..(l + 1) * LINE_WORDS]);
        }
        img
    };
    let mut out = vec![evict(&[]), evict(&dirty)];
    out.extend(dirty.iter().map(|&l| evict(&[l])));
    out
}

#[test]
fn append_and_remove_by_two_threads_survive_a_crash_anywhere() {
    model(|| {
        let sim = Arc::new(Sim::new());
        let l = Adll { hdr: 0 };
        l.format(&*sim);
        l.append(&*sim, N1);
        l.append(&*sim, N2);
        // The log's lock: callers serialise operations on one list.
        let lock = Arc::new(Mutex::new(()));
        let appended = Arc::new(AtomicBool::new(false));
        let removed = Arc::new(AtomicBool::new(false));
        let a = {
            let (sim, lock, appended) = (sim.clone(), lock.clone(), appended.clone());
            thread::spawn(move || {
                let _g = lock.lock().unwrap();
                l.append(&*sim, N3);
                appended.store(true, SeqCst);
            })
        };
        let b = {
            let (sim, lock, removed) = (sim.clone(), lock.clone(), removed.clone());
            thread::spawn(move || {
                let _g = lock.lock().unwrap();
                l.remove(&*sim, N1);
                removed.store(true, SeqCst);
            })
        };
        // Power fails here, wherever the two operations are.
        let done = (appended.load(SeqCst), removed.load(SeqCst));
        let (durable, live) = sim.crash();
        a.join().unwrap();
        b.join().unwrap();
        let allowed = [vec![N1, N2], vec![N1, N2, N3], vec![N2], vec![N2, N3]];
        for img in images(&durable, &live) {
            let got = recover(img).unwrap_or_else(|e| panic!("crash image damaged: {e}"));
            assert!(
                allowed.contains(&got),
                "not a list before or after an operation: {got:?}"
            );
            if done.0 {
                assert!(got.contains(&N3), "a returned append was lost: {got:?}");
            }
            if done.1 {
                assert!(!got.contains(&N1), "a returned removal was undone: {got:?}");
            }
        }
        // Without a crash both operations are there.
        assert_eq!(l.nodes(&*sim, valid, 8).unwrap(), vec![N2, N3]);
        let (durable, _) = sim.crash();
        assert_eq!(recover(durable).unwrap(), vec![N2, N3]);
    });
}
