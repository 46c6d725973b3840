//! Shore-MT's log insert without Aether's improvements (the "Baseline" of Wang & Johnson,
//! VLDB 2014, Sec. 6; the log Johnson et al., VLDB 2010, Sec. 3 measure before their changes):
//! every insert takes the log's one mutex across both reserving its space and copying its
//! record into the buffer, so the copy happens inside the serialising section and inserts
//! queue behind each other's copies.
//!
//! The mutex is a plain `parking_lot` lock; under it the worker appends through its own stream
//! writer slot (the reservation's compare-and-swap then always succeeds at the first attempt:
//! no one else reserves while the lock is held).

use parking_lot::Mutex;

use crate::proxy::ProxyCounter;
use crate::record::RecordSpec;
use crate::scheme::central::Insert;
use crate::stream::{Stream, StreamWriter};
use crate::{Lsn, WalError};

/// The central log behind one mutex.
pub(super) struct MutexLog {
    stream: Stream,
    lock: Mutex<()>,
}

impl MutexLog {
    pub(super) fn new(stream: Stream) -> MutexLog {
        MutexLog {
            stream,
            lock: Mutex::new(()),
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
        let guard = self.lock.lock();
        let appended = writer.append(spec);
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
