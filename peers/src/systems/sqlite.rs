//! SQLite through rusqlite (the library bundled and compiled by `libsqlite3-sys`), in WAL mode
//! with `synchronous=FULL` (the WAL is fsync'd at every commit), one connection per thread
//! with a busy timeout. The TPC-B update is `BEGIN IMMEDIATE`, a `SELECT` of the balance, an
//! `UPDATE` to balance + delta, and `COMMIT`; a commit still busy after the timeout is rolled
//! back and retried.
//!
//! The self-check reopens the file: the balances must sum to what the committed updates leave.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::{INITIAL_BALANCE, TxnStore, TxnSystem, TxnWorker};

/// How long a connection waits for the write lock before SQLite returns busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

fn file(dir: &Path) -> PathBuf {
    dir.join("accounts.sqlite")
}

fn connect(path: &Path) -> Result<Connection> {
    let c = Connection::open(path).with_context(|| format!("open {}", path.display()))?;
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        bail!("SQLite refused WAL mode (got {mode})");
    }
    c.pragma_update(None, "synchronous", "FULL")?;
    c.busy_timeout(BUSY_TIMEOUT)?;
    Ok(c)
}

/// SQLite, WAL mode, synchronous=FULL.
#[derive(Debug)]
pub struct Sqlite;

impl TxnSystem for Sqlite {
    fn name(&self) -> String {
        "sqlite".into()
    }

    fn version(&self) -> String {
        format!(
            "rusqlite {}, SQLite {} (bundled)",
            env!("PEERS_V_RUSQLITE"),
            rusqlite::version()
        )
    }

    fn durability(&self) -> String {
        "WAL mode, synchronous=FULL, BEGIN IMMEDIATE..COMMIT: WAL fsync'd per commit".into()
    }

    fn open(&self, dir: &Path, _threads: usize, accounts: u64) -> Result<Box<dyn TxnStore>> {
        let path = file(dir);
        let mut c = connect(&path)?;
        c.execute(
            "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)",
            [],
        )?;
        let tx = c.transaction()?;
        {
            let mut ins = tx.prepare("INSERT INTO accounts (id, balance) VALUES (?1, ?2)")?;
            for a in 0..accounts {
                ins.execute(params![a as i64, INITIAL_BALANCE])?;
            }
        }
        tx.commit()?;
        // Keep the loading connection open while the workers run, so the WAL is not
        // checkpointed and removed between them; the workers open their own.
        Ok(Box::new(Open {
            path,
            keep: Mutex::new(c),
        }))
    }

    fn reopen_sum(&self, dir: &Path, _threads: usize, accounts: u64) -> Result<i64> {
        let c = connect(&file(dir))?;
        let (n, sum): (i64, i64) = c.query_row(
            "SELECT count(*), coalesce(sum(balance), 0) FROM accounts",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if n as u64 != accounts {
            bail!("{n} accounts after reopen, {accounts} loaded");
        }
        Ok(sum)
    }
}

struct Open {
    path: PathBuf,
    /// The loading connection, held (never used) until close; behind a lock because a
    /// `Connection` is not `Sync`.
    keep: Mutex<Connection>,
}

impl TxnStore for Open {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(Worker {
            c: connect(&self.path)?,
        }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        let c = self
            .keep
            .into_inner()
            .map_err(|_| anyhow::anyhow!("a lock was poisoned"))?;
        c.close().map_err(|(_, e)| anyhow::Error::from(e))?;
        Ok(())
    }
}

struct Worker {
    c: Connection,
}

fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

impl Worker {
    /// One try: `false` if SQLite stayed busy past the timeout.
    fn attempt(&mut self, account: u64, delta: i64) -> Result<bool> {
        let r = (|| -> rusqlite::Result<Option<()>> {
            self.c.execute_batch("BEGIN IMMEDIATE")?;
            let old: Option<i64> = self
                .c
                .prepare_cached("SELECT balance FROM accounts WHERE id = ?1")?
                .query_row(params![account as i64], |r| r.get(0))
                .optional()?;
            let Some(old) = old else {
                return Ok(None);
            };
            self.c
                .prepare_cached("UPDATE accounts SET balance = ?1 WHERE id = ?2")?
                .execute(params![old + delta, account as i64])?;
            self.c.execute_batch("COMMIT")?;
            Ok(Some(()))
        })();
        match r {
            Ok(Some(())) => Ok(true),
            Ok(None) => {
                self.c.execute_batch("ROLLBACK")?;
                bail!("account {account} is missing")
            }
            Err(e) if busy(&e) => {
                if !self.c.is_autocommit() {
                    self.c.execute_batch("ROLLBACK")?;
                }
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl TxnWorker for Worker {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let mut retries = 0;
        while !self.attempt(account, delta)? {
            retries += 1;
        }
        Ok(retries)
    }
}
