//! Schemes by name: the one place that lists them.
//!
//! A scheme is one folder under `scheme/` whose configuration type implements [`SchemeDef`]
//! (its name, what it supports, where its log lives, its own options parsed from text, and how
//! it opens), plus one line in [`SCHEMES`]. Neither the engine nor the `braid` command names a
//! scheme: they ask the definition. A [`SchemeSpec`] is a chosen, configured scheme, cheap to
//! clone, built from a typed configuration (`TaurusConfig::default().into()`) or from text
//! (`"taurus"`, `"gsn:partition=page,commit=passive"`).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::{RecoveryReport, Replay, Scheme, SchemeConfig, Storage};
use crate::WalError;

/// Where a scheme keeps its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogPlace {
    /// Nowhere: nothing survives a crash (the `none` baseline).
    Nowhere,
    /// One log device per stream, of the kind the user chose (file, pmem, ...).
    Devices,
    /// One file device per stream in a directory on NVRAM used as a disk (`/dev/shm`),
    /// whatever device was asked for: NV-Logging's NV-Disk baseline.
    NvramFiles,
    /// A persistent-memory region of its own, plus backup files (NV-Logging's log objects).
    Region,
}

/// What a scheme is. Implemented by each scheme's configuration type; see the module doc.
pub trait SchemeDef: fmt::Debug + Send + Sync {
    /// The name users choose it by (`--scheme NAME`, `braid.json`).
    fn name(&self) -> &'static str;
    /// Where its log lives.
    fn log_place(&self) -> LogPlace {
        LogPlace::Devices
    }
    /// Streams it uses when `requested` were asked for.
    fn streams_for(&self, requested: usize) -> usize {
        let _ = requested;
        1
    }
    /// Why it cannot log commands (stored-procedure calls), if it cannot.
    fn command_logging_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Why it cannot keep its log on persistent-memory devices, if it cannot.
    fn pmem_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Why it cannot log one record per write ([`super::Records::Update`]), if it cannot.
    fn update_records_refusal(&self) -> Option<&'static str> {
        Some(
            "this scheme logs one record per transaction; per-update records (Records::Update) \
             are supported by serial, nvdisk, aether, baseline, gsn and pertxn",
        )
    }
    /// Whether the engine may release a committing transaction's locks once its record is in
    /// the log buffer (early lock release, the default), or must hold them until the commit
    /// is durable (Shore-MT's Baseline, Johnson et al. 2010 Sec. 6).
    fn early_lock_release(&self) -> bool {
        true
    }
    /// How often it acknowledges commits, where it acknowledges them in batches rather than
    /// each as soon as its record is durable (Silo-R's epoch): a client that keeps commits in
    /// flight needs enough of them to cover such a batch.
    fn acknowledges_every(&self) -> Option<std::time::Duration> {
        None
    }
    /// Why it cannot recover a multi-versioned database (records carrying commit timestamps),
    /// if it cannot.
    fn mvcc_refusal(&self) -> Option<&'static str> {
        None
    }
    /// Set one of its own options from text, e.g. `("partition", "page")`. An unknown name is
    /// refused with the list of known ones.
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        let _ = value;
        Err(unknown_option(self.name(), key, &[]))
    }
    /// Its options and their values now, as text (recorded with every result).
    fn options(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Recover its log from `storage` through `replay`, then start it for new transactions.
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError>;
    /// A standby's replay of this scheme's log over `streams` streams (see
    /// `super::follow`); refused, saying why, for a scheme whose committed transactions are
    /// not a prefix of each stream.
    fn follower(
        &self,
        cfg: &SchemeConfig,
        streams: usize,
    ) -> Result<Box<dyn super::follow::Follower>, WalError> {
        let _ = (cfg, streams);
        Err(WalError::Unsupported(crate::Unsupported::StandbyScheme {
            scheme: self.name().to_string(),
        }))
    }
    /// A boxed copy (a [`SchemeSpec`] is `Clone`).
    fn clone_def(&self) -> Box<dyn SchemeDef>;
}

/// One registered scheme: its name and its default configuration.
pub struct Registration {
    /// The scheme's name (equal to its definition's [`SchemeDef::name`]).
    pub name: &'static str,
    /// What it is, in one line (for `--help` and reports).
    pub about: &'static str,
    /// Its default configuration.
    pub default: fn() -> Box<dyn SchemeDef>,
}

/// Every scheme braid has, in the order reports list them. Adding a scheme: its folder, and
/// one line here.
pub static SCHEMES: &[Registration] = &[
    super::none::REGISTRATION,
    super::serial::REGISTRATION,
    super::nvdisk::REGISTRATION,
    super::aether::AETHER,
    super::aether::BASELINE,
    super::pertxn::REGISTRATION,
    super::taurus::REGISTRATION,
    super::gsn::REGISTRATION,
    super::autonomous::REGISTRATION,
    super::silor::REGISTRATION,
    super::plover::REGISTRATION,
];

