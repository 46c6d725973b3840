//! Checkpoints (`braid_engine::checkpoint`): taken while transactions run, for every scheme;
//! recovery from checkpoint + log equals recovery from the whole log; truncation bounds the
//! log; a crash at every file-system step of a checkpoint leaves a usable database; a damaged
//! newest checkpoint falls back to the previous one; a power failure during checkpoints loses
//! no acknowledged transaction (docs/design.md invariants 1-4 with checkpoints).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use braid_engine::log::*;
use braid_engine::testing::{Env, PmemEnv, SimPmem};
use braid_engine::*;

use crate::integration::common;
use braid_wal::fs::{CrashOpts, FaultFs};

const ACCTS: u64 = 64;
const ACCT: TableId = TableId(0);
const HIST: TableId = TableId(1);
const TRANSFER: u32 = 1;

fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("acct", IndexKind::Hash).column("bal", ColumnType::U64));
    c.add(TableDef::new("hist", IndexKind::Ordered).column("amount", ColumnType::U64));
    c
}

/// Move `amount` between two accounts and record the transfer under the transaction id; every
/// fourth transfer also deletes the oldest history row of its source account's bucket, so
/// checkpoints see deletes too.
fn procs() -> Procedures {
    let mut p = Procedures::new();
    p.register(TRANSFER, "transfer", |tx, params| {
        let mut r = ParamReader::new(params);
        let (from, to, amount, deletes) = (
            r.get::<u64>()?,
            r.get::<u64>()?,
            r.get::<u64>()?,
            r.get::<u64>()?,
        );
        let bal = tx.get::<u64>(ACCT, from, 0)?.ok_or(TxError::NotFound {
            table: 0,
            key: from,
        })?;
        if bal < amount {
            return Err(TxError::user_abort("insufficient funds"));
        }
        tx.update(ACCT, from, |w| w.set::<u64>(0, bal - amount))?;
        tx.update(ACCT, to, |w| {
            let b = w.get::<u64>(0);
            w.set::<u64>(0, b + amount)
        })?;
        let id = tx.id();
        tx.insert(HIST, id, &amount.to_le_bytes())?;
        if deletes == 1 && amount % 4 == 0 {
            let mut victim = None;
            tx.scan(
                HIST,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Excluded(id),
                1,
                |k, _| {
                    victim = Some(k);
                    false
                },
            )?;
            if let Some(k) = victim {
                tx.delete(HIST, k)?;
            }
        }
        Ok(())
    });
    p
}

fn load(l: &Loader<'_>) -> Result<(), EngineError> {
    for k in 0..ACCTS {
        l.insert(ACCT, k, &1000u64.to_le_bytes())?;
    }
    Ok(())
}

fn pmem() -> DeviceConfig {
    common::pmem_ring(4 << 20)
}

fn file() -> DeviceConfig {
    common::roomy_file_device()
}

fn opts(scheme: &'static str, device: DeviceConfig, logging: LogKind, cc: Cc) -> Options {
    Options::default()
        .scheme(scheme.parse().unwrap())
        .device(device)
        .logging(logging)
        .cc(cc)
        .streams(2)
        .recovery_threads(2)
}

type State = (BTreeMap<u64, Vec<u8>>, BTreeMap<u64, Vec<u8>>);

/// Open (create or recover) the bank database in `dir` with `o`.
fn open_db(dir: impl AsRef<Path>, o: Options) -> (Db, OpenReport) {
    Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap()
}

fn state(db: &Db) -> State {
    let mut a = BTreeMap::new();
    db.for_each_row(ACCT, .., |k, img| {
        a.insert(k, img.to_vec());
    });
    let mut h = BTreeMap::new();
    db.for_each_row(HIST, .., |k, img| {
        h.insert(k, img.to_vec());
    });
    (a, h)
}

