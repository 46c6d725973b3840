//! [`Feed`]: one read of a log stream shared by the threads of a single-log recovery
//! (`shared_scan.rs`), so that each byte is read and checksummed once, not once per thread.
//!
//! Every recovery thread needs every record (each applies its own share of the keys), but
//! the reading (the copy out of the device and the checksum) need happen only once. The
//! stream is read in blocks by whichever thread first needs the next block: it takes the one
//! [`Scanner`], copies the next valid records into a block and publishes it; every thread
//! then decodes the records of each block in order, as it would from a scanner of its own.
//! No thread only reads, so the machine's cores all apply, and no record is handed from one
//! thread to another (the threads share the blocks, read-only).
//!
//! Measured on the logs of the dbx1000 workload (YCSB, 1 KB rows) at 2 threads, before this:
//! each thread reading the whole stream spent about 38% of its samples in the read (the
//! kernel's copy 21%, the checksum 12%). Serial's shares, Taurus's one stream and Plover's
//! one log read through a feed; Silo-R's pipeline does not (`shared_scan::Reading` says why;
//! `results/dbx1000/single-log-ab` has the figures).
//!
//! * **No thread idles at the front.** A thread taking a block also reads the one after it
//!   if no thread is reading, so the next thread to get there finds it published. Without
//!   this the two threads of a 2-thread recovery reached the front together, one read while
//!   the other waited, and the read was no cheaper than before (measured: serial 0.90x,
//!   Silo-R 0.84x of each thread reading on its own).
//!
//! * **Bounded memory.** A block is freed once every thread has passed it, and its buffers go
//!   back to a pool, so the feed holds at most [`Feed::AHEAD`] blocks past the slowest
//!   thread and touches no new memory once the pool is warm. A thread that would read
//!   further ahead waits for the slowest; the slowest never waits for a faster one (the blocks
//!   it needs are published, or it reads them itself). Once a thread has left (at its end, on
//!   an error, or unwinding from a panic) no thread waits for the slowest.
//! * **Ends and errors.** The scanner's end (how the valid prefix ends, the bytes read) and
//!   its error are kept with the feed, so every thread reaching the end sees the same one,
//!   as with a scanner of its own. A thread that stops (another share failed) stops waiting
//!   and goes on reading, so it reaches its next record and sees the stop.
//! * **Why not a channel** (crossbeam): every thread consumes every block, and the block's
//!   buffers return to a pool once the last has; a broadcast of shared, recycled buffers is
//!   what the two locks here are, and no crate's channel is that.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::shared_scan;
use crate::WalError;
use crate::record::{Record, RecordHeader, StampKind, StampRef};
use crate::scan::{ScanEnd, ScanMode, Scanner, StreamSource};

/// Where a recovery loop reads its records: a [`Scanner`] of its own, or its place in a
/// [`Feed`]. The same three calls as a scanner's.
pub(crate) trait Records {
    /// The next valid record, or `None` at the end of the valid prefix.
    fn next_record(&mut self) -> Result<Option<Record<'_>>, WalError>;
    /// How the valid prefix ends, once `next_record` has returned `None`.
    fn end(&self) -> Option<&ScanEnd>;
    /// Stream bytes consumed so far.
    fn bytes_read(&self) -> u64;
}

impl<S: StreamSource + ?Sized> Records for Scanner<'_, S> {
    fn next_record(&mut self) -> Result<Option<Record<'_>>, WalError> {
        Scanner::next_record(self)
    }

    fn end(&self) -> Option<&ScanEnd> {
        Scanner::end(self)
    }

    fn bytes_read(&self) -> u64 {
        Scanner::bytes_read(self)
    }
}

/// One record of a block: its header, and where its stamp and payload are in the block.
struct Rec {
    header: RecordHeader,
    stamp: StampKind,
    /// Stamp bytes `at..mid`, payload bytes `mid..end`, in [`Block::bytes`].
    at: usize,
    mid: usize,
    end: usize,
}

/// Records read once, shared by every thread.
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    recs: Vec<Rec>,
    /// Threads that have not passed this block yet.
    left: AtomicUsize,
}

/// How the scan ended: where and how many bytes it read, or its error.
type End = Result<(ScanEnd, u64), WalError>;

struct State {
    /// Blocks published and not yet passed by every thread: block `first + i` at `i`.
    blocks: VecDeque<Arc<Block>>,
    first: u64,
    /// Set once the scanner has returned its last record (or its error).
    end: Option<End>,
    /// A thread holds the scanner, reading the next block.
    reading: bool,
    /// Buffers of freed blocks, for the next ones.
    pool: Vec<Block>,
    /// Readers dropped (at their end, or on an error or a panic): the slowest may be one
    /// of them, so no thread waits for the slowest any more.
    gone: usize,
}

