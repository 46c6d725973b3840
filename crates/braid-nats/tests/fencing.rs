//! One writer per database: a second writer fences the first, whose pending and later commits
//! fail with the fenced error and are never acknowledged.

use std::time::Duration;

use crate::support::{Cluster, check_recovered, open, options, put};

#[test]
fn a_second_writer_fences_the_first() {
    let cluster = Cluster::start();
    let cfg = cluster.config("fenced");
    let a_dir = tempfile::tempdir().unwrap();
    // Writer A holds its group commit for a long while, so its last commit is still pending
    // when B takes over.
    let mut a_opts = options(cfg.clone());
    a_opts.group_delay = Duration::from_secs(5);
    a_opts.group_bytes = 1 << 30;
    let a = open(&a_dir.path().join("db"), a_opts).unwrap();
    let kv = a.table("kv").unwrap();
    let mut pending = Vec::new();
    for k in 0..20 {
        let mut w = a.worker().unwrap();
        let mut tx = w.begin();
        tx.insert(kv, k, &((k * 7) as i64).to_le_bytes()).unwrap();
        // In the log buffer; acknowledged only once its ticket resolves.
        pending.push((k, tx.commit_async().unwrap()));
    }
    // Nothing of A is durable yet: the group delay holds the flush.
    assert!(!pending[19].1.is_durable().unwrap());
    // A second opener of A's own directory is refused by its lock before it reaches the
    // cluster (where opening would fence A).
    match open(&a_dir.path().join("db"), options(cfg.clone())) {
        Err(braid_engine::EngineError::InUse { holder, .. }) => {
            assert_eq!(holder, Some(std::process::id()));
        }
        other => panic!("a second opener of A's directory was not refused: {other:?}"),
    }
    assert!(a.worker().is_ok(), "the refused opener fenced A");
    // B opens the same database from another directory: it recovers from the cluster and
    // fences A.
    let b_dir = tempfile::tempdir().unwrap();
    let b = open(&b_dir.path().join("db"), options(cfg.clone())).unwrap();
    for k in 100..110 {
        put(&b, k).unwrap();
    }
    // A's pending commits fail, fenced; none is acknowledged.
    for (k, t) in &pending {
        let err = t
            .wait()
            .expect_err("a fenced writer acknowledged a commit")
            .to_string();
        assert!(err.contains("fenced"), "commit {k}: {err}");
    }
    // And so do its later ones (its log is poisoned: a worker may not even be handed out).
    let later = match a.worker() {
        Ok(mut w) => {
            let mut tx = w.begin();
            tx.insert(kv, 50, &350i64.to_le_bytes()).unwrap();
            tx.commit().err().map(|e| e.to_string())
        }
        Err(e) => Some(e.to_string()),
    };
    let later = later.expect("a fenced writer acknowledged a later commit");
    assert!(later.contains("fenced"), "{later}");
    drop(a);
    drop(b);
    // B's commits are there, nothing of A's.
    let never: Vec<u64> = (0..20).chain([50]).collect();
    let b_keys: Vec<u64> = (100..110).collect();
    check_recovered(cfg, &b_keys, &never);
}
