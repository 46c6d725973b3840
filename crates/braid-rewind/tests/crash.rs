//! Power-failure tests on CrashSim for every log layout, policy and layer count.
//!
//! A small workload (transactions that update words of a root array, allocate a new object
//! and link it, free the previous one, and one that rolls back) runs from a recovered base
//! image. For every persist event `k` (flush or fence) the durable image is frozen after `k`
//! events, the run continues, and the power fails; recovery must then give the state after
//! some prefix of the committed transactions (atomicity), at least every transaction whose
//! commit returned before the crash point (durability), with exactly the reachable objects
//! allocated (no leak, no double free), a consistent allocator and empty logs. Recovery is
//! itself crashed at a spread of its own persist events and must recover to the same state.
//!
//! A frozen image drops every unpersisted line (exact at a persist event). Random eviction
//! of unpersisted lines (`CrashMode::KeepRandom`) is tested where the program really stops:
//! inside a transaction after each write, and after each commit.
//!
//! By default recovery is crashed at a spread of its persist events for every fifth workload
//! crash point; `REWIND_CRASH_FULL=1 cargo test -p braid-rewind --release --test integration
//! crash::` crashes it at every one of its persist events for every workload crash point
//! (minutes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use braid_rewind::{CrashMode, CrashSim, PPtr, PmemConfig, Pool, PoolConfig, Region, RewindError};

const SIZE: usize = 192 * 1024;
const WORDS: u64 = 6;

/// State: the array words, then the linked object's value (or 0), then the allocated set.
type State = (Vec<u64>, u64, Vec<u64>);

fn state(pool: &Pool) -> State {
    let a: PPtr<u64> = pool.root();
    let w: Vec<u64> = (0..WORDS)
        .map(|i| pool.read(a.field::<u64>(8 * i)))
        .collect();
    let link = w[WORDS as usize - 1];
    let (linked, reach) = common::follow_link(pool, link);
    (w, linked, reach)
}

/// Check a recovered pool: its state is one of `states[lo..]` and the heap matches it.
fn check(pool: &Pool, states: &[State], lo: usize, ctx: &str) -> usize {
    let s = state(pool);
    let j = states
        .iter()
        .position(|x| x.0 == s.0 && x.1 == s.1)
        .unwrap_or_else(|| panic!("{ctx}: state {s:?} is none of {states:?}"));
    // The rolled-back transaction repeats the state before it: compare first occurrences.
    let lo = first(states, lo);
    assert!(
        j >= lo,
        "{ctx}: committed transaction lost (state {j}, need >= {lo})"
    );
    let alloc = common::allocated(pool);
    assert_eq!(
        alloc, s.2,
        "{ctx}: allocated blocks differ from reachable ones"
    );
    pool.check_allocator()
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(
        pool.check_logs().unwrap(),
        0,
        "{ctx}: logs not empty after recovery"
    );
    j
}

/// First index whose state equals `states[i]`.
fn first(states: &[State], i: usize) -> usize {
    states
        .iter()
        .position(|x| x.0 == states[i].0 && x.1 == states[i].1)
        .unwrap_or(i)
}

/// The workload. `probe(i)` is called inside transaction `i` after each write. Returns the
/// persist-event count after each commit returned (relative to the start).
fn workload(pool: &Pool, probe: &mut dyn FnMut(usize, &Pool)) -> Vec<u64> {
    let start = pool.region().persist_events();
    let a: PPtr<u64> = pool.root();
    let mut done = Vec::new();
    for i in 0..4usize {
        let res = pool.transaction(|tx| -> Result<(), RewindError> {
            for w in 0..(WORDS - 1) {
                if (w as usize + i).is_multiple_of(2) {
                    tx.write(a.field::<u64>(8 * w), 100 * (i as u64 + 1) + w)?;
                    probe(i, pool);
                }
            }
            let link = a.field::<u64>(8 * (WORDS - 1));
            if i % 2 == 0 {
                let old = tx.read(link);
                let o: PPtr<u64> = tx.alloc(16)?;
                tx.init(o, 7 + i as u64)?;
                tx.write(link, o.offset())?;
                probe(i, pool);
                if old != 0 {
                    tx.free(PPtr::<u64>::from_offset(old))?;
                }
            }
            if i == 2 {
                return Err(RewindError::user_abort("rolled back on purpose"));
            }
            Ok(())
        });
        assert_eq!(res.is_ok(), i != 2);
        done.push(pool.region().persist_events() - start);
    }
    done
}

