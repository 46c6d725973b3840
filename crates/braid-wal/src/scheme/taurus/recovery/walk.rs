//! Taurus recovery of several data-logged streams by several threads, each walking every
//! stream in Alg. 4's serial order and applying the redo operations of its own share of the
//! keys (`RecoveryPlan::Shares`): no thread holds the log, and no record is handed from one
//! thread to another.
//!
//! Each thread keeps, per stream, a cursor: the start of the stream's next transaction
//! record (its head), or the stream's valid end once it has none. A head whose LV is below
//! the cursors is ready (Alg. 4 line 4, with the cursors as RLV: every record a ready head
//! depends on has been walked, in its own stream's order); the thread applies its share of
//! the head's operations and moves that stream's cursor on. It visits the streams in turn,
//! taking from each while its head is ready, as `replay.rs`'s serial pass does, and stops
//! when no head is ready.
//!
//! Why this is the recovery of Alg. 3-4. The records walked form, per stream, a prefix `W`,
//! and each was ready when walked, so its LV is below the cursors then, hence below `W`: `W`
//! is a closed vector below the valid ends, so `W <= ELV` (Alg. 3's cut is the greatest such
//! vector) and nothing outside the cut is applied, while the streams are still being read.
//! And `W >= ELV`: were a stream `i` walked short of `ELV[i]`, its head `H` would be below
//! the cut, so `H.LV <= ELV`; if `H` were not ready, some stream `j` has `H.LV[j]` past
//! `W[j]`, so `j` too stops short of `ELV[j]` with a head that `H` depends on (transitively,
//! LVs carry their dependencies' LVs), and following the heads one would come back to `H`
//! depending on itself. So the walk stops exactly at the cut, and every thread, deciding
//! from the same records, stops at the same one. A key's operations are all applied by one
//! thread in the walk's order, which respects every dependency between their records (a
//! transaction that wrote a key after another depends on it), so each row ends with its last
//! writer's image, as after Alg. 4.
//!
//! The streams are read once each, their blocks shared by the threads (`feed.rs`), and a
//! share's operations are queued so that their rows are announced before each apply
//! (`apply_queue.rs`). Command logging (re-execution needs every key of a transaction, not a
//! share of them) and MVCC replay through the pipeline of `recovery.rs`.

use std::sync::atomic::AtomicBool;

use super::{Outcome, Read, problem, record_lv, too_wide};
use crate::lv::{self, MAX_STREAMS};
use crate::record::Kind;
use crate::scan::{ScanEnd, StreamSource};
use crate::scheme::apply_queue::ApplyQueue;
use crate::scheme::cut::Cut;
use crate::scheme::feed::{Feed, Records};
use crate::scheme::shared_scan::{self, Share};
use crate::scheme::{RecoveryReport, Replay, SchemeConfig};
use crate::{Lsn, RecordProblem, WalError};

/// A stream's next transaction record, its share's operations copied out.
struct Head {
    start: Lsn,
    txn: u64,
    lv: [u64; MAX_STREAMS],
    ops: Vec<u8>,
}

/// One stream as one thread walks it.
struct Walker<'r> {
    id: usize,
    records: &'r mut dyn Records,
    read: Read,
    /// The latest anchor's LV (sparse stamps are decompressed against it, Alg. 5).
    anchor: [u64; MAX_STREAMS],
    head: Option<Head>,
    /// Start of `head`, or the valid end once the stream has no more.
    cursor: Lsn,
    done: bool,
    /// Transaction records at or past the cut (counted once the walk stops).
    skipped: u64,
}

impl Walker<'_> {
    /// Read on to the next transaction record not in the checkpoint, or to the end.
    fn fill(&mut self, n: usize, cfg: &SchemeConfig, share: &Share) -> Result<(), WalError> {
        let mut tmp = [0u64; MAX_STREAMS];
        let mut ops = self.head.take().map(|h| h.ops).unwrap_or_default();
        ops.clear();
        while let Some(rec) = self.records.next_record()? {
            self.read.records += 1;
            let h = rec.header;
            self.read.max_txn = self.read.max_txn.max(h.txn);
            match h.kind {
                Kind::Anchor => {
                    if rec.stamp.lv_into(&mut tmp[..n]) > n {
                        return Err(too_wide(self.id, h.lsn, n));
                    }
                    lv::max_into(&mut self.anchor[..n], &tmp[..n]);
                    continue;
                }
                Kind::Redo if rec.commits() => {}
                Kind::Command if rec.commits() => {
                    return Err(problem(
                        self.id,
                        h.txn,
                        h.lsn,
                        RecordProblem::CommandLogged { threads: share.n },
                    ));
                }
                _ => continue,
            }
            if Cut::covered(cfg.cut.as_ref(), self.id, h.lsn, h.flags) {
                self.read.covered += 1;
                continue;
            }
            let lv = record_lv(&rec, self.id, n, &self.anchor)?;
            let bad = |e| problem(self.id, h.txn, h.lsn, RecordProblem::Payload(e));
            share.runs(rec.payload, bad, |run| {
                ops.extend_from_slice(run);
                Ok(())
            })?;
            self.cursor = h.lsn;
            self.head = Some(Head {
                start: h.lsn,
                txn: h.txn,
                lv,
                ops,
            });
            return Ok(());
        }
        self.done = true;
        self.cursor = self
            .records
            .end()
            .ok_or(WalError::Internal(crate::Invariant::ScanWithoutEnd))?
            .end;
        Ok(())
    }

    /// Past the cut: count the rest of the stream's transaction records and read to its end.
    fn drain(&mut self, n: usize, cfg: &SchemeConfig, share: &Share) -> Result<(), WalError> {
        let cut = self.cursor;
        while !self.done {
            self.skipped += 1;
            self.fill(n, cfg, share)?;
        }
        self.cursor = cut;
        Ok(())
    }
}

