//! braid-engine's tests of the whole engine, compiled into the crate's unit-test binary
//! (`#[path]` from `src/lib.rs`, so they reach internals that are not public): one module per file of this directory
//! (`common` holds the counter workload and checker the fault tests share).

mod alice;
mod bounded_log;
mod checkpoint;
mod checkpoint_store;
mod common;
mod durable_defaults;
mod engine;
mod faults;
mod lock;
mod mvcc;
mod pace;
mod phantom;
mod recovery_crash;
mod update_records;
