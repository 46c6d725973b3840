//! Log and engine options on the command line: the log device, persistence domain, pmem write
//! mode and the schemes' own flags (derived from their configurations), how they become
//! engine [`Options`], and which commit the workers make ([`run_client`]).

use std::time::Duration;

use anyhow::Context as _;
use braid_engine::{
    Cc, DeviceConfig, FileOptions, Options, PmemOptions, TxError, Worker,
    log::{LogKind, LogPlace, Pace, SchemeSpec, Ticket},
};
use braid_pmem::{Domain, Media};
use braid_wal::device::PmemWrite;
use braid_wal::scheme::{GsnConfig, PerTxnConfig, RecoveryPlan, TaurusConfig};
use braid_workloads::Client;
use clap::{Args, ValueEnum};

/// Where the log goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// A log ring in (emulated) persistent memory: a region file mapped from /dev/shm.
    Pmem,
    /// Segment files with group fdatasync.
    File,
    /// No device (only with scheme none).
    Null,
    /// Streams replicated on a NATS JetStream cluster (`--nats-url`, `--db-id`).
    Nats,
}

impl DeviceKind {
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Pmem => "pmem",
            DeviceKind::File => "file",
            DeviceKind::Null => "null",
            DeviceKind::Nats => "nats",
        }
    }
}

/// What the emulated NVM delay (`--nvm-delay-ns`, `--nvm-delays`) is charged per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NvmDelayPer {
    /// Per 64-byte line persisted (written back, or written through a file on NVRAM), on the
    /// thread that writes it: NV-Logging's Setup-A ("we add these delays after executing the
    /// clflush instruction").
    #[default]
    Line,
    /// Per persistence barrier (each fence, and each write into a log file on NVRAM), not per
    /// line: how Intel's PMEP, NV-Logging's Setup-B, exposes NVRAM latency to software (its
    /// stalls are paid where software waits for persistence, the barrier ending an epoch of
    /// writes), and how PMFS pays it per write.
    Barrier,
}

impl NvmDelayPer {
    pub fn name(self) -> &'static str {
        match self {
            NvmDelayPer::Line => "line",
            NvmDelayPer::Barrier => "barrier",
        }
    }
}

/// The nats device's publish timeout, ms, when none is given.
fn nats_default_timeout_ms() -> u64 {
    let cfg = braid_nats::NatsConfig::new(String::new(), String::new());
    cfg.timeout.as_millis() as u64
}

/// A flag parsed by the library type's own names (strum): the accepted ones are listed in
/// `--help` and in the error, as for a clap value enum, without a mirror enum in the command.
fn named<T>() -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = strum::ParseError>
        + strum::VariantNames
        + Clone
        + Send
        + Sync
        + 'static,
{
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(T::VARIANTS).try_map(|s| s.parse::<T>())
}

/// A database id for a new database on the nats device: unique per process and moment.
pub fn new_db_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("db-{}-{nanos:x}", std::process::id())
}

