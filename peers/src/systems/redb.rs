//! redb (a copy-on-write B-tree store in Rust), one database file, every write transaction
//! committed with `Durability::Immediate` (its default, set explicitly): `commit` returns once
//! the new root is fsync'd. redb runs one write transaction at a time; the TPC-B update is a
//! `get` and an `insert` of the account in one write transaction, a YCSB transaction a `get`
//! of each row and an `insert` of each row it updates (a read transaction if it only reads).
//! TPC-B's four tables are four redb tables (accounts, tellers, branches: `u64 -> i64`;
//! history: `u64 -> &[u8]`, 40 bytes), and its transaction a `get` and an `insert` of the
//! account, the teller and the branch and an `insert` of the history row in one write
//! transaction.
//!
//! Reopening after a crash repairs the file (redb rebuilds its allocator state). redb has no
//! setting that writes a commit to the operating system without fsync; the reopen workload's
//! loading child may commit with `Durability::None` and every 1,000th commit (and a last one,
//! [`TxnStore::settle`]) `Immediate`, which persists the `None` commits before it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use anyhow::{Result, bail};
use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};

use super::{
    Access, INITIAL_BALANCE, Setup, Table, TpcbPart, TpcbTxn, TxnStore, TxnSystem, TxnWorker,
    ycsb_next, ycsb_value, ycsb_version,
};

const ACCOUNTS: TableDefinition<u64, i64> = TableDefinition::new("accounts");
const TELLERS: TableDefinition<u64, i64> = TableDefinition::new("tellers");
const BRANCHES: TableDefinition<u64, i64> = TableDefinition::new("branches");
const HISTORY: TableDefinition<u64, &[u8]> = TableDefinition::new("history");

/// The table of balances of TPC-B table `part` (history has none).
fn balances(part: TpcbPart) -> Result<TableDefinition<'static, u64, i64>> {
    Ok(match part {
        TpcbPart::Accounts => ACCOUNTS,
        TpcbPart::Tellers => TELLERS,
        TpcbPart::Branches => BRANCHES,
        TpcbPart::History => bail!("history holds no balances"),
    })
}
const USERTABLE: TableDefinition<u64, &[u8]> = TableDefinition::new("usertable");

/// Under the relaxed setting, every this many commits one is `Immediate`.
const RELAXED_IMMEDIATE_EVERY: u64 = 1_000;

fn file(dir: &Path) -> PathBuf {
    dir.join("store.redb")
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

    fn relaxed_setting(&self) -> Option<String> {
        Some(format!(
            "Durability::None, every {RELAXED_IMMEDIATE_EVERY}th commit and the last \
             Durability::Immediate (redb has no write-without-fsync setting; a None commit \
             persists with the next Immediate one)"
        ))
    }

    fn cache_setting(&self) -> String {
        "Builder default: cache_size 1 GiB (read and write cache), no mmap".into()
    }

    fn is_log_file(&self, _file: &Path) -> bool {
        // A copy-on-write B-tree: no log.
        false
    }

    fn open(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        let db = Database::create(file(dir))?;
        let mut tx = db.begin_write()?;
        tx.set_durability(Durability::Immediate)?;
        match setup.table {
            Table::Tpcb(scale) => {
                for part in TpcbPart::BALANCES {
                    let mut t = tx.open_table(balances(part)?)?;
                    for id in 0..scale.rows(part) {
                        t.insert(id, INITIAL_BALANCE)?;
                    }
                }
                tx.open_table(HISTORY)?;
            }
            Table::Accounts => {
                let mut t = tx.open_table(ACCOUNTS)?;
                for a in 0..setup.rows {
                    t.insert(a, INITIAL_BALANCE)?;
                }
            }
            Table::Ycsb => {
                let mut t = tx.open_table(USERTABLE)?;
                for key in 0..setup.rows {
                    t.insert(key, &ycsb_value(key, 0)[..])?;
                }
            }
        }
        tx.commit()?;
        Ok(Box::new(Open::new(db, setup)))
    }

    fn reopen(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        Ok(Box::new(Open::new(Database::open(file(dir))?, setup)))
    }
}

struct Open {
    db: Database,
    setup: Setup,
    /// Write transactions begun (the relaxed setting makes every 1,000th `Immediate`).
    commits: AtomicU64,
}

impl Open {
    fn new(db: Database, setup: &Setup) -> Open {
        Open {
            db,
            setup: *setup,
            commits: AtomicU64::new(0),
        }
    }