/// Base image and the sequence of states: before, and after each transaction (the rolled
/// back one repeats the previous state).
fn base(cfg: PoolConfig) -> (Region, Vec<State>) {
    let r = CrashSim::region(SIZE, PmemConfig::default());
    let pool = Pool::create_in(r.clone(), cfg).unwrap();
    pool.transaction(|tx| -> Result<(), RewindError> {
        let a: PPtr<u64> = tx.alloc(8 * WORDS as usize)?;
        for i in 0..WORDS {
            tx.init(a.field::<u64>(8 * i), if i + 1 == WORDS { 0 } else { i })?;
        }
        tx.set_root(a)
    })
    .unwrap();
    drop(pool);
    let base = r.crash(CrashMode::DropUnpersisted).unwrap();
    let (pool, _) = Pool::open_in(base.clone()).unwrap();
    let mut states = vec![state(&pool)];
    // States after each transaction, from a run with no crash.
    let scratch = base.crash(CrashMode::DropUnpersisted).unwrap();
    let (p2, _) = Pool::open_in(scratch).unwrap();
    // Run transaction by transaction, recording the state after each.
    let done = workload(&p2, &mut |_, _| {});
    assert_eq!(done.len(), 4);
    // Recompute the intermediate states by replaying on fresh copies, stopping after t txs.
    for t in 1..=4 {
        let c = base.crash(CrashMode::DropUnpersisted).unwrap();
        let (p, _) = Pool::open_in(c).unwrap();
        run_prefix(&p, t);
        states.push(state(&p));
    }
    drop(pool);
    (base, states)
}

/// Run the first `t` transactions of the workload (same code, stopping early).
fn run_prefix(pool: &Pool, t: usize) {
    let a: PPtr<u64> = pool.root();
    for i in 0..t {
        let _ = pool.transaction(|tx| -> Result<(), RewindError> {
            for w in 0..(WORDS - 1) {
                if (w as usize + i).is_multiple_of(2) {
                    tx.write(a.field::<u64>(8 * w), 100 * (i as u64 + 1) + w)?;
                }
            }
            let link = a.field::<u64>(8 * (WORDS - 1));
            if i % 2 == 0 {
                let old = tx.read(link);
                let o: PPtr<u64> = tx.alloc(16)?;
                tx.init(o, 7 + i as u64)?;
                tx.write(link, o.offset())?;
                if old != 0 {
                    tx.free(PPtr::<u64>::from_offset(old))?;
                }
            }
            if i == 2 {
                return Err(RewindError::user_abort("rolled back on purpose"));
            }
            Ok(())
        });
    }
}

/// Recover `img`, crashing recovery at a spread of its persist events first.
fn recover_with_crashes(
    img: &Region,
    states: &[State],
    lo: usize,
    ctx: &str,
    crash_recovery: bool,
) -> usize {
    let clean = {
        let c = img.crash(CrashMode::DropUnpersisted).unwrap();
        let before = c.persist_events();
        let (p, _) = Pool::open_in(c.clone()).unwrap();
        let j = check(&p, states, lo, ctx);
        (j, c.persist_events() - before)
    };
    let (j, events) = clean;
    let full = std::env::var_os("REWIND_CRASH_FULL").is_some();
    let mut points: Vec<u64> = if !crash_recovery && !full {
        Vec::new()
    } else if full {
        (0..events).collect()
    } else {
        let mut v = vec![0, 1, 2, 3, events / 3, events / 2, events.saturating_sub(3)];
        v.retain(|&x| x < events);
        v
    };
    points.dedup();
    for k in points {
        let c = img.crash(CrashMode::DropUnpersisted).unwrap();
        c.freeze_after(k).unwrap();
        let _ = Pool::open_in(c.clone());
        let c2 = c.crash(CrashMode::DropUnpersisted).unwrap();
        let (p, _) = Pool::open_in(c2).unwrap();
        let j2 = check(&p, states, lo, &format!("{ctx}, recovery crashed at {k}"));
        assert_eq!(j2, j, "{ctx}: recovery crashed at {k} gave another state");
    }
    j
}

