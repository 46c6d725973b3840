//! `silor`: SiloR, epoch-based parallel value logging (Zheng, Tu, Liskov, Madden, "Fast
//! Databases with Fast Durability and Recovery Through Multicore Parallelism", OSDI 2014),
//! the comparator Taurus measures against (Xia et al., VLDB 2021, Section 5, Figs. 6 and 8).
//!
//! * **Epochs and TIDs** (`epoch.rs`; SiloR Sections 3 and 4.1): a global epoch advanced every
//!   `epoch_ms` (SiloR: 40 ms); each transaction's TID carries the epoch it committed in and is
//!   above the TIDs of the rows it touched, which the rows keep.
//! * **Loggers** (`logger.rs`, Section 4.1): one stream per logger, on its own device;
//!   workers map onto streams round robin and append their value-log records (redo images
//!   stamped with the TID) there. Per stream the highest epoch made durable is tracked, and
//!   the durable epoch `D` = the minimum over the streams is persisted as a record on stream
//!   0 (`durable.rs` says why not a file) before it is published.
//! * **Acknowledgement**: a commit's ticket resolves once its epoch is `<= D`, never before,
//!   so an acknowledged commit waits on average half an epoch plus a flush.
//! * **Recovery** (`recovery.rs`, Section 5): read `D`, replay every stream's records of
//!   epochs `<= D` in parallel, latest TID wins per key, discard the rest; a void marker keeps
//!   the discarded ones from ever coming back. A single stream is replayed while it is read
//!   (`pipeline.rs`), several window by window between durable-epoch records (`windows.rs`).
//! * **Checkpoints**: the engine's transaction-consistent checkpoints and log cut
//!   ([`super::cut`]), as for every scheme (SiloR's own fuzzy checkpoints are not modelled):
//!   records carry the checkpoint epoch bit, a checkpoint waits until `D` covers every
//!   record before its cut ([`Scheme::wait_durable`]), and truncation releases each stream
//!   up to the cut.
//!
//! What it refuses: command logging (SiloR logs values only, [`NO_COMMAND_LOGGING`]) and the
//! multi-versioned engine ([`NO_MVCC`]). Under 2PL it runs as under OCC: the engine calls
//! `commit` with every lock of the write set held, which is all the TID rule needs, and the
//! epoch read inside `commit` orders every transaction after those whose writes it saw.

mod durable;
mod epoch;
mod logger;
mod pipeline;
mod recovery;
mod windows;
mod worker;

#[cfg(not(feature = "testing"))]
pub(crate) use durable::void_payload;
#[cfg(feature = "testing")]
pub use durable::{
    Mark, decode_mark, pepoch_payload, pepoch_tails, pepoch_tails_payload, void_payload,
};
#[cfg(all(test, not(feature = "testing")))]
pub(crate) use durable::{pepoch_payload, pepoch_tails_payload};
#[cfg(test)]
pub(crate) use epoch::first_tid;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::registry::{Registration, SchemeDef, parse_option, unknown_option};
use super::{LogKind, RecoveryReport, Replay, Scheme, SchemeConfig, SchemeWorker, Storage};
use crate::device::Device;
use crate::proxy::{Proxies, ProxyBoard};
use crate::record::{Kind, RecordSpec, Stamp};
use crate::stream::{MAX_STREAMS, Stream};
use crate::{Lsn, WalError};
use durable::Durable;
use epoch::Epochs;
use worker::{RowTids, SilorWorker};

/// The scheme's name.
pub(crate) const NAME: &str = "silor";

/// Why SiloR has no command logging.
pub(crate) const NO_COMMAND_LOGGING: &str = "silor logs values only (SiloR's value logging): its \
     recovery installs the latest value per key in any order, which re-executed commands \
     cannot do; use data logging";

/// Why SiloR does not run the multi-versioned engine.
pub(crate) const NO_MVCC: &str = "silor replays single-version value logs (latest TID wins per key); \
     the multi-versioned engine's records carry commit timestamps it does not read";

