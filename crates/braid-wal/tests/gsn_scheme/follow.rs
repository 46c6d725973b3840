//! A standby following gsn logs (`scheme/gsn/follow.rs`): the writer runs through several
//! incarnations, each ended by a crash that loses the unflushed tail of some logs (so the logs
//! hold void markers, lost parts of page-partitioned transactions and commits above the
//! bound); a standby then replays the final logs in rounds over growing, unevenly cut prefixes,
//! and a promotion recovers the rest with the standby's positions as its cut, from logs
//! purged up to those positions.
//!
//! Half the cases run with Remote Flush Avoidance (transaction partitioning, or one log), where
//! commits acknowledged by their own log's flush lie above the bound and inside later void
//! markers. Every commit acknowledged before a crash must be in the final recovery, and the
//! recovered set must hold every transaction each of its transactions depends on.
//!
//! After every round the standby's state must be transaction-consistent: every transaction it
//! replayed is one recovery replays, every transaction it depends on (read or overwrote) was
//! replayed too, and every row holds the value of its last writer among them. After the
//! promotion it must equal a recovery from scratch, and when the last incarnation shut down
//! cleanly the rounds alone must have replayed everything. The promoted writer's void marker
//! must leave a later recovery of the whole logs the same state.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::payload::{RedoBuf, RedoOp};
use braid_wal::scan::{ScanMode, Scanner, StreamSource};
use braid_wal::scheme::cut::Cut;
use braid_wal::scheme::gsn::{self, CommitProtocol, Partition};
use braid_wal::scheme::registry::SchemeDef;
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, RowRef, Scheme, SchemeWorker, Ticket, Written,
};
use proptest::prelude::*;

use super::{State, cfg};
use crate::integration::mem_device::{MemDev, OpenGates};
use crate::integration::prefix_source::Prefix;

/// One transaction of the workload.
#[derive(Debug, Clone)]
struct Spec {
    worker: usize,
    reads: Vec<u64>,
    writes: Vec<u64>,
}

/// One incarnation of the writer: its transactions and, if it crashes, from which transaction
/// on which logs stop flushing.
#[derive(Debug, Clone)]
struct Life {
    txns: Vec<Spec>,
    crash: Option<(usize, Vec<bool>)>,
}

#[derive(Debug, Clone)]
struct Case {
    logs: usize,
    page: bool,
    rfa: bool,
    workers: usize,
    scan: usize,
    apply: usize,
    lives: Vec<Life>,
}

const KEYS: u64 = 8;

/// Run `spec` as transaction `id`; every row it writes holds `id`.
fn run(w: &mut dyn SchemeWorker, id: u64, spec: &Spec) -> Ticket {
    for &k in &spec.reads {
        w.on_read(RowRef::new(0, k));
    }
    let mut buf = RedoBuf::default();
    let mut written = Vec::new();
    for &k in &spec.writes {
        w.on_write(RowRef::new(0, k));
        let start = buf.bytes.len() as u32;
        buf.push(&RedoOp::Insert {
            table: 0,
            key: k,
            data: &id.to_le_bytes(),
        });
        written.push(Written {
            table: 0,
            key: k,
            op: start..buf.bytes.len() as u32,
        });
    }
    w.commit(&CommitRequest {
        txn: id,
        kind: LogKind::Data,
        payload: &buf.bytes,
        read_only: false,
        epoch: 0,
        writes: &written,
        rows: &NoRows,
        updates: 0,
    })
    .unwrap()
}

fn devices(devs: &[Arc<MemDev>]) -> Vec<Arc<dyn Device>> {
    devs.iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect()
}

/// Each row's writer, from a replayed state.
fn writers(st: &State) -> HashMap<u64, u64> {
    st.rows
        .lock()
        .iter()
        .map(|(&(_, k), v)| (k, u64::from_le_bytes(v[..8].try_into().unwrap())))
        .collect()
}

