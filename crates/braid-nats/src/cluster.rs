//! [`Cluster`]: one connection to the NATS cluster and the small tokio runtime that drives it,
//! behind a blocking API (the log layer's threads are plain threads; the runtime lives here so
//! braid-wal and braid-engine need none).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use braid_wal::{RemoteFailure, WalError};

use crate::config::NatsConfig;

/// A connected client, its JetStream context and the runtime running them.
pub struct Cluster {
    cfg: NatsConfig,
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
    js: jetstream::Context,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("url", &self.cfg.url)
            .field("db_id", &self.cfg.db_id)
            .finish_non_exhaustive()
    }
}

/// Per-request timeout of a JetStream API call or one publish attempt: short, so a flush
/// retries a few times within its own timeout while a new stream leader is elected.
pub(crate) const ATTEMPT: Duration = Duration::from_secs(2);

impl Cluster {
    /// Connect to `cfg.url` (failing if no server answers within `cfg.timeout`).
    pub fn connect(cfg: NatsConfig) -> Result<Cluster, WalError> {
        cfg.check()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("braid-nats")
            .enable_all()
            .build()
            .map_err(|e| WalError::ThreadStart {
                thread: "NATS client runtime",
                source: Arc::new(e),
            })?;
        let urls = cfg.urls();
        let service = cfg.url.clone();
        let timeout = cfg.timeout;
        let client = rt
            .block_on(async {
                tokio::time::timeout(
                    timeout,
                    async_nats::ConnectOptions::new()
                        .connection_timeout(timeout)
                        // Every request (also the direct gets a key-value read makes, which a
                        // replica still catching up may leave unanswered) is bounded by one
                        // attempt's time; `run` repeats it until the configured timeout.
                        .request_timeout(Some(ATTEMPT))
                        .connect(urls),
                )
                .await
            })
            .map_err(|_| remote(&service, "connecting", timed_out(timeout, None)))?
            .map_err(|e| remote(&service, "connecting", client(e)))?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(ATTEMPT);
        Ok(Cluster {
            cfg,
            rt,
            client,
            js,
        })
    }

    /// The configuration it connected with.
    pub fn config(&self) -> &NatsConfig {
        &self.cfg
    }

    /// The core NATS client.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The JetStream context.
    pub fn js(&self) -> &jetstream::Context {
        &self.js
    }

    /// Largest message the server accepts, in bytes.
    pub fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }

    /// Enter the runtime's context until the guard drops: client objects whose drop spawns a
    /// task (a subscription unsubscribing) must be dropped inside it.
    pub fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.rt.enter()
    }

    /// Run `f` to completion on the runtime (from a thread outside it).
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Run the request `f` makes, again while it fails (a server restarting, a leader being
    /// elected: each attempt is bounded by the JetStream request timeout), until the
    /// configured timeout; then fail with the last error, naming `what`. For requests that are
    /// harmless to repeat (reads, creations that check first, compare-and-set updates).
    pub fn run<T, E: Into<BoxError>, Fut: Future<Output = Result<T, E>>>(
        &self,
        what: &str,
        f: impl FnMut() -> Fut,
    ) -> Result<T, WalError> {
        self.run_within(what, self.cfg.timeout, f)
    }

    /// How long a request that creates a stream (a log stream, the key-value bucket) may be
    /// retried: the configured timeout, but at least 30 s (see `CREATE_TIMEOUT`).
    pub fn create_timeout(&self) -> Duration {
        self.cfg.timeout.max(CREATE_TIMEOUT)
    }

    /// [`Cluster::run`] with its own `timeout` instead of the configured one.
    pub fn run_within<T, E: Into<BoxError>, Fut: Future<Output = Result<T, E>>>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut() -> Fut,
    ) -> Result<T, WalError> {
        let deadline = Instant::now() + timeout;
        // The last attempt's own error: the one the deadline cut short says nothing of why.
        let mut failed: Option<BoxError> = None;
        let mut attempts = 0u32;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let attempt = f();
            attempts += 1;
            match self
                .rt
                .block_on(async move { tokio::time::timeout(left, attempt).await })
            {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => failed = Some(e.into()),
                Err(_) => {}
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Err(remote(
                    &self.cfg.url,
                    format!("{what} ({attempts} attempts)"),
                    timed_out(timeout, failed.take()),
                ));
            };
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }
}

/// How long creating a stream may take at least, whatever the configured timeout. A new
/// stream's replicas elect its leader before the creation is answered. With every server up
/// the meta leader names one and the answer is immediate; with a replica's server down
/// (nats-server 2.12 and later create the stream while a quorum is up) the live replicas may
/// wait out Raft's election timeout, 4 to 9 s in nats-server (`minElectionTimeoutDefault` and
/// `maxElectionTimeoutDefault`), and a split vote takes a second round: 30 s covers two full
/// rounds and the answer.
pub(crate) const CREATE_TIMEOUT: Duration = Duration::from_secs(30);

/// An error of the NATS client or of a closure run against it, kept as a source.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A [`WalError::Remote`] for `service`: `failure` while doing `during`.
pub(crate) fn remote(service: &str, during: impl Into<String>, failure: RemoteFailure) -> WalError {
    WalError::Remote {
        service: service.to_string(),
        during: during.into(),
        failure,
    }
}

/// No answer within `after`; `last` is the last attempt's error, if it had one.
pub(crate) fn timed_out(after: Duration, last: Option<BoxError>) -> RemoteFailure {
    RemoteFailure::Timeout {
        after,
        last: last.map(Arc::from),
    }
}

/// The client's (or the service's) error `e`.
pub(crate) fn client(e: impl Into<BoxError>) -> RemoteFailure {
    RemoteFailure::Client(Arc::from(e.into()))
}
