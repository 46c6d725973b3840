//! The `braid` command's integration tests, one module per file: each runs the built binary
//! and asserts on its machine-readable output (`--json`).

mod common;

mod checkpoint_cli;
mod cli;
mod crash_matrix;
mod gsn_crash;
mod nats_cli;
mod pertxn_cli;
mod rewind_peers;
mod silor_crash;
mod taurus_crash;
