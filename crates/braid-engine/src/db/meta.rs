//! On-disk metadata: `braid.json` ([`Meta`]) records what a database was created with, and
//! reopening checks it against the options it is opened with, refusing another format, scheme,
//! stream count, device kind, concurrency control, ring size or catalog with a message that says
//! what to do.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::options::{Cc, DeviceConfig, Options};
use crate::env::Env;
use crate::error::{EngineError, Mismatch};
use crate::schema::Catalog;

pub(super) const META_FILE: &str = "braid.json";
const META_FORMAT: u32 = 1;

/// What `braid.json` records about a database.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    /// Format version of the database directory.
    pub format: u32,
    /// Name of the logging scheme.
    pub scheme: String,
    /// Log streams the scheme uses (which may be fewer than [`Options::streams`] asked for).
    pub streams: usize,
    /// Device kind ([`DeviceConfig::kind`]).
    pub device: String,
    /// Logging kind the database was created with (records carry their own kind; informative).
    pub logging: String,
    /// Pmem ring bytes per stream, for pmem devices.
    #[serde(default)]
    pub ring_size: Option<usize>,
    /// Segment bytes, for file devices.
    #[serde(default)]
    pub segment_size: Option<u64>,
    /// RAID-0 member devices per stream and stripe unit, for striped file devices.
    #[serde(default)]
    pub stripe: Option<(usize, u64)>,
    /// The emulated device speed the database was created with, as (MB/s, microseconds per
    /// sync) ([`Options::pace`]): reopening applies it unless the options name another, so a
    /// log written to an emulated device is read back at that device's speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<(f64, u64)>,
    /// Where an external device keeps the log (e.g. the NATS URL), for external devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Directories outside the database directory that hold files of the database (the
    /// `nvdisk` log, kept on a RAM file system): found from here, and removed with the
    /// database by [`Db::destroy`](crate::Db::destroy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<std::path::PathBuf>,
    /// The tables; reopening with another catalog is refused.
    pub catalog: Catalog,
    /// Whether the database is multi-versioned (its records carry commit timestamps).
    #[serde(default)]
    pub mvcc: bool,
    /// Whatever the application wants to find again on reopen (the workload and its
    /// parameters, for the `braid` command).
    #[serde(default)]
    pub app: serde_json::Value,
}

impl Meta {
    /// What a database opened with `opts` (the device as the scheme needs it), using `streams`
    /// log streams and holding `catalog`, records.
    pub(super) fn new(opts: &Options, streams: usize, catalog: &Catalog) -> Meta {
        Meta {
            format: META_FORMAT,
            scheme: opts.scheme.name().to_string(),
            streams,
            device: opts.device.kind().to_string(),
            logging: opts.logging.name().to_string(),
            ring_size: match &opts.device {
                DeviceConfig::Pmem(p) => Some(p.ring_size),
                _ => None,
            },
            segment_size: match &opts.device {
                DeviceConfig::File(f) => Some(f.segment_size),
                _ => None,
            },
            stripe: match &opts.device {
                DeviceConfig::File(f) if f.stripe > 1 => Some((f.stripe, f.stripe_unit)),
                _ => None,
            },
            pace: opts
                .pace
                .filter(|p| !p.is_unlimited())
                .map(|p| (p.mbps, p.sync_us)),
            location: match &opts.device {
                DeviceConfig::External(f) => Some(f.location()),
                _ => None,
            },
            outside: Vec::new(),
            catalog: catalog.clone(),
            mvcc: opts.cc == Cc::Mvcc,
            app: opts.app.clone(),
        }
    }

    /// The emulated device speed recorded ([`Meta::pace`]).
    pub fn device_pace(&self) -> Option<braid_wal::device::Pace> {
        self.pace.map(|(mbps, sync_us)| {
            braid_wal::device::Pace::default()
                .mbps(mbps)
                .sync_us(sync_us)
        })
    }

    /// Read `braid.json` of the database in `dir`.
    pub fn read(dir: &Path) -> Result<Meta, EngineError> {
        Meta::read_in(dir, &Env::default())
    }

    /// [`Meta::read`] on the files of `env`.
    pub(crate) fn read_in(dir: &Path, env: &Env) -> Result<Meta, EngineError> {
        let bytes =
            env.read_file(&dir.join(META_FILE))?
                .ok_or_else(|| EngineError::NotADatabase {
                    path: dir.to_path_buf(),
                })?;
        Meta::parse(dir, &bytes)
    }

