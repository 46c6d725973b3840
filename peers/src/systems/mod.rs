//! The systems measured, one module each, behind two small traits: [`AppendSystem`] for the
//! log-append workload and [`TxnSystem`] for the durable-transaction workload.
//!
//! Every system is opened on a fresh directory in its documented durable setting (said in
//! words by `durability()`, and written into every result row). Opening is separate from
//! running and from the self-check (`verify`, or [`TxnSystem::reopen`] and a read of every
//! row), so the reopen workload can time `reopen` after a `kill -9` on its own.
//!
//! A transactional store holds one table set ([`Table`]): the accounts alone (the
//! account-update workload), TPC-B's four tables (accounts, tellers, branches, history), or
//! YCSB's user table of 100-byte values. [`TxnWorker`] runs the account update, TPC-B's
//! Account-Update transaction and YCSB's transaction; [`TxnStore::get`], [`TxnStore::scan`]
//! and [`TxnStore::scan_tpcb`] read committed rows for the self-checks.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

pub mod braid_engine;
pub mod braid_wal;
pub mod fjall;
pub mod okaywal;
pub mod raft_engine;
pub mod redb;
pub mod rocksdb;
pub mod sqlite;

/// Counted fdatasync/fsync work of one run, where the system lets us count it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncStats {
    /// fdatasync/fsync calls (or, for braid, durable-point advances of its file streams).
    pub syncs: u64,
    /// Bytes written to the log (braid: records with framing and padding; peers: bytes the
    /// process passed to write system calls, from `/proc/self/io`).
    pub bytes: u64,
}

impl SyncStats {
    /// The process's counted syncs and written bytes so far (see [`crate::synccount`]).
    pub fn counted() -> SyncStats {
        SyncStats {
            syncs: crate::synccount::syncs(),
            bytes: crate::synccount::bytes_written(),
        }
    }
}

/// Syncs per second, bytes per sync, and where they come from.
#[derive(Debug, Default)]
pub struct SyncFigures {
    /// fdatasync/fsync per second.
    pub syncs_per_s: Option<f64>,
    /// Bytes per fdatasync/fsync.
    pub bytes_per_sync: Option<f64>,
    /// Where the figures come from.
    pub source: Option<String>,
}

impl SyncFigures {
    /// The figures of a run of `secs` seconds: from the system's own statistics before and
    /// after (`own0`, `own1`) where it keeps them, else from the process's counts since
    /// `counted0`. None if no sync was seen (nothing to count with).
    pub fn between(
        own0: Option<SyncStats>,
        own1: Option<SyncStats>,
        counted0: SyncStats,
        secs: f64,
    ) -> SyncFigures {
        let (d, source) = match (own0, own1) {
            (Some(a), Some(b)) => (
                SyncStats {
                    syncs: b.syncs.saturating_sub(a.syncs),
                    bytes: b.bytes.saturating_sub(a.bytes),
                },
                "braid stream statistics: durable-point advances (fdatasync) and log bytes",
            ),
            _ => {
                let now = SyncStats::counted();
                (
                    SyncStats {
                        syncs: now.syncs.saturating_sub(counted0.syncs),
                        bytes: now.bytes.saturating_sub(counted0.bytes),
                    },
                    "counted in process: fsync+fdatasync calls, bytes passed to write(2) (wchar)",
                )
            }
        };
        if d.syncs == 0 {
            return SyncFigures::default();
        }
        SyncFigures {
            syncs_per_s: Some(d.syncs as f64 / secs.max(1e-9)),
            bytes_per_sync: Some(d.bytes as f64 / d.syncs as f64),
            source: Some(source.to_string()),
        }
    }
}

/// A log a benchmark can append records to, durably.
pub trait AppendSystem: Sync {
    /// Name in tables and files (braid's start with `braid`).
    fn name(&self) -> String;
    /// Version of the crate or library that runs.
    fn version(&self) -> String;
    /// The durable setting used, in words.
    fn durability(&self) -> String;
    /// Create the log in the empty directory `dir`, for `threads` writer threads.
    fn open(&self, dir: &Path, threads: usize) -> Result<Box<dyn AppendLog>>;
    /// Reopen the log in `dir` after `close` and check that it holds what was acknowledged:
    /// `acked[t]` records written by thread `t` (with sequence numbers `0..acked[t]`).
    fn verify(&self, dir: &Path, acked: &[u64], record_bytes: usize) -> Result<()>;
}

