//! The tables printed at the end: one per workload (the append workload one per record size),
//! a line per system and thread count, with its ratio to the best peer there; the reopen and
//! memory workloads a line per system.

use std::fmt::Write as _;

use super::{Report, Row};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// A record size for people: `128 B`, `4 KiB`.
pub fn size(bytes: usize) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

/// The report as text tables.
/// A table's title after a blank line, then how it was measured, if said.
fn heading(out: &mut String, title: &str, method: Option<&str>) {
    let _ = writeln!(out, "\n{title}");
    if let Some(m) = method {
        let _ = writeln!(out, "{m}");
    }
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for g in super::Group::all(&report.runs) {
        let title = g.title(report);
        let unit = if g.workload.starts_with("append") {
            "appends/s"
        } else {
            "txn/s"
        };
        heading(&mut out, &title, None);
        let _ = writeln!(
            out,
            "{:<28} {:>7} {:>10} {:>8} {:>19} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
            "system (variant)",
            "threads",
            unit,
            "vs best",
            "per thread min-max",
            "p50 us",
            "p99 us",
            "p99.9 us",
            "mean us",
            "syncs/s",
            "B/sync",
            "aborts/s"
        );
        let mut rows: Vec<&Row> = report.runs.iter().filter(|r| g.contains(r)).collect();
        rows.sort_by_key(|r| r.threads);
        for r in rows {
            if r.failed_runs > 0 {
                let _ = writeln!(
                    out,
                    "{:<28} {:>7} INVALID: {} of {} runs failed (see Failed runs)",
                    r.label(),
                    r.threads,
                    r.failed_runs,
                    r.repeats
                );
                continue;
            }
            let vs = match (r.valid, r.ratio_to_best_peer) {
                (false, _) => "invalid".to_string(),
                (true, Some(x)) => format!("{x:.2}x"),
                (true, None) => "-".to_string(),
            };
            let _ = writeln!(
                out,
                "{:<28} {:>7} {:>10.0} {:>8} {:>19} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>8} {:>8} \
                 {:>9}",
                r.label(),
                r.threads,
                r.per_s,
                vs,
                format!("{:.0}-{:.0}", r.thread_min_per_s, r.thread_max_per_s),
                r.p50_us,
                r.p99_us,
                r.p999_us,
                r.mean_us,
                opt(r.syncs_per_s, 0),
                opt(r.bytes_per_sync, 0),
                opt(r.aborts_per_s, 0),
            );
        }
        let _ = writeln!(
            out,
            "(per_s: operations finished inside the window over the window; syncs and bytes \
             counted in process for every system; vs best: over the best peer row, default or \
             tuned)"
        );
    }
    if !report.reopen.is_empty() {
        heading(
            &mut out,
            "Reopen after kill -9 (open until the first read answers)",
            report.reopen_method.as_deref(),
        );
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>7} {:>7} {:>17} {:>17} {:>10} {:>8}  child commits",
            "system",
            "txns",
            "threads",
            "load s",
            "log MB (alloc)",
            "data MB (alloc)",
            "reopen ms",
            "vs best"
        );
        let mb =
            |len: u64, alloc: u64| format!("{:.1} ({:.1})", len as f64 / 1e6, alloc as f64 / 1e6);
        for r in &report.reopen {
            let _ = writeln!(
                out,
                "{:<28} {:>9} {:>7} {:>7.1} {:>17} {:>17} {:>10.1} {:>8}  {}{}",
                r.system,
                r.txns,
                r.threads,
                r.load_seconds,
                mb(r.log_bytes, r.log_allocated_bytes),
                mb(r.data_bytes, r.data_allocated_bytes),
                r.reopen_ms,
                r.ratio_to_best_peer
                    .map_or_else(|| "-".into(), |x| format!("{x:.2}x")),
                if r.load_durable {
                    "durable: "
                } else {
                    "RELAXED (kill-safe, not power-safe): "
                },
                r.load_setting
            );
        }
    }
    if !report.kill.is_empty() {
        heading(
            &mut out,
            "kill -9 under load (full TPC-B), then reopen and check",
            report
                .workloads
                .iter()
                .find(|w| w.name == "kill")
                .map(|w| w.description.as_str()),
        );
        let _ = writeln!(
            out,
            "{:<28} {:>7} {:>6} {:>9} {:>9} {:>6} {:>11} {:>11}",
            "system", "threads", "rounds", "acked", "unacked+", "lost", "reopen ms", "max ms"
        );
        for k in &report.kill {
            let _ = writeln!(
                out,
                "{:<28} {:>7} {:>6} {:>9} {:>9} {:>6} {:>11.1} {:>11.1}{}",
                k.system,
                k.threads,
                k.rounds.len(),
                k.acked,
                k.committed_unacked,
                k.lost,
                k.reopen_ms,
                k.reopen_ms_max,
                if k.lost > 0 {
                    "  LOST ACKNOWLEDGED TRANSACTIONS"
                } else {
                    ""
                }
            );
        }
        let _ = writeln!(
            out,
            "(unacked+: transactions found committed whose acknowledgement the kill cut off)"
        );
    }
    if !report.memory.is_empty() {
        heading(
            &mut out,
            "Resident memory per row (VmRSS after the load - before the open)",
            report.memory_method.as_deref(),
        );
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>9} {:>12}  cache setting",
            "system", "rows", "B/row", "RSS MB"
        );
        for r in &report.memory {
            let _ = writeln!(
                out,
                "{:<28} {:>9} {:>9.1} {:>12.1}  {}{}",
                r.system,
                r.rows,
                r.bytes_per_row,
                r.rss_after_bytes as f64 / 1e6,
                if r.in_memory {
                    "IN-MEMORY, all rows resident: "
                } else {
                    "pages from disk: "
                },
                r.cache_setting
            );
        }
    }
    if !report.failures.is_empty() {
        let _ = writeln!(out, "\nFailed runs");
        for f in &report.failures {
            let _ = writeln!(
                out,
                "{} {} ({}) threads={} record_bytes={}{}: {}",
                f.workload,
                f.system,
                f.variant,
                f.threads,
                f.record_bytes.map_or_else(|| "-".into(), |b| b.to_string()),
                f.branches
                    .map_or_else(String::new, |b| format!(" branches={b}")),
                f.error
            );
        }
    }
    let m = &report.machine;
    let _ = writeln!(
        out,
        "\n{} cores ({}), kernel {}, {} on {} at {}, braid {}; {} s per run, median of {} runs",
        m.cores,
        m.cpu,
        m.kernel,
        m.fs_type,
        m.fs_source,
        m.dir,
        m.git_rev,
        report.seconds_per_run,
        report.repeat
    );
    out
}
