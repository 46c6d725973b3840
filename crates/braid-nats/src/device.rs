//! [`NatsDevice`]: a braid stream on a JetStream stream (file storage, 3 replicas), behind the
//! same DRAM ring as the file device: [`NatsLog`] is the [`Store`] behind a
//! [`BufferedDevice`], which holds the ring, its `reusable` watermark and the flush.
//!
//! * Open: create the JetStream stream if absent, append a fence message with this writer's
//!   epoch (unconditionally: it is what fences the writer before), then read the stream back
//!   ([`crate::image`]); a fence of a newer epoch in it means this writer is already fenced.
//!   The last sequence read becomes the expected last sequence of the next publish.
//! * `fill` copies into the ring; `flush(from, to)` publishes `[from, to)` as one message (split
//!   only where it exceeds the server's max payload) and returns once the publish is
//!   acknowledged, i.e. a majority of the replicas holds it (fsynced: the cluster runs with
//!   `sync_interval: always`). A refusal for a wrong last sequence is [`WalError::Fenced`]; the
//!   stream poisons itself on it, so every waiting commit fails and none is acknowledged.
//! * No answer within the timeout (a majority down) is [`WalError::Remote`]: the stream stalls
//!   (its waiting commits fail with that error, new ones fail fast) and retries the flush.
//!   The messages of the failed flush may or may not be stored, so the retry sends exactly
//!   them again first, under the same ids: the server drops those it has as duplicates (within
//!   its 2-minute duplicate window; after a longer outage a stored one makes the retry's
//!   expected sequence stale, which reads as fenced, and reopening recovers). Once the
//!   servers answer, the stall lifts and commits are acknowledged again.
//! * `reset_tail(end)` below the stream's end appends a truncate message: a message is never
//!   rewritten, later messages replace the tail when read back.
//! * `release(upto)` (checkpoint truncation) purges the messages wholly below `upto`. The
//!   device keeps the (start LSN, sequence) of its live data messages: those read back at open
//!   ([`Image::msgs`]) and those it published since, less the ones a truncate message cut off.
//!   It finds the first live message whose bytes reach past `upto` (the last one if none does)
//!   and purges every message below its sequence, data, fence and truncate alike. Reading the
//!   stream back from that message gives the same bytes from its start on: every later
//!   truncate or data message acts at an LSN after that start (one at or before it would have
//!   cut that message off, and it would not be live), so the messages before it only shaped
//!   bytes before it. The last data message is never purged, so the stream always says where
//!   its LSNs stand; and only acknowledged messages are ever named, so nothing this writer has
//!   in flight is touched. Purges only move forward.
//!
//! # Fencing when fences can be purged
//!
//! A purge removes fence messages, this writer's and a newer writer's alike, so the highest
//! fence read back at open no longer proves that no newer writer exists: a slow writer with an
//! older epoch could open after a newer one purged its fence, see no newer fence, and fence
//! the newer writer instead. So a writer opens in this order: claim an epoch (compare-and-set
//! in the key-value bucket), append its fence to every stream, then read the current epoch
//! from the bucket's leader ([`crate::epoch::current`]) and refuse if it is higher than its
//! own. That is enough: take writers A (epoch a) and B (epoch b > a). If B claimed b before A's
//! read, A reads at least b and refuses. Otherwise B claimed b after A's read, so after A's
//! fences were acknowledged; B appends its own fences after its claim, so on every stream B's
//! fence follows A's, and A's next conditional publish (expecting its own last sequence) is
//! refused: A is fenced as before. Either way at most the newest writer goes on. B, for its
//! part, reads A's fence back (epoch a < b) or finds it purged, and goes on.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_nats::jetstream::stream::{Config, StorageType};
use braid_wal::device::{BufferedDevice, DeviceInfo, DramRing, Store};
use braid_wal::scan::StreamSource;
use braid_wal::{Lsn, WalError};
use bytes::Bytes;
use parking_lot::Mutex;

use crate::cluster::Cluster;
use crate::image::{self, Image};
use crate::publish::{Acked, MsgKind, Publisher};

/// Room left in a message for its headers.
const HEADER_ROOM: usize = 4096;

struct Writer {
    /// Stream sequence of this writer's last acknowledged message.
    last_seq: u64,
    /// Where the next flush starts.
    pos: Lsn,
    /// The messages of a flush that failed without an answer (each may or may not be
    /// stored): the next flush publishes exactly these again first.
    in_doubt: Vec<(Lsn, Lsn)>,
    /// (start LSN, stream sequence) of the live data messages, oldest first: each holds the
    /// bytes from its start to the next one's (the last one's, to `pos`).
    live: VecDeque<(Lsn, u64)>,
    /// Messages below this sequence were purged.
    purged: u64,
}

impl Writer {
    /// A truncate (or a data message) at `lsn` cut off the live messages starting at or after
    /// it (as [`Image`] does when it reads them back).
    fn cut(&mut self, lsn: Lsn) {
        while self.live.back().is_some_and(|m| m.0 >= lsn) {
            self.live.pop_back();
        }
    }

