//! The one error type of `mapwise-core`.
//!
//! Every fault found in a file names *where* it is (an [`At`]) and *what*
//! is wrong (the field and its value), so a front end can print one line a
//! person can act on: `page 12: field overflow = 4294967295: ...`.

use core::fmt;

/// Where in a file a fault was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum At {
    /// An absolute byte offset in the file.
    Offset(u64),
    /// A bbolt page, by page id (`pgid`).
    Page(u64),
    /// Element `index` (0-based) of the bbolt page `pgid`.
    Element {
        /// Page id of the page holding the element array.
        pgid: u64,
        /// 0-based element index.
        index: u32,
    },
    /// The inline bucket page stored in element `index` of page `pgid`.
    Inline {
        /// Page id of the leaf page holding the bucket value.
        pgid: u64,
        /// 0-based element index of the bucket entry.
        index: u32,
    },
    /// Meta page 0 or 1 of a bbolt file.
    Meta(u8),
    /// The index entry of revision `rev` of a revlog, at byte `offset`
    /// of the index file.
    Revision {
        /// Revision number (0-based position in the index).
        rev: u64,
        /// Byte offset of the entry in the `.i` file.
        offset: u64,
    },
    /// Structure `index` (0-based) of one section of an RRDtool file
    /// (`rrd_format.h`); for `cdp_prep` the index is `rra * ds_cnt + ds`,
    /// for `values` the RRA.
    Rrd {
        /// The section.
        section: RrdSection,
        /// 0-based index of the structure inside the section.
        index: u64,
    },
}

/// A section of an RRDtool file, in file order (`rrd_format.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RrdSection {
    /// `stat_head_t`.
    StatHead,
    /// `ds_def_t[ds_cnt]`.
    DsDef,
    /// `rra_def_t[rra_cnt]`.
    RraDef,
    /// `live_head_t` (or the bare `last_up` before version 3).
    LiveHead,
    /// `pdp_prep_t[ds_cnt]`.
    PdpPrep,
    /// `cdp_prep_t[rra_cnt * ds_cnt]`.
    CdpPrep,
    /// `rra_ptr_t[rra_cnt]`.
    RraPtr,
    /// The rows of the archives.
    Values,
}

impl RrdSection {
    /// The name of the `rrd_t` member rrdtool reads the section into.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            RrdSection::StatHead => "stat_head",
            RrdSection::DsDef => "ds_def",
            RrdSection::RraDef => "rra_def",
            RrdSection::LiveHead => "live_head",
            RrdSection::PdpPrep => "pdp_prep",
            RrdSection::CdpPrep => "cdp_prep",
            RrdSection::RraPtr => "rra_ptr",
            RrdSection::Values => "values",
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            At::Offset(o) => write!(f, "offset {o}"),
            At::Page(p) => write!(f, "page {p}"),
            At::Element { pgid, index } => write!(f, "page {pgid} element {index}"),
            At::Inline { pgid, index } => {
                write!(f, "inline bucket in page {pgid} element {index}")
            }
            At::Meta(i) => write!(f, "meta page {i}"),
            At::Revision { rev, offset } => write!(f, "revision {rev} (offset {offset})"),
            At::Rrd { section, index } => write!(f, "rrd {}[{index}]", section.name()),
        }
    }
}

/// Why a bbolt meta page was rejected, in the order bbolt checks
/// (`internal/common/meta.go`, `Meta.Validate`: magic, version, checksum),
/// plus the bounds mapwise adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetaFault {
    /// The file is too short to hold this meta page (`need` bytes from
    /// `offset`, the file has `size`).
    Truncated {
        /// Byte offset of the meta page.
        offset: u64,
        /// Bytes needed from `offset`.
        need: u64,
        /// File size in bytes.
        size: u64,
    },
    /// `magic` is not `0xED0CDAED`.
    Magic(u32),
    /// `version` is not 2.
    Version(u32),
    /// The stored FNV-1a 64 checksum differs from the one computed over the
    /// 56 meta bytes before it.
    Checksum {
        /// Value of the `checksum` field.
        stored: u64,
        /// FNV-1a 64 of page bytes `[16, 72)`.
        computed: u64,
    },
    /// `pageSize` is outside `[512, 16 MiB]`.
    PageSize(u32),
    /// The source could not be read.
    Read {
        /// OS error number when known, else 0.
        code: i32,
    },
}

