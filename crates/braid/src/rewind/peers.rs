//! Berkeley DB and PMDK beside REWIND on the B+-tree mix (REWIND §5.2, Fig. 7 right): runs
//! the peer programs `scripts/rewind-peers.sh` builds (`bdb_btree_mix`, `pmdk_btree_mix`
//! from `crates/braid-rewind/peers/`) for the mix's records, operations, update fractions and
//! runs, with their stores in the mix's directory, parses the JSON line each prints per
//! fraction, and adds the medians over runs to the mix's results as two more systems, with
//! their time over the non-recoverable twin's as for the others.
//!
//! The paper's other two peers, Stasis and Shore-MT, are recorded as not obtainable. A
//! missing peer binary is recorded as not built and a failing one as its error; neither
//! fails the experiment.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::btree_mix::{BTreeMixConfig, MixPoint};
use super::setup::{Backing, median};
use crate::plot::{self, Series};

/// What a peer directory holding no peer binary is recorded as.
pub const NOT_BUILT: &str = "not built";
/// The line printed when no peer binary is there.
pub const NOT_BUILT_LINE: &str =
    "Berkeley DB and PMDK peers not built: run scripts/rewind-peers.sh";

/// A peer program: the system name it reports, its binary's name in the peers directory,
/// its environment and what its settings mean.
struct Peer {
    system: &'static str,
    binary: &'static str,
    env: &'static [(&'static str, &'static str)],
    note: &'static str,
}

const PEERS: [Peer; 2] = [
    Peer {
        system: "berkeley-db",
        binary: "bdb_btree_mix",
        env: &[],
        note: "DB_BTREE in an environment with DB_INIT_TXN|DB_INIT_LOG|DB_INIT_MPOOL and no \
               DB_INIT_LOCK (lock manager off); each insert and delete one transaction with \
               the default, synchronous commit (log written and fdatasync'd before commit \
               returns: durable); lookups outside transactions; cache and log buffer sized \
               so neither limits it (the paper matched Stasis's sizes without giving them)",
    },
    Peer {
        system: "pmdk",
        binary: "pmdk_btree_mix",
        env: &[("PMEM_IS_PMEM_FORCE", "1")],
        note: "libpmemobj undo-log transactions (pmemobj_tx_add_range before each change), \
               each insert and delete one transaction; the B+-tree of pmdk_bench.c with \
               32-byte values inline in leaves and lazy deletion; PMEM_IS_PMEM_FORCE=1 so \
               libpmem flushes with CLWB/CLFLUSHOPT and fences as on real pmem",
    },
];

/// Why the paper's two other peers are absent.
pub fn not_obtainable() -> Value {
    json!({
        "stasis": "not packaged in Debian or on crates.io (PyPI's `stasis` 0.2 is an unrelated \
                   Pyramid static-site generator; Stasis is a C library), and no source tree of it can be \
                   fetched here to build (only package registries are reachable)",
        "shore-mt": "not packaged in Debian, on PyPI or on crates.io, and no source tree of \
                     it (nor of the persistent-memory version of the paper's [33]) can be \
                     fetched here to build (only package registries are reachable)",
    })
}

/// One line a peer prints: one update fraction of one run. Fields beyond these are its
/// settings (cache, log buffer, pool size, ...).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PeerLine {
    pub system: String,
    pub update_fraction: f64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub library_version: String,
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

/// Parse one line a peer printed.
pub fn parse_line(line: &str) -> Result<PeerLine, serde_json::Error> {
    serde_json::from_str(line)
}

/// The peers' medians as mix points, and what to record of them under the mix's `peers`.
#[derive(Debug, Clone, PartialEq)]
pub struct PeersOutcome {
    pub points: Vec<MixPoint>,
    pub record: Value,
}

/// Run every peer binary present in `peers_dir` for `cfg` (see the module docs).
pub fn run(peers_dir: &Path, cfg: &BTreeMixConfig) -> PeersOutcome {
    let mut points = Vec::new();
    let mut record = Map::new();
    let mut any = false;
    for peer in &PEERS {
        let bin = peers_dir.join(peer.binary);
        if !bin.is_file() {
            record.insert(peer.system.into(), NOT_BUILT.into());
            continue;
        }
        any = true;
        match run_peer(peer, &bin, cfg) {
            Ok((p, rec)) => {
                points.extend(p);
                record.insert(peer.system.into(), rec);
            }
            Err(e) => {
                println!("{} peer failed: {e:#}", peer.system);
                record.insert(peer.system.into(), json!({ "error": format!("{e:#}") }));
            }
        }
    }
    if !any {
        println!("{NOT_BUILT_LINE}");
        return PeersOutcome {
            points,
            record: NOT_BUILT.into(),
        };
    }
    PeersOutcome {
        points,
        record: Value::Object(record),
    }
}

/// Where the peers keep their stores: the mix's directory (a DRAM-backed mix has none; its
/// peers use the temporary directory).
fn store_dir(cfg: &BTreeMixConfig) -> std::path::PathBuf {
    match &cfg.backing {
        Backing::Dir(d) => d.clone(),
        Backing::Dram => std::env::temp_dir(),
    }
}

