//! Conditional, idempotent publishing of one stream's messages.
//!
//! Every message carries its kind (`Braid-Kind`: data, fence or truncate), its start LSN
//! (`Braid-Lsn`), the writer epoch (`Braid-Epoch`), a `Nats-Msg-Id` naming the database, the
//! stream, the epoch and the LSN (so a publish retried after a lost acknowledgement is dropped
//! as a duplicate by the server, within the stream's duplicate window), and
//! `Nats-Expected-Last-Sequence`, the stream sequence this writer appended last: a publish from
//! a writer that another writer overtook is refused ("wrong last sequence"), which
//! [`Publisher::publish`] reports as [`WalError::Fenced`].
//!
//! A publish that gets no answer (its stream leader died, the client is reconnecting) is retried
//! with the same message id and the same expected sequence every attempt time (2 s) until the
//! configured timeout; then the flush fails with a timeout error naming the URL and the stream.

use std::time::Instant;

use async_nats::HeaderMap;
use async_nats::jetstream::context::{Publish, PublishErrorKind};
use bytes::Bytes;

use braid_wal::{Fence, Lsn, WalError};

use crate::cluster::{ATTEMPT, Cluster, remote, timed_out};

/// Header: what a message is.
pub const KIND: &str = "Braid-Kind";
/// Header: the stream position of the message's first byte.
pub const LSN: &str = "Braid-Lsn";
/// Header: the writer epoch that published it.
pub const EPOCH: &str = "Braid-Epoch";

/// What a message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgKind {
    /// Log bytes starting at its LSN.
    Data,
    /// A new writer's claim (no bytes): older writers' publishes after it are refused.
    Fence,
    /// Recovery cut the stream at its LSN: bytes at and after it are discarded.
    Truncate,
}

impl MsgKind {
    /// The header value.
    pub fn name(self) -> &'static str {
        match self {
            MsgKind::Data => "data",
            MsgKind::Fence => "fence",
            MsgKind::Truncate => "truncate",
        }
    }

    /// The kind a header value names (a message without the header is data).
    pub fn parse(v: Option<&str>) -> Option<MsgKind> {
        match v {
            None | Some("data") => Some(MsgKind::Data),
            Some("fence") => Some(MsgKind::Fence),
            Some("truncate") => Some(MsgKind::Truncate),
            Some(_) => None,
        }
    }
}

/// What a successful publish returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acked {
    /// The message's stream sequence.
    pub seq: u64,
    /// The server had it already (a retried publish): nothing was appended.
    pub duplicate: bool,
}

/// Publishes to one braid stream's JetStream stream as one writer epoch.
#[derive(Debug, Clone)]
pub struct Publisher {
    /// The braid stream index.
    pub stream: u32,
    /// The writer epoch.
    pub epoch: u64,
    subject: String,
    name: String,
    db: String,
}

impl Publisher {
    /// A publisher of stream `stream` of `c`'s database, as writer `epoch`.
    pub fn new(c: &Cluster, stream: u32, epoch: u64) -> Publisher {
        let cfg = c.config();
        Publisher {
            stream,
            epoch,
            subject: cfg.subject(stream),
            name: cfg.stream_name(stream),
            db: cfg.db_id.clone(),
        }
    }

    /// The JetStream stream's name.
    pub fn stream_name(&self) -> &str {
        &self.name
    }

    /// The message id of a `kind` message at `lsn` by this writer.
    pub fn msg_id(&self, kind: MsgKind, lsn: Lsn) -> String {
        match kind {
            MsgKind::Data => format!("{}.{}.{}.{lsn}", self.db, self.stream, self.epoch),
            MsgKind::Fence => format!("{}.{}.f{}", self.db, self.stream, self.epoch),
            MsgKind::Truncate => format!("{}.{}.{}.t{lsn}", self.db, self.stream, self.epoch),
        }
    }

    /// Publish a `kind` message at `lsn` holding `bytes`; `expected`: the stream's last
    /// sequence this writer knows, or `None` for an unconditional publish (a fence). Returns
    /// once a majority of the stream's replicas holds the message.
    pub fn publish(
        &self,
        c: &Cluster,
        kind: MsgKind,
        lsn: Lsn,
        bytes: Bytes,
        expected: Option<u64>,
    ) -> Result<Acked, WalError> {
        let mut headers = HeaderMap::new();
        headers.insert(KIND, kind.name());
        headers.insert(LSN, lsn.to_string().as_str());
        headers.insert(EPOCH, self.epoch.to_string().as_str());
        let mut msg = Publish::build()
            .payload(bytes)
            .headers(headers)
            .message_id(self.msg_id(kind, lsn));
        if let Some(seq) = expected {
            msg = msg.expected_last_sequence(seq);
        }
        let timeout = c.config().timeout;
        let deadline = Instant::now() + timeout;
        let service = format!("{} stream {}", c.config().url, self.name);
        let mut last: Option<crate::cluster::BoxError> = None;
        while Instant::now() < deadline {
            let attempt = async {
                let fut = c
                    .js()
                    .send_publish(self.subject.clone(), msg.clone())
                    .await?;
                fut.await
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let r = c.block_on(async { tokio::time::timeout(left.min(ATTEMPT), attempt).await });
            match r {
                Ok(Ok(ack)) => {
                    return Ok(Acked {
                        seq: ack.sequence,
                        duplicate: ack.duplicate,
                    });
                }
                Ok(Err(e)) if e.kind() == PublishErrorKind::WrongLastSequence => {
                    return Err(WalError::Fenced {
                        stream: self.stream,
                        fence: Fence::Append {
                            service,
                            epoch: self.epoch,
                            after: expected.unwrap_or(0),
                            source: std::sync::Arc::new(e),
                        },
                    });
                }
                // No answer, no stream leader yet, the connection is being re-established:
                // retry the same message (the id makes a second copy harmless).
                Ok(Err(e)) => last = Some(e.into()),
                Err(_) => {}
            }
            if let Some(left) = deadline.checked_duration_since(Instant::now()) {
                std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
            }
        }
        Err(remote(
            &service,
            "waiting for a publish acknowledgement (is a majority of the cluster up?)",
            timed_out(timeout, last),
        ))
    }
}
