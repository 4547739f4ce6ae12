//! Nodes: the write transaction's in-memory, deserialised pages, and the
//! B+tree maintenance done at commit (bbolt `node.go` and the spill and
//! rebalance parts of `bucket.go`).
//!
//! A write transaction reads pages from the mapping and *materialises* a
//! page into a [`Node`] only when it changes something under it (a put, a
//! delete, a sequence change, a bucket created or dropped). Keys and
//! values of a materialised node still point into the mapping
//! ([`Bytes::Map`]) until they are replaced; the transaction keeps its own
//! handle on the mapping it began with, and pages of its snapshot are
//! never overwritten while it runs, so those ranges stay valid. New keys
//! and values are owned ([`Bytes::Owned`]).
//!
//! At commit, [`Ctx::rebalance_bucket`] merges nodes that fell below the
//! fill threshold and collapses one-child root branches, then
//! [`Ctx::spill_bucket`] writes every materialised node to newly
//! allocated pages (children first, splitting at the fill percent),
//! frees the pages they came from as pending on this transaction, and
//! writes small buckets inline into their parent.

use std::collections::{BTreeMap, HashSet};

use mapwise_core::At;
use mapwise_core::bolt::{
    BRANCH_PAGE, BUCKET_LEAF_FLAG, BoltFile, ELEMENT_SIZE, ElementData, LEAF_PAGE, MAX_DEPTH, Meta,
    PAGE_HEADER_SIZE, Page, Snapshot, bucket_header, write_node,
};

use super::error::{Error, Result};
use super::freelist::Freelist;
use super::wcursor::View;

/// Index of a node in the transaction's arena.
pub(crate) type NodeId = usize;
/// Index of a bucket in the transaction's arena (0 = the root bucket).
pub(crate) type BucketId = usize;

/// bbolt `minKeysPerPage`: a split leaves at least this many keys on
/// each side.
const MIN_KEYS_PER_PAGE: usize = 2;
/// `Bucket.FillPercent` bounds (bucket.go, `minFillPercent`,
/// `maxFillPercent`).
const MIN_FILL: f64 = 0.1;
const MAX_FILL: f64 = 1.0;

/// A key or value of a node: a range of the transaction's mapping, or
/// bytes the transaction owns.
#[derive(Debug, Clone)]
pub(crate) enum Bytes {
    /// `[off, off + len)` of the mapping the transaction began with.
    Map { off: usize, len: usize },
    /// Owned bytes (a new key or value, or a copy).
    Owned(Box<[u8]>),
}

impl Bytes {
    pub(crate) fn owned(b: &[u8]) -> Bytes {
        Bytes::Owned(b.into())
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Bytes::Map { len, .. } => *len,
            Bytes::Owned(b) => b.len(),
        }
    }

    /// The bytes, resolved against the transaction's mapping `map`.
    pub(crate) fn get<'a>(&'a self, map: &'a [u8]) -> &'a [u8] {
        match self {
            Bytes::Map { off, len } => {
                off.checked_add(*len).and_then(|end| map.get(*off..end)).unwrap_or_default()
            }
            Bytes::Owned(b) => b,
        }
    }
}

/// One element of a node (bbolt `inode`).
#[derive(Debug, Clone)]
pub(crate) struct Inode {
    /// Leaf element flags (`BUCKET_LEAF_FLAG` for a bucket entry).
    pub flags: u32,
    /// Child page of a branch element.
    pub pgid: u64,
    pub key: Bytes,
    pub value: Bytes,
}

/// A deserialised page (bbolt `node`).
#[derive(Debug)]
pub(crate) struct Node {
    pub bucket: BucketId,
    pub leaf: bool,
    /// A key was deleted: rebalance at commit.
    pub unbalanced: bool,
    /// Written to a new page in this commit.
    pub spilled: bool,
    /// Removed from its bucket (merged away or freed).
    pub dead: bool,
    /// First key when materialised: how the parent finds this node.
    pub key: Option<Bytes>,
    /// Page it was read from (0 = new, or an inline bucket's page).
    pub pgid: u64,
    /// `overflow` of that page, to free its whole run.
    pub overflow: u32,
    pub parent: Option<NodeId>,
    /// Materialised children (spill tracking only).
    pub children: Vec<NodeId>,
    pub inodes: Vec<Inode>,
}

impl Node {
    /// Bytes once written (bbolt `node.size`).
    pub(crate) fn size(&self) -> usize {
        self.inodes
            .iter()
            .fold(PAGE_HEADER_SIZE, |acc, i| acc + ELEMENT_SIZE + i.key.len() + i.value.len())
    }

