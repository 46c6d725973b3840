//! Disk full and I/O errors end to end through `Db`, on a `FaultFs` (docs/design.md invariants 1, 2
//! and 7; the `NoSpace` and poisoning rules of `braid_wal::stream`).
//!
//! * ENOSPC mid-run: once the log needs a segment the file system has no room for, commits
//!   fail with `WalError::NoSpace` (a clear, typed error), reads go on, and once space returns
//!   (the space limit is lifted) commits succeed again; a crash afterwards recovers every
//!   acknowledged commit.
//! * EIO on fdatasync (once, and sticky): the stream is poisoned, every later commit fails
//!   with `WalError::Poisoned` naming the cause (also once the fault is gone), and a crash then
//!   recovery keeps every commit acknowledged before the failure and takes new commits.
//!
//! For the serial, taurus and gsn schemes on the file device, and on the pmem device with
//! de-staging to files (4 KiB de-staged segments). There the ring, not the files, is the
//! log: a failed de-staging write or fdatasync stops the ring from draining, so commits fail
//! (`NoSpace`, or the I/O error naming the de-staged file) only once the ring is full, and
//! the failed fdatasync stays latched until the database is reopened.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::integration::common::*;
use braid_engine::testing::SimPmem;
use braid_engine::*;
use braid_pmem::CrashMode;
use braid_wal::WalError;
use braid_wal::fs::{CrashOpts, FaultFs, SyncFault};

/// Commit transaction `i` and wait for it: `Ok(true)` acknowledged, `Ok(false)` installed
/// but not acknowledged, `Err` not installed.
fn commit_and_wait(ws: &mut [Worker; 2], i: u64, h: &mut History) -> Result<bool, (bool, TxError)> {
    let t = run_txn(&mut ws[(i % 2) as usize], i).map_err(|e| (false, e))?;
    h.installed.push(i);
    let pos = h.installed.len() - 1;
    match t.wait() {
        Ok(()) => {
            h.acked.push(pos);
            Ok(true)
        }
        Err(e) => Err((true, TxError::Log(e))),
    }
}

/// Where the log lives: files on a `FaultFs`, or simulated pmem rings de-staged to it.
struct Rig {
    scheme: &'static str,
    fs: FaultFs,
    sim: Option<SimPmem>,
}

impl Rig {
    fn new(scheme: &'static str, pmem: bool) -> Rig {
        Rig {
            scheme,
            fs: FaultFs::new(),
            sim: pmem.then(SimPmem::new),
        }
    }

    fn options(&self) -> Options {
        match &self.sim {
            None => options(self.scheme, file_device(), file_env(&self.fs)),
            Some(sim) => options(self.scheme, pmem_device(true), pmem_env(&self.fs, sim)),
        }
    }

    fn open(&self) -> Db {
        open(Path::new("/db"), self.options()).unwrap()
    }

    /// The machine after a power failure now (unsynced and unpersisted data lost).
    fn crash(&self) -> Rig {
        Rig {
            scheme: self.scheme,
            fs: self.fs.crash(CrashOpts::drop_unsynced()),
            sim: self
                .sim
                .as_ref()
                .map(|s| s.crash(|_| CrashMode::DropUnpersisted).unwrap()),
        }
    }

    /// Where the log's files are: the segments, or the de-staged files behind the rings.
    fn log_files(&self) -> &'static str {
        if self.sim.is_some() {
            "/db/destage/"
        } else {
            "/db/log/"
        }
    }

    fn name(&self) -> String {
        let dev = if self.sim.is_some() {
            "pmem+destage"
        } else {
            "file"
        };
        format!("{} on {dev}", self.scheme)
    }
}

/// Crash the rig and check the recovered database against `h`.
fn crash_and_check(rig: &Rig, h: &History) -> usize {
    let db = rig.crash().open();
    let p = check(&db, h).unwrap_or_else(|e| panic!("{}: {e}", rig.name()));
    db.close().unwrap();
    p
}

fn is_out_of_space(e: &TxError) -> bool {
    matches!(
        e,
        TxError::Log(WalError::NoSpace { .. } | WalError::LogFull { .. })
    )
}

