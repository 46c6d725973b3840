//! Checkpoints beside the log: uploaded to the database's object store bucket, then the log
//! truncated as a purge of the JetStream streams; an empty directory recovers from the newest
//! checkpoint and what the streams kept; a purged log whose checkpoints are gone is refused,
//! not replayed with a hole; a checkpoint that cannot be uploaded leaves nothing and purges
//! nothing; and an older writer that opens after a newer one purged its fence is refused.

use std::path::Path;
use std::sync::Arc;

use braid_engine::{CheckpointStore, Db, OpenReport};
use braid_nats::{Cluster as Client, NatsConfig, NatsFactory};

use crate::support::{Cluster, catalog, check_recovered, open, options, put, short};

/// The first sequence and the bytes JetStream holds for braid stream 0.
fn stream_state(c: &Client) -> (u64, u64) {
    let name = c.config().stream_name(0);
    let s = c.run("stream info", || c.js().get_stream(&name)).unwrap();
    let st = &s.cached_info().state;
    (st.first_sequence, st.bytes)
}

fn open_report(dir: &Path, cfg: NatsConfig) -> Result<(Db, OpenReport), String> {
    Db::builder(dir)
        .options(options(cfg))
        .catalog(catalog())
        .open()
        .map_err(|e| e.to_string())
}

fn local_checkpoints(dir: &Path) -> Vec<u64> {
    braid_engine::list_checkpoints(dir)
        .unwrap()
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

/// Keys `from..to`, each its own commit (a message each).
fn put_range(db: &Db, from: u64, to: u64) {
    for k in from..to {
        put(db, k).unwrap_or_else(|e| panic!("commit {k}: {e}"));
    }
}

#[test]
fn checkpoints_purge_the_streams_and_an_empty_directory_recovers_from_them() {
    let cluster = Cluster::start();
    let cfg = cluster.config("ckpt");
    let client = Client::connect(cfg.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"), options(cfg.clone())).unwrap();
    put_range(&db, 0, 300);
    db.checkpoint().unwrap();
    put_range(&db, 300, 600);
    let (first0, bytes0) = stream_state(&client);
    assert_eq!(first0, 1);
    // The second checkpoint truncates the log up to the first one's cut: a purge.
    db.checkpoint().unwrap();
    put_range(&db, 600, 900);
    let r = db.checkpoint().unwrap();
    let (first, bytes) = stream_state(&client);
    assert!(first > 300, "the stream still starts at sequence {first}");
    assert!(
        bytes < bytes0,
        "the stream holds {bytes} bytes, {bytes0} before the purges"
    );
    assert!(r.log_bytes_after < bytes0, "{r:?}");
    let store = NatsFactory::new(cfg.clone());
    let mut held = store.list().unwrap();
    held.sort();
    assert_eq!(
        held,
        [
            "ckpt-00000000000000000002.ckpt",
            "ckpt-00000000000000000003.ckpt"
        ]
    );
    put_range(&db, 900, 1000);
    // The machine dies with its directory: no clean close.
    drop(db);
    drop(dir);

    let fresh = tempfile::tempdir().unwrap();
    let (db, report) = open_report(&fresh.path().join("db"), cfg.clone()).unwrap();
    let ck = report.checkpoint.expect("no checkpoint was loaded");
    assert_eq!(ck.epoch, 3);
    assert!(ck.fallbacks.is_empty(), "{:?}", ck.fallbacks);
    assert!(report.recovery.txns < 300, "{:?}", report.recovery);
    assert_eq!(local_checkpoints(&fresh.path().join("db")), vec![2, 3]);
    drop(db);
    let acked: Vec<u64> = (0..1000).collect();
    let db = check_recovered(cfg, &acked, &[]);
    drop(db);
}

#[test]
fn a_purged_log_without_its_checkpoints_is_refused_until_they_are_back() {
    let cluster = Cluster::start();
    let cfg = cluster.config("lost");
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"), options(cfg.clone())).unwrap();
    for round in 0..3 {
        put_range(&db, round * 200, (round + 1) * 200);
        db.checkpoint().unwrap();
    }
    put_range(&db, 600, 650);
    drop(db);
    drop(dir);

    let store = NatsFactory::new(cfg.clone());
    let saved: Vec<(String, Vec<u8>)> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|n| {
            let b = store.get(&n).unwrap().unwrap();
            (n, b)
        })
        .collect();
    assert_eq!(saved.len(), 2);
    for (n, _) in &saved {
        store.remove(n).unwrap();
    }
    assert!(store.list().unwrap().is_empty());
    assert_eq!(store.get(&saved[0].0).unwrap(), None);

    let fresh = tempfile::tempdir().unwrap();
    let Err(err) = open_report(&fresh.path().join("db"), cfg.clone()) else {
        panic!("a purged log without checkpoints was recovered");
    };
    assert!(
        err.contains("holds no valid checkpoint")
            && err.contains("braid-lost-ckpt")
            && err.contains("Put the checkpoints back"),
        "{err}"
    );

    // Objects of many chunks read back whole.
    let big: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7 + i / 251) as u8).collect();
    store.put("big", &big).unwrap();
    assert_eq!(store.get("big").unwrap().as_deref(), Some(&big[..]));
    store.remove("big").unwrap();
    store.remove("big").unwrap();

    // Put back, they are found again and nothing is lost.
    for (n, b) in &saved {
        store.put(n, b).unwrap();
    }
    let acked: Vec<u64> = (0..650).collect();
    drop(check_recovered(cfg, &acked, &[]));
}

