//! The database's checkpoints in a JetStream object store bucket (`braid-<db_id>-ckpt`, file
//! storage, [`NatsConfig::replicas`](crate::NatsConfig::replicas) replicas): the
//! [`CheckpointStore`](braid_engine::CheckpointStore) of [`crate::NatsFactory`], so a database
//! recovers into an empty directory from its newest checkpoint and the log after it, and the
//! log streams can be purged up to a checkpoint (see [`crate::device`]).
//!
//! An object is a run of chunk messages and one metadata message naming them; a put publishes
//! the chunks, each acknowledged by a majority of the bucket's replicas, then the metadata
//! (which replaces an older object of the same name and purges its chunks). So a put that
//! failed half way left the previous object, or none, never a partial one.
//!
//! Waiting is bounded by progress, not by size: a put fails once no chunk was acknowledged (and
//! a get once no chunk arrived) within [`NatsConfig::timeout`](crate::NatsConfig::timeout), so
//! a large checkpoint takes as long as it needs while a cluster without a majority fails it in
//! that time. Reads are made here with an ordered pull consumer rather than the client's
//! `Object` reader, which panics if its consumer cannot be created (a server restarting), and
//! the listing from the stream leader's answers (see [`list`]).

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::object_store::{self, InfoErrorKind, ObjectInfo, ObjectStore};
use async_nats::jetstream::stream::{LastRawMessageErrorKind, StorageType, Stream};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE;
use braid_wal::{RemoteFailure, WalError};
use futures::StreamExt;
use futures::future::{Either, select};

use crate::cluster::{Cluster, client, remote};
use crate::fetch::Ordered;

/// The bucket, created if absent.
async fn bucket(c: &Cluster) -> Result<ObjectStore, String> {
    let cfg = c.config();
    let js = c.js();
    match js.get_object_store(cfg.ckpt_bucket()).await {
        Ok(s) => Ok(s),
        Err(_) => js
            .create_object_store(object_store::Config {
                bucket: cfg.ckpt_bucket(),
                description: Some(format!("braid database {}: checkpoints", cfg.db_id)),
                num_replicas: cfg.replicas,
                storage: StorageType::File,
                ..Default::default()
            })
            .await
            .map_err(|e| format!("cannot create object store {}: {e}", cfg.ckpt_bucket())),
    }
}

/// The bucket's stream, or `None` if the bucket was never created (no checkpoint was ever
/// stored). Only a put creates the bucket: a recovery that merely looks for checkpoints must
/// not need every server up, as creating a stream with all its replicas does.
async fn existing_stream(c: &Cluster) -> Result<Option<Stream>, String> {
    let name = format!("OBJ_{}", c.config().ckpt_bucket());
    match c.js().get_stream(&name).await {
        Ok(s) => Ok(Some(s)),
        Err(e) => match e.kind() {
            GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND => {
                Ok(None)
            }
            _ => Err(e.to_string()),
        },
    }
}

/// The bucket, or `None` if it was never created.
async fn existing(c: &Cluster) -> Result<Option<ObjectStore>, String> {
    if existing_stream(c).await?.is_none() {
        return Ok(None);
    }
    c.js()
        .get_object_store(c.config().ckpt_bucket())
        .await
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Where the checkpoints are, for messages.
pub fn location(c: &Cluster) -> String {
    format!(
        "object store {} on {}",
        c.config().ckpt_bucket(),
        c.config().url
    )
}

/// Milliseconds since `base`, for a progress mark shared with a watchdog.
fn millis(base: Instant) -> u64 {
    base.elapsed().as_millis() as u64
}

/// The bytes of a put, read chunk by chunk; every read after the first means the chunk before
/// it was acknowledged (the client publishes a chunk and awaits its acknowledgement before it
/// reads the next), and marks progress.
struct Progress<'a> {
    bytes: &'a [u8],
    reads: u64,
    base: Instant,
    mark: Arc<AtomicU64>,
}

impl tokio::io::AsyncRead for Progress<'_> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.reads > 0 {
            self.mark.store(millis(self.base), Ordering::Release);
        }
        self.reads += 1;
        let n = buf.remaining().min(self.bytes.len());
        let (now, rest) = self.bytes.split_at(n);
        buf.put_slice(now);
        self.bytes = rest;
        Poll::Ready(Ok(()))
    }
}

