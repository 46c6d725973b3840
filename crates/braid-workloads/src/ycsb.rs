//! YCSB as the Taurus paper runs it (Sec. 5.1): one table of 10 columns x 100 bytes, 1M rows,
//! keys drawn from a Zipf distribution (theta 0.6), 2 accesses per transaction, each a read with
//! probability 0.5 and otherwise an update of one column. Every parameter is configurable;
//! [`YcsbUpdate::Row`] updates (and so logs) the whole row instead, as the Taurus paper's own
//! code (DBx1000) does, so that a comparison with it logs the same bytes, with new bytes
//! generated for every column; [`YcsbUpdate::Increment`] does DBx1000_logging's own update
//! (`benchmarks/ycsb_txn.cpp`, `ycsb_txn_man::run_txn`): add 1 to the first byte of every
//! column of the row as it is and write (and log) the whole row, so that a comparison with it
//! also does the same work per update. An increment depends on the row it finds, as TPC-B's
//! and TPC-C's updates do: command logging's replay re-executes the calls of conflicting
//! transactions in their commit order, so each finds the row it found when it ran (the crate's
//! recovery round-trip tests check it).
//!
//! A comparison with DBx1000 also draws the transactions before the run, as DBx1000 does
//! (`Query_thd::init` in its `system/query.cpp`; see [`crate::Pregenerated`]), so that neither
//! the Zipf sampler nor the rest of a transaction's draw is timed.
//!
//! Each transaction is the stored procedure [`YCSB_TXN`] whose parameters list the accesses, so
//! it runs under data logging (the updated column's after-image is logged) and command logging
//! (the call is logged) alike.
//!
//! `marked` mode exists for crash tests: an update rewrites the whole row with a value that
//! names its writer ([`row_image`]: the writing transaction's id and the key), and every read
//! records which writer it observed, so an oracle can check durability, atomicity and closure
//! after recovery from the rows alone. Its transactions cannot be drawn ahead
//! ([`TxnSource::check_pregenerate`]): the crash tests read each one's written keys as it is
//! drawn.

use std::cell::RefCell;

use braid_engine::{
    Catalog, EngineError, Loader, ParamReader, Params, Procedures, TableId, TxError,
};
use braid_engine::{ColumnType, IndexKind, TableDef};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde::{Deserialize, Serialize};

use crate::client::{OnConflict, RetryingClient, TxnSource};
use crate::error::ConsistencyError;
use crate::oltp;
use crate::{Client, Workload};

/// The procedure id of a YCSB transaction.
pub const YCSB_TXN: u32 = 1;
/// The one table.
pub const TABLE: TableId = TableId(0);

/// YCSB parameters; the defaults are the Taurus paper's (see the module doc). Built from
/// [`YcsbConfig::default`] with the setters (or by assigning fields):
/// `YcsbConfig::default().rows(10_000).theta(0.9)`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct YcsbConfig {
    /// Rows in the table, keys `0..rows`.
    pub rows: u64,
    /// Columns per row (1 to 64).
    pub columns: usize,
    /// Bytes per column.
    pub column_bytes: usize,
    /// Zipf exponent of the key distribution; 0 draws keys uniformly.
    pub theta: f64,
    /// Accesses per transaction, to distinct keys (at most `rows`).
    pub accesses: usize,
    /// Probability that an access is a read; otherwise it updates (see `update`).
    pub read_fraction: f64,
    /// What an update writes: one column (the paper's text), or the whole row (its code),
    /// generated or incremented.
    pub update: YcsbUpdate,
    /// Crash-test mode (see the module doc).
    pub marked: bool,
}

/// What a YCSB update writes (see the module doc).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::Display,
    strum::EnumString,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum YcsbUpdate {
    /// One column, drawn per access (Taurus Sec. 5.1): its after-image is what data logging logs.
    #[default]
    Column,
    /// Every column of the row, as DBx1000 updates and logs it, each column's bytes generated
    /// anew (an xorshift step per 8 bytes, from the access's seed).
    Row,
    /// Every column of the row as DBx1000_logging's `run_txn` updates it: 1 added to the first
    /// byte of each column of the row's current image (wrapping), the whole row written and
    /// logged. The access's seed and column are drawn and passed all the same (the parameters
    /// are those of the other modes) and not used.
    Increment,
}

impl Default for YcsbConfig {
    fn default() -> Self {
        YcsbConfig {
            rows: 1_000_000,
            columns: 10,
            column_bytes: 100,
            theta: 0.6,
            accesses: 2,
            read_fraction: 0.5,
            update: YcsbUpdate::Column,
            marked: false,
        }
    }
}

