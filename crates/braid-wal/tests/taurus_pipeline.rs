//! Pipelined Taurus recovery (`scheme::taurus::recovery`): replay runs while the streams are
//! still being read, and applies exactly what the cut of the whole log keeps.
//!
//! * A stream whose reads block until the test sees a record applied: recovery must apply a
//!   record of the other stream first (a recovery that reads everything before replaying
//!   fails the test at its timeout instead of hanging).
//! * A property over random hand-written multi-stream logs (random dependencies, torn tails,
//!   records dropped by the cut; tiny batches so that admission runs many times): the set
//!   applied equals the records below the cut computed on the whole log (the non-pipelined
//!   algorithm, written out here), the restart points equal that cut, and every record
//!   finished replaying before any record depending on it started.
//! * Corruption in the middle of a stream: recovery fails with the error a scan of that
//!   stream alone gives (the first damaged stream's), and nothing at or after the damage is
//!   applied.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use braid_wal::device::{Device, DeviceInfo};
use braid_wal::record::{ALIGN, FLAG_COMMIT, Kind, RecordSpec, Stamp};
use braid_wal::scan::{ScanMode, Scanner, StreamSource};
use braid_wal::scheme::taurus::recovery::{BATCH_BITS, SAMPLE};
use braid_wal::scheme::taurus::{TaurusConfig, open_taurus};
use braid_wal::scheme::{LogKind, RecoveryPlan, Replay, ReplayError, SchemeConfig};
use braid_wal::{Lsn, WalError};
use parking_lot::{Condvar, Mutex};
use proptest::prelude::*;

const SALT: u32 = 0x5eed_1234;
/// The longest the blocking test waits for a record to be applied.
const WAIT: Duration = Duration::from_secs(10);

/// Reads of a gated device block until the gate opens (at most a minute, so a broken test
/// ends).
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn pass(&self) {
        let mut g = self.open.lock();
        if !*g {
            let _ = self
                .cv
                .wait_while_for(&mut g, |o| !*o, Duration::from_secs(60));
        }
    }
    fn open(&self) {
        *self.open.lock() = true;
        self.cv.notify_all();
    }
}

/// A stream held in memory, starting at LSN 0.
struct MemDevice {
    bytes: Mutex<Vec<u8>>,
    gate: Option<Arc<Gate>>,
}

impl StreamSource for MemDevice {
    fn start(&self) -> Lsn {
        0
    }
    fn limit(&self) -> Lsn {
        self.bytes.lock().len() as Lsn
    }
    fn sealed(&self) -> Lsn {
        0
    }
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        if let Some(g) = &self.gate {
            g.pass();
        }
        let b = self.bytes.lock();
        let at = (lsn as usize).min(b.len());
        let k = buf.len().min(b.len() - at);
        buf[..k].copy_from_slice(&b[at..at + k]);
        Ok(k)
    }
    fn salt_for(&self, _lsn: Lsn) -> u32 {
        SALT
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        ("mem".into(), lsn)
    }
}

