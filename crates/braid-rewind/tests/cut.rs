//! The checkpoint cut: recovery must neither redo nor re-free a transaction at or below the
//! cut a checkpoint persisted, even where its records are still readable in the log (Sealed
//! checkpoints forget records without clearing them).
//!
//! One checkpoint removes two transactions that overlap on an object: the first writes a
//! field of it, the second frees it. A third transaction then allocates the same block and
//! initialises the field (an unlogged store into its own new object). Redoing the first
//! transaction's UPDATE would overwrite that field, re-applying the second's DELETE would
//! free a reachable block. Every persist event of the workload is a crash point; recovery
//! must give a prefix state including every transaction whose commit returned.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use braid_rewind::{CrashMode, CrashSim, PPtr, PmemConfig, Policy, Pool, PoolConfig, RewindError};

const SIZE: usize = 192 * 1024;

/// (the counter word, the linked object's field or 0, the reachable blocks' offsets).
type State = (u64, u64, Vec<u64>);

fn state(pool: &Pool) -> State {
    let a: PPtr<u64> = pool.root();
    let link = pool.read(a);
    let n = pool.read(a.field::<u64>(8));
    let (f, reach) = common::follow_link(pool, link);
    (n, f, reach)
}

/// T1 writes the object's field, T2 frees it, a checkpoint removes both, T3 allocates a
/// block of the same size and initialises its field. Returns the persist-event count after
/// each commit returned, and T3's object.
fn workload(pool: &Pool) -> (Vec<u64>, u64) {
    let start = pool.region().persist_events();
    let a: PPtr<u64> = pool.root();
    let mut done = Vec::new();
    pool.transaction(|tx| -> Result<(), RewindError> {
        let o = PPtr::<u64>::from_offset(tx.read(a));
        tx.write(o, 1)?;
        tx.write(a.field::<u64>(8), 1)
    })
    .unwrap();
    done.push(pool.region().persist_events() - start);
    pool.transaction(|tx| -> Result<(), RewindError> {
        let o = PPtr::<u64>::from_offset(tx.read(a));
        tx.free(o)?;
        tx.write(a, 0)?;
        tx.write(a.field::<u64>(8), 2)
    })
    .unwrap();
    done.push(pool.region().persist_events() - start);
    pool.checkpoint().unwrap();
    let o = pool
        .transaction(|tx| -> Result<u64, RewindError> {
            let o: PPtr<u64> = tx.alloc(16)?;
            tx.init(o, 5)?;
            tx.write(a, o.offset())?;
            tx.write(a.field::<u64>(8), 3)?;
            Ok(o.offset())
        })
        .unwrap();
    done.push(pool.region().persist_events() - start);
    (done, o)
}

fn check(pool: &Pool, states: &[State], lo: usize, ctx: &str) {
    let s = state(pool);
    let j = states
        .iter()
        .position(|x| x.0 == s.0 && x.1 == s.1)
        .unwrap_or_else(|| panic!("{ctx}: state {s:?} is none of {states:?}"));
    assert!(j >= lo, "{ctx}: committed transaction lost (state {j})");
    let alloc = common::allocated(pool);
    assert_eq!(
        alloc, s.2,
        "{ctx}: allocated blocks differ from reachable ones"
    );
    pool.check_allocator()
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(pool.check_logs().unwrap(), 0, "{ctx}: logs not empty");
}

fn crash_points(cfg: PoolConfig) {
    let r = CrashSim::region(SIZE, PmemConfig::default());
    let pool = Pool::create_in(r.clone(), cfg).unwrap();
    let first = pool
        .transaction(|tx| -> Result<u64, RewindError> {
            let a: PPtr<u64> = tx.alloc(16)?;
            let o: PPtr<u64> = tx.alloc(16)?;
            tx.init(o, 0)?;
            tx.init(a, o.offset())?;
            tx.init(a.field::<u64>(8), 0)?;
            tx.set_root(a)?;
            Ok(o.offset())
        })
        .unwrap();
    drop(pool);
    let base = r.crash(CrashMode::DropUnpersisted).unwrap();
    let (total, states) = {
        let c = base.crash(CrashMode::DropUnpersisted).unwrap();
        let (p, _) = Pool::open_in(c).unwrap();
        let a = p.root::<u64>().offset();
        let (done, o) = workload(&p);
        // The scenario needs T3 to get T2's freed block back.
        assert_eq!(o, first, "{cfg:?}: the freed block was not reused");
        let states = vec![
            (0, 0, vec![a, first]),
            (1, 1, vec![a, first]),
            (2, 0, vec![a]),
            (3, 5, vec![a, first]),
        ];
        (*done.last().unwrap(), states)
    };
    for k in 0..=total {
        let c = base.crash(CrashMode::DropUnpersisted).unwrap();
        let (p, _) = Pool::open_in(c.clone()).unwrap();
        c.freeze_after(k).unwrap();
        let (done, _) = workload(&p);
        let lo = done.iter().filter(|&&e| e <= k).count();
        let img = c.crash(CrashMode::DropUnpersisted).unwrap();
        let (rp, _) = Pool::open_in(img).unwrap();
        check(
            &rp,
            &states,
            lo,
            &format!("{cfg:?} crash at event {k}/{total}"),
        );
    }
}

#[test]
fn checkpointed_transactions_are_not_redone() {
    for mut cfg in common::all_configs() {
        if cfg.policy != Policy::NoForce {
            continue;
        }
        cfg.checkpoint_fraction = 1.0;
        crash_points(cfg);
    }
}
