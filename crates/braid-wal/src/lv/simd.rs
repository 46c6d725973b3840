//! The vectorised LV operations (AVX-512F and AVX2) and their dispatch: the only module of
//! braid-wal allowed `unsafe`.
//!
//! A `#[target_feature]` function may only run on a CPU that has the feature. The kernels below
//! are therefore `unsafe fn`s whose callers guarantee that the feature was detected, and the
//! two safe entry points, [`max_into`] and [`le`], are the dispatch: each checks
//! `is_x86_feature_detected!` and holds the `unsafe` call to the kernel it chose. A request
//! for an implementation the CPU lacks (and every other architecture) runs the scalar loop.

// The workspace denies `unsafe_code`: SIMD intrinsics and `#[target_feature]` calls need it,
// and this module is where braid-wal keeps them.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::Impl;

#[inline]
pub(super) fn has_avx2() -> bool {
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
pub(super) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `dst[k] = max(dst[k], src[k])` (equal lengths) with `imp` if this CPU supports it, else
/// with the scalar loop.
#[inline]
pub(super) fn max_into(imp: Impl, dst: &mut [u64], src: &[u64]) {
    match imp {
        #[cfg(target_arch = "x86_64")]
        Impl::Avx512 if has_avx512() => {
            // SAFETY: AVX-512F was detected just above.
            unsafe { max_into_avx512(dst, src) }
        }
        #[cfg(target_arch = "x86_64")]
        Impl::Avx2 if has_avx2() => {
            // SAFETY: AVX2 was detected just above.
            unsafe { max_into_avx2(dst, src) }
        }
        _ => super::scalar_max_into(dst, src),
    }
}

/// `a[k] <= b[k]` for every `k` (equal lengths) with `imp` if this CPU supports it, else with
/// the scalar loop.
#[inline]
pub(super) fn le(imp: Impl, a: &[u64], b: &[u64]) -> bool {
    match imp {
        #[cfg(target_arch = "x86_64")]
        Impl::Avx512 if has_avx512() => {
            // SAFETY: AVX-512F was detected just above.
            unsafe { le_avx512(a, b) }
        }
        #[cfg(target_arch = "x86_64")]
        Impl::Avx2 if has_avx2() => {
            // SAFETY: AVX2 was detected just above.
            unsafe { le_avx2(a, b) }
        }
        _ => super::scalar_le(a, b),
    }
}

/// AVX-512F `max_into` over `min(dst.len(), src.len())` entries.
///
/// # Safety
/// The CPU must support AVX-512F (the caller detected it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn max_into_avx512(dst: &mut [u64], src: &[u64]) {
    let n = dst.len().min(src.len());
    let mut k = 0;
    while k < n {
        let left = n - k;
        let mask: __mmask8 = if left >= 8 { 0xFF } else { (1u8 << left) - 1 };
        let d = dst[k..].as_mut_ptr();
        let s = src[k..].as_ptr();
        // SAFETY: lanes outside `mask` are neither read nor written, and the `mask` lanes are
        // the `min(8, left)` elements from `k`, inside both slices. Unaligned access is what
        // the masked loadu/storeu forms allow.
        unsafe {
            let a = _mm512_maskz_loadu_epi64(mask, d as *const i64);
            let b = _mm512_maskz_loadu_epi64(mask, s as *const i64);
            let m = _mm512_max_epu64(a, b);
            _mm512_mask_storeu_epi64(d as *mut i64, mask, m);
        }
        k += 8;
    }
}

/// AVX-512F `le` over `min(a.len(), b.len())` entries.
///
/// # Safety
/// The CPU must support AVX-512F (the caller detected it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn le_avx512(a: &[u64], b: &[u64]) -> bool {
    let n = a.len().min(b.len());
    let mut k = 0;
    while k < n {
        let left = n - k;
        let mask: __mmask8 = if left >= 8 { 0xFF } else { (1u8 << left) - 1 };
        // SAFETY: as in `max_into_avx512`, only the `mask` lanes (inside both slices) are read.
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

/// AVX2 `max_into` over `min(dst.len(), src.len())` entries.
///
/// # Safety
/// The CPU must support AVX2 (the caller detected it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_into_avx2(dst: &mut [u64], src: &[u64]) {
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

/// AVX2 `le` over `min(a.len(), b.len())` entries.
///
/// # Safety
/// The CPU must support AVX2 (the caller detected it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn le_avx2(a: &[u64], b: &[u64]) -> bool {
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
