//! Berkeley DB and PMDK beside REWIND on the B+-tree mix (REWIND §5.2, Fig. 7 right): runs
//! the peer programs `scripts/rewind-peers.sh` builds (`bdb_btree_mix`, `pmdk_btree_mix`
//! from `crates/braid-rewind/peers/`) for the mix's records, operations, update fractions and
//! runs, with their stores in the mix's directory, parses the JSON line each prints per
//! fraction, and adds the medians over runs to the mix's results as two more systems, with
//! their time over the non-recoverable twin's as for the others.
//!
//! Berkeley DB pays the NVM write latency braid-rewind pays: REWIND §5 ran it on PMFS and
//! charged "latencies for user-data writes to PMFS and not for PMFS's internal bookkeeping
//! writes", so every write and pwrite Berkeley DB makes is charged the mix's
//! `write_delay_ns` per 64-byte line of file data (`BRAID_NVM_WRITE_NS`, read by
//! `crates/braid-rewind/peers/bdb_nvm.h`), the latency braid-rewind pays per persisted line.
//! PMDK (not one of the paper's systems) flushes through libpmem, which has no hook to charge
//! a latency per line: it runs without the latency, is labelled so, and is not compared.
//!
//! Berkeley DB also runs Fig. 8's rollback and recovery (`bdb_rollback_recovery`, [`run_recovery`]):
//! one transaction of N mixed operations aborted, and N operations in unfinished transactions
//! of 200 recovered after a crash, with the same latency charged.
//!
//! The paper's other two peers, Stasis and Shore-MT, are recorded as not obtainable. A
//! missing peer binary is recorded as not built and a failing one as its error; neither
//! fails the experiment.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::btree_mix::{BTreeMixConfig, MixPoint};
use super::recovery::{RecoveryConfig, RecoveryPoint};
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
    /// Whether the peer is charged the NVM write latency (`BRAID_NVM_WRITE_NS`).
    charged: bool,
    note: &'static str,
}

/// The environment variable the Berkeley DB programs read the NVM write latency from.
pub const NVM_ENV: &str = "BRAID_NVM_WRITE_NS";

