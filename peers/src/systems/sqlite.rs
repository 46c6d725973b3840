//! SQLite through rusqlite (the library bundled and compiled by `libsqlite3-sys`), in WAL mode
//! with `synchronous=FULL` (the WAL is fsync'd at every commit), one connection per thread
//! with a busy timeout. The TPC-B update is `BEGIN IMMEDIATE`, a `SELECT` of the balance, an
//! `UPDATE` to balance + delta, and `COMMIT`; a transaction still busy after the timeout is
//! rolled back and retried ([`super::retry`]). A YCSB transaction is `BEGIN IMMEDIATE`
//! (`BEGIN DEFERRED` if it only reads), a `SELECT` of each row, an `UPDATE` of each row it
//! updates, and `COMMIT`. TPC-B's four tables are four SQLite tables (`accounts`, `tellers`,
//! `branches`: `id INTEGER PRIMARY KEY, balance INTEGER`; `history`: `id INTEGER PRIMARY
//! KEY`, account, teller, branch, delta, time), and its transaction `BEGIN IMMEDIATE`,
//! `UPDATE accounts SET balance = balance + ? .. RETURNING balance`, the same `UPDATE` of the
//! teller and of the branch, an `INSERT` into history, and `COMMIT`, retried the same way.
//!
//! Two variants ([`Variant`]), each for every table set:
//! * `default`: every thread writes through its own connection. SQLite lets one writer in at
//!   a time; the others wait in its busy handler, which sleeps (1, 2, 5, ... up to 100 ms)
//!   and tries again, so with many threads writers wait far longer than the writer ahead of
//!   them takes.
//! * `tuned`: one writer connection behind an application mutex, the pattern SQLite's users
//!   run for a database written from many threads: writers queue on the mutex (woken as soon
//!   as the writer ahead is done) instead of sleeping in the busy handler. Read-only
//!   transactions still read through each thread's own connection (WAL mode lets readers run
//!   beside the writer).
//!
//! Reopening opens a connection; SQLite recovers from the WAL at the first read. The reopen
//! workload's loading child may commit with `synchronous=NORMAL` (see `relaxed_setting`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::{
    Access, INITIAL_BALANCE, Setup, Table, TpcbPart, TpcbScale, TpcbTxn, TxnStore, TxnSystem,
    TxnWorker, Variant, retry, ycsb_next, ycsb_value, ycsb_version,
};

/// How long a connection waits for the write lock before SQLite returns busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

fn file(dir: &Path) -> PathBuf {
    dir.join("store.sqlite")
}

fn connect(path: &Path, relaxed: bool) -> Result<Connection> {
    let c = Connection::open(path).with_context(|| format!("open {}", path.display()))?;
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        bail!("SQLite refused WAL mode (got {mode})");
    }
    c.pragma_update(None, "synchronous", if relaxed { "NORMAL" } else { "FULL" })?;
    c.busy_timeout(BUSY_TIMEOUT)?;
    Ok(c)
}

/// The SQL of one table: its name and value column.
fn sql(table: Table) -> (&'static str, &'static str) {
    match table {
        Table::Accounts | Table::Tpcb(_) => ("accounts", "balance"),
        Table::Ycsb => ("usertable", "field0"),
    }
}

/// A row's value from its column: the balance as 8 bytes little-endian, or the blob.
fn value(table: Table, r: &rusqlite::Row<'_>, col: usize) -> rusqlite::Result<Vec<u8>> {
    Ok(match table {
        Table::Accounts | Table::Tpcb(_) => r.get::<_, i64>(col)?.to_le_bytes().to_vec(),
        Table::Ycsb => r.get(col)?,
    })
}

/// Create TPC-B's four tables in `c` and load them at `scale`, in one transaction.
fn create_tpcb(c: &mut Connection, scale: TpcbScale) -> Result<()> {
    let tx = c.transaction()?;
    for part in TpcbPart::BALANCES {
        let name = part.name();
        tx.execute(
            &format!("CREATE TABLE {name} (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)"),
            [],
        )?;
        let mut ins = tx.prepare(&format!("INSERT INTO {name} (id, balance) VALUES (?1, ?2)"))?;
        for id in 0..scale.rows(part) {
            ins.execute(params![id as i64, INITIAL_BALANCE])?;
        }
    }
    tx.execute(
        "CREATE TABLE history (id INTEGER PRIMARY KEY, account INTEGER NOT NULL, \
         teller INTEGER NOT NULL, branch INTEGER NOT NULL, delta INTEGER NOT NULL, \
         time INTEGER NOT NULL)",
        [],
    )?;
    tx.commit()?;
    Ok(())
}

