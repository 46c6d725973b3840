//! braid-rewind's integration tests, one module per file, in one test binary.
//!
//! `loom_adll` is the loom model of the atomic doubly-linked list: with `RUSTFLAGS="--cfg
//! loom"` it is model-checked (`cargo test --release -p braid-rewind --test integration
//! loom`), without it the same scenario runs as a stress test on real threads.

mod common;

mod btree;
mod crash;
mod cut;
mod loom_adll;
mod tx;
