//! Payload codecs: redo operations (data logging) and commands (command logging, Taurus
//! Section 3.4 / the "command logging" variant of every scheme).
//!
//! Redo payload: a sequence of operations, each (little endian)
//! ```text
//! u8  op      1 update | 2 insert | 3 delete
//! u32 table
//! u64 key
//! update: u64 column mask, u32 len, len bytes (after-images of the masked columns, in order)
//! insert: u32 len, len bytes (full row image)
//! delete: nothing more
//! ```
//! Command payload: `u32 proc id, u32 len, len bytes of parameters`, nothing after.
//!
//! Decoders never panic; a [`PayloadError`] names the byte offset of the field that is bad.
//! Choices: a redo payload may be empty (no operations); bytes after a command's parameters are
//! an error (a command payload is exactly one command). Data longer than `u32::MAX` bytes cannot
//! be encoded (a record is limited to `crate::record::MAX_RECORD_LEN` anyway): the encoders
//! panic on it as a caller bug.

/// A malformed payload: where and what.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("malformed payload at byte {at}: {what}")]
pub struct PayloadError {
    /// Byte offset in the payload of the bad field (of the op's tag for an unknown op).
    pub at: usize,
    /// What is wrong there.
    pub what: &'static str,
}

/// Redo op tag of [`RedoOp::Update`].
pub(crate) const OP_UPDATE: u8 = 1;
/// Redo op tag of [`RedoOp::Insert`].
pub(crate) const OP_INSERT: u8 = 2;
/// Redo op tag of [`RedoOp::Delete`].
pub(crate) const OP_DELETE: u8 = 3;

/// Bytes of an op before its op-specific part: tag, table, key.
const OP_HEAD: usize = 1 + 4 + 8;

/// Bytes of an update before its data: head, column mask, data length.
const UPDATE_HEAD: usize = OP_HEAD + 8 + 4;

/// One operation of a redo payload, borrowing its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedoOp<'a> {
    /// After-image of the columns in `columns` (bit i = column i), concatenated in column order.
    Update {
        /// Table id.
        table: u32,
        /// Row key.
        key: u64,
        /// Bit mask of the updated columns.
        columns: u64,
        /// Their after-images.
        data: &'a [u8],
    },
    /// Full row image.
    Insert {
        /// Table id.
        table: u32,
        /// Row key.
        key: u64,
        /// The row image.
        data: &'a [u8],
    },
    /// The row is removed.
    Delete {
        /// Table id.
        table: u32,
        /// Row key.
        key: u64,
    },
}

impl RedoOp<'_> {
    /// The table the op applies to.
    pub(crate) fn table(&self) -> u32 {
        match *self {
            RedoOp::Update { table, .. }
            | RedoOp::Insert { table, .. }
            | RedoOp::Delete { table, .. } => table,
        }
    }

    /// The key of the row the op applies to.
    pub(crate) fn key(&self) -> u64 {
        match *self {
            RedoOp::Update { key, .. }
            | RedoOp::Insert { key, .. }
            | RedoOp::Delete { key, .. } => key,
        }
    }

    /// Bytes this op takes in a redo payload.
    pub(crate) fn encoded_len(&self) -> usize {
        match self {
            RedoOp::Update { data, .. } => OP_HEAD + 8 + 4 + data.len(),
            RedoOp::Insert { data, .. } => OP_HEAD + 4 + data.len(),
            RedoOp::Delete { .. } => OP_HEAD,
        }
    }
}

fn len_u32(len: usize) -> [u8; 4] {
    // A caller bug, documented in the module doc: no record can hold 4 GiB.
    assert!(
        len <= u32::MAX as usize,
        "redo data of {len} bytes cannot be encoded"
    );
    (len as u32).to_le_bytes()
}

/// Builds a redo payload; reusable (clear) so workers do not allocate per transaction.
#[derive(Debug, Default, Clone)]
pub struct RedoBuf {
    /// The encoded payload so far.
    pub bytes: Vec<u8>,
}

impl RedoBuf {
    /// Empty the buffer, keeping its allocation.
    pub fn clear(&mut self) {
        self.bytes.clear()
    }

    fn push_head(&mut self, tag: u8, table: u32, key: u64) {
        self.bytes.push(tag);
        self.bytes.extend_from_slice(&table.to_le_bytes());
        self.bytes.extend_from_slice(&key.to_le_bytes());
    }

    /// Append `op`.
    ///
    /// # Panics
    /// If its data is longer than `u32::MAX` bytes.
    pub fn push(&mut self, op: &RedoOp<'_>) {
        self.bytes.reserve(op.encoded_len());
        match *op {
            RedoOp::Update {
                table,
                key,
                columns,
                data,
            } => {
                self.push_head(OP_UPDATE, table, key);
                self.bytes.extend_from_slice(&columns.to_le_bytes());
                self.bytes.extend_from_slice(&len_u32(data.len()));
                self.bytes.extend_from_slice(data);
            }
            RedoOp::Insert { table, key, data } => {
                self.push_head(OP_INSERT, table, key);
                self.bytes.extend_from_slice(&len_u32(data.len()));
                self.bytes.extend_from_slice(data);
            }
            RedoOp::Delete { table, key } => self.push_head(OP_DELETE, table, key),
        }
    }

