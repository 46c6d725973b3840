//! Scanner end classification on hand-built logs: clean ends, torn tails, corruption before
//! durable records, stale bytes, salvage mode, newer format versions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_wal::record::{FORMAT_VERSION, Kind, RecordSpec, Stamp, encode_pad};
use braid_wal::scan::{EndKind, MemSource, ScanEnd, ScanMode, Scanner, StreamSource};
use braid_wal::{Corruption, Lsn, RecordFault, SegmentDamage, WalError};

/// Append a Redo record with a payload of `size` bytes derived from `txn`.
fn rec(m: &mut MemSource, txn: u64, size: usize, synced: Lsn) -> Lsn {
    let payload: Vec<u8> = (0..size).map(|i| (txn as usize * 31 + i) as u8).collect();
    let stamp = Stamp::Gsn(txn * 10);
    let spec = RecordSpec {
        kind: Kind::Redo,
        flags: 1,
        txn,
        stamp: &stamp,
        payload: &[&payload],
    };
    m.append(&spec, synced).unwrap()
}

/// Scan everything: the txns yielded and how it ended.
fn scan(m: &MemSource, mode: ScanMode, chunk: usize) -> Result<(Vec<u64>, ScanEnd), WalError> {
    let mut s = Scanner::new(m, mode).with_chunk_size(chunk);
    let mut txns = Vec::new();
    let mut last_end = m.start;
    while let Some(r) = s.next_record()? {
        assert!(r.header.lsn >= last_end, "records in order");
        last_end = r.end();
        assert_eq!(r.stamp.gsn(), Some(r.header.txn * 10));
        let size = r.payload.len();
        let want: Vec<u8> = (0..size)
            .map(|i| (r.header.txn as usize * 31 + i) as u8)
            .collect();
        assert_eq!(r.payload, &want[..]);
        txns.push(r.header.txn);
    }
    assert!(s.next_record()?.is_none(), "stays at the end");
    let end = s.end().cloned().expect("end is set after None");
    assert_eq!(s.bytes_read(), end.end - m.start);
    Ok((txns, end))
}

fn scan_all_chunks(m: &MemSource, mode: ScanMode) -> Result<(Vec<u64>, ScanEnd), WalError> {
    let first = scan(m, mode, 1 << 20);
    for chunk in [32, 40, 100, 4096] {
        let other = scan(m, mode, chunk);
        assert_eq!(
            format!("{first:?}"),
            format!("{other:?}"),
            "chunk size {chunk} changes the result"
        );
    }
    first
}

