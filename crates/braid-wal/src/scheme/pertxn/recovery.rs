//! Recovery of the NV-Logging log (Huang et al. 2014, Section 4.6): the backup files, then the
//! log index, in LSN order, replaying every committed transaction through [`Replay`].
//!
//! 1. The backup stream (objects truncation moved out of persistent memory) is scanned like
//!    any braid stream (checksums, salts, torn tails); each record carries its object's LSN as
//!    a GSN stamp, and the LSNs must run 0, 1, 2, ... without a gap (there are no checkpoints
//!    yet, so history starts at LSN 0).
//! 2. The persistent head must not lie beyond the backup's end (truncation backs up before it
//!    moves the head). The index is then walked from `max(head, backup end)` through the
//!    entries of consecutive LSNs whose state word is set, reading each object through the
//!    entry's offset and checking it decodes at its LSN.
//! 3. The walk stops at the first LSN whose entry is not set: objects after a hole were never
//!    acknowledged (a commit is acknowledged only when every smaller LSN is persistent) and may
//!    depend on the lost one, so they are dropped and their entries cleared durably before new
//!    objects can reuse those LSNs (otherwise a later crash could resurrect them).
//!
//! Objects are assembled per transaction (a payload larger than a slot spans consecutive
//! objects; with per-update records each write is an object of its own, and a commit object
//! ends the transaction); a transaction is applied at its commit object, in LSN order, so data and command
//! logging both replay in the order the transactions committed. Abort objects drop the
//! transaction's earlier objects; objects of a transaction without a commit or abort object are
//! skipped.
//!
//! Damage (invariant 6): an entry pointing anywhere but at its slot, an object below the
//! persistent tail hint that does not decode at its LSN although its state word is set, and a
//! hole below the tail hint all mean that something which was persistent is gone: they are
//! errors naming the region file and offset, unless the scan mode is `Salvage`, which keeps the
//! valid prefix before them. A set state word over a bad object at or beyond the tail is
//! treated as the torn end of the log instead: the persist order makes it impossible on real
//! hardware, but a simulated power failure that keeps random unpersisted words (CrashSim's
//! `KeepRandom`, which may keep stores made after the cut) produces it, and no acknowledged
//! commit can depend on such an object (the frontier never passed it). Recovery writes nothing but the clearing of dropped entries, the tail
//! hint and (salvage only) the head, so a crash during recovery and a second recovery give the
//! same state.

use std::collections::HashMap;
use std::sync::Arc;

use super::PerTxnStorage;
use super::layout::{self, Layout, state_lsn};
use crate::device::file::{FileDevice, FileDeviceConfig};
use crate::record::{self, Decoded, FLAG_COMMIT, HEADER_LEN, Kind};
use crate::scan::{EndKind, ScanEnd, ScanMode, Scanner};
use crate::scheme::cut::Cut;
use crate::scheme::{LogKind, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Corruption, Lsn, RecordFault, WalError};

/// What recovery leaves for the running log.
pub(crate) struct Recovered {
    pub(crate) layout: Layout,
    /// First LSN of new objects (= the frontier).
    pub(crate) next: Lsn,
    pub(crate) head: Lsn,
    /// Every object below it is in the backup files.
    pub(crate) backed: Lsn,
    pub(crate) backup: Arc<FileDevice>,
    /// Byte position where the backup stream continues.
    pub(crate) backup_end: Lsn,
}

/// Transactions being assembled from their objects.
struct Assembler<'a> {
    replay: &'a dyn Replay,
    open: HashMap<u64, (LogKind, Vec<u8>)>,
    cut: Option<&'a crate::scheme::cut::Cut>,
}

