//! The options of `braid crash-test` and of its hidden kill-mode child, and the workload and
//! engine options a crash run uses (small rings and segments, so runs wrap and roll over).

use std::path::PathBuf;
use std::sync::Arc;

use braid_engine::log::LogKind;
use braid_workloads::Workload;
use braid_workloads::ycsb::{Ycsb, YcsbConfig};
use clap::{Args, ValueEnum};

use crate::common::{self, DeviceKind, EngineArgs, OltpArgs, WorkloadKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CrashKind {
    /// SIGKILL a child process.
    Kill,
    /// Simulated power failure in-process.
    Power,
}

#[derive(Debug, Clone, Args)]
pub struct CrashArgs {
    /// Scheme under test.
    #[arg(long, default_value = braid_engine::Options::default().scheme.name(), value_parser = common::scheme_name)]
    pub scheme: &'static str,
    /// data or command.
    #[arg(long, default_value = "data")]
    pub logging: LogKind,
    #[arg(long, value_enum, default_value_t = DeviceKind::Pmem)]
    pub device: DeviceKind,
    #[arg(long, value_enum, default_value_t = CrashKind::Power)]
    pub mode: CrashKind,
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Seed of the run: every round's crash moment, crash mode and workload follow from it and
    /// the round's number.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only round K of the --seed run (as a failure's reproducing command line does);
    /// --rounds is then ignored.
    #[arg(long, value_name = "K")]
    pub round: Option<usize>,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Log streams.
    #[arg(long)]
    pub logs: Option<usize>,
    /// Rows of the (small, contended) YCSB table.
    #[arg(long, default_value_t = 500)]
    pub rows: u64,
    /// Accesses per transaction.
    #[arg(long, default_value_t = 4)]
    pub accesses: usize,
    /// Zipf skew.
    #[arg(long, default_value_t = 0.8)]
    pub theta: f64,
    /// Longest run before the crash, milliseconds (the crash comes at a random time up to it).
    #[arg(long, default_value_t = 300)]
    pub max_ms: u64,
    /// Workload: marked YCSB (full oracle), or TPC-C / TATP / TPC-B (consistency conditions
    /// and idempotence checked after every recovery).
    #[arg(long, value_enum, default_value_t = WorkloadKind::Ycsb)]
    pub workload: WorkloadKind,
    #[command(flatten)]
    pub oltp: OltpArgs,
    /// Parent directory for kill-mode databases.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Run the whole matrix instead: every scheme x logging kind x device x crash mode it
    /// supports (--scheme, --logging, --device and --mode are ignored), with a summary table.
    #[arg(long)]
    pub all: bool,
    /// Kill mode: every round reopens (recovers) and goes on with the database the previous
    /// round was killed in, instead of a new one (TPC-C, TATP, TPC-B; not the YCSB oracle).
    #[arg(long)]
    pub same_db: bool,
    /// Kill mode: shortest run before the kill, milliseconds (the kill comes at a random
    /// time between this and --max-ms after the child's first acknowledged commit).
    #[arg(long, default_value_t = 5)]
    pub min_ms: u64,
    /// Kill mode: after the random wait, wait on until the child is writing a checkpoint while
    /// an earlier one is complete (a `checkpoints/*.tmp` file beside a `*.ckpt` in its database
    /// directory) and kill it then, so every round is killed in the middle of a checkpoint and
    /// recovers from the one before. Needs automatic checkpoints (a checkpoint flag); a round in
    /// which none is written within 30 s fails.
    #[arg(long)]
    pub kill_in_checkpoint: bool,
    /// With --all: kill rounds per combination (default --rounds).
    #[arg(long)]
    pub kill_rounds: Option<usize>,
    /// With --all: power-failure rounds per combination (default --rounds).
    #[arg(long)]
    pub power_rounds: Option<usize>,
    /// With --all: --kill-rounds and --power-rounds are per scheme, shared out evenly over
    /// that scheme's combinations.
    #[arg(long)]
    pub per_scheme: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl CrashArgs {
    /// The workload under test: marked YCSB, or another workload at the scale given.
    pub(super) fn workload(&self) -> anyhow::Result<Arc<dyn Workload>> {
        match self.workload {
            WorkloadKind::Ycsb => Ok(Arc::new(Ycsb::new(self.ycsb()))),
            kind => {
                let y = common::YcsbArgs {
                    rows: self.rows,
                    theta: self.theta,
                    read_fraction: 0.5,
                    accesses: self.accesses,
                    columns: 4,
                    column_bytes: 32,
                    update: Default::default(),
                };
                common::workload(kind, &y, &self.oltp, false)
            }
        }
    }

    pub(super) fn ycsb(&self) -> YcsbConfig {
        YcsbConfig::default()
            .rows(self.rows)
            .columns(4)
            .column_bytes(32)
            .theta(self.theta)
            .accesses(self.accesses)
            .read_fraction(0.5)
            .marked(true)
    }

    pub(super) fn options(&self) -> anyhow::Result<braid_engine::Options> {
        let mut o = self.engine.options(
            self.engine.spec(self.scheme)?,
            self.logging,
            self.device,
            self.logs.unwrap_or(self.threads),
            self.threads,
        );
        // Small rings and segments so runs wrap, de-stage and roll segments.
        if let braid_engine::DeviceConfig::Pmem(p) = &mut o.device {
            p.ring_size = p.ring_size.min(1 << 20);
        }
        if let braid_engine::DeviceConfig::File(f) = &mut o.device {
            f.segment_size = f.segment_size.min(256 << 10);
            f.buffer_size = 1 << 20;
        }
        Ok(o)
    }
}

/// Arguments of the hidden child process of kill mode.
#[derive(Debug, Clone, Args)]
pub struct ChildArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    #[arg(long)]
    pub child_seed: u64,
    /// nats device: the round's own database id (each round creates a database of its own).
    #[arg(long)]
    pub child_db_id: Option<String>,
    #[command(flatten)]
    pub crash: CrashArgs,
}
