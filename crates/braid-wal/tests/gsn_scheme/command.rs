//! The autonomous scheme under command logging: commit records carry a stored procedure's
//! call, a writer takes its GSN above the read GSNs of the pages it overwrites
//! (write-after-read, `gsn/reads.rs`), and recovery re-executes the live commits, each log in
//! GSN order and a commit once the other logs are replayed up to its replay floor
//! (`gsn/reexec.rs`), which gives the state of the original order.

use super::*;
use braid_wal::scheme::{AutonomousConfig, SchemeSpec, Storage, Ticket};

/// A tiny stored procedure for the tests: `dst u64, src u64, add u8` sets row `dst` to row
/// `src` plus `add` (`src` = `u64::MAX`: to `add`). Replayed into key -> value.
#[derive(Default)]
struct Procs {
    rows: Mutex<HashMap<u64, u8>>,
    txns: Mutex<Vec<u64>>,
    /// `(a, b)`: the replay of transaction `a` waits (up to 10 s) until transaction `b` is
    /// replayed, and fails if it is not.
    hold: Option<(u64, u64)>,
}

impl Replay for Procs {
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        assert_eq!(kind, LogKind::Command);
        assert_eq!(payload.len(), 17, "a call");
        if let Some((a, b)) = self.hold
            && a == txn
        {
            let until = Instant::now() + Duration::from_secs(10);
            while !self.txns.lock().contains(&b) {
                if Instant::now() > until {
                    return Err(format!("transaction {b} was not replayed beside {a}").into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let word = |at: usize| u64::from_le_bytes(payload[at..at + 8].try_into().unwrap());
        let (dst, src) = (word(0), word(8));
        let mut rows = self.rows.lock();
        let base = if src == u64::MAX {
            0
        } else {
            rows.get(&src).copied().unwrap_or(0)
        };
        rows.insert(dst, base.wrapping_add(payload[16]));
        self.txns.lock().push(txn);
        Ok(())
    }
}

fn command_cfg() -> SchemeConfig {
    SchemeConfig {
        logging: LogKind::Command,
        ..SchemeConfig::default()
    }
}

fn open_cmd(devs: &[Arc<MemDev>], st: &Procs) -> Arc<dyn Scheme> {
    open_cmd_with(devs, st, 0)
}

/// [`open_cmd`] with `apply_threads` threads re-executing (0: the recovery threads, 1).
fn open_cmd_with(devs: &[Arc<MemDev>], st: &Procs, apply_threads: usize) -> Arc<dyn Scheme> {
    let devices: Vec<Arc<dyn Device>> = devs
        .iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect();
    SchemeSpec::new(AutonomousConfig {
        rows_per_page: 1,
        apply_threads,
        ..AutonomousConfig::default()
    })
    .open(&command_cfg(), Storage::Devices(devices), st, &|_| {})
    .unwrap()
    .0
}

/// Run procedure `dst := src + add` as transaction `id` on `w`, as the engine would: the read
/// of `src`, the write of `dst`, then the commit of the call.
fn call(w: &mut dyn SchemeWorker, id: u64, dst: u64, src: Option<u64>, add: u8) -> Ticket {
    if let Some(k) = src {
        w.on_read(RowRef::new(0, k));
    }
    w.on_write(RowRef::new(0, dst));
    let mut payload = Vec::new();
    payload.extend_from_slice(&dst.to_le_bytes());
    payload.extend_from_slice(&src.unwrap_or(u64::MAX).to_le_bytes());
    payload.push(add);
    w.commit(&CommitRequest {
        txn: id,
        kind: LogKind::Command,
        payload: &payload,
        read_only: false,
        epoch: 0,
        writes: &[],
        rows: &NoRows,
        updates: 0,
    })
    .unwrap()
}

/// Recover `images` under command logging: the rows re-executed and the order of the calls.
fn recover(images: &[Vec<u8>]) -> (HashMap<u64, u8>, Vec<u64>) {
    let devs: Vec<Arc<MemDev>> = images.iter().map(|i| MemDev::new(i.clone())).collect();
    let st = Procs::default();
    let s = open_cmd(&devs, &st);
    s.close().unwrap();
    let rows = st.rows.lock().clone();
    let txns = st.txns.lock().clone();
    (rows, txns)
}

/// Write-after-read: T1 (worker 0, whose log's clock ran ahead) reads x and writes y := x + 1;
/// T2 (worker 1) then overwrites x. T2's page clocks alone would give it a GSN below T1's, and
/// re-executing T2 first would make y 21; the read GSN T1 left on x orders T2 after it, and
/// recovery gives the original y = 11, x = 20. Recovering the recovered logs again (after
/// the void marker and more work) still does.
#[test]
fn a_write_after_read_pair_is_re_executed_in_its_original_order() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let s = open_cmd(&devs, &Procs::default());
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    const X: u64 = 1;
    const Y: u64 = 2;
    call(&mut *w0, 100, X, None, 10).wait().unwrap();
    // Worker 0's GSN runs ahead of x's page clock.
    for i in 0..5u8 {
        call(&mut *w0, 101 + u64::from(i), 10 + u64::from(i), None, i)
            .wait()
            .unwrap();
    }
    let t1 = call(&mut *w0, 200, Y, Some(X), 1);
    let t2 = call(&mut *w1, 201, X, None, 20);
    t1.wait().unwrap();
    t2.wait().unwrap();
    drop((w0, w1));
    s.close().unwrap();
    let images: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    let (rows, txns) = recover(&images);
    assert_eq!(rows.get(&X), Some(&20), "{rows:?}");
    assert_eq!(
        rows.get(&Y),
        Some(&11),
        "re-executed out of order: {txns:?}"
    );
    let at = |t: u64| txns.iter().position(|&x| x == t).unwrap();
    assert!(at(200) < at(201), "{txns:?}");
    assert_eq!(rows.len(), 7, "{rows:?}");

    // Again from the recovered logs, after more work: the same decisions.
    let devs: Vec<Arc<MemDev>> = images.into_iter().map(MemDev::new).collect();
    let st = Procs::default();
    let s = open_cmd(&devs, &st);
    assert_eq!(st.rows.lock().get(&Y), Some(&11));
    let mut w = s.worker(0).unwrap();
    call(&mut *w, 300, 3, Some(Y), 1).wait().unwrap();
    drop(w);
    s.close().unwrap();
    let images: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    let (rows, _) = recover(&images);
    assert_eq!(
        (rows.get(&Y), rows.get(&3)),
        (Some(&11), Some(&12)),
        "{rows:?}"
    );
}

/// Chains of calls across four logs (each call reads a row another log may have written last,
/// and overwrites one others read), committed one after another: re-executed by four threads
/// and by one, recovery gives the state the calls left, whatever order the threads find.
/// Re-executing any call before one it read from, overwrote or overwrote a read of changes a
/// row (every call adds to what it copies).
#[test]
fn four_threads_re_execute_chains_across_logs_to_the_original_state() {
    let devs: Vec<Arc<MemDev>> = (0..4).map(|_| MemDev::new(Vec::new())).collect();
    let s = open_cmd(&devs, &Procs::default());
    let mut ws: Vec<_> = (0..4).map(|i| s.worker(i).unwrap()).collect();
    let mut model: HashMap<u64, u8> = HashMap::new();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for id in 0..600u64 {
        let w = (next() % 4) as usize;
        // Six hot rows shared by every log, and rows of the worker's own.
        let row = |r: u64| {
            if r.is_multiple_of(3) {
                100 + w as u64 * 10 + r % 7
            } else {
                r % 6
            }
        };
        let (dst, src) = (row(next()), row(next()));
        let src = (next() % 5 != 0).then_some(src);
        let add = (next() % 200) as u8 + 1;
        call(&mut *ws[w], 1000 + id, dst, src, add).wait().unwrap();
        let base = src.map_or(0, |k| model.get(&k).copied().unwrap_or(0));
        model.insert(dst, base.wrapping_add(add));
    }
    drop(ws);
    s.close().unwrap();
    let images: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    for threads in [4, 1] {
        for round in 0..3 {
            let devs: Vec<Arc<MemDev>> = images.iter().map(|i| MemDev::new(i.clone())).collect();
            let st = Procs::default();
            let s = open_cmd_with(&devs, &st, threads);
            s.close().unwrap();
            assert_eq!(
                *st.rows.lock(),
                model,
                "{threads} threads, round {round}: re-executed out of order: {:?}",
                st.txns.lock()
            );
        }
    }
}

/// Two logs whose calls touch different rows: the second log's call (a higher GSN, its log's
/// clock having run ahead) is re-executed while the first log's (lower GSN) is still running,
/// which a replay in GSN order cannot do: the first call's replay waits for the second's.
#[test]
fn calls_of_independent_logs_re_execute_at_once() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let s = open_cmd(&devs, &Procs::default());
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    for i in 0..3u64 {
        call(&mut *w1, 10 + i, 10 + i, None, 1).wait().unwrap();
    }
    call(&mut *w0, 1, 1, None, 5).wait().unwrap();
    call(&mut *w1, 2, 2, None, 7).wait().unwrap();
    drop((w0, w1));
    s.close().unwrap();
    let images: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    let devs: Vec<Arc<MemDev>> = images.iter().map(|i| MemDev::new(i.clone())).collect();
    let st = Procs {
        hold: Some((1, 2)),
        ..Procs::default()
    };
    let s = open_cmd_with(&devs, &st, 2);
    s.close().unwrap();
    let txns = st.txns.lock().clone();
    assert_eq!(txns.last(), Some(&1), "{txns:?}");
    let rows = st.rows.lock().clone();
    assert_eq!(
        (rows.get(&1), rows.get(&2)),
        (Some(&5), Some(&7)),
        "{rows:?}"
    );
}

/// Data logging keeps no read GSNs, and a command commit is refused there; a hot standby of
/// command logs is refused, saying why.
#[test]
fn data_logging_refuses_command_commits_and_a_standby_refuses_command_logs() {
    let devs = [MemDev::new(Vec::new())];
    let devices: Vec<Arc<dyn Device>> = vec![Arc::clone(&devs[0]) as Arc<dyn Device>];
    let spec = SchemeSpec::new(AutonomousConfig::default());
    let (s, _) = spec
        .open(
            &SchemeConfig::default(),
            Storage::Devices(devices),
            &State::default(),
            &|_| {},
        )
        .unwrap();
    let mut w = s.worker(0).unwrap();
    w.on_write(RowRef::new(0, 1));
    let e = w
        .commit(&CommitRequest {
            txn: 1,
            kind: LogKind::Command,
            payload: &[0; 17],
            read_only: false,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates: 0,
        })
        .expect_err("a command commit under data logging is refused");
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
    drop(w);
    s.close().unwrap();
    let e = spec
        .follower(&command_cfg(), 1)
        .err()
        .expect("a standby of command logs is refused");
    assert!(e.to_string().contains("standby"), "{e}");
}
