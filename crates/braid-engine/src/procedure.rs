//! Stored procedures for command logging: deterministic transaction code registered by id. A
//! command record holds the procedure id and its encoded parameters; recovery re-executes the
//! procedure on the recovered state (without concurrency control, in the order the scheme's
//! planner chooses).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::TxError;
use crate::index::key_hash::KeyHash;
use crate::txn::Txn;
use crate::value::Value;

/// The body of a stored procedure. It must be deterministic in its parameters and the database
/// state it reads.
pub(crate) type ProcFn = dyn Fn(&mut Txn<'_>, &[u8]) -> Result<(), TxError> + Send + Sync;

/// The procedures a database can run and replay, by id.
///
/// A worker runs one with [`Worker::call`](crate::Worker::call); parameters are built with
/// [`Params`] and read back with [`ParamReader`]. Recovery needs the same procedures under the
/// same ids, so register them before [`OpenBuilder::open`](crate::OpenBuilder::open).
#[derive(Clone, Default)]
pub struct Procedures {
    map: HashMap<u32, (String, Arc<ProcFn>), KeyHash>,
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
}

/// Little-endian parameter encoding for procedures: values appended in order, read back in the
/// same order with [`ParamReader`]. Numbers are any [`Value`] (`u64`, `i64`, `f64`: 8 bytes;
/// `u32`: 4 bytes), without a type tag: the reader names the type it expects.
///
/// ```
/// use braid_engine::{ParamReader, Params};
///
/// let mut p = Params::new();
/// p.put::<u64>(7).bytes(b"abc");
/// let mut r = ParamReader::new(&p.bytes);
/// assert_eq!(r.get::<u64>()?, 7);
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
    /// Append a number: its little-endian bytes (8 for `u64`, `i64` and `f64`, an `f64` by its
    /// bits; 4 for `u32`).
    pub fn put<T: Value>(&mut self, v: T) -> &mut Params {
        self.bytes.extend_from_slice(v.to_le().as_ref());
        self
    }
    /// Append a byte string: its length as a u32, then the bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Params {
        self.put::<u32>(b.len() as u32);
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
                request: crate::BadRequest::ParamsEnd {
                    at: self.at,
                    wanted: n,
                },
            });
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    /// Read a number written by [`Params::put`] with the same type. Reads fail with
    /// [`TxError::BadRequest`] if the parameters end too early.
    pub fn get<T: Value>(&mut self) -> Result<T, TxError> {
        Ok(T::read_le(self.take(T::WIDTH)?))
    }
    /// Read a byte string written by [`Params::bytes`].
    pub fn bytes(&mut self) -> Result<&'a [u8], TxError> {
        let n = self.get::<u32>()? as usize;
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
        p.put::<u64>(5)
            .put::<u32>(6)
            .put::<f64>(1.5)
            .put::<i64>(-2)
            .bytes(b"abc");
        // The format command records hold: each number's little-endian bytes, no tags.
        let mut old = 5u64.to_le_bytes().to_vec();
        old.extend_from_slice(&6u32.to_le_bytes());
        old.extend_from_slice(&1.5f64.to_bits().to_le_bytes());
        old.extend_from_slice(&(-2i64 as u64).to_le_bytes());
        old.extend_from_slice(&3u32.to_le_bytes());
        old.extend_from_slice(b"abc");
        assert_eq!(p.bytes, old);
        let mut r = ParamReader::new(&p.bytes);
        assert_eq!(r.get::<u64>().ok(), Some(5));
        assert_eq!(r.get::<u32>().ok(), Some(6));
        assert_eq!(r.get::<f64>().ok(), Some(1.5));
        assert_eq!(r.get::<i64>().ok(), Some(-2));
        assert_eq!(r.bytes().ok(), Some(&b"abc"[..]));
        assert!(r.is_empty());
        assert!(r.get::<u64>().is_err());
        let mut bad = ParamReader::new(&[255, 255, 255, 255]);
        assert!(bad.bytes().is_err());
    }
}
