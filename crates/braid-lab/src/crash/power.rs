//! Power mode: the workload runs in-process on simulated hardware (CrashSim persistent memory
//! and the fault-injecting file system) and power is cut at a persist event the seed chooses,
//! mid-flush included: the post-crash image holds only what was persisted before that event
//! (pmem: optionally plus a random subset of unpersisted 8-byte words; files: unsynced writes
//! dropped, torn, or a random subset kept).
//!
//! The cut is placed by count, not by time ([`braid_pmem::PersistTrip`]): the `n`th persist
//! event after the database opens (an fsync, fdatasync or directory sync on the file system, a
//! fence on a pmem region), and every later one, is held while the image is taken, so the image
//! holds exactly the events before it however the workers race. `n` comes from the seed and the
//! round number, so `--seed S --round K` cuts at the same event again. A run that never reaches
//! `n` events (a scheme that syncs rarely) is cut when it times out instead, and says so.
//! On a violation, the crashed image is written under the system's temporary directory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use braid_engine::testing::{Env, PmemEnv, SimPmem};
use braid_pmem::{CrashMode, PersistTrip};
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
    /// The persist event the cut comes at (the `n`th after the database opened).
    at: u64,
    /// Counts persist events and holds the `at`th.
    trip: Arc<PersistTrip>,
    /// The latest the cut comes if the workload does not reach `at` events.
    timeout: Duration,
    /// What the persistent memory keeps of unpersisted stores.
    pmem: CrashMode,
    /// What the file system keeps of unsynced writes.
    fs: CrashOpts,
}

impl Cut {
    /// Draw the round's cut: a persist event within `EVENTS_PER_MS` x `--max-ms`, a pmem mode
    /// and a file system mode.
    fn plan(args: &CrashArgs, rng: &mut SmallRng) -> Cut {
        let at = rng.gen_range(1..=args.max_ms.max(1) * EVENTS_PER_MS);
        let trip = Arc::new(PersistTrip::new(at));
        // Generous: a cut by timeout is still a valid crash, only not a replayable one.
        let timeout = Duration::from_millis(args.max_ms.max(1) * 20);
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
        Cut {
            at,
            trip,
            timeout,
            pmem,
            fs,
        }
    }

