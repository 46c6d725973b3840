//! Taurus recovery of several data-logged streams by threads that each walk every stream in
//! the serial order and apply their share of the keys (`RecoveryPlan::Shares`,
//! `recovery/walk.rs`). A log of transactions that overwrite each other's rows across
//! streams, written through the scheme, then cut short in one stream or another as a crash
//! leaves it, recovers with `Shares` to what the serial plan (Alg. 4 on one thread) gives: the
//! same rows, the same cut (each stream's restart position), the same counts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::scheme::taurus::{TaurusConfig, open_taurus};
use braid_wal::scheme::{RecoveryPlan, Scheme, SchemeConfig};

use crate::integration::mem_device::MemDev;
use crate::integration::redo_state::State;
use crate::integration::taurus_one_log::log_streams;

/// The images of `streams` streams holding `n` transactions from 4 workers.
fn log(streams: usize, n: u64) -> Vec<Vec<u8>> {
    log_streams(streams, 4, n)
}

/// What a recovery left: the rows, each stream's restart position, replayed and skipped
/// transactions, and the plan reported.
type Recovered = (HashMap<u64, u8>, Vec<u64>, u64, u64, Option<&'static str>);

fn recover(images: &[Vec<u8>], threads: usize, plan: RecoveryPlan) -> Recovered {
    let state = State::default();
    let cfg = SchemeConfig::default()
        .recovery_threads(threads)
        .recovery_plan(plan);
    let devs = images
        .iter()
        .map(|i| MemDev::new(i.clone()) as Arc<dyn Device>)
        .collect();
    let (scheme, report) =
        open_taurus(&cfg, &TaurusConfig::default(), devs, &state, &|_| {}).unwrap();
    scheme.close().unwrap();
    let ends = report.ends.iter().map(|e| e.end).collect();
    let rows = state.rows.lock().clone();
    (rows, ends, report.txns, report.skipped, report.plan)
}

#[test]
fn taurus_shares_recover_what_the_serial_order_does() {
    for streams in [2, 3] {
        let images = log(streams, 900);
        // Whole, then each stream in turn cut at a third and at two thirds of its bytes
        // (a torn tail there), so that records of the other streams depend on lost ones.
        let mut cases = vec![images.clone()];
        for s in 0..streams {
            for frac in [3, 2] {
                let mut cut = images.clone();
                let len = cut[s].len();
                cut[s].truncate(len - len / frac);
                cases.push(cut);
            }
        }
        for (c, case) in cases.iter().enumerate() {
            let (want, ends, txns, skipped, plan) = recover(case, 1, RecoveryPlan::Serial);
            assert_eq!(plan, Some("serial"));
            if c == 0 {
                assert_eq!(txns, 900, "{streams} streams: the whole log");
                assert!(want.len() > 60, "the log wrote most keys");
            } else {
                assert!(txns < 900, "{streams} streams, case {c}: the cut lost some");
            }
            for threads in [2, 3] {
                let got = recover(case, threads, RecoveryPlan::Shares);
                let what = format!("{streams} streams, case {c}, {threads} threads");
                assert_eq!(got.4, Some("shares"), "{what}");
                assert_eq!(got.1, ends, "{what}: the cut");
                assert_eq!((got.2, got.3), (txns, skipped), "{what}: replayed, skipped");
                assert!(got.0 == want, "{what}: the rows differ");
            }
        }
    }
}

#[test]
fn taurus_shares_fall_back_to_serial_on_one_thread() {
    let images = log(2, 50);
    let (want, ..) = recover(&images, 1, RecoveryPlan::Serial);
    let (got, _, txns, _, plan) = recover(&images, 1, RecoveryPlan::Shares);
    assert_eq!((plan, txns), (Some("serial"), 50));
    assert!(got == want);
}
