//! A hot standby: it follows the writer in rounds and serves what was acknowledged, then is
//! promoted: the old writer (a zombie from then on) is fenced and acknowledges nothing more,
//! the promoted standby commits, and a recovery from the cluster holds exactly what was
//! acknowledged.

use std::time::{Duration, Instant};

use braid_engine::{Db, Options, Standby};

use crate::support::{Cluster, catalog, check_recovered_with, open, options, put};

fn standby(dir: &std::path::Path, opts: Options) -> Standby {
    Db::builder(dir)
        .options(opts)
        .catalog(catalog())
        .standby()
        .unwrap()
}

/// Rounds until every key of `keys` is visible on the standby, with its value.
fn catch_up_to(s: &Standby, keys: &[u64]) {
    let kv = s.table("kv").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        s.catch_up().unwrap();
        let missing = s.read(|get| keys.iter().filter(|&&k| get(kv, k).is_none()).count());
        if missing == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} acknowledged keys never reached the standby"
        );
    }
    for &k in keys {
        assert_eq!(
            s.read(|get| get(kv, k)).unwrap()[..8],
            ((k * 7) as i64).to_le_bytes()
        );
    }
}

fn follow_and_promote(scheme: &str, streams: usize) {
    let cluster = Cluster::start();
    let cfg = cluster.config(&format!("standby-{}", scheme.replace([':', '='], "-")));
    let with = |o: Options| o.scheme(scheme.parse().unwrap()).streams(streams);
    let w_dir = tempfile::tempdir().unwrap();
    let writer = open(&w_dir.path().join("db"), with(options(cfg.clone()))).unwrap();
    let first: Vec<u64> = (1..=200).collect();
    for &k in &first {
        put(&writer, k).unwrap();
    }
    let s_dir = tempfile::tempdir().unwrap();
    let s = standby(&s_dir.path().join("db"), with(options(cfg.clone())));
    catch_up_to(&s, &first);
    // The writer goes on; the standby follows.
    let second: Vec<u64> = (201..=400).collect();
    for &k in &second {
        put(&writer, k).unwrap();
    }
    catch_up_to(&s, &second);
    let lagged = s.catch_up().unwrap();
    assert_eq!(lagged.txns, 0, "a round replayed something twice");
    // Promote: the old writer is fenced.
    let (promoted, report) = s.promote().unwrap();
    let zombie = put(&writer, 999).expect_err("the fenced writer acknowledged a commit");
    assert!(zombie.contains("fenced"), "{zombie}");
    // The standby had replayed everything: promotion replays nothing again.
    assert_eq!(
        report.recovery.txns, 0,
        "promotion replayed what the standby had"
    );
    let third: Vec<u64> = (401..=450).collect();
    for &k in &third {
        put(&promoted, k).unwrap();
    }
    let kv = promoted.table("kv").unwrap();
    for &k in first.iter().chain(&second) {
        assert!(promoted.peek(kv, k).is_some(), "key {k} lost at promotion");
    }
    drop(writer);
    drop(promoted);
    let acked: Vec<u64> = first.iter().chain(&second).chain(&third).copied().collect();
    check_recovered_with(with(options(cfg)), &acked, &[999]);
}

#[test]
fn a_serial_standby_follows_and_takes_over() {
    follow_and_promote("serial", 1);
}

#[test]
fn a_taurus_standby_follows_and_takes_over() {
    follow_and_promote("taurus", 2);
}

#[test]
fn a_gsn_standby_follows_and_takes_over() {
    follow_and_promote("gsn:partition=page", 2);
}

