//! The paper workbench behind the `braid` command: the benchmark harness (`braid bench`), the
//! report that reruns the papers' evaluated figures (`braid report`), the REWIND experiments
//! (`braid bench rewind`), the crash campaign (`braid crash-test`), timed recovery
//! (`braid recover`) and redrawing saved results (`braid plot`). Each subcommand's arguments
//! are a `clap::Args` struct here with a `run` function; the command parses and dispatches.
//! Not published: its API is the command's, not a library's.

// The module docs are a map of the workbench for whoever works on it and link to the private
// modules that do each part, as they did when this was the command's own source.
#![allow(rustdoc::private_intra_doc_links)]

pub mod bench;
pub mod common;
pub mod crash;
pub mod oracle;
pub mod output;
pub mod plot;
pub mod recover;
pub mod replot;
pub mod report;
pub mod rewind;
