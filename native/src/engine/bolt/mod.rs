//! The bbolt engine over files: open with bbolt's options, read and
//! write transactions, buckets and cursors, with bbolt's semantics and
//! file format (Go bbolt opens what this writes, and this opens what Go
//! bbolt writes).
//!
//! The on-disk format, the read logic and page serialisation live in
//! [`mapwise_core::bolt`]; this module adds files, locks, mappings, the
//! write transaction's B+tree maintenance and the commit protocol.

mod compact;
mod db;
mod error;
#[doc(hidden)]
pub mod failpoint;
mod freelist;
mod node;
pub mod plan;
mod wcursor;
mod wtx;

pub use db::{ALLOC_SIZE, Bucket, Cursor, DEFAULT_FILL_PERCENT, Db, Options, Stats, Tx};
pub use error::{Error, Result, check_summary};
pub use mapwise_core::bolt::{
    ARM_ITEMS, ARM_LEAVES, BucketStats, CursorOptions, DEFAULT_PREFETCH, Item, Prefetch,
};
pub use wtx::{BucketMut, CursorMut, MAX_VALUE_SIZE, WriteCursor, WriteTx};
