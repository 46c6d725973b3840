//! A persistent B+-tree with u64 keys and fixed-size values (REWIND §5.2, Fig. 7-8), written
//! once against the [`Mem`] trait: run inside a REWIND transaction ([`crate::Tx`]) it is
//! recoverable; run through [`crate::RawMem`] it is its non-recoverable twin (same code, plain
//! persisted stores, no log), and on a DRAM pool it is the DRAM baseline.
//!
//! Layout (choices of this implementation; the paper does not give its tree's layout):
//! * Every node is one heap block of the tree's node size, its 8-byte block header
//!   included, so a 512-byte node is eight cache lines (the object is the block less its
//!   header: 504 bytes) and nodes pack the heap without a gap.
//! * Leaf, after FPTree (Oukid et al., SIGMOD 2016, §4): `meta` (leaf flag | a bitmap of
//!   occupied slots), `next` leaf, one fingerprint byte per slot (a hash of the slot's key),
//!   then `cap` unsorted slots of (key, value). The first line holds the bitmap and the
//!   fingerprints, so a lookup reads that line and, in the common case, only the one slot
//!   whose fingerprint matches; an insert writes a free slot's key and value (one line), its
//!   fingerprint word and the bitmap (one line): four logged words wherever the key goes.
//!   Under the twin the bitmap is stored last, so a slot is never visible half written.
//! * Inner: `meta` (count), sorted keys, children; a child `i` holds keys in
//!   `[key[i-1], key[i])`. A search halves its way through the keys with conditional moves.
//! * A search asks for every line of a node (a prefetch) as soon as it has the node's
//!   offset, so the node's lines miss the cache together: an inner node's meta word, the
//!   keys probed and the child taken (in the node's upper lines), a leaf's fingerprint line
//!   and the line of the slot it names, instead of one miss after another.
//! * Searches load through the pool's word view ([`Mem::words`], checked once per
//!   operation) unless a transaction has stores buffered, whose own loads see them.
//! * A full leaf splits at its median key, keeping the lower half (one logged word: the
//!   bitmap, and one for the leaf chain) and copying the upper half (sorted for sorted
//!   leaves) into a fresh leaf written with unlogged initialising stores; inner nodes split
//!   likewise; a new root is a fresh node. Under a transaction, a separator going into an
//!   inner node with room replaces the node by a fresh copy (linked from its parent, the
//!   old node freed after the commit) instead of shifting the keys and children above it,
//!   each a logged word; the non-recoverable twin shifts in place.
//! * Deletion clears the key's bit (one logged word) without merging underfull nodes (lazy
//!   deletion, as many in-memory B+-trees do); a leaf may become empty and stays linked.
//!
//! The tree header object holds the root, the height (1 = the root is a leaf), the value
//! size, the node size and the layout's format tag ([`BTree::open`] refuses a tree of another
//! layout; tag 2 counted the node size without the block header). The number of keys is not stored (an insert would log one more word in a line
//! of its own); [`BTree::len`] counts the leaves' bitmaps. Isolation is the caller's: one
//! writer per tree at a time (readers of other keys may run alongside writers that only
//! update values).

mod check;

use braid_pmem::Words;

use crate::alloc::BLOCK_HDR;
use crate::tx::Mem;
use crate::{Refusal, RewindError};

/// Word loads for one tree operation: the pool's checked-once view ([`Mem::words`]: a load
/// is an index check and a move) or, while a transaction has stores buffered, the memory's
/// own loads. The read paths are generic over it and choose once per operation
/// ([`with_loads!`]).
trait Load {
    /// Word `i` of the pool (the word at offset `8 * i`).
    fn word(&self, i: usize) -> u64;

    /// The word at pool offset `off` (a multiple of 8).
    #[inline]
    fn at(&self, off: u64) -> u64 {
        debug_assert!(off.is_multiple_of(8));
        self.word((off / 8) as usize)
    }

