//! LSN vectors (Taurus, Xia et al. 2021, Section 3.1) and their two hot operations,
//! element-wise maximum and `<=` comparison, vectorised (Section 4.2).
//!
//! An LSN vector (LV) has one entry per log stream (1 to [`MAX_STREAMS`]); entry `i` says "may
//! depend on records of stream `i` ending at or before this position". Here an LV is a plain
//! `[u64]` slice of length `n` (the stream count); the scheme keeps them in its own buffers.
//!
//! The operations are chosen once per process, at the first call:
//!
//! * AVX-512F: 8 lanes of `u64` per instruction (`vpmaxuq`, `vpcmpuq`), the tail with a mask;
//! * AVX2: 4 lanes; AVX2 has no unsigned 64-bit max or compare, so both inputs are biased by
//!   `2^63` (flipping the sign bit turns an unsigned order into the signed one `vpcmpgtq`
//!   knows) and the maximum is a blend by that comparison; the tail (fewer than 4) is scalar;
//! * a scalar loop otherwise (and for every other architecture).
//!
//! [`max_into`] and [`le`] use AVX2 rather than AVX-512 for vectors shorter than 32 entries,
//! where the masked 8-lane forms measured slower (`benches/lv.rs`), and the scalar loop for
//! vectors shorter than 4 entries, which AVX2's 4-lane loop would leave entirely to its scalar
//! tail after a call the inlined loop does not make (measured in Taurus Fig. 16's runs: with
//! 2 logs, the vector path cost about 10% more LV time per transaction than the scalar one).
//!
//! [`Impl`] lets tests and benchmarks call a particular implementation; asking for one the CPU
//! lacks silently gives the scalar one ([`Impl::available`] says which exist). [`Ops`] is the
//! choice a database makes (Taurus's `simd` option, `LvSimd`): the automatic one above, or
//! one implementation at every length (scalar for "SIMD off", as in Taurus Fig. 16). The SIMD code
//! and its dispatch live in the private `simd` module (`lv/simd.rs`), the only place in this
//! crate allowed `unsafe`.
//!
//! Choices where the paper is vague: the paper uses 32-bit lanes (`_mm512_max_epu32`); braid's
//! LSNs are byte positions and can pass 4 GiB within a run, so the lanes are 64-bit.

use std::sync::atomic::{AtomicU8, Ordering};

mod simd;

/// Most log streams an LV describes: the most any scheme runs, declared with the streams.
pub(crate) use crate::stream::MAX_STREAMS;

/// An implementation of the LV operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) enum Impl {
    /// A plain loop; runs everywhere.
    Scalar,
    /// x86-64 AVX2, 4 lanes.
    Avx2,
    /// x86-64 AVX-512F, 8 lanes.
    Avx512,
}

impl Impl {
    /// The fastest implementation this CPU supports.
    pub(crate) fn best() -> Impl {
        static CHOSEN: AtomicU8 = AtomicU8::new(0);
        match CHOSEN.load(Ordering::Relaxed) {
            1 => Impl::Scalar,
            2 => Impl::Avx2,
            3 => Impl::Avx512,
            _ => {
                let i = if simd::has_avx512() {
                    Impl::Avx512
                } else if simd::has_avx2() {
                    Impl::Avx2
                } else {
                    Impl::Scalar
                };
                let code = match i {
                    Impl::Scalar => 1,
                    Impl::Avx2 => 2,
                    Impl::Avx512 => 3,
                };
                CHOSEN.store(code, Ordering::Relaxed);
                i
            }
        }
    }

    /// Whether this CPU can run it.
    pub(crate) fn supported(self) -> bool {
        match self {
            Impl::Scalar => true,
            Impl::Avx2 => simd::has_avx2(),
            Impl::Avx512 => simd::has_avx512(),
        }
    }

    /// Every implementation this CPU can run (scalar first).
    #[cfg(any(test, feature = "testing"))]
    pub fn available() -> Vec<Impl> {
        let mut v = vec![Impl::Scalar];
        if simd::has_avx2() {
            v.push(Impl::Avx2);
        }
        if simd::has_avx512() {
            v.push(Impl::Avx512);
        }
        v
    }

    /// Lower-case name for reports: `"scalar"`, `"avx2"` or `"avx512"`.
    #[cfg(feature = "testing")]
    pub fn name(self) -> &'static str {
        match self {
            Impl::Scalar => "scalar",
            Impl::Avx2 => "avx2",
            Impl::Avx512 => "avx512",
        }
    }

    /// `dst[k] = max(dst[k], src[k])` for `k < min(dst.len(), src.len())`.
    #[inline]
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn max_into(self, dst: &mut [u64], src: &[u64]) {
        let n = dst.len().min(src.len());
        simd::max_into(self, &mut dst[..n], &src[..n])
    }

    /// `a[k] <= b[k]` for every `k < min(a.len(), b.len())`.
    #[inline]
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn le(self, a: &[u64], b: &[u64]) -> bool {
        let n = a.len().min(b.len());
        simd::le(self, &a[..n], &b[..n])
    }
}

