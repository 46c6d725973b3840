//! Payload codecs: redo operations and commands. API SKELETON.

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("malformed payload at byte {at}: {what}")]
pub struct PayloadError { pub at: usize, pub what: &'static str }

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedoOp<'a> {
    /// After-image of the columns in `columns` (bit i = column i), concatenated in column order.
    Update { table: u32, key: u64, columns: u64, data: &'a [u8] },
    /// Full row image.
    Insert { table: u32, key: u64, data: &'a [u8] },
    Delete { table: u32, key: u64 },
}

/// Builds a redo payload; reusable (clear) so workers do not allocate per transaction.
#[derive(Debug, Default, Clone)]
pub struct RedoBuf { pub bytes: Vec<u8> }

impl RedoBuf {
    pub fn clear(&mut self) { self.bytes.clear() }
    pub fn push(&mut self, _op: &RedoOp<'_>) { unimplemented!() }
    /// Append an Update whose data is written by `fill` into a buffer of `len` bytes.
    pub fn push_update_with(&mut self, _table: u32, _key: u64, _columns: u64, _len: usize, _fill: impl FnOnce(&mut [u8])) { unimplemented!() }
    pub fn is_empty(&self) -> bool { self.bytes.is_empty() }
}

pub struct RedoIter<'a> { _p: std::marker::PhantomData<&'a ()> }
impl<'a> Iterator for RedoIter<'a> {
    type Item = Result<RedoOp<'a>, PayloadError>;
    fn next(&mut self) -> Option<Self::Item> { unimplemented!() }
}
pub fn decode_redo(_payload: &[u8]) -> RedoIter<'_> { unimplemented!() }

pub fn encode_command(_proc_id: u32, _params: &[u8], _out: &mut Vec<u8>) { unimplemented!() }
pub fn decode_command(_payload: &[u8]) -> Result<(u32, &[u8]), PayloadError> { unimplemented!() }
