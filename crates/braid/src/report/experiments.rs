//! The experiments of `braid report`, as values: which paper and figure each mirrors, the
//! paper's claim, the schemes it compares, and the `braid bench` runs and figures it makes.

use braid_engine::LogKind;

use super::plot::{Chart, Figure, Key, X, Y};
use crate::common::WorkloadKind;

/// One experiment: a section of the summary.
pub struct Experiment {
    /// What `--only` matches.
    pub id: &'static str,
    /// The section's heading.
    pub title: &'static str,
    /// The paper the experiment reproduces.
    pub paper: &'static str,
    /// The paper's figures it mirrors.
    pub figure: &'static str,
    /// What the paper claims, in a sentence.
    pub claim: &'static str,
    /// The schemes compared (those not built yet are skipped with a note).
    pub schemes: &'static [&'static str],
    pub body: Body,
}

/// What an experiment runs.
pub enum Body {
    /// Bench runs, each with its table and figure.
    Runs {
        runs: Vec<Run>,
        /// Run nothing unless a scheme other than `none` exists.
        needs_logging: bool,
        /// Schemes whose throughput at 2 threads is noted as a share of no logging.
        ratio_notes: &'static [&'static str],
        /// A note after the runs.
        note: Option<&'static str>,
    },
    /// One bench run per x value; one table and one figure of them all.
    Sweep {
        runs: Vec<(f64, Run)>,
        figure: Figure,
    },
    /// A bench run per scheme and logging kind whose database is kept and then recovered
    /// with each number of recovery threads; a table and a bar figure of the recoveries.
    Recovery {
        bench: Bench,
        loggings: &'static [LogKind],
        recovery_threads: &'static [usize],
        figure: Figure,
    },
    /// `braid bench rewind --experiment all`, and the plots it draws.
    Rewind { plots: &'static [&'static str] },
}

/// One `braid bench` run: its id (names its data files) and options, and its figure.
pub struct Run {
    pub id: String,
    pub bench: Bench,
    pub figure: Option<Figure>,
}

/// The bench options an experiment sets; the rest are bench's defaults, the report's
/// `--seconds` and `--repeat`, and with `--quick` small tables.
#[derive(Debug, Clone)]
pub struct Bench {
    pub workload: WorkloadKind,
    pub threads: Vec<usize>,
    pub logging: Vec<LogKind>,
    pub nvm_delays: Option<Vec<u64>>,
    pub theta: Option<f64>,
    pub tatp_mix: Option<&'static str>,
    pub tpcc_mix: Option<&'static str>,
    /// Runs per configuration, instead of the report's.
    pub repeat: Option<usize>,
    /// Keep the databases (under the report's `keep/`).
    pub keep: bool,
}

impl Bench {
    /// `workload` on `threads`, data logging, everything else at its default.
    fn new(workload: WorkloadKind, threads: &[usize]) -> Bench {
        Bench {
            workload,
            threads: threads.to_vec(),
            logging: vec![LogKind::Data],
            nvm_delays: None,
            theta: None,
            tatp_mix: None,
            tpcc_mix: None,
            repeat: None,
            keep: false,
        }
    }
}

fn name(w: WorkloadKind) -> &'static str {
    match w {
        WorkloadKind::Ycsb => "ycsb",
        WorkloadKind::Tpcc => "tpcc",
        WorkloadKind::Tatp => "tatp",
        WorkloadKind::Tpcb => "tpcb",
    }
}

/// Throughput against worker threads, one line per configuration.
fn vs_threads(id: &str, w: WorkloadKind) -> Figure {
    Figure {
        stem: id.to_string(),
        title: format!("{}: throughput vs threads", name(w)),
        x_label: "worker threads",
        y_label: "txn/s",
        chart: Chart::Lines {
            x: X::Threads,
            y: Y::TxnPerS,
            key: Key::Label,
            skip_none: false,
        },
    }
}

/// A run of `bench` named `id`, drawn as throughput against threads.
fn threads_run(id: &str, bench: Bench) -> Run {
    Run {
        id: id.to_string(),
        figure: Some(vs_threads(id, bench.workload)),
        bench,
    }
}

