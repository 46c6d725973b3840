//! braid-wal alone, as an engine builder would use it: the `serial` scheme (one central log)
//! and the `taurus` scheme with one stream per writer thread, each stream on braid's file
//! device (segment files, preallocated, no O_DIRECT, group fdatasync).
//!
//! One append is one transaction: `on_write` of a row owned by the writer thread (so appends of
//! different threads never depend on each other), then `commit` with the record as payload,
//! and `Ticket::wait`, which returns once the record is fdatasync'd. The durable setting is
//! braid's default and only one for files: a commit is acknowledged after fdatasync.
//! Syncs and bytes per sync are counted in process as for every system (`crate::synccount`:
//! the fdatasync calls, and every byte written, the zero-ahead included); braid's own stream
//! statistics (durable-point advances) are reported beside them as a cross-check.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use braid_wal::device::Device;
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::fs::RealFs;
use braid_wal::scheme::{
    self, CommitRequest, LogKind, NoRows, Replay, ReplayError, RowRef, Scheme, SchemeConfig,
    SchemeSpec, SchemeWorker, Storage,
};
use std::sync::Mutex;

use super::{AppendLog, AppendSystem, Appender, SyncStats};

/// Which braid-wal scheme.
#[derive(Debug, Clone, Copy)]
pub enum BraidWal {
    /// One central log, one file stream.
    Serial,
    /// Taurus LSN-vector logging, one file stream per writer thread.
    Taurus,
}

impl BraidWal {
    fn scheme(self) -> &'static str {
        match self {
            BraidWal::Serial => "serial",
            BraidWal::Taurus => "taurus",
        }
    }

    fn spec(self) -> Result<SchemeSpec> {
        self.scheme()
            .parse()
            .with_context(|| format!("braid-wal scheme {}", self.scheme()))
    }

    /// Open (creating or recovering) the scheme in `dir` with `streams` asked for.
    fn open_scheme(
        self,
        dir: &Path,
        streams: usize,
        replay: &dyn Replay,
    ) -> Result<(Arc<dyn Scheme>, u64)> {
        let spec = self.spec()?;
        let mut devices: Vec<Arc<dyn Device>> = Vec::new();
        for i in 0..spec.streams_for(streams) {
            let cfg = FileDeviceConfig::new(dir.join("log"), i as u32);
            devices.push(Arc::new(FileDevice::open(Arc::new(RealFs), cfg)?));
        }
        let cfg = SchemeConfig::default().max_workers(streams.max(1));
        let (log, report) = scheme::open(&spec, &cfg, Storage::Devices(devices), replay, &|_| {})?;
        if let Some(e) = log.emulation() {
            bail!(
                "braid-wal {}: the log is not power-safe here: {e}",
                self.scheme()
            );
        }
        Ok((log, report.txns))
    }
}

/// Fresh logs have nothing to replay.
struct Nothing;

impl Replay for Nothing {
    fn apply(&self, _txn: u64, _kind: LogKind, _payload: &[u8]) -> Result<(), ReplayError> {
        Err("a fresh log replayed a transaction".into())
    }
}

/// Counts, per writer thread, the records handed back by recovery.
struct Count {
    per_thread: Mutex<Vec<u64>>,
    record_bytes: usize,
}

impl Replay for Count {
    fn apply(&self, _txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        if payload.len() != self.record_bytes {
            return Err(format!("a record of {} bytes", payload.len()).into());
        }
        let mut thread = [0u8; 8];
        thread.copy_from_slice(&payload[..8]);
        let t = u64::from_be_bytes(thread) as usize;
        let mut counts = self.per_thread.lock().map_err(|_| "poisoned")?;
        if t >= counts.len() {
            counts.resize(t + 1, 0);
        }
        counts[t] += 1;
        Ok(())
    }
}

impl AppendSystem for BraidWal {
    fn name(&self) -> String {
        format!("braid-wal {}", self.scheme())
    }

    fn version(&self) -> String {
        // A path dependency: the git revision in every row says which tree.
        format!("{} (path)", env!("PEERS_V_BRAID_WAL"))
    }

    fn durability(&self) -> String {
        match self {
            BraidWal::Serial => "ticket.wait(): fdatasync'd (group commit), 1 file stream",
            BraidWal::Taurus => {
                "ticket.wait(): fdatasync'd (group commit), 1 file stream per thread"
            }
        }
        .into()
    }

    fn open(&self, dir: &Path, threads: usize) -> Result<Box<dyn AppendLog>> {
        let (log, _) = self.open_scheme(dir, threads, &Nothing)?;
        Ok(Box::new(Open { log }))
    }

    fn verify(&self, dir: &Path, acked: &[u64], record_bytes: usize) -> Result<()> {
        let count = Count {
            per_thread: Mutex::new(vec![0; acked.len()]),
            record_bytes,
        };
        let (log, txns) = self.open_scheme(dir, acked.len(), &count)?;
        log.close()?;
        let counts = count
            .per_thread
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .clone();
        for (t, (&got, &want)) in counts.iter().zip(acked).enumerate() {
            if got < want {
                bail!("thread {t}: {want} records acknowledged, {got} recovered ({txns} in all)");
            }
        }
        Ok(())
    }
}

struct Open {
    log: Arc<dyn Scheme>,
}

impl AppendLog for Open {
    fn writer(&self, thread: usize) -> Result<Box<dyn Appender + '_>> {
        Ok(Box::new(Writer {
            w: self.log.worker(thread)?,
            thread,
        }))
    }

    fn own_sync_stats(&self) -> Option<SyncStats> {
        let mut s = SyncStats::default();
        for stream in self.log.streams() {
            let st = stream.stats();
            s.syncs += st.flushes;
            s.bytes += st.bytes;
        }
        Some(s)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.log.close()?;
        Ok(())
    }
}

struct Writer {
    w: Box<dyn SchemeWorker>,
    thread: usize,
}

impl Appender for Writer {
    fn append(&mut self, seq: u64, payload: &[u8]) -> Result<()> {
        self.w.on_write(RowRef::new(0, self.thread as u64));
        let ticket = self.w.commit(&CommitRequest {
            txn: 1 + ((self.thread as u64) << 40) + seq,
            kind: LogKind::Data,
            payload,
            read_only: false,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates: 0,
        })?;
        ticket.wait()?;
        Ok(())
    }
}
