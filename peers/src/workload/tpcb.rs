//! The TPC-B workload (TPC Benchmark B, revision 2.0): every transaction is Account-Update
//! (Clause 1.2), which adds a delta to an account, its teller and its branch and inserts a
//! history row (account, teller, branch, delta, time), committed durably as one transaction
//! before the thread's next. The database has 10 tellers and `--accounts-per-branch` accounts
//! (TPC-B: 100,000) per branch, every balance [`INITIAL_BALANCE`] at first.
//!
//! Two settings, each a row with its `branches`:
//!
//! * one branch per thread (TPC-B's scaling, Clause 5.3): as many branches as threads, thread
//!   `t` works in branch `t`: a random teller of it, and an account of it 85% of the time and
//!   of another branch, drawn uniformly, 15% of the time (Clause 5.3.5's remote accounts; with
//!   one branch there is no other);
//! * a single branch: every thread updates the same branch row (one hot row) and its 10
//!   tellers.
//!
//! Deltas are uniform in -999,999..=999,999 (Clause 5.3.6). Each transaction's inputs are a
//! pure function of (round, thread, sequence number) ([`txn`]), and its history row is stored
//! under an id made of the three ([`txn_id`]), so a history row says which transaction it is
//! and what that transaction did. Rows hold the balance alone (8 bytes), history rows 40
//! bytes: TPC-B's filler to 100 and 50 bytes is left out, the same for every system.
//!
//! The self-check ([`check`]), after the store is closed and reopened: every history row is
//! the transaction its id names; the history rows are exactly the acknowledged transactions
//! (none missing, none extra); and every account's, teller's and branch's balance equals its
//! initial balance plus the deltas of the history rows that name it. The kill workload
//! ([`crate::workload::kill`]) runs the same check after a `kill -9`, where the transaction a
//! thread had in flight may or may not be there.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::output::Row;
use crate::systems::{
    INITIAL_BALANCE, Setup, TELLERS_PER_BRANCH, Table, TpcbPart, TpcbScale, TpcbTxn, TxnStore,
    TxnSystem, TxnWorker, balance,
};
use crate::workload::run_on_store;
use crate::workload::txn::MAX_DELTA;

/// The fraction of transactions whose account is at another branch (TPC-B Clause 5.3.5).
pub const REMOTE_FRACTION: f64 = 0.15;

/// TPC-B's parameters, as the report records them.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// Accounts per branch (TPC-B: 100,000).
    pub accounts_per_branch: u64,
    /// Tellers per branch.
    pub tellers_per_branch: u64,
    /// Fraction of transactions with an account of another branch (when there is one).
    pub remote_fraction: f64,
    /// Largest delta in absolute value.
    pub max_delta: i64,
}

impl Params {
    /// The parameters with `accounts_per_branch`.
    pub fn new(accounts_per_branch: u64) -> Params {
        Params {
            accounts_per_branch,
            tellers_per_branch: TELLERS_PER_BRANCH,
            remote_fraction: REMOTE_FRACTION,
            max_delta: MAX_DELTA,
        }
    }

    /// The workload in words.
    pub fn describe(&self) -> String {
        format!(
            "TPC-B Account-Update: account, teller and branch balance += delta and a history \
             insert, one durable transaction; {} tellers and {} accounts per branch, {}% of \
             accounts at another branch",
            self.tellers_per_branch,
            self.accounts_per_branch,
            self.remote_fraction * 100.0
        )
    }
}

/// Bits of [`txn_id`] that hold the sequence number.
const SEQ_BITS: u32 = 32;
/// Bits of [`txn_id`] that hold the thread (above the sequence number); the round is above
/// them, below bit 63 (SQLite's keys are signed).
const THREAD_BITS: u32 = 16;
/// Rounds a [`txn_id`] can name.
pub const MAX_ROUNDS: u32 = 1 << (63 - SEQ_BITS - THREAD_BITS);