fn wang_johnson() -> Experiment {
    use WorkloadKind::*;
    let mut tatp = Bench::new(Tatp, &[1, 2]);
    tatp.tatp_mix = Some("update-location-only");
    let mut payment = Bench::new(Tpcc, &[1, 2]);
    payment.tpcc_mix = Some("payment-only");
    Experiment {
        id: "wj-fig4",
        title: "Centralized vs distributed logging (Wang & Johnson Fig. 4)",
        paper: "Wang & Johnson, VLDB 2014",
        figure: "Fig. 4",
        claim: "distributed logging with GSNs scales with cores where a central log saturates (TATP Update-Location, TPC-B, TPC-C Payment)",
        schemes: &["none", "serial", "gsn"],
        body: Body::Runs {
            runs: vec![
                threads_run("wj-fig4-tatp", tatp),
                threads_run("wj-fig4-tpcb", Bench::new(Tpcb, &[1, 2])),
                threads_run("wj-fig4-payment", payment),
            ],
            needs_logging: false,
            ratio_notes: &[],
            note: Some(
                "On 2 cores a central log is not yet a bottleneck the way it is at 32-80 threads in the paper: the figures here show overhead per scheme, not the scalability crossover.",
            ),
        },
    }
}

fn nv_logging() -> Experiment {
    use WorkloadKind::*;
    let latency = Figure {
        stem: "nvlog-fig11".into(),
        title: "TPC-B: commit latency (p50) vs threads".into(),
        x_label: "worker threads",
        y_label: "microseconds",
        chart: Chart::Lines {
            x: X::Threads,
            y: Y::P50Us,
            key: Key::Label,
            skip_none: true,
        },
    };
    let delay_run = |id: &str, w: WorkloadKind| {
        let mut bench = Bench::new(w, &[2]);
        bench.nvm_delays = Some(vec![0, 100, 200, 400, 800]);
        Run {
            id: id.to_string(),
            bench,
            figure: Some(Figure {
                stem: id.to_string(),
                title: format!("{}: throughput vs NVM write delay", name(w)),
                x_label: "extra ns per persisted line",
                y_label: "txn/s",
                chart: Chart::Lines {
                    x: X::NvmDelay,
                    y: Y::TxnPerS,
                    key: Key::Label,
                    skip_none: true,
                },
            }),
        }
    };
    Experiment {
        id: "nvlog",
        title: "Per-transaction NVRAM logging (NV-Logging Fig. 11-13)",
        paper: "Huang et al., VLDB 2014",
        figure: "Fig. 11-13",
        claim: "per-transaction logging in NVRAM cuts log insertion latency versus a disk-style log on NVRAM (NV-Disk) and stays ahead as NVM gets slower",
        schemes: &["none", "nvdisk", "pertxn"],
        body: Body::Runs {
            runs: vec![
                Run {
                    id: "nvlog-fig11".into(),
                    bench: Bench::new(Tpcb, &[1, 2]),
                    figure: Some(latency),
                },
                delay_run("nvlog-fig12-tpcb", Tpcb),
                delay_run("nvlog-fig13-tatp", Tatp),
            ],
            needs_logging: true,
            ratio_notes: &[],
            note: None,
        },
    }
}

fn taurus_logging() -> Experiment {
    let run = |id: &str, w: WorkloadKind| {
        let mut bench = Bench::new(w, &[1, 2]);
        bench.logging = vec![LogKind::Data, LogKind::Command];
        threads_run(id, bench)
    };
    Experiment {
        id: "taurus-fig5",
        title: "Logging throughput, data and command (Taurus Fig. 5)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 5",
        claim: "Taurus data logging comes within a few percent of no logging and command logging beats serial command logging, on YCSB and TPC-C",
        schemes: &["none", "serial", "taurus"],
        body: Body::Runs {
            runs: vec![
                run("taurus-fig5-ycsb", WorkloadKind::Ycsb),
                run("taurus-fig5-tpcc", WorkloadKind::Tpcc),
            ],
            needs_logging: false,
            ratio_notes: &["serial", "taurus"],
            note: None,
        },
    }
}

