//! Ordering stamps: none, a GSN (Wang & Johnson 2014, Section 3.1) or an LSN vector, dense or
//! sparse (Xia et al. 2021, Section 4.1 / Alg. 5), owned ([`Stamp`]) or borrowed from a log
//! ([`StampRef`]).

#[cfg(doc)]
use super::MAX_LV_ENTRIES;
use super::{SPARSE_ENTRY, STAMP_GSN, STAMP_LV, STAMP_LV_SPARSE, STAMP_NONE};

/// Which ordering stamp a record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StampKind {
    /// No stamp (serial and per-transaction logs: order is the LSN).
    None,
    /// A global sequence number.
    Gsn,
    /// A dense LSN vector.
    Lv,
    /// A sparse LSN vector: only the listed `(index, value)` entries.
    LvSparse,
}

impl StampKind {
    pub(super) fn code(self) -> u8 {
        match self {
            StampKind::None => STAMP_NONE,
            StampKind::Gsn => STAMP_GSN,
            StampKind::Lv => STAMP_LV,
            StampKind::LvSparse => STAMP_LV_SPARSE,
        }
    }

    pub(super) fn from_code(c: u8) -> Option<StampKind> {
        Some(match c {
            STAMP_NONE => StampKind::None,
            STAMP_GSN => StampKind::Gsn,
            STAMP_LV => StampKind::Lv,
            STAMP_LV_SPARSE => StampKind::LvSparse,
            _ => return None,
        })
    }
}

/// An owned ordering stamp, as a writer supplies it (see [`StampKind`] for the forms).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Stamp {
    /// No stamp.
    #[default]
    None,
    /// A global sequence number.
    Gsn(u64),
    /// A dense LSN vector, one entry per stream (at most `MAX_LV_ENTRIES`).
    Lv(Vec<u64>),
    /// A sparse LSN vector of `(stream index, LSN)` entries; absent entries are 0.
    LvSparse(Vec<(u8, u64)>),
}

impl Stamp {
    /// Which form this stamp has.
    pub(crate) fn kind(&self) -> StampKind {
        match self {
            Stamp::None => StampKind::None,
            Stamp::Gsn(_) => StampKind::Gsn,
            Stamp::Lv(_) => StampKind::Lv,
            Stamp::LvSparse(_) => StampKind::LvSparse,
        }
    }

    /// Bytes this stamp takes in a record.
    pub(crate) fn encoded_len(&self) -> usize {
        match self {
            Stamp::None => 0,
            Stamp::Gsn(_) => 8,
            Stamp::Lv(v) => 2 + 8 * v.len(),
            Stamp::LvSparse(v) => 2 + SPARSE_ENTRY * v.len(),
        }
    }

    pub(super) fn entries(&self) -> usize {
        match self {
            Stamp::None | Stamp::Gsn(_) => 0,
            Stamp::Lv(v) => v.len(),
            Stamp::LvSparse(v) => v.len(),
        }
    }

    /// Write the stamp at the start of `out`; returns the bytes written.
    pub(super) fn write(&self, out: &mut [u8]) -> usize {
        match self {
            Stamp::None => 0,
            Stamp::Gsn(g) => {
                out[..8].copy_from_slice(&g.to_le_bytes());
                8
            }
            Stamp::Lv(v) => {
                // `RecordSpec::encode` has checked the count fits a u16.
                out[..2].copy_from_slice(&(v.len() as u16).to_le_bytes());
                for (chunk, x) in out[2..2 + 8 * v.len()].chunks_exact_mut(8).zip(v) {
                    chunk.copy_from_slice(&x.to_le_bytes());
                }
                2 + 8 * v.len()
            }
            Stamp::LvSparse(v) => {
                out[..2].copy_from_slice(&(v.len() as u16).to_le_bytes());
                let body = &mut out[2..2 + SPARSE_ENTRY * v.len()];
                for (chunk, (i, x)) in body.chunks_exact_mut(SPARSE_ENTRY).zip(v) {
                    chunk[0] = *i;
                    chunk[1..].copy_from_slice(&x.to_le_bytes());
                }
                2 + SPARSE_ENTRY * v.len()
            }
        }
    }
}

/// A borrowed stamp as found in a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StampRef<'a> {
    pub(super) kind: StampKind,
    /// The stamp's whole encoding (count included); its length was validated by `decode`.
    pub(super) bytes: &'a [u8],
}

impl Default for StampRef<'_> {
    fn default() -> Self {
        StampRef::NONE
    }
}

#[inline]
pub(super) fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

#[inline]
pub(super) fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

