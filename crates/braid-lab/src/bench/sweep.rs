//! The configurations of a sweep: every thread count x device x NVM delay x scheme x logging
//! kind x log count the command line names, with `none` (the ratio base) first. With no
//! `--device`, every scheme runs on pmem and the library's durable default (serial on the
//! file device) beside them. Without `--scheme`, pertxn (whose log is a persistent-memory
//! region) runs on pmem only.

use anyhow::ensure;
use braid_engine::log::{LogKind, LogPlace};

use super::BenchArgs;
use crate::common::{self, DeviceKind, NONE};

/// One configuration of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// A registered scheme's name.
    pub scheme: &'static str,
    pub logging: LogKind,
    pub device: DeviceKind,
    pub threads: usize,
    pub logs: usize,
    pub nvm_delay_ns: u64,
    /// Which of the sweep's [`Variant`]s the point belongs to.
    pub variant: usize,
}

/// A labelled set of bench options measured beside others in one sweep, for comparisons
/// one command line cannot name (gsn's TX-D beside its PG-D, serial on one device beside
/// serial on RAID-0): every variant shares the workload, and the repeats go round the points
/// of all variants alike, so their ratios to the one `none` baseline come from the same run.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Names the variant in every table, JSON and CSV row (empty: the scheme alone names it).
    pub label: String,
    pub args: BenchArgs,
}

/// The points of every variant, `none` measured once per thread count (the first variant that
/// asks for it).
pub fn variant_points(variants: &[Variant]) -> anyhow::Result<Vec<Point>> {
    let mut out: Vec<Point> = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        for mut p in sweep_points(&v.args)? {
            if p.scheme == NONE
                && out
                    .iter()
                    .any(|q| q.scheme == NONE && q.threads == p.threads)
            {
                continue;
            }
            p.variant = i;
            out.push(p);
        }
    }
    Ok(out)
}

/// Expand the command line into the configurations to run, `none` first for each thread
/// count (its ratio base), logging schemes after.
pub fn sweep_points(args: &BenchArgs) -> anyhow::Result<Vec<Point>> {
    let schemes = common::scheme_names(args.scheme.as_deref());
    ensure!(
        !args.threads.is_empty() && !args.threads.contains(&0),
        "--threads needs positive thread counts"
    );
    let delays: Vec<u64> = match &args.nvm_delays {
        Some(d) => d.clone(),
        None => vec![args.engine.nvm_delay_ns],
    };
    let mut out = Vec::new();
    for &t in &args.threads {
        if schemes.contains(&NONE) {
            out.push(Point {
                scheme: NONE,
                logging: LogKind::Data,
                device: DeviceKind::Null,
                threads: t,
                logs: 0,
                nvm_delay_ns: 0,
                variant: 0,
            });
        }
        let devices = args
            .device
            .clone()
            .unwrap_or_else(|| vec![DeviceKind::Pmem]);
        let mut combos: Vec<(DeviceKind, u64, &'static str)> = Vec::new();
        for &device in &devices {
            for &delay in &delays {
                for &scheme in schemes.iter().filter(|s| **s != NONE) {
                    combos.push((device, delay, scheme));
                }
            }
        }
        // The scheme `Options::default()` gives a library user, also on the file device.
        let default_scheme = braid_engine::Options::default().scheme.name();
        if args.device.is_none() && schemes.contains(&default_scheme) {
            for &delay in &delays {
                combos.push((DeviceKind::File, delay, default_scheme));
            }
        }
        for (device, delay, scheme) in combos {
            let spec = args.engine.spec(scheme)?;
            // Without --scheme, a scheme that keeps its log in a persistent-memory region
            // (pertxn) sits out the other devices, and one that refuses persistent memory
            // (autonomous) sits out pmem; named, it runs and is refused with why.
            if args.scheme.is_none()
                && ((spec.log_place() == LogPlace::Region && device != DeviceKind::Pmem)
                    || (device == DeviceKind::Pmem && spec.pmem_refusal().is_some()))
            {
                continue;
            }
            for &logging in &args.logging {
                if logging == LogKind::Command && spec.command_logging_refusal().is_some() {
                    continue;
                }
                let counts = args.logs.clone().unwrap_or_else(|| vec![t]);
                let mut seen = Vec::new();
                for l in counts {
                    let l = spec.streams_for(l);
                    if seen.contains(&l) {
                        continue;
                    }
                    seen.push(l);
                    out.push(Point {
                        scheme,
                        logging,
                        device,
                        threads: t,
                        logs: l,
                        nvm_delay_ns: delay,
                        variant: 0,
                    });
                }
            }
        }
    }
    Ok(out)
}
