//! [`CrashSim`]: simulated persistent memory for power-failure tests.
//!
//! A simulated region keeps two images. The *live* image is what loads see (the CPU caches and
//! memory together); the *durable* image is what would survive a power failure. Under
//! [`Domain::Adr`] only persisted data reaches the durable image, as in the x86 model the
//! papers assume (REWIND §2, Wang & Johnson 2014 §4): `flush` snapshots each overlapping line's
//! current live bytes as *pending*; `fence` moves pending snapshots (in the order they were
//! taken) to the durable image; `write_nt` marks the words it wrote pending with their new
//! content. Under [`Domain::Eadr`] every store (`write`, `write_nt`, `fill`, `store_u64`, a
//! successful `cas_u64`) reaches the durable image at once.
//!
//! [`Region::crash`] builds the post-crash region. [`CrashMode::DropUnpersisted`] keeps the
//! durable image only (flushed-but-unfenced lines are lost). [`CrashMode::KeepRandom`] adds a
//! random subset, chosen by a seeded generator and hence deterministic, of the 8-byte words in
//! which the live image differs from the durable one: unpersisted lines that the cache may have
//! evicted on its own, at the 8-byte failure atomicity of the hardware. It also covers flushed
//! but unfenced lines, since their live content differs from the durable one too.
//!
//! Crash points: [`Region::freeze_after`]`(n)` lets `n` more *persist events* change the
//! durable image and then freezes it, so a test can run an operation to completion, crash, and
//! repeat for every `n` up to [`Region::persist_events`] to visit every crash point. Events:
//! each flushed line (numbered when flushed, applied at the next fence), each line written by
//! `write_nt` (numbered at the fence that drains it), and each fence. Design choice beyond the
//! specification: under eADR, where flushes are no-ops, each store call is an event as well,
//! since every store changes the durable image and a crash may fall between any two of them.
//!
//! Crash points across threads and devices: [`Region::set_trip`] attaches a [`PersistTrip`]
//! that counts each fence (a persist barrier) and holds the fence that trips, before it takes
//! effect, until the test has cut the power.
//!
//! The live image is an array of `AtomicU64` words accessed only atomically (relaxed for bulk
//! bytes, partial words by compare-and-swap), so a test may flush a line while another thread
//! fills other bytes of it without a data race; the pending/durable state sits behind a mutex.
//! Simulated regions execute no flush instruction and are slow; they exist for tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::{CACHE_LINE, Domain, PersistTrip, PmemConfig, Region};

/// Words per cache line.
const LINE_WORDS: usize = CACHE_LINE / 8;

/// How a simulated power failure treats lines that were not persisted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CrashMode {
    /// Keep only what was persisted (flushed and fenced, or stored under eADR).
    DropUnpersisted,
    /// Also keep each unpersisted 8-byte word with probability `keep_probability` (clamped to
    /// 0..=1), chosen deterministically from `seed`.
    KeepRandom {
        /// Seed of the generator that picks the words to keep.
        seed: u64,
        /// Chance that each unpersisted word survives.
        keep_probability: f64,
    },
}

/// Builder of simulated persistent regions for power-failure tests.
///
/// A simulated region keeps a *live* image (what loads see) and a *durable* image (what a power
/// failure leaves). Under [`Domain::Adr`] a line reaches the durable image when it was flushed
/// and then fenced (streaming stores: when fenced); under [`Domain::Eadr`] every store reaches
/// it at once. [`Region::crash`] builds the post-crash region, keeping the durable image only
/// ([`CrashMode::DropUnpersisted`]) or also a seeded random subset of the unpersisted 8-byte
/// words ([`CrashMode::KeepRandom`]); [`Region::crash_together`] cuts several regions at one
/// instant. Simulated regions execute no flush instruction and are slow: they are for tests.
///
/// ```
/// use braid_pmem::{CrashMode, CrashSim, PmemConfig};
///
/// let r = CrashSim::region(4096, PmemConfig::default());
/// r.write(0, b"durable!");
/// r.persist(0, 8);
/// r.write(64, b"volatile"); // another cache line, never flushed
///
/// let after = r.crash(CrashMode::DropUnpersisted)?;
/// let mut buf = [0u8; 8];
/// after.read(0, &mut buf);
/// assert_eq!(&buf, b"durable!");
/// after.read(64, &mut buf);
/// assert_eq!(buf, [0; 8]);
/// # Ok::<(), braid_pmem::PmemError>(())
/// ```
#[derive(Debug)]
pub struct CrashSim;

impl CrashSim {
    /// A simulated persistent region of `size` zero bytes with the durability domain and write
    /// delay of `cfg` (the flush instruction is recorded but never executed).
    pub fn region(size: usize, cfg: PmemConfig) -> Region {
        Region::from_sim(size, cfg, None)
    }
}

