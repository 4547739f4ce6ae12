//! `inspector etcd FILE`: what uses an etcd backend db's space, and what
//! `etcdctl compaction` and `etcdctl defrag` would make of it.
//!
//! The db is read as the other read-only commands read a live bbolt file:
//! quietly (`O_DIRECT`, no lock, nothing written), following the writer
//! commit by commit on the rules of the settling reader
//! ([`mapwise_native::observe::settle`]) until every page run of one
//! snapshot has been read ([`follow::follow`]). Each run is digested as it
//! arrives: only what the report needs of its items (lengths, revisions,
//! user keys) is kept, never the pages.
//!
//! **Sizes as etcd reports them.** `dbSize` is bbolt's `Tx.Size()`, the
//! high-water mark (`meta.pgid`) times the page size, and `dbSizeInUse`
//! is `dbSize` less the free pages of the freelist (etcd 3.4
//! `mvcc/backend/backend.go`, `backend.begin`: `size - FreePageN *
//! PageSize`); the quota (`--quota-backend-bytes`) applies to `dbSize`.
//!
//! **Forecasts.** etcd's defrag (3.4 `mvcc/backend/backend.go`,
//! `backend.defrag` and `defragdb`) opens a new bbolt file with the
//! options etcd opens its db with (`NoFreelistSync` on Linux), then, for
//! each top-level bucket in name order, creates it with `FillPercent`
//! 0.9 and puts every key in order,
//! committing every `defragLimit` (10000) keys counted across buckets.
//! [`forecast`] replays exactly that, on the items' key and value lengths,
//! through the engine's own writer rules ([`Planner`]: its node splits,
//! spills and first-fit page allocation, nothing written) and takes the
//! high-water mark. The compaction forecast first drops what `etcdctl compaction
//! REV` deletes (per key, the newest revision at or below REV is kept unless
//! it is a tombstone; every later revision stays) and records REV in `meta`
//! as etcd does (docs/format/etcd.md, §7).

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt as _};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::mpsc::{self, Receiver};

use anyhow::{Result, bail};
use mapwise_core::PageSource;
use std::borrow::Cow;

use mapwise_core::bolt::{BoltFile, BucketHeader, Page, PageType};
use mapwise_core::error::At;
use mapwise_core::etcd::{
    EtcdFault, FINISHED_COMPACT_REV, KEY, LEASE, Lease, META, Meta, MetaRecord, Record, Revision,
    RevisionKey, SCHEDULED_COMPACT_REV,
};
use mapwise_native::engine::bolt::plan::Planner;
use mapwise_native::os::residency::{self, Residency};
use mapwise_view::fmt::human_size;
use serde::Serialize;

use crate::cli::{FileProblem, Output};
use crate::follow;
use crate::stats::percent;

/// etcd's default `--quota-backend-bytes` (2 GiB; 3.4
/// `etcdserver/quota.go`, `DefaultQuotaBytes`).
pub const DEFAULT_QUOTA: u64 = 2 << 30;

/// Keys per defrag transaction (3.4 `mvcc/backend/backend.go`,
/// `defragLimit`).
pub const DEFRAG_LIMIT: usize = 10_000;

/// The fill percent etcd's defrag sets on every bucket it copies
/// (`defragdb`: `tmpb.FillPercent = 0.9`).
pub const DEFRAG_FILL_PERCENT: f64 = 0.9;

/// Prefixes the text report lists (the most bytes first; JSON has all).
pub const PREFIX_ROWS: usize = 30;

/// Keys listed under "largest keys".
pub const LARGEST: usize = 10;

/// What `inspector etcd` is asked.
#[derive(Debug, Clone)]
pub struct EtcdArgs {
    /// Key prefixes are grouped by their first `depth` `/`-separated
    /// segments (≥ 1).
    pub depth: usize,
    /// The compaction revision of the forecast; `None`: the newest.
    pub compact_at: Option<i64>,
    /// The quota the headroom is measured against, bytes; 0 stands for
    /// etcd's default, as `--quota-backend-bytes=0` does (3.4
    /// `etcdserver/quota.go`, `NewBackendQuota`).
    pub quota: u64,
}

impl EtcdArgs {
    /// The quota in bytes: [`EtcdArgs::quota`], or [`DEFAULT_QUOTA`] for 0.
    #[must_use]
    pub fn quota_bytes(&self) -> u64 {
        if self.quota == 0 { DEFAULT_QUOTA } else { self.quota }
    }
}

impl Default for EtcdArgs {
    fn default() -> Self {
        EtcdArgs { depth: 2, compact_at: None, quota: DEFAULT_QUOTA }
    }
}

/// One key prefix's share of the `key` bucket. Bytes are those of the
/// bbolt items: the revision key (17 or 18 bytes) plus the marshalled
/// `mvccpb.KeyValue` (page headers and element headers not counted).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct PrefixReport {
    /// The key's first `depth` `/` segments (`/registry/pods`); a key with
    /// fewer segments is its own prefix.
    pub prefix: String,
    /// Keys whose newest revision is a put (`etcdctl get --prefix`
    /// lists them).
    pub live_keys: u64,
    /// Revisions stored (puts and tombstones).
    pub revisions: u64,
    /// Bytes of the live keys' newest revisions.
    pub live_bytes: u64,
    /// Bytes of every other revision (older puts, tombstones): what
    /// compaction may free.
    pub history_bytes: u64,
    /// Bytes of these revisions on pages in the page cache (each item
    /// counted by the share of its page run's OS pages resident); `null`
    /// when the kernel's answer cannot be trusted.
    pub resident_bytes: Option<u64>,
    /// The leaf pages (first page of each run) holding these revisions,
    /// ascending: what the TUI marks on the map. Not in the JSON.
    #[serde(skip)]
    pub pages: Vec<u64>,
}

