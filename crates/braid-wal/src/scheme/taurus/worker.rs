//! A Taurus worker: the transaction's LV, the row hooks of Alg. 1 (2PL) and Alg. 6 (OCC), the
//! commit (record with its LV, compressed against the stream's anchor by Alg. 5), and anchors.
//!
//! * `on_read` / `on_write` (Alg. 1 lines 3-5, Alg. 6 line 3): `T.LV = max(T.LV, writeLV)`, and
//!   for a write under command logging also `max(.., readLV)` (WAR). For a row with a slot
//!   (`rows.rs`) the merge happens for all rows at once: at commit under 2PL, where every lock
//!   is still held so the LVs cannot have moved since the access, and in `before_validate`
//!   under OCC, which merges every row again anyway (below). A row without a slot has a map
//!   entry, held (its `Arc` cloned) until the transaction ends so it cannot be evicted, and is
//!   merged at once. Inserts and deletes arrive as writes; an insert also merges the writeLV of
//!   its key's range bucket, which a delete of the same key raised before the key left the
//!   index (WAW: the new row's own LVs start at `base`). Range scans read each row they return
//!   through `on_read`, so their readLVs are raised at commit like any read (the engine scans
//!   twice against phantoms); what no row connects (a key inserted into, or deleted from, a
//!   scanned range) goes through the range LVs below.
//! * `commit`: the record carries `T.LV` as it is before the append (Alg. 1 line 9); then
//!   `T.LV[i] = end` (line 12) and the rows' LVs are raised (lines 13-18): writeLV of every row
//!   written, readLV of every row read (command logging only: data logging never needs WAR
//!   order, so it keeps no readLV). Design choice: this happens inside `commit`, i.e. *before*
//!   the engine installs the new images (and long before it releases locks), not in `publish`:
//!   an OCC reader that sees a new image is then guaranteed to see its writer's writeLV when it
//!   looks again (below). `publish` has nothing left to do.
//! * OCC (`before_validate`, called by the engine after it locked the write set and before it
//!   validates, Alg. 6 lines 6-12): (1) for the locked write set, merge writeLV and (command
//!   logging) readLV into `T.LV`; (2) for rows only read, merge writeLV again, since the value
//!   may have been read after the `on_read` look at the LV (the engine calls `on_read` before
//!   copying the value, and Alg. 6 asks for an atomic load of both); (3) under command logging,
//!   raise each read row's readLV with `T.LV` entry by entry (compare-and-swap, lines 9-11).
//!
//!   Alg. 6 as printed raises readLV only with the LV *before* the reader's own record, so a
//!   writer that locks the row between the reader's validation and its append can miss the
//!   WAR edge to the reader itself and be replayed before it. braid closes that gap: in step
//!   (3) the reader also increments the row's `pending` count (SeqCst, then a SeqCst fence
//!   before the engine validates), and decrements it after raising readLV once more with its
//!   own end, in `commit` (or in `abort`). In step (1) a writer (after a SeqCst fence following
//!   its lock) waits until `pending` of each row it writes is zero before reading readLV. By
//!   the fences, either the reader's validation sees the writer's lock (and aborts) or the
//!   writer sees the reader's count and waits for its final readLV. Waiting cannot deadlock:
//!   a transaction counts itself as pending only after its own waits are over, and a pending
//!   reader waits for nobody (it validates, logs and decrements).
//! * Range LVs (`on_scan`, `on_insert`, `on_delete`; see the module docs of `taurus` for the
//!   bucket choice). A scan, when the engine validates it (just before the scan-twice recount),
//!   merges the writeLV of each bucket it covers (or of its table-wide entry) into `T.LV`: a
//!   delete raised its bucket's writeLV in `commit`, before the engine took the key out of the
//!   index, so a scan that no longer finds the key sees the raise (RAW). Under command logging
//!   the scan also raises the buckets' readLVs at commit, and an insert merges the readLVs of
//!   its key's bucket and of the table-wide entry (WAR; a delete does the same, though the
//!   deleted row's own readLV already orders a scan that read it). The race between a scan
//!   that validates and an insert that lands in its range is closed like the OCC race above:
//!   the scanner increments the bucket's `pending` count (SeqCst, then a SeqCst fence) before
//!   the engine recounts the range, and decrements it after raising the readLV with its own
//!   end; the inserter, after the engine put the key in the index, fences and waits until
//!   `pending` is zero before it reads the readLV. Either the recount sees the new key (the
//!   scanner aborts) or the inserter waits for the scanner's final readLV. An inserter waits
//!   only while it executes, before it could count as pending anywhere, and a pending scanner
//!   waits for nobody: no deadlock. Read-only scanners (nothing to replay) do not count as
//!   pending. A point read that finds no row (`on_absent`) merges its key's bucket writeLV at
//!   once, the scan's RAW edge for one key, so a read-only transaction that missed a deleted
//!   key waits for the delete.
//! * Workers map to streams `worker mod n`.
//! * Anchors (Alg. 5 `FlushPLV`): when compression is on (`TaurusConfig::compress`) and a
//!   stream has grown `anchor_every` bytes since its last anchor, the worker that notices
//!   appends an `Anchor` record carrying the committed vector CLV (not the paper's PLV: an
//!   anchor value stands in for a record's LV entries at recovery, and only CLV is certain to
//!   be inside what recovery keeps, see `commit.rs`), then publishes it as the stream's LPLV.
//!   A record stores, as a sparse stamp, only the entries above the LPLV it read; recovery
//!   fills the others from the latest anchor before the record (at least as large).

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::time::{Duration, Instant};

