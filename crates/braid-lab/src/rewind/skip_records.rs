//! Skip records (REWIND §5.1: Fig. 3 right, Fig. 4 and Fig. 5): records of other transactions
//! interleaved with a target transaction's records, which one-layer logging must scan past
//! and two-layer logging's AVL index avoids.
//!
//! The micro benchmark of §5.1 in one context (one thread): a target transaction writes
//! `target_updates` words of its array; between its records the other transactions write
//! `skip` records in all (spread evenly), each on a word of their own array. The others are
//! one transaction in every experiment (what one-layer logging scans past is the records,
//! whoever wrote them).
//! * **Commit** (Fig. 3 right): the others are one transaction still running (the outer of
//!   two nested transactions on the same log); the target commits, then the other. The
//!   overhead is the target transaction's own time, its logged writes and its commit, over
//!   the time of its stores persisted without a log (the paper: skip records "will need to be
//!   skipped if this transaction is to be selectively processed"; each of the target's writes
//!   is timed apart from the other transaction's). Under force a one-layer commit reads the
//!   whole log backwards for the target's records (`CommitClear::Scan`, REWIND §4.6), so its
//!   cost grows with the skip records; two layers remove them by key. The whole program's
//!   time over the same program of non-recoverable stores is kept too (`program_overhead`).
//! * **Rollback** (Fig. 4 left): as commit, but the target rolls back (one layer scans the
//!   log for its records, two layers walk its key range of the index).
//! * **Recovery** (Fig. 4 right): the other transaction commits up to its END and stops
//!   before its records are cleared ([`Pool::crash_before_clearing`]: a crash between END and clearing),
//!   the target is left unfinished ([`Pool::abandon_transaction`]); reopening the pool
//!   recovers it. The force policy throughout, as the paper.
//! * **Fraction recovered** (Fig. 5): `transactions` targets in a row, one layer, force and
//!   no-force, `fraction` of them left unfinished with their others stopped before clearing
//!   and the rest committed with their others running; the total time is the run (logging and
//!   commits) plus the recovery of the crash that ends it. Log clearing is factored out, as
//!   the paper does: force's run is timed a second time with every commit stopped before it
//!   clears (the clearing's time is recorded apart), and its recovery after the run that
//!   cleared; no-force takes no checkpoint (the log holds the run), so its recovery redoes
//!   what the run committed.

use std::cell::Cell;
use std::time::{Duration, Instant};

use braid_rewind::{
    CommitClear, Layers, LogLayout, PPtr, Policy, Pool, PoolConfig, RawMem, RewindError, Tx,
};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, Variant, median, region, variant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkipConfig {
    pub backing: Backing,
    /// Skip records per target transaction (Figs. 3 right and 4; the paper: 100-1,000).
    pub skips: Vec<usize>,
    /// Words the target transaction writes.
    pub target_updates: usize,
    /// Target transactions per commit or rollback measurement.
    pub repeats: usize,
    /// One- and two-layer configurations of Figs. 3 right and 4 (force).
    pub variants: Vec<Variant>,
    /// Fig. 5: skip records per transaction (the paper: 10, 150 and 300).
    pub fraction_skips: Vec<usize>,
    /// Fig. 5: fractions of the transactions recovered.
    pub fractions: Vec<f64>,
    /// Fig. 5: transactions per run.
    pub transactions: usize,
    pub runs: usize,
    pub write_delay_ns: u64,
}

/// Optimized REWIND with one or two layers under force (Figs. 3 right and 4), the one-layer
/// commit scanning the log as the paper's does; and, beside them, one layer with commits
/// clearing by the positions they kept (`-kept`, not the paper's: no scan).
pub fn skip_variants() -> Vec<Variant> {
    let mut kept = variant(
        "optimized-1l-f-kept",
        LogLayout::Optimized,
        Policy::Force,
        Layers::One,
    );
    kept.pool.commit_clear = CommitClear::KeptPositions;
    vec![
        variant(
            "optimized-1l-f",
            LogLayout::Optimized,
            Policy::Force,
            Layers::One,
        ),
        kept,
        variant(
            "optimized-2l-f",
            LogLayout::Optimized,
            Policy::Force,
            Layers::Two,
        ),
    ]
}

