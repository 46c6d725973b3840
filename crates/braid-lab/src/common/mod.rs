//! Options shared by the `braid` subcommands: workload parameters
//! ([`workload`](mod@workload)), log device and scheme settings and how they become engine
//! options ([`engine`]), scheme names and run directories (here).

mod engine;
mod workload;

use std::path::{Path, PathBuf};

pub use engine::*;
pub use workload::*;

/// A fresh directory for one run: under `base` if given, else a temporary directory in
/// /dev/shm (pmem, null) or /var/tmp (file, so fdatasync reaches a real disk).
pub fn run_dir(base: Option<&PathBuf>, device: DeviceKind, label: &str) -> std::io::Result<RunDir> {
    let parent = match base {
        Some(b) => b.clone(),
        None => match device {
            DeviceKind::File => PathBuf::from("/var/tmp"),
            _ => PathBuf::from("/dev/shm"),
        },
    };
    std::fs::create_dir_all(&parent)?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("braid-{label}-"))
        .tempdir_in(parent)?;
    Ok(RunDir { dir: Some(dir) })
}

/// A run directory (see [`run_dir`]), removed when dropped together with every database in it
/// and what those keep outside it (an `nvdisk` log in /dev/shm; see
/// [`braid_engine::Db::destroy`]), unless it is kept.
#[derive(Debug)]
pub struct RunDir {
    dir: Option<tempfile::TempDir>,
}

impl RunDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Keep the directory and everything in it; its path.
    pub fn keep(mut self) -> PathBuf {
        self.dir.take().map(|d| d.keep()).unwrap_or_default()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            remove_databases_in(d.path());
        }
    }
}

/// Remove every database directly below `dir` with what it keeps outside it, then `dir`
/// itself. Best effort: what cannot be removed (a database still open) is left.
pub fn remove_databases_in(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.path().join("braid.json").exists() {
                let _ = braid_engine::Db::destroy(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The name of the no-logging baseline, the ratio base of every figure.
pub const NONE: &str = braid_wal::scheme::NONE;

/// A registered scheme's name, given with or without surrounding blanks (a clap value parser,
/// also of each item of a comma-separated `--scheme` list).
pub fn scheme_name(s: &str) -> Result<&'static str, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("--scheme needs a scheme name".to_string());
    }
    braid_wal::scheme::names().find(|n| *n == s).ok_or_else(|| {
        format!(
            "unknown scheme {s:?}; known schemes: {}",
            braid_wal::scheme::names().collect::<Vec<_>>().join(", ")
        )
    })
}

/// The schemes a `--scheme` list names, in the order given; every registered scheme without
/// one.
pub fn scheme_names(list: Option<&[&'static str]>) -> Vec<&'static str> {
    match list {
        Some(l) => l.to_vec(),
        None => braid_wal::scheme::names().collect(),
    }
}

/// One item of a comma-separated number list, blanks around it allowed (a clap value parser).
pub fn trimmed<T: std::str::FromStr>(s: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    s.trim().parse::<T>().map_err(|e| e.to_string())
}

/// A log device's name, in any case, blanks around it allowed (a clap value parser, also of
/// each item of a comma-separated `--device` list).
pub fn device_kind(s: &str) -> Result<DeviceKind, String> {
    <DeviceKind as clap::ValueEnum>::from_str(s.trim(), true)
}