use super::commit::{Link, LvWait};
use super::rows::{Lvs, RowLv, merge_from, raise};
use super::{MAX_SCAN_BUCKETS, Shared};
use crate::WalError;
use crate::proxy::ProxyCounter;
use crate::record::{FLAG_COMMIT, RecordSpec, Stamp};
use crate::scheme::key_range::inclusive;
use crate::scheme::{AccessSet, CommitRequest, RowRef, SchemeWorker, Ticket};
use crate::stream::StreamWriter;

const READ: u8 = 1;
const WRITE: u8 = 2;
const PENDING: u8 = 4;
/// A range LV entry (a bucket of an ordered index, or a table-wide one), not a row.
const RANGE: u8 = 8;

/// Range LV entries live in the row table under table ids with the top bit set: bucket `b` of
/// table `t` is `(BUCKET_TAG | t, b)`, the table-wide entry is `(WHOLE_TAG | t, 0)`. The
/// engine's table ids are small (a catalog of at most a few thousand tables).
const BUCKET_TAG: u32 = 1 << 31;
const WHOLE_TAG: u32 = 3 << 30;

struct Held {
    e: RowLv,
    flags: u8,
}

pub(crate) struct TaurusWorker {
    sh: Arc<Shared>,
    /// The stream of this worker's current transaction: `worker mod n` (Alg. 1), or with
    /// `spread` the next in its round robin over every stream.
    i: usize,
    /// Its writers: of stream `i` alone, or with `spread` of every stream (by stream id).
    writers: Vec<StreamWriter>,
    /// T.LV.
    lv: Vec<u64>,
    scratch: Vec<u64>,
    /// What this worker's tickets hold (see [`Link`]).
    link: Arc<Link>,
    /// Map entries held: range LVs, and rows named without a slot.
    rows: Vec<Held>,
    /// Rows' LVs live in the slots the engine hands (they fit), in `words` words.
    slots: bool,
    words: usize,
    /// The transaction wrote a row.
    wrote: bool,
    /// The slots' LVs are merged into `T.LV` (by `before_validate`).
    merged: bool,
    /// `before_validate` counted the transaction as pending on the slots of the rows it only
    /// read (undone in `reset`).
    marked: bool,
    dense: Stamp,
    sparse: Stamp,
    proxy: ProxyCounter,
    /// This worker's statistics (`Shared::stats`).
    stats: crate::tally::Tally,
    /// Commits so far: one in [`super::LV_SAMPLE_EVERY`] times its LV work.
    commits: u64,
    /// This attempt's LV work is timed (it would be commit number `commits + 1`, a multiple
    /// of [`super::LV_SAMPLE_EVERY`]).
    timing: bool,
    /// Its LV work in the access hooks so far, ns.
    hooks_ns: u64,
    /// One of its timed stretches took longer than [`LV_SAMPLE_CAP`]: the worker was
    /// descheduled in it, and the sample is dropped (counted in [`super::LV_DROPPED`]).
    spoiled: bool,
}

