//! fjall (an LSM-tree key-value store in Rust), default configuration, every write persisted
//! with `PersistMode::SyncAll` (fsync of the journal) before it returns.
//!
//! * Log appends ([`FjallLog`]): each record one `WriteBatch` of one insert, committed with
//!   `durability(Some(PersistMode::SyncAll))`.
//! * Durable transactions ([`FjallTx`]): fjall's transactional database with optimistic
//!   concurrency (`OptimisticTxDatabase`, the one that lets writers run concurrently), each
//!   update one write transaction (`get`, `insert`, `commit`) with
//!   `durability(Some(PersistMode::SyncAll))`; conflicts are retried.
//!
//! The self-checks reopen the database: the last acknowledged record of each thread must read
//! back; the balances must sum to what the committed updates leave.

use std::path::Path;

use anyhow::{Result, bail};
use fjall::{
    Database, Keyspace, KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace,
    PersistMode, Readable,
};

use super::{
    AppendLog, AppendSystem, Appender, INITIAL_BALANCE, TxnStore, TxnSystem, TxnWorker,
    account_key, append_key, balance,
};

/// fjall as a log: synced one-insert batches.
#[derive(Debug)]
pub struct FjallLog;

fn open_log(dir: &Path) -> Result<(Database, Keyspace)> {
    let db = Database::builder(dir).open()?;
    let ks = db.keyspace("log", KeyspaceCreateOptions::default)?;
    Ok((db, ks))
}

impl AppendSystem for FjallLog {
    fn name(&self) -> String {
        "fjall".into()
    }

    fn version(&self) -> String {
        env!("PEERS_V_FJALL").into()
    }

    fn durability(&self) -> String {
        "WriteBatch::durability(Some(PersistMode::SyncAll)): journal fsync'd".into()
    }

    fn open(&self, dir: &Path, _threads: usize) -> Result<Box<dyn AppendLog>> {
        let (db, ks) = open_log(dir)?;
        Ok(Box::new(LogOpen { db, ks }))
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
        let mut batch = self.open.db.batch().durability(Some(PersistMode::SyncAll));
        batch.insert(&self.open.ks, append_key(self.thread, seq), payload);
        batch.commit()?;
        Ok(())
    }
}

/// fjall's optimistic transactional database, synced commits.
#[derive(Debug)]
pub struct FjallTx;

fn open_tx(dir: &Path) -> Result<(OptimisticTxDatabase, OptimisticTxKeyspace)> {
    let db = OptimisticTxDatabase::builder(dir).open()?;
    let ks = db.keyspace("accounts", KeyspaceCreateOptions::default)?;
    Ok((db, ks))
}

impl TxnSystem for FjallTx {
    fn name(&self) -> String {
        "fjall".into()
    }

    fn version(&self) -> String {
        env!("PEERS_V_FJALL").into()
    }

    fn durability(&self) -> String {
        "OptimisticTxDatabase, write_tx().durability(Some(PersistMode::SyncAll))".into()
    }

    fn open(&self, dir: &Path, _threads: usize, accounts: u64) -> Result<Box<dyn TxnStore>> {
        let (db, ks) = open_tx(dir)?;
        let mut batch = db.inner().batch();
        for a in 0..accounts {
            batch.insert(ks.inner(), account_key(a), INITIAL_BALANCE.to_le_bytes());
            if batch.len() >= 10_000 {
                std::mem::replace(&mut batch, db.inner().batch()).commit()?;
            }
        }
        batch.commit()?;
        db.persist(PersistMode::SyncAll)?;
        Ok(Box::new(TxOpen { db, ks }))
    }

    fn reopen_sum(&self, dir: &Path, _threads: usize, accounts: u64) -> Result<i64> {
        let (_db, ks) = open_tx(dir)?;
        let mut sum = 0i64;
        for a in 0..accounts {
            match ks.get(account_key(a))? {
                Some(v) => sum += balance(&v)?,
                None => bail!("account {a} is missing after reopen"),
            }
        }
        Ok(sum)
    }
}

struct TxOpen {
    db: OptimisticTxDatabase,
    ks: OptimisticTxKeyspace,
}

impl TxnStore for TxOpen {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(TxW { open: self }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }
}

struct TxW<'a> {
    open: &'a TxOpen,
}

impl TxnWorker for TxW<'_> {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let key = account_key(account);
        let mut retries = 0;
        loop {
            let mut tx = self
                .open
                .db
                .write_tx()?
                .durability(Some(PersistMode::SyncAll));
            let Some(old) = tx.get(&self.open.ks, key)? else {
                bail!("account {account} is missing");
            };
            let new = balance(&old)? + delta;
            tx.insert(&self.open.ks, key, new.to_le_bytes());
            match tx.commit()? {
                Ok(()) => return Ok(retries),
                Err(_conflict) => retries += 1,
            }
        }
    }
}