/// Log and engine settings.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Concurrency control: 2pl (NO_WAIT), occ, or mvcc (multi-version OCC, Taurus Sec. 4.4).
    #[arg(long, default_value_t = Options::default().cc)]
    pub cc: Cc,
    /// Data logging: one record per transaction at commit (txn), or one per insert, update and
    /// delete as it happens and a commit record (update: the ARIES log of Shore-MT that Wang &
    /// Johnson and NV-Logging measure; serial, nvdisk, aether, baseline, gsn and pertxn).
    #[arg(long, default_value_t = Options::default().records)]
    pub records: braid_wal::scheme::Records,
    /// Group commit: most microseconds the flusher waits for more log.
    #[arg(long, default_value_t = Options::default().group_delay.as_micros() as u64)]
    pub group_delay_us: u64,
    /// Group commit: flush once this many KiB are pending.
    #[arg(long, default_value_t = Options::default().group_bytes >> 10)]
    pub group_kb: usize,
    /// Pmem log ring per stream, MiB.
    #[arg(long, default_value_t = PmemOptions::default().ring_size >> 20)]
    pub ring_mb: usize,
    /// Emulated extra NVM write latency, ns, per persisted cache line (or per barrier, see
    /// --nvm-delay-per).
    #[arg(long, default_value_t = PmemOptions::default().write_delay_ns)]
    pub nvm_delay_ns: u64,
    /// What the NVM delay is charged per: line (each 64-byte line persisted, NV-Logging's
    /// Setup-A) or barrier (each fence and each write into a log file on NVRAM, as Intel's PMEP
    /// and PMFS expose NVRAM latency: NV-Logging's Setup-B).
    #[arg(long, value_enum, default_value_t = NvmDelayPer::Line)]
    pub nvm_delay_per: NvmDelayPer,
    /// How pmem region files reach power-safe media: auto (MAP_SYNC on DAX, else msync of every
    /// flushed range; files on tmpfs such as /dev/shm are an emulation and labelled so), dax,
    /// msync, or emulated (flush + fence only: not power-safe, labelled in every output).
    #[arg(long, value_parser = named::<Media>(), default_value_t = PmemOptions::default().media)]
    pub pmem_media: Media,
    /// Persistence domain of the emulated NVM.
    #[arg(long, value_parser = named::<Domain>(), default_value_t = PmemOptions::default().domain)]
    pub domain: Domain,
    /// How log bytes are written to persistent memory.
    #[arg(long, value_parser = named::<PmemWrite>(), default_value_t = PmemOptions::default().write)]
    pub pmem_write: PmemWrite,
    /// Do not de-stage full pmem ring space to segment files.
    #[arg(long)]
    pub no_destage: bool,
    /// Segment file size, MiB (file device).
    #[arg(long, default_value_t = FileOptions::default().segment_size >> 20)]
    pub segment_mb: u64,
    /// Open segment files with O_DIRECT.
    #[arg(long)]
    pub direct: bool,
    /// RAID-0: stripe each log stream across this many file devices (1: no striping); with
    /// scheme serial this is the Taurus paper's serial logging on RAID-0. Fixed when the
    /// database is created.
    #[arg(long, default_value_t = FileOptions::default().stripe)]
    pub stripe: usize,
    /// RAID-0 stripe unit, KiB (a multiple of 4).
    #[arg(long, default_value_t = FileOptions::default().stripe_unit >> 10)]
    pub stripe_kb: u64,
    /// Emulated device speed: every log device (one per stream) moves at most this many MB/s
    /// (0: unlimited). Each flush (each fill on pmem) and each read of recovery waits as on a
    /// device of this speed; labelled in every output. A new database records it in
    /// braid.json, and reopening (`braid recover`) applies the recorded speed unless this or
    /// --device-sync-us is given (0 and 0: the devices' own speed). Not for pertxn, whose log
    /// is a persistent-memory region.
    #[arg(long)]
    pub device_mbps: Option<f64>,
    /// Emulated device speed: microseconds each flush (each fill on pmem) adds on every log
    /// device, after its transfer (0: none). Recorded and reapplied as --device-mbps is.
    #[arg(long)]
    pub device_sync_us: Option<u64>,
    /// Workers make the durable commit (the library's `Txn::commit`), which returns only once
    /// the transaction is durable: each worker waits for each of its commits. Without it
    /// workers make the pipelined commit (`Txn::commit_async`): it returns a ticket at once and
    /// the worker starts its next transaction while the flush is under way (`bench` keeps up
    /// to --inflight tickets per worker); a commit still counts only once its ticket says it
    /// is durable. Pipelined is the default because the papers' throughput is measured that
    /// way, workers not waiting for their own commit's flush; it is recorded in each result's
    /// params as `commit` (`pipelined` or `durable`).
    #[arg(long)]
    pub sync_commit: bool,
    /// Threads that replay the log at recovery.
    #[arg(long, default_value_t = Options::default().recovery_threads)]
    pub recovery_threads: usize,
    /// Take a checkpoint in the background every this many seconds (0: never by time).
    /// The `braid` command takes no checkpoints unless a checkpoint flag asks for them (so its
    /// figures measure what they always did); the library's `Options::default()` checkpoints
    /// every 16 MiB of log: `--checkpoint-log-mb 16 --checkpoint-log-ratio 1` runs that.
    #[arg(long, default_value_t = 0.0)]
    pub checkpoint_interval: f64,
    /// Take a checkpoint once the log has grown this many MiB since the last (0: off).
    #[arg(long, default_value_t = 0)]
    pub checkpoint_log_mb: u64,
    /// With --checkpoint-log-mb: also wait until the log since the last checkpoint is this many
    /// times that checkpoint's size (0: off; the library's default is 1).
    #[arg(long, default_value_t = 0.0)]
    pub checkpoint_log_ratio: f64,
    /// Keep the log under about this many MiB with checkpoints and truncation (0: no cap).
    #[arg(long, default_value_t = 0)]
    pub log_cap_mb: u64,
    /// taurus: how recovery replays: auto (one data log on several threads: each thread its
    /// share of the keys; else serial when the log offers little parallelism), parallel
    /// (pools and RLV), serial, or shares (data logs on several threads: each thread walks
    /// every log in the serial order and applies its share of the keys).
    #[arg(long, default_value_t = Options::default().recovery_plan)]
    pub taurus_recovery: RecoveryPlan,
    #[command(flatten)]
    pub gsn: GsnConfig,
    #[command(flatten)]
    pub taurus: TaurusConfig,
    #[command(flatten)]
    pub pertxn: PerTxnConfig,
    /// nats device: the cluster's server URLs, comma-separated (nats://HOST:PORT,...;
    /// `scripts/nats-cluster.sh start` prints them).
    #[arg(long, value_name = "URL")]
    pub nats_url: Option<String>,
    /// nats device: the database's id, which names its streams and bucket on the cluster
    /// (letters, digits, '-', '_'). Default: a new id for a new database; give it to recover a
    /// database from the cluster into an empty directory.
    #[arg(long, value_name = "ID")]
    pub db_id: Option<String>,
    /// nats device: how long a flush waits for its publish acknowledgement, ms, before its
    /// commits fail with a timeout.
    #[arg(long, default_value_t = nats_default_timeout_ms())]
    pub nats_timeout_ms: u64,
    /// Any scheme's own option, as SCHEME.KEY=VALUE (repeatable; e.g. gsn.partition=page,
    /// taurus.anchor_kb=128). A scheme added to braid is configured this way with no new
    /// flag; the schemes' flags below set some of these.
    #[arg(long = "scheme-opt", value_name = "SCHEME.KEY=VALUE")]
    pub scheme_opt: Vec<String>,
}

