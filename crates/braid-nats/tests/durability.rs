//! Acknowledged commits survive the machine: recovered from the cluster alone into an empty
//! directory, also when a server was killed (kill -9) in the middle of the run.

use crate::support::{Cluster, check_recovered, open, options, put};

#[test]
fn acknowledged_commits_recover_into_an_empty_directory_across_a_server_kill() {
    let cluster = Cluster::start();
    let cfg = cluster.config("durable");
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("db"), options(cfg.clone())).unwrap();
    let mut acked = Vec::new();
    for k in 0..200 {
        put(&db, k).unwrap();
        acked.push(k);
    }
    // One server of three dies: a majority remains, commits go on (after a stream leader
    // election if it led the stream).
    cluster.kill(0);
    for k in 200..400 {
        put(&db, k).unwrap_or_else(|e| panic!("commit {k} after one server died: {e}"));
        acked.push(k);
    }
    drop(db);
    // The machine is gone with its directory.
    drop(dir);
    let db = check_recovered(cfg.clone(), &acked, &[]);
    // The recovered database goes on where the log ended, and recovers again.
    put(&db, 400).unwrap();
    acked.push(400);
    drop(db);
    cluster.revive(0);
    check_recovered(cfg, &acked, &[]);
}
