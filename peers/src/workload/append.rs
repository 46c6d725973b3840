//! The log-append workload: N writer threads, each appending records of a fixed size, one at
//! a time, each waited for until durable. Measures appends per second, latency percentiles,
//! and fdatasyncs per second with the bytes behind each (braid: its stream statistics;
//! peers: counted in process, see `crate::synccount`). After the timed run the log is
//! closed, reopened, and must hold every acknowledged record.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};

use crate::output::Row;
use crate::systems::{AppendSystem, Appender, SyncFigures, SyncStats, stamp};
use crate::workload::run_threads;

/// One writer thread's state.
struct Handle<'a> {
    w: Box<dyn Appender + 'a>,
    payload: Vec<u8>,
    thread: usize,
}

/// Run `sys` with `threads` writers appending `record_bytes`-byte records for `duration` in
/// the empty directory `dir`, then check what it kept.
pub fn run(
    sys: &dyn AppendSystem,
    dir: &Path,
    threads: usize,
    record_bytes: usize,
    duration: Duration,
    tick: &dyn Fn(),
) -> Result<Row> {
    if record_bytes < 16 {
        bail!("records must be at least 16 bytes (they carry a thread and sequence stamp)");
    }
    let log = sys.open(dir, threads).context("open")?;
    let counted0 = SyncStats::counted();
    let own0 = log.own_sync_stats();
    let make = |t: usize| -> Result<Handle<'_>> {
        Ok(Handle {
            w: log.writer(t)?,
            payload: noise(t, record_bytes),
            thread: t,
        })
    };
    let op = |h: &mut Handle<'_>, seq: u64| -> Result<()> {
        stamp(&mut h.payload, h.thread, seq);
        h.w.append(seq, &h.payload)
    };
    let m = run_threads(threads, duration, &make, &op, tick)?;
    let secs = m.elapsed.as_secs_f64();
    let sync = SyncFigures::between(own0, log.own_sync_stats(), counted0, secs);
    log.close().context("close")?;
    sys.verify(dir, &m.per_thread, record_bytes)
        .context("self-check after reopen")?;
    Ok(Row {
        workload: crate::output::append_workload(record_bytes),
        system: sys.name(),
        threads,
        record_bytes: Some(record_bytes),
        version: sys.version(),
        durability: sys.durability(),
        syncs_per_s: sync.syncs_per_s,
        bytes_per_sync: sync.bytes_per_sync,
        sync_source: sync.source,
        ..Row::measured(&m)
    })
}

/// Incompressible record bytes (fjall and raft-engine compress what they log), different per
/// thread; the first 16 are overwritten by each record's stamp.
fn noise(thread: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    SmallRng::seed_from_u64(0xb7a1d + thread as u64).fill(&mut v[..]);
    v
}
