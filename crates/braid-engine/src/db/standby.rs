//! [`Standby`]: a hot standby of a database whose log lives outside its machine (an external
//! device such as NATS JetStream): it tails every stream, replays what the writer committed
//! with the scheme's own recovery in rounds (`braid_wal::scheme::follow`), serves reads, and
//! takes over as the writer when promoted.
//!
//! * **Open**: `braid.json` and the newest checkpoint come from beside the log as for a
//!   recovery into an empty directory, but nothing is claimed: the writer goes on.
//! * **Rounds** ([`Standby::catch_up`]): read what the streams gained, then replay it while
//!   readers wait. A round replays a committed prefix of each stream, so between rounds the
//!   tables hold a transaction-consistent state: every transaction the log proves committed up
//!   to some point, and nothing after it. Reads ([`Standby::read`]) run
//!   between rounds.
//! * **Falling behind**: the writer truncates its log up to the older of its two newest
//!   checkpoints. A standby further behind than that fails its round with
//!   [`WalError::Behind`](braid_wal::WalError::Behind); opening it again starts it from the
//!   newest checkpoint (`braid follow` does so by itself).
//! * **Lag**: each message read carries the time the service stored it; once a round has
//!   replayed up to a message's end, `now - stored` is that message's lag.
//! * **Promote** ([`Standby::promote`]): open the log as its writer, which claims a new writer
//!   epoch and fences the old writer (its next flush fails and it acknowledges nothing more),
//!   then recover only what the standby had not replayed (the standby's position is the cut,
//!   as a checkpoint's would be) and start the scheme for new transactions. The tables are not
//!   loaded again.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use braid_wal::Lsn;
use braid_wal::scheme::Cut;
use braid_wal::scheme::Follower;
use braid_wal::scheme::RecoveryReport;
use parking_lot::{Mutex, RwLock};

use super::external::LogTail;
use super::loader::{self, Loader};
use super::meta::Meta;
use super::open::{open_scheme, scheme_config};
use super::options::{DeviceConfig, Options};
use super::storage::{fit_device, make_storage};
use super::{Db, DbInner, OpenReport};
use crate::checkpoint::epoch::Epochs;
use crate::error::EngineError;
use crate::procedure::Procedures;
use crate::recovery::Replayer;
use crate::schema::{Catalog, TableId};

/// What one round of a standby did.
#[derive(Debug, Clone, Default)]
pub struct RoundReport {
    /// Log bytes read from the service.
    pub bytes_read: u64,
    /// Transactions replayed.
    pub txns: u64,
    /// Seconds reading.
    pub read_seconds: f64,
    /// Seconds replaying (readers waited meanwhile).
    pub replay_seconds: f64,
    /// Each message this round made visible: when the service stored it (nanoseconds since
    /// the Unix epoch) and its lag, microseconds from then to the end of the round.
    pub lag_us: Vec<(i128, u64)>,
}

struct Following {
    tail: Box<dyn LogTail>,
    follower: Box<dyn Follower>,
    /// Per stream: messages read but not yet replayed up to their end (end LSN, stored at).
    waiting: Vec<std::collections::VecDeque<(Lsn, i128)>>,
}

/// A hot standby (see the module doc).
pub struct Standby {
    inner: DbInner,
    following: Mutex<Following>,
    /// Readers hold it shared; a round's replay holds it exclusively.
    view: RwLock<()>,
    max_txn: AtomicU64,
    /// The checkpoint epoch of the image the standby started from.
    cut: Option<Cut>,
    opened: OpenReport,
    /// `braid.json` as found in the local directory.
    meta: Meta,
}

impl std::fmt::Debug for Standby {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Standby")
            .field("dir", &self.inner.dir)
            .field("scheme", &self.inner.opts.scheme.name())
            .finish_non_exhaustive()
    }
}