impl EngineArgs {
    pub fn device(&self, kind: DeviceKind) -> DeviceConfig {
        match kind {
            DeviceKind::Null => DeviceConfig::Null,
            DeviceKind::File => DeviceConfig::File(
                FileOptions::default()
                    .segment_size(self.segment_mb << 20)
                    .direct(self.direct)
                    .stripe(self.stripe.max(1))
                    .stripe_unit(self.stripe_kb << 10),
            ),
            DeviceKind::Pmem => DeviceConfig::Pmem(
                PmemOptions::default()
                    .ring_size(self.ring_mb << 20)
                    .media(self.pmem_media)
                    .domain(self.domain)
                    .write_delay_ns(match self.nvm_delay_per {
                        NvmDelayPer::Line => self.nvm_delay_ns,
                        NvmDelayPer::Barrier => 0,
                    })
                    .fence_delay_ns(match self.nvm_delay_per {
                        NvmDelayPer::Line => 0,
                        NvmDelayPer::Barrier => self.nvm_delay_ns,
                    })
                    .write(self.pmem_write)
                    .destage(!self.no_destage),
            ),
            DeviceKind::Nats => {
                let mut cfg = braid_nats::NatsConfig::new(
                    self.nats_url.clone().unwrap_or_default(),
                    self.db_id.clone().unwrap_or_else(new_db_id),
                );
                cfg.timeout = Duration::from_millis(self.nats_timeout_ms.max(1));
                DeviceConfig::External(std::sync::Arc::new(braid_nats::NatsFactory::new(cfg)))
            }
        }
    }

    /// Take the NATS URL and database id a database's `braid.json` records (its location),
    /// where the command line gave none.
    pub fn nats_from_location(&mut self, location: Option<&str>) {
        if let Some((url, id)) = location.and_then(braid_nats::NatsConfig::parse_location) {
            self.nats_url.get_or_insert(url);
            self.db_id.get_or_insert(id);
        }
    }

    /// The emulated device speed asked for, if either flag was given (an unlimited pace when
    /// both are 0, which opens a database created with a pace at the devices' own speed);
    /// `None` takes the pace a database records.
    pub fn pace(&self) -> Option<Pace> {
        if self.device_mbps.is_none() && self.device_sync_us.is_none() {
            return None;
        }
        Some(
            Pace::default()
                .mbps(self.device_mbps.unwrap_or(0.0))
                .sync_us(self.device_sync_us.unwrap_or(0)),
        )
    }

