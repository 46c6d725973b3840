//! RocksDB through rust-rocksdb, linked against the system's librocksdb (Debian's, see
//! `scripts/peers.sh`), every write with `WriteOptions::set_sync(true)`: it returns once the
//! write-ahead log is fdatasync'd (RocksDB groups concurrent synced writers behind one leader).
//!
//! * Log appends ([`RocksWal`]): each record one `put_opt` of key (thread, seq).
//! * Durable transactions ([`RocksTxn`]): a pessimistic `TransactionDB`, each update one
//!   transaction (`get_for_update`, `put`, `commit`) begun with the synced write options;
//!   lock time-outs and busy errors are retried ([`super::retry`]). A YCSB transaction that
//!   updates is `get_for_update` of each row (shared for a read, exclusive for an update),
//!   `put` of each row it updates, `commit`. A YCSB transaction that only reads reads its rows
//!   through a snapshot (`TransactionDB::snapshot`) and commits nothing, as the other systems'
//!   read-only transactions do, in both variants: nothing to make durable, so no synced commit.
//!   TPC-B's four tables share the default column family, told apart by the keys' first byte
//!   ([`tpcb_key`]); its transaction is `get_for_update` and `put` of the account, the teller
//!   and the branch (locks taken in that order by every transaction, so none wait in a
//!   cycle), `put` of the history row, `commit`, retried like the others ([`super::retry`]);
//!   both variants hold them the same way.
//!
//! Two variants ([`Variant`]):
//! * `default`: `Options::default()` plus `create_if_missing`.
//! * `tuned`: what RocksDB's own documentation recommends for synced writes from many threads:
//!   - `enable_pipelined_write = true`. The wiki page "Pipelined Write": "The pipelined write
//!     feature added in RocksDB 5.5 is to improve concurrent write throughput in case WAL is
//!     enabled": the next group's WAL write (and fdatasync) starts while the previous group
//!     still writes its memtable.
//!   - `enable_write_thread_adaptive_yield = false`. `options.h` says that with it (the
//!     default) "threads synchronizing with the write batch group leader will wait for up to
//!     write_thread_max_yield_usec before blocking on a mutex", which "can substantially
//!     improve throughput for concurrent workloads". That is written for as many cores as
//!     writers; here 4 to 64 writers share 2 cores, and a follower spinning on a core is a
//!     core the leader's write and fdatasync do not get, so the tuned variant blocks at once.
//!     This one is our choice for an oversubscribed machine, not a recommendation of the
//!     documentation.
//!   - Not set: `recycle_log_file_num`. The wiki page "WAL Performance" recommends it for
//!     synced writes ("Before writes hit the end of the file, the file size doesn't change, so
//!     the I/O for metadata might be avoided"), but the library measured here (7.8)
//!     sanitizes it to 0 under every WAL recovery mode but `kSkipAnyCorruptedRecords`
//!     (`SanitizeOptions` in `db/db_impl/db_impl_open.cc`: the default point-in-time recovery
//!     is "incompatible with recycle log file feature temporarily due to a bug"), and
//!     skipping corrupted records is not the durability the other systems give. A recycled
//!     log also only exists after a memtable flush, which a run of seconds never reaches.
//!   - Not set: `manual_wal_flush` (WAL writes kept in RocksDB until `FlushWAL`: not durable
//!     per commit) and `unordered_write` (gives up snapshot immutability).
//!
//! The library and the binding: rust-rocksdb 0.20 compiles its bindings against the C API
//! headers of RocksDB 7.9.2 (librocksdb-sys 0.10.0+7.9.2) and links Debian bookworm's library,
//! 7.8.3. No released rust-rocksdb binds 7.8 headers (0.19 has 7.4.4, 0.20 has 7.9.2; 7.8.3
//! was in its tree only between the two), so both versions are recorded in every row: the
//! headers from `Cargo.lock`, the library from the RocksDB `LOG` file of the store (the
//! version the loaded library prints) and from the package (`scripts/peers.sh`, with what it
//! finds of the library's build: `PEERS_ROCKSDB_LIB`).
//!
//! The self-checks reopen the database: the last acknowledged record of each thread must read
//! back; the transactional rows are read back through `get`. RocksDB commits durably in the
//! reopen workload too (1,000,000 synced commits take well under a minute with many threads).

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Result, bail};
use rocksdb::{
    DB, Direction, ErrorKind, IteratorMode, Options, TransactionDB, TransactionDBOptions,
    TransactionOptions, WriteBatchWithTransaction, WriteOptions,
};

