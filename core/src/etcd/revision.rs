//! Revision keys: the keys of etcd's `key` bucket.
//!
//! etcd's `RevToBytes` and `BucketKeyToBytes` (`server/storage/mvcc/revision.go`
//! in 3.6; `mvcc/revision.go` in 3.4, `server/mvcc/revision.go` in 3.5)
//! write a revision as 8 bytes of `main` big-endian, the byte `_`, and
//! 8 bytes of `sub` big-endian; a delete appends the tombstone mark `t`
//! (`markTombstone`, `appendMarkTombstone`). Big-endian makes the bbolt
//! key order the revision order.

use core::fmt;
use core::ops::Deref;

use crate::error::EtcdFault;

/// Bytes of a revision key: `revBytesLen` = 8 + 1 + 8.
pub const REVISION_LEN: usize = 17;
/// Bytes of a tombstone's key: `markedRevBytesLen` = [`REVISION_LEN`] + 1.
pub const MARKED_REVISION_LEN: usize = REVISION_LEN + 1;
/// The byte between main and sub (`RevToBytes` writes `'_'`).
pub const SEPARATOR: u8 = b'_';
/// The tombstone mark appended to a delete's revision (`markTombstone`).
pub const TOMBSTONE_MARK: u8 = b't';

/// A revision (etcd's `Revision`, `revision` before 3.6): `main` counts
/// the transactions that changed the key space (the store's revision
/// `etcdctl` prints), `sub` the changes inside one transaction, from 0.
/// Ordered as etcd orders them (`GreaterThan`): by main, then sub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Revision {
    /// The transaction's revision (etcd stores `int64`, written as its
    /// two's-complement `uint64`; ≥ 1 for every revision etcd makes).
    pub main: i64,
    /// The change's index inside the transaction (from 0).
    pub sub: i64,
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.main, self.sub)
    }
}

/// A key of the `key` bucket: a revision, and whether it is a tombstone
/// (the key was deleted at that revision; its value is a `KeyValue` with
/// only the key set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RevisionKey {
    /// The revision.
    pub revision: Revision,
    /// The key ends with the tombstone mark `t` (etcd's `isTombstone`).
    pub tombstone: bool,
}

/// The bytes of a [`RevisionKey`] (17 or 18), as etcd writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RevisionBytes {
    buf: [u8; MARKED_REVISION_LEN],
    len: u8,
}

impl Deref for RevisionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

impl RevisionKey {
    /// Decode a `key` bucket key: 17 bytes (main big-endian, `_`, sub
    /// big-endian), or 18 with the tombstone mark `t` last. etcd's own
    /// `BytesToBucketKey` (3.6) checks the length and the `_` the same way.
    ///
    /// # Errors
    /// [`EtcdFault::KeyLength`] for any other length,
    /// [`EtcdFault::Separator`] when byte 8 is not `_`,
    /// [`EtcdFault::Mark`] when byte 17 of 18 is not `t`.
    pub fn parse(key: &[u8]) -> Result<RevisionKey, EtcdFault> {
        let (rev, mark) = match key.len() {
            REVISION_LEN => (key, None),
            MARKED_REVISION_LEN => (&key[..REVISION_LEN], Some(key[REVISION_LEN])),
            len => return Err(EtcdFault::KeyLength { len: super::len32(len) }),
        };
        if rev[8] != SEPARATOR {
            return Err(EtcdFault::Separator { found: rev[8] });
        }
        if let Some(m) = mark
            && m != TOMBSTONE_MARK
        {
            return Err(EtcdFault::Mark { found: m });
        }
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            i64::from_be_bytes(w)
        };
        Ok(RevisionKey {
            revision: Revision { main: word(&rev[..8]), sub: word(&rev[9..]) },
            tombstone: mark.is_some(),
        })
    }

    /// The key etcd writes for this revision (17 bytes, or 18 for a
    /// tombstone).
    #[must_use]
    pub fn to_bytes(&self) -> RevisionBytes {
        let mut buf = [0u8; MARKED_REVISION_LEN];
        buf[..8].copy_from_slice(&self.revision.main.to_be_bytes());
        buf[8] = SEPARATOR;
        buf[9..REVISION_LEN].copy_from_slice(&self.revision.sub.to_be_bytes());
        let len = if self.tombstone {
            buf[REVISION_LEN] = TOMBSTONE_MARK;
            18
        } else {
            17
        };
        RevisionBytes { buf, len }
    }
}

impl fmt::Display for RevisionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.revision, if self.tombstone { "t" } else { "" })
    }
}