/// Source bytes of a store.
#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    Bytes(&'a [u8]),
    Fill(u8),
}

impl Src<'_> {
    #[inline]
    fn at(&self, i: usize) -> u8 {
        match self {
            Src::Bytes(b) => b[i],
            Src::Fill(x) => *x,
        }
    }
}

/// A line snapshot waiting for a fence.
struct Pending {
    line: usize,
    words: [u64; LINE_WORDS],
    /// Bit `i` set: word `i` of the line is to be made durable.
    mask: u8,
    /// Event number: given at flush time for flushes, at the fence for streaming stores.
    event: Option<u64>,
}

struct SimState {
    durable: Vec<u64>,
    pending: Vec<Pending>,
    events: u64,
    /// Events numbered above this do not reach the durable image.
    limit: Option<u64>,
}

impl SimState {
    fn next_event(&mut self) -> bool {
        self.events += 1;
        self.allowed(self.events)
    }

    fn allowed(&self, event: u64) -> bool {
        self.limit.is_none_or(|l| event <= l)
    }
}

pub(crate) struct Sim {
    /// Live image, whole lines (the tail past the region's size stays zero).
    live: Box<[AtomicU64]>,
    domain: Domain,
    state: Mutex<SimState>,
    /// Tripwire held at the start of every fence (see [`PersistTrip`]); its own lock, so a
    /// thread held there holds no lock a crash needs.
    trip: Mutex<Option<Arc<PersistTrip>>>,
}

impl Sim {
    pub(crate) fn new(size: usize, domain: Domain, image: Option<Vec<u64>>) -> Sim {
        let nwords = size.div_ceil(CACHE_LINE) * LINE_WORDS;
        let durable = match image {
            Some(mut img) => {
                img.resize(nwords, 0);
                img
            }
            None => vec![0; nwords],
        };
        let live = durable.iter().map(|&w| AtomicU64::new(w)).collect();
        Sim {
            live,
            domain,
            state: Mutex::new(SimState {
                durable,
                pending: Vec::new(),
                events: 0,
                limit: None,
            }),
            trip: Mutex::new(None),
        }
    }

    /// The live image's first word, for the region's direct loads and stores: the image
    /// holds whole lines covering the region (a multiple of 8 bytes), is never reallocated,
    /// and is accessed only through these atomics.
    pub(crate) fn live_ptr(&self) -> *mut u8 {
        self.live.as_ptr().cast::<u8>().cast_mut()
    }

    /// Store `len` bytes of `src` into the live image at `off` (bounds already checked).
    fn store_live(&self, off: usize, len: usize, src: Src<'_>) {
        let mut i = 0;
        while i < len {
            let pos = off + i;
            let w = pos / 8;
            let b = pos % 8;
            let take = (8 - b).min(len - i);
            if take == 8 {
                let mut bytes = [0u8; 8];
                for (k, byte) in bytes.iter_mut().enumerate() {
                    *byte = src.at(i + k);
                }
                self.live[w].store(u64::from_ne_bytes(bytes), Ordering::Relaxed);
            } else {
                let merge = |old: u64| {
                    let mut bytes = old.to_ne_bytes();
                    for k in 0..take {
                        bytes[b + k] = src.at(i + k);
                    }
                    Some(u64::from_ne_bytes(bytes))
                };
                // The closure always returns Some, so the update cannot fail.
                let _ = self.live[w].fetch_update(Ordering::Relaxed, Ordering::Relaxed, merge);
            }
            i += take;
        }
    }

    /// Word indices touched by `[off, off + len)`, `len > 0`.
    fn words_of(off: usize, len: usize) -> std::ops::RangeInclusive<usize> {
        off / 8..=(off + len - 1) / 8
    }

    /// Copy the live words `ws` to the durable image.
    fn to_durable(&self, st: &mut SimState, ws: std::ops::RangeInclusive<usize>) {
        for w in ws {
            st.durable[w] = self.live[w].load(Ordering::Relaxed);
        }
    }

    /// Under eADR: one event for one store; copy its words to the durable image if allowed.
    fn eadr_store(&self, off: usize, len: usize, src: Src<'_>) {
        let mut st = self.state.lock();
        self.store_live(off, len, src);
        if st.next_event() && len > 0 {
            self.to_durable(&mut st, Self::words_of(off, len));
        }
    }

    pub(crate) fn write(&self, off: usize, len: usize, src: Src<'_>) {
        match self.domain {
            Domain::Adr => self.store_live(off, len, src),
            Domain::Eadr => self.eadr_store(off, len, src),
        }
    }