fn corrupt_offset(e: WalError) -> (String, u64, Corruption) {
    match e {
        WalError::Corrupt {
            file,
            offset,
            damage,
        } => (file, offset, damage),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn clean_end_at_limit_and_before_zeros() {
    let mut m = MemSource::new("log", 0, 5);
    for t in 1..=5 {
        rec(&mut m, t, t as usize * 50, 0);
    }
    let tail = m.tail();
    let (txns, end) = scan_all_chunks(&m, ScanMode::Strict).unwrap();
    assert_eq!(txns, [1, 2, 3, 4, 5]);
    assert_eq!(
        end,
        ScanEnd {
            end: tail,
            kind: EndKind::Clean,
            trimmed_at: None,
            trimmed: 0
        }
    );

    // Preallocated zeros after the last record.
    m.bytes.resize(m.bytes.len() + 10_000, 0);
    let (txns, end) = scan_all_chunks(&m, ScanMode::Strict).unwrap();
    assert_eq!(txns.len(), 5);
    assert_eq!(
        end,
        ScanEnd {
            end: tail,
            kind: EndKind::Clean,
            trimmed_at: None,
            trimmed: 0
        }
    );

    // A few zero bytes (less than a length field) before the limit.
    m.bytes.truncate(tail as usize + 3);
    assert_eq!(
        scan_all_chunks(&m, ScanMode::Strict).unwrap().1.kind,
        EndKind::Clean
    );

    // An empty stream.
    let empty = MemSource::new("log", 4096, 5);
    let (txns, end) = scan_all_chunks(&empty, ScanMode::Strict).unwrap();
    assert!(txns.is_empty());
    assert_eq!(
        end,
        ScanEnd {
            end: 4096,
            kind: EndKind::Clean,
            trimmed_at: None,
            trimmed: 0
        }
    );
}

#[test]
fn nonzero_start_and_pads_are_skipped() {
    let mut m = MemSource::new("log", 1 << 40, 5);
    rec(&mut m, 1, 10, 0);
    let at = m.tail();
    let mut pad = vec![0; 64];
    encode_pad(at, 0, m.salt_for(at), &mut pad);
    m.bytes.extend_from_slice(&pad);
    rec(&mut m, 2, 10, 0);
    let (txns, end) = scan_all_chunks(&m, ScanMode::Strict).unwrap();
    assert_eq!(txns, [1, 2]);
    assert_eq!(end.end, m.tail());
}

#[test]
fn torn_tail_partial_last_record() {
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 100, 0);
    let x = rec(&mut m, 2, 300, 0);
    for keep in [1usize, 4, 31, 32, 100, 200] {
        let mut t = m.clone();
        t.bytes.truncate(x as usize + keep);
        let (txns, end) = scan_all_chunks(&t, ScanMode::Strict).unwrap();
        assert_eq!(txns, [1], "keep {keep}");
        assert_eq!(
            end,
            ScanEnd {
                end: x,
                kind: EndKind::TornTail,
                trimmed_at: Some(("log".into(), x)),
                // The unfinished record's length once its header is whole, up to the limit.
                trimmed: if keep >= 32 { keep as u64 } else { 0 },
            }
        );
    }
    // The tail of the last record never reached the media (zeros), the log was preallocated.
    let mut t = m.clone();
    let n = t.bytes.len();
    t.bytes[n - 50..].fill(0);
    t.bytes.resize(n + 4096, 0);
    let (txns, end) = scan_all_chunks(&t, ScanMode::Strict).unwrap();
    assert_eq!(txns, [1]);
    assert_eq!((end.end, end.kind), (x, EndKind::TornTail));
}

/// A write torn inside the last record's padding: the record's bytes are all there, but the
/// stream's positions are padded, so it is a torn tail and the end stays within `limit()`
/// (found by the ALICE enumeration in braid-engine: the file device could not reset its tail
/// to an end past its written extent).
#[test]
fn torn_inside_the_padding_is_a_torn_tail_within_the_limit() {
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 100, 0);
    let x = rec(&mut m, 2, 13, 0);
    let unpadded = braid_wal::record::peek_header(&m.bytes[x as usize..])
        .map(|h| h.0 as usize)
        .unwrap();
    assert!(
        x as usize + unpadded < m.bytes.len(),
        "the record has padding"
    );
    for cut in x as usize + unpadded..m.bytes.len() {
        let mut t = m.clone();
        t.bytes.truncate(cut);
        let (txns, end) = scan_all_chunks(&t, ScanMode::Strict).unwrap();
        assert_eq!(txns, [1], "cut at {cut}");
        assert!(end.end <= t.tail());
        assert_eq!((end.end, end.kind), (x, EndKind::TornTail), "cut at {cut}");
    }
}

#[test]
fn corruption_before_a_durable_record_is_an_error() {
    let mut m = MemSource::new("log", 0, 5);
    m.segment_len = 1 << 12;
    rec(&mut m, 1, 100, 0);
    let x = rec(&mut m, 2, 100, 0);
    rec(&mut m, 3, 100, 0);
    // Written once everything before it was durable.
    let synced = m.tail();
    rec(&mut m, 4, 100, synced);
    m.bytes[x as usize + 40] ^= 0x10;

    let e = scan(&m, ScanMode::Strict, 1 << 20).unwrap_err();
    let (file, offset, damage) = corrupt_offset(e.clone());
    assert_eq!((file.as_str(), offset), ("log.0", x));
    assert!(
        matches!(
            damage,
            Corruption::BeforeDurable {
                fault: RecordFault::Checksum,
                ..
            }
        ),
        "{damage}"
    );
    assert!(e.to_string().contains("log.0") && e.to_string().contains(&x.to_string()));
    // The typed kind is the error's source, for callers that walk the chain.
    let source = std::error::Error::source(&e).expect("Corrupt has its damage as source");
    assert!(matches!(
        source.downcast_ref::<Corruption>(),
        Some(Corruption::BeforeDurable { .. })
    ));

    // Records before the damage were yielded before the error; the error repeats.
    let mut s = Scanner::new(&m, ScanMode::Strict);
    assert_eq!(s.next_record().unwrap().unwrap().header.txn, 1);
    assert!(s.next_record().is_err());
    assert!(s.next_record().is_err());
    assert!(s.end().is_none());

    // Salvage keeps the prefix and names the damage.
    let (txns, end) = scan_all_chunks(&m, ScanMode::Salvage).unwrap();
    assert_eq!(txns, [1]);
    assert_eq!(
        end,
        ScanEnd {
            end: x,
            kind: EndKind::Salvaged,
            trimmed_at: Some(("log.0".into(), x)),
            trimmed: 0
        }
    );
}

