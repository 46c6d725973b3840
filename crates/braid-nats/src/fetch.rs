//! Reading a stream's messages in sequence order, many per round trip: an ordered pull consumer
//! (ephemeral, one replica, no acknowledgements; the client recreates it if it sees a gap)
//! started at a given sequence. The device reads a whole stream back with it when it opens
//! ([`crate::image`]), and a standby reads what the writer appended since its last round
//! ([`crate::tail`]).
//!
//! A direct get per message, the obvious alternative, costs one request and answer per message
//! (about 10,000 messages a second on loopback); the consumer streams them in batches.

use std::time::Instant;

use async_nats::jetstream::consumer::{DeliverPolicy, pull, pull::OrderedConfig};
use braid_wal::{Lsn, RemoteFailure, SegmentDamage, WalError};
use bytes::Bytes;
use futures::StreamExt;
use tokio::runtime::EnterGuard;

use crate::cluster::{ATTEMPT, Cluster, client, remote, timed_out};
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
    let (first, now_last) = bounds(c, name)?;
    fetch_held(c, name, from.max(first), last.min(now_last), f)
}

/// [`fetch`] for a range the caller has just seen the stream hold (from its [`bounds`]), so
/// the stream's state is not asked for again.
pub fn fetch_held(
    c: &Cluster,
    name: &str,
    from: u64,
    last: u64,
    f: &mut dyn FnMut(Fetched) -> Result<(), WalError>,
) -> Result<(), WalError> {
    let service = format!("{} stream {name}", c.config().url);
    if from > last {
        return Ok(());
    }
    let cfg = OrderedConfig {
        deliver_policy: DeliverPolicy::ByStartSequence {
            start_sequence: from,
        },
        ..Default::default()
    };
    let mut reader = Ordered::open(
        c,
        name,
        cfg,
        &service,
        &format!("reading up to sequence {last}"),
    )?;
    let mut next_seq = from;
    loop {
        let m = reader.next()?;
        let (seq, published_ns) = {
            let info = m
                .info()
                .map_err(|e| remote(&service, "reading a message's sequence", client(e)))?;
            (info.stream_sequence, info.published.unix_timestamp_nanos())
        };
        if seq > last {
            return Ok(());
        }
        // An ordered consumer recreated before it delivered anything starts again from the
        // stream's first message (async-nats resets it to "deliver all"): skip what was asked
        // not to be read, and anything delivered twice.
        if seq < next_seq {
            continue;
        }
        next_seq = seq + 1;
        let at = || format!("{service} sequence {seq}");
        let headers = m.headers.as_ref();
        let header = |h: &str| headers.and_then(|hs| hs.get(h)).map(|v| v.as_str());
        let kind = MsgKind::parse(header(KIND)).ok_or_else(|| WalError::BadSegment {
            file: at(),
            damage: SegmentDamage::UnknownMessage,
        })?;
        let lsn = header(LSN).and_then(|v| v.parse().ok());
        if kind != MsgKind::Fence && lsn.is_none() {
            return Err(WalError::BadSegment {
                file: at(),
                damage: SegmentDamage::MessageWithoutLsn,
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

/// An ordered pull consumer on one stream, read a message at a time: each must come within the
/// configured timeout; a transient error (a leader change) is retried meanwhile, since the
/// consumer recreates itself. Shared by [`fetch`] and the object store's reads.
pub(crate) struct Ordered<'c> {
    c: &'c Cluster,
    msgs: pull::Ordered,
    service: String,
    what: String,
    // Last: the subscription unsubscribes from a task of the runtime when `msgs` drops.
    _rt: EnterGuard<'c>,
}

impl<'c> Ordered<'c> {
    /// A reader of stream `stream` with `cfg`; errors name `service` and say `what` it was
    /// doing.
    pub(crate) fn open(
        c: &'c Cluster,
        stream: &str,
        cfg: OrderedConfig,
        service: &str,
        what: &str,
    ) -> Result<Ordered<'c>, WalError> {
        let rt = c.enter();
        let s = c.run(&format!("{what}: opening stream {stream}"), || {
            c.js().get_stream(stream)
        })?;
        let consumer = c.run(&format!("{what}: creating a reader"), || {
            s.create_consumer(cfg.clone())
        })?;
        let msgs = c
            .block_on(async { tokio::time::timeout(ATTEMPT, consumer.messages()).await })
            .map_err(|_| remote(service, what, timed_out(ATTEMPT, None)))?
            .map_err(|e| remote(service, what, client(e)))?;
        Ok(Ordered {
            c,
            msgs,
            service: service.to_string(),
            what: what.to_string(),
            _rt: rt,
        })
    }

    /// The next message.
    pub(crate) fn next(&mut self) -> Result<async_nats::jetstream::Message, WalError> {
        let timeout = self.c.config().timeout;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msgs = &mut self.msgs;
            let fail = |failure: RemoteFailure| remote(&self.service, &*self.what, failure);
            match self
                .c
                .block_on(async { tokio::time::timeout(left, msgs.next()).await })
            {
                Ok(Some(Ok(m))) => return Ok(m),
                Ok(Some(Err(_))) if Instant::now() < deadline => continue,
                Ok(Some(Err(e))) => return Err(fail(client(e))),
                Ok(None) => return Err(fail(client("the reader stopped"))),
                Err(_) => return Err(fail(timed_out(timeout, None))),
            }
        }
    }
}