fn run_case(c: &Case) -> Result<(), String> {
    let mut conf = cfg(
        if c.page {
            Partition::Page
        } else {
            Partition::Transaction
        },
        CommitProtocol::Passive,
    );
    conf.1.scan_threads = c.scan;
    conf.1.apply_threads = c.apply;
    // RFA needs each transaction in one log (refused with page partitioning over several).
    conf.1.rfa = c.rfa && !(c.page && c.logs > 1);
    // Commits acknowledged (durable tickets) before each crash or close.
    let mut acked: BTreeSet<u64> = BTreeSet::new();
    let mut images: Vec<Vec<u8>> = vec![Vec::new(); c.logs];
    // Per transaction: the transactions it depends on (each key's writer before it).
    let mut deps: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut specs: HashMap<u64, &Spec> = HashMap::new();
    let mut next = 1u64;
    let mut clean = false;
    for life in &c.lives {
        let devs: Vec<Arc<MemDev>> = images.iter().cloned().map(MemDev::new).collect();
        let st = State::default();
        let (s, _) = gsn::open_gsn(&conf.0, &conf.1, devices(&devs), &st, &|_| {})
            .map_err(|e| format!("open: {e}"))?;
        let _gates = OpenGates(&devs);
        let mut last = writers(&st);
        let mut ws: Vec<Box<dyn SchemeWorker>> =
            (0..c.workers).map(|w| s.worker(w).unwrap()).collect();
        let mut tickets = Vec::new();
        for (i, spec) in life.txns.iter().enumerate() {
            if let Some((at, stop)) = &life.crash
                && *at == i
            {
                for (d, &stop) in devs.iter().zip(stop) {
                    if stop {
                        d.set_gate(false);
                    }
                }
            }
            let id = next;
            next += 1;
            let mut d: Vec<u64> = spec
                .reads
                .iter()
                .chain(&spec.writes)
                .filter_map(|k| last.get(k).copied())
                .collect();
            d.sort_unstable();
            d.dedup();
            deps.insert(id, d);
            specs.insert(id, spec);
            tickets.push((id, run(&mut *ws[spec.worker % c.workers], id, spec)));
            for &k in &spec.writes {
                last.insert(k, id);
            }
        }
        clean = life.crash.is_none();
        if clean {
            for (_, t) in &tickets {
                t.wait().map_err(|e| format!("commit: {e}"))?;
            }
        } else {
            // Let the logs still flushing reach what they can.
            for (i, st) in s.streams().iter().enumerate() {
                if life.crash.as_ref().is_some_and(|(_, stop)| !stop[i]) {
                    st.wait_durable(st.tail()).map_err(|e| e.to_string())?;
                }
            }
        }
        // Acknowledged before the image is taken: what the image must keep.
        for (id, t) in &tickets {
            if t.is_durable().map_err(|e| format!("ticket: {e}"))? {
                acked.insert(*id);
            }
        }
        if !clean {
            images = devs.iter().map(|d| d.crash_image()).collect();
        }
        drop(_gates);
        drop(ws);
        let _ = s.close();
        if clean {
            // After the close: with RFA, commits acknowledged by their own log's flush leave
            // the commit daemon's clock records (which bring every log's GSN up to them) to
            // the close.
            images = devs.iter().map(|d| d.crash_image()).collect();
        }
    }

    // Recovery from scratch: what the standby must end with.
    let want = State::default();
    gsn::recover_only(
        &conf.0,
        &conf.1,
        &devices(&images.iter().cloned().map(MemDev::new).collect::<Vec<_>>()),
        &want,
        &|_| {},
    )
    .map_err(|e| format!("recovery: {e}"))?;
    let want_set: BTreeSet<u64> = want.txns.lock().iter().copied().collect();
    if let Some(t) = acked.iter().find(|t| !want_set.contains(t)) {
        return Err(format!(
            "transaction {t} was acknowledged, and recovery lost it"
        ));
    }
    for &t in &want_set {
        if let Some(d) = deps[&t].iter().find(|d| !want_set.contains(d)) {
            return Err(format!(
                "recovery replayed {t} but not {d}, which it depends on"
            ));
        }
    }

    // The standby: rounds over growing prefixes, the last over the whole logs.
    let devs = devices(&images.iter().cloned().map(MemDev::new).collect::<Vec<_>>());
    let mut f = conf
        .1
        .follower(&conf.0, c.logs)
        .map_err(|e| e.to_string())?;
    let ends: Vec<u64> = devs
        .iter()
        .map(|d| {
            let mut sc = Scanner::new(&**d, ScanMode::Salvage);
            while let Ok(Some(_)) = sc.next_record() {}
            sc.end().map_or(d.start(), |e| e.end)
        })
        .collect();
    let standby = State::default();
    const ROUNDS: u64 = 5;
    for r in 1..=ROUNDS {
        let views: Vec<Prefix> = devs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let jitter = (i as u64 * 37 + next) % 61;
                let cut = if r == ROUNDS {
                    u64::MAX
                } else {
                    (ends[i] * r / ROUNDS).saturating_sub(jitter)
                };
                Prefix {
                    src: d.clone(),
                    cut,
                }
            })
            .collect();
        let srcs: Vec<&(dyn StreamSource + Sync)> = views.iter().map(|v| v as _).collect();
        f.round(&srcs, &standby)
            .map_err(|e| format!("round {r}: {e}"))?;
        let done: HashSet<u64> = standby.txns.lock().iter().copied().collect();
        for &t in &done {
            if !want_set.contains(&t) {
                return Err(format!("round {r}: replayed {t}, which recovery does not"));
            }
            if let Some(d) = deps[&t].iter().find(|d| !done.contains(d)) {
                return Err(format!(
                    "round {r}: replayed {t} but not {d}, which it depends on"
                ));
            }
        }
        let mut expect: HashMap<u64, u64> = HashMap::new();
        let mut order: Vec<u64> = done.iter().copied().collect();
        order.sort_unstable();
        for t in order {
            for &k in &specs[&t].writes {
                expect.insert(k, t);
            }
        }
        // Rows never written by the standby's transactions must not appear either.
        let got = writers(&standby);
        if got != expect {
            return Err(format!(
                "round {r}: rows {got:?}, but the transactions replayed ({} of them) leave {expect:?}",
                done.len()
            ));
        }
    }
    let rounds_set: BTreeSet<u64> = standby.txns.lock().iter().copied().collect();
    if clean && rounds_set != want_set {
        return Err(format!(
            "the last writer shut down cleanly, yet the rounds replayed {} of the {} \
             transactions recovery replays",
            rounds_set.len(),
            want_set.len()
        ));
    }

    // Promotion: recover past the standby's positions into its state, with the logs purged
    // up to them (as far as a writer's purge can go without leaving the standby behind).
    let mut pc = conf.clone();
    let at = f.resume();
    pc.0.cut = Some(Cut {
        epoch: 0,
        starts: at.clone(),
        ends: at.clone(),
        marks: f.marks(),
        keeps: Vec::new(),
    });
    let purged: Vec<Arc<MemDev>> = images
        .iter()
        .zip(&at)
        .map(|(i, &a)| MemDev::purged(i.clone(), a))
        .collect();
    let (s, _) = gsn::open_gsn(&pc.0, &pc.1, devices(&purged), &standby, &|_| {})
        .map_err(|e| format!("promotion: {e}"))?;
    let _ = s.close();
    let got: BTreeSet<u64> = standby.txns.lock().iter().copied().collect();
    if got != want_set || *standby.rows.lock() != *want.rows.lock() {
        return Err(format!(
            "after promotion: {} transactions and {:?}, recovery: {} and {:?}",
            got.len(),
            writers(&standby),
            want_set.len(),
            writers(&want)
        ));
    }
    // The promoted writer's void marker must not void what the standby had replayed: a
    // recovery of the whole logs, without a cut, still finds it all.
    let after = State::default();
    let promoted: Vec<Arc<MemDev>> = purged
        .iter()
        .map(|d| MemDev::new(d.crash_image()))
        .collect();
    gsn::recover_only(&conf.0, &conf.1, &devices(&promoted), &after, &|_| {})
        .map_err(|e| format!("recovery after the promotion: {e}"))?;
    if *after.rows.lock() != *want.rows.lock() {
        return Err(format!(
            "recovery after the promotion: {:?}, before it: {:?}",
            writers(&after),
            writers(&want)
        ));
    }
    Ok(())
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    (
        0usize..3,
        proptest::collection::vec(0..KEYS, 0..2),
        proptest::collection::vec(0..KEYS, 1..4),
    )
        .prop_map(|(worker, reads, mut writes)| {
            writes.sort_unstable();
            writes.dedup();
            Spec {
                worker,
                reads,
                writes,
            }
        })
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        1usize..=3,
        any::<bool>(),
        any::<bool>(),
        1usize..=3,
        1usize..=3,
        1usize..=3,
    )
        .prop_flat_map(|(logs, page, rfa, workers, scan, apply)| {
            let life = (
                proptest::collection::vec(spec_strategy(), 1..40),
                proptest::option::weighted(
                    0.7,
                    (0usize..40, proptest::collection::vec(any::<bool>(), logs)),
                ),
            )
                .prop_map(|(txns, crash)| {
                    let crash = crash.map(|(at, stop)| (at % txns.len(), stop));
                    Life { txns, crash }
                });
            proptest::collection::vec(life, 1..4).prop_map(move |lives| Case {
                logs,
                page,
                rfa,
                workers,
                scan,
                apply,
                lives,
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(debug_assertions) { 48 } else { 400 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_standby_replays_consistent_prefixes_and_promotion_completes_them(c in case_strategy()) {
        run_case(&c).map_err(TestCaseError::fail)?;
    }
}
