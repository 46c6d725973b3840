//! Emulated NVM write latency: a busy-wait of a given number of nanoseconds.
//!
//! The papers emulate NVM slower than DRAM by stalling after each cache-line write-back
//! (Wang & Johnson 2014 §6.1, Huang et al. 2014 §5.1, REWIND §5). Sleeping would give up the
//! core and overshoot by tens of microseconds, so this spins on the monotonic clock
//! (`Instant`, a vDSO read of the TSC on Linux, about 20 ns), re-reading it after a few
//! pause instructions; a wait is therefore accurate to about one clock read.

use std::time::{Duration, Instant};

/// Busy-wait for `ns` nanoseconds (returns at once for 0).
#[inline]
pub fn busy_wait_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    spin(ns);
}

#[cold]
#[inline(never)]
fn spin(ns: u64) {
    let start = Instant::now();
    let wait = Duration::from_nanos(ns);
    while start.elapsed() < wait {
        for _ in 0..4 {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_at_least_the_requested_time() {
        // A lower bound only: the upper bound depends on the machine's load.
        let t = Instant::now();
        busy_wait_ns(200_000);
        assert!(t.elapsed() >= Duration::from_micros(200));
        busy_wait_ns(0);
    }
}
