//! okaywal, `WriteAheadLog::recover` with its default `Configuration` (1 MiB preallocated
//! segments, a checkpoint every 768 KiB): each append is one entry (`begin_entry`,
//! `write_chunk`, `commit`), and `commit` returns once the entry is fdatasync'd (okaywal lets
//! concurrent committers share one sync).
//!
//! The log manager is the application's side of okaywal: it sees every entry once, either when
//! okaywal checkpoints a segment (`checkpoint_to`, where an application would make the entries
//! durable elsewhere; here it only reads and counts them) or when a reopened log recovers it.
//! The self-check reopens the log and requires, per thread, at least as many records seen as
//! were acknowledged.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Result, anyhow, bail};
use okaywal::{Entry, EntryId, LogManager, SegmentReader, WriteAheadLog};

use super::{AppendLog, AppendSystem, Appender};

/// okaywal with its default configuration.
#[derive(Debug, Default)]
pub struct OkayWal {
    /// Records seen per writer thread, by checkpoints during the run and recovery after it.
    seen: Arc<Mutex<Vec<u64>>>,
}

/// Counts the records okaywal hands back.
#[derive(Debug)]
struct Counter {
    seen: Arc<Mutex<Vec<u64>>>,
}

impl Counter {
    fn count(&self, entry: &mut Entry<'_>) -> io::Result<()> {
        let Some(chunks) = entry.read_all_chunks()? else {
            return Ok(());
        };
        let mut seen = self
            .seen
            .lock()
            .map_err(|_| io::Error::other("a counter lock was poisoned"))?;
        for chunk in chunks {
            if chunk.len() < 16 {
                return Err(io::Error::other("a record shorter than its stamp"));
            }
            let mut t = [0u8; 8];
            t.copy_from_slice(&chunk[..8]);
            let t = u64::from_be_bytes(t) as usize;
            if t >= seen.len() {
                seen.resize(t + 1, 0);
            }
            seen[t] += 1;
        }
        Ok(())
    }
}

impl LogManager for Counter {
    fn recover(&mut self, entry: &mut Entry<'_>) -> io::Result<()> {
        self.count(entry)
    }

    fn checkpoint_to(
        &mut self,
        _last_checkpointed_id: EntryId,
        entries: &mut SegmentReader,
        _wal: &WriteAheadLog,
    ) -> io::Result<()> {
        while let Some(mut entry) = entries.read_entry()? {
            self.count(&mut entry)?;
        }
        Ok(())
    }
}

impl OkayWal {
    fn counter(&self) -> Counter {
        Counter {
            seen: Arc::clone(&self.seen),
        }
    }
}

impl AppendSystem for OkayWal {
    fn name(&self) -> String {
        "okaywal".into()
    }

    fn version(&self) -> String {
        env!("PEERS_V_OKAYWAL").into()
    }

    fn durability(&self) -> String {
        "EntryWriter::commit(): fdatasync'd, default Configuration".into()
    }

    fn open(&self, dir: &Path, _threads: usize) -> Result<Box<dyn AppendLog>> {
        self.seen.lock().map_err(|_| anyhow!("poisoned"))?.clear();
        let wal = WriteAheadLog::recover(dir, self.counter())?;
        Ok(Box::new(Open { wal }))
    }

    fn verify(&self, dir: &Path, acked: &[u64], _record_bytes: usize) -> Result<()> {
        let wal = WriteAheadLog::recover(dir, self.counter())?;
        wal.shutdown()?;
        let seen = self.seen.lock().map_err(|_| anyhow!("poisoned"))?.clone();
        for (t, &want) in acked.iter().enumerate() {
            let got = seen.get(t).copied().unwrap_or(0);
            if got < want {
                bail!("thread {t}: {want} records acknowledged, {got} checkpointed or recovered");
            }
        }
        Ok(())
    }
}

struct Open {
    wal: WriteAheadLog,
}

impl AppendLog for Open {
    fn writer(&self, _thread: usize) -> Result<Box<dyn Appender + '_>> {
        Ok(Box::new(Writer { wal: &self.wal }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.wal.shutdown()?;
        Ok(())
    }
}

struct Writer<'a> {
    wal: &'a WriteAheadLog,
}

impl Appender for Writer<'_> {
    fn append(&mut self, _seq: u64, payload: &[u8]) -> Result<()> {
        let mut entry = self.wal.begin_entry()?;
        entry.write_chunk(payload)?;
        entry.commit()?;
        Ok(())
    }
}
