//! `taurus`: parallel logging and recovery with LSN vectors (Xia et al., VLDB 2021; Alg. 1-6).
//!
//! `n` log streams (1 to [`MAX_STREAMS`]), each an ordinary
//! [`Stream`]: its tail and per-writer busy slots are the paper's `logLSN` /
//! `allocatedLSN` / `filledLSN`, its durable point is `PLV[i]` (Alg. 2). Worker `w` appends to
//! stream `w mod n`. Every transaction carries an LSN vector `T.LV` (one entry per stream);
//! every row has a writeLV (and, under command logging, a readLV), kept in the engine's row
//! beside its lock word, or for what has no row in a lock-table-like map with delta eviction
//! (`rows.rs`, Section 4.1).
//!
//! * Runtime (`worker.rs`): Alg. 1 for 2PL NO_WAIT and Alg. 6 for OCC, with inserts, deletes
//!   and scans (Section 3.4), one record per transaction stamped with its LV (dense, or
//!   compressed against anchors, Alg. 5), data or command logging. Range scans, inserts and
//!   deletes also meet in *range LVs* (index locking, Section 3.4), so that a scan and a later
//!   insert into its range, or a delete and a later scan of its range, are ordered (below).
//! * Commit (`commit.rs`, the protocol itself in `clv.rs`): a transaction is acknowledged once
//!   `T.LV <= CLV`, the committed vector: the durable prefix of each stream in which every
//!   record's dependencies are themselves committed. This is the paper's "PLV >= T.LV and all
//!   earlier transactions of its stream committed", made recursive across streams (the
//!   non-recursive reading loses acknowledged transactions, see `commit.rs`). Tickets are
//!   waiting [`Ticket`](super::Ticket)s that help advance CLV and sleep in the streams'
//!   own durability waits; with one stream they are plain stream tickets.
//! * Recovery (`recovery.rs`): per-stream readers, the ELV cut to a fixpoint, parallel replay by
//!   pools and RLV (Alg. 3-4) on `recovery_threads` workers, or a serial fallback chosen
//!   automatically when the log's dependency chains leave little parallelism (or forced).
//! * LV operations (`crate::lv`): element-wise max and `<=` with AVX-512 / AVX2 / scalar,
//!   chosen at run time, per database by the `simd` option ([`LvSimd`]; Section 4.2, Fig. 16:
//!   "We run Taurus command logging with SIMD on and off"): `auto` picks the best the CPU
//!   has for each length, `off` runs the scalar loops, `avx2` and `avx512` one instruction
//!   set at every length. It governs the transactions' LV work (merging row LVs into `T.LV`,
//!   the commit's `T.LV <= CLV` and the committed vector's checks); raising a row's LV is a
//!   compare-and-max per entry (Alg. 6 lines 9-11) in every setting, and recovery picks the
//!   best implementation for each length whatever the option.
//! * LV timing (Fig. 16's "LV overhead per transaction"): one committed transaction in
//!   [`LV_SAMPLE_EVERY`] times its LV work: the access hooks (`on_read`, `on_write`, ...:
//!   nearly nothing for a row whose LVs live in its slot, the map's lookup and merge for one
//!   that has none), and in `commit` merging the rows' LVs into `T.LV` and stamping the record,
//!   then raising the rows' LVs and the ticket's `T.LV <= CLV` (not the append between them).
//!   The engine's own timer of the hooks cannot see the merges at commit, where 2PL's rows
//!   are merged. A transaction with a stretch longer than `worker::LV_SAMPLE_CAP` (the worker
//!   was descheduled in it, or waited for a lock-table shard whose holder was) is dropped from
//!   the mean and counted apart. Read as the scheme counters `lv_samples`, `lv_ns`,
//!   `lv_commit_ns`, `lv_dropped` and `lv_dropped_ns`.
//!
//! Configuration: [`TaurusConfig`], the scheme's [`SchemeDef`] (record-LV compression, the
//! row table's delta, anchors, range buckets, LV instructions; options `lv_compress`,
//! `delta_kb`, `anchor_kb`, `spread`, `range_bucket_bits`, `simd`), and the replay plan in
//! [`SchemeConfig::recovery_plan`]; the `braid` command sets them with `--lv-compress`,
//! `--lv-delta`, `--lv-simd` and `--taurus-recovery`.
//!
//! Range LVs (phantoms). The paper's scan-twice validates a scan, but the edges between a
//! scanning transaction and a transaction that inserts or deletes a key inside the scanned
//! range go through no row both of them touch: a scan that found the range empty and a later
//! insert into it (WAR, which command logging must replay in order, or the re-executed scan
//! sees the new row), and a delete followed by a scan that no longer finds the key (RAW, which
//! closure needs under data logging too). Choice (coarse, as the paper's index locking leaves
//! the granularity open): each ordered table's key space is cut into buckets of
//! `2^range_bucket_bits` consecutive keys, each bucket with a readLV and a writeLV kept in the
//! row table (under reserved table ids, so they are held, raised and evicted exactly like row
//! LVs), plus one table-wide pair for scans that span more than [`MAX_SCAN_BUCKETS`] buckets.
//! A scan merges the writeLVs of its buckets (or the table-wide one) and, under command
//! logging, raises their readLVs at commit; an insert or delete merges the readLVs of its
//! key's bucket and of the table-wide pair (command logging) and raises both writeLVs at
//! commit. See `worker.rs` for how a scan and a concurrent insert agree on who goes first.
//!
//! MVCC (Section 4.4, [`SchemeConfig::mvcc`]): with the engine's multi-version concurrency
//! control a read fetches the version visible at the reader's timestamp, in normal processing
//! and in recovery alike (the engine keeps versions while it replays), so a write after a read
//! needs no order: Taurus keeps no readLVs and tracks only RAW (a reader merges the row's
//! writeLV) and WAW (a writer merges it too). The row's writeLV stands for the LV of its newest
//! version; a snapshot reader of an older version merges it too, which can only add edges. The
//! engine makes a new version visible only after `commit` raised its writeLV (`v.LV = T.LV`
//! before the timestamps are final, as the paper asks), and logs the commit timestamp with
//! the record.

