//! Emulated NVM write latency: a busy-wait of a given number of nanoseconds.
//!
//! The papers emulate NVM slower than DRAM by stalling after each cache-line write-back
//! (Wang & Johnson 2014 §6.1, Huang et al. 2014 §5.1, REWIND §5). Sleeping would give up the
//! core and overshoot by tens of microseconds, so this spins on the monotonic clock
//! (`Instant`, a vDSO read of the TSC on Linux, about 20 ns), re-reading it after a few
//! pause instructions; a wait is therefore accurate to about one clock read.
//!
//! # The delay model (one for every scheme)
//!
//! `braid bench --nvm-delay-ns D` charges `D` nanoseconds per 64-byte line written to the
//! emulated NVM, on the thread that writes the line, at the moment it writes it: the line's
//! write-back to persistent memory, or its write through the file system into a log file kept
//! on NVRAM. Nothing else is charged. Where each scheme writes its lines:
//!
//! | scheme | lines written to NVM | thread that pays |
//! |---|---|---|
//! | serial, aether, baseline, taurus, silor, plover on the pmem device | each record's lines, persisted as it is filled | the worker filling the record |
//! | pertxn, flush-on-insert | each log object's lines and its state word | the inserting worker |
//! | pertxn, flush-on-commit | the same lines | the flush daemon, or a committing worker persisting what the daemon has not reached |
//! | pertxn, `place=file` (NV-Disk+decentralized-logging) | each log object's lines and its state word, written through the file system (`Region::write_file`) | the inserting worker |
//! | gsn on the pmem device | each record's lines, persisted by the worker (durable cache: with the insert) | the inserting worker |
//! | nvdisk (NV-Disk) | the central log buffer's bytes, written into its segment files on NVRAM (`/dev/shm`) | the log flusher alone, which writes the buffer through the file system as Shore-MT's log flush daemon does (no committer flushes: see `braid_wal`'s `nvdisk`) |
//! | file devices elsewhere | none: a disk's cost is its own (`--device-mbps`, `--device-sync-us` emulate slower ones) | |
//!
//! A region charges in [`crate::Region::persist`]-family calls and non-temporal writes
//! (`region/durability.rs`, `region/access.rs`); a file device on NVRAM in its segment writer.
//!
//! `--nvm-delay-per barrier` charges the delay per persistence barrier instead, the way Intel's
//! PMEP (NV-Logging's Setup-B, Fig. 14) exposes NVRAM latency to software: each
//! [`crate::Region::fence`] ([`crate::Region::set_fence_delay_ns`]), each
//! [`crate::Region::write_file`], and each write a file device on NVRAM makes into its segments
//! (PMFS ends a write with one barrier), on the same threads as above, and nothing per line.
//! Wang & Johnson's Fig. 4 uses another model, theirs: a fixed delay per log insert
//! (`gsn.insert_delay_ns`, 1.2 us), inside the insert's critical section.

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
