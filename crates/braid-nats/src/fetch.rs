//! Reading a stream's messages in sequence order, many per round trip: an ordered pull consumer
//! (ephemeral, one replica, no acknowledgements; the client recreates it if it sees a gap)
//! started at a given sequence. The device reads a whole stream back with it when it opens
//! ([`crate::image`]), and a standby will read what the writer appended since its last round
//! with it (a `tail` module, not written yet).
//!
//! A direct get per message, the obvious alternative, costs one request and answer per message
//! (about 10,000 messages a second on loopback); the consumer streams them in batches.

use std::time::Instant;

use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
use braid_wal::{Lsn, WalError};
use bytes::Bytes;
use futures::StreamExt;

use crate::cluster::{ATTEMPT, Cluster, remote};
use crate::publish::{EPOCH, KIND, LSN, MsgKind};

/// One message of a braid stream, as read back.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Its stream sequence.
    pub seq: u64,
    /// What it holds.
    pub kind: MsgKind,
    /// Its `Braid-Lsn` (0 for a fence).
    pub lsn: Lsn,
    /// The epoch of the writer that published it.
    pub epoch: u64,
    /// Its bytes.
    pub payload: Bytes,
    /// When the server received it, in nanoseconds since the Unix epoch.
    pub published_ns: i128,
}

/// A stream's first and last sequence now (`first > last` when it holds no message).
pub fn bounds(c: &Cluster, name: &str) -> Result<(u64, u64), WalError> {
    // Getting the stream asks the server for its current state.
    let s = c.run("reading the stream's state", || c.js().get_stream(name))?;
    let state = &s.cached_info().state;
    Ok((state.first_sequence.max(1), state.last_sequence))
}

/// Call `f` with every message of stream `name` from sequence `from` to `last` (both
/// included; sequences purged or never written are skipped), in order.
pub fn fetch(
    c: &Cluster,
    name: &str,
    from: u64,
    last: u64,
    f: &mut dyn FnMut(Fetched) -> Result<(), WalError>,
) -> Result<(), WalError> {
    let service = format!("{} stream {name}", c.config().url);
    let (first, now_last) = bounds(c, name)?;
    let from = from.max(first);
    let last = last.min(now_last);
    if from > last {
        return Ok(());
    }
    // The reader's subscription unsubscribes from a task when it drops.
    let _rt = c.enter();
    let stream = c.run("opening the stream to read it", || c.js().get_stream(name))?;
    let cfg = OrderedConfig {
        deliver_policy: DeliverPolicy::ByStartSequence {
            start_sequence: from,
        },
        ..Default::default()
    };
    let consumer = c.run("creating a reader of the stream", || {
        stream.create_consumer(cfg.clone())
    })?;
    let timeout = c.config().timeout;
    let mut msgs = c
        .block_on(async { tokio::time::timeout(ATTEMPT, consumer.messages()).await })
        .map_err(|_| remote(&service, format!("no answer within {ATTEMPT:?}")))?
        .map_err(|e| remote(&service, format!("cannot read the stream: {e}")))?;
    let mut deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let next = c.block_on(async { tokio::time::timeout(left, msgs.next()).await });
        let m = match next {
            Ok(Some(Ok(m))) => m,
            Ok(Some(Err(e))) if Instant::now() >= deadline => {
                return Err(remote(
                    &service,
                    format!("reading up to sequence {last}: {e}"),
                ));
            }
            // A transient error (a leader change): the ordered consumer recreates itself.
            Ok(Some(Err(_))) => continue,
            Ok(None) => {
                return Err(remote(
                    &service,
                    format!("the reader stopped before sequence {last}"),
                ));
            }
            Err(_) => {
                return Err(remote(
                    &service,
                    format!("reading up to sequence {last}: no message within {timeout:?}"),
                ));
            }
        };
        deadline = Instant::now() + timeout;
        let (seq, published_ns) = {
            let info = m
                .info()
                .map_err(|e| remote(&service, format!("a message without its sequence: {e}")))?;
            (info.stream_sequence, info.published.unix_timestamp_nanos())
        };
        if seq > last {
            return Ok(());
        }
        let at = || format!("{service} sequence {seq}");
        let headers = m.headers.as_ref();
        let header = |h: &str| headers.and_then(|hs| hs.get(h)).map(|v| v.as_str());
        let kind = MsgKind::parse(header(KIND)).ok_or_else(|| WalError::BadSegment {
            file: at(),
            reason: "a message of an unknown kind (written by a newer braid?)".to_string(),
        })?;
        let lsn = header(LSN).and_then(|v| v.parse().ok());
        if kind != MsgKind::Fence && lsn.is_none() {
            return Err(WalError::BadSegment {
                file: at(),
                reason: "a message without its Braid-Lsn header".to_string(),
            });
        }
        f(Fetched {
            seq,
            kind,
            lsn: lsn.unwrap_or(0),
            epoch: header(EPOCH).and_then(|v| v.parse().ok()).unwrap_or(0),
            payload: m.payload.clone(),
            published_ns,
        })?;
        if seq >= last {
            return Ok(());
        }
    }
}
