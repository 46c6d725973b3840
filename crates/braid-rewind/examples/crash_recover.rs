//! A persistent linked list of bank accounts updated in transactions; a power failure in the
//! middle of a transaction; recovery; and a pool kept in a file and opened again.
//!
//! The power failure is simulated: the pool lives in a `CrashSim` region, and
//! `Region::crash` returns what persistent memory could hold if the power failed at that
//! instant: everything flushed and fenced, plus whichever stores still in the cache the
//! `CrashMode` keeps. Opening that image runs REWIND's recovery, which must leave every
//! committed transaction in and the interrupted one out.
//!
//! `cargo run --release -p braid-rewind --example crash_recover`

use std::error::Error;
use std::path::PathBuf;

use braid_rewind::{CrashMode, CrashSim, LogLayout, PPtr, PmemConfig, Pool, PoolConfig, Tx};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The root object: the first account, then the number of accounts (16 bytes).
struct Bank;
const HEAD: u64 = 0;
const COUNT: u64 = 8;

/// An account: its balance, then the next account (16 bytes).
struct Account;
const BALANCE: u64 = 0;
const NEXT: u64 = 8;

/// Create the bank with one account per balance, as one transaction.
fn create_bank(pool: &Pool, balances: &[u64]) -> Result<()> {
    pool.transaction(|tx| {
        let bank: PPtr<Bank> = tx.alloc(16)?;
        tx.init(bank.field::<PPtr<Account>>(HEAD), PPtr::NULL)?;
        tx.init(bank.field::<u64>(COUNT), 0)?;
        for &b in balances.iter().rev() {
            open_account(tx, bank, b)?;
        }
        tx.set_root(bank)?;
        Ok(())
    })
}

/// Link a new account at the head of the list (inside the caller's transaction).
fn open_account(tx: &mut Tx<'_>, bank: PPtr<Bank>, balance: u64) -> Result<PPtr<Account>> {
    let a: PPtr<Account> = tx.alloc(16)?;
    // A fresh object needs no undo: `init` stores without logging.
    tx.init(a.field::<u64>(BALANCE), balance)?;
    tx.init(a.field(NEXT), tx.read(bank.field::<PPtr<Account>>(HEAD)))?;
    // Existing objects are changed with `write`: the old value is logged first.
    tx.write(bank.field(HEAD), a)?;
    let n = tx.read(bank.field::<u64>(COUNT));
    tx.write(bank.field(COUNT), n + 1)?;
    Ok(a)
}

/// The accounts in list order.
fn accounts(pool: &Pool) -> Vec<PPtr<Account>> {
    let bank: PPtr<Bank> = pool.root();
    let mut out = Vec::new();
    let mut a: PPtr<Account> = pool.read(bank.field(HEAD));
    while !a.is_null() {
        out.push(a);
        a = pool.read(a.field(NEXT));
    }
    out
}

/// Check the bank holds exactly these balances, in list order, and is intact: the count
/// matches the list, and the heap holds the bank and its accounts and nothing else.
fn check_bank(pool: &Pool, expected: &[u64]) -> Result<()> {
    let acc = accounts(pool);
    let b: Vec<u64> = acc.iter().map(|a| pool.read(a.field(BALANCE))).collect();
    assert_eq!(b, expected);
    let bank: PPtr<Bank> = pool.root();
    assert_eq!(pool.read(bank.field::<u64>(COUNT)), acc.len() as u64);
    assert_eq!(pool.heap_report()?.allocated.len(), acc.len() + 1, "leak");
    Ok(())
}

/// Move `amount` from account `from` to account `to`, as one transaction.
fn transfer(pool: &Pool, from: usize, to: usize, amount: u64) -> Result<()> {
    let acc = accounts(pool);
    let (from, to) = (
        acc[from].field::<u64>(BALANCE),
        acc[to].field::<u64>(BALANCE),
    );
    pool.transaction(|tx| {
        let f = tx.read(from);
        if f < amount {
            return Err("insufficient funds".into());
        }
        tx.write(from, f - amount)?;
        let t = tx.read(to);
        tx.write(to, t + amount)?;
        Ok(())
    })
}

/// A directory under the system's temporary directory, removed when dropped (also when a
/// check fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Result<TempDir> {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn main() -> Result<()> {
    // 1. A pool in simulated persistent memory; three accounts; two committed transfers and
    //    one refused (its `Err` rolls it back). The Optimized log persists each record as it
    //    is written; the default, Batch, persists them a group at a time, so a transaction cut
    //    short before its first group would leave no trace to undo.
    let cfg = PoolConfig::default().layout(LogLayout::Optimized);
    let pool = Pool::create_in(CrashSim::region(8 << 20, PmemConfig::default()), cfg)?;
    create_bank(&pool, &[100, 100, 100])?;
    transfer(&pool, 0, 1, 30)?;
    transfer(&pool, 1, 2, 80)?;
    assert!(transfer(&pool, 0, 2, 1_000).is_err());
    check_bank(&pool, &[70, 50, 180])?;

    // 2. A transaction that opens an account and moves 50 into it from account 0, with a
    //    power failure between the debit and the credit. The crash image keeps every store
    //    made so far, as if the cache had written everything back just before the failure:
    //    the hardest case for undo.
    let bank: PPtr<Bank> = pool.root();
    let first = accounts(&pool)[0].field::<u64>(BALANCE);
    let keep_all = CrashMode::KeepRandom {
        seed: 1,
        keep_probability: 1.0,
    };
    let mut crashed = None;
    let unfinished: Result<()> = pool.transaction(|tx| {
        let new = open_account(tx, bank, 0)?;
        let f = tx.read(first);
        tx.write(first, f - 50)?;
        crashed = Some(pool.region().crash(keep_all)?); // the power fails here
        tx.write(new.field::<u64>(BALANCE), 50)?;
        Err("the power failed".into()) // this pool is gone; only the crash image matters
    });
    assert!(unfinished.is_err());
    drop(pool);
    let image = crashed.ok_or("no crash image")?;
    assert_eq!(
        image.load_u64(first.offset() as usize),
        20,
        "the debit is in the image"
    );

    // 3. Power back: opening the image recovers the pool. Committed transfers are in; the
    //    interrupted transaction is out entirely: no new account, no debit, no leaked block.
    let (pool, report) = Pool::open_in(image)?;
    println!("recovered: {report:?}");
    assert_eq!(report.undone, 1, "one unfinished transaction undone");
    check_bank(&pool, &[70, 50, 180])?;
    transfer(&pool, 2, 0, 10)?; // the recovered pool works as before
    check_bank(&pool, &[80, 50, 170])?;

    // 4. A pool in a file (default configuration): create, update, close, open again.
    let dir = TempDir::new("braid-rewind-example")?;
    let path = dir.0.join("bank.pool");
    let pool = Pool::create(&path, 8 << 20, PoolConfig::default(), PmemConfig::default())?;
    create_bank(&pool, &[10, 20])?;
    transfer(&pool, 1, 0, 5)?;
    drop(pool);
    let (pool, report) = Pool::open(&path, PmemConfig::default())?;
    println!("reopened {}: {report:?}", path.display());
    check_bank(&pool, &[15, 15])?;
    println!("all checks passed");
    Ok(())
}
