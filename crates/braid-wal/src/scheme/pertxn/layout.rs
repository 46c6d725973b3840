//! The persistent layout of the NV-Logging log (Huang et al. 2014, Sections 4.2 and 5.1,
//! Figure 10): a superblock, the persistent log head and tail, the circular log index, and the
//! pre-allocated object slots, all in one persistent [`Region`].
//!
//! ```text
//! 0      superblock line: magic u64 | version u32, slot size u32 | entries u64 | salt u64 | crc u64
//! 64     log head  u64  (own cache line) first LSN still needed in the index
//! 128    log tail  u64  (own cache line) hint: every LSN below it was persistent once
//! 4096   index: `entries` x 16 bytes {offset u64, state u64}
//! slots  `entries` x slot_size bytes, 64-byte aligned
//! ```
//!
//! Choices where the paper is vague:
//!
//! * The paper's entry is {state bit, 4-byte pointer}. Ours is two 8-byte words so each can be
//!   updated with one atomic 8-byte store (Section 5.2): the object's offset in the region
//!   (written once, when the region is formatted, like the paper's pointers "set to
//!   pre-allocated space in NVRAM" at startup), and a state word `lsn << 1 | 1` (0 = clear).
//!   Putting the LSN next to the state bit lets recovery tell an entry of this lap of the
//!   circular index from a stale one without trusting the head alone.
//! * The entry of LSN `l` is `l mod entries`, and its slot is the entry's slot, so "a log
//!   entry can be easily located if a LSN is within the range" [head, head + entries).
//! * Objects are braid records ([`crate::record`]) whose `lsn` field is the object's LSN and
//!   whose checksum is salted with the region's salt: the record's checksum plays the role of
//!   the paper's state bit inside the log object.
//! * Formatting writes the index and the superblock, persists them, then writes and persists
//!   the magic word last: a region without the magic was never used and is formatted again.
//! * The tail is a hint, never written on the commit path: it is set to the frontier when the
//!   log is closed cleanly and by recovery, and recovery treats a missing or damaged object
//!   below it as corruption rather than as the end of the log. It is deliberately not advanced
//!   in the background while the log runs: a running tail could only prove more if its store
//!   were ordered after the state words it covers, and crash simulations that keep random
//!   unpersisted words (stores made after the simulated cut included) would then report
//!   corruption that no real power failure can produce.

use braid_pmem::{CACHE_LINE, Region};

use crate::{Corruption, WalError};

/// "BRDPTXN1", little endian.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"BRDPTXN1");
/// Layout version this build writes and reads.
pub(crate) const VERSION: u32 = 1;
/// Bytes per index entry.
pub(crate) const ENTRY_LEN: usize = 16;
/// Offset of the persistent log head.
pub(crate) const HEAD_OFF: usize = 64;
/// Offset of the persistent log tail (a recovery hint).
pub(crate) const TAIL_OFF: usize = 128;
/// Offset of the index.
pub(crate) const INDEX_OFF: usize = 4096;
/// Smallest slot: a record header and a little payload.
pub(crate) const MIN_SLOT: usize = 128;
/// Largest slot: the packed DRAM slot state keeps the object's cache lines in 14 bits.
pub(crate) const MAX_SLOT: usize = (1 << 14) * CACHE_LINE - CACHE_LINE;
/// Fewest index entries a region may have.
pub(crate) const MIN_ENTRIES: u64 = 16;
/// LSNs must fit the 48 bits the DRAM slot state keeps of them.
pub(crate) const MAX_LSN: u64 = (1 << 48) - 1;

const SB_WORDS: usize = 4;

/// Where everything is in a formatted region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Bytes per object slot.
    pub slot_size: usize,
    /// Index entries (and slots): the entry of LSN `l` is `l mod entries`.
    pub entries: u64,
    /// The region's checksum salt.
    pub salt: u32,
    /// Offset of the first slot in the region.
    pub slots_off: usize,
}

/// The state word of a valid entry for `lsn`.
#[inline]
pub(crate) fn state_word(lsn: u64) -> u64 {
    (lsn << 1) | 1
}

/// The LSN a state word marks valid, if any.
#[inline]
pub(crate) fn state_lsn(word: u64) -> Option<u64> {
    (word & 1 == 1).then_some(word >> 1)
}

impl Layout {
    /// The layout a region of `len` bytes gets with slots of `slot_size` bytes.
    pub(crate) fn plan(len: usize, slot_size: usize, salt: u32) -> Result<Layout, WalError> {
        if !(MIN_SLOT..=MAX_SLOT).contains(&slot_size) || !slot_size.is_multiple_of(CACHE_LINE) {
            return Err(WalError::BadSize(crate::BadSize::Slot {
                bytes: slot_size,
                align: CACHE_LINE,
                min: MIN_SLOT,
                max: MAX_SLOT,
            }));
        }
        let avail = len.saturating_sub(INDEX_OFF + CACHE_LINE);
        let entries = (avail / (ENTRY_LEN + slot_size)) as u64;
        if entries < MIN_ENTRIES {
            return Err(WalError::BadSize(crate::BadSize::Slots {
                bytes: len,
                entries,
                slot: slot_size,
                min: MIN_ENTRIES,
            }));
        }
        let slots_off = (INDEX_OFF + entries as usize * ENTRY_LEN).next_multiple_of(CACHE_LINE);
        Ok(Layout {
            slot_size,
            entries,
            salt,
            slots_off,
        })
    }

