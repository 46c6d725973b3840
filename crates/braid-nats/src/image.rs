//! Reading a stream back: every message of a JetStream stream, in sequence order, laid out by
//! its start LSN into one image of the braid stream's bytes, which [`crate::device`] serves
//! through `StreamSource` so braid's own framing and checksums verify it exactly as on a file.
//!
//! * A data message appends its bytes at its `Braid-Lsn`; one starting before the image's end
//!   (written after a truncation) replaces everything from its LSN on. One starting after the
//!   end would leave a hole: the stream lost a message, which is corruption and an error.
//! * A truncate message cuts the image at its LSN (recovery found the valid end there).
//! * A fence message carries a writer epoch and no bytes; the highest one is reported, so a
//!   writer that finds a newer writer's fence knows it is fenced.
//! * `sealed` is the start of the last data message: a message is stored whole or not at all,
//!   so only the last one can end inside a record (the first part of a flush split over
//!   several messages, its writer killed before the rest); damage before it is corruption.
//!
//! A stream read back after a purge ([`crate::device`] purges up to a live data message)
//! starts at its first remaining data message: `start` is that message's LSN, and the fences
//! and truncates before it are gone with what they shaped.
//!
//! The whole stream is read into memory when the device opens, in batches ([`crate::fetch`]).
//! Truncation by checkpoints (the purge up to the older kept checkpoint's cut) is what bounds
//! it; reading on demand could replace this without changing the device.

use braid_wal::{Lsn, WalError};

use crate::cluster::Cluster;
use crate::fetch;
use crate::publish::MsgKind;

/// A braid stream's bytes as its JetStream stream holds them.
#[derive(Debug, Clone, Default)]
pub struct Image {
    /// LSN of `bytes[0]`.
    pub start: Lsn,
    /// The stream's bytes from `start`.
    pub bytes: Vec<u8>,
    /// Start LSN of the last data message (see the module doc).
    pub sealed: Lsn,
    /// (start LSN, stream sequence) of each data message in the image, in order.
    pub msgs: Vec<(Lsn, u64)>,
    /// Highest writer epoch of a fence message.
    pub max_fence: u64,
    /// Stream sequence of the last message read.
    pub last_seq: u64,
}

impl Image {
    /// LSN just past the last byte.
    pub fn end(&self) -> Lsn {
        self.start + self.bytes.len() as u64
    }

    fn cut(&mut self, lsn: Lsn) {
        let keep = lsn.saturating_sub(self.start) as usize;
        self.bytes.truncate(keep);
        while self.msgs.last().is_some_and(|m| m.0 >= lsn) {
            self.msgs.pop();
        }
        self.sealed = self.sealed.min(lsn);
    }

    /// Apply one message (see the module doc); `at` names it in errors.
    pub fn apply(
        &mut self,
        kind: MsgKind,
        lsn: Lsn,
        epoch: u64,
        seq: u64,
        payload: &[u8],
        at: &dyn Fn() -> String,
    ) -> Result<(), WalError> {
        self.last_seq = self.last_seq.max(seq);
        match kind {
            MsgKind::Fence => self.max_fence = self.max_fence.max(epoch),
            MsgKind::Truncate => {
                if lsn < self.end() {
                    self.cut(lsn);
                }
            }
            MsgKind::Data => {
                if self.msgs.is_empty() && self.bytes.is_empty() {
                    self.start = lsn;
                } else if lsn < self.start || lsn > self.end() {
                    return Err(WalError::Corrupt {
                        file: at(),
                        offset: lsn,
                        damage: braid_wal::Corruption::MissingMessage {
                            lsn,
                            start: self.start,
                            end: self.end(),
                        },
                    });
                }
                self.cut(lsn);
                self.msgs.push((lsn, seq));
                self.sealed = lsn;
                self.bytes.extend_from_slice(payload);
            }
        }
        Ok(())
    }

    /// Copy the bytes at `lsn` into `buf`; returns how many there were (fewer at the end).
    pub fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> usize {
        let at = lsn.saturating_sub(self.start).min(self.bytes.len() as u64) as usize;
        let n = buf.len().min(self.bytes.len() - at);
        buf[..n].copy_from_slice(&self.bytes[at..at + n]);
        n
    }

    /// Forget the bytes before `lsn` (a standby replayed them), keeping the message that holds
    /// `lsn` in `msgs`, so the next message is still checked to follow on.
    pub fn drop_before(&mut self, lsn: Lsn) {
        let lsn = lsn.min(self.end());
        if lsn <= self.start {
            return;
        }
        self.bytes.drain(..(lsn - self.start) as usize);
        self.start = lsn;
        let keep = self.msgs.partition_point(|m| m.0 <= lsn).saturating_sub(1);
        self.msgs.drain(..keep);
    }

