//! Fuzz the decoding of command parameters (`braid_engine::ParamReader`, what a stored
//! procedure runs on when recovery re-executes a command record): input = `[n][n selector
//! bytes][parameter bytes]`, selector % 4 = u64, u32, f64, bytes. Reading never panics, fails
//! only with `TxError::BadRequest`, and what is read before the first failure re-encodes with
//! `Params` to exactly the bytes consumed. Same check as
//! `crates/braid-engine/tests/params_mutation.rs` (DESIGN.md invariant 6).
#![no_main]

use braid_engine::{ParamReader, Params, TxError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = (n as usize).min(rest.len());
    let (ops, bytes) = rest.split_at(n);
    let mut r = ParamReader::new(bytes);
    let mut p = Params::new();
    let mut all = true;
    for &op in ops {
        let ok = match op % 4 {
            0 => r.u64().map(|v| {
                p.u64(v);
            }),
            1 => r.u32().map(|v| {
                p.u32(v);
            }),
            2 => r.f64().map(|v| {
                p.f64(v);
            }),
            _ => r.bytes().map(|v| {
                p.bytes(v);
            }),
        };
        match ok {
            Ok(()) => {}
            Err(TxError::BadRequest { .. }) => {
                all = false;
                break;
            }
            Err(e) => panic!("untyped failure: {e}"),
        }
    }
    assert_eq!(&bytes[..p.bytes.len()], &p.bytes[..], "re-encoding differs");
    if all {
        assert_eq!(r.is_empty(), p.bytes.len() == bytes.len());
    }
});
