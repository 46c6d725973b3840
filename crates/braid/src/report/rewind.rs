//! REWIND (Chatzistergiou et al., VLDB 2015) Figs. 3, 7, 8 and 10 on braid-rewind: one
//! `braid bench rewind --experiment all` run (with Berkeley DB and PMDK beside it on the B+-tree
//! mix when `scripts/rewind-peers.sh` has built them) feeds all four entries.

use serde_json::Value;

use super::experiments::{Body, Experiment};
use super::verdict::{Measured, Verdict, times};

const SCALED: &str = "One thread, pools in /dev/shm files (persistent memory emulated; flushes and fences \
    are the CPU's own), no added NVM latency; Fig. 10 adds 150-600 ns to every fence. Stasis and Shore-MT, the paper's other \
    comparators, are not obtainable here (neither is packaged for Debian, PyPI or crates.io, and their \
    modified sources were never published), so Fig. 7 sets Berkeley DB and PMDK beside REWIND.";

fn rewind(
    id: &'static str,
    figure: &'static str,
    title: &'static str,
    claim: &'static str,
    plots: &'static [&'static str],
    verdict: fn(&Measured) -> Verdict,
) -> Experiment {
    Experiment {
        id,
        title,
        paper: "Chatzistergiou et al., VLDB 2015",
        figure,
        claim,
        scaled: SCALED.into(),
        body: Body::Rewind { plots },
        verdict,
    }
}

pub fn all() -> Vec<Experiment> {
    vec![
        rewind(
            "rewind-fig3",
            "Fig. 3",
            "Logging overhead of 1-word transactions (REWIND Fig. 3)",
            "at full update intensity one-layer logging costs far less than two-layer logging, and the \
             no-force policy less than force; the Optimized and Batch layouts cut Simple's cost",
            &["rewind-word-tx"],
            fig3,
        ),
        rewind(
            "rewind-fig7",
            "Fig. 7",
            "B+-tree logging against the non-recoverable tree and other systems (REWIND Fig. 7)",
            "REWIND stays close to the non-recoverable tree, Optimized improving Simple by 27% and Batch by \
             37%; at 100% updates REWIND beats Berkeley DB by 10.5x (Stasis 8.5x, Shore-MT 20.5x)",
            &["rewind-fig7", "rewind-fig7-peers"],
            fig7,
        ),
        rewind(
            "rewind-fig8",
            "Fig. 8",
            "Rollback and recovery time (REWIND Fig. 8)",
            "rollback and recovery time grow linearly with the operations to undo, Batch the fastest",
            &[],
            fig8,
        ),
        rewind(
            "rewind-fig10",
            "Fig. 10",
            "Fence sensitivity (REWIND Fig. 10)",
            "as fences get slower Optimized (a fence per record) slows down 5x while Batch, grouping \
             records under one fence, slows only 1.63x, 1.32x and 1.18x with groups of 8, 16 and 32",
            &["rewind-fig10"],
            fig10,
        ),
    ]
}

fn json(m: &Measured) -> Option<&Value> {
    m.rewind.as_ref()
}

fn f(v: &Value, key: &str) -> Option<f64> {
    v.get(key)?.as_f64()
}

fn fig3(m: &Measured) -> Verdict {
    let Some(rows) = json(m).and_then(|j| j["word_tx"]["rows"].as_array()) else {
        return Verdict::missing("word_tx");
    };
    let slow = |label: &str| {
        rows.iter()
            .find(|r| r["label"] == label)
            .and_then(|r| Some((f(r, "slowdown_vs_raw")?, f(r, "fences_per_tx")?)))
    };
    let (Some(s1), Some(b1), Some(o1), Some(o2), Some(b1f)) = (
        slow("simple-1l-nf"),
        slow("batch-1l-nf"),
        slow("optimized-1l-nf"),
        slow("optimized-2l-nf"),
        slow("batch-1l-f"),
    ) else {
        return Verdict::missing("a word-tx configuration");
    };
    let result = format!(
        "over raw stores, no-force: Simple 1L {:.1}x ({:.1} fences per transaction), Optimized 1L \
         {:.1}x, Batch 1L {:.1}x ({:.1} fences), Optimized 2L {:.1}x; Batch 1L with force {:.1}x.",
        s1.0, s1.1, o1.0, b1.0, b1.1, o2.0, b1f.0
    );
    let agrees = b1.0 < s1.0 && o1.0 < o2.0 && b1.0 <= b1f.0;
    Verdict::new(
        result,
        agrees,
        "the ordering of the configurations is not the paper's (see the numbers)",
    )
}

/// The B+-tree mix point of `system` at update fraction `u`.
fn mix<'a>(m: &'a Measured, system: &str, u: f64) -> Option<&'a Value> {
    json(m)?["btree_mix"]["points"]
        .as_array()?
        .iter()
        .find(|p| {
            p["system"] == system && f(p, "update_fraction").is_some_and(|x| (x - u).abs() < 1e-9)
        })
}