/// The scheme's registration (see [`super::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "SiloR: epoch-based parallel value logging, durable epoch, parallel recovery",
    default: || Box::new(SilorConfig::default()),
};

const OPTIONS: &[&str] = &["epoch_ms"];

/// SiloR's options.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SilorConfig {
    /// Milliseconds between two advances of the global epoch (SiloR: 40).
    pub epoch_ms: u64,
}

impl Default for SilorConfig {
    fn default() -> Self {
        SilorConfig { epoch_ms: 40 }
    }
}

impl SchemeDef for SilorConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn streams_for(&self, requested: usize) -> usize {
        requested.clamp(1, MAX_STREAMS)
    }
    fn command_logging_refusal(&self) -> Option<&'static str> {
        Some(NO_COMMAND_LOGGING)
    }
    fn mvcc_refusal(&self) -> Option<&'static str> {
        Some(NO_MVCC)
    }
    fn acknowledges_every(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_millis(self.epoch_ms.max(1)))
    }
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        match key {
            "epoch_ms" => {
                let ms: u64 = parse_option(NAME, key, value)?;
                if ms == 0 {
                    return Err(WalError::BadOption(crate::BadOption::Range {
                        scheme: NAME,
                        key: "epoch_ms",
                        value: ms,
                        min: 1,
                        max: u64::MAX,
                    }));
                }
                self.epoch_ms = ms;
            }
            _ => return Err(unknown_option(NAME, key, OPTIONS)),
        }
        Ok(())
    }
    fn options(&self) -> Vec<(&'static str, String)> {
        vec![("epoch_ms", self.epoch_ms.to_string())]
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let (s, r) = open_silor(cfg, self, storage.devices(NAME)?, replay, progress)?;
        Ok((s, r))
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(self.clone())
    }
}

/// What the workers and the epoch thread share.
pub(crate) struct Shared {
    pub(crate) epochs: Epochs,
    pub(crate) durable: Arc<Durable>,
    pub(crate) streams: Vec<Stream>,
    pub(crate) epoch_len: Duration,
    /// The largest epoch a caller of [`Scheme::wait_durable`] waits for.
    pub(crate) want: AtomicU64,
    /// The largest TID of a deleting transaction (see `worker.rs`).
    pub(crate) delete_floor: AtomicU64,
    pub(crate) rows: RowTids,
    pub(crate) board: ProxyBoard,
    pub(crate) stop: Mutex<bool>,
    pub(crate) tick: Condvar,
    pub(crate) rounds: AtomicU64,
}

/// The running SiloR scheme.
pub(crate) struct Silor {
    sh: Arc<Shared>,
    logger: Mutex<Option<JoinHandle<()>>>,
}

impl Silor {
    /// The durable epoch now.
    #[cfg(test)]
    pub(crate) fn durable_epoch(&self) -> u64 {
        self.sh.durable.get()
    }
    /// The global epoch now.
    #[cfg(test)]
    pub(crate) fn epoch(&self) -> u64 {
        self.sh.epochs.current()
    }

    /// Stop the epoch thread after a last round.
    fn stop_logger(&self) {
        *self.sh.stop.lock() = true;
        self.sh.tick.notify_all();
        if let Some(h) = self.logger.lock().take() {
            // A panic of the epoch thread is a bug; its waiters are failed below.
            let _ = h.join();
        }
        self.sh.durable.close();
    }
}

impl Drop for Silor {
    fn drop(&mut self) {
        self.stop_logger();
    }
}

