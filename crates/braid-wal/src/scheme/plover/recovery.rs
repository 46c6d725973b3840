//! Plover recovery (Taurus paper Sec. 5.2 on Plover: "Each Plover log file contains totally
//! ordered entries, sufficient to recover independently"), in one pass over each log that
//! replays while it reads.
//!
//! 1. **Read** (`min(logs, recovery_threads)` threads, each owning whole logs and reading them
//!    in turn, a chunk at a time): a [`Scanner`] finds each log's valid prefix; every record
//!    is decoded (`record.rs`) and kept with its payload in its log's chunks (1 MiB or 4096
//!    records; a chunk's memory is reused once its records are replayed), except those the
//!    checkpoint recovery started from already holds. Sequence numbers must strictly increase
//!    along a log; anything else is an error naming the log and position (the log was not
//!    written by this scheme). Each chunk is then published: its records' sequence numbers,
//!    transactions and record counts, and the log's read frontier (the sequence number of the
//!    last record read).
//! 2. **Merge** (`merge.rs`, under one lock, by the publishing thread): the published records
//!    of all logs are merged in sequence-number order as far as every log has been read,
//!    which shows each transaction there whole: its records are checked to agree, and the
//!    records below the first incomplete transaction (one missing a record) are *admitted*:
//!    they are in the cut (`cut.rs`) whatever the rest of the logs holds.
//! 3. **Replay**: each thread replays its logs' admitted records in log order as the bound
//!    moves (empty records, partitions a transaction only read, are not applied), so logs are
//!    replayed independently and while they are read; the rows of a chunk's next records are
//!    announced to the replay's prefetch before each apply ([`Lookahead`]).
//! 4. **Cut** (`merge.rs`, `cut.rs`): once every log is read, the records from the first
//!    incomplete transaction on (none for logs that end cleanly, a few at a crash) are cut: a
//!    transaction is kept only if all of its records are in the kept prefixes, each log is cut
//!    at its first incomplete transaction, to a fixpoint; with the admitted records this is
//!    the cut of the whole logs. The kept rest is replayed and each log restarts at its cut.
//!
//! **One log** (`recover_one`): every record of a single log stands for a whole transaction
//! (a record claiming more is an error), so the cut is the valid prefix and there is nothing to
//! merge; `recovery_threads` threads each read the log and apply their share of the keys
//! (`shared_scan.rs`), a few dozen records at a time so that the rows of the next are
//! announced before each apply (`apply_queue.rs`), with the checks of each record of step 1 (the merge's checks join a
//! transaction's records across logs, and one log has nothing to join).
//!
//! Errors: a log that cannot be read, a record of the wrong form and a transaction whose
//! records disagree stop replay at once; the other logs are still read to their ends, and
//! recovery returns, as when every log was read before replay, the read error of the first
//! failed log (by log number), else the first disagreement found, else the replay error.
//! Nothing is applied past a damaged position or outside the final cut.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use super::merge::{Fin, Key, Merge};
use super::record::{self, Rec};
use crate::device::Device;
use crate::payload::PayloadError;
use crate::scan::{ScanEnd, Scanner, StreamSource};
use crate::scheme::apply_queue::ApplyQueue;
use crate::scheme::cut::Cut;
use crate::scheme::feed::Records;
use crate::scheme::shared_scan::{self, Reading, Share};
use crate::scheme::{LogKind, Lookahead, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, WalError};

/// A chunk is published once its payloads reach this many bytes...
const CHUNK_BYTES: usize = 1 << 20;
/// ... or it holds this many records.
const CHUNK_RECORDS: usize = 4096;
/// Replayed chunks a log keeps for reuse.
const FREE_CHUNKS: usize = 4;

/// What recovery did, and where each log restarts.
pub(super) struct Outcome {
    pub(super) ends: Vec<Lsn>,
    pub(super) report: RecoveryReport,
    /// The largest sequence number found in any log (new ones go above it).
    pub(super) max_seq: u64,
}

/// Consecutive records of one log with their payloads.
#[derive(Default)]
struct Chunk {
    recs: Vec<Rec>,
    arena: Vec<u8>,
    /// Records replayed.
    next: usize,
    /// Which of its records' rows were announced to the replay's prefetch.
    ahead: Lookahead,
}

