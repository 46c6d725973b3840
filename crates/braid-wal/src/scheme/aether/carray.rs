//! The consolidation array (Aether, Johnson et al., VLDB 2010, Section 5.1, "consolidating
//! buffer allocation"), with the group bookkeeping of decoupled buffer fill (Section 5.2).
//!
//! Threads that come to insert into the log while another holds (or waits for) the log's
//! insert lock combine their requests, so one acquisition of the lock reserves space for a
//! whole group:
//!
//! ```text
//! join     a slot's state word: CLOSED bit | members | bytes. A thread adds (1, len) to the
//!          first open slot with a compare-and-swap; the bytes before its addition are its
//!          offset in the group. The first to join an empty slot is the group's leader.
//! lead     the leader takes the insert lock, closes the slot (swap: later arrivals go to
//!          another slot), reserves the group's bytes in the log, releases the lock, stores the
//!          member count and publishes the group's base (release store).
//! wait     the other members wait (spin, yield, park: `crate::wait`) until the base is
//!          published; the leader notifies after publishing.
//! fill     each member copies its own record to base + offset, outside any lock (Sec. 5.2).
//! finish   each member decrements the pending count (acquire-release); the last one ends the
//!          group's log reservation (so the log's ready point may pass it) and reopens the slot
//!          (release store of an empty state), in that order, and notifies arrivals waiting
//!          for a slot.
//! ```
//!
//! A group of one (no one joined before the leader closed its slot) skips the pending count:
//! the leader finishes on its own.
//!
//! Every slot comes with its own log reservation slot (the caller's `reserve` closure takes
//! the group's reservation through the writer slot of the same index), so a leader goes on as
//! soon as its own record is copied, and a slot's next group reserves only after its previous
//! group released: the finish that reopens the slot happens after that release, and the next
//! leader's join reads the reopened state (acquire), so it happens before the next
//! reservation.
//!
//! The paper's C-array swaps a full slot out for a fresh one from a pool so new arrivals never
//! wait for the old group's members; here a closed slot stays out of use until its group has
//! finished, and arrivals probe the next slot. Arrivals probe from slot 0, so threads that
//! arrive while a leader waits for the lock land in the same group; with every slot closed
//! they wait until a group finishes and reopens its slot. A group grows to at most `max_group` bytes (a record larger than
//! that goes alone into an empty slot), so a group always fits the log's ring.
//!
//! Under `--cfg loom` the atomics, the lock and the waits are loom's ([`crate::sync`]);
//! `tests/loom_aether.rs` model-checks this code with the stream's real reservation protocol
//! (a lost wake-up of a waiting member or arrival would show there as a deadlock).

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::Lsn;
use crate::sync::{AtomicU64, Mutex};
use crate::wait::Progress;

/// How often a member waiting for its leader asks its `give_up` although nothing notified it:
/// the poisoning that makes it give up (a leader that unwound without publishing) is the
/// stream's, which does not notify this array. A safety net: leaders always publish.
const GIVE_UP_RECHECK: Duration = Duration::from_millis(10);

/// The state bit of a slot whose leader has taken the group out of joining.
const CLOSED: u64 = 1 << 63;
/// Members are counted above this bit; bytes below it.
const COUNT_SHIFT: u32 = 40;
const BYTES: u64 = (1 << COUNT_SHIFT) - 1;
/// Most members of one group (the count's field).
const MAX_MEMBERS: u64 = (1 << (63 - COUNT_SHIFT)) - 1;
/// Most bytes one record may have (the bytes' field).
pub(crate) const MAX_RECORD: u64 = BYTES;

/// `base` before the leader has published it.
const UNPUBLISHED: u64 = u64::MAX;
/// `base` of a group whose reservation failed.
const FAILED: u64 = u64::MAX - 1;

/// One slot: its state word, and the group's base, end and pending count, on one cache line.
#[derive(Debug)]
struct Slot {
    state: AtomicU64,
    base: AtomicU64,
    end: AtomicU64,
    pending: AtomicU64,
}

/// A thread's place in a group, from [`ConsolidationArray::join`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Joined {
    /// The slot (and the log reservation slot of the same index).
    pub slot: usize,
    /// Where the thread's record starts in the group's reservation.
    pub offset: u64,
    /// The first to join: it leads the group.
    pub leader: bool,
    /// Compare-and-swap attempts on slot state words.
    pub attempts: u64,
}

/// A group whose reservation is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Group {
    /// Where its reservation starts.
    pub base: Lsn,
    /// Where it ends.
    pub end: Lsn,
    /// Its leader is its only member (known to the leader only; members see `false`).
    pub alone: bool,
}

/// Why a member got no group from [`ConsolidationArray::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitError {
    /// The leader's reservation failed: the member must still [`ConsolidationArray::finish`]
    /// (with no group).
    Failed,
    /// The caller's `give_up` said so (the log is poisoned): the slot stays out of use.
    GaveUp,
}

/// What [`ConsolidationArray::finish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finished {
    /// This member was the group's last: it released the reservation and reopened the slot.
    pub last: bool,
    /// Read-modify-writes on the slot (the pending count).
    pub rmw: u64,
}

/// Slots where inserting threads combine their log reservations (see the module docs).
#[derive(Debug)]
pub(crate) struct ConsolidationArray {
    slots: Box<[CachePadded<Slot>]>,
    /// The log's insert lock: held by one leader at a time across its group's reservation.
    lock: Mutex<()>,
    max_group: u64,
    /// Members waiting for their group's base and arrivals waiting for a slot wait here;
    /// notified when a base is published and when a slot reopens.
    progress: Progress,
}