use super::{
    Access, AppendLog, AppendSystem, Appender, Setup, Table, TpcbPart, TpcbTxn, TxnStore,
    TxnSystem, TxnWorker, Variant, account_key, append_key, balance, retry, table_rows, tpcb_key,
    tpcb_key_id, ycsb_next, ycsb_version,
};

/// The library version the RocksDB `LOG` of the first store opened names.
static LOADED: OnceLock<String> = OnceLock::new();

/// Note the version the loaded library wrote into `dir`'s `LOG` ("RocksDB version: 7.8.3").
fn note_loaded(dir: &Path) {
    if LOADED.get().is_some() {
        return;
    }
    let Ok(log) = std::fs::read_to_string(dir.join("LOG")) else {
        return;
    };
    if let Some(v) = log
        .lines()
        .find_map(|l| l.split_once("RocksDB version:").map(|(_, v)| v.trim()))
    {
        let _ = LOADED.set(v.to_string());
    }
}

/// The binding's version and headers, and the library that runs (its `LOG`, and the package
/// and build `scripts/peers.sh` found).
fn version() -> String {
    let lib = std::env::var("PEERS_ROCKSDB_LIB").unwrap_or_else(|_| "system library".into());
    format!(
        "rocksdb crate {} with C API headers of librocksdb-sys {}; library {} (LOG: RocksDB {})",
        env!("PEERS_V_ROCKSDB"),
        env!("PEERS_V_LIBROCKSDB_SYS"),
        lib,
        LOADED.get().map_or("not read yet", String::as_str)
    )
}

fn options(variant: Variant) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    if variant == Variant::Tuned {
        o.set_enable_pipelined_write(true);
        o.set_enable_write_thread_adaptive_yield(false);
    }
    o
}

/// The options of `variant`, in words.
fn configuration(variant: Variant) -> &'static str {
    match variant {
        Variant::Default => "Options::default()",
        Variant::Tuned => {
            "tuned: enable_pipelined_write=true, enable_write_thread_adaptive_yield=false"
        }
    }
}

fn synced() -> WriteOptions {
    let mut w = WriteOptions::default();
    w.set_sync(true);
    w
}

/// RocksDB's write-ahead log under synced puts, in the given variant.
#[derive(Debug)]
pub struct RocksWal(pub Variant);

impl AppendSystem for RocksWal {
    fn name(&self) -> String {
        format!("rocksdb{}", self.0.suffix())
    }

    fn variant(&self) -> Variant {
        self.0
    }

    fn version(&self) -> String {
        version()
    }

    fn durability(&self) -> String {
        format!(
            "put_opt with WriteOptions::set_sync(true): WAL fdatasync'd; {}",
            configuration(self.0)
        )
    }

    fn open(&self, dir: &Path, _threads: usize) -> Result<Box<dyn AppendLog>> {
        let db = DB::open(&options(self.0), dir)?;
        note_loaded(dir);
        Ok(Box::new(WalOpen { db, wo: synced() }))
    }

