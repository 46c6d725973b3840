//! [`StripedDevice`]: one stream striped across several devices (RAID-0), the log device of
//! the Taurus paper's "serial logging on RAID-0" comparator (Sec. 5.2, Figs. 5 and 9-10:
//! serial logging given the bandwidth of all the disks the parallel schemes use).
//!
//! The stream's byte space is cut into units of `unit` bytes dealt round robin to the
//! members: global position `g` lies in unit `s = g / unit`, on member `s mod n`, at member
//! position `(s / n) * unit + g mod unit`. A contiguous global range is a contiguous range on
//! every member, so each member sees an ordinary stream of increasing, contiguous fills and
//! flushes; records keep their global positions (salts and positions are the global
//! stream's), and a scan reads them through [`StreamSource`] as from one device.
//!
//! * A flush makes its range durable on every member it touches, in parallel: members are
//!   flushed one after another when the device speed is emulated (each member's queue is
//!   charged and the flush waits for the slowest, which is what parallel disks cost) and on
//!   scoped threads otherwise (real disks sync in parallel).
//! * A crash can leave one member's part of a flush durable and another's not: the global
//!   stream then has a hole followed by valid records, which the scanner already tells apart
//!   (a torn tail unless a later record proves the hole was durable; `crate::scan`).
//! * Truncation: the stream's start (a record boundary) is kept in a small file of its own
//!   (`stream-NNN.stripe`, written atomically before any member drops a segment), because
//!   the members' own starts cannot name a global position. The same file records the
//!   member count and unit; reopening with others is refused with a message.
//! * Members must be buffered devices (not durable on fill): striping is for disks.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::device::pace::{Pace, PaceClock, paced_note, wait_io};
use crate::device::{Device, DeviceInfo};
use crate::fs::{Fs, OpenOpts};
use crate::scan::StreamSource;
use crate::{BadSize, Lsn, SegmentDamage, Unsupported, WalError, WrongLog};

/// A stream on `members.len()` devices, `unit` bytes at a time (see the module doc).
pub struct StripedDevice {
    members: Vec<Arc<dyn Device>>,
    clocks: Option<Vec<PaceClock>>,
    unit: u64,
    cap: u64,
    start: AtomicU64,
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    meta: PathBuf,
}

impl std::fmt::Debug for StripedDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripedDevice")
            .field("members", &self.members.len())
            .field("unit", &self.unit)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

fn io_err(op: &'static str, path: &Path, e: std::io::Error) -> WalError {
    WalError::io(op, path, e)
}

const META_MAGIC: &[u8; 8] = b"BRDSTRP1";
const META_LEN: usize = 8 + 8 + 8 + 8 + 4;

fn encode_meta(n: u64, unit: u64, start: u64) -> [u8; META_LEN] {
    let mut b = [0u8; META_LEN];
    b[..8].copy_from_slice(META_MAGIC);
    b[8..16].copy_from_slice(&n.to_le_bytes());
    b[16..24].copy_from_slice(&unit.to_le_bytes());
    b[24..32].copy_from_slice(&start.to_le_bytes());
    let crc = crc32c::crc32c(&b[..32]);
    b[32..].copy_from_slice(&crc.to_le_bytes());
    b
}

fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl StripedDevice {
    /// Stripe stream `stream` over `members` (all empty, or all written by a striped device
    /// of the same shape) in units of `unit` bytes; `dir` holds the stream's stripe file.
    /// With `pace`, each member is slowed to it (see `crate::device::pace`).
    pub fn open(
        fs: Arc<dyn Fs>,
        dir: &Path,
        stream: u32,
        members: Vec<Arc<dyn Device>>,
        unit: u64,
        pace: Option<Pace>,
    ) -> Result<StripedDevice, WalError> {
        let n = members.len() as u64;
        let min_cap = members.iter().map(|m| m.capacity()).min().unwrap_or(0);
        if n < 2 || unit == 0 || !unit.is_multiple_of(4096) || min_cap <= unit {
            return Err(WalError::BadSize(BadSize::Stripe {
                members: members.len(),
                unit,
                buffer: min_cap,
            }));
        }
        if members.iter().any(|m| m.durable_on_fill()) {
            return Err(WalError::Unsupported(Unsupported::StripedPmem));
        }
        fs.create_dir_all(dir)
            .map_err(|e| io_err("create", dir, e))?;
        let meta = dir.join(format!("stream-{stream:03}.stripe"));
        let start = match Self::read_meta(fs.as_ref(), &meta)? {
            Some((fn_, funit, start)) => {
                if fn_ != n || funit != unit {
                    return Err(WalError::WrongLog(WrongLog::Striping {
                        stripe_file: meta,
                        members: fn_,
                        unit_kib: funit >> 10,
                    }));
                }
                start
            }
            None => 0,
        };
        let dev = StripedDevice {
            clocks: pace.map(|p| members.iter().map(|_| PaceClock::new(p)).collect()),
            cap: n * (min_cap - unit),
            members,
            unit,
            start: AtomicU64::new(start),
            fs,
            dir: dir.to_path_buf(),
            meta,
        };
        dev.write_meta(start)?;
        Ok(dev)
    }

    fn read_meta(fs: &dyn Fs, path: &Path) -> Result<Option<(u64, u64, u64)>, WalError> {
        if !fs.exists(path) {
            return Ok(None);
        }
        let f = fs
            .open(path, OpenOpts::existing())
            .map_err(|e| io_err("open", path, e))?;
        let mut b = [0u8; META_LEN];
        let got = f
            .read_full_at(0, &mut b)
            .map_err(|e| io_err("read", path, e))?;
        let crc = u32::from_le_bytes([b[32], b[33], b[34], b[35]]);
        if got != META_LEN || &b[..8] != META_MAGIC || crc32c::crc32c(&b[..32]) != crc {
            return Err(WalError::BadSegment {
                file: path.display().to_string(),
                damage: SegmentDamage::StripeFile,
            });
        }
        Ok(Some((word(&b, 8), word(&b, 16), word(&b, 24))))
    }

    fn write_meta(&self, start: Lsn) -> Result<(), WalError> {
        let tmp = self.meta.with_extension("stripe.tmp");
        let f = self
            .fs
            .open(&tmp, OpenOpts::create_truncate())
            .map_err(|e| io_err("create", &tmp, e))?;
        let bytes = encode_meta(self.members.len() as u64, self.unit, start);
        f.write_all_at(0, &bytes)
            .map_err(|e| io_err("write", &tmp, e))?;
        f.sync_data().map_err(|e| io_err("fdatasync", &tmp, e))?;
        drop(f);
        self.fs
            .rename(&tmp, &self.meta)
            .map_err(|e| io_err("rename", &tmp, e))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(|e| io_err("fsync directory", &self.dir, e))
    }

    fn n(&self) -> u64 {
        self.members.len() as u64
    }

    /// Member and member position of global position `g`.
    fn local(&self, g: Lsn) -> (usize, Lsn) {
        let s = g / self.unit;
        (
            (s % self.n()) as usize,
            (s / self.n()) * self.unit + g % self.unit,
        )
    }

    /// Global position of member `d`'s position `l`.
    fn global(&self, d: usize, l: Lsn) -> Lsn {
        ((l / self.unit) * self.n() + d as u64) * self.unit + l % self.unit
    }

    /// Member `d`'s first position whose global position is at or after `g`.
    fn lower(&self, d: usize, g: Lsn) -> Lsn {
        let s = g / self.unit;
        let (row, at) = (s / self.n(), (s % self.n()) as usize);
        match d.cmp(&at) {
            std::cmp::Ordering::Equal => row * self.unit + g % self.unit,
            std::cmp::Ordering::Greater => row * self.unit,
            std::cmp::Ordering::Less => (row + 1) * self.unit,
        }
    }

    /// Global position just past member `d`'s bytes before its position `l`.
    fn global_end(&self, d: usize, l: Lsn) -> Lsn {
        if l == 0 { 0 } else { self.global(d, l - 1) + 1 }
    }

    /// The pieces of global range `[lsn, lsn + len)`: (member, member position, offset in
    /// the range, length).
    fn pieces(&self, lsn: Lsn, len: usize) -> impl Iterator<Item = (usize, Lsn, usize, usize)> {
        let unit = self.unit;
        let mut done = 0usize;
        std::iter::from_fn(move || {
            if done >= len {
                return None;
            }
            let g = lsn + done as u64;
            let (d, l) = self.local(g);
            let n = ((unit - g % unit) as usize).min(len - done);
            let piece = (d, l, done, n);
            done += n;
            Some(piece)
        })
    }

    /// Each member's part of global range `[from, to)`, non-empty ones only.
    fn parts(&self, from: Lsn, to: Lsn) -> Vec<(usize, Lsn, Lsn)> {
        (0..self.members.len())
            .map(|d| (d, self.lower(d, from), self.lower(d, to)))
            .filter(|&(_, a, b)| b > a)
            .collect()
    }
}

impl Device for StripedDevice {
    fn info(&self) -> DeviceInfo {
        let first = self.members[0].info();
        let mut emulation = first.emulation;
        if let Some(c) = &self.clocks {
            emulation = paced_note(emulation, c[0].pace());
        }
        DeviceInfo {
            kind: first.kind,
            location: format!(
                "{} (RAID-0 over {} devices, {} KiB units)",
                self.dir.display(),
                self.members.len(),
                self.unit >> 10
            ),
            emulation,
        }
    }

    fn capacity(&self) -> u64 {
        self.cap
    }

