//! The commit daemon's life around its rounds (the rounds themselves are in `commit.rs`): its
//! start, its idle poll-then-sleep and its stop. Passive group commit (Wang & Johnson Section
//! 4.1) and the watermarks of file devices both run it; a durable cache (Section 4.2) needs
//! none.

use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::commit;
use super::shared::Shared;
use crate::WalError;

/// How long the idle commit daemon polls before it sleeps.
const DAEMON_POLL: Duration = Duration::from_micros(200);

/// Start the commit daemon on its own thread.
pub(super) fn spawn(shared: Arc<Shared>) -> Result<JoinHandle<()>, WalError> {
    std::thread::Builder::new()
        .name("braid-gsn-commit".into())
        .spawn(move || commit::daemon(shared))
        .map_err(|e| WalError::Config(format!("cannot start the gsn commit daemon: {e}")))
}

impl Shared {
    pub(crate) fn sleep_daemon(&self) {
        // Poll (yielding the core) for a while before sleeping: a sleeping daemon costs every
        // commit a wake-up.
        let t = Instant::now();
        while t.elapsed() < DAEMON_POLL {
            if self.want.load(SeqCst) > self.acked.load(SeqCst) || self.stop.load(SeqCst) {
                return;
            }
            std::thread::yield_now();
        }
        let mut g = self.lock.lock();
        self.daemon_sleeping.store(true, SeqCst);
        if self.want.load(SeqCst) <= self.acked.load(SeqCst) && !self.stop.load(SeqCst) {
            self.daemon_cv.wait_for(&mut g, Duration::from_millis(50));
        }
        self.daemon_sleeping.store(false, SeqCst);
    }

    pub(super) fn stop_daemon(&self) {
        self.stop.store(true, SeqCst);
        let _g = self.lock.lock();
        self.daemon_cv.notify_all();
    }
}
