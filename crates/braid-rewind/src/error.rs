//! The errors of the library: [`RewindError`] and the typed kinds its variants carry (why a
//! region holds no pool, what damage recovery found, which configuration field is out of
//! range, what a data structure refused). Offsets are byte offsets in the pool's region, as
//! [`PPtr`](crate::PPtr) and the persistent heap count them.

use crate::adll::AdllError;

/// Errors of the REWIND library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RewindError {
    /// The persistent region failed (creating, opening or mapping it).
    #[error(transparent)]
    Pmem(#[from] braid_pmem::PmemError),
    /// The heap has no free block large enough.
    #[error("the pool has no free block for {size} bytes; create a larger pool or free objects")]
    OutOfMemory {
        /// Bytes asked for.
        size: usize,
    },
    /// An allocation larger than the largest block class.
    #[error("cannot allocate {size} bytes: the largest block holds {max} bytes")]
    TooLarge {
        /// Bytes asked for.
        size: usize,
        /// Bytes of the largest block.
        max: usize,
    },
    /// A log has no room for another record.
    #[error(
        "a log is full ({capacity} records); use shorter transactions, checkpoint more often \
         (no-force), or create the pool with a larger PoolConfig::log_capacity"
    )]
    LogFull {
        /// Records the log holds.
        capacity: usize,
    },
    /// The region holds no pool this library can read.
    #[error("not a REWIND pool: {reason}")]
    NotAPool {
        /// Why not.
        reason: NotAPoolReason,
    },
    /// The pool's metadata, logs, heap or a data structure in it are damaged.
    #[error("damaged pool: {damage}")]
    Corrupt {
        /// What is damaged, and where.
        damage: Damage,
    },
    /// An object was freed twice.
    #[error("double free of the object at offset {0:#x}")]
    DoubleFree(u64),
    /// A pointer that is not the start of an allocated object.
    #[error("offset {0:#x} is not the start of an allocated object")]
    BadPointer(u64),
    /// A [`PoolConfig`](crate::PoolConfig) out of range.
    #[error("invalid pool configuration: {0}")]
    Config(ConfigError),
    /// The region is too small for the configuration.
    #[error("the pool region of {have} bytes is too small; it needs at least {need} bytes")]
    TooSmall {
        /// Bytes of the region.
        have: usize,
        /// Bytes the configuration needs.
        need: usize,
    },
    /// An operation the library or a data structure refuses: a bad argument, or a misuse such
    /// as an unlogged store outside a fresh object.
    #[error("the B+-tree or data structure rejected the operation: {refusal}")]
    Invalid {
        /// What was refused.
        refusal: Refusal,
    },
    /// The transaction's own logic asked to roll back, for a reason of the application's
    /// ([`Pool::transaction`](crate::Pool::transaction) rolls back on any `Err`; this variant
    /// is for code whose error type is `RewindError`). A reason in words is the whole of it:
    /// an abort is an outcome the application chose, not a failure with a cause to keep.
    #[error("transaction rolled back: {reason}")]
    UserAbort {
        /// The application's reason.
        reason: String,
    },
}

impl RewindError {
    /// A [`RewindError::UserAbort`] with `reason`.
    pub fn user_abort(reason: impl Into<String>) -> RewindError {
        RewindError::UserAbort {
            reason: reason.into(),
        }
    }
}

impl From<Damage> for RewindError {
    fn from(damage: Damage) -> RewindError {
        RewindError::Corrupt { damage }
    }
}

impl From<Refusal> for RewindError {
    fn from(refusal: Refusal) -> RewindError {
        RewindError::Invalid { refusal }
    }
}

/// Why a region holds no pool this library can read ([`RewindError::NotAPool`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotAPoolReason {
    /// The region does not start with the pool magic.
    #[error(
        "no REWIND pool magic at the start of the region (never created, or creation did not \
         finish)"
    )]
    NoMagic,
    /// The pool has another format version.
    #[error("pool format version {found}, this library reads version {expected}")]
    Version {
        /// Version in the pool header.
        found: u64,
        /// Version this library reads.
        expected: u64,
    },
    /// The pool was created for a region of another size.
    #[error("pool was created for {created} bytes but the region has {region}")]
    Size {
        /// Bytes the pool header records.
        created: u64,
        /// Bytes of the region.
        region: u64,
    },
}

