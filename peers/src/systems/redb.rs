//! redb (a copy-on-write B-tree store in Rust), one database file, every write transaction
//! committed with `Durability::Immediate` (its default, set explicitly): `commit` returns once
//! the new root is fsync'd. redb runs one write transaction at a time; the TPC-B update is a
//! `get` and an `insert` of the account in one write transaction.
//!
//! The self-check reopens the file: the balances must sum to what the committed updates leave.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use super::{INITIAL_BALANCE, TxnStore, TxnSystem, TxnWorker};

const ACCOUNTS: TableDefinition<u64, i64> = TableDefinition::new("accounts");

fn file(dir: &Path) -> PathBuf {
    dir.join("accounts.redb")
}

/// redb with immediate durability.
#[derive(Debug)]
pub struct Redb;

impl TxnSystem for Redb {
    fn name(&self) -> String {
        "redb".into()
    }

    fn version(&self) -> String {
        env!("PEERS_V_REDB").into()
    }

    fn durability(&self) -> String {
        "WriteTransaction::set_durability(Durability::Immediate): fsync'd at commit".into()
    }

    fn open(&self, dir: &Path, _threads: usize, accounts: u64) -> Result<Box<dyn TxnStore>> {
        let db = Database::create(file(dir))?;
        let mut tx = db.begin_write()?;
        tx.set_durability(Durability::Immediate)?;
        {
            let mut t = tx.open_table(ACCOUNTS)?;
            for a in 0..accounts {
                t.insert(a, INITIAL_BALANCE)?;
            }
        }
        tx.commit()?;
        Ok(Box::new(Open { db }))
    }

    fn reopen_sum(&self, dir: &Path, _threads: usize, accounts: u64) -> Result<i64> {
        let db = Database::open(file(dir))?;
        let tx = db.begin_read()?;
        let t = tx.open_table(ACCOUNTS)?;
        let mut sum = 0i64;
        for a in 0..accounts {
            match t.get(a)? {
                Some(v) => sum += v.value(),
                None => bail!("account {a} is missing after reopen"),
            }
        }
        Ok(sum)
    }
}

struct Open {
    db: Database,
}

impl TxnStore for Open {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(Worker { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

struct Worker<'a> {
    db: &'a Database,
}

impl TxnWorker for Worker<'_> {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(Durability::Immediate)?;
        {
            let mut t = tx.open_table(ACCOUNTS)?;
            let Some(old) = t.get(account)?.map(|v| v.value()) else {
                bail!("account {account} is missing");
            };
            t.insert(account, old + delta)?;
        }
        tx.commit()?;
        Ok(0)
    }
}
