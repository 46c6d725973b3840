//! REWIND (Chatzistergiou et al., VLDB 2015) Figs. 3-11 on braid-rewind: one `braid bench
//! rewind --experiment all` run (with Berkeley DB and PMDK beside it on the B+-tree mix when
//! `scripts/rewind-peers.sh` has built them) feeds all nine entries, and each verdict splits
//! the paper's claim for its figure into parts checked against that run. The skip-record
//! figures (Fig. 3's right half, Figs. 4 and 5) are in [`skip`], the others one module each
//! ([`fig3`], [`fig6`], [`fig7`], [`fig8`], [`fig9`], [`fig10`], [`fig11`]); the entries' list,
//! the text they share and the readers of the run's JSON here.

mod fig10;
mod fig11;
mod fig3;
mod fig6;
mod fig7;
mod fig8;
mod fig9;
mod skip;

use serde_json::Value;

use super::experiments::{Body, Experiment};
use super::verdict::{Measured, Verdict};

/// What every REWIND entry's pools are: the emulated persistent memory and its latency.
fn emulation() -> String {
    format!(
        "Pools in /dev/shm files (persistent memory emulated; flushes and fences are the CPU's \
         own) with the paper's NVM write latency, {} ns per persisted cache line (a busy-wait \
         after each line's flush, REWIND Section 5's 510 cycles), charged to the \
         non-recoverable twin too.",
        crate::rewind::NVM_WRITE_NS
    )
}

/// The single-threaded figures' scaling (Figs. 3, 7, 8 and 10).
fn scaled() -> String {
    format!(
        "One thread. {} Fig. 3's lower update intensities put a computation (a busy-wait of \
         (1 - i) / i times one persisted non-recoverable store) after each of 20,000 1-word \
         transactions (--quick 2,000); its skip records are Fig. 4's. Fig. 10 adds 150-600 ns \
         to every fence on top, and runs the mix on a tree with sorted leaves and random new \
         keys in 2,560-byte nodes (62 slots a leaf; 25,000 records), whose inserts and deletes \
         move slots and so log about 47 records each, more than the largest group of 32 (the \
         fingerprinted leaves of Fig. 7 log 3.1, fewer than the smallest group of 8, so that \
         every commit would close its group whatever the group size). Stasis and Shore-MT, the \
         paper's other comparators, are not obtainable here (neither is packaged for Debian, \
         PyPI or crates.io, and their modified sources were never published), so Fig. 7 sets \
         Berkeley DB and PMDK beside REWIND, and Fig. 8 Berkeley DB. Berkeley DB is charged \
         the same NVM write latency per 64-byte line of file data it writes (Section 5: the \
         paper ran it on PMFS, \"only charging latencies for user-data writes to PMFS\"); PMDK, \
         not one of the paper's systems, runs without it and is not compared.",
        emulation()
    )
}

/// The thread counts of Fig. 9's sweep on this machine, which `braid report` runs `braid bench
/// rewind` with.
pub fn fig9_threads() -> Vec<usize> {
    super::experiments::sweep(fig9::PAPER_THREADS)
}

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
        scaled: scaled(),
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
            "at full update intensity two-layer logging costs more than one-layer, and force more than \
             no-force (by 2-35% with one layer, 24-74% with two); the overhead falls steeply with update \
             intensity (at 10%: 1.5x one-layer, 8.5x two-layer no-force), and beyond about 600 skip \
             records two-layer logging overtakes one-layer",
            &[
                "rewind-word-tx",
                "rewind-fig3-intensity",
                "rewind-fig3-skip",
            ],
            fig3::fig3,
        ),
        skip::fig4(),
        skip::fig5(),
        fig6::experiment(),
        rewind(
            "rewind-fig7",
            "Fig. 7",
            "B+-tree logging against the non-recoverable tree and other systems (REWIND Fig. 7)",
            "REWIND stays close to the non-recoverable tree, Optimized improving Simple by 27% and Batch by \
             37%; at 100% updates REWIND beats Berkeley DB by 10.5x (Stasis 8.5x, Shore-MT 20.5x)",
            &["rewind-fig7", "rewind-fig7-peers"],
            fig7::fig7,
        ),
        rewind(
            "rewind-fig8",
            "Fig. 8",
            "Rollback and recovery time (REWIND Fig. 8)",
            "REWIND Batch rolls back a transaction 30x faster than Stasis, 12x than Berkeley DB and 4x \
             than Shore-MT, and recovers 400-4,000 transactions 20x, 14x and 8x faster; both plotted \
             against the operations undone (here Berkeley DB only: one transaction of N inserts \
             and deletes aborted, and N operations in unfinished transactions of 200 recovered \
             after the process is killed)",
            &[],
            fig8::fig8,
        ),
        fig9::experiment(),
        rewind(
            "rewind-fig10",
            "Fig. 10",
            "Fence sensitivity (REWIND Fig. 10)",
            "as fences get slower Optimized (a fence per record) slows down 5x while Batch, grouping \
             records under one fence, slows only 1.63x, 1.32x and 1.18x with groups of 8, 16 and 32",
            &["rewind-fig10"],
            fig10::fig10,
        ),
        fig11::experiment(),
    ]
}

fn json(m: &Measured) -> Option<&Value> {
    m.rewind.as_ref()
}

fn f(v: &Value, key: &str) -> Option<f64> {
    v.get(key)?.as_f64()
}

/// The points of the REWIND run's `section` whose variant is `variant`, each read by `row`
/// (a point it cannot read is left out), sorted by `key`.
fn variant_rows<T>(
    m: &Measured,
    section: &str,
    variant: &str,
    row: impl Fn(&Value) -> Option<T>,
    key: fn(&T) -> f64,
) -> Vec<T> {
    let mut v: Vec<T> = json(m)
        .and_then(|j| j[section]["points"].as_array())
        .map(|a| {
            a.iter()
                .filter(|p| p["variant"] == variant)
                .filter_map(&row)
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| key(a).total_cmp(&key(b)));
    v
}

/// Seconds as text.
fn secs(x: f64) -> String {
    format!("{x:.3} s")
}

/// The REWIND run's JSON the figures' tests build.
#[cfg(test)]
mod fixtures {
    use serde_json::Value;

    use crate::report::verdict::Measured;

    pub(super) fn with(json: Value) -> Measured {
        Measured {
            rewind: Some(json),
            ..Measured::default()
        }
    }
}
