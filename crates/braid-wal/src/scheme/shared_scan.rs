//! Recovery of one log stream by several threads, each of which sees every record of the
//! stream and applies the operations of its own share of the keys (the single-log recoveries
//! of Silo-R, Zheng et al., OSDI 2014, Section 5, and of Plover, Taurus paper Section 5.2).
//!
//! Why every thread sees the stream, rather than one thread reading and handing operations
//! to the others: handing over copies every operation once more, and the reading thread is
//! one more thread than the appliers on the machine's cores. Measured on a Silo-R YCSB log of
//! 665 K whole-row transactions on tmpfs at 2 threads: a reader handing to 2 appliers
//! replayed 450-530 K txn/s, two threads each reading the stream about twice that (the commit
//! that added this module has the figures). The stream itself is read and checksummed once:
//! the threads share its blocks through a [`Feed`] (`feed.rs`), each block read by whichever
//! thread first needs it.
//!
//! Correctness: a key's operations are all applied by one thread (its share), in stream
//! order, so each key sees the order the stream has; which records are applied is decided by
//! the same scan in every thread, so every thread decides alike. A thread that fails stops the
//! others at their next record; the first error in thread order is returned.

use std::sync::atomic::{AtomicBool, Ordering};

use super::feed::{Feed, Records};
use crate::WalError;
use crate::payload::{PayloadError, decode_redo};
use crate::scan::{ScanMode, Scanner, StreamSource};

/// One thread's share of the keys: `part` of `n`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Share {
    pub(crate) part: usize,
    pub(crate) n: usize,
}

impl Share {
    /// The share that applies `(table, key)`.
    pub(crate) fn owns(&self, table: u32, key: u64) -> bool {
        let h = (key ^ (u64::from(table) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 32) as usize) % self.n == self.part
    }

    /// Call `f` with each longest run of consecutive operations of the redo `payload` that
    /// are in this share (a run is itself a redo payload); the whole payload with one share.
    /// Every operation is decoded first, so a malformed payload is `bad`'s error in every
    /// share alike.
    pub(crate) fn runs(
        &self,
        payload: &[u8],
        bad: impl Fn(PayloadError) -> WalError,
        mut f: impl FnMut(&[u8]) -> Result<(), WalError>,
    ) -> Result<(), WalError> {
        let mut it = decode_redo(payload);
        let mut run: Option<usize> = None;
        loop {
            let from = it.offset();
            let Some(op) = it.next() else { break };
            let op = op.map_err(&bad)?;
            if self.n == 1 || self.owns(op.table(), op.key()) {
                run.get_or_insert(from);
            } else if let Some(start) = run.take() {
                f(&payload[start..from])?;
            }
        }
        match run {
            Some(start) => f(&payload[start..]),
            None => Ok(()),
        }
    }
}

/// How the threads of [`run`] read the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Once, its blocks shared through a [`Feed`]: for replays whose apply follows the read
    /// closely (serial, Taurus's one stream, Plover).
    Once,
    /// Each thread with a scanner of its own: for Silo-R's pipeline, which applies in bursts
    /// (an epoch's records at each durable-epoch mark), so that a thread in a burst does not
    /// hold back the read of the other. Measured on its dbx1000 log at 2 threads, a shared
    /// read replayed 0.84-0.95x of this (`results/dbx1000/single-log-ab/README.md`).
    EachThread,
}

/// Run `scan` on `threads` threads, one per share, each reading the valid records of `src`
/// (scanned in `mode`) as `reading` says (with one thread, from a scanner); each returns
/// `Ok(None)` when it saw the stop flag (another thread failed). Returns share 0's result,
/// or the first error in share order.
pub(crate) fn run<T: Send>(
    threads: usize,
    (src, mode, reading): (&(dyn StreamSource + Sync), ScanMode, Reading),
    scan: impl Fn(Share, &mut dyn Records, &AtomicBool) -> Result<Option<T>, WalError> + Sync,
) -> Result<T, WalError> {
    let n = threads.max(1);
    let stop = AtomicBool::new(false);
    if n == 1 {
        return scan(Share { part: 0, n }, &mut Scanner::new(src, mode), &stop)?.ok_or(
            WalError::Internal(crate::Invariant::StoppedWithoutError("recovery")),
        );
    }
    match reading {
        Reading::Once => {
            let feed = Feed::new(src, mode, n);
            run_shares(n, |share, stop| scan(share, &mut feed.reader(stop), stop))
        }
        Reading::EachThread => run_shares(n, |share, stop| {
            scan(share, &mut Scanner::new(src, mode), stop)
        }),
    }
}

