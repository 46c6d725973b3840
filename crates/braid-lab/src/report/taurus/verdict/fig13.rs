//! Fig. 13 of Taurus (§5.6): contention. Logging (13a): as YCSB's Zipf theta rises past 1.0
//! every scheme's throughput falls with the workload's. Recovery (13b): Taurus's parallel
//! recovery slows beyond theta 0.8 as dependencies between logs lengthen, and the automatic
//! plan falls back to serial replay where that is faster.

use crate::report::taurus::{RECOVERY_THETAS, THETAS};
use crate::report::verdict::{DIRECTION_TOLERANCE, Kind, Measured, Part, Verdict, data, k, times};

use super::{THREADS, rec, two_replayers};

pub fn fig13(m: &Measured) -> Verdict {
    let (Some(&lo), Some(&hi), Some(&mid)) = (
        THETAS.first(),
        THETAS.last(),
        THETAS.iter().rev().find(|t| **t <= 1.0),
    ) else {
        return Verdict::missing("thetas");
    };
    let id = |t: f64| format!("taurus-fig13-theta{t}");
    let aborts = m
        .get(&id(hi), data("none", THREADS.n()))
        .map(|c| format!("{:.2}", c.aborts_per_s / c.txn_per_s.max(1.0)))
        .unwrap_or_else(|| "?".into());
    let mut parts = Vec::new();
    let mut early = Vec::new();
    let mut never = Vec::new();
    let mut shown = Vec::new();
    for key in [
        data("none", THREADS.n()),
        data("serial", THREADS.n()),
        data("serial", THREADS.n()).command(),
        data("taurus", THREADS.n()),
        data("taurus", THREADS.n()).command(),
    ] {
        let tps: Option<Vec<f64>> = THETAS.iter().map(|&t| m.tps(&id(t), key)).collect();
        let Some(tps) = tps else {
            return Verdict::missing("a theta");
        };
        let at = |t: f64| {
            THETAS
                .iter()
                .position(|x| *x == t)
                .and_then(|i| tps.get(i))
                .copied()
                .unwrap_or(0.0)
        };
        let name = if key.scheme == "none" {
            "no logging".to_string()
        } else {
            format!("{} {}", key.scheme, key.logging)
        };
        // Where it first falls beyond the tolerance, from one theta to the next.
        let first_fall = THETAS
            .windows(2)
            .zip(tps.windows(2))
            .find(|(_, v)| v[1] / v[0].max(1.0) < 1.0 - DIRECTION_TOLERANCE)
            .map(|(t, _)| t[1]);
        match first_fall {
            Some(t) if t <= 1.0 => early.push(format!("{name} at theta {t}")),
            None => never.push(name.clone()),
            _ => {}
        }
        shown.push(format!(
            "{name}: {}",
            first_fall.map_or_else(|| "never".to_string(), |t| format!("theta {t}"))
        ));
        let fall = at(hi) / at(mid).max(1.0);
        parts.push(
            Part::below(
                format!("{name}'s throughput decreases as theta rises past 1.0"),
                fall,
            )
            .measured(format!(
                "{} at theta {mid} to {} at {hi} ({})",
                k(at(mid)),
                k(at(hi)),
                times(fall)
            ))
            .because(format!(
                "with {THREADS} workers a hot key has few rivals (at theta {hi} no logging aborts {aborts} \
                 transactions per commit), while the skew keeps the few hot rows in cache"
            )),
        );
    }
    let mut why = Vec::new();
    if !early.is_empty() {
        why.push(format!("falls before theta 1.0: {}", early.join(", ")));
    }
    if !never.is_empty() {
        why.push(format!(
            "never falls from theta {lo} to {hi}: {}",
            never.join(", ")
        ));
    }
    parts.push(Part::check(
        "the decrease sets in when theta is greater than 1.0, \"due to the reduced parallelism \
         in the workload\"",
        Kind::Crossover,
        format!("first fall: {}", shown.join("; ")),
        why.is_empty(),
        why.join("; "),
    ));
    Verdict::of(parts)
}

