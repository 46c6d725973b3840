//! The verdicts of the Taurus figures: each splits the paper's claim (§5.2-5.6) into parts
//! and checks every part against the medians measured at 2 worker threads (and 2 recovery
//! threads); a part that does not hold names its measured cause: ratios, the scalability
//! proxies (shared read-modify-writes per commit), transactions per flush, device utilisation
//! and thread counts.
//!
//! One module per figure: [`fig5`](mod@fig5), [`fig6`](mod@fig6) and [`fig7`](mod@fig7),
//! [`fig8`](mod@fig8) (NVMe-class devices), [`fig9`](mod@fig9) and [`fig10`](mod@fig10)
//! (bandwidth-limited disks), [`fig13`](mod@fig13) (contention); the helpers they share are
//! here.

mod fig10;
mod fig13;
mod fig5;
mod fig6;
mod fig7;
mod fig8;
mod fig9;

pub use fig5::fig5;
pub use fig6::fig6;
pub use fig7::fig7;
pub use fig8::fig8;
pub use fig9::fig9;
pub use fig10::fig10;
pub use fig13::{fig13, fig13b};

use super::super::experiments::{TAURUS_WORKERS, top};
use super::super::verdict::{Key, Kind, Measured, Part, data, pct, per_flush, times};
use super::{DEVICES, HDD_MBPS, nvme_mbps};

const WORKLOADS: [(&str, &str); 3] = [
    ("ycsb", "YCSB"),
    ("payment", "Payment"),
    ("neworder", "New-Order"),
];

/// Worker and recovery threads of every Taurus run.
/// The worker (and recovery) threads every verdict compares at: the top of the machine's
/// sweep ([`top`]), shown as a number in the verdicts' text.
const THREADS: Threads = Threads;

/// [`THREADS`]: displays as, and [`Threads::n`] is, the top of the sweep.
#[derive(Clone, Copy)]
struct Threads;

impl Threads {
    fn n(self) -> usize {
        top(TAURUS_WORKERS)
    }
}

impl std::fmt::Display for Threads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.n())
    }
}

/// Transactions per flush of `key` in run `id`, as text.
fn batch(m: &Measured, id: &str, key: Key<'_>) -> String {
    m.get(id, key)
        .map(|c| format!("{:.0}", per_flush(c)))
        .unwrap_or_else(|| "?".into())
}

/// Shared read-modify-writes per commit of `key` in run `id`, as text.
fn rmw(m: &Measured, id: &str, key: Key<'_>) -> String {
    m.get(id, key)
        .and_then(|c| c.shared_rmw_per_commit)
        .map(|r| format!("{r:.2}"))
        .unwrap_or_else(|| "?".into())
}

/// Log MB/s written by `key` in run `id`, as text.
fn mbps(m: &Measured, id: &str, key: Key<'_>) -> String {
    m.get(id, key)
        .map(|c| format!("{:.1} MB/s", c.log_bytes_per_s / 1e6))
        .unwrap_or_else(|| "? MB/s".into())
}

/// The share of `devices` emulated disks' bandwidth that `key` used in run `id`, as text.
fn util(m: &Measured, id: &str, key: Key<'_>, devices: usize) -> String {
    m.get(id, key)
        .map(|c| pct(c.log_bytes_per_s / (devices as f64 * HDD_MBPS * 1e6)))
        .unwrap_or_else(|| "?".into())
}

/// The share of `devices` emulated NVMe drives' bandwidth that `key` used in run `id`, as text.
fn nvme_util(m: &Measured, id: &str, key: Key<'_>, devices: usize) -> String {
    m.get(id, key)
        .map(|c| pct(c.log_bytes_per_s / (devices as f64 * nvme_mbps() * 1e6)))
        .unwrap_or_else(|| "?".into())
}

/// The proxies of serial and Taurus logging of one kind in run `id`.
fn lsn_proxies(m: &Measured, id: &str, serial: Key<'_>, taurus: Key<'_>) -> String {
    format!(
        "serial logging takes {} shared read-modify-writes per commit on its one log against \
         Taurus's {} over {DEVICES} logs",
        rmw(m, id, serial),
        rmw(m, id, taurus)
    )
}

/// The largest of `xs`.
fn most(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Every ratio of `items` within the band of a similar level.
fn all_similar(claim: impl Into<String>, items: &[(&str, f64)]) -> Part {
    all_of(claim, items, |r| Part::similar("", r))
}

/// Every ratio of `items` within the paper's `lo..=hi` widened by the magnitude band.
fn all_within(claim: impl Into<String>, items: &[(&str, f64)], lo: f64, hi: f64) -> Part {
    all_of(claim, items, |r| Part::within("", r, lo, hi))
}

/// One magnitude part that holds when `each` holds for every ratio of `items`, naming the
/// ones that do not.
fn all_of(claim: impl Into<String>, items: &[(&str, f64)], each: impl Fn(f64) -> Part) -> Part {
    let shown: Vec<String> = items
        .iter()
        .map(|(n, r)| format!("{n} {}", times(*r)))
        .collect();
    let off: Vec<String> = items
        .iter()
        .map(|(n, r)| (n, each(*r)))
        .filter(|(_, p)| !p.holds())
        .map(|(n, p)| format!("{n}: {}", p.reason()))
        .collect();
    Part::check(
        claim,
        Kind::Magnitude,
        shown.join(", "),
        off.is_empty(),
        off.join("; "),
    )
}

/// Median replayed txn/s of `key` (its threads: recovery threads) in run `id`, auto plan.
fn rec(m: &Measured, id: &str, key: Key<'_>) -> Option<f64> {
    m.recovery(id, key, "").map(|r| r.txn_per_s)
}

/// Why a parallel replay with [`THREADS`] threads cannot show the paper's tens-of-x gains.
fn two_replayers(m: &Measured, id: &str) -> String {
    format!(
        "recovery runs {THREADS} replay threads (the paper: up to 80), so a parallel replay can at \
         most double one bound to a single thread by the log's total order; {}",
        lsn_proxies(
            m,
            id,
            data("serial", THREADS.n()),
            data("taurus", THREADS.n())
        )
    )
}

/// Measurements the figures' tests build.
#[cfg(test)]
mod fixtures {
    use super::*;
    use crate::report::result;
    use crate::report::verdict::RecoveryRow;

    pub(super) fn row(
        id: &str,
        x: Option<f64>,
        scheme: &str,
        logging: &str,
        plan: (&str, &str),
        tps: f64,
    ) -> RecoveryRow {
        RecoveryRow {
            run: id.to_string(),
            x,
            scheme: scheme.to_string(),
            variant: String::new(),
            logging: logging.to_string(),
            device: "file".into(),
            threads: THREADS.n(),
            plan_asked: plan.0.to_string(),
            plan_used: plan.1.to_string(),
            txns: 1000,
            txn_per_s: tps,
            repeats: vec![tps],
        }
    }

    /// A logging run `id` of (scheme, variant, logging, txn/s).
    pub(super) fn logging_run(m: &mut Measured, id: &str, rows: &[(&str, &str, &str, f64)]) {
        let res = rows
            .iter()
            .map(|(s, v, l, tps)| {
                let mut c = result(s, v, l, THREADS.n(), *tps);
                c.shared_rmw_per_commit = Some(if *s == "taurus" { 3.7 } else { 1.5 });
                c
            })
            .collect();
        m.runs.push((id.to_string(), None, res));
    }
}