impl Default for SkipConfig {
    fn default() -> Self {
        SkipConfig {
            backing: Backing::default(),
            skips: vec![100, 400, 700, 1000],
            target_updates: 10,
            repeats: 30,
            variants: skip_variants(),
            fraction_skips: vec![10, 150, 300],
            fractions: vec![0.0, 0.25, 0.5, 0.75, 1.0],
            transactions: 50,
            runs: 3,
            write_delay_ns: super::NVM_WRITE_NS,
        }
    }
}

/// One configuration at one number of skip records (Figs. 3 right and 4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkipPoint {
    pub variant: String,
    pub skip: usize,
    /// The target transaction's time (its logged writes and its commit) over the time of its
    /// stores persisted without a log (medians over the targets).
    pub overhead: f64,
    /// The whole program's time (the other transaction's records too) over the same program's
    /// stores persisted without a log.
    pub program_overhead: f64,
    /// The target's logged writes and commit, microseconds (median over the targets).
    pub target_us: f64,
    /// The target's commit alone, microseconds (median over the targets).
    pub commit_us: f64,
    /// The target's rollback, microseconds (median over the targets).
    pub rollback_us: f64,
    /// Reopening the pool after the crash, microseconds (median of three per run).
    pub recovery_us: f64,
    /// Records recovery found in the log.
    pub recovered_records: usize,
}

/// One policy, skip count and fraction recovered (Fig. 5).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FractionPoint {
    pub policy: String,
    pub skip: usize,
    pub fraction: f64,
    /// Logging and commits of the run, log clearing factored out, milliseconds.
    pub run_ms: f64,
    /// Force: what clearing the log at commit added to the run, milliseconds (0 no-force).
    pub clear_ms: f64,
    /// Recovery of the crash that ends the run, milliseconds.
    pub recovery_ms: f64,
    /// Their sum (median of the runs' sums).
    pub total_ms: f64,
    pub undone: usize,
    pub redone_records: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkipResult {
    pub config: SkipConfig,
    pub points: Vec<SkipPoint>,
    pub fraction_points: Vec<FractionPoint>,
}

/// The arrays a run writes: the target's and the others'.
struct Arrays {
    target: PPtr<u64>,
    other: PPtr<u64>,
}

fn arrays(pool: &Pool, target: usize, other: usize) -> Result<Arrays, RewindError> {
    let mut m = RawMem::new(pool);
    let mut zeroed = |words: usize| -> Result<PPtr<u64>, RewindError> {
        use braid_rewind::Mem;
        let a = m.alloc(8 * words.max(1))?;
        m.write_bytes(a, &vec![0u8; 8 * words.max(1)])?;
        Ok(PPtr::from_offset(a))
    };
    Ok(Arrays {
        target: zeroed(target)?,
        other: zeroed(other)?,
    })
}

/// A pool for `records` log records in flight plus the arrays, on the configured backing.
fn pool_for(
    cfg: &SkipConfig,
    pc: PoolConfig,
    records: usize,
) -> Result<(super::setup::BenchRegion, PoolConfig), RewindError> {
    let mut pc = pc;
    pc.log_capacity = (4 * records + 4096).next_multiple_of(1024);
    pc.checkpoint_fraction = 1.0;
    let bytes = (pc.min_region_size() + 16 * records + (8 << 20)).next_multiple_of(1 << 20);
    Ok((region(&cfg.backing, bytes, cfg.write_delay_ns)?, pc))
}

