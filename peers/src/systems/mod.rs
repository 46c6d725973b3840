//! The systems measured, one module each, behind two small traits: [`AppendSystem`] for the
//! log-append workload and [`TxnSystem`] for the durable-transaction workload.
//!
//! Every system is opened on a fresh directory in its documented durable setting (said in
//! words by `durability()`, and written into every result row). Opening is separate from
//! running and from the self-check (`verify`, which reopens the data and reads back what was
//! acknowledged), so reopen timing after a `kill -9` can be added as one more step.

use std::path::Path;

use anyhow::Result;

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

/// A transactional store holding the TPC-B accounts table.
pub trait TxnSystem: Sync {
    /// Name in tables and files (braid's start with `braid`).
    fn name(&self) -> String;
    /// Version of the crate or library that runs.
    fn version(&self) -> String;
    /// The durable setting used, in words.
    fn durability(&self) -> String;
    /// Create the store in the empty directory `dir` for `threads` worker threads, with
    /// `accounts` rows of balance [`INITIAL_BALANCE`], loaded and durable before it returns.
    fn open(&self, dir: &Path, threads: usize, accounts: u64) -> Result<Box<dyn TxnStore>>;
    /// Reopen the store in `dir` (opened for `threads`) after `close`: the sum of all
    /// balances, failing if an account is missing.
    fn reopen_sum(&self, dir: &Path, threads: usize, accounts: u64) -> Result<i64>;
}

/// Balance every account starts with.
pub const INITIAL_BALANCE: i64 = 1_000;

/// An open transactional store.
pub trait TxnStore: Send + Sync {
    /// The handle worker thread `thread` runs transactions through.
    fn worker(&self, thread: usize) -> Result<Box<dyn TxnWorker + '_>>;
    /// The store's own count of log syncs and bytes since it was opened, if it keeps one
    /// (braid); `None`: the harness counts the process's syncs itself.
    fn own_sync_stats(&self) -> Option<SyncStats> {
        None
    }
    /// Flush and close.
    fn close(self: Box<Self>) -> Result<()>;
}

/// One worker thread's handle.
pub trait TxnWorker {
    /// TPC-B's account update: read `account`'s balance, write balance + `delta`, commit, and
    /// return once durable. Conflicts are retried inside; returns how many retries it took.
    fn update(&mut self, account: u64, delta: i64) -> Result<u32>;
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
