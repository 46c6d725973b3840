//! The checkpoint file format: a header with the log cut, checksummed chunks of rows, and a
//! footer that seals the file.
//!
//! Layout (little endian):
//! ```text
//! header   "BRAIDCKP" | version u32 | header_len u32 | epoch u64 | next_txn u64 | tables u32 |
//!          streams u32 | starts[streams] u64 | ends[streams] u64 | marks[streams] u64 |
//!          keeps[streams] u64 | crc32c(everything before) u32
//! ```
//! (Format 1, still read, has no `keeps`: recovery reads each stream from its start.)
//! ```text
//! chunk    "CK" u16 | table u32 | rows u32 | body_len u32 | crc32c(table ++ rows ++ body) u32 |
//!          body = rows x (key u64, image[row width of the table])
//! footer   "BRAIDEND" | chunks u64 | rows u64 | crc32c(header crc ++ every chunk crc) u32
//! ```
//! A file is valid only if the header, every chunk and the footer check out and the footer is
//! the last thing in it; anything else is an error naming the file and the offset. The file is
//! written under a temporary name, fsynced, renamed and its directory fsynced, so a crash
//! leaves either the previous state or a complete checkpoint.

use std::path::{Path, PathBuf};

use braid_wal::fs::{Fs, FsFile, OpenOpts};
use braid_wal::scheme::Cut;

use crate::error::{CheckpointDamage, EngineError};

const MAGIC: &[u8; 8] = b"BRAIDCKP";
const END: &[u8; 8] = b"BRAIDEND";
const CHUNK: &[u8; 2] = b"CK";
pub(crate) const VERSION: u32 = 2;
/// The format before `keeps` (per-update records), still read.
const VERSION_1: u32 = 1;
/// Rows are written in chunks of about this many bytes.
pub(crate) const CHUNK_BYTES: usize = 1 << 20;
const CHUNK_HEADER: usize = 18;
const FOOTER: usize = 28;

/// What a checkpoint's header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckpointMeta {
    /// The checkpoint epoch: transactions of earlier epochs are in the checkpoint.
    pub epoch: u64,
    /// Transaction ids below this were handed out before the checkpoint.
    pub next_txn: u64,
    /// Tables in the checkpoint.
    pub tables: u32,
    /// Where the checkpoint cuts each log stream: recovery replays only what it does not cover.
    pub cut: Cut,
}

fn io(path: &Path, e: std::io::Error) -> EngineError {
    EngineError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Writes one checkpoint file, chunk by chunk.
pub(crate) struct Writer<'a> {
    fs: &'a dyn Fs,
    tmp: PathBuf,
    file: Box<dyn FsFile>,
    off: u64,
    crcs: u32,
    chunks: u64,
    rows: u64,
    /// Per table: the chunk being filled (rows, bytes).
    pending: Vec<(u32, Vec<u8>)>,
}

