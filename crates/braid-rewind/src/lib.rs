//! braid-rewind: REWIND (Chatzistergiou, Cintra and Viglas, "REWIND: Recovery Write-Ahead
//! System for In-Memory Non-Volatile Data-Structures", VLDB 2015) on braid-pmem.
//!
//! A [`Pool`] is a persistent region (a file, a CrashSim region for tests, or anonymous DRAM
//! for baselines) holding a root object, a persistent heap ([`alloc`]) and one or more
//! recoverable logs. Code updates persistent data structures in place inside
//! [`Pool::transaction`]: every [`Tx::write`] first appends a physical (address, old, new)
//! record to a log that lives in persistent memory and is recoverable itself (§3), then
//! stores. An `Err` or a panic rolls the transaction back with compensation log records
//! (CLRs); reopening a pool after a crash recovers the log structure, then runs analysis, redo
//! (no-force) and undo (§4.5).
//!
//! Configurations ([`PoolConfig`]), the design space of §2-§3:
//! * log layout: [`LogLayout::Simple`] (the atomic doubly-linked list of Alg. 1),
//!   [`LogLayout::Optimized`] (bucketed), [`LogLayout::Batch`] (a cache line of records
//!   persisted with one fence) and [`LogLayout::Sealed`] (self-validating records, so a
//!   no-force commit is one fence, after Quadra, Ramalhete et al., PPoPP 2021);
//! * [`Layers::One`] (the list alone) or [`Layers::Two`] (an atomic AVL index by transaction
//!   over the list);
//! * [`Policy::Force`] (user writes persisted by commit, log cleared at commit) or
//!   [`Policy::NoForce`] (user writes cached, log cleared by checkpoints, redo at recovery);
//! * one shared log or per-thread logs ([`LogMode`]).
//!
//! Isolation is the user's, as in REWIND: transactions of different threads must not write
//! the same words concurrently (hold your locks until the transaction returns).
//!
//! On top of the library: a persistent B+-tree ([`btree`]) with a non-recoverable twin and a
//! doubly-linked list ([`list`]). The experiments of the paper's evaluation are in the `braid`
//! command (`braid bench rewind`); `examples/crash_recover.rs` crashes a transaction and
//! recovers.
//!
//! # Quick start
//!
//! ```rust
//! use braid_rewind::{PPtr, Pool, PoolConfig, Region, RewindError};
//!
//! # fn main() -> Result<(), RewindError> {
//! // A pool in 8 MiB of anonymous memory (`Pool::create` makes one in a file instead).
//! let pool = Pool::create_in(Region::anonymous(8 << 20), PoolConfig::default())?;
//!
//! // One transaction: allocate a counter, set it, make it the root. All or nothing.
//! pool.transaction(|tx| -> Result<(), RewindError> {
//!     let counter: PPtr<u64> = tx.alloc(8)?;
//!     tx.write(counter, 41)?;
//!     tx.set_root(counter)
//! })?;
//!
//! // Another one updates it in place (the old value is logged first).
//! let counter: PPtr<u64> = pool.root();
//! pool.transaction(|tx| {
//!     let v = tx.read(counter);
//!     tx.write(counter, v + 1)
//! })?;
//! assert_eq!(pool.read(counter), 42);
//!
//! // An `Err` (or a panic) rolls the transaction back.
//! let r = pool.transaction(|tx| -> Result<(), RewindError> {
//!     tx.write(counter, 0)?;
//!     Err(RewindError::user_abort("changed my mind"))
//! });
//! assert!(r.is_err());
//! assert_eq!(pool.read(counter), 42);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod alloc;
pub mod btree;
pub mod list;

// The atomic doubly-linked list is internal; its loom model (an integration test) reaches it
// through the `testing` feature.
#[cfg(feature = "testing")]
pub mod adll;
#[cfg(not(feature = "testing"))]
mod adll;
mod avl;
mod error;
mod log;
mod pool;
mod pptr;
mod raw;
mod record;
mod recovery;
mod tx;

pub use adll::AdllError;
pub use alloc::HeapReport;
pub use braid_pmem::{CrashMode, CrashSim, Domain, PmemConfig, Region, Words};
pub use error::{CheckError, ConfigError, Damage, NotAPoolReason, Refusal, RewindError};
pub use log::LogLayout;
pub use pool::{CommitClear, Layers, LogMode, Policy, Pool, PoolConfig, PoolStats};
pub use pptr::{PPtr, Persist};
pub use raw::RawMem;
pub use recovery::RecoveryReport;
pub use tx::{Mem, Tx};
