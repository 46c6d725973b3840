//! `none`: no logging at all, the baseline every logging figure is a ratio to. Commits are
//! acknowledged at once and nothing survives a crash but what the loader rebuilds.

use std::sync::Arc;

use super::registry::{LogPlace, Registration, SchemeDef};
use super::{
    CommitRequest, RecoveryReport, Replay, Scheme, SchemeConfig, SchemeWorker, Storage, Ticket,
};
use crate::WalError;
use crate::proxy::{Proxies, ProxyBoard, ProxyCounter};
use crate::stream::Stream;

/// The scheme's registration (see [`super::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "no logging: the baseline every figure is a ratio to",
    default: || Box::new(NoneConfig),
};

/// The scheme's name.
pub const NAME: &str = "none";

/// The `none` scheme's configuration (it has no options).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NoneConfig;

impl SchemeDef for NoneConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn log_place(&self) -> LogPlace {
        LogPlace::Nowhere
    }
    fn streams_for(&self, _requested: usize) -> usize {
        0
    }
    /// Logs nothing either way (so per-update runs have their no-logging baseline).
    fn update_records_refusal(&self) -> Option<&'static str> {
        None
    }
    fn open(
        &self,
        _cfg: &SchemeConfig,
        _storage: Storage,
        _replay: &dyn Replay,
        _progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        Ok((Arc::new(NoLogging::default()), RecoveryReport::default()))
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(*self)
    }
}

/// The no-logging scheme.
#[derive(Debug, Default)]
pub struct NoLogging {
    board: ProxyBoard,
}

struct NoLoggingWorker(ProxyCounter);

impl SchemeWorker for NoLoggingWorker {
    fn commit(&mut self, _req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        // Touches nothing shared: the proxies count commits only.
        self.0.commit();
        Ok(Ticket::DURABLE)
    }
    fn log_update(&mut self, _up: &super::UpdateRecord<'_>) -> Result<(), WalError> {
        Ok(())
    }
}

impl Scheme for NoLogging {
    fn name(&self) -> &'static str {
        NAME
    }
    fn worker(&self, _worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(NoLoggingWorker(self.board.counter())))
    }
    fn streams(&self) -> &[Stream] {
        &[]
    }
    fn close(&self) -> Result<(), WalError> {
        Ok(())
    }
    fn emulation(&self) -> Option<String> {
        Some("no logging: nothing survives a crash".into())
    }
    fn proxies(&self) -> Option<Proxies> {
        Some(self.board.sum())
    }
}
