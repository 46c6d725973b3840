//! [`NatsDevice`]: a braid stream on a JetStream stream (file storage, 3 replicas), behind a
//! DRAM ring like the file device's.
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
//! * `release` keeps everything (checkpoint truncation as a purge is the next phase).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_nats::jetstream::stream::{Config, StorageType};
use braid_wal::device::ring::DramRing;
use braid_wal::device::{Device, DeviceInfo};
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
}

/// A braid stream replicated on NATS JetStream (see the module doc).
pub struct NatsDevice {
    cluster: Arc<Cluster>,
    publisher: Publisher,
    image: Image,
    ring: DramRing,
    reusable: AtomicU64,
    writer: Mutex<Writer>,
    max_msg: usize,
}

impl std::fmt::Debug for NatsDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsDevice")
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
    c.run(&format!("creating stream {}", sc.name), || {
        c.js().get_or_create_stream(sc.clone())
    })?;
    Ok(())
}

impl NatsDevice {
    /// Open braid stream `stream` as writer `epoch` (see the module doc).
    pub fn open(cluster: Arc<Cluster>, stream: u32, epoch: u64) -> Result<NatsDevice, WalError> {
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
                detail: format!(
                    "stream {} holds the fence of writer epoch {}, this writer has epoch {epoch}",
                    publisher.stream_name(),
                    image.max_fence
                ),
            });
        }
        let buffer = cluster.config().buffer_size.max(1);
        let server_max = cluster.max_payload().saturating_sub(HEADER_ROOM).max(4096);
        let max_msg = match cluster.config().max_message {
            0 => server_max,
            n => n.min(server_max),
        };
        let end = image.end();
        Ok(NatsDevice {
            ring: DramRing::new(buffer),
            reusable: AtomicU64::new(end),
            writer: Mutex::new(Writer {
                last_seq: image.last_seq,
                pos: end,
                in_doubt: Vec::new(),
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

impl Device for NatsDevice {
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

    fn capacity(&self) -> u64 {
        self.ring.capacity()
    }

    fn reusable(&self) -> Lsn {
        self.reusable.load(Ordering::Acquire)
    }

    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        self.ring.write(lsn, bytes);
    }

    fn durable_on_fill(&self) -> bool {
        false
    }

    fn flush(&self, from: Lsn, to: Lsn) -> Result<(), WalError> {
        if to <= from {
            return Ok(());
        }
        let mut w = self.writer.lock();
        // A message whose publish got no answer may be stored: send exactly the same messages
        // again (the server drops a stored one as a duplicate of its id), never a longer one
        // under an id already used. The stream retries from the same durable point.
        let mut msgs = std::mem::take(&mut w.in_doubt);
        if msgs.first().is_some_and(|m| m.0 != from) || msgs.last().is_some_and(|m| m.1 > to) {
            return Err(WalError::Config(format!(
                "{}: a flush of LSNs {from}..{to} after one of {msgs:?} failed",
                self.stream_name()
            )));
        }
        let mut lsn = msgs.last().map_or(from, |m| m.1);
        while lsn < to {
            let n = (to - lsn).min(self.max_msg as u64);
            msgs.push((lsn, lsn + n));
            lsn += n;
        }
        for (i, &(a, b)) in msgs.iter().enumerate() {
            let mut buf = vec![0u8; (b - a) as usize];
            self.ring.read(a, &mut buf);
            match self.publish(&mut w, MsgKind::Data, a, Bytes::from(buf)) {
                Ok(_) => {}
                Err(e @ WalError::Remote { .. }) => {
                    w.in_doubt = msgs[..=i].to_vec();
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
        w.pos = to;
        self.reusable.fetch_max(to, Ordering::AcqRel);
        Ok(())
    }

    fn ensure_space(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }

    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        let mut w = self.writer.lock();
        if end < self.image.end() {
            self.publish(&mut w, MsgKind::Truncate, end, Bytes::new())?;
        }
        w.pos = end;
        self.reusable.store(end, Ordering::Release);
        Ok(())
    }

    fn release(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
}

impl StreamSource for NatsDevice {
    fn start(&self) -> Lsn {
        self.image.start
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
