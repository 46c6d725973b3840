//! docs/design.md's "Adding a scheme", walked through: `toy`, a minimal scheme (one stream,
//! one record per transaction, replayed in LSN order), written with exactly the steps the
//! section lists and nothing else: a configuration implementing `SchemeDef` whose `open`
//! recovers and starts the scheme, a `Scheme`, a `SchemeWorker` whose `commit` returns a
//! `Ticket`, and a `SchemeSpec` to open it by. It commits, closes, and reopens with every
//! committed transaction replayed; a transaction a checkpoint's cut holds is not replayed
//! again.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use braid_wal::device::Device;
use braid_wal::record::{FLAG_COMMIT, RecordSpec, Stamp};
use braid_wal::scan::Scanner;
use braid_wal::scheme::{
    self, CommitRequest, Cut, LogKind, NoRows, RecoveryReport, Replay, ReplayError, Scheme,
    SchemeConfig, SchemeDef, SchemeSpec, SchemeWorker, Storage, Ticket,
};
use braid_wal::stream::{Stream, StreamWriter};
use braid_wal::{Invariant, Lsn, WalError};

use crate::integration::mem_device::MemDev;

/// Step 2: the configuration type, the scheme's definition (no options of its own).
#[derive(Debug, Clone, Default)]
struct ToyConfig;

impl SchemeDef for ToyConfig {
    fn name(&self) -> &'static str {
        "toy"
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        _progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let [device] =
            <[_; 1]>::try_from(storage.devices("toy")?).map_err(|d| WalError::StreamCount {
                scheme: "toy".into(),
                given: d.len(),
                min: 1,
                max: 1,
            })?;
        let mut report = RecoveryReport::default();
        let end = recover(&*device, cfg, replay, &mut report)?;
        let streams = cfg.start_streams(vec![device], &[end])?;
        Ok((Arc::new(Toy { streams }), report))
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(self.clone())
    }
}

/// Recovery: every commit record in LSN order, but those the checkpoint's cut holds; returns
/// the stream's valid end, where new appends go.
fn recover(
    device: &dyn Device,
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    report: &mut RecoveryReport,
) -> Result<Lsn, WalError> {
    let mut scanner = Scanner::new(device, cfg.scan_mode);
    while let Some(rec) = scanner.next_record()? {
        let h = rec.header;
        report.records += 1;
        report.max_txn = report.max_txn.max(h.txn);
        if Cut::covered(cfg.cut.as_ref(), 0, h.lsn, h.flags) {
            report.covered += 1;
            continue;
        }
        replay
            .apply(h.txn, cfg.logging, rec.payload)
            .map_err(|e| scheme::replay_failed(0, h.lsn, h.txn, e))?;
        report.txns += 1;
    }
    let end = scanner
        .end()
        .cloned()
        .ok_or(WalError::Internal(Invariant::ScanWithoutEnd))?;
    let lsn = end.end;
    report.ends.push(end);
    Ok(lsn)
}

/// Step 3: the running scheme, its streams started at the recovered end...
struct Toy {
    streams: Vec<Stream>,
}

impl Scheme for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }
    fn worker(&self, _worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(ToyWorker {
            stream: self.streams[0].clone(),
            writer: self.streams[0].writer()?,
        }))
    }
    fn streams(&self) -> &[Stream] {
        &self.streams
    }
    fn close(&self) -> Result<(), WalError> {
        self.streams[0].close()
    }
}

/// ...and a worker, whose commit puts the record in the log buffer and returns the ticket
/// that resolves once the stream is durable past it.
struct ToyWorker {
    stream: Stream,
    writer: StreamWriter,
}

impl SchemeWorker for ToyWorker {
    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        if req.read_only {
            // It may have read what a commit not yet durable wrote: wait for all before it.
            return Ok(Ticket::stream(self.stream.clone(), self.stream.tail()));
        }
        let (_, end) = self.writer.append(&RecordSpec {
            kind: req.kind.record_kind(),
            // The checkpoint epoch's bit, so recovery can tell what a cut holds.
            flags: FLAG_COMMIT | scheme::cut::epoch_flag(req.epoch),
            txn: req.txn,
            stamp: &Stamp::None,
            payload: &[req.payload],
        })?;
        Ok(Ticket::stream(self.stream.clone(), end))
    }
}

/// What recovery replayed, in order.
#[derive(Default)]
struct Applied(Mutex<Vec<(u64, Vec<u8>)>>);

impl Replay for Applied {
    fn apply(&self, txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.0.lock().unwrap().push((txn, payload.to_vec()));
        Ok(())
    }
}

fn open(dev: &Arc<MemDev>, cfg: &SchemeConfig, replay: &Applied) -> Arc<dyn Scheme> {
    // Step 4's `SchemeSpec`: a registered scheme is named by text; this one, kept out of
    // `SCHEMES`, is given by value.
    let spec = SchemeSpec::new(ToyConfig);
    let devices = vec![Arc::clone(dev) as Arc<dyn Device>];
    scheme::open(&spec, cfg, Storage::Devices(devices), replay, &|_| {})
        .unwrap()
        .0
}

fn commit(w: &mut dyn SchemeWorker, txn: u64, epoch: u64, payload: &[u8]) -> Ticket {
    w.commit(&CommitRequest {
        txn,
        kind: LogKind::Data,
        payload,
        read_only: false,
        epoch,
        writes: &[],
        rows: &NoRows,
        updates: 0,
    })
    .unwrap()
}

#[test]
fn toy_scheme_commits_and_recovers() {
    let dev = MemDev::new(Vec::new());
    let cfg = SchemeConfig::default();
    let log = open(&dev, &cfg, &Applied::default());
    let mut w = log.worker(0).unwrap();
    for txn in 1..=3 {
        commit(&mut *w, txn, 0, &[txn as u8; 5]).wait().unwrap();
    }
    drop(w);
    log.close().unwrap();

    let applied = Applied::default();
    let log = open(&MemDev::new(dev.crash_image()), &cfg, &applied);
    assert_eq!(
        *applied.0.lock().unwrap(),
        [(1, vec![1; 5]), (2, vec![2; 5]), (3, vec![3; 5])]
    );
    log.close().unwrap();
}

/// A checkpoint of epoch 1 holds the transactions of epoch 0: those before its start, and
/// between its start and end those whose records carry epoch 0's bit. Recovery from its cut
/// replays only the others.
#[test]
fn toy_scheme_skips_what_a_checkpoint_holds() {
    let dev = MemDev::new(Vec::new());
    let log = open(&dev, &SchemeConfig::default(), &Applied::default());
    let mut w = log.worker(0).unwrap();
    commit(&mut *w, 1, 0, b"old").wait().unwrap();
    let starts = log.positions().lsns;
    commit(&mut *w, 2, 1, b"new").wait().unwrap();
    commit(&mut *w, 3, 0, b"old, installing").wait().unwrap();
    let ends = log.positions().lsns;
    commit(&mut *w, 4, 1, b"newer").wait().unwrap();
    let cut = Cut {
        epoch: 1,
        starts,
        ends,
        marks: vec![0],
        keeps: Vec::new(),
    };
    drop(w);
    log.close().unwrap();

    let applied = Applied::default();
    let cfg = SchemeConfig::default().cut(Some(cut));
    let log = open(&MemDev::new(dev.crash_image()), &cfg, &applied);
    assert_eq!(
        *applied.0.lock().unwrap(),
        [(2, b"new".to_vec()), (4, b"newer".to_vec())]
    );
    log.close().unwrap();
}
