//! One writer per database, on every device kind: a second open (another process, or another
//! handle in this one) is refused with `EngineError::InUse` naming the holder; a writer killed
//! with SIGKILL leaves no lock behind and loses no acknowledged commit; `Db::open_read_only`
//! reads a live database and sees a transaction-consistent prefix of what was durable, and
//! changes no byte (checked with no writer left: a live writer's background threads, de-staging
//! or backing up, write on their own); `Db::destroy` removes a database with what it keeps
//! outside its directory.
//!
//! The writer is this test binary run again as a child process (the ignored test
//! `lock::child_writer`, told what to do by environment variables): it commits the counter
//! workload of `common` on one worker, waiting for each commit, and prints `acked N` after the
//! N-th is durable; it stops committing when the file `pause` appears in its control directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use braid_engine::*;

use crate::integration::common::{catalog, load, model, open, run_txn, run_txn_durable, state};

const CHILD_DIR: &str = "BRAID_LOCK_TEST_DIR";
const CHILD_CASE: &str = "BRAID_LOCK_TEST_CASE";

/// The device kinds and schemes the lock must hold for, by name: the scheme, its device, and
/// where its directory lives (file logs on the disk, persistent memory under /dev/shm).
fn case(name: &str) -> (Options, &'static str) {
    let file = |stripe: usize| {
        DeviceConfig::File(
            FileOptions::default()
                .segment_size(64 << 10)
                .buffer_size(256 << 10)
                .stripe(stripe)
                .stripe_unit(4096),
        )
    };
    let pmem = |destage: bool| {
        DeviceConfig::Pmem(
            PmemOptions::default()
                .ring_size(64 << 10)
                .destage(destage)
                .destage_segment_size(16 << 10)
                .media(braid_pmem::Media::Emulated),
        )
    };
    let (scheme, device, base) = match name {
        "serial-file" => ("serial", file(1), "/var/tmp"),
        "taurus-raid0" => ("taurus", file(2), "/var/tmp"),
        "nvdisk" => ("nvdisk", file(1), "/var/tmp"),
        "serial-pmem-destage" => ("serial", pmem(true), "/dev/shm"),
        "pertxn" => ("pertxn", pmem(false), "/dev/shm"),
        other => panic!("unknown case {other}"),
    };
    let o = Options::default()
        .scheme(scheme.parse().unwrap())
        .device(device)
        .streams(2)
        .max_workers(4);
    (o, base)
}

const CASES: [&str; 5] = [
    "serial-file",
    "taurus-raid0",
    "nvdisk",
    "serial-pmem-destage",
    "pertxn",
];

fn open_read_only(dir: &Path, o: Options) -> Db {
    let (db, _) = Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .loader(load)
        .open_read_only()
        .unwrap_or_else(|e| panic!("read-only open of {}: {e}", dir.display()));
    assert!(matches!(db.checkpoint(), Err(EngineError::ReadOnly { .. })));
    db
}

/// The number of transactions `db` holds, after checking it holds exactly the first that many
/// of the child's (transaction `i` is the `i`-th, each waited for).
fn prefix(db: &Db) -> usize {
    let s = state(db);
    let p = s.0[0] as usize;
    let all: Vec<u64> = (0..p as u64).collect();
    assert_eq!(s, model(&all, p), "not a prefix of {p} transactions");
    p
}

/// Every file below `dirs`, with its bytes' checksum.
fn checksums(dirs: &[PathBuf]) -> BTreeMap<PathBuf, (u64, u32)> {
    fn walk(d: &Path, out: &mut BTreeMap<PathBuf, (u64, u32)>) {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                let b = std::fs::read(&p).unwrap();
                out.insert(p, (b.len() as u64, crc32c::crc32c(&b)));
            }
        }
    }
    let mut out = BTreeMap::new();
    for d in dirs {
        walk(d, &mut out);
    }
    out
}

/// What `braid.json` of `dir` names outside it.
fn outside(dir: &Path) -> Vec<PathBuf> {
    Meta::read(dir).unwrap().outside
}