/// The names of every registered scheme, in [`SCHEMES`] order.
pub fn names() -> impl Iterator<Item = &'static str> {
    SCHEMES.iter().map(|r| r.name)
}

/// A chosen and configured scheme.
pub struct SchemeSpec(Box<dyn SchemeDef>);

/// The default scheme, declared here once: `serial`, the central log (the baseline every
/// paper measures against), with its default options. `braid_engine::Options::default()`,
/// [`crate::Wal::builder`] and the command's defaults take it from here.
impl Default for SchemeSpec {
    fn default() -> SchemeSpec {
        SchemeSpec::new(super::serial::SerialConfig)
    }
}

impl SchemeSpec {
    /// Wrap a scheme's configuration.
    pub fn new(def: impl SchemeDef + 'static) -> SchemeSpec {
        SchemeSpec(Box::new(def))
    }

    /// The registered scheme `name` with its default options.
    pub fn named(name: &str) -> Result<SchemeSpec, WalError> {
        SCHEMES
            .iter()
            .find(|r| r.name == name)
            .map(|r| SchemeSpec((r.default)()))
            .ok_or_else(|| WalError::UnknownScheme {
                name: name.to_string(),
                known: names().collect::<Vec<_>>().join(", "),
            })
    }

    /// Set one of the scheme's options from text.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        self.0.set_option(key, value)
    }

    /// The scheme's name.
    pub(crate) fn name(&self) -> &'static str {
        self.0.name()
    }
}

impl std::ops::Deref for SchemeSpec {
    type Target = dyn SchemeDef;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl Clone for SchemeSpec {
    fn clone(&self) -> Self {
        SchemeSpec(self.0.clone_def())
    }
}

impl fmt::Debug for SchemeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The scheme's name only; its options are in [`SchemeDef::options`].
impl fmt::Display for SchemeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Two specs are equal when they name the same scheme with the same options.
impl PartialEq for SchemeSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && self.options() == other.options()
    }
}

/// `NAME` or `NAME:key=value,key=value`.
impl FromStr for SchemeSpec {
    type Err = WalError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, opts) = s.split_once(':').unwrap_or((s, ""));
        let mut spec = SchemeSpec::named(name.trim())?;
        for kv in opts.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                WalError::BadOption(crate::BadOption::NotKeyValue {
                    scheme: name.to_string(),
                    given: kv.to_string(),
                })
            })?;
            spec.set(k.trim(), v.trim())?;
        }
        Ok(spec)
    }
}

impl<T: SchemeDef + 'static> From<T> for SchemeSpec {
    fn from(def: T) -> Self {
        SchemeSpec::new(def)
    }
}

/// The error for an option a scheme does not have.
pub(crate) fn unknown_option(scheme: &str, key: &str, known: &[&'static str]) -> WalError {
    WalError::BadOption(crate::BadOption::Unknown {
        scheme: scheme.to_string(),
        key: key.to_string(),
        known: known.to_vec(),
    })
}

/// Parse an option value, naming the scheme and option on failure.
pub(crate) fn parse_option<T: FromStr>(scheme: &str, key: &str, value: &str) -> Result<T, WalError>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    value.parse().map_err(|e: T::Err| {
        WalError::BadOption(crate::BadOption::Value {
            scheme: scheme.to_string(),
            key: key.to_string(),
            value: value.to_string(),
            source: std::sync::Arc::new(e),
        })
    })
}

/// A size in bytes from the command line: a number, optionally followed by a unit (`K`/`KiB`,
/// `M`/`MiB`, `G`/`GiB`, all powers of 1024; `B` or none for bytes).
#[cfg(feature = "cli")]
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {s:?}: use B, KiB, MiB or GiB"
            ));
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size: write a number, e.g. 262144 or 256KiB"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// An error for a storage the scheme cannot use.
pub(crate) fn wrong_storage(scheme: &str, want: LogPlace) -> WalError {
    WalError::WrongLog(crate::WrongLog::Storage {
        scheme: scheme.to_string(),
        want: match want {
            LogPlace::Nowhere => "no storage",
            LogPlace::Devices | LogPlace::NvramFiles => "log devices",
            LogPlace::Region => "a persistent-memory region",
        },
    })
}

#[cfg(all(test, feature = "cli"))]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_size("262144"), Ok(262_144));
        assert_eq!(parse_size("256KiB"), Ok(256 << 10));
        assert_eq!(parse_size("256k"), Ok(256 << 10));
        assert_eq!(parse_size("1 MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("7B"), Ok(7));
        assert!(parse_size("1.5MiB").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
        assert!(parse_size("17179869184G").is_err());
    }
}
