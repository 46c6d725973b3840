//! braid-engine's integration tests, one binary: one module per file of this directory
//! (`common` holds the counter workload and checker the fault tests share).

mod alice;
mod checkpoint;
mod checkpoint_store;
mod common;
mod durable_defaults;
mod engine;
mod faults;
mod lock;
mod mvcc;
mod phantom;
mod recovery_crash;
mod update_records;