    fn parse(dir: &Path, bytes: &[u8]) -> Result<Meta, EngineError> {
        serde_json::from_slice(bytes).map_err(|source| EngineError::BadMeta {
            path: dir.to_path_buf(),
            source,
        })
    }

    /// Check the database in `dir` against `self`, what opening it asks for, or create it:
    /// write `braid.json` if the directory is empty or absent. Returns whether it was created,
    /// and the database's `braid.json` as found or written.
    ///
    /// With an external device ([`DeviceConfig::External`]) `braid.json` is also kept beside
    /// the log: an empty directory whose external log already holds a database takes its
    /// `braid.json` from there (checked like a local one) and recovers, and a new database
    /// stores its `braid.json` there too.
    pub(super) fn check_or_create(
        &self,
        dir: &Path,
        env: &Env,
        device: &DeviceConfig,
    ) -> Result<(bool, Meta), EngineError> {
        let meta_path = dir.join(META_FILE);
        let external = match device {
            DeviceConfig::External(f) => Some(f),
            _ => None,
        };
        let check_location = |found: &Meta| match (external, &found.location) {
            (Some(f), Some(loc)) => f
                .check_location(loc)
                .map_err(|source| EngineError::Mismatch {
                    dir: dir.to_path_buf(),
                    mismatch: Mismatch::Location {
                        source: Box::new(source),
                    },
                }),
            _ => Ok(()),
        };
        if let Some(bytes) = env.read_file(&meta_path)? {
            let found = Meta::parse(dir, &bytes)?;
            check(dir, &found, self)?;
            check_location(&found)?;
            return Ok((false, found));
        }
        if super::lock::is_foreign(dir, env)? {
            return Err(EngineError::NotADatabase {
                path: dir.to_path_buf(),
            });
        }
        if let Some(f) = external
            && let Some(bytes) = f.load_meta()?
        {
            let found = Meta::parse(dir, &bytes)?;
            check(dir, &found, self)?;
            check_location(&found)?;
            env.write_file_atomic(&meta_path, &bytes)?;
            return Ok((false, found));
        }
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| EngineError::Internal(crate::Invariant::MetaEncode(e)))?;
        if let Some(f) = external {
            f.store_meta(&bytes)?;
        }
        env.write_file_atomic(&meta_path, &bytes)?;
        Ok((true, self.clone()))
    }
}

fn check(dir: &Path, found: &Meta, want: &Meta) -> Result<(), EngineError> {
    let mismatch = if found.format != META_FORMAT {
        Mismatch::Format {
            found: found.format,
            reads: META_FORMAT,
        }
    } else if found.scheme != want.scheme {
        Mismatch::Scheme {
            found: found.scheme.clone(),
            want: want.scheme.clone(),
        }
    } else if found.streams != want.streams {
        Mismatch::Streams {
            found: found.streams,
        }
    } else if found.device != want.device {
        Mismatch::Device {
            found: found.device.clone(),
        }
    } else if found.mvcc != want.mvcc {
        Mismatch::Mvcc { found: found.mvcc }
    } else if found.ring_size.is_some()
        && want.ring_size.is_some()
        && found.ring_size != want.ring_size
    {
        Mismatch::RingSize {
            found: found.ring_size.unwrap_or_default(),
        }
    } else if found.device == "file" && found.stripe != want.stripe {
        Mismatch::Stripe {
            found: found.stripe,
        }
    } else if found.catalog != want.catalog {
        Mismatch::Catalog {
            difference: catalog_difference(&found.catalog, &want.catalog),
        }
    } else {
        return Ok(());
    };
    Err(EngineError::Mismatch {
        dir: dir.to_path_buf(),
        mismatch,
    })
}

/// How catalog `found` differs from `want`, in words.
fn catalog_difference(found: &Catalog, want: &Catalog) -> String {
    if found.tables.len() != want.tables.len() {
        return format!(
            "the database has {} tables, {} were asked for",
            found.tables.len(),
            want.tables.len()
        );
    }
    for (i, (a, b)) in found.tables.iter().zip(&want.tables).enumerate() {
        if a != b {
            if a.name == b.name {
                return format!("table {} has other columns or index than asked for", a.name);
            }
            return format!(
                "table {i} is {} in the database but {} was asked for",
                a.name, b.name
            );
        }
    }
    String::from("the tables differ")
}