/// What the threads share.
struct Shared {
    merge: Mutex<Merge>,
    cv: Condvar,
    /// Records with a smaller sequence number are admitted.
    bound: AtomicU64,
    /// Nothing more is applied or merged (something failed).
    stop: AtomicBool,
    /// The first replay error.
    replay_error: Mutex<Option<WalError>>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Log `s` read `keys` (after those published before) up to sequence number `last`, and
    /// is `done`; merges and moves the bound.
    fn publish(&self, s: usize, keys: &[Rec], last: Option<u64>, done: bool) {
        let mut g = self.merge.lock();
        if self.stopped() {
            return;
        }
        match g.publish(s, keys.iter().map(Key::of), last, done) {
            Ok(b) => self.bound.store(b, Ordering::Release),
            Err(e) => {
                g.error.get_or_insert(e);
                self.stop.store(true, Ordering::Release);
            }
        }
        self.cv.notify_all();
    }

    /// Stop replay (a log could not be read, a replay failed or a thread panicked).
    fn fail(&self) {
        let _g = self.merge.lock();
        self.stop.store(true, Ordering::Release);
        self.cv.notify_all();
    }

    /// Wait until the bound moves past `seen` or the cut is known; `None` once stopped.
    fn wait(&self, seen: u64) -> Option<(u64, Option<Arc<Fin>>)> {
        let mut g = self.merge.lock();
        loop {
            if self.stopped() {
                return None;
            }
            let b = self.bound.load(Ordering::Acquire);
            if let Some(f) = &g.fin {
                return Some((b, Some(f.clone())));
            }
            if b != seen {
                return Some((b, None));
            }
            self.cv.wait(&mut g);
        }
    }
}

/// Stops replay if its thread unwinds.
struct PanicGuard<'a>(&'a Shared);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail();
        }
    }
}

/// One log as its thread reads and replays it.
struct Reader<'d> {
    sc: Scanner<'d, dyn Device + 'd>,
    /// Records read and not yet replayed, in log order.
    chunks: VecDeque<Chunk>,
    free: Vec<Chunk>,
    reading: bool,
    last: Option<u64>,
    out: Summary,
}