/// The id (history key) of transaction `seq` of `thread` in `round`: round, thread and
/// sequence number side by side.
pub fn txn_id(round: u32, thread: usize, seq: u64) -> Result<u64> {
    if round >= MAX_ROUNDS || thread >= 1 << THREAD_BITS || seq >= 1 << SEQ_BITS {
        bail!("transaction {seq} of thread {thread} in round {round}: beyond what an id holds");
    }
    Ok((u64::from(round) << (SEQ_BITS + THREAD_BITS)) | ((thread as u64) << SEQ_BITS) | seq)
}

/// The (round, thread, sequence number) of a [`txn_id`].
pub fn split_id(id: u64) -> (u32, u32, u64) {
    (
        (id >> (SEQ_BITS + THREAD_BITS)) as u32,
        ((id >> SEQ_BITS) & ((1 << THREAD_BITS) - 1)) as u32,
        id & ((1 << SEQ_BITS) - 1),
    )
}

/// Microseconds since the Unix epoch, for history rows.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Transaction `seq` of `thread` in `round` at `scale`, stamped `time`: its branch is the
/// thread's (`thread % branches`), a random teller of it, an account of it or (15%, with more
/// than one branch) of another branch, and a delta, all drawn from a generator seeded with
/// the transaction's id.
pub fn txn(scale: &TpcbScale, round: u32, thread: usize, seq: u64, time: u64) -> Result<TpcbTxn> {
    let id = txn_id(round, thread, seq)?;
    let mut rng = SmallRng::seed_from_u64(id ^ 0x7b0b_5eed_0000_0000);
    let branch = thread as u64 % scale.branches;
    let teller = branch * TELLERS_PER_BRANCH + rng.gen_range(0..TELLERS_PER_BRANCH);
    let account_branch = if scale.branches > 1 && rng.gen_bool(REMOTE_FRACTION) {
        let other = rng.gen_range(0..scale.branches - 1);
        if other >= branch { other + 1 } else { other }
    } else {
        branch
    };
    Ok(TpcbTxn {
        id,
        account: account_branch * scale.accounts_per_branch
            + rng.gen_range(0..scale.accounts_per_branch),
        teller,
        branch,
        delta: rng.gen_range(-MAX_DELTA..=MAX_DELTA),
        time,
    })
}

/// How the TPC-B workload opens a store at `scale` for `threads` threads.
pub fn setup(threads: usize, scale: TpcbScale) -> Setup {
    Setup {
        threads,
        table: Table::Tpcb(scale),
        rows: scale.rows(TpcbPart::Accounts),
        relaxed: false,
    }
}

/// Acknowledged transactions: for each (round, thread), how many, numbered `0..n` (a thread
/// commits its transactions one after another).
#[derive(Debug, Clone, Default)]
pub struct Acked(pub BTreeMap<(u32, u32), u64>);

impl Acked {
    /// Transactions acknowledged by `thread` in `round`.
    pub fn get(&self, round: u32, thread: u32) -> u64 {
        self.0.get(&(round, thread)).copied().unwrap_or(0)
    }
}

/// What [`check`] found (beyond a failure).
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// History rows present.
    pub history: u64,
    /// Acknowledged transactions without their history row (nor any effect: the balances
    /// agree with the history rows present).
    pub lost: u64,
    /// Where the first lost one is, in words.
    pub lost_example: Option<String>,
    /// (round, thread) of every transaction present that was in flight, committed but not
    /// acknowledged (only where [`check`] was told to allow them).
    pub unacked: Vec<(u32, u32)>,
}