impl Scheme for Silor {
    fn name(&self) -> &'static str {
        NAME
    }
    fn worker(&self, worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(SilorWorker::new(Arc::clone(&self.sh), worker)?))
    }
    fn streams(&self) -> &[Stream] {
        &self.sh.streams
    }
    fn close(&self) -> Result<(), WalError> {
        self.stop_logger();
        let mut first = Ok(());
        for s in &self.sh.streams {
            if let Err(e) = s.close()
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }
    fn metadata_bytes(&self) -> u64 {
        self.sh.rows.bytes()
    }
    /// Every record before `lsns` was reserved before this call, so its epoch is at most the
    /// global epoch now: wait until `D` reaches it.
    fn wait_durable(&self, lsns: &[Lsn]) -> Result<(), WalError> {
        let _ = lsns;
        let target = self.sh.epochs.current();
        self.sh.want.fetch_max(target, SeqCst);
        self.sh.durable.wait(target)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("epoch", self.sh.epochs.current()),
            ("durable_epoch", self.sh.durable.get()),
            ("rounds", self.sh.rounds.load(SeqCst)),
        ]
    }
    fn proxies(&self) -> Option<Proxies> {
        Some(self.sh.board.sum())
    }
}

/// Recover the streams on `devices`, void what lies above the durable epoch, and start the
/// scheme (the concrete type, for tests and tools).
pub(crate) fn open_silor(
    cfg: &SchemeConfig,
    sc: &SilorConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<Silor>, RecoveryReport), WalError> {
    if cfg.logging == LogKind::Command {
        return Err(WalError::Unsupported(crate::Unsupported::Scheme {
            scheme: "silor",
            refused: crate::Refused::CommandLogging,
            why: NO_COMMAND_LOGGING,
        }));
    }
    if cfg.mvcc {
        return Err(WalError::Unsupported(crate::Unsupported::Scheme {
            scheme: "silor",
            refused: crate::Refused::Mvcc,
            why: NO_MVCC,
        }));
    }
    let n = devices.len();
    if n == 0 || n > MAX_STREAMS {
        return Err(WalError::StreamCount {
            scheme: "silor".to_string(),
            given: n,
            min: 1,
            max: MAX_STREAMS,
        });
    }
    let started = Instant::now();
    let rec = recovery::recover(cfg, &devices, replay, progress)?;
    let mut report = rec.report;
    let workers = cfg.max_workers.max(1);
    let mut streams = Vec::with_capacity(n);
    for (i, d) in devices.into_iter().enumerate() {
        // Stream 0 also takes the epoch thread's records.
        let scfg = cfg.stream(i, workers.div_ceil(n) + usize::from(i == 0));
        streams.push(Stream::start(d, rec.ends[i], scfg)?);
    }
    let mut writer = streams[0].writer()?;
    // Everything up to `max_epoch` is decided: replayed or void. Say so before anything new.
    if rec.max_epoch > rec.durable {
        let p = void_payload(rec.durable, rec.max_epoch);
        let payload = [&p[..]];
        let spec = RecordSpec {
            kind: Kind::Checkpoint,
            flags: 0,
            txn: 0,
            stamp: &Stamp::None,
            payload: &payload,
        };
        let (_, end) = writer.append(&spec)?;
        streams[0].wait_durable(end)?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    let sh = Arc::new(Shared {
        epochs: Epochs::new(rec.max_epoch + 1, workers),
        durable: Arc::new(Durable::new(rec.max_epoch)),
        streams,
        epoch_len: Duration::from_millis(sc.epoch_ms.max(1)),
        want: AtomicU64::new(0),
        delete_floor: AtomicU64::new(0),
        rows: RowTids::default(),
        board: ProxyBoard::new(n),
        stop: Mutex::new(false),
        tick: Condvar::new(),
        rounds: AtomicU64::new(0),
    });
    let logger = logger::Logger::new(Arc::clone(&sh), writer);
    let handle = std::thread::Builder::new()
        .name("braid-silor-epoch".into())
        .spawn(move || logger.run())
        .map_err(|e| WalError::thread_start("silor epoch", e))?;
    Ok((
        Arc::new(Silor {
            sh,
            logger: Mutex::new(Some(handle)),
        }),
        report,
    ))
}