    fn verify(&self, dir: &Path, acked: &[u64], record_bytes: usize) -> Result<()> {
        let db = DB::open(&options(self.0), dir)?;
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

/// RocksDB's pessimistic `TransactionDB`, synced commits, in the given variant.
#[derive(Debug)]
pub struct RocksTxn(pub Variant);

fn open_txn_db(dir: &Path, variant: Variant) -> Result<TransactionDB> {
    let db = TransactionDB::open(&options(variant), &TransactionDBOptions::default(), dir)?;
    note_loaded(dir);
    Ok(db)
}

impl TxnSystem for RocksTxn {
    fn name(&self) -> String {
        format!("rocksdb{}", self.0.suffix())
    }

    fn variant(&self) -> Variant {
        self.0
    }

    fn version(&self) -> String {
        version()
    }

    fn durability(&self) -> String {
        format!(
            "TransactionDB, commit with WriteOptions::set_sync(true): WAL fdatasync'd; \
             read-only transactions read a snapshot; {}",
            configuration(self.0)
        )
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
        let db = open_txn_db(dir, self.0)?;
        let wo = synced();
        let rows = table_rows(setup);
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
            db: open_txn_db(dir, self.0)?,
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

    /// One try: `None` if it has to be retried.
    fn attempt(&self, key: &[u8], delta: i64) -> Result<Option<()>> {
        let tx = self.begin();
        let old = match retryable(tx.get_for_update(key, true))? {
            Some(Some(v)) => balance(&v)?,
            Some(None) => bail!("an account is missing"),
            None => return Ok(None),
        };
        if retryable(tx.put(key, (old + delta).to_le_bytes()))?.is_none() {
            return Ok(None);
        }
        retryable(tx.commit())
    }

    /// One try of a TPC-B transaction: `None` if it has to be retried.
    fn attempt_tpcb(&self, x: &TpcbTxn) -> Result<Option<()>> {
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
                None => return Ok(None),
            };
            if retryable(tx.put(key, (old + x.delta).to_le_bytes()))?.is_none() {
                return Ok(None);
            }
        }
        if retryable(tx.put(tpcb_key(TpcbPart::History, x.id), x.history()))?.is_none() {
            return Ok(None);
        }
        retryable(tx.commit())
    }

    /// One try of a YCSB transaction that updates: `None` if it has to be retried. Reads take
    /// shared locks, updates exclusive ones (`get_for_update`), so it is serializable like the
    /// other systems' transactions.
    fn attempt_ycsb(&self, accesses: &[Access]) -> Result<Option<()>> {
        let tx = self.begin();
        for a in accesses {
            let key = account_key(a.key);
            let old = match retryable(tx.get_for_update(key, a.update))? {
                Some(Some(v)) => v,
                Some(None) => bail!("row {} is missing", a.key),
                None => return Ok(None),
            };
            if a.update {
                if retryable(tx.put(key, ycsb_next(a.key, &old)?))?.is_none() {
                    return Ok(None);
                }
            } else {
                ycsb_version(a.key, &old)?;
            }
        }
        retryable(tx.commit())
    }

    /// A YCSB transaction that only reads: its rows through one snapshot, nothing committed.
    fn read_only(&self, accesses: &[Access]) -> Result<()> {
        let snapshot = self.open.db.snapshot();
        for a in accesses {
            let Some(v) = snapshot.get(account_key(a.key))? else {
                bail!("row {} is missing", a.key);
            };
            ycsb_version(a.key, &v)?;
        }
        Ok(())
    }
}

impl TxnWorker for TxnW<'_> {
    fn update(&mut self, account: u64, delta: i64) -> Result<u32> {
        let key = account_key(account);
        Ok(retry(|| self.attempt(&key, delta))?.retries)
    }

    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32> {
        Ok(retry(|| self.attempt_tpcb(txn))?.retries)
    }

    fn ycsb(&mut self, accesses: &[Access]) -> Result<u32> {
        if !accesses.iter().any(|a| a.update) {
            self.read_only(accesses)?;
            return Ok(0);
        }
        Ok(retry(|| self.attempt_ycsb(accesses))?.retries)
    }
}
