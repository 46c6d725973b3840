//! The heap of braid's binaries: mimalloc, taking its memory from the kernel in 2 MiB pages
//! where the kernel allows it (transparent huge pages, asked for with `madvise`).
//!
//! Why: an in-memory database reaches rows and index buckets spread over gigabytes, in no
//! order (YCSB's 1 M rows of 1 KB are 1.1 GB). On 4 KiB pages almost every row access misses
//! the TLB, and the page walk that follows misses the cache too. On 2 MiB pages the table
//! takes about 550 pages, which the second-level TLB holds. Measured on a 2-core AMD EPYC
//! (AVX2, 2.45 GHz): YCSB with 1 M rows of 1 KB at 2 threads, release builds with glibc's
//! malloc and with this heap, alternated, medians of 3. No logging ran 1.19x as fast, serial
//! data logging 1.25x, taurus data on two logs 1.25x, Silo-R 1.22x, plover on two logs 1.05x.
//! Taurus data's recovery of one log ran 1.15x as fast, Silo-R's 0.97x (the rounds overlap).
//! mimalloc without its large pages gave no logging +8%. See `results/dbx1000/heap-ab/` and
//! `docs/results.md`, "The heap on 2 MiB pages".
//!
//! Why a crate rather than an arena of braid's own: rows, their images, index buckets and the
//! logs' buffers are all allocated through the global allocator, by braid's code and by the
//! index crate alike. Only the global allocator puts all of them on large pages, and mimalloc
//! is a well-kept one that asks the kernel for them.
//!
//! Library users choose their own global allocator; this is behind the crate's `heap`
//! feature. [`described`] says what the process's heap is, for result files; without a call
//! to `start` (with the feature) it says the system allocator.

use std::sync::OnceLock;

/// The global allocator braid's binaries declare (`#[global_allocator]`): mimalloc.
#[cfg(feature = "heap")]
pub use mimalloc::MiMalloc as Heap;

/// What [`start`] found, once it ran.
static STARTED: OnceLock<String> = OnceLock::new();

/// The environment variables through which mimalloc's own setting of large pages is given.
#[cfg(feature = "heap")]
const MIMALLOC_VARS: [&str; 2] = ["MIMALLOC_ALLOW_LARGE_OS_PAGES", "MIMALLOC_LARGE_OS_PAGES"];

/// The kernel's transparent huge page mode (`always`, `madvise` or `never`), or `unknown`.
fn kernel_thp_mode() -> String {
    let s =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    // The file lists every mode and brackets the one in force: "always [madvise] never".
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or("unknown")
        .to_string()
}

/// Start the heap of a binary that declares [`Heap`] its global allocator: ask mimalloc to
/// take memory in 2 MiB pages from now on, unless `MIMALLOC_ALLOW_LARGE_OS_PAGES` (or its old
/// name `MIMALLOC_LARGE_OS_PAGES`) is set, which mimalloc then follows as it is. Returns what
/// the heap is, as [`described`] will say it.
///
/// It changes mimalloc's setting only while the process has a single thread (mimalloc's
/// options are plain memory that a second thread's allocation could read at the same time),
/// so call it first thing in `main`. Called later, it leaves the setting alone and says so.
#[cfg(feature = "heap")]
pub fn start() -> &'static str {
    STARTED.get_or_init(|| {
        let thp = kernel_thp_mode();
        if let Some(var) = MIMALLOC_VARS.iter().find(|v| std::env::var_os(v).is_some()) {
            return format!("mimalloc, large pages as {var} says (transparent huge pages: {thp})");
        }
        let refused = match single_threaded() {
            Some(true) => None,
            Some(false) => Some("started after a second thread"),
            None => Some("/proc/self/status unreadable, so one thread could not be confirmed"),
        };
        if let Some(why) = refused {
            return format!("mimalloc on 4 KiB pages ({why}; transparent huge pages: {thp})");
        }
        // SAFETY: the call passes two plain values and writes one entry of mimalloc's option
        // table. Its hazard is a data race with another thread allocating or setting an option
        // at the same moment; the process has one thread (checked just above, and only this
        // thread, which is here, could start another), and `OnceLock` runs this once.
        unsafe {
            libmimalloc_sys::mi_option_set_enabled(libmimalloc_sys::mi_option_large_os_pages, true);
        }
        format!("mimalloc, 2 MiB pages asked (transparent huge pages: {thp})")
    })
}

/// Whether the process has one thread (`/proc/self/status`); `None` if that is not readable.
#[cfg(feature = "heap")]
fn single_threaded() -> Option<bool> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let n: usize = s
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()?;
    Some(n == 1)
}

/// What the process's heap is, for result files: what `start` (the `heap` feature) said, or
/// the system allocator if it never ran.
pub fn described() -> String {
    STARTED.get().cloned().unwrap_or_else(|| {
        format!(
            "the system allocator (transparent huge pages: {})",
            kernel_thp_mode()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_mode_is_the_bracketed_word() {
        let m = kernel_thp_mode();
        assert!(
            ["always", "madvise", "never", "unknown"].contains(&m.as_str()),
            "{m}"
        );
    }

    #[test]
    fn without_start_the_heap_is_the_system_allocator() {
        assert!(described().starts_with("the system allocator"));
    }
}
