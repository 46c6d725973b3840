//! The sparse dependency vector of autonomous commit (Nguyen et al., SIGMOD 2025: a
//! transaction records the (worker, GSN) pairs it depends on and waits for those logs alone)
//! as the logs store it, and the per-log decisions a recovery leaves in its void markers.
//!
//! * A commit record (`Kind::Commit`) is a `u32` part count, then, for a commit that depends
//!   on other logs, its dependencies: `(log u16, GSN u64)` entries, little endian; log
//!   [`ALL_LOGS`] stands for every log. A 4-byte payload (every commit record written before
//!   dependencies existed, and every one without any) has none.
//! * A void marker (`Kind::Checkpoint`) is `lo u64, hi u64` (the recovery's bound and base),
//!   then, when written by a recovery that decides commits above its bound one by one, a
//!   `u16` count and that many `(log u16, dead u64)` entries: in log `log`, a commit with a
//!   GSN in `(lo, hi)` was replayed if and only if its GSN is below `dead`; a log not named
//!   had every such commit replayed. A 16-byte marker (written before these decisions
//!   existed) replayed the local commits of its range only.
//!
//! * A `Command` record flagged [`FLAG_FLOOR`] (autonomous command logging) starts with its
//!   *replay floor*, a `u64` little endian, before the stored procedure's call: the largest
//!   GSN of any page clock or read GSN the transaction's GSN was taken above, other than its
//!   own raises (`worker.rs`). Every transaction of another log it conflicts with has a GSN at
//!   or below it, so re-execution may start it once every other log has replayed its records
//!   up to the floor (`reexec.rs`). A record without the flag (written before floors existed)
//!   has none and waits, as before, for every smaller GSN.
//!
//! The decoders never panic and refuse any length that is not one of these forms; they are
//! fuzzed (`fuzz/fuzz_targets/gsn_payload.rs`, with a proptest twin in braid-testkit).

/// Record flag (a caller bit, see [`crate::record`], beside `FLAG_LOCAL` and the epoch's): a
/// `Command` record whose payload starts with its replay floor.
pub(crate) const FLAG_FLOOR: u8 = 8;

/// A dependency's log number standing for every log (the page writer field's `MULTI`).
pub(crate) const ALL_LOGS: u16 = super::pages::MULTI;

/// Bytes of one `(log, GSN)` entry.
const ENTRY: usize = 10;

/// A malformed dependency list or marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct BadPayload;

fn entries(mut b: &[u8]) -> Result<Vec<(u16, u64)>, BadPayload> {
    if !b.len().is_multiple_of(ENTRY) {
        return Err(BadPayload);
    }
    let mut v = Vec::with_capacity(b.len() / ENTRY);
    while let Some((e, rest)) = b.split_first_chunk::<ENTRY>() {
        let (l, g) = e.split_at(2);
        let log = u16::from_le_bytes([l[0], l[1]]);
        let mut gb = [0u8; 8];
        gb.copy_from_slice(g);
        v.push((log, u64::from_le_bytes(gb)));
        b = rest;
    }
    Ok(v)
}

fn put_entries(v: &[(u16, u64)], out: &mut Vec<u8>) {
    for &(l, g) in v {
        out.extend_from_slice(&l.to_le_bytes());
        out.extend_from_slice(&g.to_le_bytes());
    }
}

/// A commit record's payload: `parts`, then `deps` (none: the 4-byte form).
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn encode_commit(parts: u32, deps: &[(u16, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + deps.len() * ENTRY);
    out.extend_from_slice(&parts.to_le_bytes());
    put_entries(deps, &mut out);
    out
}

/// A commit record's part count and dependencies (`None`: the 4-byte form).
#[allow(clippy::type_complexity)]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn decode_commit(p: &[u8]) -> Result<(u32, Option<Vec<(u16, u64)>>), BadPayload> {
    let (count, rest) = p.split_first_chunk::<4>().ok_or(BadPayload)?;
    let parts = u32::from_le_bytes(*count);
    if rest.is_empty() {
        return Ok((parts, None));
    }
    Ok((parts, Some(entries(rest)?)))
}

/// A `Command` record's payload with replay floor `floor` before `call` (flag it
/// `FLAG_FLOOR`; the worker writes the two as slices of one record, `worker.rs`).
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn encode_floor(floor: u64, call: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + call.len());
    out.extend_from_slice(&floor.to_le_bytes());
    out.extend_from_slice(call);
    out
}

/// A `Command` record's replay floor and call: `floored`, the record carries
/// `FLAG_FLOOR` (else the whole payload is the call and there is no floor).
#[allow(clippy::type_complexity)]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn decode_floor(floored: bool, p: &[u8]) -> Result<(Option<u64>, &[u8]), BadPayload> {
    if !floored {
        return Ok((None, p));
    }
    let (f, call) = p.split_first_chunk::<8>().ok_or(BadPayload)?;
    Ok((Some(u64::from_le_bytes(*f)), call))
}

