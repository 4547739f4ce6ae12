//! An opened bbolt file: page size, the chosen meta page, page reads.

use crate::error::{At, Error, MetaFault, Result};
use crate::source::PageSource;

use super::cursor::Prefetch;

use super::meta::{META_END, Meta};
use super::page::{
    BRANCH_PAGE, ELEMENT_SIZE, LEAF_PAGE, PAGE_HEADER_SIZE, Page, PageHeader, PageType,
};

/// Deepest tree mapwise follows (cycle guard; bbolt trees of a 2^48-page
/// file are far shallower).
pub const MAX_DEPTH: u32 = 64;

/// Which meta page a reader uses, with both meta pages as validated: a
/// [`BoltFile`] without its source. Small and `Copy`, so an engine can
/// hand each transaction the snapshot it began at and rebuild the
/// `BoltFile` from it ([`BoltFile::at`]) without re-reading the metas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// Page size in bytes.
    pub page_size: u32,
    /// Both meta pages: the meta or why it was rejected.
    pub metas: [Result<Meta, MetaFault>; 2],
    /// Index (0 or 1) of the meta page in use.
    pub current: u8,
    /// The meta page in use (`metas[current]`).
    pub meta: Meta,
}

/// A bbolt file opened for reading over any [`PageSource`].
///
/// Opening reads only the meta pages. Pages are read on demand, each
/// checked against the source length, its own `id` field and (for tree
/// pages) the high-water mark and page type.
pub struct BoltFile<'s, S: PageSource + ?Sized> {
    src: &'s S,
    /// Where cursors send CPU cache hints ([`BoltFile::with_hints`]).
    hints: Option<&'s dyn Prefetch>,
    len: u64,
    page_size: u32,
    metas: [Result<Meta, MetaFault>; 2],
    current: u8,
    meta: Meta,
    /// `ceil(len / page_size)`, kept because cursors check it per page.
    pages: u64,
}

impl<S: PageSource + ?Sized> core::fmt::Debug for BoltFile<'_, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BoltFile")
            .field("len", &self.len)
            .field("page_size", &self.page_size)
            .field("metas", &self.metas)
            .field("current", &self.current)
            .field("meta", &self.meta)
            .field("pages", &self.pages)
            .field("hints", &self.hints.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: PageSource + ?Sized> Clone for BoltFile<'_, S> {
    fn clone(&self) -> Self {
        BoltFile {
            src: self.src,
            hints: self.hints,
            len: self.len,
            page_size: self.page_size,
            metas: self.metas,
            current: self.current,
            meta: self.meta,
            pages: self.pages,
        }
    }
}

fn read_meta<S: PageSource + ?Sized>(src: &S, offset: u64, index: u8) -> Result<Meta, MetaFault> {
    let size = src.len();
    if offset.saturating_add(META_END as u64) > size {
        return Err(MetaFault::Truncated { offset, need: META_END as u64, size });
    }
    let bytes = src.read_at(offset, META_END).map_err(|e| match e {
        Error::Read { code, .. } => MetaFault::Read { code },
        _ => MetaFault::Truncated { offset, need: META_END as u64, size },
    })?;
    let meta = Meta::parse(&bytes, index).ok_or(MetaFault::Truncated {
        offset,
        need: META_END as u64,
        size,
    })?;
    meta.validate()?;
    Ok(meta)
}

