//! braid-engine, the embedded in-memory transactional store, in its durable defaults: 2PL
//! (NO_WAIT) with early lock release, data logging to segment files in the database directory,
//! `Durability::Sync` (commit returns once the log is fdatasync'd, group commit).
//!
//! * `braid-engine serial`: `Options::default()`, the `serial` scheme (one log stream).
//! * `braid-engine taurus`: `Options { scheme: "taurus", streams: threads, .. }`, one log
//!   stream per worker thread.
//!
//! The TPC-B update is `read` of the balance, `update` to balance + delta, and
//! `commit()?.wait()?`; a NO_WAIT conflict aborts the transaction and it is retried.
//! `Db::open` refuses to run where the log would not be power-safe (`Db::emulation`). The
//! self-check reopens the database (recovering from its log) and sums the balances.

use std::path::Path;

use anyhow::{Result, bail};
use braid_engine::{
    Catalog, ColumnType, Db, IndexKind, Options, Procedures, Schema, TableDef, TableId, TxError,
    Worker,
};

use super::{INITIAL_BALANCE, SyncStats, TxnStore, TxnSystem, TxnWorker};

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

    /// Create or recover the database; the loader puts every account at the initial balance
    /// (braid runs it on creation and before replaying the log on recovery).
    fn open_db(self, dir: &Path, threads: usize, accounts: u64) -> Result<(Db, TableId)> {
        let mut catalog = Catalog::new();
        let table = catalog
            .add(TableDef::new("accounts", IndexKind::Hash).column("balance", ColumnType::I64));
        let load = |l: &braid_engine::Loader<'_>| {
            for a in 0..accounts {
                l.insert(table, a, &INITIAL_BALANCE.to_le_bytes())?;
            }
            Ok(())
        };
        let (db, _report) = Db::open(
            dir,
            self.options(threads)?,
            catalog,
            Procedures::new(),
            &load,
        )?;
        if let Some(e) = db.emulation() {
            bail!("braid-engine: the log is not power-safe here: {e}");
        }
        Ok((db, table))
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

    fn open(&self, dir: &Path, threads: usize, accounts: u64) -> Result<Box<dyn TxnStore>> {
        let (db, table) = self.open_db(dir, threads, accounts)?;
        Ok(Box::new(Open { db, table }))
    }

    fn reopen_sum(&self, dir: &Path, threads: usize, accounts: u64) -> Result<i64> {
        let (db, table) = self.open_db(dir, threads, accounts)?;
        let schema = db.schema(table).clone();
        let mut sum = 0i64;
        let mut rows = 0u64;
        db.for_each_row(table, |_, img| {
            sum += braid_engine::schema::get_i64(&schema, img, 0);
            rows += 1;
        });
        db.close()?;
        if rows != accounts {
            bail!("{rows} accounts after reopen, {accounts} loaded");
        }
        Ok(sum)
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
        let s = self.db.log_stats();
        Some(SyncStats {
            syncs: s.flushes,
            bytes: s.bytes,
        })
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

impl W {
    /// One try: `Ok(false)` on a NO_WAIT conflict (the transaction is dropped, so aborted).
    fn attempt(&mut self, account: u64, delta: i64) -> Result<bool> {
        let (table, schema) = (self.table, &self.schema);
        let mut tx = self.w.begin();
        let r = (|| -> Result<Option<()>, TxError> {
            let Some(old) = tx.read(table, account, |img| {
                braid_engine::schema::get_i64(schema, img, 0)
            })?
            else {
                return Ok(None);
            };
            tx.update(table, account, |r| r.set_i64(0, old + delta))?;
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
}

impl TxnWorker for W {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let mut retries = 0;
        while !self.attempt(account, delta)? {
            retries += 1;
        }
        Ok(retries)
    }
}
