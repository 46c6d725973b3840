//! Stream tests against an in-memory fake device that checks the stream's obligations on every
//! call: fills stay inside the ring window, flushes are contiguous, increasing, and cover only
//! filled bytes (so the durable point never passes a writer that has not filled).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use braid_wal::device::{Device, DeviceInfo};
use braid_wal::record::{self, Decoded, Kind, RecordSpec, Stamp};
use braid_wal::scan::StreamSource;
use braid_wal::stream::{Stream, StreamConfig};
use braid_wal::{Lsn, WalError};
use parking_lot::{Condvar, Mutex};

mod failures;
mod lifecycle;

const OK: u8 = 0;
const NOSPACE: u8 = 1;
const IOERR: u8 = 2;

#[derive(Default)]
struct Gate {
    /// Block fills starting at this LSN until `open`.
    block_at: Option<Lsn>,
    entered: bool,
    open: bool,
}

struct Fake {
    cap: u64,
    durable_on_fill: bool,
    /// The DRAM ring (files) or the medium (pmem).
    ring: Mutex<Vec<u8>>,
    /// Filled ranges: start -> len.
    fills: Mutex<BTreeMap<Lsn, u64>>,
    /// Flushed up to here (reusable for file-like fakes).
    flushed: AtomicU64,
    /// Bytes made durable by flush (file-like) in LSN order, from `base`.
    base: Lsn,
    file: Mutex<Vec<u8>>,
    mode: AtomicU8,
    flush_calls: AtomicU64,
    /// For durable_on_fill fakes: ring space is never recycled and ensure_space says LogFull.
    no_recycle: bool,
    gate: Mutex<Gate>,
    gate_cv: Condvar,
    notes: AtomicU64,
    ring_violation: AtomicBool,
    /// The name of the thread that made each flush, in order.
    flush_threads: Mutex<Vec<String>>,
}

impl Fake {
    fn new(cap: u64, durable_on_fill: bool, base: Lsn) -> Arc<Fake> {
        Arc::new(Fake {
            cap,
            durable_on_fill,
            ring: Mutex::new(vec![0; cap as usize]),
            fills: Mutex::new(BTreeMap::new()),
            flushed: AtomicU64::new(base),
            base,
            file: Mutex::new(Vec::new()),
            mode: AtomicU8::new(OK),
            flush_calls: AtomicU64::new(0),
            no_recycle: false,
            gate: Mutex::new(Gate::default()),
            gate_cv: Condvar::new(),
            notes: AtomicU64::new(0),
            ring_violation: AtomicBool::new(false),
            flush_threads: Mutex::new(Vec::new()),
        })
    }

    fn block_fill_at(&self, lsn: Lsn) {
        let mut g = self.gate.lock();
        *g = Gate {
            block_at: Some(lsn),
            entered: false,
            open: false,
        };
    }

    fn wait_entered(&self) {
        let mut g = self.gate.lock();
        while !g.entered {
            self.gate_cv.wait(&mut g);
        }
    }

    fn open_gate(&self) {
        let mut g = self.gate.lock();
        g.open = true;
        self.gate_cv.notify_all();
    }

    /// Is `[from, to)` exactly covered by fills?
    fn covered(&self, from: Lsn, to: Lsn) -> bool {
        let fills = self.fills.lock();
        let mut at = from;
        while at < to {
            match fills.get(&at) {
                Some(len) => at += len,
                None => return false,
            }
        }
        at == to
    }

    /// The records filled, in order, as (lsn, len).
    fn fill_list(&self) -> Vec<(Lsn, u64)> {
        self.fills.lock().iter().map(|(a, b)| (*a, *b)).collect()
    }
}

impl StreamSource for Fake {
    fn start(&self) -> Lsn {
        self.base
    }
    fn limit(&self) -> Lsn {
        self.flushed.load(SeqCst)
    }
    fn sealed(&self) -> Lsn {
        self.base
    }
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let file = self.file.lock();
        let off = (lsn - self.base) as usize;
        let n = buf.len().min(file.len().saturating_sub(off));
        buf[..n].copy_from_slice(&file[off..off + n]);
        Ok(n)
    }
    fn salt_for(&self, lsn: Lsn) -> u32 {
        0xabcd_0000 ^ (lsn / self.cap) as u32
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        ("fake".into(), lsn)
    }
}