/// A timed stretch of LV work longer than this was interrupted by the scheduler (no LV
/// operation on at most 64 entries takes it), or waited for a lock-table shard whose holder
/// was: its transaction's sample is left out of the mean rather than let one preemption of
/// milliseconds outweigh thousands of samples, and its time is counted apart
/// ([`super::LV_DROPPED_NS`]). (Measured, YCSB command logging on 2 cores: under 0.02% of the
/// samples at up to 16 logs, about 1% from 32 logs, where the rows' LVs live in the map.)
pub(crate) const LV_SAMPLE_CAP: Duration = Duration::from_micros(50);

impl TaurusWorker {
    pub(crate) fn new(sh: Arc<Shared>, worker: usize) -> Result<TaurusWorker, WalError> {
        let n = sh.n;
        let i = worker % n;
        let mut writers = if sh.spread {
            sh.tracker
                .streams()
                .iter()
                .map(|s| s.writer())
                .collect::<Result<Vec<_>, _>>()?
        } else {
            vec![sh.tracker.streams()[i].writer()?]
        };
        // Every record is waited for or checked through a ticket that waits for or checks its
        // stream (a stream ticket, or the tracker's help on the stream that blocks the CLV),
        // and such a waiter flushes it itself when no flush is under way (`stream/lead.rs`).
        for w in &mut writers {
            w.set_commits_waited(true);
        }
        Ok(TaurusWorker {
            proxy: sh.board.counter(),
            stats: sh.stats.tally(),
            i,
            writers,
            lv: sh.rows.base().to_vec(),
            scratch: vec![0; n],
            rows: Vec::new(),
            link: Arc::new(Link(Arc::clone(&sh.tracker))),
            slots: sh.rows.fits_slot(),
            words: sh.rows.slot_words(),
            wrote: false,
            merged: false,
            marked: false,
            dense: Stamp::Lv(vec![0; n]),
            sparse: Stamp::LvSparse(Vec::with_capacity(n)),
            commits: 0,
            timing: false,
            hooks_ns: 0,
            spoiled: false,
            sh,
        })
    }

    /// The writer of stream `i`.
    fn writer(&mut self) -> &mut StreamWriter {
        let w = if self.sh.spread { self.i } else { 0 };
        &mut self.writers[w]
    }

    /// Whether write-after-read edges are tracked (command logging without MVCC).
    fn command(&self) -> bool {
        self.sh.war
    }

    /// `on_read` / `on_write`: merge the row's writeLV (and, for a write under command
    /// logging, its readLV) into `T.LV`. A row with a slot is merged later, with all the
    /// others at once (`merge_slots`); a row without one has a map entry, held until the
    /// transaction ends, and is merged now.
    #[inline]
    fn touch(&mut self, row: RowRef<'_>, flags: u8) {
        debug_assert!(
            row.table < WHOLE_TAG & !BUCKET_TAG,
            "table id in the range-LV space"
        );
        self.wrote |= flags & WRITE != 0;
        if self.slots && row.meta.is_some() {
            return;
        }
        // Timed from here: a row with a slot has no LV work until commit.
        let t = self.lv_start();
        let n = self.sh.n;
        let ops = self.sh.ops;
        let e = self.hold_key(row.table, row.key, flags);
        merge_from(ops, &mut self.lv, e.view().write_lv(n), &mut self.scratch);
        if flags & WRITE != 0 && self.command() {
            merge_from(ops, &mut self.lv, e.view().read_lv(n), &mut self.scratch);
        }
        self.lv_hook(t);
    }

