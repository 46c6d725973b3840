//! The front door ([`braid_wal::Wal`]): every scheme with a log recovers what its writers
//! appended, hands each transaction back once with a fresh id (ids go on above the recovered
//! ones after a reopen), no more writers are alive at once than it was opened for, and a wrong
//! scheme name is refused with the known names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Mutex;

use braid_wal::{LogKind, Replay, ReplayError, Wal, WalError};

#[derive(Default)]
struct Seen(Mutex<Vec<(u64, Vec<u8>)>>);

impl Replay for Seen {
    fn apply(&self, txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.0.lock().unwrap().push((txn, payload.to_vec()));
        Ok(())
    }
}

/// `payload` as braid's redo operation on `(0, key)` (so `gsn:partition=page` can place it).
fn redo(key: u64, v: u8) -> Vec<u8> {
    let mut b = braid_wal::payload::RedoBuf::default();
    b.push(&braid_wal::payload::RedoOp::Insert {
        table: 0,
        key,
        data: &[v; 8],
    });
    b.bytes
}

#[test]
fn every_scheme_recovers_what_was_appended_and_ids_go_on() {
    for scheme in [
        "serial",
        "taurus",
        "gsn:partition=page",
        "autonomous",
        "silor",
        "plover",
        "pertxn",
    ] {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let open = |seen: &Seen| {
            Wal::builder(dir.path())
                .scheme(scheme)
                .unwrap()
                .writers(3)
                .region_bytes(4 << 20)
                .open(seen)
                .unwrap()
        };
        let wal = open(&Seen::default());
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let wal = &wal;
                s.spawn(move || {
                    let mut w = wal.writer().unwrap();
                    for i in 0..50u64 {
                        let key = t * 100 + i;
                        w.append(&[(0, key)], &redo(key, 1))
                            .unwrap()
                            .wait()
                            .unwrap();
                    }
                });
            }
        });
        // Three writers at once, not four; a dropped writer's slot is taken again.
        let ws: Vec<_> = (0..3).map(|_| wal.writer().unwrap()).collect();
        assert!(
            matches!(wal.writer(), Err(WalError::TooMany { max: 3, .. })),
            "{scheme}"
        );
        drop(ws);
        drop(wal.writer().unwrap());
        wal.close().unwrap();
        let seen = Seen::default();
        let wal = open(&seen);
        assert_eq!(wal.recovered().txns, 150, "{scheme}");
        let first: BTreeSet<u64> = seen.0.lock().unwrap().iter().map(|(t, _)| *t).collect();
        assert_eq!(first.len(), 150, "{scheme}: a transaction id repeated");
        let mut w = wal.writer().unwrap();
        w.append(&[(0, 999)], &redo(999, 2))
            .unwrap()
            .wait()
            .unwrap();
        drop(w);
        wal.close().unwrap();
        let again = Seen::default();
        let wal = open(&again);
        let ids: BTreeSet<u64> = again.0.lock().unwrap().iter().map(|(t, _)| *t).collect();
        assert_eq!(ids.len(), 151, "{scheme}: the id after reopen repeated one");
        assert!(ids.is_superset(&first), "{scheme}");
        wal.close().unwrap();
    }
}

#[test]
fn an_unknown_scheme_is_refused_with_the_known_names() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    match Wal::builder(dir.path()).scheme("seriall") {
        Err(e @ WalError::UnknownScheme { .. }) => {
            assert!(e.to_string().contains("taurus"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}