/// Prefixes as [`prefixes`] computes them, or why it could not.
pub type Prefixes = Result<Vec<PrefixReport>, String>;

/// One user key and what its revisions take.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KeyReport {
    /// The key (lossy UTF-8).
    pub key: String,
    /// Revisions stored.
    pub revisions: u64,
    /// Bytes of all its revisions.
    pub bytes: u64,
    /// Whether its newest revision is a put.
    pub live: bool,
}

/// `inspector etcd --json`. Field names are stable; fields may be added,
/// never renamed. Sizes in bytes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EtcdReport {
    /// The path as given.
    pub file: String,
    /// bbolt page size.
    pub page_size: u64,
    /// `dbSize`: high-water mark × page size.
    pub size_bytes: u64,
    /// `dbSizeInUse`: `dbSize` less the free pages.
    pub in_use_bytes: u64,
    /// Pages below the high-water mark the tree does not reach × page
    /// size (what bbolt counts free when it opens the file).
    pub free_bytes: u64,
    /// `100 × free_bytes / size_bytes`.
    pub free_percent: f64,
    /// Runs of consecutive free pages.
    pub free_runs: u64,
    /// The longest run, bytes.
    pub largest_free_run_bytes: u64,
    /// `100 ×` bytes used in leaf pages / bytes of leaf pages (bbolt's
    /// `LeafInuse / LeafAlloc`, all buckets).
    pub leaf_fill_percent: f64,
    /// `finishedCompactRev`: the last compaction done.
    pub compact_rev: Option<i64>,
    /// `scheduledCompactRev`: the last compaction asked for.
    pub scheduled_compact_rev: Option<i64>,
    /// The oldest revision stored (smallest main).
    pub oldest_rev: Option<i64>,
    /// The store's revision: the newest main stored, or a compaction
    /// revision above it (etcd's `store.restore`).
    pub newest_rev: i64,
    /// Revision keys stored (puts and tombstones).
    pub revisions: u64,
    /// Of them, tombstones.
    pub tombstones: u64,
    /// Keys whose newest revision is a put.
    pub live_keys: u64,
    /// Leases in the `lease` bucket.
    pub leases: u64,
    /// Per prefix, most bytes first.
    pub prefixes: Vec<PrefixReport>,
    /// The keys taking the most bytes, most first.
    pub largest_keys: Vec<KeyReport>,
    /// Forecast `dbSize` after `etcdctl defrag` as things stand.
    pub after_defrag_bytes: u64,
    /// The revision of the compaction forecast.
    pub forecast_compact_rev: i64,
    /// Revisions left after that compaction.
    pub revisions_after_compact: u64,
    /// Forecast `dbSize` after `etcdctl compaction forecast_compact_rev`
    /// and `etcdctl defrag`.
    pub after_compact_defrag_bytes: u64,
    /// The quota (`--quota-backend-bytes`).
    pub quota_bytes: u64,
    /// `quota_bytes - size_bytes` (negative: over quota, NOSPACE).
    pub quota_headroom_bytes: i64,
    /// The same after defrag.
    pub quota_headroom_after_defrag_bytes: i64,
    /// The same after compaction and defrag.
    pub quota_headroom_after_compact_defrag_bytes: i64,
}

/// One bbolt item of a top-level bucket other than `key` (whose items
/// are [`Rev`]s), copied out of the snapshot.
#[derive(Debug, Clone)]
struct Item {
    key: Vec<u8>,
    /// Its value's length (what a forecast needs of it).
    value_len: usize,
}

/// A top-level bucket: name, sequence and items in key order.
#[derive(Debug, Clone)]
struct TopBucket {
    name: Vec<u8>,
    items: Vec<Item>,
}

/// A `key` bucket record: revision, user key index, its value's length
/// and the leaf page holding it. The `key` bucket's items are these (its
/// [`TopBucket::items`] is empty).
#[derive(Debug, Clone, Copy)]
struct Rev {
    key: RevisionKey,
    /// Index into `Snapshot::user_keys`.
    user: u32,
    value_len: u32,
    pgid: u64,
}

impl Rev {
    /// The bbolt item's key and value lengths (the key: 17 or 18 bytes).
    fn lens(&self) -> (usize, usize) {
        (self.key.to_bytes().len(), self.value_len as usize)
    }

    /// The bbolt item's bytes: its key's and its value's.
    fn bytes(&self) -> u64 {
        let (k, v) = self.lens();
        (k + v) as u64
    }
}

/// What one settled read copies out of the db.
#[derive(Debug)]
struct Snapshot {
    page_size: u64,
    hwm: u64,
    /// Runs of free pages: first page id and length in pages.
    free_runs: Vec<(u64, u64)>,
    leaf_inuse: u64,
    leaf_alloc: u64,
    buckets: Vec<TopBucket>,
    /// Index of the `key` bucket in `buckets`.
    key_bucket: usize,
    revs: Vec<Rev>,
    user_keys: Vec<Arc<[u8]>>,
    scheduled: Option<i64>,
    finished: Option<i64>,
    leases: u64,
    /// Page id → overflow of the leaf runs items live on.
    runs: HashMap<u64, u32>,
}

