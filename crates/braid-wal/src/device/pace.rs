//! Emulated device speed: a bandwidth and a sync latency under any log device.
//!
//! The parallel-logging papers win where the log device is the bottleneck: Taurus Sec. 5.2-5.3
//! (Figs. 5, 9-11) gives serial logging one device's bandwidth and the parallel schemes one
//! device per log, and Wang & Johnson Sec. 6 emulate slow NVM with a delay per insert. On a
//! machine whose logs live in RAM (`/dev/shm`) the device is never the bottleneck, so this
//! layer makes it one, as the papers themselves emulate NVM latency: a [`PacedDevice`] wraps
//! any [`Device`] and holds each durability operation until a device of the given speed would
//! have finished it. It changes no byte that is written and no durability guarantee: the
//! wrapped device still does all its work; the layer only waits. It is named in
//! [`DeviceInfo::emulation`], hence in every table, JSON and plot the run touches.
//!
//! The model ([`Pace`]): a device is one FIFO queue. An operation of `b` bytes (a `flush` of
//! `[from, to)`; on a device that is durable on fill, each `fill`) occupies it for
//! `b / bandwidth + sync latency`, starting when it is issued or when the operation before it
//! finishes, whichever is later; the caller returns when it would have finished. A read of
//! `b` bytes (recovery's scan) occupies it for `b / bandwidth`. Each
//! device has its own queue, so N streams on N paced devices have N times the bandwidth of
//! one, and a flush of many group-committed records pays one sync latency.
//!
//! Waiting gives the core away as real I/O would, but a sleep ends late: Linux stretches it by
//! the thread's timer slack (50 us by default), so a waiting thread first sets its own slack to
//! 1 us (`PR_SET_TIMERSLACK`, once per thread), and even then a wake-up takes 20-35 us on this
//! project's VMs (a 1 us `nanosleep` returns after 22 us at the median). Each thread keeps an
//! estimate of its own wake-up overshoot and asks a sleep for only what exceeds it. What is
//! left below the overshoot is waited for in one of two ways, by who pays for it on the
//! emulated device:
//!
//! * **A store to slow NVM** ([`wait_until`]: a `fill` of a device that is durable on fill,
//!   persistent memory) stalls the writing core, which is how the NVM papers emulate it, so
//!   the rest is spun. A device emulated by sleeps alone was far slower than asked: on
//!   persistent memory paced at 40 MB/s each 200-byte fill (5 us) slept about 30 us.
//! * **I/O** ([`wait_io`]: a `flush` to a file device, recovery's reads) leaves the core to
//!   other threads while the device works. The rest is spun only where a core is spare (every
//!   writer and flusher of the process has one; `stream::spare_core`); otherwise spinning
//!   takes the core from a worker, which a real device never does. That was the cause of
//!   Taurus command logging running 0.6x data logging on NVMe-paced devices on 2 cores (issue
//!   50): command logging's flushes are small (about 1.6 KB, 30 us at 50 MB/s), so each was
//!   spun in full by its flusher, two flushers took both cores from the two workers, and a
//!   worker preempted while holding a lock made the other abort (12K aborts/s against 19 for
//!   data logging). Without a spare core the wait ends at whichever of now and the next
//!   wake-up is nearer its deadline: a short operation ends within half an overshoot of its
//!   time, early or late, while the device's queue is charged in full either way, so no more
//!   bytes move per second than the emulated bandwidth allows.

use std::cell::Cell;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::device::{Device, DeviceInfo};
use crate::scan::StreamSource;
use crate::{Lsn, WalError};

/// The speed of an emulated device (see the module doc). The default is unlimited: no pace.
/// Built from [`Pace::default`] with the setters (or by assigning fields):
/// `Pace::default().mbps(500.0).sync_us(20)`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct Pace {
    /// Bandwidth in MB/s (10^6 bytes per second); 0 means unlimited.
    pub mbps: f64,
    /// Latency each durability operation adds, in microseconds.
    pub sync_us: u64,
}

impl Pace {
    /// [`Pace::mbps`] set to `mbps`.
    pub fn mbps(mut self, mbps: f64) -> Pace {
        self.mbps = mbps;
        self
    }
    /// [`Pace::sync_us`] set to `us`.
    pub fn sync_us(mut self, us: u64) -> Pace {
        self.sync_us = us;
        self
    }

    /// True if the pace slows nothing down.
    pub fn is_unlimited(&self) -> bool {
        self.mbps <= 0.0 && self.sync_us == 0
    }

    /// How long an operation of `bytes` occupies the device.
    pub(crate) fn cost(&self, bytes: u64) -> Duration {
        self.transfer(bytes) + Duration::from_micros(self.sync_us)
    }

    /// How long moving `bytes` takes at the bandwidth (a read: no sync).
    pub(crate) fn transfer(&self, bytes: u64) -> Duration {
        if self.mbps > 0.0 {
            // bytes / (mbps * 1e6) seconds = bytes * 1000 / mbps nanoseconds.
            Duration::from_nanos((bytes as f64 * 1000.0 / self.mbps) as u64)
        } else {
            Duration::ZERO
        }
    }