/// Compare two states, describing the first difference (never the whole state).
#[track_caller]
fn same(got: &State, want: &State, what: &str) {
    if got == want {
        return;
    }
    let diff = |a: &BTreeMap<u64, Vec<u8>>, b: &BTreeMap<u64, Vec<u8>>| {
        a.iter()
            .find(|(k, v)| b.get(k) != Some(v))
            .map(|(k, v)| format!("key {k}: {v:?} vs {:?}", b.get(k)))
            .or_else(|| {
                b.keys()
                    .find(|k| !a.contains_key(k))
                    .map(|k| format!("key {k} missing"))
            })
    };
    panic!(
        "{what}: states differ: acct {:?}; hist ({} vs {} rows) {:?}",
        diff(&got.0, &want.0),
        got.1.len(),
        want.1.len(),
        diff(&got.1, &want.1)
    );
}

fn total(db: &Db) -> u64 {
    let mut sum = 0;
    db.for_each_row(ACCT, .., |_, img| sum += db.schema(ACCT).get::<u64>(img, 0));
    sum
}

/// Run `n` transfers on one worker; returns the ids of acknowledged ones.
fn transfers(db: &Db, seed: u64, n: u64, done: &AtomicU64) -> Vec<u64> {
    transfers_with(db, seed, n, done, true)
}

fn transfers_with(db: &Db, seed: u64, n: u64, done: &AtomicU64, deletes: bool) -> Vec<u64> {
    let mut w = db.worker().unwrap();
    let mut acked = Vec::new();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (from, to, amount) = (x % ACCTS, (x >> 20) % ACCTS, 1 + (x >> 40) % 9);
        let mut p = Params::new();
        p.put::<u64>(from)
            .put::<u64>(to)
            .put::<u64>(amount)
            .put::<u64>(deletes as u64);
        let mut id = 0;
        // Acknowledged once durable, each before the next.
        let durable = w
            .call_async_hooked(TRANSFER, &p.bytes, &mut |t| id = t)
            .and_then(|t| Ok(t.wait()?));
        match durable {
            Ok(()) => acked.push(id),
            Err(TxError::Log(_)) => break,
            Err(_) => {}
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
    acked
}

/// Two workers run transfers while the calling thread takes `ckpts` checkpoints.
fn run_with_checkpoints(db: &Db, per_worker: u64, ckpts: usize) -> Vec<u64> {
    let done = AtomicU64::new(0);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let (db, done) = (db.clone(), &done);
                s.spawn(move || transfers(&db, 7 + i, per_worker, done))
            })
            .collect();
        for c in 0..ckpts {
            let want = 2 * per_worker * (c as u64 + 1) / (ckpts as u64 + 1);
            while done.load(Ordering::Relaxed) < want {
                std::thread::yield_now();
            }
            db.checkpoint().unwrap();
        }
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn equals_whole_log(scheme: &'static str, device: DeviceConfig, logging: LogKind, cc: Cc) {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let o = opts(scheme, device, logging, cc);
    let (db, _) = open_db(&dir, o.clone());
    let acked = run_with_checkpoints(&db, 1500, 1);
    assert!(acked.len() > 500, "{scheme}: only {} commits", acked.len());
    let want = state(&db);
    db.close().unwrap();
    drop(db);

    let whole = base.path().join("whole");
    copy_dir(&dir, &whole);
    std::fs::remove_dir_all(whole.join(checkpoint::DIR)).unwrap();

    let (a, ra) = open_db(&dir, o.clone());
    let (b, rb) = open_db(&whole, o);
    let ck = ra
        .checkpoint
        .as_ref()
        .expect("recovery did not use the checkpoint");
    assert_eq!(ck.epoch, 1);
    assert!(ck.fallbacks.is_empty());
    assert!(rb.checkpoint.is_none());
    assert!(
        ra.recovery.txns < rb.recovery.txns,
        "{scheme}: replayed {} after the checkpoint, {} from the whole log",
        ra.recovery.txns,
        rb.recovery.txns
    );
    same(
        &state(&a),
        &want,
        &format!("{scheme} {logging:?} {cc:?}: checkpoint + log"),
    );
    same(
        &state(&b),
        &want,
        &format!("{scheme} {logging:?} {cc:?}: whole log"),
    );
    assert_eq!(total(&a), ACCTS * 1000);
}

