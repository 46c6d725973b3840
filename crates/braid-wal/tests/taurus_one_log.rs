//! Taurus recovery of one data-logged stream on several threads (`recovery/single.rs`): every
//! thread reads the stream and applies its share of the keys. A log of transactions that
//! overwrite each other's rows, written through the scheme, recovers to the state a
//! one-thread recovery (the serial order of Alg. 4) gives, with the plan named in the report;
//! a forced plan, or command logging, still runs the pipeline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::payload::{RedoBuf, RedoOp};
use braid_wal::scheme::taurus::{TaurusConfig, open_taurus};
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, RecoveryPlan, RowRef, Scheme, SchemeConfig,
};

use crate::integration::mem_device::MemDev;
use crate::integration::redo_state::State;

/// A one-stream log of `n` transactions from 3 workers (see [`log_streams`]).
fn log(n: u64) -> Vec<u8> {
    log_streams(1, 3, n).remove(0)
}

/// The images of `streams` streams holding `n` transactions from `workers` workers (in
/// turn), each writing 1-3 of 40 keys with a first byte that names the transaction and key,
/// so that transactions overwrite each other's rows (across streams, with several).
pub(crate) fn log_streams(streams: usize, workers: u64, n: u64) -> Vec<Vec<u8>> {
    let devs: Vec<_> = (0..streams).map(|_| MemDev::new(Vec::new())).collect();
    let cfg = SchemeConfig::default().max_workers(workers as usize);
    let (scheme, _) = open_taurus(
        &cfg,
        &TaurusConfig::default(),
        devs.iter().map(|d| d.clone() as Arc<dyn Device>).collect(),
        &State::default(),
        &|_| {},
    )
    .unwrap();
    let mut ws: Vec<_> = (0..workers as usize)
        .map(|w| scheme.worker(w).unwrap())
        .collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for txn in 1..=n {
        let w = &mut ws[(txn % workers) as usize];
        let mut redo = RedoBuf::default();
        for i in 0..=(txn % 3) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x >> 20) % 40 + i * 40;
            w.on_write(RowRef::new(1, key));
            let data = [(txn as u8) ^ (key as u8), 9, 9];
            redo.push(&RedoOp::Update {
                table: 1,
                key,
                columns: 1,
                data: &data,
            });
        }
        w.commit(&CommitRequest {
            txn,
            kind: LogKind::Data,
            payload: &redo.bytes,
            read_only: false,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates: 0,
        })
        .unwrap()
        .wait()
        .unwrap();
    }
    drop(ws);
    scheme.close().unwrap();
    devs.iter().map(|d| d.crash_image()).collect()
}

/// Recover `image` on `threads` threads with `plan`: the state and the plan reported.
fn recover(image: &[u8], threads: usize, plan: RecoveryPlan) -> (State, Option<&'static str>) {
    let state = State::default();
    let cfg = SchemeConfig::default()
        .recovery_threads(threads)
        .recovery_plan(plan);
    let dev = MemDev::new(image.to_vec());
    let (scheme, report) = open_taurus(
        &cfg,
        &TaurusConfig::default(),
        vec![dev as Arc<dyn Device>],
        &state,
        &|_| {},
    )
    .unwrap();
    assert_eq!(report.txns, 600, "{threads} threads, {plan:?}");
    scheme.close().unwrap();
    (state, report.plan)
}

#[test]
fn taurus_one_log_shares() {
    let image = log(600);
    let (serial, plan) = recover(&image, 1, RecoveryPlan::Auto);
    assert_eq!(plan, Some("serial"));
    let want = serial.rows.lock().clone();
    assert!(want.len() > 60, "the log wrote most keys");
    for threads in [2, 3] {
        let (got, plan) = recover(&image, threads, RecoveryPlan::Auto);
        assert_eq!(plan, Some("shared scan"), "{threads} threads");
        assert_eq!(*got.rows.lock(), want, "{threads} threads");
        let (forced, plan) = recover(&image, threads, RecoveryPlan::Parallel);
        assert_eq!(plan, Some("parallel"), "{threads} threads, forced");
        assert_eq!(*forced.rows.lock(), want, "{threads} threads, forced");
    }
}
