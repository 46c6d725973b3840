//! `aether` and `baseline`: Shore-MT's central log with and without Aether's improvements
//! (Johnson et al., "Aether: A Scalable Approach to Logging", VLDB 2010), the two central-log
//! systems Wang & Johnson (VLDB 2014, Sec. 6 and Fig. 4) measure distributed logging against.
//!
//! Both keep one log stream shared by every worker, one LSN (the byte position in it), group
//! commit by the stream's flusher (Shore-MT's log flush daemon), serial's record format (so
//! recovery is serial's in-order replay and a standby follows them as it follows serial),
//! data or command logging, and per-update records (`--records update`: every write inserts
//! its redo record as it happens, the commit inserts a commit record, an abort an abort
//! record), with the first record of every open transaction kept from truncation
//! (`scheme/central.rs`).
//!
//! * `baseline` (`baseline.rs`): every insert takes the log's one mutex across reserving and
//!   copying (Sec. 3's starting point); no early lock release (a committing transaction holds
//!   its locks until its commit is durable, [`SchemeDef::early_lock_release`] is false) and
//!   no flush pipelining (the engine waits for durability before the worker goes on).
//! * `aether`: the four mechanisms of the paper, as far as they apply to braid:
//!   * Early lock release (Sec. 3): locks go once the commit record is in the buffer.
//!   * Flush pipelining (Sec. 4): the worker hands its commit to the flusher and goes on; its
//!     ticket resolves when the flusher has made the record durable (`scheme/central.rs`).
//!   * Consolidated buffer allocation (Sec. 5.1): threads arriving while another acquires the
//!     log combine their requests in a consolidation array, and one leader reserves for the
//!     whole group under the insert lock (`carray.rs`).
//!   * Decoupled buffer fill (Sec. 5.2): every member copies its own record outside the lock;
//!     the group's space counts as filled only once the last member is done
//!     (`consolidated.rs`, and the stream's group reservations in `stream/group.rs`).
//!   * Speculative lock inheritance (SLI; Johnson et al., VLDB 2009, enabled with Aether in
//!     Wang & Johnson's runs) passes hot, shared intention locks of a central lock manager from a
//!     committing transaction to the next one on the same thread. braid has no central lock
//!     manager and no hierarchical intention locks: its locks are words in the rows, taken
//!     and released without any shared structure, so there is nothing to inherit and SLI is
//!     not implemented.
//!
//! Option of `aether`: `slots` (the consolidation array's slots, 1 to 64, default 4). The
//! paper's array is small (a handful of slots) because contention on it is spread by the
//! combining itself.
//!
//! Choices where the paper leaves room: the paper's insert first tries the lock and only on
//! failure visits the array; here every insert joins the array (a group of one when no one
//! else is inserting), so the protocol is the same on every path and its cost is counted on
//! every insert. The paper swaps a closed slot out for a fresh one; here a closed slot is out
//! of use until its group finishes, and arrivals take the next slot (see `carray.rs`).

// Public only for the loom model (`tests/loom_aether.rs`).
pub(crate) mod carray;

mod baseline;
mod consolidated;

use std::sync::Arc;
use std::time::Instant;

use super::central::Central;
use super::registry::{Registration, SchemeDef, parse_option, unknown_option};
use super::{RecoveryReport, Replay, Scheme, SchemeConfig, Storage, serial};
use crate::WalError;
use crate::device::Device;
use crate::scheme::follow::Follower;
use crate::stream::Stream;
use baseline::MutexLog;
use consolidated::Consolidated;

/// The `aether` scheme's registration (see [`super::SCHEMES`]).
pub(crate) const AETHER: Registration = Registration {
    name: AETHER_NAME,
    about: "Aether's central log: consolidation array, decoupled buffer fill, flush \
            pipelining, early lock release",
    default: || Box::new(AetherConfig::default()),
};

/// The `baseline` scheme's registration (see [`super::SCHEMES`]).
pub(crate) const BASELINE: Registration = Registration {
    name: BASELINE_NAME,
    about: "Shore-MT's central log without Aether: one mutex across reserve and copy, locks \
            held until durable",
    default: || Box::new(BaselineConfig),
};

/// The `aether` scheme's name.
pub(crate) const AETHER_NAME: &str = "aether";
/// The `baseline` scheme's name.
pub(crate) const BASELINE_NAME: &str = "baseline";

/// Most consolidation-array slots.
pub(crate) const MAX_SLOTS: usize = 64;

/// The `aether` scheme's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AetherConfig {
    /// Slots of the consolidation array (1 to [`MAX_SLOTS`]).
    pub slots: usize,
}

