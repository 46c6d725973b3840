//! [`RowWriter`]: column-level access to the private image of a row being written, which
//! remembers the changed columns so data logging logs only those.

use crate::schema::Schema;
use crate::value::Value;

/// Column-level access to a row image being written; remembers which columns changed.
pub struct RowWriter<'a> {
    pub(super) schema: &'a Schema,
    pub(super) image: &'a mut [u8],
    pub(super) mask: &'a mut u64,
}

impl RowWriter<'_> {
    /// The row's table layout.
    pub fn schema(&self) -> &Schema {
        self.schema
    }
    /// Read a numeric column as a `T` (see [`Schema::get`]: it expects an 8-byte column and
    /// panics if `col` does not exist).
    pub fn get<T: Value>(&self, col: usize) -> T {
        self.schema.get(self.image, col)
    }
    /// Write a numeric column (see [`Schema::set`]).
    pub fn set<T: Value>(&mut self, col: usize, v: T) {
        self.schema.set(self.image, col, v);
        *self.mask |= 1 << col;
    }
    /// The bytes of a column, whatever its type.
    pub fn bytes(&self, col: usize) -> &[u8] {
        &self.image[self.schema.range(col)]
    }
    /// Set a fixed-width column; shorter values are zero-padded, longer ones truncated.
    pub fn set_bytes(&mut self, col: usize, v: &[u8]) {
        let r = self.schema.range(col);
        let dst = &mut self.image[r];
        let n = v.len().min(dst.len());
        dst[..n].copy_from_slice(&v[..n]);
        dst[n..].fill(0);
        *self.mask |= 1 << col;
    }
    /// A fixed-width column to write in place (marked changed): a value generated straight
    /// into the image, without a copy through a buffer. Panics if `col` does not exist.
    pub fn column_mut(&mut self, col: usize) -> &mut [u8] {
        *self.mask |= 1 << col;
        &mut self.image[self.schema.range(col)]
    }
    /// The whole image, read-only.
    pub fn image(&self) -> &[u8] {
        self.image
    }
}
