//! NV-Logging (Huang et al., VLDB 2014) Figs. 11-16: log insertion latency against threads
//! (Fig. 11, [`fig11`](mod@fig11)), and TPC-C (Fig. 12), TATP and TPC-B (Fig. 13) throughput
//! against NVM write latency for NV-Disk, NV-Logging with flush-on-insert and flush-on-commit,
//! and distributed logging ([`delay`]); [`fig14`] the same comparison on the paper's
//! Intel PMEP setting (§6.4), [`fig15`] the time breakdowns (§6.5) and [`fig16`] the
//! cost-effectiveness analysis (§6.6). The schemes' configurations they share are here.
//!
//! Every scheme logs per update as Shore-MT does (`--records update`): NV-Disk inserts each
//! record through its central buffer's lock, NV-Logging writes one log object per update. Both
//! pay the same emulated NVM delay per line written (the model in `braid_pmem::delay`), each
//! on the thread that writes the line: NV-Disk's log flusher (Shore-MT's log flush daemon,
//! the only writer of its log files), NV-Logging's inserting worker (flush-on-insert) or its
//! flush daemon (flush-on-commit), and NV-Disk+decentralized-logging's inserting worker.
//!
//! Whether workers wait for commits follows the paper's Table 3 ("Sync/Async Commit"): NV-Disk,
//! NV-Disk+decentralized-logging, NV-Logging with flush-on-commit and distributed logging
//! commit asynchronously (Shore-MT's lazy commit: the worker kicks the log flusher and goes on;
//! only the log buffer's space holds it back), so their workers keep [`LAZY_INFLIGHT`] commits
//! in flight, enough that the acknowledgement never bounds them; NV-Logging with
//! flush-on-insert is "Sync": its worker persists each object as it inserts it, so its commit
//! returns with its log persistent, here too. braid acknowledges that commit only once every
//! smaller LSN is persistent as well (see `braid_wal`'s `pertxn`), which the paper's commit
//! does not wait for, so its worker does not wait for that acknowledgement either.
//!
//! The verdicts of Figs. 11-13 check §6.2-6.3's claims: the insertion latency curves (and how
//! many of the paper's thread counts ran), and per workload NV-Logging against NV-Disk and
//! distributed logging, NV-Disk+decentralized-logging against NV-Disk (TPC-C), that no NV-Disk
//! line rises with the slowdown, and flush-on-commit against flush-on-insert.

use super::experiments::{DATA, Experiment, Var, per_update};
use crate::bench::{BenchArgs, ConfigResult};
use braid_engine::log::{FlushPolicy, ObjectPlace};
use delay::{at, beats_at_every_delay, vs_delay};

mod delay;
mod fig11;
mod fig14;
mod fig15;
mod fig16;

/// Commits a worker keeps in flight under the paper's asynchronous commit (Table 3): enough
/// that waiting for an acknowledgement never holds it back (at a million commits per second it
/// would take 65 ms to fill), so only the log's own space does, as Shore-MT's lazy commit is
/// held back only by its log buffer (NV-Disk's 80 MB here too).
const LAZY_INFLIGHT: usize = 1 << 16;

/// Table 3's asynchronous commit: see [`LAZY_INFLIGHT`].
fn lazy(a: &mut BenchArgs) {
    a.inflight = Some(LAZY_INFLIGHT);
}

fn pertxn(a: &mut BenchArgs, flush: FlushPolicy) {
    per_update(a);
    lazy(a);
    a.engine.pertxn.flush = flush;
}

const INSERT: &str = "flush-on-insert";
const COMMIT: &str = "flush-on-commit";
/// Distributed logging's label: gsn at its defaults.
const DISTRIBUTED: &str = "distributed";
/// NV-Disk+decentralized-logging's label.
const DECENTRALIZED: &str = "nv-disk+decentralized";

/// `schemes` (`none`, NV-Disk) per update with Table 3's asynchronous commit.
fn nvdisk_var(schemes: &'static [&'static str]) -> Var {
    Var {
        label: "",
        schemes,
        logging: DATA,
        set: vec![per_update, lazy],
    }
}

/// NV-Logging flushing every record as it is inserted.
fn insert_var() -> Var {
    Var {
        label: INSERT,
        schemes: &["pertxn"],
        logging: DATA,
        set: vec![|a| pertxn(a, FlushPolicy::Insert)],
    }
}

/// NV-Disk+decentralized-logging (Table 3): NV-Logging's per-transaction log objects, each
/// written through the file system by its inserting worker (`pertxn` with `place=file`).
fn decentralized_var() -> Var {
    Var {
        label: DECENTRALIZED,
        schemes: &["pertxn"],
        logging: DATA,
        set: vec![|a| {
            pertxn(a, FlushPolicy::Insert);
            a.engine.pertxn.place = ObjectPlace::File;
        }],
    }
}

/// Distributed logging: gsn at its defaults, per update, committing asynchronously (Table 3).
fn distributed_var() -> Var {
    Var {
        label: DISTRIBUTED,
        schemes: &["gsn"],
        logging: DATA,
        set: vec![per_update, lazy],
    }
}

/// NV-Logging's two flush policies.
fn pertxn_vars() -> [Var; 2] {
    [
        insert_var(),
        Var {
            label: COMMIT,
            schemes: &["pertxn"],
            logging: DATA,
            set: vec![|a| pertxn(a, FlushPolicy::Commit)],
        },
    ]
}

pub fn all() -> Vec<Experiment> {
    vec![
        fig11::fig11(),
        delay::fig12(),
        delay::fig13(),
        fig14::fig14(),
        fig15::fig15(),
        fig16::fig16(),
    ]
}

/// The largest thread count on the paper's Fig. 11 axis.
const PAPER_THREADS: usize = 64;
/// Shared read-modify-writes per commit of `c`, as text.
fn rmw(c: &ConfigResult) -> String {
    c.shared_rmw_per_commit
        .map_or_else(|| "?".into(), |r| format!("{r:.2}"))
}

/// How commits are run, after the paper's Table 3.
const COMMITS: &str = "Commits follow Table 3 (\"Sync/Async Commit\"): NV-Disk, \
    NV-Disk+decentralized-logging, flush-on-commit and distributed logging commit asynchronously \
    (Shore-MT's lazy commit: the worker kicks the log flusher and goes on), each worker keeping \
    65,536 commits in flight so that only the log's space, never an acknowledgement, holds it \
    back; flush-on-insert is \"Sync\": its worker persists every object as it inserts it, so \
    its commit returns with its log persistent.";
