//! A persistent B+-tree with u64 keys and fixed-size values (REWIND §5.2, Fig. 7-8), written
//! once against the [`Mem`] trait: run inside a REWIND transaction ([`crate::Tx`]) it is
//! recoverable; run through [`crate::RawMem`] it is its non-recoverable twin (same code, plain
//! persisted stores, no log), and on a DRAM pool it is the DRAM baseline.
//!
//! Layout (choices of this implementation; the paper does not give its tree's layout):
//! * Leaf: `meta` (leaf flag | count), `next` leaf, a slot directory of `count` one-byte slot
//!   numbers in key order, then `cap` key cells and `cap` value cells indexed by slot. An
//!   insert writes the key and value into a free slot and shifts only the one-byte directory,
//!   so it logs a handful of words wherever the key goes (a co-design in the spirit of §5.3);
//!   free slots are the ones the directory does not name.
//! * Inner: `meta` (count), sorted keys, children; a child `i` holds keys in
//!   `[key[i-1], key[i])`.
//! * A full leaf splits by keeping the first half of its directory (one logged word: the
//!   count) and copying the second half into a fresh leaf written with unlogged
//!   initialising stores; inner nodes split the same way; a new root is a fresh node.
//! * Deletion removes the key from its leaf without merging underfull nodes (lazy deletion,
//!   as many in-memory B+-trees do); a leaf may become empty and stays linked.
//!
//! The tree header object holds the root, the height (1 = the root is a leaf), the value
//! size, the node size and the number of keys. Isolation is the caller's: one writer per
//! tree at a time (readers of other keys may run alongside writers that only update values).

use crate::tx::Mem;
use crate::{CheckError, RewindError};

const LEAF: u64 = 1 << 63;
const H_ROOT: u64 = 0;
const H_HEIGHT: u64 = 8;
const H_VSIZE: u64 = 16;
const H_NODE: u64 = 24;
const H_COUNT: u64 = 32;
const HDR_BYTES: usize = 40;
const N_META: u64 = 0;
const N_NEXT: u64 = 8;
const N_BODY: u64 = 16;

/// A B+-tree handle: the header's offset and the geometry derived from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BTree {
    hdr: u64,
    vsize: usize,
    node: usize,
    lcap: usize,
    icap: usize,
}

/// Structure statistics returned by [`BTree::check`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TreeShape {
    /// Keys in the leaves.
    pub keys: u64,
    /// Levels (1: the root is a leaf).
    pub height: u64,
    /// Leaf nodes.
    pub leaves: u64,
    /// Inner nodes.
    pub inner: u64,
}

fn leaf_cap(node: usize, vsize: usize) -> usize {
    let mut c: usize = 0;
    while c < 255 && 16 + (c + 1).next_multiple_of(8) + (c + 1) * (8 + vsize) <= node {
        c += 1;
    }
    c
}

impl BTree {
    /// Create an empty tree (in the caller's transaction); returns its handle. `node_bytes`
    /// is the size of every node, `value_size` the size of every value (a multiple of 8).
    pub fn create(
        m: &mut impl Mem,
        node_bytes: usize,
        value_size: usize,
    ) -> Result<BTree, RewindError> {
        if value_size == 0 || !value_size.is_multiple_of(8) {
            return Err(RewindError::Invalid(format!(
                "value size {value_size} must be a positive multiple of 8"
            )));
        }
        let t = BTree::geometry(0, node_bytes, value_size)?;
        let hdr = m.alloc(HDR_BYTES)?;
        let leaf = m.alloc(node_bytes)?;
        m.init_bytes(leaf, &[0u8; 16])?;
        m.init_bytes(leaf + N_META, &LEAF.to_le_bytes())?;
        let mut h = [0u8; HDR_BYTES];
        h[0..8].copy_from_slice(&leaf.to_le_bytes());
        h[8..16].copy_from_slice(&1u64.to_le_bytes());
        h[16..24].copy_from_slice(&(value_size as u64).to_le_bytes());
        h[24..32].copy_from_slice(&(node_bytes as u64).to_le_bytes());
        m.init_bytes(hdr, &h)?;
        Ok(BTree { hdr, ..t })
    }

    fn geometry(hdr: u64, node: usize, vsize: usize) -> Result<BTree, RewindError> {
        let lcap = leaf_cap(node, vsize);
        let icap = node.saturating_sub(24) / 16;
        if lcap < 4 || icap < 3 {
            return Err(RewindError::Invalid(format!(
                "node size {node} too small for values of {vsize} bytes"
            )));
        }
        Ok(BTree {
            hdr,
            vsize,
            node,
            lcap,
            icap,
        })
    }

