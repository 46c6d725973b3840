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

use braid_wal::WalError;
use braid_wal::device::Device;

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
}