    /// The LVs in `row`'s slot, if rows keep them there (all zero on the row's first access,
    /// which reads as `base`: see `rows.rs`).
    #[inline]
    fn slot<'r>(&self, row: RowRef<'r>) -> Option<Lvs<'r>> {
        match row.meta {
            Some(m) if self.slots => Some(Lvs(
                m.words(self.words, || self.stats.add(super::ROW_SLOTS, 1))
            )),
            _ => None,
        }
    }

    /// Merge the LVs of every row with a slot into `T.LV` (Alg. 1 lines 3-5 for all of them
    /// at once, at commit): writeLV of each row, and readLV of each row written under command
    /// logging. Under 2PL this is the same as merging at each access: the transaction still
    /// holds every lock, so no writer of a row it read, and no reader of a row it wrote, can
    /// have raised those LVs since; and the rows' cache lines are fetched together instead of
    /// one after the other between lock operations. (OCC merges in `before_validate`.)
    fn merge_slots(&mut self, rows: &dyn AccessSet) {
        let n = self.sh.n;
        let ops = self.sh.ops;
        let war = self.command();
        let mut lv = std::mem::take(&mut self.lv);
        let mut scratch = std::mem::take(&mut self.scratch);
        for i in 0..rows.len() {
            let a = rows.get(i);
            if let Some(w) = self.slot(a.row) {
                merge_from(ops, &mut lv, w.write_lv(n), &mut scratch);
                if war && a.write {
                    merge_from(ops, &mut lv, w.read_lv(n), &mut scratch);
                }
            }
        }
        self.lv = lv;
        self.scratch = scratch;
    }

    /// Every row LV the transaction holds with its flags: the map entries, then the slots of
    /// the rows in `rows` (the engine's access set).
    fn each_row(&self, rows: &dyn AccessSet, mut f: impl FnMut(Lvs<'_>, u8)) {
        for h in &self.rows {
            f(h.e.view(), h.flags);
        }
        for i in 0..rows.len() {
            let a = rows.get(i);
            if let Some(w) = self.slot(a.row) {
                let flags = if a.read { READ } else { 0 } | if a.write { WRITE } else { 0 };
                f(w, flags);
            }
        }
    }

    /// The slots of the rows in `rows` the transaction only read (those `before_validate`
    /// counts it pending on).
    fn each_read_only_slot(&self, rows: &dyn AccessSet, mut f: impl FnMut(Lvs<'_>)) {
        for i in 0..rows.len() {
            let a = rows.get(i);
            if a.read
                && !a.write
                && let Some(w) = self.slot(a.row)
            {
                f(w);
            }
        }
    }

    fn hold_key(&mut self, table: u32, key: u64, flags: u8) -> RowLv {
        let tracker = &self.sh.tracker;
        let e = self.sh.rows.get(table, key, |c| tracker.clv_into(c));
        self.rows.push(Held {
            e: e.clone(),
            flags,
        });
        e
    }

    fn reset(&mut self, rows: &dyn AccessSet) {
        let mut unmarked = false;
        for h in &self.rows {
            if h.flags & PENDING != 0 {
                h.e.view().pending().fetch_sub(1, Ordering::SeqCst);
                unmarked = true;
            }
        }
        if self.marked {
            self.each_read_only_slot(rows, |w| {
                w.pending().fetch_sub(1, Ordering::SeqCst);
            });
            unmarked = true;
        }
        if unmarked {
            // After the decrements: a writer may wait for them (`range_write`,
            // `before_validate`).
            self.sh.unmarked.notify();
        }
        self.rows.clear();
        self.lv.copy_from_slice(self.sh.rows.base());
        self.wrote = false;
        self.merged = false;
        self.marked = false;
        self.timing = (self.commits + 1).is_multiple_of(super::LV_SAMPLE_EVERY);
        self.hooks_ns = 0;
        self.spoiled = false;
    }

    /// The start of a stretch of LV work, if this attempt is timed.
    #[inline]
    fn lv_start(&self) -> Option<Instant> {
        if self.timing {
            Some(Instant::now())
        } else {
            None
        }
    }

    /// The ns of a stretch of LV work from `t` (0 if not timed), less the clock's own cost
    /// ([`Shared::clock_ns`]); a stretch longer than [`LV_SAMPLE_CAP`] spoils the sample.
    #[inline]
    fn lv_lap(&mut self, t: Option<Instant>) -> u64 {
        let Some(t) = t else { return 0 };
        let d = t.elapsed();
        self.spoiled |= d > LV_SAMPLE_CAP;
        (d.as_nanos() as u64).saturating_sub(self.sh.clock_ns)
    }

    /// Add an access hook's stretch from `t`.
    #[inline]
    fn lv_hook(&mut self, t: Option<Instant>) {
        self.hooks_ns += self.lv_lap(t);
    }

    /// Count a committed attempt's LV work: its hooks' and `commit_ns` in its commit.
    fn lv_count(&self, commit_ns: u64) {
        if !self.timing {
            return;
        }
        if self.spoiled {
            self.stats.add(super::LV_DROPPED, 1);
            self.stats
                .add(super::LV_DROPPED_NS, self.hooks_ns + commit_ns);
            return;
        }
        self.stats.add(super::LV_SAMPLES, 1);
        self.stats.add(super::LV_NS, self.hooks_ns + commit_ns);
        self.stats.add(super::LV_COMMIT_NS, commit_ns);
    }

    /// An insert (`wait`) or delete of `key` in `table`: hold the key's bucket and the
    /// table-wide range entry for writing (their writeLVs are raised at commit), and under
    /// command logging merge their readLVs (WAR), for an insert after waiting out scanners
    /// that are validating (see the module docs).
    fn range_write(&mut self, table: u32, key: u64, wait: bool) {
        let n = self.sh.n;
        let ops = self.sh.ops;
        let command = self.command();
        if command && wait {
            // After the engine's index insert, before reading `pending`.
            fence(Ordering::SeqCst);
        }
        let bucket = key >> self.sh.bucket_bits;
        for (t, k) in [(BUCKET_TAG | table, bucket), (WHOLE_TAG | table, 0)] {
            let e = self.hold_key(t, k, WRITE | RANGE);
            if wait && t == BUCKET_TAG | table {
                // WAW from an earlier delete of the key: it raised this writeLV before the key
                // left the index, and the new row's own LVs start at `base` (see `rows.rs`).
                merge_from(ops, &mut self.lv, e.view().write_lv(n), &mut self.scratch);
            }
            if !command {
                continue;
            }
            if wait {
                // Our own pending marks (none while executing; counted to be safe).
                let own = self
                    .rows
                    .iter()
                    .filter(|h| h.flags & PENDING != 0 && h.e.same(&e))
                    .count() as u64;
                if e.view().pending().load(Ordering::SeqCst) > own {
                    // Counted once per wait (for `Taurus::range_waits`).
                    self.stats.add(super::RANGE_WAITS, 1);
                    self.sh
                        .unmarked
                        .wait(|| (e.view().pending().load(Ordering::SeqCst) <= own).then_some(()));
                }
            }
            merge_from(ops, &mut self.lv, e.view().read_lv(n), &mut self.scratch);
        }
    }

    /// Take the stamp for the record out of the worker (put it back with `put_stamp`): dense,
    /// or sparse against the stream's LPLV.
    fn take_stamp(&mut self) -> Stamp {
        if self.sh.compress {
            let mut s = std::mem::replace(&mut self.sparse, Stamp::None);
            if let Stamp::LvSparse(v) = &mut s {
                v.clear();
                for (j, a) in self.sh.anchors[self.i].lplv.iter().enumerate() {
                    let x = self.lv[j];
                    if x > a.load(Ordering::Acquire) {
                        // j < n <= MAX_STREAMS = 64: the index fits a u8.
                        v.push((j as u8, x));
                    }
                }
            }
            s
        } else {
            let mut s = std::mem::replace(&mut self.dense, Stamp::None);
            if let Stamp::Lv(v) = &mut s {
                v.copy_from_slice(&self.lv);
            }
            s
        }
    }

    fn put_stamp(&mut self, s: Stamp) {
        match s {
            Stamp::LvSparse(_) => self.sparse = s,
            _ => self.dense = s,
        }
    }

    /// Append an anchor if one is due on this worker's stream (Alg. 5 `FlushPLV`).
    fn maybe_anchor(&mut self, end: u64) {
        let sh = &*self.sh;
        let w = &mut self.writers[if sh.spread { self.i } else { 0 }];
        sh.anchors[self.i].append_if_due(sh, self.i, w, &self.proxy, end);
    }

    /// The ticket of a transaction whose final LV is `self.lv`; `own` = (stream, end) if it
    /// logged a record.
    fn ticket(&self, own_end: Option<u64>) -> Ticket {
        let sh = &*self.sh;
        if sh.n == 1 {
            let lsn = own_end.unwrap_or(self.lv[0]);
            return Ticket::stream(sh.tracker.streams()[0].clone(), lsn);
        }
        if sh.tracker.covers(&self.lv) {
            return Ticket::DURABLE;
        }
        Ticket::waiter(Box::new(LvWait {
            link: Arc::clone(&self.link),
            lv: self.lv.as_slice().into(),
        }))
    }
}

impl SchemeWorker for TaurusWorker {
    fn on_read(&mut self, row: RowRef<'_>) {
        self.touch(row, READ);
    }

    fn on_write(&mut self, row: RowRef<'_>) {
        self.touch(row, WRITE);
    }

    fn before_validate(&mut self, rows: &dyn AccessSet) {
        let t = self.lv_start();
        self.validate(rows);
        self.lv_hook(t);
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        // This is commit number `commits` (before `reset` decides whether the next is timed).
        self.commits += 1;
        self.commit_inner(req)
    }

    fn abort(&mut self, rows: &dyn AccessSet) {
        self.reset(rows);
    }

    fn on_scan(&mut self, table: u32, lo: Bound<u64>, hi: Bound<u64>) {
        let t = self.lv_start();
        self.scan(table, lo, hi);
        self.lv_hook(t);
    }

    /// A point read that found no row: merge the writeLV of the key's bucket, which the
    /// missing row's delete raised at its commit before the key left the index (RAW, as a scan
    /// that no longer finds the key does; see the module docs). A range's misses are the
    /// scan's: [`Self::on_scan`] merges its buckets at validation.
    fn on_absent(&mut self, table: u32, lo: Bound<u64>, hi: Bound<u64>) {
        let Some((a, b)) = inclusive(lo, hi) else {
            return;
        };
        if a != b {
            return;
        }
        let t = self.lv_start();
        let e = self.hold_key(BUCKET_TAG | table, a >> self.sh.bucket_bits, READ | RANGE);
        merge_from(
            self.sh.ops,
            &mut self.lv,
            e.view().write_lv(self.sh.n),
            &mut self.scratch,
        );
        self.lv_hook(t);
    }

    fn on_insert(&mut self, table: u32, key: u64) {
        let t = self.lv_start();
        self.range_write(table, key, true);
        self.lv_hook(t);
    }

    fn on_delete(&mut self, table: u32, key: u64) {
        let t = self.lv_start();
        self.range_write(table, key, false);
        self.lv_hook(t);
    }
}

impl TaurusWorker {
    /// `before_validate` (OCC, Alg. 6 lines 6-12; see the module docs).
    fn validate(&mut self, rows: &dyn AccessSet) {
        let n = self.sh.n;
        let ops = self.sh.ops;
        let command = self.command();
        // After the engine's lock of the write set (see the module docs).
        fence(Ordering::SeqCst);
        let mut writes = false;
        let mut lv = std::mem::take(&mut self.lv);
        let mut scratch = std::mem::take(&mut self.scratch);
        // (1) the write set: locked by us now. Range entries are not rows: skipped here.
        self.each_row(rows, |w, flags| {
            if flags & WRITE == 0 || flags & RANGE != 0 {
                return;
            }
            writes = true;
            merge_from(ops, &mut lv, w.write_lv(n), &mut scratch);
            if command {
                let sh = &*self.sh;
                sh.unmarked
                    .wait(|| (w.pending().load(Ordering::SeqCst) == 0).then_some(()));
                merge_from(ops, &mut lv, w.read_lv(n), &mut scratch);
            }
        });
        // (2) the rows only read: their writers' LVs, looked at after the values were read.
        self.each_row(rows, |w, flags| {
            if flags & READ != 0 && flags & RANGE == 0 {
                merge_from(ops, &mut lv, w.write_lv(n), &mut scratch);
            }
        });
        self.lv = lv;
        self.scratch = scratch;
        // (3) WAR: raise readLV before validation; an unlogged read-only transaction is never
        // replayed, so nothing needs to follow it.
        if command && writes {
            let tlv = &self.lv;
            self.each_read_only_slot(rows, |w| {
                w.pending().fetch_add(1, Ordering::SeqCst);
                raise(w.read_lv(n), tlv);
            });
            self.marked = true;
            // Map entries (rows without a slot): the same row may be held twice, read and
            // written.
            let written: Vec<*const AtomicU64> = self
                .rows
                .iter()
                .filter(|h| h.flags & WRITE != 0)
                .map(|h| h.e.view().addr())
                .collect();
            for h in &mut self.rows {
                if h.flags & (WRITE | PENDING | RANGE) != 0 || written.contains(&h.e.view().addr())
                {
                    continue;
                }
                h.e.view().pending().fetch_add(1, Ordering::SeqCst);
                h.flags |= PENDING;
                raise(h.e.view().read_lv(n), &self.lv);
            }
        }
        self.merged = true;
        // Before the engine's validation reads the rows' lock words.
        fence(Ordering::SeqCst);
    }

    /// `commit`. Of a timed attempt (one commit in LV_SAMPLE_EVERY; the module docs of
    /// `taurus`, "LV timing") the LV work is timed: the rows' LVs into T.LV and the record's
    /// stamp; then T.LV's own entry, the rows' LVs raised and the ticket's `T.LV <= CLV`. Not
    /// the append and registration between them.
    fn commit_inner(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        self.proxy.commit();
        let timed = self.lv_start();
        if !self.merged {
            self.merge_slots(req.rows);
        }
        if req.read_only {
            let t = self.ticket(None);
            let ns = self.lv_lap(timed);
            self.lv_count(ns);
            self.reset(req.rows);
            return Ok(t);
        }
        let n = self.sh.n;
        let txn = req.txn;
        let kind = req.kind.record_kind();
        let payload = [req.payload];
        if self.sh.spread {
            self.i = (self.i + 1) % n;
        }
        let stamp = self.take_stamp();
        let stamped = self.lv_lap(timed);
        let spec = RecordSpec {
            kind,
            flags: FLAG_COMMIT | crate::scheme::cut::epoch_flag(req.epoch),
            txn,
            stamp: &stamp,
            payload: &payload,
        };
        let r = self.writer().append(&spec);
        self.put_stamp(stamp);
        let (start, end) = match r {
            Ok(x) => x,
            Err(e) => {
                self.reset(req.rows);
                return Err(e);
            }
        };
        let cost = self.writer().cost();
        self.proxy.append(cost);
        if n > 1 {
            // The stream's commit queue: lock and unlock, the lock's line and the entry's.
            self.proxy.shared(2, 2);
            self.sh.tracker.register(self.i, start, end, &self.lv);
        }
        // Alg. 1 line 12, then lines 13-18.
        let raising = self.lv_start();
        self.lv[self.i] = self.lv[self.i].max(end);
        let command = self.command();
        let tlv = &self.lv;
        self.each_row(req.rows, |w, flags| {
            if flags & WRITE != 0 {
                raise(w.write_lv(n), tlv);
            }
            if command && flags & READ != 0 {
                raise(w.read_lv(n), tlv);
            }
        });
        let t = self.ticket(Some(end));
        let raised = self.lv_lap(raising);
        self.lv_count(stamped + raised);
        self.reset(req.rows);
        self.maybe_anchor(end);
        Ok(t)
    }

    /// `on_scan`: merge the writeLVs of the range's buckets (see the module docs).
    fn scan(&mut self, table: u32, lo: Bound<u64>, hi: Bound<u64>) {
        let Some((a, b)) = inclusive(lo, hi) else {
            return;
        };
        let n = self.sh.n;
        let ops = self.sh.ops;
        // Only a transaction that will be logged (it wrote something) can be replayed, so only
        // it needs the WAR edges to later inserters.
        let war = self.command() && self.wrote;
        let flags = READ | RANGE | if war { PENDING } else { 0 };
        let bits = self.sh.bucket_bits;
        let (first, last) = (a >> bits, b >> bits);
        let visit = |w: &mut Self, t: u32, k: u64| {
            let e = w.hold_key(t, k, flags);
            if war {
                e.view().pending().fetch_add(1, Ordering::SeqCst);
            }
            merge_from(ops, &mut w.lv, e.view().write_lv(n), &mut w.scratch);
        };
        if last - first < MAX_SCAN_BUCKETS {
            for k in first..=last {
                visit(self, BUCKET_TAG | table, k);
            }
        } else {
            visit(self, WHOLE_TAG | table, 0);
        }
        // Before the engine's recount reads the index.
        fence(Ordering::SeqCst);
    }
}
