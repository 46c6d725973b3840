//! The autonomous scheme (Nguyen et al., SIGMOD 2025) on gated in-memory logs: a commit that
//! needs a remote flush is acknowledged by the thread that waits for it, with no commit
//! daemon, only once every log is durable up to its GSN; a log that lags gets a barrier; a
//! local commit is acknowledged by its own log alone; recovery agrees with the
//! acknowledgements; what it cannot do is refused.

use super::*;
use braid_wal::scheme::{AutonomousConfig, RecoveryReport, SchemeSpec, Storage};

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
/// then reads log 1's key. That commit needs a remote flush above log 1's clock: a barrier
/// (clock record) goes into log 1, and the commit is acknowledged once log 1 has flushed it,
/// so that recovery's bound reaches the commit. A read-only transaction of the same key after
/// it needs nothing more.
#[test]
fn a_remote_commit_above_an_idle_logs_clock_puts_a_barrier_into_it() {
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
    assert_eq!(counter(&*s, "clock_records"), 0);
    txn(&mut *w0, 20, &[1], &[3], 3).wait().unwrap();
    assert_eq!(
        counter(&*s, "clock_records"),
        1,
        "no barrier in the idle log"
    );
    assert_eq!(counter(&*s, "rfa_remote_commits"), 1);
    txn(&mut *w0, 21, &[1], &[], 0).wait().unwrap();
    assert_eq!(counter(&*s, "rfa_remote_commits"), 1, "{:?}", s.counters());
    let crashed: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    let want: HashMap<_, _> = [row(1, 1), row(2, 7), row(3, 3)].into_iter().collect();
    assert_eq!(recover_images(&crashed), want);
    drop((w0, w1));
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

/// Command logging and persistent-memory logs are refused, saying why.
#[test]
fn command_logging_and_pmem_logs_are_refused() {
    let cmd = SchemeConfig {
        logging: LogKind::Command,
        ..SchemeConfig::default()
    };
    let devs = [MemDev::new(Vec::new())];
    let e = spec()
        .open(
            &cmd,
            Storage::Devices(devices(&devs)),
            &State::default(),
            &|_| {},
        )
        .err()
        .expect("command logging refused");
    assert!(
        matches!(
            e,
            WalError::Unsupported(braid_wal::Unsupported::Scheme {
                refused: braid_wal::Refused::CommandLogging,
                ..
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("use data logging"), "{e}");
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