    /// Append an Update whose data is written by `fill` into a buffer of `len` bytes
    /// (zeroed first), saving a copy of the after-images.
    ///
    /// # Panics
    /// If `len` exceeds `u32::MAX`.
    pub fn push_update_with(
        &mut self,
        table: u32,
        key: u64,
        columns: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) {
        let len_bytes = len_u32(len);
        self.bytes.reserve(UPDATE_HEAD + len);
        self.push_head(OP_UPDATE, table, key);
        self.bytes.extend_from_slice(&columns.to_le_bytes());
        self.bytes.extend_from_slice(&len_bytes);
        let at = self.bytes.len();
        self.bytes.resize(at + len, 0);
        fill(&mut self.bytes[at..]);
    }

    /// Whether no op was pushed since the last clear.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A cursor over a payload that reports offsets in errors.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], PayloadError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => Err(PayloadError { at: self.at, what }),
        }
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, PayloadError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, PayloadError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, PayloadError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(a))
    }

    /// A `u32` length followed by that many bytes.
    fn data(
        &mut self,
        what_len: &'static str,
        what_data: &'static str,
    ) -> Result<&'a [u8], PayloadError> {
        let n = self.u32(what_len)? as usize;
        self.take(n, what_data)
    }
}

/// Iterator over the ops of a redo payload; after an error it yields nothing more.
pub struct RedoIter<'a> {
    cur: Cursor<'a>,
    failed: bool,
}

impl std::fmt::Debug for RedoIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedoIter")
            .field("at", &self.cur.at)
            .field("len", &self.cur.buf.len())
            .finish()
    }
}

impl<'a> RedoIter<'a> {
    /// Byte offset of the next op.
    pub(crate) fn offset(&self) -> usize {
        self.cur.at
    }

    fn op(&mut self) -> Result<RedoOp<'a>, PayloadError> {
        match self.whole_op() {
            Some(op) => Ok(op),
            None => self.checked_op(),
        }
    }

    /// The common case, with one bounds check for the fixed fields: an op with at least
    /// [`UPDATE_HEAD`] bytes from its start and its data all there. `None` for anything else,
    /// which [`RedoIter::checked_op`] decodes field by field (and names what is wrong).
    /// Recovery decodes every op several times (to route it, to prefetch its row, to apply
    /// it), so this is most of its decoding.
    #[inline]
    fn whole_op(&mut self) -> Option<RedoOp<'a>> {
        let buf = self.cur.buf;
        let start = self.cur.at;
        let h: &[u8; UPDATE_HEAD] = buf.get(start..)?.first_chunk()?;
        let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let table = u32_at(1);
        let key = u64::from_le_bytes(*h[5..].first_chunk()?);
        let (op, end) = match h[0] {
            OP_UPDATE => {
                let columns = u64::from_le_bytes(*h[OP_HEAD..].first_chunk()?);
                let from = start + UPDATE_HEAD;
                let to = from.checked_add(u32_at(OP_HEAD + 8) as usize)?;
                let data = buf.get(from..to)?;
                let op = RedoOp::Update {
                    table,
                    key,
                    columns,
                    data,
                };
                (op, to)
            }
            OP_INSERT => {
                let from = start + OP_HEAD + 4;
                let to = from.checked_add(u32_at(OP_HEAD) as usize)?;
                let data = buf.get(from..to)?;
                (RedoOp::Insert { table, key, data }, to)
            }
            OP_DELETE => (RedoOp::Delete { table, key }, start + OP_HEAD),
            _ => return None,
        };
        self.cur.at = end;
        Some(op)
    }

    /// An op decoded field by field, each checked.
    fn checked_op(&mut self) -> Result<RedoOp<'a>, PayloadError> {
        let start = self.cur.at;
        let tag = self.cur.u8("truncated op tag")?;
        let table = self.cur.u32("truncated table id")?;
        let key = self.cur.u64("truncated key")?;
        match tag {
            OP_UPDATE => {
                let columns = self.cur.u64("truncated column mask")?;
                let data = self.cur.data(
                    "truncated data length",
                    "update data extends past the payload",
                )?;
                Ok(RedoOp::Update {
                    table,
                    key,
                    columns,
                    data,
                })
            }
            OP_INSERT => {
                let data = self.cur.data(
                    "truncated data length",
                    "insert data extends past the payload",
                )?;
                Ok(RedoOp::Insert { table, key, data })
            }
            OP_DELETE => Ok(RedoOp::Delete { table, key }),
            _ => Err(PayloadError {
                at: start,
                what: "unknown redo op tag",
            }),
        }
    }
}

impl<'a> Iterator for RedoIter<'a> {
    type Item = Result<RedoOp<'a>, PayloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.cur.at >= self.cur.buf.len() {
            return None;
        }
        let r = self.op();
        self.failed = r.is_err();
        Some(r)
    }
}

