//! Wang & Johnson (VLDB 2014), "Scalable Logging through Emerging Non-Volatile Memory": the
//! evaluated figures of §5.2-5.3, one file each. Fig. 4 sets centralized against distributed
//! logging on write-intensive transactions with a durable cache, Fig. 6 repeats it on the full
//! TATP and TPC-C mixes, and Fig. 8 runs the volatile-cache variants, whose commits wait for
//! passive group commit; Figs. 5 and 7 break the time of TX-D and TX-V down into log work,
//! log contention, other contention and other work ([`breakdown`]: from what bench measures,
//! not from perf samples of Shore-MT's components); [`recovery`] measures the parallel
//! recovery of §3.2.

mod breakdown;
mod fig4;
mod fig5;
mod fig6;
mod fig7;
mod fig8;
mod recovery;

use super::experiments::{Bench, Body, DATA, Experiment, Var, per_update, run, top, vs_threads};
use crate::bench::{BenchArgs, ConfigResult};
use crate::common::WorkloadKind;
use braid_wal::scheme::{CommitProtocol, Partition};

/// The experiments of this paper, in the summary's order.
pub fn all() -> Vec<Experiment> {
    vec![
        fig4::fig4(),
        fig5::fig5(),
        fig6::fig6(),
        fig7::fig7(),
        fig8::fig8(),
        recovery::recovery(),
    ]
}

/// A gsn variant named `label`, logging data per update with the settings of `set`, in order
/// (a partition: [`tx`] or [`page`]; a commit protocol: [`durable`] or [`passive`]; and
/// optionally [`delayed`] and a thread count).
fn gsn_var(label: &'static str, set: Vec<fn(&mut BenchArgs)>) -> Var {
    let mut all: Vec<fn(&mut BenchArgs)> = vec![per_update];
    all.extend(set);
    Var {
        label,
        schemes: &["gsn"],
        logging: DATA,
        set: all,
    }
}

/// Transaction-level log partitioning (the TX variants).
fn tx(a: &mut BenchArgs) {
    a.engine.gsn.partition = Partition::Transaction;
}

/// Page-level log partitioning (the PG variants).
fn page(a: &mut BenchArgs) {
    a.engine.gsn.partition = Partition::Page;
}

/// A durable processor cache: a commit is acknowledged after its insert's fence (D variants).
fn durable(a: &mut BenchArgs) {
    a.engine.gsn.commit = CommitProtocol::DurableCache;
}

/// A volatile cache: commits wait for passive group commit (V variants).
fn passive(a: &mut BenchArgs) {
    a.engine.gsn.commit = CommitProtocol::Passive;
}

/// The paper's NVM delay on every log insert (the "1.2us" variants).
fn delayed(a: &mut BenchArgs) {
    a.engine.gsn.insert_delay_ns = DELAY_NS;
}

/// Only at the top of the sweep of Figs. 6 and 8 (where the run's others also run below it).
fn at_top(a: &mut BenchArgs) {
    a.threads = vec![top(PAPER_CPUS)];
}

/// The write-intensive workloads of Figs. 4 and 8 on `threads`, with the runs' `ids`: TATP
/// Update-Location, TPC-B and TPC-C Payment, as (id, title, bench).
fn write_intensive(
    ids: [&'static str; 3],
    threads: &[usize],
) -> [(&'static str, &'static str, Bench); 3] {
    let mut tatp = Bench::new(WorkloadKind::Tatp, threads);
    tatp.tatp_mix = Some("update-location-only");
    [
        (ids[0], "TATP Update-Location", tatp),
        (ids[1], "TPC-B", Bench::new(WorkloadKind::Tpcb, threads)),
        (
            ids[2],
            "TPC-C Payment",
            Bench::tpcc("payment-only", threads),
        ),
    ]
}

/// One run per workload of `runs` (id, title, bench), each over `vars()`, drawn as throughput
/// against threads.
fn per_workload<const N: usize>(runs: [(&str, &str, Bench); N], vars: fn() -> Vec<Var>) -> Body {
    Body::Runs(
        runs.into_iter()
            .map(|(id, title, bench)| {
                run(
                    id,
                    bench,
                    vars(),
                    Some(vs_threads(id, &format!("{title}: throughput vs threads"))),
                )
            })
            .collect(),
    )
}

/// The paper's NVM insert delay (§5.1: "a conservative delay of 1.2us").
const DELAY_NS: u64 = 1200;

/// "the imposed NVM delay shows an overhead of up to 15% for all the three workloads".
const DELAY_COST: f64 = 0.15;

/// The paper's machine: 24 cores, 48 hardware threads (§5.1), the x-axis of Figs. 6 and 8.
const PAPER_CPUS: usize = 48;

/// Read-modify-writes per commit of `c`, global and shared, as text.
fn proxies(c: &ConfigResult) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "?".into(), |x| format!("{x:.2}"));
    format!(
        "{} global and {} shared read-modify-writes per commit",
        f(c.global_rmw_per_commit),
        f(c.shared_rmw_per_commit)
    )
}
