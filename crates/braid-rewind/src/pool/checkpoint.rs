//! Checkpoints (REWIND §4.6, no-force): flush the lines the completed transactions' records
//! name, process their deferred frees, and remove their records, whole transactions in commit
//! order with END last (see the module docs of [`super`] for why a prefix of the commit order),
//! in bulk behind a persisted cut.

use std::sync::atomic::Ordering;

use super::{H_CUT, Inner, RecRef};
use crate::RewindError;
use crate::record::{Kind, Rec};

/// See [`Pool::checkpoint`].
pub(crate) fn checkpoint(inner: &Inner) -> Result<usize, RewindError> {
    let _g = inner.ckpt.lock().unwrap_or_else(|e| e.into_inner());
    let cut = {
        let _w = inner.cut.write().unwrap_or_else(|e| e.into_inner());
        inner.commit_seq.load(Ordering::SeqCst)
    };
    struct Done {
        seq: u64,
        log: usize,
        aborted: bool,
        recs: Vec<(RecRef, Rec)>,
        end: RecRef,
    }
    let mut done: Vec<Done> = Vec::new();
    for (li, log) in inner.logs.iter().enumerate() {
        let mut by_tx: std::collections::HashMap<u64, Vec<(RecRef, Rec)>> =
            std::collections::HashMap::new();
        let mut ends = Vec::new();
        for (at, rec) in log.scan()? {
            if rec.kind == Kind::End {
                if rec.addr <= cut {
                    ends.push((at, rec));
                }
            } else {
                by_tx.entry(rec.txid).or_default().push((at, rec));
            }
        }
        for (at, e) in ends {
            done.push(Done {
                seq: e.addr,
                log: li,
                aborted: e.old != 0,
                recs: by_tx.remove(&e.txid).unwrap_or_default(),
                end: at,
            });
        }
    }
    if done.is_empty() {
        return Ok(0);
    }
    done.sort_by_key(|d| d.seq);
    let r = &inner.r;
    let mut lines: Vec<usize> = done
        .iter()
        .flat_map(|d| d.recs.iter())
        .filter(|(_, rec)| matches!(rec.kind, Kind::Update | Kind::Clr))
        .map(|(_, rec)| rec.addr as usize & !63)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    for l in lines {
        r.flush(l, 8);
    }
    r.fence();
    let mut freed = Vec::new();
    for d in done.iter().filter(|d| !d.aborted) {
        for (_, rec) in d.recs.iter().filter(|(_, x)| x.kind == Kind::Delete) {
            inner.alloc.mark_free(rec.addr as usize);
            freed.push(rec.addr as usize);
        }
    }
    // The cut, durable before any record goes (see the module docs of `super`).
    let top = done.iter().map(|d| d.seq).max().unwrap_or(0);
    if top > r.load_u64(H_CUT) {
        r.store_u64(H_CUT, top);
        r.flush(H_CUT, 8);
    }
    r.fence();
    // Every removed transaction's other records, then (after a fence) their END records.
    // Sealed forgets them instead (volatile state only): recovery ignores transactions at or
    // below the cut, so nothing needs to reach memory.
    for (li, log) in inner.logs.iter().enumerate() {
        let mine = || done.iter().filter(|d| d.log == li);
        let recs: Vec<RecRef> = mine()
            .flat_map(|d| d.recs.iter().map(|(a, _)| *a))
            .collect();
        let ends: Vec<RecRef> = mine().map(|d| d.end).collect();
        if inner.cfg.layout == crate::LogLayout::Sealed && inner.cfg.layers == super::Layers::One {
            let all: Vec<RecRef> = recs.into_iter().chain(ends).collect();
            log.forget(&all)?;
        } else {
            log.clear(&recs, None)?;
            log.clear(&ends, None)?;
        }
    }
    for b in freed {
        inner.alloc.release(b);
    }
    inner.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
    Ok(done.len())
}
