//! Write the fuzz targets' generated seed inputs (`braid_testkit::seeds::all`) to
//! `<dir>/<target>/<name>`; `<dir>` defaults to the repository's `fuzz/corpus`.
//!
//! ```sh
//! cargo run -p braid-testkit --bin fuzz-seeds            # refresh fuzz/corpus
//! cargo run -p braid-testkit --bin fuzz-seeds -- /tmp/s  # somewhere else
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus"));
    let seeds = braid_testkit::seeds::all();
    for s in &seeds {
        let d = dir.join(s.target);
        let written =
            std::fs::create_dir_all(&d).and_then(|()| std::fs::write(d.join(&s.name), &s.bytes));
        if let Err(e) = written {
            eprintln!(
                "fuzz-seeds: cannot write {}: {e}",
                d.join(&s.name).display()
            );
            return ExitCode::FAILURE;
        }
    }
    println!(
        "fuzz-seeds: wrote {} seeds under {}",
        seeds.len(),
        dir.display()
    );
    ExitCode::SUCCESS
}
