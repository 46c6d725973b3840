//! Range scans and their protection against phantoms: scanning twice (Silo; Taurus Sec. 3.4).
//! A scan remembers how many index entries its range held, and commit counts them again and
//! aborts if the count changed. The scheme hears of the scan right before each recount
//! (`on_scan`), so it can order the scan against inserts and deletes inside its range that no
//! row access connects. A scan stopped by its limit protects only up to its last key.

use std::ops::Bound;
use std::sync::Arc;

use super::access::Write;
use super::{Mode, Txn};
use crate::error::TxError;
use crate::row::Row;
use crate::schema::TableId;

/// A scanned range and the index entries it held, to count again at commit.
pub(super) struct ScanCheck {
    table: u32,
    lo: Bound<u64>,
    hi: Bound<u64>,
    count: usize,
}

impl Txn<'_> {
    /// Scan an ordered table over `[lo, hi]` in key order, at most `limit` rows; `f` sees each
    /// key and image and may stop the scan by returning false. Returns the rows visited.
    pub fn scan(
        &mut self,
        table: TableId,
        lo: Bound<u64>,
        hi: Bound<u64>,
        limit: usize,
        mut f: impl FnMut(u64, &[u8]) -> bool,
    ) -> Result<usize, TxError> {
        self.table_check(table)?;
        let t = table.0;
        let tab = &self.db.tables[t as usize];
        if !tab.is_ordered() {
            return Err(TxError::BadRequest {
                table: t,
                request: crate::BadRequest::RangeOnHash,
            });
        }
        let mut hits: Vec<(u64, Arc<Row>)> = Vec::new();
        // Whether the scan stopped at the limit (then only up to its last key is protected).
        let mut full = false;
        if self.mvcc {
            // Only rows visible to this transaction count towards the limit: tombstones and
            // rows of other snapshots sit in the index, differently in every run and replay.
            let mut seen = 0;
            let (st, snap) = (&mut *self.st, self.snap);
            tab.range(lo, hi, |k, r| {
                let visible = match st.find(t, k).map(|i| st.entries[i].write) {
                    Some(Write::Update { .. } | Write::Insert { .. } | Write::Revive { .. }) => {
                        true
                    }
                    Some(Write::Delete | Write::Gone) => false,
                    _ => r.read_at(snap, |img| img.is_some()).0,
                };
                hits.push((k, r.clone()));
                seen += visible as usize;
                full = seen >= limit;
                !full
            });
        } else {
            tab.range(lo, hi, |k, r| {
                hits.push((k, r.clone()));
                full = hits.len() >= limit;
                !full
            });
        }
        let scanned_hi = if full {
            hits.last().map(|(k, _)| Bound::Included(*k)).unwrap_or(hi)
        } else {
            hi
        };
        let count = hits.len();
        let mut visited = 0;
        for (k, _) in hits {
            let mut go = true;
            let found = self.read(table, k, |img| go = f(k, img))?;
            if found.is_some() {
                visited += 1;
            }
            if !go {
                break;
            }
        }
        if self.mode == Mode::Normal {
            // A row a commit not yet durable deleted is missing from the range.
            self.scheme.on_absent(t, lo, scanned_hi);
            self.st.scans.push(ScanCheck {
                table: t,
                lo,
                hi: scanned_hi,
                count,
            });
        }
        Ok(visited)
    }

    /// Count every scanned range again (after telling the scheme); a changed count is a
    /// phantom.
    pub(super) fn recount_scans(&mut self) -> Result<(), TxError> {
        for s in &self.st.scans {
            self.scheme.on_scan(s.table, s.lo, s.hi);
            let mut n = 0usize;
            self.db.tables[s.table as usize].range(s.lo, s.hi, |_, _| {
                n += 1;
                true
            });
            if n != s.count {
                return Err(TxError::Conflict {
                    table: s.table,
                    key: 0,
                });
            }
        }
        Ok(())
    }
}
