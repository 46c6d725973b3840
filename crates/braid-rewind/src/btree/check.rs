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
                return Err(CheckError::LeafChain {
                    leaf: w[0],
                    next: w[1],
                });
            }
        }
        if let Some(&last) = leaves.last()
            && m.read_u64(last + N_NEXT) != 0
        {
            return Err(CheckError::LastLeaf { leaf: last });
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
                return Err(CheckError::Depth {
                    node: n,
                    leaf: true,
                    depth,
                    height,
                });
            }
            let h = self.head(&Loads(m), n);
            if h.bits >> self.lcap != 0 {
                return Err(CheckError::Bitmap {
                    leaf: n,
                    bits: h.bits,
                    slots: self.lcap,
                });
            }
            let sorted = self.sorted_slots(m, n, h.bits);
            for (i, &(k, s)) in sorted.iter().enumerate() {
                if h.fp(s) != fingerprint(k) {
                    return Err(CheckError::Fingerprint {
                        leaf: n,
                        slot: s,
                        key: k,
                    });
                }
                if !in_range(k) || (i > 0 && sorted[i - 1].0 == k) {
                    return Err(CheckError::Key {
                        node: n,
                        leaf: true,
                        key: k,
                    });
                }
            }
            let c = sorted.len();
            if self.order == super::LeafOrder::Sorted
                && (h.bits != (1u64 << c) - 1
                    || sorted.iter().enumerate().any(|(i, &(_, s))| s != i))
            {
                return Err(CheckError::Unsorted {
                    leaf: n,
                    bits: h.bits,
                    count: c,
                });
            }
            shape.leaves += 1;
            shape.keys += c as u64;
            leaves.push(n);
            return Ok(());
        }
        if depth >= height {
            return Err(CheckError::Depth {
                node: n,
                leaf: false,
                depth,
                height,
            });
        }
        let c = meta as usize;
        if c == 0 || c > self.icap {
            return Err(CheckError::InnerCount { node: n, keys: c });
        }
        shape.inner += 1;
        let keys: Vec<u64> = (0..c).map(|i| m.read_u64(self.ikey_off(n, i))).collect();
        for w in keys.windows(2) {
            if w[0] >= w[1] {
                return Err(CheckError::Key {
                    node: n,
                    leaf: false,
                    key: w[1],
                });
            }
        }
        if let Some(&k) = keys.iter().find(|&&k| !in_range(k)) {
            return Err(CheckError::Key {
                node: n,
                leaf: false,
                key: k,
            });
        }
        for i in 0..=c {
            let clo = if i == 0 { lo } else { Some(keys[i - 1]) };
            let chi = if i == c { hi } else { Some(keys[i]) };
            let child = m.read_u64(self.child_off(n, i));
            if child == 0 {
                return Err(CheckError::NullChild { node: n, child: i });
            }
            self.check_node(m, child, depth + 1, height, clo, chi, shape, leaves)?;
        }
        Ok(())
    }
}