/// A [`PoolConfig`](crate::PoolConfig) field out of range ([`RewindError::Config`]), or such
/// a field read from a pool header ([`Damage::HeaderConfig`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("PoolConfig::{field} is {value}; it must be {accepted}")]
#[non_exhaustive]
pub struct ConfigError {
    /// The field, as [`PoolConfig`](crate::PoolConfig) names it.
    pub field: &'static str,
    /// Its value.
    pub value: String,
    /// The values accepted.
    pub accepted: &'static str,
}

impl ConfigError {
    pub(crate) fn new(field: &'static str, value: impl ToString, accepted: &'static str) -> Self {
        ConfigError {
            field,
            value: value.to_string(),
            accepted,
        }
    }
}

/// Damage found in a pool ([`RewindError::Corrupt`]): by opening and recovering it, or by an
/// operation that meets a state no valid pool has. Each names the offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Damage {
    /// The configuration words of the pool header fail their checksum.
    #[error("the pool header's configuration fails its checksum")]
    ConfigChecksum,
    /// A word of the pool header holds no valid value for its field.
    #[error("bad {field} in the pool header ({value:#x})")]
    HeaderField {
        /// The field: `"layout"`, `"policy"`, `"layer count"` or `"commit-clearing mode"`.
        field: &'static str,
        /// The word found.
        value: u64,
    },
    /// The configuration in the pool header is out of range.
    #[error("pool header: {0}")]
    HeaderConfig(ConfigError),
    /// The pool header describes more than the region holds.
    #[error("pool header describes logs and a heap of {need} bytes, but the region has {have}")]
    HeaderSize {
        /// Bytes the header's configuration needs.
        need: u64,
        /// Bytes of the region.
        have: u64,
    },
    /// A log descriptor does not point at one of its list headers.
    #[error("log descriptor at {desc:#x} points at {header:#x}, not at one of its list headers")]
    LogDescriptor {
        /// Offset of the descriptor.
        desc: u64,
        /// Where it points.
        header: u64,
    },
    /// The list a log is built on is damaged.
    #[error("log at {log:#x}: {damage}")]
    LogList {
        /// Offset of the log's descriptor.
        log: u64,
        /// What is wrong with the list.
        damage: AdllError,
    },
    /// A log record has no valid type.
    #[error("log record at {at:#x} has no valid type")]
    LogRecord {
        /// Offset of the record.
        at: u64,
    },
    /// A slot of a log bucket holds neither empty, a gap, nor the offset of its own cell.
    #[error("log slot at {at:#x} holds {value:#x}, neither empty, a gap nor its cell")]
    LogSlot {
        /// Offset of the slot.
        at: u64,
        /// The word it holds.
        value: u64,
    },
    /// A log record names a word no transaction can have written.
    #[error(
        "a {record} record of transaction {txid} names offset {addr:#x}, outside the pool's {area}"
    )]
    RecordTarget {
        /// The record's type: `"Update"`, `"Clr"` or `"Delete"`.
        record: &'static str,
        /// The record's transaction.
        txid: u64,
        /// The offset it names.
        addr: u64,
        /// Where such a record must point: `"heap"` or `"heap and root word"`.
        area: &'static str,
    },
    /// A commit number or transaction id no pool can reach.
    #[error(
        "commit number {commit} or transaction id {txid} out of range (a damaged log record or \
         checkpoint cut)"
    )]
    NumberRange {
        /// The largest commit number found (in the logs or the checkpoint cut).
        commit: u64,
        /// The largest transaction id found in the logs.
        txid: u64,
    },
    /// The top of the heap lies outside the heap.
    #[error("top of heap {top:#x} outside the heap {start:#x}..{end:#x}")]
    HeapTop {
        /// The recorded top.
        top: u64,
        /// Start of the heap.
        start: u64,
        /// End of the heap.
        end: u64,
    },
    /// A heap block header is damaged.
    #[error("block header at {at:#x} is damaged ({word:#x})")]
    BlockHeader {
        /// Offset of the header.
        at: u64,
        /// The word found.
        word: u64,
    },
    /// The last heap block runs past the top of the heap.
    #[error("last block overruns the top of heap {top:#x}")]
    HeapOverrun {
        /// The recorded top.
        top: u64,
    },
    /// A record in a node of the two-layer log's tree has no valid type.
    #[error("log record in tree node {node:#x} has no valid type")]
    TreeRecord {
        /// Offset of the node.
        node: u64,
    },
    /// A record of the tree's own log names a word outside the tree.
    #[error("tree log record names {addr:#x}, which is not a word of the tree")]
    TreeLogTarget {
        /// The offset the record names.
        addr: u64,
    },
    /// A link of the tree leads to something that is not one of its nodes.
    #[error("tree node {node:#x} is not a node")]
    TreeNode {
        /// Where the link leads.
        node: u64,
    },
    /// A tree node is reached by two links.
    #[error("tree node {node:#x} reached twice")]
    TreeNodeTwice {
        /// Offset of the node.
        node: u64,
    },
    /// A tree node's key is out of the range its place in the tree allows.
    #[error("tree node {node:#x} has key {key:#x} outside {lo:#x}..={hi:#x}")]
    TreeKey {
        /// Offset of the node.
        node: u64,
        /// Its key.
        key: u64,
        /// Smallest key allowed there.
        lo: u64,
        /// Largest key allowed there.
        hi: u64,
    },
    /// A tree node's height is wrong, or its subtrees are not balanced.
    #[error("tree node {node:#x} has height {height} but subtrees of heights {left} and {right}")]
    TreeHeight {
        /// Offset of the node.
        node: u64,
        /// The height it records.
        height: u64,
        /// Height of its left subtree.
        left: u64,
        /// Height of its right subtree.
        right: u64,
    },
    /// A B+-tree leaf that should have room is full.
    #[error("leaf {leaf:#x} is full")]
    LeafFull {
        /// Offset of the leaf.
        leaf: u64,
    },
    /// A B+-tree leaf's bitmap shows no free slot below its capacity.
    #[error("leaf {leaf:#x} has no free slot below its capacity")]
    LeafNoSlot {
        /// Offset of the leaf.
        leaf: u64,
    },
    /// A B+-tree search passed more inner nodes than any tree can have (its nodes link in
    /// a cycle).
    #[error("B+-tree search from {root:#x} passed more than {levels} inner nodes")]
    TreeDepth {
        /// Offset of the root.
        root: u64,
        /// Inner nodes a search may pass.
        levels: usize,
    },
}

