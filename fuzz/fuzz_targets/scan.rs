//! Fuzz the scanner: input = u8 options, u16 sealed (in 8-byte units), u16 chunk size, then
//! the log bytes (salt 0, start 0; option bit 0 = salvage mode, bit 1 = 512-byte segments with
//! their own salts). Never panics; every record yielded decodes at its own position, in order,
//! and the end lies at or after the last one.
#![no_main]

use braid_wal::record::{Decoded, decode};
use braid_wal::scan::{EndKind, MemSource, ScanMode, Scanner, StreamSource};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let opts = data[0];
    let sealed = u16::from_le_bytes([data[1], data[2]]) as u64 * 8;
    let chunk = u16::from_le_bytes([data[3], data[4]]) as usize;
    let mut src = MemSource::new("fuzz", 0, 0);
    src.bytes = data[5..].to_vec();
    src.sealed = sealed;
    if opts & 2 != 0 {
        src.segment_len = 512;
    }
    let mode = if opts & 1 != 0 {
        ScanMode::Salvage
    } else {
        ScanMode::Strict
    };
    let mut s = Scanner::new(&src, mode).with_chunk_size(chunk);
    let mut last_end = 0;
    loop {
        match s.next_record() {
            Ok(Some(r)) => {
                assert!(r.header.lsn >= last_end);
                let at = r.header.lsn as usize;
                assert!(matches!(
                    decode(&src.bytes[at..], r.header.lsn, src.salt_for(r.header.lsn)),
                    Decoded::Record(_)
                ));
                last_end = r.end();
            }
            Ok(None) => {
                let end = s.end().expect("end set").clone();
                assert!(end.end >= last_end);
                assert_eq!(end.trimmed_at.is_some(), end.kind != EndKind::Clean);
                if mode == ScanMode::Strict {
                    assert_ne!(end.kind, EndKind::Salvaged);
                }
                break;
            }
            Err(_) => break,
        }
    }
});