fn problem(msg: String) -> anyhow::Error {
    anyhow::Error::new(FileProblem(msg))
}

/// What the report keeps of one page run (never its bytes).
#[derive(Debug)]
enum Digest {
    /// A branch page, or the freelist.
    Inner,
    /// A leaf page: its bytes in use (as bbolt's `LeafInuse` counts
    /// them) and its items.
    Leaf { used: u64, items: LeafItems },
    /// A run the report cannot read, and why.
    Bad(String),
}

/// The elements of a leaf page (or of an inline bucket), as the report
/// keeps them: a `key` bucket's revisions in the [`Digester`]'s array, the
/// rest one by one.
#[derive(Debug, Default)]
struct LeafItems {
    /// Elements of other buckets.
    entries: Vec<Entry>,
    /// A `key` bucket leaf's revisions: a range of [`Digester::revs`].
    revs: std::ops::Range<usize>,
}

/// A revision of the `key` bucket, as digested: its key, its user key
/// (an index into [`Digester::user_keys`]) and its value's length.
#[derive(Debug, Clone, Copy)]
struct DigestedRev {
    key: RevisionKey,
    user: u32,
    value_len: u32,
}

/// One leaf element of a bucket other than `key`, as the report keeps it.
#[derive(Debug)]
enum Entry {
    /// An item of another bucket: its key, its value's length, and the
    /// value itself in `meta` (the report decodes it).
    Item { key: Box<[u8]>, value_len: usize, value: Option<Box<[u8]>> },
    /// A top-level bucket (an element of the root bucket): its name, and
    /// its root page or, inline, its items.
    Bucket { name: Box<[u8]>, root: u64, inline: LeafItems },
}

/// Digests page runs as they are read ([`follow::follow`]); the user
/// keys of the `key` bucket's revisions are interned here.
#[derive(Default)]
struct Digester {
    index: HashMap<Arc<[u8]>, u32>,
    user_keys: Vec<Arc<[u8]>>,
    /// Every revision digested, leaf after leaf (those of runs digested
    /// again, in a later round of the follower, twice).
    revs: Vec<DigestedRev>,
}

impl Digester {
    fn digest(&mut self, pgid: u64, owner: follow::Owner<'_>, bytes: &[u8]) -> Digest {
        let follow::Owner::Bucket(bucket) = owner else { return Digest::Inner };
        let page = match Page::new(At::Page(pgid), pgid, Cow::Borrowed(bytes)) {
            Ok(p) => p,
            Err(e) => return Digest::Bad(e.to_string()),
        };
        if let Err(e) = page.check_tree() {
            return Digest::Bad(e.to_string());
        }
        if page.header.page_type() != PageType::Leaf {
            return Digest::Inner;
        }
        match self.items(&page, bucket) {
            Ok(items) => Digest::Leaf { used: page.used_bytes(), items },
            Err(e) => Digest::Bad(e),
        }
    }

    /// The elements of the leaf `page` of the top-level bucket `bucket`
    /// (the root bucket's: empty).
    fn items(&mut self, page: &Page<'_>, bucket: &[u8]) -> Result<LeafItems, String> {
        let mut out = Vec::new();
        let first = self.revs.len();
        let b = page.bytes();
        for i in 0..page.count() {
            let e = page.leaf(i).map_err(|e| e.to_string())?;
            let at = page.element_at_loc(i);
            let (key, value) = (&b[e.key.clone()], &b[e.value.clone()]);
            let name = || String::from_utf8_lossy(bucket).into_owned();
            if bucket.is_empty() {
                if !e.is_bucket() {
                    let k = String::from_utf8_lossy(key);
                    return Err(format!("a key in the root bucket: {k:?}"));
                }
                let h = BucketHeader::parse(value, at).map_err(|e| e.to_string())?;
                let inline = if h.root == 0 {
                    let p = page.inline_page(i, &e).map_err(|e| e.to_string())?;
                    self.items(&p, key)?
                } else {
                    LeafItems::default()
                };
                out.push(Entry::Bucket { name: key.into(), root: h.root, inline });
            } else if e.is_bucket() {
                return Err(format!(
                    "bucket {} holds a sub-bucket, which etcd never writes",
                    name()
                ));
            } else if bucket == KEY.as_bytes() {
                let r = Record::decode(key, value, at).map_err(|e| e.to_string())?;
                let user = match self.index.get(r.kv.key) {
                    Some(&u) => u,
                    None => {
                        let k: Arc<[u8]> = Arc::from(r.kv.key);
                        let u = u32::try_from(self.user_keys.len()).map_err(|e| e.to_string())?;
                        self.index.insert(Arc::clone(&k), u);
                        self.user_keys.push(k);
                        u
                    }
                };
                let value_len = u32::try_from(r.value_len).map_err(|e| e.to_string())?;
                self.revs.push(DigestedRev { key: r.key, user, value_len });
            } else {
                let mut kept = None;
                if bucket == META.as_bytes() {
                    MetaRecord::decode(key, value).map_err(|f| f.at(at).to_string())?;
                    kept = Some(value.into());
                } else if bucket == LEASE.as_bytes() {
                    Lease::decode_record(key, value).map_err(|f| f.at(at).to_string())?;
                }
                out.push(Entry::Item { key: key.into(), value_len: value.len(), value: kept });
            }
        }
        // The root bucket's leaves hold no revisions of their own (an
        // inline `key` bucket's are its entry's).
        let revs = if bucket == KEY.as_bytes() { first..self.revs.len() } else { 0..0 };
        Ok(LeafItems { entries: out, revs })
    }
}

