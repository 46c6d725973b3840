//! Helpers shared by the `braid` command's end-to-end tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

/// The `braid` binary under test.
pub fn braid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_braid"))
}

/// Run `cmd`, assert it succeeded (printing both streams if not), and return its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "failed: {cmd:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}
