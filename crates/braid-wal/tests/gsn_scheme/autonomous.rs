//! The autonomous scheme (Nguyen et al., SIGMOD 2025) on gated in-memory logs: a commit that
//! needs a remote flush is acknowledged by the thread that waits for it, with no commit
//! daemon, once the logs its sparse dependency vector names (and its own) are settled, and
//! not while a log it depends on transitively is volatile; the fallback to every log puts a
//! barrier into a log that lags; a local commit is acknowledged by its own log alone;
//! recovery agrees with the acknowledgements, once and again after later work; what it
//! cannot do is refused.

use super::*;
use braid_wal::scheme::{AutonomousConfig, RecoveryReport, SchemeSpec, Storage};
use std::ops::Bound;

fn spec() -> SchemeSpec {
    SchemeSpec::new(AutonomousConfig {
        rows_per_page: 1,
        ..AutonomousConfig::default()
    })
}

fn devices(devs: &[Arc<MemDev>]) -> Vec<Arc<dyn Device>> {
    devs.iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect()
}

fn open_auto(devs: &[Arc<MemDev>], st: &State) -> (Arc<dyn Scheme>, RecoveryReport) {
    spec()
        .open(
            &SchemeConfig::default(),
            Storage::Devices(devices(devs)),
            st,
            &|_| {},
        )
        .unwrap()
}

/// Recover from crash images: what was replayed.
fn recover_images(images: &[Vec<u8>]) -> HashMap<(u32, u64), Vec<u8>> {
    let devs: Vec<Arc<MemDev>> = images.iter().map(|i| MemDev::new(i.clone())).collect();
    let st = State::default();
    let (s, _) = open_auto(&devs, &st);
    s.close().unwrap();
    st.rows.lock().clone()
}

fn row(key: u64, v: u8) -> ((u32, u64), Vec<u8>) {
    ((0, key), vec![v; 4])
}

/// T1 writes key 1 into log 1, whose flushes are held back; T0 reads key 1 and writes key 2
/// into log 0. Log 0 is flushed, but T0 is not acknowledged while T1 is volatile, and a crash
/// then recovers neither. Once log 1's gate opens, T0's own wait acknowledges it (no daemon
/// round runs), and a crash then recovers both.
#[test]
fn a_commit_on_a_held_logs_write_waits_for_that_log_and_settles_itself() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let _gates = OpenGates(&devs);
    let (s, _) = open_auto(&devs, &State::default());
    assert_eq!(s.name(), "autonomous");
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    devs[1].set_gate(false);
    let t1 = txn(&mut *w1, 101, &[], &[1], 1);
    let t0 = txn(&mut *w0, 100, &[1], &[2], 2);
    wait_flushed(&*s, 0);
    assert!(
        !t0.is_durable().unwrap(),
        "T0 acknowledged while T1, which it read, is not durable"
    );
    let crashed: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    assert!(
        recover_images(&crashed).is_empty(),
        "recovered T0 without T1"
    );
    devs[1].set_gate(true);
    t0.wait().unwrap();
    t1.wait().unwrap();
    // (Whether T0's wait ran log 1's flush itself or found the stream's flusher, woken by the
    // check above, had done it is a race: `log_waits` is not asserted.)
    assert_eq!(counter(&*s, "daemon_rounds"), 0, "a commit daemon ran");
    assert_eq!(counter(&*s, "rfa_remote_commits"), 1);
    let crashed: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    let want: HashMap<_, _> = [row(1, 1), row(2, 2)].into_iter().collect();
    assert_eq!(recover_images(&crashed), want);
    drop((w0, w1));
    s.close().unwrap();
}

/// Log 1 commits once and goes idle; log 0 commits on (local commits, its clock runs ahead),
/// then reads log 1's key. That commit depends on log 1 up to the key's GSN only, which log 1
/// already holds: no barrier goes into log 1. A miss over many pages depends on every log
/// (the fallback): a barrier, a clock record stamped with the commit's GSN, goes into the idle
/// log 1, and the commit is acknowledged once log 1 has flushed it, so that recovery's bound
/// reaches it. A read-only transaction of key 1 afterwards needs nothing more.
#[test]
fn a_remote_commit_waits_for_its_dependency_and_a_fallback_puts_a_barrier_into_an_idle_log() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let (s, _) = open_auto(&devs, &State::default());
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    txn(&mut *w1, 1, &[], &[1], 1).wait().unwrap();
    for i in 0..8u8 {
        txn(&mut *w0, 10 + u64::from(i), &[], &[2], i)
            .wait()
            .unwrap();
    }
    txn(&mut *w0, 20, &[1], &[3], 3).wait().unwrap();
    assert_eq!(counter(&*s, "rfa_remote_commits"), 1);
    assert_eq!(counter(&*s, "remote_dep_logs"), 1);
    assert_eq!(
        counter(&*s, "clock_records"),
        0,
        "a barrier for a dependency log 1 already holds"
    );
    txn(&mut *w0, 21, &[1], &[], 0).wait().unwrap();
    assert_eq!(counter(&*s, "rfa_remote_commits"), 1, "{:?}", s.counters());
    w0.on_absent(0, Bound::Included(100), Bound::Included(1000));
    txn(&mut *w0, 22, &[], &[4], 4).wait().unwrap();
    assert_eq!(counter(&*s, "remote_all_logs"), 1);
    assert_eq!(
        counter(&*s, "clock_records"),
        1,
        "no barrier in the idle log"
    );
    let crashed: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    let want: HashMap<_, _> = [row(1, 1), row(2, 7), row(3, 3), row(4, 4)]
        .into_iter()
        .collect();
    assert_eq!(recover_images(&crashed), want);
    drop((w0, w1));
    s.close().unwrap();
}