    /// Start loading `lines` cache lines from the one holding pool offset `off` (a hint; the
    /// memory's own loads take none).
    #[inline]
    fn prefetch(&self, _off: u64, _lines: usize) {}
}

impl Load for Words<'_> {
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.get(i)
    }

    #[inline]
    fn prefetch(&self, off: u64, lines: usize) {
        self.prefetch_lines((off / 8) as usize, lines);
    }
}

/// A memory's own word loads (they see a transaction's buffered stores).
struct Loads<'m, M: ?Sized>(&'m M);

impl<M: Mem + ?Sized> Load for Loads<'_, M> {
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.0.read_u64(8 * i as u64)
    }
}

/// Evaluate `$body` with `$l` bound to the fastest [`Load`] memory `$m` offers.
macro_rules! with_loads {
    ($m:expr, |$l:ident| $body:expr) => {
        match $m.words() {
            Some(v) => {
                let $l = &v;
                $body
            }
            None => {
                let $l = &Loads(&*$m);
                $body
            }
        }
    };
}

mod write;

const LEAF: u64 = 1 << 63;
const H_ROOT: u64 = 0;
const H_HEIGHT: u64 = 8;
const H_VSIZE: u64 = 16;
const H_NODE: u64 = 24;
const H_FORMAT: u64 = 32;
const HDR_BYTES: usize = 40;
/// The format tag of this layout (fingerprinted leaves in blocks of the node size, header
/// included), in the tree header.
const FORMAT: u64 = u64::from_le_bytes(*b"BT+FP\x00\x00\x03");
/// The format tag of the same layout with sorted leaves ([`LeafOrder::Sorted`]).
const FORMAT_SORTED: u64 = u64::from_le_bytes(*b"BT+SO\x00\x00\x03");

/// How a leaf keeps its slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LeafOrder {
    /// Unsorted slots found by fingerprint (FPTree): an insert writes a free slot, its
    /// fingerprint word and the bitmap, a delete the bitmap (a few logged words each).
    Fingerprinted,
    /// Slots `0..count` in key order, as a textbook B+-tree keeps a leaf: an insert shifts the
    /// slots above its key up by one and a delete shifts them down, so each logs every word of
    /// every slot it moves (the fingerprints are kept too, so lookups are the same).
    Sorted,
}
const N_META: u64 = 0;
const N_NEXT: u64 = 8;
const N_BODY: u64 = 16;
/// Most slots a leaf may have: its bitmap shares the `meta` word with the leaf flag.
const MAX_SLOTS: usize = 62;
/// Most inner nodes a search passes: every level at least doubles the leaves below it, and
/// 2^63 leaves fit no pool.
const MAX_DEPTH: usize = 64;

/// The inner nodes a search passed, root first, with the child taken in each: kept on the
/// stack (an insert allocated a vector for it).
struct Path {
    len: usize,
    at: [(u64, usize); MAX_DEPTH],
}

impl Path {
    fn new() -> Path {
        Path {
            len: 0,
            at: [(0, 0); MAX_DEPTH],
        }
    }

    /// Record inner node `n` and child `i` (nothing if the path is full, which
    /// [`BTree::find_leaf`] never lets it be).
    fn push(&mut self, n: u64, i: usize) {
        if let Some(e) = self.at.get_mut(self.len) {
            *e = (n, i);
            self.len += 1;
        }
    }

    fn pop(&mut self) -> Option<(u64, usize)> {
        self.len = self.len.checked_sub(1)?;
        Some(self.at[self.len])
    }

    /// The last entry, if any.
    fn last(&self) -> Option<(u64, usize)> {
        self.len.checked_sub(1).map(|i| self.at[i])
    }
}

