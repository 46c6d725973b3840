//! [`RowWriter`]: column-level access to the private image of a row being written, which
//! remembers the changed columns so data logging logs only those.

use crate::schema::Schema;

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
    /// Read a u64 column. The numeric accessors expect an 8-byte column and panic if `col`
    /// does not exist (see [`crate::schema::get_u64`]).
    pub fn get_u64(&self, col: usize) -> u64 {
        crate::schema::get_u64(self.schema, self.image, col)
    }
    /// Write a u64 column.
    pub fn set_u64(&mut self, col: usize, v: u64) {
        crate::schema::set_u64(self.schema, self.image, col, v);
        *self.mask |= 1 << col;
    }
    /// Read an i64 column.
    pub fn get_i64(&self, col: usize) -> i64 {
        self.get_u64(col) as i64
    }
    /// Write an i64 column.
    pub fn set_i64(&mut self, col: usize, v: i64) {
        self.set_u64(col, v as u64)
    }
    /// Read an f64 column.
    pub fn get_f64(&self, col: usize) -> f64 {
        f64::from_bits(self.get_u64(col))
    }
    /// Write an f64 column.
    pub fn set_f64(&mut self, col: usize, v: f64) {
        self.set_u64(col, v.to_bits())
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
    /// The whole image, read-only.
    pub fn image(&self) -> &[u8] {
        self.image
    }
}