impl YcsbConfig {
    /// [`YcsbConfig::rows`] set to `rows`.
    pub fn rows(mut self, rows: u64) -> YcsbConfig {
        self.rows = rows;
        self
    }
    /// [`YcsbConfig::columns`] set to `columns`.
    pub fn columns(mut self, columns: usize) -> YcsbConfig {
        self.columns = columns;
        self
    }
    /// [`YcsbConfig::column_bytes`] set to `bytes`.
    pub fn column_bytes(mut self, bytes: usize) -> YcsbConfig {
        self.column_bytes = bytes;
        self
    }
    /// [`YcsbConfig::theta`] set to `theta`.
    pub fn theta(mut self, theta: f64) -> YcsbConfig {
        self.theta = theta;
        self
    }
    /// [`YcsbConfig::accesses`] set to `accesses`.
    pub fn accesses(mut self, accesses: usize) -> YcsbConfig {
        self.accesses = accesses;
        self
    }
    /// [`YcsbConfig::read_fraction`] set to `fraction`.
    pub fn read_fraction(mut self, fraction: f64) -> YcsbConfig {
        self.read_fraction = fraction;
        self
    }
    /// [`YcsbConfig::update`] set to `update`.
    pub fn update(mut self, update: YcsbUpdate) -> YcsbConfig {
        self.update = update;
        self
    }
    /// [`YcsbConfig::marked`] set to `on`.
    pub fn marked(mut self, on: bool) -> YcsbConfig {
        self.marked = on;
        self
    }
}

/// One observed read in marked mode: the key and the transaction whose value was read
/// (0 = the initial image).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// The key read.
    pub key: u64,
    /// Id of the transaction that wrote the value read (0: the initial image).
    pub writer: u64,
}

thread_local! {
    static OBSERVED: RefCell<Vec<Observed>> = const { RefCell::new(Vec::new()) };
}

/// Take the reads this thread observed in marked mode since the last call.
pub fn take_observed() -> Vec<Observed> {
    OBSERVED.with(|o| std::mem::take(&mut *o.borrow_mut()))
}

/// Deterministic filler for column bytes: one xorshift step per 8 bytes, little-endian, the
/// last step cut to what is left. Whole words are stored as words (a short copy of a
/// variable length per word would be a `memcpy` call each, and command replay runs this for
/// every column an update writes).
fn pattern(seed: u64, out: &mut [u8]) {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut step = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x.to_le_bytes()
    };
    let mut words = out.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&step());
    }
    let rest = words.into_remainder();
    if !rest.is_empty() {
        let b = step();
        rest.copy_from_slice(&b[..rest.len()]);
    }
}

/// The full row image written by transaction `writer` (0 = initial load) for `key` in marked
/// mode; also the initial image in every mode.
pub fn row_image(cfg: &YcsbConfig, writer: u64, key: u64) -> Vec<u8> {
    let mut img = vec![0u8; cfg.columns * cfg.column_bytes];
    pattern(writer.wrapping_mul(0x100_0000_01B3) ^ key, &mut img);
    if img.len() >= 16 {
        img[0..8].copy_from_slice(&writer.to_le_bytes());
        img[8..16].copy_from_slice(&key.to_le_bytes());
    }
    img
}

/// The writer named by a marked row image.
pub fn writer_of(img: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&img[0..8]);
    u64::from_le_bytes(b)
}

/// The YCSB workload.
#[derive(Debug, Clone)]
pub struct Ycsb {
    /// Its parameters.
    pub cfg: YcsbConfig,
}

impl Ycsb {
    /// The workload with these parameters (not validated).
    pub fn new(cfg: YcsbConfig) -> Ycsb {
        Ycsb { cfg }
    }

    fn table_def(&self) -> TableDef {
        let mut t = TableDef::new("usertable", IndexKind::Hash);
        for c in 0..self.cfg.columns {
            t = t.column(
                format!("field{c}"),
                ColumnType::Bytes(self.cfg.column_bytes as u32),
            );
        }
        t
    }
}

/// One access of a transaction.
#[derive(Debug, Clone, Copy)]
struct AccessParam {
    key: u64,
    write: bool,
    column: u8,
    seed: u64,
}

fn encode_params(accesses: &[AccessParam], p: &mut Params) {
    p.clear();
    p.put::<u32>(accesses.len() as u32);
    for a in accesses {
        p.put::<u64>(a.key)
            .put::<u32>(u32::from(a.write) | (u32::from(a.column) << 8))
            .put::<u64>(a.seed);
    }
}

