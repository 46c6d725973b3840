//! The autonomous scheme's options (the page grouping and recovery pipeline it shares with
//! gsn), its registration and its refusals (MVCC, persistent memory, a hot standby of command
//! logs).

use std::sync::Arc;

use crate::WalError;
use crate::scheme::gsn::{GsnConfig, Partition};
use crate::scheme::registry::{Registration, SchemeDef, parse_option, unknown_option};
use crate::scheme::{RecoveryReport, Replay, Scheme, SchemeConfig, Storage};

/// The scheme's name.
pub(crate) const NAME: &str = "autonomous";

/// Why it refuses persistent-memory logs.
pub(crate) const NO_PMEM: &str = "the autonomous scheme acknowledges commits by flushing file \
    logs; on persistent memory with a durable cache a commit is durable when inserted, which \
    the gsn scheme does (gsn option commit = durable): use a file device, or scheme gsn";

const NO_COMMAND_STANDBY: &str = "a hot standby of the autonomous scheme replays redo images \
    page by page; it cannot follow command logs (recovery re-executes them): use data logging \
    (LogKind::Data) for a standby";

const NO_MVCC: &str = "the autonomous scheme cannot recover a multi-versioned database: its \
    recovery (gsn's) applies per-page operations in GSN order, without the commit timestamps \
    MVCC records carry; use the 2PL or OCC concurrency control with it, or another scheme with MVCC";

/// The scheme's registration (see [`crate::scheme::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "per-worker logs that acknowledge their own commits, without a group-commit thread",
    default: || Box::new(AutonomousConfig::default()),
};

const OPTIONS: &[&str] = &["rows_per_page", "scan_threads", "apply_threads"];

/// Options of the autonomous scheme, set as scheme options (`--scheme-opt
/// autonomous.KEY=VALUE`): what it shares with gsn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AutonomousConfig {
    /// Rows per page (consecutive keys of a table share a page GSN and a writer). Option
    /// `rows_per_page`.
    pub rows_per_page: u64,
    /// Recovery: threads that scan the logs (0: the recovery threads). Option `scan_threads`.
    pub scan_threads: usize,
    /// Recovery: page buckets and the threads that apply them (0: the recovery threads).
    /// Option `apply_threads`.
    pub apply_threads: usize,
}

impl Default for AutonomousConfig {
    fn default() -> Self {
        let g = GsnConfig::default();
        AutonomousConfig {
            rows_per_page: g.rows_per_page,
            scan_threads: g.scan_threads,
            apply_threads: g.apply_threads,
        }
    }
}

impl AutonomousConfig {
    /// The gsn logs it runs on: transaction-level partitioning (each worker its own log) and
    /// Remote Flush Avoidance.
    pub(crate) fn gsn(&self) -> GsnConfig {
        GsnConfig {
            partition: Partition::Transaction,
            rfa: true,
            rows_per_page: self.rows_per_page,
            scan_threads: self.scan_threads,
            apply_threads: self.apply_threads,
            ..GsnConfig::default()
        }
    }
}

impl SchemeDef for AutonomousConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn streams_for(&self, requested: usize) -> usize {
        requested.max(1)
    }
    fn command_logging_refusal(&self) -> Option<&'static str> {
        None
    }
    fn mvcc_refusal(&self) -> Option<&'static str> {
        Some(NO_MVCC)
    }
    fn pmem_refusal(&self) -> Option<&'static str> {
        Some(NO_PMEM)
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
                scheme: NAME,
                refused: crate::Refused::CommandLogging,
                why: NO_COMMAND_STANDBY,
            }));
        }
        self.gsn().follower(cfg, streams)
    }
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        match key {
            "rows_per_page" => self.rows_per_page = parse_option::<u64>(NAME, key, value)?.max(1),
            "scan_threads" => self.scan_threads = parse_option(NAME, key, value)?,
            "apply_threads" => self.apply_threads = parse_option(NAME, key, value)?,
            _ => return Err(unknown_option(NAME, key, OPTIONS)),
        }
        Ok(())
    }
    fn options(&self) -> Vec<(&'static str, String)> {
        vec![
            ("rows_per_page", self.rows_per_page.to_string()),
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
        let (g, r) = crate::scheme::gsn::open::open_logs(
            cfg,
            &self.gsn(),
            storage.devices(NAME)?,
            replay,
            progress,
            true,
        )?;
        Ok((g, r))
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(self.clone())
    }
}
