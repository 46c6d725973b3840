//! Two of three servers down: commits stall, then fail with a timeout error that names the
//! cluster and the stream; nothing acknowledged is lost once the servers return.

use crate::support::{Cluster, check_recovered, open, options, put, short};

#[test]
fn two_servers_down_fails_commits_with_a_timeout_and_loses_nothing() {
    let cluster = Cluster::start();
    let cfg = short(cluster.config("outage"), 3);
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"), options(cfg.clone())).unwrap();
    let acked: Vec<u64> = (0..50).collect();
    for &k in &acked {
        put(&db, k).unwrap();
    }
    cluster.kill(1);
    cluster.kill(2);
    let err = put(&db, 1000).expect_err("a commit was acknowledged without a majority");
    assert!(
        err.contains("no publish acknowledgement") && err.contains("BRAID_outage_000"),
        "{err}"
    );
    // The stream is poisoned: later commits fail too.
    assert!(put(&db, 1001).is_err());
    drop(db);
    cluster.revive(1);
    cluster.revive(2);
    check_recovered(cluster.config("outage"), &acked, &[1001]);
}
