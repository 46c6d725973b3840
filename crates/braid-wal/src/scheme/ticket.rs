//! The promise a commit returns ([`Ticket`]) and what it waits for: a stream's durable point
//! or a scheme's own condition ([`DurabilityWait`]).

use std::fmt;

use crate::stream::Stream;
use crate::{Lsn, WalError};

/// Something that can tell when a commit is durable (a scheme's own condition, behind a
/// [`Ticket`]).
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) trait DurabilityWait: Send + Sync {
    /// Block until durable, or fail with the error that prevents it.
    fn wait(&self) -> Result<(), WalError>;
    /// Non-blocking [`DurabilityWait::wait`]: `Ok(false)` if not durable yet.
    fn is_durable(&self) -> Result<bool, WalError>;
}

/// The promise a commit returns: resolves once the transaction (and everything it depends on) is
/// durable. Commits are acknowledged only through it.
#[must_use = "a commit is durable only once its ticket resolves: call `wait()` (cheap when it is already durable)"]
pub struct Ticket(Wait);

/// What a [`Ticket`] waits for.
enum Wait {
    /// Nothing (no logging, or nothing to make durable).
    Durable,
    /// `stream` durable up to `lsn` (the end of the commit record).
    Stream { stream: Stream, lsn: Lsn },
    /// A scheme's own condition.
    Waiter(Box<dyn DurabilityWait>),
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Wait::Durable => f.write_str("Ticket::DURABLE"),
            Wait::Stream { stream, lsn } => write!(f, "Ticket(stream {}, {lsn})", stream.id()),
            Wait::Waiter(_) => f.write_str("Ticket(waiter)"),
        }
    }
}

impl Ticket {
    /// A ticket with nothing to wait for: the commit logged nothing, or is durable already.
    pub const DURABLE: Ticket = Ticket(Wait::Durable);

    /// Durable once `stream` is durable up to `lsn`.
    pub(crate) fn stream(stream: Stream, lsn: Lsn) -> Ticket {
        Ticket(Wait::Stream { stream, lsn })
    }

    /// Durable when `w` says so.
    pub(crate) fn waiter(w: Box<dyn DurabilityWait>) -> Ticket {
        Ticket(Wait::Waiter(w))
    }

    /// Block until durable, or fail with the error that prevents it.
    pub fn wait(&self) -> Result<(), WalError> {
        match &self.0 {
            Wait::Durable => Ok(()),
            Wait::Stream { stream, lsn } => stream.wait_durable(*lsn),
            Wait::Waiter(w) => w.wait(),
        }
    }

    /// Non-blocking check.
    pub fn is_durable(&self) -> Result<bool, WalError> {
        match &self.0 {
            Wait::Durable => Ok(true),
            Wait::Stream { stream, lsn } => stream.check_durable(*lsn),
            Wait::Waiter(w) => w.is_durable(),
        }
    }
}
