//! `mvccpb.KeyValue`: the values of etcd's `key` bucket.
//!
//! The message (`api/mvccpb/kv.proto`, `KeyValue`; `mvcc/mvccpb/kv.proto`
//! in 3.4) has six proto3 fields: `key` (1, bytes), `create_revision`
//! (2, int64), `mod_revision` (3, int64), `version` (4, int64), `value`
//! (5, bytes) and `lease` (6, int64). etcd marshals it with gogoproto in
//! field order and leaves out the fields that are zero or empty.
//!
//! A put (`storeTxnWrite.put`, `kvstore_txn.go`) stores every field, with
//! `mod_revision` the main of the revision it is stored under; a delete
//! (`storeTxnWrite.delete`) stores a `KeyValue` with only `key` set under
//! a tombstone key.

use alloc::vec::Vec;

use crate::error::{EtcdFault, Message};

use super::revision::{Revision, RevisionKey};
use super::wire::{Fields, LEN, VARINT, Wire};

/// Field number → (name, wire type) of `mvccpb.KeyValue`.
fn known(field: u32) -> Option<(&'static str, u8)> {
    Some(match field {
        1 => ("key", LEN),
        2 => ("create_revision", VARINT),
        3 => ("mod_revision", VARINT),
        4 => ("version", VARINT),
        5 => ("value", LEN),
        6 => ("lease", VARINT),
        _ => return None,
    })
}

/// An `mvccpb.KeyValue` decoded without copying: `key` and `value` borrow
/// from the bytes decoded (the bbolt page, when the source is a slice or
/// a mapping). Revisions are etcd revisions' main parts (`int64`), the
/// version counts puts since the key's creation, `lease` is a lease id
/// (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyValueRef<'a> {
    /// The key (field 1).
    pub key: &'a [u8],
    /// The main revision of the key's creation (field 2).
    pub create_revision: i64,
    /// The main revision of this change (field 3).
    pub mod_revision: i64,
    /// Puts of the key since its creation, 1 for the creating put
    /// (field 4); a delete resets it.
    pub version: i64,
    /// The value (field 5).
    pub value: &'a [u8],
    /// The lease the key is attached to, 0 for none (field 6).
    pub lease: i64,
}

impl<'a> KeyValueRef<'a> {
    /// Decode an `mvccpb.KeyValue` as etcd's `KeyValue.Unmarshal` does
    /// (proto3: any field order, last occurrence wins, unknown fields
    /// skipped, a known field with another wire type refused), with two
    /// rules stricter than gogoproto's and the same as prost's: a varint's
    /// 10th byte may only be 0 or 1, and groups (wire types 3 and 4) are
    /// refused. Borrows, never allocates. An empty input is the message
    /// with every field zero, as in protobuf; [`KeyValueRef::check`]
    /// refuses it in the `key` bucket.
    ///
    /// # Errors
    /// [`EtcdFault::Varint`], [`EtcdFault::Truncated`],
    /// [`EtcdFault::WireType`] or [`EtcdFault::Tag`], naming the field
    /// and the byte.
    pub fn decode(bytes: &'a [u8]) -> Result<KeyValueRef<'a>, EtcdFault> {
        let mut kv = KeyValueRef::default();
        let mut fields = Fields::new(bytes, Message::KeyValue, known);
        while let Some(f) = fields.next_field() {
            match f? {
                (1, Wire::Bytes(b)) => kv.key = b,
                (5, Wire::Bytes(b)) => kv.value = b,
                // Varints are int64's two's complement, as Go converts.
                (2, Wire::Varint(v)) => kv.create_revision = v as i64,
                (3, Wire::Varint(v)) => kv.mod_revision = v as i64,
                (4, Wire::Varint(v)) => kv.version = v as i64,
                (6, Wire::Varint(v)) => kv.lease = v as i64,
                _ => {}
            }
        }
        Ok(kv)
    }

    /// Whether this value is one etcd could have stored under `key`:
    /// a revision with main ≥ 1 and sub ≥ 0 (3.6's `BytesToBucketKey`
    /// panics on negative ones; the store starts at revision 1), a
    /// non-empty `key` (etcd refuses empty keys); for a put,
    /// `mod_revision` equal to the revision's main, `create_revision` in
    /// `1..=mod_revision` and `version` ≥ 1 (`storeTxnWrite.put`). A
    /// tombstone's other fields are not checked (etcd writes them zero).
    ///
    /// # Errors
    /// [`EtcdFault::EmptyKey`] or [`EtcdFault::Mismatch`] naming the field.
    pub fn check(&self, key: &RevisionKey) -> Result<(), EtcdFault> {
        let Revision { main, sub } = key.revision;
        if main < 1 {
            return Err(EtcdFault::Mismatch {
                what: "revision main (at least 1)",
                expected: 1,
                found: main,
            });
        }
        if sub < 0 {
            return Err(EtcdFault::Mismatch {
                what: "revision sub (at least 0)",
                expected: 0,
                found: sub,
            });
        }
        if self.key.is_empty() {
            return Err(EtcdFault::EmptyKey);
        }
        if key.tombstone {
            return Ok(());
        }
        if self.mod_revision != main {
            return Err(EtcdFault::Mismatch {
                what: "mvccpb.KeyValue.mod_revision (the revision's main)",
                expected: main,
                found: self.mod_revision,
            });
        }
        if self.create_revision < 1 || self.create_revision > main {
            return Err(EtcdFault::Mismatch {
                what: "mvccpb.KeyValue.create_revision (at most mod_revision, at least 1)",
                expected: main,
                found: self.create_revision,
            });
        }
        if self.version < 1 {
            return Err(EtcdFault::Mismatch {
                what: "mvccpb.KeyValue.version (at least 1 for a put)",
                expected: 1,
                found: self.version,
            });
        }
        Ok(())
    }

    /// An owned copy (the prost message).
    #[must_use]
    pub fn to_owned(&self) -> KeyValue {
        KeyValue {
            key: self.key.to_vec(),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
            version: self.version,
            value: self.value.to_vec(),
            lease: self.lease,
        }
    }
}

/// `mvccpb.KeyValue` as an owned prost message: encodes exactly as etcd's
/// gogoproto `Marshal` does (fields in number order, zero fields left
/// out), so writers and tests can make the bytes etcd makes;
/// [`KeyValueRef::decode`] reads them without copying.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct KeyValue {
    /// Field 1, `key`: the user's key.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// Field 2, `create_revision`: main revision of the key's creation.
    #[prost(int64, tag = "2")]
    pub create_revision: i64,
    /// Field 3, `mod_revision`: main revision of this change.
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    /// Field 4, `version`: puts since creation (1 for the first).
    #[prost(int64, tag = "4")]
    pub version: i64,
    /// Field 5, `value`: the user's value.
    #[prost(bytes = "vec", tag = "5")]
    pub value: Vec<u8>,
    /// Field 6, `lease`: the attached lease's id, 0 for none.
    #[prost(int64, tag = "6")]
    pub lease: i64,
}
