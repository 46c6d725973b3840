//! Fixed-width typed table schemas and row-image accessors ([`Schema::get`], [`Schema::set`]).
//!
//! A row is a fixed-size byte image; each column has a fixed width and offset. Column masks in
//! redo records are `u64` bit sets, so a table has at most 64 columns.

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::value::Value;

/// Column types. All are fixed width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnType {
    /// Unsigned 64-bit integer, 8 bytes little-endian.
    U64,
    /// Signed 64-bit integer, 8 bytes little-endian (two's complement).
    I64,
    /// 64-bit float, its IEEE 754 bits as 8 bytes little-endian.
    F64,
    /// Fixed-width bytes of the given length (strings are padded with zeros).
    Bytes(u32),
}

impl ColumnType {
    /// Bytes the column takes in a row image.
    pub fn width(self) -> usize {
        match self {
            ColumnType::U64 | ColumnType::I64 | ColumnType::F64 => 8,
            ColumnType::Bytes(n) => n as usize,
        }
    }
}

/// A named, typed column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// Column name. Accessors address columns by position; the name matters only in the
    /// catalog a database checks on reopening.
    pub name: String,
    /// Column type, which fixes its width.
    pub ty: ColumnType,
}

/// Which index a table's primary key lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexKind {
    /// Concurrent hash index: point lookups only.
    Hash,
    /// Concurrent B+-tree: point lookups and range scans.
    Ordered,
}

/// A table's definition: name, columns in row order, and the index of its `u64` primary key.
///
/// Built with [`TableDef::new`] and [`TableDef::column`]; a table has 1 to 64 columns (opening
/// a database refuses others).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// Table name.
    pub name: String,
    /// Columns in row-image order; a column's position is its index in accessors and masks.
    pub columns: Vec<Column>,
    /// Which index holds the primary key.
    pub index: IndexKind,
}

impl TableDef {
    /// A table without columns; add them with [`TableDef::column`].
    pub fn new(name: impl Into<String>, index: IndexKind) -> TableDef {
        TableDef {
            name: name.into(),
            columns: Vec::new(),
            index,
        }
    }
    /// Append a column (its position is the number of columns before it).
    pub fn column(mut self, name: impl Into<String>, ty: ColumnType) -> TableDef {
        self.columns.push(Column {
            name: name.into(),
            ty,
        });
        self
    }
}

/// The tables of a database, in id order (table id = position).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// Table definitions; a table's id is its index here.
    pub tables: Vec<TableDef>,
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Catalog {
        Catalog::default()
    }
    /// Add a table; returns its id.
    pub fn add(&mut self, def: TableDef) -> TableId {
        self.tables.push(def);
        TableId((self.tables.len() - 1) as u32)
    }
    /// Check every table has 1 to 64 columns (column masks are `u64` bit sets);
    /// [`EngineError::Schema`] otherwise. [`OpenBuilder::open`](crate::OpenBuilder::open) calls it.
    pub(crate) fn validate(&self) -> Result<(), EngineError> {
        for t in &self.tables {
            if t.columns.is_empty() || t.columns.len() > 64 {
                return Err(EngineError::Schema {
                    table: t.name.clone(),
                    columns: t.columns.len(),
                });
            }
        }
        Ok(())
    }
}

/// A table's id: its position in the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub u32);

/// A table definition with computed column offsets.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The definition the offsets were computed from.
    pub def: TableDef,
    offsets: Vec<usize>,
    row_len: usize,
}

