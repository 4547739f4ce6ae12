//! Read-only buckets and cursors with bbolt's semantics.
//!
//! A [`Cursor`] keeps a stack of page images from a bucket's root down to
//! a leaf, as bbolt's `Cursor` does (`cursor.go`). Keys and values come
//! back as `Cow<'s, [u8]>`: borrowed from the source when it is a slice or
//! a mapping (zero-copy), owned when it is a `pread` or browser source.
//!
//! Hostile files cannot make a cursor loop: descents stop at
//! [`MAX_DEPTH`](super::file::MAX_DEPTH) levels, and a scan that enters
//! more pages than the file holds must have met a page twice, so it stops
//! with [`Error::Reused`].

use alloc::borrow::Cow;
use alloc::vec::Vec;

use crate::error::{At, Error, Result};
use crate::source::PageSource;

use super::file::{BoltFile, MAX_DEPTH};
use super::page::{BRANCH_PAGE, BucketHeader, LEAF_PAGE, Page};

/// One key/value pair as a cursor returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item<'s> {
    /// The key.
    pub key: Cow<'s, [u8]>,
    /// The value; for a bucket entry, the raw bucket value (header and
    /// inline page, if any).
    pub value: Cow<'s, [u8]>,
    /// Element flags (`BUCKET_LEAF_FLAG` marks a bucket).
    pub flags: u32,
}

impl Item<'_> {
    /// `true` for a bucket entry (bbolt returns a nil value for these).
    #[must_use]
    pub fn is_bucket(&self) -> bool {
        self.flags & super::page::BUCKET_LEAF_FLAG != 0
    }
}

/// Where a prefetching cursor sends its read-ahead hints (native
/// implements it with `madvise(MADV_WILLNEED)` on the mapping; `core`
/// itself does no I/O).
pub trait Prefetch {
    /// The bytes `[offset, offset + len)` of the source (file offsets for
    /// a file or mapping) will be read soon. Advisory: it must not fail
    /// and must not block on the read.
    fn will_need(&self, offset: u64, len: u64);

    /// Whether the byte at `offset` of the source is already in memory
    /// (native: `mincore(2)` of its OS page). A prefetching cursor asks
    /// it of the first and the last leaf it is about to announce and
    /// announces nothing when both are: on a warm file the hints would
    /// only cost time (`MADV_WILLNEED` walks the page cache, ~60 ns a
    /// page). Advisory and cheap: it must not fail, fault or block.
    /// Default: `false` (always announce).
    fn cached(&self, offset: u64) -> bool {
        let _ = offset;
        false
    }

