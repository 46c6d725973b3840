//! Command parameters (`braid_engine::ParamReader`, what a stored procedure runs on when
//! recovery re-executes a command record; Taurus Section 3.2's command logging): the check of
//! the fuzz target `params` and the encoding of its valid inputs. Reading never panics, fails
//! only with `TxError::BadRequest`, and what is read before the first failure re-encodes with
//! `Params` to exactly the bytes consumed (docs/design.md invariant 6).

use braid_engine::{ParamReader, Params, TxError};

use crate::{Checked, Violation};

/// One parameter value, by type.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A `u64`.
    U64(u64),
    /// A `u32`.
    U32(u32),
    /// An `f64`, by its bits (so `PartialEq` is exact).
    F64(u64),
    /// A byte string.
    Bytes(Vec<u8>),
}

impl Value {
    /// The read selector of the value's type (selector % 4: u64, u32, f64, bytes).
    fn selector(&self) -> u8 {
        match self {
            Value::U64(_) => 0,
            Value::U32(_) => 1,
            Value::F64(_) => 2,
            Value::Bytes(_) => 3,
        }
    }

    fn write(&self, p: &mut Params) {
        match self {
            Value::U64(x) => p.put::<u64>(*x),
            Value::U32(x) => p.put::<u32>(*x),
            Value::F64(x) => p.put::<f64>(f64::from_bits(*x)),
            Value::Bytes(b) => p.bytes(b),
        };
    }
}

/// Encode values: their read selectors and their parameter bytes.
pub fn encode(vals: &[Value]) -> (Vec<u8>, Vec<u8>) {
    let mut p = Params::new();
    for v in vals {
        v.write(&mut p);
    }
    (vals.iter().map(Value::selector).collect(), p.bytes)
}

/// The `params` input for values: `[n][n selectors][bytes]`.
pub fn fuzz_input(vals: &[Value]) -> Vec<u8> {
    let (ops, bytes) = encode(vals);
    let mut b = vec![ops.len() as u8];
    b.extend_from_slice(&ops);
    b.extend_from_slice(&bytes);
    b
}

/// Read with `ops` (selector % 4: u64, u32, f64, bytes) until the first failure; check the
/// failure's type and the re-encoding. Returns the values read.
pub fn read_all(ops: &[u8], bytes: &[u8]) -> Result<Vec<Value>, Violation> {
    let mut r = ParamReader::new(bytes);
    let mut out = Vec::new();
    for &op in ops {
        let v = match op % 4 {
            0 => r.get::<u64>().map(Value::U64),
            1 => r.get::<u32>().map(Value::U32),
            2 => r.get::<f64>().map(|f| Value::F64(f.to_bits())),
            _ => r.bytes().map(|b| Value::Bytes(b.to_vec())),
        };
        match v {
            Ok(v) => out.push(v),
            Err(TxError::BadRequest { .. }) => break,
            Err(e) => return Err(format!("untyped failure: {e}").into()),
        }
    }
    let mut p = Params::new();
    for v in &out {
        v.write(&mut p);
    }
    if bytes.get(..p.bytes.len()) != Some(&p.bytes[..]) {
        return Err("the values read do not re-encode to the bytes consumed".into());
    }
    if out.len() == ops.len() && r.is_empty() != (p.bytes.len() == bytes.len()) {
        return Err("is_empty disagrees with the bytes consumed".into());
    }
    Ok(out)
}

/// Fuzz target `params`: `[n][n selector bytes][parameter bytes]`.
pub fn params(data: &[u8]) -> Checked {
    let Some((&n, rest)) = data.split_first() else {
        return Ok(());
    };
    let (ops, bytes) = rest.split_at((n as usize).min(rest.len()));
    read_all(ops, bytes).map(|_| ())
}
