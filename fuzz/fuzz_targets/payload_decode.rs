//! Fuzz the payload codecs: first byte even = redo payload, odd = command payload.
//! Never panics; whatever decodes re-encodes to the same bytes.
#![no_main]

use braid_wal::payload::{RedoBuf, decode_command, decode_redo, encode_command};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    if sel % 2 == 0 {
        let mut re = RedoBuf::default();
        let mut it = decode_redo(bytes);
        for op in it.by_ref() {
            match op {
                Ok(op) => re.push(&op),
                Err(e) => {
                    assert!(e.at <= bytes.len());
                    break;
                }
            }
        }
        assert!(it.next().is_none());
        assert_eq!(&re.bytes[..], &bytes[..re.bytes.len()]);
    } else if let Ok((proc_id, params)) = decode_command(bytes) {
        let mut out = Vec::new();
        encode_command(proc_id, params, &mut out);
        assert_eq!(&out[..], bytes);
    }
});
