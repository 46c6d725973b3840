//! SiloR recovery (Zheng et al., OSDI 2014, Section 5): read the durable epoch `D`, replay in
//! parallel every record of an epoch `<= D`, installing per key the value of the largest TID,
//! and discard everything of a later epoch.
//!
//! A single stream is replayed while it is read (`pipeline.rs`): its records of one key are
//! in TID order. Several streams, whose records of one key are ordered only by TID, are
//! replayed window by window between durable-epoch records (`windows.rs`), each window's
//! operations sorted by key and TID.
//!
//! Which records are replayed is the same in both: a record is replayed if its epoch is
//! `<= D` (`D` the largest `P`, or `V` upper end, found; `durable.rs`) and no void marker
//! covers its epoch; the rest are counted as skipped. Records the checkpoint recovery starts
//! from already holds ([`Cut`](crate::scheme::cut::Cut)) are counted and dropped.
//!
//! Choices where the paper is vague or braid differs: SiloR logs whole row values, so a record
//! for a key applies only if its TID is above the one installed. braid's redo updates carry
//! the changed columns only, so "latest TID wins" becomes "the key's operations apply in TID
//! order": the result is the value the largest TID left. Within a window a key's operations
//! older than its last full image (insert or delete) are not applied (SiloR's skip).

use std::sync::Arc;

use crate::device::Device;
use crate::scheme::{RecoveryReport, Replay, SchemeConfig};
use crate::{Lsn, RecordProblem, WalError};

/// What recovery found.
pub(crate) struct Recovered {
    pub(crate) report: RecoveryReport,
    /// Per stream: where appends resume.
    pub(crate) ends: Vec<Lsn>,
    /// The durable epoch the log proves.
    pub(crate) durable: u64,
    /// The largest epoch of any record or marker found (`>= durable`).
    pub(crate) max_epoch: u64,
}

/// What [`bad`] says of a redo record that carries no TID.
pub(super) const NO_TID: RecordProblem = RecordProblem::NoStamp("TID");

/// A record silor does not write (so).
pub(super) fn bad(stream: usize, lsn: Lsn, problem: RecordProblem) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "silor",
        stream,
        txn: None,
        lsn,
        problem,
    })
}

/// Recover the streams on `devices` through `replay`.
pub(crate) fn recover(
    cfg: &SchemeConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Recovered, WalError> {
    if let [dev] = devices {
        return super::pipeline::recover(cfg, &**dev, replay, progress);
    }
    super::windows::recover(cfg, devices, replay, progress)
}
