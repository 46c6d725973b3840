//! [`NatsFactory`]: the engine's [`DeviceFactory`] for NATS, so `Options::device` can be
//! `DeviceConfig::External(Arc::new(NatsFactory::new(cfg)))`. It connects on first use, claims
//! a writer epoch when it opens the streams, keeps `braid.json` in the key-value bucket, and is
//! the database's [`CheckpointStore`] (the object store bucket, [`crate::objects`]).
//!
//! Opening the streams: claim the epoch, open every stream (each appends this writer's fence
//! and reads the stream back, refusing a newer fence it finds), then read the epoch again and
//! refuse if a newer writer claimed one meanwhile (why that order suffices is in
//! [`crate::device`]). A checkpoint upload is refused the same way once a newer writer
//! claimed the database, so a writer that was fenced without noticing (it had nothing to
//! flush) neither stores checkpoints nor, since truncation follows the upload, purges streams.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use braid_engine::LogTail;
use braid_engine::{CheckpointStore, DeviceFactory};
use braid_wal::WalError;
use braid_wal::device::Device;
use parking_lot::Mutex;

use crate::cluster::Cluster;
use crate::config::NatsConfig;
use crate::device::{NatsDevice, NatsLog};
use crate::tail::NatsTail;
use crate::{epoch, objects};

/// Opens a database's streams on a NATS cluster (see the module doc).
pub struct NatsFactory {
    cfg: NatsConfig,
    cluster: OnceLock<Arc<Cluster>>,
    connecting: Mutex<()>,
    /// The writer epoch claimed when the streams were opened (0: not yet).
    epoch: AtomicU64,
}

impl std::fmt::Debug for NatsFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsFactory")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl NatsFactory {
    /// A factory for `cfg`'s database (nothing is connected yet).
    pub fn new(cfg: NatsConfig) -> NatsFactory {
        NatsFactory {
            cfg,
            cluster: OnceLock::new(),
            connecting: Mutex::new(()),
            epoch: AtomicU64::new(0),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &NatsConfig {
        &self.cfg
    }

    /// The connection, made on first use.
    pub fn cluster(&self) -> Result<Arc<Cluster>, WalError> {
        if let Some(c) = self.cluster.get() {
            return Ok(c.clone());
        }
        let _g = self.connecting.lock();
        if let Some(c) = self.cluster.get() {
            return Ok(c.clone());
        }
        let c = Arc::new(Cluster::connect(self.cfg.clone())?);
        Ok(self.cluster.get_or_init(|| c).clone())
    }
}

/// Open streams `0..streams` as writer `epoch`, which the caller claimed: each appends its
/// fence and is read back, then the epoch is read again and a newer one refused (see the
/// module doc).
pub fn open_claimed(
    c: &Arc<Cluster>,
    streams: usize,
    epoch: u64,
) -> Result<Vec<NatsDevice>, WalError> {
    let devices = (0..streams)
        .map(|i| NatsLog::open_device(c.clone(), i as u32, epoch))
        .collect::<Result<Vec<_>, _>>()?;
    // Every stream holds this writer's fence now; a newer writer that claimed the database
    // before this read is seen here, one that claims it later fences this writer on its next
    // publish (see the device module doc).
    check_newest(c, epoch, "opening the log")?;
    Ok(devices)
}

/// Fail with [`WalError::Fenced`] if a writer newer than `epoch` claimed the database.
fn check_newest(c: &Cluster, epoch: u64, what: &str) -> Result<(), WalError> {
    let now = epoch::current(c)?;
    if now == epoch {
        return Ok(());
    }
    let cfg = c.config();
    Err(WalError::Fenced {
        stream: 0,
        fence: braid_wal::Fence::Epoch {
            during: what.to_string(),
            db_id: cfg.db_id.clone(),
            url: cfg.url.clone(),
            now,
            epoch,
        },
    })
}

impl DeviceFactory for NatsFactory {
    fn kind(&self) -> &'static str {
        "nats"
    }

    fn location(&self) -> String {
        self.cfg.location()
    }

    fn check_location(&self, recorded: &str) -> Result<(), WalError> {
        // The URL may name other servers of the same cluster; the database id must match.
        let wrong = match NatsConfig::parse_location(recorded) {
            Some((_, id)) if id == self.cfg.db_id => return Ok(()),
            Some((url, id)) => braid_wal::WrongLog::DbId {
                recorded: id.to_string(),
                url: url.to_string(),
                opened: self.cfg.db_id.clone(),
            },
            None => braid_wal::WrongLog::LocationKind {
                recorded: recorded.to_string(),
                device: "NATS",
            },
        };
        Err(WalError::WrongLog(wrong))
    }

    fn open_devices(&self, streams: usize) -> Result<Vec<Arc<dyn Device>>, WalError> {
        let c = self.cluster()?;
        let epoch = epoch::claim(&c)?;
        let devices = open_claimed(&c, streams, epoch)?;
        self.epoch.store(epoch, Ordering::Release);
        Ok(devices
            .into_iter()
            .map(|d| Arc::new(d) as Arc<dyn Device>)
            .collect())
    }

    fn checkpoints(&self) -> Option<&dyn CheckpointStore> {
        Some(self)
    }

    fn load_meta(&self) -> Result<Option<Vec<u8>>, WalError> {
        epoch::load_meta(&*self.cluster()?)
    }

    fn store_meta(&self, bytes: &[u8]) -> Result<(), WalError> {
        epoch::store_meta(&*self.cluster()?, bytes)
    }

    fn open_tail(&self, streams: usize) -> Result<Box<dyn LogTail>, WalError> {
        Ok(Box::new(NatsTail::new(self.cluster()?, streams)))
    }
}

impl CheckpointStore for NatsFactory {
    fn location(&self) -> String {
        match self.cluster.get() {
            Some(c) => objects::location(c),
            None => format!(
                "object store {} on {}",
                self.cfg.ckpt_bucket(),
                self.cfg.url
            ),
        }
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), WalError> {
        let c = self.cluster()?;
        let epoch = self.epoch.load(Ordering::Acquire);
        if epoch > 0 {
            check_newest(&c, epoch, &format!("storing checkpoint {name}"))?;
        }
        objects::put(&c, name, bytes)
    }

    fn list(&self) -> Result<Vec<String>, WalError> {
        objects::list(&*self.cluster()?)
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, WalError> {
        objects::get(&*self.cluster()?, name)
    }

    fn remove(&self, name: &str) -> Result<(), WalError> {
        objects::remove(&*self.cluster()?, name)
    }
}