impl Standby {
    /// Follow the database kept on `opts.device` (an external device), with `dir` as the
    /// standby's local directory (empty, or a standby's or writer's earlier one). `catalog`,
    /// `procs` and `loader` are the application's, as for a writer.
    pub(crate) fn open(
        dir: &Path,
        mut opts: Options,
        catalog: Catalog,
        procs: Procedures,
        loader: &dyn Fn(&Loader<'_>) -> Result<(), EngineError>,
    ) -> Result<Standby, EngineError> {
        catalog.validate()?;
        opts.check()?;
        fit_device(&mut opts);
        let DeviceConfig::External(factory) = &opts.device else {
            return Err(EngineError::Unsupported(
                crate::Unsupported::StandbyNeedsExternal,
            ));
        };
        let factory = factory.clone();
        let streams = opts.scheme.streams_for(opts.streams);
        let env = opts.env_in_use();
        // The local directory is this standby's (it mirrors checkpoints there), and the
        // writer's once promoted: locked like a writer's.
        let lock = super::lock::claim(dir, &env)?;
        let (created, meta) =
            Meta::new(&opts, streams, &catalog).check_or_create(dir, &env, &opts.device)?;
        if created {
            return Err(EngineError::NoDatabase {
                location: factory.location(),
            });
        }
        let started = Instant::now();
        let mut inner = DbInner::unopened(dir, opts, env.clone(), &catalog, procs, lock);
        // No device is opened: a log purged past the checkpoint is found by the first round.
        let image = loader::build(&mut inner, &env, false, &[], loader, &|_| {})?;
        let cfg = scheme_config(&inner.opts, image.cut.clone());
        let follower = inner.opts.scheme.follower(&cfg, streams)?;
        let tail = factory.open_tail(streams)?;
        let opened = OpenReport {
            created: false,
            rows_loaded: image.rows,
            load_seconds: image.seconds,
            checkpoint: image.checkpoint,
            recovery: RecoveryReport {
                seconds: started.elapsed().as_secs_f64(),
                ..RecoveryReport::default()
            },
        };
        Ok(Standby {
            max_txn: AtomicU64::new(image.next_txn.saturating_sub(1)),
            following: Mutex::new(Following {
                tail,
                follower,
                waiting: vec![Default::default(); streams],
            }),
            view: RwLock::new(()),
            cut: image.cut,
            opened,
            inner,
            meta,
        })
    }

    /// What opening the standby loaded (its checkpoint, if any).
    pub fn open_report(&self) -> &OpenReport {
        &self.opened
    }

    /// One round: read what the streams gained, replay what it proves committed.
    pub fn catch_up(&self) -> Result<RoundReport, EngineError> {
        let mut f = self.following.lock();
        let f = &mut *f;
        let t0 = Instant::now();
        let keep = f.follower.resume();
        let poll = f.tail.poll(&keep)?;
        for (w, m) in f.waiting.iter_mut().zip(poll.messages) {
            w.extend(m);
        }
        let t1 = Instant::now();
        let rep = {
            let _excl = self.view.write();
            let replayer = Replayer::new(&self.inner);
            let sources = f.tail.sources();
            let rep = f.follower.round(&sources, &replayer)?;
            let max_ts = replayer.finish();
            self.inner.mv.advance(max_ts);
            rep
        };
        self.max_txn.fetch_max(rep.max_txn, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let mut lag_us = Vec::new();
        for (w, &at) in f.waiting.iter_mut().zip(&f.follower.resume()) {
            while w.front().is_some_and(|&(end, _)| end <= at) {
                if let Some((_, stored)) = w.pop_front() {
                    lag_us.push((stored, ((now - stored).max(0) / 1000) as u64));
                }
            }
        }
        Ok(RoundReport {
            bytes_read: poll.bytes,
            txns: rep.txns,
            read_seconds: (t1 - t0).as_secs_f64(),
            replay_seconds: t1.elapsed().as_secs_f64(),
            lag_us,
        })
    }

    /// Per stream: everything before it is replayed.
    pub fn position(&self) -> Vec<Lsn> {
        self.following.lock().follower.resume()
    }

    /// The id of the table called `name`.
    pub fn table(&self, name: &str) -> Option<TableId> {
        self.inner.table_id(name)
    }

    /// Run `f` on a transaction-consistent view: no round replays while it runs. `f` gets a
    /// lookup of row images by table and key.
    pub fn read<R>(&self, f: impl FnOnce(&dyn Fn(TableId, u64) -> Option<Vec<u8>>) -> R) -> R {
        let _shared = self.view.read();
        f(&|t, k| self.inner.peek(t, k))
    }

    /// Take over as the writer (see the module doc): fences the old writer, replays what the
    /// standby had not, and opens the database for new transactions.
    pub fn promote(self) -> Result<(Db, OpenReport), EngineError> {
        let Standby {
            mut inner,
            following,
            max_txn,
            cut,
            opened,
            meta,
            ..
        } = self;
        let following = following.into_inner();
        let (at, marks, keeps) = (
            following.follower.resume(),
            following.follower.marks(),
            following.follower.keeps(),
        );
        let streams = at.len();
        // The old writer may have taken checkpoints since the standby loaded its own: mirror
        // the store, and number the next checkpoint past every one of them.
        if let Some(store) = crate::checkpoint::store::of(&inner.opts) {
            let env = inner.env.clone();
            crate::checkpoint::store::sync_local(&env, &inner.dir, store)?;
            let newest = crate::checkpoint::list_in(&env, &inner.dir)?
                .last()
                .map_or(0, |(e, _)| *e);
            let current = cut.as_ref().map_or(0, |c| c.epoch);
            if newest > current {
                inner.epochs = Epochs::new(inner.opts.max_workers.max(1), newest);
            }
        }
        let storage = make_storage(&inner.dir.clone(), &inner.opts, &inner.env, streams, &meta)?;
        let cut = Cut {
            epoch: cut.as_ref().map_or(0, |c| c.epoch),
            starts: at.clone(),
            ends: at,
            marks,
            keeps,
        };
        let recovery = open_scheme(&mut inner, storage, Some(cut), &|_| {})?;
        let next = (recovery.max_txn.max(max_txn.load(Ordering::Relaxed)) + 1).max(1);
        inner.next_txn = AtomicU64::new(next);
        let inner = std::sync::Arc::new(inner);
        crate::checkpoint::spawn_trigger(&inner)?;
        let report = OpenReport { recovery, ..opened };
        Ok((Db { inner }, report))
    }
}
