//! The commit daemon's life around its rounds (the rounds themselves are in `commit.rs`): its
//! start, its idle wait and its stop. Passive group commit (Wang & Johnson Section
//! 4.1) and the watermarks of file devices both run it; a durable cache (Section 4.2) needs
//! none.

use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::thread::JoinHandle;
use std::time::Duration;

use super::commit;
use super::shared::Shared;
use crate::WalError;

/// How long the idle commit daemon polls (yielding the core) before it parks: a parked daemon
/// costs every commit a wake-up (a lock every worker may take, a global read-modify-write,
/// and the daemon's wake-up latency), so it parks only once commits have paused for a while.
const DAEMON_POLL: Duration = Duration::from_micros(200);

/// Start the commit daemon on its own thread.
pub(super) fn spawn(shared: Arc<Shared>) -> Result<JoinHandle<()>, WalError> {
    std::thread::Builder::new()
        .name("braid-gsn-commit".into())
        .spawn(move || commit::daemon(shared))
        .map_err(|e| WalError::thread_start("gsn commit daemon", e))
}

impl Shared {
    /// The idle daemon: wait until a commit joins the queue beyond `acked` (its worker
    /// stores its lane's want and then notifies `daemon_wait`) or the daemon is stopped:
    /// polling for [`DAEMON_POLL`], then parked.
    pub(crate) fn sleep_daemon(&self) {
        self.daemon_wait.wait_yielding(DAEMON_POLL, || {
            (self.target() > self.acked.load(SeqCst) || self.stop.load(SeqCst)).then_some(())
        });
    }

    pub(super) fn stop_daemon(&self) {
        self.stop.store(true, SeqCst);
        self.daemon_wait.notify();
    }
}