/// A B+-tree handle: the header's offset and the geometry derived from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BTree {
    hdr: u64,
    vsize: usize,
    /// Bytes of a node's block, header included (the node object is `node - BLOCK_HDR`).
    node: usize,
    lcap: usize,
    icap: usize,
    /// Offset of a leaf's first slot (`leaf_body(lcap)`, computed once).
    body: usize,
    /// Cache lines of a node's block (the heap's blocks of 64-byte multiples are line
    /// aligned), asked for when a search reaches the node.
    lines: usize,
    /// How leaves keep their slots.
    order: LeafOrder,
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

/// A leaf's first line as read once per visit: the bitmap and the fingerprint words (slot
/// `s`'s fingerprint is byte `s % 8` of word `s / 8`, little-endian).
struct Head {
    bits: u64,
    fps: [u64; FP_WORDS],
}

impl Head {
    fn fp(&self, slot: usize) -> u8 {
        (self.fps[slot / 8] >> (8 * (slot % 8))) as u8
    }
}

/// The bytes of fingerprint word `w` equal to the byte repeated in `pat` (`f * 0x01..01`):
/// 0x80 in each of them, 0 elsewhere (a byte of `w ^ pat` is zero where they match; no carry
/// crosses bytes: each byte's low seven bits plus 0x7F stay below 0x100).
#[inline]
fn fp_matches(w: u64, pat: u64) -> u64 {
    const LO7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let x = w ^ pat;
    !(((x & LO7) + LO7) | x | LO7)
}

