//! An embedded durable store: a bank of accounts and money transfers.
//!
//! The database is opened with `Options::default()`: its log is segment files in the database
//! directory, `commit()` returns only once the transaction is on stable storage (group
//! fdatasync), and a checkpoint is taken in the background every 16 MiB of log, so the log and
//! the time to reopen stay bounded (this short run stays under it). The example runs a child process that transfers money between accounts and
//! prints the id of every transfer whose commit returned; the parent kills the child with
//! SIGKILL in mid-run, reopens the database (which recovers it from its log) and checks that
//! the total amount of money is what it was and that every transfer the child acknowledged is
//! there.
//!
//! ```sh
//! cargo run --release -p braid-engine --example bank            # in a temporary directory
//! cargo run --release -p braid-engine --example bank -- DIR     # or in DIR (kept afterwards)
//! ```

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use braid_engine::{
    Catalog, ColumnType, Db, EngineError, IndexKind, Loader, TableDef, TableId, TxError,
};

const ACCOUNTS: u64 = 100;
const OPENING_BALANCE: i64 = 1_000;

/// Two tables: balances, and one row per transfer (its amount), so a recovered transfer can be
/// looked up by id.
fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("accounts", IndexKind::Hash).column("balance", ColumnType::I64));
    c.add(TableDef::new("transfers", IndexKind::Ordered).column("amount", ColumnType::I64));
    c
}

/// The initial image: every account opens with the same balance. It runs when the database is
/// created and again before the log is replayed at a recovery that has no checkpoint to start
/// from, so it must be deterministic.
fn load(l: &Loader<'_>) -> Result<(), EngineError> {
    let accounts = l
        .table("accounts")
        .ok_or_else(|| EngineError::load("no accounts table"))?;
    for a in 0..ACCOUNTS {
        l.insert(accounts, a, &OPENING_BALANCE.to_le_bytes())?;
    }
    Ok(())
}

fn open(dir: &Path) -> Result<Db, EngineError> {
    let (db, report) = Db::builder(dir).catalog(catalog()).loader(load).open()?;
    if !report.created {
        eprintln!(
            "recovered {} transactions from the log in {:.3} s",
            report.recovery.txns, report.recovery.seconds
        );
    }
    Ok(db)
}

/// Move `amount` from one account to another and record the transfer as `id`, atomically.
fn transfer(
    w: &mut braid_engine::Worker,
    t: (TableId, TableId),
    id: u64,
    from: u64,
    to: u64,
    amount: i64,
) -> Result<(), TxError> {
    let (accounts, transfers) = t;
    let mut tx = w.begin();
    tx.update(accounts, from, |r| r.set(0, r.get::<i64>(0) - amount))?;
    tx.update(accounts, to, |r| r.set(0, r.get::<i64>(0) + amount))?;
    tx.insert(transfers, id, &amount.to_le_bytes())?;
    // Under the default options the commit returns once the transfer is durable; the ticket
    // is then already resolved and `wait` costs nothing.
    tx.commit()?;
    Ok(())
}

/// The child: transfer money until killed, printing the id of every acknowledged transfer.
fn run_child(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let db = open(dir)?;
    let t = (
        db.table("accounts").ok_or("no accounts table")?,
        db.table("transfers").ok_or("no transfers table")?,
    );
    let mut w = db.worker()?;
    let mut out = std::io::stdout().lock();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for id in 1.. {
        // xorshift: deterministic, no dependency
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (from, to) = (x % ACCOUNTS, (x >> 20) % ACCOUNTS);
        if from == to {
            continue;
        }
        match transfer(&mut w, t, id, from, to, (x >> 40) as i64 % 50 + 1) {
            Ok(()) => writeln!(out, "{id}")?,
            Err(e) if e.is_retryable() => continue,
            Err(e) => return Err(e.into()),
        }
        out.flush()?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--child" {
        return run_child(Path::new(&args[2]));
    }
    let (dir, keep) = match args.get(1) {
        Some(d) => (PathBuf::from(d), true),
        None => (
            std::env::temp_dir().join(format!("braid-bank-{}", std::process::id())),
            false,
        ),
    };

    // 1. A child process transfers money; it is killed with SIGKILL after a while.
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--child")
        .arg(&dir)
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut acked = BTreeSet::new();
    let start = Instant::now();
    for line in BufReader::new(stdout).lines() {
        acked.insert(line?.parse::<u64>()?);
        if acked.len() >= 2_000 || start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    child.kill()?; // SIGKILL: no destructor, no flush, no clean close
    child.wait()?;
    println!(
        "killed the child after {} acknowledged transfers",
        acked.len()
    );

    // 2. Reopen: recovery replays the log on top of the initial image.
    let db = open(&dir)?;
    let accounts = db.table("accounts").ok_or("no accounts table")?;
    let transfers = db.table("transfers").ok_or("no transfers table")?;
    let mut total = 0i64;
    db.for_each_row(accounts, .., |_, row| {
        let mut balance = [0u8; 8];
        balance.copy_from_slice(&row[..8]);
        total += i64::from_le_bytes(balance);
    });
    let missing: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|id| db.peek(transfers, *id).is_none())
        .collect();
    println!(
        "after recovery: {} transfers in the log, total {total}",
        db.rows(transfers)
    );
    db.close()?;
    drop(db);
    if !keep {
        std::fs::remove_dir_all(&dir)?;
    }

    // 3. The checks: money is neither made nor lost, and nothing acknowledged is missing.
    assert_eq!(
        total,
        ACCOUNTS as i64 * OPENING_BALANCE,
        "the total changed"
    );
    assert!(
        missing.is_empty(),
        "acknowledged transfers lost: {missing:?}"
    );
    println!("ok: the total is unchanged and every acknowledged transfer survived the kill");
    Ok(())
}