/// Recover `devices` through `replay` on `cfg.recovery_threads` threads (see the module doc).
pub(super) fn recover(
    cfg: &SchemeConfig,
    devices: &[&(dyn StreamSource + Sync)],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    started: std::time::Instant,
) -> Result<Outcome, WalError> {
    let n = devices.len();
    let threads = cfg.recovery_threads.max(1);
    let feeds: Vec<Feed<'_>> = devices
        .iter()
        .map(|d| Feed::new(*d, cfg.scan_mode, threads))
        .collect();
    let (reads, cuts, skipped, txns) = shared_scan::run_shares(threads, |share, stop| {
        let mut readers: Vec<_> = feeds.iter().map(|f| f.reader(stop)).collect();
        let walkers = readers
            .iter_mut()
            .enumerate()
            .map(|(id, r)| Walker {
                id,
                records: r,
                read: Read::empty(),
                anchor: [0; MAX_STREAMS],
                head: None,
                cursor: 0,
                done: false,
                skipped: 0,
            })
            .collect();
        walk(walkers, cfg, replay, share, stop)
    })?;
    // Every share walks the same records and decides alike: share 0's counts are the log's.
    let mut report = RecoveryReport {
        txns,
        skipped,
        stages: vec![("read and replay", started.elapsed().as_secs_f64())],
        plan: Some("shares"),
        ..RecoveryReport::default()
    };
    for (r, &cut) in reads.iter().zip(&cuts) {
        progress(r.bytes);
        report.records += r.records;
        report.bytes += r.bytes;
        report.max_txn = report.max_txn.max(r.max_txn);
        report.covered += r.covered;
        report.ends.push(ScanEnd {
            end: cut,
            ..r.end.clone()
        });
    }
    debug_assert_eq!(cuts.len(), n);
    Ok(Outcome { ends: cuts, report })
}

/// What one thread's walk found: per stream what was read and where it is cut, the
/// transaction records past the cuts, and those replayed.
type Walked = (Vec<Read>, Vec<Lsn>, u64, u64);

/// One thread's walk (see the module doc); `None` once another share failed.
fn walk(
    mut ws: Vec<Walker<'_>>,
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    share: Share,
    stop: &AtomicBool,
) -> Result<Option<Walked>, WalError> {
    let n = ws.len();
    let mut queue = ApplyQueue::default();
    let mut txns = 0u64;
    let mut rlv = [0u64; MAX_STREAMS];
    for w in &mut ws {
        w.fill(n, cfg, &share)?;
    }
    loop {
        if shared_scan::stopped(stop) {
            return Ok(None);
        }
        let mut moved = false;
        for i in 0..n {
            loop {
                for (r, w) in rlv[..n].iter_mut().zip(&ws) {
                    *r = w.cursor;
                }
                let w = &mut ws[i];
                let Some(h) = &w.head else { break };
                if !lv::le(&h.lv[..n], &rlv[..n]) {
                    break;
                }
                let at = (i as u32, h.txn, h.start);
                queue.push_ops(at, &h.ops, replay)?;
                txns += 1;
                moved = true;
                w.fill(n, cfg, &share)?;
            }
        }
        if !moved {
            break;
        }
    }
    queue.apply(replay)?;
    let mut reads = Vec::with_capacity(n);
    let mut cuts = Vec::with_capacity(n);
    let mut skipped = 0;
    for mut w in ws {
        w.drain(n, cfg, &share)?;
        w.read.bytes = w.records.bytes_read();
        w.read.end = w
            .records
            .end()
            .cloned()
            .ok_or(WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
        skipped += w.skipped;
        cuts.push(w.cursor);
        reads.push(w.read);
    }
    Ok(Some((reads, cuts, skipped, txns)))
}
