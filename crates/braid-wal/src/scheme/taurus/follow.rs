//! A standby's replay of a Taurus log ([`crate::scheme::follow`]): each round is Taurus
//! recovery (Alg. 3-4, `recovery.rs`: per-stream readers, the cut `ELV` of what committed, LV-
//! ordered replay in parallel) over the streams from where the last round's cut left them.
//!
//! Why a round can start at the last cut: the cut is a closed vector, so every record below it
//! on every stream was replayed, and a record past it can only depend on records below it or
//! past the cuts of other streams, which the round reads. Its readers therefore meet every
//! record not yet replayed, and the replay's `RLV` starts at the old cut (each pool's first
//! record), which satisfies every LV entry pointing below it. The new cut is again the greatest
//! closed vector below what was read, so no round replays a record a later one would drop.
//!
//! Compressed record LVs are refused: a sparse stamp is decompressed against the latest anchor
//! before it in its stream, which a round that starts at the cut may not have read.

use std::time::Instant;

use super::{TaurusConfig, compress, recovery};
use crate::scan::StreamSource;
use crate::scheme::cut::Cut;
use crate::scheme::follow::{Follower, Resumed};
use crate::scheme::{RecoveryReport, Replay, SchemeConfig};
use crate::{Lsn, WalError};

pub(super) struct TaurusFollower {
    cfg: SchemeConfig,
    batch_bits: u32,
    at: Vec<Lsn>,
}

impl TaurusFollower {
    pub(super) fn boxed(
        cfg: &SchemeConfig,
        tc: &TaurusConfig,
        streams: usize,
    ) -> Result<Box<dyn Follower>, WalError> {
        if compress(tc.compress, streams) {
            return Err(WalError::Unsupported(
                crate::Unsupported::StandbyCompressed { streams },
            ));
        }
        Ok(Box::new(TaurusFollower {
            cfg: cfg.clone(),
            batch_bits: tc.recovery_batch_bits,
            at: (0..streams)
                .map(|s| Cut::start_of(cfg.cut.as_ref(), s))
                .collect(),
        }))
    }
}

impl Follower for TaurusFollower {
    fn round(
        &mut self,
        sources: &[&(dyn StreamSource + Sync)],
        replay: &dyn Replay,
    ) -> Result<RecoveryReport, WalError> {
        let resumed = Resumed::all(sources, &self.at, "taurus")?;
        let views: Vec<&(dyn StreamSource + Sync)> = resumed.iter().map(|r| r as _).collect();
        let started = Instant::now();
        let out = recovery::recover(
            &self.cfg,
            &views,
            replay,
            &|_| {},
            self.cfg.recovery_plan,
            self.batch_bits,
        )?;
        self.at = out.ends;
        let mut report = out.report;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    fn resume(&self) -> Vec<Lsn> {
        self.at.clone()
    }
}