#[test]
fn corruption_in_a_later_segment_names_that_segment() {
    let mut m = MemSource::new("seg", 0, 5);
    m.segment_len = 1024;
    let mut lsns = Vec::new();
    for t in 1..=20 {
        let synced = m.tail();
        lsns.push(rec(&mut m, t, 90, synced));
    }
    let x = lsns[15];
    m.bytes[x as usize] ^= 1;
    let (file, offset, _) = corrupt_offset(scan(&m, ScanMode::Strict, 100).unwrap_err());
    assert_eq!(file, format!("seg.{}", x / 1024));
    assert_eq!(offset, x % 1024);
}

#[test]
fn corruption_in_the_sealed_range_with_nothing_after() {
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 100, 0);
    let x = rec(&mut m, 2, 100, 0);
    rec(&mut m, 3, 100, 0);
    m.sealed = m.tail();
    // The last record is damaged; no record follows it.
    let last = m.bytes.len() - 8;
    m.bytes[last - 20] ^= 0x80;
    let (_, _, damage) = corrupt_offset(scan(&m, ScanMode::Strict, 1 << 20).unwrap_err());
    assert!(matches!(damage, Corruption::Sealed { .. }), "{damage}");
    // Truncated inside the sealed range: data the device promised is missing.
    let mut t = m.clone();
    t.bytes.truncate(x as usize + 50);
    t.sealed = m.sealed;
    let (_, offset, _) = corrupt_offset(scan(&t, ScanMode::Strict, 1 << 20).unwrap_err());
    assert_eq!(offset, x);
    let (txns, end) = scan_all_chunks(&t, ScanMode::Salvage).unwrap();
    assert_eq!(txns, [1]);
    assert_eq!(end.kind, EndKind::Salvaged);
    // The same damage past `sealed` with nothing after is a torn tail.
    let mut t2 = m.clone();
    t2.sealed = x;
    let (txns, end) = scan_all_chunks(&t2, ScanMode::Strict).unwrap();
    assert_eq!(txns, [1, 2]);
    assert_eq!(end.kind, EndKind::TornTail);
}

#[test]
fn torn_unsynced_record_before_an_intact_later_one_is_a_torn_tail() {
    // Writers fill x and y concurrently; y reaches the media, x is torn by the crash. y was
    // written when the log was durable only up to x (or less): x was never durable.
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 100, 0);
    let x = rec(&mut m, 2, 500, 0);
    let len2 = m.tail() - x;
    rec(&mut m, 3, 100, x);
    rec(&mut m, 4, 100, x - 8);
    let torn = m.bytes[x as usize + 200..x as usize + 400].to_vec();
    m.bytes[x as usize + 200..x as usize + 400].fill(0);
    let (txns, end) = scan_all_chunks(&m, ScanMode::Strict).unwrap();
    assert_eq!(txns, [1]);
    assert_eq!(
        end,
        ScanEnd {
            end: x,
            kind: EndKind::TornTail,
            trimmed_at: Some(("log".into(), x)),
            trimmed: len2
        }
    );
    // The same log whose last record knew x was durable: corruption.
    m.bytes[x as usize + 200..x as usize + 400].copy_from_slice(&torn);
    let synced = x + 8;
    rec(&mut m, 5, 10, synced);
    m.bytes[x as usize + 200..x as usize + 400].fill(0);
    let (_, offset, damage) = corrupt_offset(scan(&m, ScanMode::Strict, 64).unwrap_err());
    assert_eq!(offset, x);
    assert!(
        matches!(damage, Corruption::BeforeDurable { .. }),
        "{damage}"
    );
}

