//! The log's record layer: the record codec (`braid_wal::record`, docs/design.md "Record format"),
//! the redo and command payload codecs (`braid_wal::payload`) and the scanner
//! (`braid_wal::scan`). Checks of the fuzz targets `record_decode`, `payload_decode` and `scan`:
//! nothing panics, whatever decodes re-encodes to the same bytes, and a scan yields records in
//! order, each decoding at its own position, with an end at or after the last one (docs/design.md
//! invariant 6).

use braid_wal::payload::{RedoBuf, decode_command, decode_redo, encode_command};
use braid_wal::record::{Decoded, RecordSpec, decode};
use braid_wal::scan::{EndKind, ScanMode, Scanner, StreamSource};
use braid_wal::testing::MemSource;

use crate::Checked;

/// `Err(msg)` unless `cond`.
fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Checked {
    if cond { Ok(()) } else { Err(msg().into()) }
}

/// Fuzz target `record_decode`: u64 lsn, u32 salt (little endian), then the bytes to decode.
pub fn record_decode(data: &[u8]) -> Checked {
    if data.len() < 12 {
        return Ok(());
    }
    let lsn = u64::from_le_bytes([
        data[0], data[1], data[2], data[3], data[4], data[5], data[6], data[7],
    ]);
    let salt = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
    let buf = &data[12..];
    let Decoded::Record(r) = decode(buf, lsn, salt) else {
        return Ok(());
    };
    let len = r.header.len as usize;
    ensure(len <= buf.len(), || format!("length {len} past the buffer"))?;
    ensure(r.header.lsn == lsn, || "decoded another lsn".into())?;
    let mut lv = [0u64; 256];
    let n = r.stamp.lv_into(&mut lv);
    ensure(n == r.stamp.lv_len(), || {
        "lv_into disagrees with lv_len".into()
    })?;
    let stamp = r.stamp.to_stamp();
    let payload = [r.payload];
    let spec = RecordSpec {
        kind: r.header.kind,
        flags: r.header.flags,
        txn: r.header.txn,
        stamp: &stamp,
        payload: &payload,
    };
    ensure(spec.unpadded_len() == len, || {
        format!("re-encoded length {} != {len}", spec.unpadded_len())
    })?;
    let mut out = vec![0u8; spec.encoded_len()];
    spec.encode(lsn, r.header.synced, salt, &mut out);
    // `synced` is stored as a saturated distance; where it round-trips, so must every byte.
    if out[12..16] == buf[12..16] {
        ensure(out[..len] == buf[..len], || "re-encoding differs".into())?;
    }
    ensure(
        matches!(decode(&out, lsn, salt), Decoded::Record(_)),
        || "the re-encoded record does not decode".into(),
    )
}

/// Fuzz target `payload_decode`: first byte even = redo payload, odd = command payload.
pub fn payload_decode(data: &[u8]) -> Checked {
    let Some((&sel, bytes)) = data.split_first() else {
        return Ok(());
    };
    if sel % 2 == 0 {
        let mut re = RedoBuf::default();
        let mut it = decode_redo(bytes);
        for op in it.by_ref() {
            match op {
                Ok(op) => re.push(&op),
                Err(e) => {
                    ensure(e.at <= bytes.len(), || {
                        format!("error at {} past the end", e.at)
                    })?;
                    break;
                }
            }
        }
        ensure(it.next().is_none(), || {
            "the decoder goes on after an error".into()
        })?;
        ensure(
            re.bytes[..] == bytes[..re.bytes.len().min(bytes.len())],
            || "redo re-encoding differs".into(),
        )?;
        ensure(re.bytes.len() <= bytes.len(), || {
            "redo re-encoding longer".into()
        })
    } else if let Ok((proc_id, params)) = decode_command(bytes) {
        let mut out = Vec::new();
        encode_command(proc_id, params, &mut out);
        ensure(out[..] == bytes[..], || {
            "command re-encoding differs".into()
        })
    } else {
        Ok(())
    }
}

