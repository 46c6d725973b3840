//! Table indexes beside `scc`'s hash index: the ordered index of ordered tables, and the
//! hasher of the hash maps keyed by integers.

pub(crate) mod key_hash;
pub(crate) mod ordered;