/// A void marker: the recovery's bound and base, and its decisions (`None`: a 16-byte
/// marker, which replayed local commits only).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct Marker {
    /// The bound of the recovery that wrote it.
    pub lo: u64,
    /// Its base: every GSN written before it is below.
    pub hi: u64,
    /// Per log that had a commit in `(lo, hi)` that was not replayed: the first such GSN.
    pub dead: Option<Vec<(u16, u64)>>,
}

impl Marker {
    /// Whether GSN `g` lies in the marker's open range.
    #[inline]
    pub(crate) fn covers(&self, g: u64) -> bool {
        self.lo < g && g < self.hi
    }

    /// Whether the recovery that wrote it replayed a commit of log `log` with GSN `g` inside
    /// its range (`local`: the commit carried the local flag, which is all a 16-byte marker
    /// goes by).
    pub(crate) fn replayed(&self, log: usize, g: u64, local: bool) -> bool {
        match &self.dead {
            None => local,
            Some(d) => d
                .iter()
                .filter(|e| usize::from(e.0) == log)
                .all(|&(_, dead)| g < dead),
        }
    }
}

/// A void marker's payload (with decisions).
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn encode_marker(m: &Marker) -> Vec<u8> {
    let dead = m.dead.as_deref().unwrap_or(&[]);
    let mut out = Vec::with_capacity(18 + dead.len() * ENTRY);
    out.extend_from_slice(&m.lo.to_le_bytes());
    out.extend_from_slice(&m.hi.to_le_bytes());
    if m.dead.is_some() {
        // Log numbers are below `u16::MAX` (`open.rs`), so the count fits.
        out.extend_from_slice(&(dead.len().min(usize::from(u16::MAX)) as u16).to_le_bytes());
        put_entries(dead, &mut out);
    }
    out
}

/// A void marker's payload.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn decode_marker(p: &[u8]) -> Result<Marker, BadPayload> {
    let (lo, rest) = p.split_first_chunk::<8>().ok_or(BadPayload)?;
    let (hi, rest) = rest.split_first_chunk::<8>().ok_or(BadPayload)?;
    let (lo, hi) = (u64::from_le_bytes(*lo), u64::from_le_bytes(*hi));
    if rest.is_empty() {
        return Ok(Marker { lo, hi, dead: None });
    }
    let (n, rest) = rest.split_first_chunk::<2>().ok_or(BadPayload)?;
    let dead = entries(rest)?;
    if dead.len() != usize::from(u16::from_le_bytes(*n)) {
        return Err(BadPayload);
    }
    Ok(Marker {
        lo,
        hi,
        dead: Some(dead),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn commit_payloads_and_markers_round_trip_and_refuse_odd_lengths() {
        assert_eq!(decode_commit(&encode_commit(3, &[])).unwrap(), (3, None));
        let d = vec![(1, 9), (ALL_LOGS, 4)];
        assert_eq!(
            decode_commit(&encode_commit(1, &d)).unwrap(),
            (1, Some(d.clone()))
        );
        assert_eq!(decode_commit(&[1, 0, 0]), Err(BadPayload));
        assert_eq!(decode_commit(&[1, 0, 0, 0, 5]), Err(BadPayload));
        for dead in [None, Some(vec![]), Some(d)] {
            let m = Marker {
                lo: 5,
                hi: 50,
                dead,
            };
            let b = encode_marker(&m);
            assert_eq!(decode_marker(&b).unwrap(), m);
            assert_eq!(decode_marker(&b[..b.len() - 1]), Err(BadPayload));
        }
        let m = Marker {
            lo: 5,
            hi: 50,
            dead: Some(vec![(1, 20)]),
        };
        assert!(m.replayed(0, 30, false) && m.replayed(1, 19, false));
        assert!(!m.replayed(1, 20, true));
        let old = Marker {
            lo: 5,
            hi: 50,
            dead: None,
        };
        assert!(old.replayed(1, 30, true) && !old.replayed(1, 30, false));
    }

    #[test]
    fn a_replay_floor_goes_before_the_call_and_a_short_one_is_refused() {
        let b = encode_floor(77, b"call");
        assert_eq!(decode_floor(true, &b).unwrap(), (Some(77), &b"call"[..]));
        assert_eq!(decode_floor(false, &b).unwrap(), (None, &b[..]));
        assert_eq!(
            decode_floor(true, &encode_floor(5, &[])).unwrap(),
            (Some(5), &[][..])
        );
        assert_eq!(decode_floor(true, &b[..7]), Err(BadPayload));
    }
}