/// Wait (up to 5 s) for `t` to be durable; false if it is not.
fn durable_soon(t: &braid_wal::scheme::Ticket) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if t.is_durable().unwrap() {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

/// Assert `ok`, opening the gates of `devs` before failing (the scheme's streams, dropped
/// while unwinding, flush).
fn check(devs: &[Arc<MemDev>], ok: bool, what: &str) {
    if !ok {
        for d in devs {
            d.set_gate(true);
        }
        panic!("{what}");
    }
}

/// Three logs, log 2's flushes held back for good. T0 (log 0) reads T1's key (log 1): its
/// sparse vector names log 1 alone, so it is acknowledged once logs 0 and 1 are durable,
/// while T2 in log 2 stays volatile (waiting for every log, it never would be). T1b, after T1
/// in log 1, read T2's key: log 1's settled GSN stops below it, and it is not acknowledged. A
/// crash then loses T2 and recovery keeps T0 although its GSN lies above the bound (log 2
/// holds nothing new), and drops T1b; after new work on every log and a second recovery, T0
/// is still kept: the first recovery's void marker records its decision (a marker that
/// replayed local commits only would drop it).
#[test]
fn a_remote_commit_waits_for_the_logs_it_depends_on_only() {
    let devs = [
        MemDev::new(Vec::new()),
        MemDev::new(Vec::new()),
        MemDev::new(Vec::new()),
    ];
    let _gates = OpenGates(&devs);
    let (s, _) = open_auto(&devs, &State::default());
    let mut w = (0..3).map(|i| s.worker(i).unwrap()).collect::<Vec<_>>();
    devs[2].set_gate(false);
    let t2 = txn(&mut *w[2], 102, &[], &[9], 9);
    let t1 = txn(&mut *w[1], 101, &[], &[1], 1);
    let t1b = txn(&mut *w[1], 103, &[9], &[8], 8);
    let t0 = txn(&mut *w[0], 100, &[1], &[2], 2);
    let ok = durable_soon(&t0);
    check(
        &devs,
        ok,
        "T0 waited for log 2, which it does not depend on",
    );
    let settled = t1b.is_durable().unwrap();
    check(
        &devs,
        !settled,
        "T1b acknowledged: log 1 settled past a commit that depends on the held log 2",
    );
    let (d1, d2) = (t1.is_durable().unwrap(), t2.is_durable().unwrap());
    let crashed: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    devs[2].set_gate(true);
    assert!(d1 && !d2);
    // T0 and T1b needed a remote flush, of one log each.
    assert_eq!(counter(&*s, "rfa_remote_commits"), 2);
    assert_eq!(counter(&*s, "remote_dep_logs"), 2);
    assert_eq!(counter(&*s, "remote_all_logs"), 0);
    t2.wait().unwrap();
    t1b.wait().unwrap();
    drop(w);
    s.close().unwrap();

    let want: HashMap<_, _> = [row(1, 1), row(2, 2)].into_iter().collect();
    let devs: Vec<Arc<MemDev>> = crashed.into_iter().map(MemDev::new).collect();
    let st = State::default();
    let (s, _) = open_auto(&devs, &st);
    assert_eq!(*st.rows.lock(), want);
    let mut w = (0..3).map(|i| s.worker(i).unwrap()).collect::<Vec<_>>();
    for (i, w) in w.iter_mut().enumerate() {
        txn(&mut **w, 200 + i as u64, &[], &[20 + i as u64], 20)
            .wait()
            .unwrap();
    }
    drop(w);
    s.close().unwrap();
    let st = State::default();
    let (s, _) = open_auto(&devs, &st);
    let mut want = want;
    want.extend((0..3).map(|i| row(20 + i, 20)));
    assert_eq!(*st.rows.lock(), want);
    s.close().unwrap();
}

/// A transitive dependency: T2 (log 2, held back for good) writes key 3, T1 (log 1) reads it
/// and writes key 4, T0 (log 0) reads key 4 and writes key 5, then T0b (log 0) writes key 6
/// alone. Logs 0 and 1 are flushed, yet none of T1, T0, T0b is acknowledged: T0 depends on
/// log 1 only, but log 1 is settled up to T1 only once log 2 is, and T0b follows T0 in its
/// log. After a crash that loses log 2 recovery keeps none of them (T1's dependency is lost,
/// T0 names T1's log up to T1, T0b follows T0), and after new work that raises log 2's clock
/// past T2's GSN and a second recovery they stay dead.
#[test]
fn a_commit_whose_dependency_depended_on_a_lost_write_is_dropped() {
    let devs = [
        MemDev::new(Vec::new()),
        MemDev::new(Vec::new()),
        MemDev::new(Vec::new()),
    ];
    let _gates = OpenGates(&devs);
    let (s, _) = open_auto(&devs, &State::default());
    let mut w = (0..3).map(|i| s.worker(i).unwrap()).collect::<Vec<_>>();
    devs[2].set_gate(false);
    let t2 = txn(&mut *w[2], 102, &[], &[3], 3);
    let t1 = txn(&mut *w[1], 101, &[3], &[4], 4);
    let t0 = txn(&mut *w[0], 100, &[4], &[5], 5);
    let t0b = txn(&mut *w[0], 103, &[], &[6], 6);
    wait_flushed(&*s, 0);
    wait_flushed(&*s, 1);
    for (name, t) in [("T1", &t1), ("T0", &t0), ("T0b", &t0b)] {
        let durable = t.is_durable().unwrap();
        check(
            &devs,
            !durable,
            &format!("{name} acknowledged while T2, which it depends on through T1, is volatile"),
        );
    }
    let crashed: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    devs[2].set_gate(true);
    for t in [&t2, &t1, &t0, &t0b] {
        t.wait().unwrap();
    }
    drop(w);
    s.close().unwrap();

    let devs: Vec<Arc<MemDev>> = crashed.into_iter().map(MemDev::new).collect();
    let st = State::default();
    let (s, report) = open_auto(&devs, &st);
    assert!(st.rows.lock().is_empty(), "{:?}", st.rows.lock());
    assert_eq!(report.txns, 0, "{report:?}");
    // New work in every log: log 2's clock passes T2's lost GSN.
    let mut w = (0..3).map(|i| s.worker(i).unwrap()).collect::<Vec<_>>();
    for round in 0..3u64 {
        for (i, w) in w.iter_mut().enumerate() {
            txn(
                &mut **w,
                200 + 10 * round + i as u64,
                &[],
                &[20 + i as u64],
                20,
            )
            .wait()
            .unwrap();
        }
    }
    drop(w);
    s.close().unwrap();
    let st = State::default();
    let (s, _) = open_auto(&devs, &st);
    let want: HashMap<_, _> = (0..3).map(|i| row(20 + i, 20)).collect();
    assert_eq!(*st.rows.lock(), want);
    s.close().unwrap();
}

/// A commit that touched only its own log's rows is acknowledged by that log's flush while
/// the other log's flushes are held back for good, and recovery keeps it.
#[test]
fn a_local_commit_needs_its_own_log_only() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let _gates = OpenGates(&devs);
    let (s, _) = open_auto(&devs, &State::default());
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    devs[1].set_gate(false);
    let t1 = txn(&mut *w1, 101, &[], &[1], 1);
    let t0 = txn(&mut *w0, 100, &[], &[2], 2);
    t0.wait().unwrap();
    assert!(!t1.is_durable().unwrap());
    let crashed: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    let want: HashMap<_, _> = [row(2, 2)].into_iter().collect();
    assert_eq!(recover_images(&crashed), want);
    devs[1].set_gate(true);
    t1.wait().unwrap();
    drop((w0, w1));
    s.close().unwrap();
}