/// Whether a run's digest is a leaf's (its children are not entered).
fn is_leaf(d: &Digest) -> bool {
    !matches!(d, Digest::Inner)
}

/// The report's snapshot, from every run of one snapshot digested.
fn assemble(tree: &follow::Tree<Digest>, dig: Digester) -> Result<Snapshot, String> {
    if let Some(first) = tree.problems.first() {
        return Err(format!(
            "the bbolt structure has {} problem(s), the first: {first}; `inspector check` lists \
             them",
            tree.problems.len()
        ));
    }
    let snap = &tree.snapshot;
    let page_size = u64::from(snap.page_size);
    let hwm = snap.meta.hwm;
    // The pages' accounting on a thread of its own, beside the items'.
    std::thread::scope(|scope| {
        let pages = scope.spawn(|| pages_of(tree, hwm, page_size));
        let items = items_of(tree, &dig);
        let pages = pages.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        let Items { buckets, key_bucket, revs, user_keys, meta, leases } = items?;
        Ok(Snapshot {
            page_size,
            hwm,
            free_runs: pages.free_runs,
            leaf_inuse: pages.leaf_inuse,
            leaf_alloc: pages.leaf_alloc,
            buckets,
            key_bucket,
            revs,
            user_keys,
            scheduled: meta.scheduled_compact,
            finished: meta.finished_compact,
            leases,
            runs: pages.runs,
        })
    })
}

/// What [`assemble`] makes of each bucket's items.
struct Items {
    buckets: Vec<TopBucket>,
    /// Index of the `key` bucket in `buckets`.
    key_bucket: usize,
    /// The `key` bucket's revisions, in key order.
    revs: Vec<Rev>,
    /// Their user keys, in order of first appearance.
    user_keys: Vec<Arc<[u8]>>,
    /// The `meta` bucket's records.
    meta: Meta,
    leases: u64,
}

/// The items of every top-level bucket of `tree`, in key order.
fn items_of(tree: &follow::Tree<Digest>, dig: &Digester) -> Result<Items, String> {
    let snap = &tree.snapshot;
    // A run's leaves in key order, their entries each with its page.
    let leaves = |root: u64| -> Result<Vec<(u64, &LeafItems)>, String> {
        let mut out = Vec::new();
        for p in tree.in_order(root, is_leaf) {
            match tree.node(p).map(|n| &n.digest) {
                Some(Digest::Leaf { items, .. }) => out.push((p, items)),
                Some(Digest::Bad(e)) => return Err(e.clone()),
                _ => {}
            }
        }
        Ok(out)
    };
    // Users in order of first appearance (keys of runs a commit made
    // the follower drop are left out).
    let mut users: Vec<usize> = vec![usize::MAX; dig.user_keys.len()];
    let stored = tree
        .nodes()
        .map(|(_, n)| match &n.digest {
            Digest::Leaf { items, .. } => items.revs.len(),
            _ => 0,
        })
        .sum();
    let mut user_keys: Vec<Arc<[u8]>> = Vec::new();
    let mut buckets = Vec::new();
    let mut revs = Vec::with_capacity(stored);
    let mut meta = Meta::default();
    let mut leases = 0u64;
    let roots = leaves(snap.meta.root)?;
    let tops = roots.iter().flat_map(|&(host, items)| items.entries.iter().map(move |e| (host, e)));
    let at = At::Meta(snap.current);
    for name in [KEY, META] {
        if !tops
            .clone()
            .any(|(_, e)| matches!(e, Entry::Bucket { name: n, .. } if **n == *name.as_bytes()))
        {
            return Err(format!("not an etcd db: {}", EtcdFault::MissingBucket { name }.at(at)));
        }
    }
    for (host, e) in tops {
        let Entry::Bucket { name, root, inline } = e else { continue };
        let leaves: Vec<(u64, &LeafItems)> =
            if *root == 0 { vec![(host, inline)] } else { leaves(*root)? };
        let mut items = Vec::new();
        for (pgid, leaf) in leaves {
            for r in dig.revs.get(leaf.revs.clone()).unwrap_or_default() {
                let u = &mut users[r.user as usize];
                if *u == usize::MAX {
                    *u = user_keys.len();
                    user_keys.push(Arc::clone(&dig.user_keys[r.user as usize]));
                }
                let user = u32::try_from(*u).map_err(|e| e.to_string())?;
                revs.push(Rev { key: r.key, user, value_len: r.value_len, pgid });
            }
            for e in &leaf.entries {
                match e {
                    Entry::Item { key, value_len, value } => {
                        if let Some(v) = value
                            && let Ok(r) = MetaRecord::decode(key, v)
                        {
                            meta.add(r);
                        }
                        leases += u64::from(&name[..] == LEASE.as_bytes());
                        items.push(Item { key: key.to_vec(), value_len: *value_len });
                    }
                    Entry::Bucket { .. } => {}
                }
            }
        }
        buckets.push(TopBucket { name: name.to_vec(), items });
    }
    let key_bucket =
        buckets.iter().position(|b| b.name == KEY.as_bytes()).ok_or("no key bucket")?;
    Ok(Items { buckets, key_bucket, revs, user_keys, meta, leases })
}