impl fmt::Display for MetaFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MetaFault::Truncated { offset, need, size } => {
                write!(f, "truncated: needs {need} bytes at offset {offset}, file has {size}")
            }
            MetaFault::Magic(m) => write!(f, "field magic = {m:#010x}, expected 0xed0cdaed"),
            MetaFault::Version(v) => write!(f, "field version = {v}, expected 2"),
            MetaFault::Checksum { stored, computed } => {
                write!(f, "field checksum = {stored:016x}, computed {computed:016x}")
            }
            MetaFault::PageSize(p) => write!(f, "field pageSize = {p}, expected 512 to 16777216"),
            // Code 0: the source gave no OS error (a browser Blob, a
            // short read); "os error 0" would name a success.
            MetaFault::Read { code: 0 } => write!(f, "read failed"),
            MetaFault::Read { code } => write!(f, "read failed (os error {code})"),
        }
    }
}

/// What is wrong with one etcd record (a key or value of a bucket of an
/// etcd backend db, `crate::etcd`): the fault alone, without its place,
/// so a decoder of a lone value can return it and a caller that knows the
/// bbolt page and element attaches them ([`EtcdFault::at`] gives an
/// [`Error::Etcd`]). Offsets and lengths are in bytes from the start of
/// the key or value. The rules are etcd's (`docs/format/etcd.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EtcdFault {
    /// A `key` bucket key is neither 17 bytes (a revision: main, `_`, sub)
    /// nor 18 (a revision and the tombstone mark); etcd's `revBytesLen`
    /// and `markedRevBytesLen` (`server/storage/mvcc/revision.go`).
    KeyLength {
        /// The key's length in bytes.
        len: u32,
    },
    /// Byte 8 of a revision is not `_` (0x5f), the separator etcd's
    /// `RevToBytes` writes between main and sub.
    Separator {
        /// The byte found.
        found: u8,
    },
    /// Byte 17 of an 18-byte revision key is not the tombstone mark `t`
    /// (etcd's `markTombstone`).
    Mark {
        /// The byte found.
        found: u8,
    },
    /// A varint runs past 10 bytes, or its 10th byte sets bits above
    /// bit 63 (protobuf varints encode at most 64 bits).
    Varint {
        /// The protobuf message.
        message: Message,
        /// The field being read (`tag` for a field's key).
        field: &'static str,
        /// Where the varint starts.
        offset: u32,
    },
    /// The value ends inside a field: `need` bytes at `offset`, of a value
    /// of `have` bytes.
    Truncated {
        /// The protobuf message.
        message: Message,
        /// The field being read.
        field: &'static str,
        /// Where the missing bytes start.
        offset: u32,
        /// Bytes the field needs from `offset` (a length read from the
        /// value may be anything up to 2^64 - 1).
        need: u64,
        /// The value's length.
        have: u32,
    },
    /// A known field comes with a wire type its declared type cannot have
    /// (gogoproto's `Unmarshal`: "wrong wireType").
    WireType {
        /// The protobuf message.
        message: Message,
        /// The field.
        field: &'static str,
        /// The wire type found (0 varint, 1 fixed64, 2 bytes, 5 fixed32).
        found: u8,
        /// The wire type the field's type uses.
        expected: u8,
    },
    /// A field key no protobuf writer makes: field number 0 or above
    /// 2^29 - 1, wire type 6 or 7, or a group (wire types 3 and 4, which
    /// none of etcd's messages has).
    Tag {
        /// The protobuf message.
        message: Message,
        /// Where the key starts.
        offset: u32,
        /// The key's value (field number << 3 | wire type).
        tag: u64,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// A value whose length etcd fixes has another one (a `meta` integer
    /// is 8 bytes, a compaction revision 17, a lease id key 8).
    ValueLength {
        /// What the bytes are, e.g. `meta consistent_index`.
        what: &'static str,
        /// The length found.
        len: u32,
        /// The length etcd writes.
        expected: u32,
    },
    /// A record contradicts what its key says or what etcd always writes
    /// (e.g. a put's `mod_revision` differs from its revision's main).
    Mismatch {
        /// The field and the rule, e.g. `mvccpb.KeyValue.mod_revision`.
        what: &'static str,
        /// What the key (or the rule) says.
        expected: i64,
        /// What the value holds.
        found: i64,
    },
    /// `mvccpb.KeyValue.key` is empty: etcd refuses empty keys
    /// (`ErrEmptyKey`), so no revision ever holds one.
    EmptyKey,
    /// A sub-bucket where etcd stores only plain values (the `key`,
    /// `meta` and `lease` buckets hold no buckets).
    NestedBucket,
    /// A top-level bucket every etcd backend has is missing: without
    /// `key` and `meta` the file is not an etcd backend db.
    MissingBucket {
        /// The bucket's name.
        name: &'static str,
    },
}

/// The protobuf message an [`EtcdFault`] was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Message {
    /// `mvccpb.KeyValue`, the values of the `key` bucket.
    KeyValue,
    /// `leasepb.Lease`, the values of the `lease` bucket.
    Lease,
}

