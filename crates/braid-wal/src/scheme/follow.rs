//! Following a log as a hot standby: replaying, round after round, what the streams gained
//! since the last round, with the scheme's own recovery (the central log's in-order replay,
//! Taurus's LV-ordered parallel replay, the gsn scheme's partition-and-sort pipeline), so a
//! standby holds a transaction-consistent copy of
//! the database and can take over when the writer is gone.
//!
//! A round gets each stream's bytes from (at most) [`Follower::resume`] on, as far as the
//! standby has read them, and replays every transaction those bytes prove committed and that
//! earlier rounds did not replay. What the rounds have replayed is a prefix of each stream (the
//! gsn scheme keeps to a GSN bound that no transaction straddles, see `gsn/follow.rs`), and the
//! next round resumes at its end; a scheme whose committed set is not a per-stream prefix (the
//! pertxn and epoch-based schemes decide commits from state the standby does not hold between
//! rounds) refuses to be followed (`SchemeDef::follower`).
//!
//! A round never writes: the writer's own recovery (after a crash, or the standby's on
//! promotion) is what trims a stream. The cut a round stops at is never past what that
//! recovery keeps, because both take the greatest committed prefix of what they read, and the
//! writer reads at least as much.

use crate::scan::StreamSource;
use crate::scheme::{RecoveryReport, Replay};
use crate::{Lsn, WalError};

/// A scheme's replay of a growing log, one round at a time (see the module doc).
pub trait Follower: Send {
    /// Replay what `sources` (one per stream, each holding its stream from at most
    /// [`Follower::resume`] on) prove committed beyond what earlier rounds replayed.
    fn round(
        &mut self,
        sources: &[&(dyn StreamSource + Sync)],
        replay: &dyn Replay,
    ) -> Result<RecoveryReport, WalError>;
    /// Per stream: everything before it has been replayed (or skipped as covered by the
    /// checkpoint the standby started from); the next round's sources start at or before it.
    fn resume(&self) -> Vec<Lsn>;
    /// Per stream: the first record of a transaction whose records the rounds have read but
    /// whose commit they have not (per-update records), at or before [`Follower::resume`]: a
    /// promotion's recovery reads from here ([`crate::scheme::cut::Cut::keeps`]).
    fn keeps(&self) -> Vec<Lsn> {
        self.resume()
    }
    /// Per stream: the scheme-specific mark ([`crate::scheme::cut::Cut::marks`]) a promotion's
    /// recovery may take with [`Follower::resume`] as its cut (gsn: a GSN up to which the log
    /// is known durable). Zero where the scheme keeps none.
    fn marks(&self) -> Vec<u64> {
        vec![0; self.resume().len()]
    }
}

/// A stream source seen from `start` on: a round's scanner starts where the last one stopped
/// (and a recovery from a checkpoint where its cut begins, `serial::replay_serial`).
pub(crate) struct Resumed<'a> {
    src: &'a (dyn StreamSource + Sync),
    start: Lsn,
}

impl<'a> Resumed<'a> {
    /// `src` from `start`. A start before the source's own is [`WalError::Behind`] (the
    /// standby needs bytes the stream no longer holds); a start past its limit is corruption.
    pub(crate) fn new(
        src: &'a (dyn StreamSource + Sync),
        start: Lsn,
        stream: usize,
    ) -> Result<Resumed<'a>, WalError> {
        if start < src.start() {
            return Err(WalError::Behind {
                stream: stream as u32,
                unit: "LSN",
                resume: start,
                start: src.start(),
                purged: false,
            });
        }
        if start > src.limit() {
            let (file, offset) = src.locate(start);
            return Err(WalError::Corrupt {
                file,
                offset,
                damage: crate::Corruption::ResumePastEnd {
                    stream,
                    resume: start,
                    end: src.limit(),
                },
            });
        }
        Ok(Resumed { src, start })
    }

    /// Each of `sources` from its entry of `at` (a round of a `scheme` log of `at.len()`
    /// streams).
    pub(crate) fn all(
        sources: &[&'a (dyn StreamSource + Sync)],
        at: &[Lsn],
        scheme: &str,
    ) -> Result<Vec<Resumed<'a>>, WalError> {
        if sources.len() != at.len() {
            return Err(WalError::StreamCount {
                scheme: scheme.to_string(),
                given: sources.len(),
                min: at.len(),
                max: at.len(),
            });
        }
        sources
            .iter()
            .zip(at)
            .enumerate()
            .map(|(i, (s, &at))| Resumed::new(*s, at, i))
            .collect()
    }
}

impl StreamSource for Resumed<'_> {
    fn start(&self) -> Lsn {
        self.start
    }
    fn limit(&self) -> Lsn {
        self.src.limit()
    }
    fn sealed(&self) -> Lsn {
        self.src.sealed().max(self.start)
    }
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        self.src.read_at(lsn, buf)
    }
    fn salt_for(&self, lsn: Lsn) -> u32 {
        self.src.salt_for(lsn)
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        self.src.locate(lsn)
    }
    fn data_end(&self, from: Lsn) -> Result<Lsn, WalError> {
        self.src.data_end(from)
    }
}
