//! The size of a bulk copy, worked out without writing it: how many pages
//! a fresh file takes when buckets are created one after the other and
//! each is filled in key order, committing every so many puts (etcd's
//! defrag, 3.4 `mvcc/backend/backend.go` `defragdb`; bbolt's `Compact`
//! commits by bytes instead).
//!
//! Only sizes matter to where pages go, so the planner takes key and
//! value lengths, and replays what the writer does with them: the
//! right-edge path of each bucket's tree is all a sequential fill
//! materialises, so each commit splits that path's nodes (the writer's
//! own `split_starts`), frees their old pages and takes new ones from
//! the writer's own `Freelist` (first fit, pages freed by a commit free
//! for the next), or at the high-water mark. Small buckets stay inline.
//! The result is the copy's high-water mark, in pages: etcd's `dbSize`
//! once multiplied by the page size.

use mapwise_core::bolt::{
    BUCKET_HEADER_SIZE as BUCKET_HEADER, ELEMENT_SIZE, Meta, PAGE_HEADER_SIZE, empty_inline_bucket,
};

use super::freelist::Freelist;
use super::node::{split_starts, split_threshold};

/// One materialised node of a right-edge path: its elements' sizes and
/// key lengths, and the pages it was read from (`pgid` 0: new, or inline).
#[derive(Debug, Clone, Default)]
struct Node {
    /// (element bytes, key bytes) per element.
    els: Vec<(usize, usize)>,
    pgid: u64,
    overflow: u64,
}

impl Node {
    fn size(&self) -> usize {
        PAGE_HEADER_SIZE + self.els.iter().map(|e| e.0).sum::<usize>()
    }
}

/// A tree's right-edge path, leaf first, root last.
#[derive(Debug, Clone)]
struct Tree {
    levels: Vec<Node>,
}

impl Tree {
    fn new(root: u64) -> Tree {
        Tree { levels: vec![Node { pgid: root, ..Node::default() }] }
    }
}

#[derive(Debug)]
struct PlannedBucket {
    name_len: usize,
    tree: Tree,
    /// Written to this commit (its path materialised).
    touched: bool,
    /// Its value in the root bucket: header, plus its leaf when inline.
    value_len: usize,
}

/// The writer of a bulk copy, by sizes: [`Planner::bucket`] opens the
/// next bucket, [`Planner::put`] appends to it, [`Planner::finish`]
/// commits and gives the high-water mark.
#[derive(Debug)]
pub struct Planner {
    ps: usize,
    threshold: usize,
    limit: usize,
    count: usize,
    txid: u64,
    hwm: u64,
    fl: Freelist,
    buckets: Vec<PlannedBucket>,
    root: Tree,
    /// The freelist page `DB.init` wrote, until the first commit frees it.
    init_freelist: Option<u64>,
}

impl Planner {
    /// A fresh file of `page_size`-byte pages whose buckets take
    /// `fill_percent` (bbolt clamps it to 0.1–1.0), committed after every
    /// `limit` puts as `defragdb` counts them (a commit before the
    /// `limit + 1`th put of a transaction; 0: one transaction).
    #[must_use]
    pub fn new(page_size: usize, fill_percent: f64, limit: usize) -> Planner {
        // The file `DB.init` makes: its newer meta says where things are.
        let init = Meta::new_file(u32::try_from(page_size).unwrap_or(u32::MAX), 1);
        Planner {
            ps: page_size,
            threshold: split_threshold(page_size, fill_percent),
            limit,
            count: 0,
            txid: init.txid + 1,
            hwm: init.hwm,
            fl: Freelist::default(),
            buckets: Vec::new(),
            root: Tree::new(init.root),
            init_freelist: Some(init.freelist),
        }
    }

    /// Open a new bucket named with `name_len` bytes, after every bucket
    /// opened before it in key order (`CreateBucketIfNotExists` of a new
    /// name): an inline empty bucket in the root bucket's leaf.
    pub fn bucket(&mut self, name_len: usize) {
        let value_len = empty_inline_bucket().len();
        self.root.levels[0].els.push((ELEMENT_SIZE + name_len + value_len, name_len));
        self.buckets.push(PlannedBucket {
            name_len,
            tree: Tree::new(0),
            touched: false,
            value_len,
        });
    }