    /// The tree whose header is at `hdr` (as returned by [`BTree::header`]).
    pub fn open(m: &impl Mem, hdr: u64) -> Result<BTree, RewindError> {
        let vsize = m.read_u64(hdr + H_VSIZE) as usize;
        let node = m.read_u64(hdr + H_NODE) as usize;
        BTree::geometry(hdr, node, vsize)
    }

    /// Offset of the tree header (store it to find the tree again).
    pub fn header(&self) -> u64 {
        self.hdr
    }

    /// Bytes of every value.
    pub fn value_size(&self) -> usize {
        self.vsize
    }

    /// Keys per leaf and per inner node.
    pub fn capacities(&self) -> (usize, usize) {
        (self.lcap, self.icap)
    }

    /// Number of keys.
    pub fn len(&self, m: &impl Mem) -> u64 {
        m.read_u64(self.hdr + H_COUNT)
    }

    /// Whether the tree holds no key.
    pub fn is_empty(&self, m: &impl Mem) -> bool {
        self.len(m) == 0
    }

    // ---- leaf accessors ----
    fn ids_off(&self, n: u64) -> u64 {
        n + N_BODY
    }
    fn lkey_off(&self, n: u64, slot: usize) -> u64 {
        n + N_BODY + self.lcap.next_multiple_of(8) as u64 + 8 * slot as u64
    }
    fn lval_off(&self, n: u64, slot: usize) -> u64 {
        n + N_BODY
            + self.lcap.next_multiple_of(8) as u64
            + (8 * self.lcap + self.vsize * slot) as u64
    }
    fn ikey_off(&self, n: u64, i: usize) -> u64 {
        n + N_BODY + 8 * i as u64
    }
    fn child_off(&self, n: u64, i: usize) -> u64 {
        n + N_BODY + 8 * (self.icap + i) as u64
    }

    fn count(m: &impl Mem, n: u64) -> usize {
        (m.read_u64(n + N_META) & !LEAF) as usize
    }

    fn is_leaf(m: &impl Mem, n: u64) -> bool {
        m.read_u64(n + N_META) & LEAF != 0
    }

    fn ids(&self, m: &impl Mem, n: u64, count: usize) -> [u8; 256] {
        let mut ids = [0u8; 256];
        m.read_bytes(self.ids_off(n), &mut ids[..count]);
        ids
    }

    /// First index in the leaf whose key is >= `key`, and whether it is equal: a branchless
    /// count over every key of the directory rather than a binary search, so the loads of
    /// the node's lines are independent (they miss the cache together instead of one after
    /// another, which is what a search of a large tree waits on).
    fn leaf_search(&self, m: &impl Mem, n: u64, ids: &[u8], key: u64) -> (usize, bool) {
        let (mut below, mut eq) = (0usize, false);
        for &s in ids {
            let k = m.read_u64(self.lkey_off(n, s as usize));
            below += usize::from(k < key);
            eq |= k == key;
        }
        (below, eq)
    }

    /// Child index for `key` in an inner node with `count` keys (keys <= key go right): the
    /// number of keys <= `key`, counted branchlessly over the whole node (see `leaf_search`).
    fn inner_search(&self, m: &impl Mem, n: u64, count: usize, key: u64) -> usize {
        (0..count)
            .map(|i| usize::from(m.read_u64(self.ikey_off(n, i)) <= key))
            .sum()
    }

    fn find_leaf(&self, m: &impl Mem, key: u64, path: Option<&mut Vec<(u64, usize)>>) -> u64 {
        let mut n = m.read_u64(self.hdr + H_ROOT);
        let mut path = path;
        while !Self::is_leaf(m, n) {
            let c = Self::count(m, n);
            let i = self.inner_search(m, n, c, key);
            if let Some(p) = path.as_deref_mut() {
                p.push((n, i));
            }
            n = m.read_u64(self.child_off(n, i));
        }
        n
    }

    /// Look `key` up; copies its value into `out` (value-size bytes) and returns true if found.
    pub fn get(&self, m: &impl Mem, key: u64, out: &mut [u8]) -> bool {
        let n = self.find_leaf(m, key, None);
        let c = Self::count(m, n);
        let ids = self.ids(m, n, c);
        let (i, eq) = self.leaf_search(m, n, &ids[..c], key);
        if eq {
            m.read_bytes(self.lval_off(n, ids[i] as usize), &mut out[..self.vsize]);
        }
        eq
    }

