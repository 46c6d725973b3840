//! The crate's public errors: a workload's consistency conditions failing
//! ([`Workload::check`](crate::Workload::check)), an unknown transaction-mix name, and
//! transactions that cannot be drawn before a run ([`Client::pregenerate`](crate::Client::pregenerate)).

/// A workload's consistency conditions do not hold on a database: what was found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{workload} consistency: {}", problems.join("; "))]
pub struct ConsistencyError {
    /// The workload's short name (`tpcc`, `tatp`, ...).
    pub workload: &'static str,
    /// One description per violated condition, in the order found (TPC-C and TATP keep the
    /// first 20).
    pub problems: Vec<String>,
}

/// The problems a consistency checker collects, up to a limit.
#[derive(Debug)]
pub(crate) struct Problems {
    workload: &'static str,
    list: Vec<String>,
    limit: usize,
    /// Whether to note, once, that problems past the limit were left out. The checkers differ
    /// here (TPC-C notes it, TATP drops them silently, TPC-B has no limit) and each keeps its
    /// own behaviour.
    mark_more: bool,
}

impl Problems {
    /// Keep every problem.
    pub(crate) fn all(workload: &'static str) -> Problems {
        Problems::capped(workload, usize::MAX, false)
    }

    /// Keep the first `limit` problems; with `mark_more`, a problem past the limit adds one
    /// "... (more)" entry.
    pub(crate) fn capped(workload: &'static str, limit: usize, mark_more: bool) -> Problems {
        Problems {
            workload,
            list: Vec::new(),
            limit,
            mark_more,
        }
    }

    /// Record one problem.
    pub(crate) fn add(&mut self, s: String) {
        if self.list.len() < self.limit {
            self.list.push(s);
        } else if self.mark_more && self.list.len() == self.limit {
            self.list.push("... (more)".into());
        }
    }

    /// `Ok` if nothing was recorded, else the error listing the problems.
    pub(crate) fn finish(self) -> Result<(), ConsistencyError> {
        if self.list.is_empty() {
            Ok(())
        } else {
            Err(ConsistencyError {
                workload: self.workload,
                problems: self.list,
            })
        }
    }
}

/// A transaction-mix name the workload does not know (parsing `TatpMix`, `tpcc::Mix`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {workload} mix {given:?}; use {choices}")]
pub struct UnknownMix {
    /// The benchmark (`TPC-C`, `TATP`).
    pub workload: &'static str,
    /// The name given.
    pub given: String,
    /// The names accepted, for the message.
    pub choices: &'static str,
}

/// Why a client's transactions cannot be drawn before the run
/// ([`Client::pregenerate`](crate::Client::pregenerate)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PregenerateError {
    /// No transaction was asked for.
    #[error("drawing transactions ahead needs at least one")]
    Empty,
    /// The client draws each transaction as it runs it and has no source to draw ahead from.
    #[error("this client draws its transactions as it runs them and cannot draw them ahead")]
    Unsupported,
    /// The source's transactions cannot be drawn ahead: why.
    #[error("transactions cannot be drawn ahead: {0}")]
    Refused(&'static str),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn problems_keep_each_checkers_limit() {
        let mut p = Problems::capped("x", 2, true);
        for i in 0..5 {
            p.add(format!("p{i}"));
        }
        let e = p.finish().unwrap_err();
        assert_eq!(e.problems, ["p0", "p1", "... (more)"]);
        assert_eq!(e.to_string(), "x consistency: p0; p1; ... (more)");
        let mut p = Problems::capped("x", 2, false);
        for i in 0..5 {
            p.add(format!("p{i}"));
        }
        assert_eq!(p.finish().unwrap_err().problems, ["p0", "p1"]);
        let mut p = Problems::all("x");
        for i in 0..30 {
            p.add(format!("p{i}"));
        }
        assert_eq!(p.finish().unwrap_err().problems.len(), 30);
        assert!(Problems::all("x").finish().is_ok());
    }
}
