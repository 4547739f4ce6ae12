//! Cursors inside a write transaction: they walk materialised nodes where
//! the transaction has them and committed pages elsewhere, so the
//! transaction reads its own uncommitted writes (bbolt `cursor.go`, whose
//! `elemRef` holds a page or a node).

use std::borrow::Cow;

use mapwise_core::At;
use mapwise_core::bolt::{BRANCH_PAGE, BoltFile, LEAF_PAGE, MAX_DEPTH, Page, Snapshot};

use super::error::{Error, Result};
use super::node::{Arena, BucketId, Node, search};

/// A read-only view of a write transaction: the mapping it began with,
/// its snapshot, and the nodes and buckets it has touched.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub map: &'a [u8],
    pub snap: &'a Snapshot,
    pub arena: &'a Arena,
}

/// A page or a node (bbolt `elemRef`).
enum Src<'a> {
    Page(Page<'a>),
    Node(&'a Node),
}

struct Frame<'a> {
    src: Src<'a>,
    index: usize,
}

impl<'a> Frame<'a> {
    fn count(&self) -> usize {
        match &self.src {
            Src::Page(p) => p.count(),
            Src::Node(n) => n.inodes.len(),
        }
    }

    fn leaf(&self) -> bool {
        match &self.src {
            Src::Page(p) => p.header.flags != BRANCH_PAGE,
            Src::Node(n) => n.leaf,
        }
    }

    fn child(&self, index: usize) -> Result<u64> {
        match &self.src {
            Src::Page(p) => Ok(p.branch(index)?.child),
            Src::Node(n) => n
                .inodes
                .get(index)
                .map(|i| i.pgid)
                .ok_or_else(|| Error::Corrupt("branch node without children".into())),
        }
    }
}

/// One entry: key, value (a bucket's raw header and inline page for a
/// bucket entry), element flags.
pub(crate) type Entry<'a> = (&'a [u8], &'a [u8], u32);

impl<'a> View<'a> {
    pub(crate) fn file(&self) -> BoltFile<'a, [u8]> {
        BoltFile::at(self.map, self.snap)
    }

    /// Page `pgid` of bucket `b`, or its node if materialised (bbolt
    /// `Bucket.pageNode`).
    fn page_node(&self, b: BucketId, pgid: u64) -> Result<Src<'a>> {
        let bs = &self.arena.buckets[b];
        if bs.root == 0 {
            if pgid != 0 {
                return Err(Error::Corrupt(format!("inline bucket asked for page {pgid}")));
            }
            if let Some(n) = bs.root_node {
                return Ok(Src::Node(&self.arena.nodes[n]));
            }
            let bytes = bs
                .inline
                .as_ref()
                .map(|i| i.get(self.map))
                .ok_or_else(|| Error::Corrupt("inline bucket without its page".into()))?;
            let at = At::Inline { pgid: 0, index: 0 };
            let page = Page::new(at, 0, Cow::Borrowed(bytes))?;
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
            return Ok(Src::Page(page));
        }
        if let Some(&n) = bs.nodes.get(&pgid) {
            return Ok(Src::Node(&self.arena.nodes[n]));
        }
        Ok(Src::Page(self.file().tree_page(pgid, At::Page(pgid), "pgid")?))
    }

    /// Where `key` is or would go in bucket `b`: the element index taken
    /// at each level from the root to the leaf, and the flags of the
    /// element there when its key equals `key`.
    pub(crate) fn locate(&self, b: BucketId, key: &[u8]) -> Result<(Vec<usize>, Option<u32>)> {
        let mut c = WCursor::new(*self, b);
        c.search(key)?;
        let path = c.stack.iter().map(|f| f.index).collect();
        let found = match c.entry()? {
            Some((k, _, flags)) if k == key => Some(flags),
            _ => None,
        };
        Ok((path, found))
    }
}

/// A cursor over one bucket of a write transaction.
pub(crate) struct WCursor<'a> {
    view: View<'a>,
    bucket: BucketId,
    stack: Vec<Frame<'a>>,
}

