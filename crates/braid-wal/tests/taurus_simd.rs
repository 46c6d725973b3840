//! Taurus's `simd` option (Section 4.2; Fig. 16 runs "with SIMD on and off"): parsed and
//! reported like the scheme's other options, refused when the CPU lacks what it asks for, and
//! under every setting the CPU runs, the scheme's sampled timing of its LV work counts one
//! committed transaction in `LV_SAMPLE_EVERY` (timed, or dropped as descheduled).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::null::NullDevice;
use braid_wal::scheme::{
    self, CommitRequest, LV_SAMPLE_EVERY, LogKind, LvSimd, NoRows, Replay, ReplayError, RowRef,
    SchemeConfig, SchemeSpec, Storage,
};

struct NoReplay;

impl Replay for NoReplay {
    fn apply(&self, _txn: u64, _kind: LogKind, _payload: &[u8]) -> Result<(), ReplayError> {
        Ok(())
    }
}

fn storage(n: usize) -> Storage {
    Storage::Devices(
        (0..n)
            .map(|_| Arc::new(NullDevice::new()) as Arc<dyn Device>)
            .collect(),
    )
}

fn counter(c: &[(&'static str, u64)], name: &str) -> u64 {
    c.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).unwrap()
}

#[test]
fn the_option_parses_reports_and_refuses_what_it_cannot_run() {
    let spec: SchemeSpec = "taurus:simd=off".parse().unwrap();
    assert!(spec.options().contains(&("simd", "off".to_string())));
    let default: SchemeSpec = "taurus".parse().unwrap();
    assert!(default.options().contains(&("simd", "auto".to_string())));
    let e = "taurus:simd=sse".parse::<SchemeSpec>().unwrap_err();
    assert!(e.to_string().contains("avx512"), "{e}");
    let available = LvSimd::available();
    assert_eq!(available[..2], [LvSimd::Auto, LvSimd::Off]);
    for s in [LvSimd::Avx2, LvSimd::Avx512] {
        let spec: SchemeSpec = format!("taurus:simd={s}").parse().unwrap();
        let opened = scheme::open(
            &spec,
            &SchemeConfig::default(),
            storage(2),
            &NoReplay,
            &|_| {},
        );
        assert_eq!(opened.is_ok(), available.contains(&s), "{s}");
        if let Err(e) = opened {
            assert!(matches!(e, WalError::BadOption { .. }), "{e}");
        }
    }
}

#[test]
fn every_setting_times_one_commit_in_lv_sample_every() {
    let commits = 8 * LV_SAMPLE_EVERY;
    for s in LvSimd::available() {
        let spec: SchemeSpec = format!("taurus:simd={s}").parse().unwrap();
        let cfg = SchemeConfig {
            logging: LogKind::Command,
            ..SchemeConfig::default()
        };
        // 40 streams: rows named by identity keep their LVs in the lock-table map, merged in
        // the access hooks, and the vectors are long enough for AVX-512 under auto.
        let (log, _) = scheme::open(&spec, &cfg, storage(40), &NoReplay, &|_| {}).unwrap();
        let mut w = log.worker(0).unwrap();
        // An aborted attempt before them is never counted.
        w.on_write(RowRef::new(0, 1));
        w.abort(&NoRows);
        for txn in 1..=commits {
            w.on_read(RowRef::new(0, txn % 7));
            w.on_write(RowRef::new(0, txn % 5));
            let req = CommitRequest {
                txn,
                kind: LogKind::Command,
                payload: b"p",
                read_only: false,
                epoch: 0,
                writes: &[],
                rows: &NoRows,
                updates: 0,
            };
            w.commit(&req).unwrap().wait().unwrap();
        }
        let c = log.counters();
        let (samples, dropped) = (counter(&c, "lv_samples"), counter(&c, "lv_dropped"));
        assert_eq!(samples + dropped, commits / LV_SAMPLE_EVERY, "{s}");
        assert!(counter(&c, "lv_commit_ns") <= counter(&c, "lv_ns"), "{s}");
    }
}
