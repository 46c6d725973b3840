//! Multi-version concurrency control (`Cc::Mvcc`): the optimistic multi-version scheme of
//! Larson et al. (VLDB 2012) that Hekaton uses, which Taurus Section 4.4 builds on.
//!
//! * Every transaction reads the snapshot of its begin timestamp: the newest version of each
//!   row whose begin timestamp is at or below it (older versions hang off the row, see
//!   [`crate::row`]). Reads take no lock and never wait or abort.
//! * Writes are buffered. A write to a row whose newest version is not the one in the snapshot,
//!   or which another transaction is committing, aborts at once (first updater wins).
//! * Commit of an updating transaction locks its write set (NO_WAIT), draws its commit
//!   timestamp, and validates that every version it read is still the newest one and is not
//!   being replaced (so it is serializable at its commit timestamp, as in Hekaton's serializable
//!   mode; scans are recounted against phantoms). It then logs (the record carries the commit
//!   timestamp, [`encode_envelope`]), installs each new version with the commit timestamp as its
//!   begin, lets the scheme raise the rows' LVs (Taurus: `v.LV = T.LV`), and only then ends its
//!   *in-flight* mark, which is what makes the versions visible: a snapshot is the newest
//!   timestamp drawn when the transaction begins, taken once every commit up to it has
//!   installed ([`Clock::snapshot`]; Hekaton's commit dependencies, made a short wait). Read-only transactions validate
//!   nothing: a snapshot of serializable transactions at one timestamp is consistent.
//! * Deleting installs a tombstone version; the key stays in the index until no snapshot can
//!   see the row before the delete, then it is removed ([`Clock::horizon`]). Old versions are
//!   pruned as rows are written, down to what the oldest running snapshot needs.
//! * Recovery (Section 4.4) replays multi-versioned too: every replayed transaction installs
//!   versions stamped with its logged commit timestamp and a re-executed procedure reads the
//!   version visible at that timestamp, so a logically earlier transaction replayed after a
//!   later writer still reads what it read. This is what frees Taurus from write-after-read
//!   edges. When recovery ends the versions collapse to the newest one.
//!
//! The timestamp clock and the two per-worker slot arrays are here; the version chains are in
//! [`crate::row`], the protocol in [`crate::txn`].

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

/// No timestamp in this slot.
const IDLE: u64 = u64::MAX;

/// First byte of a logged payload under MVCC: the commit timestamp follows.
const ENVELOPE: u8 = 0xB7;

/// Timestamps: the clock, each worker's in-flight commit (a lower bound of its commit
/// timestamp while it installs) and each worker's running snapshot.
pub(crate) struct Clock {
    clock: AtomicU64,
    inflight: Box<[CachePadded<AtomicU64>]>,
    active: Box<[CachePadded<AtomicU64>]>,
    /// Slots ever claimed are below this: scans stop there.
    used: AtomicUsize,
}

impl Clock {
    pub(crate) fn new(slots: usize, start: u64) -> Clock {
        let mk = || {
            (0..slots)
                .map(|_| CachePadded::new(AtomicU64::new(IDLE)))
                .collect::<Vec<_>>()
                .into_boxed_slice()
        };
        Clock {
            clock: AtomicU64::new(start),
            inflight: mk(),
            active: mk(),
            used: AtomicUsize::new(0),
        }
    }

    /// A worker took `slot` (before it uses it: scans of the slots then include it).
    pub(crate) fn claim(&self, slot: usize) {
        self.used.fetch_max(slot + 1, Ordering::SeqCst);
    }

