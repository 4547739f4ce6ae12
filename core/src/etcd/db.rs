//! An etcd backend db (`DATA_DIR/member/snap/db`) read through a
//! [`BoltFile`]: which of etcd's buckets it has, and its records decoded.

use alloc::vec::Vec;

use crate::bolt::{BoltFile, Bucket, Item};
use crate::error::{At, Error, EtcdFault, Result};
use crate::source::PageSource;

use super::kv::KeyValueRef;
use super::lease::Lease;
use super::meta::{MetaRecord, STORAGE_VERSION, TERM};
use super::revision::RevisionKey;

/// `key`: revision → `mvccpb.KeyValue` (`keyBucketName`).
pub const KEY: &str = "key";
/// `meta`: consistent index, term, compaction (`metaBucketName`).
pub const META: &str = "meta";
/// `lease`: lease id → `leasepb.Lease` (`leaseBucketName`).
pub const LEASE: &str = "lease";
/// `alarm`: raised alarms (`alarmBucketName`).
pub const ALARM: &str = "alarm";
/// `cluster`: `clusterVersion` (and `downgrade`, 3.5+) (`clusterBucketName`).
pub const CLUSTER: &str = "cluster";
/// `members`: member id → JSON (`membersBucketName`).
pub const MEMBERS: &str = "members";
/// `members_removed` (`membersRemovedBucketName`).
pub const MEMBERS_REMOVED: &str = "members_removed";
/// `auth`: `authEnabled`, `authRevision` (`authBucketName`).
pub const AUTH: &str = "auth";
/// `authUsers` (`authUsersBucketName`).
pub const AUTH_USERS: &str = "authUsers";
/// `authRoles` (`authRolesBucketName`).
pub const AUTH_ROLES: &str = "authRoles";

/// The top-level buckets a running etcd 3.4–3.6 server creates at start
/// (3.6: `server/storage/schema/bucket.go`; 3.5:
/// `server/mvcc/buckets/bucket.go`; 3.4: the `*BucketName` variables of
/// `mvcc/kvstore.go`, `lease/lessor.go`, `etcdserver/api/v3alarm`,
/// `etcdserver/api/membership/store.go` and `auth/store.go`). All ten
/// exist in 3.4 too: `cluster` is not new in 3.5.
pub const BUCKETS: [&str; 10] =
    [KEY, META, LEASE, ALARM, CLUSTER, MEMBERS, MEMBERS_REMOVED, AUTH, AUTH_USERS, AUTH_ROLES];

/// The key of the `cluster` bucket holding the cluster version
/// (`clusterVersion`, text like `3.4.0`).
pub const CLUSTER_VERSION: &[u8] = b"clusterVersion";

/// The oldest etcd release line whose writer leaves what the `meta`
/// bucket holds: `storageVersion` is written from 3.6 on, `term` from 3.5
/// on (`cindex.go`: "Term is persisted since v3.5"); neither: 3.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Line {
    /// 3.4 (or older): `consistent_index` without `term`.
    V3_4,
    /// 3.5: `term` beside `consistent_index`.
    V3_5,
    /// 3.6: `storageVersion`.
    V3_6,
}

/// The `meta` bucket, decoded ([`MetaRecord`] per key; `None` when the
/// key is absent).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Meta {
    /// `consistent_index`: raft index of the last applied entry.
    pub consistent_index: Option<u64>,
    /// `term` (3.5+): its raft term.
    pub term: Option<u64>,
    /// `scheduledCompactRev`'s main: the last compaction asked for.
    pub scheduled_compact: Option<i64>,
    /// `finishedCompactRev`'s main: the last compaction done.
    pub finished_compact: Option<i64>,
    /// `storageVersion` (3.6), as text.
    pub storage_version: Option<Vec<u8>>,
    /// `confState` (3.5+), JSON.
    pub conf_state: Option<Vec<u8>>,
    /// Keys of no known meaning.
    pub others: usize,
}

/// One record of the `key` bucket, decoded and checked
/// ([`KeyValueRef::check`]): borrowed from the page for slice and mapped
/// sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The revision key.
    pub key: RevisionKey,
    /// The value.
    pub kv: KeyValueRef<'a>,
    /// Where it is stored (the bbolt leaf element).
    pub at: At,
    /// Bytes of the bbolt value (the marshalled `mvccpb.KeyValue`).
    pub value_len: usize,
}

