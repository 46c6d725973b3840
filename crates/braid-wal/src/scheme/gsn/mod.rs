//! `gsn`: distributed logging with global sequence numbers and passive group commit (Wang &
//! Johnson, "Scalable Logging through Emerging Non-Volatile Memory", VLDB 2014).
//!
//! * **GSNs** (Section 3.1): Lamport clocks on pages (`pages.rs`), transactions and logs. A
//!   read sets the transaction's GSN to `max(tx, page)`; a write sets both to `max(tx, page) +
//!   1`; a log insert takes `max(tx, log) + 1` (the transaction's GSN already covers its
//!   pages), sets the log's clock, the transaction's GSN and, at the end of the commit, the
//!   clocks of the pages written to it. Every record carries its GSN (`Stamp::Gsn`) and its
//!   LSN (its stream position). A worker's GSN carries over from one transaction to the next.
//! * **Partitioning** (Sections 3.1, 3.3): transaction-level (worker `w` logs to log `w mod
//!   n`; one log per worker by default) or page-level (an operation on page `p` goes to log
//!   `p mod n`, page id = table in the top 16 bits, page number below). A page-partitioned
//!   transaction that touches several logs writes one part per log and then a commit record
//!   (it has no page, so it goes to the worker's own log `w mod n`, which spreads commit
//!   records over the logs as transaction-level partitioning does); recovery replays it only
//!   if the commit record and every part are found (record layout in `recovery.rs`).
//! * **Per-update records** (Section 3.1, [`crate::scheme::Records::Update`]): every write is
//!   a record of its own, inserted as it happens into the worker's log or the page's log, and
//!   the commit inserts a commit record counting them; the same layout as a page-partitioned
//!   transaction's parts, so recovery and the standby need nothing new (`worker.rs`).
//! * **Undo**: the paper keeps a private DRAM undo buffer per transaction so aborts never read
//!   the log. The engine already gives us that: writes are buffered as private images in the
//!   transaction and installed only after `commit` has inserted the records, so an abort just
//!   drops the buffer and nothing is ever undone from the log. What the scheme keeps per
//!   transaction is the list of page clocks it touched (for the re-read at commit, below).
//! * **Commit protection** (Section 4): see `commit.rs`. Durable cache: acknowledge after the
//!   insert's fence. Volatile cache: passive group commit with a daemon and straggler
//!   signals. File devices: per-log durable GSN watermarks.
//! * **Remote Flush Avoidance** (Haubenschild, Sauer, Neumann, Leis, SIGMOD 2020, Section
//!   4.3; option `rfa`, file logs, transaction-level partitioning): each page clock also names
//!   the log that wrote it while that write is not acknowledged (`pages.rs`); a commit that
//!   touched no page of another log above the acknowledged GSN, in a log with no commit still
//!   waiting for a remote flush, is acknowledged once its own log is durable up to it, and its
//!   record says so (`recovery.rs` keeps such commits above the bound). The others wait as
//!   before. `worker.rs` decides, under the log's insert lock.
//! * **Recovery** (Section 3.2): the two-step parallel redo pipeline with N scanners and M
//!   appliers ([`GsnConfig::scan_threads`], [`GsnConfig::apply_threads`]), see
//!   `recovery.rs`; a hot standby replays the logs in rounds with the same pipeline
//!   (`follow.rs`).
//! * **Counters**: [`Gsn::stats`] (commits, straggler signals sent and helped, daemon rounds,
//!   clock records) of
//!   one scheme instance since it was opened; also through [`Scheme::counters`], which is how
//!   `braid bench` reports signals per 10,000 commits.
//! * **NVM delay**: the paper's 1.2 us busy-wait per log insert is
//!   [`GsnConfig::insert_delay_ns`], spent inside the log's insert critical section with
//!   [`braid_pmem::busy_wait_ns`].
//!
//! Choices where the paper is vague or our engine differs from Shore-MT:
//!
//! * Inserts into one log are serialised by a per-log mutex that covers GSN assignment, the
//!   append and the emulated delay. GSNs therefore grow with LSNs inside a log and a log has no
//!   holes (on persistent memory a record is durable when its insert returns), which both the
//!   commit protocols and the recovery bound rely on. With one log per worker the mutex is
//!   uncontended.
//! * At commit the clocks of every page the transaction touched are read again. Under OCC a
//!   transaction reads without locks, so its access-time view of a page clock may predate the
//!   writer whose image it read; the writer raised the clock before installing, so the re-read
//!   (after validation) sees it and the transaction's GSN exceeds every GSN it depends on.
//! * GSNs capture read-after-write and write-after-write dependencies but not write-after-read
//!   ones, which re-executing commands needs. The autonomous scheme, which runs on these logs,
//!   adds them under command logging (read GSNs per page, `reads.rs`, Taurus's readLV) and
//!   re-executes in parallel, each log in GSN order and a command once the other logs are
//!   replayed up to the replay floor its record carries (`reexec.rs`); gsn itself refuses command logging (its page
//!   partitioning splits a transaction's record over the logs, and its hot standby replays
//!   redo images).
//! * Read-only transactions log nothing; their ticket waits for their GSN (what they read) to
//!   be acknowledged, except with a durable cache, where what they read is already durable.
//!
//! Files: `config.rs` (options, registration), `worker.rs` (a worker's GSN and its inserts),
//! `log.rs` (one log and its insert), `shared.rs` (what workers, the daemon and tickets share:
//! the commit queue), `daemon.rs` (the commit daemon's start, sleep and stop), `commit.rs`
//! (commit protection), `pages.rs`, `reads.rs` (command logging's read GSNs), `recovery.rs`,
//! `reexec.rs` (command recovery), `live.rs` (which commits recovery replays), `deps.rs`
//! (autonomous commit's dependency vectors and the void markers' decisions as stored),
//! `follow.rs` (a standby's rounds), `counters.rs` and `open.rs`.