fn run_peer(
    peer: &Peer,
    bin: &Path,
    cfg: &BTreeMixConfig,
) -> anyhow::Result<(Vec<MixPoint>, Value)> {
    let dir = store_dir(cfg);
    let fractions: Vec<String> = cfg.update_fractions.iter().map(f64::to_string).collect();
    let mut secs: Vec<Vec<f64>> = vec![Vec::new(); cfg.update_fractions.len()];
    let mut first: Option<PeerLine> = None;
    for _ in 0..cfg.runs.max(1) {
        let out = Command::new(bin)
            .arg(&dir)
            .arg(cfg.records.to_string())
            .arg(cfg.operations.to_string())
            .arg(fractions.join(","))
            .envs(peer.env.iter().copied())
            .output()
            .map_err(|e| anyhow::anyhow!("running {}: {e}", bin.display()))?;
        if !out.status.success() {
            anyhow::bail!(
                "{} exited with {}: {}",
                bin.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if line.trim().is_empty() {
                continue;
            }
            let l = parse_line(line).map_err(|e| anyhow::anyhow!("parsing {line:?}: {e}"))?;
            check_line(&l, peer, cfg)?;
            let i = cfg
                .update_fractions
                .iter()
                .position(|f| (f - l.update_fraction).abs() < 1e-9)
                .ok_or_else(|| anyhow::anyhow!("unasked update fraction in {line:?}"))?;
            secs[i].push(l.seconds);
            first.get_or_insert(l);
        }
    }
    let Some(first) = first else {
        anyhow::bail!("{} printed nothing", bin.display());
    };
    let mut points = Vec::new();
    for (&frac, mut s) in cfg.update_fractions.iter().zip(secs) {
        if s.len() != cfg.runs.max(1) {
            anyhow::bail!(
                "{} runs at update fraction {frac}, not {}",
                s.len(),
                cfg.runs
            );
        }
        let s = median(&mut s);
        points.push(MixPoint {
            system: peer.system.into(),
            update_fraction: frac,
            seconds: s,
            ops_per_sec: cfg.operations as f64 / s,
            ratio_vs_nvm: None,
            // Not counted outside braid-rewind's pools (written as null).
            fences_per_op: f64::NAN,
        });
    }
    let mut settings = first.settings;
    for per_run in ["records", "operations", "dir"] {
        settings.remove(per_run);
    }
    let rec = json!({
        "binary": bin.display().to_string(),
        "library_version": first.library_version,
        "settings": settings,
        "env": peer.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        "pmem": format!("emulated: stores in {} (a DRAM file system standing in for \
                         persistent memory, as braid-rewind's pools are)", dir.display()),
        "note": peer.note,
    });
    Ok((points, rec))
}

/// A line must be the peer's and for the mix's sizes.
fn check_line(l: &PeerLine, peer: &Peer, cfg: &BTreeMixConfig) -> anyhow::Result<()> {
    if l.system != peer.system {
        anyhow::bail!("{} printed a line of system {:?}", peer.binary, l.system);
    }
    for (key, want) in [("records", cfg.records), ("operations", cfg.operations)] {
        if let Some(got) = l.settings.get(key).and_then(Value::as_u64)
            && got != want
        {
            anyhow::bail!("{} ran {got} {key}, not {want}", peer.binary);
        }
    }
    Ok(())
}

/// Set every point's time over the twin's (`nvm`) at its fraction, where the twin ran.
pub fn set_ratios(points: &mut [MixPoint]) {
    let nvm: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.system == "nvm")
        .map(|p| (p.update_fraction, p.seconds))
        .collect();
    for p in points {
        p.ratio_vs_nvm = nvm
            .iter()
            .find(|(f, _)| (f - p.update_fraction).abs() < 1e-9)
            .map(|(_, s)| p.seconds / s);
    }
}

/// The systems drawn in `rewind-fig7-peers`: REWIND Batch and the peers.
const DRAWN: [&str; 3] = ["batch", "pmdk", "berkeley-db"];

/// Draw `rewind-fig7-peers` (time per system against update fraction) into `dir`.
pub fn plot(dir: &Path, points: &[MixPoint]) -> anyhow::Result<()> {
    let series: Vec<Series> = DRAWN
        .iter()
        .map(|&name| Series {
            name: name.into(),
            points: points
                .iter()
                .filter(|p| p.system == name)
                .map(|p| (p.update_fraction * 100.0, p.seconds))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    plot::line_chart(
        &dir.join("rewind-fig7-peers"),
        "B+-tree mix: REWIND Batch, PMDK and Berkeley DB",
        "update fraction (%)",
        "seconds",
        &series,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const LINE: &str = r#"{"system": "berkeley-db", "update_fraction": 0.5, "records": 100000, "operations": 200000, "seconds": 0.5, "ops_per_sec": 400000, "library_version": "Berkeley DB 5.3.28", "cache_bytes": 67108864, "log_buffer_bytes": 1048576, "sync_commit": true, "lock_manager": false}"#;

    #[test]
    fn parses_a_peer_line() {
        let l = parse_line(LINE).unwrap();
        assert_eq!(l.system, "berkeley-db");
        assert_eq!(l.update_fraction, 0.5);
        assert_eq!(l.seconds, 0.5);
        assert_eq!(l.library_version, "Berkeley DB 5.3.28");
        assert_eq!(l.settings["cache_bytes"], 67108864);
        assert_eq!(l.settings["sync_commit"], true);
        assert!(parse_line("{\"system\": \"pmdk\"}").is_err());
    }

    #[test]
    fn absent_binaries_are_not_built() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), &BTreeMixConfig::default());
        assert_eq!(out.record, NOT_BUILT);
        assert!(out.points.is_empty());
    }

    #[test]
    fn sizes_must_match() {
        let cfg = BTreeMixConfig::default();
        let l = parse_line(LINE).unwrap();
        assert!(check_line(&l, &PEERS[0], &cfg).is_ok());
        assert!(check_line(&l, &PEERS[1], &cfg).is_err());
        let small = BTreeMixConfig {
            records: 10,
            ..BTreeMixConfig::default()
        };
        assert!(check_line(&l, &PEERS[0], &small).is_err());
    }
}
