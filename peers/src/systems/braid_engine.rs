//! braid-engine, the embedded in-memory transactional store, in its durable defaults: 2PL
//! (NO_WAIT) with early lock release, data logging to segment files in the database directory,
//! `commit()`, which returns once the log is fdatasync'd (group commit).
//!
//! * `braid-engine serial`: `Options::default()`, the `serial` scheme (one log stream).
//! * `braid-engine serial tuned`: `Options::default()` with the checkpoints a user embedding
//!   braid runs set explicitly: `checkpoint.log_cap` = [`TUNED_LOG_CAP`] (braid checkpoints
//!   as the log grows, keeping it under about that, so the log and the reopen time stay
//!   bounded; no interval, no `log_bytes` trigger), and a checkpoint right after the load,
//!   so the base rows are on disk as every peer's load is and recovery reads them from the
//!   checkpoint rather than from the loader.
//! * `braid-engine taurus`: `Options::default().scheme("taurus".parse()?).streams(threads)`,
//!   one log stream per worker thread.
//!
//! The TPC-B update is `read` of the balance, `update` to balance + delta, and `commit()?`;
//! a YCSB transaction is a `read` of each row and an `update` of the rows it updates (one
//! `Bytes(100)` column), then `commit()?`. TPC-B's four tables are four braid tables
//! (hash indexes; accounts, tellers and branches of one `I64` balance column, history of
//! account, teller, branch, delta and time columns), and its transaction an `update` of the
//! account, the teller and the branch (each reading the balance and writing balance + delta)
//! and an `insert` of the history row, then `commit()?`; both variants create them. A
//! NO_WAIT conflict aborts the transaction and it is retried after a backoff
//! ([`super::retry`]). Opening (`Db::builder`) refuses to run where the log would not be
//! power-safe (`Db::emulation`). Reopening recovers: `Options::default()` takes a checkpoint
//! in the background every 16 MiB of log (and at least the last checkpoint's size of log), so
//! a reopen loads the newest checkpoint and replays the log after it; before the first
//! checkpoint the loader puts every row back at its first value and the whole log is replayed
//! over it.
//! braid-engine is an in-memory engine: every row is resident.

use std::path::Path;

use anyhow::{Result, bail};
use braid_engine::{
    Catalog, ColumnType, Db, IndexKind, Options, Schema, TableDef, TableId, TxError, Worker,
};

use super::{
    Access, INITIAL_BALANCE, Setup, SyncStats, Table, TpcbPart, TpcbTxn, TxnStore, TxnSystem,
    TxnWorker, Variant, YCSB_VALUE_BYTES, retry, ycsb_next, ycsb_value, ycsb_version,
};

/// The tuned variant's cap on the log (`CheckpointOptions::log_cap`).
pub const TUNED_LOG_CAP: u64 = 64 << 20;

/// The tables of a TPC-B database.
#[derive(Debug, Clone, Copy)]
struct Tpcb {
    accounts: TableId,
    tellers: TableId,
    branches: TableId,
    history: TableId,
}

impl Tpcb {
    fn table(&self, part: TpcbPart) -> TableId {
        match part {
            TpcbPart::Accounts => self.accounts,
            TpcbPart::Tellers => self.tellers,
            TpcbPart::Branches => self.branches,
            TpcbPart::History => self.history,
        }
    }
}

/// A table of one `I64` balance column, named after `part`.
fn balances(part: TpcbPart) -> TableDef {
    TableDef::new(part.name(), IndexKind::Hash).column("balance", ColumnType::I64)
}

/// Which braid-engine configuration.
#[derive(Debug, Clone, Copy)]
pub enum BraidEngine {
    /// The serial scheme: `Options::default()`, or that with the tuned checkpoints.
    Serial(Variant),
    /// The taurus scheme, one stream per thread.
    Taurus,
}

impl BraidEngine {
    fn tuned(self) -> bool {
        matches!(self, BraidEngine::Serial(Variant::Tuned))
    }

    fn options(self, threads: usize) -> Result<Options> {
        let mut o = Options::default();
        if let BraidEngine::Taurus = self {
            o.scheme = "taurus".parse()?;
            o.streams = threads.max(1);
        }
        if self.tuned() {
            o.checkpoint = o
                .checkpoint
                .interval(None)
                .log_bytes(None)
                .log_cap(Some(TUNED_LOG_CAP));
        }
        o.max_workers = o.max_workers.max(threads);
        Ok(o)
    }