const PEERS: [Peer; 2] = [
    Peer {
        system: "berkeley-db",
        binary: "bdb_btree_mix",
        env: &[],
        charged: true,
        note: "DB_BTREE in an environment with DB_INIT_TXN|DB_INIT_LOG|DB_INIT_MPOOL and no \
               DB_INIT_LOCK (lock manager off); each insert and delete one transaction with \
               the default, synchronous commit (log written and fdatasync'd before commit \
               returns: durable); lookups outside transactions; cache and log buffer sized \
               so neither limits it (the paper matched Stasis's sizes without giving them); \
               every write and pwrite charged the NVM write latency per 64-byte line, as the \
               paper charged Berkeley DB's user-data writes to PMFS",
    },
    Peer {
        system: "pmdk",
        binary: "pmdk_btree_mix",
        env: &[("PMEM_IS_PMEM_FORCE", "1")],
        charged: false,
        note: "libpmemobj undo-log transactions (pmemobj_tx_add_range before each change), \
               each insert and delete one transaction; the B+-tree of pmdk_bench.c with \
               32-byte values inline in leaves and lazy deletion; PMEM_IS_PMEM_FORCE=1 so \
               libpmem flushes with CLWB/CLFLUSHOPT and fences as on real pmem; NOT charged \
               the NVM write latency (libpmem's flushes cannot be hooked), so not compared",
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
    let mut lines: Vec<f64> = vec![f64::NAN; cfg.update_fractions.len()];
    let mut first: Option<PeerLine> = None;
    for _ in 0..cfg.runs.max(1) {
        let out = Command::new(bin)
            .arg(&dir)
            .arg(cfg.records.to_string())
            .arg(cfg.operations.to_string())
            .arg(fractions.join(","))
            .envs(peer.env.iter().copied())
            .envs(
                peer.charged
                    .then(|| (NVM_ENV, cfg.write_delay_ns.to_string())),
            )
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
            if let Some(x) = l.settings.get("nvm_lines_per_op").and_then(Value::as_f64) {
                lines[i] = x;
            }
            first.get_or_insert(l);
        }
    }
    let Some(first) = first else {
        anyhow::bail!("{} printed nothing", bin.display());
    };
    let mut points = Vec::new();
    for ((&frac, mut s), lines) in cfg.update_fractions.iter().zip(secs).zip(lines) {
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
            // The 64-byte lines of file data the peer was charged for (NaN if not charged).
            lines_per_op: if peer.charged { lines } else { f64::NAN },
        });
    }
    let mut settings = first.settings;
    for per_run in ["records", "operations", "dir", "nvm_lines_per_op"] {
        settings.remove(per_run);
    }
    let mut env: Vec<String> = peer.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if peer.charged {
        env.push(format!("{NVM_ENV}={}", cfg.write_delay_ns));
    }
    let rec = json!({
        "binary": bin.display().to_string(),
        "library_version": first.library_version,
        "settings": settings,
        "env": env,
        "nvm_write_ns": if peer.charged { cfg.write_delay_ns } else { 0 },
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

/// The Berkeley DB program of Fig. 8 (`crates/braid-rewind/peers/bdb_rollback_recovery.c`).
pub const RECOVERY_BINARY: &str = "bdb_rollback_recovery";

/// One line `bdb_rollback_recovery` prints: one operation count.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RecoveryLine {
    pub system: String,
    pub records: u64,
    pub operations: u64,
    pub rollback_ms: f64,
    pub recovery_ms: f64,
    pub recovered_transactions: usize,
    pub library_version: String,
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

/// Fig. 8 beside REWIND: run Berkeley DB's rollback and recovery program, if built in
/// `peers_dir`, for `cfg`'s records, operation counts and transaction length, charged the
/// NVM write latency. Returns its points (variant `berkeley-db`) and what to record of it.
pub fn run_recovery(peers_dir: &Path, cfg: &RecoveryConfig) -> (Vec<RecoveryPoint>, Value) {
    let bin = peers_dir.join(RECOVERY_BINARY);
    if !bin.is_file() {
        return (Vec::new(), NOT_BUILT.into());
    }
    match recovery_peer(&bin, cfg) {
        Ok(r) => r,
        Err(e) => {
            println!("berkeley-db recovery peer failed: {e:#}");
            (Vec::new(), json!({ "error": format!("{e:#}") }))
        }
    }
}

fn recovery_peer(bin: &Path, cfg: &RecoveryConfig) -> anyhow::Result<(Vec<RecoveryPoint>, Value)> {
    let dir = match &cfg.backing {
        Backing::Dir(d) => d.clone(),
        Backing::Dram => std::env::temp_dir(),
    };
    let ops: Vec<String> = cfg.operations.iter().map(u64::to_string).collect();
    let out = Command::new(bin)
        .arg(&dir)
        .arg(cfg.records.to_string())
        .arg(cfg.ops_per_tx.to_string())
        .arg(ops.join(","))
        .env(NVM_ENV, cfg.write_delay_ns.to_string())
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
    let mut points = Vec::new();
    let mut version = String::new();
    let mut settings = Map::new();
    let mut lines_charged = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.trim().is_empty() {
            continue;
        }
        let l: RecoveryLine =
            serde_json::from_str(line).map_err(|e| anyhow::anyhow!("parsing {line:?}: {e}"))?;
        if l.system != "berkeley-db" || l.records != cfg.records {
            anyhow::bail!("{} printed a line for another run: {line}", bin.display());
        }
        if !cfg.operations.contains(&l.operations) {
            anyhow::bail!("unasked operation count in {line:?}");
        }
        points.push(RecoveryPoint {
            variant: "berkeley-db".into(),
            operations: l.operations,
            rollback_ms: l.rollback_ms,
            recovery_ms: l.recovery_ms,
            recovered_transactions: l.recovered_transactions,
            undone_records: None,
            rollback_lines: l.settings.get("rollback_nvm_lines").and_then(Value::as_u64),
        });
        lines_charged.push(json!({
            "operations": l.operations,
            "rollback_nvm_lines": l.settings.get("rollback_nvm_lines"),
            "recovery_nvm_lines": l.settings.get("recovery_nvm_lines"),
        }));
        version = l.library_version;
        settings = l.settings;
    }
    if points.len() != cfg.operations.len() {
        anyhow::bail!(
            "{} printed {} lines for {} operation counts",
            bin.display(),
            points.len(),
            cfg.operations.len()
        );
    }
    for per_run in [
        "operations",
        "dir",
        "rollback_nvm_lines",
        "recovery_nvm_lines",
    ] {
        settings.remove(per_run);
    }
    let rec = json!({
        "binary": bin.display().to_string(),
        "library_version": version,
        "settings": settings,
        "env": [format!("{NVM_ENV}={}", cfg.write_delay_ns)],
        "nvm_write_ns": cfg.write_delay_ns,
        "lines_charged": lines_charged,
        "pmem": format!("emulated: stores in {} (a DRAM file system standing in for \
                         persistent memory, as braid-rewind's pools are)", dir.display()),
        "note": "the environment of the B+-tree mix's Berkeley DB; rollback: one \
                 transaction of N inserts and deletes aborted (DB_TXN->abort, timed); \
                 recovery: N operations in unfinished transactions of ops_per_tx, the log \
                 flushed and the process ended without closing (the crash), then the \
                 environment opened with DB_RECOVER (timed); every write and pwrite charged \
                 the NVM write latency per 64-byte line",
    });
    Ok((points, rec))
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