/// Run `scan` on `threads` threads (the calling one among them), one per share; each returns
/// `Ok(None)` when it saw the stop flag (another thread failed). Returns share 0's result,
/// or the first error in share order.
pub(crate) fn run_shares<T: Send>(
    threads: usize,
    scan: impl Fn(Share, &AtomicBool) -> Result<Option<T>, WalError> + Sync,
) -> Result<T, WalError> {
    let n = threads.max(1);
    let stop = AtomicBool::new(false);
    let results: Vec<Result<Option<T>, WalError>> = std::thread::scope(|sc| {
        let (scan, stop) = (&scan, &stop);
        let hs: Vec<_> = (1..n)
            .map(|part| {
                sc.spawn(move || {
                    let r = scan(Share { part, n }, stop);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        let first = scan(Share { part: 0, n }, stop);
        if first.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let mut all = vec![first];
        for h in hs {
            all.push(h.join().unwrap_or_else(|_| {
                stop.store(true, Ordering::Relaxed);
                Err(WalError::ThreadPanicked {
                    thread: "a recovery thread",
                })
            }));
        }
        all
    });
    let mut first = None;
    for r in results {
        match r {
            Err(e) => return Err(e),
            Ok(v) if first.is_none() => first = Some(v),
            Ok(_) => {}
        }
    }
    // Share 0 stops early only when another share failed, whose error was returned above.
    first
        .flatten()
        .ok_or_else(|| WalError::Internal(crate::Invariant::StoppedWithoutError("recovery")))
}

/// Whether another share asked to stop (checked once per record).
pub(crate) fn stopped(stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::payload::{RedoBuf, RedoOp};

    fn payload(keys: &[u64]) -> Vec<u8> {
        let mut b = RedoBuf::default();
        for &key in keys {
            b.push(&RedoOp::Delete { table: 1, key });
        }
        b.bytes
    }

    fn keys_of(p: &[u8]) -> Vec<u64> {
        decode_redo(p).map(|o| o.unwrap().key()).collect()
    }

    #[test]
    fn the_shares_split_every_operation_once_in_order() {
        let keys: Vec<u64> = (0..200).collect();
        let p = payload(&keys);
        let n = 3;
        let mut seen = Vec::new();
        for part in 0..n {
            let mut mine = Vec::new();
            Share { part, n }
                .runs(
                    &p,
                    |e| {
                        WalError::Misuse(crate::Misuse::Payload {
                            scheme: "test",
                            source: e,
                        })
                    },
                    |r| {
                        mine.extend(keys_of(r));
                        Ok(())
                    },
                )
                .unwrap();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "share {part} out of order"
            );
            assert!(!mine.is_empty(), "share {part} got nothing of 200 keys");
            seen.extend(mine);
        }
        seen.sort_unstable();
        assert_eq!(seen, keys);
        let mut whole = Vec::new();
        Share { part: 0, n: 1 }
            .runs(
                &p,
                |e| {
                    WalError::Misuse(crate::Misuse::Payload {
                        scheme: "test",
                        source: e,
                    })
                },
                |r| {
                    whole.push(r.len());
                    Ok(())
                },
            )
            .unwrap();
        assert_eq!(
            whole,
            vec![p.len()],
            "one share applies the payload in one run"
        );
    }

    #[test]
    fn a_malformed_payload_is_an_error_in_every_share() {
        let mut p = payload(&[1, 2, 3]);
        p.push(9);
        for part in 0..2 {
            let r = Share { part, n: 2 }.runs(
                &p,
                |e| {
                    WalError::Misuse(crate::Misuse::Payload {
                        scheme: "test",
                        source: e,
                    })
                },
                |_| Ok(()),
            );
            assert!(r.is_err(), "share {part} accepted a bad payload");
        }
    }

    #[test]
    fn the_first_error_in_share_order_is_returned_and_stops_the_others() {
        let m = crate::scan::MemSource::new("mem", 0, 1);
        let src = (
            &m as &(dyn StreamSource + Sync),
            ScanMode::Strict,
            Reading::Once,
        );
        let r: Result<u32, WalError> = run(3, src, |s, _, stop| {
            if s.part == 2 {
                return Err(WalError::Closed(2));
            }
            while !stopped(stop) {
                std::thread::yield_now();
            }
            Ok(None)
        });
        assert!(matches!(r, Err(WalError::Closed(2))));
        let r = run(2, src, |s, _, _| Ok(Some(s.part)));
        assert_eq!(r.unwrap(), 0);
    }
}