impl<'a> WCursor<'a> {
    pub(crate) fn new(view: View<'a>, bucket: BucketId) -> WCursor<'a> {
        WCursor { view, bucket, stack: Vec::new() }
    }

    fn push(&mut self, pgid: u64) -> Result<()> {
        if self.stack.len() >= MAX_DEPTH as usize {
            return Err(
                mapwise_core::Error::TooDeep { at: At::Page(pgid), limit: MAX_DEPTH }.into()
            );
        }
        let src = self.view.page_node(self.bucket, pgid)?;
        self.stack.push(Frame { src, index: 0 });
        Ok(())
    }

    fn root(&self) -> u64 {
        self.view.arena.buckets[self.bucket].root
    }

    /// Descend from the root towards `key` (bbolt `Cursor.search`),
    /// leaving the leaf on top at the first element `>= key`.
    fn search(&mut self, key: &[u8]) -> Result<()> {
        self.stack.clear();
        let mut pgid = self.root();
        loop {
            self.push(pgid)?;
            let Some(top) = self.stack.last_mut() else {
                return Ok(());
            };
            let map = self.view.map;
            if top.leaf() {
                top.index = match &top.src {
                    Src::Page(p) => p.lower_bound(key)?,
                    Src::Node(n) => search(&n.inodes, map, key).0,
                };
                return Ok(());
            }
            top.index = match &top.src {
                Src::Page(p) => p.branch_index(key)?,
                Src::Node(n) => {
                    let (i, exact) = search(&n.inodes, map, key);
                    if !exact && i > 0 { i - 1 } else { i }
                }
            };
            pgid = top.child(top.index)?;
        }
    }

    /// From the top frame (a branch at its index) down to a leaf, each
    /// level at its first (or last) element.
    fn descend(&mut self, last: bool) -> Result<()> {
        loop {
            let Some(top) = self.stack.last() else {
                return Ok(());
            };
            if top.leaf() {
                return Ok(());
            }
            let child = top.child(top.index)?;
            self.push(child)?;
            if last && let Some(top) = self.stack.last_mut() {
                top.index = top.count().saturating_sub(1);
            }
        }
    }

    /// To the next leaf element, skipping empty leaves; `false` at the end.
    fn advance(&mut self) -> Result<bool> {
        loop {
            loop {
                match self.stack.last_mut() {
                    None => return Ok(false),
                    Some(top) if top.index + 1 < top.count() => {
                        top.index += 1;
                        break;
                    }
                    Some(_) => {
                        self.stack.pop();
                    }
                }
            }
            self.descend(false)?;
            if self.stack.last().is_some_and(|t| t.index < t.count()) {
                return Ok(true);
            }
        }
    }

    /// To the previous leaf element, skipping empty leaves.
    fn retreat(&mut self) -> Result<bool> {
        loop {
            loop {
                match self.stack.last_mut() {
                    None => return Ok(false),
                    Some(top) if top.index > 0 && top.count() > 0 => {
                        top.index = top.index.min(top.count()) - 1;
                        break;
                    }
                    Some(_) => {
                        self.stack.pop();
                    }
                }
            }
            self.descend(true)?;
            if self.stack.last().is_some_and(|t| t.index < t.count()) {
                return Ok(true);
            }
        }
    }

    /// The element under the cursor.
    pub(crate) fn entry(&self) -> Result<Option<Entry<'a>>> {
        let Some(top) = self.stack.last() else {
            return Ok(None);
        };
        if top.index >= top.count() {
            return Ok(None);
        }
        match &top.src {
            Src::Node(n) => {
                let i = &n.inodes[top.index];
                Ok(Some((i.key.get(self.view.map), i.value.get(self.view.map), i.flags)))
            }
            Src::Page(p) => {
                let Some((flags, k, v)) = p.leaf_ranges(top.index) else {
                    p.leaf(top.index)?;
                    return Ok(None);
                };
                let bytes = p.borrowed().unwrap_or_default();
                Ok(Some((
                    bytes.get(k).unwrap_or_default(),
                    bytes.get(v).unwrap_or_default(),
                    flags,
                )))
            }
        }
    }

    /// First element of the bucket.
    pub(crate) fn first(&mut self) -> Result<Option<Entry<'a>>> {
        self.stack.clear();
        let root = self.root();
        self.push(root)?;
        self.descend(false)?;
        if self.stack.last().is_some_and(|t| t.count() == 0) && !self.advance()? {
            return Ok(None);
        }
        self.entry()
    }

    /// Last element of the bucket.
    pub(crate) fn last(&mut self) -> Result<Option<Entry<'a>>> {
        self.stack.clear();
        let root = self.root();
        self.push(root)?;
        if let Some(top) = self.stack.last_mut() {
            top.index = top.count().saturating_sub(1);
        }
        self.descend(true)?;
        if self.stack.last().is_some_and(|t| t.count() == 0) && !self.retreat()? {
            return Ok(None);
        }
        self.entry()
    }

    /// Next element; `None` past the last.
    pub(crate) fn next(&mut self) -> Result<Option<Entry<'a>>> {
        if self.stack.is_empty() || !self.advance()? {
            self.stack.clear();
            return Ok(None);
        }
        self.entry()
    }

    /// Previous element; `None` before the first.
    pub(crate) fn prev(&mut self) -> Result<Option<Entry<'a>>> {
        if self.stack.is_empty() || !self.retreat()? {
            self.stack.clear();
            return Ok(None);
        }
        self.entry()
    }

    /// First element whose key is `>= key` (bbolt `Cursor.Seek`).
    pub(crate) fn seek(&mut self, key: &[u8]) -> Result<Option<Entry<'a>>> {
        self.search(key)?;
        let past_end = self.stack.last().is_some_and(|t| t.index >= t.count());
        if past_end {
            if let Some(top) = self.stack.last_mut() {
                top.index = top.count().saturating_sub(1);
            }
            // An empty leaf (keys deleted in this transaction) moves on
            // like a full one.
            if !self.advance()? {
                self.stack.clear();
                return Ok(None);
            }
        }
        self.entry()
    }
}