/// An open log.
pub trait AppendLog: Send + Sync {
    /// The handle writer thread `thread` appends through.
    fn writer(&self, thread: usize) -> Result<Box<dyn Appender + '_>>;
    /// The log's own count of syncs and bytes since it was opened, if it keeps one (braid);
    /// `None`: the harness counts the process's syncs itself.
    fn own_sync_stats(&self) -> Option<SyncStats> {
        None
    }
    /// Flush and close.
    fn close(self: Box<Self>) -> Result<()>;
}

/// One writer thread's handle.
pub trait Appender {
    /// Append `payload` as record `seq` of this thread and return once it is durable.
    fn append(&mut self, seq: u64, payload: &[u8]) -> Result<()>;
}

/// Which table a transactional store holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// TPC-B's accounts: a balance per row, [`INITIAL_BALANCE`] at first; a row's value is
    /// the balance as 8 bytes little-endian.
    Accounts,
    /// TPC-B's four tables at this scale: accounts, tellers and branches (a balance per row,
    /// [`INITIAL_BALANCE`] at first, keys `0..`[`TpcbScale::rows`]) and history (empty at
    /// first; a row per transaction, keyed by [`TpcbTxn::id`]). [`TxnStore::get`] and
    /// [`TxnStore::scan`] read the accounts.
    Tpcb(TpcbScale),
    /// YCSB's user table: a [`YCSB_VALUE_BYTES`]-byte value per row, [`ycsb_value`]`(key, 0)`
    /// at first.
    Ycsb,
}

/// How a transactional store is opened.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Worker threads.
    pub threads: usize,
    /// The table it holds.
    pub table: Table,
    /// Rows of the table, keys `0..rows` (for [`Table::Tpcb`], its accounts).
    pub rows: u64,
    /// Commit under the system's [`TxnSystem::relaxed_setting`] instead of its durable one
    /// (only the reopen workload's loading child does, and only where the system has one).
    pub relaxed: bool,
}

/// A transactional store holding one table, [`Table::Accounts`] or [`Table::Ycsb`].
pub trait TxnSystem: Sync {
    /// Name in tables and files (braid's start with `braid`).
    fn name(&self) -> String;
    /// Version of the crate or library that runs.
    fn version(&self) -> String;
    /// The durable setting used, in words.
    fn durability(&self) -> String;
    /// Where committing 1,000,000 transactions durably takes minutes, the setting the reopen
    /// workload's child commits under instead, in words: every commit reaches the operating
    /// system (or, redb, a later commit), so a `kill -9` of the process loses none of them,
    /// but a power cut could. `None` (the default): the child commits durably.
    fn relaxed_setting(&self) -> Option<String> {
        None
    }
    /// What the system keeps in memory of a table, in words (cache sizes), for the memory
    /// workload.
    fn cache_setting(&self) -> String;
    /// Whether every row is resident in memory (an in-memory engine), rather than paged from
    /// disk through caches.
    fn in_memory(&self) -> bool {
        false
    }
    /// Whether `file` (a path inside the store's directory) is log rather than data, for the
    /// bytes on disk the reopen workload reports.
    fn is_log_file(&self, file: &Path) -> bool;
    /// Create the store in the empty directory `dir` with `setup.rows` rows, loaded and
    /// durable before it returns.
    fn open(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>>;
    /// Reopen the store in `dir`, created by [`TxnSystem::open`] with the same `setup`, after
    /// a close or a crash: whatever recovery the system does happens here or (SQLite) at the
    /// first read.
    fn reopen(&self, dir: &Path, setup: &Setup) -> Result<Box<dyn TxnStore>>;
}

/// Balance every account (and TPC-B teller and branch) starts with.
pub const INITIAL_BALANCE: i64 = 1_000;

/// TPC-B's tellers per branch (TPC-B Clause 4.2).
pub const TELLERS_PER_BRANCH: u64 = 10;

/// The size of a TPC-B database: its branches, 10 tellers per branch, and
/// `accounts_per_branch` accounts per branch (TPC-B: 100,000). Branch `b` (0-based) has
/// tellers `b * 10 .. b * 10 + 10` and accounts `b * A .. (b + 1) * A`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TpcbScale {
    /// Branches.
    pub branches: u64,
    /// Accounts per branch.
    pub accounts_per_branch: u64,
}

