//! What the results were measured on: cores, kernel, the file system type of the data
//! directory (from `/proc/self/mountinfo`), and the git revision of the braid tree.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

/// The machine and tree a run was measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs this process may use.
    pub cores: usize,
    /// `uname -r`.
    pub kernel: String,
    /// CPU model name.
    pub cpu: String,
    /// File system type of the data directory (ext4, xfs, ...).
    pub fs_type: String,
    /// Device or source the data directory's file system is mounted from.
    pub fs_source: String,
    /// The data directory.
    pub dir: String,
    /// `git describe --always --dirty` of the braid tree.
    pub git_rev: String,
}

impl Machine {
    /// Describe this machine, with `dir` the (existing) data directory.
    pub fn probe(dir: &Path) -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let kernel = read_trim("/proc/sys/kernel/osrelease");
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let (fs_type, fs_source) = fs_of(dir);
        Machine {
            cores,
            kernel,
            cpu,
            fs_type,
            fs_source,
            dir: dir.display().to_string(),
            git_rev: git_rev(),
        }
    }
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The file system type and source of the mount holding `dir`: the mount point that is the
/// longest prefix of its canonical path.
pub fn fs_of(dir: &Path) -> (String, String) {
    let unknown = || ("unknown".to_string(), "unknown".to_string());
    let Ok(dir) = dir.canonicalize() else {
        return unknown();
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return unknown();
    };
    let mut best: Option<(usize, String, String)> = None;
    for line in info.lines() {
        // id parent major:minor root mount-point options [optional...] - type source super
        let mut halves = line.splitn(2, " - ");
        let (Some(left), Some(right)) = (halves.next(), halves.next()) else {
            continue;
        };
        let Some(mount) = left.split(' ').nth(4) else {
            continue;
        };
        let mount = mount.replace("\\040", " ");
        if !dir.starts_with(&mount) {
            continue;
        }
        let mut r = right.split(' ');
        let (Some(fs), Some(src)) = (r.next(), r.next()) else {
            continue;
        };
        if best.as_ref().is_none_or(|b| mount.len() >= b.0) {
            best = Some((mount.len(), fs.to_string(), src.to_string()));
        }
    }
    best.map_or_else(unknown, |(_, fs, src)| (fs, src))
}

fn git_rev() -> String {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    Command::new("git")
        .args(["-C", repo, "describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_file_system_has_a_type() {
        let (fs, src) = fs_of(Path::new("/"));
        assert_ne!(fs, "unknown");
        assert_ne!(src, "unknown");
    }
}