    /// How the pace is named in outputs.
    pub(crate) fn describe(&self) -> String {
        let bw = if self.mbps > 0.0 {
            format!("{} MB/s", self.mbps)
        } else {
            "unlimited bandwidth".to_string()
        };
        format!(
            "device speed emulated: {bw} and {} us per sync, per device",
            self.sync_us
        )
    }
}

/// One device's queue: when the operations issued so far will have finished.
#[derive(Debug)]
pub(crate) struct PaceClock {
    pace: Pace,
    base: Instant,
    /// Nanoseconds after `base` at which the device is free again.
    busy_until: AtomicU64,
}

impl PaceClock {
    /// An idle device of speed `pace`.
    pub(crate) fn new(pace: Pace) -> PaceClock {
        PaceClock {
            pace,
            base: Instant::now(),
            busy_until: AtomicU64::new(0),
        }
    }

    /// The speed it emulates.
    pub(crate) fn pace(&self) -> Pace {
        self.pace
    }

    /// Queue an operation of `bytes` issued at `issued`; returns when it will have finished.
    pub(crate) fn charge(&self, issued: Instant, bytes: u64) -> Instant {
        self.charge_for(issued, self.pace.cost(bytes))
    }

    /// Queue a read of `bytes` (its transfer only) issued at `issued`; returns when it will
    /// have finished.
    pub(crate) fn charge_read(&self, issued: Instant, bytes: u64) -> Instant {
        self.charge_for(issued, self.pace.transfer(bytes))
    }

    fn charge_for(&self, issued: Instant, cost: Duration) -> Instant {
        let cost = cost.as_nanos() as u64;
        let at = issued.saturating_duration_since(self.base).as_nanos() as u64;
        let mut cur = self.busy_until.load(Ordering::Acquire);
        loop {
            let done = cur.max(at) + cost;
            match self.busy_until.compare_exchange_weak(
                cur,
                done,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return self.base + Duration::from_nanos(done),
                Err(now) => cur = now,
            }
        }
    }
}

/// The wake-up overshoot assumed before a thread has measured its own.
const OVERSHOOT_START: Duration = Duration::from_micros(30);
/// The largest overshoot a thread keeps as its estimate (a preempted sleep ends much later
/// than a typical one, and must not turn every later wait into a spin).
const OVERSHOOT_MAX: Duration = Duration::from_micros(200);

thread_local! {
    static SLACK_SET: Cell<bool> = const { Cell::new(false) };
    /// This thread's estimate of how late a sleep ends, ns (an exponentially weighted mean).
    static OVERSHOOT_NS: Cell<u64> = const { Cell::new(OVERSHOOT_START.as_nanos() as u64) };
}

/// Wait until `deadline` as a core stalled on a store to slow NVM does: sleep for what exceeds
/// this thread's wake-up overshoot, spin the rest (see the module doc).
pub(crate) fn wait_until(deadline: Instant) {
    wait(deadline, false);
}

/// Wait until `deadline` as a thread waiting for I/O does: sleep for what exceeds this
/// thread's wake-up overshoot, and spin the rest only where a core is spare; otherwise end at
/// whichever of now and the next wake-up is nearer the deadline (see the module doc).
pub(crate) fn wait_io(deadline: Instant) {
    wait(deadline, true);
}

/// [`wait_until`] (`io` false) and [`wait_io`] (`io` true): they differ only in how the rest
/// below the overshoot is waited for.
fn wait(deadline: Instant, io: bool) {
    loop {
        let now = Instant::now();
        if deadline <= now {
            return;
        }
        let left = deadline - now;
        let margin = overshoot();
        if left <= margin {
            if !io || crate::stream::spare_core() {
                spin_to(deadline);
            } else if left * 2 > margin {
                // A sleep of any length ends about `margin` from now: late by less than
                // `left`, which returning now would be early by.
                sleep_measured(Duration::from_micros(1));
            }
            return;
        }
        sleep_measured(left - margin);
    }
}

/// This thread's estimate of how late a sleep ends.
fn overshoot() -> Duration {
    Duration::from_nanos(OVERSHOOT_NS.with(Cell::get))
}

fn spin_to(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// Sleep for `asked` and fold how late it ended into this thread's overshoot estimate.
fn sleep_measured(asked: Duration) {
    set_slack();
    let start = Instant::now();
    std::thread::sleep(asked);
    let late = start.elapsed().saturating_sub(asked).min(OVERSHOOT_MAX);
    OVERSHOOT_NS.with(|o| {
        let old = o.get();
        o.set(old - old / 8 + late.as_nanos() as u64 / 8);
    });
}

/// Set this thread's timer slack to 1 us, once (see the module doc).
fn set_slack() {
    SLACK_SET.with(|set| {
        if !set.get() {
            // A failure leaves the default slack: sleeps then end up to 50 us later, which
            // the overshoot estimate absorbs; no outcome changes.
            let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1_000));
            set.set(true);
        }
    });
}

