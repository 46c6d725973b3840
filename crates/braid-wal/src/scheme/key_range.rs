//! A key range as the engine names it to a scheme (`on_scan`, `on_absent`: two
//! `std::ops::Bound`s) turned into inclusive keys, for schemes that walk the buckets or pages
//! it covers.

use std::ops::Bound;

/// `[lo, hi]` as inclusive keys, or None if the range holds no key.
pub(crate) fn inclusive(lo: Bound<u64>, hi: Bound<u64>) -> Option<(u64, u64)> {
    let a = match lo {
        Bound::Included(x) => x,
        Bound::Excluded(x) => x.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let b = match hi {
        Bound::Included(x) => x,
        Bound::Excluded(x) => x.checked_sub(1)?,
        Bound::Unbounded => u64::MAX,
    };
    (a <= b).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_become_inclusive_keys() {
        assert_eq!(
            inclusive(Bound::Included(3), Bound::Included(3)),
            Some((3, 3))
        );
        assert_eq!(
            inclusive(Bound::Excluded(3), Bound::Excluded(5)),
            Some((4, 4))
        );
        assert_eq!(inclusive(Bound::Excluded(3), Bound::Excluded(4)), None);
        assert_eq!(inclusive(Bound::Unbounded, Bound::Excluded(0)), None);
        assert_eq!(inclusive(Bound::Excluded(u64::MAX), Bound::Unbounded), None);
        assert_eq!(
            inclusive(Bound::Unbounded, Bound::Unbounded),
            Some((0, u64::MAX))
        );
    }
}