impl Message {
    /// The message's protobuf name, e.g. `mvccpb.KeyValue`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Message::KeyValue => "mvccpb.KeyValue",
            Message::Lease => "leasepb.Lease",
        }
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl EtcdFault {
    /// This fault at `at` (the page and element holding the record).
    #[must_use]
    pub fn at(self, at: At) -> Error {
        Error::Etcd { at, fault: self }
    }
}

impl fmt::Display for EtcdFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EtcdFault::KeyLength { len } => write!(
                f,
                "revision key is {len} bytes, expected 17 (main, '_', sub) or 18 (and the \
                 tombstone mark 't')"
            ),
            EtcdFault::Separator { found } => {
                write!(f, "revision key byte 8 = {found:#04x}, expected '_' (0x5f)")
            }
            EtcdFault::Mark { found } => write!(
                f,
                "revision key byte 17 = {found:#04x}, expected the tombstone mark 't' (0x74)"
            ),
            EtcdFault::Varint { message, field, offset } => write!(
                f,
                "{message} field {field}: the varint at byte {offset} is longer than 10 bytes \
                 or 64 bits"
            ),
            EtcdFault::Truncated { message, field, offset, need, have } => write!(
                f,
                "{message} field {field}: truncated: needs {need} bytes at byte {offset} of a \
                 {have}-byte value"
            ),
            EtcdFault::WireType { message, field, found, expected } => {
                write!(f, "{message} field {field}: wire type {found}, expected {expected}")
            }
            EtcdFault::Tag { message, offset, tag, why } => {
                write!(f, "{message}: field key {tag} at byte {offset}: {why}")
            }
            EtcdFault::ValueLength { what, len, expected } => {
                write!(f, "{what}: {len} bytes, expected {expected}")
            }
            EtcdFault::Mismatch { what, expected, found } => {
                write!(f, "{what} = {found}, expected {expected}")
            }
            EtcdFault::EmptyKey => {
                f.write_str("mvccpb.KeyValue field key is empty (etcd refuses empty keys)")
            }
            EtcdFault::NestedBucket => {
                f.write_str("a sub-bucket where etcd stores only plain values")
            }
            EtcdFault::MissingBucket { name } => {
                write!(f, "no bucket {name:?}: not an etcd backend db")
            }
        }
    }
}

