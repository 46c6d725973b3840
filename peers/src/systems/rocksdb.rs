//! RocksDB through rust-rocksdb, linked against the system's librocksdb (Debian's, see
//! `scripts/peers.sh`), default options plus `create_if_missing`, every write with
//! `WriteOptions::set_sync(true)`: it returns once the write-ahead log is fdatasync'd (RocksDB
//! groups concurrent synced writers behind one leader).
//!
//! * Log appends ([`RocksWal`]): each record one `put_opt` of key (thread, seq).
//! * Durable transactions ([`RocksTxn`]): a pessimistic `TransactionDB`, each update one
//!   transaction (`get_for_update`, `put`, `commit`) begun with the synced write options;
//!   lock time-outs and busy errors are retried. A YCSB transaction is `get_for_update` of each
//!   row (shared for a read, exclusive for an update), `put` of each row it updates, `commit`.
//!   TPC-B's four tables share the default column family, told apart by the keys' first byte
//!   ([`tpcb_key`]); its transaction is `get_for_update` and `put` of the account, the teller
//!   and the branch (locks taken in that order by every transaction, so none wait in a
//!   cycle), `put` of the history row, `commit`.
//!
//! The self-checks reopen the database: the last acknowledged record of each thread must read
//! back; the transactional rows are read back through `get`. RocksDB commits durably in the
//! reopen workload too (1,000,000 synced commits take well under a minute with many threads).

use std::path::Path;

use anyhow::{Result, bail};
use rocksdb::{
    DB, Direction, ErrorKind, IteratorMode, Options, TransactionDB, TransactionDBOptions,
    TransactionOptions, WriteBatchWithTransaction, WriteOptions,
};

use super::{
    Access, AppendLog, AppendSystem, Appender, INITIAL_BALANCE, Setup, Table, TpcbPart, TpcbTxn,
    TxnStore, TxnSystem, TxnWorker, account_key, append_key, balance, tpcb_key, tpcb_key_id,
    ycsb_next, ycsb_value, ycsb_version,
};

/// The binding crate's version and the library it runs (set by `scripts/peers.sh`).
fn version() -> String {
    let lib = std::env::var("PEERS_ROCKSDB_LIB").unwrap_or_else(|_| "system library".into());
    format!("rocksdb crate {}, {lib}", env!("PEERS_V_ROCKSDB"))
}

fn options() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o
}

fn synced() -> WriteOptions {
    let mut w = WriteOptions::default();
    w.set_sync(true);
    w
}

/// RocksDB's write-ahead log under synced puts.
#[derive(Debug)]
pub struct RocksWal;

impl AppendSystem for RocksWal {
    fn name(&self) -> String {
        "rocksdb".into()
    }

    fn version(&self) -> String {
        version()
    }

    fn durability(&self) -> String {
        "put_opt with WriteOptions::set_sync(true): WAL fdatasync'd".into()
    }

    fn open(&self, dir: &Path, _threads: usize) -> Result<Box<dyn AppendLog>> {
        Ok(Box::new(WalOpen {
            db: DB::open(&options(), dir)?,
            wo: synced(),
        }))
    }

    fn verify(&self, dir: &Path, acked: &[u64], record_bytes: usize) -> Result<()> {
        let db = DB::open(&options(), dir)?;
        for (t, &n) in acked.iter().enumerate() {
            let Some(last) = n.checked_sub(1) else {
                continue;
            };
            match db.get(append_key(t, last))? {
                Some(v) if v.len() == record_bytes && v[..16] == append_key(t, last) => {}
                _ => bail!("thread {t}: acknowledged record {last} does not read back"),
            }
        }
        Ok(())
    }
}

struct WalOpen {
    db: DB,
    wo: WriteOptions,
}

impl AppendLog for WalOpen {
    fn writer(&self, thread: usize) -> Result<Box<dyn Appender + '_>> {
        Ok(Box::new(WalWriter { open: self, thread }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush_wal(true)?;
        Ok(())
    }
}

struct WalWriter<'a> {
    open: &'a WalOpen,
    thread: usize,
}

impl Appender for WalWriter<'_> {
    fn append(&mut self, seq: u64, payload: &[u8]) -> Result<()> {
        let key = append_key(self.thread, seq);
        self.open.db.put_opt(key, payload, &self.open.wo)?;
        Ok(())
    }
}

/// RocksDB's pessimistic `TransactionDB`, synced commits.
#[derive(Debug)]
pub struct RocksTxn;

fn open_txn_db(dir: &Path) -> Result<TransactionDB> {
    Ok(TransactionDB::open(
        &options(),
        &TransactionDBOptions::default(),
        dir,
    )?)
}

impl TxnSystem for RocksTxn {
    fn name(&self) -> String {
        "rocksdb".into()
    }

    fn version(&self) -> String {
        version()
    }

    fn durability(&self) -> String {
        "TransactionDB, commit with WriteOptions::set_sync(true): WAL fdatasync'd".into()
    }

    fn cache_setting(&self) -> String {
        "defaults: 8 MiB block cache (RocksDB 7.8), 64 MiB write buffer (rows stay in the \
         memtable until it is flushed)"
            .into()
    }

    fn is_log_file(&self, file: &Path) -> bool {
        // Write-ahead log files; the info LOG files are not.
        file.extension().is_some_and(|e| e == "log")
    }