#[inline]
pub(super) fn le_u16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

impl<'a> StampRef<'a> {
    /// The empty stamp.
    pub(crate) const NONE: StampRef<'static> = StampRef {
        kind: StampKind::None,
        bytes: &[],
    };

    /// Rebuild a stamp from the kind and bytes of one that [`decode`] returned.
    pub(crate) fn from_decoded(kind: StampKind, bytes: &'a [u8]) -> StampRef<'a> {
        StampRef { kind, bytes }
    }

    /// Which form this stamp has.
    pub(crate) fn kind(&self) -> StampKind {
        self.kind
    }

    /// The stamp's encoded bytes.
    pub(crate) fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// An owned copy (sparse entries as stored, repeats included).
    pub fn to_stamp(self) -> Stamp {
        match self.kind {
            StampKind::None => Stamp::None,
            StampKind::Gsn => Stamp::Gsn(le_u64(self.bytes)),
            StampKind::Lv => Stamp::Lv(self.bytes[2..].chunks_exact(8).map(le_u64).collect()),
            StampKind::LvSparse => Stamp::LvSparse(
                self.bytes[2..]
                    .chunks_exact(SPARSE_ENTRY)
                    .map(|c| (c[0], le_u64(&c[1..])))
                    .collect(),
            ),
        }
    }

    /// The GSN of a GSN stamp, `None` for other forms.
    pub(crate) fn gsn(&self) -> Option<u64> {
        match self.kind {
            StampKind::Gsn => Some(le_u64(self.bytes)),
            _ => None,
        }
    }

    /// Length of the dense LV this stamp stands for: the entry count of a dense LV, one past
    /// the largest index of a sparse one, 0 for other stamps.
    pub fn lv_len(&self) -> usize {
        match self.kind {
            StampKind::None | StampKind::Gsn => 0,
            StampKind::Lv => (self.bytes.len() - 2) / 8,
            StampKind::LvSparse => self.bytes[2..]
                .chunks_exact(SPARSE_ENTRY)
                .map(|c| c[0] as usize + 1)
                .max()
                .unwrap_or(0),
        }
    }

    /// The LV entries as `(index, value)`: every entry of a dense LV, the stored entries of a
    /// sparse one, nothing for other stamps.
    #[cfg(test)]
    pub(crate) fn lv_entries(&self) -> LvEntries<'a> {
        let (dense, body) = match self.kind {
            StampKind::Lv => (true, &self.bytes[2..]),
            StampKind::LvSparse => (false, &self.bytes[2..]),
            StampKind::None | StampKind::Gsn => (true, &[][..]),
        };
        LvEntries {
            dense,
            body,
            next: 0,
        }
    }

    /// Write a dense LV into `out` (entries absent from a sparse stamp become 0); returns n.
    ///
    /// All of `out` is written: entries the stamp does not mention are 0. `n` is the stamp's
    /// dense length ([`StampRef::lv_len`]); if it exceeds `out.len()` the entries that do not fit
    /// are dropped, which the caller detects by comparing the result with `out.len()`.
    pub fn lv_into(&self, out: &mut [u64]) -> usize {
        out.fill(0);
        match self.kind {
            StampKind::None | StampKind::Gsn => 0,
            StampKind::Lv => {
                let body = &self.bytes[2..];
                for (o, c) in out.iter_mut().zip(body.chunks_exact(8)) {
                    *o = le_u64(c);
                }
                body.len() / 8
            }
            StampKind::LvSparse => {
                let mut n = 0;
                for c in self.bytes[2..].chunks_exact(SPARSE_ENTRY) {
                    let i = c[0] as usize;
                    n = n.max(i + 1);
                    if let Some(o) = out.get_mut(i) {
                        *o = (*o).max(le_u64(&c[1..]));
                    }
                }
                n
            }
        }
    }
}

/// Iterator over the `(index, value)` entries of an LV stamp.
#[derive(Debug, Clone)]
pub struct LvEntries<'a> {
    dense: bool,
    body: &'a [u8],
    next: usize,
}

impl Iterator for LvEntries<'_> {
    type Item = (usize, u64);

    fn next(&mut self) -> Option<(usize, u64)> {
        if self.dense {
            let c = self.body.get(self.next * 8..self.next * 8 + 8)?;
            self.next += 1;
            Some((self.next - 1, le_u64(c)))
        } else {
            let at = self.next * SPARSE_ENTRY;
            let c = self.body.get(at..at + SPARSE_ENTRY)?;
            self.next += 1;
            Some((c[0] as usize, le_u64(&c[1..])))
        }
    }
}
