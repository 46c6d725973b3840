//! Table indexes beside `scc`'s hash index: the ordered index of ordered tables.

pub(crate) mod ordered;