/// The writer checkpoints (and so purges its streams) while a standby follows; the promoted
/// standby checkpoints under new numbers, and the database recovers from the cluster alone.
fn follow_across_checkpoints(scheme: &str, streams: usize) {
    let cluster = Cluster::start();
    let cfg = cluster.config(&format!("standby-ckpt-{}", scheme.replace([':', '='], "-")));
    let with = |o: Options| o.scheme(scheme.parse().unwrap()).streams(streams);
    let w_dir = tempfile::tempdir().unwrap();
    let writer = open(&w_dir.path().join("db"), with(options(cfg.clone()))).unwrap();
    let first: Vec<u64> = (1..=150).collect();
    for &k in &first {
        put(&writer, k).unwrap();
    }
    let e1 = writer.checkpoint().unwrap().epoch;
    let s_dir = tempfile::tempdir().unwrap();
    let s = standby(&s_dir.path().join("db"), with(options(cfg.clone())));
    assert_eq!(
        s.open_report().checkpoint.as_ref().map(|c| c.epoch),
        Some(e1),
        "the standby did not start from the checkpoint"
    );
    let second: Vec<u64> = (151..=300).collect();
    for &k in &second {
        put(&writer, k).unwrap();
    }
    catch_up_to(&s, &first);
    catch_up_to(&s, &second);
    // Two more checkpoints: the streams are purged up to the older one's cut, past where the
    // standby started, but not past where it is now.
    writer.checkpoint().unwrap();
    let e3 = writer.checkpoint().unwrap().epoch;
    let third: Vec<u64> = (301..=350).collect();
    for &k in &third {
        put(&writer, k).unwrap();
    }
    catch_up_to(&s, &third);
    let (promoted, _) = s.promote().unwrap();
    assert!(
        put(&writer, 999).is_err(),
        "the fenced writer acknowledged a commit"
    );
    let fourth: Vec<u64> = (351..=400).collect();
    for &k in &fourth {
        put(&promoted, k).unwrap();
    }
    let e4 = promoted.checkpoint().unwrap().epoch;
    assert!(
        e4 > e3,
        "the promoted writer's checkpoint {e4} reuses the old writer's numbers"
    );
    promoted.checkpoint().unwrap();
    drop(writer);
    drop(promoted);
    let acked: Vec<u64> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .chain(&fourth)
        .copied()
        .collect();
    check_recovered_with(with(options(cfg)), &acked, &[999]);
}

#[test]
fn a_standby_follows_across_checkpoints_and_purges() {
    follow_across_checkpoints("serial", 1);
}

/// The same for gsn logs: the promotion's recovery takes the standby's GSN bound as each
/// log's durable mark, so its void marker spares what the standby had replayed.
#[test]
fn a_gsn_standby_follows_across_checkpoints_and_purges() {
    follow_across_checkpoints("gsn:partition=page", 2);
}

/// A standby that fell behind the writer's purges says so with `WalError::Behind`; opened
/// again, it starts from the newest checkpoint and catches up.
#[test]
fn a_standby_behind_the_purges_says_so_and_restarts_from_the_newest_checkpoint() {
    use braid_engine::{EngineError, log::WalError};

    let cluster = Cluster::start();
    let cfg = cluster.config("standby-behind");
    let w_dir = tempfile::tempdir().unwrap();
    let writer = open(&w_dir.path().join("db"), options(cfg.clone())).unwrap();
    put(&writer, 1).unwrap();
    let s_dir = tempfile::tempdir().unwrap();
    let s = standby(&s_dir.path().join("db"), options(cfg.clone()));
    let keys: Vec<u64> = (1..=300).collect();
    for chunk in keys[1..].chunks(100) {
        for &k in chunk {
            put(&writer, k).unwrap();
        }
        writer.checkpoint().unwrap();
    }
    // Two checkpoints after the standby opened: the log is purged past where it starts.
    match s.catch_up() {
        Err(EngineError::Wal(WalError::Behind { .. })) => {}
        Err(e) => panic!("the standby failed otherwise: {e}"),
        Ok(r) => panic!("the standby read a purged log ({} txns)", r.txns),
    }
    drop(s);
    let s = standby(&s_dir.path().join("db"), options(cfg.clone()));
    assert!(
        s.open_report().checkpoint.is_some(),
        "the standby did not start from a checkpoint"
    );
    catch_up_to(&s, &keys);
}
