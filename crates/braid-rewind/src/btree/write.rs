//! The B+-tree's write path: update, insert (with leaf and inner splits, and the fresh-copy
//! insert into an inner node under a transaction) and remove, each a sequence of logged
//! stores through [`Mem`] (REWIND §5.2; the layout is in the parent module's documentation).

use super::{
    BTree, H_HEIGHT, H_ROOT, Head, LEAF, LeafOrder, Loads, MAX_SLOTS, N_BODY, N_META, N_NEXT, Path,
    fingerprint,
};
use crate::tx::Mem;
use crate::{Damage, Refusal, RewindError};

impl BTree {
    /// Replace the value of an existing key; false if absent.
    pub fn update(&self, m: &mut impl Mem, key: u64, val: &[u8]) -> Result<bool, RewindError> {
        self.check_val(val)?;
        let (n, meta, found) = with_loads!(m, |l| self.locate(l, key, None));
        if meta & LEAF == 0 {
            return Err(self.too_deep(m));
        }
        match found {
            Some(s) => {
                write_value(m, self.slot_off(n, s) + 8, val)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn check_val(&self, val: &[u8]) -> Result<(), RewindError> {
        if val.len() != self.vsize {
            return Err(Refusal::ValueLength {
                len: val.len(),
                expected: self.vsize,
            }
            .into());
        }
        Ok(())
    }

    /// Insert or replace; returns true if the key is new.
    ///
    /// The search records its path only when the leaf is full and splits (a second descent,
    /// for one insert in about a dozen): the path is a kilobyte to clear on the stack.
    pub fn insert(&self, m: &mut impl Mem, key: u64, val: &[u8]) -> Result<bool, RewindError> {
        self.check_val(val)?;
        let (leaf, meta, found) = with_loads!(m, |l| self.locate(l, key, None));
        if meta & LEAF == 0 {
            return Err(self.too_deep(m));
        }
        if let Some(s) = found {
            write_value(m, self.slot_off(leaf, s) + 8, val)?;
            return Ok(false);
        }
        let bits = meta & !LEAF;
        if (bits.count_ones() as usize) < self.lcap {
            return self.leaf_insert(m, leaf, bits, key, val).map(|()| true);
        }
        let mut path = Path::new();
        let (again, _) = with_loads!(m, |l| self.find_leaf(l, key, Some(&mut path)));
        // The same tree (nothing written since), searched again for the same key.
        debug_assert_eq!(again, leaf);
        let (sep, right) = self.split_leaf(m, leaf, bits)?;
        let target = if key < sep { leaf } else { right };
        let tbits = m.read_u64(target + N_META) & !LEAF;
        self.leaf_insert(m, target, tbits, key, val)?;
        self.insert_up(m, path, sep, right)?;
        Ok(true)
    }

    /// Sorted leaves: write slots `from..` of leaf `n` (bitmap `bits` before the change) as
    /// `slots` (key, value) says, the fingerprint words, then the bitmap of `count` slots.
    fn write_sorted(
        &self,
        m: &mut impl Mem,
        n: u64,
        h: &Head,
        from: usize,
        slots: &[(u64, Vec<u8>)],
        count: usize,
    ) -> Result<(), RewindError> {
        let mut fps = h.fps;
        for (j, (k, v)) in slots.iter().enumerate() {
            let s = from + j;
            let at = self.slot_off(n, s);
            m.write_u64(at, *k)?;
            m.write_bytes(at + 8, v)?;
            let (w, b) = (s / 8, 8 * (s % 8));
            fps[w] = (fps[w] & !(0xff << b)) | (u64::from(fingerprint(*k)) << b);
        }
        for (i, (&new, &old)) in fps.iter().zip(&h.fps).enumerate() {
            if new != old {
                m.write_u64(n + N_BODY + 8 * i as u64, new)?;
            }
        }
        let bits = if count == 0 {
            0
        } else {
            u64::MAX >> (64 - count)
        };
        m.write_u64(n + N_META, LEAF | bits)
    }

    /// Sorted leaves: the (key, value) of slots `from..to` of leaf `n`.
    fn read_slots(&self, m: &impl Mem, n: u64, from: usize, to: usize) -> Vec<(u64, Vec<u8>)> {
        (from..to)
            .map(|s| {
                let at = self.slot_off(n, s);
                let mut v = vec![0u8; self.vsize];
                m.read_bytes(at + 8, &mut v);
                (m.read_u64(at), v)
            })
            .collect()
    }

    /// Store `key` and `val` in a free slot of leaf `n` (not full), then its fingerprint,
    /// then the bitmap bit that makes it visible. Sorted leaves: the slots above the key move
    /// up by one first.
    fn leaf_insert(
        &self,
        m: &mut impl Mem,
        n: u64,
        bits: u64,
        key: u64,
        val: &[u8],
    ) -> Result<(), RewindError> {
        if self.order == LeafOrder::Sorted {
            let h = self.head(&Loads(&*m), n);
            let c = h.bits.count_ones() as usize;
            if c >= self.lcap {
                return Err(Damage::LeafFull { leaf: n }.into());
            }
            let keys = self.read_slots(m, n, 0, c);
            let pos = keys.iter().take_while(|(k, _)| *k < key).count();
            let mut moved = Vec::with_capacity(c + 1 - pos);
            moved.push((key, val.to_vec()));
            moved.extend_from_slice(&keys[pos..]);
            return self.write_sorted(m, n, &h, pos, &moved, c + 1);
        }
        let slot = (!bits).trailing_zeros() as usize;
        if slot >= self.lcap {
            return Err(Damage::LeafNoSlot { leaf: n }.into());
        }
        let at = self.slot_off(n, slot);
        m.write_u64(at, key)?;
        write_value(m, at + 8, val)?;
        let w_at = n + N_BODY + 8 * (slot / 8) as u64;
        let shift = 8 * (slot % 8);
        let w = m.read_u64(w_at);
        let w = (w & !(0xff << shift)) | (u64::from(fingerprint(key)) << shift);
        m.write_u64(w_at, w)?;
        m.write_u64(n + N_META, LEAF | bits | (1 << slot))
    }

    /// Split a full leaf: the old leaf keeps the lower half of its keys (its bitmap and chain
    /// link are the only logged words); the upper half is copied into a fresh leaf (sorted
    /// for sorted leaves; a fingerprinted leaf's keys are only partitioned at the median).
    /// Returns the separator (the least key of the new leaf) and the new leaf.
    fn split_leaf(&self, m: &mut impl Mem, n: u64, bits: u64) -> Result<(u64, u64), RewindError> {
        let mut slots = [(0u64, 0usize); MAX_SLOTS];
        let mut c = 0;
        for s in (0..self.lcap).filter(|&s| bits & (1 << s) != 0) {
            slots[c] = (m.read_u64(self.slot_off(n, s)), s);
            c += 1;
        }
        let slots = &mut slots[..c];
        let h = c / 2;
        if self.order == LeafOrder::Sorted {
            slots.sort_unstable();
        } else {
            // Slots at h.. hold the upper half, the least of it first.
            slots.select_nth_unstable(h);
        }
        let moved = &slots[h..];
        let right = m.alloc(self.obj())?;
        let body = self.body;
        let ss = 8 + self.vsize;
        let mut img = vec![0u8; body + moved.len() * ss];
        let mut keep = bits;
        for (j, &(k, s)) in moved.iter().enumerate() {
            keep &= !(1 << s);
            img[N_BODY as usize + j] = fingerprint(k);
            let c = body + j * ss;
            img[c..c + 8].copy_from_slice(&k.to_le_bytes());
            m.read_bytes(self.slot_off(n, s) + 8, &mut img[c + 8..c + ss]);
        }
        let rbits = (1u64 << moved.len()) - 1;
        img[..8].copy_from_slice(&(LEAF | rbits).to_le_bytes());
        let next = m.read_u64(n + N_NEXT);
        img[8..16].copy_from_slice(&next.to_le_bytes());
        m.init_bytes(right, &img)?;
        m.write_u64(n + N_NEXT, right)?;
        m.write_u64(n + N_META, LEAF | keep)?;
        Ok((moved[0].0, right))
    }
    /// Insert separator `sep` with right child `right` into the parents along `path`.
    fn insert_up(
        &self,
        m: &mut impl Mem,
        mut path: Path,
        mut sep: u64,
        mut right: u64,
    ) -> Result<(), RewindError> {
        while let Some((n, i)) = path.pop() {
            let c = Self::count(m, n);
            let mut keys = read_words(m, self.ikey_off(n, 0), c, 1);
            keys.insert(i, sep);
            let mut kids = read_words(m, self.child_off(n, 0), c + 1, 1);
            kids.insert(i + 1, right);
            if c < self.icap {
                if m.logs_stores() {
                    // Logged, the shift would cost a record per moved key and child (about
                    // twenty on average): a fresh copy costs three (its allocation, the
                    // parent's link, the old node's deferred free).
                    return self.replace_inner(m, n, path.last(), &keys, &kids);
                }
                m.write_bytes(self.ikey_off(n, i), &words(&keys[i..]))?;
                m.write_bytes(self.child_off(n, i + 1), &words(&kids[i + 1..]))?;
                return m.write_u64(n + N_META, c as u64 + 1);
            }
            // Split: left keeps keys[..h] and kids[..=h]; keys[h] goes up.
            let h = c.div_ceil(2);
            let nr = m.alloc(self.obj())?;
            let rk = &keys[h + 1..];
            let rc = &kids[h + 1..];
            m.init_bytes(nr + N_META, &(rk.len() as u64).to_le_bytes())?;
            m.init_bytes(nr + N_NEXT, &0u64.to_le_bytes())?;
            m.init_bytes(self.ikey_off(nr, 0), &words(rk))?;
            m.init_bytes(self.child_off(nr, 0), &words(rc))?;
            if i < h {
                m.write_bytes(self.ikey_off(n, i), &words(&keys[i..h]))?;
                m.write_bytes(self.child_off(n, i + 1), &words(&kids[i + 1..=h]))?;
            }
            m.write_u64(n + N_META, h as u64)?;
            sep = keys[h];
            right = nr;
        }
        // The root split: a new root above.
        let old = m.read_u64(self.hdr + H_ROOT);
        let root = m.alloc(self.obj())?;
        m.init_bytes(root + N_META, &1u64.to_le_bytes())?;
        m.init_bytes(root + N_NEXT, &0u64.to_le_bytes())?;
        m.init_bytes(self.ikey_off(root, 0), &sep.to_le_bytes())?;
        m.init_bytes(self.child_off(root, 0), &words(&[old, right]))?;
        let h = m.read_u64(self.hdr + H_HEIGHT);
        m.write_u64(self.hdr + H_HEIGHT, h + 1)?;
        m.write_u64(self.hdr + H_ROOT, root)
    }

    /// Replace inner node `n` by a fresh copy holding `keys` and `kids`, written with
    /// unlogged initialising stores and linked in its place (from `parent`, the node above
    /// it and the child it is there, or from the tree header for the root); `n` is freed
    /// (deferred past the commit).
    fn replace_inner(
        &self,
        m: &mut impl Mem,
        n: u64,
        parent: Option<(u64, usize)>,
        keys: &[u64],
        kids: &[u64],
    ) -> Result<(), RewindError> {
        let nn = m.alloc(self.obj())?;
        let mut head = Vec::with_capacity(2 + keys.len());
        head.extend_from_slice(&[keys.len() as u64, 0]);
        head.extend_from_slice(keys);
        m.init_bytes(nn + N_META, &words(&head))?;
        m.init_bytes(self.child_off(nn, 0), &words(kids))?;
        match parent {
            Some((p, pi)) => m.write_u64(self.child_off(p, pi), nn)?,
            None => m.write_u64(self.hdr + H_ROOT, nn)?,
        }
        m.free(n)
    }

    /// Remove `key`; returns true if it was present.
    pub fn remove(&self, m: &mut impl Mem, key: u64) -> Result<bool, RewindError> {
        let (n, meta, found) = with_loads!(m, |l| self.locate(l, key, None));
        if meta & LEAF == 0 {
            return Err(self.too_deep(m));
        }
        let bits = meta & !LEAF;
        let Some(s) = found else {
            return Ok(false);
        };
        if self.order == LeafOrder::Sorted {
            let h = self.head(&Loads(&*m), n);
            let c = h.bits.count_ones() as usize;
            let moved = self.read_slots(m, n, s + 1, c);
            self.write_sorted(m, n, &h, s, &moved, c - 1)?;
            return Ok(true);
        }
        m.write_u64(n + N_META, LEAF | (bits & !(1 << s)))?;
        Ok(true)
    }
}

/// Write value `val` (a multiple of 8 bytes) at `off` (8-aligned) word by word: the bytes
/// [`Mem::write_bytes`] would store, without its handling of partial words.
fn write_value(m: &mut impl Mem, off: u64, val: &[u8]) -> Result<(), RewindError> {
    for (j, w) in val.chunks_exact(8).enumerate() {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        m.write_u64(off + 8 * j as u64, u64::from_ne_bytes(a))?;
    }
    Ok(())
}

/// The `k` words at `off`, read in one call (a transaction overlays its buffered stores once,
/// not per word), in a vector with room for `spare` more.
fn read_words(m: &impl Mem, off: u64, k: usize, spare: usize) -> Vec<u64> {
    let mut b = vec![0u8; 8 * k];
    m.read_bytes(off, &mut b);
    let mut v = Vec::with_capacity(k + spare);
    v.extend(b.chunks_exact(8).map(|w| {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        u64::from_le_bytes(a)
    }));
    v
}

fn words(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}
