//! Power mode: the workload runs in-process on simulated hardware (CrashSim persistent memory
//! and the fault-injecting file system) and power is cut at a random moment, mid-flush
//! included: the post-crash image holds only what was persisted (pmem: optionally plus a random
//! subset of unpersisted 8-byte words; files: unsynced writes dropped, torn, or a random subset
//! kept).
//!
//! When the cut comes is decided by [`Cut::plan`] and awaited by [`Cut::wait`] alone.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use braid_engine::{Db, Env, PmemEnv, SimPmem};
use braid_pmem::CrashMode;
use braid_wal::fs::{CrashOpts, FaultFs};
use parking_lot::Mutex;
use rand::Rng;
use rand::rngs::SmallRng;

use super::args::CrashArgs;
use super::check::recover_and_check;
use super::drive::drive_any;
use crate::common::{self, DeviceKind};
use crate::oracle::{Intent, Verdict};

/// How and when one round's power cut comes.
struct Cut {
    /// How long the workload runs before the cut.
    after: Duration,
    /// What the persistent memory keeps of unpersisted stores.
    pmem: CrashMode,
    /// What the file system keeps of unsynced writes.
    fs: CrashOpts,
}

impl Cut {
    /// Draw the round's cut: a moment within a tenth of `--max-ms`, a pmem mode and a file
    /// system mode.
    fn plan(args: &CrashArgs, rng: &mut SmallRng) -> Cut {
        let after = Duration::from_micros(rng.gen_range(200..=args.max_ms.max(1) * 1000 / 10));
        let pmem = if rng.gen_bool(0.5) {
            CrashMode::DropUnpersisted
        } else {
            CrashMode::KeepRandom {
                seed: rng.r#gen(),
                keep_probability: 0.5,
            }
        };
        let fs = match rng.gen_range(0..3) {
            0 => CrashOpts::drop_unsynced(),
            1 => CrashOpts::tear_last(rng.r#gen()),
            _ => CrashOpts::keep_subset(rng.r#gen()),
        };
        Cut { after, pmem, fs }
    }

    /// Return at the moment of the cut (the workers run meanwhile).
    fn wait(&self) {
        std::thread::sleep(self.after);
    }

    /// The pmem mode of region `i` (each region keeps its own random subset).
    fn pmem_mode(&self, i: usize) -> CrashMode {
        match self.pmem {
            CrashMode::KeepRandom {
                seed,
                keep_probability,
            } => CrashMode::KeepRandom {
                seed: seed.wrapping_add(i as u64),
                keep_probability,
            },
            m => m,
        }
    }
}

/// The simulated devices of a round: where the database lives before and after the cut.
fn env(args: &CrashArgs, fs: FaultFs, sim: SimPmem) -> Env {
    Env {
        fs: Arc::new(fs),
        pmem: if args.device == DeviceKind::Pmem {
            PmemEnv::Sim(sim)
        } else {
            PmemEnv::Files
        },
    }
}

/// One power round: run the workload on simulated devices, cut power, recover and check.
pub fn power_round(args: &CrashArgs, round: usize, rng: &mut SmallRng) -> anyhow::Result<Verdict> {
    let workload = args.workload()?;
    let fs = FaultFs::new();
    let sim = SimPmem::new();
    let dir = PathBuf::from(format!("/braid-power/{round}"));
    let mut opts = args.options()?;
    opts.env = env(args, fs.clone(), sim.clone());
    opts.app = common::app_blob(&*workload);
    let (db, _) = Db::open(
        &dir,
        opts,
        workload.catalog(),
        workload.procedures(),
        &|l| workload.load(l, &|_| {}),
    )
    .context("open")?;
    let intents: Mutex<Vec<Intent>> = Mutex::default();
    let acks: Mutex<HashSet<u64>> = Mutex::default();
    let stop = AtomicBool::new(false);
    let cut = Cut::plan(args, rng);
    let seed = args.seed.wrapping_mul(7919) + round as u64;
    let crashed = std::thread::scope(|s| -> anyhow::Result<(Env, HashSet<u64>)> {
        let hs: Vec<_> = (0..args.threads)
            .map(|i| {
                let (db, workload, stop, intents, acks) = (&db, &workload, &stop, &intents, &acks);
                s.spawn(move || {
                    drive_any(
                        args,
                        db,
                        workload,
                        i,
                        seed,
                        stop,
                        &|i: Intent| intents.lock().push(i),
                        &|t| {
                            acks.lock().insert(t);
                        },
                    )
                })
            })
            .collect();
        cut.wait();
        // Cut power: nothing acknowledged after this instant counts.
        let crashed = {
            let acks = acks.lock();
            // Each region's image is taken atomically (its live and durable images under one
            // lock) at the moment it is crashed; freezing first and crashing later would let
            // random eviction keep stores made after the cut. The file system is cut at the
            // same instant (its operations wait meanwhile).
            let (fs2, pm) = fs.crash_with(cut.fs, || sim.crash(|i| cut.pmem_mode(i)));
            (env(args, fs2, pm?), acks.clone())
        };
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            // Workers may fail after the crash (e.g. a frozen device): only pre-crash acks count.
            let _ = h.join();
        }
        Ok(crashed)
    })?;
    let _ = db.close();
    drop(db);
    let intents = std::mem::take(&mut *intents.lock());
    let verdict = recover_and_check(args, &dir, crashed.0, &intents, &crashed.1);
    // Everything of a power-mode run lives on the simulated devices.
    if Path::new("/braid-power").exists() {
        bail!("power mode wrote to the real file system under /braid-power");
    }
    verdict
}
