//! The gsn scheme's configuration: how records are spread over the logs (transaction- or
//! page-level partitioning, Wang & Johnson Section 3.3), how commits are protected (durable
//! cache or passive group commit, Sections 4.1-4.2), the emulated NVM insert delay (Section
//! 5.1) and the recovery pipeline's thread counts (Section 3.2), with the scheme's registration
//! and its refusals (command logging, MVCC).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::open::open_gsn;
use super::pages;
use crate::scheme::registry::{Registration, SchemeDef, parse_option, unknown_option};
use crate::scheme::{RecoveryReport, Replay, Scheme, SchemeConfig, Storage};
use crate::{UnknownName, WalError};

/// Why the gsn scheme refuses command logging.
pub(crate) const NO_COMMAND_LOGGING: &str = "the gsn scheme cannot log commands: GSNs order \
    read-after-write and write-after-write dependencies but not write-after-read ones, which \
    re-executing stored procedures needs; use data logging (LogKind::Data)";

/// Why gsn refuses the engine's multi-version concurrency control.
pub(crate) const NO_MVCC: &str = "the gsn scheme cannot recover a multi-versioned database: its \
    recovery splits records into per-page operations and applies them in GSN order, without \
    the commit timestamps MVCC records carry; use the 2PL or OCC concurrency control with gsn, or \
    another scheme (serial, taurus, pertxn, nvdisk) with MVCC";

/// How records are spread over the logs.
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
#[strum(parse_err_ty = UnknownName, parse_err_fn = unknown_partition)]
pub enum Partition {
    /// A worker's transactions go to its own log.
    #[default]
    #[strum(to_string = "tx", serialize = "txn", serialize = "transaction")]
    Transaction,
    /// An operation goes to log `page id mod n`.
    #[strum(to_string = "page", serialize = "pg")]
    Page,
}

impl Partition {
    /// `"tx"` or `"page"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

fn unknown_partition(s: &str) -> UnknownName {
    UnknownName::new("partitioning", s, &["tx", "page"])
}

/// How commits are protected on persistent memory (file devices always use watermarks).
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
#[strum(parse_err_ty = UnknownName, parse_err_fn = unknown_commit)]
pub enum CommitProtocol {
    /// Durable processor cache: acknowledge after the insert's fence (the paper's D variants).
    #[strum(to_string = "durable", serialize = "d")]
    DurableCache,
    /// Volatile cache: passive group commit (the paper's V variants).
    #[default]
    #[strum(to_string = "passive", serialize = "v")]
    Passive,
}

impl CommitProtocol {
    /// `"durable"` or `"passive"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

fn unknown_commit(s: &str) -> UnknownName {
    UnknownName::new("commit protocol", s, &["durable", "passive"])
}

/// Options of the gsn scheme. With the crate's `cli` feature they are command-line flags
/// (`clap::Args`), whose help is the fields' docs.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[cfg_attr(feature = "cli", command(next_help_heading = "Scheme gsn"))]
#[non_exhaustive]
pub struct GsnConfig {
    /// Log partitioning: tx (a worker's transactions go to its own log) or page (an
    /// operation goes to log page-id mod logs). Scheme option `partition`.
    #[cfg_attr(feature = "cli", arg(long = "gsn-partition", default_value_t = GsnConfig::default().partition))]
    pub partition: Partition,
    /// Commit protection on pmem: durable (durable processor cache: acknowledge after the
    /// insert's fence) or passive (volatile cache: passive group commit). File logs always use
    /// per-log durable GSN watermarks. Scheme option `commit`.
    #[cfg_attr(feature = "cli", arg(long = "gsn-commit", default_value_t = GsnConfig::default().commit))]
    pub commit: CommitProtocol,
    /// Rows per page (consecutive keys of a table share a page GSN). Scheme option
    /// `rows_per_page`.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = GsnConfig::default().rows_per_page, value_parser = clap::value_parser!(u64).range(1..)))]
    pub rows_per_page: u64,
    /// Remote Flush Avoidance (Haubenschild et al., SIGMOD 2020) on file logs: a commit that
    /// touched no row another log wrote and did not yet make durable everywhere is
    /// acknowledged once its own log is flushed, without waiting for the other logs (off:
    /// every commit waits until every log is durable up to its GSN, Wang & Johnson's rule).
    /// Needs transaction-level partitioning; no effect on persistent memory. Scheme option
    /// `rfa` (on or off).
    #[cfg_attr(feature = "cli", arg(long = "gsn-rfa", action = clap::ArgAction::Set, value_name = "on|off", default_value_t = GsnConfig::default().rfa, value_parser = parse_on_off))]
    pub rfa: bool,
    /// Emulated NVM latency per log insert, ns, busy-waited (the paper uses 1200). Scheme
    /// option `insert_delay_ns`.
    #[cfg_attr(feature = "cli", arg(long = "gsn-insert-delay-ns", default_value_t = GsnConfig::default().insert_delay_ns))]
    pub insert_delay_ns: u64,
    /// Passive group commit: signal a worker that keeps `min_dgsn` below the target this long.
    #[cfg_attr(feature = "cli", arg(skip = GsnConfig::default().straggler_after))]
    pub straggler_after: Duration,
    /// Page clocks (rounded up to a power of two).
    #[cfg_attr(feature = "cli", arg(skip = GsnConfig::default().page_slots))]
    pub page_slots: usize,
    /// Called on the committing thread after its records are inserted and its commit GSN is
    /// staged, before it publishes `dgsn` (passive group commit only). Tests use it to make a
    /// worker stall with its dirty bit set. Exists in the crate's test build only.
    #[cfg(test)]
    #[cfg_attr(feature = "cli", arg(skip))]
    pub(crate) after_insert: Option<Hook>,
    /// Test switch: the straggler signal's handler ignores this instance's workers (signals
    /// are still sent and counted), to show that the handler is what releases a straggler.
    /// Exists in the crate's test build only.
    #[cfg(test)]
    #[cfg_attr(feature = "cli", arg(skip))]
    pub(crate) mute_signal_handler: bool,
    /// Recovery: N, the threads that scan the logs and partition their redo operations by
    /// page (Wang & Johnson Sec. 3.2); 0: the recovery threads. Scheme option `scan_threads`.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = GsnConfig::default().scan_threads))]
    pub scan_threads: usize,
    /// Recovery: M, the page buckets and the threads that sort each by GSN and apply it;
    /// 0: the recovery threads. Scheme option `apply_threads`.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = GsnConfig::default().apply_threads))]
    pub apply_threads: usize,
}

/// A test callback in `GsnConfig` (`after_insert`).
#[derive(Clone)]
pub(crate) struct Hook(
    /// The callback.
    pub Arc<dyn Fn() + Send + Sync>,
);

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hook")
    }
}

