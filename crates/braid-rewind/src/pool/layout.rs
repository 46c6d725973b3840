//! The pool's region layout (REWIND §4 keeps its log, its allocator metadata and the user's
//! heap in one persistent region): a 256-byte header (magic, version, size, the configuration,
//! the checkpoint cut, the root pointer, the heap bounds and the persistent top-of-heap word), one 512-byte
//! descriptor per log, the logs' node arenas, then the heap. Offsets only; see `open.rs` for
//! what is written where.

use crate::log::LOG_DESC;

pub(super) const MAGIC: u64 = u64::from_le_bytes(*b"RWNDPOOL");
/// The pool format version. 2: the B+-tree's fingerprinted leaves (a pool of version 1 may
/// hold trees of the old slot-directory layout, which this library cannot read). 3: the
/// commit-clearing mode in the header ([`H_CLEAR`]).
pub(super) const VERSION: u64 = 3;
pub(super) const H_MAGIC: usize = 0;
pub(super) const H_VERSION: usize = 8;
pub(super) const H_SIZE: usize = 16;
pub(super) const H_LAYOUT: usize = 24;
pub(super) const H_POLICY: usize = 32;
pub(super) const H_LAYERS: usize = 40;
pub(super) const H_NLOGS: usize = 48;
pub(super) const H_BUCKET: usize = 56;
pub(super) const H_CAPACITY: usize = 64;
pub(super) const H_GROUP: usize = 72;
pub(super) const H_CKPT: usize = 80;
/// crc32c of the configuration words, `H_SIZE..H_CONFIG_CRC`, the heap bounds and [`H_CLEAR`], written
/// once at creation: a damaged configuration is refused rather than trusted (a wrong log
/// capacity would otherwise make recovery fail half-way).
pub(super) const H_CONFIG_CRC: usize = 88;
/// The commit sequence number of the last checkpoint: every transaction committed at or
/// below it has its writes durable in place (no-force), so recovery does not redo it.
pub(crate) const H_CUT: usize = 96;
/// How a one-layer force commit clears its records (1: scan, 2: kept positions); covered by
/// the configuration checksum.
pub(super) const H_CLEAR: usize = 104;
pub(crate) const H_ROOT: usize = 128;
pub(super) const H_HEAP_START: usize = 136;
pub(super) const H_HEAP_END: usize = 144;
pub(super) const H_HEAP_TOP: usize = 152;
pub(super) const HEADER: usize = 256;
/// Bytes of a log's descriptor area: the list descriptor, then (two layers) the tree root.
pub(super) const DESC: usize = 512;
pub(super) const DESC_AVL_ROOT: usize = LOG_DESC;
/// Bottom log of a two-layer log: records per bucket, buckets.
pub(super) const BOTTOM_BUCKET: usize = 128;
pub(super) const BOTTOM_BUCKETS: usize = 8;
/// Smallest heap accepted.
pub(super) const MIN_HEAP: usize = 64 * 1024;