    fn min_keys(&self) -> usize {
        if self.leaf { 1 } else { 2 }
    }
}

/// Where a node splits into pages (bbolt `node.split`, which applies
/// `node.splitTwo` to the remainder until it fits): the index of each
/// piece's first element after the first piece, for a node of `n`
/// elements of `el(i)` bytes each (element header, key and value) on
/// pages of `ps` bytes. A piece is cut only from a remainder of more than
/// four elements that is at least a page long (`sizeLessThan`), after the
/// last element that keeps it within `threshold` bytes (page size × fill
/// percent), leaving two elements at least on each side (`splitIndex`,
/// `minKeysPerPage`).
pub(crate) fn split_starts(
    n: usize,
    el: impl Fn(usize) -> usize,
    ps: usize,
    threshold: usize,
) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut start = 0;
    loop {
        let rest = n - start;
        // `sizeLessThan(ps)`, stopping early.
        let mut sz = PAGE_HEADER_SIZE;
        let fits = (start..n).all(|i| {
            sz += el(i);
            sz < ps
        });
        if rest <= MIN_KEYS_PER_PAGE * 2 || fits {
            return starts;
        }
        // `splitIndex(threshold)` of the remainder.
        let (mut sz, mut index) = (PAGE_HEADER_SIZE, 0);
        for i in 0..rest - MIN_KEYS_PER_PAGE {
            index = i;
            let e = el(start + i);
            if i >= MIN_KEYS_PER_PAGE && sz + e > threshold {
                break;
            }
            sz += e;
        }
        start += index;
        starts.push(start);
    }
}

/// The split threshold of a page of `ps` bytes at `fill` (bbolt
/// `splitTwo`: `pageSize × FillPercent`, the fill clamped to 0.1–1.0).
pub(crate) fn split_threshold(ps: usize, fill: f64) -> usize {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let threshold = ((ps as f64) * fill.clamp(MIN_FILL, MAX_FILL)) as usize;
    threshold
}

/// Index of the first inode whose key is `>= key`, and whether it is
/// equal (the binary search bbolt's `node.put`, `node.del` and
/// `Cursor.nsearch` do).
pub(crate) fn search(inodes: &[Inode], map: &[u8], key: &[u8]) -> (usize, bool) {
    let i = inodes.partition_point(|n| mapwise_core::bolt::key_cmp(n.key.get(map), key).is_lt());
    let exact = inodes.get(i).is_some_and(|n| n.key.get(map) == key);
    (i, exact)
}

/// A bucket as the write transaction sees it (bbolt `Bucket`).
#[derive(Debug)]
pub(crate) struct BucketState {
    /// Root page, 0 = inline.
    pub root: u64,
    pub sequence: u64,
    /// The inline page image while the root is not materialised (bbolt
    /// `Bucket.page`).
    pub inline: Option<Bytes>,
    pub root_node: Option<NodeId>,
    /// Materialised nodes by the page they came from (bbolt
    /// `Bucket.nodes`).
    pub nodes: BTreeMap<u64, NodeId>,
    /// Sub-buckets opened in this transaction (bbolt `Bucket.buckets`).
    pub children: BTreeMap<Vec<u8>, BucketId>,
    /// Split threshold (bbolt `Bucket.FillPercent`, not persisted).
    pub fill_percent: f64,
    /// Dropped by `delete_bucket` in this transaction.
    pub deleted: bool,
}

impl BucketState {
    pub(crate) fn new(root: u64, sequence: u64, inline: Option<Bytes>, fill: f64) -> BucketState {
        BucketState {
            root,
            sequence,
            inline,
            root_node: None,
            nodes: BTreeMap::new(),
            children: BTreeMap::new(),
            fill_percent: fill,
            deleted: false,
        }
    }
}

/// Every node and bucket a write transaction has touched.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    pub nodes: Vec<Node>,
    pub buckets: Vec<BucketState>,
}

/// Pages freed by the running transaction (pending on its txid once it
/// commits).
#[derive(Debug, Default)]
pub(crate) struct Freed {
    pub ids: Vec<u64>,
    pub set: HashSet<u64>,
}

/// What a commit produces besides the tree: dirty pages and the runs it
/// took from the freelist (to give back if the commit fails).
#[derive(Debug, Default)]
pub(crate) struct Spilled {
    /// Dirty pages (first page id, bytes of the page or overflow run) not
    /// yet handed to a writer.
    pub dirty: Vec<(u64, Vec<u8>)>,
    /// The commit's writer thread, when it has one: pages go there as
    /// soon as they are made ([`Spilled::push_dirty`]).
    pub sink: Option<std::sync::mpsc::Sender<(u64, Vec<u8>)>>,
    pub taken: Vec<(u64, usize)>,
    /// The freelist's allocation raised the high-water mark, which is
    /// when bbolt 1.3.6 grows the file (tx.go, `commitFreelist`).
    pub grow: bool,
    /// Buffers earlier commits wrote, for [`Spilled::page_buf`].
    pub spare: Vec<Vec<u8>>,
}

