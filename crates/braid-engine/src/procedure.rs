//! Stored procedures for command logging: deterministic transaction code registered by id. A
//! command record holds the procedure id and its encoded parameters; recovery re-executes the
//! procedure on the recovered state (without concurrency control, in the order the scheme's
//! planner chooses).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::TxError;
use crate::txn::Txn;

/// The body of a stored procedure. It must be deterministic in its parameters and the database
/// state it reads.
pub(crate) type ProcFn = dyn Fn(&mut Txn<'_>, &[u8]) -> Result<(), TxError> + Send + Sync;

/// The procedures a database can run and replay, by id.
///
/// A worker runs one with [`Worker::call`](crate::Worker::call); parameters are built with
/// [`Params`] and read back with [`ParamReader`]. Recovery needs the same procedures under the
/// same ids, so register them before [`Db::open`](crate::Db::open).
#[derive(Clone, Default)]
pub struct Procedures {
    map: HashMap<u32, (String, Arc<ProcFn>)>,
}

impl std::fmt::Debug for Procedures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ids: Vec<_> = self.map.iter().map(|(k, v)| (*k, v.0.clone())).collect();
        ids.sort();
        f.debug_struct("Procedures").field("procs", &ids).finish()
    }
}

impl Procedures {
    /// No procedures.
    pub fn new() -> Procedures {
        Procedures::default()
    }

    /// Register `f` under `id`; replaces an earlier registration.
    pub fn register(
        &mut self,
        id: u32,
        name: impl Into<String>,
        f: impl Fn(&mut Txn<'_>, &[u8]) -> Result<(), TxError> + Send + Sync + 'static,
    ) {
        self.map.insert(id, (name.into(), Arc::new(f)));
    }

    /// The procedure registered under `id`.
    pub(crate) fn get(&self, id: u32) -> Option<&Arc<ProcFn>> {
        self.map.get(&id).map(|(_, f)| f)
    }

    /// The name `id` was registered with.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.map.get(&id).map(|(n, _)| n.as_str())
    }
}

/// Little-endian parameter encoding for procedures: values appended in order, read back in the
/// same order with [`ParamReader`].
///
/// ```
/// use braid_engine::{ParamReader, Params};
///
/// let mut p = Params::new();
/// p.u64(7).bytes(b"abc");
/// let mut r = ParamReader::new(&p.bytes);
/// assert_eq!(r.u64()?, 7);
/// assert_eq!(r.bytes()?, b"abc");
/// assert!(r.is_empty());
/// # Ok::<(), braid_engine::TxError>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct Params {
    /// The encoded parameters, to pass to [`Worker::call`](crate::Worker::call).
    pub bytes: Vec<u8>,
}

impl Params {
    /// No parameters.
    pub fn new() -> Params {
        Params::default()
    }
    /// Remove every parameter (to reuse the buffer).
    pub fn clear(&mut self) {
        self.bytes.clear()
    }
    /// Append a u64 (8 bytes).
    pub fn u64(&mut self, v: u64) -> &mut Params {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append a u32 (4 bytes).
    pub fn u32(&mut self, v: u32) -> &mut Params {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append an f64 (its bits, 8 bytes).
    pub fn f64(&mut self, v: f64) -> &mut Params {
        self.u64(v.to_bits())
    }
    /// Append a byte string: its length as a u32, then the bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Params {
        self.u32(b.len() as u32);
        self.bytes.extend_from_slice(b);
        self
    }
}

/// Reads parameters written with [`Params`]; every read checks bounds.
#[derive(Debug, Clone)]
pub struct ParamReader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> ParamReader<'a> {
    /// Read `buf` from its start.
    pub fn new(buf: &'a [u8]) -> ParamReader<'a> {
        ParamReader { buf, at: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], TxError> {
        if self.buf.len() - self.at < n {
            return Err(TxError::BadRequest {
                table: u32::MAX,
                what: format!(
                    "procedure parameters end at byte {} (wanted {n} more)",
                    self.at
                ),
            });
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    /// Read a u64. Reads fail with [`TxError::BadRequest`] if the parameters end too early.
    pub fn u64(&mut self) -> Result<u64, TxError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }
    /// Read a u32.
    pub fn u32(&mut self) -> Result<u32, TxError> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }
    /// Read an f64.
    pub fn f64(&mut self) -> Result<f64, TxError> {
        Ok(f64::from_bits(self.u64()?))
    }
    /// Read a byte string written by [`Params::bytes`].
    pub fn bytes(&mut self) -> Result<&'a [u8], TxError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.at == self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_and_bounds() {
        let mut p = Params::new();
        p.u64(5).u32(6).f64(1.5).bytes(b"abc");
        let mut r = ParamReader::new(&p.bytes);
        assert_eq!(r.u64().ok(), Some(5));
        assert_eq!(r.u32().ok(), Some(6));
        assert_eq!(r.f64().ok(), Some(1.5));
        assert_eq!(r.bytes().ok(), Some(&b"abc"[..]));
        assert!(r.is_empty());
        assert!(r.u64().is_err());
        let mut bad = ParamReader::new(&[255, 255, 255, 255]);
        assert!(bad.bytes().is_err());
    }
}