/// SQLite, WAL mode, synchronous=FULL, in the given variant.
#[derive(Debug)]
pub struct Sqlite(pub Variant);

impl Sqlite {
    /// The store on `c` (the first connection), with the tuned variant's writer connection.
    fn store(&self, path: PathBuf, setup: &Setup, c: Connection) -> Result<Box<dyn TxnStore>> {
        let writer = match self.0 {
            Variant::Default => None,
            Variant::Tuned => Some(Mutex::new(connect(&path, setup.relaxed)?)),
        };
        Ok(Box::new(Open {
            path,
            setup: *setup,
            keep: Mutex::new(c),
            writer,
        }))
    }
}

impl TxnSystem for Sqlite {
    fn name(&self) -> String {
        format!("sqlite{}", self.0.suffix())
    }

    fn variant(&self) -> Variant {
        self.0
    }

    fn version(&self) -> String {
        format!(
            "rusqlite {}, SQLite {} (bundled)",
            env!("PEERS_V_RUSQLITE"),
            rusqlite::version()
        )
    }

    fn durability(&self) -> String {
        let writers = match self.0 {
            Variant::Default => "a connection per thread, busy_timeout 10 s",
            Variant::Tuned => "tuned: one writer connection behind an application mutex",
        };
        format!(
            "WAL mode, synchronous=FULL, BEGIN IMMEDIATE..COMMIT: WAL fsync'd per commit; \
             {writers}"
        )
    }

    fn relaxed_setting(&self) -> Option<String> {
        Some(
            "WAL mode, synchronous=NORMAL: each commit written to the WAL, fsync'd only at \
             checkpoints"
                .into(),
        )
    }

    fn cache_setting(&self) -> String {
        "page cache PRAGMA cache_size=-2000 (2,000 KiB) per connection, mmap_size=0 (defaults)"
            .into()
    }

    fn is_log_file(&self, file: &Path) -> bool {
        file.to_string_lossy().ends_with("-wal")
    }

    fn open(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        let path = file(dir);
        let mut c = connect(&path, setup.relaxed)?;
        if let Table::Tpcb(scale) = setup.table {
            create_tpcb(&mut c, scale)?;
            return self.store(path, setup, c);
        }
        let (name, col) = sql(setup.table);
        let ty = match setup.table {
            Table::Accounts | Table::Tpcb(_) => "INTEGER",
            Table::Ycsb => "BLOB",
        };
        c.execute(
            &format!("CREATE TABLE {name} (id INTEGER PRIMARY KEY, {col} {ty} NOT NULL)"),
            [],
        )?;
        let tx = c.transaction()?;
        {
            let mut ins = tx.prepare(&format!("INSERT INTO {name} (id, {col}) VALUES (?1, ?2)"))?;
            for key in 0..setup.rows {
                match setup.table {
                    Table::Ycsb => ins.execute(params![key as i64, &ycsb_value(key, 0)[..]])?,
                    _ => ins.execute(params![key as i64, INITIAL_BALANCE])?,
                };
            }
        }
        tx.commit()?;
        // Keep the loading connection open while the workers run, so the WAL is not
        // checkpointed and removed between them; the workers open their own.
        self.store(path, setup, c)
    }

    fn reopen(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        let path = file(dir);
        // Opening a connection reads nothing: recovery from the WAL happens at the first
        // read.
        let c = connect(&path, setup.relaxed)?;
        self.store(path, setup, c)
    }
}

struct Open {
    path: PathBuf,
    setup: Setup,
    /// The first connection, held until close (and used for `get` and `scan`); behind a lock
    /// because a `Connection` is not `Sync`.
    keep: Mutex<Connection>,
    /// The tuned variant's one writer connection: every write transaction holds the lock.
    writer: Option<Mutex<Connection>>,
}

/// Lock `m`, a poisoned lock being an error.
fn lock(m: &Mutex<Connection>) -> Result<std::sync::MutexGuard<'_, Connection>> {
    m.lock().map_err(|_| anyhow::anyhow!("a lock was poisoned"))
}

impl Open {
    fn keep(&self) -> Result<std::sync::MutexGuard<'_, Connection>> {
        lock(&self.keep)
    }
}

