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
//! where the masked 8-lane forms measured slower (`benches/lv.rs`).
//!
//! [`Impl`] lets tests and benchmarks call a particular implementation; asking for one the CPU
//! lacks silently gives the scalar one ([`Impl::available`] says which exist). The SIMD code
//! lives in the private `simd` module, the only place in this crate with `unsafe`.
//!
//! Choices where the paper is vague: the paper uses 32-bit lanes (`_mm512_max_epu32`); braid's
//! LSNs are byte positions and can pass 4 GiB within a run, so the lanes are 64-bit.

use std::sync::atomic::{AtomicU8, Ordering};

/// Most log streams an LV can describe (the `u8` index of sparse record stamps allows 256; 64
/// keeps every vector within one 512-byte block).
pub const MAX_STREAMS: usize = 64;

/// An implementation of the LV operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Impl {
    Scalar,
    Avx2,
    Avx512,
}

impl Impl {
    /// The fastest implementation this CPU supports.
    pub fn best() -> Impl {
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

    /// Every implementation this CPU can run (scalar first).
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

    pub fn name(self) -> &'static str {
        match self {
            Impl::Scalar => "scalar",
            Impl::Avx2 => "avx2",
            Impl::Avx512 => "avx512",
        }
    }

    /// `dst[k] = max(dst[k], src[k])` for `k < min(dst.len(), src.len())`.
    #[inline]
    pub fn max_into(self, dst: &mut [u64], src: &[u64]) {
        let n = dst.len().min(src.len());
        let (dst, src) = (&mut dst[..n], &src[..n]);
        match self {
            Impl::Avx512 if simd::has_avx512() => simd::max_into_avx512(dst, src),
            Impl::Avx2 if simd::has_avx2() => simd::max_into_avx2(dst, src),
            _ => scalar_max_into(dst, src),
        }
    }

    /// `a[k] <= b[k]` for every `k < min(a.len(), b.len())`.
    #[inline]
    pub fn le(self, a: &[u64], b: &[u64]) -> bool {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        match self {
            Impl::Avx512 if simd::has_avx512() => simd::le_avx512(a, b),
            Impl::Avx2 if simd::has_avx2() => simd::le_avx2(a, b),
            _ => scalar_le(a, b),
        }
    }
}

/// Below this length AVX2 beats AVX-512 (masked 8-lane operations on a short vector cost
/// more than 4-lane ones; measured with `benches/lv.rs`).
const AVX512_FROM: usize = 32;

#[inline]
fn for_len(n: usize) -> Impl {
    match Impl::best() {
        Impl::Avx512 if n < AVX512_FROM => Impl::Avx2,
        i => i,
    }
}

/// `dst = max(dst, src)` element-wise, with the best implementation for the length.
#[inline]
pub fn max_into(dst: &mut [u64], src: &[u64]) {
    for_len(dst.len()).max_into(dst, src)
}