/// One byte of a multiplicative hash of `key` (never 0 matters not: the bitmap says which
/// slots are occupied).
fn fingerprint(key: u64) -> u8 {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// Bytes from a leaf's start to its first slot for `cap` slots: `meta`, `next` and the
/// fingerprints, padded to 8 mod 16. The heap's blocks of 64-byte multiples are line aligned
/// and an object starts 8 bytes into its block (the block header), so slots start on a
/// 16-byte boundary and a (key, 8-byte value) slot never straddles two lines; with up to 40
/// slots, `meta`, `next` and the fingerprints fill exactly the node's first line.
/// Fingerprints are read as words: slot `s`'s is byte `s % 8` (little-endian) of word
/// `s / 8` from `N_BODY`.
const fn leaf_body(cap: usize) -> usize {
    let mut x = N_BODY as usize + cap;
    while x % 16 != 8 {
        x += 1;
    }
    x
}

/// Words of a leaf's fingerprints at most.
const FP_WORDS: usize = MAX_SLOTS.div_ceil(8);

/// Slots of a leaf object of `obj` bytes.
fn leaf_cap(obj: usize, vsize: usize) -> usize {
    let mut c: usize = 0;
    while c < MAX_SLOTS && leaf_body(c + 1) + (c + 1) * (8 + vsize) <= obj {
        c += 1;
    }
    c
}

impl BTree {
    /// Create an empty tree (in the caller's transaction); returns its handle. `node_bytes`
    /// is the size of every node (its heap block, the 8-byte block header included: 512
    /// makes a node of eight cache lines), `value_size` the size of every value (a multiple
    /// of 8).
    pub fn create(
        m: &mut impl Mem,
        node_bytes: usize,
        value_size: usize,
    ) -> Result<BTree, RewindError> {
        BTree::create_ordered(m, node_bytes, value_size, LeafOrder::Fingerprinted)
    }

    /// [`BTree::create`] with leaves kept as `order` says.
    pub fn create_ordered(
        m: &mut impl Mem,
        node_bytes: usize,
        value_size: usize,
        order: LeafOrder,
    ) -> Result<BTree, RewindError> {
        if value_size == 0 || !value_size.is_multiple_of(8) {
            return Err(Refusal::ValueSize { size: value_size }.into());
        }
        let t = BTree::geometry(0, node_bytes, value_size, order)?;
        let hdr = m.alloc(HDR_BYTES)?;
        let leaf = m.alloc(t.obj())?;
        m.init_bytes(leaf, &[0u8; 16])?;
        m.init_bytes(leaf + N_META, &LEAF.to_le_bytes())?;
        let mut h = [0u8; HDR_BYTES];
        h[0..8].copy_from_slice(&leaf.to_le_bytes());
        h[8..16].copy_from_slice(&1u64.to_le_bytes());
        h[16..24].copy_from_slice(&(value_size as u64).to_le_bytes());
        h[24..32].copy_from_slice(&(node_bytes as u64).to_le_bytes());
        let tag = match order {
            LeafOrder::Fingerprinted => FORMAT,
            LeafOrder::Sorted => FORMAT_SORTED,
        };
        h[32..40].copy_from_slice(&tag.to_le_bytes());
        m.init_bytes(hdr, &h)?;
        Ok(BTree { hdr, ..t })
    }

    fn geometry(
        hdr: u64,
        node: usize,
        vsize: usize,
        order: LeafOrder,
    ) -> Result<BTree, RewindError> {
        let obj = node.saturating_sub(BLOCK_HDR);
        let lcap = leaf_cap(obj, vsize);
        // meta, next, `icap` keys and `icap + 1` children.
        let icap = obj.saturating_sub(24) / 16;
        if lcap < 4 || icap < 3 {
            return Err(Refusal::NodeTooSmall { node, value: vsize }.into());
        }
        Ok(BTree {
            hdr,
            vsize,
            node,
            lcap,
            icap,
            body: leaf_body(lcap),
            lines: node.div_ceil(64),
            order,
        })
    }

    /// The tree whose header is at `hdr` (as returned by [`BTree::header`]). Fails on a
    /// header of another layout (a tree written by an older version of this library).
    pub fn open(m: &impl Mem, hdr: u64) -> Result<BTree, RewindError> {
        let format = m.read_u64(hdr + H_FORMAT);
        let order = match format {
            FORMAT => LeafOrder::Fingerprinted,
            FORMAT_SORTED => LeafOrder::Sorted,
            _ => LeafOrder::Fingerprinted,
        };
        if format != FORMAT && format != FORMAT_SORTED {
            return Err(Refusal::TreeLayout {
                header: hdr,
                tag: format,
                expected: FORMAT,
            }
            .into());
        }
        let vsize = m.read_u64(hdr + H_VSIZE) as usize;
        let node = m.read_u64(hdr + H_NODE) as usize;
        BTree::geometry(hdr, node, vsize, order)
    }

    /// Bytes of a node object (its block less the block header).
    fn obj(&self) -> usize {
        self.node - BLOCK_HDR
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

    /// Number of keys (counted over the leaves' bitmaps: one line per leaf).
    pub fn len(&self, m: &impl Mem) -> u64 {
        let mut n = self.first_leaf(m);
        let mut count = 0;
        while n != 0 {
            count += u64::from((m.read_u64(n + N_META) & !LEAF).count_ones());
            n = m.read_u64(n + N_NEXT);
        }
        count
    }

    /// Whether the tree holds no key.
    pub fn is_empty(&self, m: &impl Mem) -> bool {
        self.len(m) == 0
    }

    // ---- node accessors ----
    fn slot_off(&self, n: u64, slot: usize) -> u64 {
        n + (self.body + (8 + self.vsize) * slot) as u64
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

    fn head(&self, l: &impl Load, n: u64) -> Head {
        let mut h = Head {
            bits: l.at(n + N_META) & !LEAF,
            fps: [0; FP_WORDS],
        };
        for (i, w) in h.fps[..self.lcap.div_ceil(8)].iter_mut().enumerate() {
            *w = l.at(n + N_BODY + 8 * i as u64);
        }
        h
    }

    /// Leaf `n`'s meta word `meta` (the leaf flag and the bitmap, as [`BTree::find_leaf`] read
    /// it) and the slot holding `key` in the leaf: the fingerprint words are compared eight at
    /// a time as they are loaded, and only occupied slots whose fingerprint matches are read,
    /// until the key is found (the words after its own are not loaded). No slot for a node
    /// that is not a leaf (a search that went round a cycle, see [`BTree::find_leaf`]).
    #[inline(always)]
    fn leaf_find(&self, l: &impl Load, n: u64, meta: u64, key: u64) -> (u64, Option<usize>) {
        if meta & LEAF == 0 {
            return (meta, None);
        }
        let bits = meta & !LEAF;
        let pat = u64::from(fingerprint(key)) * 0x0101_0101_0101_0101;
        let fps = ((n + N_BODY) / 8) as usize;
        for i in 0..self.lcap.div_ceil(8) {
            let mut hit = fp_matches(l.word(fps + i), pat);
            while hit != 0 {
                let s = 8 * i + (hit.trailing_zeros() / 8) as usize;
                if bits >> s & 1 != 0 && l.at(self.slot_off(n, s)) == key {
                    return (meta, Some(s));
                }
                hit &= hit - 1;
            }
        }
        (meta, None)
    }

    /// The occupied slots of leaf `n` with their keys, sorted by key.
    fn sorted_slots(&self, m: &impl Mem, n: u64, bits: u64) -> Vec<(u64, usize)> {
        let mut v = Vec::with_capacity(bits.count_ones() as usize);
        v.extend(
            (0..self.lcap)
                .filter(|&s| bits & (1 << s) != 0)
                .map(|s| (m.read_u64(self.slot_off(n, s)), s)),
        );
        v.sort_unstable();
        v
    }

    /// Child index for `key` in an inner node with `count` keys (keys <= key go right): the
    /// number of keys <= `key`.
    ///
    /// The node's lines were all asked for when the descent reached it ([`BTree::find_leaf`]),
    /// so they miss the cache together and the probes find them on their way: the keys are
    /// searched by halving without branches (five probes for a full 30-key node), every
    /// branch but the loop's end a conditional move.
    #[inline]
    fn inner_search(&self, l: &impl Load, n: u64, count: usize, key: u64) -> usize {
        // Key `i` is pool word `keys + i`.
        let keys = (self.ikey_off(n, 0) / 8) as usize;
        let k = |i: usize| l.word(keys + i);
        // Keys before `base` are <= key, those from `base + span` on greater: the answer is in
        // `base..=base + span`. Halve the span keeping that true, then test the one key left.
        let mut base = 0;
        let mut span = count;
        while span > 1 {
            let half = span / 2;
            // A conditional move: as a branch, random keys would mispredict it half the time.
            base = std::hint::select_unpredictable(k(base + half) <= key, base + half, base);
            span -= half;
        }
        base + usize::from(span == 1 && k(base) <= key)
    }

    fn first_leaf(&self, m: &impl Mem) -> u64 {
        let mut n = m.read_u64(self.hdr + H_ROOT);
        while m.read_u64(n + N_META) & LEAF == 0 {
            n = m.read_u64(self.child_off(n, 0));
        }
        n
    }

    /// The leaf that holds or would hold `key`; with `path`, the inner nodes passed and the
    /// child taken in each. Every node's lines are asked for as soon as its offset is known:
    /// its meta word, the keys a search probes and the child it takes (in the node's upper
    /// lines) then miss the cache together instead of one after another, and so do the
    /// fingerprint line of a leaf and the line of the slot it names.
    ///
    /// After [`MAX_DEPTH`] inner nodes (more than any tree has: its nodes link in a cycle) the
    /// search stops at an inner node, which the callers check: the meta word returned with
    /// the node (the word as loaded, so that the leaf's is not loaded twice) is then 0,
    /// without the leaf flag.
    #[inline(always)]
    fn find_leaf(&self, l: &impl Load, key: u64, path: Option<&mut Path>) -> (u64, u64) {
        let mut n = l.at(self.hdr + H_ROOT);
        let mut path = path;
        for _ in 0..MAX_DEPTH {
            l.prefetch(n - BLOCK_HDR as u64, self.lines);
            let meta = l.at(n + N_META);
            if meta & LEAF != 0 {
                return (n, meta);
            }
            let i = self.inner_search(l, n, meta as usize, key);
            if let Some(p) = path.as_deref_mut() {
                p.push(n, i);
            }
            n = l.at(self.child_off(n, i));
        }
        (n, 0)
    }

    /// The leaf that holds `key`, or would hold it if inserted (its offset): for callers that
    /// lock leaves to run transactions on one tree side by side (isolation is the user's, as
    /// in REWIND). Stable while no insert splits a node.
    pub fn leaf_of(&self, m: &impl Mem, key: u64) -> u64 {
        with_loads!(m, |l| self.find_leaf(l, key, None).0)
    }

    /// Whether leaf `n` (from [`BTree::leaf_of`]) is full: an insert of a key not in it would
    /// split it and change its ancestors. An insert into a leaf that is not full writes that
    /// leaf only.
    pub fn leaf_is_full(&self, m: &impl Mem, n: u64) -> bool {
        (m.read_u64(n + N_META) & !LEAF).count_ones() as usize >= self.lcap
    }

    /// Look `key` up; copies its value into `out` (value-size bytes) and returns true if found.
    pub fn get(&self, m: &impl Mem, key: u64, out: &mut [u8]) -> bool {
        with_loads!(m, |l| self.get_in(l, key, out))
    }

    fn get_in(&self, l: &impl Load, key: u64, out: &mut [u8]) -> bool {
        let (n, found) = self.lookup(l, key);
        match found {
            Some(s) => {
                // Word loads: the value size is a multiple of 8 and slots are 8-aligned.
                let at = self.slot_off(n, s) + 8;
                for (i, w) in out[..self.vsize].chunks_exact_mut(8).enumerate() {
                    w.copy_from_slice(&l.at(at + 8 * i as u64).to_ne_bytes());
                }
                true
            }
            None => false,
        }
    }

    /// The leaf that would hold `key` and `key`'s slot in it, if there.
    fn lookup(&self, l: &impl Load, key: u64) -> (u64, Option<usize>) {
        let (n, meta) = self.find_leaf(l, key, None);
        (n, self.leaf_find(l, n, meta, key).1)
    }

    /// Whether `key` is in the tree.
    pub fn contains(&self, m: &impl Mem, key: u64) -> bool {
        with_loads!(m, |l| self.lookup(l, key).1.is_some())
    }

    /// The leaf that holds or would hold `key` (its offset), its meta word (the leaf flag and
    /// the bitmap) and `key`'s slot if there; with `path`, the inner nodes passed and the
    /// child taken in each. The node is not a leaf (no leaf flag) only if the search went
    /// round a cycle ([`BTree::find_leaf`]).
    fn locate(
        &self,
        l: &impl Load,
        key: u64,
        path: Option<&mut Path>,
    ) -> (u64, u64, Option<usize>) {
        let (n, meta) = self.find_leaf(l, key, path);
        let (meta, s) = self.leaf_find(l, n, meta, key);
        (n, meta, s)
    }

    /// [`Damage::TreeDepth`](crate::Damage::TreeDepth): a search passed more inner nodes than
    /// any tree has.
    fn too_deep(&self, m: &impl Mem) -> RewindError {
        crate::Damage::TreeDepth {
            root: m.read_u64(self.hdr + H_ROOT),
            levels: MAX_DEPTH,
        }
        .into()
    }

    /// All keys in order (walks the leaf chain).
    pub fn keys(&self, m: &impl Mem) -> Vec<u64> {
        let mut n = self.first_leaf(m);
        let mut out = Vec::new();
        while n != 0 {
            let bits = m.read_u64(n + N_META) & !LEAF;
            out.extend(self.sorted_slots(m, n, bits).iter().map(|e| e.0));
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
            let meta = m.read_u64(n + N_META);
            if meta & LEAF == 0 {
                for i in 0..=meta as usize {
                    stack.push(m.read_u64(self.child_off(n, i)));
                }
            }
        }
        out
    }
}
