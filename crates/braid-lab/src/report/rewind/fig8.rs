//! REWIND Fig. 8 (§5.3): rollback and recovery time against the operations undone, REWIND
//! Batch against Berkeley DB.

use crate::report::verdict::{Kind, Measured, Part, Verdict, times};

use super::{f, json, skip, variant_rows};

/// A Fig. 8 point: (operations, rollback ms, recovery ms, transactions recovered).
type RecoveryPt = (f64, f64, f64, f64);

pub(super) fn fig8(m: &Measured) -> Verdict {
    if json(m)
        .and_then(|j| j["recovery"]["points"].as_array())
        .is_none()
    {
        return Verdict::missing("recovery");
    }
    let series = |v: &str| -> Vec<RecoveryPt> {
        variant_rows(
            m,
            "recovery",
            v,
            |p| {
                Some((
                    f(p, "operations")?,
                    f(p, "rollback_ms")?,
                    f(p, "recovery_ms")?,
                    f(p, "recovered_transactions")?,
                ))
            },
            |r| r.0,
        )
    };
    let batch = series("batch");
    let (Some(b0), Some(b1)) = (batch.first(), batch.last()) else {
        return Verdict::missing("Batch's recovery");
    };
    let ms = |x: f64| format!("{x:.2} ms");
    // Batch's own growth: what the paper plots against, given with every comparison.
    let batch_lines = |n: f64| {
        json(m)
            .and_then(|j| j["recovery"]["points"].as_array())
            .and_then(|a| {
                a.iter()
                    .find(|p| p["variant"] == "batch" && f(p, "operations") == Some(n))
            })
            .and_then(|p| f(p, "rollback_lines"))
            .map_or_else(String::new, |l| format!(" (persisting {l:.0} lines)"))
    };
    let own = format!(
        "Batch rolls back {:.0} operations in {} and {:.0} in {}{}, and recovers {:.0} \
         transactions in {} and {:.0} in {}",
        b0.0,
        ms(b0.1),
        b1.0,
        ms(b1.1),
        batch_lines(b1.0),
        b0.3,
        ms(b0.2),
        b1.3,
        ms(b1.2)
    );
    let others = "Stasis and Shore-MT cannot be obtained here (see the peers' record)";
    let mut parts = Vec::new();
    let rb_dir = "REWIND Batch rolls back a transaction faster than Berkeley DB (Fig. 8 left)";
    let rb_mag = "REWIND Batch rolls back 12x faster than Berkeley DB";
    let rc_dir = "REWIND Batch recovers unfinished transactions faster than Berkeley DB \
                  (Fig. 8 right, a transaction every 200 operations)";
    let rc_mag = "REWIND Batch recovers 14x faster than Berkeley DB";
    let bdb = series("berkeley-db");
    // Berkeley DB's points at Batch's operation counts.
    let pairs: Vec<(RecoveryPt, RecoveryPt)> = batch
        .iter()
        .filter_map(|b| bdb.iter().find(|d| d.0 == b.0).map(|d| (*b, *d)))
        .collect();
    if pairs.is_empty() {
        let why = json(m)
            .and_then(|j| j["recovery"]["peers"]["berkeley-db"].as_str())
            .map_or_else(
                || "Berkeley DB's rollback and recovery did not run".to_string(),
                |s| {
                    format!(
                        "Berkeley DB's rollback and recovery program: {s} (scripts/rewind-peers.sh)"
                    )
                },
            );
        parts.push(Part::not_measured(rb_dir, Kind::Direction, why.clone()));
        parts.push(Part::not_measured(rb_mag, Kind::Magnitude, why.clone()));
        parts.push(Part::not_measured(rc_dir, Kind::Direction, why.clone()));
        parts.push(Part::not_measured(rc_mag, Kind::Magnitude, why));
    } else {
        let names: Vec<String> = pairs
            .iter()
            .map(|(b, _)| format!("{:.0} ops", b.0))
            .collect();
        let ordering = |value: fn(&RecoveryPt) -> f64| -> Vec<skip::Pair> {
            pairs
                .iter()
                .zip(&names)
                .map(|((b, d), n)| {
                    (
                        format!("Berkeley DB at {n}"),
                        format!("Batch at {n}"),
                        value(d),
                        value(b),
                    )
                })
                .collect()
        };
        let (lb, ld) = pairs[pairs.len() - 1];
        let bdb_lines = json(m)
            .and_then(|j| j["recovery"]["peers"]["berkeley-db"]["lines_charged"].as_array())
            .and_then(|a| a.iter().find(|x| f(x, "operations") == Some(lb.0)))
            .and_then(|x| Some((f(x, "rollback_nvm_lines")?, f(x, "recovery_nvm_lines")?)))
            .map_or_else(String::new, |(rb, rc)| {
                format!(
                    "; at {:.0} operations Berkeley DB wrote {rb:.0} lines of file data to roll \
                     back (its abort leaves its compensation records in its log buffer) and \
                     {rc:.0} to recover",
                    lb.0
                )
            });
        let charged = format!(
            "both pay {} ns per persisted line (Berkeley DB per 64-byte line of file data it \
             writes, as the paper charged its writes to PMFS); {own}{bdb_lines}",
            crate::rewind::NVM_WRITE_NS
        );
        let rb = ordering(|p| p.1);
        parts.push(
            Part::ordering(rb_dir, &skip::named(&rb), ms)
                .with_kind(Kind::Direction)
                .because(charged.clone()),
        );
        parts.push(
            Part::within(rb_mag, ld.1 / lb.1, 12.0, 12.0)
                .measured(format!(
                    "Berkeley DB {} against Batch's {} at {:.0} operations ({})",
                    ms(ld.1),
                    ms(lb.1),
                    lb.0,
                    times(ld.1 / lb.1)
                ))
                .because(charged.clone()),
        );
        let rc = ordering(|p| p.2);
        parts.push(
            Part::ordering(rc_dir, &skip::named(&rc), ms)
                .with_kind(Kind::Direction)
                .because(charged.clone()),
        );
        parts.push(
            Part::within(rc_mag, ld.2 / lb.2, 14.0, 14.0)
                .measured(format!(
                    "Berkeley DB {} against Batch's {} for {:.0} transactions ({})",
                    ms(ld.2),
                    ms(lb.2),
                    lb.3,
                    times(ld.2 / lb.2)
                ))
                .because(charged),
        );
    }
    parts.push(Part::not_measured(
        "REWIND Batch rolls back 30x faster than Stasis and 4x faster than Shore-MT",
        Kind::Magnitude,
        others,
    ));
    parts.push(Part::not_measured(
        "REWIND Batch recovers 20x faster than Stasis and 8x faster than Shore-MT",
        Kind::Magnitude,
        others,
    ));
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rewind::fixtures::with;
    use crate::report::verdict::Level;

    /// Batch's and (if given) Berkeley DB's rollback and recovery times at 10k and 80k
    /// operations.
    fn recovery(batch_ms: [f64; 2], bdb_ms: Option<[f64; 2]>) -> Measured {
        let point = |v: &str, ops: f64, ms: f64| {
            serde_json::json!({
                "variant": v, "operations": ops, "rollback_ms": ms, "recovery_ms": ms,
                "recovered_transactions": ops / 200.0
            })
        };
        let mut points = vec![
            point("batch", 10_000.0, batch_ms[0]),
            point("batch", 80_000.0, batch_ms[1]),
        ];
        if let Some(b) = bdb_ms {
            points.push(point("berkeley-db", 10_000.0, b[0]));
            points.push(point("berkeley-db", 80_000.0, b[1]));
        }
        with(serde_json::json!({"recovery": {"points": points,
            "peers": {"berkeley-db": "not built"}}}))
    }

    #[test]
    fn fig8_without_berkeley_db_is_not_measured() {
        // REWIND's own growth with the operations is no claim of the paper: alone it judges
        // nothing.
        let v = fig8(&recovery([6.0, 50.0], None));
        assert_eq!(v.level(), Level::NotMeasured, "{v:?}");
        assert!(v.parts().iter().all(|p| !p.ran()), "{v:?}");
        assert!(v.parts()[0].reason().contains("not built"), "{v:?}");
        // Berkeley DB 12x and 14x slower at every count: the measured parts hold, Stasis and
        // Shore-MT stay unmeasured magnitudes.
        let v = fig8(&recovery([6.0, 50.0], Some([72.0, 650.0])));
        assert_eq!(v.level(), Level::AgreesInDirection, "{v:?}");
        assert_eq!(v.parts().iter().filter(|p| p.ran()).count(), 4, "{v:?}");
        // Berkeley DB faster: differs.
        let v = fig8(&recovery([6.0, 50.0], Some([3.0, 20.0])));
        assert_eq!(v.level(), Level::Differs, "{v:?}");
        assert_eq!(fig8(&Measured::default()).level(), Level::NotMeasured);
    }
}