impl TpcbScale {
    /// Rows of `part` at this scale (history: none at first).
    pub fn rows(&self, part: TpcbPart) -> u64 {
        match part {
            TpcbPart::Accounts => self.branches * self.accounts_per_branch,
            TpcbPart::Tellers => self.branches * TELLERS_PER_BRANCH,
            TpcbPart::Branches => self.branches,
            TpcbPart::History => 0,
        }
    }
}

/// One of TPC-B's four tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpcbPart {
    /// ACCOUNT: a balance per account.
    Accounts,
    /// TELLER: a balance per teller.
    Tellers,
    /// BRANCH: a balance per branch.
    Branches,
    /// HISTORY: a row per transaction ([`TpcbTxn::history`]).
    History,
}

impl TpcbPart {
    /// The three tables of balances, in the order a transaction updates them.
    pub const BALANCES: [TpcbPart; 3] = [TpcbPart::Accounts, TpcbPart::Tellers, TpcbPart::Branches];

    /// The table's name (SQLite's tables, braid's and redb's).
    pub fn name(self) -> &'static str {
        match self {
            TpcbPart::Accounts => "accounts",
            TpcbPart::Tellers => "tellers",
            TpcbPart::Branches => "branches",
            TpcbPart::History => "history",
        }
    }

    /// The first byte of the table's keys in the key-value stores ([`tpcb_key`]).
    pub fn tag(self) -> u8 {
        match self {
            TpcbPart::Accounts => b'a',
            TpcbPart::Tellers => b't',
            TpcbPart::Branches => b'b',
            TpcbPart::History => b'h',
        }
    }
}

/// Key of row `id` of TPC-B table `part` in the key-value stores (RocksDB and fjall keep the
/// four tables in one keyspace): the table's [`TpcbPart::tag`], then `id` big-endian.
pub fn tpcb_key(part: TpcbPart, id: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = part.tag();
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

/// The id of a [`tpcb_key`] of `part`; `None` if `key` is not one.
pub fn tpcb_key_id(part: TpcbPart, key: &[u8]) -> Option<u64> {
    match key {
        [tag, id @ ..] if *tag == part.tag() => Some(u64::from_be_bytes(id.try_into().ok()?)),
        _ => None,
    }
}

/// Bytes of a history row's value ([`TpcbTxn::history`]).
pub const HISTORY_BYTES: usize = 40;

/// One TPC-B Account-Update transaction (TPC-B Clause 1.2): its inputs, and the id its
/// history row is stored under (unique per transaction; see `workload::tpcb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpcbTxn {
    /// Key of the history row.
    pub id: u64,
    /// Account updated.
    pub account: u64,
    /// Teller updated.
    pub teller: u64,
    /// Branch updated (the teller's).
    pub branch: u64,
    /// Amount added to the three balances.
    pub delta: i64,
    /// Timestamp stored in the history row (microseconds since the Unix epoch).
    pub time: u64,
}

impl TpcbTxn {
    /// The history row's value: account, teller, branch, delta and time, 8 bytes
    /// little-endian each.
    pub fn history(&self) -> [u8; HISTORY_BYTES] {
        let mut v = [0u8; HISTORY_BYTES];
        v[..8].copy_from_slice(&self.account.to_le_bytes());
        v[8..16].copy_from_slice(&self.teller.to_le_bytes());
        v[16..24].copy_from_slice(&self.branch.to_le_bytes());
        v[24..32].copy_from_slice(&self.delta.to_le_bytes());
        v[32..].copy_from_slice(&self.time.to_le_bytes());
        v
    }