// Internals, hidden from the docs (`commit` is public for the loom model in `tests/loom_gsn.rs`).
pub(crate) mod commit;
mod config;
mod counters;
mod daemon;
pub(crate) mod deps;
mod follow;
mod live;
pub(crate) mod log;
pub(crate) mod open;
pub(crate) mod pages;
mod reads;
pub(crate) mod recovery;
mod reexec;
pub(crate) mod shared;
mod worker;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::thread::JoinHandle;

use parking_lot::Mutex;

use super::{Scheme, SchemeWorker};
use crate::WalError;
use crate::stream::Stream;
use log::Mode;
use shared::Shared;
use worker::GsnWorker;

#[cfg(test)]
pub(crate) use config::Hook;
pub use config::{CommitProtocol, GsnConfig, Partition};
pub(crate) use config::{NAME, REGISTRATION};
pub(crate) use counters::GsnStats;
#[cfg(test)]
pub(crate) use open::{open_gsn, recover_only};

/// The running scheme.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct Gsn {
    /// `gsn`, or `autonomous` for the scheme of that name built on these logs.
    name: &'static str,
    shared: Arc<Shared>,
    streams: Vec<Stream>,
    daemon: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for Gsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gsn")
            .field("logs", &self.streams.len())
            .field("mode", &self.shared.mode)
            .field("partition", &self.shared.cfg.partition)
            .field("acked", &self.shared.acked.load(Relaxed))
            .finish()
    }
}

impl Gsn {
    fn new(
        name: &'static str,
        shared: Arc<Shared>,
        streams: Vec<Stream>,
        daemon: Option<JoinHandle<()>>,
    ) -> Gsn {
        Gsn {
            name,
            shared,
            streams,
            daemon: Mutex::new(daemon),
        }
    }

    /// This instance's counters since it was opened.
    pub(crate) fn stats(&self) -> GsnStats {
        self.shared
            .counters
            .snapshot(self.shared.commits(), self.shared.rfa_counts())
    }

