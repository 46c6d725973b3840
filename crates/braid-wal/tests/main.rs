//! braid-wal's tests of its whole mechanisms, one module per file, compiled into the crate's
//! unit-test binary (`#[path]` from `src/lib.rs`) so they reach internals that are not public.
//!
//! The loom model checks (`loom_*`) run as stress tests on real threads, or under
//! `RUSTFLAGS="--cfg loom" cargo test -p braid-wal --release --lib loom` as
//! model checks.

mod file_device_common;
mod loom_harness;
mod mem_device;
mod one_writer;
mod prefix_source;
mod redo_state;
mod scheme_txn;

mod aether_scheme;
mod file_device_device;
mod file_device_segments;
mod file_device_stream;
mod fs_fault;
mod fs_real;
mod fs_trip;
mod global_rmw;
mod gsn_scheme;
#[cfg(loom)]
mod loom_aether;
mod loom_gsn;
#[cfg(loom)]
mod loom_stream;
mod loom_taurus;
#[cfg(loom)]
mod loom_wait;
mod paced_device;
mod pertxn_crash;
mod plover_scheme;
mod pmem_device_crash;
mod prefix_property;
mod proxy;
mod record_payload;
mod record_roundtrip;
mod scan_end;
mod scan_mutation;
mod serial_scheme;
mod silor_scheme;
mod stream_fake;
mod striped_device;
mod taurus_commit;
mod taurus_deps;
mod taurus_lv;
mod taurus_one_log;
mod taurus_phantom;
mod taurus_pipeline;
mod taurus_rows;
mod taurus_shares;
mod taurus_simd;
mod toy_device;
mod toy_scheme;
mod wal_front;