/// Below this length AVX2 beats AVX-512 (masked 8-lane operations on a short vector cost
/// more than 4-lane ones; measured with `benches/lv.rs`).
const AVX512_FROM: usize = 32;

/// Below this length the scalar loop beats any vector one (AVX2's 4 lanes would leave every
/// entry to its scalar tail).
const SIMD_FROM: usize = 4;

#[inline]
fn for_len(n: usize) -> Impl {
    match Impl::best() {
        _ if n < SIMD_FROM => Impl::Scalar,
        Impl::Avx512 if n < AVX512_FROM => Impl::Avx2,
        i => i,
    }
}

/// The LV operations a database runs: the best implementation for each length (`Ops::AUTO`),
/// or one implementation at every length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Ops(Option<Impl>);

impl Ops {
    /// The best implementation for each length ([`max_into`], [`le`]).
    pub(crate) const AUTO: Ops = Ops(None);

    /// `imp` at every length (the scalar loop if this CPU cannot run it; callers check
    /// [`Impl::supported`] first).
    pub(crate) fn fixed(imp: Impl) -> Ops {
        Ops(Some(imp))
    }

    /// `dst = max(dst, src)` element-wise.
    #[inline]
    pub(crate) fn max_into(self, dst: &mut [u64], src: &[u64]) {
        match self.0 {
            None => max_into(dst, src),
            Some(i) => i.max_into(dst, src),
        }
    }

    /// `a <= b` element-wise (every entry).
    #[inline]
    pub(crate) fn le(self, a: &[u64], b: &[u64]) -> bool {
        match self.0 {
            None => le(a, b),
            Some(i) => i.le(a, b),
        }
    }
}

/// `dst = max(dst, src)` element-wise, with the best implementation for the length.
#[inline]
pub(crate) fn max_into(dst: &mut [u64], src: &[u64]) {
    for_len(dst.len()).max_into(dst, src)
}

/// `a <= b` element-wise (every entry), with the best implementation for the length.
#[inline]
pub(crate) fn le(a: &[u64], b: &[u64]) -> bool {
    for_len(a.len()).le(a, b)
}

fn scalar_max_into(dst: &mut [u64], src: &[u64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = (*d).max(*s);
    }
}

fn scalar_le(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x <= y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_by_length() {
        assert_eq!(for_len(0), Impl::Scalar);
        assert_eq!(for_len(SIMD_FROM - 1), Impl::Scalar);
        let mid = for_len(SIMD_FROM);
        assert!(mid.supported() && mid != Impl::Avx512, "{mid:?}");
        assert_eq!(for_len(AVX512_FROM), Impl::best());
    }

    #[test]
    fn every_impl_agrees_on_edges() {
        let cases: Vec<(Vec<u64>, Vec<u64>)> = vec![
            (vec![], vec![]),
            (vec![1], vec![0]),
            (
                vec![u64::MAX, 0, 1 << 63, 5],
                vec![0, u64::MAX, (1 << 63) - 1, 5],
            ),
            ((0..64).collect(), (0..64).rev().collect()),
            (
                (0..13).map(|i| i * 3).collect(),
                (0..13).map(|i| i * 3).collect(),
            ),
        ];
        for (a, b) in cases {
            let mut want = a.clone();
            scalar_max_into(&mut want, &b);
            for imp in Impl::available() {
                assert!(imp.supported());
                let mut got = a.clone();
                imp.max_into(&mut got, &b);
                assert_eq!(got, want, "{imp:?}");
                let mut fixed = a.clone();
                Ops::fixed(imp).max_into(&mut fixed, &b);
                assert_eq!(fixed, want, "{imp:?}");
                assert_eq!(Ops::fixed(imp).le(&a, &b), scalar_le(&a, &b), "{imp:?}");
                assert_eq!(imp.le(&a, &b), scalar_le(&a, &b), "{imp:?} {a:?} {b:?}");
                assert_eq!(imp.le(&b, &a), scalar_le(&b, &a), "{imp:?}");
                assert!(imp.le(&a, &want) && imp.le(&b, &want));
            }
            let mut auto = a.clone();
            Ops::AUTO.max_into(&mut auto, &b);
            assert_eq!(auto, want);
            assert_eq!(Ops::AUTO.le(&a, &b), scalar_le(&a, &b));
        }
    }
}