/// One access of [`encode_params`]'s encoding: key, flags (write in bit 0, column in bits
/// 8-15) and seed.
fn read_access(r: &mut ParamReader<'_>) -> Result<(u64, u32, u64), TxError> {
    Ok((r.get::<u64>()?, r.get::<u32>()?, r.get::<u64>()?))
}

/// The body of [`YCSB_TXN`].
fn run_txn(cfg: &YcsbConfig, tx: &mut braid_engine::Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let n = r.get::<u32>()?;
    let width = cfg.column_bytes;
    let mut sum = 0u64;
    for _ in 0..n {
        let (key, flags, seed) = read_access(&mut r)?;
        let write = flags & 1 != 0;
        let column = ((flags >> 8) & 0xff) as usize;
        if !write {
            let got = tx.read(TABLE, key, |img| {
                if cfg.marked {
                    writer_of(img)
                } else {
                    u64::from(img[column * width])
                }
            })?;
            match got {
                Some(v) => {
                    if cfg.marked && !tx.is_replay() {
                        OBSERVED.with(|o| o.borrow_mut().push(Observed { key, writer: v }));
                    }
                    sum = sum.wrapping_add(v);
                }
                None => {
                    return Err(TxError::NotFound {
                        table: TABLE.0,
                        key,
                    });
                }
            }
        } else if cfg.marked {
            let img = row_image(cfg, tx.id(), key);
            let found = tx.update(TABLE, key, |w| {
                for c in 0..cfg.columns {
                    w.set_bytes(c, &img[c * width..(c + 1) * width]);
                }
            })?;
            if !found {
                return Err(TxError::NotFound {
                    table: TABLE.0,
                    key,
                });
            }
        } else {
            let found = match cfg.update {
                YcsbUpdate::Increment => tx.update(TABLE, key, |w| {
                    // The private image starts as the row's current one.
                    for c in 0..cfg.columns {
                        if let Some(b) = w.column_mut(c).first_mut() {
                            *b = b.wrapping_add(1);
                        }
                    }
                })?,
                YcsbUpdate::Column | YcsbUpdate::Row => {
                    let columns = match cfg.update {
                        YcsbUpdate::Column => column..column + 1,
                        _ => 0..cfg.columns,
                    };
                    // Each column's bytes are generated straight into the private image.
                    tx.update(TABLE, key, |w| {
                        for c in columns {
                            let seed = seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                            pattern(seed, w.column_mut(c));
                        }
                    })?
                }
            };
            if !found {
                return Err(TxError::NotFound {
                    table: TABLE.0,
                    key,
                });
            }
        }
    }
    std::hint::black_box(sum);
    Ok(())
}

impl Workload for Ycsb {
    fn name(&self) -> &str {
        "ycsb"
    }

    fn params(&self) -> serde_json::Value {
        oltp::params_json(&self.cfg)
    }

    fn catalog(&self) -> Catalog {
        oltp::catalog([self.table_def()])
    }

    fn procedures(&self) -> Procedures {
        let mut p = Procedures::new();
        let cfg = self.cfg.clone();
        p.register(YCSB_TXN, "ycsb", move |tx, params| {
            run_txn(&cfg, tx, params)
        });
        p
    }

    fn initial_rows(&self) -> u64 {
        self.cfg.rows
    }

    fn load(
        &self,
        loader: &Loader<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(), EngineError> {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8) as u64;
        let rows = self.cfg.rows;
        let per = rows.div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || -> Result<(), EngineError> {
                        let lo = t * per;
                        let hi = ((t + 1) * per).min(rows);
                        let mut done = 0;
                        for key in lo..hi {
                            loader.insert(TABLE, key, &row_image(&self.cfg, 0, key))?;
                            done += 1;
                            if done == 65536 {
                                progress(done);
                                done = 0;
                            }
                        }
                        progress(done);
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join()
                    .map_err(|_| EngineError::load("a loader thread panicked"))??;
            }
            Ok(())
        })
    }

    fn client(&self, index: usize, seed: u64) -> Box<dyn Client> {
        Box::new(self.ycsb_client(index, seed))
    }

    fn check(&self, db: &braid_engine::Db) -> Result<(), ConsistencyError> {
        let n = db.rows(TABLE) as u64;
        if n != self.cfg.rows {
            return Err(ConsistencyError {
                workload: "ycsb",
                problems: vec![format!(
                    "usertable has {n} rows, expected {}",
                    self.cfg.rows
                )],
            });
        }
        Ok(())
    }
}