    /// Create (`create`: and in the tuned variant checkpoint the loaded rows) or recover the
    /// database; the loader puts every row at its first value (braid runs it on creation and
    /// on recovery when no checkpoint holds the rows).
    fn open_db(self, dir: &Path, setup: &Setup, create: bool) -> Result<Box<dyn TxnStore>> {
        let mut catalog = Catalog::new();
        let def = match setup.table {
            Table::Accounts | Table::Tpcb(_) => balances(TpcbPart::Accounts),
            Table::Ycsb => TableDef::new("usertable", IndexKind::Hash)
                .column("field0", ColumnType::Bytes(YCSB_VALUE_BYTES as u32)),
        };
        let table = catalog.add(def);
        let tpcb = match setup.table {
            Table::Tpcb(_) => Some(Tpcb {
                accounts: table,
                tellers: catalog.add(balances(TpcbPart::Tellers)),
                branches: catalog.add(balances(TpcbPart::Branches)),
                history: catalog.add(
                    TableDef::new(TpcbPart::History.name(), IndexKind::Hash)
                        .column("account", ColumnType::U64)
                        .column("teller", ColumnType::U64)
                        .column("branch", ColumnType::U64)
                        .column("delta", ColumnType::I64)
                        .column("time", ColumnType::U64),
                ),
            }),
            _ => None,
        };
        let (kind, rows) = (setup.table, setup.rows);
        let load = |l: &braid_engine::Loader<'_>| {
            match (kind, tpcb) {
                (Table::Tpcb(scale), Some(t)) => {
                    for part in TpcbPart::BALANCES {
                        for id in 0..scale.rows(part) {
                            l.insert(t.table(part), id, &INITIAL_BALANCE.to_le_bytes())?;
                        }
                    }
                }
                _ => {
                    for key in 0..rows {
                        match kind {
                            Table::Ycsb => l.insert(table, key, &ycsb_value(key, 0))?,
                            _ => l.insert(table, key, &INITIAL_BALANCE.to_le_bytes())?,
                        }
                    }
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
        if create && self.tuned() {
            db.checkpoint()?;
        }
        Ok(Box::new(Open { db, table, tpcb }))
    }
}

impl TxnSystem for BraidEngine {
    fn name(&self) -> String {
        match self {
            BraidEngine::Serial(v) => format!("braid-engine serial{}", v.suffix()),
            BraidEngine::Taurus => "braid-engine taurus".into(),
        }
    }

    fn variant(&self) -> Variant {
        match self {
            BraidEngine::Serial(v) => *v,
            BraidEngine::Taurus => Variant::Default,
        }
    }

    fn version(&self) -> String {
        // A path dependency: the git revision in every row says which tree.
        format!("{} (path)", env!("PEERS_V_BRAID_ENGINE"))
    }

    fn durability(&self) -> String {
        match self {
            BraidEngine::Serial(Variant::Default) => {
                "Options::default(): serial on files, commit() durable (fdatasync'd)".into()
            }
            BraidEngine::Serial(Variant::Tuned) => format!(
                "Options::default(): serial on files, commit() durable (fdatasync'd); tuned: \
                 checkpoint.log_cap {} MiB (no interval or log_bytes trigger), a checkpoint \
                 after the load",
                TUNED_LOG_CAP >> 20
            ),
            BraidEngine::Taurus => {
                "taurus, 1 file stream per thread, commit() durable (fdatasync'd)".into()
            }
        }
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
        self.open_db(dir, setup, true)
    }

    fn reopen(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        self.open_db(dir, setup, false)
    }
}

struct Open {
    db: Db,
    table: TableId,
    /// TPC-B's tables, on a [`Table::Tpcb`] store.
    tpcb: Option<Tpcb>,
}

impl TxnStore for Open {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(W {
            w: self.db.worker()?,
            table: self.table,
            schema: self.db.schema(self.table).clone(),
            tpcb: self.tpcb,
        }))
    }

