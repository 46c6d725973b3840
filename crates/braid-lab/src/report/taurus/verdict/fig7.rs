//! Fig. 7 of Taurus (§5.3): recovery under 2PL on NVMe-class devices. Taurus recovers in
//! parallel where the serial baselines are bound by the log's total order, by the paper's
//! magnitudes only with as many replay threads as it had.

use crate::report::taurus::{DEVICES, RAID0};
use crate::report::verdict::{Kind, Measured, Part, Verdict, data, k, times};

use super::{THREADS, WORKLOADS, rec, two_replayers};

pub fn fig7(m: &Measured) -> Verdict {
    let mut parts = Vec::new();
    let mut ycsb_gain = None;
    for (w, title) in WORKLOADS {
        let id = format!("taurus-fig7-{w}");
        let id = id.as_str();
        let (Some(td), Some(tc), Some(sd), Some(sc), Some(pl)) = (
            rec(m, id, data("taurus", THREADS.n())),
            rec(m, id, data("taurus", THREADS.n()).command()),
            rec(m, id, data("serial", THREADS.n())),
            rec(m, id, data("serial", THREADS.n()).command()),
            rec(m, id, data("plover", THREADS.n())),
        ) else {
            return Verdict::missing(id);
        };
        let (gd, gc) = (td / sd.max(1.0), tc / sc.max(1.0));
        if w == "ycsb" {
            ycsb_gain = Some((gd, gc, two_replayers(m, id)));
        }
        parts.push(
            Part::above(
                format!(
                    "{title}: Taurus recovers faster than the serial baseline of its logging kind, \
                     which \"the total sequence order of transactions\" limits"
                ),
                gd.min(gc),
            )
            .measured(format!(
                "at {THREADS} recovery threads: Taurus data {} ({} serial data), Taurus command {} \
                 ({} serial command)",
                k(td),
                times(gd),
                k(tc),
                times(gc)
            ))
            .because(two_replayers(m, id)),
        );
        // RAID-0 gives serial logging the bandwidth of every device, not parallel replay.
        let raid = data("serial", THREADS.n()).variant(RAID0);
        parts.push(match rec(m, id, raid) {
            Some(sdr) => Part::above(
                format!(
                    "{title}: Taurus data recovers faster than serial data on RAID-0 (the \
                     striped log keeps the total order)"
                ),
                td / sdr.max(1.0),
            )
            .measured(format!(
                "at {THREADS} recovery threads: Taurus data {}, serial data on RAID-0 {}",
                k(td),
                k(sdr)
            ))
            .because(two_replayers(m, id)),
            None => Part::not_measured(
                format!("{title}: Taurus data recovers faster than serial data on RAID-0"),
                Kind::Direction,
                "serial data on RAID-0 did not run",
            ),
        });
        let plover = format!(
            "with {THREADS} recovery threads Plover replays {} and Taurus {} (data) and {} \
             (command), each over {DEVICES} logs",
            k(pl),
            k(td),
            k(tc)
        );
        match w {
            "ycsb" => {
                parts.push(
                    Part::ordering(
                        "YCSB: Plover outperforms Taurus below 80 threads (it needs no \
                         dependency resolution)",
                        &[
                            (("Plover", pl), ("Taurus data", td)),
                            (("Plover", pl), ("Taurus command", tc)),
                        ],
                        k,
                    )
                    .because(plover.clone()),
                );
                parts.push(Part::check(
                    "YCSB: Taurus command scales linearly and exceeds Plover at 80 threads",
                    Kind::Crossover,
                    format!(
                        "at {THREADS} recovery threads only: Taurus command {} Plover",
                        times(tc / pl.max(1.0))
                    ),
                    false,
                    format!(
                        "the run's recovery threads end at {THREADS}, far below the crossover at \
                         80; {plover}"
                    ),
                ));
            }
            "neworder" => {
                parts.push(
                    Part::ordering(
                        "New-Order: Plover ahead of Taurus data (the gap: dependency resolution \
                         and its memory overhead)",
                        &[(("Plover", pl), ("Taurus data", td))],
                        k,
                    )
                    .because(plover.clone()),
                );
                parts.push(
                    Part::above(
                        "New-Order: Taurus command outperforms Plover (\"by up to 2.4x\")",
                        tc / pl.max(1.0),
                    )
                    .because(format!(
                        "re-running New-Order's transactions costs more than installing Plover's \
                         records, and {THREADS} threads leave Taurus command no parallelism to \
                         spare; {plover}"
                    )),
                );
                parts.push(
                    Part::within(
                        "New-Order: Taurus command up to 2.4x Plover",
                        tc / pl.max(1.0),
                        2.4,
                        2.4,
                    )
                    .because(plover),
                );
            }
            _ => {}
        }
    }
    if let Some((gd, gc, why)) = ycsb_gain {
        parts.push(
            Part::within(
                "YCSB: Taurus is up to 42.6x faster than the serial baselines (80 threads)",
                gd.max(gc),
                42.6,
                42.6,
            )
            .measured(format!(
                "at {THREADS} recovery threads: Taurus data {} serial data, Taurus command {} \
                 serial command",
                times(gd),
                times(gc)
            ))
            .because(why),
        );
    }
    Verdict::of(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result;
    use crate::report::taurus::verdict::fixtures::row;
    use crate::report::verdict::Level;

    #[test]
    fn fig7_a_small_lead_over_serial_fails_the_magnitude_with_the_proxies() {
        let mut m = Measured::default();
        for (w, _) in WORKLOADS {
            let id = format!("taurus-fig7-{w}");
            for (scheme, logging, tps) in [
                ("taurus", "data", 143_000.0),
                ("taurus", "command", 176_000.0),
                ("serial", "data", 100_000.0),
                ("serial", "command", 100_000.0),
                ("plover", "data", 200_000.0),
            ] {
                m.recoveries
                    .push(row(&id, None, scheme, logging, ("", ""), tps));
            }
            let mut serial = result("serial", "", "data", THREADS.n(), 1.0);
            serial.shared_rmw_per_commit = Some(1.53);
            m.runs.push((id, None, vec![serial]));
        }
        let v = fig7(&m);
        // New-Order's Taurus command behind Plover: a direction part fails.
        assert_eq!(v.level(), Level::Differs);
        let mag = v.parts().iter().find(|p| p.claim().contains("42.6x"));
        assert!(
            mag.is_some_and(|p| !p.holds()
                && p.reason().contains("1.76x is below the accepted 21.8x")
                && p.reason().contains(&format!("{THREADS} replay threads"))
                && p.reason().contains("1.53 shared read-modify-writes")),
            "{mag:?}"
        );
    }
}
