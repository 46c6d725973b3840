//! What the kill-mode child tells its parent on stdout: one JSON object per line, written and
//! flushed whole before the transaction it reports is left behind, so a SIGKILL can cut at most
//! the last line (which the parent then ignores).

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use crate::oracle::Intent;

/// One line of the child's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Message {
    /// The database is open (recovered or created) and the workers start.
    Ready,
    /// A transaction is about to commit: what it writes and which writers it read.
    Intent(Intent),
    /// A commit was acknowledged as durable.
    Ack { txn: u64 },
}

impl Message {
    /// Write the message as one line and flush it.
    pub fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        out.write_all(&line)?;
        out.flush()
    }

    /// The message of one line, or `None` for a line that is not one (a line cut by the kill).
    pub fn parse(line: &str) -> Option<Message> {
        serde_json::from_str(line).ok()
    }
}

/// Read messages until the end of `input`, handing each to `on`.
pub fn read(input: impl BufRead, mut on: impl FnMut(Message)) {
    for line in input.lines() {
        let Ok(line) = line else { break };
        if let Some(m) = Message::parse(&line) {
            on(m);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_one_per_line() {
        let msgs = vec![
            Message::Ready,
            Message::Intent(Intent {
                txn: 7,
                writes: vec![1, 2],
                reads: vec![(3, 0), (4, 9)],
            }),
            Message::Intent(Intent {
                txn: 1,
                writes: vec![],
                reads: vec![],
            }),
            Message::Ack { txn: 7 },
        ];
        let mut out = Vec::new();
        for m in &msgs {
            m.write_to(&mut out).unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), msgs.len());
        assert!(text.starts_with("{\"event\":\"ready\"}\n"), "{text}");
        // A last line cut short by the kill is skipped.
        let cut = format!("{text}{{\"event\":\"ack\",\"tx");
        let mut got = Vec::new();
        read(cut.as_bytes(), |m| got.push(m));
        assert_eq!(got, msgs);
    }
}