/// A log's settled GSN follows its flushes while its worker commits, not only when someone
/// waits for it: T1 (log 1) writes key 1 and is acknowledged by log 1's own flush; T1b, its
/// next commit, finds T1 durable on insert and settles log 1 past it. T0 (log 0) then reads key
/// 1 and needs no remote flush (before settled GSNs advanced on insert, log 1's stayed at 0
/// and T0 depended on it).
#[test]
fn a_flushed_write_is_settled_by_its_logs_next_insert_and_makes_no_dependency() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let _gates = OpenGates(&devs);
    let (s, _) = open_auto(&devs, &State::default());
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    txn(&mut *w1, 101, &[], &[1], 1).wait().unwrap();
    txn(&mut *w1, 102, &[], &[3], 3).wait().unwrap();
    txn(&mut *w0, 100, &[1], &[2], 2).wait().unwrap();
    assert_eq!(
        counter(&*s, "rfa_remote_commits"),
        0,
        "a read of a write whose log was flushed and has inserted since made a dependency"
    );
    drop((w0, w1));
    s.close().unwrap();
}

/// Persistent-memory logs are refused, saying why (command logging is accepted: `command.rs`).
#[test]
fn pmem_logs_are_refused() {
    let region = Region::anonymous((1 << 20) + braid_pmem::HEADER_SIZE);
    let pmem: Arc<dyn Device> =
        Arc::new(PmemDevice::open(region, PmemDeviceConfig::new(0)).unwrap());
    let e = spec()
        .open(
            &SchemeConfig::default(),
            Storage::Devices(vec![pmem]),
            &State::default(),
            &|_| {},
        )
        .err()
        .expect("pmem refused");
    assert!(
        matches!(
            e,
            WalError::Unsupported(braid_wal::Unsupported::Scheme {
                scheme: "autonomous",
                refused: braid_wal::Refused::Pmem,
                ..
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("use a file device"), "{e}");
}
