//! The persistence instructions: cache-line write-back (CLWB / CLFLUSHOPT / CLFLUSH), the store
//! fence (SFENCE) and non-temporal (streaming) copies.
//!
//! Instructions are chosen at run time with `is_x86_feature_detected!` when a region is made,
//! so one binary runs on every x86-64 CPU. Write-backs are emitted with inline assembly (the
//! std intrinsics for CLWB and CLFLUSHOPT are not stable); the assembly is not marked `nomem`,
//! so the compiler must have emitted every earlier store to the line before the write-back.
//!
//! Non-temporal copy (PMDK's `memmove_nodrain_movnt` strategy): the destination is brought to
//! 8-, then 16-, then 64-byte alignment with `MOVNTI` (`_mm_stream_si64`) and `MOVNTDQ`
//! (`_mm_stream_si128`), whole cache lines are streamed with one AVX-512 store
//! (`_mm512_stream_si512`) when the CPU has AVX-512F, else four SSE2 stores, and the tail is
//! narrowed the same way. Bytes that cannot be streamed (a head or tail not 8-byte aligned) are
//! written with plain stores and their line is written back with the region's flush
//! instruction, so that the whole range is durable after the next SFENCE, as the caller of
//! `write_nt` expects. Streaming stores are weakly ordered: only a fence on the same thread
//! makes them visible-in-order and durable.
//!
//! Other architectures compile with portable fallbacks: plain copies, no write-back, and a
//! sequentially consistent atomic fence for SFENCE.

use crate::FlushKind;