/// A [`Device`] that waits like a device of a given [`Pace`] (see the module doc).
pub struct PacedDevice {
    inner: Arc<dyn Device>,
    clock: PaceClock,
}

impl std::fmt::Debug for PacedDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacedDevice")
            .field("pace", &self.clock.pace)
            .field("inner", &self.inner.info())
            .finish()
    }
}

impl PacedDevice {
    /// `inner`, slowed down to `pace`.
    pub fn new(inner: Arc<dyn Device>, pace: Pace) -> PacedDevice {
        PacedDevice {
            inner,
            clock: PaceClock::new(pace),
        }
    }
}

/// The emulation note of a device whose speed `pace` emulates, after its own note `own`.
pub(crate) fn paced_note(own: Option<String>, pace: Pace) -> Option<String> {
    Some(match own {
        Some(e) => format!("{e}; {}", pace.describe()),
        None => pace.describe(),
    })
}

impl Device for PacedDevice {
    fn info(&self) -> DeviceInfo {
        let mut info = self.inner.info();
        info.emulation = paced_note(info.emulation, self.clock.pace);
        info
    }

    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }

    fn reusable(&self) -> Lsn {
        self.inner.reusable()
    }

    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        let issued = Instant::now();
        self.inner.fill(lsn, bytes);
        if self.inner.durable_on_fill() {
            wait_until(self.clock.charge(issued, bytes.len() as u64));
        }
    }

    fn durable_on_fill(&self) -> bool {
        self.inner.durable_on_fill()
    }

    fn check_fills(&self) -> Result<(), WalError> {
        self.inner.check_fills()
    }

    fn flush(&self, from: Lsn, to: Lsn) -> Result<(), WalError> {
        let issued = Instant::now();
        self.inner.flush(from, to)?;
        if to > from {
            wait_io(self.clock.charge(issued, to - from));
        }
        Ok(())
    }

    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError> {
        self.inner.ensure_space(upto)
    }

    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        self.inner.reset_tail(end)
    }

    fn release(&self, upto: Lsn) -> Result<(), WalError> {
        self.inner.release(upto)
    }

    fn note_durable(&self, durable: Lsn) {
        self.inner.note_durable(durable)
    }

    fn mark_clean_end(&self, end: Lsn) -> Result<(), WalError> {
        self.inner.mark_clean_end(end)
    }
}

impl StreamSource for PacedDevice {
    fn start(&self) -> Lsn {
        self.inner.start()
    }

    fn limit(&self) -> Lsn {
        self.inner.limit()
    }

    fn sealed(&self) -> Lsn {
        self.inner.sealed()
    }

    /// Reads take the device's bandwidth too, so a recovery on a paced device reads its log
    /// at the speed the device emulates (the papers' recoveries read from the same devices).
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let issued = Instant::now();
        let n = self.inner.read_at(lsn, buf)?;
        if n > 0 {
            wait_io(self.clock.charge_read(issued, n as u64));
        }
        Ok(n)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        self.inner.salt_for(lsn)
    }

    /// Asking where data is costs no bandwidth; reading it does (`read_at`).
    fn data_end(&self, from: Lsn) -> Result<Lsn, WalError> {
        self.inner.data_end(from)
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        self.inner.locate(lsn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_transfer_plus_sync() {
        let p = Pace {
            mbps: 100.0,
            sync_us: 50,
        };
        // 1 MB at 100 MB/s = 10 ms, plus 50 us.
        assert_eq!(p.cost(1_000_000), Duration::from_micros(10_050));
        let free = Pace {
            mbps: 0.0,
            sync_us: 0,
        };
        assert!(free.is_unlimited());
        assert_eq!(free.cost(1 << 30), Duration::ZERO);
    }

    #[test]
    fn a_wait_never_ends_before_its_deadline() {
        // Short waits (spun) and long ones (slept, then spun): none returns early, which
        // would make the emulated device faster than asked.
        for us in [0u64, 1, 5, 40, 300, 2_000] {
            let deadline = Instant::now() + Duration::from_micros(us);
            wait_until(deadline);
            assert!(
                Instant::now() >= deadline,
                "a wait of {us} us returned early"
            );
        }
    }

    #[test]
    fn operations_queue_behind_each_other() {
        let c = PaceClock::new(Pace {
            mbps: 1000.0,
            sync_us: 10,
        });
        let t = c.base + Duration::from_millis(1);
        // 10_000 bytes at 1000 MB/s = 10 us, + 10 us sync.
        let a = c.charge(t, 10_000);
        assert_eq!(a - t, Duration::from_micros(20));
        // Issued at the same time: starts when the first ends.
        let b = c.charge(t, 10_000);
        assert_eq!(b - t, Duration::from_micros(40));
        // Issued after the device went idle: starts at once.
        let later = t + Duration::from_millis(5);
        assert_eq!(c.charge(later, 0) - later, Duration::from_micros(10));
    }
}