    fn reusable(&self) -> Lsn {
        (0..self.members.len())
            .map(|d| self.global(d, self.members[d].reusable()))
            .min()
            .unwrap_or(0)
    }

    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        for (d, l, off, n) in self.pieces(lsn, bytes.len()) {
            self.members[d].fill(l, &bytes[off..off + n]);
        }
    }

    fn durable_on_fill(&self) -> bool {
        false
    }

    fn flush(&self, from: Lsn, to: Lsn) -> Result<(), WalError> {
        let parts = self.parts(from, to);
        if let Some(clocks) = &self.clocks {
            let issued = Instant::now();
            let mut done = issued;
            for &(d, a, b) in &parts {
                self.members[d].flush(a, b)?;
                done = done.max(clocks[d].charge(issued, b - a));
            }
            wait_io(done);
            return Ok(());
        }
        if parts.len() == 1 {
            let (d, a, b) = parts[0];
            return self.members[d].flush(a, b);
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = parts
                .iter()
                .map(|&(d, a, b)| s.spawn(move || self.members[d].flush(a, b)))
                .collect();
            let mut first = Ok(());
            for h in handles {
                let r = h.join().unwrap_or_else(|_| {
                    Err(WalError::ThreadPanicked {
                        thread: "a striped device's member flush",
                    })
                });
                if first.is_ok() {
                    first = r;
                }
            }
            first
        })
    }

    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError> {
        for (d, m) in self.members.iter().enumerate() {
            m.ensure_space(self.lower(d, upto))?;
        }
        Ok(())
    }

    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        for (d, m) in self.members.iter().enumerate() {
            let want = self.lower(d, end);
            // A member that ends before its share of `end` (its last write was lost while a
            // later member's was kept) read as zeros there, and recovery accepted the records
            // through it: write those zeros, so the member holds what recovery read.
            let have = m.limit().max(m.start());
            if want > have {
                m.fill(have, &vec![0u8; (want - have) as usize]);
                m.flush(have, want)?;
            }
            m.reset_tail(want)?;
        }
        Ok(())
    }

    fn release(&self, upto: Lsn) -> Result<(), WalError> {
        if upto <= self.start.load(Ordering::Acquire) {
            return Ok(());
        }
        // The global start first: after a crash between the two, the members merely keep
        // more than the start needs.
        self.write_meta(upto)?;
        self.start.store(upto, Ordering::Release);
        for (d, m) in self.members.iter().enumerate() {
            m.release(self.lower(d, upto))?;
        }
        Ok(())
    }

    fn note_durable(&self, durable: Lsn) {
        for (d, m) in self.members.iter().enumerate() {
            m.note_durable(self.lower(d, durable));
        }
    }

    fn mark_clean_end(&self, end: Lsn) -> Result<(), WalError> {
        for (d, m) in self.members.iter().enumerate() {
            m.mark_clean_end(self.lower(d, end))?;
        }
        Ok(())
    }
}

impl StreamSource for StripedDevice {
    fn start(&self) -> Lsn {
        self.start.load(Ordering::Acquire)
    }

    fn limit(&self) -> Lsn {
        (0..self.members.len())
            .map(|d| self.global_end(d, self.members[d].limit()))
            .max()
            .unwrap_or(0)
    }

    fn sealed(&self) -> Lsn {
        (0..self.members.len())
            .map(|d| self.global(d, self.members[d].sealed()))
            .min()
            .unwrap_or(0)
            .max(self.start())
    }

    /// With paced members, each member's part of the read takes its bandwidth, the members
    /// reading in parallel (as RAID-0 reads).
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let limit = self.limit();
        let issued = Instant::now();
        let mut done = issued;
        let mut got = 0;
        for (d, l, off, n) in self.pieces(lsn, buf.len()) {
            let r = self.members[d].read_at(l, &mut buf[off..off + n])?;
            if let Some(clocks) = &self.clocks {
                done = done.max(clocks[d].charge_read(issued, r as u64));
            }
            got = off + r;
            if r < n {
                // This member ends here. Below the stream's limit another member has later
                // bytes: the gap reads as zeros (a hole the scanner judges); at the limit the
                // read ends.
                if lsn + ((off + n) as u64) >= limit {
                    wait_io(done);
                    return Ok(got);
                }
                buf[off + r..off + n].fill(0);
                got = off + n;
            }
        }
        wait_io(done);
        Ok(got)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        let (d, l) = self.local(lsn);
        self.members[d].salt_for(l)
    }

    /// The furthest of the members' own data ends, in global positions: member `d` wrote
    /// nothing at or after its `data_end`, so nothing was written in the stream at or after
    /// the largest global position just past those. Without it a scan looking past the end
    /// reads every member's reserved space up to its limit, and on paced members pays their
    /// bandwidth for it: a 3 MB log on two members paced to 10 MB/s was read in 7.6 s, its
    /// preallocated segments included, against 0.45 s on one such device.
    fn data_end(&self, from: Lsn) -> Result<Lsn, WalError> {
        let limit = self.limit();
        let mut end = from.min(limit);
        for (d, m) in self.members.iter().enumerate() {
            let e = m.data_end(self.lower(d, from))?;
            end = end.max(self.global_end(d, e));
        }
        Ok(end.min(limit))
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        let (d, l) = self.local(lsn);
        self.members[d].locate(l)
    }
}