impl Device for Fake {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "fake",
            location: "fake-dir".into(),
            emulation: None,
        }
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn reusable(&self) -> Lsn {
        if self.no_recycle {
            self.base
        } else {
            self.flushed.load(SeqCst)
        }
    }
    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        let blocked = {
            let mut g = self.gate.lock();
            if g.block_at == Some(lsn) {
                g.entered = true;
                self.gate_cv.notify_all();
                while !g.open {
                    self.gate_cv.wait(&mut g);
                }
                true
            } else {
                false
            }
        };
        let _ = blocked;
        let end = lsn + bytes.len() as u64;
        if end > self.reusable() + self.cap || lsn < self.flushed.load(SeqCst) {
            self.ring_violation.store(true, SeqCst);
        }
        {
            let mut ring = self.ring.lock();
            for (i, b) in bytes.iter().enumerate() {
                ring[((lsn + i as u64) % self.cap) as usize] = *b;
            }
        }
        let prev = self.fills.lock().insert(lsn, bytes.len() as u64);
        assert!(prev.is_none(), "LSN {lsn} filled twice");
    }
    fn durable_on_fill(&self) -> bool {
        self.durable_on_fill
    }
    fn flush(&self, from: Lsn, to: Lsn) -> Result<(), WalError> {
        self.flush_calls.fetch_add(1, SeqCst);
        self.flush_threads.lock().push(
            std::thread::current()
                .name()
                .unwrap_or("(unnamed)")
                .to_string(),
        );
        assert!(
            !self.durable_on_fill,
            "flush called on a durable_on_fill device"
        );
        assert_eq!(
            from,
            self.flushed.load(SeqCst),
            "flush ranges must be contiguous"
        );
        assert!(to > from, "empty flush {from}..{to}");
        assert!(
            self.covered(from, to),
            "flush of {from}..{to} covers bytes nobody filled"
        );
        match self.mode.load(SeqCst) {
            NOSPACE => {
                return Err(WalError::NoSpace {
                    path: PathBuf::from("fake-dir"),
                });
            }
            IOERR => {
                return Err(WalError::io(
                    "fdatasync",
                    "fake-dir/seg",
                    std::io::Error::other("injected EIO"),
                ));
            }
            _ => {}
        }
        {
            let ring = self.ring.lock();
            let mut file = self.file.lock();
            for l in from..to {
                file.push(ring[(l % self.cap) as usize]);
            }
        }
        self.flushed.store(to, SeqCst);
        Ok(())
    }
    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError> {
        if self.no_recycle && upto > self.base + self.cap {
            return Err(WalError::LogFull {
                ring: braid_wal::FullRing::PertxnLsns,
            });
        }
        Ok(())
    }
    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        assert_eq!(end, self.base);
        Ok(())
    }
    fn release(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn note_durable(&self, durable: Lsn) {
        self.notes.fetch_max(durable, SeqCst);
    }
}

fn cfg(writers: usize) -> StreamConfig {
    StreamConfig {
        id: 7,
        max_writers: writers,
        group_delay: Duration::ZERO,
        group_bytes: 1 << 20,
        flusher_only: false,
    }
}

/// Encode a self-describing test record: (lsn, len) then a byte pattern.
fn encode_test(lsn: Lsn, out: &mut [u8]) {
    out[..8].copy_from_slice(&lsn.to_le_bytes());
    let len = out.len() as u64;
    out[8..16].copy_from_slice(&len.to_le_bytes());
    for (i, b) in out[16..].iter_mut().enumerate() {
        *b = (lsn as usize + i) as u8;
    }
}

fn check_test_record(bytes: &[u8], lsn: Lsn, len: u64) {
    assert_eq!(u64::from_le_bytes(bytes[..8].try_into().unwrap()), lsn);
    assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), len);
    for (i, b) in bytes[16..len as usize].iter().enumerate() {
        assert_eq!(*b, (lsn as usize + i) as u8);
    }
}