fn taurus_recovery() -> Experiment {
    let mut bench = Bench::new(WorkloadKind::Ycsb, &[2]);
    bench.keep = true;
    bench.repeat = Some(1);
    Experiment {
        id: "taurus-fig7",
        title: "Recovery throughput (Taurus Fig. 7)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 7",
        claim: "Taurus recovers in parallel, faster than serial replay, and scales with recovery threads",
        schemes: &["serial", "taurus"],
        body: Body::Recovery {
            bench,
            loggings: &[LogKind::Data, LogKind::Command],
            recovery_threads: &[1, 2],
            figure: Figure {
                stem: "taurus-fig7".into(),
                title: "YCSB: recovery throughput".into(),
                x_label: "",
                y_label: "replayed txn/s",
                chart: Chart::Bars,
            },
        },
    }
}

fn taurus_contention() -> Experiment {
    let runs = [0.0, 0.6, 0.8, 0.9, 0.99]
        .into_iter()
        .map(|theta: f64| {
            let mut bench = Bench::new(WorkloadKind::Ycsb, &[2]);
            bench.theta = Some(theta);
            let id = format!("taurus-fig13-theta{theta}");
            (
                theta,
                Run {
                    id,
                    bench,
                    figure: None,
                },
            )
        })
        .collect();
    Experiment {
        id: "taurus-fig13",
        title: "Contention sweep (Taurus Fig. 13)",
        paper: "Xia et al., VLDB 2021",
        figure: "Fig. 13",
        claim: "Taurus keeps its advantage as YCSB skew (theta) rises, until contention bounds everyone",
        schemes: &["none", "serial", "taurus"],
        body: Body::Sweep {
            runs,
            figure: Figure {
                stem: "taurus-fig13".into(),
                title: "YCSB: throughput vs contention (2 threads)".into(),
                x_label: "Zipf theta",
                y_label: "txn/s",
                chart: Chart::Lines {
                    x: X::Sweep,
                    y: Y::TxnPerS,
                    key: Key::SchemeLogging,
                    skip_none: false,
                },
            },
        },
    }
}

fn rewind() -> Experiment {
    Experiment {
        id: "rewind",
        title: "REWIND persistent-memory transactions (Fig. 3, 7, 8, 10)",
        paper: "Chatzistergiou et al., VLDB 2015",
        figure: "Fig. 3, 7, 8, 10",
        claim: "recoverable in-place updates cost little over non-recoverable ones: the Batch log is within ~1.1-1.5x of the twin at low update rates, and a few fences per transaction",
        schemes: &[],
        body: Body::Rewind {
            plots: &["rewind-word-tx", "rewind-fig7", "rewind-fig10"],
        },
    }
}

/// Every experiment of the report, in the order of the summary.
pub fn all() -> Vec<Experiment> {
    vec![
        wang_johnson(),
        nv_logging(),
        taurus_logging(),
        taurus_recovery(),
        taurus_contention(),
        rewind(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_data_files_are_the_reports() {
        let ids: Vec<&str> = all().iter().map(|e| e.id).collect();
        assert_eq!(
            ids,
            [
                "wj-fig4",
                "nvlog",
                "taurus-fig5",
                "taurus-fig7",
                "taurus-fig13",
                "rewind"
            ]
        );
        let sweep: Vec<String> = all()
            .into_iter()
            .filter_map(|e| match e.body {
                Body::Sweep { runs, .. } => Some(runs),
                _ => None,
            })
            .flatten()
            .map(|(_, r)| r.id)
            .collect();
        assert_eq!(
            sweep,
            [
                "taurus-fig13-theta0",
                "taurus-fig13-theta0.6",
                "taurus-fig13-theta0.8",
                "taurus-fig13-theta0.9",
                "taurus-fig13-theta0.99"
            ]
        );
    }
}
