//! [`NatsTail`]: a standby's reader of a database's streams. It claims nothing and writes
//! nothing; each poll fetches the messages appended since the last one ([`crate::fetch`]) and
//! applies them to an in-memory image of each stream, as the device does when it opens
//! (truncate messages cut it, later data replaces the tail), dropping the bytes the standby has
//! replayed.
//!
//! A purge (the writer's checkpoint truncation) that removed messages this reader had not read
//! yet is [`WalError::Behind`]: the standby fell behind the checkpoints and must start again
//! from the newest one. Before its first read, the reader starts at the stream's first
//! message; whether that is far enough back is the round's check (its resume point must lie
//! in what was read).

use std::sync::Arc;

use braid_engine::{LogTail, TailPoll};
use braid_wal::scan::StreamSource;
use braid_wal::{Lsn, WalError};

use crate::cluster::Cluster;
use crate::fetch;
use crate::image::Image;
use crate::publish::MsgKind;

struct Tailed {
    stream: u32,
    name: String,
    /// The next sequence to read.
    next: u64,
    image: Image,
    salt: u32,
    service: String,
}

/// What one stream's poll read: each data message's end and when it was stored, and the
/// data bytes.
struct Polled {
    messages: Vec<(Lsn, i128)>,
    bytes: u64,
}

impl Tailed {
    /// Read what the stream gained since the last poll into the image, then drop the bytes
    /// before the stream's entry of `keep_from`.
    fn poll(&mut self, cluster: &Cluster, keep_from: &[Lsn]) -> Result<Polled, WalError> {
        let (first, last) = fetch::bounds(cluster, &self.name)?;
        // Before the first read, a purge removed only what the checkpoint the standby started
        // from covers, or the round finds its resume point missing (`Behind`). After it,
        // purged messages not read yet held bytes the standby still needs.
        if first > self.next && self.next > 1 {
            return Err(WalError::Behind {
                stream: self.stream,
                unit: "sequence",
                resume: self.next,
                start: first,
                purged: true,
            });
        }
        let mut out = Polled {
            messages: Vec::new(),
            bytes: 0,
        };
        let service = &self.service;
        let image = &mut self.image;
        fetch::fetch_held(cluster, &self.name, self.next.max(first), last, &mut |m| {
            let at = || format!("{service} sequence {}", m.seq);
            image.apply(m.kind, m.lsn, m.epoch, m.seq, &m.payload, &at)?;
            if m.kind == MsgKind::Data {
                out.bytes += m.payload.len() as u64;
                out.messages
                    .push((m.lsn + m.payload.len() as u64, m.published_ns));
            }
            Ok(())
        })?;
        self.next = self.next.max(last + 1);
        if let Some(&keep) = keep_from.get(self.stream as usize) {
            self.image.drop_before(keep);
        }
        Ok(out)
    }
}

/// A standby's reader of every stream of a database (see the module doc).
pub struct NatsTail {
    cluster: Arc<Cluster>,
    streams: Vec<Tailed>,
}

impl NatsTail {
    /// Read streams `0..streams` of `cluster`'s database.
    pub fn new(cluster: Arc<Cluster>, streams: usize) -> NatsTail {
        let cfg = cluster.config();
        let streams = (0..streams as u32)
            .map(|s| Tailed {
                stream: s,
                name: cfg.stream_name(s),
                next: 1,
                image: Image::default(),
                salt: cfg.salt(s),
                service: format!("{} stream {}", cfg.url, cfg.stream_name(s)),
            })
            .collect();
        NatsTail { cluster, streams }
    }
}

impl LogTail for NatsTail {
    fn poll(&mut self, keep_from: &[Lsn]) -> Result<TailPoll, WalError> {
        let cluster = &*self.cluster;
        // The streams are read at once, one thread each: a stream's poll is mostly waiting on
        // the cluster (its state, then a consumer), so this is what a round waits for.
        let polled: Vec<Result<Polled, WalError>> = if self.streams.len() == 1 {
            self.streams
                .iter_mut()
                .map(|t| t.poll(cluster, keep_from))
                .collect()
        } else {
            std::thread::scope(|sc| {
                let handles: Vec<_> = self
                    .streams
                    .iter_mut()
                    .map(|t| sc.spawn(move || t.poll(cluster, keep_from)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(WalError::ThreadPanicked {
                                thread: "a NATS stream's reader",
                            })
                        })
                    })
                    .collect()
            })
        };
        let mut out = TailPoll {
            messages: Vec::with_capacity(self.streams.len()),
            bytes: 0,
        };
        for p in polled {
            let p = p?;
            out.bytes += p.bytes;
            out.messages.push(p.messages);
        }
        Ok(out)
    }

    fn sources(&self) -> Vec<&(dyn StreamSource + Sync)> {
        self.streams.iter().map(|t| t as _).collect()
    }
}

impl StreamSource for Tailed {
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
        self.salt
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        self.image.locate_in(&self.service, lsn)
    }
}
