//! External log devices: a [`DeviceFactory`] that a crate outside the engine implements (the
//! NATS JetStream device of `braid-nats`), so a database can log to a replicated service while
//! the engine itself stays free of that service's client and async runtime.
//!
//! The factory opens one device per stream and keeps the database's `braid.json` beside the log, so
//! that a database whose local directory is lost (the machine with it) can be opened again in an
//! empty directory from the service alone: [`OpenBuilder::open`](crate::OpenBuilder::open) finds no
//! local `braid.json`, asks the factory for the stored one, checks it against the options like a
//! local one, writes it locally and recovers from the service's streams.
//!
//! A factory may also keep the database's checkpoints ([`DeviceFactory::checkpoints`], a
//! [`CheckpointStore`]): then a checkpoint counts only once the store holds it, the log is
//! truncated only up to checkpoints the store holds, and recovery takes the store's checkpoints
//! as the truth (see [`crate::checkpoint`]), so a database recovers in an empty directory from
//! its newest checkpoint and the log after it, and the service's log stays bounded.

use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::scan::StreamSource;
use braid_wal::{Lsn, WalError};

/// Opens the log devices of a database kept outside its directory (see the module doc).
pub trait DeviceFactory: Send + Sync + std::fmt::Debug {
    /// The device kind `braid.json` records (e.g. `"nats"`); reopening with another kind is
    /// refused.
    fn kind(&self) -> &'static str;
    /// Where the log lives (e.g. the service's URL), recorded in `braid.json`.
    fn location(&self) -> String;
    /// Whether `recorded`, the location a database's `braid.json` names, is the log this factory
    /// opens; `Err` ([`WalError::WrongLog`]) says what differs and what to do. Default: the same
    /// text.
    fn check_location(&self, recorded: &str) -> Result<(), WalError> {
        if recorded == self.location() {
            Ok(())
        } else {
            Err(WalError::WrongLog(braid_wal::WrongLog::Location {
                recorded: recorded.to_string(),
                opened: self.location(),
            }))
        }
    }
    /// Open the devices of streams `0..streams`, each holding what earlier runs wrote to it.
    /// Opening claims the database for this writer: a writer that opened it before is fenced.
    fn open_devices(&self, streams: usize) -> Result<Vec<Arc<dyn Device>>, WalError>;
    /// The database's `braid.json` as kept beside the log, if it was ever stored.
    fn load_meta(&self) -> Result<Option<Vec<u8>>, WalError>;
    /// Keep the database's `braid.json` beside the log (called when the database is created).
    fn store_meta(&self, bytes: &[u8]) -> Result<(), WalError>;
    /// Read streams `0..streams` as a standby does ([`crate::Standby`]): without claiming the
    /// database or writing anything. Default: this log cannot be followed.
    fn open_tail(&self, streams: usize) -> Result<Box<dyn LogTail>, WalError> {
        let _ = streams;
        Err(WalError::Unsupported(
            braid_wal::Unsupported::StandbyDevice {
                device: self.kind(),
            },
        ))
    }
    /// Where the database's checkpoints are kept beside the log, if this factory keeps them.
    /// Default: `None`, checkpoints are local files only (and the log is truncated by them as
    /// for a local device).
    fn checkpoints(&self) -> Option<&dyn CheckpointStore> {
        None
    }
}

/// A standby's reader of the log's streams (see [`DeviceFactory::open_tail`]).
pub trait LogTail: Send {
    /// Read what the streams gained since the last call. `keep_from[i]`: the standby no longer
    /// needs stream `i`'s bytes before this LSN.
    fn poll(&mut self, keep_from: &[Lsn]) -> Result<TailPoll, WalError>;
    /// Each stream as read so far (from at most the last `keep_from` on).
    fn sources(&self) -> Vec<&(dyn StreamSource + Sync)>;
}

/// What one [`LogTail::poll`] read.
#[derive(Debug, Clone, Default)]
pub struct TailPoll {
    /// Per stream: the end LSN and the time the service stored it (nanoseconds since the Unix
    /// epoch) of each message read, in order; a standby's lag is measured from them.
    pub messages: Vec<Vec<(Lsn, i128)>>,
    /// Bytes read.
    pub bytes: u64,
}

/// Checkpoint files kept beside an external log, by file name (`ckpt-<epoch>.ckpt`): see
/// [`DeviceFactory::checkpoints`]. Each call returns once the service has answered; `put`
/// returns once the checkpoint is stored as durably as the log.
pub trait CheckpointStore: Send + Sync + std::fmt::Debug {
    /// Where the checkpoints are kept (e.g. an object store bucket and its URL), for messages.
    fn location(&self) -> String;
    /// Store `bytes` as checkpoint `name`, replacing any checkpoint of that name.
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), WalError>;
    /// The names of the checkpoints held, in any order.
    fn list(&self) -> Result<Vec<String>, WalError>;
    /// Checkpoint `name`'s bytes, or `None` if it is not held.
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, WalError>;
    /// Remove checkpoint `name`; removing one that is not held does nothing.
    fn remove(&self, name: &str) -> Result<(), WalError>;
}
