//! The crash-test oracle for marked YCSB (see `braid_workloads::ycsb`): from the intents every
//! transaction declared just before its commit (keys written, writers it read), the set of
//! commits acknowledged before the crash, and the recovered rows, check DESIGN.md's invariants:
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
#[derive(Debug, Clone, Default)]
pub struct Intent {
    pub txn: u64,
    pub writes: Vec<u64>,
    /// (key, writer observed).
    pub reads: Vec<(u64, u64)>,
}

impl Intent {
    /// One line of the child's report: `I txn w k,k r k=w,k=w`.
    pub fn to_line(&self) -> String {
        let w: Vec<String> = self.writes.iter().map(|k| k.to_string()).collect();
        let r: Vec<String> = self.reads.iter().map(|(k, w)| format!("{k}={w}")).collect();
        format!("I {} w {} r {}", self.txn, w.join(","), r.join(","))
    }

    pub fn parse(line: &str) -> Option<Intent> {
        let mut it = line.split(' ');
        if it.next()? != "I" {
            return None;
        }
        let txn = it.next()?.parse().ok()?;
        if it.next()? != "w" {
            return None;
        }
        let ws = it.next().unwrap_or("");
        let writes = ws
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect::<Option<Vec<u64>>>()?;
        let mut reads = Vec::new();
        if it.next() == Some("r") {
            for kv in it.next().unwrap_or("").split(',').filter(|s| !s.is_empty()) {
                let (k, w) = kv.split_once('=')?;
                reads.push((k.parse().ok()?, w.parse().ok()?));
            }
        }
        Some(Intent { txn, writes, reads })
    }
}

/// The verdict for one round.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Verdict {
    pub acknowledged: usize,
    pub recovered_visible: usize,
    pub violations: Vec<String>,
    /// Recovery started from a checkpoint.
    pub from_checkpoint: bool,
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
    db.for_each_row(table, |k, img| {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn intent_line_round_trip() {
        let i = Intent {
            txn: 7,
            writes: vec![1, 2],
            reads: vec![(3, 0), (4, 9)],
        };
        let p = Intent::parse(&i.to_line()).expect("parses");
        assert_eq!(p.txn, 7);
        assert_eq!(p.writes, vec![1, 2]);
        assert_eq!(p.reads, vec![(3, 0), (4, 9)]);
        let empty = Intent {
            txn: 1,
            writes: vec![],
            reads: vec![],
        };
        assert_eq!(Intent::parse(&empty.to_line()).map(|i| i.txn), Some(1));
        assert!(Intent::parse("A 5").is_none());
    }
}
