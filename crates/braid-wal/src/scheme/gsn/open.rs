//! Opening the gsn scheme: check the devices, run the two-step parallel recovery (Wang &
//! Johnson Section 3.2, `recovery.rs`), start one stream per log at its valid end, void on file
//! logs what lies above the recovery bound, and start the commit daemon.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use braid_pmem::signal;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use super::config::{
    CommitProtocol, GsnConfig, NO_COMMAND_LOGGING, Partition, RFA_NEEDS_TX_PARTITION,
};
use super::counters::GsnCounters;
use super::log::{Log, LogInner, Mode};
use super::pages::{MAX_RFA_LOGS, PageTable};
use super::shared::Shared;
use super::{Gsn, daemon, recovery};
use crate::WalError;
use crate::device::Device;
use crate::record::Kind;
use crate::scheme::{LogKind, RecoveryReport, Replay, SchemeConfig};
use crate::stream::Stream;
use crate::wait::Progress;

/// Check the configuration and the devices; returns whether the logs are on persistent memory.
/// `commands`: whether command logging is accepted (the autonomous scheme).
fn check_devices(
    cfg: &SchemeConfig,
    devices: &[Arc<dyn Device>],
    commands: bool,
) -> Result<bool, WalError> {
    if cfg.logging == LogKind::Command && !commands {
        return Err(WalError::Unsupported(crate::Unsupported::Scheme {
            scheme: "gsn",
            refused: crate::Refused::CommandLogging,
            why: NO_COMMAND_LOGGING,
        }));
    }
    if devices.is_empty() {
        return Err(WalError::StreamCount {
            scheme: "gsn".to_string(),
            given: 0,
            min: 1,
            max: usize::MAX,
        });
    }
    let on_fill = devices.iter().filter(|d| d.durable_on_fill()).count();
    if on_fill != 0 && on_fill != devices.len() {
        return Err(WalError::Unsupported(crate::Unsupported::MixedDevices {
            scheme: "gsn",
        }));
    }
    Ok(on_fill == devices.len())
}

