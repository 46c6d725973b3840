//! fjall (an LSM-tree key-value store in Rust), default configuration, every write persisted
//! before it returns.
//!
//! * Log appends ([`FjallLog`]): each record one `WriteBatch` of one insert, committed with
//!   `durability(Some(mode))`.
//! * Durable transactions ([`FjallTx`]): fjall's transactional database with optimistic
//!   concurrency (`OptimisticTxDatabase`, the one that lets writers run concurrently), each
//!   update one write transaction (`get`, `insert`, `commit`) with `durability(Some(mode))`;
//!   conflicts are retried ([`super::retry`]). A YCSB transaction is one write transaction
//!   (`get` of each row, `insert` of each row it updates, `commit`), or a read transaction if
//!   it only reads. TPC-B's four tables share one keyspace, `tpcb`, told apart by the keys'
//!   first byte ([`tpcb_key`]); its transaction is one write transaction (`get` and `insert`
//!   of the account, the teller and the branch, `insert` of the history row, `commit`), in
//!   either variant's mode.
//!
//! Two variants ([`Variant`]), differing only in the persist mode of a commit:
//! * `default`: `PersistMode::SyncAll` (fsync of the journal). fjall's own default commit
//!   (`durability(None)`) does not sync, so a durable mode has to be picked; `SyncAll` is the
//!   one its documentation gives without a condition ("Flushes data + metadata using
//!   fsync").
//! * `tuned`: `PersistMode::SyncData` (fdatasync), which its documentation offers "if you know
//!   that `fdatasync` is sufficient for your file system and/or operating system". It is on
//!   ext4 (fdatasync writes the file size with the data, all a journal's recovery reads), and
//!   it is what braid and raft-engine call.
//!
//! The self-checks reopen the database: the last acknowledged record of each thread must read
//! back; the transactional rows are read back through `get`. The reopen workload's loading
//! child may commit with `PersistMode::Buffer` (see `relaxed_setting`).

use std::path::Path;

use anyhow::{Result, bail};
use fjall::{
    Database, Keyspace, KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace,
    PersistMode, Readable,
};

use super::{
    Access, AppendLog, AppendSystem, Appender, Setup, Table, TpcbPart, TpcbTxn, TxnStore,
    TxnSystem, TxnWorker, Variant, account_key, append_key, balance, retry, table_rows, tpcb_key,
    tpcb_key_id, ycsb_next, ycsb_version,
};

/// The persist mode of a durable commit in `variant`.
fn durable_mode(variant: Variant) -> PersistMode {
    match variant {
        Variant::Default => PersistMode::SyncAll,
        Variant::Tuned => PersistMode::SyncData,
    }
}

/// `durable_mode(variant)` in words.
fn mode_name(variant: Variant) -> &'static str {
    match variant {
        Variant::Default => "PersistMode::SyncAll (fsync)",
        Variant::Tuned => "PersistMode::SyncData (fdatasync)",
    }
}

/// fjall as a log: synced one-insert batches.
#[derive(Debug)]
pub struct FjallLog(pub Variant);

fn open_log(dir: &Path) -> Result<(Database, Keyspace)> {
    let db = Database::builder(dir).open()?;
    let ks = db.keyspace("log", KeyspaceCreateOptions::default)?;
    Ok((db, ks))
}

impl AppendSystem for FjallLog {
    fn name(&self) -> String {
        format!("fjall{}", self.0.suffix())
    }

    fn variant(&self) -> Variant {
        self.0
    }

    fn version(&self) -> String {
        env!("PEERS_V_FJALL").into()
    }

    fn durability(&self) -> String {
        format!("WriteBatch::durability(Some({}))", mode_name(self.0))
    }

    fn open(&self, dir: &Path, _threads: usize) -> Result<Box<dyn AppendLog>> {
        let (db, ks) = open_log(dir)?;
        Ok(Box::new(LogOpen {
            db,
            ks,
            mode: durable_mode(self.0),
        }))
    }