/// Store `bytes` as object `name` (see the module doc).
pub fn put(c: &Cluster, name: &str, bytes: &[u8]) -> Result<(), WalError> {
    let timeout = c.config().timeout;
    let base = Instant::now();
    // Progress across attempts: a retry after a failure goes on while the last acknowledged
    // chunk (or the start) is less than `timeout` ago.
    let mark = Arc::new(AtomicU64::new(0));
    let _rt = c.enter();
    loop {
        let mut data = Progress {
            bytes,
            reads: 0,
            base,
            mark: mark.clone(),
        };
        let attempt = async {
            let b = bucket(c).await?;
            b.put(name, &mut data)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let watchdog = async {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let idle = millis(base).saturating_sub(mark.load(Ordering::Acquire));
                if idle >= timeout.as_millis() as u64 {
                    return format!("no chunk acknowledged within {timeout:?}");
                }
            }
        };
        let last = c.block_on(async {
            match select(pin!(attempt), pin!(watchdog)).await {
                Either::Left((r, _)) => r,
                Either::Right((e, _)) => Err(e),
            }
        });
        let last = match last {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let idle = millis(base).saturating_sub(mark.load(Ordering::Acquire));
        if idle >= timeout.as_millis() as u64 {
            return Err(remote(
                &c.config().url,
                format!(
                    "storing {name} in object store {}",
                    c.config().ckpt_bucket()
                ),
                client(last),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The subject of object `name`'s description.
fn meta_subject(c: &Cluster, name: &str) -> String {
    format!(
        "$O.{}.M.{}",
        c.config().ckpt_bucket(),
        URL_SAFE.encode(name)
    )
}

/// The names of the objects held.
///
/// From the stream leader's answers only: the subjects of the descriptions (stream info),
/// then each one's last message. The client's own listing stops when a delivered message
/// says nothing is pending, which was seen to end early right after servers restarted; a
/// short list would make recovery drop local checkpoints the bucket does hold.
pub fn list(c: &Cluster) -> Result<Vec<String>, WalError> {
    let filter = format!("$O.{}.M.>", c.config().ckpt_bucket());
    let what = format!("listing object store {}", c.config().ckpt_bucket());
    c.run(&what, || async {
        let Some(stream) = existing_stream(c).await? else {
            return Ok(Vec::new());
        };
        let mut subjects = stream
            .info_with_subjects(&filter)
            .await
            .map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        while let Some(s) = subjects.next().await {
            let (subject, _) = s.map_err(|e| e.to_string())?;
            let m = match stream.get_last_raw_message_by_subject(&subject).await {
                Ok(m) => m,
                // Purged since the stream info was taken.
                Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => continue,
                Err(e) => return Err(e.to_string()),
            };
            let info: ObjectInfo = serde_json::from_slice(&m.payload)
                .map_err(|e| format!("a damaged description on {subject}: {e}"))?;
            if !info.deleted {
                names.push(info.name);
            }
        }
        Ok::<_, String>(names)
    })
}

/// Remove object `name` (nothing if it is not held): its chunks, then its description, so
/// the bucket keeps no subject per checkpoint ever taken.
pub fn remove(c: &Cluster, name: &str) -> Result<(), WalError> {
    let what = format!(
        "removing {name} from object store {}",
        c.config().ckpt_bucket()
    );
    c.run(&what, || async {
        let Some(b) = existing(c).await? else {
            return Ok(());
        };
        match b.delete(name).await {
            Ok(()) => {}
            Err(e) if e.kind() == object_store::DeleteErrorKind::NotFound => {}
            Err(e) => return Err(e.to_string()),
        }
        let Some(stream) = existing_stream(c).await? else {
            return Ok(());
        };
        stream
            .purge()
            .filter(meta_subject(c, name))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

/// Object `name`'s bytes, or `None` if it is not held.
pub fn get(c: &Cluster, name: &str) -> Result<Option<Vec<u8>>, WalError> {
    let cfg = c.config();
    let service = format!("{} object store {}", cfg.url, cfg.ckpt_bucket());
    let info = c.run(&format!("reading {name}'s description"), || async {
        let Some(b) = existing(c).await? else {
            return Ok(None);
        };
        match b.info(name).await {
            Ok(i) if i.deleted => Ok(None),
            Ok(i) => Ok(Some(i)),
            Err(e) if e.kind() == InfoErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    })?;
    let Some(info) = info else { return Ok(None) };
    if info.options.as_ref().is_some_and(|o| o.link.is_some()) {
        return Err(remote(
            &service,
            format!("reading {name}"),
            RemoteFailure::Link {
                name: name.to_string(),
            },
        ));
    }
    if info.chunks == 0 {
        return Ok(Some(Vec::new()));
    }
    let stream_name = format!("OBJ_{}", cfg.ckpt_bucket());
    let rc = pull::OrderedConfig {
        filter_subject: format!("$O.{}.C.{}", cfg.ckpt_bucket(), info.nuid),
        deliver_policy: DeliverPolicy::All,
        ..Default::default()
    };
    let mut reader = Ordered::open(c, &stream_name, rc, &service, &format!("reading {name}"))?;
    let mut out = Vec::with_capacity(info.size);
    for _ in 0..info.chunks {
        out.extend_from_slice(&reader.next()?.payload);
    }
    if out.len() != info.size {
        return Err(remote(
            &service,
            format!("reading {name}"),
            RemoteFailure::ObjectSize {
                name: name.to_string(),
                bytes: out.len(),
                chunks: info.chunks,
                described: info.size as u64,
            },
        ));
    }
    Ok(Some(out))
}