impl<'a> Record<'a> {
    /// Decode and check the `key` bucket item `key` → `value` stored at
    /// `at` (a leaf element): the revision key ([`RevisionKey::parse`]),
    /// the `mvccpb.KeyValue` ([`KeyValueRef::decode`]) and their agreement
    /// ([`KeyValueRef::check`]).
    ///
    /// # Errors
    /// [`Error::Etcd`] at `at`, naming what is wrong.
    pub fn decode(key: &[u8], value: &'a [u8], at: At) -> Result<Record<'a>> {
        let key = RevisionKey::parse(key).map_err(|e| e.at(at))?;
        let kv = KeyValueRef::decode(value).map_err(|e| e.at(at))?;
        kv.check(&key).map_err(|e| e.at(at))?;
        Ok(Record { key, kv, at, value_len: value.len() })
    }
}

impl Meta {
    /// Take one record of the `meta` bucket into account (a later record
    /// of the same key replaces the earlier).
    pub fn add(&mut self, record: MetaRecord<'_>) {
        match record {
            MetaRecord::ConsistentIndex(v) => self.consistent_index = Some(v),
            MetaRecord::Term(v) => self.term = Some(v),
            MetaRecord::ScheduledCompactRev(r) => self.scheduled_compact = Some(r.main),
            MetaRecord::FinishedCompactRev(r) => self.finished_compact = Some(r.main),
            MetaRecord::ConfState(v) => self.conf_state = Some(v.to_vec()),
            MetaRecord::StorageVersion(v) => self.storage_version = Some(v.to_vec()),
            MetaRecord::Other(..) => self.others += 1,
        }
    }
}

/// An etcd backend db: the bbolt file and etcd's buckets in it.
#[derive(Debug)]
pub struct EtcdDb<'s, S: PageSource + ?Sized> {
    root: Bucket<'s, S>,
    key: Bucket<'s, S>,
    meta: Bucket<'s, S>,
    present: [bool; BUCKETS.len()],
}

/// An item's place, or the meta page in use when the cursor has none.
fn place<S: PageSource + ?Sized>(at: Option<At>, file: &BoltFile<'_, S>) -> At {
    at.unwrap_or(At::Meta(file.current_index()))
}

impl<'s, S: PageSource + ?Sized> EtcdDb<'s, S> {
    /// Recognise `file` as an etcd backend db: it must have the `key` and
    /// `meta` buckets (etcd's mvcc store creates both before anything
    /// else is written); the other eight of [`BUCKETS`] are reported by
    /// [`EtcdDb::has`], not required (a db restored from a snapshot, or
    /// made by a tool, may lack some).
    ///
    /// # Errors
    /// [`Error::Etcd`] with [`EtcdFault::MissingBucket`] (at the meta
    /// page in use) when `key` or `meta` is missing, or a fault met in the
    /// top-level tree.
    pub fn open(file: &BoltFile<'s, S>) -> Result<EtcdDb<'s, S>> {
        let root = Bucket::root_of(file);
        let mut present = [false; BUCKETS.len()];
        let mut found: [Option<Bucket<'s, S>>; 2] = [None, None];
        for (i, name) in BUCKETS.iter().enumerate() {
            let b = match root.bucket(name.as_bytes()) {
                Ok(b) => b,
                Err(Error::IncompatibleValue) => None,
                Err(e) => return Err(e),
            };
            present[i] = b.is_some();
            if i < 2 {
                found[i] = b;
            }
        }
        let at = At::Meta(file.current_index());
        let [key, meta] = found;
        let key = key.ok_or(EtcdFault::MissingBucket { name: KEY }.at(at))?;
        let meta = meta.ok_or(EtcdFault::MissingBucket { name: META }.at(at))?;
        Ok(EtcdDb { root, key, meta, present })
    }

    /// Whether the top-level bucket `name` (one of [`BUCKETS`]) exists.
    #[must_use]
    pub fn has(&self, name: &str) -> bool {
        BUCKETS.iter().position(|b| *b == name).is_some_and(|i| self.present[i])
    }

    /// The buckets of [`BUCKETS`] this db lacks.
    #[must_use]
    pub fn missing(&self) -> Vec<&'static str> {
        BUCKETS.iter().zip(self.present).filter(|(_, p)| !p).map(|(b, _)| *b).collect()
    }

    /// The top-level bucket `name`, if any.
    ///
    /// # Errors
    /// A fault met on the way down.
    pub fn bucket(&self, name: &str) -> Result<Option<Bucket<'s, S>>> {
        match self.root.bucket(name.as_bytes()) {
            Err(Error::IncompatibleValue) => Ok(None),
            r => r,
        }
    }

