//! Scalability proxies: per commit, how many atomic read-modify-writes a scheme's worker makes
//! on memory that other workers also write (`shared_rmw`), and how many cache lines it writes
//! that other workers also write (`shared_lines`). On a machine with few cores these predict
//! what many cores would show: a read-modify-write on a line that moves between cores costs a
//! cache-line transfer (roughly 50-100 ns across sockets), and transfers of one line
//! serialise, so `k` of them per commit on one line cap a scheme near `1 / (k * ~70 ns)`
//! commits per second however many cores run it (the central-log bottleneck of Wang & Johnson
//! 2014 Sec. 2, and the serial-versus-Taurus crossover of Xia et al. 2021 Fig. 5).
//!
//! What is counted, at the sites in the code, on the worker's own thread only (flushers and
//! daemons are background threads and are not counted; neither is the wait on a commit's
//! ticket, which runs outside the worker's handle):
//!
//! * `shared_rmw`: compare-and-swap (each attempt), fetch-add/or/max, swap, and a mutex taken
//!   (counted as two: the lock and the unlock are both read-modify-writes in `parking_lot`),
//!   on words several workers write: a stream's tail, a log's lock, a global LSN or GSN, a
//!   shared watermark, statistics words, the Taurus commit tracker's queue.
//! * `shared_lines`: the distinct cache lines those writes and plain stores to shared words
//!   touch, plus the first and last line of a record copied into a shared log buffer when the
//!   record does not start or end on a line boundary (the neighbouring record, often another
//!   worker's, writes the same line).
//!
//! * `global_rmw`: those of the `shared_rmw` made on a word that *every* worker writes, however
//!   many streams or logs there are (a central log's tail, a global LSN or GSN counter, a
//!   statistics word of the whole scheme). Per-stream and per-log words are shared but not
//!   global: more lanes spread them. A scheme that scales with cores makes none; NV-Logging
//!   makes exactly one (its global LSN); a central log makes at least one.
//!
//! Read-modify-writes on per-row (or per-page) ordering words (Taurus row LVs, gsn page
//! clocks, Taurus pending counts) are not counted: they contend only when workers touch the
//! same rows, which is the workload's contention, not the scheme's.
//!
//! * `wakes`: of those, the wake-ups of a parked background thread (gsn's commit daemon, a
//!   word every worker may write: two read-modify-writes and one line each, counted in the
//!   three figures above too). The daemon parks only when it has caught up with every worker,
//!   so how many commits find it parked depends on timing, and under load none do; the
//!   figures less these are the per-commit cost that decides scaling.
//!
//! A word written only by its worker and read by others (a stream slot's busy word, gsn's dgsn
//! cell, which only the worker and the daemon write) is not shared in this sense.
//!
//! Each worker owns one [`ProxyCounter`]: plain single-writer counters (a relaxed load and
//! store, no read-modify-write) on a cache line of their own, registered with the scheme's
//! [`ProxyBoard`], which sums them when asked. A hand-written structure because it is twenty
//! lines and no crate offers single-writer counters readable from another thread.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

/// Cache line size assumed for the boundary-line count.
pub(crate) const LINE: u64 = 64;

/// Summed proxy counts of a scheme since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Proxies {
    /// Commits the workers made (including read-only ones).
    pub commits: u64,
    /// Atomic read-modify-writes on words other workers also write.
    pub shared_rmw: u64,
    /// Cache lines written that other workers also write.
    pub shared_lines: u64,
    /// Of `shared_rmw`, those on words every worker writes, whatever the lanes.
    pub global_rmw: u64,
    /// Of the above, wake-ups of a parked background thread: each counted as two `shared_rmw`,
    /// one `shared_line` and two `global_rmw` (see the module doc).
    pub wakes: u64,
    /// Independent copies the shared words come in (streams or logs each workers spread
    /// over: 1 for a central log). A scheme whose every shared word is per lane scales with
    /// lanes; one with a global word does not, whatever this says.
    pub lanes: u64,
}

impl Proxies {
    /// The difference `self - before` of the counts (lanes kept).
    pub fn since(&self, before: &Proxies) -> Proxies {
        Proxies {
            commits: self.commits - before.commits,
            shared_rmw: self.shared_rmw - before.shared_rmw,
            shared_lines: self.shared_lines - before.shared_lines,
            global_rmw: self.global_rmw - before.global_rmw,
            wakes: self.wakes - before.wakes,
            lanes: self.lanes,
        }
    }

    /// Per-commit figures (`shared_rmw`, `shared_lines`), `None` without commits.
    pub fn per_commit(&self) -> Option<(f64, f64)> {
        (self.commits > 0).then(|| {
            let c = self.commits as f64;
            (self.shared_rmw as f64 / c, self.shared_lines as f64 / c)
        })
    }

    /// Global read-modify-writes per commit, `None` without commits.
    pub fn global_per_commit(&self) -> Option<f64> {
        (self.commits > 0).then(|| self.global_rmw as f64 / self.commits as f64)
    }
}

