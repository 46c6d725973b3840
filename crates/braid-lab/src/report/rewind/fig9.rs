//! REWIND Fig. 9 (§5.2, "Concurrency"): multi-threaded B+-tree logging, each thread performing
//! 100k operations (insert/delete pairs or lookups, 20%-80% lookups), the total duration
//! against the number of threads; from the `btree_threads` points of `braid bench rewind
//! --experiment all`, shown as operations per second over all threads.

use serde_json::Value;

use super::super::experiments::{Body, Experiment, cores, list, sweep};
use super::super::verdict::{Kind, Measured, Part, Verdict, times};
use super::{emulation, f, json};

/// The paper's largest thread count in Fig. 9. The text names none; its machine has four
/// cores and Shore-MT is run "beyond" four threads, so the axis goes past four: 8 is taken.
pub const PAPER_THREADS: usize = 8;

pub fn experiment() -> Experiment {
    Experiment {
        id: "rewind-fig9",
        title: "Multi-threaded B+-tree logging (REWIND Fig. 9)",
        paper: "Chatzistergiou et al., VLDB 2015",
        figure: "Fig. 9",
        claim: "with each thread performing 100k operations, the processing times of Stasis and \
                Berkeley DB grow linearly with the number of threads, Shore-MT scales better up \
                to four threads and then like Berkeley DB, and REWIND scales significantly better \
                than all three after three threads",
        scaled: format!(
            "Threads {} (the paper's axis, taken to end at {PAPER_THREADS}, capped at this \
             machine's cores), a B+-tree of 100k 32-byte records, 100k operations per thread, \
             thread t's lookup share spread over 20%-80% (50% alone). Concurrency as the paper \
             has it (Section 5.2: \"REWIND uses its own library-level concurrency mechanisms\"; \
             Section 4.7: fine-grained concurrency, thread safety of user data up to the \
             programmer): a reader-writer lock per leaf (striped), held shared by a lookup and \
             exclusively by an insert/delete pair (one REWIND Batch no-force transaction) until \
             its transaction returns, and a tree-wide lock taken exclusively only by a pair \
             whose insert splits a full leaf; a pair replaces one of its thread's keys by the \
             key's odd or even neighbour, so inserts land all over the tree. The \
             non-recoverable twin runs under the same locks. REWIND runs with one shared log \
             and with one log per thread, and again under one tree-wide lock (lookups shared, \
             pairs exclusive: the locking the paper gave Stasis and Berkeley DB) for \
             reference. Throughput is all threads' operations over the total duration (the \
             paper plots the duration). Stasis, Berkeley DB and Shore-MT do not run here. {}",
            list(&sweep(PAPER_THREADS)),
            emulation()
        ),
        body: Body::Rewind {
            plots: &["rewind-fig9"],
        },
        verdict,
    }
}

/// The points of `system`, by threads.
fn points<'a>(m: &'a Measured, system: &str) -> Vec<&'a Value> {
    let mut v: Vec<&Value> = json(m)
        .and_then(|j| j["btree_threads"]["points"].as_array())
        .map(|a| a.iter().filter(|p| p["system"] == system).collect())
        .unwrap_or_default();
    v.sort_by(|a, b| {
        f(a, "threads")
            .unwrap_or(0.0)
            .total_cmp(&f(b, "threads").unwrap_or(0.0))
    });
    v
}

/// A point as (threads, ops/s, seconds).
type Point = (f64, f64, f64);

/// The points of the fewest and most threads `system` ran with.
fn ends(m: &Measured, system: &str) -> Option<(Point, Point)> {
    let p = points(m, system);
    let get = |v: &Value| Some((f(v, "threads")?, f(v, "ops_per_sec")?, f(v, "seconds")?));
    Some((get(p.first()?)?, get(p.last()?)?))
}

/// Operations per second as "123.4 K ops/s".
fn ops(x: f64) -> String {
    format!("{} ops/s", super::super::verdict::k(x))
}

/// The suffix of the runs under one tree-wide lock.
const GLOBAL: &str = "-global-lock";

/// `system`'s rise in throughput from its fewest to its most threads, as text.
fn rise(m: &Measured, system: &str) -> Option<String> {
    let (a, b) = ends(m, system)?;
    Some(format!(
        "{system} {} to {} ({})",
        ops(a.1),
        ops(b.1),
        times(b.1 / a.1)
    ))
}

