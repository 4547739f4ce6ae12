//! The bbolt engine over files: open with bbolt's options, read
//! transactions, buckets and cursors.
//!
//! This is the read side; the write side extends the same [`Db`].
//! The on-disk format and the read logic live in
//! [`mapwise_core::bolt`]; this module adds files, locks and mappings.

mod db;

pub use db::{Bucket, Cursor, Db, Error, Options, Tx};
pub use mapwise_core::bolt::Item;