fn members(state: u64) -> u64 {
    (state & !CLOSED) >> COUNT_SHIFT
}

fn bytes(state: u64) -> u64 {
    state & BYTES
}

impl ConsolidationArray {
    /// `slots` slots (at least one), groups of at most `max_group` bytes.
    pub(crate) fn new(slots: usize, max_group: u64) -> ConsolidationArray {
        ConsolidationArray {
            slots: (0..slots.max(1))
                .map(|_| {
                    CachePadded::new(Slot {
                        state: AtomicU64::new(0),
                        base: AtomicU64::new(UNPUBLISHED),
                        end: AtomicU64::new(0),
                        pending: AtomicU64::new(0),
                    })
                })
                .collect(),
            lock: Mutex::new(()),
            max_group: max_group.min(BYTES),
            progress: Progress::new(),
        }
    }

    /// Join a group with a record of `len` bytes (`0 < len <= MAX_RECORD`), waiting while
    /// every slot is closed or full.
    pub(crate) fn join(&self, len: u64) -> Joined {
        let mut attempts = 0u64;
        // With every slot closed or full, wait until a group finishes (`finish` notifies).
        self.progress.wait(|| self.try_join(len, &mut attempts))
    }

    /// One pass over the slots: join the first open one with room, if any.
    fn try_join(&self, len: u64, attempts: &mut u64) -> Option<Joined> {
        for (i, s) in self.slots.iter().enumerate() {
            let mut cur = s.state.load(Acquire);
            loop {
                let (n, b) = (members(cur), bytes(cur));
                if cur & CLOSED != 0
                    || n == MAX_MEMBERS
                    || (n > 0 && b.saturating_add(len) > self.max_group)
                {
                    break;
                }
                *attempts += 1;
                match s
                    .state
                    .compare_exchange(cur, cur + (1 << COUNT_SHIFT) + len, AcqRel, Acquire)
                {
                    Ok(_) => {
                        return Some(Joined {
                            slot: i,
                            offset: b,
                            leader: n == 0,
                            attempts: *attempts,
                        });
                    }
                    Err(now) => cur = now,
                }
            }
        }
        None
    }

    /// The leader's part: take the insert lock, close the slot, `reserve(bytes, members)` the
    /// group's bytes in the log, release the lock and publish the base. On an error the group
    /// is published as failed and the error returned; the leader must still
    /// [`ConsolidationArray::finish`] (with no group).
    pub(crate) fn lead<E>(
        &self,
        j: &Joined,
        reserve: impl FnOnce(u64, u64) -> Result<Lsn, E>,
    ) -> Result<Group, E> {
        let s = &self.slots[j.slot];
        let guard = self.lock.lock();
        let closed = s.state.swap(CLOSED, AcqRel);
        let (n, len) = (members(closed), bytes(closed));
        let reserved = reserve(len, n);
        drop(guard);
        // Read by members only after they acquire the base below.
        s.pending.store(n, Relaxed);
        let r = match reserved {
            Ok(base) => {
                s.end.store(base + len, Relaxed);
                s.base.store(base, Release);
                Ok(Group {
                    base,
                    end: base + len,
                    alone: n == 1,
                })
            }
            Err(e) => {
                s.base.store(FAILED, Release);
                Err(e)
            }
        };
        // After the base: its members may be parked waiting for it.
        if n > 1 {
            self.progress.notify();
        }
        r
    }

    /// A member's wait for its leader to publish the group's base. `give_up` is asked at
    /// every look (and every [`GIVE_UP_RECHECK`] while parked).
    pub(crate) fn wait(
        &self,
        j: &Joined,
        mut give_up: impl FnMut() -> bool,
    ) -> Result<Group, WaitError> {
        let s = &self.slots[j.slot];
        let mut poll = || match s.base.load(Acquire) {
            FAILED => Some(Err(WaitError::Failed)),
            UNPUBLISHED => give_up().then_some(Err(WaitError::GaveUp)),
            base => Some(Ok(Group {
                base,
                end: s.end.load(Relaxed),
                alone: false,
            })),
        };
        loop {
            let recheck = Instant::now() + GIVE_UP_RECHECK;
            if let Some(r) = self.progress.wait_until(recheck, &mut poll) {
                return r;
            }
        }
    }

    /// A member is done with its group (its part filled, or the group failed: `group` is
    /// `None`). The last member calls `release(group)` (end the log reservation) if the group
    /// was reserved, then reopens the slot.
    pub(crate) fn finish(
        &self,
        j: &Joined,
        group: Option<&Group>,
        release: impl FnOnce(&Group),
    ) -> Finished {
        let s = &self.slots[j.slot];
        let (last, rmw) = match group {
            Some(g) if g.alone => (true, 0),
            _ => (s.pending.fetch_sub(1, AcqRel) == 1, 1),
        };
        if last {
            if let Some(g) = group {
                release(g);
            }
            s.base.store(UNPUBLISHED, Relaxed);
            // After the release above: the next leader of this slot reserves only after this.
            s.state.store(0, Release);
            // Arrivals may be parked with every slot closed.
            self.progress.notify();
        }
        Finished { last, rmw }
    }
}