/// Whether the CPU can execute `kind`.
pub(crate) fn flush_supported(kind: FlushKind) -> bool {
    match kind {
        FlushKind::None => true,
        #[cfg(target_arch = "x86_64")]
        FlushKind::Clwb => cpu_flush_bits().clwb,
        #[cfg(target_arch = "x86_64")]
        FlushKind::ClflushOpt => cpu_flush_bits().clflushopt,
        #[cfg(target_arch = "x86_64")]
        FlushKind::Clflush => cpu_flush_bits().clflush,
        #[cfg(not(target_arch = "x86_64"))]
        _ => false,
    }
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct FlushBits {
    clwb: bool,
    clflushopt: bool,
    clflush: bool,
}

/// Write-back instructions of this CPU, read once with CPUID (`is_x86_feature_detected!` does
/// not know CLWB and CLFLUSHOPT).
#[cfg(target_arch = "x86_64")]
fn cpu_flush_bits() -> FlushBits {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    static BITS: std::sync::OnceLock<FlushBits> = std::sync::OnceLock::new();
    *BITS.get_or_init(|| {
        // CPUID is available on every x86-64 CPU. Leaf 1 EDX bit 19 is CLFLUSH; leaf 7
        // (subleaf 0) EBX bit 23 is CLFLUSHOPT and bit 24 CLWB, read only if leaf 7 exists.
        let max_leaf = __cpuid(0).eax;
        let clflush = __cpuid(1).edx & (1 << 19) != 0;
        let ebx7 = if max_leaf >= 7 {
            __cpuid_count(7, 0).ebx
        } else {
            0
        };
        FlushBits {
            clwb: ebx7 & (1 << 24) != 0,
            clflushopt: ebx7 & (1 << 23) != 0,
            clflush,
        }
    })
}

/// Whether streaming whole lines may use AVX-512 stores.
pub(crate) fn avx512_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Write back every cache line overlapping `[start, start + len)`.
///
/// # Safety
/// The range must lie inside one live mapping, and `kind` must be supported by the CPU
/// (checked when the region was made).
#[inline]
pub(crate) unsafe fn flush_lines(kind: FlushKind, start: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    let mut p = (start as usize) & !(crate::CACHE_LINE - 1);
    let end = start as usize + len;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::asm;
        match kind {
            FlushKind::Clwb => {
                while p < end {
                    // SAFETY: `p` points into the caller's mapped range (rounded down to its
                    // line, which is in the same page, hence mapped); CLWB only writes the
                    // line back and the caller guaranteed the CPU supports it.
                    unsafe { asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags)) };
                    p += crate::CACHE_LINE;
                }
            }
            FlushKind::ClflushOpt => {
                while p < end {
                    // SAFETY: as for CLWB above; CLFLUSHOPT support was checked by the caller.
                    unsafe {
                        asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags))
                    };
                    p += crate::CACHE_LINE;
                }
            }
            FlushKind::Clflush => {
                while p < end {
                    // SAFETY: as for CLWB above; CLFLUSH is baseline on x86-64.
                    unsafe { asm!("clflush [{0}]", in(reg) p, options(nostack, preserves_flags)) };
                    p += crate::CACHE_LINE;
                }
            }
            FlushKind::None => {}
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kind, p, end);
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Store fence: orders earlier write-backs and streaming stores before later stores.
#[inline]
pub(crate) fn sfence() {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SFENCE has no operands and only orders memory operations; it is baseline on
        // x86-64. Not `nomem`, so it is also a compiler barrier.
        unsafe { std::arch::asm!("sfence", options(nostack, preserves_flags)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Copy `len` bytes from `src` to `dst` with non-temporal stores where alignment allows;
/// plain-stored head/tail bytes are written back with `flush` (skip with [`FlushKind::None`],
/// e.g. under eADR).
///
/// # Safety
/// `dst..dst+len` must be valid for writes inside one live mapping, `src..src+len` valid for
/// reads, the two must not overlap, `flush` must be supported by the CPU, and `avx512` may
/// only be true if the CPU has AVX-512F.
#[inline]
pub(crate) unsafe fn copy_nt(
    dst: *mut u8,
    src: *const u8,
    len: usize,
    flush: FlushKind,
    avx512: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded contract.
        unsafe { copy_nt_x86(dst, src, len, flush, avx512) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (flush, avx512);
        // SAFETY: forwarded contract (valid, non-overlapping ranges).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn copy_nt_x86(dst: *mut u8, src: *const u8, len: usize, flush: FlushKind, avx512: bool) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si64, _mm_stream_si128};

    let mut d = dst;
    let mut s = src;
    let mut n = len;

    // Head: plain stores up to 8-byte alignment, then write the line back.
    let head = ((d as usize).wrapping_neg() & 7).min(n);
    if head > 0 {
        // SAFETY: `head <= n`, both ranges valid and disjoint per the contract; the flush
        // covers the line just written, inside the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(s, d, head);
            flush_lines(flush, d, head);
            d = d.add(head);
            s = s.add(head);
        }
        n -= head;
    }
    // 8 -> 16 alignment.
    if n >= 8 && (d as usize) & 15 != 0 {
        // SAFETY: `d` is 8-byte aligned and 8 bytes remain; the source is read unaligned.
        unsafe {
            _mm_stream_si64(d.cast::<i64>(), s.cast::<i64>().read_unaligned());
            d = d.add(8);
            s = s.add(8);
        }
        n -= 8;
    }
    // 16 -> 64 alignment.
    while n >= 16 && (d as usize) & 63 != 0 {
        // SAFETY: `d` is 16-byte aligned and 16 bytes remain; unaligned source load.
        unsafe {
            _mm_stream_si128(d.cast::<__m128i>(), _mm_loadu_si128(s.cast::<__m128i>()));
            d = d.add(16);
            s = s.add(16);
        }
        n -= 16;
    }
    // Whole lines.
    if n >= 64 {
        let body = n & !63;
        if avx512 {
            // SAFETY: the caller promised AVX-512F; `d` is 64-byte aligned (or n < 64 before),
            // `body` bytes remain in both ranges.
            unsafe { stream_lines_avx512(d, s, body) };
        } else {
            // SAFETY: as above, with SSE2 (baseline).
            unsafe { stream_lines_sse2(d, s, body) };
        }
        // SAFETY: `body <= n`, still inside both ranges.
        unsafe {
            d = d.add(body);
            s = s.add(body);
        }
        n -= body;
    }
    // Tail.
    while n >= 16 {
        // SAFETY: `d` is 16-byte aligned here (the loops above left it 64- or 16-aligned).
        unsafe {
            _mm_stream_si128(d.cast::<__m128i>(), _mm_loadu_si128(s.cast::<__m128i>()));
            d = d.add(16);
            s = s.add(16);
        }
        n -= 16;
    }
    if n >= 8 {
        // SAFETY: `d` is at least 8-byte aligned here and 8 bytes remain.
        unsafe {
            _mm_stream_si64(d.cast::<i64>(), s.cast::<i64>().read_unaligned());
            d = d.add(8);
            s = s.add(8);
        }
        n -= 8;
    }
    if n > 0 {
        // SAFETY: the last `n < 8` bytes of both ranges; the flush covers them.
        unsafe {
            std::ptr::copy_nonoverlapping(s, d, n);
            flush_lines(flush, d, n);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn stream_lines_avx512(d: *mut u8, s: *const u8, len: usize) {
    use std::arch::x86_64::{__m512i, _mm512_loadu_si512, _mm512_stream_si512};
    let mut off = 0;
    while off < len {
        // SAFETY: `d + off` is 64-byte aligned and `len` is a multiple of 64 inside both ranges
        // (caller contract); the source load is unaligned.
        unsafe {
            let v = _mm512_loadu_si512(s.add(off).cast::<__m512i>());
            _mm512_stream_si512(d.add(off).cast::<__m512i>(), v);
        }
        off += 64;
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn stream_lines_sse2(d: *mut u8, s: *const u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let mut off = 0;
    while off < len {
        // SAFETY: `d + off` is 64-byte aligned and `len` a multiple of 64 inside both ranges
        // (caller contract); four 16-byte streaming stores fill one line.
        unsafe {
            let s0 = s.add(off).cast::<__m128i>();
            let d0 = d.add(off).cast::<__m128i>();
            let a = _mm_loadu_si128(s0);
            let b = _mm_loadu_si128(s0.add(1));
            let c = _mm_loadu_si128(s0.add(2));
            let e = _mm_loadu_si128(s0.add(3));
            _mm_stream_si128(d0, a);
            _mm_stream_si128(d0.add(1), b);
            _mm_stream_si128(d0.add(2), c);
            _mm_stream_si128(d0.add(3), e);
        }
        off += 64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_consistent() {
        assert!(flush_supported(FlushKind::None));
        let best = FlushKind::detect();
        assert!(best.is_supported());
        #[cfg(target_arch = "x86_64")]
        assert_ne!(
            best,
            FlushKind::None,
            "every x86-64 CPU has at least CLFLUSH"
        );
    }

    #[test]
    fn nt_copy_both_widths_match_plain_copy() {
        let src: Vec<u8> = (0..1024u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut widths = vec![false];
        if avx512_available() {
            widths.push(true);
        }
        for avx in widths {
            for off in [0usize, 1, 7, 8, 9, 16, 63, 64, 65] {
                for len in [0usize, 1, 5, 8, 15, 16, 17, 63, 64, 65, 200, 700] {
                    let mut dst = vec![0xAAu8; 1024 + 128];
                    let base = dst.as_mut_ptr();
                    let align = base.align_offset(64);
                    // SAFETY: `align + off + len <= 64 + 65 + 700 < dst.len()`; src holds
                    // 1024 bytes; avx is only set when detected; Clflush is baseline.
                    unsafe {
                        copy_nt(
                            base.add(align + off),
                            src.as_ptr(),
                            len,
                            FlushKind::Clflush,
                            avx,
                        )
                    };
                    sfence();
                    let got = &dst[align + off..align + off + len];
                    assert_eq!(got, &src[..len], "avx={avx} off={off} len={len}");
                    assert!(dst[..align + off].iter().all(|&b| b == 0xAA));
                    assert!(dst[align + off + len..].iter().all(|&b| b == 0xAA));
                }
            }
        }
    }
}