    /// Append a key of `key_len` bytes and a value of `value_len` to the
    /// last bucket opened, after every key put before it; a commit first
    /// when the transaction holds its limit.
    pub fn put(&mut self, key_len: usize, value_len: usize) {
        if self.buckets.is_empty() {
            self.bucket(0);
        }
        self.count += 1;
        if self.limit > 0 && self.count > self.limit {
            self.commit();
            self.count = 0;
        }
        let b = self.buckets.last_mut().expect("a bucket is open");
        b.touched = true;
        b.tree.levels[0].els.push((ELEMENT_SIZE + key_len + value_len, key_len));
    }

    /// Commit what is left; the copy's high-water mark in pages (its
    /// `dbSize` is this times the page size).
    #[must_use]
    pub fn finish(mut self) -> u64 {
        self.commit();
        self.hwm
    }

    /// bbolt `Tx.Commit`: every bucket written to is written inline or
    /// spilled, then the root bucket; the pages freed become free for the
    /// next transaction (no reader holds them back).
    fn commit(&mut self) {
        let quarter = self.ps / 4;
        for i in 0..self.buckets.len() {
            if !self.buckets[i].touched {
                continue;
            }
            let mut tree = std::mem::replace(&mut self.buckets[i].tree, Tree::new(0));
            let leaf = &tree.levels[0];
            let value_len = if tree.levels.len() == 1 && leaf.size() <= quarter {
                // `Bucket.inlineable`: written into the parent's value;
                // pages it had are freed (`Bucket.free`).
                if leaf.pgid != 0 {
                    let (pgid, n) = (leaf.pgid, leaf.overflow + 1);
                    self.free(pgid, n);
                    tree.levels[0].pgid = 0;
                }
                BUCKET_HEADER + tree.levels[0].size()
            } else {
                self.spill(&mut tree);
                BUCKET_HEADER
            };
            let b = &mut self.buckets[i];
            b.tree = tree;
            b.touched = false;
            if b.value_len != value_len {
                b.value_len = value_len;
                // Its element in the root bucket's right-edge leaf, which
                // holds the last buckets opened (those written to).
                let leaf = &mut self.root.levels[0].els;
                let at = (i + leaf.len()).checked_sub(self.buckets.len());
                if let Some(e) = at.and_then(|at| leaf.get_mut(at)) {
                    let name_len = self.buckets[i].name_len;
                    *e = (ELEMENT_SIZE + name_len + value_len, name_len);
                }
            }
        }
        let mut root = std::mem::replace(&mut self.root, Tree::new(0));
        self.spill(&mut root);
        self.root = root;
        if let Some(pgid) = self.init_freelist.take() {
            // The freelist page `init` wrote: etcd's files keep none
            // (`NoFreelistSync`), so the first commit frees it.
            self.free(pgid, 1);
        }
        self.fl.release(self.txid + 1);
        self.txid += 1;
    }

    fn free(&mut self, pgid: u64, n: u64) {
        let ids: Vec<u64> = (pgid..pgid + n).collect();
        // A page freed twice would be the planner's own fault; bbolt
        // would panic, the planner counts it once.
        let _ = self.fl.free_pending(self.txid, &ids);
    }

    fn allocate(&mut self, pages: usize) -> u64 {
        if let Some(id) = self.fl.allocate(pages) {
            return id;
        }
        let id = self.hwm;
        self.hwm += pages as u64;
        id
    }

