//! `api-listing`: what each braid library crate makes reachable to its users, listed from
//! rustdoc's JSON (`docs/api/<crate>.txt`) and checked in CI, so the public API grows only by a
//! decision recorded with the code. rustdoc's JSON output is unstable; it is built with the
//! stable toolchain under `RUSTC_BOOTSTRAP=1` in a target directory of its own
//! (`<target>/api-json`), and read as untyped JSON so a newer format degrades a line
//! (rendered `_`) rather than the build. The crates are documented without the `testing`
//! feature: the listing is what a user who depends on the crate holds.
//!
//! ```text
//! cargo run -p api-listing            write the listings, print each crate's counts
//! cargo run -p api-listing -- --check fail when a listing differs from the code
//! ```
//! (`scripts/api.sh` runs it.)

mod render;
mod walk;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The library crates, each listed in `docs/api/<name>.txt`. Not listed: `braid-lab`, the
/// paper workbench behind the command (not published; its API is the command's subcommands and
/// flags, which the command's integration tests hold), and the command and tools themselves.
const CRATES: [&str; 7] = [
    "braid-wal",
    "braid-engine",
    "braid-pmem",
    "braid-rewind",
    "braid-nats",
    "braid-workloads",
    "braid-testkit",
];

fn main() -> anyhow::Result<()> {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => bail!("unknown argument {other:?}: use --check or nothing"),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("api-json");
    let mut differ = Vec::new();
    for krate in CRATES {
        let doc = rustdoc_json(&root, &target, krate)?;
        let l = walk::listing(&doc).with_context(|| format!("reading {krate}'s rustdoc JSON"))?;
        let mut text = format!(
            "# {krate}: {} items reachable by its users, {} members (fields, variants, \
             methods, associated items).\n# Written by `scripts/api.sh` from rustdoc's JSON; \
             a change is committed with the code that makes it.\n",
            l.items, l.members
        );
        for line in &l.lines {
            text.push_str(line);
            text.push('\n');
        }
        let file = root.join("docs/api").join(format!("{krate}.txt"));
        if check {
            let old = std::fs::read_to_string(&file).unwrap_or_default();
            if old != text {
                report_difference(krate, &old, &text);
                differ.push(krate);
            }
        } else {
            std::fs::write(&file, &text).with_context(|| format!("writing {}", file.display()))?;
        }
        println!(
            "{krate:<16} {:>4} items reachable, {:>4} members",
            l.items, l.members
        );
    }
    if !differ.is_empty() {
        bail!(
            "the public API of {} differs from docs/api: if the change is meant, run \
             scripts/api.sh and commit the listings",
            differ.join(", ")
        );
    }
    Ok(())
}

/// Build `krate`'s rustdoc JSON under `target` and parse it.
fn rustdoc_json(root: &Path, target: &Path, krate: &str) -> anyhow::Result<serde_json::Value> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTDOCFLAGS")
        .args(["rustdoc", "-q", "-p", krate, "--lib", "--"])
        .args(["-Z", "unstable-options", "--output-format", "json"])
        .status()
        .with_context(|| format!("running cargo rustdoc for {krate}"))?;
    if !status.success() {
        bail!("cargo rustdoc for {krate} failed ({status})");
    }
    let json = target
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")));
    let bytes = std::fs::read(&json).with_context(|| format!("reading {}", json.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", json.display()))
}

/// The lines only one side has (both sides are sorted listings, so this reads as a diff).
fn report_difference(krate: &str, old: &str, new: &str) {
    let old_lines: std::collections::HashSet<&str> = old.lines().collect();
    let new_lines: std::collections::HashSet<&str> = new.lines().collect();
    eprintln!("api: the public API of {krate} differs from docs/api/{krate}.txt:");
    for l in old.lines().filter(|l| !new_lines.contains(l)) {
        eprintln!("- {l}");
    }
    for l in new.lines().filter(|l| !old_lines.contains(l)) {
        eprintln!("+ {l}");
    }
}
