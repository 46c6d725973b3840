//! One log of the gsn scheme: its stream, its GSN clock and the insert that stamps a record
//! with `max(tx, log) + 1` under the log's lock (Wang & Johnson Section 3.1), plus the
//! pending (end LSN, GSN) pairs that file devices turn into durable GSN watermarks.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;

use parking_lot::{Mutex, MutexGuard};

use super::config::GsnConfig;
use crate::record::{Kind, RecordSpec, Stamp};
use crate::stream::{Stream, StreamWriter};
use crate::{Lsn, WalError};

/// How commits are acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Persistent memory, durable cache: acknowledged when inserted.
    Immediate,
    /// Persistent memory, volatile cache: passive group commit.
    Passive,
    /// File devices: per-log durable GSN watermarks.
    Watermark,
}

/// A log's state behind its insert lock.
pub(crate) struct LogInner {
    /// The log's GSN: the GSN of its newest record.
    pub clock: u64,
    pub(super) writer: StreamWriter,
    /// Watermark mode: (end LSN, GSN) of records not yet known durable, oldest first.
    pub pending: VecDeque<(Lsn, u64)>,
    /// Watermark mode: GSN of the newest record known durable.
    pub durable_gsn: u64,
    /// Autonomous commit: (GSN, dependencies) of this log's commits that depend on other logs
    /// and are not yet known settled, oldest first (`autonomous/ack.rs`).
    pub remote: VecDeque<(u64, Vec<(u16, u64)>)>,
}

/// One log: its stream and its state behind the insert lock.
pub(crate) struct Log {
    pub stream: Stream,
    pub inner: Mutex<LogInner>,
    /// RFA: the GSN of the newest commit in this log that needed a remote flush (stored under
    /// the insert lock, read without it). A later commit in this log may be acknowledged by
    /// this log's flush alone only once that GSN is acknowledged: it may depend on that commit,
    /// which depends on another log (see `worker.rs`).
    pub remote_gsn: AtomicU64,
    /// Autonomous commit: every commit of this log with a GSN up to this is durable, and so is
    /// everything it depends on, transitively (its *settled* GSN; only grows, advanced by
    /// whoever needs it and by every insert into the log: `autonomous/ack.rs`).
    pub settled: AtomicU64,
}

/// Pending entries past which an insert first drops those already durable: the commit daemon
/// drops them in its rounds, but under Remote Flush Avoidance (and autonomous commit) rounds
/// run only for the rare commits that need a remote flush, and the queue must not grow with
/// every local commit in between.
const PRUNE_AT: usize = 64;

impl Log {
    /// Watermark mode: drop the pending entries the stream has made durable, moving
    /// `durable_gsn` to the newest of them.
    pub(crate) fn prune(&self, g: &mut LogInner) {
        let d = self.stream.durable();
        while let Some(&(end, gsn)) = g.pending.front() {
            if end > d {
                break;
            }
            g.durable_gsn = gsn;
            g.pending.pop_front();
        }
    }

    /// Insert one record under the log's lock: GSN `max(floor, clock) + 1`. Returns (GSN, end).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_locked(
        &self,
        g: &mut MutexGuard<'_, LogInner>,
        cfg: &GsnConfig,
        floor: u64,
        kind: Kind,
        flags: u8,
        txn: u64,
        payload: &[&[u8]],
        track: bool,
    ) -> Result<(u64, Lsn), WalError> {
        let gsn = floor.max(g.clock) + 1;
        let stamp = Stamp::Gsn(gsn);
        let spec = RecordSpec {
            kind,
            flags,
            txn,
            stamp: &stamp,
            payload,
        };
        let (_, end) = g.writer.append(&spec)?;
        g.clock = gsn;
        if track {
            if g.pending.len() >= PRUNE_AT {
                self.prune(g);
            }
            g.pending.push_back((end, gsn));
        }
        braid_pmem::busy_wait_ns(cfg.insert_delay_ns);
        Ok((gsn, end))
    }
}