fn concurrent_run(
    durable_on_fill: bool,
    cap: u64,
    group_delay: Duration,
    threads: usize,
    per: usize,
) {
    concurrent_run_waited(durable_on_fill, cap, group_delay, threads, per, false);
}

/// `waited`: every writer declares its appends waited for (`set_commits_waited`), waits for
/// every fourth and checks the others, so flushes are led by the waiters (file fakes) and
/// started by checks.
fn concurrent_run_waited(
    durable_on_fill: bool,
    cap: u64,
    group_delay: Duration,
    threads: usize,
    per: usize,
    waited: bool,
) {
    let base = 4096;
    let fake = Fake::new(cap, durable_on_fill, base);
    let dev: Arc<dyn Device> = fake.clone();
    let c = StreamConfig {
        group_delay,
        group_bytes: 512,
        ..cfg(threads)
    };
    let stream = Stream::start(dev, base, c).unwrap();
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let s = stream.clone();
            let b = barrier.clone();
            std::thread::spawn(move || {
                let mut w = s.writer().unwrap();
                w.set_commits_waited(waited);
                b.wait();
                let mut got = Vec::with_capacity(per);
                for i in 0..per {
                    let len = 16 + 8 * ((i * 7 + t * 13) % 24);
                    let (lsn, end) = w
                        .append_with(len, |lsn, _, _, out| encode_test(lsn, out))
                        .unwrap();
                    assert_eq!(end - lsn, len as u64);
                    if waited && i % 4 != 0 {
                        if s.check_durable(end).unwrap() {
                            assert!(s.durable() >= end);
                        }
                    } else if waited || i % 16 == 0 {
                        s.wait_durable(end).unwrap();
                        assert!(s.durable() >= end);
                    }
                    got.push((lsn, end));
                }
                got
            })
        })
        .collect();
    let mut all: Vec<(Lsn, Lsn)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort();
    let tail = stream.tail();
    let mut at = base;
    for (lsn, end) in &all {
        assert_eq!(*lsn, at, "gap or overlap at {at}");
        at = *end;
    }
    assert_eq!(at, tail);
    stream.wait_durable(tail).unwrap();
    assert_eq!(stream.durable(), tail);
    let st = stream.stats();
    assert_eq!(st.records, (threads * per) as u64);
    assert_eq!(st.bytes, tail - base);
    let fills = fake.fill_list();
    assert_eq!(fills.len(), all.len());
    for ((l, e), (fl, flen)) in all.iter().zip(&fills) {
        assert_eq!((*l, *e), (*fl, fl + flen));
    }
    assert!(
        !fake.ring_violation.load(SeqCst),
        "a fill went outside the ring window"
    );
    assert!(fake.notes.load(SeqCst) >= tail);
    if !durable_on_fill {
        assert_eq!(fake.flushed.load(SeqCst), tail);
        let file = fake.file.lock();
        for (lsn, end) in &all {
            let off = (lsn - base) as usize;
            check_test_record(&file[off..(end - base) as usize], *lsn, end - lsn);
        }
    }
    stream.close().unwrap();
}

#[test]
fn concurrent_writers_gap_free_files() {
    concurrent_run(false, 1 << 20, Duration::ZERO, 4, 1500);
}

#[test]
fn concurrent_waited_writers_lead_gap_free_flushes() {
    // Waiters flush themselves when no flush runs (leader-based group commit): the fake
    // checks that flushes stay contiguous and increasing whoever runs them.
    concurrent_run_waited(false, 1 << 20, Duration::ZERO, 4, 1500, true);
    // With a ring so small that appends wait for space, which only flushes free.
    concurrent_run_waited(false, 512, Duration::ZERO, 3, 800, true);
}