    /// The CPU will read the bytes `[offset, offset + len)` of the source
    /// soon: pull them into its caches (native: x86-64 `prefetcht0` on
    /// the mapping). Only for bytes that are already mapped: it must do
    /// no I/O, never fault and never block. Default: nothing.
    fn cache(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
}

/// How many leaves ahead of a forward move the cursor asks the CPU to
/// cache ([`Prefetch::cache`], through the file's hint sink,
/// [`BoltFile::with_hints`]). A leaf's first touch is otherwise a cache
/// and TLB miss the hardware prefetcher cannot hide (it stops at 4 KiB
/// boundaries, and leaves are rarely adjacent in memory order).
const CACHE_AHEAD: usize = 8;

/// Bytes of a child page a point lookup (`get`, `bucket`) asks the CPU to
/// cache ([`Prefetch::cache`]) as it steps down to it: the page header,
/// the element array and most of the keys its binary search probes on a
/// 4 KiB page, fetched in parallel instead of one miss per probe. Asking
/// for more stalls the CPU on its fill buffers (tried on the bench's
/// random gets: 1, 2 and 4 KiB; 2 KiB was best).
const FIND_BYTES: u64 = 2048;

/// Bytes of each upcoming leaf to cache: the page header and the first
/// elements, which a scan reads before anything else of the page.
const CACHE_BYTES: u64 = 128;

/// Leaves the first announcement of a scan covers; every renewal doubles
/// it up to the window, so a short range scan asks for little more than
/// it reads (the kernel's own read-ahead ramps up the same way).
const RAMP_START: usize = 8;

/// Leaves a cursor moves forward through, one after the other, before it
/// announces any ahead ([`CursorOptions::prefetch`]), and ...
pub const ARM_LEAVES: u64 = 3;

/// ... elements those leaves hold at least: a point lookup and a short
/// range (a seek, then fewer leaves or elements than these) announce
/// nothing, so they read exactly the pages bbolt's cursor reads. A seek
/// followed by ten keys crosses four or five leaves of large values (the
/// bench's files hold 2 or 3 a leaf), so leaves alone cannot tell it from
/// a scan; 32 elements can, and cost a scan of large values 16 leaves read
/// one at a time, of small ones nothing more than the 3 leaves.
pub const ARM_ITEMS: u64 = 32;

/// The read-ahead window of the default options ([`CursorOptions`]) and
/// of [`Bucket::cursor`] on a file with a hint sink (the engine's): 4 MiB,
/// with which a cold full scan of the bench's 2 GiB file reads at about
/// the disk's sequential speed (`cargo xtask bench bolt`).
pub const DEFAULT_PREFETCH: u64 = 4 << 20;

/// Options of a read [`Cursor`] ([`Bucket::cursor_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorOptions {
    /// Read-ahead window in **bytes**: while moving forward (`first`,
    /// `next`, `seek`), announce the leaf pages the scan will reach next,
    /// as many as fit in this many bytes (counted in the file's pages,
    /// at least one leaf), known from the branch pages above the current
    /// leaf. The first announcement after `first`/`seek` reaches 8
    /// leaves ahead; once no more than half of that reach is left ahead,
    /// the next one reaches twice as far, up to the window (8, then 16,
    /// 32, …; new leaves only). Runs of consecutive pages go out as one
    /// hint; a renewal whose first and last new leaves the sink says are
    /// cached ([`Prefetch::cached`]) sends none.
    /// Nothing is announced until the cursor has moved forward through
    /// [`ARM_LEAVES`] leaves in a row, holding [`ARM_ITEMS`] elements, since
    /// its last `first`, `seek` or backward move, so point lookups and short ranges read exactly
    /// bbolt's pages. Default [`DEFAULT_PREFETCH`]; `0`: no hints at all,
    /// bbolt's exact I/O (one synchronous fault per cold page).
    pub prefetch: u64,
    /// Exclusive upper bound of the scan: subtrees whose first key is
    /// `>=` this key are never announced (nor their branch pages read),
    /// so a range scan prefetches only pages inside its range. `None`:
    /// up to the end of the bucket.
    pub prefetch_end: Option<Vec<u8>>,
}

impl Default for CursorOptions {
    fn default() -> Self {
        CursorOptions { prefetch: DEFAULT_PREFETCH, prefetch_end: None }
    }
}

/// The state of a prefetching cursor.
struct Prefetcher<'s> {
    sink: &'s dyn Prefetch,
    /// Window in leaf pages (>= 1).
    window: usize,
    /// Leaves the next announcement may reach ahead of the current leaf:
    /// [`RAMP_START`] after a reset, doubled by every renewal, at most
    /// `window`.
    target: usize,
    end: Option<Vec<u8>>,
    /// Leaves entered since the last reset (scan order).
    leaves: u64,
    /// Elements of those leaves.
    items: u64,
    /// Leaves announced so far, counted in scan order from the reset.
    hinted: u64,
}

impl Prefetcher<'_> {
    /// Start counting a forward run afresh: nothing announced, the ramp
    /// back at its start.
    fn rearm(&mut self) {
        self.leaves = 0;
        self.items = 0;
        self.hinted = 0;
        self.target = RAMP_START.min(self.window);
    }
}

impl core::fmt::Debug for Prefetcher<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Prefetcher")
            .field("window", &self.window)
            .field("target", &self.target)
            .field("leaves", &self.leaves)
            .field("hinted", &self.hinted)
            .finish_non_exhaustive()
    }
}

/// Where a bucket's tree starts.
#[derive(Debug, Clone)]
enum Root<'s> {
    /// A page-backed tree rooted at this page id, referenced from `At`
    /// (the meta page or the bucket's element).
    Page(u64, At),
    /// An inline bucket: its whole tree is this one leaf image.
    Inline(Page<'s>),
}

/// A bucket of a bbolt file, read-only. It holds its own copy of the
/// (small) [`BoltFile`] handle, so it borrows only the source's bytes.
#[derive(Debug)]
pub struct Bucket<'s, S: PageSource + ?Sized> {
    file: BoltFile<'s, S>,
    root: Root<'s>,
    sequence: u64,
}

