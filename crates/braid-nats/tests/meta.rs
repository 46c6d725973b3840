//! `braid.json` records the device and where its log lives; reopening with another device kind
//! is refused with what to do.

use braid_engine::{EngineError, Mismatch, Options};

use crate::support::{Cluster, open, options};

#[test]
fn reopening_with_another_device_kind_is_refused() {
    let cluster = Cluster::start();
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    drop(open(&db_dir, options(cluster.config("kinds"))).unwrap());
    let meta = braid_engine::Meta::read(&db_dir).unwrap();
    assert_eq!(meta.device, "nats");
    assert_eq!(meta.location, Some(format!("{}#kinds", cluster.url)));
    let err = open(&db_dir, Options::default()).err().unwrap();
    assert!(
        matches!(
            err,
            EngineError::Mismatch {
                mismatch: Mismatch::Device { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("an Options::device of kind nats"), "{err}");
    // Another database id for the same directory is refused too.
    let err = open(&db_dir, options(cluster.config("other")))
        .err()
        .unwrap();
    assert!(
        matches!(
            &err,
            EngineError::Mismatch {
                mismatch: Mismatch::Location { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("the device's db_id kinds"), "{err}");
}
