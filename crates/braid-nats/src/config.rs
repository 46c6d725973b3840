//! [`NatsConfig`]: which cluster and database a replicated device writes to, and the names
//! derived from them (JetStream stream, subject, key-value bucket, object store bucket, message
//! ids).

use std::time::Duration;

use braid_wal::device::DEFAULT_BUFFER_SIZE;
use braid_wal::{BadOption, WalError};

/// Where and how a database's streams are replicated. [`NatsConfig::new`] gives the defaults:
/// 3 replicas, a 10 s publish timeout, a 16 MiB ring per stream.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NatsConfig {
    /// Server URLs, comma-separated (`nats://127.0.0.1:4222,nats://127.0.0.1:4223`).
    pub url: String,
    /// The database's id: names its streams and its key-value bucket. Letters, digits, `-`
    /// and `_` only.
    pub db_id: String,
    /// How long a flush waits for its publish acknowledgements (retrying meanwhile while the
    /// cluster elects a new stream leader) before it fails with a timeout.
    pub timeout: Duration,
    /// Replicas of every stream and of the bucket (3: a majority survives one lost server).
    pub replicas: usize,
    /// DRAM ring per stream that workers fill before the flusher publishes it.
    pub buffer_size: usize,
    /// Largest message payload a flush publishes, in bytes; a larger flush is split. 0 (the
    /// default): the server's max payload less room for the headers.
    pub max_message: usize,
}

impl NatsConfig {
    /// Database `db_id` on the cluster at `url`, with the defaults.
    pub fn new(url: impl Into<String>, db_id: impl Into<String>) -> NatsConfig {
        NatsConfig {
            url: url.into(),
            db_id: db_id.into(),
            timeout: Duration::from_secs(10),
            replicas: 3,
            buffer_size: DEFAULT_BUFFER_SIZE,
            max_message: 0,
        }
    }

    /// Refuse an id that cannot name a stream or a bucket.
    pub fn check(&self) -> Result<(), WalError> {
        let ok = !self.db_id.is_empty()
            && self.db_id.len() <= 64
            && self
                .db_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(WalError::BadOption(BadOption::DbId {
                db_id: self.db_id.clone(),
            }));
        }
        if self.url.trim().is_empty() {
            return Err(WalError::BadOption(BadOption::NoUrl));
        }
        Ok(())
    }

    /// The server URLs, one per entry.
    pub fn urls(&self) -> Vec<String> {
        self.url
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// JetStream stream of braid stream `stream`.
    pub fn stream_name(&self, stream: u32) -> String {
        format!("BRAID_{}_{stream:03}", self.db_id)
    }

    /// The one subject of that stream.
    pub fn subject(&self, stream: u32) -> String {
        format!("braid.{}.{stream}", self.db_id)
    }

    /// Key-value bucket holding the writer epoch and `braid.json`.
    pub fn bucket(&self) -> String {
        format!("braid-{}", self.db_id)
    }

    /// Object store bucket holding the checkpoints.
    pub fn ckpt_bucket(&self) -> String {
        format!("braid-{}-ckpt", self.db_id)
    }

    /// How the database is named in `braid.json` and in errors: the URLs, `#`, the id.
    pub fn location(&self) -> String {
        format!("{}#{}", self.url, self.db_id)
    }

    /// Split a [`NatsConfig::location`] back into URL and database id.
    pub fn parse_location(location: &str) -> Option<(String, String)> {
        let (url, id) = location.rsplit_once('#')?;
        Some((url.to_string(), id.to_string()))
    }

    /// Checksum salt of every record of stream `stream` (a stream is never recycled, so one
    /// salt per database and stream is enough to keep another database's bytes from decoding).
    pub fn salt(&self, stream: u32) -> u32 {
        crc32c::crc32c(format!("braid-nats/{}/{stream}", self.db_id).as_bytes())
    }
}