    pub(crate) fn write_nt(&self, off: usize, len: usize, src: Src<'_>) {
        if self.domain == Domain::Eadr {
            return self.eadr_store(off, len, src);
        }
        self.store_live(off, len, src);
        if len == 0 {
            return;
        }
        let mut st = self.state.lock();
        let first = off / CACHE_LINE;
        let last = (off + len - 1) / CACHE_LINE;
        for line in first..=last {
            let lo = (line * CACHE_LINE).max(off);
            let hi = ((line + 1) * CACHE_LINE).min(off + len);
            let mut mask = 0u8;
            for w in Self::words_of(lo, hi - lo) {
                mask |= 1 << (w % LINE_WORDS);
            }
            let words = self.snapshot(line);
            st.pending.push(Pending {
                line,
                words,
                mask,
                event: None,
            });
        }
    }

    fn snapshot(&self, line: usize) -> [u64; LINE_WORDS] {
        let mut words = [0u64; LINE_WORDS];
        for (i, w) in words.iter_mut().enumerate() {
            *w = self.live[line * LINE_WORDS + i].load(Ordering::Relaxed);
        }
        words
    }

    pub(crate) fn store(&self, off: usize, v: u64) {
        match self.domain {
            Domain::Adr => self.live[off / 8].store(v, Ordering::Release),
            Domain::Eadr => {
                let mut st = self.state.lock();
                self.live[off / 8].store(v, Ordering::Release);
                if st.next_event() {
                    st.durable[off / 8] = v;
                }
            }
        }
    }

    pub(crate) fn cas(&self, off: usize, old: u64, new: u64) -> Result<u64, u64> {
        let word = &self.live[off / 8];
        match self.domain {
            Domain::Adr => word.compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire),
            Domain::Eadr => {
                let mut st = self.state.lock();
                let r = word.compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire);
                if r.is_ok() && st.next_event() {
                    st.durable[off / 8] = new;
                }
                r
            }
        }
    }

    /// ADR flush (the region skips the call under eADR): snapshot each line as pending.
    pub(crate) fn flush(&self, off: usize, len: usize) {
        if len == 0 {
            return;
        }
        let mut st = self.state.lock();
        for line in off / CACHE_LINE..=(off + len - 1) / CACHE_LINE {
            st.events += 1;
            let event = Some(st.events);
            let words = self.snapshot(line);
            st.pending.push(Pending {
                line,
                words,
                mask: 0xFF,
                event,
            });
        }
    }

    /// Attach a tripwire (replacing any earlier one).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn set_trip(&self, trip: Arc<PersistTrip>) {
        *self.trip.lock() = Some(trip);
    }

    /// A fence is about to happen: count it on the tripwire, which may hold this thread. Takes
    /// no other lock (the trip's slot is released before the wait).
    pub(crate) fn trip_point(&self) {
        let trip = self.trip.lock().clone();
        if let Some(t) = trip {
            t.persist_event();
        }
    }

    pub(crate) fn fence(&self) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let pending = std::mem::take(&mut st.pending);
        for p in &pending {
            let event = match p.event {
                Some(e) => e,
                None => {
                    st.events += 1;
                    st.events
                }
            };
            if !st.allowed(event) {
                continue;
            }
            for (i, &w) in p.words.iter().enumerate() {
                if p.mask & (1 << i) != 0 {
                    st.durable[p.line * LINE_WORDS + i] = w;
                }
            }
        }
        // Keep the allocation for the next batch.
        st.pending = pending;
        st.pending.clear();
        st.events += 1;
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn freeze_after(&self, n: u64) {
        let mut st = self.state.lock();
        st.limit = Some(st.events.saturating_add(n));
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn events(&self) -> u64 {
        self.state.lock().events
    }

    /// The image a power failure now would leave.
    pub(crate) fn crash_image(&self, mode: CrashMode) -> Vec<u64> {
        let st = self.state.lock();
        self.image_of(&st, mode)
    }

    /// Images of several simulated regions cut at one instant: every region's state lock is
    /// held while the images are taken, so no fence in any of them completes in between (a
    /// thread blocked in a fence cannot go on to store anything that depends on it).
    pub(crate) fn crash_images(sims: &[(&Sim, CrashMode)]) -> Vec<Vec<u64>> {
        let guards: Vec<_> = sims.iter().map(|(s, _)| s.state.lock()).collect();
        sims.iter()
            .zip(&guards)
            .map(|((s, mode), st)| s.image_of(st, *mode))
            .collect()
    }

    fn image_of(&self, st: &SimState, mode: CrashMode) -> Vec<u64> {
        let mut image = st.durable.clone();
        if let CrashMode::KeepRandom {
            seed,
            keep_probability,
        } = mode
        {
            let p = if keep_probability.is_nan() {
                0.0
            } else {
                keep_probability.clamp(0.0, 1.0)
            };
            let mut rng = SmallRng::seed_from_u64(seed);
            for (i, slot) in image.iter_mut().enumerate() {
                let live = self.live[i].load(Ordering::Relaxed);
                if live != *slot && rng.gen_bool(p) {
                    *slot = live;
                }
            }
        }
        image
    }
}
