//! Checkpoints kept beside an external log (`DeviceFactory::checkpoints`), with a factory that
//! keeps its log in file devices under a "remote" directory and its checkpoints in memory: a
//! checkpoint is uploaded before the log is truncated; one whose upload fails is dropped and
//! truncates nothing; an empty directory recovers from the store's newest checkpoint; local
//! checkpoints the store lacks are removed at open; and a log truncated past every checkpoint
//! there is is refused at open instead of replayed with a hole (for a plain file log too).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use braid_engine::log::*;
use braid_engine::*;
use braid_wal::device::Device;
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::fs::RealFs;
use parking_lot::Mutex;

/// Checkpoints in memory, with a switch that makes every call fail.
#[derive(Debug, Default)]
struct MemStore {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
    down: AtomicBool,
}

impl MemStore {
    fn check(&self) -> Result<(), WalError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(WalError::Remote {
                service: "mem".into(),
                during: "storing".into(),
                failure: braid_wal::RemoteFailure::Client(std::sync::Arc::from(Box::<
                    dyn std::error::Error + Send + Sync,
                >::from(
                    "the store is down",
                ))),
            });
        }
        Ok(())
    }
}

impl CheckpointStore for MemStore {
    fn location(&self) -> String {
        "the in-memory store".into()
    }
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), WalError> {
        self.check()?;
        self.objects.lock().insert(name.into(), bytes.to_vec());
        Ok(())
    }
    fn list(&self) -> Result<Vec<String>, WalError> {
        self.check()?;
        Ok(self.objects.lock().keys().cloned().collect())
    }
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, WalError> {
        self.check()?;
        Ok(self.objects.lock().get(name).cloned())
    }
    fn remove(&self, name: &str) -> Result<(), WalError> {
        self.check()?;
        self.objects.lock().remove(name);
        Ok(())
    }
}

/// A log kept in `remote` (small segments, so truncation removes files) and checkpoints in a
/// [`MemStore`].
#[derive(Debug)]
struct Remote {
    dir: PathBuf,
    meta: Mutex<Option<Vec<u8>>>,
    store: MemStore,
}

impl DeviceFactory for Remote {
    fn kind(&self) -> &'static str {
        "remote"
    }
    fn location(&self) -> String {
        self.dir.display().to_string()
    }
    fn open_devices(&self, streams: usize) -> Result<Vec<Arc<dyn Device>>, WalError> {
        (0..streams)
            .map(|i| {
                let mut cfg = FileDeviceConfig::new(self.dir.join("log"), i as u32);
                cfg.segment_size = 16 << 10;
                cfg.buffer_size = 64 << 10;
                FileDevice::open(Arc::new(RealFs), cfg).map(|d| Arc::new(d) as Arc<dyn Device>)
            })
            .collect()
    }
    fn load_meta(&self) -> Result<Option<Vec<u8>>, WalError> {
        Ok(self.meta.lock().clone())
    }
    fn store_meta(&self, bytes: &[u8]) -> Result<(), WalError> {
        *self.meta.lock() = Some(bytes.to_vec());
        Ok(())
    }
    fn checkpoints(&self) -> Option<&dyn CheckpointStore> {
        Some(&self.store)
    }
}

fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("kv", IndexKind::Hash).column("v", ColumnType::I64));
    c
}

fn options(device: DeviceConfig) -> Options {
    Options::default().device(device)
}

fn open(dir: &Path, device: DeviceConfig) -> Result<(Db, OpenReport), EngineError> {
    Db::builder(dir)
        .options(options(device))
        .catalog(catalog())
        .loader(|_| Ok(()))
        .open()
}

fn put_keys(db: &Db, keys: std::ops::Range<u64>) {
    let kv = db.table("kv").unwrap();
    let mut w = db.worker().unwrap();
    for k in keys {
        let mut tx = w.begin();
        tx.insert(kv, k, &((k * 7) as i64).to_le_bytes()).unwrap();
        tx.commit().unwrap();
    }
}

fn check_keys(db: &Db, keys: std::ops::Range<u64>) {
    let kv = db.table("kv").unwrap();
    for k in keys {
        let row = db
            .peek(kv, k)
            .unwrap_or_else(|| panic!("acknowledged key {k} lost"));
        assert_eq!(row[..8], ((k * 7) as i64).to_le_bytes(), "key {k}");
    }
}