impl Default for AetherConfig {
    fn default() -> Self {
        AetherConfig { slots: 4 }
    }
}

impl SchemeDef for AetherConfig {
    fn name(&self) -> &'static str {
        AETHER_NAME
    }
    fn update_records_refusal(&self) -> Option<&'static str> {
        None
    }
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        match key {
            "slots" => {
                let n: usize = parse_option(AETHER_NAME, key, value)?;
                if !(1..=MAX_SLOTS).contains(&n) {
                    return Err(WalError::BadOption(crate::BadOption::Range {
                        scheme: AETHER_NAME,
                        key: "slots",
                        value: n as u64,
                        min: 1,
                        max: MAX_SLOTS as u64,
                    }));
                }
                self.slots = n;
                Ok(())
            }
            _ => Err(unknown_option(AETHER_NAME, key, &["slots"])),
        }
    }
    fn options(&self) -> Vec<(&'static str, String)> {
        vec![("slots", self.slots.to_string())]
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let devices = storage.devices(AETHER_NAME)?;
        let (stream, report) = recover(AETHER_NAME, cfg, devices, replay, progress, self.slots)?;
        let log = Consolidated::new(stream.clone(), self.slots)?;
        let scheme = Central::new(AETHER_NAME, stream, log, cfg.max_workers);
        Ok((Arc::new(scheme), report))
    }
    fn follower(&self, cfg: &SchemeConfig, streams: usize) -> Result<Box<dyn Follower>, WalError> {
        serial::follower(AETHER_NAME, cfg, streams)
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(*self)
    }
}

/// The `baseline` scheme's configuration (it has no options of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BaselineConfig;

impl SchemeDef for BaselineConfig {
    fn name(&self) -> &'static str {
        BASELINE_NAME
    }
    fn update_records_refusal(&self) -> Option<&'static str> {
        None
    }
    fn early_lock_release(&self) -> bool {
        false
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let devices = storage.devices(BASELINE_NAME)?;
        let (stream, report) = recover(BASELINE_NAME, cfg, devices, replay, progress, 0)?;
        let log = MutexLog::new(stream.clone());
        let scheme = Central::new(BASELINE_NAME, stream, log, cfg.max_workers);
        Ok((Arc::new(scheme), report))
    }
    fn follower(&self, cfg: &SchemeConfig, streams: usize) -> Result<Box<dyn Follower>, WalError> {
        serial::follower(BASELINE_NAME, cfg, streams)
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(*self)
    }
}

/// Shore-MT's central log buffer as `name`: baseline's insert (one mutex across reserving and
/// copying) with early lock release and flush pipelining, recovered from `devices`, and
/// Shore-MT's log flush daemon: only the stream's flusher writes (no committer leads a
/// flush), kicked by the records that end a transaction ([`MutexLog::kicked_by_commits`]).
/// NV-Disk's log ([`super::nvdisk`]).
pub(crate) fn open_locked_log(
    name: &'static str,
    cfg: &SchemeConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
    let (stream, report) = recover_with(name, cfg, devices, replay, progress, 0, true)?;
    let log = MutexLog::kicked_by_commits(stream.clone());
    Ok((
        Arc::new(Central::new(name, stream, log, cfg.max_workers)),
        report,
    ))
}

/// Replay the central log in LSN order (serial's recovery) and start its stream, with writer
/// slots for every worker and `extra` more.
fn recover(
    name: &str,
    cfg: &SchemeConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    extra: usize,
) -> Result<(Stream, RecoveryReport), WalError> {
    recover_with(name, cfg, devices, replay, progress, extra, false)
}

/// [`recover`]; `flusher_only`: only the stream's flusher flushes
/// ([`crate::stream::StreamConfig::flusher_only`]).
fn recover_with(
    name: &str,
    cfg: &SchemeConfig,
    mut devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    extra: usize,
    flusher_only: bool,
) -> Result<(Stream, RecoveryReport), WalError> {
    if devices.len() != 1 {
        return Err(WalError::StreamCount {
            scheme: name.to_string(),
            given: devices.len(),
            min: 1,
            max: 1,
        });
    }
    let device = devices.remove(0);
    let started = Instant::now();
    let mut report = RecoveryReport::default();
    let end = serial::replay_serial(&*device, cfg, replay, progress, &mut report)?;
    report.seconds = started.elapsed().as_secs_f64();
    let scfg = crate::stream::StreamConfig {
        flusher_only,
        ..cfg.stream(0, cfg.max_workers.max(1) + extra)
    };
    let stream = Stream::start(device, end, scfg)?;
    Ok((stream, report))
}
