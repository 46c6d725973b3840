//! The epoch thread: advances the global epoch every `epoch_ms` (SiloR, Zheng et al., OSDI
//! 2014, Section 4.1: 40 ms) and computes, persists and publishes the durable epoch `D`.
//!
//! Each round: advance `E` to `g`; for every stream, read the announcements of the workers
//! mapped onto it and then its tail: every record of an epoch up to the stream's bound
//! ([`stream_bound`]) lies before that tail. Once the stream (its flusher is SiloR's logger,
//! writing its own device) is durable up to the tail, the stream has made that epoch durable.
//! Workers' records do not wake the flushers (a backlog of 64 KiB does): each round wakes
//! them, and flushes stream 0 itself.
//! `D` is the minimum over the streams; when it grows, a `P` record saying so (and, with
//! several streams, the tails this round waited durable) is appended to stream 0 and made
//! durable, and only then is `D` published to the waiting commits.
//!
//! Choices where the paper is vague: one thread computes every stream's durable epoch (in
//! SiloR each logger publishes its own and a separate thread takes the minimum); the streams'
//! flushers still write their devices in parallel, and waiting for them in turn costs no more
//! than the slowest. A round with nothing to do (no worker inside a commit, no record of an
//! epoch above `D`, no checkpoint waiting) is skipped, so an idle database writes nothing.
//! A full device (`NoSpace`) is transient, as for every stream: the round is retried at the
//! next tick; any other failure stops `D` for good and fails every commit above it.

use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Instant;

use super::Shared;
use super::durable::{pepoch_payload, pepoch_tails_payload};
use super::epoch::{durable_epoch, stream_bound};
use crate::WalError;
use crate::record::{Kind, RecordSpec, Stamp};
use crate::stream::StreamWriter;

/// The epoch thread's state.
pub(crate) struct Logger {
    sh: Arc<Shared>,
    writer: StreamWriter,
    /// Per stream: the highest epoch it has made durable.
    per_stream: Vec<u64>,
    rounds: u64,
}

impl Logger {
    pub(crate) fn new(sh: Arc<Shared>, writer: StreamWriter) -> Logger {
        let d = sh.durable.get();
        let n = sh.streams.len();
        Logger {
            sh,
            writer,
            per_stream: vec![d; n],
            rounds: 0,
        }
    }

    /// Nothing is waiting for a round.
    fn idle(&self) -> bool {
        let d = self.sh.durable.get();
        !self.sh.epochs.any_active()
            && self.sh.epochs.max_appended() <= d
            && self.sh.want.load(SeqCst) <= d
    }

    /// Run until asked to stop; a last round makes everything appended durable.
    pub(crate) fn run(mut self) {
        let period = self.sh.epoch_len;
        let mut next = Instant::now() + period;
        loop {
            let stopping = {
                let mut g = self.sh.stop.lock();
                while !*g && Instant::now() < next {
                    self.sh.tick.wait_until(&mut g, next);
                }
                *g
            };
            let now = Instant::now();
            next += period;
            if next < now {
                next = now + period;
            }
            if !self.idle() {
                match self.round() {
                    Ok(()) => {}
                    Err(WalError::NoSpace { .. }) if !stopping => continue,
                    Err(e) => {
                        self.sh.durable.fail(e);
                        return;
                    }
                }
            }
            if stopping {
                return;
            }
        }
    }

    /// One round: advance the epoch, then make what precedes it durable.
    fn round(&mut self) -> Result<(), WalError> {
        self.rounds += 1;
        self.sh.rounds.store(self.rounds, SeqCst);
        let g = self.sh.epochs.advance();
        let n = self.sh.streams.len();
        let workers = self.sh.epochs.workers();
        let mut tails = Vec::with_capacity(n);
        let mut bounds = Vec::with_capacity(n);
        // Every announcement bounds every stream (a slot's worker may be on any stream): a
        // stream's bound is the global one.
        let announced = (0..workers).map(|w| self.sh.epochs.active(w));
        let b = stream_bound(g, announced);
        for s in 0..n {
            bounds.push(b);
            tails.push(self.sh.streams[s].tail());
        }
        // Workers leave flushing to this round (`worker.rs`): wake the other streams' flushers
        // so that they write in parallel while this thread flushes stream 0 itself. A check's
        // error shows again in the wait below.
        for (stream, &tail) in self.sh.streams.iter().zip(&tails).skip(1) {
            let _ = stream.check_durable(tail);
        }
        for s in 0..n {
            self.sh.streams[s].wait_durable(tails[s])?;
            self.per_stream[s] = self.per_stream[s].max(bounds[s]);
        }
        let d = durable_epoch(&self.per_stream);
        if d > self.sh.durable.get() {
            // With several streams, say where each stream's records of epochs `<= d` end
            // (`durable.rs`), for recovery's windows.
            let p = if n > 1 {
                pepoch_tails_payload(d, &tails)
            } else {
                pepoch_payload(d).to_vec()
            };
            let payload = [&p[..]];
            let spec = RecordSpec {
                kind: Kind::Checkpoint,
                flags: 0,
                txn: 0,
                stamp: &Stamp::None,
                payload: &payload,
            };
            let (_, end) = self.writer.append(&spec)?;
            self.sh.streams[0].wait_durable(end)?;
            self.sh.durable.publish(d);
        }
        Ok(())
    }
}
