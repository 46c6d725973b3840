//! braid-wal: the write-ahead log layer shared by every braid logging scheme, usable on its own
//! by an engine builder.
//!
//! # Quick start
//!
//! Open a log in a directory under a scheme chosen by name, take a writer per thread, append
//! each transaction (the rows it wrote, while it holds their locks, and its payload), and
//! acknowledge it once the returned [`Ticket`] resolves. On reopen, every committed
//! transaction is handed back to your [`Replay`], in an order that respects their
//! dependencies.
//!
//! ```
//! use std::sync::Mutex;
//! use braid_wal::{LogKind, Replay, ReplayError, Wal};
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
//! let applied = Applied(Mutex::new(Vec::new()));
//! let wal = Wal::builder(tmp.path()).scheme("taurus")?.open(&applied)?; // or "serial", "gsn", ...
//! let mut w = wal.writer()?;
//! // Row 7 of table 0, written by this transaction (its lock held by the caller).
//! w.append(&[(0, 7)], b"k7=x")?.wait()?; // durable: fdatasync'd
//! drop(w);
//! wal.close()?;
//!
//! let wal = Wal::builder(tmp.path()).scheme("taurus")?.open(&applied)?;
//! assert_eq!(wal.recovered().txns, 1);
//! assert_eq!(applied.0.lock().unwrap()[0], b"k7=x");
//! # Ok(())
//! # }
//! ```
//!
//! The `kv_log` example is a whole key-value map over any scheme.
//!
//! # What a user holds
//!
//! * [`Wal`], [`WalBuilder`], [`WalWriter`]: the log in a directory, by scheme name; what
//!   [`WalWriter::append`] returns ([`Ticket`]) and what reopening calls ([`Replay`], with
//!   [`LogKind`] and [`ReplayError`]; [`RecoveryReport`] says what it recovered).
//! * [`payload`]: braid's redo-operation codec, for payloads the schemes that place each
//!   row's operation by itself (`gsn:partition=page`) can read.
//! * [`Progress`]: how every thread of the log layer waits for another's progress (spin,
//!   yield, then park until the publisher wakes it); public for engines that wait the same way.
//! * [`WalError`], [`UnknownName`], [`Lsn`].
//!
//! # Behind the `internals` feature
//!
//! The seam braid-engine and braid-nats build on is public only with the `internals` cargo
//! feature (raft-engine's pattern: usable, but not the API this crate promises to keep):
//! `scheme` (the engine-scheme seam: `Scheme`, `SchemeWorker`, `CommitRequest`, `scheme::open`
//! by `SchemeSpec`, and each scheme's configuration, `SerialConfig`, `TaurusConfig`,
//! `GsnConfig`, ...), `device` (the `Device` trait and the devices: segment files with group
//! fdatasync, a persistent-memory ring, striping, pacing, a null device), `fs` (the file-system
//! seam), `record` and `scan` (the record framing, and reading a stream back: its valid prefix
//! and how it ends). The streams, LSN vectors and each scheme's mechanisms are internal either
//! way. The `testing` feature (which implies `internals`) adds `braid_wal::testing`: machinery
//! for the project's crash tests, benches and fuzz targets (a fault-injecting file system, the
//! internals they drive); it is not part of the API. The `cli` feature derives `clap::Args` for
//! the configurations of the schemes with options a command line sets (`GsnConfig`,
//! `TaurusConfig`, `PerTxnConfig`): their fields' docs and defaults are the flags' help and
//! defaults, as in the `braid` command.

#![deny(missing_docs)]
// Without the `internals` feature the seam's modules are private: the front door runs on them,
// but much of what braid-engine and braid-nats call is then unreachable. The workspace (and CI's
// clippy) builds with the feature, where unused code is still an error.
#![cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]

#[cfg(feature = "internals")]
pub mod device;
#[cfg(not(feature = "internals"))]
pub(crate) mod device;
pub(crate) mod error;
#[cfg(feature = "internals")]
pub mod fs;
#[cfg(not(feature = "internals"))]
pub(crate) mod fs;
pub(crate) mod lv;
pub(crate) mod mix;
pub mod payload;
pub(crate) mod proxy;
#[cfg(feature = "internals")]
pub mod record;
#[cfg(not(feature = "internals"))]
pub(crate) mod record;
#[cfg(feature = "internals")]
pub mod scan;
#[cfg(not(feature = "internals"))]
pub(crate) mod scan;
#[cfg(feature = "internals")]
pub mod scheme;
#[cfg(not(feature = "internals"))]
pub(crate) mod scheme;
pub(crate) mod stream;
pub(crate) mod tally;
#[cfg(feature = "testing")]
pub mod testing;
// The atomics seam (std, or loom's under `--cfg loom`) for the loom models in `tests/`.
pub(crate) mod sync;
pub(crate) mod wait;
mod wal;

pub use error::{
    BadOption, BadSize, Corruption, Fence, FullRing, Invariant, Misuse, RecordFault, RecordProblem,
    Refused, RemoteFailure, RingFault, SegmentDamage, UnknownName, Unsupported, WalError, WrongLog,
};
pub use scheme::{LogKind, Prefetch, RecoveryReport, Replay, ReplayError, Ticket};
pub use wait::Progress;
pub use wal::{Wal, WalBuilder, WalWriter};

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