    /// A write transaction with the durability of the setup.
    fn begin_write(&self) -> Result<WriteTransaction> {
        let mut tx = self.db.begin_write()?;
        let n = self.commits.fetch_add(1, Relaxed) + 1;
        let durability = if self.setup.relaxed && !n.is_multiple_of(RELAXED_IMMEDIATE_EVERY) {
            Durability::None
        } else {
            Durability::Immediate
        };
        tx.set_durability(durability)?;
        Ok(tx)
    }
}

impl TxnStore for Open {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(Worker { open: self }))
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
        let tx = self.db.begin_read()?;
        Ok(match self.setup.table {
            Table::Accounts | Table::Tpcb(_) => tx
                .open_table(ACCOUNTS)?
                .get(key)?
                .map(|v| v.value().to_le_bytes().to_vec()),
            Table::Ycsb => tx
                .open_table(USERTABLE)?
                .get(key)?
                .map(|v| v.value().to_vec()),
        })
    }

    fn scan(&self, rows: u64, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        let tx = self.db.begin_read()?;
        let mut seen = 0u64;
        let mut visit = |key: u64, v: &[u8]| -> Result<()> {
            if key >= rows {
                bail!("row {key} is there; the table has keys 0..{rows}");
            }
            seen += 1;
            f(key, v)
        };
        match self.setup.table {
            Table::Accounts | Table::Tpcb(_) => {
                for e in tx.open_table(ACCOUNTS)?.iter()? {
                    let (k, v) = e?;
                    visit(k.value(), &v.value().to_le_bytes())?;
                }
            }
            Table::Ycsb => {
                for e in tx.open_table(USERTABLE)?.iter()? {
                    let (k, v) = e?;
                    visit(k.value(), v.value())?;
                }
            }
        }
        if seen != rows {
            bail!("{seen} rows, {rows} loaded");
        }
        Ok(())
    }

    fn scan_tpcb(&self, part: TpcbPart, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        if !matches!(self.setup.table, Table::Tpcb(_)) {
            bail!("this store holds no TPC-B tables");
        }
        let tx = self.db.begin_read()?;
        if part == TpcbPart::History {
            for e in tx.open_table(HISTORY)?.iter()? {
                let (k, v) = e?;
                f(k.value(), v.value())?;
            }
        } else {
            for e in tx.open_table(balances(part)?)?.iter()? {
                let (k, v) = e?;
                f(k.value(), &v.value().to_le_bytes())?;
            }
        }
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        if self.setup.relaxed {
            let mut tx = self.db.begin_write()?;
            tx.set_durability(Durability::Immediate)?;
            tx.commit()?;
        }
        Ok(())
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

struct Worker<'a> {
    open: &'a Open,
}

impl TxnWorker for Worker<'_> {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let tx = self.open.begin_write()?;
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

    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32> {
        let tx = self.open.begin_write()?;
        for (part, id) in [
            (TpcbPart::Accounts, txn.account),
            (TpcbPart::Tellers, txn.teller),
            (TpcbPart::Branches, txn.branch),
        ] {
            let mut t = tx.open_table(balances(part)?)?;
            let Some(old) = t.get(id)?.map(|v| v.value()) else {
                bail!("{} row {id} is missing", part.name());
            };
            t.insert(id, old + txn.delta)?;
        }
        tx.open_table(HISTORY)?.insert(txn.id, &txn.history()[..])?;
        tx.commit()?;
        Ok(0)
    }

    fn ycsb(&mut self, accesses: &[Access]) -> Result<u32> {
        if !accesses.iter().any(|a| a.update) {
            let tx = self.open.db.begin_read()?;
            let t = tx.open_table(USERTABLE)?;
            for a in accesses {
                let Some(v) = t.get(a.key)? else {
                    bail!("row {} is missing", a.key);
                };
                ycsb_version(a.key, v.value())?;
            }
            return Ok(0);
        }
        let tx = self.open.begin_write()?;
        {
            let mut t = tx.open_table(USERTABLE)?;
            for a in accesses {
                let Some(old) = t.get(a.key)?.map(|v| v.value().to_vec()) else {
                    bail!("row {} is missing", a.key);
                };
                if a.update {
                    t.insert(a.key, &ycsb_next(a.key, &old)?[..])?;
                } else {
                    ycsb_version(a.key, &old)?;
                }
            }
        }
        tx.commit()?;
        Ok(0)
    }
}