/// A format fault or a failed read. Never produced by a panic: every
/// parser in this crate returns one of these instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A field points outside the file: bytes `[offset, offset + len)` are
    /// not inside a source of `size` bytes.
    OutOfBounds {
        /// The structure holding the field.
        at: At,
        /// The field whose value points outside.
        field: &'static str,
        /// First byte needed.
        offset: u64,
        /// Bytes needed.
        len: u64,
        /// Source length in bytes.
        size: u64,
    },
    /// A field points outside its page run (or inline page image): bytes
    /// `[offset, offset + len)` relative to the run's start are not inside
    /// its `size` bytes.
    OutsidePage {
        /// The structure holding the field.
        at: At,
        /// The field whose value points outside.
        field: &'static str,
        /// First byte needed, from the start of the run.
        offset: u64,
        /// Bytes needed.
        len: u64,
        /// Bytes in the run.
        size: u64,
    },
    /// The source failed to produce the bytes `[offset, offset + len)`.
    Read {
        /// First byte requested.
        offset: u64,
        /// Bytes requested.
        len: u64,
        /// OS error number when known, else 0.
        code: i32,
    },
    /// A field holds a value the format forbids.
    Invalid {
        /// The structure holding the field.
        at: At,
        /// Field name as the reference implementation spells it.
        field: &'static str,
        /// The value found.
        value: u64,
        /// What was expected, in words.
        expected: &'static str,
    },
    /// Neither bbolt meta page validates (bbolt's open fails the same way).
    NoValidMeta {
        /// Why meta page 0 was rejected.
        meta0: MetaFault,
        /// Why meta page 1 was rejected.
        meta1: MetaFault,
    },
    /// A page is referenced a second time: a cycle, or two parents sharing
    /// one child. `field` names the reference that led here.
    Reused {
        /// The structure holding the reference.
        at: At,
        /// The referencing field.
        field: &'static str,
        /// The page id referenced again.
        pgid: u64,
    },
    /// A tree is deeper than `limit` levels (cycle guard).
    TooDeep {
        /// The page reached at the limit.
        at: At,
        /// The depth limit.
        limit: u32,
    },
    /// Keys are not in strictly ascending byte order, or lie outside the
    /// bounds their parent branch sets.
    KeyOrder {
        /// The element whose key is out of place.
        at: At,
        /// Which rule is broken.
        why: &'static str,
    },
    /// A page below the high-water mark is neither reachable from the tree
    /// nor listed as free (bbolt's `Tx.Check`: "unreachable unfreed").
    Unreachable {
        /// The leaked page.
        pgid: u64,
    },
    /// A page reachable from the tree is also on the freelist
    /// (bbolt's `Tx.Check`: "reachable freed").
    ReachableFree {
        /// The page listed twice.
        pgid: u64,
    },
    /// A page id appears twice on the freelist ("already freed").
    DoubleFree {
        /// The duplicated page id.
        pgid: u64,
    },
    /// The bytes are a known format this crate does not read (e.g. a file
    /// written on a big-endian host, or a newer format version).
    Unsupported {
        /// Where the format was recognised.
        at: At,
        /// What is not supported.
        what: &'static str,
    },
    /// A meta page fails validation, so readers use the other one: the
    /// transaction it recorded (if it was the newer) is not visible.
    MetaFallback {
        /// The rejected meta page (0 or 1).
        meta: u8,
        /// Why it was rejected.
        fault: MetaFault,
        /// The meta page readers use instead.
        used: u8,
        /// The txid of the meta page in use.
        txid: u64,
    },
    /// A warning, not a fault: the file is an etcd snapshot, whose last
    /// 32 bytes, past the last page, are the SHA-256 of the db before them
    /// (etcd's `Maintenance.Snapshot` in `etcdserver/api/v3rpc/maintenance.go`
    /// appends it; restore expects it when `size % 512 == 32`, `hasHash` in
    /// `clientv3/snapshot/v3_snapshot.go`). bbolt never reads them.
    SnapshotHash {
        /// Where the 32 bytes start (bytes).
        offset: u64,
    },
    /// A lookup path names a bucket that does not exist.
    BucketNotFound,
    /// A lookup path names a key that holds a plain value, not a bucket
    /// (bbolt: `ErrIncompatibleValue`).
    IncompatibleValue,
    /// A record of an etcd backend db does not decode, or contradicts its
    /// key: [`EtcdFault`] says what, `at` where (the bbolt element).
    Etcd {
        /// The element holding the record (or the meta page, for a
        /// missing bucket).
        at: At,
        /// What is wrong.
        fault: EtcdFault,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OutOfBounds { at, field, offset, len, size } => write!(
                f,
                "{at}: field {field} points outside the file: bytes {offset}..{} of a {size}-byte file",
                offset.saturating_add(*len)
            ),
            Error::OutsidePage { at, field, offset, len, size } => write!(
                f,
                "{at}: field {field} points outside the page: bytes {offset}..{} of a {size}-byte page run",
                offset.saturating_add(*len)
            ),
            Error::Read { offset, len, code: 0 } => {
                write!(f, "read of {len} bytes at offset {offset} failed")
            }
            Error::Read { offset, len, code } => {
                write!(f, "read of {len} bytes at offset {offset} failed (os error {code})")
            }
            Error::Invalid { at, field, value, expected } => {
                write!(f, "{at}: field {field} = {value}, expected {expected}")
            }
            Error::NoValidMeta { meta0, meta1 } => {
                write!(f, "no valid meta page: meta page 0: {meta0}; meta page 1: {meta1}")
            }
            Error::Reused { at, field, pgid } => write!(
                f,
                "{at}: field {field} = {pgid}: page {pgid} is already in use (cycle or shared page)"
            ),
            Error::TooDeep { at, limit } => {
                write!(f, "{at}: tree deeper than {limit} levels (cycle?)")
            }
            Error::KeyOrder { at, why } => write!(f, "{at}: key order: {why}"),
            Error::Unreachable { pgid } => {
                write!(f, "page {pgid}: unreachable unfreed (neither in a tree nor free)")
            }
            Error::ReachableFree { pgid } => {
                write!(f, "page {pgid}: reachable freed (in a tree and on the freelist)")
            }
            Error::DoubleFree { pgid } => {
                write!(f, "page {pgid}: already freed (listed twice on the freelist)")
            }
            Error::Unsupported { at, what } => write!(f, "{at}: unsupported: {what}"),
            Error::MetaFallback { meta, fault, used, txid } => write!(
                f,
                "meta page {meta} is invalid ({fault}); readers use meta page {used} (txid {txid})"
            ),
            Error::SnapshotHash { offset } => write!(
                f,
                "the 32 bytes at offset {offset}, past the last page, are likely the SHA-256 \
                 `etcdctl snapshot save` appends: a snapshot, not a live db; bbolt ignores them"
            ),
            Error::BucketNotFound => f.write_str("bucket not found"),
            Error::IncompatibleValue => f.write_str("incompatible value (a key, not a bucket)"),
            Error::Etcd { at, fault } => write!(f, "{at}: etcd: {fault}"),
        }
    }
}

impl core::error::Error for Error {}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
