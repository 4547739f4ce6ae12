//! Bucket statistics as bbolt computes them (`bucket.go`,
//! `Bucket.Stats`, `BucketStats`): page counts, keys, depth, bytes
//! allocated and used, sub-buckets and inline buckets.

use crate::error::{At, Error, Result};
use crate::source::PageSource;

use super::cursor::Bucket;
use super::file::MAX_DEPTH;
use super::page::{BRANCH_PAGE, Page};

/// Statistics of a bucket and everything below it (bbolt `BucketStats`).
/// Byte counts use bbolt's node-size rule for "in use":
/// `16 + Σ(16 + key [+ value])` per page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BucketStats {
    /// Branch pages (first page of each run).
    pub branch_page_n: u64,
    /// Continuation pages of branch runs.
    pub branch_overflow_n: u64,
    /// Leaf pages of page-backed buckets (first page of each run).
    pub leaf_page_n: u64,
    /// Continuation pages of leaf runs.
    pub leaf_overflow_n: u64,
    /// Leaf elements: key/value pairs and sub-bucket entries.
    pub key_n: u64,
    /// Levels of the B+tree, plus the deepest sub-bucket's.
    pub depth: u64,
    /// Bytes of branch runs.
    pub branch_alloc: u64,
    /// Bytes of branch runs in use.
    pub branch_inuse: u64,
    /// Bytes of leaf runs.
    pub leaf_alloc: u64,
    /// Bytes of leaf runs in use.
    pub leaf_inuse: u64,
    /// Buckets, this one included.
    pub bucket_n: u64,
    /// Inline buckets.
    pub inline_bucket_n: u64,
    /// Bytes inline buckets use.
    pub inline_bucket_inuse: u64,
}

impl BucketStats {
    /// Add `o`'s counts to these; depth takes the maximum (bbolt
    /// `BucketStats.Add`).
    pub fn add(&mut self, o: &BucketStats) {
        self.branch_page_n += o.branch_page_n;
        self.branch_overflow_n += o.branch_overflow_n;
        self.leaf_page_n += o.leaf_page_n;
        self.leaf_overflow_n += o.leaf_overflow_n;
        self.key_n += o.key_n;
        self.depth = self.depth.max(o.depth);
        self.branch_alloc += o.branch_alloc;
        self.branch_inuse += o.branch_inuse;
        self.leaf_alloc += o.leaf_alloc;
        self.leaf_inuse += o.leaf_inuse;
        self.bucket_n += o.bucket_n;
        self.inline_bucket_n += o.inline_bucket_n;
        self.inline_bucket_inuse += o.inline_bucket_inuse;
    }
}

impl<S: PageSource + ?Sized> Bucket<'_, S> {
    /// Statistics of this bucket and its sub-buckets (bbolt
    /// `Bucket.Stats`).
    ///
    /// # Errors
    /// A damaged page, a tree deeper than 64 levels, or more pages
    /// visited than the file holds (a cycle).
    pub fn stats(&self) -> Result<BucketStats> {
        let mut budget = self.file().file_pages().saturating_add(1);
        self.stats_inner(&mut budget, 0)
    }

    fn stats_inner(&self, budget: &mut u64, nest: u32) -> Result<BucketStats> {
        if nest > MAX_DEPTH * 4 {
            return Err(Error::TooDeep { at: At::Offset(0), limit: MAX_DEPTH });
        }
        let ps = u64::from(self.file().page_size());
        let mut s = BucketStats { bucket_n: 1, ..BucketStats::default() };
        let mut sub = BucketStats::default();
        match self.root_pgid() {
            None => {
                s.inline_bucket_n = 1;
                let page = self.inline_page().ok_or(Error::BucketNotFound)?;
                s.key_n += page.count() as u64;
                s.inline_bucket_inuse += page.used_bytes();
                s.depth = 1;
            }
            Some(root) => {
                self.tree_stats(root, At::Page(root), 0, &mut s, &mut sub, budget, nest)?;
            }
        }
        s.branch_alloc = (s.branch_page_n + s.branch_overflow_n) * ps;
        s.leaf_alloc = (s.leaf_page_n + s.leaf_overflow_n) * ps;
        s.depth += sub.depth;
        s.add(&BucketStats { depth: 0, ..sub });
        Ok(s)
    }

    #[expect(clippy::too_many_arguments)]
    fn tree_stats(
        &self,
        pgid: u64,
        referrer: At,
        depth: u32,
        s: &mut BucketStats,
        sub: &mut BucketStats,
        budget: &mut u64,
        nest: u32,
    ) -> Result<()> {
        if depth >= MAX_DEPTH {
            return Err(Error::TooDeep { at: referrer, limit: MAX_DEPTH });
        }
        if *budget == 0 {
            return Err(Error::Reused { at: referrer, field: "pgid", pgid });
        }
        *budget -= 1;
        let page: Page<'_> = self.file().tree_page(pgid, referrer, "pgid")?;
        s.depth = s.depth.max(u64::from(depth) + 1);
        let ovf = u64::from(page.header.overflow);
        if page.header.flags == BRANCH_PAGE {
            s.branch_page_n += 1;
            s.branch_overflow_n += ovf;
            s.branch_inuse += page.used_bytes();
            for i in 0..page.count() {
                let child = page.branch(i)?.child;
                self.tree_stats(child, page.element_at_loc(i), depth + 1, s, sub, budget, nest)?;
            }
        } else {
            s.leaf_page_n += 1;
            s.leaf_overflow_n += ovf;
            s.key_n += page.count() as u64;
            s.leaf_inuse += page.used_bytes();
            for i in 0..page.count() {
                if page.leaf(i)?.is_bucket() {
                    let b = Bucket::from_element(self.file(), &page, i)?;
                    let bs = b.stats_inner(budget, nest + 1)?;
                    sub.add(&bs);
                }
            }
        }
        Ok(())
    }
}