#[test]
fn stale_records_of_another_salt_are_not_replayed() {
    // The space held an earlier incarnation of the stream (another salt) at the same LSNs:
    // its records even name their own positions and claim everything was durable.
    let mut old = MemSource::new("log", 0, 1);
    for t in 1..=10 {
        let synced = old.tail();
        rec(&mut old, 100 + t, 64, synced);
    }
    let mut m = MemSource::new("log", 0, 2);
    for t in 1..=4 {
        rec(&mut m, t, 64, 0);
    }
    let x = m.tail();
    let mut bytes = old.bytes.clone();
    bytes[..m.bytes.len()].copy_from_slice(&m.bytes);
    m.bytes = bytes;
    let (txns, end) = scan_all_chunks(&m, ScanMode::Strict).unwrap();
    assert_eq!(txns, [1, 2, 3, 4]);
    assert_eq!(end.end, x);
    assert_eq!(end.kind, EndKind::TornTail);
    let (txns, _) = scan_all_chunks(&m, ScanMode::Salvage).unwrap();
    assert_eq!(txns, [1, 2, 3, 4]);
}

#[test]
fn zeros_before_durable_records_are_corruption_not_a_clean_end() {
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 100, 0);
    let x = rec(&mut m, 2, 100, 0);
    let synced = m.tail();
    rec(&mut m, 3, 100, synced);
    m.bytes[x as usize..x as usize + 32].fill(0);
    let (_, offset, damage) = corrupt_offset(scan(&m, ScanMode::Strict, 1 << 20).unwrap_err());
    assert_eq!(offset, x);
    assert!(
        matches!(
            damage,
            Corruption::BeforeDurable {
                fault: RecordFault::Zeros,
                ..
            }
        ),
        "{damage}"
    );
    // Zeros followed only by records written before x was durable: a torn tail.
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 100, 0);
    let x = rec(&mut m, 2, 100, 0);
    rec(&mut m, 3, 100, x);
    m.bytes[x as usize..x as usize + 32].fill(0);
    let (txns, end) = scan_all_chunks(&m, ScanMode::Strict).unwrap();
    assert_eq!(txns, [1]);
    assert_eq!((end.end, end.kind), (x, EndKind::TornTail));
}

#[test]
fn salvage_mode_keeps_the_prefix_only() {
    let mut m = MemSource::new("log", 0, 5);
    for t in 1..=10 {
        let synced = m.tail();
        rec(&mut m, t, 40 * t as usize, synced);
    }
    let mut s = Scanner::new(&m, ScanMode::Strict);
    let mut lsns = Vec::new();
    while let Some(r) = s.next_record().unwrap() {
        lsns.push(r.header.lsn);
    }
    let x = lsns[6];
    m.bytes[x as usize + 33] ^= 4;
    let (txns, end) = scan_all_chunks(&m, ScanMode::Salvage).unwrap();
    assert_eq!(txns, [1, 2, 3, 4, 5, 6]);
    assert_eq!(
        end,
        ScanEnd {
            end: x,
            kind: EndKind::Salvaged,
            trimmed_at: Some(("log".into(), x)),
            trimmed: 0
        }
    );
    assert!(matches!(
        scan(&m, ScanMode::Strict, 1 << 20),
        Err(WalError::Corrupt { .. })
    ));
}

#[test]
fn records_larger_than_the_chunk_grow_the_buffer() {
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 10, 0);
    rec(&mut m, 2, 3 << 20, 0);
    rec(&mut m, 3, 10, 0);
    let (txns, end) = scan(&m, ScanMode::Strict, 1 << 20).unwrap();
    assert_eq!(txns, [1, 2, 3]);
    assert_eq!(end.kind, EndKind::Clean);
    let (txns, _) = scan(&m, ScanMode::Strict, 64).unwrap();
    assert_eq!(txns, [1, 2, 3]);
}

