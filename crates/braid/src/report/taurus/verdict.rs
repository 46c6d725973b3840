//! The verdicts of the Taurus figures: each compares what the paper claims with the medians
//! measured, at 2 worker threads (and 2 recovery threads), and names the measured cause when
//! they differ.

use super::super::verdict::{Key, Measured, Verdict, data, k, pct, per_flush, times};
use super::{DEVICES, RECOVERY_THETAS, THETAS};

const WORKLOADS: [(&str, &str); 3] = [
    ("ycsb", "YCSB"),
    ("payment", "Payment"),
    ("neworder", "New-Order"),
];

/// Transactions per flush of `key` in run `id`, as text.
fn batch(m: &Measured, id: &str, key: Key<'_>) -> String {
    m.get(id, key)
        .map(|c| format!("{:.0}", per_flush(c)))
        .unwrap_or_else(|| "?".into())
}

/// Shared read-modify-writes per commit of `key` in run `id`, as text.
fn rmw(m: &Measured, id: &str, key: Key<'_>) -> String {
    m.get(id, key)
        .and_then(|c| c.shared_rmw_per_commit)
        .map(|r| format!("{r:.2}"))
        .unwrap_or_else(|| "?".into())
}

pub fn fig5(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let mut reasons = Vec::new();
    for (w, title) in WORKLOADS {
        let id = format!("taurus-fig5-{w}");
        let tc = data("taurus", 2).command();
        let sc = data("serial", 2).command();
        let (Some(tc_sc), Some(td_sd), Some(tc_pl), Some(td_rd)) = (
            m.ratio(&id, tc, sc),
            m.ratio(&id, data("taurus", 2), data("serial", 2)),
            m.ratio(&id, tc, data("plover", 2)),
            m.ratio(&id, data("taurus", 2), data("serial", 2).variant("raid0x4")),
        ) else {
            return Verdict::missing(&id);
        };
        parts.push(format!(
            "{title}: Taurus command {} serial command and {} Plover; Taurus data {} serial data, {} \
             serial data on RAID-0",
            times(tc_sc),
            times(tc_pl),
            times(td_sd),
            times(td_rd)
        ));
        if tc_sc < 1.0 {
            reasons.push(format!(
                "on {title} serial command logging's shared LSN is not contended at 2 threads \
                 ({} shared read-modify-writes per commit against Taurus's {}), and serial's one \
                 flusher groups {} transactions per flush where Taurus's {DEVICES}, sharing 2 cores \
                 with the workers, group {}: Taurus pays for its logs and LSN vectors without the \
                 contention they remove",
                rmw(m, &id, sc),
                rmw(m, &id, tc),
                batch(m, &id, sc),
                batch(m, &id, tc)
            ));
        }
        if tc_pl < 1.0 {
            reasons.push(format!(
                "on {title} Plover's partition latches are rarely contended by 2 workers"
            ));
        }
    }
    let agrees = reasons.is_empty();
    Verdict::new(parts.join("; ") + ".", agrees, reasons.join("; "))
}

pub fn fig6(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let mut reasons = Vec::new();
    for (w, title) in WORKLOADS {
        let id = format!("taurus-fig6-{w}");
        let silor = data("silor", 2);
        let (Some(tc), Some(td)) = (
            m.ratio(&id, data("taurus", 2).command(), silor),
            m.ratio(&id, data("taurus", 2), silor),
        ) else {
            return Verdict::missing(&id);
        };
        parts.push(format!(
            "{title}: Taurus command {} Silo-R, Taurus data {} Silo-R",
            times(tc),
            times(td)
        ));
        if tc < 1.0 {
            reasons.push(format!(
                "on {title} Silo-R flushes once per epoch ({} transactions per flush against Taurus \
                 command's {}), and Taurus pays LSN-vector upkeep Silo-R does not ({} against {} \
                 shared read-modify-writes per commit); command logging's smaller records buy nothing \
                 while neither fills its devices",
                batch(m, &id, silor),
                batch(m, &id, data("taurus", 2).command()),
                rmw(m, &id, data("taurus", 2).command()),
                rmw(m, &id, silor)
            ));
        }
        if !(0.75..=1.33).contains(&td) {
            reasons.push(format!(
                "on {title} Taurus data and Silo-R do not plateau together ({}): with 2 workers \
                 neither saturates 4 NVMe-class devices, so what differs is their CPU cost per commit",
                times(td)
            ));
        }
    }
    let agrees = reasons.is_empty();
    Verdict::new(parts.join("; ") + ".", agrees, reasons.join("; "))
}

