//! Writing results: JSON files, and a description of the machine they were measured on.

use std::path::Path;

use anyhow::Context as _;

/// Write `value` as pretty JSON, creating parent directories.
pub fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    write_text(path, &serde_json::to_string_pretty(value)?)
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
    let rev = std::process::Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "rev-parse",
            "--short",
            "HEAD",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    serde_json::json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu": cpu,
        "flush": format!("{:?}", braid_pmem::FlushKind::detect()),
        "git": rev,
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