fn crash_points(cfg: PoolConfig) {
    let (base, states) = base(cfg);
    // Number of persist events of the whole workload.
    let total = {
        let c = base.crash(CrashMode::DropUnpersisted).unwrap();
        let (p, _) = Pool::open_in(c).unwrap();
        *workload(&p, &mut |_, _| {}).last().unwrap()
    };
    for k in 0..=total {
        let c = base.crash(CrashMode::DropUnpersisted).unwrap();
        let (p, _) = Pool::open_in(c.clone()).unwrap();
        c.freeze_after(k).unwrap();
        let done = workload(&p, &mut |_, _| {});
        // Transactions whose commit returned before the crash point must survive.
        let lo = done.iter().filter(|&&e| e <= k).count();
        // State index after t transactions is t (the rolled-back one repeats a state).
        let ctx = format!("{cfg:?} crash at event {k}/{total}");
        let img = c.crash(CrashMode::DropUnpersisted).unwrap();
        // Recovery is crashed for every fifth workload crash point (every one with
        // REWIND_CRASH_FULL=1).
        recover_with_crashes(&img, &states, lo, &ctx, k % 5 == 0);
    }
}

fn random_eviction(cfg: PoolConfig) {
    let (base, states) = base(cfg);
    for seed in 0..3u64 {
        let c = base.crash(CrashMode::DropUnpersisted).unwrap();
        let (p, _) = Pool::open_in(c.clone()).unwrap();
        let mut n = 0u64;
        let done = workload(&p, &mut |i, pool| {
            // Power fails here: transaction i is running, 0..i are committed.
            n += 1;
            let img = pool
                .region()
                .crash(CrashMode::KeepRandom {
                    seed: seed * 1000 + n,
                    keep_probability: 0.5,
                })
                .unwrap();
            let ctx = format!("{cfg:?} random eviction in tx {i} (seed {seed}, probe {n})");
            let (rp, _) = Pool::open_in(img).unwrap();
            let j = check(&rp, &states, i, &ctx);
            assert_eq!(
                j,
                first(&states, i),
                "{ctx}: running transaction not undone"
            );
        });
        assert_eq!(done.len(), 4);
        let img = c
            .crash(CrashMode::KeepRandom {
                seed,
                keep_probability: 0.5,
            })
            .unwrap();
        let (rp, _) = Pool::open_in(img).unwrap();
        check(
            &rp,
            &states,
            4,
            &format!("{cfg:?} random eviction after the run"),
        );
    }
}

#[test]
fn every_crash_point_every_config() {
    for cfg in common::all_configs() {
        crash_points(cfg);
    }
}

/// Crashes that hit checkpoints (every commit checkpoints), in the middle of the bulk removal
/// of committed transactions' records too.
#[test]
fn every_crash_point_with_checkpoints() {
    for cfg in common::checkpointing_configs() {
        crash_points(cfg);
        random_eviction(cfg);
    }
}

#[test]
fn random_eviction_every_config() {
    for cfg in common::all_configs() {
        random_eviction(cfg);
    }
}

#[test]
fn states_are_distinct() {
    let (_, states) = base(common::all_configs()[0]);
    assert_eq!(states.len(), 5);
    for (i, s) in states.iter().enumerate() {
        for (j, t) in states.iter().enumerate() {
            // Transaction 2 rolls back: states 2 and 3 are equal.
            if i != j && !(i.min(j) == 2 && i.max(j) == 3) {
                assert_ne!(s.0, t.0, "states {i} and {j}");
            }
        }
    }
}
