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
}

impl Log {
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
            g.pending.push_back((end, gsn));
        }
        braid_pmem::busy_wait_ns(cfg.insert_delay_ns);
        Ok((gsn, end))
    }
}
