//! Payload codecs: round trips of redo ops and commands, and decoders on hostile bytes (the
//! proptest stand-in for the `payload_decode` fuzz target).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_wal::payload::{
    PayloadError, RedoBuf, RedoOp, decode_command, decode_redo, encode_command,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Update {
        table: u32,
        key: u64,
        columns: u64,
        data: Vec<u8>,
        with_fill: bool,
    },
    Insert {
        table: u32,
        key: u64,
        data: Vec<u8>,
    },
    Delete {
        table: u32,
        key: u64,
    },
}

impl Op {
    fn as_ref(&self) -> RedoOp<'_> {
        match self {
            Op::Update {
                table,
                key,
                columns,
                data,
                ..
            } => RedoOp::Update {
                table: *table,
                key: *key,
                columns: *columns,
                data,
            },
            Op::Insert { table, key, data } => RedoOp::Insert {
                table: *table,
                key: *key,
                data,
            },
            Op::Delete { table, key } => RedoOp::Delete {
                table: *table,
                key: *key,
            },
        }
    }
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let data = prop::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        (
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            data.clone(),
            any::<bool>()
        )
            .prop_map(|(table, key, columns, data, with_fill)| Op::Update {
                table,
                key,
                columns,
                data,
                with_fill
            }),
        (any::<u32>(), any::<u64>(), data).prop_map(|(table, key, data)| Op::Insert {
            table,
            key,
            data
        }),
        (any::<u32>(), any::<u64>()).prop_map(|(table, key)| Op::Delete { table, key }),
    ]
}

fn build(ops: &[Op], buf: &mut RedoBuf) {
    buf.clear();
    for op in ops {
        match op {
            Op::Update {
                table,
                key,
                columns,
                data,
                with_fill: true,
            } => buf.push_update_with(*table, *key, *columns, data.len(), |d| {
                d.copy_from_slice(data)
            }),
            other => buf.push(&other.as_ref()),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn redo_round_trip(ops in prop::collection::vec(op_strategy(), 0..20)) {
        // Reuse a dirty buffer: `clear` must reset it.
        let mut buf = RedoBuf { bytes: vec![1, 2, 3] };
        build(&ops, &mut buf);
        prop_assert_eq!(buf.is_empty(), ops.is_empty());
        let expected_len: usize = ops.iter().map(|o| o.as_ref().encoded_len()).sum();
        prop_assert_eq!(buf.bytes.len(), expected_len);
        let got: Vec<RedoOp<'_>> = decode_redo(&buf.bytes).collect::<Result<_, _>>().unwrap();
        let want: Vec<RedoOp<'_>> = ops.iter().map(Op::as_ref).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn redo_truncation_is_an_error_at_a_field(ops in prop::collection::vec(op_strategy(), 1..6), cut in any::<prop::sample::Index>()) {
        let mut buf = RedoBuf::default();
        build(&ops, &mut buf);
        let cut = cut.index(buf.bytes.len());
        let results: Vec<_> = decode_redo(&buf.bytes[..cut]).collect();
        // Op boundaries: a cut exactly there is a shorter valid payload.
        let mut bounds = vec![0];
        for o in &ops {
            bounds.push(bounds.last().unwrap() + o.as_ref().encoded_len());
        }
        if bounds.contains(&cut) {
            prop_assert!(results.iter().all(Result::is_ok));
        } else {
            let (last, oks) = results.split_last().unwrap();
            prop_assert!(oks.iter().all(Result::is_ok));
            let e = last.clone().unwrap_err();
            prop_assert!(e.at <= cut, "error at {} after the cut {}", e.at, cut);
            let op_start = *bounds.iter().filter(|&&b| b <= cut).max().unwrap();
            prop_assert!(e.at >= op_start);
        }
    }

    #[test]
    fn redo_decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut n = 0;
        let mut it = decode_redo(&bytes);
        for r in it.by_ref() {
            n += 1;
            if let Err(e) = r {
                prop_assert!(e.at <= bytes.len());
                prop_assert!(!e.to_string().is_empty());
            }
        }
        prop_assert!(it.next().is_none(), "fused after the end or an error");
        prop_assert!(n <= bytes.len() / 13 + 1);
    }

    #[test]
    fn redo_mutations_never_panic(ops in prop::collection::vec(op_strategy(), 1..6), muts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let mut buf = RedoBuf::default();
        build(&ops, &mut buf);
        let mut bytes = buf.bytes.clone();
        for (i, v) in muts {
            let i = i.index(bytes.len());
            bytes[i] = v;
        }
        for r in decode_redo(&bytes) {
            if let Ok(RedoOp::Update { data, .. } | RedoOp::Insert { data, .. }) = r {
                prop_assert!(data.len() <= bytes.len());
            }
        }
    }

    #[test]
    fn command_round_trip(proc_id in any::<u32>(), params in prop::collection::vec(any::<u8>(), 0..2000), prefix in prop::collection::vec(any::<u8>(), 0..10)) {
        let mut out = prefix.clone();
        encode_command(proc_id, &params, &mut out);
        prop_assert_eq!(&out[..prefix.len()], &prefix[..], "encode_command appends");
        let (p, got) = decode_command(&out[prefix.len()..]).unwrap();
        prop_assert_eq!(p, proc_id);
        prop_assert_eq!(got, &params[..]);
    }

    #[test]
    fn command_decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        match decode_command(&bytes) {
            Ok((_, params)) => prop_assert_eq!(params.len() + 8, bytes.len()),
            Err(e) => prop_assert!(e.at <= bytes.len()),
        }
    }
}

#[test]
fn errors_name_offsets() {
    let mut b = RedoBuf::default();
    b.push(&RedoOp::Delete { table: 1, key: 1 });
    b.push(&RedoOp::Update {
        table: 2,
        key: 2,
        columns: 3,
        data: &[9; 10],
    });
    // Second op: tag 13, table 14..18, key 18..26, mask 26..34, len 34..38, data 38..48.
    let mut bad = b.bytes.clone();
    bad[34..38].copy_from_slice(&11u32.to_le_bytes());
    let errs: Vec<PayloadError> = decode_redo(&bad).filter_map(Result::err).collect();
    assert_eq!(
        errs,
        vec![PayloadError {
            at: 38,
            what: "update data extends past the payload"
        }]
    );
    assert_eq!(
        errs[0].to_string(),
        "malformed payload at byte 38: update data extends past the payload"
    );
    let e = decode_redo(&b.bytes[..30]).find_map(Result::err).unwrap();
    assert_eq!(
        e,
        PayloadError {
            at: 26,
            what: "truncated column mask"
        }
    );
    let mut bad = b.bytes.clone();
    bad[13] = 0;
    assert_eq!(decode_redo(&bad).find_map(Result::err).unwrap().at, 13);

    let mut c = Vec::new();
    encode_command(7, &[1, 2, 3], &mut c);
    c[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(decode_command(&c).unwrap_err().at, 8);
    assert!(decode_redo(&[]).next().is_none());
}