/// The pages of a snapshot as [`assemble`] counts them.
struct Pages {
    free_runs: Vec<(u64, u64)>,
    leaf_inuse: u64,
    leaf_alloc: u64,
    runs: HashMap<u64, u32>,
}

/// Free runs, leaf fill and runs longer than a page of `tree`, whose
/// high-water mark is `hwm`.
fn pages_of(tree: &follow::Tree<Digest>, hwm: u64, page_size: u64) -> Pages {
    // Free pages as bbolt counts them when it opens the file (etcd on
    // Linux runs with `NoFreelistSync`, 3.4 `mvcc/backend/config_linux.go`,
    // so the freelist is rebuilt from what the tree reaches): every page
    // below the high-water mark that the current tree does not reach.
    let mut reached: Vec<(u64, u64)> =
        tree.nodes().map(|(p, n)| (p, u64::from(n.overflow) + 1)).collect();
    reached.sort_unstable();
    let mut free_runs: Vec<(u64, u64)> = Vec::new();
    let mut next = 2;
    for &(p, n) in reached.iter().chain([&(hwm, 0)]) {
        if p > next {
            free_runs.push((next, p.min(hwm) - next));
        }
        next = next.max(p + n);
    }
    let (mut leaf_inuse, mut leaf_alloc) = (0, 0);
    let mut runs: HashMap<u64, u32> = HashMap::new();
    for (p, n) in tree.nodes() {
        if let Digest::Leaf { used, .. } = n.digest {
            leaf_inuse += used;
            leaf_alloc += (u64::from(n.overflow) + 1) * page_size;
        }
        if n.overflow > 0 {
            runs.insert(p, n.overflow);
        }
    }
    Pages { free_runs, leaf_inuse, leaf_alloc, runs }
}

/// Copy everything the report needs out of `file` (one snapshot, that
/// holds still).
fn read_snapshot<S: PageSource + ?Sized>(file: &BoltFile<'_, S>) -> Result<Snapshot, String> {
    let mut dig = Digester::default();
    let tree = follow::tree_of(file, |p, o, b| dig.digest(p, o, b));
    assemble(&tree, dig)
}

/// The `dbSize` etcd's defrag would leave, in bytes: `buckets` (in name
/// order), each its items' key and value lengths in key order, put as
/// `defragdb` puts them (fill percent [`DEFRAG_FILL_PERCENT`], a commit
/// every [`DEFRAG_LIMIT`] puts) into a new file of the OS's page size, as
/// bbolt's default options make it; worked out by the writer's
/// [`Planner`], which writes nothing.
pub fn forecast<I>(buckets: impl IntoIterator<Item = (usize, I)>) -> u64
where
    I: IntoIterator<Item = (usize, usize)>,
{
    let ps = residency::os_page_size();
    let mut plan =
        Planner::new(usize::try_from(ps).unwrap_or(4096), DEFRAG_FILL_PERCENT, DEFRAG_LIMIT);
    for (name_len, items) in buckets {
        plan.bucket(name_len);
        for (k, v) in items {
            plan.put(k, v);
        }
    }
    plan.finish().saturating_mul(ps)
}

/// The key's group: its first `depth` `/` segments.
fn prefix_of(key: &[u8], depth: usize) -> &[u8] {
    let start = usize::from(key.first() == Some(&b'/'));
    let mut seen = 0;
    for (i, &b) in key.iter().enumerate().skip(start) {
        if b == b'/' {
            seen += 1;
            if seen == depth {
                return &key[..i];
            }
        }
    }
    key
}

/// The key and value lengths of every item of bucket `bi` of `snap`, in
/// key order.
fn all(snap: &Snapshot, bi: usize) -> Box<dyn Iterator<Item = (usize, usize)> + '_> {
    if bi == snap.key_bucket {
        Box::new(snap.revs.iter().map(Rev::lens))
    } else {
        Box::new(snap.buckets[bi].items.iter().map(|i| (i.key.len(), i.value_len)))
    }
}

fn headroom(quota: u64, size: u64) -> i64 {
    i64::try_from(quota).unwrap_or(i64::MAX).saturating_sub(i64::try_from(size).unwrap_or(i64::MAX))
}

/// Resident share of each page run: OS pages resident / OS pages.
fn resident_share(res: &Residency, ps: u64, pgid: u64, overflow: u32) -> f64 {
    let len = ps.saturating_mul(u64::from(overflow) + 1);
    let os = res.page_size.max(1);
    let pages = len.div_ceil(os).max(1);
    res.resident_in(pgid.saturating_mul(ps), len) as f64 / pages as f64
}

/// `inspector etcd FILE`: the report, as text or JSON.
///
/// # Errors
/// A [`FileProblem`] when the file is not a bbolt file or not an etcd
/// db; another error when it cannot be read, or a writer committed during
/// every attempt to read it.
pub fn etcd(path: &Path, as_json: bool, args: &EtcdArgs) -> Result<Output> {
    if args.depth == 0 {
        bail!("--depth must be at least 1");
    }
    let snap = read_settled(path)?;
    let res = std::fs::File::open(path).ok().and_then(|f| residency::sample(&f).ok());
    let rep = report(path, &snap, res.as_ref(), args)?;
    let text = if as_json {
        let mut s = serde_json::to_string_pretty(&rep)?;
        s.push('\n');
        s
    } else {
        text(&rep, args)
    };
    Ok(Output { text, code: 0, layout_json: None })
}