impl Assembler<'_> {
    fn feed(
        &mut self,
        lsn: Lsn,
        rec: &record::Record<'_>,
        report: &mut RecoveryReport,
    ) -> Result<(), WalError> {
        let h = rec.header;
        report.records += 1;
        report.max_txn = report.max_txn.max(h.txn);
        let kind = match h.kind {
            Kind::Redo => LogKind::Data,
            Kind::Command => LogKind::Command,
            Kind::Abort => {
                self.open.remove(&h.txn);
                return Ok(());
            }
            // Per-update records: the transaction's objects are its writes; this one only
            // commits them.
            Kind::Commit if h.flags & FLAG_COMMIT != 0 => LogKind::Data,
            _ => return Ok(()),
        };
        if h.flags & FLAG_COMMIT != 0 && crate::scheme::cut::Cut::covered(self.cut, 0, lsn, h.flags)
        {
            // In the checkpoint recovery started from.
            self.open.remove(&h.txn);
            report.covered += 1;
            return Ok(());
        }
        if h.flags & FLAG_COMMIT != 0 {
            let applied = match self.open.remove(&h.txn) {
                Some((k, mut buf)) => {
                    buf.extend_from_slice(rec.payload);
                    self.replay.apply(h.txn, k, &buf)
                }
                None => self.replay.apply(h.txn, kind, rec.payload),
            };
            applied.map_err(|e| replay_failed(0, lsn, h.txn, e))?;
            report.txns += 1;
        } else {
            self.open
                .entry(h.txn)
                .or_insert_with(|| (kind, Vec::new()))
                .1
                .extend_from_slice(rec.payload);
        }
        Ok(())
    }
}