impl std::iter::FusedIterator for RedoIter<'_> {}

/// Iterate over the ops of a redo payload (an empty payload has none).
pub fn decode_redo(payload: &[u8]) -> RedoIter<'_> {
    RedoIter {
        cur: Cursor {
            buf: payload,
            at: 0,
        },
        failed: false,
    }
}

/// Append a command (stored procedure id and its serialized parameters) to `out`.
///
/// # Panics
/// If `params` is longer than `u32::MAX` bytes.
pub fn encode_command(proc_id: u32, params: &[u8], out: &mut Vec<u8>) {
    out.reserve(8 + params.len());
    out.extend_from_slice(&proc_id.to_le_bytes());
    out.extend_from_slice(&len_u32(params.len()));
    out.extend_from_slice(params);
}

/// Decode a command payload into `(procedure id, parameters)`; the payload must hold exactly
/// one command.
pub fn decode_command(payload: &[u8]) -> Result<(u32, &[u8]), PayloadError> {
    let mut cur = Cursor {
        buf: payload,
        at: 0,
    };
    let proc_id = cur.u32("truncated procedure id")?;
    let params = cur.data(
        "truncated parameter length",
        "parameters extend past the payload",
    )?;
    if cur.at != payload.len() {
        return Err(PayloadError {
            at: cur.at,
            what: "trailing bytes after the parameters",
        });
    }
    Ok((proc_id, params))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Every op of `payload` (and the error that ends it) as the field-by-field decoder reads
    /// them.
    fn checked_ops(payload: &[u8]) -> Vec<Result<RedoOp<'_>, PayloadError>> {
        let mut it = decode_redo(payload);
        let mut out = Vec::new();
        while it.cur.at < payload.len() {
            let r = it.checked_op();
            let end = r.is_err();
            out.push(r);
            if end {
                break;
            }
        }
        out
    }

    /// The one-check decoding of whole ops reads every payload as the field-by-field one does:
    /// each prefix of a payload of all op kinds (data of 0 to 40 bytes, so ops end near the
    /// fixed fields' size either way), and the payload with each byte changed.
    #[test]
    fn whole_ops_decode_as_checked_ones() {
        let mut b = RedoBuf::default();
        for (i, n) in [0usize, 3, 12, 40, 7, 1].into_iter().enumerate() {
            let data = vec![i as u8 + 1; n];
            let (table, key) = (i as u32 + 1, 1000 + i as u64);
            b.push(&RedoOp::Delete { table, key });
            b.push_update_with(table, key, 0b11 << i, n, |d| d.copy_from_slice(&data));
            b.push(&RedoOp::Insert {
                table,
                key,
                data: &data,
            });
        }
        let p = b.bytes;
        for end in 0..=p.len() {
            let cut = &p[..end];
            assert_eq!(
                decode_redo(cut).collect::<Vec<_>>(),
                checked_ops(cut),
                "{end}"
            );
        }
        for at in 0..p.len() {
            for v in [0u8, 1, 2, 3, 4, 0x80, 0xff] {
                let mut q = p.clone();
                q[at] = v;
                assert_eq!(decode_redo(&q).collect::<Vec<_>>(), checked_ops(&q), "{at}");
            }
        }
    }

    #[test]
    fn redo_round_trip_and_errors() {
        let mut b = RedoBuf::default();
        b.push(&RedoOp::Insert {
            table: 1,
            key: 2,
            data: b"row",
        });
        b.push_update_with(3, 4, 0b101, 2, |d| d.copy_from_slice(b"xy"));
        b.push(&RedoOp::Delete { table: 5, key: 6 });
        let ops: Vec<_> = decode_redo(&b.bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            ops,
            vec![
                RedoOp::Insert {
                    table: 1,
                    key: 2,
                    data: b"row"
                },
                RedoOp::Update {
                    table: 3,
                    key: 4,
                    columns: 0b101,
                    data: b"xy"
                },
                RedoOp::Delete { table: 5, key: 6 },
            ]
        );
        let mut bad = b.bytes.clone();
        bad[20] = 9; // the second op's tag (first op: 13 + 4 + 3 = 20 bytes)
        let r: Vec<_> = decode_redo(&bad).collect();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1],
            Err(PayloadError {
                at: 20,
                what: "unknown redo op tag"
            })
        );
        let cut = &b.bytes[..b.bytes.len() - 1];
        let last = decode_redo(cut).last().unwrap();
        assert_eq!(last.unwrap_err().at, b.bytes.len() - 8);
    }

    #[test]
    fn command_round_trip_and_errors() {
        let mut out = Vec::new();
        encode_command(42, b"params", &mut out);
        assert_eq!(decode_command(&out).unwrap(), (42, &b"params"[..]));
        assert_eq!(decode_command(&out[..3]).unwrap_err().at, 0);
        assert_eq!(decode_command(&out[..10]).unwrap_err().at, 8);
        out.push(0);
        assert_eq!(decode_command(&out).unwrap_err().at, 14);
    }
}
