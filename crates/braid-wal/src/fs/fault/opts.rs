//! The knobs of a [`FaultFs`](super::FaultFs): how a simulated power failure treats unsynced
//! writes, injected `sync_data` failures, and the counters it keeps.

/// What happens to writes that were not yet synced when the power fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unsynced {
    /// All of them are lost.
    #[default]
    Drop,
    /// Per file, every unsynced write but the last reached the disk, and the last one only in
    /// part: a random-length prefix of it (possibly empty, possibly whole).
    TearLast,
    /// Per file, a random subset of the unsynced writes reached the disk (each with
    /// probability 1/2, applied in their original order).
    KeepSubset,
}

/// Options of a simulated power failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrashOpts {
    /// What becomes of unsynced writes.
    pub unsynced: Unsynced,
    /// Seed of the random choices (torn lengths, subsets).
    pub seed: u64,
}

impl CrashOpts {
    /// Every unsynced write is lost.
    pub fn drop_unsynced() -> CrashOpts {
        CrashOpts {
            unsynced: Unsynced::Drop,
            seed: 0,
        }
    }
    /// [`Unsynced::TearLast`] with this seed.
    pub fn tear_last(seed: u64) -> CrashOpts {
        CrashOpts {
            unsynced: Unsynced::TearLast,
            seed,
        }
    }
    /// [`Unsynced::KeepSubset`] with this seed.
    pub fn keep_subset(seed: u64) -> CrashOpts {
        CrashOpts {
            unsynced: Unsynced::KeepSubset,
            seed,
        }
    }
}

/// An injected `sync_data` failure (EIO).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncFault {
    /// Matching calls that still succeed before the failing one (0: the next one fails).
    pub after: u64,
    /// Only `sync_data` on files whose path contains this string count and fail.
    pub path_contains: Option<String>,
    /// Keep failing every matching call after the first failure.
    pub sticky: bool,
}

impl SyncFault {
    /// The next `sync_data` fails.
    pub fn next() -> SyncFault {
        SyncFault::default()
    }
    /// `n` calls succeed, the one after fails.
    #[cfg(test)]
    pub(crate) fn after(n: u64) -> SyncFault {
        SyncFault {
            after: n,
            ..SyncFault::default()
        }
    }
    /// Only files whose path contains `s`.
    pub fn on_paths(mut self, s: impl Into<String>) -> SyncFault {
        self.path_contains = Some(s.into());
        self
    }
    /// Every matching call fails from the first failure on.
    pub fn sticky(mut self) -> SyncFault {
        self.sticky = true;
        self
    }
}

/// Counters of a [`FaultFs`](super::FaultFs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Successful `sync_data` calls.
    pub syncs: u64,
    /// Failed (injected) `sync_data` calls.
    pub failed_syncs: u64,
    /// `sync_dir` calls.
    pub dir_syncs: u64,
    /// `write_at` calls that wrote something.
    pub writes: u64,
    /// Bytes those calls wrote.
    pub bytes_written: u64,
    /// Writes that were cut short by injection.
    pub short_writes: u64,
    /// Successful `allocate` calls.
    pub allocates: u64,
    /// Operations refused with ENOSPC.
    pub enospc: u64,
}
