//! The kill workload: `kill -9` under load, then a reopen and a check that every acknowledged
//! transaction is there, `--kill-rounds` times (5 by default) on one directory.
//!
//! In each round a child process (this binary, `__kill-child`) opens the store (creates and
//! loads it in round 0; reopens what the last round left after that) and runs full TPC-B
//! ([`crate::workload::tpcb`], one branch per thread) from `--kill-threads` threads (16 by
//! default), each in its durable setting. A thread prints a line `<thread> <sequence>` on
//! stdout (one `write(2)` to a pipe, so whole or not at all) after each transaction's durable
//! commit returned and before it starts the next: that line is the acknowledgement. Once the
//! child reports that its threads run, the parent waits a random 0.5-2 s (`--kill-after-ms`)
//! and sends SIGKILL: nothing is closed or flushed, what the child wrote to files stays in the
//! page cache (a process crash, not a power cut). The parent reads every line the child wrote,
//! times the reopen until a read answers, and checks ([`crate::workload::tpcb::check`]):
//!
//! * every acknowledged transaction (of this round and every earlier one) has its history
//!   row; one that has not is lost, counted in `lost` and reported (not a failure of the run:
//!   it is what the workload is there to find);
//! * every history row is a transaction a thread made: acknowledged, or the one a thread had
//!   in flight at the kill (its commit may have finished without its line being written);
//!   such a transaction, once seen, must stay in later rounds as if acknowledged;
//! * every account's, teller's and branch's balance equals its initial balance plus the deltas
//!   of the history rows present (a transaction is there whole or not at all).
//!
//! A failure of the last two is an error of the run.

use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::output::{KillRound, KillRow};
use crate::systems::{TpcbPart, TpcbScale, TxnStore, TxnSystem, balance};
use crate::workload::child::{self, Running};
use crate::workload::tpcb::{self, Acked, MAX_ROUNDS};

/// The kill workload's settings.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// The child's threads (and branches: one per thread).
    pub threads: usize,
    /// Accounts per branch.
    pub accounts_per_branch: u64,
    /// Rounds on one directory.
    pub rounds: u32,
    /// The shortest wait from the child's start of work to the kill, milliseconds.
    pub kill_after_min_ms: u64,
    /// The longest.
    pub kill_after_max_ms: u64,
}

impl Config {
    /// The database's size: a branch per thread.
    pub fn scale(&self) -> TpcbScale {
        TpcbScale {
            branches: self.threads as u64,
            accounts_per_branch: self.accounts_per_branch,
        }
    }

    /// The workload in words, for the report.
    pub fn describe(&self) -> String {
        format!(
            "A child process runs full TPC-B (one branch per thread, {} threads, {} accounts \
             per branch) in the system's durable setting and prints each transaction after its \
             durable commit returned; the parent kill -9s it (SIGKILL, a process crash: the \
             page cache keeps what was written; not a power cut) at a random moment {}-{} ms \
             after its threads started, reopens (timed until a read answers), and checks that \
             every acknowledged transaction's history row is there and every account, teller \
             and branch balance equals its initial balance plus the deltas of the history rows \
             present. {} rounds on one directory, each continuing from what the last left.",
            self.threads,
            self.accounts_per_branch,
            self.kill_after_min_ms,
            self.kill_after_max_ms,
            self.rounds
        )
    }
}

/// What the child reports once its threads run.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ready {
    /// Threads running.
    pub threads: usize,
    /// Seconds the open (round 0: create and load; later: reopen) took.
    pub open_seconds: f64,
}

/// The child: open the store in `dir` (create it in round 0), report, and run TPC-B
/// transactions of `round` from `threads` threads, printing each acknowledgement, until it is
/// killed. A failing thread ends the process with its error on stderr.
pub fn child(
    sys: &dyn TxnSystem,
    dir: &Path,
    threads: usize,
    accounts_per_branch: u64,
    round: u32,
) -> Result<()> {
    child::die_with_parent()?;
    if threads == 0 || accounts_per_branch == 0 {
        bail!("the kill child needs threads and accounts");
    }
    let scale = TpcbScale {
        branches: threads as u64,
        accounts_per_branch,
    };
    let setup = tpcb::setup(threads, scale);
    let t0 = Instant::now();
    let store = if round == 0 {
        sys.open(dir, &setup).context("open and load")?
    } else {
        sys.reopen(dir, &setup).context("reopen")?
    };
    let open_seconds = t0.elapsed().as_secs_f64();
    // Open until the kill, never closed; the threads borrow it for the process's lifetime.
    let store: &'static dyn TxnStore = Box::leak(store);
    let start: &'static Barrier = Box::leak(Box::new(Barrier::new(threads + 1)));
    for t in 0..threads {
        std::thread::spawn(move || {
            let w = store.worker(t);
            start.wait();
            let r = w.and_then(|mut w| {
                let mut line = Vec::with_capacity(32);
                for seq in 0.. {
                    let x = tpcb::txn(&scale, round, t, seq, tpcb::now_us())?;
                    w.tpcb(&x)?;
                    line.clear();
                    writeln!(line, "{t} {seq}")?;
                    // One write(2) of a whole line (std's stdout is line-buffered).
                    let mut out = std::io::stdout().lock();
                    out.write_all(&line)?;
                    out.flush()?;
                }
                Ok(())
            });
            if let Err(e) = r {
                eprintln!("thread {t}: {e:#}");
                std::process::exit(2);
            }
        });
    }
    start.wait();
    child::send(&Ready {
        threads,
        open_seconds,
    })?;
    // The threads never end; the kill ends the process (or the parent's end, closing stdin).
    child::wait_to_be_killed()
}

/// The acknowledgements read from one child: per thread, how many (in order).
struct AckLog {
    acked: Vec<u64>,
    error: Option<String>,
}