impl Spilled {
    /// A zeroed buffer of `len` bytes for a page image: one an earlier
    /// commit wrote when there is one (see `SparePages`), else new.
    pub(crate) fn page_buf(&mut self, len: usize) -> Vec<u8> {
        match self.spare.pop() {
            Some(mut b) => {
                b.clear();
                b.resize(len, 0);
                b
            }
            None => vec![0u8; len],
        }
    }

    /// A page (or overflow run) of the commit is ready: send it to the
    /// writer thread, or keep it for the commit's own write pass when
    /// there is none or it has stopped (it stops only on an error, which
    /// fails the commit).
    pub(crate) fn push_dirty(&mut self, pgid: u64, buf: Vec<u8>) {
        let page = match &self.sink {
            Some(tx) => match tx.send((pgid, buf)) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            None => (pgid, buf),
        };
        self.dirty.push(page);
    }
}

/// The write transaction's state, borrowed field by field so node
/// algorithms can read the mapping while they change the arena.
pub(crate) struct Ctx<'a> {
    pub map: &'a [u8],
    pub snap: &'a Snapshot,
    pub arena: &'a mut Arena,
    pub fl: &'a mut Freelist,
    pub freed: &'a mut Freed,
    pub meta: &'a mut Meta,
    pub ps: usize,
}

fn corrupt(detail: String) -> Error {
    Error::Corrupt(detail)
}

