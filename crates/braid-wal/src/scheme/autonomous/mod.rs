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
//!   settled records that log and the row's GSN in its **sparse dependency vector** (the
//!   paper's per-transaction (worker, GSN) vector) and is acknowledged, by the thread that
//!   waits for it, once its own log and those logs are *settled* up to those GSNs: durable,
//!   with every commit of theirs up to there settled too, so that a transitive dependency (a
//!   dependency that itself depended on a third log) is waited for (`ack.rs`). The waiter
//!   inserts **barriers** (clock records) into logs whose clock lags, and runs a lagging log's
//!   flush itself when none is under way (**log stealing**). Acknowledgement is parallel: as
//!   many commits settle at once as threads wait.
//! * **Recovery** is gsn's pipeline, with gsn's bound `B` and one step more (`gsn/live.rs`):
//!   commits above `B` are decided in GSN order, a commit kept if no earlier commit of its log
//!   was dropped and each dependency lies at or below `B` or in its log's kept prefix; the
//!   decisions go into the recovery's void marker, so that a later recovery keeps exactly the
//!   same commits although later records have raised the logs' clocks.
//!
//! Where this departs from the paper, and why: the vector is kept sparse per log (one GSN per
//! log a transaction touched unsettled writes of), and written into the commit record (a
//! `Commit` record after the transaction's redo record, `gsn/deps.rs`) only by the commits
//! that have one (1-2% of YCSB at Zipf 0.6 with Remote Flush Avoidance, `docs/results.md`),
//! so a local commit stays one record. A page written by several logs whose writes are not all
//! settled names no single writer (RFA's `MULTI`), and a miss over many pages reads every
//! log's clock: such a commit depends on every log and waits, as before the vector existed,
//! until every log is settled up to its GSN (counted: `remote_all_logs`; `remote_dep_logs`
//! sums the logs the commits that needed a remote flush waited for). A commit waits for every
//! earlier commit of its own log to be settled as well (the paper's worker acknowledges its
//! transactions in order), because a transaction may read its own log's writes without
//! recording them. The paper's io_uring submission with many transactions in flight per
//! worker is the engine's pipelined commit (`commit_async`); its O_DIRECT writes are the file
//! device's `direct` option. Persistent-memory logs are refused (a durable cache needs no
//! acknowledgement protocol at all: gsn's `commit = durable`).
//!
//! **Command logging** (the paper logs data; this follows Taurus, Xia et al., VLDB 2021): a
//! commit record carries the stored procedure's id and parameters (`Kind::Command`, with its
//! dependency vector in a `Commit` record after it when it has one) instead of redo images.
//! GSNs order read-after-write and write-after-write dependencies; re-execution also needs
//! write-after-read ones, so each page clock gets a read GSN that a logged transaction raises
//! to its commit GSN before its locks are released and above which a writer of the page takes
//! its GSN (Taurus's readLV, Section 3.2; with pending marks for OCC, Section 4.3, and for
//! inserts into scanned ranges, Section 3.4: `gsn/reads.rs`). Recovery decides which commits
//! live exactly as for data logging (the bound, the void markers' decisions, the sparse
//! dependencies: `gsn/live.rs`) and re-executes them in parallel (`gsn/reexec.rs`, Taurus
//! Section 3.3 and Alg. 4 through its pools): each log in GSN order, and a transaction once
//! every other log is replayed up to its *replay floor*, the largest page clock or read GSN
//! its GSN was taken above other than its own raises, which the command record carries
//! (`gsn/deps.rs`; one number for all other logs where Taurus keeps a vector). A dependency a read or write records in the sparse vector
//! is unchanged: a write-after-read edge needs no durability wait (the overwritten read came
//! from a write the reader already depended on), only re-execution order. The read GSNs exist
//! only under command logging; a hot standby of command logs is refused (it replays redo
//! images page by page).
//!
//! Files: `config.rs` (options, registration, refusals) and `ack.rs` (settled GSNs and the
//! acknowledgement of commits that need more than their own log's flush).

pub(crate) mod ack;
mod config;

pub use config::AutonomousConfig;
pub(crate) use config::{NAME, NO_PMEM, REGISTRATION};