impl AckLog {
    fn take(&mut self, line: &str) {
        if self.error.is_some() {
            return;
        }
        let mut it = line.split(' ').map(str::parse::<u64>);
        let parsed = match (it.next(), it.next(), it.next()) {
            (Some(Ok(t)), Some(Ok(seq)), None) => Some((t, seq)),
            _ => None,
        };
        let Some((t, seq)) = parsed else {
            self.error = Some(format!("the child wrote {line:?}, not an acknowledgement"));
            return;
        };
        match self.acked.get_mut(t as usize) {
            Some(n) if *n == seq => *n += 1,
            _ => {
                self.error = Some(format!(
                    "acknowledgement {line:?} out of order (thread {t} had acknowledged {:?})",
                    self.acked.get(t as usize)
                ));
            }
        }
    }
}

/// The parent: run `cfg.rounds` rounds of child, kill and check for `sys` in the empty
/// directory `dir` through `exe` (this binary).
pub fn run(
    sys: &dyn TxnSystem,
    exe: &Path,
    dir: &Path,
    cfg: &Config,
    tick: &dyn Fn(),
) -> Result<KillRow> {
    if cfg.rounds == 0 || cfg.rounds > MAX_ROUNDS || cfg.threads == 0 {
        bail!("the kill workload needs 1..{MAX_ROUNDS} rounds and threads");
    }
    if cfg.kill_after_min_ms > cfg.kill_after_max_ms {
        bail!("--kill-after-ms: the shortest wait is above the longest");
    }
    let scale = cfg.scale();
    let setup = tpcb::setup(cfg.threads, scale);
    let mut acked = Acked::default();
    let mut rounds = Vec::new();
    let mut rng = rand::rngs::SmallRng::from_entropy();
    for round in 0..cfg.rounds {
        let log = Arc::new(Mutex::new(AckLog {
            acked: vec![0; cfg.threads],
            error: None,
        }));
        let sink = {
            let log = Arc::clone(&log);
            Box::new(move |line: &str| {
                if let Ok(mut l) = log.lock() {
                    l.take(line);
                }
            })
        };
        let args = [
            "__kill-child".to_string(),
            "--system".into(),
            sys.name(),
            "--dir".into(),
            dir.display().to_string(),
            "--threads".into(),
            cfg.threads.to_string(),
            "--accounts-per-branch".into(),
            cfg.accounts_per_branch.to_string(),
            "--round".into(),
            round.to_string(),
        ];
        let mut c = Running::spawn_with(exe, &args, sink)?;
        let ready: Ready = c
            .report(tick)
            .with_context(|| format!("round {round}: the child"))?;
        let wait =
            Duration::from_millis(rng.gen_range(cfg.kill_after_min_ms..=cfg.kill_after_max_ms));
        let t0 = Instant::now();
        while t0.elapsed() < wait {
            std::thread::sleep((wait - t0.elapsed().min(wait)).min(Duration::from_millis(100)));
            tick();
        }
        let status = c.kill()?;
        if status.signal() != Some(libc::SIGKILL) {
            bail!(
                "round {round}: the child ended ({status}) before the kill: {}",
                c.errors().trim()
            );
        }
        c.drain(Duration::from_secs(10))?;
        drop(c);
        let round_acked = {
            let l = log
                .lock()
                .map_err(|_| anyhow!("the acknowledgement log's lock was poisoned"))?;
            if let Some(e) = &l.error {
                bail!("round {round}: {e}");
            }
            for (t, &n) in l.acked.iter().enumerate() {
                acked.0.insert((round, t as u32), n);
            }
            l.acked.iter().sum::<u64>()
        };

        let t0 = Instant::now();
        let store = sys
            .reopen(dir, &setup)
            .with_context(|| format!("round {round}: reopen after kill -9"))?;
        let mut branches = 0u64;
        store
            .scan_tpcb(TpcbPart::Branches, &mut |_, v| {
                balance(v)?;
                branches += 1;
                Ok(())
            })
            .with_context(|| format!("round {round}: the first read after reopen"))?;
        let reopen = t0.elapsed();
        if branches != scale.branches {
            bail!(
                "round {round}: {branches} branches after reopen, not {}",
                scale.branches
            );
        }
        let checked = tpcb::check(store.as_ref(), &scale, &acked, Some(round))
            .with_context(|| format!("round {round}: consistency after kill -9 and reopen"))?;
        store.close().context("close after the check")?;
        // A transaction read back is durable from here on: later rounds must keep it.
        for &(r, t) in &checked.unacked {
            *acked.0.entry((r, t)).or_default() += 1;
        }
        rounds.push(KillRound {
            round,
            open_seconds: ready.open_seconds,
            kill_after_ms: wait.as_secs_f64() * 1e3,
            acked: round_acked,
            committed_unacked: checked.unacked.len() as u64,
            history: checked.history,
            lost: checked.lost,
            lost_example: checked.lost_example,
            reopen_ms: reopen.as_secs_f64() * 1e3,
        });
    }
    Ok(KillRow::new(sys, cfg, rounds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_must_come_in_order_and_well_formed() {
        let mut l = AckLog {
            acked: vec![0; 2],
            error: None,
        };
        for line in ["0 0", "1 0", "0 1", "0 2"] {
            l.take(line);
        }
        assert_eq!((l.acked.clone(), l.error.clone()), (vec![3, 1], None));
        l.take("1 2");
        assert!(l.error.is_some());
        for bad in ["2 0", "x", "0 3 1", ""] {
            let mut l = AckLog {
                acked: vec![0; 2],
                error: None,
            };
            l.take(bad);
            assert!(l.error.is_some(), "{bad:?}");
        }
    }
}
