//! Shore-MT's log insert without Aether's improvements (the "Baseline" of Wang & Johnson,
//! VLDB 2014, Sec. 6; the log Johnson et al., VLDB 2010, Sec. 3 measure before their changes):
//! every insert takes the log's one mutex across both reserving its space and copying its
//! record into the buffer, so the copy happens inside the serialising section and inserts
//! queue behind each other's copies.
//!
//! The mutex is a plain `parking_lot` lock; under it the worker appends through its own stream
//! writer slot (the reservation's compare-and-swap then always succeeds at the first attempt:
//! no one else reserves while the lock is held).
//!
//! NV-Disk's log ([`MutexLog::kicked_by_commits`]) inserts as Shore-MT's `log_core::insert`
//! does: a record that does not end its transaction (an update record) leaves the log flush
//! daemon asleep ("Kicks come at regular intervals from inserts" only when the buffer runs
//! short of space, here the stream's backlog rule), and the record that ends it (commit or
//! abort) kicks it, as Shore-MT's asynchronous commit does (`xct_t::_sync_logbuf` with
//! `block` off: "it does not block, but kicks the flusher").

use parking_lot::Mutex;

use crate::proxy::ProxyCounter;
use crate::record::{FLAG_COMMIT, Kind, RecordSpec};
use crate::scheme::central::Insert;
use crate::stream::{Stream, StreamWriter};
use crate::{Lsn, WalError};

/// The central log behind one mutex.
pub(super) struct MutexLog {
    stream: Stream,
    lock: Mutex<()>,
    /// Only records that end a transaction wake a sleeping flusher (NV-Disk, see the module
    /// doc); otherwise every record does.
    kick_on_end: bool,
}

impl MutexLog {
    pub(super) fn new(stream: Stream) -> MutexLog {
        MutexLog {
            stream,
            lock: Mutex::new(()),
            kick_on_end: false,
        }
    }

    /// Shore-MT's log as NV-Disk runs it: update records leave the flusher asleep, the
    /// commit (or abort) record of a transaction kicks it.
    pub(super) fn kicked_by_commits(stream: Stream) -> MutexLog {
        MutexLog {
            kick_on_end: true,
            ..MutexLog::new(stream)
        }
    }
}

impl Insert for MutexLog {
    type Local = StreamWriter;

    fn local(&self) -> Result<StreamWriter, WalError> {
        self.stream.writer()
    }

    fn insert(
        &self,
        writer: &mut StreamWriter,
        spec: &RecordSpec<'_>,
        proxy: &ProxyCounter,
    ) -> Result<Lsn, WalError> {
        let ends_txn = spec.flags & FLAG_COMMIT != 0 || spec.kind == Kind::Abort;
        let guard = self.lock.lock();
        let appended = if self.kick_on_end && !ends_txn {
            writer.append_quiet(spec)
        } else {
            writer.append(spec)
        };
        drop(guard);
        // The log's mutex (lock and unlock) on its own line, whether or not the append worked.
        proxy.shared(2, 1);
        proxy.global(2);
        let (_, end) = appended?;
        // The log's tail, and the flusher's mutex if the append woke it.
        proxy.append_global(writer.cost());
        Ok(end)
    }
}
