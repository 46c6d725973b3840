//! The log-append workload: N writer threads, each appending records of a fixed size, one at
//! a time, each waited for until durable. Measures appends per second, latency, and
//! fdatasyncs per second with the bytes behind each (counted in process for every system, see
//! `crate::synccount`; braid's own flush count beside them as a cross-check). After the timed
//! run the log is closed, reopened, and must hold every acknowledged record (those finished
//! after the window included).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};

use crate::output::Row;
use crate::systems::{AppendSystem, Appender, stamp};
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
    let own = || log.own_sync_stats();
    let m = run_threads(threads, duration, &make, &op, tick, &own)?;
    log.close().context("close")?;
    sys.verify(dir, &m.completed, record_bytes)
        .context("self-check after reopen")?;
    Ok(Row {
        workload: crate::output::append_workload(record_bytes),
        system: sys.name(),
        variant: sys.variant().as_str().into(),
        threads,
        record_bytes: Some(record_bytes),
        version: sys.version(),
        durability: sys.durability(),
        // Appends never conflict.
        retries: None,
        aborts_per_s: None,
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
