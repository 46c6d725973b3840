//! Helpers shared by the file device tests: the two file systems and record streams.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use braid_wal::Lsn;
use braid_wal::WalError;
use braid_wal::device::file::FileDeviceConfig;
use braid_wal::fs::{CrashOpts, FaultFs, Fs, RealFs};
use braid_wal::record::{Decoded, FLAG_COMMIT, Kind, RecordSpec, Stamp, decode};
use braid_wal::scan::{ScanEnd, ScanMode, Scanner, StreamSource};

/// A file system and a log directory on it.
pub struct Env {
    pub name: &'static str,
    pub fs: Arc<dyn Fs>,
    pub fault: Option<FaultFs>,
    pub dir: PathBuf,
    _tmp: Option<Arc<tempfile::TempDir>>,
}

impl Env {
    pub fn real() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        Env {
            name: "real",
            fs: Arc::new(RealFs),
            fault: None,
            dir: tmp.path().join("log"),
            _tmp: Some(Arc::new(tmp)),
        }
    }

    /// A real file system on the target directory (the root file system, not tmpfs).
    pub fn real_on_disk() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        Env {
            name: "real-disk",
            fs: Arc::new(RealFs),
            fault: None,
            dir: tmp.path().join("log"),
            _tmp: Some(Arc::new(tmp)),
        }
    }

    pub fn fault() -> Env {
        let f = FaultFs::new();
        Env {
            name: "fault",
            fs: Arc::new(f.clone()),
            fault: Some(f),
            dir: PathBuf::from("/db/log"),
            _tmp: None,
        }
    }

    pub fn both() -> Vec<Env> {
        vec![Env::real(), Env::fault()]
    }

    pub fn ffs(&self) -> &FaultFs {
        self.fault.as_ref().expect("a FaultFs environment")
    }

    /// The environment after a power failure (FaultFs only).
    pub fn crashed(&self, opts: CrashOpts) -> Env {
        let f = self.ffs().crash(opts);
        Env {
            name: self.name,
            fs: Arc::new(f.clone()),
            fault: Some(f),
            dir: self.dir.clone(),
            _tmp: None,
        }
    }

    pub fn with_fs(&self, f: FaultFs) -> Env {
        Env {
            name: self.name,
            fs: Arc::new(f.clone()),
            fault: Some(f),
            dir: self.dir.clone(),
            _tmp: None,
        }
    }

    pub fn cfg(&self, stream: u32, segment_size: u64) -> FileDeviceConfig {
        FileDeviceConfig {
            dir: self.dir.clone(),
            stream,
            segment_size,
            buffer_size: 16 << 10,
            direct: false,
            preallocate: true,
            nvm_write_delay_ns: 0,
            nvm_barrier_delay_ns: 0,
        }
    }
}

/// Deterministic payload bytes of record `txn`.
pub fn payload(txn: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (txn as usize * 31 + i * 7 + 1) as u8)
        .collect()
}

/// Encode one commit record of `txn` with a payload of `len` bytes at `lsn`, claiming nothing
/// about durability (`synced` = 0).
pub fn encode_record(src: &dyn StreamSource, lsn: Lsn, txn: u64, len: usize) -> Vec<u8> {
    encode_record_synced(src, lsn, 0, txn, len)
}

/// Encode one commit record; `synced` is the stream's durable LSN known when it is written.
pub fn encode_record_synced(
    src: &dyn StreamSource,
    lsn: Lsn,
    synced: Lsn,
    txn: u64,
    len: usize,
) -> Vec<u8> {
    let p = payload(txn, len);
    let parts: [&[u8]; 1] = [&p];
    let stamp = Stamp::Gsn(txn);
    let spec = RecordSpec {
        kind: Kind::Redo,
        flags: FLAG_COMMIT,
        txn,
        stamp: &stamp,
        payload: &parts,
    };
    let mut out = vec![0u8; spec.encoded_len()];
    spec.encode(lsn, synced, src.salt_for(lsn), &mut out);
    out
}

/// Scan the stream with the library's scanner: (lsn, txn) of every record and how it ends.
pub fn scan(
    src: &dyn StreamSource,
    mode: ScanMode,
) -> Result<(Vec<(Lsn, u64)>, ScanEnd), WalError> {
    let mut sc = Scanner::new(src, mode);
    let mut out = Vec::new();
    while let Some(r) = sc.next_record()? {
        let txn = r.header.txn;
        assert_eq!(
            r.payload,
            &payload(txn, r.payload.len())[..],
            "payload of txn {txn}"
        );
        out.push((r.header.lsn, txn));
    }
    Ok((
        out,
        sc.end().cloned().expect("end is set after the last record"),
    ))
}

/// Decode records from `from` until the first position that is not a valid record; returns
/// (lsn, txn) of each and the end. Checks payloads.
pub fn decode_from(src: &dyn StreamSource, from: Lsn) -> (Vec<(Lsn, u64)>, Lsn) {
    let limit = src.limit();
    let mut bytes = vec![0u8; (limit.saturating_sub(from)) as usize];
    let n = src.read_at(from, &mut bytes).unwrap();
    assert_eq!(
        n,
        bytes.len(),
        "read_at must return everything below the limit"
    );
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let lsn = from + at as u64;
        match decode(&bytes[at..], lsn, src.salt_for(lsn)) {
            Decoded::Record(r) => {
                let txn = r.header.txn;
                assert_eq!(
                    r.payload,
                    &payload(txn, r.payload.len())[..],
                    "payload of txn {txn}"
                );
                out.push((lsn, txn));
                at += r.padded_len();
            }
            _ => return (out, lsn),
        }
    }
}