impl GsnConfig {
    /// The test build's `after_insert` hook; none in any other build.
    pub(crate) fn after_insert_hook(&self) -> Option<&Hook> {
        #[cfg(test)]
        return self.after_insert.as_ref();
        #[cfg(not(test))]
        None
    }
}

impl Default for GsnConfig {
    fn default() -> Self {
        GsnConfig {
            partition: Partition::Transaction,
            commit: CommitProtocol::Passive,
            rows_per_page: 16,
            rfa: false,
            insert_delay_ns: 0,
            straggler_after: Duration::from_micros(200),
            page_slots: pages::DEFAULT_SLOTS,
            #[cfg(test)]
            after_insert: None,
            #[cfg(test)]
            mute_signal_handler: false,
            scan_threads: 0,
            apply_threads: 0,
        }
    }
}

/// `on` or `off`, as the `rfa` option is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OnOff(pub bool);

impl fmt::Display for OnOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0 { "on" } else { "off" })
    }
}

impl std::str::FromStr for OnOff {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "on" | "true" | "yes" | "1" => Ok(OnOff(true)),
            "off" | "false" | "no" | "0" => Ok(OnOff(false)),
            _ => Err(UnknownName::new("setting", s, &["on", "off"])),
        }
    }
}

#[cfg(feature = "cli")]
fn parse_on_off(s: &str) -> Result<bool, UnknownName> {
    s.parse::<OnOff>().map(|v| v.0)
}

/// Why RFA needs transaction-level partitioning.
pub(crate) const RFA_NEEDS_TX_PARTITION: &str = "Remote Flush Avoidance (gsn option rfa) \
    acknowledges a commit by its own log's flush, so each transaction must write one log: use \
    transaction-level partitioning (gsn option partition = tx) with rfa on";

/// The scheme's name.
pub(crate) const NAME: &str = "gsn";

/// The scheme's registration (see [`crate::scheme::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "distributed logging with global sequence numbers and passive group commit",
    default: || Box::new(GsnConfig::default()),
};

const OPTIONS: &[&str] = &[
    "partition",
    "commit",
    "rows_per_page",
    "rfa",
    "insert_delay_ns",
    "scan_threads",
    "apply_threads",
];

impl SchemeDef for GsnConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn streams_for(&self, requested: usize) -> usize {
        requested.max(1)
    }
    fn command_logging_refusal(&self) -> Option<&'static str> {
        Some(NO_COMMAND_LOGGING)
    }
    fn mvcc_refusal(&self) -> Option<&'static str> {
        Some(NO_MVCC)
    }
    fn update_records_refusal(&self) -> Option<&'static str> {
        None
    }
    fn follower(
        &self,
        cfg: &SchemeConfig,
        streams: usize,
    ) -> Result<Box<dyn crate::scheme::follow::Follower>, WalError> {
        if cfg.logging == crate::scheme::LogKind::Command {
            return Err(WalError::Unsupported(crate::Unsupported::Scheme {
                scheme: "gsn",
                refused: crate::Refused::CommandLogging,
                why: NO_COMMAND_LOGGING,
            }));
        }
        if streams == 0 {
            return Err(WalError::StreamCount {
                scheme: "gsn".to_string(),
                given: 0,
                min: 1,
                max: usize::MAX,
            });
        }
        Ok(super::follow::GsnFollower::boxed(cfg, self, streams))
    }
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        match key {
            "partition" => self.partition = parse_option(NAME, key, value)?,
            "commit" => self.commit = parse_option(NAME, key, value)?,
            "rows_per_page" => self.rows_per_page = parse_option::<u64>(NAME, key, value)?.max(1),
            "rfa" => self.rfa = parse_option::<OnOff>(NAME, key, value)?.0,
            "insert_delay_ns" => self.insert_delay_ns = parse_option(NAME, key, value)?,
            "scan_threads" => self.scan_threads = parse_option(NAME, key, value)?,
            "apply_threads" => self.apply_threads = parse_option(NAME, key, value)?,
            _ => return Err(unknown_option(NAME, key, OPTIONS)),
        }
        Ok(())
    }
    fn options(&self) -> Vec<(&'static str, String)> {
        vec![
            ("partition", self.partition.name().to_string()),
            ("commit", self.commit.name().to_string()),
            ("rows_per_page", self.rows_per_page.to_string()),
            ("rfa", OnOff(self.rfa).to_string()),
            ("insert_delay_ns", self.insert_delay_ns.to_string()),
            ("scan_threads", self.scan_threads.to_string()),
            ("apply_threads", self.apply_threads.to_string()),
        ]
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let (g, r) = open_gsn(cfg, self, storage.devices(NAME)?, replay, progress)?;
        Ok((g, r))
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(self.clone())
    }
}
