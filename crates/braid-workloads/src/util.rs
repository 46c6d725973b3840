//! Helpers shared by the TPC-C, TATP and TPC-B workloads: declaring a table's columns once (the
//! column-index constants and the [`TableDef`] come from the same list, so they cannot drift
//! apart), building row images, the random strings and the non-uniform random function the
//! specifications define, deterministic per-unit seeding, and a parallel loader driver.
//!
//! Determinism of the initial image: the data is cut into *units* (a district, a chunk of items,
//! ...), each generated from its own generator seeded by `(config seed, unit number)`, so the
//! image does not depend on how many threads load it or in which order they take the units.

use std::sync::atomic::{AtomicUsize, Ordering};

use braid_engine::Schema;
use braid_engine::{EngineError, TxError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Declare a table: `table_schema!(mod_name, "table name", IndexKind::X, { COL: ColumnType::..,
/// ... })` makes a module with one `pub const COL: usize` per column (its position) and
/// `pub fn def() -> TableDef` (column names are the lower-cased constant names), each
/// documented.
macro_rules! table_schema {
    ($m:ident, $name:literal, $index:expr, { $($col:ident : $ty:expr),+ $(,)? }) => {
        #[doc = concat!(
            "Columns of the `", $name, "` table: each constant is a column's position in the \
             row (the column's name is the constant's, lower-cased), and [`def`](",
            stringify!($m),
            "::def) the table's definition."
        )]
        #[allow(non_camel_case_types, clippy::upper_case_acronyms, dead_code)]
        pub mod $m {
            use braid_engine::{ColumnType, IndexKind, TableDef};
            enum Position { $($col),+ }
            $(
                #[doc = concat!("Position of this column (`", stringify!($ty), "`).")]
                pub const $col: usize = Position::$col as usize;
            )+
            /// The table's definition.
            pub fn def() -> TableDef {
                TableDef::new($name, $index)$(.column(stringify!($col).to_ascii_lowercase(), $ty))+
            }
        }
    };
}
pub(crate) use table_schema;

/// A row image under construction.
pub(crate) struct Image<'s> {
    schema: &'s Schema,
    buf: Vec<u8>,
}

impl<'s> Image<'s> {
    pub(crate) fn new(schema: &'s Schema) -> Image<'s> {
        Image {
            schema,
            buf: vec![0; schema.row_len()],
        }
    }

    /// Zero every column (to reuse the buffer for the next row).
    pub(crate) fn clear(&mut self) -> &mut Self {
        self.buf.fill(0);
        self
    }

    pub(crate) fn u64(&mut self, col: usize, v: u64) -> &mut Self {
        self.schema.set::<u64>(&mut self.buf, col, v);
        self
    }

    pub(crate) fn i64(&mut self, col: usize, v: i64) -> &mut Self {
        self.schema.set::<i64>(&mut self.buf, col, v);
        self
    }

    pub(crate) fn f64(&mut self, col: usize, v: f64) -> &mut Self {
        self.schema.set::<f64>(&mut self.buf, col, v);
        self
    }

    /// Set a fixed-width column: shorter values are zero-padded, longer ones truncated.
    pub(crate) fn bytes(&mut self, col: usize, v: &[u8]) -> &mut Self {
        let dst = &mut self.buf[self.schema.range(col)];
        let n = v.len().min(dst.len());
        dst[..n].copy_from_slice(&v[..n]);
        dst[n..].fill(0);
        self
    }

    /// A mutable view of a fixed-width column (for generating strings in place).
    pub(crate) fn column_mut(&mut self, col: usize) -> &mut [u8] {
        &mut self.buf[self.schema.range(col)]
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// The bytes of a fixed-width column of a row image.
pub(crate) fn col<'a>(schema: &Schema, img: &'a [u8], col: usize) -> &'a [u8] {
    &img[schema.range(col)]
}

/// A fixed-width string without its zero padding.
pub(crate) fn trim(b: &[u8]) -> &[u8] {
    let n = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &b[..n]
}

/// Whether `needle` occurs in `hay`.
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Fill `out` with a random alphanumeric string whose length is uniform in `lo..=hi` (TPC-C
/// 4.3.2.2 "a-string"); the rest of `out` is zeroed. Returns the length.
pub(crate) fn astring(rng: &mut SmallRng, lo: usize, hi: usize, out: &mut [u8]) -> usize {
    let n = rng.gen_range(lo..=hi).min(out.len());
    for b in &mut out[..n] {
        *b = ALNUM[rng.gen_range(0..ALNUM.len())];
    }
    out[n..].fill(0);
    n
}

/// Fill `out[..len]` with random decimal digits (TPC-C 4.3.2.2 "n-string").
pub(crate) fn nstring(rng: &mut SmallRng, len: usize, out: &mut [u8]) {
    let n = len.min(out.len());
    for b in &mut out[..n] {
        *b = b'0' + rng.gen_range(0..10u8);
    }
    out[n..].fill(0);
}

/// Fill `out` with random upper-case letters (TATP's "random string" of a fixed length).
pub(crate) fn letters(rng: &mut SmallRng, out: &mut [u8]) {
    for b in out {
        *b = b'A' + rng.gen_range(0..26u8);
    }
}

/// The non-uniform random function of TPC-C 2.1.6 (and TATP 3.2, with `c = 0`):
/// `(((random(0, a) | random(x, y)) + c) % (y - x + 1)) + x`.
pub(crate) fn nurand(rng: &mut SmallRng, a: u64, c: u64, x: u64, y: u64) -> u64 {
    let r = (rng.gen_range(0..=a) | rng.gen_range(x..=y)).wrapping_add(c);
    r % (y - x + 1) + x
}

/// A well-mixed 64-bit hash: one splitmix64 step (Steele, Lea and Flood, OOPSLA 2014), the
/// golden-ratio increment and the finaliser, in which every input bit affects every output bit.
/// Load units and key scrambles are derived from it, so it must not change: a seed names the
/// same data in every version.
pub(crate) fn mix(x: u64) -> u64 {
    let mut x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The generator of load unit `unit` (see the module doc).
pub(crate) fn unit_rng(seed: u64, unit: u64) -> SmallRng {
    SmallRng::seed_from_u64(mix(seed ^ mix(unit)))
}

/// The generator of client `index`.
pub(crate) fn client_rng(seed: u64, index: usize) -> SmallRng {
    SmallRng::seed_from_u64(mix(
        seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    ))
}

/// Run `f(unit)` for every unit in `0..units` on up to 8 threads; `f` returns the rows it
/// inserted, which are reported to `progress`. Stops at the first error.
pub(crate) fn run_units(
    units: usize,
    progress: &(dyn Fn(u64) + Sync),
    f: impl Fn(usize) -> Result<u64, EngineError> + Sync,
) -> Result<(), EngineError> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(units.max(1));
    let next = AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<(), EngineError> {
                    loop {
                        if failed.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        let u = next.fetch_add(1, Ordering::Relaxed);
                        if u >= units {
                            return Ok(());
                        }
                        match f(u) {
                            Ok(rows) => progress(rows),
                            Err(e) => {
                                failed.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                })
            })
            .collect();
        let mut result = Ok(());
        for h in handles {
            let r = h
                .join()
                .map_err(|_| EngineError::load("a loader thread panicked"))
                .and_then(|r| r);
            if result.is_ok() {
                result = r;
            }
        }
        result
    })
}

