//! De-staging: copying durable ring bytes to segment files, syncing them and only then
//! advancing the ring head; and, at open, reconciling files and ring after a crash.

use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, SeqCst};
use std::time::Duration;

use super::{DESTAGE_CHUNK, Destage, Ring};
use crate::scan::StreamSource;
use crate::{SegmentDamage, WalError};

impl Ring {
    /// At open: make the de-staged files and the ring agree (see the module docs).
    pub(super) fn reconcile_files(&self, d: &Destage) -> Result<(), WalError> {
        let head = self.head.load(Acquire);
        let (fstart, fend) = (d.log.start(), d.log.end());
        let dir = d.log.dir().display().to_string();
        if fend > head {
            if fstart > head {
                return Err(WalError::BadSegment {
                    file: dir,
                    damage: SegmentDamage::DestageAfterHead {
                        files_start: fstart,
                        head,
                    },
                });
            }
            // Bytes the ring still holds; they may not have been synced.
            d.log.reset_tail(head)?;
        } else if fend < head {
            let damage = if fend <= fstart {
                SegmentDamage::DestageEmpty { head }
            } else {
                SegmentDamage::DestageMissing {
                    files_end: fend,
                    head,
                }
            };
            return Err(WalError::BadSegment { file: dir, damage });
        }
        Ok(())
    }

    /// One de-staging round: copy `[head, durable)` to the files, sync, advance the head.
    pub(super) fn destage_once(&self, d: &Destage, buf: &mut Vec<u8>) -> Result<(), WalError> {
        let _round = d.round.lock();
        let head = self.head.load(Acquire);
        let durable = self.durable.load(Acquire);
        if durable <= head {
            return Ok(());
        }
        if buf.len() < DESTAGE_CHUNK {
            buf.resize(DESTAGE_CHUNK, 0);
        }
        let mut at = head;
        while at < durable {
            let n = DESTAGE_CHUNK.min((durable - at) as usize);
            let chunk = &mut buf[..n];
            self.read_ring(at, chunk);
            d.log.write(at, chunk)?;
            at += n as u64;
        }
        d.log.sync()?;
        self.set_head(durable)
    }

    pub(super) fn destage_main(self: Arc<Self>) {
        let Some(d) = &self.destage else { return };
        let mut buf = Vec::new();
        let mut backoff = Duration::from_millis(1);
        loop {
            let stop = {
                let mut g = d.lock.lock();
                while !g.requested && !g.stop {
                    d.cv.wait(&mut g);
                }
                g.requested = false;
                d.requested.store(false, SeqCst);
                g.stop
            };
            let r = self.destage_once(d, &mut buf);
            let mut g = d.lock.lock();
            match r {
                Ok(()) => {
                    g.error = None;
                    backoff = Duration::from_millis(1);
                }
                Err(e) => {
                    g.error = Some(e);
                    if !stop {
                        // Retry after a pause (a stop or a new request ends it early).
                        d.cv.wait_for(&mut g, backoff);
                        g.requested = true;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                }
            }
            if stop {
                return;
            }
        }
    }

    pub(super) fn request_destage(&self, d: &Destage) {
        if !d.requested.swap(true, SeqCst) {
            let mut g = d.lock.lock();
            g.requested = true;
            d.cv.notify_all();
        }
    }
}