/// The target `t`'s `u` writes with `skip` writes of the other transaction `o` spread
/// between them, values `v`; returns the time the target's writes took.
fn interleave(
    t: &mut Tx<'_>,
    o: &mut Tx<'_>,
    a: &Arrays,
    u: usize,
    skip: usize,
    v: u64,
) -> Result<Duration, RewindError> {
    let mut done = 0;
    let mut mine = Duration::ZERO;
    for i in 0..u {
        let s = Instant::now();
        t.write(a.target.field::<u64>(8 * i as u64), v)?;
        mine += s.elapsed();
        let upto = skip * (i + 1) / u;
        while done < upto {
            o.write(a.other.field::<u64>(8 * done as u64), v)?;
            done += 1;
        }
    }
    Ok(mine)
}

/// A target left unfinished amid the records of another transaction that logged its END
/// and stopped before clearing them (the crash of Figs. 4 right and 5).
fn crashed_target(pool: &Pool, a: &Arrays, u: usize, skip: usize) -> Result<(), RewindError> {
    pool.abandon_transaction(|t| pool.crash_before_clearing(|o| interleave(t, o, a, u, skip, 1)))
        .map(|_| ())
}

/// What one commit or rollback program measured: the program's seconds, and per target its
/// commit or rollback alone and its writes plus commit or rollback, microseconds.
struct Program {
    secs: f64,
    end_us: Vec<f64>,
    target_us: Vec<f64>,
}

/// Fig. 3 right and Fig. 4 left: the commit or rollback program `repeats` times.
fn commit_or_rollback(
    cfg: &SkipConfig,
    v: &Variant,
    skip: usize,
    rollback: bool,
) -> Result<Program, RewindError> {
    let u = cfg.target_updates;
    let (reg, pc) = pool_for(cfg, v.pool, 2 * (skip + u) + 64)?;
    let pool = Pool::create_in(reg.region(), pc)?;
    let a = arrays(&pool, u, skip)?;
    let mut end_us = Vec::with_capacity(cfg.repeats);
    let mut target_us = Vec::with_capacity(cfg.repeats);
    let t0 = Instant::now();
    for r in 0..cfg.repeats {
        let val = r as u64 + 1;
        let end = Cell::new(None);
        let writes = Cell::new(Duration::ZERO);
        pool.transaction(|o| -> Result<(), RewindError> {
            let res = pool.transaction(|t| -> Result<(), RewindError> {
                writes.set(interleave(t, o, &a, u, skip, val)?);
                end.set(Some(Instant::now()));
                if rollback {
                    Err(RewindError::user_abort("roll back the target"))
                } else {
                    Ok(())
                }
            });
            match res {
                Err(RewindError::UserAbort { .. }) if rollback => {}
                r => r?,
            }
            if let Some(s) = end.get() {
                let e = s.elapsed();
                end_us.push(e.as_secs_f64() * 1e6);
                target_us.push((e + writes.get()).as_secs_f64() * 1e6);
            }
            Ok(())
        })?;
    }
    Ok(Program {
        secs: t0.elapsed().as_secs_f64(),
        end_us,
        target_us,
    })
}

/// The commit program's stores persisted without a log: its seconds, and the target's stores
/// alone per target, microseconds (timed store by store, as the target's logged writes are).
fn raw_program(cfg: &SkipConfig, skip: usize) -> Result<(f64, Vec<f64>), RewindError> {
    let u = cfg.target_updates;
    let (reg, pc) = pool_for(cfg, PoolConfig::default(), skip + u)?;
    let pool = Pool::create_in(reg.region(), pc)?;
    let a = arrays(&pool, u, skip)?;
    let r = pool.region();
    let store = |p: PPtr<u64>, v: u64| {
        let off = p.offset() as usize;
        r.store_u64(off, v);
        r.persist(off, 8);
    };
    let mut target_us = Vec::with_capacity(cfg.repeats);
    let t0 = Instant::now();
    for rep in 0..cfg.repeats {
        let val = rep as u64 + 1;
        let mut done = 0;
        let mut mine = Duration::ZERO;
        for i in 0..u {
            let s = Instant::now();
            store(a.target.field::<u64>(8 * i as u64), val);
            mine += s.elapsed();
            let upto = skip * (i + 1) / u;
            while done < upto {
                store(a.other.field::<u64>(8 * done as u64), val);
                done += 1;
            }
        }
        target_us.push(mine.as_secs_f64() * 1e6);
    }
    Ok((t0.elapsed().as_secs_f64(), target_us))
}