impl<'d> Reader<'d> {
    fn new(dev: &'d dyn Device, s: usize, cfg: &SchemeConfig) -> Reader<'d> {
        Reader {
            sc: Scanner::new(dev, cfg.scan_mode),
            chunks: VecDeque::new(),
            free: Vec::new(),
            reading: true,
            last: None,
            out: Summary {
                s,
                end: ScanEnd::clean(0),
                records: 0,
                bytes: 0,
                max_txn: 0,
                max_seq: 0,
                covered: 0,
                restart: 0,
                error: None,
            },
        }
    }

    /// Read the next chunk of records (kept unless `discard`); false if none was kept.
    fn read_chunk(
        &mut self,
        cfg: &SchemeConfig,
        n: usize,
        discard: bool,
    ) -> Result<bool, WalError> {
        let s = self.out.s;
        let mut c = self.free.pop().unwrap_or_default();
        while c.recs.len() < CHUNK_RECORDS && c.arena.len() < CHUNK_BYTES {
            let Some(rec) = self.sc.next_record()? else {
                self.reading = false;
                self.out.bytes = self.sc.bytes_read();
                self.out.end = self
                    .sc
                    .end()
                    .cloned()
                    .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
                break;
            };
            self.out.records += 1;
            let h = rec.header;
            self.out.max_txn = self.out.max_txn.max(h.txn);
            let head = record::head(&rec, s, n)?;
            if let Some(l) = self.last.filter(|&l| head.seq <= l) {
                return Err(not_increasing(s, h.txn, h.lsn, head.seq, l));
            }
            self.last = Some(head.seq);
            self.out.max_seq = self.out.max_seq.max(head.seq);
            if Cut::covered(cfg.cut.as_ref(), s, h.lsn, h.flags) {
                self.out.covered += 1;
                continue;
            }
            if discard {
                continue;
            }
            let a = c.arena.len();
            c.arena.extend_from_slice(rec.payload);
            c.recs.push(Rec {
                start: h.lsn,
                txn: h.txn,
                head,
                payload: (a, c.arena.len()),
            });
        }
        if c.recs.is_empty() {
            self.free.push(c);
            return Ok(false);
        }
        self.chunks.push_back(c);
        Ok(true)
    }

    /// Replay the records below `bound`, then `tail` more (once the cut is known: the kept
    /// part of the records from the first incomplete transaction on).
    fn replay(&mut self, bound: u64, mut tail: usize, replay: &dyn Replay) -> Result<(), WalError> {
        while let Some(c) = self.chunks.front_mut() {
            while let Some(r) = c.recs.get(c.next) {
                if r.head.seq >= bound {
                    if tail == 0 {
                        return Ok(());
                    }
                    tail -= 1;
                }
                // The chunk's next records are announced before this one applies, so their
                // rows' misses overlap (records past the bound too: a prefetch changes
                // nothing, and most of them are admitted soon after).
                c.ahead.before(c.next, c.recs.len(), |items, step| {
                    let mut ops = c.recs[items]
                        .iter()
                        .filter(|r| r.payload.0 != r.payload.1)
                        .map(|r| &c.arena[r.payload.0..r.payload.1]);
                    replay.prefetch(LogKind::Data, &mut ops, step);
                });
                let (a, b) = r.payload;
                if a != b {
                    replay
                        .apply(r.txn, LogKind::Data, &c.arena[a..b])
                        .map_err(|e| replay_failed(self.out.s as u32, r.start, r.txn, e))?;
                }
                c.next += 1;
            }
            if let Some(mut c) = self.chunks.pop_front()
                && self.free.len() < FREE_CHUNKS
            {
                c.recs.clear();
                c.arena.clear();
                c.next = 0;
                c.ahead = Lookahead::default();
                self.free.push(c);
            }
        }
        Ok(())
    }

    /// The start of the first record not replayed, or the end of the valid prefix.
    fn first_unreplayed(&self) -> Lsn {
        self.chunks
            .iter()
            .find_map(|c| c.recs.get(c.next))
            .map_or(self.out.end.end, |r| r.start)
    }
}

/// What a thread reports of one of its logs.
struct Summary {
    s: usize,
    end: ScanEnd,
    records: u64,
    bytes: u64,
    max_txn: u64,
    max_seq: u64,
    covered: u64,
    restart: Lsn,
    error: Option<WalError>,
}

/// One thread, owning the logs `devs` names: read them in turn a chunk at a time, publish,
/// replay what is admitted; then wait for the rest to be admitted or cut.
fn run(
    devs: &[(usize, &dyn Device)],
    sh: &Shared,
    cfg: &SchemeConfig,
    n: usize,
    replay: &dyn Replay,
) -> Vec<Summary> {
    let mut readers: Vec<Reader<'_>> = devs.iter().map(|&(s, d)| Reader::new(d, s, cfg)).collect();
    drive(&mut readers, sh, cfg, n, replay);
    readers.into_iter().map(|r| r.out).collect()
}

fn drive(
    readers: &mut [Reader<'_>],
    sh: &Shared,
    cfg: &SchemeConfig,
    n: usize,
    replay: &dyn Replay,
) {
    let _guard = PanicGuard(sh);
    let mut replayed_to = 0u64;
    let replay_all = |readers: &mut [Reader<'_>], bound: u64, tail: Option<&Fin>| {
        for r in readers.iter_mut().filter(|r| r.out.error.is_none()) {
            let extra = tail.map_or(0, |f| f.keep[r.out.s]);
            if let Err(e) = r.replay(bound, extra, replay) {
                sh.replay_error.lock().get_or_insert(e);
                sh.fail();
                return false;
            }
            if tail.is_some() {
                r.out.restart = r.first_unreplayed();
            }
        }
        true
    };
    loop {
        let mut reading = false;
        for r in readers.iter_mut().filter(|r| r.reading) {
            reading = true;
            match r.read_chunk(cfg, n, sh.stopped()) {
                Ok(kept) => {
                    let keys = match (kept, r.chunks.back()) {
                        (true, Some(c)) => &c.recs[..],
                        _ => &[],
                    };
                    sh.publish(r.out.s, keys, r.last, !r.reading);
                }
                Err(e) => {
                    r.out.error = Some(e);
                    r.reading = false;
                    sh.fail();
                }
            }
        }
        if !sh.stopped() {
            let b = sh.bound.load(Ordering::Acquire);
            if b != replayed_to && replay_all(readers, b, None) {
                replayed_to = b;
            }
        }
        if !reading {
            break;
        }
    }
    while let Some((b, fin)) = sh.wait(replayed_to) {
        if !replay_all(readers, b, fin.as_deref()) || fin.is_some() {
            return;
        }
        replayed_to = b;
    }
}

/// Recover the devices through `replay` (steps 1-4 of the module doc).
pub(super) fn recover(
    cfg: &SchemeConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Outcome, WalError> {
    let n = devices.len();
    if let [dev] = devices {
        return recover_one(cfg, &**dev, replay, progress);
    }
    let threads = cfg.recovery_threads.clamp(1, n);
    let sh = Shared {
        merge: Mutex::new(Merge::new(n)),
        cv: Condvar::new(),
        bound: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        replay_error: Mutex::new(None),
    };
    // Thread t owns logs t, t + threads, ...
    let mut owned: Vec<Vec<(usize, &dyn Device)>> = (0..threads).map(|_| Vec::new()).collect();
    for (s, d) in devices.iter().enumerate() {
        owned[s % threads].push((s, &**d));
    }
    let (mut logs, panicked) = std::thread::scope(|sc| {
        let sh = &sh;
        let hs: Vec<_> = owned
            .iter()
            .map(|devs| sc.spawn(move || run(devs, sh, cfg, n, replay)))
            .collect();
        let mut logs = Vec::with_capacity(n);
        let mut panicked = false;
        for h in hs {
            match h.join() {
                Ok(l) => logs.extend(l),
                // Its guard stopped replay.
                Err(_) => panicked = true,
            }
        }
        (logs, panicked)
    });
    logs.sort_by_key(|l| l.s);
    // The read error of the first failed log, then a disagreement, then a replay error.
    for l in &mut logs {
        if let Some(e) = l.error.take() {
            return Err(e);
        }
    }
    if panicked {
        return Err(WalError::ThreadPanicked {
            thread: "a plover recovery thread",
        });
    }
    let mut merge = sh.merge.into_inner();
    if let Some(e) = merge.error.take() {
        return Err(e);
    }
    if let Some(e) = sh.replay_error.into_inner() {
        return Err(e);
    }
    let fin = merge
        .fin
        .take()
        .ok_or_else(|| WalError::Internal(crate::Invariant::NoCut))?;
    let mut report = RecoveryReport::default();
    let mut ends = Vec::with_capacity(n);
    let mut max_seq = 0;
    for r in &logs {
        progress(r.bytes);
        ends.push(r.restart);
        report.records += r.records;
        report.bytes += r.bytes;
        report.max_txn = report.max_txn.max(r.max_txn);
        report.covered += r.covered;
        report.ends.push(ScanEnd {
            end: r.restart,
            ..r.end.clone()
        });
        max_seq = max_seq.max(r.max_seq);
    }
    report.txns = merge.admitted + fin.txns;
    report.skipped = merge.txns - report.txns;
    Ok(Outcome {
        ends,
        report,
        max_seq,
    })
}

/// Recover a single log: each thread reads it whole and applies its share of the keys.
fn recover_one(
    cfg: &SchemeConfig,
    dev: &dyn Device,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Outcome, WalError> {
    let src = (
        dev as &(dyn StreamSource + Sync),
        cfg.scan_mode,
        Reading::Once,
    );
    let out = shared_scan::run(cfg.recovery_threads, src, |share, sc, stop| {
        read_one(cfg, sc, share, stop, replay)
    })?;
    progress(out.report.bytes);
    Ok(out)
}

/// One share's scan of the single log; `None` if another share failed first.
fn read_one(
    cfg: &SchemeConfig,
    sc: &mut dyn Records,
    share: Share,
    stop: &AtomicBool,
    replay: &dyn Replay,
) -> Result<Option<Outcome>, WalError> {
    let mut report = RecoveryReport::default();
    let mut last: Option<u64> = None;
    let mut queue = ApplyQueue::default();
    while let Some(rec) = sc.next_record()? {
        if shared_scan::stopped(stop) {
            return Ok(None);
        }
        report.records += 1;
        let h = rec.header;
        report.max_txn = report.max_txn.max(h.txn);
        let head = record::head(&rec, 0, 1)?;
        if let Some(l) = last.filter(|&l| head.seq <= l) {
            return Err(not_increasing(0, h.txn, h.lsn, head.seq, l));
        }
        last = Some(head.seq);
        if Cut::covered(cfg.cut.as_ref(), 0, h.lsn, h.flags) {
            report.covered += 1;
            continue;
        }
        report.txns += 1;
        let bad = |e: PayloadError| {
            WalError::WrongLog(crate::WrongLog::Record {
                scheme: "plover",
                stream: 0,
                txn: Some(h.txn),
                lsn: h.lsn,
                problem: crate::RecordProblem::Payload(e),
            })
        };
        queue.push(&share, (h.txn, h.lsn), rec.payload, bad, (replay, 0))?;
    }
    queue.apply(replay)?;
    report.bytes = sc.bytes_read();
    let end = sc
        .end()
        .cloned()
        .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
    let restart = end.end;
    report.ends.push(end);
    Ok(Some(Outcome {
        ends: vec![restart],
        report,
        max_seq: last.unwrap_or(0),
    }))
}

/// A log whose sequence numbers do not increase was not written by this scheme.
fn not_increasing(s: usize, txn: u64, lsn: Lsn, seq: u64, after: u64) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "plover",
        stream: s,
        txn: Some(txn),
        lsn,
        problem: crate::RecordProblem::Sequence { seq, after },
    })
}