    fn scan_tpcb(&self, part: TpcbPart, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        let Some(t) = self.tpcb else {
            bail!("this store holds no TPC-B tables");
        };
        let table = t.table(part);
        let schema = self.db.schema(table);
        let mut first_err = None;
        self.db.for_each_row(table, .., |key, img| {
            if first_err.is_some() {
                return;
            }
            let r = if part == TpcbPart::History {
                let txn = TpcbTxn {
                    id: key,
                    account: schema.get::<u64>(img, 0),
                    teller: schema.get::<u64>(img, 1),
                    branch: schema.get::<u64>(img, 2),
                    delta: schema.get::<i64>(img, 3),
                    time: schema.get::<u64>(img, 4),
                };
                f(key, &txn.history())
            } else {
                f(key, &schema.get::<i64>(img, 0).to_le_bytes())
            };
            if let Err(e) = r {
                first_err = Some(e);
            }
        });
        first_err.map_or(Ok(()), Err)
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
    tpcb: Option<Tpcb>,
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
    /// One try: `Ok(None)` on a NO_WAIT conflict (the transaction is dropped, so aborted).
    fn attempt(&mut self, account: u64, delta: i64) -> Result<Option<()>> {
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
            Err(TxError::Conflict { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        match tx.commit() {
            Ok(()) => {}
            Err(TxError::Conflict { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        Ok(Some(()))
    }

    /// One try of a TPC-B transaction on tables `t`: `Ok(None)` on a NO_WAIT conflict.
    fn attempt_tpcb(&mut self, t: Tpcb, x: &TpcbTxn) -> Result<Option<()>> {
        let mut tx = self.w.begin();
        let mut account_balance = 0i64;
        for (part, id) in [
            (TpcbPart::Accounts, x.account),
            (TpcbPart::Tellers, x.teller),
            (TpcbPart::Branches, x.branch),
        ] {
            let mut balance = 0i64;
            let updated = tx.update(t.table(part), id, |r| {
                balance = r.get::<i64>(0) + x.delta;
                r.set::<i64>(0, balance);
            });
            match no_conflict(updated)? {
                Some(true) => {}
                Some(false) => bail!("{} row {id} is missing", part.name()),
                None => return Ok(None),
            }
            if part == TpcbPart::Accounts {
                account_balance = balance;
            }
        }
        // TPC-B returns the account's new balance to the terminal.
        std::hint::black_box(account_balance);
        let schema = tx.schema(t.history);
        let mut img = vec![0u8; schema.row_len()];
        schema.set::<u64>(&mut img, 0, x.account);
        schema.set::<u64>(&mut img, 1, x.teller);
        schema.set::<u64>(&mut img, 2, x.branch);
        schema.set::<i64>(&mut img, 3, x.delta);
        schema.set::<u64>(&mut img, 4, x.time);
        if no_conflict(tx.insert(t.history, x.id, &img))?.is_none() {
            return Ok(None);
        }
        match no_conflict(tx.commit())? {
            Some(()) => {}
            None => return Ok(None),
        }
        Ok(Some(()))
    }

    /// One try of a YCSB transaction: `Ok(None)` on a NO_WAIT conflict.
    fn attempt_ycsb(&mut self, accesses: &[Access]) -> Result<Option<()>> {
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
                    None => return Ok(None),
                }
            } else {
                let Some(old) = no_conflict(tx.read(table, a.key, <[u8]>::to_vec))? else {
                    return Ok(None);
                };
                let Some(old) = old else {
                    bail!("row {} is missing", a.key);
                };
                ycsb_version(a.key, &old)?;
            }
        }
        match no_conflict(tx.commit())? {
            Some(()) => {}
            None => return Ok(None),
        }
        Ok(Some(()))
    }
}

impl TxnWorker for W {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        Ok(retry(|| self.attempt(account, delta))?.retries)
    }

    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32> {
        let Some(t) = self.tpcb else {
            bail!("a TPC-B transaction on a store without TPC-B's tables");
        };
        Ok(retry(|| self.attempt_tpcb(t, txn))?.retries)
    }

    fn ycsb(&mut self, accesses: &[Access]) -> Result<u32> {
        Ok(retry(|| self.attempt_ycsb(accesses))?.retries)
    }
}
