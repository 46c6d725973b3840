//! Ordered-index candidates under TPC-C's access patterns, two threads:
//!
//! - `new_order_fifo`: the New-Order queue. Each thread owns ten district queues (TPC-C's home
//!   warehouse per client) of 900 keys `district << 32 | o`; one operation inserts at the high
//!   end of a district, finds its lowest key with a range scan, counts `[lo, lowest]` again (the
//!   phantom recount at commit) and removes it, as New-Order and Delivery do.
//! - `point_get`: gets of random keys among 1M keys laid out like ORDER-LINE's.
//!
//! Candidates: `table` (the engine's [`Table`] as built, i.e. whatever ordered index it uses),
//! `scc` (`scc::TreeIndex`, the engine's ordered index before the shards, without the scan
//! workaround the table then had),
//! `skipmap` (`crossbeam_skiplist::SkipMap`), `concurrent_map` (`concurrent_map::ConcurrentMap`,
//! a lock-free copy-on-write B+-tree, one clone per thread since it is not `Sync`) and
//! `rwlock_btree` (64 `parking_lot::RwLock<BTreeMap>` shards chosen by the key's bits above 32,
//! the district prefix of TPC-C's queue keys).
//!
//! Each figure is wall time over operations with both threads running (the inverse of their
//! combined throughput). Run: `cargo bench -p braid-engine --bench ordered_index`.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Included};
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_engine::testing::Table;
use braid_engine::testing::{Row, RowState};
use braid_engine::{ColumnType, IndexKind, TableDef};
use criterion::{Criterion, criterion_group, criterion_main};
use parking_lot::RwLock;

type V = Arc<Row>;

fn row() -> V {
    Arc::new(Row::new(vec![0u8; 24].into_boxed_slice(), RowState::Live))
}

/// What the benchmarks need of an ordered index.
trait Ordered: Send + Sync {
    /// A handle for one thread (clones a map that is not `Sync`).
    type Local<'a>: Local + Send
    where
        Self: 'a;
    fn local(&self) -> Self::Local<'_>;
}

trait Local {
    fn insert(&self, k: u64, v: V);
    fn remove(&self, k: u64);
    fn get(&self, k: u64) -> Option<V>;
    /// Visit `[lo, hi]` in key order until `f` returns false.
    fn range(&self, lo: Bound<u64>, hi: Bound<u64>, f: &mut dyn FnMut(u64, &V) -> bool);
}

impl Ordered for Table {
    type Local<'a> = &'a Table;
    fn local(&self) -> &Table {
        self
    }
}
impl Local for &Table {
    fn insert(&self, k: u64, v: V) {
        let _ = Table::insert(self, k, v);
    }
    fn remove(&self, k: u64) {
        Table::remove(self, k);
    }
    fn get(&self, k: u64) -> Option<V> {
        Table::get(self, k)
    }
    fn range(&self, lo: Bound<u64>, hi: Bound<u64>, f: &mut dyn FnMut(u64, &V) -> bool) {
        Table::range(self, lo, hi, f);
    }
}

struct Scc(scc::TreeIndex<u64, V>);
impl Ordered for Scc {
    type Local<'a> = &'a Scc;
    fn local(&self) -> &Scc {
        self
    }
}
impl Local for &Scc {
    fn insert(&self, k: u64, v: V) {
        let _ = self.0.insert_sync(k, v);
    }
    fn remove(&self, k: u64) {
        self.0.remove_sync(&k);
    }
    fn get(&self, k: u64) -> Option<V> {
        self.0.peek_with(&k, |_, v| v.clone())
    }
    fn range(&self, lo: Bound<u64>, hi: Bound<u64>, f: &mut dyn FnMut(u64, &V) -> bool) {
        let guard = scc::Guard::new();
        for (k, v) in self.0.range((lo, hi), &guard) {
            if !f(*k, v) {
                return;
            }
        }
    }
}

struct Skip(crossbeam_skiplist::SkipMap<u64, V>);
impl Ordered for Skip {
    type Local<'a> = &'a Skip;
    fn local(&self) -> &Skip {
        self
    }
}
impl Local for &Skip {
    fn insert(&self, k: u64, v: V) {
        self.0.insert(k, v);
    }
    fn remove(&self, k: u64) {
        self.0.remove(&k);
    }
    fn get(&self, k: u64) -> Option<V> {
        self.0.get(&k).map(|e| e.value().clone())
    }
    fn range(&self, lo: Bound<u64>, hi: Bound<u64>, f: &mut dyn FnMut(u64, &V) -> bool) {
        for e in self.0.range((lo, hi)) {
            if !f(*e.key(), e.value()) {
                return;
            }
        }
    }
}

struct Cmap(concurrent_map::ConcurrentMap<u64, V>);
// The shared copy is only cloned (under the bench's own thread scope), never used from two
// threads at once.
struct CmapShared(parking_lot::Mutex<concurrent_map::ConcurrentMap<u64, V>>);
impl Ordered for CmapShared {
    type Local<'a> = Cmap;
    fn local(&self) -> Cmap {
        Cmap(self.0.lock().clone())
    }
}
impl Local for Cmap {
    fn insert(&self, k: u64, v: V) {
        self.0.insert(k, v);
    }
    fn remove(&self, k: u64) {
        self.0.remove(&k);
    }
    fn get(&self, k: u64) -> Option<V> {
        self.0.get(&k)
    }
    fn range(&self, lo: Bound<u64>, hi: Bound<u64>, f: &mut dyn FnMut(u64, &V) -> bool) {
        for (k, v) in self.0.range((lo, hi)) {
            if !f(k, &v) {
                return;
            }
        }
    }
}