/// What a data structure or the transaction API refused ([`RewindError::Invalid`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// An unlogged initialisation outside every object this transaction allocated.
    #[error("init of {len} bytes at {at:#x}: not inside an object allocated by this transaction")]
    InitOutsideObject {
        /// Offset of the store.
        at: u64,
        /// Bytes stored.
        len: usize,
    },
    /// A B+-tree value size that is not a positive multiple of 8.
    #[error("value size {size} must be a positive multiple of 8")]
    ValueSize {
        /// The value size asked for.
        size: usize,
    },
    /// A B+-tree node size too small for its values.
    #[error("node size {node} too small for values of {value} bytes")]
    NodeTooSmall {
        /// The node size asked for.
        node: usize,
        /// The value size.
        value: usize,
    },
    /// A B+-tree header of a layout this library does not read.
    #[error(
        "B+-tree at {header:#x} has layout tag {tag:#x}, this library reads {expected:#x} \
         (fingerprinted leaves); rebuild the tree"
    )]
    TreeLayout {
        /// Offset of the tree's header.
        header: u64,
        /// The layout tag found.
        tag: u64,
        /// The tag this library writes.
        expected: u64,
    },
    /// A value whose length is not the tree's value size.
    #[error("value of {len} bytes in a tree of {expected}-byte values")]
    ValueLength {
        /// Bytes of the value.
        len: usize,
        /// The tree's value size.
        expected: usize,
    },
}

