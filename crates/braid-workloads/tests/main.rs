//! The integration tests of braid-workloads, one module per file: each workload's transactions,
//! consistency conditions and recovery through the engine (`common` holds the shared helpers).

mod common;
mod tatp;
mod tpcb;
mod tpcc;
mod ycsb;