// Internals, hidden from the docs (`clv` and `pools` are public for the loom model in
// `tests/loom_taurus.rs`).
mod anchor;
pub(crate) mod clv;
mod commit;
mod follow;
pub(crate) mod pools;
pub(crate) mod recovery;
mod rows;
mod worker;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Instant;

use super::registry::{Registration, SchemeDef, parse_option, unknown_option};
use super::{LogKind, RecoveryReport, Replay, Scheme, SchemeConfig, SchemeWorker, Storage};
use crate::device::Device;
use crate::lv::MAX_STREAMS;
use crate::scan::StreamSource;
use crate::scheme::follow::Follower;
use crate::stream::Stream;
use crate::{UnknownName, WalError};
use anchor::AnchorState;
use commit::Tracker;
use rows::RowTable;
use worker::TaurusWorker;

/// Streams from which `LvCompress::Auto` compresses record LVs. Measured (YCSB, pmem, 2
/// threads, provisional): compression shrinks a record by 12 (2 streams) to 96 bytes (16
/// streams) but cost 5-13% of throughput at 2, 4 and 16 streams, where the log's bandwidth is
/// not the limit; from 32 streams a dense LV (258+ bytes) outweighs a YCSB redo record.
pub(crate) const AUTO_COMPRESS_STREAMS: usize = 32;

/// Default [`TaurusConfig::range_bucket_bits`]: 4096 keys per bucket (a TPC-C district's
/// recent order lines fall in one or two).
pub(crate) const DEFAULT_RANGE_BUCKET_BITS: u32 = 12;

/// A scan spanning more buckets than this uses its table's table-wide range LVs instead.
pub(crate) const MAX_SCAN_BUCKETS: u64 = 8;

/// Whether taurus compresses record LVs against anchors (Alg. 5).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_compress)]
pub enum LvCompress {
    /// On from 32 streams, where a dense LV outweighs a record; off below.
    #[default]
    Auto,
    /// Always (with more than one stream).
    On,
    /// Never.
    Off,
}

impl From<bool> for LvCompress {
    fn from(on: bool) -> Self {
        if on { LvCompress::On } else { LvCompress::Off }
    }
}

fn unknown_compress(s: &str) -> UnknownName {
    UnknownName::new("LV compression", s, &["auto", "on", "off"])
}