impl<S: PageSource + ?Sized> Clone for Bucket<'_, S> {
    fn clone(&self) -> Self {
        Bucket { file: self.file.clone(), root: self.root.clone(), sequence: self.sequence }
    }
}

impl<'s, S: PageSource + ?Sized> Bucket<'s, S> {
    /// The top-level bucket whose tree the meta's `root` points to.
    #[must_use]
    pub fn root_of(file: &BoltFile<'s, S>) -> Bucket<'s, S> {
        Bucket {
            file: file.clone(),
            root: Root::Page(file.meta().root, At::Meta(file.current_index())),
            sequence: file.meta().root_sequence,
        }
    }

    /// The bucket stored as leaf element `index` of `page`.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the bucket value is malformed.
    pub fn from_element(
        file: &BoltFile<'s, S>,
        page: &Page<'s>,
        index: usize,
    ) -> Result<Bucket<'s, S>> {
        let elem = page.leaf(index)?;
        let value = page.bytes().get(elem.value.clone()).unwrap_or_default();
        let header = BucketHeader::parse(value, page.element_at_loc(index))?;
        let root = if header.root == 0 {
            Root::Inline(page.inline_page(index, &elem)?)
        } else {
            Root::Page(header.root, page.element_at_loc(index))
        };
        Ok(Bucket { file: file.clone(), root, sequence: header.sequence })
    }

    /// The bucket's sequence number (`Bucket.Sequence`).
    #[must_use]
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Root page id of the bucket's tree, or `None` for an inline bucket.
    #[must_use]
    pub fn root_pgid(&self) -> Option<u64> {
        match self.root {
            Root::Page(p, _) => Some(p),
            Root::Inline(_) => None,
        }
    }

