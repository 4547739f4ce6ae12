//! The bbolt (Go, `go.etcd.io/bbolt`) file format: reading and
//! serialising pages.
//!
//! See `docs/format/bolt.md` for the format in our words. Entry points:
//! [`BoltFile::open`] picks the page size and the current meta page;
//! [`Bucket`] and [`Cursor`] read keys and values with bbolt's semantics;
//! [`walk`] labels every page for the page map and finds every fault.

mod cursor;
mod detail;
mod digest;
mod dump;
mod file;
mod freelist;
mod meta;
mod page;
mod stats;
mod walk;
mod write;

pub use cursor::{
    ARM_ITEMS, ARM_LEAVES, Bucket, Cursor, CursorOptions, DEFAULT_PREFETCH, Item, Prefetch,
};
pub use detail::{Body, Bytes, Element, PREVIEW, PageDetail, page_detail};
pub use digest::{
    Bound, Child, Digest, NO_BOUND, Rare, SubBucket, context, key_hash, key_problems,
};
pub use dump::{DumpError, Pages, PagesRow, Record, dump, pages, visit, write_hex, write_record};
pub use file::{BoltFile, MAX_DEPTH, Snapshot};
pub use freelist::{CountEncoding, FreelistIds};
pub use meta::{
    MAGIC, MAX_PAGE_SIZE, META_END, MIN_PAGE_SIZE, Meta, NO_FREELIST, VERSION, fnv1a64,
};
pub use page::{
    BRANCH_PAGE, BUCKET_HEADER_SIZE, BUCKET_LEAF_FLAG, BranchElement, BucketHeader, ELEMENT_SIZE,
    FREELIST_PAGE, LEAF_PAGE, LeafElement, MAX_KEY_SIZE, META_PAGE, PAGE_HEADER_SIZE, Page,
    PageHeader, PageType, key_cmp,
};
pub use stats::BucketStats;
pub use walk::{
    BoltLayout, Fetched, FreelistInfo, FromFile, MAX_MISSING, TreePages, WalkOptions,
    freelist_info, walk, walk_with,
};
pub use write::{
    ElementData, WriteError, bucket_header, empty_inline_bucket, freelist_size, node_size,
    write_freelist, write_header, write_node,
};
