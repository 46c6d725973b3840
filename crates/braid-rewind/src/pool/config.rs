//! A pool's configuration: the log layout (REWIND §3.1: Simple, Optimized, Batch), force or
//! no-force (§2), one or two layers (§3.3), a shared log or per-thread logs (the distributed
//! log of §5.3), and the sizes the region layout follows from.

use super::layout::{BOTTOM_BUCKET, BOTTOM_BUCKETS, DESC, HEADER, MIN_HEAP};
use crate::avl::AVL_NODE;
use crate::log::{LogLayout, node_size};
use crate::{ConfigError, RewindError};

/// Force (user writes persisted at commit, log cleared at commit) or no-force (user writes
/// stay in the cache, log cleared by checkpoints, redo at recovery). REWIND §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Policy {
    /// User writes are persisted by commit; a transaction's records are cleared at commit.
    Force,
    /// User writes stay in the cache; checkpoints clear the log and recovery redoes committed
    /// transactions.
    NoForce,
}

/// One-layer (the list) or two-layer (AVL index over the list) logging. REWIND §2, §3.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Layers {
    /// The log list alone; rollback scans it for the transaction's records.
    One,
    /// An atomic AVL tree keyed by transaction over the list, so rollback and clearing find a
    /// transaction's records without a scan.
    Two,
}

/// How a one-layer force commit finds the records of its transaction to clear (REWIND §4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CommitClear {
    /// The paper's: "To clear the log when forcing, we scan the log backwards and remove the
    /// records of committed transactions" (§4.6). The one-layer log keeps no per-transaction
    /// state (§3.2), so a commit reads every record in the log, and its cost grows with the
    /// records of other transactions between its own (the skip records of §5.1).
    Scan,
    /// Not the paper's: the transaction keeps the positions of its records as it logs them
    /// and clears those, without reading the log (constant cost whatever the skip records).
    /// Only commits differ; rollback scans the log under both.
    KeptPositions,
}

/// One log shared by every thread, or `n` logs used by threads round robin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LogMode {
    /// One log for every thread.
    Shared,
    /// This many logs; thread `t` (a process-wide thread number) uses log `t mod n`.
    PerThread(usize),
}

impl LogMode {
    pub(super) fn count(self) -> usize {
        match self {
            LogMode::Shared => 1,
            LogMode::PerThread(n) => n,
        }
    }
}

/// How a pool logs. Stored in the pool at creation; [`Pool::open_in`](super::Pool::open_in)
/// reads it back. Built from [`PoolConfig::default`] with the setters (or by assigning
/// fields): `PoolConfig::default().policy(Policy::Force).logs(LogMode::PerThread(4))`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct PoolConfig {
    /// How each log stores its records.
    pub layout: LogLayout,
    /// Force or no-force.
    pub policy: Policy,
    /// One- or two-layer logs.
    pub layers: Layers,
    /// One shared log or per-thread logs.
    pub logs: LogMode,
    /// Records per bucket (Optimized and Batch); the paper uses 1000.
    pub bucket_records: usize,
    /// Records each log can hold.
    pub log_capacity: usize,
    /// Batch: records per group (one fence pair per group); the paper uses 8, 16, 32.
    pub batch_group: usize,
    /// No-force: checkpoint after a commit that leaves a log fuller than this fraction.
    pub checkpoint_fraction: f64,
    /// Force, one layer: how a commit finds its records to clear (the paper's scan of the log
    /// by default).
    pub commit_clear: CommitClear,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            layout: LogLayout::Batch,
            policy: Policy::NoForce,
            layers: Layers::One,
            logs: LogMode::Shared,
            bucket_records: 1000,
            log_capacity: 1 << 16,
            batch_group: 8,
            checkpoint_fraction: 0.5,
            commit_clear: CommitClear::Scan,
        }
    }
}