fn enospc_run(scheme: &'static str, pmem: bool) {
    let rig = Rig::new(scheme, pmem);
    let name = rig.name();
    let db = rig.open();
    let mut h = History::default();
    run_clean(&db, 0, 10, &mut h, &mut |_| {});
    // No room for another byte: the log fails once it needs its next segment file.
    let fs = &rig.fs;
    fs.set_space_limit(Some(fs.used_space()));
    let mut ws = [db.worker().unwrap(), db.worker().unwrap()];
    let mut i = 10;
    let err = loop {
        assert!(i < 3000, "{name}: the log never ran out of space");
        match commit_and_wait(&mut ws, i, &mut h) {
            Ok(_) => i += 1,
            Err((_, e)) => break e,
        }
    };
    i += 1;
    assert!(is_out_of_space(&err), "{name}: {err}");
    assert!(
        err.to_string().contains("out of space") || err.to_string().contains("is full"),
        "{name}: {err}"
    );
    assert!(fs.stats().enospc > 0, "{name}");
    // Reads go on, in memory and in transactions.
    assert_eq!(state(&db).0[0] as usize, h.installed.len());
    let mut t = ws[0].begin();
    assert_eq!(
        t.get::<u64>(CTR, 0, 0).unwrap(),
        Some(h.installed.len() as u64)
    );
    t.abort();
    // While the disk is full, commits keep failing with a typed error.
    for _ in 0..3 {
        match commit_and_wait(&mut ws, i, &mut h) {
            Ok(_) => panic!("{name}: a commit was acknowledged on a full disk"),
            Err((_, e)) => assert!(is_out_of_space(&e), "{name}: {e}"),
        }
        i += 1;
    }
    // Space returns: writing resumes (the flusher or de-stager retries with back-off).
    fs.set_space_limit(None);
    // A generous deadline: the tests share the machine with each other and with builds.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut resumed = 0;
    while resumed < 5 {
        assert!(
            Instant::now() < deadline,
            "{name}: writing did not resume after space returned"
        );
        match commit_and_wait(&mut ws, i, &mut h) {
            Ok(_) => resumed += 1,
            Err((_, e)) => {
                assert!(is_out_of_space(&e), "{name}: {e}");
                // Polling: give the flusher's back-off a moment before the next attempt.
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        i += 1;
    }
    drop(ws);
    // Everything acknowledged survives a crash; so does a clean close and reopen.
    crash_and_check(&rig, &h);
    db.close().unwrap();
    drop(db);
    let db = rig.open();
    check(&db, &h).unwrap_or_else(|e| panic!("{name}: {e}"));
    db.close().unwrap();
}

#[test]
fn enospc_fails_commits_then_resumes_serial() {
    enospc_run("serial", false);
    enospc_run("serial", true);
}

#[test]
fn enospc_fails_commits_then_resumes_taurus() {
    enospc_run("taurus", false);
    enospc_run("taurus", true);
}

#[test]
fn enospc_fails_commits_then_resumes_gsn() {
    enospc_run("gsn", false);
    enospc_run("gsn", true);
}

fn eio_run(scheme: &'static str, pmem: bool, sticky: bool) {
    let rig = Rig::new(scheme, pmem);
    let name = rig.name();
    let db = rig.open();
    let mut h = History::default();
    run_clean(&db, 0, 8, &mut h, &mut |_| {});
    let fs = &rig.fs;
    let mut fault = SyncFault::next().on_paths(rig.log_files());
    if sticky {
        fault = fault.sticky();
    }
    fs.inject_sync_fault(fault);
    let mut ws = [db.worker().unwrap(), db.worker().unwrap()];
    let mut i = 8;
    let first = loop {
        assert!(
            i < 3000,
            "{name}: the injected fsync failure never surfaced"
        );
        match commit_and_wait(&mut ws, i, &mut h) {
            Ok(_) => i += 1,
            Err((_, e)) => break e,
        }
    };
    i += 1;
    assert!(fs.stats().failed_syncs >= 1, "{name}");
    let msg = first.to_string();
    if pmem {
        // The rings stay the durable log: commits fail only once a ring is full and cannot
        // drain into the failed files, and then they say why.
        assert!(
            msg.contains("Input/output error") && msg.contains("/db/destage/"),
            "{name}: {msg}"
        );
    } else {
        assert!(
            matches!(first, TxError::Log(WalError::Poisoned { .. })),
            "{name}: {msg}"
        );
    }
    if pmem {
        // The other ring may still have room: run until every ring is full.
        let mut failed_in_a_row = 0;
        while failed_in_a_row < 10 {
            assert!(i < 5000, "{name}: the rings never filled");
            match commit_and_wait(&mut ws, i, &mut h) {
                Ok(_) => failed_in_a_row = 0,
                Err((_, e)) => {
                    assert!(e.to_string().contains("Input/output error"), "{name}: {e}");
                    failed_in_a_row += 1;
                }
            }
            i += 1;
        }
    }
    // The store refuses later commits, saying why, even though the fault is gone: a failed
    // fdatasync of the log is never retried (the page cache may have dropped the data). (A
    // de-staging round whose failed fdatasync was that of a new segment's header removes the
    // segment and may succeed later, so pmem rings are not checked here.)
    fs.clear_sync_fault();
    for _ in 0..if pmem { 0 } else { 10 } {
        match commit_and_wait(&mut ws, i, &mut h) {
            Ok(_) => panic!("{name}: a commit was acknowledged after a failed fsync"),
            Err((_, e)) => {
                let m = e.to_string();
                assert!(
                    matches!(e, TxError::Log(WalError::Poisoned { .. })),
                    "{name}: {m}"
                );
                assert!(
                    m.contains("poisoned") && m.contains("reopen"),
                    "{name}: {m}"
                );
            }
        }
        i += 1;
    }
    // Reads still work.
    assert_eq!(state(&db).0[0] as usize, h.installed.len());
    drop(ws);
    let _ = db.close();
    drop(db);
    // Reopening recovers everything acknowledged, and the store takes commits again.
    let rig2 = rig.crash();
    let db = rig2.open();
    let p = check(&db, &h).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut w = db.worker().unwrap();
    run_txn_durable(&mut w, 10_000).unwrap();
    drop(w);
    db.close().unwrap();
    assert!(p >= h.must_keep());
}

#[test]
fn eio_on_fsync_poisons_serial() {
    eio_run("serial", false, false);
    eio_run("serial", false, true);
    eio_run("serial", true, true);
}

#[test]
fn eio_on_fsync_poisons_taurus() {
    eio_run("taurus", false, false);
    eio_run("taurus", false, true);
    eio_run("taurus", true, true);
}

#[test]
fn eio_on_fsync_poisons_gsn() {
    eio_run("gsn", false, false);
    eio_run("gsn", false, true);
    eio_run("gsn", true, true);
}