/// Run the recovery pipeline over the logs on `devices` through `replay`, and nothing else: no
/// streams are started and nothing is written (on files, the void marker that [`open_gsn`] writes is
/// not written either, so use [`open_gsn`] before appending). For benchmarks and inspection.
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn recover_only(
    cfg: &SchemeConfig,
    gsn: &GsnConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<RecoveryReport, WalError> {
    let pmem = check_devices(cfg, devices, true)?;
    let started = Instant::now();
    let rec = recovery::recover(
        devices,
        pmem,
        gsn.rows_per_page,
        recovery::Threads::of(cfg, gsn),
        cfg.scan_mode,
        cfg.cut.as_ref(),
        replay,
        progress,
    )?;
    let mut report = rec.report;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Recover the gsn logs on `devices` and start the scheme (the concrete type, for its
/// `Gsn::stats`; [`SchemeDef::open`](crate::scheme::SchemeDef::open) is the same behind the
/// seam).
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn open_gsn(
    cfg: &SchemeConfig,
    gcfg: &GsnConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<Gsn>, RecoveryReport), WalError> {
    open_logs(cfg, gcfg, devices, replay, progress, false)
}

/// [`open_gsn`], or with `autonomous` the scheme of that name (`crate::scheme::autonomous`):
/// file logs only, Remote Flush Avoidance, and no commit daemon.
pub(crate) fn open_logs(
    cfg: &SchemeConfig,
    gcfg: &GsnConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    autonomous: bool,
) -> Result<(Arc<Gsn>, RecoveryReport), WalError> {
    let pmem = check_devices(cfg, &devices, autonomous)?;
    if autonomous && pmem {
        return Err(WalError::Unsupported(crate::Unsupported::Scheme {
            scheme: "autonomous",
            refused: crate::Refused::Pmem,
            why: crate::scheme::autonomous::NO_PMEM,
        }));
    }
    if gcfg.rfa {
        if gcfg.partition == Partition::Page && devices.len() > 1 {
            return Err(WalError::Unsupported(crate::Unsupported::Scheme {
                scheme: "gsn",
                refused: crate::Refused::Options,
                why: RFA_NEEDS_TX_PARTITION,
            }));
        }
        if devices.len() >= MAX_RFA_LOGS {
            return Err(WalError::TooMany {
                what: "gsn logs with Remote Flush Avoidance (a page names its writer's log in \
                       16 bits)",
                max: MAX_RFA_LOGS - 1,
                remedy: "use fewer logs, or turn the gsn option rfa off",
            });
        }
    }
    let gcfg = gcfg.clone();
    let mode = match (pmem, gcfg.commit) {
        (false, _) => Mode::Watermark,
        (true, CommitProtocol::DurableCache) => Mode::Immediate,
        (true, CommitProtocol::Passive) => Mode::Passive,
    };
    if mode == Mode::Passive {
        signal::install().map_err(|source| {
            WalError::Unsupported(crate::Unsupported::PassiveCommit { source })
        })?;
    }
    let started = Instant::now();
    let rec = recovery::recover(
        &devices,
        pmem,
        gcfg.rows_per_page,
        recovery::Threads::of(cfg, &gcfg),
        cfg.scan_mode,
        cfg.cut.as_ref(),
        replay,
        progress,
    )?;
    let mut report = rec.report;
    let mut streams = Vec::with_capacity(devices.len());
    let mut logs = Vec::with_capacity(devices.len());
    for (i, (dev, end)) in devices.into_iter().zip(rec.ends).enumerate() {
        let stream = Stream::start(dev, end, cfg.stream(i, 2))?;
        let mut writer = stream.writer()?;
        if autonomous {
            // Every commit record is waited for or checked through a ticket that waits for or
            // checks its log's stream (its own log's, or a remote commit's points), and such a
            // waiter flushes it itself when no flush is under way (`stream/lead.rs`): the
            // worker flushes its own log, not the stream's flusher thread.
            writer.set_commits_waited(true);
        }
        let inner = LogInner {
            clock: rec.base - 1,
            writer,
            pending: VecDeque::new(),
            durable_gsn: 0,
            remote: VecDeque::new(),
        };
        streams.push(stream.clone());
        logs.push(Log {
            stream,
            inner: Mutex::new(inner),
            remote_gsn: AtomicU64::new(0),
            settled: AtomicU64::new(0),
        });
    }
    if !pmem {
        // Void what lies above the bound before anything new is written (see `recovery`).
        // With the decisions above the bound (`live.rs`), so that a later recovery replays
        // exactly what this one did inside the marker's range.
        let marker = super::deps::encode_marker(&super::deps::Marker {
            lo: rec.bound.min(rec.base),
            hi: rec.base,
            dead: Some(rec.dead),
        });
        let mut ends = Vec::with_capacity(logs.len());
        for log in &logs {
            let mut g = log.inner.lock();
            let (gsn, end) = log.insert_locked(
                &mut g,
                &gcfg,
                rec.base - 1,
                Kind::Checkpoint,
                0,
                0,
                &[&marker],
                false,
            )?;
            g.durable_gsn = gsn;
            ends.push(end);
        }
        for (log, end) in logs.iter().zip(ends) {
            log.stream.wait_durable(end)?;
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    let pages = PageTable::new(gcfg.page_slots, gcfg.rows_per_page);
    // Command logging: the write-after-read order (`reads.rs`), one read GSN per page clock.
    let reads = (cfg.logging == LogKind::Command)
        .then(|| super::reads::ReadClocks::new(gcfg.page_slots.max(1).next_power_of_two()));
    let logs_n = logs.len();
    let shared = Arc::new(Shared {
        cfg: gcfg,
        mode,
        autonomous,
        logs,
        pages,
        reads,
        acked: CachePadded::new(AtomicU64::new(0)),
        lanes: Mutex::new(Vec::new()),
        retired: Default::default(),
        acked_wait: Progress::new(),
        daemon_wait: Progress::new(),
        cells: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        poison: OnceLock::new(),
        failed: Mutex::new(None),
        any_failed: AtomicBool::new(false),
        counters: GsnCounters::default(),
        board: crate::proxy::ProxyBoard::new(logs_n),
        open: Arc::new(crate::scheme::open_txns::OpenTxns::new(
            cfg.max_workers.max(1),
            logs_n,
        )),
    });
    let daemon = if mode == Mode::Immediate || autonomous {
        None
    } else {
        Some(daemon::spawn(Arc::clone(&shared))?)
    };
    let name = if autonomous {
        crate::scheme::autonomous::NAME
    } else {
        super::NAME
    };
    Ok((Arc::new(Gsn::new(name, shared, streams, daemon)), report))
}