    fn verify(&self, dir: &Path, acked: &[u64], record_bytes: usize) -> Result<()> {
        let (_db, ks) = open_log(dir)?;
        for (t, &n) in acked.iter().enumerate() {
            let Some(last) = n.checked_sub(1) else {
                continue;
            };
            match ks.get(append_key(t, last))? {
                Some(v) if v.len() == record_bytes && v[..16] == append_key(t, last) => {}
                _ => bail!("thread {t}: acknowledged record {last} does not read back"),
            }
        }
        Ok(())
    }
}

struct LogOpen {
    db: Database,
    ks: Keyspace,
    mode: PersistMode,
}

impl AppendLog for LogOpen {
    fn writer(&self, thread: usize) -> Result<Box<dyn Appender + '_>> {
        Ok(Box::new(LogWriter { open: self, thread }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }
}

struct LogWriter<'a> {
    open: &'a LogOpen,
    thread: usize,
}

impl Appender for LogWriter<'_> {
    fn append(&mut self, seq: u64, payload: &[u8]) -> Result<()> {
        let mut batch = self.open.db.batch().durability(Some(self.open.mode));
        batch.insert(&self.open.ks, append_key(self.thread, seq), payload);
        batch.commit()?;
        Ok(())
    }
}

/// fjall's optimistic transactional database, synced commits.
#[derive(Debug)]
pub struct FjallTx(pub Variant);

fn open_tx(dir: &Path, table: Table) -> Result<(OptimisticTxDatabase, OptimisticTxKeyspace)> {
    let db = OptimisticTxDatabase::builder(dir).open()?;
    let name = match table {
        Table::Accounts => "accounts",
        Table::Tpcb(_) => "tpcb",
        Table::Ycsb => "usertable",
    };
    let ks = db.keyspace(name, KeyspaceCreateOptions::default)?;
    Ok((db, ks))
}

impl TxnSystem for FjallTx {
    fn name(&self) -> String {
        format!("fjall{}", self.0.suffix())
    }

    fn variant(&self) -> Variant {
        self.0
    }

    fn version(&self) -> String {
        env!("PEERS_V_FJALL").into()
    }

    fn durability(&self) -> String {
        format!(
            "OptimisticTxDatabase, write_tx().durability(Some({}))",
            mode_name(self.0)
        )
    }

    fn relaxed_setting(&self) -> Option<String> {
        Some(
            "write_tx().durability(Some(PersistMode::Buffer)): each commit written to the \
             journal file, not fsync'd"
                .into(),
        )
    }

    fn cache_setting(&self) -> String {
        "defaults: 32 MiB block cache, memtables up to 64 MiB per keyspace (rows stay in the \
         memtable until it is flushed)"
            .into()
    }

    fn is_log_file(&self, file: &Path) -> bool {
        file.starts_with("journals") || file.extension().is_some_and(|e| e == "jnl")
    }

    fn open(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        let (db, ks) = open_tx(dir, setup.table)?;
        let rows = table_rows(setup);
        let mut batch = db.inner().batch();
        for (key, value) in rows {
            batch.insert(ks.inner(), key, value);
            if batch.len() >= 10_000 {
                std::mem::replace(&mut batch, db.inner().batch()).commit()?;
            }
        }
        batch.commit()?;
        db.persist(PersistMode::SyncAll)?;
        Ok(Box::new(TxOpen::new(db, ks, setup, self.0)))
    }

    fn reopen(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        let (db, ks) = open_tx(dir, setup.table)?;
        Ok(Box::new(TxOpen::new(db, ks, setup, self.0)))
    }
}

struct TxOpen {
    db: OptimisticTxDatabase,
    ks: OptimisticTxKeyspace,
    /// How commits persist: the variant's durable mode, or `Buffer` under the relaxed
    /// setting.
    mode: PersistMode,
    /// The table it holds.
    table: Table,
}

