//! `braid bench rewind --experiment btree-mix` with its Berkeley DB and PMDK peers (REWIND
//! Fig. 7 right): stand-in peer programs (shell scripts printing the peers' JSON lines, so no
//! library is needed) are run, parsed and added to the mix's results; an empty peers
//! directory is recorded as "not built".

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::common::{braid, read_json, run_ok};

/// A stand-in peer: prints, for each fraction asked, the line the real program prints with
/// `seconds` as its time.
fn fake_peer(dir: &Path, binary: &str, system: &str, seconds: f64) {
    let script = format!(
        "#!/bin/sh\nfor f in $(echo \"$4\" | tr , ' '); do\n\
         echo \"{{\\\"system\\\": \\\"{system}\\\", \\\"update_fraction\\\": $f, \
         \\\"records\\\": $2, \\\"operations\\\": $3, \\\"seconds\\\": {seconds}, \
         \\\"ops_per_sec\\\": 1, \\\"library_version\\\": \\\"{system} test\\\", \
         \\\"cache_bytes\\\": 67108864, \\\"sync_commit\\\": true, \
         \\\"lock_manager\\\": false}}\"\ndone\n"
    );
    let path = dir.join(binary);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `braid bench rewind --experiment btree-mix --quick` with peers from `peers`; returns
/// its stdout and its JSON's `btree_mix`.
fn mix(peers: &Path, out: &Path) -> (String, serde_json::Value) {
    let json = out.join("rewind.json");
    let stdout = run_ok(braid().args([
        "bench",
        "rewind",
        "--experiment",
        "btree-mix",
        "--quick",
        "--runs",
        "1",
        "--peers",
        peers.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--plot",
        out.to_str().unwrap(),
    ]));
    (stdout, read_json(&json)["btree_mix"].clone())
}

#[test]
fn peers_are_parsed_and_added() {
    let peers = tempfile::tempdir().unwrap();
    fake_peer(peers.path(), "bdb_btree_mix", "berkeley-db", 2.5);
    fake_peer(peers.path(), "pmdk_btree_mix", "pmdk", 0.25);
    let out = tempfile::tempdir_in("/dev/shm").unwrap();
    let (_, m) = mix(peers.path(), out.path());
    let points = m["points"].as_array().unwrap();
    let bdb: Vec<_> = points
        .iter()
        .filter(|p| p["system"] == "berkeley-db")
        .collect();
    assert_eq!(bdb.len(), 4, "{m}");
    for p in &bdb {
        assert_eq!(p["seconds"], 2.5);
        assert!(p["ratio_vs_nvm"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_eq!(
        points.iter().filter(|p| p["system"] == "pmdk").count(),
        4,
        "{m}"
    );
    let rec = &m["peers"]["berkeley-db"];
    assert_eq!(rec["library_version"], "berkeley-db test", "{m}");
    assert_eq!(rec["settings"]["cache_bytes"], 67108864);
    assert_eq!(rec["settings"]["lock_manager"], false);
    assert!(rec["pmem"].as_str().unwrap().contains("emulated"));
    assert_eq!(m["peers"]["pmdk"]["env"][0], "PMEM_IS_PMEM_FORCE=1");
    assert!(m["not_obtainable"]["stasis"].is_string());
    assert!(m["not_obtainable"]["shore-mt"].is_string());
    assert!(out.path().join("rewind-fig7-peers.png").exists());
    assert!(out.path().join("rewind-fig7-peers.svg").exists());
}

#[test]
fn absent_peers_are_not_built() {
    let peers = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir_in("/dev/shm").unwrap();
    let (stdout, m) = mix(peers.path(), out.path());
    assert!(
        stdout.contains("Berkeley DB and PMDK peers not built: run scripts/rewind-peers.sh"),
        "{stdout}"
    );
    assert_eq!(m["peers"], "not built", "{m}");
    assert!(m["not_obtainable"]["stasis"].is_string());
    assert!(
        m["points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["system"] != "pmdk" && p["system"] != "berkeley-db")
    );
}