    /// The inline page image of an inline bucket; `None` for a
    /// page-backed one.
    #[must_use]
    pub fn inline_page(&self) -> Option<Page<'s>> {
        match &self.root {
            Root::Inline(p) => Some(p.clone()),
            Root::Page(..) => None,
        }
    }

    /// A cursor over this bucket. On a file with a hint sink
    /// ([`BoltFile::with_hints`], as the engine's transactions give) it
    /// reads ahead as [`CursorOptions::default`] says: nothing for a point
    /// lookup or a short range, the leaves ahead once a scan has moved
    /// through [`ARM_LEAVES`] leaves. On a file without one it sends no
    /// hints, as bbolt's cursor, which reads only the pages it steps on.
    #[must_use]
    pub fn cursor(&self) -> Cursor<'s, S> {
        match self.file.hints() {
            Some(sink) => self.cursor_with(&CursorOptions::default(), sink),
            None => self.plain_cursor(),
        }
    }

    fn plain_cursor(&self) -> Cursor<'s, S> {
        Cursor {
            file: self.file.clone(),
            root: self.root.clone(),
            stack: Vec::new(),
            entered: 0,
            prefetch: None,
        }
    }

    /// A cursor over this bucket with `opts`; read-ahead hints (unless
    /// `opts.prefetch` is 0) go to `sink`. It returns exactly what
    /// [`Bucket::cursor`] returns; only the hints differ.
    #[must_use]
    pub fn cursor_with(&self, opts: &CursorOptions, sink: &'s dyn Prefetch) -> Cursor<'s, S> {
        let mut c = self.plain_cursor();
        if opts.prefetch > 0 {
            let ps = u64::from(self.file.page_size()).max(1);
            let window = usize::try_from(opts.prefetch / ps).unwrap_or(usize::MAX).max(1);
            c.prefetch = Some(Prefetcher {
                sink,
                window,
                target: RAMP_START.min(window),
                end: opts.prefetch_end.clone(),
                leaves: 0,
                items: 0,
                hinted: 0,
            });
        }
        c
    }

    /// Descend to the leaf that would hold `key`; returns the leaf and the
    /// index of the first element `>= key` in it. The same checks as a
    /// cursor's descent (at most [`MAX_DEPTH`] pages, each a branch or
    /// leaf page in bounds), without a cursor: no stack to allocate, which
    /// is most of the cost of a point lookup in a hot tree. With a hint
    /// sink on the file, each child page's first [`FIND_BYTES`] are asked
    /// of the CPU cache before the page is read.
    fn find(&self, key: &[u8]) -> Result<(Page<'s>, usize)> {
        let mut page = match &self.root {
            Root::Page(p, at) => self.enter_page(*p, *at, "root")?,
            Root::Inline(page) => page.clone(),
        };
        let mut depth = 1u32;
        loop {
            if page.header.flags != BRANCH_PAGE {
                let i = page.lower_bound(key)?;
                return Ok((page, i));
            }
            let i = page.branch_index(key)?;
            let child = page.branch(i)?.child;
            let at = page.element_at_loc(i);
            if depth >= MAX_DEPTH {
                return Err(Error::TooDeep { at, limit: MAX_DEPTH });
            }
            if let Some(sink) = self.file.hints() {
                let ps = u64::from(self.file.page_size());
                sink.cache(child.saturating_mul(ps), FIND_BYTES.min(ps));
            }
            page = self.enter_page(child, at, "pgid")?;
            depth += 1;
        }
    }

    #[inline]
    fn enter_page(&self, pgid: u64, referrer: At, field: &'static str) -> Result<Page<'s>> {
        match self.file.tree_page_fast(pgid) {
            Some(p) => Ok(p),
            None => self.file.tree_page(pgid, referrer, field),
        }
    }

    /// The value of `key`, or `None` when the key is absent or names a
    /// sub-bucket (as bbolt's `Bucket.Get`).
    ///
    /// # Errors
    /// Any fault met on the way down.
    pub fn get(&self, key: &[u8]) -> Result<Option<Cow<'s, [u8]>>> {
        let (page, i) = self.find(key)?;
        if i >= page.count() {
            return Ok(None);
        }
        let Some((flags, start, mid, end)) = page.leaf_offsets(i) else {
            // Out of bounds: let the full decoder name the fault.
            return page.leaf(i).map(|_| None);
        };
        if page.bytes().get(start..mid) != Some(key) || flags & super::page::BUCKET_LEAF_FLAG != 0 {
            return Ok(None);
        }
        Ok(Some(page.slice(mid..end)))
    }

    /// The sub-bucket `name`, or `None` when absent.
    ///
    /// # Errors
    /// [`Error::IncompatibleValue`] when `name` holds a plain value; any
    /// fault met on the way down.
    pub fn bucket(&self, name: &[u8]) -> Result<Option<Bucket<'s, S>>> {
        let (page, i) = self.find(name)?;
        if i >= page.count() {
            return Ok(None);
        }
        let e = page.leaf(i)?;
        if page.bytes().get(e.key.clone()) != Some(name) {
            return Ok(None);
        }
        if !e.is_bucket() {
            return Err(Error::IncompatibleValue);
        }
        Bucket::from_element(&self.file, &page, i).map(Some)
    }

    /// Call `f` with each key and value in key order; a sub-bucket comes
    /// with `None` (bbolt `Bucket.ForEach`). Stops at the first error `f`
    /// returns.
    ///
    /// # Errors
    /// The first error of `f`, or a fault met on the way.
    pub fn for_each<E: From<Error>>(
        &self,
        mut f: impl FnMut(&[u8], Option<&[u8]>) -> core::result::Result<(), E>,
    ) -> core::result::Result<(), E> {
        let mut c = self.cursor();
        let mut item = c.first()?;
        while let Some(it) = item {
            f(&it.key, (!it.is_bucket()).then_some(&*it.value))?;
            item = c.next()?;
        }
        Ok(())
    }

    /// The file handle this bucket reads through.
    #[must_use]
    pub fn file(&self) -> &BoltFile<'s, S> {
        &self.file
    }

    /// The bucket at `path` below this one.
    ///
    /// # Errors
    /// [`Error::BucketNotFound`] when a component is missing,
    /// [`Error::IncompatibleValue`] when one names a plain value.
    pub fn bucket_path<P: AsRef<[u8]>>(&self, path: &[P]) -> Result<Bucket<'s, S>> {
        let mut b = self.clone();
        for name in path {
            b = b.bucket(name.as_ref())?.ok_or(Error::BucketNotFound)?;
        }
        Ok(b)
    }
}

#[derive(Debug, Clone)]
struct Frame<'s> {
    page: Page<'s>,
    index: usize,
}

