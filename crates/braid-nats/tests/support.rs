//! A cluster per test ([`Cluster`], stopped on drop) and a tiny database on the nats device:
//! one table of `key -> value`, commits that insert a key, and the check that every
//! acknowledged key is in a database recovered from the cluster into an empty directory.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use braid_engine::{
    Catalog, ColumnType, Db, DeviceConfig, EngineError, IndexKind, Options, TableDef,
};
use braid_nats::{NatsConfig, NatsFactory};
use parking_lot::{Mutex, MutexGuard};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run_script(args: &[&str]) -> String {
    braid_nats::script::run(args)
}

/// A 3-node cluster on loopback ports, stopped when dropped.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub url: String,
    _turn: MutexGuard<'static, ()>,
}

impl Cluster {
    pub fn start() -> Cluster {
        let turn = ONE_AT_A_TIME.lock();
        let dir = tempfile::Builder::new()
            .prefix("braid-nats-test-")
            .tempdir()
            .unwrap();
        let mut c = Cluster {
            url: String::new(),
            dir,
            _turn: turn,
        };
        // Stopped by Drop even if starting fails half way.
        c.url = run_script(&["start", c.path()]);
        assert!(c.url.starts_with("nats://"), "no URL printed: {}", c.url);
        c
    }

    pub fn path(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    /// kill -9 server `i`.
    pub fn kill(&self, i: usize) {
        run_script(&["kill-node", self.path(), &i.to_string()]);
    }

    /// Start server `i` again.
    pub fn revive(&self, i: usize) {
        run_script(&["start-node", self.path(), &i.to_string()]);
    }

    pub fn config(&self, db_id: &str) -> NatsConfig {
        NatsConfig::new(&self.url, db_id)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(braid_nats::script::path())
            .args(["stop", self.path()])
            .output();
    }
}

pub fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("kv", IndexKind::Hash).column("v", ColumnType::I64));
    c
}

pub fn options(cfg: NatsConfig) -> Options {
    Options::default().device(DeviceConfig::External(Arc::new(NatsFactory::new(cfg))))
}

pub fn open(dir: &Path, opts: Options) -> Result<Db, EngineError> {
    Db::builder(dir)
        .options(opts)
        .catalog(catalog())
        .open()
        .map(|(db, _)| db)
}

/// Insert `key -> key * 7` and wait until durable.
pub fn put(db: &Db, key: u64) -> Result<(), String> {
    let kv = db.table("kv").unwrap();
    let mut w = db.worker().map_err(|e| e.to_string())?;
    let mut tx = w.begin();
    tx.insert(kv, key, &((key * 7) as i64).to_le_bytes())
        .map_err(|e| e.to_string())?;
    tx.commit().map_err(|e| e.to_string())
}

/// Recover the database into a new empty directory and check every key of `acked` is there
/// with its value, and nothing of `never` is.
pub fn check_recovered(cfg: NatsConfig, acked: &[u64], never: &[u64]) -> Db {
    check_recovered_with(options(cfg), acked, never)
}

/// [`check_recovered`] for a database opened with `opts`.
pub fn check_recovered_with(opts: Options, acked: &[u64], never: &[u64]) -> Db {
    let fresh = tempfile::tempdir().unwrap();
    let db = open(&fresh.path().join("db"), opts).expect("recovery from the cluster");
    let kv = db.table("kv").unwrap();
    for &k in acked {
        let row = db
            .peek(kv, k)
            .unwrap_or_else(|| panic!("acknowledged key {k} lost"));
        assert_eq!(row[..8], ((k * 7) as i64).to_le_bytes(), "key {k}");
    }
    for &k in never {
        assert!(db.peek(kv, k).is_none(), "key {k} was never acknowledged");
    }
    db
}

/// A publish timeout short enough for the outage tests.
pub fn short(mut cfg: NatsConfig, secs: u64) -> NatsConfig {
    cfg.timeout = Duration::from_secs(secs);
    cfg
}
