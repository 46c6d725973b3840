//! Command parameters under byte mutation (DESIGN.md invariant 6; the parameters of a
//! command-log record are decoded by the stored procedure with `ParamReader` when recovery
//! re-executes it, Taurus Section 3.3 command logging): for any bytes and any sequence of
//! reads, `ParamReader` never panics, fails only with `TxError::BadRequest`, and what it
//! reads before the first failure re-encodes with `Params` to exactly the bytes it consumed.
//! Valid encodings read back to the values written.
//!
//! The fuzz target `params` runs the same check (see `fuzz/README.md`); with
//! `BRAID_FUZZ_SEEDS=<dir>` set, `write_fuzz_seeds` writes valid encodings in its input format
//! (`[number of reads][one selector byte per read][parameter bytes]`) to `<dir>/params/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_engine::{ParamReader, Params, TxError};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq)]
enum Value {
    U64(u64),
    U32(u32),
    F64(u64),
    Bytes(Vec<u8>),
}

/// Read with `ops` (selector % 4: u64, u32, f64, bytes) until the first failure; check it and
/// the re-encoding (the fuzz target's oracle). Returns the values read.
fn read_all(ops: &[u8], bytes: &[u8]) -> Result<Vec<Value>, String> {
    let mut r = ParamReader::new(bytes);
    let mut out = Vec::new();
    for &op in ops {
        let v = match op % 4 {
            0 => r.u64().map(Value::U64),
            1 => r.u32().map(Value::U32),
            2 => r.f64().map(|f| Value::F64(f.to_bits())),
            _ => r.bytes().map(|b| Value::Bytes(b.to_vec())),
        };
        match v {
            Ok(v) => out.push(v),
            Err(TxError::BadRequest { .. }) => break,
            Err(e) => return Err(format!("untyped failure: {e}")),
        }
    }
    let mut p = Params::new();
    for v in &out {
        match v {
            Value::U64(x) => p.u64(*x),
            Value::U32(x) => p.u32(*x),
            Value::F64(x) => p.f64(f64::from_bits(*x)),
            Value::Bytes(b) => p.bytes(b),
        };
    }
    if bytes.get(..p.bytes.len()) != Some(&p.bytes[..]) {
        return Err("the values read do not re-encode to the bytes consumed".into());
    }
    if out.len() == ops.len() && r.is_empty() != (p.bytes.len() == bytes.len()) {
        return Err("is_empty disagrees with the bytes consumed".into());
    }
    Ok(out)
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::U64),
        any::<u32>().prop_map(Value::U32),
        any::<u64>().prop_map(Value::F64),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
    ]
}

fn encode(vals: &[Value]) -> (Vec<u8>, Vec<u8>) {
    let mut p = Params::new();
    let mut ops = Vec::new();
    for v in vals {
        match v {
            Value::U64(x) => {
                ops.push(0);
                p.u64(*x)
            }
            Value::U32(x) => {
                ops.push(1);
                p.u32(*x)
            }
            Value::F64(x) => {
                ops.push(2);
                p.f64(f64::from_bits(*x))
            }
            Value::Bytes(b) => {
                ops.push(3);
                p.bytes(b)
            }
        };
    }
    (ops, p.bytes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn valid_encodings_read_back(vals in proptest::collection::vec(value(), 0..12)) {
        let (ops, bytes) = encode(&vals);
        let got = read_all(&ops, &bytes).unwrap();
        prop_assert_eq!(got, vals);
        let mut r = ParamReader::new(&bytes);
        for &op in &ops {
            let _ = match op {
                0 => r.u64().map(|_| ()),
                1 => r.u32().map(|_| ()),
                2 => r.f64().map(|_| ()),
                _ => r.bytes().map(|_| ()),
            };
        }
        prop_assert!(r.is_empty());
    }

    #[test]
    fn mutated_parameters_never_panic(
        vals in proptest::collection::vec(value(), 0..12),
        extra_ops in proptest::collection::vec(any::<u8>(), 0..4),
        flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..6),
        cut in any::<u16>(),
    ) {
        let (mut ops, mut bytes) = encode(&vals);
        ops.extend(extra_ops);
        for (at, x) in flips {
            if !bytes.is_empty() {
                let i = at as usize % bytes.len();
                bytes[i] ^= x;
            }
        }
        if !bytes.is_empty() {
            bytes.truncate(cut as usize % (bytes.len() + 1));
        }
        let r = read_all(&ops, &bytes);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        ops in proptest::collection::vec(any::<u8>(), 0..16),
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let r = read_all(&ops, &bytes);
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}

/// With `BRAID_FUZZ_SEEDS=<dir>`: valid encodings as seed inputs of the `params` target.
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("BRAID_FUZZ_SEEDS") else {
        return;
    };
    let out = std::path::PathBuf::from(dir).join("params");
    std::fs::create_dir_all(&out).unwrap();
    let seeds: [(&str, Vec<Value>); 3] = [
        (
            "transfer",
            vec![Value::U64(3), Value::U64(7), Value::U64(25)],
        ),
        (
            "mixed",
            vec![
                Value::U32(9),
                Value::F64(1.5f64.to_bits()),
                Value::Bytes(b"braid".to_vec()),
                Value::U64(u64::MAX),
            ],
        ),
        ("empty_bytes", vec![Value::Bytes(Vec::new())]),
    ];
    for (name, vals) in seeds {
        let (ops, bytes) = encode(&vals);
        let mut b = vec![ops.len() as u8];
        b.extend_from_slice(&ops);
        b.extend_from_slice(&bytes);
        std::fs::write(out.join(name), b).unwrap();
    }
}
