//! Streams: reserve / fill / flush with a durable watermark. API SKELETON.

use std::sync::Arc;
use std::time::Duration;

use crate::device::Device;
use crate::record::RecordSpec;
use crate::{Lsn, WalError};

#[derive(Debug, Clone)]
pub struct StreamConfig {
    pub id: u32,
    /// Most writers (threads) at once.
    pub max_writers: usize,
    /// Group commit: the flusher waits at most this long for more bytes...
    pub group_delay: Duration,
    /// ...or until this many bytes are pending.
    pub group_bytes: usize,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig { id: 0, max_writers: 64, group_delay: Duration::ZERO, group_bytes: 1 << 20 }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct StreamStats {
    pub bytes: u64,
    pub records: u64,
    pub flushes: u64,
}

#[derive(Clone)]
pub struct Stream { _p: () }

impl Stream {
    /// Start appending at `end` (the valid end found by scanning the device).
    pub fn start(_device: Arc<dyn Device>, _end: Lsn, _cfg: StreamConfig) -> Result<Stream, WalError> { unimplemented!() }
    pub fn id(&self) -> u32 { unimplemented!() }
    pub fn writer(&self) -> Result<StreamWriter, WalError> { unimplemented!() }
    pub fn durable(&self) -> Lsn { unimplemented!() }
    pub fn tail(&self) -> Lsn { unimplemented!() }
    pub fn wait_durable(&self, _lsn: Lsn) -> Result<(), WalError> { unimplemented!() }
    pub fn check_durable(&self, _lsn: Lsn) -> Result<bool, WalError> { unimplemented!() }
    pub fn close(&self) -> Result<(), WalError> { unimplemented!() }
    pub fn stats(&self) -> StreamStats { unimplemented!() }
    pub fn device(&self) -> &Arc<dyn Device> { unimplemented!() }
}

pub struct StreamWriter { _p: () }

impl StreamWriter {
    /// Reserve, encode and fill one record; returns its (start, end) LSNs. Does not wait.
    pub fn append(&mut self, _spec: &RecordSpec<'_>) -> Result<(Lsn, Lsn), WalError> { unimplemented!() }
}