#[test]
fn a_record_appended_and_never_waited_for_is_flushed() {
    // Its writer leaves the wake-up to a waiter that never comes: the flusher's poll finds it.
    // The flusher is asleep before the writer defers (it then slept without a poll, and
    // declaring the deferral must wake it once), the order that lost this record at 4fbfac8.
    let fake = Fake::new(1 << 16, false, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(2)).unwrap();
    assert!(stream.flusher_idle_pass(Duration::from_secs(10)));
    let mut w = stream.writer().unwrap();
    w.set_commits_waited(true);
    let (_, end) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while stream.durable() < end {
        assert!(
            std::time::Instant::now() < deadline,
            "a deferred record was never flushed"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(fake.flushed.load(SeqCst), end);
    stream.close().unwrap();
}

/// A redo record with `payload` (what NV-Disk's update records are).
fn redo<'a>(txn: u64, payload: &'a [&'a [u8]]) -> RecordSpec<'a> {
    RecordSpec {
        kind: Kind::Redo,
        flags: 0,
        txn,
        stamp: &Stamp::None,
        payload,
    }
}

/// NV-Disk's log (Shore-MT's log flush daemon): records appended quietly (update records)
/// leave a sleeping flusher asleep; the record that kicks it (a commit) gets them all written
/// in one flush, by the flusher thread. Counted on the device: no flush until the kick, one
/// after it.
#[test]
fn quiet_records_wait_for_a_kick_and_are_flushed_with_it() {
    let fake = Fake::new(1 << 16, false, 0);
    let c = StreamConfig {
        flusher_only: true,
        ..cfg(2)
    };
    let stream = Stream::start(fake.clone(), 0, c).unwrap();
    let mut w = stream.writer().unwrap();
    assert!(stream.flusher_idle_pass(Duration::from_secs(10)));
    let payload = [7u8; 100];
    for txn in 1..=3 {
        w.append_quiet(&redo(txn, &[&payload])).unwrap();
    }
    // Time for a flusher woken by mistake to write them.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        fake.flush_calls.load(SeqCst),
        0,
        "a quiet record woke the flusher"
    );
    assert_eq!(stream.durable(), 0);
    let (_, end) = w.append(&redo(4, &[&payload])).unwrap();
    stream.wait_durable(end).unwrap();
    assert_eq!(
        fake.flush_calls.load(SeqCst),
        1,
        "one flush for the kick and what was before it"
    );
    assert_eq!(*fake.flush_threads.lock(), ["braid-flush-7"]);
    stream.close().unwrap();
}

/// A waiter for a quiet record (a checkpoint's wait, a read-only commit's ticket) wakes the
/// sleeping flusher itself instead of waiting for the next kick; so does a quiet fill that
/// ends while someone waits.
#[test]
fn a_wait_for_a_quiet_record_wakes_the_flusher() {
    let fake = Fake::new(1 << 16, false, 0);
    let c = StreamConfig {
        flusher_only: true,
        ..cfg(4)
    };
    let stream = Stream::start(fake.clone(), 0, c).unwrap();
    let payload = [3u8; 40];
    let mut w = stream.writer().unwrap();
    assert!(stream.flusher_idle_pass(Duration::from_secs(10)));
    let (_, end) = w.append_quiet(&redo(1, &[&payload])).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let s = stream.clone();
    std::thread::spawn(move || tx.send(s.wait_durable(end)).unwrap());
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the wait for a quiet record hung")
        .unwrap();
    // Waiters for a record another writer is still filling: the fill ends quietly while they
    // wait, and must get it flushed.
    for round in 0..200u64 {
        fake.block_fill_at(stream.tail());
        let s = stream.clone();
        let filler = std::thread::spawn(move || {
            let mut w = s.writer().unwrap();
            w.append_quiet(&redo(100 + round, &[&[1u8; 40]])).unwrap().1
        });
        fake.wait_entered();
        let (tx, rx) = std::sync::mpsc::channel();
        let s = stream.clone();
        let end = stream.tail();
        std::thread::spawn(move || tx.send(s.wait_durable(end)).unwrap());
        if round % 2 == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
        fake.open_gate();
        assert_eq!(filler.join().unwrap(), end);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a quiet fill that ended under a waiter was never flushed")
            .unwrap();
    }
    stream.close().unwrap();
}

/// With `flusher_only`, waiters never lead a flush: every flush is the flusher thread's, even
/// with every writer waiting for every record (where waiters would otherwise lead).
#[test]
fn a_flusher_only_stream_flushes_on_its_flusher_alone() {
    let fake = Fake::new(1 << 20, false, 0);
    let c = StreamConfig {
        flusher_only: true,
        ..cfg(3)
    };
    let stream = Stream::start(fake.clone(), 0, c).unwrap();
    let handles: Vec<_> = (0..3u64)
        .map(|t| {
            let s = stream.clone();
            std::thread::spawn(move || {
                let mut w = s.writer().unwrap();
                w.set_commits_waited(true);
                for i in 0..300u64 {
                    let (_, end) = w.append(&redo(t * 1000 + i, &[&[2u8; 64]])).unwrap();
                    s.wait_durable(end).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let threads = fake.flush_threads.lock().clone();
    assert!(!threads.is_empty());
    assert!(
        threads.iter().all(|n| n == "braid-flush-7"),
        "a flush ran elsewhere: {:?}",
        threads
            .iter()
            .filter(|n| *n != "braid-flush-7")
            .collect::<Vec<_>>()
    );
    stream.close().unwrap();
}

#[test]
fn concurrent_writers_gap_free_pmem() {
    concurrent_run(true, 1 << 30, Duration::ZERO, 4, 1500);
}

#[test]
fn ring_full_backpressure_tiny_ring() {
    // A 512-byte ring with records up to 200 bytes from three writers: appends must wait for
    // the flusher to recycle space, and never fill outside the window (the fake checks).
    concurrent_run(false, 512, Duration::ZERO, 3, 800);
}

#[test]
fn ring_full_with_group_delay() {
    // Group commit would wait 50 ms for 512 bytes; writers short of ring space cut it short.
    concurrent_run(false, 512, Duration::from_millis(50), 2, 300);
}

#[test]
fn group_commit_delay() {
    concurrent_run(false, 1 << 16, Duration::from_micros(200), 2, 500);
}

#[test]
fn group_commit_short_delay() {
    // A delay under the flusher's linger, on a device whose flushes are cheap: the flusher
    // gathers by spinning where a core is free, by sleeping where not.
    concurrent_run(false, 1 << 16, Duration::from_micros(5), 2, 500);
}

#[test]
fn ring_full_with_short_group_delay() {
    // The spinning gather, too, is cut short by writers waiting for ring space.
    concurrent_run(false, 512, Duration::from_micros(40), 2, 300);
}

fn durable_never_passes_busy(durable_on_fill: bool) {
    let fake = Fake::new(1 << 16, durable_on_fill, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(4)).unwrap();
    let mut w0 = stream.writer().unwrap();
    w0.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    stream.wait_durable(64).unwrap();
    // Writer A reserves [64, 128) and blocks inside fill.
    fake.block_fill_at(64);
    let s2 = stream.clone();
    let a = std::thread::spawn(move || {
        let mut w = s2.writer().unwrap();
        w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap()
    });
    fake.wait_entered();
    // Writer B appends after A and completes.
    let (lb, eb) = w0.append_with(32, |l, _, _, o| encode_test(l, o)).unwrap();
    assert_eq!((lb, eb), (128, 160));
    // The flusher (files) looks at the ready point after B finished and goes back to sleep
    // with nothing to flush; a flusher that passed A would flush [64, 160), which the fake
    // refuses (poisoning the stream). Pmem has no flusher: `check_durable` itself publishes.
    assert!(
        stream.flusher_idle_pass(Duration::from_secs(30)),
        "the flusher did not go idle while A was filling (durable {}, {:?})",
        stream.durable(),
        stream.check_durable(eb)
    );
    assert!(
        !stream.check_durable(eb).unwrap(),
        "durable passed a writer still filling"
    );
    assert!(stream.durable() <= 64);
    if !durable_on_fill {
        assert_eq!(fake.flushed.load(SeqCst), 64);
    }
    fake.open_gate();
    assert_eq!(a.join().unwrap(), (64, 128));
    stream.wait_durable(eb).unwrap();
    assert_eq!(stream.durable(), 160);
    stream.close().unwrap();
}

#[test]
fn durable_never_passes_busy_writer_files() {
    durable_never_passes_busy(false);
}

#[test]
fn durable_never_passes_busy_writer_pmem() {
    durable_never_passes_busy(true);
}