impl Ycsb {
    /// A concrete client (the crash tests drive it step by step).
    pub fn ycsb_client(&self, index: usize, seed: u64) -> YcsbClient {
        let rng =
            SmallRng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let zipf = if self.cfg.theta > 0.0 && self.cfg.rows > 1 {
            Zipf::new(self.cfg.rows, self.cfg.theta).ok()
        } else {
            None
        };
        let source = YcsbSource {
            cfg: self.cfg.clone(),
            rng,
            zipf,
            accesses: Vec::new(),
        };
        YcsbClient::new(source, OnConflict::Redraw)
    }
}

/// Generates and runs YCSB transactions (those of [`YcsbSource`]); after a retryable conflict
/// the next call draws a new transaction.
pub type YcsbClient = RetryingClient<YcsbSource>;

/// Draws YCSB transactions.
pub struct YcsbSource {
    cfg: YcsbConfig,
    rng: SmallRng,
    zipf: Option<Zipf<f64>>,
    accesses: Vec<AccessParam>,
}

impl std::fmt::Debug for YcsbSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("YcsbSource")
            .field("accesses", &self.accesses)
            .finish()
    }
}

impl YcsbSource {
    fn key(&mut self) -> u64 {
        match &self.zipf {
            // Zipf yields 1..=n with 1 the most popular; spread the hot keys over the key space.
            Some(z) => {
                let rank = (z.sample(&mut self.rng) as u64).clamp(1, self.cfg.rows) - 1;
                rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) % self.cfg.rows
            }
            None => self.rng.gen_range(0..self.cfg.rows),
        }
    }

    /// Keys the last generated transaction writes.
    pub fn written_keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.accesses.iter().filter(|a| a.write).map(|a| a.key)
    }
}

impl TxnSource for YcsbSource {
    /// The next transaction's accesses (distinct keys).
    fn next_txn(&mut self, params: &mut Params) -> u32 {
        self.accesses.clear();
        let n = self.cfg.accesses.min(self.cfg.rows as usize);
        while self.accesses.len() < n {
            let key = self.key();
            if self.accesses.iter().any(|a| a.key == key) {
                continue;
            }
            let write = !self.rng.gen_bool(self.cfg.read_fraction.clamp(0.0, 1.0));
            let column = self.rng.gen_range(0..self.cfg.columns) as u8;
            let seed = self.rng.r#gen();
            self.accesses.push(AccessParam {
                key,
                write,
                column,
                seed,
            });
        }
        encode_params(&self.accesses, params);
        YCSB_TXN
    }

    /// The keys of the transaction's accesses.
    fn rows(&self, proc_id: u32, params: &[u8], row: &mut dyn FnMut(TableId, u64)) {
        if proc_id != YCSB_TXN {
            return;
        }
        let mut r = ParamReader::new(params);
        let Ok(n) = r.get::<u32>() else { return };
        for _ in 0..n {
            let Ok((key, _, _)) = read_access(&mut r) else {
                return;
            };
            row(TABLE, key);
        }
    }

    fn check_pregenerate(&self) -> Result<(), crate::PregenerateError> {
        if self.cfg.marked {
            return Err(crate::PregenerateError::Refused(
                "marked YCSB (the crash tests' mode) reports each transaction's written keys as \
                 it is drawn",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows a drawn transaction names for the prefetch are its accesses' keys, in order.
    #[test]
    fn rows_name_the_accesses_keys() {
        let w = Ycsb::new(YcsbConfig::default().rows(1000).accesses(4));
        let mut client = w.ycsb_client(0, 3);
        for _ in 0..50 {
            let (proc_id, params) = client.generate();
            let params = params.to_vec();
            let mut named = Vec::new();
            client.rows(proc_id, &params, &mut |t, k| named.push((t, k)));
            let keys: Vec<_> = client.accesses.iter().map(|a| (TABLE, a.key)).collect();
            assert_eq!(named, keys);
            assert_eq!(named.len(), 4);
        }
        let mut none = Vec::new();
        client.rows(YCSB_TXN + 1, &[], &mut |t, k| none.push((t, k)));
        client.rows(YCSB_TXN, &[1, 2], &mut |t, k| none.push((t, k)));
        assert!(none.is_empty());
    }

    /// The filler as first written (a word per chunk of 8, the last chunk cut): the bytes of
    /// logged and recovered rows must not change with its implementation.
    fn reference(seed: u64, out: &mut [u8]) {
        let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
        for chunk in out.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = x.to_le_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
    }

    #[test]
    fn pattern_bytes_are_unchanged() {
        for len in [0, 1, 7, 8, 9, 100, 1000, 1003] {
            for seed in [0, 1, 42, u64::MAX] {
                let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
                pattern(seed, &mut a);
                reference(seed, &mut b);
                assert_eq!(a, b, "len {len} seed {seed}");
            }
        }
    }
}