/// Check the TPC-B store `store` at `scale` against the acknowledged transactions `acked`
/// (see the module's doc). With `in_flight` = `Some(round)`, each thread of that round may
/// have one more transaction than it acknowledged (the one it had in flight at a kill);
/// otherwise none. A missing acknowledged transaction is counted in [`Checked::lost`] (the
/// caller decides whether that fails); everything else the check finds fails it.
pub fn check(
    store: &dyn TxnStore,
    scale: &TpcbScale,
    acked: &Acked,
    in_flight: Option<u32>,
) -> Result<Checked> {
    let mut want: Vec<Vec<i64>> = TpcbPart::BALANCES
        .iter()
        .map(|&p| vec![0i64; scale.rows(p) as usize])
        .collect();
    let mut present: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    let mut out = Checked::default();
    store
        .scan_tpcb(TpcbPart::History, &mut |id, v| {
            let got = TpcbTxn::from_history(id, v)?;
            let (round, thread, seq) = split_id(id);
            let made = txn(scale, round, thread as usize, seq, got.time)?;
            if got != made {
                bail!(
                    "history row {id:#x} (round {round}, thread {thread}, transaction {seq}) \
                     holds {got:?}; that transaction was {made:?}"
                );
            }
            let n = acked.get(round, thread);
            if seq < n {
                *present.entry((round, thread)).or_default() += 1;
            } else if in_flight == Some(round) && seq == n {
                out.unacked.push((round, thread));
            } else {
                bail!(
                    "history row of transaction {seq} of thread {thread} in round {round}: \
                     that thread had {n} acknowledged{}",
                    if in_flight == Some(round) {
                        " and at most one more in flight"
                    } else {
                        " and none in flight"
                    }
                );
            }
            out.history += 1;
            for (i, (part, row)) in [
                (TpcbPart::Accounts, got.account),
                (TpcbPart::Tellers, got.teller),
                (TpcbPart::Branches, got.branch),
            ]
            .into_iter()
            .enumerate()
            {
                let Some(w) = want[i].get_mut(row as usize) else {
                    bail!(
                        "history row {id:#x} names {} row {row}, which is not there",
                        part.name()
                    );
                };
                *w += got.delta;
            }
            Ok(())
        })
        .context("reading history")?;
    for (&(round, thread), &n) in &acked.0 {
        let here = present.get(&(round, thread)).copied().unwrap_or(0);
        if here < n {
            out.lost += n - here;
            out.lost_example.get_or_insert_with(|| {
                format!(
                    "thread {thread} of round {round}: {} of its {n} acknowledged transactions \
                     have no history row",
                    n - here
                )
            });
        }
    }
    for (part, want) in TpcbPart::BALANCES.into_iter().zip(&want) {
        let mut seen = vec![false; want.len()];
        let (mut wrong, mut example) = (0u64, None);
        store
            .scan_tpcb(part, &mut |id, v| {
                let b = balance(v)?;
                let (Some(s), Some(&d)) = (seen.get_mut(id as usize), want.get(id as usize)) else {
                    bail!(
                        "{} row {id} is there; the table has rows 0..{}",
                        part.name(),
                        want.len()
                    );
                };
                if std::mem::replace(s, true) {
                    bail!("{} row {id} is there twice", part.name());
                }
                if b != INITIAL_BALANCE + d {
                    wrong += 1;
                    example.get_or_insert((id, b, INITIAL_BALANCE + d));
                }
                Ok(())
            })
            .with_context(|| format!("reading {}", part.name()))?;
        let missing = seen.iter().filter(|s| !**s).count();
        if missing > 0 {
            bail!(
                "{missing} of {} {} rows are missing",
                want.len(),
                part.name()
            );
        }
        if let Some((id, b, w)) = example {
            bail!(
                "{wrong} {} balance(s) differ from the initial balance plus the deltas of the \
                 history rows present; e.g. {} row {id} holds {b}, its history rows make {w}",
                part.name(),
                part.name()
            );
        }
    }
    Ok(out)
}

/// A worker thread's handle: its worker and its index, which names its transactions.
struct Handle<'a> {
    w: Box<dyn TxnWorker + 'a>,
    thread: usize,
}