/// Which instructions Taurus's LV operations use (Section 4.2, "Optimization: Vectorization";
/// Fig. 16 runs "with SIMD on and off").
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_simd)]
pub enum LvSimd {
    /// The best this CPU has for each length: AVX-512F from 32 entries, AVX2 from 4 (or
    /// from 4 on without AVX-512F), the scalar loops below 4 entries and without AVX2.
    #[default]
    Auto,
    /// Scalar loops: SIMD off.
    Off,
    /// AVX2 (4 lanes of 64 bits) at every length.
    Avx2,
    /// AVX-512F (8 lanes of 64 bits) at every length.
    Avx512,
}

fn unknown_simd(s: &str) -> UnknownName {
    UnknownName::new("LV SIMD setting", s, &["auto", "off", "avx2", "avx512"])
}

impl LvSimd {
    /// The fixed implementation it asks for (`None`: auto).
    fn fixed(self) -> Option<crate::lv::Impl> {
        match self {
            LvSimd::Auto => None,
            LvSimd::Off => Some(crate::lv::Impl::Scalar),
            LvSimd::Avx2 => Some(crate::lv::Impl::Avx2),
            LvSimd::Avx512 => Some(crate::lv::Impl::Avx512),
        }
    }

    /// Whether this CPU can run it (detected at run time; `auto` and `off` always).
    pub fn supported(self) -> bool {
        self.fixed().is_none_or(crate::lv::Impl::supported)
    }

    /// The settings this CPU can run, `auto` and `off` first.
    pub fn available() -> Vec<LvSimd> {
        [LvSimd::Auto, LvSimd::Off, LvSimd::Avx2, LvSimd::Avx512]
            .into_iter()
            .filter(|s| s.supported())
            .collect()
    }

    /// The operations it stands for, or an error naming what the CPU lacks.
    pub(crate) fn ops(self) -> Result<crate::lv::Ops, WalError> {
        match self.fixed() {
            None => Ok(crate::lv::Ops::AUTO),
            Some(i) if i.supported() => Ok(crate::lv::Ops::fixed(i)),
            Some(_) => Err(WalError::BadOption(crate::BadOption::Cpu {
                scheme: "taurus",
                key: "simd",
                value: self.to_string(),
                runs: LvSimd::available().iter().map(|s| s.to_string()).collect(),
            })),
        }
    }
}

/// One transaction in this many times its commit's LV work (the scheme counters `lv_samples`
/// and `lv_ns`), as the engine samples its log insertions.
pub const LV_SAMPLE_EVERY: u64 = 16;

/// Taurus tuning. With the crate's `cli` feature it is command-line flags (`clap::Args`),
/// whose help is the fields' docs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[cfg_attr(feature = "cli", command(next_help_heading = "Scheme taurus"))]
#[non_exhaustive]
pub struct TaurusConfig {
    /// Row LVs leave the row table once this many bytes of log (a size: 262144, 256KiB, 1MiB)
    /// behind the committed vector of every stream, and come back at `CLV - delta` (Section
    /// 4.1's delta): smaller keeps the table small and in cache, larger leaves recovery fewer
    /// artificial dependencies. Scheme option `delta_kb`, in KiB.
    #[cfg_attr(feature = "cli", arg(long = "lv-delta", value_name = "BYTES", default_value_t = TaurusConfig::default().delta, value_parser = super::registry::parse_size))]
    pub delta: u64,
    /// Compress record LVs against anchors (Alg. 5): auto (on from 32 streams, where a dense
    /// LV outweighs a record), on or off. Scheme option `lv_compress`.
    #[cfg_attr(feature = "cli", arg(long = "lv-compress", default_value_t = TaurusConfig::default().compress))]
    pub compress: LvCompress,
    /// The instructions of the LV operations (Section 4.2): auto (the best this CPU has for
    /// each length: AVX-512F from 32 entries, AVX2 from 4, scalar below), off (scalar loops),
    /// avx2 or avx512 (at every length; refused on a CPU without them). Scheme option `simd`.
    #[cfg_attr(feature = "cli", arg(long = "lv-simd", default_value_t = TaurusConfig::default().simd))]
    pub simd: LvSimd,
    /// Log bytes between two anchors of a stream (when compressing).
    #[cfg_attr(feature = "cli", arg(skip = TaurusConfig::default().anchor_every))]
    pub anchor_every: u64,
    /// Range LVs: an ordered table's keys are grouped in buckets of `2^range_bucket_bits`
    /// consecutive keys, each with its own readLV / writeLV (capped at 63).
    #[cfg_attr(feature = "cli", arg(skip = TaurusConfig::default().range_bucket_bits))]
    pub range_bucket_bits: u32,
    /// Each worker sends its transactions round robin over every stream, instead of all to
    /// stream `worker mod n` as Alg. 1 assigns them. For more streams (and devices) than
    /// workers, as when emulated devices stand in for the paper's many disks on a small
    /// machine. Off by default.
    #[cfg_attr(feature = "cli", arg(skip = TaurusConfig::default().spread))]
    pub spread: bool,
    /// Recovery readers hand their records to replay `2^recovery_batch_bits` at a time
    /// (clamped to `recovery::BATCH_BITS_RANGE`; `recovery::BATCH_BITS` by default). Any
    /// size recovers the same; small ones make admission run many times on a small log (for
    /// tests) but cost time quadratic in the batches of a large one.
    #[cfg_attr(feature = "cli", arg(skip = TaurusConfig::default().recovery_batch_bits))]
    pub recovery_batch_bits: u32,
}

