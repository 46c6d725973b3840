//! braid-pmem's integration tests, one module per file (one test binary for the crate).

mod crash;
mod media;
mod region;
mod trip;