    /// Where `lsn` is, for errors: `service` and the message sequence holding it and the offset
    /// in it, or `service` and the LSN itself.
    pub fn locate_in(&self, service: &str, lsn: Lsn) -> (String, u64) {
        match self.locate(lsn) {
            Some((seq, off)) => (format!("{service} sequence {seq}"), off),
            None => (service.to_string(), lsn),
        }
    }

    /// The message holding `lsn` (its sequence and the offset in it), for error locations.
    pub fn locate(&self, lsn: Lsn) -> Option<(u64, u64)> {
        let i = self.msgs.partition_point(|m| m.0 <= lsn).checked_sub(1)?;
        let (start, seq) = self.msgs[i];
        Some((seq, lsn - start))
    }
}

/// Read every message of stream `name` up to sequence `last` into an image.
pub fn read(c: &Cluster, name: &str, last: u64) -> Result<Image, WalError> {
    let service = format!("{} stream {name}", c.config().url);
    let mut img = Image::default();
    fetch::fetch(c, name, 1, last, &mut |m| {
        let at = || format!("{service} sequence {}", m.seq);
        img.apply(m.kind, m.lsn, m.epoch, m.seq, &m.payload, &at)
    })?;
    img.last_seq = img.last_seq.max(last);
    Ok(img)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn later_messages_replace_a_truncated_tail_and_holes_are_errors() {
        let at = || "s".to_string();
        let mut img = Image::default();
        img.apply(MsgKind::Fence, 0, 1, 1, &[], &at).unwrap();
        img.apply(MsgKind::Data, 0, 1, 2, &[1; 8], &at).unwrap();
        img.apply(MsgKind::Data, 8, 1, 3, &[2; 8], &at).unwrap();
        assert_eq!((img.end(), img.sealed), (16, 8));
        img.apply(MsgKind::Truncate, 12, 2, 4, &[], &at).unwrap();
        assert_eq!((img.end(), img.sealed), (12, 8));
        img.apply(MsgKind::Data, 12, 2, 5, &[3; 4], &at).unwrap();
        assert_eq!(&img.bytes[8..], &[2, 2, 2, 2, 3, 3, 3, 3]);
        assert_eq!(img.locate(13), Some((5, 1)));
        assert_eq!(img.max_fence, 1);
        assert!(matches!(
            img.apply(MsgKind::Data, 40, 2, 6, &[4; 8], &at),
            Err(WalError::Corrupt { .. })
        ));
    }

    /// What a purge relies on (see `device.rs`): reading the messages back from any live data
    /// message on gives the same bytes from its start, the same end and the same sealed point,
    /// whatever truncates, rewrites and fences came before or after it.
    #[test]
    fn a_suffix_from_any_live_message_reads_back_the_same() {
        let at = || "s".to_string();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) % n
        };
        for _ in 0..300 {
            let mut msgs: Vec<(MsgKind, Lsn, u64, Vec<u8>)> = Vec::new();
            let mut img = Image::default();
            for seq in 1..=(5 + next(30)) {
                let end = img.end();
                let (kind, lsn) = match next(10) {
                    0 => (MsgKind::Fence, 0),
                    1 | 2 => (MsgKind::Truncate, next(end + 1)),
                    3 => (MsgKind::Data, next(end + 1)),
                    _ => (MsgKind::Data, end),
                };
                let payload = match kind {
                    MsgKind::Data => vec![seq as u8; 1 + next(8) as usize],
                    _ => Vec::new(),
                };
                img.apply(kind, lsn, 1, seq, &payload, &at).unwrap();
                msgs.push((kind, lsn, seq, payload));
            }
            for &(start, from) in &img.msgs {
                let mut part = Image::default();
                for (kind, lsn, seq, payload) in msgs.iter().filter(|m| m.2 >= from) {
                    part.apply(*kind, *lsn, 1, *seq, payload, &at).unwrap();
                }
                assert_eq!(part.start, start);
                assert_eq!(part.end(), img.end());
                assert_eq!(part.sealed, img.sealed);
                assert_eq!(part.bytes[..], img.bytes[(start - img.start) as usize..]);
                assert_eq!(part.msgs[..], img.msgs[img.msgs.len() - part.msgs.len()..]);
            }
        }
    }
}