impl Default for TaurusConfig {
    fn default() -> Self {
        TaurusConfig {
            delta: 256 << 10,
            compress: LvCompress::Auto,
            simd: LvSimd::Auto,
            anchor_every: 64 << 10,
            range_bucket_bits: DEFAULT_RANGE_BUCKET_BITS,
            spread: false,
            recovery_batch_bits: recovery::BATCH_BITS,
        }
    }
}

/// The scheme's name.
pub(crate) const NAME: &str = "taurus";

/// The scheme's registration (see [`super::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "Taurus: LSN-vector parallel logging, data and command, parallel recovery",
    default: || Box::new(TaurusConfig::default()),
};

const OPTIONS: &[&str] = &[
    "lv_compress",
    "delta_kb",
    "anchor_kb",
    "range_bucket_bits",
    "spread",
    "simd",
];

impl SchemeDef for TaurusConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn streams_for(&self, requested: usize) -> usize {
        requested.clamp(1, MAX_STREAMS)
    }
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        match key {
            "lv_compress" => self.compress = parse_option(NAME, key, value)?,
            "simd" => self.simd = parse_option(NAME, key, value)?,
            "delta_kb" => self.delta = parse_option::<u64>(NAME, key, value)? << 10,
            "anchor_kb" => self.anchor_every = parse_option::<u64>(NAME, key, value)? << 10,
            "range_bucket_bits" => {
                self.range_bucket_bits = parse_option::<u32>(NAME, key, value)?.min(63)
            }
            "spread" => {
                self.spread = match value {
                    "on" => true,
                    "off" => false,
                    _ => {
                        return Err(WalError::BadOption(crate::BadOption::Value {
                            scheme: NAME.to_string(),
                            key: key.to_string(),
                            value: value.to_string(),
                            source: std::sync::Arc::new(UnknownName::new(
                                "spread value",
                                value,
                                &["on", "off"],
                            )),
                        }));
                    }
                }
            }
            _ => return Err(unknown_option(NAME, key, OPTIONS)),
        }
        Ok(())
    }
    fn options(&self) -> Vec<(&'static str, String)> {
        vec![
            ("lv_compress", self.compress.to_string()),
            ("delta_kb", (self.delta >> 10).to_string()),
            ("anchor_kb", (self.anchor_every >> 10).to_string()),
            ("range_bucket_bits", self.range_bucket_bits.to_string()),
            ("spread", if self.spread { "on" } else { "off" }.to_string()),
            ("simd", self.simd.to_string()),
        ]
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let (t, r) = open_taurus(cfg, self, storage.devices(NAME)?, replay, progress)?;
        Ok((t, r))
    }
    fn follower(&self, cfg: &SchemeConfig, streams: usize) -> Result<Box<dyn Follower>, WalError> {
        follow::TaurusFollower::boxed(cfg, self, streams)
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(self.clone())
    }
}