impl<'s, S: PageSource + ?Sized> BoltFile<'s, S> {
    /// Open a bbolt file the way bbolt does (`db.go`, `getPageSize` and
    /// `meta()`): the page size comes from meta 0 when it validates, else
    /// from the first meta page found at 1 KiB << i (i = 0..=14); then the
    /// valid meta with the higher txid is current, falling back to the
    /// other one. Only the meta page that gives the page size must hold a
    /// usable one ([`Meta::check_page_size`]); bbolt ignores the field in
    /// the other, and so does this.
    ///
    /// # Errors
    /// [`Error::NoValidMeta`] when neither meta page validates (each
    /// fault says why: truncated, magic, version, checksum, page size).
    pub fn open(src: &'s S) -> Result<BoltFile<'s, S>> {
        let len = src.len();
        let meta0 = read_meta(src, 0, 0);
        // The page size a meta page supplies, or why it supplies none.
        let sized =
            |m: Result<Meta, MetaFault>| m.and_then(|m| m.check_page_size().map(|()| m.page_size));
        let page_size = sized(meta0).ok().or_else(|| {
            (0..=14u32)
                .map(|i| 1024u64 << i)
                .take_while(|&off| off < len.saturating_sub(1024))
                .find_map(|off| sized(read_meta(src, off, 1)).ok())
        });
        let Some(page_size) = page_size else {
            return Err(Error::NoValidMeta {
                meta0: sized(meta0).err().unwrap_or(MetaFault::PageSize(0)),
                meta1: sized(read_meta(src, 4096, 1)).err().unwrap_or(MetaFault::Truncated {
                    offset: 4096,
                    need: META_END as u64,
                    size: len,
                }),
            });
        };
        let meta1 = read_meta(src, u64::from(page_size), 1);
        let (current, meta) = match (&meta0, &meta1) {
            (Ok(a), Ok(b)) if b.txid > a.txid => (1, *b),
            (Ok(a), _) => (0, *a),
            (Err(_), Ok(b)) => (1, *b),
            (Err(a), Err(b)) => {
                return Err(Error::NoValidMeta { meta0: *a, meta1: *b });
            }
        };
        Ok(BoltFile {
            src,
            hints: None,
            len,
            page_size,
            metas: [meta0, meta1],
            current,
            meta,
            pages: len.div_ceil(u64::from(page_size)),
        })
    }

    /// The file as seen at `snap` (page size and meta pages as given, not
    /// re-read), over `src`. Used by engines whose transactions each keep
    /// the snapshot they began at while the file grows under them.
    #[must_use]
    pub fn at(src: &'s S, snap: &Snapshot) -> BoltFile<'s, S> {
        let len = src.len();
        BoltFile {
            src,
            hints: None,
            len,
            page_size: snap.page_size,
            metas: snap.metas,
            current: snap.current,
            meta: snap.meta,
            pages: len.div_ceil(u64::from(snap.page_size.max(1))),
        }
    }

    /// The same file with `sink` receiving the CPU cache hints of every
    /// cursor made from it ([`Prefetch::cache`]: the next leaves of a
    /// forward move). Native passes the read transaction, which prefetches
    /// from its mapping; without a sink (the default) cursors give none.
    #[must_use]
    pub fn with_hints(mut self, sink: &'s dyn Prefetch) -> BoltFile<'s, S> {
        self.hints = Some(sink);
        self
    }

    /// The CPU cache hint sink, if any ([`BoltFile::with_hints`]).
    #[must_use]
    pub fn hints(&self) -> Option<&'s dyn Prefetch> {
        self.hints
    }

    /// The page size and meta pages this file was opened at.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            page_size: self.page_size,
            metas: self.metas,
            current: self.current,
            meta: self.meta,
        }
    }

