//! braid's fdatasyncs are counted by the same interposed C functions as every peer's (rustix
//! built with its libc backend in this workspace): short account-update and TPC-B runs of
//! braid-engine report interposed syncs, and they agree with braid's own count of log
//! flushes. The rows carry the fields of the JSON contract.

use anyhow::{Context as _, Result};

mod common;
use common::{num, run_peers, scratch};

#[test]
fn braid_syncs_are_counted_by_the_interposer() -> Result<()> {
    let tmp = scratch("syncs")?;
    let (_, json) = run_peers(
        &tmp,
        &[
            "--workloads",
            "tpcb,account-update",
            "--branches",
            "single",
            "--accounts-per-branch",
            "1000",
            "--systems",
            "braid-engine serial",
            "--variants",
            "default",
            "--threads",
            "1",
            "--seconds",
            "0.5",
            "--repeat",
            "1",
            "--accounts",
            "1000",
        ],
    )?;

    let runs = json["runs"].as_array().context("runs")?;
    assert_eq!(runs.len(), 2, "{json}");
    assert_eq!(runs[0]["workload"], "tpcb");
    assert_eq!(runs[0]["branches"], 1);
    assert_eq!(runs[1]["workload"], "account-update");
    assert!(runs[1]["branches"].is_null(), "{json}");
    for r in runs {
        assert_eq!(r["system"], "braid-engine serial");
        assert_eq!(r["variant"], "default");
        assert_eq!(r["valid"], true);
        // One thread, each commit waited for: one flush per transaction, each an fdatasync.
        let syncs = num(r, "syncs_per_s")?;
        let own = num(r, "own_flushes_per_s")?;
        assert!(own > 0.0, "{r}");
        assert!(
            syncs >= 0.95 * own && syncs <= 1.25 * own + 20.0,
            "interposed {syncs}/s against braid's own {own}/s: {r}"
        );
        // Every commit syncs: about one sync per transaction.
        let per_s = num(r, "per_s")?;
        assert!(
            syncs >= 0.9 * per_s,
            "{syncs} syncs/s for {per_s} txn/s: {r}"
        );
        assert!(num(r, "bytes_per_sync")? > 0.0, "{r}");
        for field in [
            "p50_us",
            "p99_us",
            "mean_us",
            "thread_min_per_s",
            "thread_max_per_s",
            "aborts_per_s",
            "drain_s",
        ] {
            assert!(num(r, field)? >= 0.0, "{field}: {r}");
        }
        assert_eq!(num(r, "thread_min_per_s")?, num(r, "thread_max_per_s")?);
        assert_eq!(r["threads"], 1);
    }
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}