/// What every worker shares.
pub(crate) struct Shared {
    pub(crate) n: usize,
    /// The LV operations ([`TaurusConfig::simd`]).
    pub(crate) ops: crate::lv::Ops,
    /// What reading the clock adds to a timed stretch of LV work, ns ([`clock_cost_ns`]),
    /// taken off each stretch.
    pub(crate) clock_ns: u64,
    /// Track write-after-read edges (readLVs): command logging without MVCC.
    pub(crate) war: bool,
    pub(crate) compress: bool,
    pub(crate) anchor_every: u64,
    pub(crate) bucket_bits: u32,
    /// Workers spread their transactions over every stream ([`TaurusConfig::spread`]).
    pub(crate) spread: bool,
    pub(crate) tracker: Arc<Tracker>,
    pub(crate) rows: RowTable,
    pub(crate) anchors: Box<[AnchorState]>,
    /// Where each stream restarted at open (its first record since then, if any, was
    /// compressed against nothing).
    pub(crate) opened_at: Vec<crate::Lsn>,
    /// The workers' statistics ([`crate::tally`], per worker so that no statistics word is
    /// written by every worker): [`RANGE_WAITS`], inserts that found a scanner of their range
    /// validating and waited for it (for [`Taurus::range_waits`]); [`ROW_SLOTS`], row LV
    /// slots too large for the row, allocated beside it.
    pub(crate) stats: crate::tally::TallyBoard,
    /// The workers' scalability proxies ([`crate::proxy`]); lanes: the streams.
    pub(crate) board: crate::proxy::ProxyBoard,
    /// Workers waiting for the pending marks of a row or range entry to drop (command
    /// logging: a write after other transactions' validating reads) wait here; a worker
    /// notifies after dropping its marks.
    pub(crate) unmarked: crate::wait::Progress,
}

/// [`Shared::stats`] counter: range waits.
pub(crate) const RANGE_WAITS: usize = 0;
/// [`Shared::stats`] counter: row LV slots allocated beside their rows.
pub(crate) const ROW_SLOTS: usize = 1;
/// [`Shared::stats`] counter: committed transactions whose LV work was timed (one in
/// [`LV_SAMPLE_EVERY`], less those dropped).
pub(crate) const LV_SAMPLES: usize = 2;
/// [`Shared::stats`] counter: the timed transactions' LV work, ns (hooks and commit).
pub(crate) const LV_NS: usize = 3;
/// [`Shared::stats`] counter: the part of [`LV_NS`] in their commits, ns.
pub(crate) const LV_COMMIT_NS: usize = 4;
/// [`Shared::stats`] counter: timed transactions dropped because the worker was descheduled
/// in a timed stretch (`worker::LV_SAMPLE_CAP`).
pub(crate) const LV_DROPPED: usize = 5;
/// [`Shared::stats`] counter: the dropped transactions' LV time, ns (a stretch over the cap
/// may also be a real wait, for a lock-table shard whose holder was descheduled: kept apart,
/// not lost).
pub(crate) const LV_DROPPED_NS: usize = 6;

/// The running Taurus scheme.
pub(crate) struct Taurus {
    sh: Arc<Shared>,
}

impl Taurus {
    /// Test hook: inserts that so far found a scanner of their range validating and waited
    /// for it.
    #[cfg(test)]
    pub(crate) fn range_waits(&self) -> u64 {
        self.sh.stats.sum(RANGE_WAITS)
    }
    /// Row-LV entries held now, and bytes per entry.
    #[cfg(test)]
    pub(crate) fn row_entries(&self) -> (usize, usize) {
        (self.sh.rows.len(), self.sh.rows.entry_bytes())
    }
}

impl Scheme for Taurus {
    fn name(&self) -> &'static str {
        NAME
    }
    fn worker(&self, worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(TaurusWorker::new(Arc::clone(&self.sh), worker)?))
    }
    fn streams(&self) -> &[Stream] {
        self.sh.tracker.streams()
    }
    fn close(&self) -> Result<(), WalError> {
        let mut first = Ok(());
        for s in self.sh.tracker.streams() {
            if let Err(e) = s.close()
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }
    /// The lock table's bytes as allocated now: the hash maps' slots at their capacity, and
    /// every row and range LV entry, held or kept for reuse, with its `Arc` and LV allocation.
    fn metadata_bytes(&self) -> u64 {
        self.sh.rows.bytes(self.sh.stats.sum(ROW_SLOTS)) as u64
    }
    fn proxies(&self) -> Option<crate::proxy::Proxies> {
        Some(self.sh.board.sum())
    }
    /// `lv_samples`: committed transactions whose LV work was timed; `lv_ns`: that work, ns;
    /// `lv_commit_ns`: its part in their commits; `lv_dropped`: timed transactions left out
    /// because a stretch took longer than the cap, and `lv_dropped_ns` their LV time (see the
    /// module docs, "LV timing").
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("lv_samples", self.sh.stats.sum(LV_SAMPLES)),
            ("lv_ns", self.sh.stats.sum(LV_NS)),
            ("lv_commit_ns", self.sh.stats.sum(LV_COMMIT_NS)),
            ("lv_dropped", self.sh.stats.sum(LV_DROPPED)),
            ("lv_dropped_ns", self.sh.stats.sum(LV_DROPPED_NS)),
        ]
    }
    /// Truncation keeps, on each stream, the newest anchor before the cut when records are
    /// compressed (Alg. 5): the records after it are decompressed against it. Without an
    /// anchor known before the cut (none written since open), records after the open are
    /// compressed against an all-zero LPLV and need none.
    fn truncate(&self, lsns: &[crate::Lsn]) -> Result<(), WalError> {
        for (i, (s, &l)) in self.streams().iter().zip(lsns).enumerate() {
            let mut upto = l.min(s.durable());
            if self.sh.compress {
                match self.sh.anchors[i].anchor_before(upto) {
                    Some(a) => upto = a,
                    None if upto >= self.sh.opened_at[i] => upto = self.sh.opened_at[i],
                    // Records before the open were compressed against anchors this run has
                    // not seen: keep them until an anchor of this run is before the cut.
                    None => continue,
                }
            }
            s.device().release(upto)?;
        }
        Ok(())
    }
}