/// `a <= b` element-wise (every entry), with the best implementation for the length.
#[inline]
pub fn le(a: &[u64], b: &[u64]) -> bool {
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

/// The vectorised operations. The only `unsafe` of braid-wal.
#[allow(unsafe_code)]
mod simd {
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::*;

    #[inline]
    pub fn has_avx2() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    #[inline]
    pub fn has_avx512() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Callers check [`has_avx512`] first.
    pub fn max_into_avx512(dst: &mut [u64], src: &[u64]) {
        #[cfg(target_arch = "x86_64")]
        {
            debug_assert!(has_avx512());
            // SAFETY: the caller checked that the CPU supports AVX-512F.
            unsafe { max_into_avx512_impl(dst, src) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        super::scalar_max_into(dst, src)
    }

    /// Callers check [`has_avx512`] first.
    pub fn le_avx512(a: &[u64], b: &[u64]) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            debug_assert!(has_avx512());
            // SAFETY: the caller checked that the CPU supports AVX-512F.
            unsafe { le_avx512_impl(a, b) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        super::scalar_le(a, b)
    }

    /// Callers check [`has_avx2`] first.
    pub fn max_into_avx2(dst: &mut [u64], src: &[u64]) {
        #[cfg(target_arch = "x86_64")]
        {
            debug_assert!(has_avx2());
            // SAFETY: the caller checked that the CPU supports AVX2.
            unsafe { max_into_avx2_impl(dst, src) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        super::scalar_max_into(dst, src)
    }

    /// Callers check [`has_avx2`] first.
    pub fn le_avx2(a: &[u64], b: &[u64]) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            debug_assert!(has_avx2());
            // SAFETY: the caller checked that the CPU supports AVX2.
            unsafe { le_avx2_impl(a, b) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        super::scalar_le(a, b)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn max_into_avx512_impl(dst: &mut [u64], src: &[u64]) {
        let n = dst.len().min(src.len());
        let mut k = 0;
        while k < n {
            let left = n - k;
            let mask: __mmask8 = if left >= 8 { 0xFF } else { (1u8 << left) - 1 };
            let d = dst[k..].as_mut_ptr();
            let s = src[k..].as_ptr();
            // SAFETY: lanes outside `mask` are neither read nor written, and the `mask` lanes
            // are the `min(8, left)` elements from `k`, inside both slices. Unaligned access is
            // what the masked loadu/storeu forms allow.
            unsafe {
                let a = _mm512_maskz_loadu_epi64(mask, d as *const i64);
                let b = _mm512_maskz_loadu_epi64(mask, s as *const i64);
                let m = _mm512_max_epu64(a, b);
                _mm512_mask_storeu_epi64(d as *mut i64, mask, m);
            }
            k += 8;
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn le_avx512_impl(a: &[u64], b: &[u64]) -> bool {
        let n = a.len().min(b.len());
        let mut k = 0;
        while k < n {
            let left = n - k;
            let mask: __mmask8 = if left >= 8 { 0xFF } else { (1u8 << left) - 1 };
            // SAFETY: as in `max_into_avx512_impl`, only the `mask` lanes (inside both slices)
            // are read.
            let ok = unsafe {
                let x = _mm512_maskz_loadu_epi64(mask, a[k..].as_ptr() as *const i64);
                let y = _mm512_maskz_loadu_epi64(mask, b[k..].as_ptr() as *const i64);
                _mm512_mask_cmple_epu64_mask(mask, x, y)
            };
            if ok != mask {
                return false;
            }
            k += 8;
        }
        true
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn max_into_avx2_impl(dst: &mut [u64], src: &[u64]) {
        let n = dst.len().min(src.len());
        let bias = _mm256_set1_epi64x(i64::MIN);
        let mut k = 0;
        while k + 4 <= n {
            // SAFETY: `k + 4 <= n`, so the four elements from `k` are inside both slices;
            // loadu/storeu accept any alignment.
            unsafe {
                let d = dst[k..].as_mut_ptr() as *mut __m256i;
                let a = _mm256_loadu_si256(d as *const __m256i);
                let b = _mm256_loadu_si256(src[k..].as_ptr() as *const __m256i);
                // a > b as unsigned <=> (a ^ 2^63) > (b ^ 2^63) as signed.
                let gt = _mm256_cmpgt_epi64(_mm256_xor_si256(a, bias), _mm256_xor_si256(b, bias));
                let m = _mm256_blendv_epi8(b, a, gt);
                _mm256_storeu_si256(d, m);
            }
            k += 4;
        }
        super::scalar_max_into(&mut dst[k..n], &src[k..n]);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn le_avx2_impl(a: &[u64], b: &[u64]) -> bool {
        let n = a.len().min(b.len());
        let bias = _mm256_set1_epi64x(i64::MIN);
        let mut k = 0;
        let mut any_gt = _mm256_setzero_si256();
        while k + 4 <= n {
            // SAFETY: `k + 4 <= n`: the four elements from `k` are inside both slices.
            unsafe {
                let x = _mm256_loadu_si256(a[k..].as_ptr() as *const __m256i);
                let y = _mm256_loadu_si256(b[k..].as_ptr() as *const __m256i);
                let gt = _mm256_cmpgt_epi64(_mm256_xor_si256(x, bias), _mm256_xor_si256(y, bias));
                any_gt = _mm256_or_si256(any_gt, gt);
            }
            k += 4;
        }
        _mm256_testz_si256(any_gt, any_gt) == 1 && super::scalar_le(&a[k..n], &b[k..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                let mut got = a.clone();
                imp.max_into(&mut got, &b);
                assert_eq!(got, want, "{imp:?}");
                assert_eq!(imp.le(&a, &b), scalar_le(&a, &b), "{imp:?} {a:?} {b:?}");
                assert_eq!(imp.le(&b, &a), scalar_le(&b, &a), "{imp:?}");
                assert!(imp.le(&a, &want) && imp.le(&b, &want));
            }
        }
    }
}