impl Ctx<'_> {
    fn file(&self) -> BoltFile<'_, [u8]> {
        BoltFile::at(self.map, self.snap)
    }

    /// A read-only view of the transaction (for cursors).
    pub(crate) fn view(&self) -> View<'_> {
        View { map: self.map, snap: self.snap, arena: self.arena }
    }

    /// Free a page run as pending on this transaction.
    ///
    /// # Errors
    /// A page that is already free or pending, or a meta page: the tree
    /// references a page twice (bbolt panics "page N already freed").
    pub(crate) fn free_run(&mut self, pgid: u64, overflow: u32) -> Result<()> {
        let end = pgid.saturating_add(u64::from(overflow));
        if let Some(p) = (pgid..=end).find(|&p| {
            p < 2 || p >= self.meta.hwm || self.fl.contains(p) || self.freed.set.contains(&p)
        }) {
            return Err(Error::Format(mapwise_core::Error::Reused {
                at: At::Page(pgid),
                field: "free",
                pgid: p,
            }));
        }
        for p in pgid..=end {
            self.freed.set.insert(p);
            self.freed.ids.push(p);
        }
        Ok(())
    }

    /// Forget the pages freed since `mark` (an operation that failed
    /// half-way must not leave pages of a live tree freed).
    pub(crate) fn unfree_since(&mut self, mark: usize) {
        for p in self.freed.ids.drain(mark..) {
            self.freed.set.remove(&p);
        }
    }

    /// Read the elements of page `pgid` (or the bucket's inline page)
    /// for a node: `(leaf, overflow, inodes)`.
    fn read_inodes(&self, b: BucketId, pgid: u64) -> Result<(bool, u32, Vec<Inode>)> {
        let bucket = &self.arena.buckets[b];
        if let Some(inline) = &bucket.inline {
            let (bytes, base) = match inline {
                Bytes::Map { off, .. } => (inline.get(self.map), Some(*off)),
                Bytes::Owned(v) => (&v[..], None),
            };
            let at = At::Inline { pgid: 0, index: 0 };
            let page = Page::new(at, 0, std::borrow::Cow::Borrowed(bytes))?;
            if page.header.flags != LEAF_PAGE {
                return Err(mapwise_core::Error::Invalid {
                    at,
                    field: "flags",
                    value: u64::from(page.header.flags),
                    expected: "0x02 (an inline bucket page is a leaf)",
                }
                .into());
            }
            page.check_element_array()?;
            return Ok((true, 0, elements(&page, bytes, base)?));
        }
        let file = self.file();
        let page = file.tree_page(pgid, At::Page(pgid), "pgid")?;
        let bytes = page.borrowed().unwrap_or_default();
        let base = usize::try_from(pgid).ok().and_then(|p| p.checked_mul(self.ps));
        Ok((page.header.flags != BRANCH_PAGE, page.header.overflow, elements(&page, bytes, base)?))
    }

    /// The node for page `pgid` of bucket `b`, materialised under
    /// `parent` if it is not yet (bbolt `Bucket.node`).
    pub(crate) fn node(
        &mut self,
        b: BucketId,
        pgid: u64,
        parent: Option<NodeId>,
    ) -> Result<NodeId> {
        if let Some(&id) = self.arena.buckets[b].nodes.get(&pgid) {
            return Ok(id);
        }
        let (leaf, overflow, inodes) = self.read_inodes(b, pgid)?;
        let id = self.arena.nodes.len();
        self.arena.nodes.push(Node {
            bucket: b,
            leaf,
            unbalanced: false,
            spilled: false,
            dead: false,
            key: inodes.first().map(|i| i.key.clone()),
            pgid,
            overflow,
            parent,
            children: Vec::new(),
            inodes,
        });
        match parent {
            None => self.arena.buckets[b].root_node = Some(id),
            Some(p) => self.arena.nodes[p].children.push(id),
        }
        self.arena.buckets[b].nodes.insert(pgid, id);
        Ok(id)
    }

    /// Child `index` of branch node `n`, materialised (bbolt
    /// `node.childAt`).
    pub(crate) fn child_at(&mut self, n: NodeId, index: usize) -> Result<NodeId> {
        let node = &self.arena.nodes[n];
        if node.leaf {
            return Err(corrupt(format!("child {index} of a leaf node")));
        }
        let pgid = node
            .inodes
            .get(index)
            .map(|i| i.pgid)
            .ok_or_else(|| corrupt(format!("child {index} past the end of a branch node")))?;
        let b = node.bucket;
        self.node(b, pgid, Some(n))
    }

    /// Materialise the path from bucket `b`'s root down to a leaf, taking
    /// element `path[i]` at each branch (bbolt `Cursor.node`).
    pub(crate) fn leaf_at(&mut self, b: BucketId, path: &[usize]) -> Result<NodeId> {
        let root = self.arena.buckets[b].root;
        let mut n = match self.arena.buckets[b].root_node {
            Some(n) => n,
            None => self.node(b, root, None)?,
        };
        for &index in path.iter().take(path.len().saturating_sub(1)) {
            n = self.child_at(n, index)?;
        }
        if !self.arena.nodes[n].leaf {
            return Err(corrupt("a cursor path ends at a branch node".into()));
        }
        Ok(n)
    }

    /// Insert or replace the element whose key is `old` (bbolt
    /// `node.put`).
    pub(crate) fn put(
        &mut self,
        n: NodeId,
        old: &[u8],
        key: Bytes,
        value: Bytes,
        pgid: u64,
        flags: u32,
    ) -> Result<()> {
        if pgid >= self.meta.hwm {
            return Err(corrupt(format!(
                "page {pgid} above the high-water mark {}",
                self.meta.hwm
            )));
        }
        if old.is_empty() || key.len() == 0 {
            return Err(Error::KeyRequired);
        }
        let map = self.map;
        let node = &mut self.arena.nodes[n];
        let (i, exact) = search(&node.inodes, map, old);
        let inode = Inode { flags, pgid, key, value };
        if exact {
            node.inodes[i] = inode;
        } else {
            node.inodes.insert(i, inode);
        }
        Ok(())
    }

    /// Remove the element with `key`, if present, and mark the node for
    /// rebalancing (bbolt `node.del`).
    pub(crate) fn del(&mut self, n: NodeId, key: &[u8]) {
        let map = self.map;
        let node = &mut self.arena.nodes[n];
        let (i, exact) = search(&node.inodes, map, key);
        if exact {
            node.inodes.remove(i);
            node.unbalanced = true;
        }
    }

    fn del_key_of(&mut self, parent: NodeId, child: NodeId) {
        if let Some(k) = self.arena.nodes[child].key.clone() {
            let map = self.map;
            self.del(parent, k.get(map));
        }
    }

    fn remove_child(&mut self, parent: NodeId, child: NodeId) {
        self.arena.nodes[parent].children.retain(|&c| c != child);
    }

    /// Position of `child` in its parent (bbolt `node.childIndex`).
    fn child_index(&self, parent: NodeId, child: NodeId) -> usize {
        let map = self.map;
        let key = self.arena.nodes[child].key.as_ref().map(|k| k.get(map)).unwrap_or_default();
        search(&self.arena.nodes[parent].inodes, map, key).0
    }

    /// Free a node's page and forget the page (bbolt `node.free`).
    fn free_node(&mut self, n: NodeId) -> Result<()> {
        let (pgid, overflow) = (self.arena.nodes[n].pgid, self.arena.nodes[n].overflow);
        if pgid != 0 {
            self.free_run(pgid, overflow)?;
            self.arena.nodes[n].pgid = 0;
        }
        Ok(())
    }

    /// Drop node `n` from its bucket: it was merged away.
    fn forget(&mut self, n: NodeId) -> Result<()> {
        let node = &mut self.arena.nodes[n];
        node.dead = true;
        let (b, pgid) = (node.bucket, node.pgid);
        if self.arena.buckets[b].nodes.get(&pgid) == Some(&n) {
            self.arena.buckets[b].nodes.remove(&pgid);
        }
        self.free_node(n)
    }

    /// Move the materialised children listed in `inodes_of`'s elements
    /// under `to` (the reparenting step of bbolt `node.rebalance`).
    fn reparent(&mut self, inodes_of: NodeId, to: NodeId) {
        let node = &self.arena.nodes[inodes_of];
        if node.leaf {
            return;
        }
        let b = node.bucket;
        let moved: Vec<NodeId> = node
            .inodes
            .iter()
            .filter_map(|i| self.arena.buckets[b].nodes.get(&i.pgid).copied())
            .collect();
        for c in moved {
            if let Some(old) = self.arena.nodes[c].parent {
                self.remove_child(old, c);
            }
            self.arena.nodes[c].parent = Some(to);
            self.arena.nodes[to].children.push(c);
        }
    }

    /// Merge node `n` with a sibling when it holds too little, collapse a
    /// root branch with one child (bbolt `node.rebalance`; the threshold
    /// is `page size × fill percent / 2`, bbolt ≥ 1.3.7 — 1.3.6 uses
    /// `page size / 4`, the same at the default fill percent).
    fn rebalance(&mut self, n: NodeId, depth: u32) -> Result<()> {
        if depth > MAX_DEPTH || !self.arena.nodes[n].unbalanced || self.arena.nodes[n].dead {
            return Ok(());
        }
        self.arena.nodes[n].unbalanced = false;
        let b = self.arena.nodes[n].bucket;
        let fill = self.arena.buckets[b].fill_percent;
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let threshold = ((self.ps as f64) * fill) as usize / 2;
        let node = &self.arena.nodes[n];
        if node.size() > threshold && node.inodes.len() > node.min_keys() {
            return Ok(());
        }
        let Some(parent) = node.parent else {
            // The root: collapse a branch with a single child.
            if !node.leaf && node.inodes.len() == 1 {
                let child_pgid = node.inodes[0].pgid;
                let child = self.node(b, child_pgid, Some(n))?;
                let inodes = std::mem::take(&mut self.arena.nodes[child].inodes);
                let children = std::mem::take(&mut self.arena.nodes[child].children);
                let leaf = self.arena.nodes[child].leaf;
                let root = &mut self.arena.nodes[n];
                root.leaf = leaf;
                root.inodes = inodes;
                root.children = children;
                if !leaf {
                    let grandchildren: Vec<NodeId> = self.arena.nodes[n]
                        .inodes
                        .iter()
                        .filter_map(|i| self.arena.buckets[b].nodes.get(&i.pgid).copied())
                        .collect();
                    for c in grandchildren {
                        self.arena.nodes[c].parent = Some(n);
                    }
                }
                self.arena.nodes[child].parent = None;
                self.forget(child)?;
            }
            return Ok(());
        };
        if node.inodes.is_empty() {
            self.del_key_of(parent, n);
            self.remove_child(parent, n);
            self.forget(n)?;
            return self.rebalance(parent, depth + 1);
        }
        if self.arena.nodes[parent].inodes.len() < 2 {
            return Err(corrupt("a branch node with a single child below the root".into()));
        }
        let index = self.child_index(parent, n);
        if index == 0 {
            // Merge the right sibling into this node.
            let target = self.child_at(parent, 1)?;
            self.reparent(target, n);
            let moved = std::mem::take(&mut self.arena.nodes[target].inodes);
            self.arena.nodes[n].inodes.extend(moved);
            self.del_key_of(parent, target);
            self.remove_child(parent, target);
            self.forget(target)?;
        } else {
            // Merge this node into its left sibling.
            let target = self.child_at(parent, index - 1)?;
            self.reparent(n, target);
            let moved = std::mem::take(&mut self.arena.nodes[n].inodes);
            self.arena.nodes[target].inodes.extend(moved);
            self.del_key_of(parent, n);
            self.remove_child(parent, n);
            self.forget(n)?;
        }
        self.rebalance(parent, depth + 1)
    }

    /// Rebalance every node of bucket `b` with deletions, then its
    /// sub-buckets (bbolt `Bucket.rebalance`).
    pub(crate) fn rebalance_bucket(&mut self, b: BucketId, depth: u32) -> Result<()> {
        if depth > MAX_DEPTH * 4 {
            return Err(corrupt("buckets nested too deep".into()));
        }
        let ids: Vec<NodeId> = self.arena.buckets[b].nodes.values().copied().collect();
        for n in ids {
            self.rebalance(n, 0)?;
        }
        let children: Vec<BucketId> = self.arena.buckets[b].children.values().copied().collect();
        for c in children {
            self.rebalance_bucket(c, depth + 1)?;
        }
        Ok(())
    }

    /// Take pages for a run of `count`: the lowest free run, else at the
    /// high-water mark (bbolt `DB.allocate`).
    pub(crate) fn allocate(&mut self, count: usize, out: &mut Spilled) -> Result<u64> {
        if let Some(id) = self.fl.allocate(count) {
            out.taken.push((id, count));
            if id.saturating_add(count as u64) > self.meta.hwm {
                return Err(corrupt(format!(
                    "free page {id} above the high-water mark {}",
                    self.meta.hwm
                )));
            }
            return Ok(id);
        }
        let id = self.meta.hwm;
        self.meta.hwm += count as u64;
        Ok(id)
    }

    /// Split node `n` into pieces that fit the fill threshold (bbolt
    /// `node.split`, which applies `node.splitTwo` to the remainder until
    /// it fits: a piece is cut only from a node of more than four keys
    /// that is at least a page long, after the last key that keeps it
    /// within `page size × fill percent`, leaving two keys at least on
    /// each side). Returns `n` and the new pieces, in key order.
    fn split(&mut self, n: NodeId) -> Vec<NodeId> {
        let node = &self.arena.nodes[n];
        let b = node.bucket;
        let threshold = split_threshold(self.ps, self.arena.buckets[b].fill_percent);
        // Where each piece after the first starts (then cut from the back:
        // no quadratic copying).
        let el = |i: usize| {
            let inode = &node.inodes[i];
            ELEMENT_SIZE + inode.key.len() + inode.value.len()
        };
        let starts = split_starts(node.inodes.len(), el, self.ps, threshold);
        if starts.is_empty() {
            return vec![n];
        }
        let leaf = node.leaf;
        let parent = match node.parent {
            Some(p) => p,
            None => {
                let p = self.arena.nodes.len();
                self.arena.nodes.push(Node {
                    bucket: b,
                    leaf: false,
                    unbalanced: false,
                    spilled: false,
                    dead: false,
                    key: None,
                    pgid: 0,
                    overflow: 0,
                    parent: None,
                    children: vec![n],
                    inodes: Vec::new(),
                });
                self.arena.nodes[n].parent = Some(p);
                p
            }
        };
        let mut pieces = Vec::with_capacity(starts.len());
        for &at in starts.iter().rev() {
            let inodes = self.arena.nodes[n].inodes.split_off(at);
            pieces.push(inodes);
        }
        let mut parts = vec![n];
        for inodes in pieces.into_iter().rev() {
            let next = self.arena.nodes.len();
            self.arena.nodes.push(Node {
                bucket: b,
                leaf,
                unbalanced: false,
                spilled: false,
                dead: false,
                key: None,
                pgid: 0,
                overflow: 0,
                parent: Some(parent),
                children: Vec::new(),
                inodes,
            });
            self.arena.nodes[parent].children.push(next);
            parts.push(next);
        }
        parts
    }

    /// Write node `n` and its materialised descendants to new pages
    /// (bbolt `node.spill`).
    fn spill_node(&mut self, n: NodeId, out: &mut Spilled, depth: u32) -> Result<()> {
        if self.arena.nodes[n].spilled {
            return Ok(());
        }
        if depth > MAX_DEPTH {
            return Err(corrupt("tree deeper than 64 levels".into()));
        }
        let map = self.map;
        let mut children = std::mem::take(&mut self.arena.nodes[n].children);
        {
            let nodes = &self.arena.nodes;
            let first =
                |c: &NodeId| nodes[*c].inodes.first().map(|i| i.key.get(map)).unwrap_or_default();
            children.sort_by(|a, b| first(a).cmp(first(b)));
        }
        self.arena.nodes[n].children = children;
        let mut i = 0;
        while let Some(&c) = self.arena.nodes[n].children.get(i) {
            self.spill_node(c, out, depth + 1)?;
            i += 1;
        }
        self.arena.nodes[n].children.clear();

        for node in self.split(n) {
            self.free_node(node)?;
            let size = self.arena.nodes[node].size();
            let count = size.div_ceil(self.ps).max(1);
            let pgid = self.allocate(count, out)?;
            let mut buf = out.page_buf(count * self.ps);
            {
                let nd = &self.arena.nodes[node];
                let items = nd.inodes.iter().map(|i| ElementData {
                    flags: i.flags,
                    key: i.key.get(map),
                    value: i.value.get(map),
                    child: i.pgid,
                });
                let overflow = u32::try_from(count - 1).map_err(|_| {
                    Error::Write(mapwise_core::bolt::WriteError::FieldOverflow("overflow"))
                })?;
                write_node(&mut buf, pgid, overflow, nd.leaf, items)?;
            }
            let nd = &mut self.arena.nodes[node];
            nd.pgid = pgid;
            nd.overflow = u32::try_from(count - 1).unwrap_or(0);
            nd.spilled = true;
            out.push_dirty(pgid, buf);
            if let Some(parent) = nd.parent {
                let first = nd
                    .inodes
                    .first()
                    .map(|i| i.key.clone())
                    .ok_or_else(|| corrupt("an empty node below the root".into()))?;
                let old = nd.key.clone().unwrap_or_else(|| first.clone());
                self.put(parent, old.get(map), first.clone(), Bytes::owned(&[]), pgid, 0)?;
                self.arena.nodes[node].key = Some(first);
            }
        }
        // A root that split has a new parent: write it too.
        if let Some(p) = self.arena.nodes[n].parent
            && self.arena.nodes[p].pgid == 0
            && !self.arena.nodes[p].spilled
        {
            self.arena.nodes[n].children.clear();
            return self.spill_node(p, out, depth + 1);
        }
        Ok(())
    }

    /// `true` when bucket `c` is written inline into its parent's value
    /// (bbolt `Bucket.inlineable`): its root is a materialised leaf with
    /// no sub-buckets and `16 + Σ(16 + key + value) ≤ page size / 4`.
    fn inlineable(&self, c: BucketId) -> bool {
        let Some(root) = self.arena.buckets[c].root_node else {
            return false;
        };
        let n = &self.arena.nodes[root];
        if !n.leaf {
            return false;
        }
        let max = self.ps / 4;
        let mut size = PAGE_HEADER_SIZE;
        for i in &n.inodes {
            size += ELEMENT_SIZE + i.key.len() + i.value.len();
            if i.flags & BUCKET_LEAF_FLAG != 0 || size > max {
                return false;
            }
        }
        true
    }

    /// The value of an inline bucket: header then its root leaf as a page
    /// image (bbolt `Bucket.write`).
    fn inline_value(&self, c: BucketId) -> Result<Vec<u8>> {
        let bucket = &self.arena.buckets[c];
        let root =
            bucket.root_node.ok_or_else(|| corrupt("inline bucket without a root node".into()))?;
        let n = &self.arena.nodes[root];
        let header = bucket_header(bucket.root, bucket.sequence);
        let mut value = vec![0u8; header.len() + n.size()];
        value[..header.len()].copy_from_slice(&header);
        let map = self.map;
        let items = n.inodes.iter().map(|i| ElementData {
            flags: i.flags,
            key: i.key.get(map),
            value: i.value.get(map),
            child: i.pgid,
        });
        write_node(&mut value[header.len()..], 0, 0, true, items)?;
        Ok(value)
    }

    /// Free every page of bucket `c` (nodes where materialised, pages
    /// otherwise) and make it inline (bbolt `Bucket.free`).
    pub(crate) fn free_bucket(&mut self, c: BucketId) -> Result<()> {
        self.free_bucket_with(c, false)
    }

    /// Free bucket `c`'s pages as committed, ignoring its nodes (bbolt
    /// `DeleteBucket` drops the nodes first); the bucket keeps its root
    /// until the caller drops it. On error nothing is freed.
    pub(crate) fn free_bucket_pages(&mut self, c: BucketId) -> Result<()> {
        self.free_bucket_with(c, true)
    }

    fn free_bucket_with(&mut self, c: BucketId, pages_only: bool) -> Result<()> {
        let root = self.arena.buckets[c].root;
        if root == 0 {
            return Ok(());
        }
        let mark = self.freed.ids.len();
        if let Err(e) = self.free_tree(c, root, 0, pages_only) {
            self.unfree_since(mark);
            return Err(e);
        }
        if !pages_only {
            self.arena.buckets[c].root = 0;
        }
        Ok(())
    }

    fn free_tree(&mut self, c: BucketId, pgid: u64, depth: u32, pages_only: bool) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(corrupt("tree deeper than 64 levels".into()));
        }
        if let Some(&n) = self.arena.buckets[c].nodes.get(&pgid).filter(|_| !pages_only) {
            let kids: Vec<u64> = if self.arena.nodes[n].leaf {
                Vec::new()
            } else {
                self.arena.nodes[n].inodes.iter().map(|i| i.pgid).collect()
            };
            self.free_node(n)?;
            for k in kids {
                self.free_tree(c, k, depth + 1, pages_only)?;
            }
            return Ok(());
        }
        let (overflow, kids) = {
            let file = self.file();
            let page = file.tree_page(pgid, At::Page(pgid), "pgid")?;
            let kids = if page.header.flags == BRANCH_PAGE {
                (0..page.count())
                    .map(|i| page.branch(i).map(|e| e.child))
                    .collect::<std::result::Result<Vec<_>, _>>()?
            } else {
                Vec::new()
            };
            (page.header.overflow, kids)
        };
        self.free_run(pgid, overflow)?;
        for k in kids {
            self.free_tree(c, k, depth + 1, pages_only)?;
        }
        Ok(())
    }

    /// Write bucket `b`: its sub-buckets first (inline or spilled), then
    /// its own materialised nodes (bbolt `Bucket.spill`).
    pub(crate) fn spill_bucket(
        &mut self,
        b: BucketId,
        out: &mut Spilled,
        depth: u32,
    ) -> Result<()> {
        if depth > MAX_DEPTH * 4 {
            return Err(corrupt("buckets nested too deep".into()));
        }
        let children: Vec<(Vec<u8>, BucketId)> =
            self.arena.buckets[b].children.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (name, c) in children {
            if self.arena.buckets[c].deleted {
                continue;
            }
            let value = if self.inlineable(c) {
                self.free_bucket(c)?;
                self.inline_value(c)?
            } else {
                self.spill_bucket(c, out, depth + 1)?;
                let cb = &self.arena.buckets[c];
                bucket_header(cb.root, cb.sequence).to_vec()
            };
            if self.arena.buckets[c].root_node.is_none() {
                continue;
            }
            let (path, found) = self.view().locate(b, &name)?;
            if found.is_none_or(|flags| flags & BUCKET_LEAF_FLAG == 0) {
                return Err(corrupt(format!(
                    "bucket {} not found in its parent at commit",
                    String::from_utf8_lossy(&name)
                )));
            }
            let n = self.leaf_at(b, &path)?;
            self.put(
                n,
                &name,
                Bytes::owned(&name),
                Bytes::Owned(value.into_boxed_slice()),
                0,
                BUCKET_LEAF_FLAG,
            )?;
        }
        let Some(root) = self.arena.buckets[b].root_node else {
            return Ok(());
        };
        self.spill_node(root, out, 0)?;
        let mut top = root;
        let mut guard = 0;
        while let Some(p) = self.arena.nodes[top].parent {
            top = p;
            guard += 1;
            if guard > MAX_DEPTH {
                return Err(corrupt("node parents form a cycle".into()));
            }
        }
        self.arena.buckets[b].root_node = Some(top);
        let pgid = self.arena.nodes[top].pgid;
        if pgid >= self.meta.hwm {
            return Err(corrupt(format!(
                "root page {pgid} above the high-water mark {}",
                self.meta.hwm
            )));
        }
        self.arena.buckets[b].root = pgid;
        Ok(())
    }
}