/// A position in a bucket's tree (bbolt's `Cursor`): `first`, `last`,
/// `next`, `prev`, `seek`. Each returns the item at the new position, or
/// `None` when the cursor has run off the end.
#[derive(Debug)]
pub struct Cursor<'s, S: PageSource + ?Sized> {
    file: BoltFile<'s, S>,
    root: Root<'s>,
    stack: Vec<Frame<'s>>,
    entered: u64,
    prefetch: Option<Prefetcher<'s>>,
}

impl<'s, S: PageSource + ?Sized> Cursor<'s, S> {
    fn reset(&mut self) {
        self.stack.clear();
        self.entered = 0;
        if let Some(pf) = &mut self.prefetch {
            pf.rearm();
        }
    }

    /// A forward move entered a new leaf: when less than half of what was
    /// last announced is still ahead of it, announce the leaves up to the
    /// ramp's target ahead (those not announced yet) and double the
    /// target, up to the window. Advisory: a fault met here stops the
    /// hints, and the scan itself reports it when it gets there.
    #[inline]
    fn on_leaf(&mut self) {
        if self.prefetch.is_some() {
            self.announce();
        }
    }

    /// The body of [`Cursor::on_leaf`] for a prefetching cursor (kept out
    /// of line: a plain scan pays one test per leaf).
    fn announce(&mut self) {
        let count = self.stack.last().map_or(0, |t| t.page.count() as u64);
        let Some(pf) = &mut self.prefetch else {
            return;
        };
        pf.leaves += 1;
        pf.items += count;
        if pf.leaves < ARM_LEAVES || pf.items < ARM_ITEMS {
            return;
        }
        let ahead = pf.hinted.saturating_sub(pf.leaves);
        if pf.hinted > 0 {
            // A renewal: once no more than half the reach is left ahead,
            // reach twice as far.
            if ahead.saturating_mul(2) > pf.target as u64 {
                return;
            }
            pf.target = pf.target.saturating_mul(2).min(pf.window);
        }
        let (target, sink) = (pf.target, pf.sink);
        let ids = self.upcoming_leaves(target);
        if let Some(pf) = &mut self.prefetch {
            pf.hinted = pf.leaves + ids.len() as u64;
        }
        let skip = usize::try_from(ahead).unwrap_or(usize::MAX).min(ids.len());
        let ps = u64::from(self.file.page_size());
        let new = &ids[skip..];
        if let (Some(&first), Some(&last)) = (new.first(), new.last())
            && sink.cached(first.saturating_mul(ps))
            && sink.cached(last.saturating_mul(ps))
        {
            // Both ends already cached: a warm stretch of the file.
            return;
        }
        let mut run: Option<(u64, u64)> = None;
        for &id in new {
            run = match run {
                Some((start, n)) if start.checked_add(n) == Some(id) => Some((start, n + 1)),
                Some((start, n)) => {
                    sink.will_need(start.saturating_mul(ps), n.saturating_mul(ps));
                    Some((id, 1))
                }
                None => Some((id, 1)),
            };
        }
        if let Some((start, n)) = run {
            sink.will_need(start.saturating_mul(ps), n.saturating_mul(ps));
        }
    }

    /// A forward move entered a new leaf: ask the CPU to cache the first
    /// bytes of the leaf [`CACHE_AHEAD`] places further on in the parent
    /// branch (all of those up to it when `all`, or when the leaf is the
    /// parent's first child, as nothing was asked for them yet). Only the
    /// parent is read, and only its element headers; a leaf whose parent
    /// is not on the stack (an inline bucket, a root leaf) gets nothing.
    fn cache_ahead(&self, all: bool) {
        let Some(sink) = self.file.hints() else {
            return;
        };
        let Some(parent) = self.stack.len().checked_sub(2).map(|i| &self.stack[i]) else {
            return;
        };
        if parent.page.header.flags != BRANCH_PAGE {
            return;
        }
        let ps = u64::from(self.file.page_size());
        let from = if all || parent.index == 0 { 1 } else { CACHE_AHEAD };
        for k in from..=CACHE_AHEAD {
            let Some(child) = parent.page.branch_child(parent.index + k) else {
                return;
            };
            sink.cache(child.saturating_mul(ps), CACHE_BYTES);
        }
    }

