//! Creating and opening a pool: building its volatile state (logs, allocator) from the
//! configuration, formatting a new region (the magic written and persisted last, so a crash
//! during creation leaves no pool), and reading the header of an existing one before
//! recovering it (REWIND §4.5).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};

use braid_pmem::{PmemConfig, Region};

use super::layout::{
    BOTTOM_BUCKET, DESC, DESC_AVL_ROOT, H_BUCKET, H_CAPACITY, H_CKPT, H_CLEAR, H_CONFIG_CRC,
    H_GROUP, H_HEAP_END, H_HEAP_START, H_HEAP_TOP, H_LAYERS, H_LAYOUT, H_MAGIC, H_NLOGS, H_POLICY,
    H_SIZE, H_VERSION, HEADER, MAGIC, VERSION,
};
use super::{
    CommitClear, Counters, Finished, Inner, Layers, Log, LogMode, Policy, Pool, PoolConfig,
};
use crate::alloc::Allocator;
use crate::avl::{AVL_NODE, TwoLayer};
use crate::log::{Arena, LogLayout, LogStore, node_size};
use crate::recovery::{self, RecoveryReport};
use crate::{Damage, NotAPoolReason, RewindError};

fn build(r: Region, cfg: PoolConfig) -> Result<Inner, RewindError> {
    // Before anything is sized by the configuration: a damaged header may describe logs far
    // larger than the region (and their volatile state larger than memory).
    if r.len() < cfg.min_region_size() {
        return Err(RewindError::TooSmall {
            have: r.len(),
            need: cfg.min_region_size(),
        });
    }
    let n = cfg.logs.count();
    let mut arena_off = HEADER + DESC * n;
    let mut logs = Vec::with_capacity(n);
    for i in 0..n {
        let desc = HEADER + DESC * i;
        let bytes = cfg.arena_bytes();
        let log = match cfg.layers {
            Layers::One => {
                let ns = node_size(cfg.layout, cfg.bucket_records);
                let arena = Arena {
                    base: arena_off,
                    node_size: ns,
                    count: bytes / ns,
                };
                Log::One(LogStore::new(
                    r.clone(),
                    cfg.layout,
                    desc,
                    arena,
                    cfg.bucket_records,
                ))
            }
            Layers::Two => {
                let tree = Arena {
                    base: arena_off,
                    node_size: AVL_NODE,
                    count: cfg.log_capacity,
                };
                let bl = cfg.bottom_layout();
                let (ns, count) = cfg.bottom_nodes();
                let bottom_arena = Arena {
                    base: arena_off + cfg.log_capacity * AVL_NODE,
                    node_size: ns,
                    count,
                };
                let bottom = LogStore::new(r.clone(), bl, desc, bottom_arena, BOTTOM_BUCKET);
                Log::Two(TwoLayer::new(r.clone(), desc + DESC_AVL_ROOT, tree, bottom))
            }
        };
        logs.push(log);
        arena_off += bytes;
    }
    let heap_start = cfg.meta_bytes();
    let heap_end = r.len();
    let alloc = Allocator::new(r.clone(), heap_start, heap_end, H_HEAP_TOP);
    let n_logs = logs.len();
    Ok(Inner {
        r,
        cfg,
        logs,
        alloc,
        next_txid: AtomicU64::new(1),
        commit_seq: AtomicU64::new(0),
        cut: RwLock::new(()),
        finished: (0..n_logs)
            .map(|_| Mutex::new(Finished::default()))
            .collect(),
        rescan: AtomicBool::new(false),
        ckpt: Mutex::new((0..n_logs).map(|_| Finished::default()).collect()),
        ckpt_lines: AtomicUsize::new(0),
        stats: Counters::default(),
    })
}

impl Pool {
    /// Format `region` as an empty pool (the region's previous content is ignored).
    pub fn create_in(region: Region, cfg: PoolConfig) -> Result<Pool, RewindError> {
        cfg.validate()?;
        let inner = build(region, cfg)?;
        let r = &inner.r;
        r.fill(0, HEADER, 0);
        r.store_u64(H_VERSION, VERSION);
        r.store_u64(H_SIZE, r.len() as u64);
        r.store_u64(H_LAYOUT, cfg.layout.code());
        r.store_u64(
            H_POLICY,
            match cfg.policy {
                Policy::Force => 1,
                Policy::NoForce => 2,
            },
        );
        r.store_u64(
            H_LAYERS,
            match cfg.layers {
                Layers::One => 1,
                Layers::Two => 2,
            },
        );
        r.store_u64(
            H_NLOGS,
            match cfg.logs {
                LogMode::Shared => 0,
                LogMode::PerThread(n) => n as u64,
            },
        );
        r.store_u64(H_BUCKET, cfg.bucket_records as u64);
        r.store_u64(H_CAPACITY, cfg.log_capacity as u64);
        r.store_u64(H_GROUP, cfg.batch_group as u64);
        r.store_u64(H_CKPT, cfg.checkpoint_fraction.to_bits());
        r.store_u64(
            H_CLEAR,
            match cfg.commit_clear {
                CommitClear::Scan => 1,
                CommitClear::KeptPositions => 2,
            },
        );
        r.store_u64(H_HEAP_START, cfg.meta_bytes() as u64);
        r.store_u64(H_HEAP_END, r.len() as u64);
        r.store_u64(H_CONFIG_CRC, config_crc(r));
        r.flush(0, HEADER);
        for l in &inner.logs {
            l.format();
        }
        inner.alloc.format();
        r.fence();
        r.store_u64(H_MAGIC, MAGIC);
        r.persist(H_MAGIC, 8);
        Ok(Pool {
            inner: Arc::new(inner),
        })
    }