    /// The transaction whose history row `id` holds `value` ([`TpcbTxn::history`]).
    pub fn from_history(id: u64, value: &[u8]) -> Result<TpcbTxn> {
        if value.len() != HISTORY_BYTES {
            bail!(
                "history row {id:#x}: {} bytes, not {HISTORY_BYTES}",
                value.len()
            );
        }
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&value[i * 8..i * 8 + 8]);
            b
        };
        Ok(TpcbTxn {
            id,
            account: u64::from_le_bytes(word(0)),
            teller: u64::from_le_bytes(word(1)),
            branch: u64::from_le_bytes(word(2)),
            delta: i64::from_le_bytes(word(3)),
            time: u64::from_le_bytes(word(4)),
        })
    }
}

/// An open transactional store.
pub trait TxnStore: Send + Sync {
    /// The handle worker thread `thread` runs transactions through.
    fn worker(&self, thread: usize) -> Result<Box<dyn TxnWorker + '_>>;
    /// The store's own count of log syncs and bytes since it was opened, if it keeps one
    /// (braid); `None`: the harness counts the process's syncs itself.
    fn own_sync_stats(&self) -> Option<SyncStats> {
        None
    }
    /// Row `key`'s committed value (see [`Table`]), `None` if there is no such row.
    fn get(&self, key: u64) -> Result<Option<Vec<u8>>>;
    /// Call `f` with every row's key and value, keys `0..rows` each once in any order;
    /// fails if a row is missing or another key is there.
    fn scan(&self, rows: u64, f: &mut dyn FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        for key in 0..rows {
            match self.get(key)? {
                Some(v) => f(key, &v)?,
                None => bail!("row {key} is missing"),
            }
        }
        Ok(())
    }
    /// On a [`Table::Tpcb`] store: call `f` with every row of `part`, each once in any order,
    /// with its id and value (a balance as 8 bytes little-endian; a history row as
    /// [`TpcbTxn::history`]). Fails on a store of another table.
    fn scan_tpcb(
        &self,
        part: TpcbPart,
        _f: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        bail!("this store holds no TPC-B tables (reading {})", part.name())
    }
    /// Make every commit so far survive a `kill -9` of the process (redb's relaxed setting
    /// needs one durable commit); nothing by default, where every commit already does.
    fn settle(&self) -> Result<()> {
        Ok(())
    }
    /// Flush and close.
    fn close(self: Box<Self>) -> Result<()>;
}

/// One access of a YCSB transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The row.
    pub key: u64,
    /// Read the row and write [`ycsb_next`] of it (else only read it).
    pub update: bool,
}

/// One worker thread's handle.
pub trait TxnWorker {
    /// TPC-B's account update: read `account`'s balance, write balance + `delta`, commit, and
    /// return once durable. Conflicts are retried inside; returns how many retries it took.
    fn update(&mut self, account: u64, delta: i64) -> Result<u32>;
    /// TPC-B's Account-Update on [`Table::Tpcb`]: add `txn.delta` to the balances of
    /// `txn.account` (reading the account's new balance), `txn.teller` and `txn.branch`, in
    /// that order, and insert history row `txn.id` ([`TpcbTxn::history`]), all in one
    /// transaction, committed and durable before it returns. Conflicts are retried inside;
    /// returns how many retries it took.
    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32>;
    /// A YCSB transaction on [`Table::Ycsb`]: every access reads its row (which must hold
    /// some [`ycsb_value`] of its key, checked with [`ycsb_version`]) and an update writes
    /// [`ycsb_next`] of what it read, all in one transaction, committed and durable before it
    /// returns (a transaction without updates commits as the system commits a read-only
    /// one). Conflicts are retried inside; returns how many retries it took.
    fn ycsb(&mut self, accesses: &[Access]) -> Result<u32>;
}

/// Bytes of a YCSB row's value (one YCSB field of 100 B).
pub const YCSB_VALUE_BYTES: usize = 100;