const SHARDS: usize = 64;
struct Sharded(Vec<RwLock<BTreeMap<u64, V>>>);
impl Sharded {
    fn shard(&self, k: u64) -> &RwLock<BTreeMap<u64, V>> {
        &self.0[(k >> 32) as usize % SHARDS]
    }
}
impl Ordered for Sharded {
    type Local<'a> = &'a Sharded;
    fn local(&self) -> &Sharded {
        self
    }
}
impl Local for &Sharded {
    fn insert(&self, k: u64, v: V) {
        self.shard(k).write().insert(k, v);
    }
    fn remove(&self, k: u64) {
        self.shard(k).write().remove(&k);
    }
    fn get(&self, k: u64) -> Option<V> {
        self.shard(k).read().get(&k).cloned()
    }
    fn range(&self, lo: Bound<u64>, hi: Bound<u64>, f: &mut dyn FnMut(u64, &V) -> bool) {
        // The benchmarks only scan within one 2^32 prefix.
        let start = match lo {
            Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => 0,
        };
        for (k, v) in self.shard(start).read().range((lo, hi)) {
            if !f(*k, v) {
                return;
            }
        }
    }
}

const DISTRICTS: u64 = 10;
const QUEUE: u64 = 900;

/// Run `per_thread(thread, local, ops)` on two threads; the elapsed time of the slower.
fn two_threads<M: Ordered>(
    m: &M,
    iters: u64,
    per_thread: impl Fn(u64, &M::Local<'_>, u64) + Sync,
) -> Duration {
    let locals: Vec<_> = (0..2).map(|_| m.local()).collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for (t, l) in locals.into_iter().enumerate() {
            let per_thread = &per_thread;
            s.spawn(move || per_thread(t as u64, &l, iters.div_ceil(2)));
        }
    });
    start.elapsed()
}

fn fifo<M: Ordered>(c: &mut Criterion, name: &str, m: M) {
    // Thread t owns districts t*10+1 ..= t*10+10; `next[d]` is the next order id to insert.
    let l = m.local();
    for d in 1..=2 * DISTRICTS {
        for o in 0..QUEUE {
            l.insert(d << 32 | o, row());
        }
    }
    drop(l);
    let next: Vec<std::sync::atomic::AtomicU64> = (0..=2 * DISTRICTS)
        .map(|_| std::sync::atomic::AtomicU64::new(QUEUE))
        .collect();
    c.bench_function(&format!("new_order_fifo/{name}"), |b| {
        b.iter_custom(|iters| {
            two_threads(&m, iters, |t, l, ops| {
                for i in 0..ops {
                    let d = t * DISTRICTS + 1 + i % DISTRICTS;
                    let o = next[d as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    l.insert(d << 32 | o, row());
                    let (lo, hi) = (Included(d << 32), Included(d << 32 | u64::from(u32::MAX)));
                    let mut first = None;
                    l.range(lo, hi, &mut |k, _| {
                        first = Some(k);
                        false
                    });
                    let Some(first) = first else { continue };
                    let mut n = 0;
                    l.range(lo, Included(first), &mut |_, _| {
                        n += 1;
                        true
                    });
                    assert_eq!(n, 1);
                    l.remove(first);
                }
            })
        })
    });
}

fn gets<M: Ordered>(c: &mut Criterion, name: &str, m: M) {
    const N: u64 = 1 << 20;
    // ORDER-LINE-like keys: district << 36 | order << 4 | line, 10 lines an order.
    let key = |i: u64| (1 + i / 30_000 % 20) << 36 | (i % 30_000 / 10) << 4 | (i % 10 + 1);
    let l = m.local();
    for i in 0..N {
        l.insert(key(i), row());
    }
    drop(l);
    c.bench_function(&format!("point_get/{name}"), |b| {
        b.iter_custom(|iters| {
            two_threads(&m, iters, |t, l, ops| {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                for _ in 0..ops {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    assert!(l.get(key(x % N)).is_some());
                }
            })
        })
    });
}

fn table() -> Table {
    Table::new(
        0,
        TableDef::new("t", IndexKind::Ordered).column("x", ColumnType::Bytes(24)),
    )
}
fn cmap() -> CmapShared {
    CmapShared(parking_lot::Mutex::new(concurrent_map::ConcurrentMap::new()))
}
fn sharded() -> Sharded {
    Sharded((0..SHARDS).map(|_| RwLock::new(BTreeMap::new())).collect())
}

fn benches(c: &mut Criterion) {
    fifo(c, "table", table());
    fifo(c, "scc", Scc(scc::TreeIndex::new()));
    fifo(c, "skipmap", Skip(crossbeam_skiplist::SkipMap::new()));
    fifo(c, "concurrent_map", cmap());
    fifo(c, "rwlock_btree", sharded());
    gets(c, "table", table());
    gets(c, "scc", Scc(scc::TreeIndex::new()));
    gets(c, "skipmap", Skip(crossbeam_skiplist::SkipMap::new()));
    gets(c, "concurrent_map", cmap());
    gets(c, "rwlock_btree", sharded());
}

criterion_group! {
    name = ordered_index;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(ordered_index);