    fn open(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        let db = open_txn_db(dir)?;
        let wo = synced();
        // (key, value) of every row, the key-value pairs of the table.
        let rows: Box<dyn Iterator<Item = (Vec<u8>, Vec<u8>)>> = match setup.table {
            Table::Tpcb(scale) => Box::new(TpcbPart::BALANCES.into_iter().flat_map(move |part| {
                (0..scale.rows(part)).map(move |id| {
                    (
                        tpcb_key(part, id).to_vec(),
                        INITIAL_BALANCE.to_le_bytes().to_vec(),
                    )
                })
            })),
            Table::Ycsb => Box::new(
                (0..setup.rows).map(|key| (account_key(key).to_vec(), ycsb_value(key, 0).to_vec())),
            ),
            Table::Accounts => Box::new((0..setup.rows).map(|key| {
                (
                    account_key(key).to_vec(),
                    INITIAL_BALANCE.to_le_bytes().to_vec(),
                )
            })),
        };
        let mut batch = WriteBatchWithTransaction::<true>::default();
        for (key, value) in rows {
            batch.put(key, value);
            if batch.len() >= 10_000 {
                db.write_opt(std::mem::take(&mut batch), &wo)?;
            }
        }
        db.write_opt(batch, &wo)?;
        Ok(Box::new(TxnOpen {
            db,
            wo,
            table: setup.table,
        }))
    }

    fn reopen(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>> {
        Ok(Box::new(TxnOpen {
            db: open_txn_db(dir)?,
            wo: synced(),
            table: setup.table,
        }))
    }
}

struct TxnOpen {
    db: TransactionDB,
    wo: WriteOptions,
    /// The table it holds.
    table: Table,
}

impl TxnStore for TxnOpen {
    fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
        Ok(Box::new(TxnW { open: self }))
    }

    fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
        Ok(match self.table {
            Table::Tpcb(_) => self.db.get(tpcb_key(TpcbPart::Accounts, key))?,
            _ => self.db.get(account_key(key))?,
        })
    }

    fn scan_tpcb(&self, part: TpcbPart, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        if !matches!(self.table, Table::Tpcb(_)) {
            bail!("this store holds no TPC-B tables");
        }
        let from = [part.tag()];
        for kv in self
            .db
            .iterator(IteratorMode::From(&from, Direction::Forward))
        {
            let (k, v) = kv?;
            if k.first() != Some(&part.tag()) {
                break;
            }
            let Some(id) = tpcb_key_id(part, &k) else {
                bail!("a key of {} bytes under {}'s prefix", k.len(), part.name());
            };
            f(id, &v)?;
        }
        Ok(())
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

struct TxnW<'a> {
    open: &'a TxnOpen,
}

/// `Ok(None)` for the errors a pessimistic transaction retries (lock time-out, busy).
fn retryable<T>(r: std::result::Result<T, rocksdb::Error>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

impl TxnW<'_> {
    fn begin(&self) -> rocksdb::Transaction<'_, TransactionDB> {
        self.open
            .db
            .transaction_opt(&self.open.wo, &TransactionOptions::default())
    }

    /// One try: `false` if it has to be retried.
    fn attempt(&self, key: &[u8], delta: i64) -> Result<bool> {
        let tx = self.begin();
        let old = match retryable(tx.get_for_update(key, true))? {
            Some(Some(v)) => balance(&v)?,
            Some(None) => bail!("an account is missing"),
            None => return Ok(false),
        };
        if retryable(tx.put(key, (old + delta).to_le_bytes()))?.is_none() {
            return Ok(false);
        }
        Ok(retryable(tx.commit())?.is_some())
    }

    /// One try of a TPC-B transaction: `false` if it has to be retried.
    fn attempt_tpcb(&self, x: &TpcbTxn) -> Result<bool> {
        let tx = self.begin();
        for (part, id) in [
            (TpcbPart::Accounts, x.account),
            (TpcbPart::Tellers, x.teller),
            (TpcbPart::Branches, x.branch),
        ] {
            let key = tpcb_key(part, id);
            let old = match retryable(tx.get_for_update(key, true))? {
                Some(Some(v)) => balance(&v)?,
                Some(None) => bail!("{} row {id} is missing", part.name()),
                None => return Ok(false),
            };
            if retryable(tx.put(key, (old + x.delta).to_le_bytes()))?.is_none() {
                return Ok(false);
            }
        }
        if retryable(tx.put(tpcb_key(TpcbPart::History, x.id), x.history()))?.is_none() {
            return Ok(false);
        }
        Ok(retryable(tx.commit())?.is_some())
    }

    /// One try of a YCSB transaction: `false` if it has to be retried. Reads take shared
    /// locks, updates exclusive ones (`get_for_update`), so it is serializable like the other
    /// systems' transactions.
    fn attempt_ycsb(&self, accesses: &[Access]) -> Result<bool> {
        let tx = self.begin();
        for a in accesses {
            let key = account_key(a.key);
            let old = match retryable(tx.get_for_update(key, a.update))? {
                Some(Some(v)) => v,
                Some(None) => bail!("row {} is missing", a.key),
                None => return Ok(false),
            };
            if a.update {
                if retryable(tx.put(key, ycsb_next(a.key, &old)?))?.is_none() {
                    return Ok(false);
                }
            } else {
                ycsb_version(a.key, &old)?;
            }
        }
        Ok(retryable(tx.commit())?.is_some())
    }
}

impl TxnWorker for TxnW<'_> {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let key = account_key(account);
        let mut retries = 0;
        while !self.attempt(&key, delta)? {
            retries += 1;
        }
        Ok(retries)
    }

    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32> {
        let mut retries = 0;
        while !self.attempt_tpcb(txn)? {
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