/// [`etcd`]'s report of the db at `path`, its prefixes by their first
/// segment and no residency: what `inspector export` serves.
///
/// # Errors
/// As [`etcd`]'s.
pub fn report_of(path: &Path) -> Result<EtcdReport> {
    let snap = read_settled(path)?;
    report(path, &snap, None, &EtcdArgs { depth: 1, ..EtcdArgs::default() })
}

/// The key prefixes of the etcd db at `path` (`depth` `/` segments, most
/// bytes first), read as [`etcd`] reads it, with their residency now and
/// their pages: what the TUI's prefix pane shows. No forecasts.
///
/// # Errors
/// As [`etcd`]'s, as text.
pub fn prefixes(path: &Path, depth: usize) -> Prefixes {
    let snap = read_settled(path).map_err(|e| format!("{e:#}"))?;
    let res = std::fs::File::open(path).ok().and_then(|f| residency::sample(&f).ok());
    Ok(tally(&snap, res.as_ref(), depth.max(1)).prefixes)
}

/// [`prefixes`] of an open file (one snapshot of it) and a residency
/// sample of it.
///
/// # Errors
/// When `file` is not an etcd db, or a fault met reading it, as text.
pub fn prefixes_of<S: PageSource + ?Sized>(
    file: &BoltFile<'_, S>,
    res: Option<&Residency>,
    depth: usize,
) -> Prefixes {
    Ok(tally(&read_snapshot(file)?, res, depth.max(1)).prefixes)
}

/// [`prefixes`] on a thread of its own; the answer comes on the channel
/// (nothing, should the thread fail to start).
#[must_use]
pub fn spawn_prefixes(path: std::path::PathBuf, depth: usize) -> Receiver<Prefixes> {
    let (tx, rx) = mpsc::channel();
    let _ = std::thread::Builder::new().name("inspector-etcd".into()).spawn(move || {
        // The view may have gone meanwhile; nobody to tell.
        let _ = tx.send(prefixes(&path, depth));
    });
    rx
}

fn read_settled(path: &Path) -> Result<Snapshot> {
    let mut dig = Digester::default();
    let tree = follow::follow(path, follow::TRY_FOR, |p, o, b| dig.digest(p, o, b)).map_err(
        |e| match e {
            follow::Error::NotBolt(..) => problem(e.to_string()),
            e => anyhow::Error::new(e),
        },
    )?;
    assemble(&tree, dig).map_err(|e| problem(format!("{}: {e}", path.display())))
}

/// Per prefix and per key, from one snapshot.
struct Tally {
    prefixes: Vec<PrefixReport>,
    live_keys: u64,
    largest: Vec<KeyReport>,
}

/// Count `snap`'s revisions by prefix of `depth` segments and by key.
fn tally(snap: &Snapshot, res: Option<&Residency>, depth: usize) -> Tally {
    let ps = snap.page_size;
    let trusted = res.filter(|r| r.trust.is_known());
    // A leaf's revisions come one after another: its share is worked out
    // once, when the first of them comes.
    let mut last: Option<(u64, f64)> = None;
    let mut resident = |pgid: u64| -> f64 {
        let Some(r) = trusted else { return 0.0 };
        match last {
            Some((p, share)) if p == pgid => share,
            _ => {
                let share = resident_share(r, ps, pgid, snap.runs.get(&pgid).copied().unwrap_or(0));
                last = Some((pgid, share));
                share
            }
        }
    };
    // Each user key's prefix, once: an index into `names`.
    let users = snap.user_keys.len();
    let mut ids: HashMap<&[u8], usize> = HashMap::new();
    let mut names: Vec<&[u8]> = Vec::new();
    let prefix: Vec<usize> = snap
        .user_keys
        .iter()
        .map(|k| {
            let p = prefix_of(k, depth);
            *ids.entry(p).or_insert_with(|| {
                names.push(p);
                names.len() - 1
            })
        })
        .collect();
    // Per user key: newest revision, count, bytes; per prefix, its pages.
    let mut newest: Vec<usize> = vec![0; users];
    let mut count = vec![0u64; users];
    let mut bytes = vec![0u64; users];
    let mut res_bytes = vec![0f64; users];
    let mut pages: Vec<Vec<u64>> = vec![Vec::new(); names.len()];
    for (i, r) in snap.revs.iter().enumerate() {
        let (pgid, u) = (r.pgid, r.user as usize);
        let at = &mut pages[prefix[u]];
        if at.last() != Some(&pgid) {
            at.push(pgid);
        }
        newest[u] = i;
        count[u] += 1;
        bytes[u] += r.bytes();
        if trusted.is_some() {
            res_bytes[u] += r.bytes() as f64 * resident(pgid);
        }
    }
    let mut reports: Vec<PrefixReport> = vec![PrefixReport::default(); names.len()];
    let mut res_prefix = vec![0f64; names.len()];
    let mut live_keys = 0;
    for u in 0..users {
        let e = &mut reports[prefix[u]];
        let last = &snap.revs[newest[u]];
        let live = !last.key.tombstone;
        let lb = if live { last.bytes() } else { 0 };
        e.live_keys += u64::from(live);
        live_keys += u64::from(live);
        e.revisions += count[u];
        e.live_bytes += lb;
        e.history_bytes += bytes[u] - lb;
        res_prefix[prefix[u]] += res_bytes[u];
    }
    let mut prefixes: Vec<PrefixReport> = reports
        .into_iter()
        .zip(pages)
        .zip(&res_prefix)
        .enumerate()
        .map(|(i, ((mut r, mut p), &rb))| {
            r.prefix = String::from_utf8_lossy(names[i]).into_owned();
            // Rounded down; at most the prefix's bytes, far below 2^53.
            #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let rb = rb as u64;
            r.resident_bytes = trusted.map(|_| rb);
            p.sort_unstable();
            p.dedup();
            r.pages = p;
            r
        })
        .collect();
    prefixes.sort_by(|a, b| {
        (b.live_bytes + b.history_bytes)
            .cmp(&(a.live_bytes + a.history_bytes))
            .then_with(|| a.prefix.cmp(&b.prefix))
    });
    // The largest keys: the first LARGEST of every user key in that
    // order, chosen before any is named.
    let order = |a: &usize, b: &usize| {
        bytes[*b].cmp(&bytes[*a]).then_with(|| snap.user_keys[*a].cmp(&snap.user_keys[*b]))
    };
    let mut top: Vec<usize> = (0..users).collect();
    if top.len() > LARGEST {
        top.select_nth_unstable_by(LARGEST, order);
        top.truncate(LARGEST);
    }
    top.sort_by(order);
    let largest = top
        .into_iter()
        .map(|u| KeyReport {
            key: String::from_utf8_lossy(&snap.user_keys[u]).into_owned(),
            revisions: count[u],
            bytes: bytes[u],
            live: !snap.revs[newest[u]].key.tombstone,
        })
        .collect();

    Tally { prefixes, live_keys, largest }
}

