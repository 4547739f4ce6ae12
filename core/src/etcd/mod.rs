//! etcd's data model in its backend db (`DATA_DIR/member/snap/db`, a
//! bbolt file), for etcd 3.4 to 3.6.
//!
//! See `docs/format/etcd.md` for the format in our words, each fact
//! cited to etcd's source. In short:
//!
//! * [`EtcdDb::open`] recognises the db by its top-level buckets
//!   ([`BUCKETS`]: `key` and `meta` required) and reads them.
//! * `key` maps a [`RevisionKey`] (main and sub, big-endian, joined by
//!   `_`; a trailing `t` marks a tombstone) to an `mvccpb.KeyValue`
//!   ([`KeyValueRef`], borrowed; [`KeyValue`], owned).
//! * `meta` holds `consistent_index`, `term`, `scheduledCompactRev` and
//!   `finishedCompactRev` ([`MetaRecord`], [`Meta`]).
//! * `lease` maps a lease id (8 bytes big-endian) to a `leasepb.Lease`
//!   ([`Lease`]).
//!
//! **Faults.** Every decoder returns an [`EtcdFault`] naming the field and
//! byte at fault and never panics; [`EtcdFault::at`] attaches the bbolt
//! page and element ([`crate::bolt::Cursor::at`]), giving an
//! [`Error::Etcd`](crate::Error::Etcd). Decoding allocates nothing: a
//! length read from a value is checked against the bytes left before it
//! is used.
//!
//! **Protobuf.** The two messages are [prost](https://docs.rs/prost)
//! messages derived by hand (`#[derive(prost::Message)]`, prost with
//! default features off: `no_std` + `alloc`, no build script, no
//! `protoc`), re-exported as [`prost`] so callers encode them as etcd
//! does (gogoproto's `Marshal` and prost both write fields in number
//! order and leave zero fields out). Decoding does not go through prost:
//! its messages own their bytes (`Vec<u8>`, or `Bytes`, which copies from
//! a borrowed slice), so every value would be copied out of the page,
//! and its `DecodeError` carries a message string rather than the field
//! and byte; the decoders here are a small walk over the wire format
//! ([`KeyValueRef::decode`], [`Lease::decode_value`]) whose acceptance
//! the tests check against prost's decoder.

mod compaction;
mod db;
mod kv;
mod lease;
mod meta;
mod revision;
mod wire;

/// A length or offset inside a key or value as faults carry it: bbolt
/// keeps values under 2 GiB, so it fits; saturated otherwise.
pub(crate) fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub use prost;

pub use crate::error::{EtcdFault, Message};
pub use compaction::kept_by_compaction;
pub use db::{
    ALARM, AUTH, AUTH_ROLES, AUTH_USERS, BUCKETS, CLUSTER, CLUSTER_VERSION, EtcdDb, KEY, LEASE,
    Line, MEMBERS, MEMBERS_REMOVED, META, Meta, Record,
};
pub use kv::{KeyValue, KeyValueRef};
pub use lease::{Lease, lease_id};
pub use meta::{
    CONF_STATE, CONSISTENT_INDEX, FINISHED_COMPACT_REV, MetaRecord, SCHEDULED_COMPACT_REV,
    STORAGE_VERSION, TERM,
};
pub use revision::{
    MARKED_REVISION_LEN, REVISION_LEN, Revision, RevisionBytes, RevisionKey, SEPARATOR,
    TOMBSTONE_MARK,
};

#[cfg(test)]
mod tests;
