//! Internals for the project's own crash tests, criterion benches and fuzz targets (the
//! `testing` cargo feature): the fault-injecting file system, the log stream driven without a
//! scheme, the LSN-vector kernels, the per-transaction log, gsn's recovery on its own, and the
//! file names and sizes the device decoders are fuzzed with. Nothing here is part of the API a
//! user holds; it changes with the internals.

pub use crate::device::file::segment::name::{meta_file_name, segment_file_name};
pub use crate::device::pmem::RING_HEADER;
pub use crate::fs::{CrashOpts, FaultFs, FaultStats, FsOp, SyncFault, Unsynced};
pub use crate::lv::Impl as LvImpl;
pub use crate::mix::mix64;
pub use crate::scan::mem::MemSource;
pub use crate::scheme::gsn::Gsn;
/// The gsn logs' commit payloads (sparse dependency vectors), void markers and command
/// records' replay floors, for the
/// `gsn_payload` fuzz target.
pub mod gsn_deps {
    pub use crate::scheme::gsn::deps::{
        BadPayload, Marker, decode_commit, decode_floor, decode_marker, encode_commit,
        encode_floor, encode_marker,
    };
}
/// The silor logs' bookkeeping records (durable epoch, with or without the streams' tails;
/// void marker), for the `silor_mark` fuzz target.
pub mod silor_marks {
    pub use crate::scheme::silor::{
        Mark, decode_mark, pepoch_payload, pepoch_tails, pepoch_tails_payload, void_payload,
    };
}
pub use crate::scheme::gsn::open::{open_gsn, recover_only};
pub use crate::scheme::pertxn::{LogWriter, PerTxnLog, PerTxnStorage, PerTxnTicket};
pub use crate::stream::{Stream, StreamConfig, StreamWriter};