/// Which revisions `etcdctl compaction compact_at` keeps (per revision of
/// `snap.revs`), and the `dbSize` a defrag would leave after it.
fn compaction_forecast(snap: &Snapshot, users: usize, compact_at: i64) -> (Vec<bool>, u64) {
    let pairs: Vec<_> = snap.revs.iter().map(|r| (r.user as usize, r.key)).collect();
    let keep = mapwise_core::etcd::kept_by_compaction(&pairs, users, compact_at);
    // `store.Compact` writes scheduledCompactRev and `scheduleCompaction`
    // finishedCompactRev, both as the revision's 17 bytes: the meta
    // bucket after it holds both.
    let rev_len = RevisionKey { revision: Revision { main: compact_at, sub: 0 }, tombstone: false }
        .to_bytes()
        .len();
    let after = forecast(snap.buckets.iter().enumerate().map(|(bi, b)| {
        let items: Vec<(usize, usize)> = if bi == snap.key_bucket {
            snap.revs.iter().zip(&keep).filter(|(_, k)| **k).map(|(r, _)| r.lens()).collect()
        } else if b.name == META.as_bytes() {
            let mut m: Vec<(&[u8], usize)> = b
                .items
                .iter()
                .filter(|i| i.key != SCHEDULED_COMPACT_REV && i.key != FINISHED_COMPACT_REV)
                .map(|i| (&i.key[..], i.value_len))
                .collect();
            m.extend([(SCHEDULED_COMPACT_REV, rev_len), (FINISHED_COMPACT_REV, rev_len)]);
            m.sort_unstable();
            m.into_iter().map(|(k, v)| (k.len(), v)).collect()
        } else {
            all(snap, bi).collect()
        };
        (b.name.len(), items)
    }));
    (keep, after)
}

fn report(
    path: &Path,
    snap: &Snapshot,
    res: Option<&Residency>,
    args: &EtcdArgs,
) -> Result<EtcdReport> {
    let ps = snap.page_size;
    let size = snap.hwm.saturating_mul(ps);
    let free = snap.free_runs.iter().map(|r| r.1).sum::<u64>() * ps;
    let runs = snap.free_runs.len() as u64;
    let longest = snap.free_runs.iter().map(|r| r.1).max().unwrap_or(0);
    let users = snap.user_keys.len();
    let max_main = snap.revs.iter().map(|r| r.key.revision.main).max();
    let newest_rev =
        max_main.into_iter().chain(snap.scheduled).chain(snap.finished).max().unwrap_or(0);
    let compact_at = args.compact_at.unwrap_or(newest_rev);
    if compact_at > newest_rev {
        bail!("--compact-at {compact_at} is past the newest revision {newest_rev}");
    }
    if let Some(done) = snap.finished
        && compact_at < done
    {
        bail!("--compact-at {compact_at} is below the revision already compacted ({done})");
    }

    // The defrag forecast and the tally on threads of their own, beside
    // the compaction forecast.
    let buckets = &snap.buckets;
    let (after_defrag, keep, after_compact, Tally { prefixes, live_keys, largest }) =
        std::thread::scope(|scope| {
            let defrag = scope.spawn(|| {
                forecast(buckets.iter().enumerate().map(|(bi, b)| (b.name.len(), all(snap, bi))))
            });
            let tally = scope.spawn(|| tally(snap, res, args.depth));
            let (keep, after_compact) = compaction_forecast(snap, users, compact_at);
            let tally = tally.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            let after_defrag = defrag.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            (after_defrag, keep, after_compact, tally)
        });
    Ok(EtcdReport {
        file: path.display().to_string(),
        page_size: ps,
        size_bytes: size,
        in_use_bytes: size.saturating_sub(free),
        free_bytes: free,
        free_percent: percent(free, size),
        free_runs: runs,
        largest_free_run_bytes: longest * ps,
        leaf_fill_percent: percent(snap.leaf_inuse, snap.leaf_alloc),
        compact_rev: snap.finished,
        scheduled_compact_rev: snap.scheduled,
        oldest_rev: snap.revs.iter().map(|r| r.key.revision.main).min(),
        newest_rev,
        revisions: snap.revs.len() as u64,
        tombstones: snap.revs.iter().filter(|r| r.key.tombstone).count() as u64,
        live_keys,
        leases: snap.leases,
        prefixes,
        largest_keys: largest,
        after_defrag_bytes: after_defrag,
        forecast_compact_rev: compact_at,
        revisions_after_compact: keep.iter().filter(|k| **k).count() as u64,
        after_compact_defrag_bytes: after_compact,
        quota_bytes: args.quota_bytes(),
        quota_headroom_bytes: headroom(args.quota_bytes(), size),
        quota_headroom_after_defrag_bytes: headroom(args.quota_bytes(), after_defrag),
        quota_headroom_after_compact_defrag_bytes: headroom(args.quota_bytes(), after_compact),
    })
}

