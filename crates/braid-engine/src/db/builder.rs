//! [`Db::builder`]: how a database is opened, one optional part at a time (its [`Options`],
//! the tables of its [`Catalog`], its stored [`Procedures`], the loader of its initial rows, a
//! recovery progress callback), then opened for writing ([`OpenBuilder::open`]), read from a
//! copy while another process writes it ([`OpenBuilder::open_read_only`]), or followed from
//! an external log as a standby ([`OpenBuilder::standby`]).

use std::path::{Path, PathBuf};

use super::Db;
use super::loader::Loader;
use super::open::OpenReport;
use super::options::Options;
use super::standby::Standby;
use crate::error::EngineError;
use crate::procedure::Procedures;
use crate::schema::Catalog;

/// Builds the initial rows of a new database (see [`OpenBuilder::loader`]).
pub(crate) type LoaderFn<'a> = dyn Fn(&Loader<'_>) -> Result<(), EngineError> + 'a;

/// How to open the database in one directory; made by [`Db::builder`]. Every part has a
/// default: [`Options::default`] (durable: the serial scheme on fdatasync'd files), no tables,
/// no procedures, no initial rows, no progress reports.
#[must_use = "a builder opens nothing until `open`, `open_read_only` or `standby` is called"]
pub struct OpenBuilder<'a> {
    dir: PathBuf,
    opts: Options,
    catalog: Catalog,
    procs: Procedures,
    loader: Box<LoaderFn<'a>>,
    progress: Box<dyn Fn(u64) + 'a>,
}

impl std::fmt::Debug for OpenBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenBuilder")
            .field("dir", &self.dir)
            .field("opts", &self.opts)
            .field("catalog", &self.catalog)
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Start opening the database in `dir` (see [`OpenBuilder`]).
    pub fn builder<'a>(dir: impl AsRef<Path>) -> OpenBuilder<'a> {
        OpenBuilder {
            dir: dir.as_ref().to_path_buf(),
            opts: Options::default(),
            catalog: Catalog::new(),
            procs: Procedures::new(),
            loader: Box::new(|_: &Loader<'_>| Ok(())),
            progress: Box::new(|_| {}),
        }
    }
}

impl<'a> OpenBuilder<'a> {
    /// The scheme, device, concurrency control and the rest ([`Options`]).
    pub fn options(mut self, opts: Options) -> Self {
        self.opts = opts;
        self
    }

    /// The tables. A database is reopened with the catalog it was created with (a different
    /// one is refused, naming the difference).
    pub fn catalog(mut self, catalog: Catalog) -> Self {
        self.catalog = catalog;
        self
    }

    /// The stored procedures, which [`Worker::call`](crate::Worker::call) runs and command
    /// logging replays: the same ones, under the same ids, every time the database opens.
    pub fn procedures(mut self, procs: Procedures) -> Self {
        self.procs = procs;
        self
    }

    /// What builds the initial rows: run when the database is created, and at recovery
    /// before the log is replayed onto them unless a checkpoint holds them, so it must build
    /// the same rows every time (the workloads derive them from a seed). An error of the
    /// loader's own is returned as [`EngineError::load`]`(e)`, which keeps it as the
    /// [`source`](std::error::Error::source) of the open's error.
    pub fn loader(mut self, loader: impl Fn(&Loader<'_>) -> Result<(), EngineError> + 'a) -> Self {
        self.loader = Box::new(loader);
        self
    }

    /// Told how many log bytes recovery has read so far, as it reads them.
    pub fn progress(mut self, progress: impl Fn(u64) + 'a) -> Self {
        self.progress = Box::new(progress);
        self
    }

    /// Open the database for writing: create it if the directory is empty or absent, recover
    /// it from its log otherwise.
    ///
    /// A database has one writer: opening takes an exclusive lock on `dir/LOCK` before
    /// anything else of the database is read or written, held until the last handle of the
    /// returned [`Db`] is dropped or its process ends (a `kill -9` included: the kernel drops
    /// the lock). A database already open, in another process or through another handle in
    /// this one, is refused at once with [`EngineError::InUse`], naming the holder's process
    /// id. The log's files and persistent regions are locked as well, so the log under the
    /// engine has one writer too. The locks are advisory `flock` locks, which network file
    /// systems (NFS, SMB) may not enforce between machines: keep a database on a local file
    /// system and never share one between processes. To read a database that another process
    /// writes, use [`OpenBuilder::open_read_only`].
    pub fn open(self) -> Result<(Db, OpenReport), EngineError> {
        super::open::open_writer(
            &self.dir,
            self.opts,
            self.catalog,
            self.procs,
            &*self.loader,
            &*self.progress,
        )
    }

    /// Read the database without writing a byte of it, while another process may be writing
    /// it: its files (log, checkpoints, persistent regions, and what it keeps outside its
    /// directory) are copied into memory, and the database is recovered from the copy with its
    /// own scheme. Nothing is locked, trimmed or created. What the returned [`Db`] holds is a
    /// transaction-consistent state of what was durable when the files were read (each log
    /// stream a prefix, as after a crash at that moment); a writer's later commits are not
    /// seen. Its transactions may read; one that writes fails with
    /// [`TxError::ReadOnly`](crate::TxError::ReadOnly), and checkpoints are refused. Memory:
    /// the size of the database's files, besides its tables.
    ///
    /// A live writer can change the files between two of them (a checkpoint's truncation, a
    /// persistent ring wrapping over what was copied); a copy that recovery refuses is taken
    /// again, up to 5 times. A database on an external device is refused: a standby
    /// ([`OpenBuilder::standby`]) reads such a log.
    pub fn open_read_only(self) -> Result<(Db, OpenReport), EngineError> {
        super::open::open_read_only(
            &self.dir,
            self.opts,
            self.catalog,
            self.procs,
            &*self.loader,
        )
    }

    /// Follow the database kept on the options' device (an external device, such as a
    /// replicated log service), with the directory as the standby's own (empty, or a
    /// standby's or writer's earlier one): see [`Standby`].
    pub fn standby(self) -> Result<Standby, EngineError> {
        Standby::open(
            &self.dir,
            self.opts,
            self.catalog,
            self.procs,
            &*self.loader,
        )
    }
}
