//! The workers of a crash run: they run the workload until stopped and report every
//! transaction's intent (marked YCSB) and every commit acknowledged as durable, to the parent
//! process (kill mode) or to the in-process oracle (power mode). They keep commits in flight
//! with the pipelined commit and acknowledge each once its ticket resolves (with
//! `--sync-commit`, each commit is durable before the next starts).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use braid_engine::{Db, TxError, log::Ticket};
use braid_workloads::Workload;
use braid_workloads::ycsb::{self, Ycsb};

use super::CrashArgs;
use crate::common::{self, WorkloadKind};
use crate::oracle::Intent;

/// Run one worker of a marked-YCSB crash run until `stop`, reporting intents and acks; with
/// `sync_commit` each commit is durable before the next.
#[allow(clippy::too_many_arguments)]
fn drive(
    db: &Db,
    workload: &Ycsb,
    sync_commit: bool,
    index: usize,
    seed: u64,
    stop: &AtomicBool,
    intent: &(dyn Fn(Intent) + Sync),
    ack: &(dyn Fn(u64) + Sync),
) -> anyhow::Result<()> {
    let mut worker = db.worker()?;
    let mut client = workload.ycsb_client(index, seed);
    let mut pending: VecDeque<(u64, Ticket)> = Default::default();
    while !stop.load(Ordering::Relaxed) {
        client.generate();
        let writes: Vec<u64> = client.written_keys().collect();
        ycsb::take_observed();
        let mut txn_id = 0;
        let params = client.params().to_vec();
        let r = worker.call_async_hooked(ycsb::YCSB_TXN, &params, &mut |txn| {
            txn_id = txn;
            let reads = ycsb::take_observed()
                .into_iter()
                .map(|o| (o.key, o.writer))
                .collect();
            intent(Intent {
                txn,
                writes: writes.clone(),
                reads,
            });
        });
        // The durable commit is the pipelined one and a wait for its ticket.
        let r = match r {
            Ok(t) if sync_commit => t.wait().map(|()| Ticket::DURABLE).map_err(TxError::from),
            r => r,
        };
        match r {
            Ok(t) => pending.push_back((txn_id, t)),
            Err(e) if e.is_retryable() => {}
            Err(e) => return Err(e.into()),
        }
        while let Some((id, t)) = pending.front() {
            let block = pending.len() > 64;
            let ok = if block {
                t.wait().map(|_| true)
            } else {
                t.is_durable()
            };
            match ok {
                Ok(true) => {
                    ack(*id);
                    pending.pop_front();
                }
                Ok(false) => break,
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Run one worker of a non-YCSB crash run until `stop`, reporting each acknowledged commit;
/// with `sync_commit` each commit is durable before the next.
fn drive_generic(
    db: &Db,
    workload: &dyn Workload,
    sync_commit: bool,
    index: usize,
    seed: u64,
    stop: &AtomicBool,
    ack: &(dyn Fn(u64) + Sync),
) -> anyhow::Result<()> {
    let mut worker = db.worker()?;
    let mut client = workload.client(index, seed);
    let mut pending: VecDeque<Ticket> = Default::default();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match common::run_client(&mut *client, &mut worker, sync_commit) {
            Ok(t) => pending.push_back(t),
            Err(e) if e.is_retryable() || matches!(e, TxError::UserAbort { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        while let Some(t) = pending.front() {
            let ok = if pending.len() > 64 {
                t.wait().map(|_| true)
            } else {
                t.is_durable()
            };
            match ok {
                Ok(true) => {
                    n += 1;
                    // Unique across workers: the worker index in the high bits.
                    ack((index as u64) << 40 | n);
                    pending.pop_front();
                }
                Ok(false) => break,
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Drive `threads` workers of the crash run's workload.
#[allow(clippy::too_many_arguments)]
pub(super) fn drive_any(
    args: &CrashArgs,
    db: &Db,
    workload: &Arc<dyn Workload>,
    index: usize,
    seed: u64,
    stop: &AtomicBool,
    intent: &(dyn Fn(Intent) + Sync),
    ack: &(dyn Fn(u64) + Sync),
) -> anyhow::Result<()> {
    let sync_commit = args.engine.sync_commit;
    match args.workload {
        WorkloadKind::Ycsb => drive(
            db,
            &Ycsb::new(args.ycsb()),
            sync_commit,
            index,
            seed,
            stop,
            intent,
            ack,
        ),
        _ => drive_generic(db, &**workload, sync_commit, index, seed, stop, ack),
    }
}
