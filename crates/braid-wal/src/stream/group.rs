//! Group reservations: one reservation of the stream that several threads fill, each its own
//! part (Aether's consolidated log inserts with decoupled buffer fill, Johnson et al., VLDB
//! 2010, Sections 5.1-5.2; the consolidation itself is `scheme::aether::carray`).
//!
//! A [`GroupWriter`] is a writer slot that belongs to no thread: whoever leads a group takes
//! the group's whole reservation through it ([`GroupWriter::reserve`], the stream's ordinary
//! announce-then-compare-and-swap of `ready.rs`), the members copy their records into their
//! parts ([`Stream::fill_part`], each encoded for its own LSN exactly as a single append would
//! encode it: checksummed with `salt_for(lsn)` of its own start, so a part that begins in the
//! next segment or ring lap carries that segment's salt and the scanner accepts it), and the
//! last member to finish its copy ends the reservation ([`GroupWriter::release`]: the slot's
//! busy word goes idle and the flusher is woken).
//!
//! **Why the ready point never passes an unfilled part.** The slot's busy word is announced
//! at or below the group's start before the compare-and-swap that reserves it, and is set idle
//! only by [`GroupWriter::release`]. The caller (the consolidation array) calls `release` only
//! after every member's fill happens before it: each member finishes with a read-modify-write
//! (acquire-release) on the group's pending count, and the one that brings it to zero has
//! acquired every earlier member's release, hence every earlier fill. So, to the argument of
//! `ready.rs`, the group is one writer whose fill is the union of its members' fills, made
//! before its S3. What the caller must guarantee:
//!
//! * at most one reservation is outstanding on a [`GroupWriter`]: `reserve` again only after
//!   the `release` of the previous group happened before it (a new announcement would
//!   overwrite the busy word that holds the ready point back);
//! * every part of the reservation is filled, and the parts tile it exactly;
//! * `release` exactly once per successful `reserve`.
//!
//! A member that unwinds between the reservation and its fill poisons the stream (as a single
//! append's guard does), and never counts itself done, so the slot stays busy and the ready
//! point never passes the hole.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use super::Stream;
use super::close::Handle;
use super::writer::FillGuard;
use crate::record::ALIGN;
use crate::{Lsn, WalError};

/// A writer slot for group reservations, shared by whoever leads a group on it (see the
/// module documentation for the rules its users follow).
pub(crate) struct GroupWriter {
    h: Arc<Handle>,
    slot: usize,
}

impl std::fmt::Debug for GroupWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupWriter")
            .field("stream", &self.h.inner.id)
            .field("slot", &self.slot)
            .finish()
    }
}

impl Drop for GroupWriter {
    fn drop(&mut self) {
        self.h.inner.res.release(self.slot);
        super::state::BUSY_THREADS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl GroupWriter {
    /// Reserve `len` bytes for a group of `records` records; returns the group's start and the
    /// compare-and-swap attempts on the tail. The slot holds the ready point at or below the
    /// start until [`GroupWriter::release`]. On an error nothing is reserved (and the slot is
    /// idle).
    pub(crate) fn reserve(&self, len: u64, records: u64) -> Result<(Lsn, u64), WalError> {
        let inner = &*self.h.inner;
        if len == 0 || !len.is_multiple_of(ALIGN as u64) {
            return Err(WalError::Misuse(crate::Misuse::Unaligned {
                op: "group reservation",
                lsn: None,
                len,
                align: ALIGN as u64,
                on: Some(format!("stream {}", inner.id)),
            }));
        }
        if len > inner.capacity {
            return Err(WalError::RecordTooLarge {
                len: usize::try_from(len).unwrap_or(usize::MAX),
                max: usize::try_from(inner.capacity).unwrap_or(usize::MAX),
            });
        }
        let mut attempts = 0u64;
        let lsn = inner.reserve(self.slot, len, &mut attempts, &mut 0)?;
        inner.res.count_many(self.slot, records, len);
        Ok((lsn, attempts))
    }

    /// Every part of the outstanding group, which ends at `end`, is filled: the ready point
    /// may pass it. Returns whether the flusher's mutex was taken to wake it.
    pub(crate) fn release(&self, end: Lsn) -> bool {
        let inner = &*self.h.inner;
        inner.res.finish(self.slot);
        inner.wake_flusher(end)
    }
}

impl Stream {
    /// A slot for group reservations ([`GroupWriter`]): claims one of the stream's
    /// `max_writers` slots until dropped.
    pub(crate) fn group_writer(&self) -> Result<GroupWriter, WalError> {
        let slot = self.claim_slot()?;
        Ok(GroupWriter {
            h: Arc::clone(&self.h),
            slot,
        })
    }

    /// Fill one part `[lsn, lsn + len)` of a group reservation: `encode(lsn, synced, salt,
    /// out)` must fill all of `out` with whole records for position `lsn`, as for
    /// [`super::StreamWriter::append_with`]; `scratch` is the caller's encoding buffer. Does
    /// not end the group's reservation (see [`GroupWriter::release`]).
    pub(crate) fn fill_part(
        &self,
        lsn: Lsn,
        len: usize,
        scratch: &mut Vec<u8>,
        encode: impl FnOnce(Lsn, Lsn, u32, &mut [u8]),
    ) {
        let inner = &*self.h.inner;
        let mut guard = FillGuard {
            inner,
            lsn,
            armed: true,
        };
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        let out = &mut scratch[..len];
        let synced = inner.durable.load(Relaxed);
        encode(lsn, synced, inner.device.salt_for(lsn), out);
        inner.device.fill(lsn, out);
        guard.armed = false;
    }

    /// The error that poisoned the stream, if it is poisoned (a member waiting for its
    /// group's leader gives up then: the leader may have unwound).
    pub(crate) fn poisoned(&self) -> Option<WalError> {
        self.h.inner.poison_error()
    }
}