    fn join_daemon(&self) {
        self.shared.stop_daemon();
        if let Some(h) = self.daemon.lock().take() {
            let _ = h.join();
        }
    }
}

impl Drop for Gsn {
    fn drop(&mut self) {
        self.join_daemon();
    }
}

impl Scheme for Gsn {
    fn name(&self) -> &'static str {
        self.name
    }

    fn worker(&self, worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(GsnWorker::new(Arc::clone(&self.shared), worker)?))
    }
    fn streams(&self) -> &[Stream] {
        &self.streams
    }

    /// Each log's reserved end with its GSN clock, read together under the log's lock: every
    /// record with a GSN up to the clock lies before the position (the cut's mark, see
    /// `crate::scheme::cut`).
    fn positions(&self) -> crate::scheme::cut::Positions {
        let mut p = crate::scheme::cut::Positions::default();
        for log in &self.shared.logs {
            let g = log.inner.lock();
            p.lsns.push(log.stream.tail());
            p.marks.push(g.clock);
        }
        p
    }

    /// Each log's reserved end, moved back to the first record of any transaction still open
    /// with update records there.
    fn keeps(&self) -> Vec<crate::Lsn> {
        self.shared
            .logs
            .iter()
            .enumerate()
            .map(|(l, log)| self.shared.open.start(l, log.stream.tail()))
            .collect()
    }

    fn close(&self) -> Result<(), WalError> {
        let mut first = None;
        // Local commits (RFA) were acknowledged without every log reaching their GSNs: bring
        // every log up to the largest clock, so a clean close leaves every log durable up to
        // every commit (a standby's bound then reaches them, and recovery needs no local
        // flag).
        let top = || {
            self.shared
                .logs
                .iter()
                .map(|l| l.inner.lock().clock)
                .max()
                .unwrap_or(0)
        };
        if self.shared.autonomous {
            // No daemon: settle it here, unless a failure already keeps commits from being
            // acknowledged.
            let top = top();
            if self.shared.blocked(top).is_ok()
                && let Err(e) = crate::scheme::autonomous::ack::settle_all(&self.shared, top)
            {
                first = Some(e);
            }
        } else if self.shared.rfa() {
            // Ask the daemon for it.
            self.shared.retired.want.fetch_max(top(), SeqCst);
            self.shared.daemon_wait.notify();
        }
        self.join_daemon();
        for st in &self.streams {
            if let Err(e) = st.close() {
                first.get_or_insert(e);
            }
        }
        self.shared.closed.store(true, SeqCst);
        self.shared.acked_wait.notify();
        first.map_or(Ok(()), Err)
    }

    /// The page clocks (one word per slot), and under command logging the read GSNs.
    fn metadata_bytes(&self) -> u64 {
        self.shared.pages.bytes() + self.shared.reads.as_ref().map_or(0, |r| r.bytes())
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let st = self.stats();
        let mut c = vec![
            ("commits", st.commits),
            ("signals", st.signals),
            ("signals_helped", st.signals_helped),
            ("daemon_rounds", st.rounds),
            ("clock_records", st.clock_records),
        ];
        if self.shared.autonomous {
            // No passive group commit, so no straggler signals to report.
            c.retain(|(n, _)| !n.starts_with("signals"));
            c.push(("log_waits", st.log_waits));
            // The sparse dependency vector: logs waited for by the commits that needed a
            // remote flush (divide by `rfa_remote_commits`), and those that waited for all.
            c.push(("remote_dep_logs", st.dep_logs));
            c.push(("remote_all_logs", st.all_logs));
        }
        if self.shared.rfa() {
            c.push(("rfa_local_commits", st.rfa_local));
            c.push(("rfa_remote_commits", st.rfa_remote));
        }
        c
    }

    fn proxies(&self) -> Option<crate::proxy::Proxies> {
        Some(self.shared.board.sum())
    }
}