/// Load TPC-B at `scale` into `sys` in the empty directory `dir`, run `threads` workers for
/// `duration` (thread `t` in branch `t % branches`), then [`check`] the reopened store: every
/// acknowledged transaction there, nothing else, every balance right.
pub fn run(
    sys: &dyn TxnSystem,
    dir: &Path,
    threads: usize,
    scale: TpcbScale,
    duration: Duration,
    tick: &dyn Fn(),
) -> Result<Row> {
    if scale.branches == 0 || scale.accounts_per_branch == 0 {
        bail!("TPC-B needs at least one branch and one account per branch");
    }
    let setup = setup(threads, scale);
    let store = sys.open(dir, &setup).context("open and load")?;
    let make = |t: usize| -> Result<Handle<'_>> {
        Ok(Handle {
            w: store.worker(t)?,
            thread: t,
        })
    };
    let op = |h: &mut Handle<'_>, seq: u64| -> Result<()> {
        // Its retries are counted by `retry` on this thread (see `crate::workload`).
        h.w.tpcb(&txn(&scale, 0, h.thread, seq, now_us())?)?;
        Ok(())
    };
    let m = run_on_store(store.as_ref(), threads, duration, &make, &op, tick)?;
    store.close().context("close")?;
    // Thread `t` acknowledged its transactions 0..completed[t], the late ones included.
    let acked = Acked(
        m.completed
            .iter()
            .enumerate()
            .map(|(t, &n)| ((0, t as u32), n))
            .collect(),
    );
    let store = sys.reopen(dir, &setup).context("reopen")?;
    let checked = check(store.as_ref(), &scale, &acked, None).context("self-check after reopen")?;
    store.close().context("close after the self-check")?;
    if let Some(e) = checked.lost_example {
        bail!(
            "self-check after a clean close and reopen: {} acknowledged transaction(s) lost; {e}",
            checked.lost
        );
    }
    Ok(Row {
        workload: "tpcb".into(),
        system: sys.name(),
        variant: sys.variant().as_str().into(),
        threads,
        branches: Some(scale.branches),
        record_bytes: None,
        version: sys.version(),
        durability: sys.durability(),
        ..Row::measured(&m)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A TPC-B store in memory whose transactions can drop their teller update or their
    /// history insert, for the check alone.
    #[derive(Default)]
    struct Mem {
        rows: Mutex<[BTreeMap<u64, Vec<u8>>; 4]>,
        drop_teller: bool,
        drop_history: bool,
    }

    fn slot(part: TpcbPart) -> usize {
        match part {
            TpcbPart::Accounts => 0,
            TpcbPart::Tellers => 1,
            TpcbPart::Branches => 2,
            TpcbPart::History => 3,
        }
    }

    impl Mem {
        fn new(scale: &TpcbScale) -> Mem {
            let m = Mem::default();
            if let Ok(mut rows) = m.rows.lock() {
                for part in TpcbPart::BALANCES {
                    for id in 0..scale.rows(part) {
                        rows[slot(part)].insert(id, INITIAL_BALANCE.to_le_bytes().to_vec());
                    }
                }
            }
            m
        }

        fn tamper(&self, part: TpcbPart, id: u64, value: Option<Vec<u8>>) {
            let mut rows = self.rows.lock().unwrap();
            match value {
                Some(v) => rows[slot(part)].insert(id, v),
                None => rows[slot(part)].remove(&id),
            };
        }
    }

    impl TxnStore for Mem {
        fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
            Ok(Box::new(MemWorker(self)))
        }
        fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
            Ok(self.rows.lock().unwrap()[0].get(&key).cloned())
        }
        fn scan_tpcb(
            &self,
            part: TpcbPart,
            f: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
        ) -> Result<()> {
            for (k, v) in &self.rows.lock().unwrap()[slot(part)] {
                f(*k, v)?;
            }
            Ok(())
        }
        fn close(self: Box<Self>) -> Result<()> {
            Ok(())
        }
    }

    struct MemWorker<'a>(&'a Mem);

    impl TxnWorker for MemWorker<'_> {
        fn update(&mut self, _account: u64, _delta: i64) -> Result<u32> {
            bail!("not here")
        }
        fn ycsb(&mut self, _accesses: &[crate::systems::Access]) -> Result<u32> {
            bail!("not here")
        }
        fn tpcb(&mut self, x: &TpcbTxn) -> Result<u32> {
            let mut rows = self.0.rows.lock().unwrap();
            for (part, id) in [
                (TpcbPart::Accounts, x.account),
                (TpcbPart::Tellers, x.teller),
                (TpcbPart::Branches, x.branch),
            ] {
                if part == TpcbPart::Tellers && self.0.drop_teller {
                    continue;
                }
                let v = rows[slot(part)].get_mut(&id).context("missing")?;
                *v = (balance(v)? + x.delta).to_le_bytes().to_vec();
            }
            if !self.0.drop_history {
                rows[3].insert(x.id, x.history().to_vec());
            }
            Ok(0)
        }
    }

    const SCALE: TpcbScale = TpcbScale {
        branches: 3,
        accounts_per_branch: 50,
    };

    /// Run `n` transactions on each of 3 threads (round 0) through `m`.
    fn fill(m: &Mem, n: u64) -> Result<Acked> {
        let mut acked = Acked::default();
        for t in 0..3 {
            let mut w = m.worker(t)?;
            for seq in 0..n {
                w.tpcb(&txn(&SCALE, 0, t, seq, 7)?)?;
            }
            acked.0.insert((0, t as u32), n);
        }
        Ok(acked)
    }

    #[test]
    fn ids_and_inputs_follow_the_spec() -> Result<()> {
        let id = txn_id(3, 17, 123_456)?;
        assert_eq!(split_id(id), (3, 17, 123_456));
        assert!(id < 1 << 63);
        assert!(txn_id(MAX_ROUNDS, 0, 0).is_err());
        assert!(txn_id(0, 0, 1 << 32).is_err());
        let scale = TpcbScale {
            branches: 4,
            accounts_per_branch: 1_000,
        };
        let mut remote = 0;
        for seq in 0..10_000 {
            let x = txn(&scale, 1, 6, seq, 0)?;
            assert_eq!(x, txn(&scale, 1, 6, seq, 0)?, "a pure function of its id");
            assert_eq!(x.branch, 2);
            assert!((20..30).contains(&x.teller));
            assert!(x.account < 4_000);
            assert!((-MAX_DELTA..=MAX_DELTA).contains(&x.delta));
            remote += usize::from(x.account / 1_000 != 2);
        }
        assert!(
            (1_200..=1_800).contains(&remote),
            "{remote} remote accounts"
        );
        let one = TpcbScale {
            branches: 1,
            accounts_per_branch: 10,
        };
        for seq in 0..1_000 {
            let x = txn(&one, 0, 5, seq, 0)?;
            assert_eq!((x.branch, x.teller / 10), (0, 0));
            assert!(x.account < 10);
        }
        Ok(())
    }

    #[test]
    fn check_passes_a_store_with_every_transaction() -> Result<()> {
        let m = Mem::new(&SCALE);
        let acked = fill(&m, 40)?;
        let c = check(&m, &SCALE, &acked, None)?;
        assert_eq!((c.history, c.lost), (120, 0));
        assert!(c.unacked.is_empty());
        Ok(())
    }

    #[test]
    fn check_fails_when_a_teller_update_is_dropped() -> Result<()> {
        let m = Mem {
            drop_teller: true,
            ..Mem::new(&SCALE)
        };
        let acked = fill(&m, 5)?;
        let e = check(&m, &SCALE, &acked, None).expect_err("tellers without their deltas");
        assert!(
            format!("{e:#}").contains("tellers balance(s) differ"),
            "{e:#}"
        );
        Ok(())
    }

    #[test]
    fn check_fails_when_a_history_row_is_dropped() -> Result<()> {
        let m = Mem {
            drop_history: true,
            ..Mem::new(&SCALE)
        };
        let acked = fill(&m, 5)?;
        let e = check(&m, &SCALE, &acked, None).expect_err("balances without history rows");
        assert!(
            format!("{e:#}").contains("accounts balance(s) differ"),
            "{e:#}"
        );
        // One history row removed afterwards: the same.
        let m = Mem::new(&SCALE);
        let acked = fill(&m, 5)?;
        m.tamper(TpcbPart::History, txn_id(0, 1, 2)?, None);
        assert!(check(&m, &SCALE, &acked, None).is_err());
        Ok(())
    }

    #[test]
    fn a_whole_lost_transaction_is_counted_and_extras_are_refused() -> Result<()> {
        let m = Mem::new(&SCALE);
        let mut acked = fill(&m, 5)?;
        // Thread 1 acknowledged a sixth that is not there at all: a loss, the rest consistent.
        acked.0.insert((0, 1), 6);
        let c = check(&m, &SCALE, &acked, None)?;
        assert_eq!(c.lost, 1);
        assert!(c.lost_example.is_some_and(|e| e.contains("thread 1")));
        // Thread 2 acknowledged only 4 of its 5: the fifth is allowed only as in flight.
        acked.0.insert((0, 1), 5);
        acked.0.insert((0, 2), 4);
        assert!(check(&m, &SCALE, &acked, None).is_err());
        assert!(check(&m, &SCALE, &acked, Some(1)).is_err());
        let c = check(&m, &SCALE, &acked, Some(0))?;
        assert_eq!((c.lost, c.unacked.clone()), (0, vec![(0, 2)]));
        // Two beyond what was acknowledged is never allowed.
        acked.0.insert((0, 2), 3);
        assert!(check(&m, &SCALE, &acked, Some(0)).is_err());
        Ok(())
    }

    #[test]
    fn check_fails_on_a_forged_history_row_or_a_missing_branch() -> Result<()> {
        let m = Mem::new(&SCALE);
        let acked = fill(&m, 3)?;
        let mut forged = txn(&SCALE, 0, 0, 1, 7)?;
        forged.delta += 1;
        m.tamper(
            TpcbPart::History,
            forged.id,
            Some(forged.history().to_vec()),
        );
        assert!(check(&m, &SCALE, &acked, None).is_err());
        let m = Mem::new(&SCALE);
        let acked = fill(&m, 3)?;
        m.tamper(TpcbPart::Branches, 2, None);
        let e = check(&m, &SCALE, &acked, None).expect_err("a branch is missing");
        assert!(
            format!("{e:#}").contains("branches rows are missing"),
            "{e:#}"
        );
        Ok(())
    }

    /// Through a real system (SQLite, on disk, in both variants): transactions, a reopen and
    /// the check pass; a teller's balance changed behind the store's back fails it.
    #[test]
    fn sqlite_passes_and_a_changed_teller_is_caught() -> Result<()> {
        use crate::systems::Variant;
        for variant in [Variant::Default, Variant::Tuned] {
            let dir = crate::tests::scratch(&format!("tpcb-sqlite-{}", variant.as_str()))?;
            let sys = crate::systems::sqlite::Sqlite(variant);
            let scale = TpcbScale {
                branches: 2,
                accounts_per_branch: 20,
            };
            let setup = setup(2, scale);
            let store = sys.open(&dir, &setup)?;
            let mut acked = Acked::default();
            for t in 0..2 {
                let mut w = store.worker(t)?;
                for seq in 0..10 {
                    w.tpcb(&txn(&scale, 0, t, seq, now_us())?)?;
                }
                acked.0.insert((0, t as u32), 10);
            }
            store.close()?;
            let store = sys.reopen(&dir, &setup)?;
            let c = check(store.as_ref(), &scale, &acked, None)?;
            assert_eq!((c.history, c.lost), (20, 0));
            store.close()?;
            let c = rusqlite::Connection::open(dir.join("store.sqlite"))?;
            c.execute("UPDATE tellers SET balance = balance + 1 WHERE id = 3", [])?;
            c.close().map_err(|(_, e)| e)?;
            let store = sys.reopen(&dir, &setup)?;
            let e = check(store.as_ref(), &scale, &acked, None).expect_err("a changed teller");
            assert!(format!("{e:#}").contains("tellers row 3 holds"), "{e:#}");
            store.close()?;
            std::fs::remove_dir_all(&dir)?;
        }
        Ok(())
    }
}
