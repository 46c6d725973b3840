//! The TATP consistency check. TATP defines none; ours (see the `tatp` module doc): the
//! subscriber count, the SUBSCRIBER_NBR index, 1..=4 access-info and special-facility rows per
//! subscriber, and every call-forwarding row belonging to an existing special facility under the
//! key its columns give.

use braid_engine::Db;

use super::*;
use crate::error::{ConsistencyError, Problems};
use crate::util::col;

/// Check `db` against the conditions above.
pub(super) fn check(cfg: &TatpConfig, db: &Db) -> Result<(), ConsistencyError> {
    let p = cfg.subscribers;
    // The first 20 problems, without noting that more were left out.
    let mut problems = Problems::capped("tatp", 20, false);
    let n = db.rows(SUBSCRIBER) as u64;
    if n != p {
        problems.add(format!("{n} subscribers, expected {p}"));
    }
    let ss = db.schema(SUBSCRIBER);
    db.for_each_row(SUBSCRIBER, .., |k, img| {
        if !(1..=p).contains(&k) || col(ss, img, subscriber::SUB_NBR) != sub_nbr(k) {
            problems.add(format!(
                "subscriber {k} has sub_nbr {:?}",
                String::from_utf8_lossy(col(ss, img, subscriber::SUB_NBR))
            ));
        }
    });
    let ns = db.schema(SUBSCRIBER_NBR);
    let mut index_rows = 0;
    db.for_each_row(SUBSCRIBER_NBR, .., |k, img| {
        index_rows += 1;
        if ns.get::<u64>(img, subscriber_nbr::SN_S_ID) != k || db.peek(SUBSCRIBER, k).is_none() {
            problems.add(format!(
                "subscriber_nbr {k} points at {}",
                ns.get::<u64>(img, subscriber_nbr::SN_S_ID)
            ));
        }
    });
    if index_rows != p {
        problems.add(format!("{index_rows} subscriber_nbr rows, expected {p}"));
    }
    let mut ai_per = vec![0u8; p as usize + 1];
    db.for_each_row(ACCESS_INFO, .., |k, _| {
        match ai_per.get_mut((k >> 2) as usize) {
            Some(n) => *n += 1,
            None => problems.add(format!("access_info {k:#x} of a missing subscriber")),
        }
    });
    let mut sf_per = vec![0u8; p as usize + 1];
    db.for_each_row(SPECIAL_FACILITY, .., |k, _| {
        match sf_per.get_mut((k >> 2) as usize) {
            Some(n) => *n += 1,
            None => problems.add(format!("special_facility {k:#x} of a missing subscriber")),
        }
    });
    for s_id in 1..=p as usize {
        if !(1..=4).contains(&ai_per[s_id]) || !(1..=4).contains(&sf_per[s_id]) {
            problems.add(format!(
                "subscriber {s_id} has {} access-info and {} special-facility rows",
                ai_per[s_id], sf_per[s_id]
            ));
        }
    }
    let cs = db.schema(CALL_FORWARDING);
    db.for_each_row(CALL_FORWARDING, .., |k, img| {
        let (s_id, t) = (
            cs.get::<u64>(img, call_forwarding::CF_S_ID),
            cs.get::<u64>(img, call_forwarding::CF_SF_TYPE),
        );
        let start = cs.get::<u64>(img, call_forwarding::START_TIME);
        if !(1..=4).contains(&t)
            || !matches!(start, 0 | 8 | 16)
            || call_forwarding_key(s_id, t, start) != k
        {
            problems.add(format!(
                "call_forwarding {k:#x} holds s_id {s_id} type {t} start {start}"
            ));
        } else if db
            .peek(SPECIAL_FACILITY, special_facility_key(s_id, t))
            .is_none()
        {
            problems.add(format!(
                "call_forwarding {k:#x} of missing special facility {s_id}/{t}"
            ));
        }
    });
    problems.finish()
}
