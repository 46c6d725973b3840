//! Checkpoints kept beside an external log: the [`CheckpointStore`] of a [`DeviceFactory`]
//! that keeps them (the NATS device's object store bucket), so a database whose directory is
//! lost recovers from its newest checkpoint and the log after it, and the log can be truncated.
//!
//! The store is the truth, and the order of the steps is what makes it so:
//! * a checkpoint is sealed locally, then uploaded; a checkpoint whose upload fails is removed
//!   locally and fails, so the log is only ever truncated up to a checkpoint the store holds;
//! * retention removes the store's checkpoints older than the two kept, before the log is
//!   truncated up to the older of the two (which the store is checked to hold);
//! * at open, the local `checkpoints/` is made to hold exactly what the store holds: missing
//!   ones are downloaded (temporary file, fsync, rename, directory fsync), and a local one the
//!   store lacks is removed: it came from a checkpoint whose upload never completed, and the
//!   log was never truncated past it.
//!
//! [`DeviceFactory`]: crate::DeviceFactory

use std::collections::BTreeSet;
use std::path::Path;

use crate::db::{CheckpointStore, DeviceConfig, Options};
use crate::env::Env;
use crate::error::{CheckpointDamage, CheckpointError, EngineError};

use super::{DIR, file_name, io, list_in, parse_name};

/// The checkpoint store of `opts`' device, if it is external and keeps checkpoints.
pub(crate) fn of(opts: &Options) -> Option<&dyn CheckpointStore> {
    match &opts.device {
        DeviceConfig::External(f) => f.checkpoints(),
        _ => None,
    }
}

/// The epochs of the checkpoints `store` holds (names that are not checkpoints are ignored).
fn held(store: &dyn CheckpointStore) -> Result<BTreeSet<u64>, EngineError> {
    let names = store.list().map_err(|source| CheckpointError::List {
        location: store.location(),
        source: Box::new(source),
    })?;
    Ok(names
        .iter()
        .filter_map(|n| parse_name(Path::new(n)))
        .collect())
}

/// Store the sealed checkpoint file `path` under its file name.
pub(crate) fn upload(
    env: &Env,
    store: &dyn CheckpointStore,
    path: &Path,
) -> Result<(), EngineError> {
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        EngineError::Internal(crate::Invariant::NoFileName {
            path: path.to_path_buf(),
        })
    })?;
    let bytes = env
        .read_file(path)?
        .ok_or_else(|| EngineError::BadCheckpoint {
            path: path.to_path_buf(),
            offset: 0,
            damage: CheckpointDamage::MissingAfterSeal,
        })?;
    store.put(name, &bytes).map_err(|source| {
        CheckpointError::Put {
            name: name.to_string(),
            location: store.location(),
            source: Box::new(source),
        }
        .into()
    })
}

/// Remove from `store` every checkpoint older than epoch `keep_from`, the older of the
/// checkpoints kept; fails if the store does not hold `keep_from` itself, since the log is
/// about to be truncated up to it.
pub(crate) fn retain(store: &dyn CheckpointStore, keep_from: u64) -> Result<(), EngineError> {
    let held = held(store)?;
    if !held.contains(&keep_from) {
        return Err(CheckpointError::NotHeld {
            location: store.location(),
            name: file_name(keep_from),
        }
        .into());
    }
    for &e in held.range(..keep_from) {
        store
            .remove(&file_name(e))
            .map_err(|source| CheckpointError::Remove {
                name: file_name(e),
                location: store.location(),
                source: Box::new(source),
            })?;
    }
    Ok(())
}

/// Make the checkpoints of the database in `dir` those `store` holds (see the module doc).
/// Returns how many were downloaded and how many local ones removed.
pub(crate) fn sync_local(
    env: &Env,
    dir: &Path,
    store: &dyn CheckpointStore,
) -> Result<(usize, usize), EngineError> {
    let held = held(store)?;
    let cdir = dir.join(DIR);
    env.fs.create_dir_all(&cdir).map_err(|e| io(&cdir, e))?;
    let local = list_in(env, dir)?;
    let mut removed = 0;
    for (e, p) in &local {
        if !held.contains(e) {
            env.fs.remove_file(p).map_err(|err| io(p, err))?;
            removed += 1;
        }
    }
    if removed > 0 {
        env.fs.sync_dir(&cdir).map_err(|e| io(&cdir, e))?;
    }
    let mut downloaded = 0;
    for &e in &held {
        if local.iter().any(|(l, _)| *l == e) {
            continue;
        }
        let name = file_name(e);
        // Listed a moment ago but gone now: a retention of another writer removed it.
        let Some(bytes) = store.get(&name).map_err(|source| CheckpointError::Get {
            name: name.clone(),
            location: store.location(),
            source: Box::new(source),
        })?
        else {
            continue;
        };
        env.write_file_atomic(&cdir.join(&name), &bytes)?;
        downloaded += 1;
    }
    Ok((downloaded, removed))
}
