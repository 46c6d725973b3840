//! The log a user holds: [`Wal::builder`] picks a scheme by name and a directory, opens (and
//! recovers) its log there, and hands out one [`WalWriter`] per thread, whose
//! [`append`](WalWriter::append) takes a transaction's rows and payload and returns the
//! [`Ticket`] that resolves once the transaction is durable. Storage follows from the scheme
//! (segment files under `dir/log`, or a persistent-memory region `dir/log.region` for the
//! schemes that keep their log in one); transaction ids, worker slots and the commit request's
//! fields are filled in here. An engine that needs the whole seam (update records, access sets,
//! checkpoint epochs, its own devices) uses the `scheme` module (the `internals` feature)
//! directly, as braid-engine does.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::WalError;
use crate::device::{Device, FileDevice, FileDeviceConfig, PmemWrite};
use crate::fs::RealFs;
use crate::scheme::{
    self, CommitRequest, LogKind, LogPlace, NoRows, RecoveryReport, RegionStorage, Replay, RowRef,
    Scheme, SchemeConfig, SchemeSpec, SchemeWorker, Storage, Ticket,
};

/// How to open a [`Wal`]: which scheme, how many streams and writers (see [`Wal::builder`]).
#[derive(Debug)]
#[must_use = "a builder opens nothing until `open` is called"]
pub struct WalBuilder {
    dir: PathBuf,
    spec: SchemeSpec,
    streams: usize,
    writers: usize,
    region_bytes: usize,
}

/// A durable log in a directory: recovered when opened, written through [`WalWriter`]s.
pub struct Wal {
    scheme: Arc<dyn Scheme>,
    recovered: RecoveryReport,
    writers: usize,
    /// Worker slots no live writer holds (a scheme keeps per-slot state: a log, a TID).
    free: Arc<Mutex<Vec<usize>>>,
    next_txn: Arc<AtomicU64>,
}

/// One thread's handle for appending transactions to a [`Wal`]; its worker slot is free
/// again once it is dropped.
pub struct WalWriter {
    worker: Box<dyn SchemeWorker>,
    slot: usize,
    free: Arc<Mutex<Vec<usize>>>,
    next_txn: Arc<AtomicU64>,
}

impl Drop for WalWriter {
    fn drop(&mut self) {
        self.free.lock().push(self.slot);
    }
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("scheme", &self.scheme.name())
            .field("streams", &self.scheme.streams().len())
            .field("writers", &self.writers)
            .finish()
    }
}

impl std::fmt::Debug for WalWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WalWriter")
    }
}

impl Wal {
    /// A log in `dir` (created if missing) under the `serial` scheme, 2 streams and 4
    /// writers unless the builder says otherwise.
    pub fn builder(dir: impl Into<PathBuf>) -> WalBuilder {
        WalBuilder {
            dir: dir.into(),
            spec: SchemeSpec::default(),
            streams: 2,
            writers: 4,
            region_bytes: 16 << 20,
        }
    }

    /// A writer for the calling thread (one per thread: a writer is not shared). At most
    /// [`WalBuilder::writers`] are alive at once; one more is refused with
    /// [`WalError::TooMany`] until another is dropped.
    pub fn writer(&self) -> Result<WalWriter, WalError> {
        let slot = self.free.lock().pop().ok_or(WalError::TooMany {
            what: "writers alive at once",
            max: self.writers,
            remedy: "drop a writer first, or open with WalBuilder::writers set higher",
        })?;
        match self.scheme.worker(slot) {
            Ok(worker) => Ok(WalWriter {
                worker,
                slot,
                free: Arc::clone(&self.free),
                next_txn: Arc::clone(&self.next_txn),
            }),
            Err(e) => {
                self.free.lock().push(slot);
                Err(e)
            }
        }
    }

    /// What opening the log recovered: transactions replayed, records and bytes read, how
    /// each stream ended.
    pub fn recovered(&self) -> &RecoveryReport {
        &self.recovered
    }

    /// The scheme's name.
    pub fn scheme(&self) -> &'static str {
        self.scheme.name()
    }

    /// Flush everything and stop the scheme's threads. Drop every [`WalWriter`] first; the
    /// directory's lock goes with the `Wal`.
    pub fn close(self) -> Result<(), WalError> {
        self.scheme.close()
    }
}

