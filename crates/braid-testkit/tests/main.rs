//! The fuzz targets' proptest twins: every check of `braid_testkit` runs here on its seeds, on
//! the committed corpus (`fuzz/corpus/`, regressions included), on arbitrary bytes, and on
//! mutated valid images, on any toolchain. `fuzz/` runs the same checks coverage-guided.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mutation;
mod twins;