impl Device for MemDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "mem",
            location: String::new(),
            emulation: Some("memory (test)".into()),
        }
    }
    fn capacity(&self) -> u64 {
        1 << 40
    }
    fn reusable(&self) -> Lsn {
        0
    }
    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        let mut b = self.bytes.lock();
        let end = lsn as usize + bytes.len();
        if b.len() < end {
            b.resize(end, 0);
        }
        b[lsn as usize..end].copy_from_slice(bytes);
    }
    fn durable_on_fill(&self) -> bool {
        true
    }
    fn flush(&self, _from: Lsn, _to: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn ensure_space(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        self.bytes.lock().truncate(end as usize);
        Ok(())
    }
    fn release(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
}

/// One transaction record of a hand-written log.
#[derive(Debug, Clone)]
struct MRec {
    txn: u64,
    start: Lsn,
    end: Lsn,
    lv: Vec<u64>,
}

/// A hand-written log: per stream its bytes and records.
struct Log {
    bytes: Vec<Vec<u8>>,
    recs: Vec<Vec<MRec>>,
}

/// Build a log of `n` streams from `txns`: (stream, per stream `k`: depend on the `k`-th most
/// recent record of that stream written so far, 0 for none). `synced(s, i)` is the durable
/// LSN record `i` of stream `s` claims.
fn build(n: usize, txns: &[(usize, Vec<u8>)], synced: impl Fn(usize, usize) -> Lsn) -> Log {
    let mut log = Log {
        bytes: vec![Vec::new(); n],
        recs: vec![Vec::new(); n],
    };
    for (t, (s, deps)) in txns.iter().enumerate() {
        let s = s % n;
        let lv: Vec<u64> = (0..n)
            .map(|j| {
                let k = deps.get(j).copied().unwrap_or(0) as usize;
                let r = &log.recs[j];
                if k == 0 || k > r.len() {
                    0
                } else {
                    r[r.len() - k].end
                }
            })
            .collect();
        let txn = t as u64 + 1;
        let payload = txn.to_le_bytes();
        let parts: [&[u8]; 1] = [&payload];
        let stamp = Stamp::Lv(lv.clone());
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: FLAG_COMMIT,
            txn,
            stamp: &stamp,
            payload: &parts,
        };
        let len = spec.unpadded_len().div_ceil(ALIGN) * ALIGN;
        let b = &mut log.bytes[s];
        let start = b.len() as Lsn;
        b.resize(b.len() + len, 0);
        let i = log.recs[s].len();
        spec.encode(start, synced(s, i), SALT, &mut b[start as usize..]);
        log.recs[s].push(MRec {
            txn,
            start,
            end: start + len as Lsn,
            lv,
        });
    }
    log
}

/// The cut of the whole log, as recovery computed it before it was pipelined: per stream the
/// records kept and the cut vector.
fn reference_cut(recs: &[Vec<MRec>], valid_end: &[Lsn]) -> (Vec<usize>, Vec<Lsn>) {
    let mut keep: Vec<usize> = recs
        .iter()
        .zip(valid_end)
        .map(|(r, &e)| r.iter().take_while(|m| m.end <= e).count())
        .collect();
    let mut e = valid_end.to_vec();
    loop {
        let mut changed = false;
        for (s, r) in recs.iter().enumerate() {
            if let Some(k) = (0..keep[s]).find(|&k| r[k].lv.iter().zip(&e).any(|(a, b)| a > b)) {
                keep[s] = k;
                e[s] = r[k].start;
                changed = true;
            }
        }
        if !changed {
            return (keep, e);
        }
    }
}

/// Records what was applied, in what order, and signals each apply.
#[derive(Default)]
struct Recorder {
    seq: AtomicU64,
    /// txn -> (start, end) of its replay.
    spans: Mutex<HashMap<u64, (u64, u64)>>,
    twice: AtomicBool,
    applied: Mutex<usize>,
    cv: Condvar,
}

impl Replay for Recorder {
    fn apply(&self, txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        let a = self.seq.fetch_add(1, Ordering::SeqCst);
        if payload != txn.to_le_bytes() {
            return Err("payload of another transaction".into());
        }
        let b = self.seq.fetch_add(1, Ordering::SeqCst);
        if self.spans.lock().insert(txn, (a, b)).is_some() {
            self.twice.store(true, Ordering::SeqCst);
        }
        *self.applied.lock() += 1;
        self.cv.notify_all();
        Ok(())
    }
}

fn devices(log: &Log, gate: Option<(usize, Arc<Gate>)>) -> Vec<Arc<dyn Device>> {
    log.bytes
        .iter()
        .enumerate()
        .map(|(s, b)| {
            Arc::new(MemDevice {
                bytes: Mutex::new(b.clone()),
                gate: gate
                    .as_ref()
                    .filter(|(g, _)| *g == s)
                    .map(|(_, g)| g.clone()),
            }) as Arc<dyn Device>
        })
        .collect()
}

/// The configuration of one recovery; `bits`: log2 of the records its readers hand over at a
/// time (each recovery has its own, so the tests running beside each other do not change
/// each other's).
fn cfg(threads: usize, plan: RecoveryPlan, bits: u32) -> (SchemeConfig, TaurusConfig) {
    (
        SchemeConfig {
            logging: LogKind::Data,
            recovery_threads: threads,
            recovery_plan: plan,
            ..SchemeConfig::default()
        },
        TaurusConfig {
            recovery_batch_bits: bits,
            ..TaurusConfig::default()
        },
    )
}

