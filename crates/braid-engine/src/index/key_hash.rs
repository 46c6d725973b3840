//! [`KeyHash`]: the hasher of the engine's integer-keyed hash maps (the hash tables' `scc`
//! index, the procedure registry, a large access set's lookup).
//!
//! The standard `RandomState` (SipHash-1-3) spends about 150 instructions on one `u64`; a
//! table probe that hashes a key twice (a transaction's read and its update) paid more for
//! hashing than for the probe itself. Keys are 64-bit integers the application chooses, so a
//! keyed bijective mixer does: each word is folded into the state with a multiply, and
//! `finish` applies MurmurHash3's 64-bit finalizer (`fmix64`), whose every output bit depends on
//! every input bit. `scc` takes a bucket from the hash's top bits and a slot tag from its low
//! byte; both come out of the finalizer well mixed, also for the dense key ranges the loaders
//! insert. Each map draws its own seed from `RandomState`, so the bucket a key lands in is not
//! the same from one process to the next. This is not a defence against an adversary that
//! chooses keys to collide (the seed is not secret the way SipHash's key is); the engine's keys
//! come from its own application, not from untrusted input.

use std::hash::{BuildHasher, Hasher, RandomState};

/// Multiplier of the fold (the 64-bit golden ratio, odd).
const FOLD: u64 = 0x9E37_79B9_7F4A_7C15;

/// A seeded builder of [`KeyHasher`]s (see the module doc).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHash {
    seed: u64,
}

impl KeyHash {
    /// A builder with a seed drawn from the standard library's per-process randomness.
    pub(crate) fn new() -> KeyHash {
        KeyHash {
            seed: RandomState::new().hash_one(FOLD),
        }
    }
}

impl Default for KeyHash {
    fn default() -> KeyHash {
        KeyHash::new()
    }
}

impl BuildHasher for KeyHash {
    type Hasher = KeyHasher;
    #[inline]
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher { state: self.seed }
    }
}

/// The hasher [`KeyHash`] builds: a multiply per word, `fmix64` at the end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHasher {
    state: u64,
}

impl KeyHasher {
    #[inline]
    fn fold(&mut self, word: u64) {
        self.state = (self.state ^ word).wrapping_mul(FOLD).rotate_left(29);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.fold(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        // The length goes in too, so that trailing zero bytes change the hash.
        self.fold(u64::from_le_bytes(b) ^ ((bytes.len() as u64) << 56));
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.fold(n);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.fold(u64::from(n));
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.fold(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        let mut x = self.state;
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 33;
        x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        x ^ (x >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn dense_keys_spread_over_buckets_and_tags() {
        let h = KeyHash::new();
        // Enough keys that every count is hundreds (a fair hash stays well within half to
        // twice the mean; an unmixed one leaves the top bits of dense keys all zero).
        let n = 1u64 << 20;
        // Top 12 bits (a bucket of a 4096-bucket array) and the low byte (scc's slot tag).
        let mut buckets = vec![0u32; 4096];
        let mut tags = vec![0u32; 256];
        for k in 0..n {
            let x = h.hash_one(k);
            buckets[(x >> 52) as usize] += 1;
            tags[(x & 0xff) as usize] += 1;
        }
        let mean_b = (n / 4096) as u32;
        assert!(buckets.iter().all(|&c| c > mean_b / 2 && c < mean_b * 2));
        let mean_t = (n / 256) as u32;
        assert!(tags.iter().all(|&c| c > mean_t / 2 && c < mean_t * 2));
    }

    #[test]
    fn tuples_and_bytes_hash_apart() {
        let h = KeyHash::new();
        let mut seen = HashSet::new();
        for t in 0..16u32 {
            for k in 0..256u64 {
                assert!(seen.insert(h.hash_one((t, k))));
            }
        }
        assert_ne!(h.hash_one(&b"ab"[..]), h.hash_one(&b"ab\0"[..]));
    }
}