impl<'a> Writer<'a> {
    /// Create `tmp` and write the header.
    pub(crate) fn create(
        fs: &'a dyn Fs,
        tmp: PathBuf,
        meta: &CheckpointMeta,
    ) -> Result<Writer<'a>, EngineError> {
        let file = fs
            .open(&tmp, OpenOpts::create_truncate())
            .map_err(|e| io(&tmp, e))?;
        let h = encode_header(meta);
        let crcs = crc32c::crc32c(&h[h.len() - 4..]);
        file.write_all_at(0, &h).map_err(|e| io(&tmp, e))?;
        Ok(Writer {
            fs,
            tmp,
            file,
            off: h.len() as u64,
            crcs,
            chunks: 0,
            rows: 0,
            pending: (0..meta.tables).map(|_| (0, Vec::new())).collect(),
        })
    }

    /// Add one row of `table`.
    pub(crate) fn row(&mut self, table: u32, key: u64, image: &[u8]) -> Result<(), EngineError> {
        let Some(p) = self.pending.get_mut(table as usize) else {
            return Err(EngineError::Internal(crate::Invariant::UncountedTable {
                table,
            }));
        };
        p.0 += 1;
        p.1.extend_from_slice(&key.to_le_bytes());
        p.1.extend_from_slice(image);
        if p.1.len() >= CHUNK_BYTES {
            self.flush_chunk(table)?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self, table: u32) -> Result<(), EngineError> {
        let (rows, body) = {
            let p = &mut self.pending[table as usize];
            if p.0 == 0 {
                return Ok(());
            }
            (std::mem::take(&mut p.0), std::mem::take(&mut p.1))
        };
        let mut buf = Vec::with_capacity(CHUNK_HEADER + body.len());
        buf.extend_from_slice(CHUNK);
        buf.extend_from_slice(&table.to_le_bytes());
        buf.extend_from_slice(&rows.to_le_bytes());
        buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&buf[2..14]), &body);
        buf.extend_from_slice(&crc.to_le_bytes());
        buf.extend_from_slice(&body);
        self.file
            .write_all_at(self.off, &buf)
            .map_err(|e| io(&self.tmp, e))?;
        self.off += buf.len() as u64;
        self.crcs = crc32c::crc32c_append(self.crcs, &crc.to_le_bytes());
        self.chunks += 1;
        self.rows += rows as u64;
        let p = &mut self.pending[table as usize];
        if p.1.capacity() == 0 {
            p.1 = body;
            p.1.clear();
        }
        Ok(())
    }

    /// Write the last chunks and the footer, fsync, rename to `path` and fsync the directory.
    /// Returns (rows, bytes).
    pub(crate) fn finish(mut self, path: &Path) -> Result<(u64, u64), EngineError> {
        for t in 0..self.pending.len() {
            self.flush_chunk(t as u32)?;
        }
        let mut f = Vec::with_capacity(FOOTER);
        f.extend_from_slice(END);
        f.extend_from_slice(&self.chunks.to_le_bytes());
        f.extend_from_slice(&self.rows.to_le_bytes());
        f.extend_from_slice(&self.crcs.to_le_bytes());
        self.file
            .write_all_at(self.off, &f)
            .map_err(|e| io(&self.tmp, e))?;
        self.off += f.len() as u64;
        self.file.sync_data().map_err(|e| io(&self.tmp, e))?;
        drop(self.file);
        self.fs.rename(&self.tmp, path).map_err(|e| io(path, e))?;
        if let Some(dir) = path.parent() {
            self.fs.sync_dir(dir).map_err(|e| io(dir, e))?;
        }
        Ok((self.rows, self.off))
    }
}

fn encode_header(m: &CheckpointMeta) -> Vec<u8> {
    let n = m.cut.starts.len();
    let keeps = m.cut.keeps();
    let mut h = Vec::with_capacity(40 + 32 * n + 4);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    let len = (8 + 4 + 4 + 8 + 8 + 4 + 4 + 32 * n + 4) as u32;
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&m.epoch.to_le_bytes());
    h.extend_from_slice(&m.next_txn.to_le_bytes());
    h.extend_from_slice(&m.tables.to_le_bytes());
    h.extend_from_slice(&(n as u32).to_le_bytes());
    for v in m
        .cut
        .starts
        .iter()
        .chain(&m.cut.ends)
        .chain(&m.cut.marks)
        .chain(&keeps)
    {
        h.extend_from_slice(&v.to_le_bytes());
    }
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

/// One chunk of a validated checkpoint: where its rows are in the file's bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkRef {
    pub(crate) table: u32,
    pub(crate) body: (usize, usize),
}

/// A checkpoint read into memory and checked from end to end.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) meta: CheckpointMeta,
    pub(crate) bytes: Vec<u8>,
    pub(crate) chunks: Vec<ChunkRef>,
    pub(crate) rows: u64,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
}

/// Check only the header of a checkpoint.
pub(crate) fn decode_header(path: &Path, bytes: &[u8]) -> Result<CheckpointMeta, EngineError> {
    header(path, bytes).map(|(m, _, _)| m)
}

