//! braid-wal: the write-ahead log layer shared by every braid logging scheme, usable on its own
//! by an engine builder.
//!
//! # Quick start
//!
//! Pick a scheme by name, give it storage for its log, tell it about each row a transaction
//! writes (while the row's lock is held), hand it the transaction's payload at commit, and
//! acknowledge once the returned [`Ticket`](scheme::Ticket) resolves. On reopen, the scheme
//! hands every committed transaction back to your [`Replay`](scheme::Replay), in an order that
//! respects their dependencies.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use braid_wal::device::{FileDevice, FileDeviceConfig};
//! use braid_wal::fs::RealFs;
//! use braid_wal::scheme::{self, *};
//!
//! struct Applied(Mutex<Vec<Vec<u8>>>);
//! impl Replay for Applied {
//!     fn apply(&self, _txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
//!         self.0.lock().unwrap().push(payload.to_vec());
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let tmp = tempfile::tempdir()?;
//! let spec: SchemeSpec = "serial".parse()?; // or "taurus", "gsn:partition=page", ...
//! let open = |applied: &Applied| {
//!     let log = FileDevice::open(Arc::new(RealFs), FileDeviceConfig::new(tmp.path(), 0))?;
//!     let storage = Storage::Devices(vec![Arc::new(log)]);
//!     scheme::open(&spec, &SchemeConfig::default(), storage, applied, &|_| {})
//! };
//! let applied = Applied(Mutex::new(Vec::new()));
//! let (log, _) = open(&applied)?;
//! let mut w = log.worker(0)?;
//! w.on_write(RowRef::new(0, 7));
//! let req = CommitRequest {
//!     txn: 1, kind: LogKind::Data, payload: b"k7=x", read_only: false, epoch: 0, writes: &[],
//!     rows: &NoRows, updates: 0,
//! };
//! w.commit(&req)?.wait()?; // durable: fdatasync'd
//! drop(w);
//! log.close()?;
//! drop(log); // a stream has one writer: its lock goes with the last handle
//!
//! let (_log, report) = open(&applied)?;
//! assert_eq!(report.txns, 1);
//! assert_eq!(applied.0.lock().unwrap()[0], b"k7=x");
//! # Ok(())
//! # }
//! ```
//!
//! The `kv_log` example is a whole key-value map over any scheme.
//!
//! # What a user holds
//!
//! * [`scheme`]: the seam between an engine and a logging scheme ([`Scheme`](scheme::Scheme),
//!   [`SchemeWorker`](scheme::SchemeWorker), [`Ticket`](scheme::Ticket),
//!   [`Replay`](scheme::Replay)), [`scheme::open`] by [`SchemeSpec`](scheme::SchemeSpec), and
//!   each scheme's configuration (`SerialConfig`, `TaurusConfig`, `GsnConfig`, ...).
//! * [`device`]: the [`Device`](device::Device) trait and the devices: segment files with
//!   group fdatasync ([`FileDevice`](device::FileDevice)), a persistent-memory ring
//!   ([`PmemDevice`](device::PmemDevice)), striping, pacing and a null device.
//! * [`fs`]: the file-system seam the file device writes through ([`RealFs`](fs::RealFs)).
//! * [`record`], [`scan`], [`payload`]: the record framing, reading a stream back (its valid
//!   prefix and how it ends), and the payload codecs, for tools that read logs.
//! * [`Progress`]: how every thread of the log layer waits for another's progress (spin,
//!   yield, then park until the publisher wakes it); public for engines that wait the same way.
//! * [`WalError`], [`Lsn`].
//!
//! The streams, LSN vectors and each scheme's mechanisms are internal. The `testing` cargo
//! feature adds `braid_wal::testing`: machinery (a fault-injecting file system, the internals the
//! project's crash tests, benches and fuzz targets drive); it is not part of the API. The `cli`
//! feature derives `clap::Args` for the configurations of the schemes with options a command
//! line sets (`GsnConfig`, `TaurusConfig`, `PerTxnConfig`): their fields' docs and defaults are
//! the flags' help and defaults, as in the `braid` command.

#![deny(missing_docs)]

pub mod device;
pub(crate) mod error;
pub mod fs;
pub(crate) mod lv;
pub(crate) mod mix;
pub mod payload;
pub(crate) mod proxy;
pub mod record;
pub mod scan;
pub mod scheme;
pub(crate) mod stream;
pub(crate) mod tally;
#[cfg(feature = "testing")]
pub mod testing;
// The atomics seam (std, or loom's under `--cfg loom`) for the loom models in `tests/`.
pub(crate) mod sync;
pub(crate) mod wait;

pub use error::{UnknownName, WalError};
pub use wait::Progress;

// The crate's own tests (`tests/`, one module per file) are compiled into its unit-test
// binary, where they reach the internals without making them public; under this name their
// `braid_wal::` paths resolve to the crate itself.
#[cfg(test)]
extern crate self as braid_wal;
#[cfg(test)]
#[path = "../tests/main.rs"]
mod integration;

/// A byte position in one log stream. Position 0 is the first byte ever written to the stream.
pub type Lsn = u64;