    /// Page ids of up to `want` leaves after the current one, in scan
    /// order, read from the branch pages on the stack (and the branch
    /// pages below them that the scan will enter anyway). Stops at the
    /// prefetch end key.
    fn upcoming_leaves(&self, want: usize) -> Vec<u64> {
        let mut out = Vec::new();
        let depth = self.stack.len();
        let end = self.prefetch.as_ref().and_then(|p| p.end.as_deref());
        for lvl in (0..depth.saturating_sub(1)).rev() {
            let frame = &self.stack[lvl];
            if frame.page.header.flags != BRANCH_PAGE {
                return out;
            }
            let height = depth - 1 - lvl;
            if !self.collect(&frame.page, frame.index + 1, height, end, want, &mut out) {
                return out;
            }
        }
        out
    }

    /// Leaves below elements `from..` of branch `page`, whose children
    /// are `height` levels above the leaves (1: they are leaves). Returns
    /// `false` when done (enough ids, the end key, or a fault).
    fn collect(
        &self,
        page: &Page<'s>,
        from: usize,
        height: usize,
        end: Option<&[u8]>,
        want: usize,
        out: &mut Vec<u64>,
    ) -> bool {
        for i in from..page.count() {
            if out.len() >= want {
                return false;
            }
            // Without an end key only the element header is read (a
            // full scan announces every leaf: the key would cost a
            // bounds check per leaf for nothing).
            let child = match end {
                None => page.branch_child(i),
                Some(end) => page
                    .branch(i)
                    .ok()
                    .filter(|e| page.bytes().get(e.key.clone()).is_some_and(|k| k < end))
                    .map(|e| e.child),
            };
            let Some(child) = child else {
                return false;
            };
            if height <= 1 {
                out.push(child);
                continue;
            }
            let Some(child) = self.file.tree_page_fast(child) else {
                return false;
            };
            if child.header.flags != BRANCH_PAGE
                || !self.collect(&child, 0, height - 1, end, want, out)
            {
                return false;
            }
        }
        true
    }

    /// Push the page `pgid` (reached from the current top frame, or the
    /// root) onto the stack.
    fn enter(&mut self, pgid: u64, referrer: At, field: &'static str) -> Result<()> {
        self.entered += 1;
        if self.entered > self.file.file_pages().saturating_add(1) {
            return Err(Error::Reused { at: referrer, field, pgid });
        }
        if self.stack.len() >= MAX_DEPTH as usize {
            return Err(Error::TooDeep { at: referrer, limit: MAX_DEPTH });
        }
        let page = match self.file.tree_page_fast(pgid) {
            Some(p) => p,
            None => self.file.tree_page(pgid, referrer, field)?,
        };
        self.stack.push(Frame { page, index: 0 });
        Ok(())
    }

    fn enter_root(&mut self) -> Result<()> {
        match &self.root {
            Root::Page(p, at) => {
                let (p, at) = (*p, *at);
                self.enter(p, at, "root")
            }
            Root::Inline(page) => {
                let page = page.clone();
                self.stack.push(Frame { page, index: 0 });
                Ok(())
            }
        }
    }

    /// From the top frame (a branch at its index), descend to a leaf,
    /// entering each child at its first (`last == false`) or last element.
    /// The top frame keeps its index.
    fn descend(&mut self, last: bool) -> Result<()> {
        loop {
            let Some(top) = self.stack.last() else {
                return Ok(());
            };
            if top.page.header.flags != BRANCH_PAGE {
                return Ok(());
            }
            let child = top.page.branch(top.index)?.child;
            let at = top.page.element_at_loc(top.index);
            self.enter(child, at, "pgid")?;
            if last && let Some(top) = self.stack.last_mut() {
                top.index = top.page.count().saturating_sub(1);
            }
        }
    }

    /// Descend from the root towards `key`, leaving the leaf on top with
    /// its index at the first element `>= key`.
    fn descend_to(&mut self, key: &[u8]) -> Result<()> {
        self.reset();
        self.enter_root()?;
        loop {
            let Some(top) = self.stack.last_mut() else {
                return Ok(());
            };
            if top.page.header.flags != BRANCH_PAGE {
                top.index = top.page.lower_bound(key)?;
                return Ok(());
            }
            top.index = top.page.branch_index(key)?;
            let child = top.page.branch(top.index)?.child;
            let at = top.page.element_at_loc(top.index);
            self.enter(child, at, "pgid")?;
        }
    }