/// Median replayed txn/s of `key` (its threads: recovery threads) in run `id`, auto plan.
fn rec(m: &Measured, id: &str, key: Key<'_>) -> Option<f64> {
    m.recovery(id, key, "").map(|r| r.txn_per_s)
}

pub fn fig7(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let mut reasons = Vec::new();
    for (w, title) in WORKLOADS {
        let id = format!("taurus-fig7-{w}");
        let (Some(td), Some(tc), Some(sd), Some(sc), Some(pl)) = (
            rec(m, &id, data("taurus", 2)),
            rec(m, &id, data("taurus", 2).command()),
            rec(m, &id, data("serial", 2)),
            rec(m, &id, data("serial", 2).command()),
            rec(m, &id, data("plover", 2)),
        ) else {
            return Verdict::missing(&id);
        };
        parts.push(format!(
            "{title} at 2 recovery threads: Taurus data {} ({} serial data), Taurus command {} ({} \
             serial command), Plover {}",
            k(td),
            times(td / sd.max(1.0)),
            k(tc),
            times(tc / sc.max(1.0)),
            k(pl)
        ));
        if td < sd || tc < sc {
            reasons.push(format!(
                "on {title} serial replay with 2 cores is not yet bound by the log's total order: \
                 a second replay thread only has what the log readers leave of the second core"
            ));
        }
    }
    let agrees = reasons.is_empty();
    Verdict::new(parts.join("; ") + ".", agrees, reasons.join("; "))
}

pub fn fig8(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let mut reasons = Vec::new();
    for (w, title) in WORKLOADS {
        let id = format!("taurus-fig8-{w}");
        let (Some(td), Some(tc), Some(sr)) = (
            rec(m, &id, data("taurus", 2)),
            rec(m, &id, data("taurus", 2).command()),
            rec(m, &id, data("silor", 2)),
        ) else {
            return Verdict::missing(&id);
        };
        parts.push(format!(
            "{title}: Silo-R {}, Taurus data {} ({} Silo-R), Taurus command {} ({} Silo-R)",
            k(sr),
            k(td),
            times(td / sr.max(1.0)),
            k(tc),
            times(tc / sr.max(1.0))
        ));
        if tc < sr {
            reasons.push(format!(
                "on {title} re-executing commands costs more per transaction than installing Silo-R's \
                 after-images, and with 2 recovery threads Taurus command replay has no more \
                 parallelism to use than Silo-R's"
            ));
        }
    }
    let agrees = reasons.is_empty();
    Verdict::new(parts.join("; ") + ".", agrees, reasons.join("; "))
}

pub fn fig9(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let mut reasons = Vec::new();
    for (w, title) in WORKLOADS {
        let id = format!("taurus-fig9-{w}");
        let (Some(td), Some(tc), Some(rd), Some(pl), Some(sr)) = (
            m.ratio(&id, data("taurus", 2), data("serial", 2)),
            m.ratio(
                &id,
                data("taurus", 2).command(),
                data("serial", 2).command(),
            ),
            m.ratio(&id, data("serial", 2).variant("raid0x4"), data("serial", 2)),
            m.ratio(&id, data("plover", 2), data("serial", 2)),
            m.ratio(&id, data("silor", 2).variant("OCC"), data("serial", 2)),
        ) else {
            return Verdict::missing(&id);
        };
        parts.push(format!(
            "{title}, of serial on one device: Taurus data {}, Taurus command {} (of serial command), \
             serial on RAID-0 {}, Plover {}, Silo-R {}",
            times(td),
            times(tc),
            times(rd),
            times(pl),
            times(sr)
        ));
        if w == "ycsb" && (td < 2.0 || tc < 2.0) {
            reasons.push(format!(
                "on YCSB Taurus reaches only {} (data) and {} (command) of serial with {DEVICES} \
                 devices",
                times(td),
                times(tc)
            ));
        }
    }
    let agrees = reasons.is_empty();
    Verdict::new(
        parts.join("; ")
            + &format!(
                ". With {DEVICES} devices the paper's 8-disk ratios (7.1x) scale to at most {DEVICES}x."
            ),
        agrees,
        reasons.join("; "),
    )
}

pub fn fig10(m: &Measured) -> Verdict {
    let id = "taurus-fig10-ycsb";
    let (Some(td), Some(tc), Some(sd), Some(sc), Some(rd)) = (
        rec(m, id, data("taurus", 2)),
        rec(m, id, data("taurus", 2).command()),
        rec(m, id, data("serial", 2)),
        rec(m, id, data("serial", 2).command()),
        rec(m, id, data("serial", 2).variant("raid0x4")),
    ) else {
        return Verdict::missing(id);
    };
    let result = format!(
        "YCSB at 2 recovery threads: Taurus data {} ({} serial data, {} serial data on RAID-0), Taurus \
         command {} ({} serial command).",
        k(td),
        times(td / sd.max(1.0)),
        times(td / rd.max(1.0)),
        k(tc),
        times(tc / sc.max(1.0))
    );
    let agrees = td >= sd && tc >= sc;
    Verdict::new(
        result,
        agrees,
        "with 2 cores serial replay is not bound by the log's total order, and the log readers take \
         the core a second replay thread would use",
    )
}

