//! An in-memory log device whose flushes a test can hold back, for the tests that drive a
//! scheme directly (gsn, silor, plover): `fill` buffers, `flush` makes durable once the gate
//! is open, and the durable bytes are what a crash would leave.

use std::sync::Arc;

use braid_wal::Lsn;
use braid_wal::WalError;
use braid_wal::device::{Device, DeviceInfo};
use braid_wal::scan::StreamSource;
use parking_lot::{Condvar, Mutex};

struct MemInner {
    /// Where the stream starts (a purge up to here).
    start: Lsn,
    bytes: Vec<u8>,
    durable: u64,
    gate_open: bool,
    /// Names of the threads whose flushes wait at the closed gate.
    held: Vec<String>,
}

/// A file-like in-memory device: `fill` buffers, `flush` makes durable (waiting while the gate
/// is closed).
pub struct MemDev {
    inner: Mutex<MemInner>,
    cv: Condvar,
}

impl MemDev {
    pub fn new(image: Vec<u8>) -> Arc<MemDev> {
        MemDev::purged(image, 0)
    }
    /// `image` as a purge up to `start` leaves it: the stream starts there.
    pub fn purged(image: Vec<u8>, start: Lsn) -> Arc<MemDev> {
        let durable = image.len() as u64;
        Arc::new(MemDev {
            inner: Mutex::new(MemInner {
                start,
                bytes: image,
                durable,
                gate_open: true,
                held: Vec::new(),
            }),
            cv: Condvar::new(),
        })
    }
    pub fn set_gate(&self, open: bool) {
        self.inner.lock().gate_open = open;
        self.cv.notify_all();
    }
    /// Names of the threads whose flushes wait at the closed gate now (a stream's flusher, or
    /// a committer leading its own flush).
    pub fn held_by(&self) -> Vec<String> {
        self.inner.lock().held.clone()
    }
    /// What a crash leaves: the durable bytes.
    pub fn crash_image(&self) -> Vec<u8> {
        let g = self.inner.lock();
        g.bytes[..g.durable as usize].to_vec()
    }
}

impl StreamSource for MemDev {
    fn start(&self) -> Lsn {
        self.inner.lock().start
    }
    fn limit(&self) -> Lsn {
        self.inner.lock().bytes.len() as u64
    }
    fn sealed(&self) -> Lsn {
        0
    }
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let g = self.inner.lock();
        let at = (lsn as usize).min(g.bytes.len());
        let n = buf.len().min(g.bytes.len() - at);
        buf[..n].copy_from_slice(&g.bytes[at..at + n]);
        Ok(n)
    }
    fn salt_for(&self, _lsn: Lsn) -> u32 {
        7
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        ("mem".into(), lsn)
    }
}

impl Device for MemDev {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "file",
            location: String::new(),
            emulation: None,
        }
    }
    fn capacity(&self) -> u64 {
        1 << 24
    }
    fn reusable(&self) -> Lsn {
        0
    }
    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        let mut g = self.inner.lock();
        let end = lsn as usize + bytes.len();
        if g.bytes.len() < end {
            g.bytes.resize(end, 0);
        }
        g.bytes[lsn as usize..end].copy_from_slice(bytes);
    }
    fn durable_on_fill(&self) -> bool {
        false
    }
    fn flush(&self, _from: Lsn, to: Lsn) -> Result<(), WalError> {
        let mut g = self.inner.lock();
        if !g.gate_open {
            let me = std::thread::current().name().unwrap_or("").to_string();
            g.held.push(me.clone());
            while !g.gate_open {
                self.cv.wait(&mut g);
            }
            if let Some(at) = g.held.iter().position(|n| *n == me) {
                g.held.remove(at);
            }
        }
        g.durable = g.durable.max(to);
        Ok(())
    }
    fn ensure_space(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        let mut g = self.inner.lock();
        g.bytes.truncate(end as usize);
        g.durable = end;
        Ok(())
    }
    fn release(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
}

/// Opens every gate when dropped, so a failing assertion never leaves a log's flusher (and
/// with it the test) blocked on a held-back flush.
pub struct OpenGates<'a>(pub &'a [Arc<MemDev>]);

impl Drop for OpenGates<'_> {
    fn drop(&mut self) {
        for d in self.0 {
            d.set_gate(true);
        }
    }
}
