//! braid-engine, the embedded in-memory transactional store, in its durable defaults: 2PL
//! (NO_WAIT) with early lock release, data logging to segment files in the database directory,
//! `Durability::Sync` (commit returns once the log is fdatasync'd, group commit).
//!
//! * `braid-engine serial`: `Options::default()`, the `serial` scheme (one log stream).
//! * `braid-engine taurus`: `Options { scheme: "taurus", streams: threads, .. }`, one log
//!   stream per worker thread.
//!
//! The TPC-B update is `read` of the balance, `update` to balance + delta, and `commit()?.wait()?`;
//! a YCSB transaction is a `read` of each row and an `update` of the rows it updates (one
//! `Bytes(100)` column), then `commit()?.wait()?`. A NO_WAIT conflict aborts the transaction and it
//! is retried. Opening (`Db::builder`) refuses to run where the log would not be power-safe
//! (`Db::emulation`). Reopening recovers: `Options::default()` takes a checkpoint in the background
//! every 16 MiB of log (and at least the last checkpoint's size of log), so a reopen loads the
//! newest checkpoint and replays the log after it; before the first checkpoint the loader puts
//! every row back at its first value and the whole log is replayed over it.
//! braid-engine is an in-memory engine: every row is resident.

use std::path::Path;

use anyhow::{Result, bail};
use braid_engine::{
    Catalog, ColumnType, Db, IndexKind, Options, Schema, TableDef, TableId, TxError, Worker,
};

use super::{
    Access, INITIAL_BALANCE, Setup, SyncStats, Table, TxnStore, TxnSystem, TxnWorker,
    YCSB_VALUE_BYTES, ycsb_next, ycsb_value, ycsb_version,
};

/// Which braid-engine configuration.
#[derive(Debug, Clone, Copy)]
pub enum BraidEngine {
    /// `Options::default()`: the serial scheme.
    Serial,
    /// The taurus scheme, one stream per thread.
    Taurus,
}

impl BraidEngine {
    fn options(self, threads: usize) -> Result<Options> {
        let mut o = Options::default();
        if let BraidEngine::Taurus = self {
            o.scheme = "taurus".parse()?;
            o.streams = threads.max(1);
        }
        o.max_workers = o.max_workers.max(threads);
        Ok(o)
    }

    /// Create or recover the database; the loader puts every row at its first value (braid
    /// runs it on creation and before replaying the log on recovery).
    fn open_db(self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        let mut catalog = Catalog::new();
        let def = match setup.table {
            Table::Accounts => {
                TableDef::new("accounts", IndexKind::Hash).column("balance", ColumnType::I64)
            }
            Table::Ycsb => TableDef::new("usertable", IndexKind::Hash)
                .column("field0", ColumnType::Bytes(YCSB_VALUE_BYTES as u32)),
        };
        let table = catalog.add(def);
        let (kind, rows) = (setup.table, setup.rows);
        let load = |l: &braid_engine::Loader<'_>| {
            for key in 0..rows {
                match kind {
                    Table::Accounts => l.insert(table, key, &INITIAL_BALANCE.to_le_bytes())?,
                    Table::Ycsb => l.insert(table, key, &ycsb_value(key, 0))?,
                }
            }
            Ok(())
        };
        let (db, _report) = Db::builder(dir)
            .options(self.options(setup.threads)?)
            .catalog(catalog)
            .loader(load)
            .open()?;
        if let Some(e) = db.emulation() {
            bail!("braid-engine: the log is not power-safe here: {e}");
        }
        Ok(Box::new(Open { db, table }))
    }
}

impl TxnSystem for BraidEngine {
    fn name(&self) -> String {
        match self {
            BraidEngine::Serial => "braid-engine serial",
            BraidEngine::Taurus => "braid-engine taurus",
        }
        .into()
    }

    fn version(&self) -> String {
        // A path dependency: the git revision in every row says which tree.
        format!("{} (path)", env!("PEERS_V_BRAID_ENGINE"))
    }

    fn durability(&self) -> String {
        match self {
            BraidEngine::Serial => {
                "Options::default(): serial on files, Durability::Sync (fdatasync'd)"
            }
            BraidEngine::Taurus => {
                "taurus, 1 file stream per thread, Durability::Sync (fdatasync'd)"
            }
        }
        .into()
    }

    fn cache_setting(&self) -> String {
        "in-memory engine: every row resident (row images in a hash index), no cache".into()
    }