#[test]
fn replay_starts_before_a_blocked_stream_is_read() {
    // Stream 0: a chain of its own; stream 1: records depending on stream 0's.
    let log_of = |stream0: usize| {
        let mut txns = Vec::new();
        for i in 0..stream0 {
            txns.push((0, vec![1, 0]));
            if i < 100 {
                txns.push((1, vec![1, 1]));
            }
        }
        build(2, &txns, |_, _| 0)
    };
    let small = log_of(100);
    // The planner of `Auto` with several threads decides on the first SAMPLE admitted
    // records: give it that many without stream 1.
    let large = log_of(SAMPLE + 64);
    for (threads, plan, log) in [
        (1, RecoveryPlan::Auto, &small),
        (2, RecoveryPlan::Serial, &small),
        (2, RecoveryPlan::Parallel, &small),
        (2, RecoveryPlan::Auto, &large),
    ] {
        let total = log.recs.iter().map(Vec::len).sum::<usize>();
        let gate = Arc::new(Gate::default());
        let devs = devices(log, Some((1, gate.clone())));
        let rec = Recorder::default();
        // The default batches: with batches of a few records, the planner's wait for SAMPLE of
        // them is quadratic in the batches published (feed.rs) and can outlast WAIT.
        let (c, tc) = cfg(threads, plan, BATCH_BITS);
        let (early, used) = std::thread::scope(|sc| {
            let h = sc.spawn(|| open_taurus(&c, &tc, devs, &rec, &|_| {}).map(|(_, r)| r));
            let early = {
                let mut g = rec.applied.lock();
                let _ = rec.cv.wait_while_for(&mut g, |a| *a == 0, WAIT);
                *g > 0
            };
            gate.open();
            let report = h.join().unwrap().unwrap();
            assert_eq!(report.txns as usize, total);
            (early, report.plan)
        });
        // The report names the plan that ran: one thread always replays serially.
        let expected = match (threads, plan) {
            (1, _) | (_, RecoveryPlan::Serial) => Some("serial"),
            (_, RecoveryPlan::Parallel) => Some("parallel"),
            _ => used,
        };
        assert!(
            used.is_some() && used == expected,
            "{threads} thread(s), {plan:?}: plan {used:?}"
        );
        assert!(
            early,
            "{threads} thread(s), {plan:?}: nothing was replayed while stream 1 could not be read"
        );
        assert_eq!(rec.spans.lock().len(), total);
    }
}

/// A random log: streams, transactions, per stream a torn tail (None: complete; else keep
/// this fraction of the bytes), recovery threads and plan, batch size.
#[derive(Debug, Clone)]
struct Case {
    n: usize,
    txns: Vec<(usize, Vec<u8>)>,
    tear: Vec<Option<f64>>,
    threads: usize,
    plan: RecoveryPlan,
    bits: u32,
}

fn case() -> impl Strategy<Value = Case> {
    (2usize..=4).prop_flat_map(|n| {
        (
            Just(n),
            prop::collection::vec((0..n, prop::collection::vec(0u8..4, n..=n)), 0..160),
            prop::collection::vec(prop::option::weighted(0.4, 0.0f64..1.0), n..=n),
            1usize..=3,
            prop_oneof![
                Just(RecoveryPlan::Auto),
                Just(RecoveryPlan::Serial),
                Just(RecoveryPlan::Parallel)
            ],
            1u32..=4,
        )
            .prop_map(|(n, txns, tear, threads, plan, bits)| Case {
                n,
                txns,
                tear,
                threads,
                plan,
                bits,
            })
    })
}