impl Schema {
    /// Lay out `def`'s columns back to back, in order, without padding.
    pub(crate) fn new(def: TableDef) -> Schema {
        let mut offsets = Vec::with_capacity(def.columns.len());
        let mut off = 0;
        for c in &def.columns {
            offsets.push(off);
            off += c.ty.width();
        }
        Schema {
            def,
            offsets,
            row_len: off,
        }
    }
    /// Bytes of a row image (the sum of the column widths).
    pub fn row_len(&self) -> usize {
        self.row_len
    }
    /// Number of columns.
    pub(crate) fn columns(&self) -> usize {
        self.offsets.len()
    }
    /// Width in bytes of column `col`. Panics if there is no such column.
    pub(crate) fn width(&self, col: usize) -> usize {
        self.def.columns[col].ty.width()
    }
    /// Byte range of a column in the row image.
    pub fn range(&self, col: usize) -> std::ops::Range<usize> {
        let o = self.offsets[col];
        o..o + self.width(col)
    }
    /// Bytes of the columns in `mask`, concatenated in column order.
    pub(crate) fn mask_len(&self, mask: u64) -> usize {
        (0..self.columns())
            .filter(|c| mask & (1 << c) != 0)
            .map(|c| self.width(c))
            .sum()
    }
    /// A full mask (every column).
    pub(crate) fn full_mask(&self) -> u64 {
        if self.columns() == 64 {
            u64::MAX
        } else {
            (1u64 << self.columns()) - 1
        }
    }
    /// Copy the columns in `mask` from `row` into `out` (concatenated).
    pub(crate) fn gather(&self, row: &[u8], mask: u64, out: &mut [u8]) {
        let mut o = 0;
        for c in 0..self.columns() {
            if mask & (1 << c) != 0 {
                let r = self.range(c);
                out[o..o + r.len()].copy_from_slice(&row[r.clone()]);
                o += r.len();
            }
        }
    }
    /// Apply concatenated column data for `mask` onto `row`. Returns false if `data` has the
    /// wrong length.
    pub(crate) fn scatter(&self, row: &mut [u8], mask: u64, data: &[u8]) -> bool {
        if self.columns() < 64 && mask >> self.columns() != 0 {
            return false;
        }
        if self.mask_len(mask) != data.len() {
            return false;
        }
        let mut o = 0;
        for c in 0..self.columns() {
            if mask & (1 << c) != 0 {
                let r = self.range(c);
                let n = r.len();
                row[r].copy_from_slice(&data[o..o + n]);
                o += n;
            }
        }
        true
    }
    /// Read column `col` of a row image as a `T`, little-endian from the column's first byte.
    ///
    /// The numeric accessors expect an 8-byte column (`U64`, `I64` or `F64`), read as `u64`,
    /// `i64` or `f64`; no numeric column type is 4 bytes wide, and a `u32` reads the column's
    /// first 4 bytes (all of a `Bytes(4)` column). They panic if `col` does not exist or the
    /// image is too short.
    pub fn get<T: Value>(&self, row: &[u8], col: usize) -> T {
        let r = self.range(col);
        T::read_le(&row[r.start..r.start + T::WIDTH])
    }
    /// Write `v` into column `col` of a row image, as [`Schema::get`] reads it.
    pub fn set<T: Value>(&self, row: &mut [u8], col: usize, v: T) {
        let r = self.range(col);
        row[r.start..r.start + T::WIDTH].copy_from_slice(v.to_le().as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_scatter_round_trip() {
        let s = Schema::new(
            TableDef::new("t", IndexKind::Hash)
                .column("a", ColumnType::U64)
                .column("b", ColumnType::Bytes(3))
                .column("c", ColumnType::F64),
        );
        assert_eq!(s.row_len(), 19);
        let mut row = vec![0u8; 19];
        s.set::<u64>(&mut row, 0, 7);
        row[8..11].copy_from_slice(b"xyz");
        s.set::<f64>(&mut row, 2, 2.5);
        let mask = 0b101;
        let mut out = vec![0u8; s.mask_len(mask)];
        s.gather(&row, mask, &mut out);
        let mut other = vec![0u8; 19];
        assert!(s.scatter(&mut other, mask, &out));
        assert_eq!(s.get::<u64>(&other, 0), 7);
        assert_eq!(s.get::<f64>(&other, 2), 2.5);
        assert_eq!(&other[8..11], &[0, 0, 0]);
        assert!(!s.scatter(&mut other, mask, &out[1..]));
        assert!(!s.scatter(&mut other, 1 << 5, &[]));
    }
}