    /// Whether `key` is in the tree.
    pub fn contains(&self, m: &impl Mem, key: u64) -> bool {
        let n = self.find_leaf(m, key, None);
        let c = Self::count(m, n);
        let ids = self.ids(m, n, c);
        self.leaf_search(m, n, &ids[..c], key).1
    }

    /// Replace the value of an existing key; false if absent.
    pub fn update(&self, m: &mut impl Mem, key: u64, val: &[u8]) -> Result<bool, RewindError> {
        self.check_val(val)?;
        let n = self.find_leaf(m, key, None);
        let c = Self::count(m, n);
        let ids = self.ids(m, n, c);
        let (i, eq) = self.leaf_search(m, n, &ids[..c], key);
        if eq {
            m.write_bytes(self.lval_off(n, ids[i] as usize), val)?;
        }
        Ok(eq)
    }

    fn check_val(&self, val: &[u8]) -> Result<(), RewindError> {
        if val.len() != self.vsize {
            return Err(RewindError::Invalid(format!(
                "value of {} bytes in a tree of {}-byte values",
                val.len(),
                self.vsize
            )));
        }
        Ok(())
    }

    /// Insert or replace; returns true if the key is new.
    pub fn insert(&self, m: &mut impl Mem, key: u64, val: &[u8]) -> Result<bool, RewindError> {
        self.check_val(val)?;
        let mut path = Vec::with_capacity(8);
        let leaf = self.find_leaf(m, key, Some(&mut path));
        let c = Self::count(m, leaf);
        let ids = self.ids(m, leaf, c);
        let (i, eq) = self.leaf_search(m, leaf, &ids[..c], key);
        if eq {
            m.write_bytes(self.lval_off(leaf, ids[i] as usize), val)?;
            return Ok(false);
        }
        if c < self.lcap {
            self.leaf_insert(m, leaf, &ids[..c], i, key, val)?;
        } else {
            let (sep, right) = self.split_leaf(m, leaf, &ids[..c])?;
            let target = if key < sep { leaf } else { right };
            let tc = Self::count(m, target);
            let tids = self.ids(m, target, tc);
            let (ti, _) = self.leaf_search(m, target, &tids[..tc], key);
            self.leaf_insert(m, target, &tids[..tc], ti, key, val)?;
            self.insert_up(m, path, sep, right)?;
        }
        let cnt = m.read_u64(self.hdr + H_COUNT);
        m.write_u64(self.hdr + H_COUNT, cnt + 1)?;
        Ok(true)
    }

    fn leaf_insert(
        &self,
        m: &mut impl Mem,
        n: u64,
        ids: &[u8],
        pos: usize,
        key: u64,
        val: &[u8],
    ) -> Result<(), RewindError> {
        let mut used = [false; 256];
        for &s in ids {
            used[s as usize] = true;
        }
        let slot = (0..self.lcap).find(|&s| !used[s]).ok_or_else(|| {
            RewindError::Corrupt(format!("leaf {n:#x} has no free slot below its capacity"))
        })?;
        m.write_u64(self.lkey_off(n, slot), key)?;
        m.write_bytes(self.lval_off(n, slot), val)?;
        let mut new_ids = [0u8; 256];
        new_ids[..pos].copy_from_slice(&ids[..pos]);
        new_ids[pos] = slot as u8;
        new_ids[pos + 1..ids.len() + 1].copy_from_slice(&ids[pos..]);
        m.write_bytes(self.ids_off(n) + pos as u64, &new_ids[pos..ids.len() + 1])?;
        m.write_u64(n + N_META, LEAF | (ids.len() as u64 + 1))
    }