/// What one stream append did to shared memory (see [`crate::stream::StreamWriter::cost`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AppendCost {
    /// Read-modify-writes (tail compare-and-swap attempts, the flusher's mutex if taken).
    pub rmw: u64,
    /// Lines written that others write (the tail, the mutex, partial buffer lines).
    pub lines: u64,
}

impl AppendCost {
    /// The lines of a record `[start, end)` in a shared buffer that neighbours also write.
    pub(crate) fn boundary_lines(start: u64, end: u64) -> u64 {
        u64::from(!start.is_multiple_of(LINE)) + u64::from(!end.is_multiple_of(LINE))
    }
}

#[derive(Debug, Default)]
struct Cells {
    commits: AtomicU64,
    shared_rmw: AtomicU64,
    shared_lines: AtomicU64,
    global_rmw: AtomicU64,
    wakes: AtomicU64,
}

/// Single-writer add: a relaxed load and store, which compiles to a plain increment.
#[inline]
fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Relaxed) + n, Relaxed);
}

/// One worker's counters. Only its owner adds to them.
#[derive(Debug)]
pub(crate) struct ProxyCounter(Arc<CachePadded<Cells>>);

impl ProxyCounter {
    /// One commit.
    #[inline]
    pub(crate) fn commit(&self) {
        bump(&self.0.commits, 1);
    }
    /// `rmw` shared read-modify-writes touching `lines` shared lines.
    #[inline]
    pub(crate) fn shared(&self, rmw: u64, lines: u64) {
        bump(&self.0.shared_rmw, rmw);
        bump(&self.0.shared_lines, lines);
    }
    /// Woke a parked thread through a word every worker may write (a lock and its line).
    #[inline]
    pub(crate) fn wake(&self) {
        self.shared(2, 1);
        self.global(2);
        bump(&self.0.wakes, 1);
    }
    /// What a stream append did.
    #[inline]
    pub(crate) fn append(&self, c: AppendCost) {
        self.shared(c.rmw, c.lines);
    }
    /// `rmw` of the read-modify-writes counted with [`ProxyCounter::shared`] were on words
    /// every worker writes (a central log's tail, a global counter).
    #[inline]
    pub(crate) fn global(&self, rmw: u64) {
        bump(&self.0.global_rmw, rmw);
    }
    /// What an append to a stream every worker appends to did: shared and global.
    #[inline]
    pub(crate) fn append_global(&self, c: AppendCost) {
        self.append(c);
        self.global(c.rmw);
    }
}

/// A scheme's register of its workers' counters.
#[derive(Debug, Default)]
pub(crate) struct ProxyBoard {
    cells: Mutex<Vec<Arc<CachePadded<Cells>>>>,
    lanes: u64,
}

impl ProxyBoard {
    /// A board for a scheme whose shared words come in `lanes` copies.
    pub(crate) fn new(lanes: usize) -> ProxyBoard {
        ProxyBoard {
            cells: Mutex::new(Vec::new()),
            lanes: lanes as u64,
        }
    }

    /// A counter for a new worker (kept after the worker is dropped, so sums stay complete).
    pub(crate) fn counter(&self) -> ProxyCounter {
        let c = Arc::new(CachePadded::new(Cells::default()));
        let mut g = self.cells.lock();
        fold_orphans(&mut g);
        g.push(Arc::clone(&c));
        ProxyCounter(c)
    }

    /// The sums over every worker this board has handed a counter to.
    pub(crate) fn sum(&self) -> Proxies {
        let g = self.cells.lock();
        let mut p = Proxies {
            lanes: self.lanes,
            ..Proxies::default()
        };
        for c in g.iter() {
            p.commits += c.commits.load(Relaxed);
            p.shared_rmw += c.shared_rmw.load(Relaxed);
            p.shared_lines += c.shared_lines.load(Relaxed);
            p.global_rmw += c.global_rmw.load(Relaxed);
            p.wakes += c.wakes.load(Relaxed);
        }
        p
    }
}

/// Merge the counts of cells whose worker is gone into one retired cell, so a scheme that
/// hands out many short-lived workers keeps a short list.
fn fold_orphans(cells: &mut Vec<Arc<CachePadded<Cells>>>) {
    let orphans = cells.iter().filter(|c| Arc::strong_count(c) == 1).count();
    if orphans < 2 {
        return;
    }
    let retired = Cells::default();
    cells.retain(|c| {
        if Arc::strong_count(c) != 1 {
            return true;
        }
        bump(&retired.commits, c.commits.load(Relaxed));
        bump(&retired.shared_rmw, c.shared_rmw.load(Relaxed));
        bump(&retired.shared_lines, c.shared_lines.load(Relaxed));
        bump(&retired.global_rmw, c.global_rmw.load(Relaxed));
        bump(&retired.wakes, c.wakes.load(Relaxed));
        false
    });
    cells.push(Arc::new(CachePadded::new(retired)));
}
