//! Promotion requests: `braid promote` asks, over the cluster itself, the standby following a
//! database to take over, and waits for its answer. The subject is `braid.<db>.promote`
//! (core NATS request and reply: nothing is stored). A standby checks for a request between
//! rounds ([`PromoteRequests::take`]) and answers once it has committed as the new writer.

use std::sync::Arc;
use std::time::Duration;

use async_nats::Subscriber;
use braid_wal::{RemoteFailure, WalError};
use bytes::Bytes;
use futures::StreamExt;

use crate::cluster::{Cluster, client, remote, timed_out};
use crate::config::NatsConfig;

fn subject(cfg: &NatsConfig) -> String {
    format!("braid.{}.promote", cfg.db_id)
}

/// A standby's subscription to promotion requests.
pub struct PromoteRequests {
    cluster: Arc<Cluster>,
    sub: Option<Subscriber>,
}

/// A promotion request, to be answered once done.
#[derive(Debug)]
pub struct PromoteRequest {
    reply: Option<async_nats::Subject>,
}

impl PromoteRequests {
    /// Listen for requests to promote `cluster`'s database.
    pub fn listen(cluster: Arc<Cluster>) -> Result<PromoteRequests, WalError> {
        let subject = subject(cluster.config());
        let sub = cluster
            .block_on(cluster.client().subscribe(subject.clone()))
            .map_err(|e| {
                remote(
                    &cluster.config().url,
                    format!("subscribing to {subject}"),
                    client(e),
                )
            })?;
        Ok(PromoteRequests {
            cluster,
            sub: Some(sub),
        })
    }

    /// A request received since the last call, if any (does not wait).
    pub fn take(&mut self) -> Option<PromoteRequest> {
        let sub = self.sub.as_mut()?;
        let m = self
            .cluster
            .block_on(async { tokio::time::timeout(Duration::ZERO, sub.next()).await })
            .ok()??;
        Some(PromoteRequest { reply: m.reply })
    }

    /// Answer `req` with `text`.
    pub fn answer(&self, req: PromoteRequest, text: &str) -> Result<(), WalError> {
        let Some(reply) = req.reply else {
            return Ok(());
        };
        let c = &self.cluster;
        c.block_on(async {
            c.client()
                .publish(reply, Bytes::copy_from_slice(text.as_bytes()))
                .await
                .map_err(|e| e.to_string())?;
            c.client().flush().await.map_err(|e| e.to_string())
        })
        .map_err(|e| remote(&c.config().url, "answering the promote request", client(e)))
    }
}

impl Drop for PromoteRequests {
    fn drop(&mut self) {
        // The subscription unsubscribes from a task of the runtime.
        let _rt = self.cluster.enter();
        self.sub.take();
    }
}

/// Ask the standby following `cluster`'s database to take over; returns its answer. Fails if
/// no standby answers within `timeout`.
pub fn request_promote(cluster: &Cluster, timeout: Duration) -> Result<String, WalError> {
    let subject = subject(cluster.config());
    let url = &cluster.config().url;
    // The answer comes after the takeover, so this request waits longer than the client's
    // default request timeout.
    let req = async_nats::Request::new()
        .payload(Bytes::new())
        .timeout(Some(timeout));
    let r = cluster.block_on(async {
        tokio::time::timeout(
            timeout + Duration::from_secs(1),
            cluster.client().send_request(subject.clone(), req),
        )
        .await
    });
    match r {
        Ok(Ok(m)) => Ok(String::from_utf8_lossy(&m.payload).into_owned()),
        Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => Err(remote(
            url,
            format!("asking {subject}"),
            RemoteFailure::NoStandby {
                db_id: cluster.config().db_id.clone(),
            },
        )),
        Ok(Err(e)) => Err(remote(url, format!("asking {subject}"), client(e))),
        Err(_) => Err(remote(
            url,
            format!("waiting for the standby's answer on {subject}"),
            timed_out(timeout, None),
        )),
    }
}
