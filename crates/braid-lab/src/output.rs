//! Writing results: JSON files, and a description of the machine they were measured on.

use std::path::Path;

use anyhow::Context as _;

/// Write `value` as pretty JSON, creating parent directories.
pub fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    write_text(path, &serde_json::to_string_pretty(value)?)
}

/// The git revision this process runs from and whether tracked files outside `results/`
/// differed from it, asked once, the first time anything asks: `main` asks before any
/// command writes a file, so a command's own outputs (tracked results it rewrites) never make
/// its tree look dirty.
pub fn revision() -> &'static (String, Option<bool>) {
    static REV: std::sync::OnceLock<(String, Option<bool>)> = std::sync::OnceLock::new();
    REV.get_or_init(|| {
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(["-C", env!("CARGO_MANIFEST_DIR")])
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let rev = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_default();
        // Tracked files changed since that revision: the figures are not the revision's alone.
        // `results/` holds only what the commands write (a report's directory is often
        // cleared before it is regenerated), never anything a measurement reads, so its
        // changes do not count.
        let dirty = git(&[
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ":/",
            ":(top,exclude)results",
        ])
        .map(|s| !s.is_empty());
        (rev, dirty)
    })
}

/// Cores, CPU model, persistence instructions and the git revision, for result files.
pub fn machine() -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let (rev, dirty) = revision().clone();
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mem_gib = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map(|kb| (kb / (1 << 20) as f64 * 10.0).round() / 10.0);
    serde_json::json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu": cpu,
        "memory_gib": mem_gib,
        "host": read("/proc/sys/kernel/hostname"),
        "kernel": read("/proc/sys/kernel/osrelease"),
        "flush": format!("{:?}", braid_pmem::FlushKind::detect()),
        // The LV instruction sets this CPU runs (Taurus's `--lv-simd`), detected at run time.
        "lv_simd": braid_wal::scheme::LvSimd::available()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
        // The process's allocator and whether it asked for 2 MiB pages (`braid_pmem::heap`):
        // it changes every in-memory figure.
        "heap": braid_pmem::heap::described(),
        "git": rev,
        "git_dirty": dirty,
    })
}

/// Write a text file, creating parent directories.
pub fn write_text(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).with_context(|| format!("{}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("{}", path.display()))
}