/// The header: meta, header length, header checksum.
fn header(path: &Path, bytes: &[u8]) -> Result<(CheckpointMeta, usize, u32), EngineError> {
    let bad = |offset: usize, damage: CheckpointDamage| EngineError::BadCheckpoint {
        path: path.to_path_buf(),
        offset: offset as u64,
        damage,
    };
    if bytes.get(..8) != Some(MAGIC.as_slice()) {
        return Err(bad(0, CheckpointDamage::BadMagic));
    }
    let version = u32_at(bytes, 8).ok_or_else(|| bad(8, CheckpointDamage::TruncatedHeader))?;
    if version != VERSION && version != VERSION_1 {
        return Err(bad(
            8,
            CheckpointDamage::Version {
                found: version,
                oldest: VERSION_1,
                newest: VERSION,
            },
        ));
    }
    let arrays = if version == VERSION_1 { 3 } else { 4 };
    let hlen =
        u32_at(bytes, 12).ok_or_else(|| bad(12, CheckpointDamage::TruncatedHeader))? as usize;
    if hlen < 44 || hlen > bytes.len() {
        return Err(bad(12, CheckpointDamage::HeaderLength { len: hlen }));
    }
    let crc = u32_at(bytes, hlen - 4).unwrap_or(0);
    if crc32c::crc32c(&bytes[..hlen - 4]) != crc {
        return Err(bad(0, CheckpointDamage::HeaderChecksum));
    }
    let epoch = u64_at(bytes, 16).unwrap_or(0);
    let next_txn = u64_at(bytes, 24).unwrap_or(0);
    let tables = u32_at(bytes, 32).unwrap_or(0);
    let n = u32_at(bytes, 36).unwrap_or(0) as usize;
    if n > (1 << 16) || 40 + 8 * arrays * n + 4 != hlen {
        return Err(bad(
            36,
            CheckpointDamage::Streams {
                streams: n,
                header_len: hlen,
            },
        ));
    }
    let vals: Vec<u64> = (0..arrays * n)
        .map(|i| u64_at(bytes, 40 + 8 * i).unwrap_or(0))
        .collect();
    let cut = Cut {
        epoch,
        starts: vals[..n].to_vec(),
        ends: vals[n..2 * n].to_vec(),
        marks: vals[2 * n..3 * n].to_vec(),
        keeps: vals[3 * n..].to_vec(),
    };
    Ok((
        CheckpointMeta {
            epoch,
            next_txn,
            tables,
            cut,
        },
        hlen,
        crc,
    ))
}