#[test]
fn serial_checkpoint_plus_log_equals_whole_log() {
    equals_whole_log("serial", pmem(), LogKind::Data, Cc::TwoPl);
    equals_whole_log("serial", file(), LogKind::Command, Cc::Occ);
}

#[test]
fn taurus_checkpoint_plus_log_equals_whole_log() {
    equals_whole_log("taurus", pmem(), LogKind::Data, Cc::TwoPl);
    equals_whole_log("taurus", pmem(), LogKind::Command, Cc::Occ);
    equals_whole_log("taurus", file(), LogKind::Command, Cc::TwoPl);
    equals_whole_log("taurus", pmem(), LogKind::Command, Cc::Mvcc);
    equals_whole_log("taurus", file(), LogKind::Data, Cc::Mvcc);
}

#[test]
fn gsn_checkpoint_plus_log_equals_whole_log() {
    equals_whole_log("gsn", pmem(), LogKind::Data, Cc::TwoPl);
    equals_whole_log("gsn", file(), LogKind::Data, Cc::Occ);
}

#[test]
fn silor_checkpoint_plus_log_equals_whole_log() {
    equals_whole_log("silor:epoch_ms=2", pmem(), LogKind::Data, Cc::TwoPl);
    equals_whole_log("silor:epoch_ms=2", file(), LogKind::Data, Cc::Occ);
}

#[test]
fn pertxn_and_nvdisk_checkpoint_plus_log_equals_whole_log() {
    equals_whole_log("pertxn", pmem(), LogKind::Data, Cc::TwoPl);
    equals_whole_log("pertxn", pmem(), LogKind::Command, Cc::TwoPl);
    equals_whole_log("nvdisk", file(), LogKind::Data, Cc::TwoPl);
}

