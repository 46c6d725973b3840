//! The LSN-vector operations: every implementation this CPU has (scalar, AVX2, AVX-512) agrees
//! with the definition, on vectors of every length up to 64 and values over the whole `u64`
//! range (the AVX2 path biases by 2^63 to compare unsigned; values at and above it are where it
//! would go wrong).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_wal::lv::{self, Impl, MAX_STREAMS};
use proptest::prelude::*;

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..64,
        any::<u64>(),
        (1u64 << 63) - 2..=(1u64 << 63) + 2,
        u64::MAX - 3..=u64::MAX
    ]
}

fn pair() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    (0..=MAX_STREAMS).prop_flat_map(|n| {
        (
            prop::collection::vec(value(), n),
            prop::collection::vec(value(), n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn implementations_agree((a, b) in pair(), shared in any::<bool>()) {
        // Half the cases compare vectors that are equal or ordered, where `le` is true.
        let b = if shared { a.iter().zip(&b).map(|(x, y)| x.max(y)).copied().collect() } else { b };
        let want_max: Vec<u64> = a.iter().zip(&b).map(|(x, y)| *x.max(y)).collect();
        let want_le = a.iter().zip(&b).all(|(x, y)| x <= y);
        for imp in Impl::available() {
            let mut m = a.clone();
            imp.max_into(&mut m, &b);
            prop_assert_eq!(&m, &want_max, "{:?} max", imp);
            prop_assert_eq!(imp.le(&a, &b), want_le, "{:?} le", imp);
            prop_assert!(imp.le(&a, &m) && imp.le(&b, &m), "{:?}: max is an upper bound", imp);
        }
        let mut m = a.clone();
        lv::max_into(&mut m, &b);
        prop_assert_eq!(m, want_max);
        prop_assert_eq!(lv::le(&a, &b), want_le);
    }
}

#[test]
fn the_best_implementation_is_available() {
    assert!(Impl::available().contains(&Impl::best()));
}