    /// The live message to keep from when everything before `upto` may go (see the module
    /// doc): the first whose bytes reach past `upto`, else the last.
    fn keep_from(&self, upto: Lsn) -> Option<(Lsn, u64)> {
        let reaches = |i: usize| self.live.get(i + 1).map_or(self.pos, |n| n.0) > upto;
        let i = (0..self.live.len())
            .find(|&i| reaches(i))
            .or(self.live.len().checked_sub(1))?;
        self.live.get(i).copied()
    }
}

/// A braid stream replicated on NATS JetStream (see the module doc): [`NatsLog`] behind a
/// DRAM ring of [`NatsConfig::buffer_size`](crate::NatsConfig::buffer_size) bytes. Opened by
/// [`NatsLog::open_device`].
pub type NatsDevice = BufferedDevice<NatsLog>;

/// The [`Store`] of a [`NatsDevice`]: the JetStream stream of one braid stream, written as
/// this writer's epoch (see the module doc).
pub struct NatsLog {
    cluster: Arc<Cluster>,
    publisher: Publisher,
    image: Image,
    /// First LSN the stream still holds (the image's start, then each purge's).
    start: AtomicU64,
    writer: Mutex<Writer>,
    max_msg: usize,
}

impl std::fmt::Debug for NatsLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsLog")
            .field("stream", &self.publisher.stream_name())
            .field("epoch", &self.publisher.epoch)
            .finish_non_exhaustive()
    }
}

/// Create the JetStream stream of braid stream `stream` if it does not exist.
pub fn ensure_stream(c: &Cluster, stream: u32) -> Result<(), WalError> {
    let cfg = c.config();
    let sc = Config {
        name: cfg.stream_name(stream),
        subjects: vec![cfg.subject(stream)],
        storage: StorageType::File,
        num_replicas: cfg.replicas,
        allow_direct: true,
        description: Some(format!("braid database {} log stream {stream}", cfg.db_id)),
        ..Default::default()
    };
    c.run_within(
        &format!("creating stream {}", sc.name),
        c.create_timeout(),
        || c.js().get_or_create_stream(sc.clone()),
    )?;
    Ok(())
}

impl NatsLog {
    /// Open braid stream `stream` as writer `epoch` (see the module doc), behind a ring of
    /// the cluster's configured buffer size.
    pub fn open_device(
        cluster: Arc<Cluster>,
        stream: u32,
        epoch: u64,
    ) -> Result<NatsDevice, WalError> {
        let buffer = cluster.config().buffer_size;
        BufferedDevice::new(NatsLog::open(cluster, stream, epoch)?, buffer)
    }

    /// Open braid stream `stream` as writer `epoch` (see the module doc).
    fn open(cluster: Arc<Cluster>, stream: u32, epoch: u64) -> Result<NatsLog, WalError> {
        ensure_stream(&cluster, stream)?;
        let publisher = Publisher::new(&cluster, stream, epoch);
        let fence = publisher.publish(&cluster, MsgKind::Fence, 0, Bytes::new(), None)?;
        let last = cluster
            .run("reading the stream's state", || {
                cluster.js().get_stream(publisher.stream_name())
            })?
            .cached_info()
            .state
            .last_sequence
            .max(fence.seq);
        let image = image::read(&cluster, publisher.stream_name(), last)?;
        if image.max_fence > epoch {
            return Err(WalError::Fenced {
                stream,
                fence: braid_wal::Fence::Stream {
                    name: publisher.stream_name().to_string(),
                    fence: image.max_fence,
                    epoch,
                },
            });
        }
        let server_max = cluster.max_payload().saturating_sub(HEADER_ROOM).max(4096);
        let max_msg = match cluster.config().max_message {
            0 => server_max,
            n => n.min(server_max),
        };
        let end = image.end();
        Ok(NatsLog {
            start: AtomicU64::new(image.start),
            writer: Mutex::new(Writer {
                last_seq: image.last_seq,
                pos: end,
                in_doubt: Vec::new(),
                live: image.msgs.iter().copied().collect(),
                purged: 0,
            }),
            max_msg,
            image,
            publisher,
            cluster,
        })
    }

    /// The JetStream stream's name.
    pub fn stream_name(&self) -> &str {
        self.publisher.stream_name()
    }

    /// The writer epoch it publishes as.
    pub fn epoch(&self) -> u64 {
        self.publisher.epoch
    }

    /// What was read back when it opened.
    pub fn image(&self) -> &Image {
        &self.image
    }

    fn publish(
        &self,
        w: &mut Writer,
        kind: MsgKind,
        lsn: Lsn,
        b: Bytes,
    ) -> Result<Acked, WalError> {
        let ack = self
            .publisher
            .publish(&self.cluster, kind, lsn, b, Some(w.last_seq))?;
        w.last_seq = ack.seq;
        Ok(ack)
    }
}