#[test]
fn a_checkpoint_that_cannot_be_uploaded_leaves_nothing_and_purges_nothing() {
    let cluster = Cluster::start();
    let cfg = short(cluster.config("noup"), 3);
    let client = Client::connect(cfg.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let db = open(&db_dir, options(cfg.clone())).unwrap();
    put_range(&db, 0, 200);
    db.checkpoint().unwrap();
    put_range(&db, 200, 400);
    db.checkpoint().unwrap();
    put_range(&db, 400, 600);
    let before = stream_state(&client);
    let log_before = db.stats().log_bytes;

    cluster.kill(1);
    cluster.kill(2);
    let err = db
        .checkpoint()
        .expect_err("a checkpoint counted without the cluster holding it")
        .to_string();
    assert!(
        err.contains("checkpoint") && err.contains("not truncated"),
        "{err}"
    );
    assert_eq!(local_checkpoints(&db_dir), vec![1, 2]);
    assert_eq!(db.stats().log_bytes, log_before);
    // The object store itself gives up as soon as no chunk is acknowledged for the timeout.
    let err = NatsFactory::new(cfg.clone())
        .put("ckpt-99999999999999999999.ckpt", &[5u8; 300_000])
        .unwrap_err()
        .to_string();
    assert!(err.contains("object store braid-noup-ckpt"), "{err}");
    cluster.revive(1);
    cluster.revive(2);
    assert_eq!(stream_state(&client), before, "the stream was purged");
    let store = NatsFactory::new(cfg.clone());
    let mut held = store.list().unwrap();
    held.sort();
    assert_eq!(
        held,
        [
            "ckpt-00000000000000000001.ckpt",
            "ckpt-00000000000000000002.ckpt"
        ]
    );

    // The cluster back, the next checkpoint goes through and purges.
    db.checkpoint().unwrap();
    assert!(stream_state(&client).0 > before.0);
    drop(db);
    let acked: Vec<u64> = (0..600).collect();
    drop(check_recovered(cfg, &acked, &[]));
}

#[test]
fn an_older_writer_opening_after_its_successor_purged_the_fences_is_refused() {
    let cluster = Cluster::start();
    let cfg = cluster.config("slow");
    let client = Arc::new(Client::connect(cfg.clone()).unwrap());
    // Writer A claims its epoch, then stalls before it fences the streams.
    let a_epoch = braid_nats::epoch::claim(&client).unwrap();
    // Writer B claims the next one, writes, and its checkpoints purge its own fence.
    let dir = tempfile::tempdir().unwrap();
    let b = open(&dir.path().join("db"), options(cfg.clone())).unwrap();
    for round in 0..3 {
        put_range(&b, round * 100, (round + 1) * 100);
        b.checkpoint().unwrap();
    }
    let b_epoch = braid_nats::epoch::current(&client).unwrap();
    assert_eq!(b_epoch, a_epoch + 1);
    let name = cfg.stream_name(0);
    let (_, last) = braid_nats::fetch::bounds(&client, &name).unwrap();
    let img = braid_nats::image::read(&client, &name, last).unwrap();
    assert!(
        img.max_fence < b_epoch,
        "B's fence is still in the stream: the test shows nothing"
    );
    // A goes on: its fence is appended, no newer fence is read back, but the epoch says B.
    let err = braid_nats::factory::open_claimed(&client, 1, a_epoch)
        .expect_err("an older writer opened the log after a newer one")
        .to_string();
    assert!(
        err.contains("fenced") && err.contains(&format!("writer epoch {b_epoch}")),
        "{err}"
    );
    drop(b);
    // Whoever recovers next has every commit B acknowledged.
    let acked: Vec<u64> = (0..300).collect();
    drop(check_recovered(cfg, &acked, &[]));
}