    fn in_memory(&self) -> bool {
        true
    }

    fn is_log_file(&self, file: &Path) -> bool {
        file.starts_with("log")
    }

    fn open(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        self.open_db(dir, setup)
    }

    fn reopen(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        self.open_db(dir, setup)
    }
}

struct Open {
    db: Db,
    table: TableId,
}

impl TxnStore for Open {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(W {
            w: self.db.worker()?,
            table: self.table,
            schema: self.db.schema(self.table).clone(),
        }))
    }

    fn own_sync_stats(&self) -> Option<SyncStats> {
        let s = self.db.stats().log;
        Some(SyncStats {
            syncs: s.flushes,
            bytes: s.bytes,
        })
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
        // One column, so a row's image is its value.
        Ok(self.db.peek(self.table, key))
    }

    fn scan(&self, rows: u64, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        let mut seen = 0u64;
        let mut first_err = None;
        self.db.for_each_row(self.table, .., |key, img| {
            if first_err.is_some() {
                return;
            }
            seen += 1;
            let r = if key >= rows {
                Err(anyhow::anyhow!(
                    "row {key} is there; the table has keys 0..{rows}"
                ))
            } else {
                f(key, img)
            };
            if let Err(e) = r {
                first_err = Some(e);
            }
        });
        if let Some(e) = first_err {
            return Err(e);
        }
        if seen != rows {
            bail!("{seen} rows, {rows} loaded");
        }
        Ok(())
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()?;
        Ok(())
    }
}

struct W {
    w: Worker,
    table: TableId,
    schema: Schema,
}

/// `Ok(None)` on a NO_WAIT conflict (the caller drops the transaction, so aborts it).
fn no_conflict<T>(r: Result<T, TxError>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(TxError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl W {
    /// One try: `Ok(false)` on a NO_WAIT conflict (the transaction is dropped, so aborted).
    fn attempt(&mut self, account: u64, delta: i64) -> Result<bool> {
        let (table, schema) = (self.table, &self.schema);
        let mut tx = self.w.begin();
        let r = (|| -> Result<Option<()>, TxError> {
            let Some(old) = tx.read(table, account, |img| schema.get::<i64>(img, 0))? else {
                return Ok(None);
            };
            tx.update(table, account, |r| r.set::<i64>(0, old + delta))?;
            Ok(Some(()))
        })();
        match r {
            Ok(Some(())) => {}
            Ok(None) => bail!("account {account} is missing"),
            Err(TxError::Conflict { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        match tx.commit() {
            Ok(ticket) => ticket.wait()?,
            Err(TxError::Conflict { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        Ok(true)
    }

    /// One try of a YCSB transaction: `Ok(false)` on a NO_WAIT conflict.
    fn attempt_ycsb(&mut self, accesses: &[Access]) -> Result<bool> {
        let table = self.table;
        let mut tx = self.w.begin();
        for a in accesses {
            if a.update {
                // One exclusive access that reads the old value and writes the next, as braid's
                // own YCSB does: a read (shared lock) then an update would need an upgrade,
                // which under NO_WAIT two readers of a hot row refuse each other forever.
                let mut next = Ok(());
                let updated = tx.update(table, a.key, |r| match ycsb_next(a.key, r.bytes(0)) {
                    Ok(new) => r.set_bytes(0, &new),
                    Err(e) => next = Err(e),
                });
                match no_conflict(updated)? {
                    Some(true) => next?,
                    Some(false) => bail!("row {} is missing", a.key),
                    None => return Ok(false),
                }
            } else {
                let Some(old) = no_conflict(tx.read(table, a.key, <[u8]>::to_vec))? else {
                    return Ok(false);
                };
                let Some(old) = old else {
                    bail!("row {} is missing", a.key);
                };
                ycsb_version(a.key, &old)?;
            }
        }
        match no_conflict(tx.commit())? {
            Some(ticket) => ticket.wait()?,
            None => return Ok(false),
        }
        Ok(true)
    }
}

impl TxnWorker for W {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let mut retries = 0;
        while !self.attempt(account, delta)? {
            retries += 1;
        }
        Ok(retries)
    }

    fn ycsb(&mut self, accesses: &[Access]) -> Result<u32> {
        let mut retries = 0;
        while !self.attempt_ycsb(accesses)? {
            retries += 1;
        }
        Ok(retries)
    }
}
