//! `autonomous`: per-worker logs that acknowledge their own commits, with no group-commit
//! thread (Nguyen, Alhomssi, Ziegler, Leis, "Moving on From Group Commit: Autonomous Commit
//! Enables High Throughput and Low Latency on NVMe SSDs", SIGMOD 2025; LeanStore's `latency`
//! branch, `GroupCommitExecutor::SatisfyCommitConditions`).
//!
//! Built on the gsn scheme's logs (`super::gsn`: one log per worker, GSNs on pages, the
//! two-step parallel recovery), as LeanStore builds it on its GSN-stamped per-worker logs, with
//! Remote Flush Avoidance always on (Haubenschild et al. 2020, the design the paper extends).
//! What differs from `gsn` is who acknowledges:
//!
//! * **Each worker flushes its own log.** A commit that depends on no other log's unflushed
//!   write is acknowledged once its own log is durable past its record; the committing thread
//!   waits for that and, when no flush of its log is under way, writes and syncs the log
//!   itself (the stream's leader flush, `stream/lead.rs`). The paper's worker writes its log
//!   buffer in flush units of 4-16 KB as soon as a commit waits; here a flush writes whatever
//!   its log holds, and a log whose commits nobody waits for is written by its stream's
//!   flusher once 64 KB are pending.
//! * **No commit daemon.** A commit that read or wrote a row another log wrote and has not yet
//!   made durable everywhere is acknowledged by the thread that waits for it, once every log
//!   is durable up to its GSN (`ack.rs`): it inserts **barriers** (clock records) into logs
//!   whose clock lags, and runs a lagging log's flush itself when none is under way (**log
//!   stealing**). Acknowledgement is parallel: as many commits settle at once as threads wait.
//! * **Recovery** is gsn's, unchanged: local commits carry their flag and are replayed
//!   whatever their GSN, the others when every log reached their GSN.
//!
//! Where this departs from the paper, and why: the paper keeps a sparse per-transaction
//! vector (worker, GSN) of the logs a transaction depends on and waits for those logs alone.
//! Here a commit that needs a remote flush waits for every log up to its GSN (the barrier
//! makes an idle log's wait one clock record and one flush), because recovery's bound proves
//! a commit durable only when every log reached its GSN; a sparse wait needs the vector
//! written into the commit record and a recovery that checks it transitively (a dependency
//! may itself have depended on a third log), which is not built. With Remote Flush Avoidance
//! the commits that need a remote flush are 1-2% of YCSB at Zipf 0.6 (`docs/results.md`).
//! The paper's io_uring submission with many transactions in flight per worker is the
//! engine's pipelined commit (`commit_async`); its O_DIRECT writes are the file device's
//! `direct` option. Command logging is refused for gsn's reason (GSNs do not order
//! write-after-read dependencies), and so are persistent-memory logs (a durable cache needs
//! no acknowledgement protocol at all: gsn's `commit = durable`).
//!
//! Files: `config.rs` (options, registration, refusals) and `ack.rs` (the acknowledgement of
//! commits that need a remote flush).

pub(crate) mod ack;
mod config;

pub use config::AutonomousConfig;
pub(crate) use config::{NAME, NO_PMEM, REGISTRATION};
