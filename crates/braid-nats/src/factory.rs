//! [`NatsFactory`]: the engine's [`DeviceFactory`] for NATS, so `Options::device` can be
//! `DeviceConfig::External(Arc::new(NatsFactory::new(cfg)))`. It connects on first use, claims
//! a writer epoch when it opens the streams, and keeps `braid.json` in the key-value bucket.

use std::sync::{Arc, OnceLock};

use braid_engine::DeviceFactory;
use braid_engine::db::LogTail;
use braid_wal::WalError;
use braid_wal::device::Device;
use parking_lot::Mutex;

use crate::cluster::Cluster;
use crate::config::NatsConfig;
use crate::device::NatsDevice;
use crate::epoch;
use crate::tail::NatsTail;

/// Opens a database's streams on a NATS cluster (see the module doc).
pub struct NatsFactory {
    cfg: NatsConfig,
    cluster: OnceLock<Arc<Cluster>>,
    connecting: Mutex<()>,
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

impl DeviceFactory for NatsFactory {
    fn kind(&self) -> &'static str {
        "nats"
    }

    fn location(&self) -> String {
        self.cfg.location()
    }

    fn check_location(&self, recorded: &str) -> Result<(), String> {
        // The URL may name other servers of the same cluster; the database id must match.
        match NatsConfig::parse_location(recorded) {
            Some((_, id)) if id == self.cfg.db_id => Ok(()),
            Some((url, id)) => Err(format!(
                "its log is database {id} on {url}, not {}; reopen it with --db-id {id}",
                self.cfg.db_id
            )),
            None => Err(format!(
                "its recorded log location {recorded:?} is not a NATS one"
            )),
        }
    }

    fn open_devices(&self, streams: usize) -> Result<Vec<Arc<dyn Device>>, WalError> {
        let c = self.cluster()?;
        let epoch = epoch::claim(&c)?;
        (0..streams)
            .map(|i| {
                NatsDevice::open(c.clone(), i as u32, epoch).map(|d| Arc::new(d) as Arc<dyn Device>)
            })
            .collect()
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