/// One read of a stream, shared by `n` threads (see the module doc).
pub(crate) struct Feed<'s> {
    n: usize,
    scanner: Mutex<Scanner<'s, dyn StreamSource + Sync + 's>>,
    state: Mutex<State>,
    /// A block was published or freed, or the end was reached.
    changed: Condvar,
}

impl<'s> Feed<'s> {
    /// Blocks a thread may read ahead of the slowest one.
    const AHEAD: u64 = 16;
    /// A block is cut at this many bytes of records, or at [`Feed::RECORDS`] records.
    const BYTES: usize = 256 << 10;
    const RECORDS: usize = 512;

    /// A feed of `src`'s valid records (scanned in `mode`) for `n` threads.
    pub(crate) fn new(src: &'s (dyn StreamSource + Sync), mode: ScanMode, n: usize) -> Feed<'s> {
        Feed {
            n: n.max(1),
            scanner: Mutex::new(Scanner::new(src, mode)),
            state: Mutex::new(State {
                blocks: VecDeque::new(),
                first: 0,
                end: None,
                reading: false,
                pool: Vec::new(),
                gone: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// One thread's place in the feed; `stop` is the shared scan's stop flag.
    pub(crate) fn reader<'f>(&'f self, stop: &'f AtomicBool) -> FeedReader<'f, 's> {
        FeedReader {
            feed: self,
            stop,
            next: 0,
            block: None,
            i: 0,
            end: None,
            bytes: 0,
        }
    }

    /// Block `k` (this thread has passed every block before it), or `None` at the end.
    /// Taking a block, a thread reads the one after it too if no other thread is reading
    /// and the lead allows, so that the next thread to get there finds it published rather
    /// than waiting for it to be read.
    fn take(&self, k: u64, stop: &AtomicBool) -> Result<Option<Arc<Block>>, WalError> {
        let mut st = self.state.lock();
        loop {
            let published = st.first + st.blocks.len() as u64;
            let lead_ok = |st: &State, k: u64| k < st.first + Self::AHEAD || st.gone > 0;
            if let Some(b) = st.blocks.get((k - st.first) as usize) {
                let b = Arc::clone(b);
                if published == k + 1 && !st.reading && st.end.is_none() && lead_ok(&st, k + 1) {
                    drop(self.read_next(st));
                }
                return Ok(Some(b));
            }
            if let Some(end) = &st.end {
                return match end {
                    Ok(_) => Ok(None),
                    Err(e) => Err(e.clone()),
                };
            }
            if st.reading || (!lead_ok(&st, k) && !shared_scan::stopped(stop)) {
                // Another thread is reading block k, or this one is too far ahead of the
                // slowest: wait for a change (the timeout re-checks the stop flag).
                self.changed.wait_for(&mut st, Duration::from_millis(1));
                continue;
            }
            debug_assert_eq!(published, k, "a thread asks for the block after its last");
            st = self.read_next(st);
        }
    }

    /// Read and publish the next block (no other thread is reading); returns the lock again.
    fn read_next<'a>(&'a self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        st.reading = true;
        let pool = st.pool.pop().unwrap_or_default();
        drop(st);
        let mut reading = Reading {
            feed: self,
            done: false,
        };
        let read = self.read(pool);
        let mut st = self.state.lock();
        // Published and let go under one lock, so that no other thread starts reading
        // before this block has its place.
        match read {
            Ok((block, end)) => {
                st.blocks.extend(block.map(Arc::new));
                if end.is_some() {
                    st.end = end;
                }
            }
            Err(e) => st.end = Some(Err(e)),
        }
        st.reading = false;
        reading.done = true;
        self.changed.notify_all();
        st
    }

    /// Copy the next records into `b`: the block (`None` if there were none) and, if the
    /// scanner ended, how.
    fn read(&self, mut b: Block) -> Result<(Option<Block>, Option<End>), WalError> {
        let mut sc = self.scanner.lock();
        let mut end = None;
        while b.recs.len() < Self::RECORDS && b.bytes.len() < Self::BYTES {
            let Some(r) = sc.next_record()? else {
                let how = sc
                    .end()
                    .cloned()
                    .ok_or(WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
                end = Some(Ok((how, sc.bytes_read())));
                break;
            };
            let at = b.bytes.len();
            b.bytes.extend_from_slice(r.stamp.as_bytes());
            let mid = b.bytes.len();
            b.bytes.extend_from_slice(r.payload);
            b.recs.push(Rec {
                header: r.header,
                stamp: r.stamp.kind(),
                at,
                mid,
                end: b.bytes.len(),
            });
        }
        if b.recs.is_empty() {
            return Ok((None, end));
        }
        b.left = AtomicUsize::new(self.n);
        Ok((Some(b), end))
    }

    /// This thread has passed `block`, block `k`: the last thread to pass it frees it.
    fn passed(&self, block: Arc<Block>, k: u64) {
        if block.left.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        drop(block);
        let mut st = self.state.lock();
        // Every thread passes the blocks in order, so the last to pass block k has passed
        // every block before it, and all of those were freed before.
        debug_assert_eq!(st.first, k, "blocks are freed in order");
        if let Some(b) = st.blocks.pop_front() {
            st.first += 1;
            if let Ok(mut b) = Arc::try_unwrap(b) {
                b.bytes.clear();
                b.recs.clear();
                st.pool.push(b);
            }
        }
        self.changed.notify_all();
    }
}

/// A thread reading the next block: if it unwinds before publishing, the feed ends with an
/// error, so that no thread waits for a block that will not come.
struct Reading<'f, 's> {
    feed: &'f Feed<'s>,
    done: bool,
}

impl Drop for Reading<'_, '_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut st = self.feed.state.lock();
        st.reading = false;
        if st.end.is_none() {
            st.end = Some(Err(WalError::ThreadPanicked {
                thread: "a recovery thread reading the shared log",
            }));
        }
        self.feed.changed.notify_all();
    }
}

/// One thread's place in a [`Feed`]: its records in stream order.
pub(crate) struct FeedReader<'f, 's> {
    feed: &'f Feed<'s>,
    stop: &'f AtomicBool,
    /// The block after the one held.
    next: u64,
    block: Option<Arc<Block>>,
    /// The next record of `block`.
    i: usize,
    end: Option<ScanEnd>,
    bytes: u64,
}

impl Drop for FeedReader<'_, '_> {
    fn drop(&mut self) {
        self.feed.state.lock().gone += 1;
        self.feed.changed.notify_all();
    }
}

impl Records for FeedReader<'_, '_> {
    fn next_record(&mut self) -> Result<Option<Record<'_>>, WalError> {
        loop {
            if let Some(b) = &self.block
                && self.i < b.recs.len()
            {
                self.i += 1;
                break;
            }
            if let Some(b) = self.block.take() {
                self.feed.passed(b, self.next - 1);
            }
            match self.feed.take(self.next, self.stop)? {
                Some(b) => {
                    self.block = Some(b);
                    self.i = 0;
                    self.next += 1;
                }
                None => {
                    if self.end.is_none()
                        && let Some(Ok((end, bytes))) = &self.feed.state.lock().end
                    {
                        self.end = Some(end.clone());
                        self.bytes = *bytes;
                    }
                    return Ok(None);
                }
            }
        }
        // The loop breaks only with a block holding record `i - 1`.
        let Some(b) = &self.block else {
            return Err(WalError::Internal(crate::Invariant::ScanWithoutEnd));
        };
        let r = &b.recs[self.i - 1];
        Ok(Some(Record {
            header: r.header,
            stamp: StampRef::from_decoded(r.stamp, &b.bytes[r.at..r.mid]),
            payload: &b.bytes[r.mid..r.end],
        }))
    }

    fn end(&self) -> Option<&ScanEnd> {
        self.end.as_ref()
    }

    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::record::{Kind, RecordSpec, Stamp};
    use crate::scan::MemSource;
    use crate::scheme::shared_scan::{Reading, run};

    /// A stream of `n` records of growing payloads (some larger than a block), each stamped
    /// with its GSN, then `tail` garbage bytes.
    fn stream(n: u64, tail: usize) -> MemSource {
        let mut m = MemSource::new("mem", 4096, 7);
        for txn in 0..n {
            let payload =
                vec![txn as u8; (txn as usize * 37) % 3000 + 1 + 300_000 * usize::from(txn == 5)];
            let spec = RecordSpec {
                kind: Kind::Redo,
                flags: 0,
                txn,
                stamp: &Stamp::Gsn(txn + 1),
                payload: &[&payload],
            };
            m.append(&spec, 0).unwrap();
        }
        m.bytes.extend(std::iter::repeat_n(0xA5, tail));
        m
    }

    /// What a scanner of its own yields: (txn, gsn, payload) per record, the end, the bytes.
    type Seen = (Vec<(u64, u64, Vec<u8>)>, Option<ScanEnd>, u64);

    fn drain(r: &mut dyn Records) -> Result<Seen, WalError> {
        let mut recs = Vec::new();
        while let Some(rec) = r.next_record()? {
            recs.push((
                rec.header.txn,
                rec.stamp.gsn().unwrap(),
                rec.payload.to_vec(),
            ));
        }
        Ok((recs, r.end().cloned(), r.bytes_read()))
    }

    #[test]
    fn every_thread_sees_what_a_scanner_of_its_own_sees() {
        for (n, tail) in [(0, 0), (1, 0), (3000, 0), (2500, 100)] {
            let m = stream(n, tail);
            let want = drain(&mut Scanner::new(&m, ScanMode::Strict)).unwrap();
            assert_eq!(want.0.len() as u64, n);
            for threads in [2, 3] {
                let src = (
                    &m as &(dyn StreamSource + Sync),
                    ScanMode::Strict,
                    Reading::Once,
                );
                let seen = Mutex::new(Vec::new());
                let r: Result<(), WalError> = run(threads, src, |share, records, _| {
                    // Uneven speeds, so that a thread runs ahead and waits for the slowest.
                    if share.part == 1 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let s = drain(records)?;
                    seen.lock().push(s);
                    Ok(Some(()))
                });
                r.unwrap();
                let seen = seen.into_inner();
                assert_eq!(seen.len(), threads, "{n} records, {threads} threads");
                for s in seen {
                    assert!(
                        s == want,
                        "{n} records, {threads} threads: a thread saw otherwise"
                    );
                }
            }
        }
    }

    #[test]
    fn a_corrupt_record_is_every_threads_error_and_the_feed_is_let_go() {
        let mut m = stream(2000, 0);
        m.sealed = m.tail();
        let at = m.bytes.len() / 2;
        m.bytes[at] ^= 0xFF;
        let want = drain(&mut Scanner::new(&m, ScanMode::Strict))
            .unwrap_err()
            .to_string();
        let src = (
            &m as &(dyn StreamSource + Sync),
            ScanMode::Strict,
            Reading::Once,
        );
        let errors = Mutex::new(Vec::new());
        let r: Result<(), WalError> = run(2, src, |_, records, _| {
            let e = drain(records).unwrap_err();
            errors.lock().push(e.to_string());
            Err(e)
        });
        assert_eq!(r.unwrap_err().to_string(), want);
        assert_eq!(errors.into_inner(), vec![want.clone(), want]);
    }

    #[test]
    fn a_thread_that_stops_is_not_waited_for() {
        // Share 1 fails at once; share 0 reads on past the blocks share 1 never passes,
        // sees the stop flag at a record and stops.
        let m = stream(6000, 0);
        let src = (
            &m as &(dyn StreamSource + Sync),
            ScanMode::Strict,
            Reading::Once,
        );
        let r: Result<(), WalError> = run(2, src, |share, records, stop| {
            if share.part == 1 {
                return Err(WalError::Closed(1));
            }
            while records.next_record()?.is_some() {
                if shared_scan::stopped(stop) {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        });
        assert!(matches!(r, Err(WalError::Closed(1))), "{r:?}");
    }

    #[test]
    fn a_thread_that_panics_is_not_waited_for() {
        let m = stream(6000, 0);
        let feed = Feed::new(&m, ScanMode::Strict, 2);
        let stop = AtomicBool::new(false);
        let r = std::thread::scope(|sc| {
            let h = sc.spawn(|| {
                let mut r = feed.reader(&stop);
                let _ = r.next_record();
                panic!("a replay thread's bug");
            });
            let mut r = feed.reader(&stop);
            let mut n = 0;
            while r.next_record().unwrap().is_some() {
                n += 1;
            }
            assert!(h.join().is_err(), "the other thread panicked");
            n
        });
        assert_eq!(r, 6000, "the other thread read on to the end");
    }

    #[test]
    fn freed_blocks_are_reused() {
        let m = stream(8000, 0);
        let feed = Feed::new(&m, ScanMode::Strict, 2);
        let stop = AtomicBool::new(false);
        let (mut a, mut b) = (feed.reader(&stop), feed.reader(&stop));
        let mut count = 0;
        loop {
            let x = a.next_record().unwrap().map(|r| r.header.txn);
            let y = b.next_record().unwrap().map(|r| r.header.txn);
            assert_eq!(x, y);
            if x.is_none() {
                break;
            }
            count += 1;
        }
        assert_eq!(count, 8000);
        let st = feed.state.lock();
        assert!(st.blocks.is_empty(), "every block passed by both is freed");
        assert!(
            st.pool.len() <= Feed::AHEAD as usize + 2,
            "lockstep readers need few buffers: {}",
            st.pool.len()
        );
        assert!(!st.pool.is_empty(), "freed buffers are kept for reuse");
    }
}
