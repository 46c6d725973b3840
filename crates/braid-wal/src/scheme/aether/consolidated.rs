//! Aether's log insert (Johnson et al., VLDB 2010): consolidated buffer allocation (Sec. 5.1,
//! the [`ConsolidationArray`]) and decoupled buffer fill (Sec. 5.2) on braid's stream.
//!
//! An insert joins a group in the consolidation array. The group's leader takes the log's
//! insert lock once for the group and reserves the group's total bytes through the stream
//! writer slot that belongs to its array slot ([`GroupWriter::reserve`]); every member then
//! encodes its own record for its own LSN (the group's base plus its offset) and copies it
//! outside any lock ([`Stream::fill_part`]); the last member to finish its copy ends the
//! reservation ([`GroupWriter::release`]), so the stream's ready point passes the group only
//! once every part is filled. The protocol and why it is safe: `carray.rs` and
//! `stream/group.rs`; its loom model: `tests/loom_aether.rs`.
//!
//! If the leader's reservation fails (the stream is closed, poisoned, stalled, or the ring is
//! full), every member of the group gets the leader's error.

use parking_lot::Mutex;

use super::carray::{ConsolidationArray, MAX_RECORD, WaitError};
use crate::proxy::{AppendCost, ProxyCounter};
use crate::record::RecordSpec;
use crate::scheme::central::Insert;
use crate::stream::{GroupWriter, Stream};
use crate::{Lsn, WalError};

/// Largest group, in bytes (also bounded by half the ring).
const MAX_GROUP: u64 = 1 << 20;

/// The central log with a consolidation array in front of its insert lock.
pub(super) struct Consolidated {
    stream: Stream,
    carray: ConsolidationArray,
    /// The stream writer slot of each array slot.
    writers: Box<[GroupWriter]>,
    /// The error of each slot's last failed reservation, for its members.
    errors: Box<[Mutex<Option<WalError>>]>,
    capacity: u64,
}

impl Consolidated {
    /// The log on `stream` with `slots` array slots (each claims one of the stream's writer
    /// slots).
    pub(super) fn new(stream: Stream, slots: usize) -> Result<Consolidated, WalError> {
        let slots = slots.max(1);
        let capacity = stream.device().capacity();
        let writers = (0..slots)
            .map(|_| stream.group_writer())
            .collect::<Result<Vec<_>, _>>()?
            .into_boxed_slice();
        Ok(Consolidated {
            carray: ConsolidationArray::new(slots, MAX_GROUP.min(capacity / 2)),
            writers,
            errors: (0..slots).map(|_| Mutex::new(None)).collect(),
            stream,
            capacity,
        })
    }

    fn failed(&self, slot: usize) -> WalError {
        self.errors[slot].lock().clone().unwrap_or_else(|| {
            WalError::Internal(crate::Invariant::Reservation {
                stream: self.stream.id(),
            })
        })
    }
}

impl Insert for Consolidated {
    type Local = Vec<u8>;

    fn local(&self) -> Result<Vec<u8>, WalError> {
        Ok(Vec::new())
    }

    fn insert(
        &self,
        scratch: &mut Vec<u8>,
        spec: &RecordSpec<'_>,
        proxy: &ProxyCounter,
    ) -> Result<Lsn, WalError> {
        let len = spec.check()?;
        let len64 = len as u64;
        if len64 > self.capacity || len64 > MAX_RECORD {
            return Err(WalError::RecordTooLarge {
                len,
                max: usize::try_from(self.capacity.min(MAX_RECORD)).unwrap_or(usize::MAX),
            });
        }
        let j = self.carray.join(len64);
        // The join's compare-and-swaps on the slot's line.
        let mut rmw = j.attempts;
        let mut lines = 1;
        let published = if j.leader {
            let mut tail = 0;
            let led = self.carray.lead(&j, |bytes, members| {
                self.writers[j.slot]
                    .reserve(bytes, members)
                    .map(|(lsn, attempts)| {
                        tail = attempts;
                        lsn
                    })
                    .inspect_err(|e| *self.errors[j.slot].lock() = Some(e.clone()))
            });
            // The insert lock (lock and unlock, its own line), the close of the slot, the
            // tail's compare-and-swaps (its own line).
            rmw += 3 + tail;
            lines += 2;
            led.map_err(Some)
        } else {
            self.carray
                .wait(&j, || self.stream.poisoned().is_some())
                .map_err(|w| match w {
                    WaitError::Failed => Some(self.failed(j.slot)),
                    WaitError::GaveUp => None,
                })
        };
        let group = match published {
            Ok(g) => g,
            Err(Some(e)) => {
                let f = self.carray.finish(&j, None, |_| {});
                rmw += f.rmw;
                proxy.shared(rmw, lines);
                proxy.global(rmw);
                return Err(e);
            }
            Err(None) => {
                // The stream is poisoned; the group stays out of use with it.
                return Err(self
                    .stream
                    .poisoned()
                    .unwrap_or_else(|| self.failed(j.slot)));
            }
        };
        let lsn = group.base + j.offset;
        self.stream
            .fill_part(lsn, len, scratch, |lsn, synced, salt, out| {
                spec.encode(lsn, synced, salt, out)
            });
        let mut woke = false;
        let f = self.carray.finish(&j, Some(&group), |g| {
            woke = self.writers[j.slot].release(g.end);
        });
        // The pending count (on the slot's line), the flusher's mutex if the release woke it,
        // and the partial buffer lines a neighbouring record also writes.
        rmw += f.rmw + if woke { 2 } else { 0 };
        lines += u64::from(woke) + AppendCost::boundary_lines(lsn, lsn + len64);
        proxy.shared(rmw, lines);
        proxy.global(rmw);
        Ok(lsn + len64)
    }
}
