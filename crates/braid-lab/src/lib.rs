//! The paper workbench behind the `braid` command: the benchmark harness (`braid bench`,
//! [`bench`](mod@bench)), the report that reruns the papers' evaluated figures and judges each against
//! the paper's claim (`braid report`, [`report`]), the REWIND experiments (`braid bench
//! rewind`, [`rewind`]), the crash campaign (`braid crash-test`, `crash`, with the `crash`
//! feature), timed recovery (`braid recover`, [`recover`]) and redrawing saved results (`braid
//! plot`, [`replot`]). Each subcommand's arguments are a `clap::Args` struct here with a
//! `run` function; the command (crates/braid) parses and dispatches. Not published: its API is
//! the command's, not a library's.
//!
//! The crash campaign runs on the libraries' fault-injection machinery (braid-engine's and
//! braid-wal's `testing` feature), so it is compiled only with this crate's `crash` feature;
//! the rest builds on the libraries as their users get them.
//!
//! The smoke run of the report that CI does (`braid report --quick`), from a program:
//!
//! ```no_run
//! use braid_lab::report::{self, ReportArgs};
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     report: ReportArgs,
//! }
//!
//! fn main() -> anyhow::Result<()> {
//!     let cli = Cli::parse_from(["report", "--quick", "--out", "target/braid/report-quick"]);
//!     // Every figure on small tables: target/braid/report-quick/summary.md, data/, plots/.
//!     report::run(cli.report)
//! }
//! ```

// The module docs are a map of the workbench for whoever works on it and link to the private
// modules that do each part, as they did when this was the command's own source.
#![allow(rustdoc::private_intra_doc_links)]

pub mod bench;
pub mod common;
#[cfg(feature = "crash")]
pub mod crash;
#[cfg(feature = "crash")]
pub mod oracle;
pub mod output;
pub mod plot;
pub mod recover;
pub mod replot;
pub mod report;
pub mod rewind;
