//! Open-loop arrivals (`braid bench --offered-rate`): each worker starts its transactions at
//! the moments of a Poisson process of its share of the offered rate, instead of as soon as
//! the previous one is done (closed loop), and a transaction's latency counts from its
//! scheduled arrival, so a worker that falls behind its schedule shows the queueing in the
//! latency rather than hiding it (no coordinated omission). The offered load of the
//! autonomous-commit paper's open-loop experiments (Nguyen et al., SIGMOD 2025) is this rate.
//!
//! A worker waits for an arrival in the future by sleeping with a timer slack of 1 us (Linux
//! stretches a sleep by the thread's slack, 50 us by default); what a wake-up still ends late
//! counts in the latency, as a real server's would.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};

/// One worker's schedule of arrivals.
pub(super) struct Arrivals {
    rng: SmallRng,
    /// Mean time between two of this worker's arrivals.
    mean: Duration,
    /// The next arrival not yet handed out.
    next: Instant,
}

impl Arrivals {
    /// A schedule at `rate` transactions per second for this worker, drawn from `seed`.
    pub(super) fn new(rate: f64, seed: u64) -> Arrivals {
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1000));
        let mut a = Arrivals {
            rng: SmallRng::seed_from_u64(seed),
            mean: Duration::from_secs_f64(1.0 / rate.max(1e-3)),
            next: Instant::now(),
        };
        // A random phase, so that workers do not arrive together.
        let g = a.gap();
        a.next += g;
        a
    }

    fn gap(&mut self) -> Duration {
        // Exponential inter-arrival times: -ln(U) * mean, U in (0, 1].
        let u: f64 = 1.0 - self.rng.r#gen::<f64>();
        self.mean.mul_f64(-u.ln())
    }

    /// The next arrival: wait until it if it lies ahead, and return it (the moment the
    /// transaction's latency counts from).
    pub(super) fn wait_next(&mut self) -> Instant {
        let at = self.next;
        let g = self.gap();
        self.next += g;
        let now = Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_keep_their_mean_rate_and_never_go_back() {
        let mut a = Arrivals::new(1e6, 7);
        let start = a.next;
        let mut last = start;
        for _ in 0..10_000 {
            let at = a.next;
            let g = a.gap();
            a.next += g;
            assert!(at >= last);
            last = at;
        }
        // 10,000 arrivals at a mean of 1 us: about 10 ms.
        let span = (last - start).as_secs_f64();
        assert!((0.008..0.012).contains(&span), "{span}");
    }
}
