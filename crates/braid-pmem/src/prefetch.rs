//! Software prefetch: start loading a cache line the caller will touch soon, so that a replay
//! loop can overlap the memory misses of the next records with the work on this one.
//!
//! A prefetch is a hint. It never faults, whatever the address (an unmapped or stale one is
//! dropped by the processor), so [`prefetch_lines`] is safe for any pointer; it does nothing on
//! processors other than x86-64.

/// The cache line size the lines are counted in.
const LINE: usize = 64;

/// Ask the processor to start loading the cache lines of `len` bytes from `at` into every cache
/// level; at most `max_lines` lines are asked for.
#[inline]
pub fn prefetch_lines(at: *const u8, len: usize, max_lines: usize) {
    let first = at as usize & !(LINE - 1);
    let end = (at as usize).saturating_add(len);
    let mut line = first;
    let mut n = 0;
    while line < end && n < max_lines {
        prefetch_one(line as *const u8);
        line += LINE;
        n += 1;
    }
}

/// Ask the processor to start loading `lines` cache lines from the one holding `at`: for a
/// reader about to probe a small object (a tree node) in an order it cannot know yet. Eight
/// lines (a 512-byte node) take eight hints straight, other counts four lines per step.
#[inline]
pub(crate) fn prefetch_from_line(at: *const u8, lines: usize) {
    let mut line = at as usize & !(LINE - 1);
    if lines == 8 {
        for k in 0..8 {
            prefetch_one(line.wrapping_add(k * LINE) as *const u8);
        }
        return;
    }
    let mut left = lines;
    while left >= 4 {
        prefetch_one(line as *const u8);
        prefetch_one(line.wrapping_add(LINE) as *const u8);
        prefetch_one(line.wrapping_add(2 * LINE) as *const u8);
        prefetch_one(line.wrapping_add(3 * LINE) as *const u8);
        line = line.wrapping_add(4 * LINE);
        left -= 4;
    }
    while left > 0 {
        prefetch_one(line as *const u8);
        line = line.wrapping_add(LINE);
        left -= 1;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_one(p: *const u8) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: PREFETCHT0 is a hint: it reads no memory architecturally and never faults, for any
    // address (Intel SDM Vol. 2B, PREFETCHh: "does not affect program behavior"), and SSE is part
    // of the x86-64 baseline.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn prefetch_one(_p: *const u8) {}

#[cfg(test)]
mod tests {
    use super::{prefetch_from_line, prefetch_lines};

    #[test]
    fn any_address_is_harmless() {
        let v = vec![7u8; 1000];
        prefetch_lines(v.as_ptr(), v.len(), 32);
        prefetch_lines(std::ptr::null(), 4096, 64);
        prefetch_lines(usize::MAX as *const u8, usize::MAX, 4);
        prefetch_from_line(v.as_ptr(), 8);
        prefetch_from_line(v.as_ptr(), 16);
        prefetch_from_line(std::ptr::null(), 0);
        prefetch_from_line(usize::MAX as *const u8, 7);
        assert_eq!(v[999], 7);
    }
}