pub fn fig13b(m: &Measured) -> Verdict {
    let (Some(&lo), Some(&hi), Some(&past)) = (
        RECOVERY_THETAS.first(),
        RECOVERY_THETAS.last(),
        RECOVERY_THETAS.iter().find(|t| **t > 0.8),
    ) else {
        return Verdict::missing("thetas");
    };
    let id = |t: f64| format!("taurus-fig13b-theta{t}");
    let taurus = data("taurus", THREADS.n());
    let serial = data("serial", THREADS.n());
    let mut rows = Vec::new();
    for &t in RECOVERY_THETAS {
        let (Some(par), Some(auto), Some(ser)) = (
            m.recovery(&id(t), taurus, "parallel"),
            m.recovery(&id(t), taurus, "auto"),
            rec(m, &id(t), serial),
        ) else {
            return Verdict::missing(&id(t));
        };
        rows.push((
            t,
            par.txn_per_s,
            auto.txn_per_s,
            auto.plan_used.clone(),
            ser,
        ));
    }
    let row = |t: f64| rows.iter().find(|r| r.0 == t);
    let (Some(r_lo), Some(r_past), Some(r_hi)) = (row(lo), row(past), row(hi)) else {
        return Verdict::missing("a theta");
    };
    let r = |a: f64, b: f64| a / b.max(1.0);
    let parallel = |a: &(f64, f64, f64, String, f64)| format!("{} at theta {}", k(a.1), a.0);
    let plans: Vec<String> = rows
        .iter()
        .map(|x| format!("theta {} {}", x.0, x.3))
        .collect();
    let plans_right = rows.iter().all(|x| (x.0 > 1.0) == (x.3 == "serial"));
    let vs_serial: Vec<String> = rows
        .iter()
        .map(|x| format!("theta {}: {}", x.0, times(r(x.2, x.4))))
        .collect();
    Verdict::of(vec![
        Part::below(
            "Taurus's parallel recovery drops when theta goes beyond 0.8 (dependencies between \
             transactions spanning logs)",
            r(r_past.1, r_lo.1),
        )
        .with_kind(Kind::Crossover)
        .measured(format!("{} to {}", parallel(r_lo), parallel(r_past)))
        .because(format!(
            "with {THREADS} recovery threads a dependency between logs stalls one other replayer \
             at most, so the parallel plan does not yet pay for theta {past}'s skew"
        )),
        Part::below(
            "Taurus's parallel recovery is slower at high contention than at low",
            r(r_hi.1, r_lo.1),
        )
        .measured(format!("{} to {}", parallel(r_lo), parallel(r_hi)))
        .because(format!(
            "with {THREADS} recovery threads few dependencies between logs wait on each other"
        )),
        Part::above(
            "serial recovery performs better with higher theta (the skewed working set fits in \
             cache)",
            r(r_hi.4, r_lo.4),
        )
        .measured(format!(
            "{} at theta {lo} to {} at {hi}",
            k(r_lo.4),
            k(r_hi.4)
        )),
        Part::ordering(
            "at low contention Taurus recovers faster than serial logging (\"serial algorithms \
             have low throughput at low contention\")",
            &[(("Taurus", r_lo.2), ("serial", r_lo.4))],
            k,
        )
        .measured(format!(
            "Taurus (auto plan) over serial: {}",
            vs_serial.join(", ")
        ))
        .because(format!(
            "at theta {lo} serial replays {} and Taurus {} ({} plan): {}",
            k(r_lo.4),
            k(r_lo.2),
            r_lo.3,
            two_replayers(m, &id(lo))
        )),
        Part::check(
            "when contention is high (theta > 1) Taurus runs serial recovery",
            Kind::Crossover,
            format!("plan used by auto: {}", plans.join(", ")),
            plans_right,
            format!(
                "auto chose {}, not serial exactly above theta 1",
                plans.join(", ")
            ),
        ),
        Part::above(
            "the serial fallback gives Taurus good performance under high contention",
            r(r_hi.2, r_hi.1),
        )
        .measured(format!(
            "at theta {hi} auto ({}) {} against the forced parallel plan's {} ({})",
            r_hi.3,
            k(r_hi.2),
            k(r_hi.1),
            times(r(r_hi.2, r_hi.1))
        ))
        .because(format!("auto kept the {} plan", r_hi.3)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;
    use crate::report::taurus::verdict::fixtures::row;
    use crate::report::verdict::Level;

    /// Fig. 13a's sweep: every scheme at `tps(theta)`.
    fn fig13_measured(tps: fn(f64) -> f64) -> Measured {
        let mut m = Measured::default();
        for &t in THETAS {
            let mut rows = Vec::new();
            for (s, l) in [
                ("none", "data"),
                ("serial", "data"),
                ("serial", "command"),
                ("taurus", "data"),
                ("taurus", "command"),
            ] {
                rows.push(result(s, "", l, THREADS.n(), tps(t)));
            }
            m.runs
                .push((format!("taurus-fig13-theta{t}"), Some(t), rows));
        }
        m
    }

    #[test]
    fn fig13_every_scheme_must_fall_and_only_past_1() {
        let v = fig13(&fig13_measured(|t| if t > 1.0 { 1e5 / t } else { 1e5 }));
        assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        // Falling from the start: the crossover fails, the direction holds.
        let v = fig13(&fig13_measured(|t| 1e5 / t));
        assert_eq!(v.level(), Level::AgreesInDirection);
        // Rising with skew, as no logging does on 2 cores: differs.
        let v = fig13(&fig13_measured(|t| 1e5 * t));
        assert_eq!(v.level(), Level::Differs);
    }

    fn fig13b_measured(par: [f64; 3], auto: [(f64, &str); 3], serial: [f64; 3]) -> Measured {
        let mut m = Measured::default();
        for (i, &t) in RECOVERY_THETAS.iter().enumerate() {
            let id = format!("taurus-fig13b-theta{t}");
            let x = Some(t);
            m.recoveries.push(row(
                &id,
                x,
                "taurus",
                "data",
                ("parallel", "parallel"),
                par[i],
            ));
            m.recoveries.push(row(
                &id,
                x,
                "taurus",
                "data",
                ("auto", auto[i].1),
                auto[i].0,
            ));
            m.recoveries
                .push(row(&id, x, "serial", "data", ("", ""), serial[i]));
        }
        m
    }

    #[test]
    fn fig13b_serial_recovery_ahead_at_every_theta_differs() {
        // The old report's numbers: the fallback works, but serial recovery beats Taurus at
        // every theta.
        let v = fig13b(&fig13b_measured(
            [617e3, 716e3, 516e3],
            [(644e3, "parallel"), (635e3, "parallel"), (1.76e6, "serial")],
            [840e3, 975e3, 3.29e6],
        ));
        assert_eq!(v.level(), Level::Differs);
        let f = v.failing();
        assert!(
            f.iter().any(|c| c.starts_with("at low contention Taurus")),
            "{f:?}"
        );
        // Taurus ahead at low contention and dropping past 0.8, the fallback above 1: agrees.
        let v = fig13b(&fig13b_measured(
            [1.2e6, 0.9e6, 0.5e6],
            [(1.2e6, "parallel"), (0.9e6, "parallel"), (1.6e6, "serial")],
            [0.8e6, 1.0e6, 3.0e6],
        ));
        assert_eq!(v.level(), Level::Agrees, "{:?}", v.failing());
        // Auto keeping the parallel plan at theta 1.5: the crossover fails, and so does the
        // fallback's gain.
        let v = fig13b(&fig13b_measured(
            [1.2e6, 0.9e6, 0.5e6],
            [
                (1.2e6, "parallel"),
                (0.9e6, "parallel"),
                (0.5e6, "parallel"),
            ],
            [0.8e6, 1.0e6, 3.0e6],
        ));
        assert_eq!(v.level(), Level::Differs);
    }
}