    /// bbolt `node.spill` over a right-edge path: each node, leaf first,
    /// split into pages and written to new ones (its old pages freed);
    /// the parent gets an element per new piece, a root that split gets a
    /// new root above it.
    fn spill(&mut self, tree: &mut Tree) {
        let mut level = 0;
        while let Some(node) = tree.levels.get_mut(level) {
            let els = std::mem::take(&mut node.els);
            let (old, old_n) = (node.pgid, node.overflow + 1);
            let starts = split_starts(els.len(), |i| els[i].0, self.ps, self.threshold);
            if old != 0 {
                self.free(old, old_n);
            }
            let bounds: Vec<usize> =
                std::iter::once(0).chain(starts.iter().copied()).chain([els.len()]).collect();
            let mut last = Node::default();
            for w in bounds.windows(2) {
                let piece = &els[w[0]..w[1]];
                let size = PAGE_HEADER_SIZE + piece.iter().map(|e| e.0).sum::<usize>();
                let pages = size.div_ceil(self.ps).max(1);
                let pgid = self.allocate(pages);
                last = Node { els: piece.to_vec(), pgid, overflow: pages as u64 - 1 };
            }
            // Keys of the new pieces, for their parent's elements.
            let new_keys: Vec<usize> = starts.iter().map(|&s| els[s].1).collect();
            tree.levels[level] = last;
            match tree.levels.get_mut(level + 1) {
                Some(parent) => {
                    parent.els.extend(new_keys.iter().map(|&k| (ELEMENT_SIZE + k, k)));
                }
                None if !new_keys.is_empty() => {
                    let first = els.first().map_or(0, |e| e.1);
                    let keys = std::iter::once(first).chain(new_keys);
                    let els = keys.map(|k| (ELEMENT_SIZE + k, k)).collect();
                    tree.levels.push(Node { els, pgid: 0, overflow: 0 });
                }
                None => {}
            }
            level += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::engine::bolt::{Db, Options};

    /// Buckets in name order, each its items in key order.
    type Copy = [(Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>)];

    /// The copy itself: `buckets` written by the engine into an in-memory
    /// file as `defragdb` writes them; its high-water mark.
    fn written(buckets: &Copy, fill: f64, limit: usize) -> u64 {
        let opts = Options {
            no_sync: true,
            no_grow_sync: true,
            no_freelist_sync: true,
            ..Options::read_write()
        };
        let db = Db::open_in_memory("plan-test", &opts).unwrap();
        let mut tx = db.begin_rw().unwrap();
        let mut count = 0;
        for (name, items) in buckets {
            tx.create_bucket_if_not_exists(name).unwrap();
            for (k, v) in items {
                count += 1;
                if limit > 0 && count > limit {
                    tx.commit().unwrap();
                    tx = db.begin_rw().unwrap();
                    count = 0;
                }
                let mut b = tx.bucket(name).unwrap().unwrap();
                b.set_fill_percent(fill);
                b.put(k, v).unwrap();
            }
        }
        tx.commit().unwrap();
        let ps = u64::from(db.page_size());
        db.begin().unwrap().size() / ps
    }

    fn planned(buckets: &Copy, fill: f64, limit: usize) -> u64 {
        let ps = usize::try_from(crate::os::residency::os_page_size()).unwrap();
        let mut p = Planner::new(ps, fill, limit);
        for (name, items) in buckets {
            p.bucket(name.len());
            for (k, v) in items {
                p.put(k.len(), v.len());
            }
        }
        p.finish()
    }

    /// Buckets named in order, each of keys in order: sizes from
    /// `shape` (key length, value length) per item.
    fn make(shape: &[(u8, Vec<(u8, u16)>)]) -> Box<Copy> {
        shape
            .iter()
            .enumerate()
            .map(|(bi, (name_len, items))| {
                let mut name = vec![b'a' + u8::try_from(bi).unwrap()];
                name.resize(usize::from(*name_len).max(1), b'_');
                let items = items
                    .iter()
                    .enumerate()
                    .map(|(i, &(kl, vl))| {
                        let mut k = u32::try_from(i).unwrap().to_be_bytes().to_vec();
                        k.resize(usize::from(kl).max(4), b'k');
                        (k, vec![0x5a; usize::from(vl)])
                    })
                    .collect();
                (name, items)
            })
            .collect()
    }

    #[test]
    fn an_etcd_like_copy_takes_the_pages_the_writer_takes() {
        // Small buckets stay inline, the key bucket spans three levels and
        // many commits; values past a page take overflow runs.
        let mut key_items = Vec::new();
        for i in 0..30_000u32 {
            key_items.push((17, [300u16, 1200, 2000, 5000, 64][(i % 5) as usize]));
        }
        let shape = vec![
            (5, vec![]),
            (4, vec![(10, 20)]),
            (3, key_items),
            (5, (0..2_000).map(|_| (8, 40)).collect()),
            (4, vec![(20, 17), (24, 17), (12, 8)]),
        ];
        let b = make(&shape);
        for (fill, limit) in [(0.9, 10_000), (0.5, 0), (1.0, 777)] {
            assert_eq!(
                planned(&b, fill, limit),
                written(&b, fill, limit),
                "fill {fill}, limit {limit}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn any_copy_takes_the_pages_the_writer_takes(
            shape in prop::collection::vec(
                (1u8..20, prop::collection::vec((1u8..80, 0u16..9000), 0..1500)),
                1..5,
            ),
            fill in 0.05f64..1.2,
            limit in 0usize..700,
        ) {
            let b = make(&shape);
            prop_assert_eq!(planned(&b, fill, limit), written(&b, fill, limit));
        }
    }
}