    /// The `key` bucket.
    #[must_use]
    pub fn key_bucket(&self) -> &Bucket<'s, S> {
        &self.key
    }

    /// The `meta` bucket, decoded.
    ///
    /// # Errors
    /// [`Error::Etcd`] naming the element of a record that does not
    /// decode ([`MetaRecord::decode`]), or a fault of the tree.
    pub fn meta(&self) -> Result<Meta> {
        let mut m = Meta::default();
        let mut c = self.meta.cursor();
        let mut item = c.first()?;
        while let Some(it) = item {
            let at = place(c.at(), self.meta.file());
            if it.is_bucket() {
                return Err(EtcdFault::NestedBucket.at(at));
            }
            m.add(MetaRecord::decode(&it.key, &it.value).map_err(|f| f.at(at))?);
            item = c.next()?;
        }
        Ok(m)
    }

    /// The release line the `meta` bucket's keys point to ([`Line`]).
    ///
    /// # Errors
    /// A fault of the tree.
    pub fn line(&self) -> Result<Line> {
        Ok(if self.meta.get(STORAGE_VERSION)?.is_some() {
            Line::V3_6
        } else if self.meta.get(TERM)?.is_some() {
            Line::V3_5
        } else {
            Line::V3_4
        })
    }

    /// The `cluster` bucket's `clusterVersion` (text such as `3.4.0`),
    /// if stored.
    ///
    /// # Errors
    /// A fault of the tree.
    pub fn cluster_version(&self) -> Result<Option<Vec<u8>>> {
        let Some(b) = self.bucket(CLUSTER)? else { return Ok(None) };
        Ok(b.get(CLUSTER_VERSION)?.map(|v| v.to_vec()))
    }

    /// Call `f` with every record of the `key` bucket in revision order:
    /// `Ok` with the record decoded and checked, or `Err` with an
    /// [`Error::Etcd`] naming the element and what is wrong, for `f` to
    /// stop on (by returning it) or to count. Nothing is allocated per
    /// record; `key` and `value` borrow from the page for slice and
    /// mapped sources.
    ///
    /// # Errors
    /// A fault of the tree (the walk cannot go on), or the first error
    /// `f` returns.
    pub fn revisions<E: From<Error>>(
        &self,
        mut f: impl FnMut(core::result::Result<Record<'_>, Error>) -> core::result::Result<(), E>,
    ) -> core::result::Result<(), E> {
        let mut c = self.key.cursor();
        let mut item = c.first()?;
        while let Some(it) = item {
            let at = place(c.at(), self.key.file());
            f(record(&it, at))?;
            item = c.next()?;
        }
        Ok(())
    }

    /// Call `f` with every lease of the `lease` bucket in id order
    /// ([`Lease::decode_record`]); `Err` items name the element. Nothing
    /// is called when the bucket is missing.
    ///
    /// # Errors
    /// A fault of the tree, or the first error `f` returns.
    pub fn leases<E: From<Error>>(
        &self,
        mut f: impl FnMut(core::result::Result<Lease, Error>) -> core::result::Result<(), E>,
    ) -> core::result::Result<(), E> {
        let Some(b) = self.bucket(LEASE)? else { return Ok(()) };
        let mut c = b.cursor();
        let mut item = c.first()?;
        while let Some(it) = item {
            let at = place(c.at(), b.file());
            let l = if it.is_bucket() {
                Err(EtcdFault::NestedBucket.at(at))
            } else {
                Lease::decode_record(&it.key, &it.value).map_err(|e| e.at(at))
            };
            f(l)?;
            item = c.next()?;
        }
        Ok(())
    }
}

/// One `key` bucket item decoded and checked.
fn record<'a>(it: &'a Item<'_>, at: At) -> Result<Record<'a>> {
    if it.is_bucket() {
        return Err(EtcdFault::NestedBucket.at(at));
    }
    Record::decode(&it.key, &it.value, at)
}
