//! The recovery contract of a stream, as a property: for any sequence of appends (random
//! sizes), syncs (`wait_durable`) and a power failure, scanning the device afterwards finds
//! exactly a prefix of the appended records (in LSN order, byte for byte) that contains every
//! record acknowledged durable before the failure.
//!
//! Devices: the pmem ring on `CrashSim` (crash at a persist event, keeping only what was
//! persisted; or at the end with random eviction of unpersisted words), and the file device on
//! `FaultFs` (crash after any file-system operation, with unsynced writes dropped, torn, or a
//! random subset kept).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use braid_pmem::{CrashMode, CrashSim, Domain, PmemConfig};
use braid_wal::Lsn;
use braid_wal::device::file::{FileDevice, FileDeviceConfig};
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig, PmemWrite};
use braid_wal::fs::{CrashOpts, FaultFs};
use braid_wal::record::{Kind, RecordSpec, Stamp};
use braid_wal::scan::{ScanMode, Scanner, StreamSource};
use braid_wal::stream::{Stream, StreamConfig, StreamWriter};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Append a record with a payload of this many bytes.
    Append(usize),
    /// Wait until everything appended so far is durable.
    Sync,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![4 => (0usize..400).prop_map(Op::Append), 1 => Just(Op::Sync)],
        1..40,
    )
}

/// lsn -> (txn, payload, end)
type Appended = BTreeMap<Lsn, (u64, Vec<u8>, Lsn)>;

fn payload(txn: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (txn as usize * 131 + i * 7 + 3) as u8)
        .collect()
}

fn append(w: &mut StreamWriter, txn: u64, len: usize, out: &mut Appended) -> Lsn {
    let p = payload(txn, len);
    let parts: [&[u8]; 1] = [&p];
    let stamp = Stamp::Gsn(txn);
    let spec = RecordSpec {
        kind: Kind::Redo,
        flags: 1,
        txn,
        stamp: &stamp,
        payload: &parts,
    };
    let (l, e) = w.append(&spec).unwrap();
    out.insert(l, (txn, p, e));
    e
}

/// Scan and check: a prefix of `appended` containing every record ending at or before `acked`.
fn check(src: &dyn StreamSource, appended: &Appended, acked: Lsn) -> Result<(), TestCaseError> {
    let mut s = Scanner::new(src, ScanMode::Strict);
    let mut want = appended.iter();
    let mut end = 0;
    loop {
        let rec = match s.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => return Err(TestCaseError::fail(format!("scan failed: {e}"))),
        };
        let Some((l, (txn, p, e))) = want.next() else {
            return Err(TestCaseError::fail(format!(
                "recovered a record at {} never appended",
                rec.header.lsn
            )));
        };
        prop_assert_eq!(rec.header.lsn, *l);
        prop_assert_eq!(rec.header.txn, *txn);
        prop_assert_eq!(rec.payload, &p[..]);
        end = *e;
    }
    prop_assert_eq!(s.end().map(|e| e.end), Some(end));
    prop_assert!(
        end >= acked,
        "acknowledged up to {} but recovered only up to {}",
        acked,
        end
    );
    Ok(())
}

fn pmem_case(
    ops: &[Op],
    domain: Domain,
    write: PmemWrite,
    freeze: u64,
) -> Result<(), TestCaseError> {
    let region = CrashSim::region(
        4096 + (32 << 10),
        PmemConfig::default()
            .domain(domain)
            .flush(None)
            .write_delay_ns(0),
    );
    let dcfg = PmemDeviceConfig {
        stream: 0,
        write,
        destage: None,
    };
    let dev = Arc::new(PmemDevice::open(region.clone(), dcfg.clone()).unwrap());
    let stream = Stream::start(
        dev,
        0,
        StreamConfig {
            max_writers: 1,
            ..StreamConfig::default()
        },
    )
    .unwrap();
    let base = region.persist_events();
    region.freeze_after(freeze).unwrap();
    let mut w = stream.writer().unwrap();
    let mut appended = Appended::new();
    // Acknowledged durable before the frozen point.
    let mut acked_frozen = 0;
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Append(n) => {
                append(&mut w, i as u64, *n, &mut appended);
            }
            Op::Sync => {
                let t = stream.tail();
                stream.wait_durable(t).unwrap();
                if region.persist_events() - base <= freeze {
                    acked_frozen = t;
                }
            }
        }
    }
    // The power fails at the persist event `freeze` (exact image).
    let img = region.crash(CrashMode::DropUnpersisted).unwrap();
    check(
        &PmemDevice::open(img, dcfg.clone()).unwrap(),
        &appended,
        acked_frozen,
    )?;
    // (Random eviction on a frozen image would keep stores made after the crash point, a
    // state no real crash produces; `pmem_unfrozen_case` covers it.)
    Ok(())
}