    /// Scheme `name` configured by the schemes' flags and `--scheme-opt`.
    pub fn spec(&self, name: &str) -> anyhow::Result<SchemeSpec> {
        let flagged: [SchemeSpec; 3] = [
            self.gsn.clone().into(),
            self.taurus.clone().into(),
            self.pertxn.clone().into(),
        ];
        let mut spec = match flagged.into_iter().find(|s| s.name() == name) {
            Some(s) => s,
            None => SchemeSpec::named(name)?,
        };
        for opt in &self.scheme_opt {
            let (scheme, key, value) = opt
                .split_once('=')
                .and_then(|(path, value)| path.split_once('.').map(|(s, k)| (s, k, value)))
                .with_context(|| format!("--scheme-opt {opt:?}: write SCHEME.KEY=VALUE"))?;
            SchemeSpec::named(scheme).with_context(|| format!("--scheme-opt {opt:?}"))?;
            if scheme == spec.name() {
                spec.set(key, value)
                    .with_context(|| format!("--scheme-opt {opt:?}"))?;
            }
        }
        Ok(spec)
    }

    pub fn options(
        &self,
        scheme: SchemeSpec,
        logging: LogKind,
        device: DeviceKind,
        logs: usize,
        threads: usize,
    ) -> Options {
        let device = if scheme.log_place() == LogPlace::Nowhere {
            DeviceConfig::Null
        } else {
            self.device(device)
        };
        Options::default()
            .scheme(scheme)
            .logging(logging)
            .records(self.records)
            .cc(self.cc)
            .device(device)
            .streams(logs.max(1))
            .group_delay(Duration::from_micros(self.group_delay_us))
            .group_bytes(self.group_kb << 10)
            .max_workers(threads.max(1) + 2)
            .recovery_threads(self.recovery_threads)
            .checkpoint(self.checkpoint_options())
            .recovery_plan(self.taurus_recovery)
            .pace(self.pace())
    }

    /// The commit the workers make, as results record it: `durable` (`--sync-commit`) or
    /// `pipelined`.
    pub fn commit_mode(&self) -> &'static str {
        if self.sync_commit {
            "durable"
        } else {
            "pipelined"
        }
    }

    /// The checkpoint triggers asked for: all fields from the flags, none from
    /// `CheckpointOptions::default()` (whose size trigger the flags leave off).
    pub fn checkpoint_options(&self) -> braid_engine::CheckpointOptions {
        let mb = |v: u64| (v > 0).then_some(v << 20);
        braid_engine::CheckpointOptions::default()
            .interval(
                (self.checkpoint_interval > 0.0)
                    .then(|| Duration::from_secs_f64(self.checkpoint_interval)),
            )
            .log_bytes(mb(self.checkpoint_log_mb))
            .log_ratio((self.checkpoint_log_ratio > 0.0).then_some(self.checkpoint_log_ratio))
            .log_cap(mb(self.log_cap_mb))
            .load_threads(self.recovery_threads.max(1))
    }
}