impl PoolConfig {
    /// [`PoolConfig::layout`] set to `layout`.
    pub fn layout(mut self, layout: LogLayout) -> PoolConfig {
        self.layout = layout;
        self
    }
    /// [`PoolConfig::policy`] set to `policy`.
    pub fn policy(mut self, policy: Policy) -> PoolConfig {
        self.policy = policy;
        self
    }
    /// [`PoolConfig::layers`] set to `layers`.
    pub fn layers(mut self, layers: Layers) -> PoolConfig {
        self.layers = layers;
        self
    }
    /// [`PoolConfig::logs`] set to `logs`.
    pub fn logs(mut self, logs: LogMode) -> PoolConfig {
        self.logs = logs;
        self
    }
    /// [`PoolConfig::bucket_records`] set to `n`.
    pub fn bucket_records(mut self, n: usize) -> PoolConfig {
        self.bucket_records = n;
        self
    }
    /// [`PoolConfig::log_capacity`] set to `records`.
    pub fn log_capacity(mut self, records: usize) -> PoolConfig {
        self.log_capacity = records;
        self
    }
    /// [`PoolConfig::batch_group`] set to `records`.
    pub fn batch_group(mut self, records: usize) -> PoolConfig {
        self.batch_group = records;
        self
    }
    /// [`PoolConfig::checkpoint_fraction`] set to `fraction`.
    pub fn checkpoint_fraction(mut self, fraction: f64) -> PoolConfig {
        self.checkpoint_fraction = fraction;
        self
    }
    /// [`PoolConfig::commit_clear`] set to `clear`.
    pub fn commit_clear(mut self, clear: CommitClear) -> PoolConfig {
        self.commit_clear = clear;
        self
    }

    pub(super) fn validate(&self) -> Result<(), RewindError> {
        let bad = |field, value: &dyn std::fmt::Display, accepted| {
            Err(RewindError::Config(ConfigError::new(
                field, value, accepted,
            )))
        };
        if self.logs.count() == 0 || self.logs.count() > 1024 {
            return bad("logs", &format_args!("{:?}", self.logs), "1..=1024 logs");
        }
        if self.bucket_records < 2 || self.bucket_records > 1 << 16 {
            return bad("bucket_records", &self.bucket_records, "2..=65536");
        }
        if self.log_capacity < 16 || self.log_capacity > 1 << 30 {
            return bad("log_capacity", &self.log_capacity, "16..=2^30 records");
        }
        if self.batch_group == 0 || self.batch_group > 4096 {
            return bad("batch_group", &self.batch_group, "1..=4096");
        }
        if !(self.checkpoint_fraction > 0.0 && self.checkpoint_fraction <= 1.0) {
            return bad(
                "checkpoint_fraction",
                &self.checkpoint_fraction,
                "in (0, 1]",
            );
        }
        Ok(())
    }

    /// Region bytes taken by the header, descriptors and log arenas.
    pub(super) fn meta_bytes(&self) -> usize {
        let mut off = HEADER + DESC * self.logs.count();
        for _ in 0..self.logs.count() {
            off += self.arena_bytes();
        }
        off.next_multiple_of(4096)
    }

    pub(super) fn arena_bytes(&self) -> usize {
        match self.layers {
            Layers::One => {
                let b = self.bucket_records;
                let nodes = match self.layout {
                    LogLayout::Simple => self.log_capacity,
                    _ => self.log_capacity.div_ceil(b) + 2,
                };
                nodes * node_size(self.layout, b)
            }
            Layers::Two => {
                let (ns, count) = self.bottom_nodes();
                self.log_capacity * AVL_NODE + ns * count
            }
        }
    }

    /// Layout of the bottom log of a two-layer log (Batch needs deferred user writes, which a
    /// tree operation does not have, so it becomes Optimized there).
    pub(super) fn bottom_layout(&self) -> LogLayout {
        match self.layout {
            LogLayout::Simple => LogLayout::Simple,
            _ => LogLayout::Optimized,
        }
    }

    /// Node size and node count of a two-layer log's bottom log (room for the stores of
    /// the largest tree operation with plenty to spare).
    pub(super) fn bottom_nodes(&self) -> (usize, usize) {
        let bl = self.bottom_layout();
        let ns = node_size(bl, BOTTOM_BUCKET);
        match bl {
            LogLayout::Simple => (ns, BOTTOM_BUCKETS * BOTTOM_BUCKET),
            _ => (ns, BOTTOM_BUCKETS),
        }
    }

    /// Smallest region that holds this configuration and a minimal heap.
    pub fn min_region_size(&self) -> usize {
        self.meta_bytes() + MIN_HEAP
    }
}