fn run_case(c: &Case) -> Result<(), TestCaseError> {
    let mut log = build(c.n, &c.txns, |_, _| 0);
    // Torn tails: cut the bytes anywhere (inside a record's header, payload or padding).
    for (s, t) in c.tear.iter().enumerate() {
        if let Some(f) = t {
            let len = log.bytes[s].len();
            log.bytes[s].truncate((len as f64 * f) as usize);
        }
    }
    let valid_end: Vec<Lsn> = (0..c.n)
        .map(|s| {
            let cut = log.bytes[s].len() as Lsn;
            log.recs[s]
                .iter()
                .take_while(|m| m.end <= cut)
                .last()
                .map_or(0, |m| m.end)
        })
        .collect();
    let (keep, elv) = reference_cut(&log.recs, &valid_end);
    let rec = Recorder::default();
    let (sc, tc) = cfg(c.threads, c.plan, c.bits);
    let (_, report) = open_taurus(&sc, &tc, devices(&log, None), &rec, &|_| {})
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(!rec.twice.load(Ordering::SeqCst), "a record replayed twice");
    let ends: Vec<Lsn> = report.ends.iter().map(|e| e.end).collect();
    prop_assert_eq!(&ends, &elv, "restart points differ from the cut");
    let spans = rec.spans.lock();
    let mut want: Vec<u64> = Vec::new();
    for (s, r) in log.recs.iter().enumerate() {
        want.extend(r[..keep[s]].iter().map(|m| m.txn));
    }
    want.sort_unstable();
    let mut got: Vec<u64> = spans.keys().copied().collect();
    got.sort_unstable();
    prop_assert_eq!(
        &got,
        &want,
        "applied set differs from the cut of the whole log"
    );
    prop_assert_eq!(report.txns as usize, want.len());
    // Order: whatever a record depends on finished before it started.
    for (s, r) in log.recs.iter().enumerate() {
        for m in &r[..keep[s]] {
            let (start, _) = spans[&m.txn];
            for (j, &upto) in m.lv.iter().enumerate() {
                for p in log.recs[j].iter().take_while(|p| p.end <= upto) {
                    let Some(&(_, pend)) = spans.get(&p.txn) else {
                        return Err(TestCaseError::fail(format!(
                            "txn {} applied without txn {} it depends on",
                            m.txn, p.txn
                        )));
                    };
                    prop_assert!(
                        pend < start,
                        "txn {} started before txn {} it depends on finished",
                        m.txn,
                        p.txn
                    );
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn pipelined_recovery_applies_the_cut_of_the_whole_log(c in case()) {
        run_case(&c)?;
    }
}

/// Stream `bad` gets a damaged record at index `at`, with later records proving the bytes
/// there were durable (so it is corruption, not a torn tail).
fn corrupt(log: &mut Log, bad: usize, at: usize) {
    let r = &log.recs[bad][at];
    let i = r.start as usize + 20;
    log.bytes[bad][i] ^= 0x40;
}

#[test]
fn corruption_fails_recovery_before_anything_past_it_is_applied() {
    // Stream 0 independent, stream 1 depending on stream 0.
    let txns: Vec<(usize, Vec<u8>)> = (0..400usize)
        .map(|i| (i % 2, if i % 2 == 0 { vec![1, 0] } else { vec![1, 1] }))
        .collect();
    for damaged in [vec![1usize], vec![0, 1], vec![1, 0]] {
        for (threads, plan) in [
            (1, RecoveryPlan::Auto),
            (2, RecoveryPlan::Parallel),
            (2, RecoveryPlan::Serial),
        ] {
            // Records past index 150 claim everything up to the end as durable.
            let mut log = build(2, &txns, |_, i| if i > 150 { 1 << 30 } else { 0 });
            let at: Vec<usize> = damaged.iter().map(|&s| 100 + 10 * s).collect();
            for (&s, &a) in damaged.iter().zip(&at) {
                corrupt(&mut log, s, a);
            }
            // What a scan of the first damaged stream (by number) alone says.
            let first = *damaged.iter().min().unwrap();
            let devs = devices(&log, None);
            let want = {
                let mut sc = Scanner::new(&*devs[first], ScanMode::Strict);
                loop {
                    match sc.next_record() {
                        Ok(Some(_)) => {}
                        Ok(None) => panic!("the scan of stream {first} found no corruption"),
                        Err(e) => break e.to_string(),
                    }
                }
            };
            let rec = Recorder::default();
            let (c, tc) = cfg(threads, plan, 2);
            let got = match open_taurus(&c, &tc, devs, &rec, &|_| {}) {
                Ok(_) => panic!("recovery of a corrupted log succeeded"),
                Err(e) => e.to_string(),
            };
            assert_eq!(
                got, want,
                "damaged {damaged:?}, {threads} threads, {plan:?}"
            );
            let spans = rec.spans.lock();
            for (&s, &a) in damaged.iter().zip(&at) {
                for m in &log.recs[s][a..] {
                    assert!(
                        !spans.contains_key(&m.txn),
                        "txn {} at or past the damage of stream {s} was applied",
                        m.txn
                    );
                }
            }
        }
    }
}