    fn slots<'a>(&self, v: &'a [CachePadded<AtomicU64>]) -> &'a [CachePadded<AtomicU64>] {
        &v[..self.used.load(Ordering::SeqCst).min(v.len())]
    }

    /// The newest timestamp every commit at or below which is fully installed: the clock,
    /// lowered below every commit still in flight.
    fn watermark(&self) -> u64 {
        let mut s = self.clock.load(Ordering::SeqCst);
        for f in self.slots(&self.inflight) {
            let v = f.load(Ordering::SeqCst);
            if v != IDLE {
                s = s.min(v);
            }
        }
        s
    }

    /// Begin a snapshot for the worker in `slot`: the newest timestamp drawn so far, once
    /// every commit at or below it is installed (the wait is as short as a commit's install:
    /// a transaction in flight holds no lock a snapshot needs and waits for nobody). Until
    /// [`Clock::end`] no version it may read is pruned.
    pub(crate) fn snapshot(&self, slot: usize) -> u64 {
        // Protect everything first: a pruner that misses this store computed its watermark
        // before ours, and watermarks do not go back (see `horizon`).
        self.active[slot].store(0, Ordering::SeqCst);
        let target = self.clock.load(Ordering::SeqCst);
        let mut s = self.watermark();
        let mut spins = 0u32;
        while s < target {
            // Commits drawn before `target` are still installing; later ones start above it.
            // The commits waited for run on other cores and are short: spin (a yield is a
            // system call), then yield in case they were preempted.
            if spins < 4096 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            spins += 1;
            s = self.watermark();
        }
        self.active[slot].store(s, Ordering::SeqCst);
        s
    }

    /// The snapshot of the worker in `slot` is over.
    pub(crate) fn end(&self, slot: usize) {
        self.active[slot].store(IDLE, Ordering::Release);
    }

    /// Draw a commit timestamp for the worker in `slot`, marking it in flight: no snapshot
    /// reaches it until [`Clock::installed`].
    pub(crate) fn commit_ts(&self, slot: usize) -> u64 {
        // A lower bound first, then the timestamp: a snapshot that sees the new clock value
        // also sees the mark (both SeqCst).
        self.inflight[slot].store(self.clock.load(Ordering::SeqCst), Ordering::SeqCst);
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The commit of the worker in `slot` is installed (or abandoned).
    pub(crate) fn installed(&self, slot: usize) {
        self.inflight[slot].store(IDLE, Ordering::SeqCst);
    }

    /// Every running and future snapshot is at or above this: versions replaced at or below it
    /// by a newer one at or below it are unreachable, and a tombstone stamped at or below it
    /// hides its key from everyone.
    pub(crate) fn horizon(&self) -> u64 {
        let mut h = self.watermark();
        for a in self.slots(&self.active) {
            h = h.min(a.load(Ordering::SeqCst));
        }
        h
    }

    /// Move the clock past `ts` (after recovery).
    pub(crate) fn advance(&self, ts: u64) {
        self.clock.fetch_max(ts, Ordering::SeqCst);
    }
}

/// Prefix `payload` with the commit timestamp.
pub(crate) fn encode_envelope(ts: u64, payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(9 + payload.len());
    out.push(ENVELOPE);
    out.extend_from_slice(&ts.to_le_bytes());
    out.extend_from_slice(payload);
}

/// A logged payload of a multi-versioned database that does not start with its commit
/// timestamp (the database was not created multi-versioned, or the record is not the engine's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a log record of a multi-versioned database lacks its commit timestamp \
     ({len} payload bytes); was the database created with Options::cc Cc::Mvcc?"
)]
pub(crate) struct MissingTimestamp {
    /// Bytes of the payload found.
    pub(crate) len: usize,
}

/// Split a logged MVCC payload into its commit timestamp and the payload proper.
pub(crate) fn decode_envelope(payload: &[u8]) -> Result<(u64, &[u8]), MissingTimestamp> {
    match payload.split_first() {
        Some((&ENVELOPE, rest)) if rest.len() >= 8 => {
            let (ts, body) = rest.split_at(8);
            let mut b = [0u8; 8];
            b.copy_from_slice(ts);
            Ok((u64::from_le_bytes(b), body))
        }
        _ => Err(MissingTimestamp { len: payload.len() }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trip_and_refusal() {
        let mut out = Vec::new();
        encode_envelope(42, b"abc", &mut out);
        assert_eq!(decode_envelope(&out).unwrap(), (42, &b"abc"[..]));
        assert_eq!(decode_envelope(b"abc"), Err(MissingTimestamp { len: 3 }));
        assert!(
            MissingTimestamp { len: 3 }
                .to_string()
                .starts_with("a log record of a multi-versioned database lacks its commit timestamp (3 payload bytes)")
        );
        assert!(decode_envelope(&out[..5]).is_err());
        assert!(decode_envelope(&[]).is_err());
    }

    #[test]
    fn snapshots_stay_below_commits_in_flight() {
        let c = Clock::new(2, 10);
        c.claim(0);
        c.claim(1);
        assert_eq!(c.snapshot(0), 10);
        let ts = c.commit_ts(1);
        assert_eq!(ts, 11);
        // In flight: the horizon stays below it, and a snapshot waits for it.
        assert!(c.horizon() < ts);
        std::thread::scope(|sc| {
            let h = sc.spawn(|| c.snapshot(0));
            // The snapshot has begun once it protects everything (its slot at 0); it cannot
            // return before the commit in flight is installed.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while c.horizon() != 0 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the snapshot never began"
                );
                std::thread::yield_now();
            }
            assert!(
                !h.is_finished(),
                "a snapshot must wait for the commit in flight"
            );
            c.installed(1);
            assert_eq!(h.join().unwrap(), ts);
        });
        assert_eq!(c.snapshot(0), 11);
        // The running snapshot of slot 0 holds the horizon.
        let t2 = c.commit_ts(1);
        c.installed(1);
        assert_eq!(c.horizon(), 11);
        c.end(0);
        assert_eq!(c.horizon(), t2);
        c.advance(100);
        assert_eq!(c.snapshot(0), 100);
    }
}
