//! raft-engine (TiKV's log store for Multi-Raft logs), default `Config`, each append one
//! `LogBatch` written with `Engine::write(&mut batch, true)`: the call returns once the batch
//! is fdatasync'd (raft-engine groups concurrent synced writes behind one leader).
//!
//! A record is a key-value put in the writer thread's own region (region `thread + 1`), the
//! unit raft-engine's own API offers without protobuf messages. Keys cycle over a window of
//! [`WINDOW`] per thread so its in-memory index stays bounded on long runs; the log still gets
//! every record. The self-check reopens the engine and reads each thread's last acknowledged
//! record back.

use std::path::Path;

use anyhow::{Result, bail};
use raft_engine::{Config, Engine, LogBatch};

use super::{AppendLog, AppendSystem, Appender, append_key};

/// Keys per thread region before they are reused.
pub const WINDOW: u64 = 4096;

/// raft-engine with its default configuration.
#[derive(Debug)]
pub struct RaftEngine;

fn open_engine(dir: &Path) -> Result<Engine> {
    let cfg = Config {
        dir: dir.to_string_lossy().into_owned(),
        ..Config::default()
    };
    Ok(Engine::open(cfg)?)
}

fn key(seq: u64) -> Vec<u8> {
    (seq % WINDOW).to_be_bytes().to_vec()
}

impl AppendSystem for RaftEngine {
    fn name(&self) -> String {
        "raft-engine".into()
    }

    fn version(&self) -> String {
        env!("PEERS_V_RAFT_ENGINE").into()
    }

    fn durability(&self) -> String {
        "Engine::write(batch, sync=true): fdatasync'd, default Config".into()
    }

    fn open(&self, dir: &Path, _threads: usize) -> Result<Box<dyn AppendLog>> {
        Ok(Box::new(Open {
            engine: open_engine(dir)?,
        }))
    }

    fn verify(&self, dir: &Path, acked: &[u64], record_bytes: usize) -> Result<()> {
        let engine = open_engine(dir)?;
        for (t, &n) in acked.iter().enumerate() {
            let Some(last) = n.checked_sub(1) else {
                continue;
            };
            let Some(v) = engine.get(t as u64 + 1, &key(last)) else {
                bail!("thread {t}: record {last} (acknowledged) is missing after reopen");
            };
            if v.len() != record_bytes || v[..16] != append_key(t, last) {
                bail!("thread {t}: record {last} reads back different after reopen");
            }
        }
        Ok(())
    }
}

struct Open {
    engine: Engine,
}

impl AppendLog for Open {
    fn writer(&self, thread: usize) -> Result<Box<dyn Appender + '_>> {
        Ok(Box::new(Writer {
            engine: &self.engine,
            region: thread as u64 + 1,
        }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self.engine);
        Ok(())
    }
}

struct Writer<'a> {
    engine: &'a Engine,
    region: u64,
}

impl Appender for Writer<'_> {
    fn append(&mut self, seq: u64, payload: &[u8]) -> Result<()> {
        let mut batch = LogBatch::default();
        batch.put(self.region, key(seq), payload.to_vec())?;
        self.engine.write(&mut batch, true)?;
        Ok(())
    }
}
