//! `none`: no logging at all, the baseline every logging figure is a ratio to. Commits are
//! acknowledged at once and nothing survives a crash but what the loader rebuilds.

use super::{CommitRequest, Scheme, SchemeKind, SchemeWorker, Ticket};
use crate::WalError;
use crate::stream::Stream;

/// The no-logging scheme.
#[derive(Debug, Default)]
pub struct NoLogging;

struct NoLoggingWorker;

impl SchemeWorker for NoLoggingWorker {
    fn commit(&mut self, _req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        Ok(Ticket::Durable)
    }
}

impl Scheme for NoLogging {
    fn kind(&self) -> SchemeKind {
        SchemeKind::None
    }
    fn worker(&self, _worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(NoLoggingWorker))
    }
    fn streams(&self) -> &[Stream] {
        &[]
    }
    fn close(&self) -> Result<(), WalError> {
        Ok(())
    }
}