/// The inodes of `page`, whose image is `bytes`; `base` is the image's
/// offset in the mapping (ranges then point there), `None` to copy.
fn elements(page: &Page<'_>, bytes: &[u8], base: Option<usize>) -> Result<Vec<Inode>> {
    let mk = |r: std::ops::Range<usize>| match base {
        Some(b) => Bytes::Map { off: b + r.start, len: r.len() },
        None => Bytes::owned(bytes.get(r).unwrap_or_default()),
    };
    let leaf = page.header.flags != BRANCH_PAGE;
    let mut out = Vec::with_capacity(page.count());
    for i in 0..page.count() {
        let inode = if leaf {
            let Some((flags, k, v)) = page.leaf_ranges(i) else {
                page.leaf(i)?;
                return Err(corrupt(format!("leaf element {i} unreadable")));
            };
            Inode { flags, pgid: 0, key: mk(k), value: mk(v) }
        } else {
            let e = page.branch(i)?;
            Inode { flags: 0, pgid: e.child, key: mk(e.key), value: Bytes::owned(&[]) }
        };
        if inode.key.len() == 0 {
            return Err(mapwise_core::Error::Invalid {
                at: page.element_at_loc(i),
                field: "ksize",
                value: 0,
                expected: "a non-empty key",
            }
            .into());
        }
        out.push(inode);
    }
    Ok(out)
}