/// The child process: see the module doc.
#[test]
#[ignore = "the writer process of the lock tests, run by them"]
fn child_writer() {
    let dir = PathBuf::from(std::env::var(CHILD_DIR).unwrap());
    let (o, _) = case(&std::env::var(CHILD_CASE).unwrap());
    let db = open(&dir.join("db"), o).unwrap();
    println!("opened");
    let mut w = db.worker().unwrap();
    let mut i = 0u64;
    while !dir.join("pause").exists() {
        run_txn_durable(&mut w, i).unwrap();
        i += 1;
        println!("acked {i}");
    }
    println!("paused {i}");
    // Hold the database open, committing nothing, until killed.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

struct Writer {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Writer {
    fn start(dir: &Path, case: &str) -> Writer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "integration::lock::child_writer",
                "--exact",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, dir)
            .env(CHILD_CASE, case)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Writer { child, out }
    }

    /// Read the child's lines until one starts with `word`; the number after it.
    fn until(&mut self, word: &str, at_least: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut line = String::new();
        loop {
            assert!(Instant::now() < deadline, "the writer did not say {word}");
            line.clear();
            let n = self.out.read_line(&mut line).unwrap();
            assert!(n > 0, "the writer exited: {:?}", self.child.try_wait());
            if let Some(rest) = line.trim().strip_prefix(word) {
                let v = rest.trim().parse::<u64>().unwrap_or(0);
                if v >= at_least {
                    return v;
                }
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole story for one device kind (see the module doc).
fn one_writer(name: &str) {
    let (o, base) = case(name);
    let tmp = tempfile::tempdir_in(base).unwrap();
    let db_dir = tmp.path().join("db");
    let mut w = Writer::start(tmp.path(), name);
    let acked = w.until("acked", 20);
    let pid = w.child.id();

    // A second writer, here: refused at once, naming the child, writing nothing.
    match open(&db_dir, o.clone()) {
        Err(EngineError::InUse { dir, holder }) => {
            assert_eq!(dir, db_dir);
            // Named where the kernel's list of locks shows it (see braid_pmem::lock).
            assert!(
                holder.is_none_or(|h| h == pid),
                "{name}: {holder:?} named, not {pid}"
            );
        }
        other => panic!("{name}: a second writer was not refused: {other:?}"),
    }
    assert!(
        (0..20).any(|_| Db::writer_pid(&db_dir) == Some(pid)),
        "{name}: the writer's pid is never named"
    );
    assert!(matches!(
        Db::destroy(&db_dir),
        Err(EngineError::InUse { .. })
    ));

    // Read-only while it commits: a prefix holding at least what was acknowledged before.
    for _ in 0..2 {
        let before = w.until("acked", 0);
        let db = open_read_only(&db_dir, o.clone());
        let p = prefix(&db) as u64;
        assert!(
            p >= before,
            "{name}: read {p} transactions, {before} were acknowledged"
        );
        let mut wk = db.worker().unwrap();
        assert!(matches!(run_txn(&mut wk, p), Err(TxError::ReadOnly)));
        assert!(matches!(db.checkpoint(), Err(EngineError::ReadOnly { .. })));
    }

    // Paused: read-only sees exactly what was acknowledged.
    std::fs::write(tmp.path().join("pause"), b"").unwrap();
    let paused = w.until("paused", acked);
    let db = open_read_only(&db_dir, o.clone());
    assert_eq!(
        prefix(&db) as u64,
        paused,
        "{name}: read-only after the pause"
    );
    drop(db);

    // kill -9: the kernel drops the lock. With no writer left (a paused writer's background
    // threads, de-staging or backing up, still write), read-only changes no byte, and a
    // writer opening again finds every acknowledged commit.
    drop(w);
    let mut places = vec![db_dir.clone()];
    places.extend(outside(&db_dir));
    if name == "nvdisk" {
        assert_eq!(
            places.len(),
            2,
            "nvdisk on the disk keeps its log in /dev/shm"
        );
        assert!(places[1].starts_with("/dev/shm/braid-nvdisk"));
    }
    let sums = checksums(&places);
    let db = open_read_only(&db_dir, o.clone());
    assert_eq!(
        prefix(&db) as u64,
        paused,
        "{name}: read-only after the kill"
    );
    drop(db);
    assert_eq!(checksums(&places), sums, "{name}: read-only changed files");
    let db = open(&db_dir, o.clone()).unwrap_or_else(|e| panic!("{name}: reopen: {e}"));
    assert_eq!(
        prefix(&db) as u64,
        paused,
        "{name}: acknowledged commits lost"
    );
    drop(db);

    Db::destroy(&db_dir).unwrap();
    for p in &places {
        assert!(!p.exists(), "{name}: {} left behind", p.display());
    }
}

/// The tests that drop and reopen databases take this, so no child process is being forked
/// meanwhile: a forked child shares the parent's open files (and so their locks) until it
/// execs (see `braid_pmem::lock`).
static FORKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_second_writer_process_is_refused_and_nothing_is_lost() {
    let _one = FORKING.lock().unwrap_or_else(|e| e.into_inner());
    for name in CASES {
        one_writer(name);
    }
}

/// In one process too: a second handle is refused while the first is open (the message says
/// it is this process), and the database opens again once the first is dropped.
#[test]
fn a_second_handle_in_this_process_is_refused_until_the_first_is_dropped() {
    let _one = FORKING.lock().unwrap_or_else(|e| e.into_inner());
    for name in CASES {
        let (o, base) = case(name);
        let tmp = tempfile::tempdir_in(base).unwrap();
        let dir = tmp.path().join("db");
        let db = open(&dir, o.clone()).unwrap();
        let mut w = db.worker().unwrap();
        for i in 0..5 {
            run_txn_durable(&mut w, i).unwrap();
        }
        drop(w);
        match open(&dir, o.clone()) {
            Err(e @ EngineError::InUse { .. }) => {
                let text = e.to_string();
                assert!(text.contains("this process"), "{name}: {text}");
            }
            other => panic!("{name}: a second handle was not refused: {other:?}"),
        }
        drop(db);
        let db = open(&dir, o).unwrap();
        assert_eq!(prefix(&db), 5);
        drop(db);
        Db::destroy(&dir).unwrap();
    }
}

/// Read-only opening creates nothing: not the database, not a lock file.
#[test]
fn read_only_refuses_what_is_not_a_database_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("absent");
    let (o, _) = case("serial-file");
    let r = Db::builder(&dir)
        .options(o.clone())
        .catalog(catalog())
        .loader(load)
        .open_read_only();
    assert!(matches!(r, Err(EngineError::NotADatabase { .. })));
    assert!(!dir.exists());
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    let r = open(&dir, o);
    assert!(matches!(r, Err(EngineError::NotADatabase { .. })));
    assert!(matches!(
        Db::destroy(&dir),
        Err(EngineError::NotADatabase { .. })
    ));
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(names.len(), 1, "only the user's file is there");
}
