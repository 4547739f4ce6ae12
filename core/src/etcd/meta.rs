//! The `meta` bucket: where etcd keeps its place in the raft log and its
//! compaction.
//!
//! * `consistent_index`: the raft index of the last applied entry, 8
//!   bytes big-endian (3.4 `store.saveIndex`, `mvcc/kvstore.go`; 3.5
//!   `cindex.UnsafeUpdateConsistentIndex`; 3.6
//!   `schema.unsafeUpdateConsistentIndex`, `server/storage/schema/cindex.go`).
//! * `term` (3.5+): the raft term of that entry, 8 bytes big-endian,
//!   written beside `consistent_index` when it is above 0.
//! * `scheduledCompactRev`: the compaction asked for, as a 17-byte
//!   revision (main, `_`, sub 0) (`store.Compact`,
//!   `UnsafeSetScheduledCompact`).
//! * `finishedCompactRev`: the compaction done, the same encoding
//!   (`store.scheduleCompaction`, `UnsafeSetFinishedCompact`).
//! * `confState` (3.5+): raft's `ConfState` as JSON
//!   (`MustUnsafeSaveConfStateToBackend`).
//! * `storageVersion` (3.6): `MAJOR.MINOR.0` as text
//!   (`UnsafeSetStorageVersion`).
//!
//! Readers of the compaction keys take the main only (`BytesToRev(...).Main`
//! in `UnsafeReadScheduledCompact`, `UnsafeReadFinishedCompact`).

use crate::error::EtcdFault;

use super::revision::{REVISION_LEN, Revision, RevisionKey};

/// `consistent_index` (`MetaConsistentIndexKeyName`).
pub const CONSISTENT_INDEX: &[u8] = b"consistent_index";
/// `term` (`MetaTermKeyName`, 3.5+).
pub const TERM: &[u8] = b"term";
/// `scheduledCompactRev` (`ScheduledCompactKeyName`).
pub const SCHEDULED_COMPACT_REV: &[u8] = b"scheduledCompactRev";
/// `finishedCompactRev` (`FinishedCompactKeyName`).
pub const FINISHED_COMPACT_REV: &[u8] = b"finishedCompactRev";
/// `confState` (`MetaConfStateName`, 3.5+).
pub const CONF_STATE: &[u8] = b"confState";
/// `storageVersion` (`MetaStorageVersionName`, 3.6).
pub const STORAGE_VERSION: &[u8] = b"storageVersion";

/// One `meta` bucket record, decoded by its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaRecord<'a> {
    /// `consistent_index`: the raft index of the last entry applied.
    ConsistentIndex(u64),
    /// `term`: the raft term of that entry (3.5+).
    Term(u64),
    /// `scheduledCompactRev`: the compaction asked for (sub is 0 as etcd
    /// writes it; etcd reads the main only).
    ScheduledCompactRev(Revision),
    /// `finishedCompactRev`: the compaction finished.
    FinishedCompactRev(Revision),
    /// `confState`: raft's membership as JSON (3.5+), undecoded.
    ConfState(&'a [u8]),
    /// `storageVersion`: the storage schema version as text (3.6).
    StorageVersion(&'a [u8]),
    /// Any other key, with its value.
    Other(&'a [u8], &'a [u8]),
}

fn be_u64(what: &'static str, value: &[u8]) -> Result<u64, EtcdFault> {
    let b: [u8; 8] = value.try_into().map_err(|_| EtcdFault::ValueLength {
        what,
        len: super::len32(value.len()),
        expected: 8,
    })?;
    Ok(u64::from_be_bytes(b))
}

fn compact(what: &'static str, value: &[u8]) -> Result<Revision, EtcdFault> {
    if value.len() != REVISION_LEN {
        return Err(EtcdFault::ValueLength {
            what,
            len: super::len32(value.len()),
            expected: super::len32(REVISION_LEN),
        });
    }
    Ok(RevisionKey::parse(value)?.revision)
}

impl<'a> MetaRecord<'a> {
    /// Decode one `meta` record by its key (table in the module doc).
    ///
    /// # Errors
    /// [`EtcdFault::ValueLength`] when an integer is not 8 bytes or a
    /// compaction revision not 17; [`EtcdFault::Separator`] when a
    /// compaction revision's byte 8 is not `_`.
    pub fn decode(key: &'a [u8], value: &'a [u8]) -> Result<MetaRecord<'a>, EtcdFault> {
        Ok(match key {
            CONSISTENT_INDEX => {
                MetaRecord::ConsistentIndex(be_u64("meta consistent_index", value)?)
            }
            TERM => MetaRecord::Term(be_u64("meta term", value)?),
            SCHEDULED_COMPACT_REV => {
                MetaRecord::ScheduledCompactRev(compact("meta scheduledCompactRev", value)?)
            }
            FINISHED_COMPACT_REV => {
                MetaRecord::FinishedCompactRev(compact("meta finishedCompactRev", value)?)
            }
            CONF_STATE => MetaRecord::ConfState(value),
            STORAGE_VERSION => MetaRecord::StorageVersion(value),
            _ => MetaRecord::Other(key, value),
        })
    }
}