impl TxOpen {
    fn new(
        db: OptimisticTxDatabase,
        ks: OptimisticTxKeyspace,
        setup: &Setup,
        variant: Variant,
    ) -> TxOpen {
        let mode = if setup.relaxed {
            PersistMode::Buffer
        } else {
            durable_mode(variant)
        };
        TxOpen {
            db,
            ks,
            mode,
            table: setup.table,
        }
    }
}

impl TxnStore for TxOpen {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(TxW { open: self }))
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
        let v = match self.table {
            Table::Tpcb(_) => self.ks.get(tpcb_key(TpcbPart::Accounts, key))?,
            _ => self.ks.get(account_key(key))?,
        };
        Ok(v.map(|v| v.to_vec()))
    }

    fn scan_tpcb(&self, part: TpcbPart, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        if !matches!(self.table, Table::Tpcb(_)) {
            bail!("this store holds no TPC-B tables");
        }
        for g in self.ks.inner().prefix([part.tag()]) {
            let (k, v) = g.into_inner()?;
            let Some(id) = tpcb_key_id(part, &k) else {
                bail!("a key of {} bytes under {}'s prefix", k.len(), part.name());
            };
            f(id, &v)?;
        }
        Ok(())
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }
}

struct TxW<'a> {
    open: &'a TxOpen,
}

impl TxW<'_> {
    /// One try of the account update: `None` on a conflict.
    fn attempt(&self, account: u64, delta: i64) -> Result<Option<()>> {
        let key = account_key(account);
        let mut tx = self.open.db.write_tx()?.durability(Some(self.open.mode));
        let Some(old) = tx.get(&self.open.ks, key)? else {
            bail!("account {account} is missing");
        };
        let new = balance(&old)? + delta;
        tx.insert(&self.open.ks, key, new.to_le_bytes());
        Ok(tx.commit()?.ok())
    }

    /// One try of a TPC-B transaction: `None` on a conflict.
    fn attempt_tpcb(&self, txn: &TpcbTxn) -> Result<Option<()>> {
        let ks = &self.open.ks;
        let mut tx = self.open.db.write_tx()?.durability(Some(self.open.mode));
        for (part, id) in [
            (TpcbPart::Accounts, txn.account),
            (TpcbPart::Tellers, txn.teller),
            (TpcbPart::Branches, txn.branch),
        ] {
            let key = tpcb_key(part, id);
            let Some(old) = tx.get(ks, key)? else {
                bail!("{} row {id} is missing", part.name());
            };
            tx.insert(ks, key, (balance(&old)? + txn.delta).to_le_bytes());
        }
        tx.insert(ks, tpcb_key(TpcbPart::History, txn.id), txn.history());
        Ok(tx.commit()?.ok())
    }

    /// One try of a YCSB transaction that updates: `None` on a conflict.
    fn attempt_ycsb(&self, accesses: &[Access]) -> Result<Option<()>> {
        let ks = &self.open.ks;
        let mut tx = self.open.db.write_tx()?.durability(Some(self.open.mode));
        for a in accesses {
            let key = account_key(a.key);
            let Some(old) = tx.get(ks, key)? else {
                bail!("row {} is missing", a.key);
            };
            if a.update {
                tx.insert(ks, key, ycsb_next(a.key, &old)?);
            } else {
                ycsb_version(a.key, &old)?;
            }
        }
        Ok(tx.commit()?.ok())
    }
}

impl TxnWorker for TxW<'_> {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        Ok(retry(|| self.attempt(account, delta))?.retries)
    }

    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32> {
        Ok(retry(|| self.attempt_tpcb(txn))?.retries)
    }

    fn ycsb(&mut self, accesses: &[Access]) -> Result<u32> {
        if !accesses.iter().any(|a| a.update) {
            let ks = &self.open.ks;
            let tx = self.open.db.read_tx();
            for a in accesses {
                let Some(v) = tx.get(ks, account_key(a.key))? else {
                    bail!("row {} is missing", a.key);
                };
                ycsb_version(a.key, &v)?;
            }
            return Ok(0);
        }
        Ok(retry(|| self.attempt_ycsb(accesses))?.retries)
    }
}
