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

/// How long the idle commit daemon polls (yielding) before it naps.
const DAEMON_POLL: Duration = Duration::from_micros(200);
/// How long the idle daemon then naps in short sleeps (doubling from 20 us to [`NAP_MAX`])
/// before it blocks on its condition variable: a blocked daemon costs the next commit a
/// wake-up, a lock every worker may take (a global read-modify-write), so it blocks only
/// after commits have stopped for a while.
const DAEMON_NAPS: Duration = Duration::from_millis(20);
/// The longest nap.
const NAP_MAX: Duration = Duration::from_millis(1);

/// Start the commit daemon on its own thread.
pub(super) fn spawn(shared: Arc<Shared>) -> Result<JoinHandle<()>, WalError> {
    std::thread::Builder::new()
        .name("braid-gsn-commit".into())
        .spawn(move || commit::daemon(shared))
        .map_err(|e| WalError::Thread {
            detail: format!("cannot start the gsn commit daemon: {e}"),
        })
}

impl Shared {
    pub(crate) fn sleep_daemon(&self) {
        let busy = || self.target() > self.acked.load(SeqCst) || self.stop.load(SeqCst);
        // Poll (yielding the core) for a while, then nap, before blocking: a blocked daemon
        // costs every commit a wake-up.
        let t = Instant::now();
        while t.elapsed() < DAEMON_POLL {
            if busy() {
                return;
            }
            std::thread::yield_now();
        }
        let mut nap = Duration::from_micros(20);
        while t.elapsed() < DAEMON_NAPS {
            if busy() {
                return;
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(NAP_MAX);
        }
        let mut g = self.lock.lock();
        self.daemon_sleeping.store(true, SeqCst);
        // A committing worker stores its lane's want, then reads `daemon_sleeping`; the daemon
        // stores `daemon_sleeping`, then reads the wants: one of them sees the other.
        if !busy() {
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