/// Check a whole checkpoint. `widths[t]` is the row width of table `t`. Never panics on any
/// bytes; every error names the offset.
pub(crate) fn decode(path: &Path, bytes: Vec<u8>, widths: &[usize]) -> Result<Loaded, EngineError> {
    let bad = |offset: usize, damage: CheckpointDamage| EngineError::BadCheckpoint {
        path: path.to_path_buf(),
        offset: offset as u64,
        damage,
    };
    let (meta, hlen, crc) = header(path, &bytes)?;
    if meta.tables as usize != widths.len() {
        return Err(bad(
            32,
            CheckpointDamage::Tables {
                found: meta.tables,
                catalog: widths.len(),
            },
        ));
    }
    let mut crcs = crc32c::crc32c(&crc.to_le_bytes());
    let mut off = hlen;
    let mut chunks = Vec::new();
    let mut rows = 0u64;
    loop {
        match bytes.get(off..off + 2) {
            Some(m) if m == CHUNK => {}
            Some(_) if bytes.get(off..off + 8) == Some(END.as_slice()) => break,
            Some(_) => return Err(bad(off, CheckpointDamage::NotAChunk)),
            None => return Err(bad(off, CheckpointDamage::NoFooter)),
        }
        let table =
            u32_at(&bytes, off + 2).ok_or_else(|| bad(off, CheckpointDamage::TruncatedChunk))?;
        let nrows =
            u32_at(&bytes, off + 6).ok_or_else(|| bad(off, CheckpointDamage::TruncatedChunk))?;
        let blen = u32_at(&bytes, off + 10)
            .ok_or_else(|| bad(off, CheckpointDamage::TruncatedChunk))? as usize;
        let ccrc =
            u32_at(&bytes, off + 14).ok_or_else(|| bad(off, CheckpointDamage::TruncatedChunk))?;
        let body = off + CHUNK_HEADER;
        if body + blen > bytes.len() {
            return Err(bad(off, CheckpointDamage::ChunkPastEnd { len: blen }));
        }
        let Some(&w) = widths.get(table as usize) else {
            return Err(bad(off, CheckpointDamage::UnknownTable { table }));
        };
        if nrows as usize * (8 + w) != blen {
            return Err(bad(
                off,
                CheckpointDamage::ChunkRows {
                    rows: nrows,
                    table,
                    len: blen,
                },
            ));
        }
        let want = crc32c::crc32c_append(
            crc32c::crc32c(&bytes[off + 2..off + 14]),
            &bytes[body..body + blen],
        );
        if want != ccrc {
            return Err(bad(off, CheckpointDamage::ChunkChecksum));
        }
        crcs = crc32c::crc32c_append(crcs, &ccrc.to_le_bytes());
        chunks.push(ChunkRef {
            table,
            body: (body, body + blen),
        });
        rows += nrows as u64;
        off = body + blen;
    }
    if bytes.len() != off + FOOTER {
        return Err(bad(
            off,
            CheckpointDamage::FooterLength {
                len: bytes.len() - off,
                expected: FOOTER,
            },
        ));
    }
    let fchunks = u64_at(&bytes, off + 8).unwrap_or(u64::MAX);
    let frows = u64_at(&bytes, off + 16).unwrap_or(u64::MAX);
    let fcrc = u32_at(&bytes, off + 24).unwrap_or(0);
    if fchunks != chunks.len() as u64 || frows != rows || fcrc != crcs {
        return Err(bad(off, CheckpointDamage::FooterMismatch));
    }
    Ok(Loaded {
        meta,
        bytes,
        chunks,
        rows,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use braid_wal::fs::RealFs;
    use proptest::prelude::*;

    fn meta() -> CheckpointMeta {
        CheckpointMeta {
            epoch: 7,
            next_txn: 99,
            tables: 2,
            cut: Cut {
                epoch: 7,
                starts: vec![1, 2],
                ends: vec![3, 4],
                marks: vec![5, 6],
                keeps: vec![0, 2],
            },
        }
    }

    #[test]
    fn a_format_1_header_reads_with_keeps_at_the_starts() {
        let m = meta();
        let mut h = Vec::new();
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION_1.to_le_bytes());
        h.extend_from_slice(&((40 + 24 * 2 + 4) as u32).to_le_bytes());
        h.extend_from_slice(&m.epoch.to_le_bytes());
        h.extend_from_slice(&m.next_txn.to_le_bytes());
        h.extend_from_slice(&m.tables.to_le_bytes());
        h.extend_from_slice(&2u32.to_le_bytes());
        for v in [1u64, 2, 3, 4, 5, 6] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        let got = decode_header(Path::new("c.ckpt"), &h).unwrap();
        assert_eq!(got.cut.keeps(), vec![1, 2]);
        assert_eq!((got.cut.starts, got.cut.marks), (vec![1, 2], vec![5, 6]));
    }

    fn write(dir: &Path, rows: u64) -> PathBuf {
        let fs = RealFs;
        let path = dir.join("c.ckpt");
        let mut w = Writer::create(&fs, dir.join("c.tmp"), &meta()).unwrap();
        for k in 0..rows {
            w.row((k % 2) as u32, k, &vec![k as u8; 4 + 4 * (k % 2) as usize])
                .unwrap();
        }
        w.finish(&path).unwrap();
        path
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        let path = write(d.path(), 300_000);
        let bytes = std::fs::read(&path).unwrap();
        let l = decode(&path, bytes, &[4, 8]).unwrap();
        assert_eq!(l.meta, meta());
        assert_eq!(l.rows, 300_000);
        assert!(l.chunks.len() > 2, "expected several chunks");
        let mut seen = 0u64;
        for c in &l.chunks {
            let w = [4usize, 8][c.table as usize];
            let body = &l.bytes[c.body.0..c.body.1];
            for r in body.chunks(8 + w) {
                let k = u64::from_le_bytes(r[..8].try_into().unwrap());
                assert_eq!(k % 2, c.table as u64);
                assert!(r[8..].iter().all(|&b| b == k as u8));
                seen += 1;
            }
        }
        assert_eq!(seen, 300_000);
    }

    #[test]
    fn every_truncation_and_wrong_schema_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let path = write(d.path(), 50);
        let bytes = std::fs::read(&path).unwrap();
        for cut in 0..bytes.len() {
            let e = decode(&path, bytes[..cut].to_vec(), &[4, 8]).unwrap_err();
            assert!(matches!(e, EngineError::BadCheckpoint { .. }), "{e}");
        }
        assert!(decode(&path, bytes.clone(), &[4]).is_err());
        assert!(decode(&path, bytes, &[4, 16]).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Any single flipped byte is caught (checksums over everything but padding-free).
        #[test]
        fn flipped_byte_is_caught(pos in any::<prop::sample::Index>(), x in 1u8..=255) {
            let d = tempfile::tempdir().unwrap();
            let path = write(d.path(), 40);
            let mut bytes = std::fs::read(&path).unwrap();
            let i = pos.index(bytes.len());
            bytes[i] ^= x;
            prop_assert!(decode(&path, bytes, &[4, 8]).is_err());
        }

        /// Arbitrary bytes never panic the decoder.
        #[test]
        fn garbage_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..512), magic in any::<bool>()) {
            if magic && bytes.len() >= 8 {
                bytes[..8].copy_from_slice(MAGIC);
            }
            let _ = decode(Path::new("x"), bytes, &[4, 8]);
        }
    }
}