fn pmem_unfrozen_case(ops: &[Op], domain: Domain, seed: u64) -> Result<(), TestCaseError> {
    let region = CrashSim::region(
        4096 + (32 << 10),
        PmemConfig::default()
            .domain(domain)
            .flush(None)
            .write_delay_ns(0),
    );
    let dcfg = PmemDeviceConfig {
        stream: 0,
        write: PmemWrite::NonTemporal,
        destage: None,
    };
    let dev = Arc::new(PmemDevice::open(region.clone(), dcfg.clone()).unwrap());
    let stream = Stream::start(
        dev,
        0,
        StreamConfig {
            max_writers: 1,
            ..StreamConfig::default()
        },
    )
    .unwrap();
    let mut w = stream.writer().unwrap();
    let mut appended = Appended::new();
    let mut acked = 0;
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Append(n) => {
                append(&mut w, i as u64, *n, &mut appended);
            }
            Op::Sync => {
                let t = stream.tail();
                stream.wait_durable(t).unwrap();
                acked = t;
            }
        }
    }
    for mode in [
        CrashMode::DropUnpersisted,
        CrashMode::KeepRandom {
            seed,
            keep_probability: 0.5,
        },
    ] {
        let img = region.crash(mode).unwrap();
        check(
            &PmemDevice::open(img, dcfg.clone()).unwrap(),
            &appended,
            acked,
        )?;
    }
    Ok(())
}

fn file_cfg() -> FileDeviceConfig {
    FileDeviceConfig {
        dir: PathBuf::from("/db/log"),
        stream: 0,
        segment_size: 4096,
        buffer_size: 4096,
        direct: false,
        preallocate: true,
        nvm_write_delay_ns: 0,
        nvm_barrier_delay_ns: 0,
    }
}

fn file_case(ops: &[Op], crash_at: f64, mode: u8, seed: u64) -> Result<(), TestCaseError> {
    let fs = FaultFs::new();
    let dev = Arc::new(FileDevice::open(Arc::new(fs.clone()), file_cfg()).unwrap());
    let end = dev.limit();
    let stream = Stream::start(
        dev,
        end,
        StreamConfig {
            max_writers: 1,
            ..StreamConfig::default()
        },
    )
    .unwrap();
    let mut w = stream.writer().unwrap();
    let mut appended = Appended::new();
    // (file-system operations logged when the ack was given, acknowledged LSN)
    let mut acks: Vec<(usize, Lsn)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Append(n) => {
                append(&mut w, i as u64, *n, &mut appended);
            }
            Op::Sync => {
                let t = stream.tail();
                stream.wait_durable(t).unwrap();
                acks.push((fs.op_count(), t));
            }
        }
    }
    let opts = match mode {
        0 => CrashOpts::drop_unsynced(),
        1 => CrashOpts::tear_last(seed),
        _ => CrashOpts::keep_subset(seed),
    };
    // Crash now (the flusher may be mid-way), and after a chosen earlier operation.
    let now = fs.crash(opts);
    let now_acked = acks.last().map_or(0, |a| a.1);
    let total = fs.op_count();
    let k = ((total as f64) * crash_at) as usize;
    let at_k = fs.crash_after(k, opts).expect("operation log");
    let k_acked = acks
        .iter()
        .filter(|(ops, _)| *ops <= k)
        .map(|a| a.1)
        .max()
        .unwrap_or(0);
    drop(w);
    stream.close().unwrap();
    for (crashed, acked) in [(now, now_acked), (at_k, k_acked)] {
        let dev = FileDevice::open(Arc::new(crashed), file_cfg())
            .map_err(|e| TestCaseError::fail(format!("reopen after crash: {e}")))?;
        check(&dev, &appended, acked)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn pmem_recovers_a_prefix_with_every_synced_record(
        ops in ops(),
        adr in any::<bool>(),
        nt in any::<bool>(),
        freeze in 0u64..400,
        seed in any::<u64>(),
    ) {
        let domain = if adr { Domain::Adr } else { Domain::Eadr };
        let write = if nt { PmemWrite::NonTemporal } else { PmemWrite::StoreFlush };
        pmem_case(&ops, domain, write, freeze)?;
        pmem_unfrozen_case(&ops, domain, seed)?;
    }

    #[test]
    fn file_device_recovers_a_prefix_with_every_synced_record(
        ops in ops(),
        crash_at in 0.0f64..=1.0,
        mode in 0u8..3,
        seed in any::<u64>(),
    ) {
        file_case(&ops, crash_at, mode, seed)?;
    }
}