    /// Open the pool in `region`, recovering it (REWIND §4.5). Returns the pool and what
    /// recovery did.
    pub fn open_in(region: Region) -> Result<(Pool, RecoveryReport), RewindError> {
        let r = &region;
        if r.len() < HEADER || r.load_u64(H_MAGIC) != MAGIC {
            return Err(RewindError::NotAPool {
                reason: NotAPoolReason::NoMagic,
            });
        }
        let version = r.load_u64(H_VERSION);
        if version != VERSION {
            return Err(RewindError::NotAPool {
                reason: NotAPoolReason::Version {
                    found: version,
                    expected: VERSION,
                },
            });
        }
        if r.load_u64(H_SIZE) != r.len() as u64 {
            return Err(RewindError::NotAPool {
                reason: NotAPoolReason::Size {
                    created: r.load_u64(H_SIZE),
                    region: r.len() as u64,
                },
            });
        }
        if r.load_u64(H_CONFIG_CRC) != config_crc(r) {
            return Err(Damage::ConfigChecksum.into());
        }
        let corrupt = |field: &'static str, value: u64| Damage::HeaderField { field, value };
        let cfg = PoolConfig {
            layout: LogLayout::from_code(r.load_u64(H_LAYOUT))
                .ok_or_else(|| corrupt("layout", r.load_u64(H_LAYOUT)))?,
            policy: match r.load_u64(H_POLICY) {
                1 => Policy::Force,
                2 => Policy::NoForce,
                v => return Err(corrupt("policy", v).into()),
            },
            layers: match r.load_u64(H_LAYERS) {
                1 => Layers::One,
                2 => Layers::Two,
                v => return Err(corrupt("layer count", v).into()),
            },
            logs: match r.load_u64(H_NLOGS) {
                0 => LogMode::Shared,
                n => LogMode::PerThread(n as usize),
            },
            bucket_records: r.load_u64(H_BUCKET) as usize,
            log_capacity: r.load_u64(H_CAPACITY) as usize,
            batch_group: r.load_u64(H_GROUP) as usize,
            checkpoint_fraction: f64::from_bits(r.load_u64(H_CKPT)),
            commit_clear: match r.load_u64(H_CLEAR) {
                1 => CommitClear::Scan,
                2 => CommitClear::KeptPositions,
                v => return Err(corrupt("commit-clearing mode", v).into()),
            },
        };
        cfg.validate().map_err(|e| match e {
            RewindError::Config(c) => RewindError::from(Damage::HeaderConfig(c)),
            e => e,
        })?;
        if cfg.min_region_size() > r.len() {
            return Err(Damage::HeaderSize {
                need: cfg.min_region_size() as u64,
                have: r.len() as u64,
            }
            .into());
        }
        let inner = build(region, cfg)?;
        let report = recovery::recover(&inner)?;
        Ok((
            Pool {
                inner: Arc::new(inner),
            },
            report,
        ))
    }

    /// Create a pool file of `size` usable bytes (a braid-pmem region file).
    pub fn create(
        path: &Path,
        size: usize,
        cfg: PoolConfig,
        pmem: PmemConfig,
    ) -> Result<Pool, RewindError> {
        let r = Region::create(path, size, pmem)?;
        Pool::create_in(r, cfg)
    }

    /// Open (and recover) a pool file.
    pub fn open(path: &Path, pmem: PmemConfig) -> Result<(Pool, RecoveryReport), RewindError> {
        let r = Region::open(path, None, pmem)?;
        Pool::open_in(r)
    }
}

/// The checksum of the header's configuration words (see [`H_CONFIG_CRC`]).
fn config_crc(r: &Region) -> u64 {
    const N: usize = H_CONFIG_CRC - H_SIZE;
    let mut words = [0u8; N + 24];
    r.read(H_SIZE, &mut words[..N]);
    r.read(H_HEAP_START, &mut words[N..N + 16]);
    r.read(H_CLEAR, &mut words[N + 16..]);
    u64::from(crc32c::crc32c(&words))
}
