//! Log records (REWIND §4.1): 32-byte physical records holding the transaction id, the record
//! type, the address of the modified word and its old and new values.
//!
//! Choices where the paper is open: records are word-granular (one aligned 8-byte word per
//! UPDATE, as in the paper's Listing 2 where each `log` call covers one variable); writes of
//! other sizes are split into the aligned words they touch. No record id is stored: in the
//! one-layer log the order of the log is the order of the records, and the CLRs of a
//! transaction undo its UPDATEs in reverse order, so Alg. 2's `undoMap` test ("has this UPDATE
//! already been compensated?") is answered by counting the CLRs seen so far in the backward
//! scan. In the two-layer log the record's key in the AVL index carries the order.
//!
//! Layout (little endian words): `w0 = kind | txid << 8`, `w1 = addr` (for END: the commit
//! sequence number; for DELETE: the block to free), `w2 = old` (for END: 1 if the transaction
//! rolled back, 0 if it committed), `w3 = new` (for a CLR: the value restored).

/// Bytes of one record.
pub(crate) const REC_SIZE: usize = 32;
/// Words of one record.
pub(crate) const REC_WORDS: usize = REC_SIZE / 8;

/// Record types (REWIND §4: UPDATE, CLR, END, DELETE, plus the ROLLBACK marker of Alg. 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Update = 1,
    Clr = 2,
    End = 3,
    Delete = 4,
    Rollback = 5,
}

impl Kind {
    /// The type's name, as error messages give it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Update => "Update",
            Kind::Clr => "Clr",
            Kind::End => "End",
            Kind::Delete => "Delete",
            Kind::Rollback => "Rollback",
        }
    }
}

/// A decoded log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rec {
    pub kind: Kind,
    pub txid: u64,
    pub addr: u64,
    pub old: u64,
    pub new: u64,
}

impl Rec {
    pub fn update(txid: u64, addr: u64, old: u64, new: u64) -> Rec {
        Rec {
            kind: Kind::Update,
            txid,
            addr,
            old,
            new,
        }
    }

    pub fn clr(txid: u64, addr: u64, restored: u64) -> Rec {
        Rec {
            kind: Kind::Clr,
            txid,
            addr,
            old: 0,
            new: restored,
        }
    }

    pub fn end(txid: u64, seq: u64, aborted: bool) -> Rec {
        Rec {
            kind: Kind::End,
            txid,
            addr: seq,
            old: u64::from(aborted),
            new: 0,
        }
    }

    pub fn delete(txid: u64, block: u64) -> Rec {
        Rec {
            kind: Kind::Delete,
            txid,
            addr: block,
            old: 0,
            new: 0,
        }
    }

    pub fn rollback(txid: u64) -> Rec {
        Rec {
            kind: Kind::Rollback,
            txid,
            addr: 0,
            old: 0,
            new: 0,
        }
    }

    pub fn encode(&self) -> [u8; REC_SIZE] {
        let mut b = [0u8; REC_SIZE];
        for (c, w) in b.chunks_exact_mut(8).zip(self.words()) {
            c.copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// The record's four words (the layout's `w0..w3`, as numbers: [`Rec::encode`] is their
    /// little-endian bytes).
    pub fn words(&self) -> [u64; REC_WORDS] {
        let w0 = (self.kind as u64) | (self.txid << 8);
        [w0, self.addr, self.old, self.new]
    }

    /// `None` if the type byte is not a record type (a damaged or never-written cell).
    pub fn decode(b: &[u8]) -> Option<Rec> {
        let w = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(a)
        };
        let w0 = w(0);
        let kind = match w0 & 0xFF {
            1 => Kind::Update,
            2 => Kind::Clr,
            3 => Kind::End,
            4 => Kind::Delete,
            5 => Kind::Rollback,
            _ => return None,
        };
        Some(Rec {
            kind,
            txid: w0 >> 8,
            addr: w(1),
            old: w(2),
            new: w(3),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for r in [
            Rec::update(7, 4096, 1, 2),
            Rec::clr(9, 64, 5),
            Rec::end(3, 11, true),
            Rec::delete(1, 800),
            Rec::rollback(u64::MAX >> 8),
        ] {
            assert_eq!(Rec::decode(&r.encode()), Some(r));
            let w = r.words();
            assert_eq!(r.encode()[8..16], w[1].to_le_bytes());
        }
        assert_eq!(Rec::decode(&[0u8; REC_SIZE]), None);
    }
}