    /// Index entry (and slot) number of `lsn`.
    #[inline]
    pub(crate) fn index_of(&self, lsn: u64) -> usize {
        (lsn % self.entries) as usize
    }

    /// Offset of the entry of `lsn` (its offset word; the state word follows).
    #[inline]
    pub(crate) fn entry_off(&self, lsn: u64) -> usize {
        INDEX_OFF + self.index_of(lsn) * ENTRY_LEN
    }

    /// Offset of the state word of the entry of `lsn`.
    #[inline]
    pub(crate) fn state_off(&self, lsn: u64) -> usize {
        self.entry_off(lsn) + 8
    }

    /// Offset of the slot of entry `index`.
    #[inline]
    pub(crate) fn slot_of_index(&self, index: usize) -> usize {
        self.slots_off + index * self.slot_size
    }

    /// Offset of the slot of `lsn`.
    #[inline]
    pub(crate) fn slot_off(&self, lsn: u64) -> usize {
        self.slot_of_index(self.index_of(lsn))
    }

    /// Largest payload one object (record) carries.
    pub(crate) fn chunk(&self) -> usize {
        self.slot_size - crate::record::HEADER_LEN
    }

    fn words(&self) -> [u64; SB_WORDS] {
        [
            u64::from(VERSION) | ((self.slot_size as u64) << 32),
            self.entries,
            u64::from(self.salt),
            0,
        ]
    }

    fn crc(words: &[u64; SB_WORDS]) -> u64 {
        let mut b = [0u8; 8 * (SB_WORDS - 1)];
        for (c, w) in b.chunks_exact_mut(8).zip(words) {
            c.copy_from_slice(&w.to_le_bytes());
        }
        u64::from(crc32c::crc32c(&b))
    }
}

/// The region's name for messages.
pub(crate) fn region_name(region: &Region) -> String {
    region.path().map_or_else(
        || "the pertxn region".to_string(),
        |p| p.display().to_string(),
    )
}

/// Format `region`: every entry points at its slot with its state clear, head = tail = 0.
pub(crate) fn format(region: &Region, slot_size: usize, salt: u32) -> Result<Layout, WalError> {
    let layout = Layout::plan(region.len(), slot_size, salt)?;
    region.store_u64(0, 0);
    region.persist(0, 8);
    for i in 0..layout.entries as usize {
        let off = INDEX_OFF + i * ENTRY_LEN;
        region.store_u64(off, layout.slot_of_index(i) as u64);
        region.store_u64(off + 8, 0);
    }
    region.flush(INDEX_OFF, layout.entries as usize * ENTRY_LEN);
    region.store_u64(HEAD_OFF, 0);
    region.store_u64(TAIL_OFF, 0);
    region.flush(HEAD_OFF, 8);
    region.flush(TAIL_OFF, 8);
    let mut words = layout.words();
    words[SB_WORDS - 1] = Layout::crc(&words);
    for (i, w) in words.iter().enumerate() {
        region.store_u64(8 + 8 * i, *w);
    }
    region.persist(8, 8 * SB_WORDS);
    region.store_u64(0, MAGIC);
    region.persist(0, 8);
    Ok(layout)
}

/// Read the layout of a formatted region; `None` if it was never formatted (no magic).
pub(crate) fn read(region: &Region) -> Result<Option<Layout>, WalError> {
    if region.len() < INDEX_OFF + CACHE_LINE {
        return Err(WalError::BadSize(crate::BadSize::PertxnRegion {
            region: region_name(region),
            bytes: region.len(),
        }));
    }
    if region.load_u64(0) != MAGIC {
        return Ok(None);
    }
    let mut words = [0u64; SB_WORDS];
    for (i, w) in words.iter_mut().enumerate() {
        *w = region.load_u64(8 + 8 * i);
    }
    let bad = |damage: Corruption| WalError::Corrupt {
        file: region_name(region),
        offset: 8,
        damage,
    };
    if Layout::crc(&words) != words[SB_WORDS - 1] {
        return Err(bad(Corruption::SuperblockChecksum));
    }
    let version = (words[0] & 0xFFFF_FFFF) as u32;
    if version != VERSION {
        return Err(WalError::BadSegment {
            file: region_name(region),
            damage: crate::SegmentDamage::Version {
                what: "pertxn layout",
                version,
                reads: VERSION,
            },
        });
    }
    let slot_size = (words[0] >> 32) as usize;
    let layout = Layout::plan(region.len(), slot_size, words[2] as u32).map_err(|e| {
        bad(Corruption::SuperblockLayout {
            source: Box::new(e),
        })
    })?;
    if layout.entries != words[1] {
        return Err(bad(Corruption::SuperblockEntries {
            recorded: words[1],
            holds: layout.entries,
        }));
    }
    Ok(Some(layout))
}
