//! What every REWIND experiment shares (REWIND §5, "Experimental setup"): where pools live,
//! the REWIND configurations compared (the variants of §5.1 and Fig. 7), the systems of the
//! B+-tree experiments, pool sizing and medians.
//!
//! Choices: pools live in a region file under `/dev/shm` (DRAM standing in for persistent
//! memory, flushed with CLWB/CLFLUSHOPT and fenced as real persistent memory would be) or in
//! anonymous DRAM for the DRAM baseline; REWIND runs no-force with checkpoints at half the
//! log's capacity (the paper ran without checkpoints; our logs are finite). Timed figures are
//! medians of `runs` runs; every figure is also given as a ratio to the non-recoverable
//! baseline measured in the same run (docs/design.md, "Measuring").

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use braid_pmem::{Domain, PmemConfig, Region};
use braid_rewind::{Layers, LogLayout, LogMode, Policy, PoolConfig, RewindError};
use serde::{Deserialize, Serialize};

/// Where benchmark pools live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backing {
    /// Anonymous DRAM: flushes and fences are no-ops.
    Dram,
    /// A region file in this directory (e.g. `/dev/shm`, or a DAX mount).
    Dir(PathBuf),
}

impl Default for Backing {
    fn default() -> Self {
        Backing::Dir(PathBuf::from("/dev/shm"))
    }
}

/// A benchmark region that removes its file when dropped.
#[derive(Debug)]
pub struct BenchRegion {
    region: Region,
    path: Option<PathBuf>,
}

impl Drop for BenchRegion {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl BenchRegion {
    /// The region (a shared handle).
    pub fn region(&self) -> Region {
        self.region.clone()
    }
}

static FILE_NO: AtomicU64 = AtomicU64::new(0);

/// A region of `bytes` for a benchmark pool on `backing`, each persisted line delayed by
/// `write_delay_ns` (its file, if any, is removed on drop).
pub fn region(
    backing: &Backing,
    bytes: usize,
    write_delay_ns: u64,
) -> Result<BenchRegion, RewindError> {
    match backing {
        Backing::Dram => Ok(BenchRegion {
            region: Region::anonymous(bytes),
            path: None,
        }),
        Backing::Dir(d) => {
            let path = d.join(format!(
                "braid-rewind-bench-{}-{}",
                std::process::id(),
                FILE_NO.fetch_add(1, Ordering::Relaxed)
            ));
            // A benchmark: the backing directory (e.g. /dev/shm) emulates persistent memory.
            let cfg = PmemConfig::default()
                .domain(Domain::Adr)
                .write_delay_ns(write_delay_ns)
                .media(braid_pmem::Media::Emulated);
            let region = Region::create(&path, bytes, cfg)?;
            Ok(BenchRegion {
                region,
                path: Some(path),
            })
        }
    }
}

pub(crate) use crate::bench::median;

/// A REWIND configuration with a label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub label: String,
    pub pool: PoolConfig,
}

/// A one-log configuration named `label`.
pub fn variant(label: &str, layout: LogLayout, policy: Policy, layers: Layers) -> Variant {
    Variant {
        label: label.to_string(),
        pool: PoolConfig::default()
            .layout(layout)
            .policy(policy)
            .layers(layers)
            .logs(LogMode::Shared),
    }
}

/// The configurations of §5.1: Simple, Optimized and Batch, force and no-force, one layer;
/// Optimized with two layers; and the Sealed layout (one fence per commit), force and
/// no-force.
pub fn standard_variants() -> Vec<Variant> {
    use Layers::*;
    use LogLayout::*;
    use Policy::*;
    vec![
        variant("simple-1l-nf", Simple, NoForce, One),
        variant("simple-1l-f", Simple, Force, One),
        variant("optimized-1l-nf", Optimized, NoForce, One),
        variant("optimized-1l-f", Optimized, Force, One),
        variant("batch-1l-nf", Batch, NoForce, One),
        variant("batch-1l-f", Batch, Force, One),
        variant("sealed-1l-nf", Sealed, NoForce, One),
        variant("sealed-1l-f", Sealed, Force, One),
        variant("optimized-2l-nf", Optimized, NoForce, Two),
        variant("optimized-2l-f", Optimized, Force, Two),
    ]
}

/// The three versions of Fig. 7 (no-force, one layer).
pub fn fig7_variants() -> Vec<Variant> {
    use LogLayout::*;
    vec![
        variant("simple", Simple, Policy::NoForce, Layers::One),
        variant("optimized", Optimized, Policy::NoForce, Layers::One),
        variant("batch", Batch, Policy::NoForce, Layers::One),
    ]
}

/// A system of the B+-tree experiments (Fig. 7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum System {
    /// The tree in anonymous DRAM, plain stores.
    Dram,
    /// The non-recoverable twin on persistent memory (stores persisted, no log).
    Nvm,
    /// The tree over REWIND.
    Rewind(Variant),
}

impl System {
    /// The name printed and written for this system.
    pub fn label(&self) -> String {
        match self {
            System::Dram => "dram".into(),
            System::Nvm => "nvm".into(),
            System::Rewind(v) => v.label.clone(),
        }
    }

    /// Where this system's pool lives given the experiment's `backing`, and how it logs
    /// (the baselines' pools are never logged to, so their configuration is the default).
    pub fn placement(&self, backing: &Backing) -> (Backing, PoolConfig) {
        match self {
            System::Dram => (Backing::Dram, PoolConfig::default()),
            System::Nvm => (backing.clone(), PoolConfig::default()),
            System::Rewind(v) => (backing.clone(), v.pool),
        }
    }
}

/// Bytes of a pool for a B+-tree of `records` records after `operations` more inserts.
pub fn pool_bytes(records: u64, operations: u64, value_size: usize) -> usize {
    let data = (records + operations) as usize * (value_size + 8) * 3;
    (data + (256 << 20)).next_multiple_of(1 << 20)
}