    /// Where the item the cursor is on is stored: element `index` of
    /// leaf page `pgid` ([`At::Element`]), or of an inline bucket's page
    /// ([`At::Inline`]); `None` when the cursor is on no item. Decoders of
    /// the values (`crate::etcd`) attach it to the faults they find.
    #[must_use]
    pub fn at(&self) -> Option<At> {
        let top = self.stack.last()?;
        (top.index < top.page.count()).then(|| top.page.element_at_loc(top.index))
    }

    #[inline]
    fn item(&self) -> Result<Option<Item<'s>>> {
        let Some(top) = self.stack.last() else {
            return Ok(None);
        };
        if top.index >= top.page.count() {
            return Ok(None);
        }
        let Some((flags, start, mid, end)) = top.page.leaf_offsets(top.index) else {
            // Out of bounds: let the full decoder name the fault.
            return top.page.leaf(top.index).map(|_| None);
        };
        let (key, value) = top.page.split(start, mid, end);
        Ok(Some(Item { flags, key, value }))
    }

    /// Move up until a frame has a next element, then down to the first
    /// leaf element below it; skips empty leaves. Returns `false` at the
    /// end of the tree.
    fn advance(&mut self) -> Result<bool> {
        loop {
            // Pop exhausted frames.
            loop {
                match self.stack.last_mut() {
                    None => return Ok(false),
                    Some(top) if top.index + 1 < top.page.count() => {
                        top.index += 1;
                        break;
                    }
                    Some(_) => {
                        self.stack.pop();
                    }
                }
            }
            self.descend(false)?;
            self.on_leaf();
            self.cache_ahead(false);
            if let Some(top) = self.stack.last()
                && top.index < top.page.count()
            {
                return Ok(true);
            }
        }
    }

    /// Like `advance`, backwards.
    fn retreat(&mut self) -> Result<bool> {
        loop {
            loop {
                match self.stack.last_mut() {
                    None => return Ok(false),
                    Some(top) if top.index > 0 && top.page.count() > 0 => {
                        top.index = top.index.min(top.page.count()) - 1;
                        break;
                    }
                    Some(_) => {
                        self.stack.pop();
                    }
                }
            }
            self.descend(true)?;
            if let Some(top) = self.stack.last()
                && top.index < top.page.count()
            {
                return Ok(true);
            }
        }
    }

    /// Move to the first item of the bucket.
    ///
    /// # Errors
    /// Any fault met on the way (bad page, cycle, depth).
    pub fn first(&mut self) -> Result<Option<Item<'s>>> {
        self.reset();
        self.enter_root()?;
        self.descend(false)?;
        self.on_leaf();
        self.cache_ahead(true);
        if self.stack.last().is_some_and(|t| t.page.count() == 0) && !self.advance()? {
            return Ok(None);
        }
        self.item()
    }

    /// Move to the last item of the bucket.
    ///
    /// # Errors
    /// Any fault met on the way.
    pub fn last(&mut self) -> Result<Option<Item<'s>>> {
        self.reset();
        self.enter_root()?;
        if let Some(top) = self.stack.last_mut() {
            top.index = top.page.count().saturating_sub(1);
        }
        self.descend(true)?;
        if self.stack.last().is_some_and(|t| t.page.count() == 0) && !self.retreat()? {
            return Ok(None);
        }
        self.item()
    }

    /// Move to the next item; `None` past the last one.
    ///
    /// # Errors
    /// Any fault met on the way.
    #[expect(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<Option<Item<'s>>> {
        // Fast path: the next element is in the same leaf.
        if let Some(top) = self.stack.last_mut()
            && top.page.header.flags != BRANCH_PAGE
            && top.index + 1 < top.page.count()
        {
            top.index += 1;
            return self.item();
        }
        if self.stack.is_empty() {
            return Ok(None);
        }
        if self.advance()? { self.item() } else { Ok(None) }
    }

    /// Scan forward: call `f(key, value, flags)` for every item from the
    /// first one (or the first `>= from`) in key order, until `f` returns
    /// `false` (the cursor then stays on that item) or the bucket ends.
    /// The same walk, checks and prefetch hints as `first`/`seek` +
    /// `next`, without building an [`Item`] per key: a full scan's
    /// fastest path. A sub-bucket comes with its raw bucket value and
    /// `BUCKET_LEAF_FLAG` in `flags`.
    ///
    /// # Errors
    /// Any fault met on the way.
    pub fn scan(
        &mut self,
        from: Option<&[u8]>,
        mut f: impl FnMut(&[u8], &[u8], u32) -> bool,
    ) -> Result<()> {
        let found = match from {
            Some(k) => self.seek(k)?,
            None => self.first()?,
        };
        if found.is_none() {
            return Ok(());
        }
        loop {
            let Some(top) = self.stack.last() else {
                return Ok(());
            };
            let (page, count) = (&top.page, top.page.count());
            let bytes = page.bytes();
            let mut i = top.index;
            let mut stopped = false;
            while i < count {
                let Some((flags, start, mid, end)) = page.leaf_offsets(i) else {
                    // Out of bounds: let the full decoder name the fault.
                    return page.leaf(i).map(|_| ());
                };
                let key = bytes.get(start..mid).unwrap_or_default();
                let value = bytes.get(mid..end).unwrap_or_default();
                if !f(key, value, flags) {
                    stopped = true;
                    break;
                }
                i += 1;
            }
            if let Some(top) = self.stack.last_mut() {
                top.index = i.min(count.saturating_sub(1));
            }
            if stopped {
                return Ok(());
            }
            if !self.next_sibling_leaf() && !self.advance()? {
                return Ok(());
            }
        }
    }

    /// The scan's common step: the leaf on top is done and its parent
    /// branch has a next child that is a well-formed leaf. Replace the top
    /// frame with that leaf in place (what `advance` does through a pop,
    /// a descent and a push, with the same checks: the pages-entered bound
    /// and `tree_page_fast`'s header validation). Returns `false`, having
    /// changed nothing, whenever the step is anything else (the parent is
    /// exhausted, the child is a branch, an empty leaf or damaged), and
    /// the caller takes the general path, which also names any fault.
    #[inline]
    fn next_sibling_leaf(&mut self) -> bool {
        let n = self.stack.len();
        if n < 2 || self.entered >= self.file.file_pages() {
            return false;
        }
        let parent = &self.stack[n - 2];
        if parent.page.header.flags != BRANCH_PAGE {
            return false;
        }
        let next = parent.index + 1;
        let Some(page) =
            parent.page.branch_child(next).and_then(|child| self.file.tree_page_fast(child))
        else {
            return false;
        };
        if page.header.flags != LEAF_PAGE || page.count() == 0 {
            return false;
        }
        self.entered += 1;
        self.stack[n - 2].index = next;
        self.stack[n - 1] = Frame { page, index: 0 };
        self.on_leaf();
        self.cache_ahead(false);
        true
    }

    /// Move to the previous item; `None` before the first one.
    ///
    /// # Errors
    /// Any fault met on the way.
    pub fn prev(&mut self) -> Result<Option<Item<'s>>> {
        if self.stack.is_empty() {
            return Ok(None);
        }
        // A backward move ends a forward run: read-ahead arms again.
        if let Some(pf) = &mut self.prefetch {
            pf.rearm();
        }
        if self.retreat()? { self.item() } else { Ok(None) }
    }

    /// Move to the first item whose key is `>= key`; `None` when every key
    /// is smaller (bbolt `Cursor.Seek`).
    ///
    /// # Errors
    /// Any fault met on the way.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<Item<'s>>> {
        self.descend_to(key)?;
        self.on_leaf();
        self.cache_ahead(true);
        let past_end = self.stack.last().is_some_and(|t| t.index >= t.page.count());
        if past_end {
            // The key is beyond this leaf (or the leaf is empty): the
            // answer is the first element of the next non-empty leaf, as
            // bbolt's `Cursor.Seek` calls `next` (which skips empty pages).
            if let Some(top) = self.stack.last_mut() {
                top.index = top.page.count().saturating_sub(1);
            }
            if !self.advance()? {
                self.stack.clear();
                return Ok(None);
            }
        }
        self.item()
    }

    /// The sub-bucket at the cursor's current item, if it is one.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the bucket value is malformed.
    pub fn bucket(&self) -> Result<Option<Bucket<'s, S>>> {
        let Some(top) = self.stack.last() else {
            return Ok(None);
        };
        if top.index >= top.page.count() || !top.page.leaf(top.index)?.is_bucket() {
            return Ok(None);
        }
        Bucket::from_element(&self.file, &top.page, top.index).map(Some)
    }
}
