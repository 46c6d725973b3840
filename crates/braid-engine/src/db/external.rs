//! External log devices: a [`DeviceFactory`] that a crate outside the engine implements (the
//! NATS JetStream device of `braid-nats`), so a database can log to a replicated service while
//! the engine itself stays free of that service's client and async runtime.
//!
//! The factory opens one device per stream and keeps the database's `braid.json` beside the
//! log, so that a database whose local directory is lost (the machine with it) can be opened
//! again in an empty directory from the service alone: [`Db::open`](super::Db::open) finds no
//! local `braid.json`, asks the factory for the stored one, checks it against the options like
//! a local one, writes it locally and recovers from the service's streams.

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
    /// Whether `recorded`, the location a database's `braid.json` names, is the log this
    /// factory opens; `Err` says what differs and what to do. Default: the same text.
    fn check_location(&self, recorded: &str) -> Result<(), String> {
        if recorded == self.location() {
            Ok(())
        } else {
            Err(format!(
                "its log is at {recorded}, not at {}; reopen it with that location",
                self.location()
            ))
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
        Err(WalError::Config(format!(
            "a standby cannot follow a log on a {} device",
            self.kind()
        )))
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