/// Fig. 4 right: the target unfinished amid `skip` committed but uncleared records; returns
/// the recovery's microseconds and the records it found.
fn recovery(cfg: &SkipConfig, v: &Variant, skip: usize) -> anyhow::Result<(f64, usize)> {
    let u = cfg.target_updates;
    let (reg, pc) = pool_for(cfg, v.pool, 3 * (skip + u) + 64)?;
    let pool = Pool::create_in(reg.region(), pc)?;
    let a = arrays(&pool, u, skip)?;
    crashed_target(&pool, &a, u, skip)?;
    drop(pool);
    let s = Instant::now();
    let (pool, rep) = Pool::open_in(reg.region())?;
    let us = s.elapsed().as_secs_f64() * 1e6;
    check_target_undone(&pool, &a, u)?;
    Ok((us, rep.records))
}

fn check_target_undone(pool: &Pool, a: &Arrays, u: usize) -> anyhow::Result<()> {
    for i in 0..u {
        let w = pool.read(a.target.field::<u64>(8 * i as u64));
        anyhow::ensure!(
            w == 0,
            "skip records: target word {i} is {w} after recovery, not undone"
        );
    }
    Ok(())
}

/// What one Fig. 5 run measured: the run's and the recovery's milliseconds, transactions
/// undone and records redone by the recovery.
type FractionRun = (f64, f64, usize, usize);

/// Fig. 5: one run of `transactions` targets, `fraction` of them left unfinished (spread
/// evenly), then the crash and its recovery; with `clear` false every commit stops before
/// clearing its records (force: the run without its clearing).
fn fraction_run(
    cfg: &SkipConfig,
    policy: Policy,
    skip: usize,
    fraction: f64,
    clear: bool,
) -> anyhow::Result<FractionRun> {
    let u = cfg.target_updates;
    let n = cfg.transactions;
    let pc = variant("f", LogLayout::Optimized, policy, Layers::One).pool;
    let (reg, pc) = pool_for(cfg, pc, 3 * n * (skip + u + 4) + 64)?;
    let pool = Pool::create_in(reg.region(), pc)?;
    // Each target its own words, so that undoing one never touches another's.
    let a = arrays(&pool, u * n, skip * n)?;
    let lost = (fraction * n as f64).round() as usize;
    let t0 = Instant::now();
    for i in 0..n {
        let base = Arrays {
            target: a.target.field::<u64>((8 * u * i) as u64),
            other: a.other.field::<u64>((8 * skip * i) as u64),
        };
        // Target i is lost when the count of lost ones steps up at i (spread evenly).
        let crashed = (i + 1) * lost / n > i * lost / n;
        if crashed {
            crashed_target(&pool, &base, u, skip)?;
        } else {
            let body =
                |t: &mut Tx<'_>, o: &mut Tx<'_>| interleave(t, o, &base, u, skip, 1).map(|_| ());
            if clear {
                pool.transaction(|o| pool.transaction(|t| body(t, o)))?;
            } else {
                pool.crash_before_clearing(|o| pool.crash_before_clearing(|t| body(t, o)))?;
            }
        }
    }
    let run = t0.elapsed().as_secs_f64() * 1e3;
    drop(pool);
    let s = Instant::now();
    let (_pool, rep) = Pool::open_in(reg.region())?;
    let rec = s.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(
        rep.undone == lost,
        "skip records: recovery undid {} transactions, {lost} were left unfinished",
        rep.undone
    );
    Ok((run, rec, rep.undone, rep.redone_records))
}