    /// Split a full leaf: the old one keeps the first half of its directory; the second half
    /// is copied into a fresh leaf. Returns the separator (first key of the new leaf) and it.
    fn split_leaf(&self, m: &mut impl Mem, n: u64, ids: &[u8]) -> Result<(u64, u64), RewindError> {
        let h = ids.len() / 2;
        let right = m.alloc(self.node)?;
        let moved = &ids[h..];
        let mut val = vec![0u8; self.vsize];
        let mut sep = 0;
        let mut new_ids = vec![0u8; moved.len()];
        for (j, &s) in moved.iter().enumerate() {
            let k = m.read_u64(self.lkey_off(n, s as usize));
            if j == 0 {
                sep = k;
            }
            m.read_bytes(self.lval_off(n, s as usize), &mut val);
            m.init_bytes(self.lkey_off(right, j), &k.to_le_bytes())?;
            m.init_bytes(self.lval_off(right, j), &val)?;
            new_ids[j] = j as u8;
        }
        m.init_bytes(self.ids_off(right), &new_ids)?;
        let next = m.read_u64(n + N_NEXT);
        m.init_bytes(right + N_NEXT, &next.to_le_bytes())?;
        m.init_bytes(right + N_META, &(LEAF | moved.len() as u64).to_le_bytes())?;
        m.write_u64(n + N_NEXT, right)?;
        m.write_u64(n + N_META, LEAF | h as u64)?;
        Ok((sep, right))
    }

