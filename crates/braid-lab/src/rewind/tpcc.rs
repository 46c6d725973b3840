//! TPC-C New-Order over REWIND B+-trees (REWIND §5.3, Fig. 11), compact: the tables New-Order
//! touches, each a B+-tree keyed by a packed u64, with the paper's co-designed layout (an
//! array of ten B+-trees, one per district, for ORDERS, NEW-ORDER and ORDER-LINE), run with a
//! shared log or per-thread logs, and the non-recoverable twin (same code over plain
//! persisted stores) for the overhead ratio.
//!
//! Choices (the paper gives few details): one warehouse (scale factor one, as in the paper);
//! `items` items (100 000 by default) with stock rows; 3 000 customers per district; values
//! carry the columns New-Order reads or writes as u64s; customer and item ids follow NURand;
//! 1% of transactions name an unused item as their last line and roll back (the TPC-C
//! rule). Isolation is the user's in REWIND: a transaction holds its district's lock (which
//! covers the district row and the district's order trees) and the locks of its stock rows'
//! stripes, taken in order, until it returns. The non-recoverable twin checks the items
//! first and skips the transaction instead of rolling back (the paper: "considered
//! non-recoverable and ignored").
//!
//! The paper's naive layout (`naive`): one B+-tree per table, ORDERS, NEW-ORDER and
//! ORDER-LINE keyed by the compound (district, order) key; a transaction then also holds the
//! order tables' lock, since every district's orders share their trees.
//!
//! Run by `braid bench rewind --experiment tpcc` (and `all`): the twin and REWIND over the
//! naive layout, REWIND over the co-designed layout with one shared log and with per-thread
//! logs, on the machine's cores up to the paper's ten threads.

use std::sync::Mutex;
use std::time::Instant;

use braid_rewind::btree::BTree;
use braid_rewind::{LogLayout, LogMode, Mem, Policy, Pool, PoolConfig, RawMem, RewindError};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, region};

const DISTRICTS: usize = 10;
const CUSTOMERS: u64 = 3000;
const STRIPES: usize = 1024;
const NODE: usize = 512;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpccConfig {
    pub backing: Backing,
    pub items: u64,
    pub threads: usize,
    /// New-Order transactions per thread.
    pub transactions_per_thread: u64,
    /// `None`: the non-recoverable twin.
    pub pool: Option<PoolConfig>,
    pub seed: u64,
    /// Emulated NVM write latency per persisted line, ns.
    pub write_delay_ns: u64,
    /// The naive layout: one tree per order table with compound keys (see the module docs).
    #[serde(default)]
    pub naive: bool,
}

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig {
            backing: Backing::default(),
            items: 100_000,
            threads: 2,
            transactions_per_thread: 20_000,
            pool: Some(
                PoolConfig::default()
                    .layout(LogLayout::Batch)
                    .policy(Policy::NoForce)
                    .logs(LogMode::Shared),
            ),
            seed: 1,
            write_delay_ns: super::NVM_WRITE_NS,
            naive: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TpccResult {
    pub config: TpccConfig,
    pub committed: u64,
    pub rolled_back: u64,
    pub seconds: f64,
    /// Committed New-Order transactions per minute.
    pub tpm: f64,
    /// Sum of the order-line amounts of committed orders (consistency check).
    pub order_lines: u64,
}

/// The database: table handles (tree headers) and the user's locks.
struct Db {
    warehouse: BTree,
    district: BTree,
    customer: BTree,
    item: BTree,
    stock: BTree,
    orders: Vec<BTree>,
    new_order: Vec<BTree>,
    order_line: Vec<BTree>,
    district_locks: Vec<Mutex<()>>,
    stock_locks: Vec<Mutex<()>>,
    /// The naive layout: one tree per order table, keys carry the district, and this lock
    /// guards those shared trees.
    naive: Option<Mutex<()>>,
}

fn v(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn w_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[8 * i..8 * i + 8]);
    u64::from_le_bytes(a)
}