pub fn fig13(m: &Measured) -> Verdict {
    let (Some(&hi), Some(&mid)) = (THETAS.last(), THETAS.iter().find(|t| **t >= 0.9)) else {
        return Verdict::missing("thetas");
    };
    let id = |t: f64| format!("taurus-fig13-theta{t}");
    let mut parts = Vec::new();
    let mut rising = Vec::new();
    for key in [
        data("none", 2),
        data("serial", 2),
        data("serial", 2).command(),
        data("taurus", 2),
        data("taurus", 2).command(),
    ] {
        let (Some(a), Some(b)) = (m.tps(&id(mid), key), m.tps(&id(hi), key)) else {
            return Verdict::missing("a theta");
        };
        let name = if key.scheme == "none" {
            "none".to_string()
        } else {
            format!("{} {}", key.scheme, key.logging)
        };
        parts.push(format!("{name} {} to {}", k(a), k(b)));
        if b >= a {
            rising.push(name);
        }
    }
    let result = format!("from theta {mid} to {hi}: {}.", parts.join(", "));
    let agrees = rising.is_empty();
    Verdict::new(
        result,
        agrees,
        format!(
            "{} did not fall: with 2 workers a hot key is contended by one other thread only (at \
             theta {hi} no logging aborts {} transactions per commit), while the skew keeps the few \
             hot rows in cache",
            rising.join(", "),
            m.get(&id(hi), data("none", 2))
                .map(|c| format!("{:.2}", c.aborts_per_s / c.txn_per_s.max(1.0)))
                .unwrap_or_else(|| "?".into())
        ),
    )
}

pub fn fig13b(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let mut reasons = Vec::new();
    for &t in RECOVERY_THETAS {
        let id = format!("taurus-fig13b-theta{t}");
        let (Some(par), Some(auto), Some(ser)) = (
            m.recovery(&id, data("taurus", 2), "parallel"),
            m.recovery(&id, data("taurus", 2), "auto"),
            rec(m, &id, data("serial", 2)),
        ) else {
            return Verdict::missing(&id);
        };
        parts.push(format!(
            "theta {t}: Taurus data parallel {}, auto {} ({}), serial {}",
            k(par.txn_per_s),
            k(auto.txn_per_s),
            auto.plan_used,
            k(ser)
        ));
        if t > 1.0 && auto.plan_used != "serial" {
            reasons.push(format!(
                "at theta {t} auto kept the parallel plan ({} of the forced parallel one)",
                pct(auto.txn_per_s / par.txn_per_s.max(1.0))
            ));
        }
        if t > 1.0 && auto.txn_per_s < 0.9 * par.txn_per_s {
            reasons.push(format!(
                "at theta {t} the serial fallback replays at {} of the parallel plan",
                pct(auto.txn_per_s / par.txn_per_s.max(1.0))
            ));
        }
    }
    let agrees = reasons.is_empty();
    Verdict::new(parts.join("; ") + ".", agrees, reasons.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;

    /// Fig. 9's measurements with Taurus at `td` (data) and `tc` (command) of serial.
    fn measured(td: f64, tc: f64) -> Measured {
        let mut m = Measured::default();
        for (w, _) in WORKLOADS {
            let res = vec![
                result("serial", "", "data", 2, 50_000.0),
                result("serial", "", "command", 2, 100_000.0),
                result("serial", "raid0x4", "data", 2, 150_000.0),
                result("plover", "", "data", 2, 120_000.0),
                result("silor", "OCC", "data", 2, 140_000.0),
                result("taurus", "", "data", 2, 50_000.0 * td),
                result("taurus", "", "command", 2, 100_000.0 * tc),
            ];
            m.runs.push((format!("taurus-fig9-{w}"), None, res));
        }
        m
    }

    #[test]
    fn fig9_needs_taurus_at_twice_serial_on_ycsb_with_both_logging_kinds() {
        let v = fig9(&measured(3.0, 2.5));
        assert!(v.agrees, "{v:?}");
        assert!(
            v.result.contains("Taurus data 3.00x, Taurus command 2.50x"),
            "{}",
            v.result
        );
        let v = fig9(&measured(3.0, 1.5));
        assert!(!v.agrees && v.because.contains("1.50x (command)"), "{v:?}");
    }
}