fn size(b: u64) -> String {
    format!("{b} ({})", human_size(b))
}

fn signed(b: i64) -> String {
    if b < 0 {
        let n = b.unsigned_abs();
        format!("-{n} (-{}, over quota: NOSPACE)", human_size(n))
    } else {
        size(b.unsigned_abs())
    }
}

fn opt(v: Option<i64>) -> String {
    v.map_or_else(|| "none".into(), |v| v.to_string())
}

fn text(r: &EtcdReport, args: &EtcdArgs) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "etcd db {} · page size {}", r.file, r.page_size);
    let _ = writeln!(s, "dbSize       {}", size(r.size_bytes));
    let _ = writeln!(s, "dbSizeInUse  {}", size(r.in_use_bytes));
    let _ = writeln!(
        s,
        "free         {} = {:.1}% · {} free runs, largest {} · leaf fill {:.1}%",
        size(r.free_bytes),
        r.free_percent,
        r.free_runs,
        size(r.largest_free_run_bytes),
        r.leaf_fill_percent
    );
    let _ = writeln!(
        s,
        "revisions    oldest {} · newest {} · compacted {} · scheduled {}",
        opt(r.oldest_rev),
        r.newest_rev,
        opt(r.compact_rev),
        opt(r.scheduled_compact_rev)
    );
    let _ = writeln!(
        s,
        "keys         live {} · revisions stored {} (tombstones {}) · leases {}",
        r.live_keys, r.revisions, r.tombstones, r.leases
    );
    s.push('\n');
    let _ = writeln!(s, "forecast dbSize (quota {}):", size(r.quota_bytes));
    let compaction = format!("after compaction {} + defrag", r.forecast_compact_rev);
    let rows = [
        ("now", r.size_bytes, String::new()),
        ("after defrag", r.after_defrag_bytes, String::new()),
        (
            compaction.as_str(),
            r.after_compact_defrag_bytes,
            format!("  ({} revisions left)", r.revisions_after_compact),
        ),
    ];
    for (what, bytes, note) in rows {
        let _ = writeln!(s, "  {what:<36} {}{note}", size(bytes));
    }
    let _ = writeln!(
        s,
        "  quota headroom: now {} · after defrag {} · after compaction + defrag {}",
        signed(r.quota_headroom_bytes),
        signed(r.quota_headroom_after_defrag_bytes),
        signed(r.quota_headroom_after_compact_defrag_bytes)
    );
    s.push('\n');
    let _ = writeln!(
        s,
        "{:<40} {:>9} {:>10} {:>12} {:>13} {:>9}",
        format!("PREFIX (depth {})", args.depth),
        "LIVE KEYS",
        "REVISIONS",
        "LIVE BYTES",
        "HISTORY BYTES",
        "RESIDENT"
    );
    for p in r.prefixes.iter().take(PREFIX_ROWS) {
        let res = match p.resident_bytes {
            Some(b) => format!("{:.1}%", percent(b, p.live_bytes + p.history_bytes)),
            None => "?".into(),
        };
        let _ = writeln!(
            s,
            "{:<40} {:>9} {:>10} {:>12} {:>13} {:>9}",
            p.prefix, p.live_keys, p.revisions, p.live_bytes, p.history_bytes, res
        );
    }
    if r.prefixes.len() > PREFIX_ROWS {
        let _ = writeln!(
            s,
            "... and {} more prefixes (--json lists all; --depth groups fewer)",
            r.prefixes.len() - PREFIX_ROWS
        );
    }
    s.push('\n');
    let _ = writeln!(s, "{:<56} {:>10} {:>12} {:>5}", "LARGEST KEYS", "REVISIONS", "BYTES", "LIVE");
    for k in &r.largest_keys {
        let _ = writeln!(
            s,
            "{:<56} {:>10} {:>12} {:>5}",
            k.key,
            k.revisions,
            k.bytes,
            if k.live { "yes" } else { "no" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_by_segments() {
        assert_eq!(prefix_of(b"/registry/pods/ns/a", 2), b"/registry/pods");
        assert_eq!(prefix_of(b"/registry/pods/ns/a", 1), b"/registry");
        assert_eq!(prefix_of(b"/registry/health", 2), b"/registry/health");
        assert_eq!(prefix_of(b"foo/bar/baz", 1), b"foo");
        assert_eq!(prefix_of(b"foo", 3), b"foo");
    }
}