fn nurand(rng: &mut SmallRng, a: u64, x: u64, y: u64, c: u64) -> u64 {
    (((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1)) + x
}

fn load(pool: &Pool, items: u64, naive: bool, rng: &mut SmallRng) -> Result<Db, RewindError> {
    let mut m = RawMem::new(pool);
    let mut mk = |vs: usize| BTree::create(&mut m, NODE, vs);
    let warehouse = mk(16)?;
    let district = mk(24)?;
    let customer = mk(32)?;
    let item = mk(32)?;
    let stock = mk(32)?;
    let mut orders = Vec::new();
    let mut new_order = Vec::new();
    let mut order_line = Vec::new();
    for _ in 0..if naive { 1 } else { DISTRICTS } {
        orders.push(mk(32)?);
        new_order.push(mk(8)?);
        order_line.push(mk(48)?);
    }
    let mut m = RawMem::new(pool);
    warehouse.insert(&mut m, 1, &v(&[rng.gen_range(0..2000), 0]))?;
    for d in 1..=DISTRICTS as u64 {
        district.insert(&mut m, d, &v(&[rng.gen_range(0..2000), 3001, 0]))?;
        for c in 1..=CUSTOMERS {
            customer.insert(&mut m, d << 32 | c, &v(&[rng.gen_range(0..5000), 1, 0, 0]))?;
        }
    }
    for i in 1..=items {
        item.insert(&mut m, i, &v(&[rng.gen_range(100..10000), i, 0, 0]))?;
        stock.insert(&mut m, i, &v(&[rng.gen_range(10..=100), 0, 0, 0]))?;
    }
    Ok(Db {
        warehouse,
        district,
        customer,
        item,
        stock,
        orders,
        new_order,
        order_line,
        district_locks: (0..DISTRICTS).map(|_| Mutex::new(())).collect(),
        stock_locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        naive: naive.then(|| Mutex::new(())),
    })
}

struct Order {
    d: u64,
    c: u64,
    lines: Vec<(u64, u64)>,
}

/// The body of New-Order; `Err(Invalid)` when an item is unused (the 1% rollback).
fn new_order(db: &Db, m: &mut impl Mem, o: &Order) -> Result<u64, RewindError> {
    let mut buf = [0u8; 48];
    db.warehouse.get(m, 1, &mut buf[..16]);
    let w_tax = w_at(&buf, 0);
    db.district.get(m, o.d, &mut buf[..24]);
    let (d_tax, o_id) = (w_at(&buf, 0), w_at(&buf, 1));
    db.district
        .update(m, o.d, &v(&[d_tax, o_id + 1, w_at(&buf, 2)]))?;
    db.customer.get(m, o.d << 32 | o.c, &mut buf[..32]);
    let discount = w_at(&buf, 0);
    // The co-designed layout: district d's trees, keyed by the order; the naive one: the one
    // tree of each table, keyed by (district, order).
    let (di, key) = if db.naive.is_some() {
        (0, o.d << 32 | o_id)
    } else {
        ((o.d - 1) as usize, o_id)
    };
    let now = o_id;
    db.orders[di].insert(m, key, &v(&[o.c, now, o.lines.len() as u64, 1]))?;
    db.new_order[di].insert(m, key, &v(&[o.c]))?;
    let mut total = 0;
    for (n, &(i, qty)) in o.lines.iter().enumerate() {
        if !db.item.get(m, i, &mut buf[..32]) {
            return Err(RewindError::user_abort(format!("item {i} not found")));
        }
        let price = w_at(&buf, 0);
        db.stock.get(m, i, &mut buf[..32]);
        let (mut q, ytd, cnt) = (w_at(&buf, 0), w_at(&buf, 1), w_at(&buf, 2));
        q = if q >= qty + 10 { q - qty } else { q + 91 - qty };
        db.stock
            .update(m, i, &v(&[q, ytd + qty, cnt + 1, w_at(&buf, 3)]))?;
        let amount = qty * price * (10_000 + w_tax + d_tax) * (10_000 - discount) / 100_000_000;
        total += amount;
        db.order_line[di].insert(
            m,
            key << 4 | n as u64,
            &v(&[i, 1, qty, amount, 0, i.wrapping_mul(0x9E37_79B9)]),
        )?;
    }
    Ok(total)
}

/// Run New-Order (see the module docs).
pub fn run(cfg: &TpccConfig) -> anyhow::Result<TpccResult> {
    let total_tx = cfg.transactions_per_thread * cfg.threads as u64;
    let bytes =
        ((cfg.items * 400 + total_tx * 4000 + (40 << 20)) as usize).next_multiple_of(1 << 20);
    let pcfg = cfg.pool.unwrap_or_default();
    let mut pcfg_sized = pcfg;
    if cfg.pool.is_some() {
        pcfg_sized.log_capacity = pcfg.log_capacity.max(1 << 16);
    }
    let reg = region(&cfg.backing, bytes, cfg.write_delay_ns)?;
    let pool = Pool::create_in(reg.region(), pcfg_sized)?;
    let mut rng = SmallRng::seed_from_u64(cfg.seed);
    let db = load(&pool, cfg.items, cfg.naive, &mut rng)?;
    let recoverable = cfg.pool.is_some();
    let start = Instant::now();
    let results: Vec<anyhow::Result<(u64, u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let pool = pool.clone();
                let db = &db;
                s.spawn(move || -> Result<(u64, u64, u64), RewindError> {
                    let mut rng = SmallRng::seed_from_u64(cfg.seed * 1000 + t as u64);
                    let (mut ok, mut rb, mut amount) = (0, 0, 0);
                    for _ in 0..cfg.transactions_per_thread {
                        let d = rng.gen_range(1..=DISTRICTS as u64);
                        let c = nurand(&mut rng, 1023, 1, CUSTOMERS, 259);
                        let n = rng.gen_range(5..=15);
                        let mut lines: Vec<(u64, u64)> = (0..n)
                            .map(|_| {
                                (
                                    nurand(&mut rng, 8191, 1, cfg.items, 7911),
                                    rng.gen_range(1..=10),
                                )
                            })
                            .collect();
                        let rollback = rng.gen_range(0..100) == 0;
                        if rollback && let Some(l) = lines.last_mut() {
                            l.0 = cfg.items + 1;
                        }
                        let o = Order { d, c, lines };
                        let _dl = db.district_locks[(d - 1) as usize]
                            .lock()
                            .unwrap_or_else(|e| e.into_inner());
                        let mut stripes: Vec<usize> =
                            o.lines.iter().map(|&(i, _)| i as usize % STRIPES).collect();
                        stripes.sort_unstable();
                        stripes.dedup();
                        let _tl = db
                            .naive
                            .as_ref()
                            .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()));
                        let _sl: Vec<_> = stripes
                            .iter()
                            .map(|&s| db.stock_locks[s].lock().unwrap_or_else(|e| e.into_inner()))
                            .collect();
                        if recoverable {
                            match pool.transaction(|tx| new_order(db, tx, &o)) {
                                Ok(a) => {
                                    ok += 1;
                                    amount += a;
                                }
                                Err(RewindError::UserAbort { .. }) => rb += 1,
                                Err(e) => return Err(e),
                            }
                        } else {
                            let mut m = RawMem::new(&pool);
                            let mut buf = [0u8; 32];
                            if o.lines.iter().all(|&(i, _)| db.item.get(&m, i, &mut buf)) {
                                amount += new_order(db, &mut m, &o)?;
                                ok += 1;
                            } else {
                                rb += 1;
                            }
                        }
                    }
                    Ok((ok, rb, amount))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r.map_err(anyhow::Error::from),
                Err(_) => Err(anyhow::anyhow!("a TPC-C thread panicked")),
            })
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let (mut committed, mut rolled_back, mut order_lines) = (0, 0, 0);
    for r in results {
        let (a, b, c) = r?;
        committed += a;
        rolled_back += b;
        order_lines += c;
    }
    // Consistency: every committed order is in its district's trees.
    let m = RawMem::new(&pool);
    let orders: u64 = db.orders.iter().map(|t| t.len(&m)).sum();
    let new_orders: u64 = db.new_order.iter().map(|t| t.len(&m)).sum();
    if orders != committed || new_orders != committed {
        anyhow::bail!(
            "{committed} committed New-Orders but {orders} orders and {new_orders} new-orders"
        );
    }
    Ok(TpccResult {
        config: cfg.clone(),
        committed,
        rolled_back,
        seconds,
        tpm: committed as f64 * 60.0 / seconds,
        order_lines,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// 300 New-Orders on 2 threads over 2,000 items in DRAM, with `pool` (None: the twin).
    fn small(pool: Option<PoolConfig>, naive: bool) -> TpccResult {
        run(&TpccConfig {
            backing: Backing::Dram,
            items: 2000,
            threads: 2,
            transactions_per_thread: 150,
            pool,
            seed: 3,
            write_delay_ns: 0,
            naive,
        })
        .unwrap()
    }

    #[test]
    fn new_order_small_every_log_mode() {
        for pool in [
            None,
            Some(
                PoolConfig::default()
                    .logs(LogMode::Shared)
                    .log_capacity(4096)
                    .bucket_records(64),
            ),
            Some(
                PoolConfig::default()
                    .logs(LogMode::PerThread(2))
                    .layout(LogLayout::Optimized)
                    .policy(Policy::Force)
                    .log_capacity(4096)
                    .bucket_records(64),
            ),
        ] {
            let r = small(pool, false);
            assert_eq!(r.committed + r.rolled_back, 300);
            assert!(r.rolled_back < 20);
        }
    }

    #[test]
    fn new_order_naive_layout_twin_and_rewind() {
        for pool in [None, Some(PoolConfig::default())] {
            let r = small(pool, true);
            assert_eq!(r.committed + r.rolled_back, 300);
            assert!(r.committed > 250);
        }
    }
}