/// A direction part: `system`'s throughput rises from its fewest to its most threads.
fn rises(m: &Measured, claim: &str, system: &str, why: String) -> Option<Part> {
    let (lo, hi) = ends(m, system)?;
    if hi.0 <= lo.0 {
        return Some(Part::not_measured(
            claim,
            Kind::Direction,
            format!("only {:.0} thread(s) ran (the machine's cores)", lo.0),
        ));
    }
    let r = hi.1 / lo.1;
    Some(
        Part::above(claim, r)
            .measured(format!(
                "{} on {:.0} thread(s) ({:.3} s) to {} on {:.0} ({:.3} s for {} the work): {}",
                ops(lo.1),
                lo.0,
                lo.2,
                ops(hi.1),
                hi.0,
                hi.2,
                times(hi.0 / lo.0),
                times(r)
            ))
            .because(why),
    )
}

pub fn verdict(m: &Measured) -> Verdict {
    let others = |names: &[&str]| {
        names
            .iter()
            .filter_map(|s| rise(m, s))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let load = json(m)
        .and_then(|j| j["btree_threads"]["load_average"].as_array())
        .and_then(|a| Some((a.first()?.as_f64()?, a.get(1)?.as_f64()?)))
        .map_or_else(String::new, |(a, b)| {
            format!(
                "; the machine's 1-minute load average was {a:.1} before the runs and {b:.1} \
                 after, on {} cores (other processes' threads take the core a second thread \
                 would run on)",
                cores()
            )
        });
    let context = format!(
        "leaf locks, a tree-wide lock only to split: {}; under one tree-wide lock: {}{load}",
        others(&["nvm", "batch-per-thread-logs"]),
        others(&[
            &format!("batch{GLOBAL}"),
            &format!("batch-per-thread-logs{GLOBAL}")
        ])
    );
    let one = rises(
        m,
        "REWIND's processing time grows far less than the work as threads are added (each \
         thread adds 100k operations): on the paper's one B+-tree, with REWIND's \
         fine-grained concurrency, its throughput rises with threads",
        "batch",
        context.clone(),
    );
    let Some(one) = one else {
        return Verdict::missing("the multi-threaded B+-tree (btree_threads)");
    };
    let per_thread = rises(
        m,
        "with one log per thread REWIND's throughput rises with threads too",
        "batch-per-thread-logs",
        context,
    )
    .unwrap_or_else(|| {
        Part::not_measured(
            "with one log per thread REWIND's throughput rises with threads",
            Kind::Direction,
            "the per-thread-log runs are missing",
        )
    });
    let top = ends(m, "batch").map_or(0.0, |(_, hi)| hi.0);
    Verdict::of(vec![
        one,
        per_thread,
        Part::not_measured(
            "the processing times of Stasis and Berkeley DB grow linearly with threads; \
             Shore-MT scales better up to four threads, then like Berkeley DB",
            Kind::Magnitude,
            "Stasis and Shore-MT cannot be obtained here and braid's Berkeley DB peer program \
             runs the single-threaded mix only",
        ),
        Part::not_measured(
            "REWIND scales significantly better than Stasis, Berkeley DB and Shore-MT after \
             three threads",
            Kind::Crossover,
            format!(
                "none of the three runs here, and this machine's {} cores end the sweep at \
                 {top:.0} threads",
                cores()
            ),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::verdict::Level;

    /// Throughputs at 1 and 2 threads of REWIND with a shared log and with per-thread logs;
    /// the twin and the global-lock runs beside them.
    fn measured(one: [f64; 2], spread: [f64; 2]) -> Measured {
        let mut points = Vec::new();
        for (sys, tput) in [
            ("batch", one),
            ("nvm", [2.0 * one[0], 1.8 * one[1]]),
            ("batch-per-thread-logs", spread),
            ("batch-global-lock", [one[0], one[0]]),
        ] {
            for (t, ops) in [(1, tput[0]), (2, tput[1])] {
                points.push(serde_json::json!({
                    "system": sys, "threads": t, "ops_per_sec": ops,
                    "seconds": 100e3 * t as f64 / ops
                }));
            }
        }
        Measured {
            rewind: Some(serde_json::json!({"btree_threads": {"points": points}})),
            ..Measured::default()
        }
    }

    #[test]
    fn fig9_throughput_rising_with_threads_agrees_in_direction() {
        let v = verdict(&measured([200e3, 360e3], [200e3, 300e3]));
        // The peers never ran, so it cannot agree outright.
        assert_eq!(v.level(), Level::AgreesInDirection, "{v:?}");
        assert_eq!(v.tally(), (2, 4));
    }

    #[test]
    fn fig9_flat_throughput_differs_with_its_measured_reason() {
        let v = verdict(&measured([200e3, 201e3], [200e3, 300e3]));
        assert_eq!(v.level(), Level::Differs);
        let p = &v.parts()[0];
        assert!(
            !p.holds() && p.reason().contains("1.005x, within 1 +/- 0.03"),
            "{p:?}"
        );
        assert!(p.reason().contains("under one tree-wide lock"), "{p:?}");
        assert_eq!(verdict(&Measured::default()).level(), Level::NotMeasured);
    }
}
