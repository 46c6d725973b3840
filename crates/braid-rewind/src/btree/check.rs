//! The B+-tree's consistency check ([`BTree::check`]): every structural invariant of the
//! layout described in [`super`], for tests and the fuzz target.

use super::{BTree, H_HEIGHT, H_ROOT, LEAF, Loads, N_META, N_NEXT, TreeShape, fingerprint};
use crate::CheckError;
use crate::tx::Mem;

impl BTree {
    /// Check every structural invariant: node kinds by depth (all leaves at the same depth),
    /// counts within capacity, keys within their separators' bounds (sorted in inner nodes,
    /// distinct in leaves), leaf bitmaps naming slots below the capacity, each occupied
    /// slot's fingerprint matching its key, sorted leaves holding their keys in the first
    /// slots in order, and the leaf chain visiting the leaves in key order.
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
        let meta = m.read_u64(n + N_META);
        if meta & LEAF != 0 {
            if depth != height {
                return Err(CheckError(format!(
                    "leaf {n:#x} at depth {depth} of {height}"
                )));
            }
            let h = self.head(&Loads(m), n);
            if h.bits >> self.lcap != 0 {
                return Err(CheckError(format!(
                    "leaf {n:#x} bitmap {:#x} names slots beyond its {} slots",
                    h.bits, self.lcap
                )));
            }
            let sorted = self.sorted_slots(m, n, h.bits);
            for (i, &(k, s)) in sorted.iter().enumerate() {
                if h.fp(s) != fingerprint(k) {
                    return Err(CheckError(format!(
                        "leaf {n:#x} slot {s}: fingerprint does not match key {k}"
                    )));
                }
                if !in_range(k) || (i > 0 && sorted[i - 1].0 == k) {
                    return Err(CheckError(format!(
                        "leaf {n:#x} key {k} repeated or out of bounds"
                    )));
                }
            }
            let c = sorted.len();
            if self.order == super::LeafOrder::Sorted
                && (h.bits != (1u64 << c) - 1
                    || sorted.iter().enumerate().any(|(i, &(_, s))| s != i))
            {
                return Err(CheckError(format!(
                    "sorted leaf {n:#x}: slots {:#x} not the first {c} in key order",
                    h.bits
                )));
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
        let c = meta as usize;
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
