//! Beyond the seeds: two designs published after the papers braid implements, measured on the
//! same engine, workload and devices as the schemes they build on (issue: "Past the seeds").
//!
//! * [`rfa`]: Remote Flush Avoidance (Haubenschild, Sauer, Neumann, Leis, SIGMOD 2020), gsn's
//!   `rfa` option: a commit waits for other logs only if it touched a row another log wrote
//!   and has not yet flushed.
//! * [`autonomous`]: autonomous commit (Nguyen, Alhomssi, Ziegler, Leis, SIGMOD 2025), the
//!   `autonomous` scheme: no group-commit thread, each worker flushes its own log and
//!   acknowledges its own commits.
//!
//! Both are commit-latency designs, so every run here waits for each commit before the next
//! (`--sync-commit`), on YCSB at its default Zipf 0.6, and the thread counts are the issue's
//! 4 and 16 whatever the machine's cores: a worker waiting for a sync leaves its core to the
//! others, so more workers than cores still load the device (on 2 cores, 16 workers also load
//! the scheduler: each row's p99 says how much).

mod autonomous;
mod rfa;

use super::experiments::{DATA, Experiment, Var, lines_vs_threads};
use super::plot::{Figure, Y};
use crate::bench::{BenchArgs, ConfigResult};

/// The experiments, in the summary's order.
pub fn all() -> Vec<Experiment> {
    vec![rfa::rfa(), autonomous::autonomous()]
}

/// The thread counts of both experiments (see the module doc).
const THREADS: &[usize] = &[4, 16];

/// Each worker waits for its commit, logs on file devices (in the bench's directory on the
/// root disk, unless a later setting moves them).
fn sync_commit(a: &mut BenchArgs) {
    a.engine.sync_commit = true;
    a.device = Some(vec![crate::common::DeviceKind::File]);
}

/// gsn with Remote Flush Avoidance.
fn rfa_on(a: &mut BenchArgs) {
    a.engine.gsn.rfa = true;
}

/// `schemes` waiting for each commit, labelled `label`, with `more` set after.
fn var(label: &'static str, schemes: &'static [&'static str], more: &[fn(&mut BenchArgs)]) -> Var {
    let mut set: Vec<fn(&mut BenchArgs)> = vec![sync_commit];
    set.extend_from_slice(more);
    Var {
        label,
        schemes,
        logging: DATA,
        set,
    }
}

/// The commit latency's 99th percentile against threads, one line per configuration.
fn p99_vs_threads(id: &str, title: &str) -> Figure {
    lines_vs_threads(id, title, "p99 commit latency, us", Y::P99Us, true)
}

/// The row of `scheme` (`variant` "" for its defaults) at `threads` in `rows`.
fn row<'a>(
    rows: &'a [ConfigResult],
    scheme: &str,
    variant: &str,
    threads: usize,
) -> Option<&'a ConfigResult> {
    rows.iter()
        .find(|c| c.scheme == scheme && c.variant == variant && c.threads == threads)
}

/// Microseconds as text.
fn us(x: f64) -> String {
    format!("{x:.0} us")
}