/// The value row `key` holds after `version` committed updates: the version (8 bytes
/// little-endian), the key (8 bytes little-endian), and 84 bytes that follow from both, so
/// that a value of another row or version, or a torn one, is told apart.
pub fn ycsb_value(key: u64, version: u64) -> [u8; YCSB_VALUE_BYTES] {
    let mut v = [0u8; YCSB_VALUE_BYTES];
    v[..8].copy_from_slice(&version.to_le_bytes());
    v[8..16].copy_from_slice(&key.to_le_bytes());
    // splitmix64 over (key, version).
    let mut x = key.rotate_left(32) ^ version.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for chunk in v[16..].chunks_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
    v
}

/// The version of `value`, which must be [`ycsb_value`]`(key, version)` for some version.
pub fn ycsb_version(key: u64, value: &[u8]) -> Result<u64> {
    let Some(head) = value.get(..8) else {
        bail!("row {key}: a value of {} bytes", value.len());
    };
    let mut b = [0u8; 8];
    b.copy_from_slice(head);
    let version = u64::from_le_bytes(b);
    if value != ycsb_value(key, version) {
        bail!(
            "row {key}: its {} bytes are not the value of version {version} of the row",
            value.len()
        );
    }
    Ok(version)
}

/// What a YCSB update of row `key` writes over `old`: the next version.
pub fn ycsb_next(key: u64, old: &[u8]) -> Result<[u8; YCSB_VALUE_BYTES]> {
    Ok(ycsb_value(key, ycsb_version(key, old)? + 1))
}

/// A file's size: its length, and the bytes of disk allocated to it (preallocated space
/// included, holes not).
#[derive(Debug, Clone, Copy, Default)]
pub struct FileBytes {
    /// The file's length.
    pub len: u64,
    /// Blocks allocated to it, in bytes.
    pub allocated: u64,
}

/// Files under `dir`, recursively: (path relative to `dir`, size).
pub fn files(dir: &Path) -> Result<Vec<(std::path::PathBuf, FileBytes)>> {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("list {}", d.display()))? {
            let e = e?;
            let ty = e.file_type()?;
            if ty.is_dir() {
                todo.push(e.path());
            } else if ty.is_file() {
                let rel = e.path().strip_prefix(dir)?.to_path_buf();
                let m = e.metadata()?;
                out.push((
                    rel,
                    FileBytes {
                        len: m.len(),
                        allocated: m.blocks() * 512,
                    },
                ));
            }
        }
    }
    Ok(out)
}

/// Every log-append system, braid first.
pub fn append_systems() -> Vec<Box<dyn AppendSystem>> {
    vec![
        Box::new(braid_wal::BraidWal::Serial),
        Box::new(braid_wal::BraidWal::Taurus),
        Box::new(raft_engine::RaftEngine),
        Box::new(okaywal::OkayWal::default()),
        Box::new(rocksdb::RocksWal),
        Box::new(fjall::FjallLog),
    ]
}

/// Every transactional system, braid first.
pub fn txn_systems() -> Vec<Box<dyn TxnSystem>> {
    vec![
        Box::new(braid_engine::BraidEngine::Serial),
        Box::new(braid_engine::BraidEngine::Taurus),
        Box::new(sqlite::Sqlite),
        Box::new(redb::Redb),
        Box::new(fjall::FjallTx),
        Box::new(rocksdb::RocksTxn),
    ]
}

/// Key of record `seq` of thread `thread` in the key-value peers: big-endian so keys sort in
/// append order.
pub fn append_key(thread: usize, seq: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&(thread as u64).to_be_bytes());
    k[8..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// Fill `payload` so that record `seq` of `thread` can be recognised on read-back: its first
/// 16 bytes are [`append_key`] (records are at least 16 bytes).
pub fn stamp(payload: &mut [u8], thread: usize, seq: u64) {
    payload[..16].copy_from_slice(&append_key(thread, seq));
}

/// Account key bytes for the key-value stores.
pub fn account_key(account: u64) -> [u8; 8] {
    account.to_be_bytes()
}

/// Decode an 8-byte little-endian balance.
pub fn balance(bytes: &[u8]) -> Result<i64> {
    let b: [u8; 8] = bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("a balance of {} bytes, not 8", bytes.len()))?;
    Ok(i64::from_le_bytes(b))
}