impl Store for NatsLog {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "nats",
            location: format!(
                "{} stream {}",
                self.cluster.config().url,
                self.stream_name()
            ),
            emulation: None,
        }
    }

    fn end(&self) -> Lsn {
        self.writer.lock().pos
    }

    /// Returns once a majority of the replicas holds every message (so `sync` has nothing
    /// left to do).
    fn write_at(&self, ring: &DramRing, from: Lsn, to: Lsn) -> Result<(), WalError> {
        let mut w = self.writer.lock();
        // A message whose publish got no answer may be stored: send exactly the same messages
        // again (the server drops a stored one as a duplicate of its id), never a longer one
        // under an id already used. The stream retries from the same durable point.
        let mut msgs = std::mem::take(&mut w.in_doubt);
        if msgs.first().is_some_and(|m| m.0 != from) || msgs.last().is_some_and(|m| m.1 > to) {
            return Err(WalError::Internal(braid_wal::Invariant::InDoubt {
                stream: self.stream_name().to_string(),
                from,
                to,
            }));
        }
        let mut lsn = msgs.last().map_or(from, |m| m.1);
        while lsn < to {
            let n = (to - lsn).min(self.max_msg as u64);
            msgs.push((lsn, lsn + n));
            lsn += n;
        }
        for (i, &(a, b)) in msgs.iter().enumerate() {
            let mut buf = vec![0u8; (b - a) as usize];
            ring.read(a, &mut buf);
            match self.publish(&mut w, MsgKind::Data, a, Bytes::from(buf)) {
                Ok(ack) => {
                    // A duplicate's acknowledgement names the stored copy's sequence.
                    w.cut(a);
                    w.live.push_back((a, ack.seq));
                }
                Err(e @ WalError::Remote { .. }) => {
                    w.in_doubt = msgs[..=i].to_vec();
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
        w.pos = to;
        Ok(())
    }

    fn sync(&self) -> Result<(), WalError> {
        Ok(())
    }

    fn truncate(&self, end: Lsn) -> Result<(), WalError> {
        let mut w = self.writer.lock();
        if end < self.image.end() {
            self.publish(&mut w, MsgKind::Truncate, end, Bytes::new())?;
            w.cut(end);
        }
        w.pos = end;
        Ok(())
    }

    fn release(&self, upto: Lsn) -> Result<(), WalError> {
        let (lsn, seq) = {
            let w = self.writer.lock();
            match w.keep_from(upto) {
                Some((lsn, seq)) if seq > w.purged => (lsn, seq),
                _ => return Ok(()),
            }
        };
        // Outside the lock: flushes go on meanwhile, appending after `seq`. Purging up to the
        // same sequence twice is harmless, so the request may be repeated.
        let name = self.stream_name();
        let c = &self.cluster;
        c.run(
            &format!("purging stream {name} below sequence {seq}"),
            || async {
                let stream = c.js().get_stream(name).await.map_err(|e| e.to_string())?;
                stream
                    .purge()
                    .sequence(seq)
                    .await
                    .map_err(|e| e.to_string())
            },
        )?;
        let mut w = self.writer.lock();
        w.purged = w.purged.max(seq);
        while w.live.front().is_some_and(|m| m.1 < seq) {
            w.live.pop_front();
        }
        self.start.fetch_max(lsn, Ordering::AcqRel);
        Ok(())
    }
}

impl StreamSource for NatsLog {
    fn start(&self) -> Lsn {
        self.start.load(Ordering::Acquire)
    }

    fn limit(&self) -> Lsn {
        self.image.end()
    }

    fn sealed(&self) -> Lsn {
        self.image.sealed
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        Ok(self.image.read_at(lsn, buf))
    }

    fn salt_for(&self, _lsn: Lsn) -> u32 {
        self.cluster.config().salt(self.publisher.stream)
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        let name = format!(
            "{} stream {}",
            self.cluster.config().url,
            self.stream_name()
        );
        self.image.locate_in(&name, lsn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_keeps_the_first_message_reaching_past_the_cut() {
        let mut w = Writer {
            last_seq: 9,
            pos: 300,
            in_doubt: Vec::new(),
            live: [(0, 2), (100, 3), (200, 7)].into_iter().collect(),
            purged: 0,
        };
        assert_eq!(w.keep_from(0), Some((0, 2)));
        assert_eq!(w.keep_from(99), Some((0, 2)));
        assert_eq!(w.keep_from(100), Some((100, 3)));
        assert_eq!(w.keep_from(250), Some((200, 7)));
        // Everything covered: the last message stays, so the stream still says where it ends.
        assert_eq!(w.keep_from(300), Some((200, 7)));
        // A truncate at 250 cuts no message off (the one at 200 now ends there); one at 150
        // cuts off the message at 200, one at 100 the message at 100 too.
        w.cut(250);
        assert_eq!(w.live.len(), 3);
        w.cut(150);
        w.pos = 150;
        assert_eq!(w.live.len(), 2);
        assert_eq!(w.keep_from(120), Some((100, 3)));
        w.cut(100);
        w.pos = 100;
        assert_eq!(w.keep_from(100), Some((0, 2)));
        w.live.clear();
        assert_eq!(w.keep_from(100), None);
    }
}
