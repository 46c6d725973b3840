//! The durable epoch `D` (SiloR, Zheng et al., OSDI 2014, Section 4.1: "pepoch") as the
//! running scheme holds it, the tickets that wait for it, and the two bookkeeping records
//! that carry it in the log.
//!
//! A commit of epoch `e` is acknowledged once `e <= D`, never before: [`EpochWait`] is the
//! [`DurabilityWait`] behind its ticket. `D` is raised only by the logger thread (`logger.rs`),
//! and only after the record saying so is durable.
//!
//! Records (kind [`Kind::Checkpoint`], on stream 0, tagged by their first payload byte):
//!
//! * `P, u64 D[, u64 tail per stream]`: the durable epoch. SiloR keeps it in a small file of
//!   its own (`pepoch`, written and renamed); braid's schemes get log devices only, so it is a
//!   record on stream 0. That costs one more durable write of stream 0 per epoch, which the
//!   paper pays too (its pepoch file is fsynced every epoch), and it survives truncation: a
//!   checkpoint's cut on stream 0 is taken before those of the other streams, so the newest
//!   `P` record that covers any record kept after a cut is itself after the cut on stream 0.
//!   With several streams the record also carries, per stream, the tail the round waited
//!   durable (`logger.rs`): every record of an epoch `<= D` lies before it, which lets
//!   recovery replay window by window (`windows.rs`). A `P` without tails (one stream, or a
//!   log written before they were added) is read as before.
//! * `V, u64 lo, u64 hi`: epochs `lo < e <= hi` are void. Recovery discards records of epochs
//!   above `D`; they stay in the logs (a stream cannot be cut below them: records of epochs
//!   `<= D` may follow them), so the first open after a recovery writes this marker before
//!   anything new, and restarts the epochs above `hi`. A later, larger `D` therefore never
//!   resurrects them (the gsn scheme voids its lost GSNs the same way).
//!
//! Their decoder is fuzzed (`fuzz/fuzz_targets/silor_mark.rs`, with a proptest twin in
//! braid-testkit).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use crate::scheme::DurabilityWait;
use crate::{Lsn, WalError};

/// Tag of a durable-epoch record.
pub(crate) const TAG_PEPOCH: u8 = b'P';
/// Tag of a void marker.
pub(crate) const TAG_VOID: u8 = b'V';

/// The payload of a durable-epoch record.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn pepoch_payload(d: u64) -> [u8; 9] {
    let mut p = [0u8; 9];
    p[0] = TAG_PEPOCH;
    p[1..].copy_from_slice(&d.to_le_bytes());
    p
}

/// The payload of a durable-epoch record that also says, per stream, the tail before which
/// every record of an epoch `<= d` lies.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn pepoch_tails_payload(d: u64, tails: &[Lsn]) -> Vec<u8> {
    let mut p = Vec::with_capacity(9 + 8 * tails.len());
    p.extend_from_slice(&pepoch_payload(d));
    for t in tails {
        p.extend_from_slice(&t.to_le_bytes());
    }
    p
}

/// The per-stream tails a durable-epoch record's payload carries (none for a plain one, or
/// for a payload that is not a durable-epoch record).
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn pepoch_tails(p: &[u8]) -> impl ExactSizeIterator<Item = Lsn> + '_ {
    let tails = match decode_mark(p) {
        Some(Mark::Pepoch(_)) => &p[9..],
        _ => &[],
    };
    tails.chunks_exact(8).map(le)
}

/// The payload of a void marker for epochs `lo < e <= hi`.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn void_payload(lo: u64, hi: u64) -> [u8; 17] {
    let mut p = [0u8; 17];
    p[0] = TAG_VOID;
    p[1..9].copy_from_slice(&lo.to_le_bytes());
    p[9..].copy_from_slice(&hi.to_le_bytes());
    p
}

/// Whether a void marker among `voids` (each `(lo, hi)`) covers epoch `e`.
pub(crate) fn is_void(voids: &[(u64, u64)], e: u64) -> bool {
    voids.iter().any(|&(lo, hi)| lo < e && e <= hi)
}

/// What a bookkeeping record's payload says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) enum Mark {
    /// The durable epoch.
    Pepoch(u64),
    /// Epochs `lo < e <= hi` are void.
    Void(u64, u64),
}

fn le(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_le_bytes(a)
}

/// Decode a bookkeeping payload; `None` if it is neither kind.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn decode_mark(p: &[u8]) -> Option<Mark> {
    match (p.first(), p.len()) {
        (Some(&TAG_PEPOCH), n) if n >= 9 && (n - 9) % 8 == 0 => Some(Mark::Pepoch(le(&p[1..9]))),
        (Some(&TAG_VOID), 17) => Some(Mark::Void(le(&p[1..9]), le(&p[9..]))),
        _ => None,
    }
}

/// The durable epoch, the failure that stops it, and its waiters.
#[derive(Debug)]
pub(crate) struct Durable {
    d: CachePadded<AtomicU64>,
    failed: AtomicBool,
    closed: AtomicBool,
    cause: Mutex<Option<WalError>>,
    lock: Mutex<()>,
    cv: Condvar,
    waiters: AtomicU64,
}