    /// Return at the moment of the cut (the workers run meanwhile): whether it came at its
    /// persist event (else it timed out first).
    fn wait(&self) -> bool {
        self.trip.wait_tripped(self.timeout)
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

/// The range the cut's persist event is drawn from, per millisecond of `--max-ms`: about what
/// the schemes persist per millisecond here, so most cuts come within `--max-ms`.
const EVENTS_PER_MS: u64 = 20;

/// Releases the held threads when dropped, so no early return leaves workers parked.
struct Release<'a>(&'a PersistTrip);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.release();
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
    let (db, _) = workload.db(&dir).options(opts).open().context("open")?;
    let intents: Mutex<Vec<Intent>> = Mutex::default();
    let acks: Mutex<HashSet<u64>> = Mutex::default();
    let stop = AtomicBool::new(false);
    let cut = Cut::plan(args, rng);
    // Count from here: the open and the load are before the workload.
    fs.set_trip(Arc::clone(&cut.trip));
    sim.set_trip(Arc::clone(&cut.trip))?;
    let seed = args.seed.wrapping_mul(7919) + round as u64;
    let crashed = std::thread::scope(|s| -> anyhow::Result<(Env, HashSet<u64>, bool, FaultFs)> {
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
        let release = Release(&cut.trip);
        let at_event = cut.wait();
        // Cut power: nothing acknowledged after this instant counts.
        let crashed = {
            let acks = acks.lock();
            // Each region's image is taken atomically (its live and durable images under one
            // lock) at the moment it is crashed; freezing first and crashing later would let
            // random eviction keep stores made after the cut. The file system is cut at the
            // same instant (its operations wait meanwhile).
            let (fs2, pm) = fs.crash_with(cut.fs, || sim.crash(|i| cut.pmem_mode(i)));
            (env(args, fs2.clone(), pm?), acks.clone(), at_event, fs2)
        };
        drop(release);
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
    let (env, acked, at_event, crashed_fs) = crashed;
    let image = Image::take(&crashed_fs, &env);
    let mut verdict = recover_and_check(args, &dir, env, &intents, &acked);
    // Everything of a power-mode run lives on the simulated devices.
    if Path::new("/braid-power").exists() {
        bail!("power mode wrote to the real file system under /braid-power");
    }
    if let Ok(v) = &mut verdict {
        v.cut_by_timeout = !at_event;
        if !at_event {
            v.notes.push(format!(
                "power cut by timeout after {} persist events (fewer than the {} drawn): this \
                 round may not replay exactly",
                cut.trip.events(),
                cut.at
            ));
        }
        if !v.violations.is_empty() {
            match image.write(round) {
                Ok(to) => v.notes.push(format!(
                    "crashed image (cut at persist event {}) kept at {}",
                    cut.at,
                    to.display()
                )),
                Err(e) => v
                    .notes
                    .push(format!("could not keep the crashed image: {e:#}")),
            }
        }
    }
    verdict
}

/// A copy of a crashed image, taken before recovery changes it: the database's files on the
/// simulated file system and every simulated pmem region.
struct Image {
    files: Vec<(PathBuf, Vec<u8>)>,
    regions: Vec<Vec<u8>>,
}

impl Image {
    fn take(fs: &FaultFs, env: &Env) -> Image {
        let files = fs
            .files()
            .into_iter()
            .filter_map(|p| fs.contents(&p).map(|b| (p, b)))
            .collect();
        let regions = match &env.pmem {
            PmemEnv::Sim(sim) => sim
                .regions()
                .iter()
                .map(|r| {
                    let mut b = vec![0u8; r.len()];
                    r.read(0, &mut b);
                    b
                })
                .collect(),
            PmemEnv::Files | PmemEnv::Snapshot(_) => Vec::new(),
        };
        Image { files, regions }
    }

    /// Write the image under the temporary directory: the files at their paths below
    /// `files/`, the regions as `region-<i>.bin` (in path order).
    fn write(&self, round: usize) -> anyhow::Result<PathBuf> {
        let to = std::env::temp_dir().join(format!(
            "braid-power-image-{}-round{round}",
            std::process::id()
        ));
        for (p, b) in &self.files {
            let at = to.join("files").join(p.strip_prefix("/").unwrap_or(p));
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&at, b).with_context(|| format!("writing {}", at.display()))?;
        }
        std::fs::create_dir_all(&to)?;
        for (i, b) in self.regions.iter().enumerate() {
            std::fs::write(to.join(format!("region-{i}.bin")), b)?;
        }
        Ok(to)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use braid_pmem::PmemConfig;
    use braid_wal::fs::{Fs, OpenOpts};

    #[test]
    fn a_kept_image_holds_the_files_and_regions_as_crashed() {
        let fs = FaultFs::new();
        let dir = Path::new("/braid-power/7");
        fs.create_dir_all(&dir.join("logs")).unwrap();
        let f = fs
            .open(&dir.join("logs/seg0"), OpenOpts::create_truncate())
            .unwrap();
        f.write_all_at(0, b"synced").unwrap();
        f.sync_data().unwrap();
        f.write_all_at(6, b"-lost").unwrap();
        for d in ["/", "/braid-power", "/braid-power/7", "/braid-power/7/logs"] {
            fs.sync_dir(Path::new(d)).unwrap();
        }
        let sim = SimPmem::new();
        let r = sim
            .region(&dir.join("ring"), 4096, PmemConfig::default())
            .unwrap();
        r.write(0, b"ring");
        r.persist(0, 4);
        let (fs2, pm) = fs.crash_with(CrashOpts::drop_unsynced(), || {
            sim.crash(|_| CrashMode::DropUnpersisted)
        });
        let env = Env {
            fs: Arc::new(fs2.clone()),
            pmem: PmemEnv::Sim(pm.unwrap()),
        };
        let to = Image::take(&fs2, &env).write(usize::MAX).unwrap();
        let seg = std::fs::read(to.join("files/braid-power/7/logs/seg0")).unwrap();
        assert_eq!(seg, b"synced");
        let ring = std::fs::read(to.join("region-0.bin")).unwrap();
        assert_eq!(&ring[..4], b"ring");
        std::fs::remove_dir_all(to).unwrap();
    }
}