pub(crate) fn recover(
    cfg: &SchemeConfig,
    storage: &PerTxnStorage,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    report: &mut RecoveryReport,
) -> Result<Recovered, WalError> {
    let region = &storage.region;
    let opts = &storage.options;
    let salvage = cfg.scan_mode == ScanMode::Salvage;
    let mut bcfg = FileDeviceConfig::new(storage.backup_dir.clone(), 0);
    bcfg.segment_size = opts.backup_segment_size;
    bcfg.buffer_size = opts.backup_buffer_size;
    let backup = Arc::new(FileDevice::open(storage.fs.clone(), bcfg)?);
    let mut asm = Assembler {
        replay,
        open: HashMap::new(),
        cut: cfg.cut.as_ref(),
    };

    // 1. The backup files.
    let mut backed: Lsn = 0;
    let backup_end = {
        let mut sc = Scanner::new(&*backup, cfg.scan_mode);
        let mut last = 0u64;
        let mut first = true;
        while let Some(rec) = sc.next_record()? {
            let pos = rec.header.lsn;
            let Some(lsn) = rec.stamp.gsn() else {
                let (file, offset) = crate::scan::StreamSource::locate(&*backup, pos);
                return Err(WalError::Corrupt {
                    file,
                    offset,
                    damage: Corruption::BackupWithoutLsn,
                });
            };
            if first && crate::scan::StreamSource::start(&*backup) > 0 {
                // Checkpoint truncation removed the backup's beginning: it starts at an object
                // the checkpoint already holds everything before.
                backed = lsn;
            }
            first = false;
            if lsn > backed && lsn <= Cut::start_of(cfg.cut.as_ref(), 0) {
                // Objects the checkpoint holds were dropped without a backup.
                backed = lsn;
            }
            if lsn != backed {
                let (file, offset) = crate::scan::StreamSource::locate(&*backup, pos);
                return Err(WalError::Corrupt {
                    file,
                    offset,
                    damage: Corruption::BackupLsn {
                        found: lsn,
                        expected: backed,
                    },
                });
            }
            asm.feed(lsn, &rec, report)?;
            backed += 1;
            let read = sc.bytes_read();
            if read - last >= 1 << 20 {
                progress(read - last);
                last = read;
            }
        }
        let read = sc.bytes_read();
        progress(read - last);
        report.bytes += read;
        let end = sc
            .end()
            .cloned()
            .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
        let e = end.end;
        report.ends.push(end);
        e
    };

    // 2. The region: format it if it never was.
    let layout = match layout::read(region)? {
        Some(l) => l,
        None => {
            if backed > 0 {
                return Err(WalError::Corrupt {
                    file: layout::region_name(region),
                    offset: 0,
                    damage: Corruption::UnformattedWithBackup {
                        backup: storage.backup_dir.clone(),
                        objects: backed,
                    },
                });
            }
            layout::format(region, opts.slot_size, rand::random::<u32>())?
        }
    };
    let name = layout::region_name(region);
    let mut head = region.load_u64(layout::HEAD_OFF);
    let tail = region.load_u64(layout::TAIL_OFF);
    if backed < head && head <= Cut::start_of(cfg.cut.as_ref(), 0) {
        // Truncated from the index without a backup because the checkpoint holds them.
        backed = head;
    }
    if backed < head {
        if !salvage {
            return Err(WalError::Corrupt {
                file: name,
                offset: layout::HEAD_OFF as u64,
                damage: Corruption::BackupBehindHead {
                    head,
                    backup: storage.backup_dir.clone(),
                    backed,
                },
            });
        }
        head = backed;
        region.store_u64(layout::HEAD_OFF, head);
        region.persist(layout::HEAD_OFF, 8);
    }
    let start = head.max(backed);

    // 3. The index, in LSN order, up to the first hole.
    let mut buf = vec![0u8; layout.slot_size];
    let mut lsn = start;
    // (offset, reason, proven): proven damage is corruption; unproven is a torn end.
    let mut damage: Option<(u64, Corruption, bool)> = None;
    let mut bytes = 0u64;
    while lsn.saturating_sub(head) < layout.entries {
        let soff = layout.state_off(lsn);
        if state_lsn(region.load_u64(soff)) != Some(lsn) {
            break;
        }
        let eoff = layout.entry_off(lsn);
        let obj = region.load_u64(eoff);
        if obj != layout.slot_off(lsn) as u64 {
            damage = Some((
                eoff as u64,
                Corruption::IndexEntry { lsn, points: obj },
                true,
            ));
            break;
        }
        let off = obj as usize;
        region.read(off, &mut buf[..HEADER_LEN]);
        let len = record::peek_header(&buf).map_or(0, |(l, _, _)| l as usize);
        if !(HEADER_LEN..=layout.slot_size).contains(&len) {
            damage = Some((
                off as u64,
                Corruption::ObjectLength { lsn, len },
                lsn < tail,
            ));
            break;
        }
        region.read(off, &mut buf[..len]);
        match record::decode(&buf[..len], lsn, layout.salt) {
            Decoded::Record(rec) => asm.feed(lsn, &rec, report)?,
            Decoded::Invalid(why) => {
                damage = Some((
                    off as u64,
                    Corruption::Object { lsn, fault: why },
                    lsn < tail,
                ));
                break;
            }
            Decoded::Empty | Decoded::Truncated { .. } => {
                damage = Some((
                    off as u64,
                    Corruption::Object {
                        lsn,
                        fault: RecordFault::Incomplete,
                    },
                    lsn < tail,
                ));
                break;
            }
        }
        bytes += len as u64;
        lsn += 1;
    }
    let end = lsn;
    if damage.is_none() && end < tail {
        damage = Some((
            layout.state_off(end) as u64,
            Corruption::ObjectMissing { lsn: end, tail },
            true,
        ));
    }
    if let Some((offset, damage, true)) = &damage
        && !salvage
    {
        return Err(WalError::Corrupt {
            file: name,
            offset: *offset,
            damage: damage.clone(),
        });
    }
    progress(bytes);
    report.bytes += bytes;
    report.skipped += asm.open.len() as u64;

    // 4. Clear what lies beyond the end (and stale entries below the head), then the tail.
    let mut stale = false;
    for i in 0..layout.entries as usize {
        let soff = layout::INDEX_OFF + i * layout::ENTRY_LEN + 8;
        let Some(l) = state_lsn(region.load_u64(soff)) else {
            continue;
        };
        if l >= end || l < head || layout.index_of(l) != i {
            if l >= end {
                stale = true;
            }
            region.store_u64(soff, 0);
            region.flush(soff, 8);
        }
    }
    region.fence();
    if region.load_u64(layout::TAIL_OFF) != end {
        region.store_u64(layout::TAIL_OFF, end);
        region.persist(layout::TAIL_OFF, 8);
    }
    report.ends.push(ScanEnd {
        end,
        kind: match (&damage, stale) {
            (Some((_, _, true)), _) => EndKind::Salvaged,
            (Some(_), _) | (None, true) => EndKind::TornTail,
            (None, false) => EndKind::Clean,
        },
        trimmed_at: damage.map(|(o, _, _)| (name, o)),
        trimmed: 0,
    });
    Ok(Recovered {
        layout,
        next: end,
        head,
        backed,
        backup,
        backup_end,
    })
}