/// Log bytes once background work (pertxn's asynchronous backup, which frees its index only
/// as it copies objects out) has stopped changing them: polled until unchanged over several
/// polls in a row, with a generous deadline (no transaction runs meanwhile, so it settles).
fn settled(db: &Db) -> u64 {
    const STEADY: u32 = 5;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut last = db.stats().log_bytes;
    let mut steady = 0;
    while steady < STEADY {
        assert!(
            std::time::Instant::now() < deadline,
            "log bytes still changing after 60 s: {last}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
        let now = db.stats().log_bytes;
        steady = if now == last { steady + 1 } else { 0 };
        last = now;
    }
    last
}

/// Several checkpoints: the log is truncated to the older of the two kept, stays small, and
/// the database reopens to the same state.
fn truncation(scheme: &'static str, device: DeviceConfig) {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let o = opts(scheme, device, LogKind::Data, Cc::TwoPl);
    let (db, _) = open_db(&dir, o.clone());
    let mut written = 0u64;
    let mut held = Vec::new();
    for _ in 0..6 {
        let before = db.stats().log_bytes;
        let done = AtomicU64::new(0);
        transfers(&db, written + 3, 2000, &done);
        written += db.stats().log_bytes.saturating_sub(before);
        db.checkpoint().unwrap();
        held.push(settled(&db));
    }
    // Steady state: the log holds about two checkpoints' worth, however long the run.
    assert!(
        held[5] <= held[2] + held[2] / 2 + (256 << 10),
        "{scheme}: log bytes held after each checkpoint {held:?} keep growing"
    );
    if !scheme.starts_with("pertxn") {
        // (pertxn's index is a fixed ring; only its backup files could grow.)
        assert!(
            held[5] < written / 2,
            "{scheme}: {held:?} held, {written} written"
        );
    }
    let files = checkpoint::list(&dir).unwrap();
    assert_eq!(files.len(), checkpoint::KEEP, "{files:?}");
    let want = state(&db);
    db.close().unwrap();
    drop(db);
    let (db, r) = open_db(&dir, o);
    assert_eq!(r.checkpoint.as_ref().unwrap().epoch, 6);
    same(&state(&db), &want, &format!("{scheme}: reopened"));
}

#[test]
fn truncation_keeps_the_log_bounded() {
    truncation("serial", file());
    truncation("taurus", file());
    truncation("gsn", file());
    truncation("silor:epoch_ms=2", file());
    // pertxn's index is a ring that is backed up (and freed) only once `truncate_entries`
    // entries are consumed (default: half the index, about a round of this test), so its log
    // bytes saw-tooth by up to that much between checkpoints whatever the backups hold; and a
    // checkpoint releases backup files by whole segments (default 16 MiB, more than this test
    // writes). A small threshold and small segments make the bound measure what truncation
    // releases.
    truncation(
        "pertxn:truncate_entries=64,backup_segment_bytes=65536",
        pmem(),
    );
}

fn fault_env(fs: &FaultFs) -> Env {
    Env {
        fs: Arc::new(fs.clone()),
        pmem: PmemEnv::Files,
    }
}

/// A crash after every file-system operation of a checkpoint (and of the truncation after it),
/// with unsynced data dropped or torn: the database always reopens, to the same state, from
/// one of the two checkpoints.
#[test]
fn crash_at_every_step_of_a_checkpoint() {
    for scheme in ["serial", "taurus"] {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        let mut o = opts(scheme, file(), LogKind::Data, Cc::TwoPl);
        o.env = fault_env(&fs);
        let (db, _) = open_db(dir, o.clone());
        let done = AtomicU64::new(0);
        transfers(&db, 1, 400, &done);
        db.checkpoint().unwrap();
        transfers(&db, 2, 400, &done);
        let want = state(&db);
        // Restart the operation log here (it records from creation on).
        fs.set_record_ops(false);
        fs.set_record_ops(true);
        db.checkpoint().unwrap();
        let n = fs.op_count();
        assert!(n >= 6, "a checkpoint took only {n} file-system operations");
        let mut seen = [0usize; 3];
        for k in 0..=n {
            for (i, co) in [CrashOpts::drop_unsynced(), CrashOpts::tear_last(k as u64)]
                .into_iter()
                .enumerate()
            {
                let crashed = fs.crash_after(k, co).unwrap();
                let mut o2 = o.clone();
                o2.env = fault_env(&crashed);
                let (db2, r) = Db::builder(dir)
                    .options(o2)
                    .catalog(catalog())
                    .procedures(procs())
                    .loader(load)
                    .open()
                    .unwrap_or_else(|e| panic!("{scheme}: crash after op {k} ({i}): {e}"));
                same(
                    &state(&db2),
                    &want,
                    &format!("{scheme}: crash after op {k} ({i})"),
                );
                seen[r.checkpoint.as_ref().map_or(0, |c| c.epoch as usize)] += 1;
            }
        }
        assert!(
            seen[1] > 0 && seen[2] > 0,
            "{scheme}: loaded checkpoints {seen:?}"
        );
        db.close().unwrap();
    }
}

#[test]
fn damaged_newest_checkpoint_falls_back_to_the_previous() {
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let mut o = opts("serial", file(), LogKind::Data, Cc::TwoPl);
    o.env = fault_env(&fs);
    let (db, _) = open_db(dir, o.clone());
    let done = AtomicU64::new(0);
    for i in 0..3 {
        transfers(&db, i, 300, &done);
        db.checkpoint().unwrap();
    }
    transfers(&db, 9, 300, &done);
    let want = state(&db);
    db.close().unwrap();
    drop(db);
    let files = checkpoint::list_in(&o.env, dir).unwrap();
    let newest = &files.last().unwrap().1;
    fs.corrupt(newest, 100, &[0xAB; 8]).unwrap();
    let (db, r) = open_db(dir, o.clone());
    let c = r.checkpoint.unwrap();
    assert_eq!(c.epoch, 2);
    assert_eq!(c.fallbacks.len(), 1);
    assert!(c.fallbacks[0].contains("offset"), "{}", c.fallbacks[0]);
    same(&state(&db), &want, "fell back");
    db.close().unwrap();
    drop(db);
    // Both kept checkpoints damaged and the log truncated: a clear error, nothing made up.
    let older = &files[files.len() - 2].1;
    fs.corrupt(older, 60, &[0xCD; 8]).unwrap();
    let e = Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap_err();
    assert!(
        matches!(
            &e,
            EngineError::Checkpoint(CheckpointError::AllDamaged { damaged, .. })
                if damaged.len() == files.len()
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("every checkpoint"), "{e}");
}

/// Power failure (pmem log in CrashSim, checkpoints on the fault-injecting file system) at a
/// random moment while two workers run and checkpoints are taken in a loop: every
/// acknowledged transfer survives and money is conserved.
#[test]
fn power_failure_during_checkpoints_loses_nothing_acknowledged() {
    for (round, scheme) in ["serial", "taurus", "gsn"]
        .into_iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        let fs = FaultFs::new();
        let sim = SimPmem::new();
        let dir = Path::new("/db");
        let mut o = opts(scheme, pmem(), LogKind::Data, Cc::TwoPl);
        o.env = Env {
            fs: Arc::new(fs.clone()),
            pmem: PmemEnv::Sim(sim.clone()),
        };
        let (db, _) = open_db(dir, o.clone());
        let stop = AtomicBool::new(false);
        let done = AtomicU64::new(0);
        let acked = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let (crashed_fs, crashed_pmem) = std::thread::scope(|s| {
            for i in 0..2u64 {
                let (db, stop, done, acked) = (db.clone(), &stop, &done, Arc::clone(&acked));
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let a = transfers_with(&db, round as u64 * 10 + i, 50, done, false);
                        acked.lock().extend(a);
                    }
                });
            }
            let ck = {
                let (db, stop) = (db.clone(), &stop);
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = db.checkpoint();
                    }
                })
            };
            // The crash comes once transfers were acknowledged and a checkpoint was tried,
            // after more transfers in every round (a generous deadline: the machine is shared).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
            let want = 100 + 60 * round as u64;
            while acked.lock().is_empty()
                || done.load(Ordering::Relaxed) < want
                || db.stats().checkpoints.taken + db.stats().checkpoints.failed == 0
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{scheme} round {round}: the run did not get going"
                );
                std::thread::yield_now();
            }
            // The acknowledged set is fixed before the cut; pmem and files are cut at one
            // instant.
            let acked_now: Vec<u64> = acked.lock().clone();
            let (f, p) = fs.crash_with(CrashOpts::drop_unsynced(), || {
                sim.crash(|i| braid_pmem::CrashMode::KeepRandom {
                    seed: round as u64 * 31 + i as u64,
                    keep_probability: 0.5,
                })
            });
            let p = p.unwrap();
            stop.store(true, Ordering::Relaxed);
            ck.join().unwrap();
            (f, (p, acked_now))
        });
        let (p, acked_now) = crashed_pmem;
        db.close().ok();
        drop(db);
        let mut o2 = o.clone();
        o2.env = Env {
            fs: Arc::new(crashed_fs),
            pmem: PmemEnv::Sim(p),
        };
        let (db, r) = Db::builder(dir)
            .options(o2)
            .catalog(catalog())
            .procedures(procs())
            .loader(load)
            .open()
            .unwrap_or_else(|e| panic!("{scheme} round {round}: {e}"));
        assert_eq!(total(&db), ACCTS * 1000, "{scheme} round {round}: money");
        let st = state(&db);
        for id in &acked_now {
            assert!(
                st.1.contains_key(id),
                "{scheme} round {round}: acknowledged transfer {id} lost (checkpoint {:?})",
                r.checkpoint.as_ref().map(|c| c.epoch)
            );
        }
        assert!(!acked_now.is_empty());
    }
}
