//! The systems measured, one module each, behind two small traits: [`AppendSystem`] for the
//! log-append workload and [`TxnSystem`] for the durable-transaction workload.
//!
//! Every system is opened on a fresh directory in its documented durable setting (said in
//! words by `durability()`, and written into every result row). Peers that document settings
//! for durable throughput are listed twice: in their defaults ([`Variant::Default`]) and with
//! those settings ([`Variant::Tuned`], the name ending in ` tuned`); each module says which
//! settings and why. A transaction that conflicts is retried by the one policy of [`retry`]
//! (a backoff, and a count of aborted transactions), whatever the system. Opening is separate from
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

/// Which configuration of a system a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// The system's documented defaults in its durable setting.
    Default,
    /// The settings its own documentation recommends for durable throughput (each module
    /// says which and why).
    Tuned,
}

impl Variant {
    /// `default` or `tuned`, as rows and labels say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Default => "default",
            Variant::Tuned => "tuned",
        }
    }

    /// What a system's name carries for this variant: nothing, or ` tuned`.
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Default => "",
            Variant::Tuned => " tuned",
        }
    }
}

/// Counted fdatasync/fsync work, as totals so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncStats {
    /// fdatasync/fsync calls (braid's own statistics: durable-point advances of its file
    /// streams).
    pub syncs: u64,
    /// Bytes written (the process: bytes passed to write system calls, from `/proc/self/io`;
    /// braid's own statistics: log records with framing and padding).
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

    fn since(self, earlier: SyncStats) -> SyncStats {
        SyncStats {
            syncs: self.syncs.saturating_sub(earlier.syncs),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

/// The sync counters read at one instant.
#[derive(Debug, Clone, Copy)]
pub struct SyncSample {
    /// When.
    pub at: std::time::Instant,
    /// The process's counts (every system).
    pub counted: SyncStats,
    /// The system's own statistics, where it keeps them (braid).
    pub own: Option<SyncStats>,
}

impl SyncSample {
    /// Read the process's counts now, beside `own` (the system's own, read just before).
    pub fn take(own: Option<SyncStats>) -> SyncSample {
        SyncSample {
            at: std::time::Instant::now(),
            counted: SyncStats::counted(),
            own,
        }
    }
}

/// Where every row's sync figures come from.
pub const SYNC_SOURCE: &str = "counted in process for every system: fsync+fdatasync calls \
    through the interposed C functions, bytes passed to write(2) (wchar of /proc/self/io)";

/// Syncs per second and bytes per sync over a span of a run.
#[derive(Debug, Clone, Default)]
pub struct SyncFigures {
    /// fdatasync/fsync calls per second (`None`: none was counted).
    pub syncs_per_s: Option<f64>,
    /// Bytes written per fdatasync/fsync.
    pub bytes_per_sync: Option<f64>,
    /// The system's own count of log flushes per second, where it keeps one (braid's stream
    /// statistics: durable-point advances), a cross-check of `syncs_per_s`.
    pub own_flushes_per_s: Option<f64>,
}

impl SyncFigures {
    /// The figures between two samples.
    pub fn between(first: &SyncSample, last: &SyncSample) -> SyncFigures {
        let secs = last.at.duration_since(first.at).as_secs_f64().max(1e-9);
        let d = last.counted.since(first.counted);
        let own = match (first.own, last.own) {
            (Some(a), Some(b)) => Some(b.since(a).syncs as f64 / secs),
            _ => None,
        };
        SyncFigures {
            syncs_per_s: (d.syncs > 0).then(|| d.syncs as f64 / secs),
            bytes_per_sync: (d.syncs > 0).then(|| d.bytes as f64 / d.syncs as f64),
            own_flushes_per_s: own,
        }
    }
}

thread_local! {
    /// Conflicts [`retry`] met on this thread.
    static CONFLICTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Conflicts [`retry`] has met on the calling thread so far (the timed runs count an
/// operation during which this moved as an aborted transaction).
pub fn conflicts_here() -> u64 {
    CONFLICTS.with(std::cell::Cell::get)
}

/// The longest pause before a retry.
pub const BACKOFF_CAP: std::time::Duration = std::time::Duration::from_millis(1);
/// The pause before the second retry of a transaction; each later one doubles it, up to
/// [`BACKOFF_CAP`].
pub const BACKOFF_FIRST: std::time::Duration = std::time::Duration::from_micros(10);

/// The longest pause after the `conflict`th conflict of one transaction (1, 2, ...): none
/// after the first (the thread only yields its core), then [`BACKOFF_FIRST`] doubling per
/// conflict up to [`BACKOFF_CAP`].
pub fn backoff(conflict: u32) -> std::time::Duration {
    match conflict {
        0 | 1 => std::time::Duration::ZERO,
        n => BACKOFF_FIRST
            .saturating_mul(1u32 << (n - 2).min(16))
            .min(BACKOFF_CAP),
    }
}

/// A transaction's result and how many conflicts it was retried after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retried<T> {
    /// What the committed attempt returned.
    pub value: T,
    /// Conflicts met before it (0: committed at the first attempt).
    pub retries: u32,
}

/// Run `attempt` until it commits, the one retry policy of every system that aborts
/// (braid's NO_WAIT conflicts, fjall's optimistic conflicts, RocksDB's lock time-outs,
/// SQLite's busy past its timeout). `attempt` returns `Ok(Some(value))` once committed,
/// `Ok(None)` on a conflict (the transaction is rolled back and tried again), or an error,
/// which ends it. After each conflict the thread backs off before the next attempt: it yields
/// its core after the first, then sleeps a random time between half and all of [`backoff`]
/// (the jitter keeps two conflicting threads from retrying in step). Every conflict is
/// counted on the calling thread ([`conflicts_here`]).
pub fn retry<T>(mut attempt: impl FnMut() -> Result<Option<T>>) -> Result<Retried<T>> {
    let mut retries = 0u32;
    loop {
        if let Some(value) = attempt()? {
            return Ok(Retried { value, retries });
        }
        retries = retries.saturating_add(1);
        CONFLICTS.with(|c| c.set(c.get() + 1));
        let most = backoff(retries);
        if most.is_zero() {
            std::thread::yield_now();
        } else {
            use rand::Rng as _;
            // `most` is at most BACKOFF_CAP, 1 ms: it fits in u64 nanoseconds.
            let hi = u64::try_from(most.as_nanos()).unwrap_or(u64::MAX);
            let nanos = rand::thread_rng().gen_range(hi / 2..=hi);
            std::thread::sleep(std::time::Duration::from_nanos(nanos));
        }
    }
}

/// A log a benchmark can append records to, durably.
pub trait AppendSystem: Sync {
    /// Name in tables and files (braid's start with `braid`; a tuned variant's ends in
    /// ` tuned`).
    fn name(&self) -> String;
    /// Which configuration this is.
    fn variant(&self) -> Variant {
        Variant::Default
    }
    /// Version of the crate or library that runs.
    fn version(&self) -> String;
    /// The durable setting and the configuration used, in words.
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
    /// The log's own count of syncs and bytes since it was opened, if it keeps one (braid),
    /// reported beside the process's counts as a cross-check of them.
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

/// A transactional store holding one table set ([`Table`]), in one configuration ([`Variant`]).
pub trait TxnSystem: Sync {
    /// Name in tables and files (braid's start with `braid`; a tuned variant's ends in
    /// ` tuned`).
    fn name(&self) -> String;
    /// Which configuration this is.
    fn variant(&self) -> Variant {
        Variant::Default
    }
    /// Version of the crate or library that runs.
    fn version(&self) -> String;
    /// The durable setting and the configuration used, in words.
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
    /// (braid), reported beside the process's counts as a cross-check of them.
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
    /// return once durable. Conflicts are retried inside, through [`retry`]; returns how many
    /// retries it took.
    fn update(&mut self, account: u64, delta: i64) -> Result<u32>;
    /// TPC-B's Account-Update on [`Table::Tpcb`]: add `txn.delta` to the balances of
    /// `txn.account` (reading the account's new balance), `txn.teller` and `txn.branch`, in
    /// that order, and insert history row `txn.id` ([`TpcbTxn::history`]), all in one
    /// transaction, committed and durable before it returns. Conflicts are retried inside,
    /// through [`retry`]; returns how many retries it took.
    fn tpcb(&mut self, txn: &TpcbTxn) -> Result<u32>;
    /// A YCSB transaction on [`Table::Ycsb`]: every access reads its row (which must hold
    /// some [`ycsb_value`] of its key, checked with [`ycsb_version`]) and an update writes
    /// [`ycsb_next`] of what it read, all in one transaction, committed and durable before it
    /// returns (a transaction without updates commits as the system commits a read-only
    /// one). Conflicts are retried inside, through [`retry`]; returns how many retries it took.
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

/// Every log-append system, braid first, each peer with a tuned configuration in its default
/// and its tuned variant.
pub fn append_systems() -> Vec<Box<dyn AppendSystem>> {
    use Variant::{Default, Tuned};
    vec![
        Box::new(braid_wal::BraidWal::Serial),
        Box::new(braid_wal::BraidWal::Taurus),
        Box::new(raft_engine::RaftEngine),
        Box::new(okaywal::OkayWal::default()),
        Box::new(rocksdb::RocksWal(Default)),
        Box::new(rocksdb::RocksWal(Tuned)),
        Box::new(fjall::FjallLog(Default)),
        Box::new(fjall::FjallLog(Tuned)),
    ]
}

/// Every transactional system, braid first, each with a tuned configuration in its default
/// and its tuned variant.
pub fn txn_systems() -> Vec<Box<dyn TxnSystem>> {
    use Variant::{Default, Tuned};
    vec![
        Box::new(braid_engine::BraidEngine::Serial(Default)),
        Box::new(braid_engine::BraidEngine::Serial(Tuned)),
        Box::new(braid_engine::BraidEngine::Taurus),
        Box::new(sqlite::Sqlite(Default)),
        Box::new(sqlite::Sqlite(Tuned)),
        Box::new(redb::Redb),
        Box::new(fjall::FjallTx(Default)),
        Box::new(fjall::FjallTx(Tuned)),
        Box::new(rocksdb::RocksTxn(Default)),
        Box::new(rocksdb::RocksTxn(Tuned)),
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

/// (key, value) of every row of the table `setup` loads, for the key-value stores (fjall,
/// RocksDB) that load it in write batches.
pub fn table_rows(setup: &Setup) -> Box<dyn Iterator<Item = (Vec<u8>, Vec<u8>)>> {
    match setup.table {
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
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn backoff_yields_first_then_doubles_up_to_the_cap() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), BACKOFF_FIRST);
        assert_eq!(backoff(3), BACKOFF_FIRST * 2);
        assert_eq!(backoff(4), BACKOFF_FIRST * 4);
        assert_eq!(backoff(12), BACKOFF_CAP);
        assert_eq!(backoff(u32::MAX), BACKOFF_CAP);
    }

    /// `retry` retries a conflict until the attempt commits, returns how many it met, and
    /// counts each on the calling thread; an error ends it at once.
    #[test]
    fn retry_counts_every_conflict() -> Result<()> {
        let before = conflicts_here();
        let mut tries = 0;
        let r = retry(|| {
            tries += 1;
            Ok((tries == 4).then_some(tries * 10))
        })?;
        assert_eq!(
            r,
            Retried {
                value: 40,
                retries: 3
            }
        );
        assert_eq!(conflicts_here() - before, 3);

        let before = conflicts_here();
        let e = retry(|| -> Result<Option<()>> { anyhow::bail!("broken") });
        assert!(e.is_err());
        assert_eq!(conflicts_here(), before);
        Ok(())
    }

    /// Syncs per second and bytes per sync come from the process's counts over the span;
    /// the system's own count, where there is one, only fills its cross-check.
    #[test]
    fn sync_figures_are_the_process_counts_over_the_span() {
        let first = SyncSample {
            at: std::time::Instant::now(),
            counted: SyncStats {
                syncs: 10,
                bytes: 1_000,
            },
            own: Some(SyncStats { syncs: 5, bytes: 0 }),
        };
        let last = SyncSample {
            at: first.at + Duration::from_secs(2),
            counted: SyncStats {
                syncs: 110,
                bytes: 41_000,
            },
            own: Some(SyncStats {
                syncs: 105,
                bytes: 7,
            }),
        };
        let f = SyncFigures::between(&first, &last);
        assert_eq!(f.syncs_per_s, Some(50.0));
        assert_eq!(f.bytes_per_sync, Some(400.0));
        assert_eq!(f.own_flushes_per_s, Some(50.0));
        let none = SyncFigures::between(&first, &first);
        assert_eq!((none.syncs_per_s, none.bytes_per_sync), (None, None));
    }
}