/// Figs. 3 right, 4 and 5 (see the module docs).
pub fn skip_records(cfg: &SkipConfig) -> anyhow::Result<SkipResult> {
    let runs = cfg.runs.max(1);
    let mut points = Vec::new();
    for &skip in &cfg.skips {
        let (mut raw, mut raw_target) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (secs, t) = raw_program(cfg, skip)?;
            raw.push(secs);
            raw_target.extend(t);
        }
        let raw = median(&mut raw);
        let raw_target = median(&mut raw_target);
        for v in &cfg.variants {
            let (mut prog, mut commits, mut targets, mut rollbacks, mut recs) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut found = 0;
            for _ in 0..runs {
                let c = commit_or_rollback(cfg, v, skip, false)?;
                prog.push(c.secs);
                commits.extend(c.end_us);
                targets.extend(c.target_us);
                rollbacks.extend(commit_or_rollback(cfg, v, skip, true)?.end_us);
                // Reopening is one short measurement: three per run.
                for _ in 0..3 {
                    let (us, n) = recovery(cfg, v, skip)?;
                    recs.push(us);
                    found = n;
                }
            }
            let target_us = median(&mut targets);
            points.push(SkipPoint {
                variant: v.label.clone(),
                skip,
                overhead: target_us / raw_target,
                program_overhead: median(&mut prog) / raw,
                target_us,
                commit_us: median(&mut commits),
                rollback_us: median(&mut rollbacks),
                recovery_us: median(&mut recs),
                recovered_records: found,
            });
        }
    }
    let mut fraction_points = Vec::new();
    for policy in [Policy::Force, Policy::NoForce] {
        for &skip in &cfg.fraction_skips {
            for &fraction in &cfg.fractions {
                let mut all = Vec::new();
                for _ in 0..runs {
                    let mut m = fraction_run(cfg, policy, skip, fraction, true)?;
                    let mut cleared = 0.0;
                    if policy == Policy::Force {
                        let without = fraction_run(cfg, policy, skip, fraction, false)?.0;
                        cleared = m.0 - without;
                        m.0 = without;
                    }
                    all.push((m, cleared));
                }
                all.sort_by(|(x, _), (y, _)| (x.0 + x.1).total_cmp(&(y.0 + y.1)));
                let (m, clear_ms) = all[all.len() / 2];
                fraction_points.push(FractionPoint {
                    policy: match policy {
                        Policy::Force => "force".into(),
                        Policy::NoForce => "no-force".into(),
                    },
                    skip,
                    fraction,
                    run_ms: m.0,
                    clear_ms,
                    recovery_ms: m.1,
                    total_ms: m.0 + m.1,
                    undone: m.2,
                    redone_records: m.3,
                });
            }
        }
    }
    Ok(SkipResult {
        config: cfg.clone(),
        points,
        fraction_points,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn small() -> SkipConfig {
        SkipConfig {
            backing: Backing::Dram,
            skips: vec![20, 60],
            repeats: 5,
            fraction_skips: vec![10],
            fractions: vec![0.0, 0.5, 1.0],
            transactions: 8,
            runs: 1,
            ..SkipConfig::default()
        }
    }

    /// Runs end to end on a tiny input: recovery finds the target's and the others' records
    /// (the others committed but not cleared), undoes the target, and Fig. 5's runs undo
    /// exactly the transactions they left unfinished.
    #[test]
    fn skip_records_run_small() {
        let r = skip_records(&small()).unwrap();
        assert_eq!(r.points.len(), 6);
        for p in &r.points {
            // The target's records, the other's records and its END record.
            assert!(p.recovered_records > 10 + p.skip, "{p:?}");
            assert!(p.commit_us > 0.0 && p.rollback_us > 0.0, "{p:?}");
            assert!(p.target_us >= p.commit_us && p.overhead > 0.0, "{p:?}");
        }
        let undone: Vec<usize> = r.fraction_points.iter().map(|p| p.undone).collect();
        assert_eq!(undone, vec![0, 4, 8, 0, 4, 8]);
        let noforce_all_committed = &r.fraction_points[3];
        assert!(noforce_all_committed.redone_records > 0);
        assert_eq!(r.fraction_points[0].redone_records, 0);
    }
}