/// A structural invariant that does not hold: the error of the consistency checks that tests
/// and the fuzz target run ([`Pool::check_allocator`](crate::Pool::check_allocator),
/// [`Pool::check_logs`](crate::Pool::check_logs), [`BTree::check`](crate::btree::BTree::check),
/// [`PList::check`](crate::list::PList::check), and the allocator's AVL tree's check).
/// Nodes and blocks are byte offsets in the pool's region.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// A block twice in the allocator's free lists.
    #[error("block {block:#x} is twice in the free lists")]
    FreeTwice {
        /// The block.
        block: usize,
    },
    /// A free-list block whose header is not a free block of its list's class.
    #[error(
        "free-list block {block:#x} has header {header:?} (class, allocated), not ({class}, false)"
    )]
    FreeHeader {
        /// The block.
        block: usize,
        /// Its header, parsed (`None`: not a block header).
        header: Option<(usize, bool)>,
        /// The list's class.
        class: usize,
    },
    /// The heap could not be walked.
    #[error("walking the heap: {0}")]
    Heap(#[source] Box<RewindError>),
    /// Another number of free blocks in the heap than in the free lists.
    #[error("{heap} free blocks in the heap but {lists} in the free lists")]
    FreeCount {
        /// Free blocks in the heap.
        heap: usize,
        /// Blocks in the free lists.
        lists: usize,
    },
    /// An AVL key out of order.
    #[error("key {key:#x} out of order")]
    AvlOrder {
        /// The key.
        key: u64,
    },
    /// An AVL node unbalanced or with a wrong height.
    #[error("node {node:#x} unbalanced or bad height")]
    AvlBalance {
        /// The node.
        node: usize,
    },
    /// A list node whose prev link is not the node before it.
    #[error("node {node:#x} has a wrong prev")]
    ListPrev {
        /// The node.
        node: u64,
    },
    /// A list whose tail is not its last node.
    #[error("tail is not the last node")]
    ListTail,
    /// A list whose length is not its number of nodes.
    #[error("length {len} but {nodes} nodes")]
    ListLength {
        /// The length recorded.
        len: u64,
        /// Nodes found.
        nodes: usize,
    },
    /// A B+-tree leaf that does not link to the next.
    #[error("leaf {leaf:#x} does not link to {next:#x}")]
    LeafChain {
        /// The leaf.
        leaf: u64,
        /// The leaf after it in key order.
        next: u64,
    },
    /// The last B+-tree leaf links further.
    #[error("last leaf {leaf:#x} links further")]
    LastLeaf {
        /// The leaf.
        leaf: u64,
    },
    /// A B+-tree node at a depth its kind cannot be at.
    #[error("{} {node:#x} at depth {depth} of {height}", if *.leaf { "leaf" } else { "inner node" })]
    Depth {
        /// The node.
        node: u64,
        /// Whether it is a leaf.
        leaf: bool,
        /// Its depth.
        depth: u64,
        /// The tree's height.
        height: u64,
    },
    /// A B+-tree leaf bitmap naming slots beyond the leaf's.
    #[error("leaf {leaf:#x} bitmap {bits:#x} names slots beyond its {slots} slots")]
    Bitmap {
        /// The leaf.
        leaf: u64,
        /// Its bitmap.
        bits: u64,
        /// Its slots.
        slots: usize,
    },
    /// A B+-tree slot whose fingerprint is not its key's.
    #[error("leaf {leaf:#x} slot {slot}: fingerprint does not match key {key}")]
    Fingerprint {
        /// The leaf.
        leaf: u64,
        /// The slot.
        slot: usize,
        /// Its key.
        key: u64,
    },
    /// A B+-tree key repeated or outside its node's bounds.
    #[error("{} {node:#x} key {key} repeated, out of order or out of its bounds", if *.leaf { "leaf" } else { "inner node" })]
    Key {
        /// The node.
        node: u64,
        /// Whether it is a leaf.
        leaf: bool,
        /// The key.
        key: u64,
    },
    /// A sorted B+-tree leaf whose slots are not the first ones in key order.
    #[error("sorted leaf {leaf:#x}: slots {bits:#x} not the first {count} in key order")]
    Unsorted {
        /// The leaf.
        leaf: u64,
        /// Its bitmap.
        bits: u64,
        /// Its keys.
        count: usize,
    },
    /// A B+-tree inner node with a count of keys it cannot hold.
    #[error("inner node {node:#x} holds {keys} keys")]
    InnerCount {
        /// The node.
        node: u64,
        /// Its key count.
        keys: usize,
    },
    /// A null child of a B+-tree inner node.
    #[error("inner node {node:#x} child {child} is null")]
    NullChild {
        /// The node.
        node: u64,
        /// The child's index.
        child: usize,
    },
}