fn local(dir: &Path) -> Vec<u64> {
    checkpoint::list(dir)
        .unwrap()
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

#[test]
fn checkpoints_go_to_the_store_before_the_log_is_truncated() {
    let base = tempfile::tempdir().unwrap();
    let remote = Arc::new(Remote {
        dir: base.path().join("remote"),
        meta: Mutex::new(None),
        store: MemStore::default(),
    });
    let device = DeviceConfig::External(remote.clone());
    let dir = base.path().join("a");
    let (db, _) = open(&dir, device.clone()).unwrap();
    let mut n = 0;
    for _ in 0..3 {
        put_keys(&db, n..n + 400);
        n += 400;
        db.checkpoint().unwrap();
    }
    let names: Vec<String> = remote.store.objects.lock().keys().cloned().collect();
    assert_eq!(names.len(), checkpoint::KEEP, "{names:?}");
    assert_eq!(local(&dir), vec![2, 3]);
    let held = db.stats().log_bytes;

    // The store fails: the checkpoint fails, leaves nothing behind and truncates nothing.
    put_keys(&db, n..n + 400);
    n += 400;
    remote.store.down.store(true, Ordering::SeqCst);
    let before = db.stats().log_bytes;
    let err = db.checkpoint().unwrap_err();
    let EngineError::Checkpoint(CheckpointError::Dropped { source, removal }) = &err else {
        panic!("{err:?}");
    };
    assert!(
        matches!(
            **source,
            EngineError::Checkpoint(CheckpointError::Put { .. })
        ),
        "{source:?}"
    );
    assert!(removal.is_none(), "{removal:?}");
    // The store's own error is kept as the cause.
    let cause = std::error::Error::source(&err)
        .and_then(std::error::Error::source)
        .expect("the store's error");
    assert!(cause.to_string().contains("the store is down"), "{cause}");
    let err = err.to_string();
    assert!(
        err.contains("the store is down") && err.contains("not truncated"),
        "{err}"
    );
    assert_eq!(local(&dir), vec![2, 3]);
    assert_eq!(db.stats().log_bytes, before);
    assert!(before > held);
    remote.store.down.store(false, Ordering::SeqCst);
    put_keys(&db, n..n + 100);
    n += 100;
    db.close().unwrap();
    drop(db);

    // A local checkpoint the store never got (an upload that did not complete) is dropped.
    let stray = dir
        .join(checkpoint::DIR)
        .join("ckpt-00000000000000000009.ckpt");
    std::fs::copy(
        dir.join(checkpoint::DIR)
            .join("ckpt-00000000000000000003.ckpt"),
        &stray,
    )
    .unwrap();
    let (db, r) = open(&dir, device.clone()).unwrap();
    assert_eq!(r.checkpoint.as_ref().map(|c| c.epoch), Some(3));
    assert!(!stray.exists());
    check_keys(&db, 0..n);
    db.close().unwrap();
    drop(db);

    // An empty directory recovers from the store's newest checkpoint and the log after it.
    let fresh = base.path().join("b");
    let (db, r) = open(&fresh, device.clone()).unwrap();
    assert_eq!(r.checkpoint.as_ref().map(|c| c.epoch), Some(3));
    assert_eq!(local(&fresh), vec![2, 3]);
    check_keys(&db, 0..n);
    db.close().unwrap();
    drop(db);

    // The store emptied: the truncated log is refused, not replayed without its start.
    remote.store.objects.lock().clear();
    let Err(err) = open(&base.path().join("c"), device) else {
        panic!("a truncated log without checkpoints opened");
    };
    assert!(
        matches!(
            &err,
            EngineError::Checkpoint(CheckpointError::LogWithoutCheckpoint { first, .. })
                if *first > 0
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("the in-memory store holds no valid checkpoint") && err.contains("LSN"),
        "{err}"
    );
}

#[test]
fn a_file_log_truncated_past_its_deleted_checkpoints_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("db");
    let device = DeviceConfig::File(
        FileOptions::default()
            .segment_size(16 << 10)
            .buffer_size(64 << 10)
            .direct(false),
    );
    let (db, _) = open(&dir, device.clone()).unwrap();
    for i in 0..3 {
        put_keys(&db, i * 400..(i + 1) * 400);
        db.checkpoint().unwrap();
    }
    db.close().unwrap();
    drop(db);
    std::fs::remove_dir_all(dir.join(checkpoint::DIR)).unwrap();
    let Err(err) = open(&dir, device) else {
        panic!("a truncated log without checkpoints opened");
    };
    assert!(
        matches!(
            &err,
            EngineError::Checkpoint(CheckpointError::LogWithoutCheckpoint { damaged, .. })
                if damaged.is_empty()
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("holds no valid checkpoint"), "{err}");
}
