//! Counting the fsync and fdatasync calls of every system, cheaply and in process.
//!
//! This binary defines `fdatasync` and `fsync` itself: each counts the call and makes the
//! system call. Rust's standard library (`File::sync_data`, `sync_all`), the bundled SQLite,
//! braid (braid-wal calls rustix, built in this workspace with its libc backend, see
//! `Cargo.toml`, so `rustix::fs::fdatasync` calls the C function) and, through the dynamic
//! symbol table (`--export-dynamic-symbol` in `build.rs`), the system's librocksdb all call
//! these names, so they reach the counting versions. The cost is one atomic add per sync.
//!
//! Bytes per sync, for every system alike, are the bytes the whole process passed to write
//! system calls during the run (`wchar` of `/proc/self/io`: kernel accounting, so it sees
//! every path, background work such as a memtable flush or a checkpoint and braid's
//! zero-ahead writes included) divided by the syncs counted.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static SYNCS: AtomicU64 = AtomicU64::new(0);

/// `fdatasync(2)`, counted.
#[unsafe(no_mangle)]
pub extern "C" fn fdatasync(fd: libc::c_int) -> libc::c_int {
    SYNCS.fetch_add(1, Relaxed);
    // SAFETY: the system call takes a file descriptor by value and touches no memory of
    // ours; on failure it returns -1 with errno set, as the libc function would.
    unsafe { libc::syscall(libc::SYS_fdatasync, fd) as libc::c_int }
}

/// `fsync(2)`, counted.
#[unsafe(no_mangle)]
pub extern "C" fn fsync(fd: libc::c_int) -> libc::c_int {
    SYNCS.fetch_add(1, Relaxed);
    // SAFETY: as for `fdatasync`.
    unsafe { libc::syscall(libc::SYS_fsync, fd) as libc::c_int }
}

/// fsync + fdatasync calls counted so far in this process.
pub fn syncs() -> u64 {
    SYNCS.load(Relaxed)
}

/// Bytes this process has passed to write system calls so far (`/proc/self/io` `wchar`).
pub fn bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("wchar:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}