impl WalBuilder {
    /// The scheme, by name and options (`"serial"`, `"taurus"`, `"gsn:partition=page"`,
    /// `"pertxn"`, `"silor"`, `"plover"`, `"autonomous"`, `"none"`, ...); an unknown name is
    /// refused with the known ones ([`WalError::UnknownScheme`]).
    pub fn scheme(mut self, spec: &str) -> Result<WalBuilder, WalError> {
        self.spec = spec.parse()?;
        Ok(self)
    }

    /// Log streams for the schemes with several (taurus, gsn, ...; clamped to what the scheme
    /// allows; the central log has one). Default 2.
    pub fn streams(mut self, n: usize) -> WalBuilder {
        self.streams = n.max(1);
        self
    }

    /// Writers alive at once, at most ([`Wal::writer`]). Default 4.
    pub fn writers(mut self, n: usize) -> WalBuilder {
        self.writers = n.max(1);
        self
    }

    /// Bytes of the persistent-memory region, for the schemes that log into one (created at
    /// this size, opened at its own). Default 16 MiB.
    pub fn region_bytes(mut self, n: usize) -> WalBuilder {
        self.region_bytes = n;
        self
    }

    /// Open the log, creating it if missing; every committed transaction already in it is
    /// handed to `replay` first, in an order that respects the dependencies between them
    /// (possibly from several threads at once).
    pub fn open(self, replay: &dyn Replay) -> Result<Wal, WalError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| WalError::Io {
            path: self.dir.clone(),
            op: "create the log directory",
            source: Arc::new(e),
        })?;
        let storage = self.storage()?;
        let cfg = SchemeConfig::default().max_workers(self.writers);
        let (scheme, recovered) = scheme::open(&self.spec, &cfg, storage, replay, &|_| {})?;
        Ok(Wal {
            scheme,
            next_txn: Arc::new(AtomicU64::new(recovered.max_txn + 1)),
            recovered,
            writers: self.writers,
            free: Arc::new(Mutex::new((0..self.writers).rev().collect())),
        })
    }

    /// Where the scheme keeps its log, under the directory.
    fn storage(&self) -> Result<Storage, WalError> {
        let dir: &Path = &self.dir;
        Ok(match self.spec.log_place() {
            LogPlace::Nowhere => Storage::Nothing,
            LogPlace::Devices | LogPlace::NvramFiles => {
                let mut devices: Vec<Arc<dyn Device>> = Vec::new();
                for i in 0..self.spec.streams_for(self.streams) {
                    let cfg = FileDeviceConfig::new(dir.join("log"), i as u32);
                    devices.push(Arc::new(FileDevice::open(Arc::new(RealFs), cfg)?));
                }
                Storage::Devices(devices)
            }
            LogPlace::Region => {
                let path = dir.join("log.region");
                // Media::Auto: MAP_SYNC on DAX persistent memory, else every flush is
                // written back with msync, so the region is durable on any file system.
                let cfg = braid_pmem::PmemConfig::default();
                let region = if path.exists() {
                    braid_pmem::Region::open(&path, None, cfg)?
                } else {
                    braid_pmem::Region::create(&path, self.region_bytes, cfg)?
                };
                Storage::Region(RegionStorage {
                    region,
                    fs: Arc::new(RealFs),
                    backup_dir: dir.join("backup"),
                    write: PmemWrite::NonTemporal,
                })
            }
        })
    }
}

impl WalWriter {
    /// Log one transaction: `rows` are the `(table, key)` rows it wrote, `payload` what
    /// recovery hands back to [`Replay::apply`] (with [`LogKind::Data`]). Call it while the
    /// transaction still holds its rows' locks, so that the scheme orders it after the
    /// transactions whose writes it overwrote; install the writes and release the locks
    /// after it returns; acknowledge the transaction once the returned [`Ticket`] resolves
    /// ([`Ticket::wait`]). A transaction that only read logs nothing; if it read a write
    /// whose ticket has not resolved, it waits for that ticket.
    ///
    /// Schemes that place each row's operation in the log by itself (`gsn:partition=page`)
    /// read `payload` as [`crate::payload`] redo operations.
    pub fn append(&mut self, rows: &[(u32, u64)], payload: &[u8]) -> Result<Ticket, WalError> {
        for &(table, key) in rows {
            self.worker.on_write(RowRef::new(table, key));
        }
        let txn = self.next_txn.fetch_add(1, Ordering::Relaxed);
        self.worker.commit(&CommitRequest {
            txn,
            kind: LogKind::Data,
            payload,
            read_only: false,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates: 0,
        })
    }
}
