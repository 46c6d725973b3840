//! Passes the peers' versions from Cargo.lock to the code (`PEERS_V_<NAME>`), and exports the
//! counting `fdatasync`/`fsync` of `src/synccount.rs` so shared libraries call them too.

use std::path::Path;

const CRATES: [&str; 9] = [
    "braid-wal",
    "braid-engine",
    "raft-engine",
    "okaywal",
    "rocksdb",
    "librocksdb-sys",
    "fjall",
    "redb",
    "rusqlite",
];

fn main() {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    for name in CRATES {
        let version = text
            .split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{name}\"\n")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
            .map(|v| v.trim_end_matches('"').to_string())
            .unwrap_or_else(|| "unknown".into());
        let var = name.to_uppercase().replace('-', "_");
        println!("cargo:rustc-env=PEERS_V_{var}={version}");
    }
    for sym in ["fdatasync", "fsync"] {
        println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol={sym}");
    }
}