impl TxnStore for Open {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(Worker {
            c: connect(&self.path, self.setup.relaxed)?,
            table: self.setup.table,
            writer: self.writer.as_ref(),
        }))
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
        let (name, col) = sql(self.setup.table);
        let table = self.setup.table;
        Ok(self
            .keep()?
            .prepare_cached(&format!("SELECT {col} FROM {name} WHERE id = ?1"))?
            .query_row(params![key as i64], |r| value(table, r, 0))
            .optional()?)
    }

    fn scan(&self, rows: u64, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        let (name, col) = sql(self.setup.table);
        let table = self.setup.table;
        let c = self.keep()?;
        let mut q = c.prepare(&format!("SELECT id, {col} FROM {name}"))?;
        let mut it = q.query([])?;
        let mut seen = 0u64;
        while let Some(r) = it.next()? {
            let id: i64 = r.get(0)?;
            let key = u64::try_from(id).ok().filter(|k| *k < rows);
            let Some(key) = key else {
                bail!("row {id} is there; the table has keys 0..{rows}");
            };
            f(key, &value(table, r, 1)?)?;
            seen += 1;
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
        let c = self.keep()?;
        let id = |r: &rusqlite::Row<'_>, col: usize| -> Result<u64> {
            let v: i64 = r.get(col)?;
            u64::try_from(v).with_context(|| format!("{} row {v}: a negative id", part.name()))
        };
        if part == TpcbPart::History {
            let mut q =
                c.prepare("SELECT id, account, teller, branch, delta, time FROM history")?;
            let mut it = q.query([])?;
            while let Some(r) = it.next()? {
                let txn = TpcbTxn {
                    id: id(r, 0)?,
                    account: id(r, 1)?,
                    teller: id(r, 2)?,
                    branch: id(r, 3)?,
                    delta: r.get(4)?,
                    time: id(r, 5)?,
                };
                f(txn.id, &txn.history())?;
            }
        } else {
            let mut q = c.prepare(&format!("SELECT id, balance FROM {}", part.name()))?;
            let mut it = q.query([])?;
            while let Some(r) = it.next()? {
                f(id(r, 0)?, &r.get::<_, i64>(1)?.to_le_bytes())?;
            }
        }
        Ok(())
    }

    fn close(self: Box<Self>) -> Result<()> {
        let this = *self;
        let poisoned = |_| anyhow::anyhow!("a lock was poisoned");
        if let Some(w) = this.writer {
            let w = w.into_inner().map_err(poisoned)?;
            w.close().map_err(|(_, e)| anyhow::Error::from(e))?;
        }
        let c = this.keep.into_inner().map_err(poisoned)?;
        c.close().map_err(|(_, e)| anyhow::Error::from(e))?;
        Ok(())
    }
}

struct Worker<'a> {
    /// This thread's connection: every transaction of the default variant, read-only ones of
    /// the tuned one.
    c: Connection,
    table: Table,
    /// The tuned variant's writer connection.
    writer: Option<&'a Mutex<Connection>>,
}

fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Why a try failed: SQLite stayed busy (retry), or anything else.
enum Fail {
    Busy,
    Other(anyhow::Error),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Fail {
        if busy(&e) {
            Fail::Busy
        } else {
            Fail::Other(e.into())
        }
    }
}

impl From<anyhow::Error> for Fail {
    fn from(e: anyhow::Error) -> Fail {
        Fail::Other(e)
    }
}

