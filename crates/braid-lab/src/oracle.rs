//! The crash-test oracle for marked YCSB (see `braid_workloads::ycsb`): from the intents every
//! transaction declared just before its commit (keys written, writers it read), the set of commits
//! acknowledged before the crash, and the recovered rows, check docs/design.md's invariants:
//!
//! 1. durability: every acknowledged write is present or superseded by a later recovered write;
//! 2. atomicity: a transaction visible anywhere has all of its writes present or superseded;
//! 3. closure: a visible transaction's reads saw writers that are themselves recovered;
//! 4. order / state: every row holds exactly the image its last recovered writer wrote (or the
//!    initial image), which is what a serial replay of the recovered set produces.
//!
//! Per key, the order of writers is the order of their intents: intents are declared while the
//! writer holds its locks (2PL) or after its reads were validated against earlier writers (OCC
//! treats every update as read-modify-write), so conflicting writers declare in commit order.

use std::collections::{HashMap, HashSet};

use braid_engine::Db;
use braid_workloads::ycsb::{self, YcsbConfig};

/// What a transaction declared before committing.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Intent {
    pub txn: u64,
    pub writes: Vec<u64>,
    /// (key, writer observed).
    pub reads: Vec<(u64, u64)>,
}

/// The verdict for one round.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Verdict {
    pub acknowledged: usize,
    pub recovered_visible: usize,
    pub violations: Vec<String>,
    /// Recovery started from a checkpoint.
    pub from_checkpoint: bool,
    /// Power mode: the cut came by timeout, not at its persist event (not replayable exactly).
    pub cut_by_timeout: bool,
    /// What a failure report adds after the violations (where the crashed image was kept).
    pub notes: Vec<String>,
}

/// Check the recovered database against the intents and acknowledgements.
pub fn check(cfg: &YcsbConfig, db: &Db, intents: &[Intent], acked: &HashSet<u64>) -> Verdict {
    let mut v = Verdict {
        acknowledged: acked.len(),
        ..Verdict::default()
    };
    let mut order: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut by_txn: HashMap<u64, &Intent> = HashMap::new();
    for i in intents {
        by_txn.insert(i.txn, i);
        for &k in &i.writes {
            order.entry(k).or_default().push(i.txn);
        }
    }
    // Position of the final writer of each written key (-1 = initial image).
    let mut final_pos: HashMap<u64, isize> = HashMap::new();
    let mut visible: HashSet<u64> = HashSet::new();
    let table = ycsb::TABLE;
    for (&k, writers) in &order {
        let Some(img) = db.peek(table, k) else {
            v.violations
                .push(format!("key {k} is missing after recovery"));
            continue;
        };
        let w = ycsb::writer_of(&img);
        if img != ycsb::row_image(cfg, w, k) {
            v.violations.push(format!(
                "key {k} holds an image no transaction wrote whole (claims writer {w})"
            ));
            continue;
        }
        let pos = if w == 0 {
            -1
        } else {
            match writers.iter().position(|&t| t == w) {
                Some(p) => p as isize,
                None => {
                    v.violations.push(format!("key {k} holds the write of transaction {w}, which never declared writing it"));
                    continue;
                }
            }
        };
        final_pos.insert(k, pos);
        if w != 0 {
            visible.insert(w);
        }
    }
    v.recovered_visible = visible.len();
    let pos_of = |k: u64, t: u64| -> Option<isize> {
        order
            .get(&k)?
            .iter()
            .position(|&x| x == t)
            .map(|p| p as isize)
    };
    let present_or_superseded = |k: u64, t: u64| -> bool {
        match (final_pos.get(&k), pos_of(k, t)) {
            (Some(&f), Some(p)) => f >= p,
            _ => false,
        }
    };
    for &t in acked {
        let Some(i) = by_txn.get(&t) else {
            v.violations
                .push(format!("acknowledged transaction {t} has no intent"));
            continue;
        };
        for &k in &i.writes {
            if !present_or_superseded(k, t) {
                v.violations.push(format!(
                    "durability: acknowledged transaction {t} lost its write of key {k}"
                ));
            }
        }
    }
    for &t in &visible {
        let Some(i) = by_txn.get(&t) else { continue };
        for &k in &i.writes {
            if !present_or_superseded(k, t) {
                v.violations.push(format!(
                    "atomicity: transaction {t} is visible but its write of key {k} is not"
                ));
            }
        }
        for &(k, w) in &i.reads {
            if w != 0 && !present_or_superseded(k, w) {
                v.violations.push(format!(
                    "closure: transaction {t} is recovered but transaction {w}, whose write of key {k} it read, is not"
                ));
            }
        }
    }
    // Keys nobody declared writing must still hold their initial image.
    let mut stray = 0;
    db.for_each_row(table, .., |k, img| {
        if !order.contains_key(&k) && ycsb::writer_of(img) != 0 && stray < 5 {
            stray += 1;
        }
    });
    if stray > 0 {
        v.violations.push(format!(
            "{stray} keys hold writes of transactions that declared no write to them"
        ));
    }
    v.violations.truncate(50);
    v
}