/// Run `client`'s next transaction on `worker` with the commit `--sync-commit` asks for: the
/// durable one ([`Client::run_one`]; the ticket returned is resolved) with `sync_commit`, the
/// pipelined one ([`Client::run_one_async`]; acknowledged only once its ticket resolves)
/// otherwise.
pub fn run_client(
    client: &mut dyn Client,
    worker: &mut Worker,
    sync_commit: bool,
) -> Result<Ticket, TxError> {
    if sync_commit {
        client.run_one(worker).map(|()| Ticket::DURABLE)
    } else {
        client.run_one_async(worker)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use braid_wal::scheme::RecoveryPlan;

    fn engine(args: &[&str]) -> EngineArgs {
        let cmd = <EngineArgs as Args>::augment_args(clap::Command::new("x"));
        let m = cmd
            .try_get_matches_from(std::iter::once("x").chain(args.iter().copied()))
            .unwrap();
        <EngineArgs as clap::FromArgMatches>::from_arg_matches(&m).unwrap()
    }

    #[test]
    fn scheme_flags_reach_the_options() {
        let opt = |e: &EngineArgs, scheme: &str, key: &str| -> String {
            let spec = e.spec(scheme).unwrap();
            spec.options()
                .into_iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v)
                .unwrap()
        };
        let e = engine(&[]);
        let o = e.options(
            e.spec("taurus").unwrap(),
            LogKind::Data,
            DeviceKind::Pmem,
            2,
            2,
        );
        assert_eq!(o.recovery_plan, RecoveryPlan::Auto);
        assert_eq!(opt(&e, "taurus", "lv_compress"), "auto");
        assert_eq!(opt(&e, "gsn", "scan_threads"), "0");
        let e = engine(&[
            "--lv-compress",
            "on",
            "--taurus-recovery",
            "serial",
            "--scan-threads",
            "3",
            "--apply-threads",
            "2",
        ]);
        let o = e.options(
            e.spec("taurus").unwrap(),
            LogKind::Data,
            DeviceKind::Pmem,
            2,
            2,
        );
        assert_eq!(o.recovery_plan, RecoveryPlan::Serial);
        assert_eq!(opt(&e, "taurus", "lv_compress"), "on");
        assert_eq!(opt(&e, "gsn", "scan_threads"), "3");
        assert_eq!(opt(&e, "gsn", "apply_threads"), "2");
        let e = engine(&["--lv-compress", "off", "--taurus-recovery", "parallel"]);
        let o = e.options(
            e.spec("taurus").unwrap(),
            LogKind::Data,
            DeviceKind::Pmem,
            2,
            2,
        );
        assert_eq!(opt(&e, "taurus", "lv_compress"), "off");
        assert_eq!(o.recovery_plan, RecoveryPlan::Parallel);
        assert_eq!(opt(&e, "taurus", "simd"), "auto");
        let e = engine(&["--lv-simd", "off"]);
        assert_eq!(opt(&e, "taurus", "simd"), "off");
        let e = engine(&["--scheme-opt", "taurus.simd=avx2"]);
        assert_eq!(opt(&e, "taurus", "simd"), "avx2");
        let e = engine(&[
            "--lv-delta",
            "1MiB",
            "--gsn-partition",
            "page",
            "--rows-per-page",
            "4",
            "--pertxn-flush",
            "commit",
            "--pertxn-slot-bytes",
            "512",
        ]);
        assert_eq!(opt(&e, "taurus", "delta_kb"), "1024");
        assert_eq!(opt(&e, "gsn", "partition"), "page");
        assert_eq!(opt(&e, "gsn", "rows_per_page"), "4");
        assert_eq!(opt(&e, "pertxn", "flush"), "commit");
        assert_eq!(opt(&e, "pertxn", "slot_bytes"), "512");
        // Defaults are the library's own.
        let e = engine(&[]);
        assert_eq!(e.gsn.rows_per_page, GsnConfig::default().rows_per_page);
        assert_eq!(e.taurus, TaurusConfig::default());
        assert_eq!(e.pertxn, PerTxnConfig::default());
        // Values the configuration cannot take are refused by the parser, naming the flag.
        let cmd = || <EngineArgs as Args>::augment_args(clap::Command::new("x"));
        for bad in [
            ["--rows-per-page", "0"],
            ["--lv-delta", "1.5MiB"],
            ["--lv-compress", "maybe"],
            ["--lv-simd", "sse"],
        ] {
            let err = cmd()
                .try_get_matches_from(std::iter::once("x").chain(bad))
                .unwrap_err()
                .to_string();
            assert!(err.contains(bad[0]), "{bad:?}: {err}");
        }
    }

    /// The commit the workers make is named where results record it: pipelined unless
    /// `--sync-commit` asks for the library's durable commit.
    #[test]
    fn the_commit_mode_is_named() {
        assert_eq!(engine(&[]).commit_mode(), "pipelined");
        assert_eq!(engine(&["--sync-commit"]).commit_mode(), "durable");
    }

    /// The log's defaults reach the command line unchanged: group commit and recovery
    /// threads are the library's own.
    #[test]
    fn log_defaults_are_the_librarys() {
        let (e, o) = (engine(&[]), Options::default());
        let opts = e.options(
            SchemeSpec::default(),
            o.logging,
            DeviceKind::File,
            o.streams,
            1,
        );
        assert_eq!(opts.group_delay, o.group_delay);
        assert_eq!(opts.group_bytes, o.group_bytes);
        assert_eq!(opts.recovery_threads, o.recovery_threads);
    }

    #[test]
    fn scheme_opt_sets_any_option_and_refuses_unknown_ones() {
        let e = engine(&[
            "--scheme-opt",
            "gsn.partition=page",
            "--scheme-opt",
            "taurus.anchor_kb=8",
        ]);
        let g = e.spec("gsn").unwrap();
        assert!(g.options().contains(&("partition", "page".to_string())));
        let t = e.spec("taurus").unwrap();
        assert!(t.options().contains(&("anchor_kb", "8".to_string())));
        let bad = engine(&["--scheme-opt", "taurus.no_such=1"]);
        let err = format!("{:#}", bad.spec("taurus").unwrap_err());
        assert!(
            err.contains("no option \"no_such\"") && err.contains("delta_kb"),
            "{err}"
        );
        let bad = engine(&["--scheme-opt", "nosuch.x=1"]);
        let err = format!("{:#}", bad.spec("serial").unwrap_err());
        assert!(err.contains("unknown scheme"), "{err}");
    }
}