/// Fuzz target `scan`: u8 options (bit 0 salvage, bit 1 512-byte segments with their own
/// salts), u16 sealed (in 8-byte units), u16 chunk size, then the log bytes (salt 0, start 0).
pub fn scan(data: &[u8]) -> Checked {
    if data.len() < 5 {
        return Ok(());
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
                let at = r.header.lsn;
                ensure(at >= last_end, || {
                    format!("record at {at} before {last_end}")
                })?;
                let own = decode(&src.bytes[at as usize..], at, src.salt_for(at));
                ensure(matches!(own, Decoded::Record(_)), || {
                    format!("the record at {at} does not decode there")
                })?;
                last_end = r.end();
            }
            Ok(None) => {
                let Some(end) = s.end().cloned() else {
                    return Err("no end after the last record".into());
                };
                ensure(end.end >= last_end, || {
                    format!("end {} before {last_end}", end.end)
                })?;
                ensure(
                    end.trimmed_at.is_some() == (end.kind != EndKind::Clean),
                    || {
                        format!(
                            "trimmed_at {:?} with end kind {:?}",
                            end.trimmed_at, end.kind
                        )
                    },
                )?;
                return ensure(
                    mode == ScanMode::Salvage || end.kind != EndKind::Salvaged,
                    || "a strict scan salvaged".into(),
                );
            }
            Err(_) => return Ok(()),
        }
    }
}

/// Fuzz target `silor_mark`: a silor bookkeeping record's payload (`braid_wal`'s
/// `scheme/silor/durable.rs`). The decoder never panics, a durable-epoch record's tails are
/// all of its bytes after the epoch, and what decodes re-encodes to the same bytes.
pub fn silor_mark(data: &[u8]) -> Checked {
    use braid_wal::testing::silor_marks::{
        Mark, decode_mark, pepoch_tails, pepoch_tails_payload, void_payload,
    };
    let tails: Vec<u64> = pepoch_tails(data).collect();
    match decode_mark(data) {
        Some(Mark::Pepoch(d)) => {
            ensure(pepoch_tails_payload(d, &tails)[..] == data[..], || {
                "durable-epoch record re-encoding differs".into()
            })?;
        }
        Some(Mark::Void(lo, hi)) => {
            ensure(tails.is_empty(), || "a void marker with tails".into())?;
            ensure(void_payload(lo, hi)[..] == data[..], || {
                "void marker re-encoding differs".into()
            })?;
        }
        None => ensure(tails.is_empty(), || "tails of no record".into())?,
    }
    Ok(())
}

/// Fuzz target `gsn_payload`: first byte 2 modulo 3 = a command record's payload (with its
/// replay floor if the byte is even), else even = a gsn commit record's payload (part count
/// and sparse dependency vector), odd = a gsn void marker's payload (bound, base and per-log
/// decisions), then the bytes (`braid_wal::scheme::gsn::deps`). The decoders never panic, and
/// what decodes re-encodes to the same bytes.
pub fn gsn_payload(data: &[u8]) -> Checked {
    use braid_wal::testing::gsn_deps;
    let Some((&sel, bytes)) = data.split_first() else {
        return Ok(());
    };
    if sel % 3 == 2 {
        if let Ok((floor, call)) = gsn_deps::decode_floor(sel % 2 == 0, bytes) {
            let out = match floor {
                Some(f) => gsn_deps::encode_floor(f, call),
                None => call.to_vec(),
            };
            ensure(out[..] == bytes[..], || {
                "command floor re-encoding differs".into()
            })?;
        }
    } else if sel % 2 == 0 {
        if let Ok((parts, deps)) = gsn_deps::decode_commit(bytes) {
            let out = gsn_deps::encode_commit(parts, deps.as_deref().unwrap_or(&[]));
            ensure(out[..] == bytes[..], || {
                "commit payload re-encoding differs".into()
            })?;
        }
    } else if let Ok(m) = gsn_deps::decode_marker(bytes) {
        ensure(gsn_deps::encode_marker(&m)[..] == bytes[..], || {
            "marker re-encoding differs".into()
        })?;
    }
    Ok(())
}
