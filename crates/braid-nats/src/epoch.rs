//! The database's key-value bucket: the writer epoch that fences older writers, and the copy of
//! `braid.json` that lets an empty directory recover from the cluster alone.
//!
//! A writer claims the database by raising the epoch with a compare-and-set on the key's
//! revision (`Nats-Expected-Last-Subject-Sequence` under the hood): of two writers racing, each
//! gets its own epoch, and every later one a higher one. The epoch alone stops nothing; the
//! streams do (see [`crate::device`]): the new writer appends a fence message carrying its epoch
//! to each stream before it reads it, so the older writer's next conditional publish finds the
//! stream's last sequence moved and is refused.

use async_nats::jetstream::kv;
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use bytes::Bytes;

use braid_wal::WalError;

use crate::cluster::Cluster;

const EPOCH_KEY: &str = "epoch";
const META_KEY: &str = "braid-json";

/// The bucket, created if absent.
async fn bucket(c: &Cluster) -> Result<kv::Store, String> {
    let cfg = c.config();
    let js = c.js();
    match js.get_key_value(cfg.bucket()).await {
        Ok(s) => Ok(s),
        Err(_) => js
            .create_key_value(kv::Config {
                bucket: cfg.bucket(),
                description: format!("braid database {}: writer epoch and braid.json", cfg.db_id),
                history: 1,
                num_replicas: cfg.replicas,
                storage: async_nats::jetstream::stream::StorageType::File,
                ..Default::default()
            })
            .await
            .map_err(|e| format!("cannot create key-value bucket {}: {e}", cfg.bucket())),
    }
}

/// Claim the database: the new writer epoch, above every earlier writer's.
pub fn claim(c: &Cluster) -> Result<u64, WalError> {
    // The first claim creates the bucket, a stream whose leader its replicas elect.
    c.run_within("claiming the writer epoch", c.create_timeout(), || async {
        let kv = bucket(c).await?;
        for _ in 0..64 {
            match kv.entry(EPOCH_KEY).await.map_err(|e| e.to_string())? {
                Some(e) if e.operation == kv::Operation::Put => {
                    let cur: u64 = std::str::from_utf8(&e.value)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| {
                            format!("the stored writer epoch {:?} is damaged", e.value)
                        })?;
                    let next = cur + 1;
                    match kv
                        .update(EPOCH_KEY, Bytes::from(next.to_string()), e.revision)
                        .await
                    {
                        Ok(_) => return Ok(next),
                        Err(err) if err.kind() == kv::UpdateErrorKind::WrongLastRevision => {}
                        Err(err) => return Err(err.to_string()),
                    }
                }
                _ => match kv.create(EPOCH_KEY, Bytes::from_static(b"1")).await {
                    Ok(_) => return Ok(1),
                    Err(err) if err.kind() == kv::CreateErrorKind::AlreadyExists => {}
                    Err(err) => return Err(err.to_string()),
                },
            }
        }
        Err("64 writers raced for the epoch; try again".to_string())
    })
}

/// The current writer epoch (0 if none claimed it yet), as the bucket's stream leader has it:
/// read with a stream message get, which the leader answers, rather than a direct get, which
/// a replica still catching up may answer with an older epoch. A writer's check that it is
/// still the newest ([`crate::factory`]) relies on seeing every claim made before the read.
pub fn current(c: &Cluster) -> Result<u64, WalError> {
    c.run("reading the writer epoch", || async {
        let kv = bucket(c).await?;
        let subject = format!("{}{EPOCH_KEY}", kv.prefix);
        match kv.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(m) => std::str::from_utf8(&m.payload)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("the stored writer epoch {:?} is damaged", m.payload)),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(0),
            Err(e) => Err(e.to_string()),
        }
    })
}

/// The stored `braid.json`, if any.
pub fn load_meta(c: &Cluster) -> Result<Option<Vec<u8>>, WalError> {
    c.run("reading braid.json from the key-value bucket", || async {
        let kv = bucket(c).await?;
        kv.get(META_KEY)
            .await
            .map(|v| v.map(|b| b.to_vec()))
            .map_err(|e| e.to_string())
    })
}

/// Store `braid.json` (once: a database that already has one keeps it).
pub fn store_meta(c: &Cluster, bytes: &[u8]) -> Result<(), WalError> {
    let created = c.run("storing braid.json in the key-value bucket", || async {
        let kv = bucket(c).await?;
        match kv.create(META_KEY, Bytes::copy_from_slice(bytes)).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    })?;
    if created {
        return Ok(());
    }
    let cfg = c.config();
    Err(WalError::WrongLog(braid_wal::WrongLog::Occupied {
        url: cfg.url.clone(),
        db_id: cfg.db_id.clone(),
    }))
}