impl Durable {
    /// Everything up to epoch `d` is durable.
    pub(crate) fn new(d: u64) -> Durable {
        Durable {
            d: CachePadded::new(AtomicU64::new(d)),
            failed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            cause: Mutex::new(None),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            waiters: AtomicU64::new(0),
        }
    }

    /// `D` now.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.d.load(SeqCst)
    }

    /// Publish `d` (whose record is durable) and wake the waiters. `D` never goes down.
    pub(crate) fn publish(&self, d: u64) {
        self.d.fetch_max(d, SeqCst);
        self.wake();
    }

    /// `D` stops for good: waiters above it get `e`.
    pub(crate) fn fail(&self, e: WalError) {
        let mut c = self.cause.lock();
        if c.is_none() {
            *c = Some(e);
        }
        self.failed.store(true, SeqCst);
        drop(c);
        self.wake();
    }

    /// The scheme is closed: waiters above `D` will never be acknowledged.
    pub(crate) fn close(&self) {
        self.closed.store(true, SeqCst);
        self.wake();
    }

    fn wake(&self) {
        if self.waiters.load(SeqCst) > 0 {
            let _g = self.lock.lock();
            self.cv.notify_all();
        }
    }

    /// `Ok(true)` once epoch `e` is durable; the error that prevents it, if any.
    pub(crate) fn check(&self, e: u64) -> Result<bool, WalError> {
        if self.get() >= e {
            return Ok(true);
        }
        if self.failed.load(SeqCst) {
            return Err(self
                .cause
                .lock()
                .clone()
                .unwrap_or_else(|| WalError::Internal(crate::Invariant::EpochStopped)));
        }
        if self.closed.load(SeqCst) {
            return Err(WalError::Closed(0));
        }
        Ok(false)
    }

    /// Block until epoch `e` is durable.
    pub(crate) fn wait(&self, e: u64) -> Result<(), WalError> {
        if self.check(e)? {
            return Ok(());
        }
        self.waiters.fetch_add(1, SeqCst);
        let mut g = self.lock.lock();
        let r = loop {
            // Registered before checking, and the publisher stores `D` before it reads
            // `waiters`: no wake-up is lost.
            match self.check(e) {
                Ok(true) => break Ok(()),
                Ok(false) => self.cv.wait(&mut g),
                Err(err) => break Err(err),
            }
        };
        drop(g);
        self.waiters.fetch_sub(1, SeqCst);
        r
    }
}

/// A commit's ticket: durable once its epoch is.
pub(crate) struct EpochWait {
    /// The scheme's durable epoch.
    pub durable: std::sync::Arc<Durable>,
    /// The commit's epoch.
    pub epoch: u64,
}

impl DurabilityWait for EpochWait {
    fn wait(&self) -> Result<(), WalError> {
        self.durable.wait(self.epoch)
    }
    fn is_durable(&self) -> Result<bool, WalError> {
        self.durable.check(self.epoch)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn marks_round_trip_and_reject_other_payloads() {
        assert_eq!(decode_mark(&pepoch_payload(42)), Some(Mark::Pepoch(42)));
        assert_eq!(decode_mark(&void_payload(3, 9)), Some(Mark::Void(3, 9)));
        assert_eq!(decode_mark(&[]), None);
        assert_eq!(decode_mark(&pepoch_payload(1)[..8]), None);
        assert_eq!(decode_mark(&[TAG_VOID; 9]), None);
        let p = pepoch_tails_payload(7, &[10, 20, 30]);
        assert_eq!(decode_mark(&p), Some(Mark::Pepoch(7)));
        assert_eq!(pepoch_tails(&p).collect::<Vec<_>>(), [10, 20, 30]);
        assert_eq!(pepoch_tails(&pepoch_payload(7)).len(), 0);
        assert_eq!(pepoch_tails(&void_payload(3, 9)).len(), 0);
        assert_eq!(decode_mark(&p[..p.len() - 1]), None);
    }

    #[test]
    fn a_ticket_resolves_only_once_its_epoch_is_durable() {
        let d = Arc::new(Durable::new(4));
        let t = EpochWait {
            durable: Arc::clone(&d),
            epoch: 6,
        };
        assert!(!t.is_durable().unwrap());
        d.publish(5);
        assert!(!t.is_durable().unwrap());
        // Never goes down.
        d.publish(3);
        assert_eq!(d.get(), 5);
        let waiter = {
            let d = Arc::clone(&d);
            std::thread::spawn(move || d.wait(6))
        };
        d.publish(6);
        waiter.join().unwrap().unwrap();
        assert!(t.is_durable().unwrap());
    }

    #[test]
    fn a_failure_fails_pending_tickets_but_not_durable_ones() {
        let d = Durable::new(4);
        d.fail(WalError::Closed(3));
        assert!(d.check(4).unwrap());
        assert!(d.wait(5).is_err());
        let d = Durable::new(1);
        d.close();
        assert!(matches!(d.wait(2), Err(WalError::Closed(0))));
    }
}