fn fig7(m: &Measured) -> Verdict {
    let secs = |s: &str| mix(m, s, 1.0).and_then(|p| f(p, "seconds"));
    let (Some(simple), Some(batch), Some(opt), Some(nvm)) = (
        secs("simple"),
        secs("batch"),
        secs("optimized"),
        secs("nvm"),
    ) else {
        return Verdict::missing("the B+-tree mix at 100% updates");
    };
    let mut result = format!(
        "at 100% updates Batch takes {} the non-recoverable tree's time, Optimized improves Simple by \
         {:.0}% and Batch by {:.0}%",
        times(batch / nvm),
        (1.0 - opt / simple) * 100.0,
        (1.0 - batch / simple) * 100.0
    );
    let bdb = secs("berkeley-db");
    let pmdk = secs("pmdk");
    match (bdb, pmdk) {
        (Some(b), Some(p)) => result.push_str(&format!(
            "; Berkeley DB takes {} Batch's time, PMDK {}",
            times(b / batch),
            times(p / batch)
        )),
        _ => result.push_str(
            "; Berkeley DB and PMDK were not built (scripts/rewind-peers.sh), so no peer is compared",
        ),
    }
    result.push('.');
    let mut reasons = Vec::new();
    if batch > simple {
        reasons.push("Batch is slower than Simple here".to_string());
    }
    match bdb {
        Some(b) if b / batch < 10.5 / 2.0 => reasons.push(format!(
            "Berkeley DB is {} REWIND here, not 10.5x: its log lives on /dev/shm with no NVM latency \
             charged, while the paper charged it on PMFS",
            times(b / batch)
        )),
        Some(_) => {}
        None => reasons.push("the peers were not built".into()),
    }
    let agrees = reasons.is_empty();
    Verdict::new(result, agrees, reasons.join("; "))
}

fn fig8(m: &Measured) -> Verdict {
    let Some(points) = json(m).and_then(|j| j["recovery"]["points"].as_array()) else {
        return Verdict::missing("recovery");
    };
    let series = |v: &str| -> Vec<(f64, f64, f64)> {
        points
            .iter()
            .filter(|p| p["variant"] == v)
            .filter_map(|p| {
                Some((
                    f(p, "operations")?,
                    f(p, "rollback_ms")?,
                    f(p, "recovery_ms")?,
                ))
            })
            .collect()
    };
    let (batch, simple) = (series("batch"), series("simple"));
    let (Some(b0), Some(b1), Some(s1)) = (batch.first(), batch.last(), simple.last()) else {
        return Verdict::missing("a recovery variant");
    };
    let ops = b1.0 / b0.0.max(1.0);
    let grow = b1.2 / b0.2.max(1e-9);
    let result = format!(
        "Batch: {:.0} operations roll back in {:.1} ms and recover in {:.1} ms, {:.0} in {:.1} / {:.1} ms \
         ({} the time for {} the operations); Simple recovers {:.0} operations in {:.1} ms.",
        b0.0,
        b0.1,
        b0.2,
        b1.0,
        b1.1,
        b1.2,
        times(grow),
        times(ops),
        s1.0,
        s1.2
    );
    let linear = (ops / 2.0..=ops * 2.0).contains(&grow);
    let agrees = linear && b1.2 <= s1.2;
    let because = if !linear {
        format!(
            "Batch's recovery time grows {} for {} the operations: per operation it rises from {:.2} \
             to {:.2} us as the undo log grows",
            times(grow),
            times(ops),
            b0.2 * 1e3 / b0.0.max(1.0),
            b1.2 * 1e3 / b1.0.max(1.0)
        )
    } else {
        format!(
            "Simple recovers faster than Batch ({:.1} against {:.1} ms)",
            s1.2, b1.2
        )
    };
    Verdict::new(result, agrees, because)
}

fn fig10(m: &Measured) -> Verdict {
    let Some(points) = json(m).and_then(|j| j["fence"]["points"].as_array()) else {
        return Verdict::missing("fence");
    };
    let max_delay = points
        .iter()
        .filter_map(|p| f(p, "delay_ns"))
        .fold(0.0, f64::max);
    let slow = |s: &str| {
        points
            .iter()
            .find(|p| p["system"] == s && f(p, "delay_ns") == Some(max_delay))
            .and_then(|p| f(p, "slowdown"))
    };
    let (Some(o), Some(b8), Some(b16), Some(b32)) = (
        slow("optimized"),
        slow("batch-8"),
        slow("batch-16"),
        slow("batch-32"),
    ) else {
        return Verdict::missing("a fence configuration");
    };
    let result = format!(
        "at {max_delay:.0} ns per fence: Optimized slows {}, Batch {} / {} / {} with groups of 8 / 16 / 32.",
        times(o),
        times(b8),
        times(b16),
        times(b32)
    );
    let agrees = o > b8.max(b16).max(b32);
    Verdict::new(
        result,
        agrees,
        format!(
            "a Batch group of records per fence slows down as much as Optimized's fence per record \
             ({} against {}): the emulated latency is paid per fence, so fewer fences should cost less",
            times(b8.max(b16).max(b32)),
            times(o)
        ),
    )
}