    /// The same file read at its other meta page (the previous
    /// snapshot), when that one validates.
    #[must_use]
    pub fn previous(&self) -> Option<BoltFile<'s, S>> {
        let other = 1 - self.current;
        match self.metas[usize::from(other)] {
            Ok(m) if m.txid < self.meta.txid => {
                Some(BoltFile { current: other, meta: m, ..self.clone() })
            }
            _ => None,
        }
    }

    /// The page source.
    #[must_use]
    pub fn source(&self) -> &'s S {
        self.src
    }

    /// Source length in bytes when opened.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `true` for an empty source (never, once opened).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Page size in bytes (from the meta that fixed it).
    #[must_use]
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// The current meta page.
    #[must_use]
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Both meta pages as validated: the meta or why it was rejected.
    pub fn metas(&self) -> &[Result<Meta, MetaFault>; 2] {
        &self.metas
    }

    /// Index (0 or 1) of the current meta page.
    #[must_use]
    pub fn current_index(&self) -> u8 {
        self.current
    }

    /// Whole or partial pages in the source: `ceil(len / page size)`.
    #[must_use]
    pub fn file_pages(&self) -> u64 {
        self.pages
    }

    /// Byte offset of page `pgid`, if it fits in a u64.
    #[must_use]
    pub fn page_offset(&self, pgid: u64) -> Option<u64> {
        pgid.checked_mul(u64::from(self.page_size))
    }

    /// Byte offset of page `pgid` when the whole page (one page size)
    /// lies inside the file: what reading a page whole needs (bbolt reads
    /// pages whole).
    ///
    /// # Errors
    /// [`Error::Invalid`] (field `pgid`) when it does not.
    pub(crate) fn whole_page_offset(&self, pgid: u64) -> Result<u64> {
        let ps = u64::from(self.page_size);
        self.page_offset(pgid).filter(|o| o.saturating_add(ps) <= self.len).ok_or(Error::Invalid {
            at: At::Page(pgid),
            field: "pgid",
            value: pgid,
            expected: "a page id inside the file",
        })
    }

    /// The first page of the run page `pgid` lies inside, when it is an
    /// overflow page (a continuation, not a page of its own): the nearest
    /// page before it, at most `max_back` pages back, whose header names
    /// itself (bbolt writes each page's id into its header, `page.go`
    /// `page.id`) with a known type, and whose `overflow` reaches `pgid`.
    /// `None` when no such page is found. Reads only page headers.
    #[must_use]
    pub fn run_holding(&self, pgid: u64, max_back: u64) -> Option<u64> {
        let first = pgid.saturating_sub(max_back);
        (first..pgid).rev().find_map(|p| {
            let h = self.page_header(p).ok()?;
            let known = !matches!(PageType::from_flags(h.flags), PageType::Unknown(_));
            if h.id != p || !known {
                return None;
            }
            Some((p + u64::from(h.overflow) >= pgid).then_some(p))
        })?
    }

    /// Read the 16-byte header of page `pgid`: only those bytes need be in
    /// the file (a truncated last page still has a header, as the peer's
    /// page table reads it: the oracle's `rawFile.page` in `raw.go`).
    ///
    /// # Errors
    /// [`Error::Invalid`] when the header is not inside the file.
    pub fn page_header(&self, pgid: u64) -> Result<PageHeader> {
        let offset = self
            .page_offset(pgid)
            .filter(|o| o.saturating_add(PAGE_HEADER_SIZE as u64) <= self.len)
            .ok_or(Error::Invalid {
                at: At::Page(pgid),
                field: "pgid",
                value: pgid,
                expected: "a page id whose header is inside the file",
            })?;
        let b = self.src.read_at(offset, PAGE_HEADER_SIZE)?;
        PageHeader::parse(&b).ok_or(Error::Read { offset, len: 16, code: 0 })
    }

    /// Read page `pgid` with its whole overflow run, checking that the run
    /// lies inside the file and that the page's `id` field says `pgid`.
    ///
    /// # Errors
    /// [`Error::OutOfBounds`] (page or run past the end),
    /// [`Error::Invalid`] (field `id` differs).
    pub fn read_page(&self, pgid: u64) -> Result<Page<'s>> {
        let ps = u64::from(self.page_size);
        let at = At::Page(pgid);
        let offset = self.whole_page_offset(pgid)?;
        let first = self.src.read_at(offset, self.page_size as usize)?;
        let header = PageHeader::parse(&first).ok_or(Error::Read { offset, len: ps, code: 0 })?;
        if header.id != pgid {
            return Err(Error::Invalid {
                at,
                field: "id",
                value: header.id,
                expected: "the page's own id",
            });
        }
        if header.overflow == 0 {
            return Ok(Page::from_parts(at, pgid, header, first));
        }
        let run = (u64::from(header.overflow) + 1).saturating_mul(ps);
        if offset.saturating_add(run) > self.len {
            return Err(Error::OutOfBounds {
                at,
                field: "overflow",
                offset,
                len: run,
                size: self.len,
            });
        }
        let run = usize::try_from(run).map_err(|_| Error::OutOfBounds {
            at,
            field: "overflow",
            offset,
            len: run,
            size: self.len,
        })?;
        drop(first);
        Page::new(at, pgid, self.src.read_at(offset, run)?)
    }

    /// [`BoltFile::tree_page`] without the error: `None` on any fault (then
    /// `tree_page` says which). The cursor's hot path: a scan enters every
    /// page, and building error locations there costs more than the checks.
    #[inline]
    pub(crate) fn tree_page_fast(&self, pgid: u64) -> Option<Page<'s>> {
        if pgid < 2 || pgid >= self.meta.hwm || pgid >= self.pages {
            return None;
        }
        let ps = self.page_size as usize;
        let offset = self.page_offset(pgid)?;
        let first = self.src.read_at(offset, ps).ok()?;
        let header = PageHeader::parse(&first)?;
        if header.id != pgid
            || header.overflow != 0
            || (header.flags != BRANCH_PAGE && header.flags != LEAF_PAGE)
            || (header.flags == BRANCH_PAGE && header.count == 0)
            || PAGE_HEADER_SIZE + usize::from(header.count) * ELEMENT_SIZE > first.len()
        {
            // Overflow runs and faults take the full path.
            return None;
        }
        Some(Page::from_parts(At::Page(pgid), pgid, header, first))
    }

    /// The checks [`BoltFile::tree_page`] makes of a tree reference before
    /// reading anything: `2 <= pgid < high-water mark`, inside the file.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming `referrer`'s `field`.
    pub fn tree_page_id(&self, pgid: u64, referrer: At, field: &'static str) -> Result<()> {
        if pgid < 2 || pgid >= self.meta.hwm {
            return Err(Error::Invalid {
                at: referrer,
                field,
                value: pgid,
                expected: "a page id in [2, high-water mark)",
            });
        }
        if pgid >= self.file_pages() {
            return Err(Error::Invalid {
                at: referrer,
                field,
                value: pgid,
                expected: "a page id inside the file",
            });
        }
        Ok(())
    }

    /// Read a page that a tree reference points to: `2 <= pgid <
    /// high-water mark`, type branch or leaf, element array inside the run.
    /// `referrer` and `field` name the reference, for the error.
    ///
    /// # Errors
    /// As [`BoltFile::read_page`], plus [`Error::Invalid`] for an id
    /// outside `[2, hwm)` or a page that is not a branch or leaf.
    pub fn tree_page(&self, pgid: u64, referrer: At, field: &'static str) -> Result<Page<'s>> {
        self.tree_page_id(pgid, referrer, field)?;
        let page = self.read_page(pgid).map_err(|e| match e {
            // Name the reference that pointed past the end, not the page.
            Error::Invalid { at: At::Page(_), field: "pgid", value, expected } => {
                Error::Invalid { at: referrer, field, value, expected }
            }
            e => e,
        })?;
        page.check_tree()?;
        Ok(page)
    }
}