    /// Insert separator `sep` with right child `right` into the parents along `path`.
    fn insert_up(
        &self,
        m: &mut impl Mem,
        mut path: Vec<(u64, usize)>,
        mut sep: u64,
        mut right: u64,
    ) -> Result<(), RewindError> {
        while let Some((n, i)) = path.pop() {
            let c = Self::count(m, n);
            let mut keys = vec![0u64; c + 1];
            let mut kids = vec![0u64; c + 2];
            for (j, k) in keys.iter_mut().take(c).enumerate() {
                *k = m.read_u64(self.ikey_off(n, j));
            }
            for (j, k) in kids.iter_mut().take(c + 1).enumerate() {
                *k = m.read_u64(self.child_off(n, j));
            }
            keys.insert(i, sep);
            keys.truncate(c + 1);
            kids.insert(i + 1, right);
            kids.truncate(c + 2);
            if c < self.icap {
                m.write_bytes(self.ikey_off(n, i), &words(&keys[i..]))?;
                m.write_bytes(self.child_off(n, i + 1), &words(&kids[i + 1..]))?;
                return m.write_u64(n + N_META, c as u64 + 1);
            }
            // Split: left keeps keys[..h] and kids[..=h]; keys[h] goes up.
            let h = c.div_ceil(2);
            let nr = m.alloc(self.node)?;
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
        let root = m.alloc(self.node)?;
        m.init_bytes(root + N_META, &1u64.to_le_bytes())?;
        m.init_bytes(root + N_NEXT, &0u64.to_le_bytes())?;
        m.init_bytes(self.ikey_off(root, 0), &sep.to_le_bytes())?;
        m.init_bytes(self.child_off(root, 0), &words(&[old, right]))?;
        let h = m.read_u64(self.hdr + H_HEIGHT);
        m.write_u64(self.hdr + H_HEIGHT, h + 1)?;
        m.write_u64(self.hdr + H_ROOT, root)
    }

    /// Remove `key`; returns true if it was present.
    pub fn remove(&self, m: &mut impl Mem, key: u64) -> Result<bool, RewindError> {
        let n = self.find_leaf(m, key, None);
        let c = Self::count(m, n);
        let ids = self.ids(m, n, c);
        let (i, eq) = self.leaf_search(m, n, &ids[..c], key);
        if !eq {
            return Ok(false);
        }
        if i + 1 < c {
            m.write_bytes(self.ids_off(n) + i as u64, &ids[i + 1..c])?;
        }
        m.write_u64(n + N_META, LEAF | (c as u64 - 1))?;
        let cnt = m.read_u64(self.hdr + H_COUNT);
        m.write_u64(self.hdr + H_COUNT, cnt - 1)?;
        Ok(true)
    }

    /// All keys in order (walks the leaf chain).
    pub fn keys(&self, m: &impl Mem) -> Vec<u64> {
        let mut n = m.read_u64(self.hdr + H_ROOT);
        while !Self::is_leaf(m, n) {
            n = m.read_u64(self.child_off(n, 0));
        }
        let mut out = Vec::new();
        while n != 0 {
            let c = Self::count(m, n);
            let ids = self.ids(m, n, c);
            for &s in &ids[..c] {
                out.push(m.read_u64(self.lkey_off(n, s as usize)));
            }
            n = m.read_u64(n + N_NEXT);
        }
        out
    }

    /// Every node of the tree (for leak checks).
    pub fn nodes(&self, m: &impl Mem) -> Vec<u64> {
        let mut out = vec![];
        let mut stack = vec![m.read_u64(self.hdr + H_ROOT)];
        while let Some(n) = stack.pop() {
            out.push(n);
            if !Self::is_leaf(m, n) {
                for i in 0..=Self::count(m, n) {
                    stack.push(m.read_u64(self.child_off(n, i)));
                }
            }
        }
        out
    }

    /// Check every structural invariant: node kinds by depth (all leaves at the same depth),
    /// counts within capacity, sorted keys within their separators' bounds, a valid slot
    /// directory, the leaf chain visiting the leaves in key order, and the key count.
    pub fn check(&self, m: &impl Mem) -> Result<TreeShape, CheckError> {
        let height = m.read_u64(self.hdr + H_HEIGHT);
        let root = m.read_u64(self.hdr + H_ROOT);
        let mut shape = TreeShape {
            height,
            ..TreeShape::default()
        };
        let mut leaves = Vec::new();
        self.check_node(m, root, 1, height, None, None, &mut shape, &mut leaves)?;
        // Leaf chain.
        for w in leaves.windows(2) {
            if m.read_u64(w[0] + N_NEXT) != w[1] {
                return Err(CheckError(format!(
                    "leaf {:#x} does not link to {:#x}",
                    w[0], w[1]
                )));
            }
        }
        if let Some(&last) = leaves.last()
            && m.read_u64(last + N_NEXT) != 0
        {
            return Err(CheckError(format!("last leaf {last:#x} links further")));
        }
        let count = m.read_u64(self.hdr + H_COUNT);
        if count != shape.keys {
            return Err(CheckError(format!(
                "header counts {count} keys, the leaves hold {}",
                shape.keys
            )));
        }
        Ok(shape)
    }

    #[allow(clippy::too_many_arguments)]
    fn check_node(
        &self,
        m: &impl Mem,
        n: u64,
        depth: u64,
        height: u64,
        lo: Option<u64>,
        hi: Option<u64>,
        shape: &mut TreeShape,
        leaves: &mut Vec<u64>,
    ) -> Result<(), CheckError> {
        let in_range = |k: u64| lo.is_none_or(|l| k >= l) && hi.is_none_or(|h| k < h);
        let c = Self::count(m, n);
        if Self::is_leaf(m, n) {
            if depth != height {
                return Err(CheckError(format!(
                    "leaf {n:#x} at depth {depth} of {height}"
                )));
            }
            if c > self.lcap {
                return Err(CheckError(format!(
                    "leaf {n:#x} holds {c} > {} keys",
                    self.lcap
                )));
            }
            let ids = self.ids(m, n, c);
            let mut seen = [false; 256];
            let mut prev = None;
            for &s in &ids[..c] {
                if s as usize >= self.lcap || std::mem::replace(&mut seen[s as usize], true) {
                    return Err(CheckError(format!("leaf {n:#x} has a bad slot directory")));
                }
                let k = m.read_u64(self.lkey_off(n, s as usize));
                if !in_range(k) || prev.is_some_and(|p| p >= k) {
                    return Err(CheckError(format!(
                        "leaf {n:#x} key {k} out of order or bounds"
                    )));
                }
                prev = Some(k);
            }
            shape.leaves += 1;
            shape.keys += c as u64;
            leaves.push(n);
            return Ok(());
        }
        if depth >= height {
            return Err(CheckError(format!(
                "inner node {n:#x} at depth {depth} of {height}"
            )));
        }
        if c == 0 || c > self.icap {
            return Err(CheckError(format!("inner node {n:#x} holds {c} keys")));
        }
        shape.inner += 1;
        let keys: Vec<u64> = (0..c).map(|i| m.read_u64(self.ikey_off(n, i))).collect();
        for w in keys.windows(2) {
            if w[0] >= w[1] {
                return Err(CheckError(format!("inner node {n:#x} keys out of order")));
            }
        }
        if !keys.iter().all(|&k| in_range(k)) {
            return Err(CheckError(format!(
                "inner node {n:#x} key out of its bounds"
            )));
        }
        for i in 0..=c {
            let clo = if i == 0 { lo } else { Some(keys[i - 1]) };
            let chi = if i == c { hi } else { Some(keys[i]) };
            let child = m.read_u64(self.child_off(n, i));
            if child == 0 {
                return Err(CheckError(format!("inner node {n:#x} child {i} is null")));
            }
            self.check_node(m, child, depth + 1, height, clo, chi, shape, leaves)?;
        }
        Ok(())
    }
}

fn words(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}
