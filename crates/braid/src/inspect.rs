//! `braid inspect`: the streams, segments and decoded records of a database's log, without
//! opening (or recovering) the database, and where it keeps files outside its directory. It
//! reads a copy of the files in memory, as the engine's read-only open does (log files through
//! braid-wal's [`SnapshotFs`], persistent-memory regions through [`Region::snapshot`]), so it
//! changes no byte and takes no lock: a database that another process is writing can be
//! inspected.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;

use braid_engine::Meta;
use braid_pmem::Region;
use braid_wal::device::Device;
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::device::{PmemDevice, PmemDeviceConfig};
use braid_wal::fs::{Fs, SnapshotFs};
use braid_wal::payload::{RedoOp, decode_command, decode_redo};
use braid_wal::record::Kind;
use braid_wal::scan::{ScanMode, Scanner};
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// The database directory.
    #[arg(long)]
    pub dir: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Most records to print per stream.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

/// A private in-memory copy of every file below `roots` but the persistent-memory regions
/// (`*.region`), which [`devices`] copies itself with [`Region::snapshot`].
fn snapshot(roots: &[PathBuf]) -> anyhow::Result<Arc<dyn Fs>> {
    let fs = SnapshotFs::new();
    let is_region = |p: &std::path::Path| p.extension().is_some_and(|e| e == "region");
    for root in roots {
        fs.copy_tree(root, &is_region)
            .with_context(|| format!("copying {}", root.display()))?;
    }
    Ok(Arc::new(fs))
}

fn devices(
    dir: &std::path::Path,
    meta: &Meta,
    fs: &Arc<dyn Fs>,
) -> anyhow::Result<Vec<Arc<dyn Device>>> {
    let mut out: Vec<Arc<dyn Device>> = Vec::new();
    for i in 0..meta.streams {
        let id = i as u32;
        match meta.device.as_str() {
            "file" => {
                let log = meta
                    .outside
                    .first()
                    .map_or_else(|| dir.join("log"), |p| p.join("log"));
                let mut cfg = FileDeviceConfig::new(log, id);
                if let Some(s) = meta.segment_size {
                    cfg.segment_size = s;
                }
                out.push(Arc::new(FileDevice::open(fs.clone(), cfg)?));
            }
            "pmem" => {
                let path = dir.join("pmem").join(format!("stream-{i:03}.region"));
                let region = Region::snapshot(&path, None)?;
                let destage = fs
                    .exists(&dir.join("destage"))
                    .then(|| FileDeviceConfig::new(dir.join("destage"), id));
                let mut cfg = PmemDeviceConfig::new(id);
                cfg.destage = destage;
                out.push(Arc::new(PmemDevice::open_with_fs(region, cfg, fs.clone())?));
            }
            _ => {}
        }
    }
    Ok(out)
}

pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let meta = Meta::read(&args.dir)?;
    let writer = braid_engine::Db::writer_pid(&args.dir);
    let mut roots = vec![args.dir.clone()];
    roots.extend(meta.outside.iter().cloned());
    let fs = snapshot(&roots)?;
    let devs = devices(&args.dir, &meta, &fs)?;
    let mut streams = Vec::new();
    for (i, d) in devs.iter().enumerate() {
        let info = d.info();
        let mut sc = Scanner::new(&**d, ScanMode::Salvage);
        let mut records = Vec::new();
        let (mut n, mut bytes) = (0u64, 0u64);
        let mut kinds = std::collections::BTreeMap::<String, u64>::new();
        loop {
            let rec = match sc.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => return Err(e.into()),
            };
            n += 1;
            bytes += rec.padded_len() as u64;
            *kinds.entry(format!("{:?}", rec.header.kind)).or_default() += 1;
            if records.len() < args.limit {
                let summary = match rec.header.kind {
                    Kind::Redo => decode_redo(rec.payload)
                        .map(|op| match op {
                            Ok(RedoOp::Update {
                                table,
                                key,
                                columns,
                                data,
                            }) => {
                                format!("update t{table} k{key} cols {columns:#x} {}B", data.len())
                            }
                            Ok(RedoOp::Insert { table, key, data }) => {
                                format!("insert t{table} k{key} {}B", data.len())
                            }
                            Ok(RedoOp::Delete { table, key }) => format!("delete t{table} k{key}"),
                            Err(e) => format!("bad op: {e}"),
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                    Kind::Command => match decode_command(rec.payload) {
                        Ok((p, params)) => {
                            format!("call procedure {p} with {} parameter bytes", params.len())
                        }
                        Err(e) => format!("bad command: {e}"),
                    },
                    _ => String::new(),
                };
                records.push(serde_json::json!({
                    "lsn": rec.header.lsn,
                    "len": rec.padded_len(),
                    "kind": format!("{:?}", rec.header.kind),
                    "txn": rec.header.txn,
                    "commit": rec.commits(),
                    "stamp": format!("{:?}", rec.stamp.to_stamp()),
                    "payload": summary,
                }));
            }
        }
        let end = sc.end().cloned();
        streams.push(serde_json::json!({
            "stream": i,
            "device": info.kind,
            "location": info.location,
            "start": d.start(),
            "end": end.as_ref().map(|e| e.end),
            "end_kind": end.as_ref().map(|e| format!("{:?}", e.kind)),
            "end_text": end.as_ref().map(|e| e.to_string()),
            "trimmed_at": end.as_ref().and_then(|e| e.trimmed_at.clone()).map(|(f, o)| format!("{f} offset {o}")),
            "trimmed": end.as_ref().map(|e| e.trimmed),
            "records": n,
            "bytes": bytes,
            "kinds": kinds,
            "first_records": records,
        }));
    }
    let out = serde_json::json!({
        "dir": args.dir.display().to_string(),
        "outside": meta.outside,
        "writer_pid": writer,
        "meta": meta,
        "streams": streams,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "{}: scheme {}, logging {}, {} streams on {}",
        args.dir.display(),
        meta.scheme,
        meta.logging,
        meta.streams,
        meta.device
    );
    match writer {
        Some(pid) => println!(
            "open for writing by process {pid}: what follows is a copy of what was durable when read"
        ),
        None => println!("not open for writing"),
    }
    for p in &meta.outside {
        println!("outside the directory: {}", p.display());
    }
    for s in &streams {
        println!(
            "stream {}: {} at {}, LSN {} .. {} ({}), {} records, {} bytes, kinds {}",
            s["stream"],
            s["device"],
            s["location"],
            s["start"],
            s["end"],
            s["end_kind"],
            s["records"],
            s["bytes"],
            s["kinds"]
        );
        if let Some(d) = s["end_text"].as_str() {
            println!("  {d}");
        }
        for r in s["first_records"].as_array().into_iter().flatten() {
            println!(
                "  lsn {:>10} len {:>5} {:<8} txn {:>8} {} {}",
                r["lsn"],
                r["len"],
                r["kind"].as_str().unwrap_or(""),
                r["txn"],
                r["stamp"].as_str().unwrap_or(""),
                r["payload"].as_str().unwrap_or("")
            );
        }
    }
    Ok(())
}
