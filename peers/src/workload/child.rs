//! Child processes: the reopen, memory and kill workloads run a system in a fresh process
//! (this binary again, with a hidden subcommand), which reports on its stdout one line marked
//! [`MARK`] with a JSON object; its other stdout lines go to a sink the parent chooses (the
//! kill workload's acknowledgements). The child dies with the parent (`PR_SET_PDEATHSIG`), and a
//! child that waits to be killed also exits once its stdin, a pipe the parent holds, closes.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The start of the child's report line.
pub const MARK: &str = "peers-child-report ";

/// A child process of this harness, killed and reaped when dropped.
pub struct Running {
    child: Child,
    /// Held open until the child is killed: the child that waits to be killed exits when it
    /// closes.
    stdin: Option<ChildStdin>,
    /// Report lines from stdout; `None` once it closed.
    lines: Receiver<Option<String>>,
    stderr: Option<JoinHandle<String>>,
    reaped: bool,
}

/// Where a child's stdout lines other than its report go.
pub type Sink = Box<dyn FnMut(&str) + Send>;

impl Running {
    /// Start `exe` with `args`.
    pub fn spawn(exe: &Path, args: &[String]) -> Result<Running> {
        Running::spawn_with(exe, args, Box::new(|_| {}))
    }

    /// Start `exe` with `args`; every complete line of its stdout that is not a report goes
    /// to `sink`, in order.
    pub fn spawn_with(exe: &Path, args: &[String], mut sink: Sink) -> Result<Running> {
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {}", exe.display()))?;
        let stdin = child.stdin.take();
        let (out, err) = match (child.stdout.take(), child.stderr.take()) {
            (Some(o), Some(e)) => (o, e),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the child's stdout or stderr is not a pipe");
            }
        };
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            let mut out = BufReader::new(out);
            let mut line = Vec::new();
            loop {
                line.clear();
                // A line cut short by the child's death (no newline) is not a line.
                match out.read_until(b'\n', &mut line) {
                    Ok(n) if n > 0 && line.ends_with(b"\n") => {}
                    _ => break,
                }
                let l = String::from_utf8_lossy(&line[..line.len() - 1]);
                match l.strip_prefix(MARK) {
                    Some(r) => {
                        let _ = tx.send(Some(r.to_string()));
                    }
                    None => sink(&l),
                }
            }
            let _ = tx.send(None);
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = BufReader::new(err).read_to_string(&mut s);
            s
        });
        Ok(Running {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
            reaped: false,
        })
    }

    /// Wait for the child's report, calling `tick` about every 100 ms. If the child ends
    /// without one: its exit status and stderr as the error.
    pub fn report<T: DeserializeOwned>(&mut self, tick: &dyn Fn()) -> Result<T> {
        loop {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(Some(line)) => {
                    return serde_json::from_str(&line)
                        .with_context(|| format!("the child's report {line:?}"));
                }
                Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                    let status = self.wait()?;
                    bail!(
                        "the child ended ({status}) without a report: {}",
                        self.stderr().trim()
                    );
                }
                Err(RecvTimeoutError::Timeout) => tick(),
            }
        }
    }

    /// `kill -9` the child and reap it; its exit status (killed by SIGKILL, unless it had
    /// already ended).
    pub fn kill(&mut self) -> Result<ExitStatus> {
        // std's `Child::kill` sends SIGKILL on Unix.
        self.child.kill().context("kill -9 the child")?;
        let status = self.wait()?;
        self.stdin.take();
        Ok(status)
    }

    /// After the child ended: wait until its stdout is read to the end (every line it wrote
    /// has reached the sink), at most `limit`.
    pub fn drain(&mut self, limit: Duration) -> Result<()> {
        let end = std::time::Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Some(_)) => {}
                Ok(None) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
                Err(RecvTimeoutError::Timeout) => {
                    bail!("the child's stdout stayed open {limit:?} after it ended")
                }
            }
        }
    }

    /// What the child wrote to stderr, once it has ended (empty if already taken).
    pub fn errors(&mut self) -> String {
        self.stderr()
    }

    /// Close the child's stdin and wait for it to end; fails unless it exits with 0.
    pub fn finish(&mut self) -> Result<()> {
        self.stdin.take();
        let status = self.wait()?;
        if !status.success() {
            bail!("the child ended with {status}: {}", self.stderr().trim());
        }
        Ok(())
    }

    fn wait(&mut self) -> Result<ExitStatus> {
        let status = self.child.wait().context("wait for the child")?;
        self.reaped = true;
        Ok(status)
    }

    /// What the child wrote to stderr (once it has ended).
    fn stderr(&mut self) -> String {
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// In the child: die when the parent does.
pub fn die_with_parent() -> Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes the signal number by value and touches no memory.
    let r = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    if r != 0 {
        return Err(anyhow!(
            "prctl(PR_SET_PDEATHSIG): {}",
            std::io::Error::last_os_error()
        ));
    }
    // The parent may have gone before the call.
    if std::os::unix::process::parent_id() == 1 {
        bail!("the parent is gone");
    }
    Ok(())
}

/// In the child: send the report line.
pub fn send<T: Serialize>(report: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARK}{}", serde_json::to_string(report)?)?;
    out.flush()?;
    Ok(())
}

/// In the child: wait to be killed; if stdin closes first (the parent is gone), exit at once
/// without closing anything.
pub fn wait_to_be_killed() -> ! {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    std::process::exit(3);
}

/// This process's resident set size in bytes (`VmRSS` of `/proc/self/status`).
pub fn rss_bytes() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("read /proc/self/status")?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .context("no VmRSS in /proc/self/status")?;
    Ok(kb * 1024)
}