/// The error for a row a transaction needs but does not find (a broken invariant of the
/// workload's data, not an expected outcome).
pub(crate) fn missing(table: braid_engine::TableId, key: u64) -> TxError {
    TxError::NotFound {
        table: table.0,
        key,
    }
}

/// Seconds since the Unix epoch (the "current date and time" clients put in parameters; 0 if
/// the clock is before 1970).
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn mix_is_splitmix64() {
        // splitmix64's first outputs from seed 0 (the reference generator's published values).
        assert_eq!(mix(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut hits = vec![0u32; 1000];
        for _ in 0..100_000 {
            let v = nurand(&mut rng, 255, 123, 0, 999);
            assert!(v <= 999);
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits.iter().min().unwrap();
        // Uniform would give about 100 each; NURand's hot values get several times more.
        assert!(max > 3 * min.max(1), "max {max} min {min}");
    }

    #[test]
    fn strings_have_the_asked_shape() {
        let mut rng = SmallRng::seed_from_u64(2);
        let mut buf = [0xffu8; 24];
        let n = astring(&mut rng, 8, 16, &mut buf);
        assert!((8..=16).contains(&n));
        assert!(buf[..n].iter().all(|b| b.is_ascii_alphanumeric()));
        assert!(buf[n..].iter().all(|&b| b == 0));
        assert_eq!(trim(&buf).len(), n);
        nstring(&mut rng, 16, &mut buf);
        assert!(buf[..16].iter().all(|b| b.is_ascii_digit()));
        assert!(contains(b"xxORIGINALyy", b"ORIGINAL"));
        assert!(!contains(b"ORIGINA", b"ORIGINAL"));
    }

    #[test]
    fn units_run_once_each_and_errors_stop_the_load() {
        let seen: Vec<AtomicUsize> = (0..50).map(|_| AtomicUsize::new(0)).collect();
        let total = std::sync::atomic::AtomicU64::new(0);
        run_units(
            50,
            &|n| {
                total.fetch_add(n, Ordering::Relaxed);
            },
            |u| {
                seen[u].fetch_add(1, Ordering::Relaxed);
                Ok(2)
            },
        )
        .unwrap();
        assert!(seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
        assert_eq!(total.load(Ordering::Relaxed), 100);
        let r = run_units(50, &|_| {}, |u| {
            if u == 7 {
                Err(EngineError::load("unit 7"))
            } else {
                Ok(1)
            }
        });
        assert!(
            matches!(&r, Err(EngineError::Load { source }) if source.to_string() == "unit 7"),
            "{r:?}"
        );
    }
}
