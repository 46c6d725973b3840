//! braid-wal: the write-ahead log layer shared by every braid logging scheme.
//!
//! * [`record`]: one checksummed record framing for all schemes (header, ordering stamp, payload).
//! * [`payload`]: payload codecs (redo images, commands).
//! * [`scan`]: reading a stream back, finding its valid prefix and classifying its end.
//! * [`fs`]: the file-system seam, with a real and a fault-injecting implementation.
//! * [`device`]: the device trait; [`file_device`], [`pmem_device`], [`null_device`].
//! * [`lv`]: LSN vectors and their vectorised operations (Taurus Section 3.1, 4.2).
//! * [`stream`]: reserve / fill / flush with a durable watermark (Taurus Alg. 1-2).
//! * [`sync`]: the atomics seam (std, or loom's under `--cfg loom` for model checking).

pub mod device;
pub mod error;
pub mod file_device;
pub mod fs;
pub mod lv;
pub mod null_device;
pub mod payload;
pub mod pmem_device;
pub mod record;
pub mod scan;
pub mod scheme;
pub mod stream;
pub mod sync;

pub use error::WalError;

/// A byte position in one log stream. Position 0 is the first byte ever written to the stream.
pub type Lsn = u64;