#[test]
fn a_newer_format_version_is_refused_not_trimmed() {
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 10, 0);
    let x = rec(&mut m, 2, 10, 0);
    m.bytes[x as usize + 6..x as usize + 8].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    // Without a valid checksum a newer version is only a torn header: trimmed.
    let (txns, end) = scan(&m, ScanMode::Strict, 1 << 20).unwrap();
    assert_eq!((txns, end.kind), (vec![1], EndKind::TornTail));
    // With one, it is a newer writer's log: refused.
    let xi = x as usize;
    let len = u32::from_le_bytes(m.bytes[xi..xi + 4].try_into().unwrap()) as usize;
    let mut head = 5u32.to_le_bytes().to_vec();
    head.extend_from_slice(&m.bytes[xi..xi + 8]);
    head.extend_from_slice(&[0; 4]);
    head.extend_from_slice(&m.bytes[xi + 12..xi + len]);
    let crc = crc32c::crc32c(&head);
    m.bytes[xi + 8..xi + 12].copy_from_slice(&crc.to_le_bytes());
    for mode in [ScanMode::Strict, ScanMode::Salvage] {
        match scan(&m, mode, 1 << 20) {
            Err(WalError::BadSegment { file, damage }) => {
                assert_eq!(file, "log");
                assert!(
                    matches!(damage, SegmentDamage::NewerRecord { version, reads, .. }
                        if version == FORMAT_VERSION + 1 && reads == FORMAT_VERSION),
                    "{damage}"
                );
            }
            other => panic!("expected BadSegment, got {other:?}"),
        }
    }
}

#[test]
fn a_long_damaged_tail_is_looked_through() {
    // 64 MiB of junk after a torn record: the lookahead must cover it (one compare per step).
    let mut m = MemSource::new("log", 0, 5);
    rec(&mut m, 1, 10, 0);
    let x = rec(&mut m, 2, 10, 0);
    m.bytes[x as usize + 40] ^= 1;
    let junk: Vec<u8> = (0..64u64 << 20)
        .map(|i| (i.wrapping_mul(0x9E37_79B9) >> 13) as u8)
        .collect();
    m.bytes.extend_from_slice(&junk);
    let (txns, end) = scan(&m, ScanMode::Strict, 1 << 20).unwrap();
    assert_eq!(txns, [1]);
    assert_eq!(end.kind, EndKind::TornTail);
    // A durable record at the very end of it is still found.
    let synced = m.tail();
    rec(&mut m, 3, 10, synced);
    let (_, offset, _) = corrupt_offset(scan(&m, ScanMode::Strict, 1 << 20).unwrap_err());
    assert_eq!(offset, x);
}

/// A source whose reads fail.
struct Failing(MemSource);

impl StreamSource for Failing {
    fn start(&self) -> Lsn {
        self.0.start()
    }
    fn limit(&self) -> Lsn {
        self.0.limit()
    }
    fn sealed(&self) -> Lsn {
        self.0.sealed()
    }
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        if lsn >= 32 {
            return Err(WalError::io(
                "read",
                "log",
                std::io::Error::other("injected"),
            ));
        }
        self.0.read_at(lsn, buf)
    }
    fn salt_for(&self, lsn: Lsn) -> u32 {
        self.0.salt_for(lsn)
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        self.0.locate(lsn)
    }
}

#[test]
fn read_errors_propagate() {
    let mut m = MemSource::new("log", 0, 5);
    for t in 1..=4 {
        rec(&mut m, t, 40, 0);
    }
    let f = Failing(m);
    let mut s = Scanner::new(&f, ScanMode::Strict).with_chunk_size(32);
    let mut got = 0;
    let err = loop {
        match s.next_record() {
            Ok(Some(_)) => got += 1,
            Ok(None) => panic!("a read error must not look like an end"),
            Err(e) => break e,
        }
    };
    assert_eq!(got, 0);
    assert!(matches!(err, WalError::Io { .. }));
}