/// Whether record LVs are compressed: as configured, else from [`AUTO_COMPRESS_STREAMS`]
/// streams; never with one stream (a one-entry LV has nothing to leave out).
pub(crate) fn compress(cfg: LvCompress, n: usize) -> bool {
    match cfg {
        LvCompress::On => n > 1,
        LvCompress::Off => false,
        LvCompress::Auto => n >= AUTO_COMPRESS_STREAMS,
    }
}

/// What reading the clock adds to a timed stretch, ns: an empty stretch's length (the mean of
/// 64, the least of 8 such means, so that a descheduled batch does not count). About 25 ns
/// where the clock is the TSC read through the vDSO; one timed LV stretch takes that much
/// longer than its work.
fn clock_cost_ns() -> u64 {
    (0..8)
        .map(|_| {
            let ns: u128 = (0..64)
                .map(|_| std::hint::black_box(Instant::now()).elapsed().as_nanos())
                .sum();
            (ns / 64) as u64
        })
        .min()
        .unwrap_or(0)
}

/// Recover the streams and start them; the concrete type (for tests and tools).
pub(crate) fn open_taurus(
    cfg: &SchemeConfig,
    tc: &TaurusConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<Taurus>, RecoveryReport), WalError> {
    let n = devices.len();
    let ops = tc.simd.ops()?;
    if n == 0 || n > MAX_STREAMS {
        return Err(WalError::StreamCount {
            scheme: "taurus".to_string(),
            given: n,
            min: 1,
            max: MAX_STREAMS,
        });
    }
    let started = Instant::now();
    let sources: Vec<&(dyn StreamSource + Sync)> = devices.iter().map(|d| &**d as _).collect();
    let out = recovery::recover(
        cfg,
        &sources,
        replay,
        progress,
        cfg.recovery_plan,
        tc.recovery_batch_bits,
    )?;
    let mut report = out.report;
    report.seconds = started.elapsed().as_secs_f64();
    let streams = cfg.start_streams(devices, &out.ends)?;
    let sh = Shared {
        n,
        ops,
        clock_ns: clock_cost_ns(),
        war: cfg.logging == LogKind::Command && !cfg.mvcc,
        compress: compress(tc.compress, n),
        anchor_every: tc.anchor_every.max(1),
        bucket_bits: tc.range_bucket_bits.min(63),
        spread: tc.spread && n > 1,
        rows: RowTable::new(
            n,
            cfg.logging == LogKind::Command && !cfg.mvcc,
            tc.delta,
            &out.ends,
        ),
        anchors: out
            .ends
            .iter()
            .map(|&e| AnchorState {
                lplv: (0..n).map(|_| AtomicU64::new(0)).collect(),
                next: AtomicU64::new(e),
                busy: AtomicBool::new(false),
                recent: Default::default(),
            })
            .collect(),
        tracker: Arc::new(Tracker::new(streams, &out.ends, ops)),
        opened_at: out.ends.clone(),
        stats: Default::default(),
        board: crate::proxy::ProxyBoard::new(n),
        unmarked: crate::wait::Progress::new(),
    };
    Ok((Arc::new(Taurus { sh: Arc::new(sh) }), report))
}