/// One try of the account update on `c`: `None` if SQLite stayed busy past the timeout.
fn attempt(c: &Connection, account: u64, delta: i64) -> Result<Option<()>> {
    let r = (|| -> rusqlite::Result<Option<()>> {
        c.execute_batch("BEGIN IMMEDIATE")?;
        let old: Option<i64> = c
            .prepare_cached("SELECT balance FROM accounts WHERE id = ?1")?
            .query_row(params![account as i64], |r| r.get(0))
            .optional()?;
        let Some(old) = old else {
            return Ok(None);
        };
        c.prepare_cached("UPDATE accounts SET balance = ?1 WHERE id = ?2")?
            .execute(params![old + delta, account as i64])?;
        c.execute_batch("COMMIT")?;
        Ok(Some(()))
    })();
    match r {
        Ok(Some(())) => Ok(Some(())),
        Ok(None) => {
            c.execute_batch("ROLLBACK")?;
            bail!("account {account} is missing")
        }
        Err(e) if busy(&e) => {
            if !c.is_autocommit() {
                c.execute_batch("ROLLBACK")?;
            }
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// One try of a TPC-B transaction on `c`: `None` if SQLite stayed busy past the timeout.
fn attempt_tpcb(c: &Connection, x: &TpcbTxn) -> Result<Option<()>> {
    let r = (|| -> Result<(), Fail> {
        c.execute_batch("BEGIN IMMEDIATE")?;
        let balance: Option<i64> = c
            .prepare_cached(
                "UPDATE accounts SET balance = balance + ?1 WHERE id = ?2 RETURNING balance",
            )?
            .query_row(params![x.delta, x.account as i64], |r| r.get(0))
            .optional()?;
        if balance.is_none() {
            return Err(anyhow::anyhow!("account {} is missing", x.account).into());
        }
        // TPC-B returns the account's new balance to the terminal.
        std::hint::black_box(balance);
        for (sql, id) in [
            (
                "UPDATE tellers SET balance = balance + ?1 WHERE id = ?2",
                x.teller,
            ),
            (
                "UPDATE branches SET balance = balance + ?1 WHERE id = ?2",
                x.branch,
            ),
        ] {
            let n = c
                .prepare_cached(sql)?
                .execute(params![x.delta, id as i64])?;
            if n != 1 {
                return Err(anyhow::anyhow!("{sql}: {n} rows for id {id}").into());
            }
        }
        c.prepare_cached(
            "INSERT INTO history (id, account, teller, branch, delta, time) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            x.id as i64,
            x.account as i64,
            x.teller as i64,
            x.branch as i64,
            x.delta,
            x.time as i64
        ])?;
        c.execute_batch("COMMIT")?;
        Ok(())
    })();
    let retry = match r {
        Ok(()) => return Ok(Some(())),
        Err(Fail::Busy) => Ok(None),
        Err(Fail::Other(e)) => Err(e),
    };
    if !c.is_autocommit() {
        c.execute_batch("ROLLBACK")?;
    }
    retry
}

/// One try of a YCSB transaction on `c`: `None` if SQLite stayed busy past the timeout.
fn attempt_ycsb(c: &Connection, accesses: &[Access]) -> Result<Option<()>> {
    let r = (|| -> Result<(), Fail> {
        // A transaction that writes takes the write lock first; a read-only one reads a
        // snapshot and commits without writing.
        let writes = accesses.iter().any(|a| a.update);
        c.execute_batch(if writes {
            "BEGIN IMMEDIATE"
        } else {
            "BEGIN DEFERRED"
        })?;
        for a in accesses {
            let old: Option<Vec<u8>> = c
                .prepare_cached("SELECT field0 FROM usertable WHERE id = ?1")?
                .query_row(params![a.key as i64], |r| r.get(0))
                .optional()?;
            let Some(old) = old else {
                return Err(anyhow::anyhow!("row {} is missing", a.key).into());
            };
            if a.update {
                let new = ycsb_next(a.key, &old)?;
                c.prepare_cached("UPDATE usertable SET field0 = ?1 WHERE id = ?2")?
                    .execute(params![&new[..], a.key as i64])?;
            } else {
                ycsb_version(a.key, &old)?;
            }
        }
        c.execute_batch("COMMIT")?;
        Ok(())
    })();
    let retry = match r {
        Ok(()) => return Ok(Some(())),
        Err(Fail::Busy) => Ok(None),
        Err(Fail::Other(e)) => Err(e),
    };
    if !c.is_autocommit() {
        c.execute_batch("ROLLBACK")?;
    }
    retry
}

impl TxnWorker for Worker<'_> {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        if self.table != Table::Accounts {
            bail!("a TPC-B update on the YCSB table");
        }
        let r = match self.writer {
            Some(w) => retry(|| attempt(&*lock(w)?, account, delta))?,
            None => retry(|| attempt(&self.c, account, delta))?,
        };
        Ok(r.retries)
    }

    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32> {
        if !matches!(self.table, Table::Tpcb(_)) {
            bail!("a TPC-B transaction on a store without TPC-B's tables");
        }
        let r = match self.writer {
            Some(w) => retry(|| attempt_tpcb(&*lock(w)?, txn))?,
            None => retry(|| attempt_tpcb(&self.c, txn))?,
        };
        Ok(r.retries)
    }

    fn ycsb(&mut self, accesses: &[Access]) -> Result<u32> {
        if self.table != Table::Ycsb {
            bail!("a YCSB transaction on the accounts table");
        }
        let writes = accesses.iter().any(|a| a.update);
        let r = match self.writer {
            Some(w) if writes => retry(|| attempt_ycsb(&*lock(w)?, accesses))?,
            _ => retry(|| attempt_ycsb(&self.c, accesses))?,
        };
        Ok(r.retries)
    }
}
