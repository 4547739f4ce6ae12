//! The structural walk: every page of a bbolt file labelled, every fault
//! found, in one pass.
//!
//! The walk reads the meta pages, the freelist run and every page
//! reachable from the current meta's root (branch and leaf pages of every
//! bucket, nested and inline buckets included), marking each page the
//! first time it is reached. A page reached twice (a cycle or a shared
//! child), a tree deeper than [`MAX_DEPTH`] levels, or any field pointing
//! outside the file becomes a problem in the [`Layout`]; the walk goes on
//! with the rest of the file. Memory is three bits per page of the file
//! plus one region per page run read, so it is bounded by the file's size.
//!
//! The checks are those of bbolt's `Tx.Check` (`tx_check.go`) and the
//! oracle's raw walk: page ids self-identify, page types are exactly
//! branch or leaf, element data lies inside the run, keys are non-empty,
//! strictly ascending and inside their parent's bounds, each page is used
//! once, no reachable page is free, every page below the high-water mark
//! is reachable or free.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::error::{At, Error};
use crate::layout::{Format, Group, Kind, Layout, Region, display_name};
use crate::regions::Regions;
use crate::source::PageSource;

use super::digest::{Bound, Digest, Rare};
use super::file::{BoltFile, MAX_DEPTH};
use super::freelist::{CountEncoding, FreelistIds};
use super::page::{BRANCH_PAGE, BucketHeader, META_PAGE, Page};

/// What to do besides labelling pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkOptions {
    /// Check key order within pages and against parent bounds.
    pub check_keys: bool,
    /// Walk the previous snapshot (the other meta page's tree) to tell
    /// pending pages from free ones. Visits only pages the current tree
    /// does not share with it.
    pub previous_snapshot: bool,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions { check_keys: true, previous_snapshot: true }
    }
}

/// What the walk learned about the freelist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreelistInfo {
    /// Meta `freelist` is the no-freelist sentinel (`NoFreelistSync`):
    /// free pages are the unreachable ones, as bbolt rebuilds them.
    NotStored,
    /// A freelist run was read.
    Stored {
        /// First page of the run.
        pgid: u64,
        /// Its `overflow` count.
        overflow: u32,
        /// Ids listed (free and pending together).
        ids: u64,
        /// How the count is stored.
        encoding: CountEncoding,
    },
    /// The freelist could not be read (see the problems).
    Unreadable {
        /// The meta's `freelist` field.
        pgid: u64,
    },
    /// The freelist was not read: the read did not settle
    /// ([`BoltLayout::unsure`]).
    NotRead {
        /// The meta's `freelist` field.
        pgid: u64,
    },
}

/// The freelist as stored, read without walking the file: the meta's
/// `freelist` field and that one run. For `info`-like reports that must
/// not read the whole file.
#[must_use]
pub fn freelist_info<S: PageSource + ?Sized>(file: &BoltFile<'_, S>) -> FreelistInfo {
    let meta = file.meta();
    if !meta.has_freelist() {
        return FreelistInfo::NotStored;
    }
    let pgid = meta.freelist;
    let read = file.read_page(pgid).ok().filter(|_| pgid >= 2 && pgid < meta.hwm);
    match read.as_ref().map(|p| (p, FreelistIds::parse(p))) {
        Some((page, Ok(ids))) => FreelistInfo::Stored {
            pgid,
            overflow: page.header.overflow,
            ids: ids.len() as u64,
            encoding: ids.encoding,
        },
        _ => FreelistInfo::Unreadable { pgid },
    }
}

/// A bbolt layout plus what only bbolt files have.
#[derive(Debug, Clone)]
pub struct BoltLayout {
    /// The labelled regions, buckets and problems.
    pub layout: Layout,
    /// The freelist as found.
    pub freelist: FreelistInfo,
    /// Tree pages the walk's [`TreePages`] did not have at hand
    /// ([`Fetched::Missing`]), at most [`MAX_MISSING`] of them, and how many
    /// in all: the layout leaves them out, so it is of no use until they
    /// are read. Always empty for [`walk`], which reads every page.
    pub missing: Vec<u64>,
    /// All tree pages found missing, counted beyond those listed.
    pub missing_count: u64,
}

impl BoltLayout {
    /// The layout of a read that did not settle (a writer committed while
    /// it read, so some pages may be of another snapshot than the meta
    /// page's): nothing in it is a verdict. Corrupt regions become
    /// `unknown`, the problems go (they may be transient), and a freelist
    /// that could not be read is one not read.
    #[must_use]
    pub fn unsure(mut self) -> BoltLayout {
        if self.layout.regions.iter().any(|r| r.kind == Kind::Corrupt) {
            let mut regions = Regions::new();
            for mut r in &self.layout.regions {
                if r.kind == Kind::Corrupt {
                    r.kind = Kind::Unknown;
                }
                regions.push(r);
            }
            self.layout.regions = regions;
        }
        self.layout.problems.clear();
        self.layout.problems_dropped = 0;
        if let FreelistInfo::Unreadable { pgid } = self.freelist {
            self.freelist = FreelistInfo::NotRead { pgid };
        }
        self
    }
}

/// Most missing pages a [`BoltLayout`] lists.
pub const MAX_MISSING: usize = 4096;

/// Where a walk gets the [`Digest`] of each tree page it enters.
pub trait TreePages<'s> {
    /// The digest of tree page `pgid`, which `referrer`'s `field` points
    /// to, under the bounds `lo` and `hi`, with key checks when
    /// `check_keys`: read from the file now, or kept from an earlier
    /// read of the same page under the same [`super::digest::context`].
    fn fetch(
        &self,
        pgid: u64,
        referrer: At,
        field: &'static str,
        lo: Bound<'_>,
        hi: Bound<'_>,
        check_keys: bool,
    ) -> Fetched<'_, 's>;

    /// About how many tree pages a walk will enter (0: no idea): the walk
    /// sizes its region list by it, so a big file's list is not grown by
    /// doubling past what it needs.
    fn pages_hint(&self) -> usize {
        0
    }
}

/// What [`TreePages::fetch`] gives.
#[derive(Debug)]
pub enum Fetched<'a, 's> {
    /// The digest, and the page when it was read just now (its keys are
    /// then its children's bounds).
    Page(Cow<'a, Digest>, Option<Page<'s>>),
    /// The page cannot be used: a problem of the file, as
    /// [`BoltFile::tree_page`] names it.
    Fault(Error),
    /// Not at hand: the walk goes on without it and lists it in
    /// [`BoltLayout::missing`].
    Missing,
}

/// [`TreePages`] over the file itself: every page read and digested when
/// the walk enters it.
#[derive(Debug)]
pub struct FromFile<'f, 's, S: PageSource + ?Sized>(pub &'f BoltFile<'s, S>);

impl<'s, S: PageSource + ?Sized> TreePages<'s> for FromFile<'_, 's, S> {
    fn fetch(
        &self,
        pgid: u64,
        referrer: At,
        field: &'static str,
        lo: Bound<'_>,
        hi: Bound<'_>,
        check_keys: bool,
    ) -> Fetched<'_, 's> {
        match self.0.tree_page(pgid, referrer, field) {
            Ok(page) => {
                let d = Digest::of(&page, lo, hi, check_keys);
                Fetched::Page(Cow::Owned(d), Some(page))
            }
            Err(e) => Fetched::Fault(e),
        }
    }
}

#[derive(Debug, Clone)]
struct BitSet(Vec<u64>);

impl BitSet {
    fn new(bits: u64) -> BitSet {
        BitSet(vec![0; usize::try_from(bits.div_ceil(64)).unwrap_or(0)])
    }
    fn get(&self, i: u64) -> bool {
        usize::try_from(i / 64)
            .ok()
            .and_then(|w| self.0.get(w))
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn set(&mut self, i: u64) {
        if let Some(w) = usize::try_from(i / 64).ok().and_then(|w| self.0.get_mut(w)) {
            *w |= 1 << (i % 64);
        }
    }
}

/// A page run the walk labelled, kept small (20 bytes; its first page is
/// where [`Runs`] files it) until [`Walker::finish`] writes the regions
/// in page order.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Bytes in use; `u32::MAX` when they do not fit (then in
    /// [`Runs::big`]).
    used: u32,
    /// Owning group plus one; 0 for none.
    group: u32,
    items: u32,
    /// Pages after the first (the continuation region's length).
    ovf: u32,
    depth: u16,
    kind: Kind,
    /// `run_len` is the run's pages (else 0: a page that could not be
    /// read).
    sized: bool,
}

impl Run {
    /// A one-page run outside every tree (a meta page, a page that could
    /// not be read); `sized` as the field.
    fn page(kind: Kind, sized: bool) -> Run {
        Run { used: 0, group: 0, items: 0, ovf: 0, depth: 0, kind, sized }
    }
}

/// The runs of a walk, each filed under its first page: by a table of a
/// `u32` per page of the file (nothing to sort: the pages come out in
/// order), and for a first page the table cannot hold (a file of 2^32
/// pages or more) in a list sorted at the end.
struct Runs {
    runs: Vec<Run>,
    /// Per page, 1 + the index of the run starting there; 0 for none.
    at: Vec<u32>,
    /// First page and index of runs not in `at`.
    stray: Vec<(u64, u32)>,
    /// Index and bytes in use of runs whose `used` does not fit a `u32`.
    big: Vec<(u32, u64)>,
}

impl Runs {
    fn new(pages: u64, hint: usize) -> Runs {
        let table = u32::try_from(pages).ok().and_then(|p| usize::try_from(p).ok()).unwrap_or(0);
        Runs {
            runs: Vec::with_capacity(hint.saturating_add(hint / 16)),
            at: vec![0; table],
            stray: Vec::new(),
            big: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.runs.len()
    }

    fn push(&mut self, pgid: u64, used: u64, mut run: Run) {
        let Ok(i) = u32::try_from(self.runs.len()) else {
            return;
        };
        run.used = u32::try_from(used).unwrap_or(u32::MAX);
        if run.used == u32::MAX {
            self.big.push((i, used));
        }
        self.runs.push(run);
        match usize::try_from(pgid).ok().and_then(|p| self.at.get_mut(p)) {
            Some(slot) if *slot == 0 => *slot = i.saturating_add(1),
            _ => self.stray.push((pgid, i)),
        }
    }

    /// Every run by first page: its first page, bytes in use, and run.
    fn into_page_order(mut self) -> impl Iterator<Item = (u64, u64, Run)> {
        self.stray.sort_unstable();
        let Runs { runs, at, stray, big } = self;
        let mut table = at
            .into_iter()
            .enumerate()
            .filter_map(|(p, i)| Some((p as u64, i.checked_sub(1)?)))
            .peekable();
        let mut stray = stray.into_iter().peekable();
        core::iter::from_fn(move || match (table.peek(), stray.peek()) {
            (Some(t), Some(s)) if s < t => stray.next(),
            (Some(_), _) => table.next(),
            (None, _) => stray.next(),
        })
        .filter_map(move |(pgid, i)| {
            let run = *runs.get(i as usize)?;
            let used = match big.iter().find(|(j, _)| *j == i) {
                Some(&(_, u)) if run.used == u32::MAX => u,
                _ => u64::from(run.used),
            };
            Some((pgid, used, run))
        })
    }
}

struct Walker<'a, 's, S: PageSource + ?Sized, P: TreePages<'s> + ?Sized> {
    file: &'a BoltFile<'s, S>,
    pages_from: &'a P,
    opts: WalkOptions,
    ps: u64,
    pages: u64,
    hwm: u64,
    claimed: BitSet,
    free: BitSet,
    prev: BitSet,
    runs: Runs,
    layout: Layout,
    /// Part of the tree or the freelist could not be read: pages not
    /// reached may still be in use (or free), so they are `Unknown`.
    incomplete: bool,
    missing: Vec<u64>,
    missing_count: u64,
}

/// Walk `file` and label every page.
///
/// Never fails: faults become [`Layout::problems`] and the pages
/// involved are labelled [`Kind::Corrupt`] where they could not be read.
#[must_use]
pub fn walk<S: PageSource + ?Sized>(file: &BoltFile<'_, S>, opts: WalkOptions) -> BoltLayout {
    walk_with(file, &FromFile(file), opts, None)
}

/// [`walk`], with the tree pages from `pages` (digests kept from earlier
/// reads, or [`FromFile`]); the meta pages and the freelist run are read
/// from `file`. `previous`, when given, lists the pages of the previous
/// snapshot (the other meta page's) that the current one may not use, in
/// place of walking the previous tree to find them
/// ([`WalkOptions::previous_snapshot`]).
#[must_use]
pub fn walk_with<'s, S: PageSource + ?Sized, P: TreePages<'s> + ?Sized>(
    file: &BoltFile<'s, S>,
    pages_from: &P,
    opts: WalkOptions,
    previous: Option<&[u64]>,
) -> BoltLayout {
    let ps = u64::from(file.page_size());
    let pages = file.file_pages();
    let mut w = Walker {
        file,
        pages_from,
        opts,
        ps,
        pages,
        hwm: file.meta().hwm,
        claimed: BitSet::new(pages),
        free: BitSet::new(pages),
        prev: BitSet::new(pages),
        runs: Runs::new(pages, pages_from.pages_hint()),
        layout: Layout {
            format: Format::Bolt,
            source_len: file.len(),
            page_size: file.page_size(),
            regions: crate::Regions::new(),
            groups: Vec::new(),
            problems: Vec::new(),
            problems_dropped: 0,
            warnings: Vec::new(),
        },
        incomplete: false,
        missing: Vec::new(),
        missing_count: 0,
    };
    w.metas();
    let freelist = w.freelist();
    w.layout.groups.push(Group {
        key: Vec::new(),
        path: String::new(),
        parent: None,
        level: 0,
        root: file.meta().root,
        host: None,
        sequence: file.meta().root_sequence,
        keys: 0,
        buckets: 0,
        pages: 0,
        height: 0,
    });
    w.tree(
        file.meta().root,
        At::Meta(file.current_index()),
        "root",
        0,
        1,
        Bound::NONE,
        Bound::NONE,
        1,
    );
    if w.opts.previous_snapshot {
        match previous {
            Some(ids) => {
                for &id in ids {
                    if id < w.pages {
                        w.prev.set(id);
                    }
                }
            }
            None => {
                if let Some(prev) = file.previous() {
                    w.previous(&prev, prev.meta().root, 1);
                    w.previous_freelist(&prev);
                }
            }
        }
    }
    w.finish(freelist);
    BoltLayout { layout: w.layout, freelist, missing: w.missing, missing_count: w.missing_count }
}

impl<'s, S: PageSource + ?Sized, P: TreePages<'s> + ?Sized> Walker<'_, 's, S, P> {
    fn problem(&mut self, e: Error) {
        self.layout.push_problem(e);
    }

    fn region(&self, pgid: u64, kind: Kind, head: u64, run_pages: u64) -> Region {
        let offset = pgid.saturating_mul(self.ps);
        let end = offset.saturating_add(run_pages.saturating_mul(self.ps)).min(self.file.len());
        Region { head, ..Region::of(offset, end.saturating_sub(offset), kind, pgid) }
    }

    /// Claim `[pgid, pgid + n)`; reports pages already claimed or outside
    /// the file. Returns how many pages of the run were claimed (0 if the
    /// head page was taken or is outside the file).
    ///
    /// The run stops at the first page someone else already owns: a damaged
    /// `overflow` field can stretch a run over a page labelled before it
    /// (the freelist page, a corrupt page, another run), and two regions
    /// over one page would break the layout's promise that regions never
    /// overlap (found by the `bolt_file` fuzz target).
    fn claim(&mut self, pgid: u64, n: u64, referrer: At, field: &'static str) -> u64 {
        if pgid >= self.pages || self.claimed.get(pgid) {
            if pgid < self.pages {
                self.problem(Error::Reused { at: referrer, field, pgid });
            }
            return 0;
        }
        let end = pgid.saturating_add(n).min(self.pages);
        for p in pgid..end {
            if self.claimed.get(p) {
                self.problem(Error::Reused { at: At::Page(pgid), field: "overflow", pgid: p });
                return p - pgid;
            }
            self.claimed.set(p);
        }
        end - pgid
    }

    /// Label a page that could not be read as corrupt (if it is in the
    /// file and nobody owns it yet).
    fn corrupt(&mut self, pgid: u64) {
        if pgid < self.pages && !self.claimed.get(pgid) {
            self.claimed.set(pgid);
            self.runs.push(pgid, 0, Run::page(Kind::Corrupt, false));
        }
    }

    /// Push the head region (and continuation region) of a page run of
    /// `claimed` pages (what [`Self::claim`] gave it, never more than the
    /// header's `overflow + 1`).
    #[expect(clippy::too_many_arguments)]
    fn push_run(
        &mut self,
        pgid: u64,
        overflow: u32,
        claimed: u64,
        kind: Kind,
        group: Option<u32>,
        depth: u16,
        items: u32,
        used: u64,
    ) {
        let ovf = u64::from(overflow).min(claimed.saturating_sub(1));
        self.runs.push(
            pgid,
            used,
            Run {
                used: 0,
                group: group.map_or(0, |g| g.saturating_add(1)),
                items,
                ovf: u32::try_from(ovf).unwrap_or(u32::MAX),
                depth,
                kind,
                sized: true,
            },
        );
    }

    /// Append the head region (and continuation region) of `run`.
    /// `run` starts at page `pgid` and has `used` bytes in use.
    fn run_regions(&self, pgid: u64, used: u64, run: &Run, out: &mut Regions) {
        let ovf = u64::from(run.ovf);
        let mut head = self.region(pgid, run.kind, pgid, 1);
        head.group = run.group.checked_sub(1);
        head.depth = run.depth;
        head.items = run.items;
        head.used = used;
        if run.sized {
            head.run_len = (ovf + 1).saturating_mul(self.ps);
        }
        out.push(head);
        if ovf > 0 {
            // A freelist run stays `freelist` throughout; tree runs continue
            // as `overflow`.
            let cont_kind =
                if run.kind == Kind::Freelist { Kind::Freelist } else { Kind::Overflow };
            let cont = self.region(pgid + 1, cont_kind, pgid, ovf);
            out.push(Region {
                offset: cont.offset,
                len: cont.len,
                kind: cont_kind,
                id: cont.id,
                head: pgid,
                ..head
            });
        }
    }

    fn metas(&mut self) {
        let cur = self.file.current_index();
        if self.hwm < 2 {
            self.problem(Error::Invalid {
                at: At::Meta(cur),
                field: "pgid",
                value: self.hwm,
                expected: "a high-water mark of at least 2 pages",
            });
        }
        if self.hwm > self.pages {
            self.problem(Error::Invalid {
                at: At::Meta(cur),
                field: "pgid (high-water mark)",
                value: self.hwm,
                expected: "at most the number of pages in the file",
            });
        }
        self.meta_faults();
        let len = self.file.len();
        if len % 512 == 32 && len >= 32 && len - 32 == self.hwm.saturating_mul(self.ps) {
            self.layout.push_warning(Error::SnapshotHash { offset: len - 32 });
        }
        for (i, m) in self.file.metas().iter().enumerate() {
            let idx = u8::try_from(i).unwrap_or(0);
            let pgid = i as u64;
            if pgid >= self.pages {
                continue;
            }
            self.claimed.set(pgid);
            self.runs.push(pgid, super::meta::META_END as u64, Run::page(Kind::Meta, true));
            let Ok(m) = m else { continue };
            if m.header_id != pgid {
                self.problem(Error::Invalid {
                    at: At::Meta(idx),
                    field: "id",
                    value: m.header_id,
                    expected: "the meta page's own index",
                });
            }
            if m.header_flags != META_PAGE {
                self.problem(Error::Invalid {
                    at: At::Meta(idx),
                    field: "flags",
                    value: u64::from(m.header_flags),
                    expected: "0x04 (meta page)",
                });
            }
            // Against the size the file is read at, not the current
            // meta's: a newer meta page with a stray pageSize is still
            // current (bbolt never reads the field there) and is the one
            // to name.
            if u64::from(m.page_size) != self.ps {
                self.problem(Error::Invalid {
                    at: At::Meta(idx),
                    field: "pageSize",
                    value: u64::from(m.page_size),
                    expected: "the page size the file is read at, from meta page 0 (or found by probing when meta page 0 is unusable)",
                });
            }
        }
    }

    /// A meta page that fails validation is a warning: readers fall
    /// back to the other one, the normal trace of a torn meta write
    /// (bbolt does the same).
    fn meta_faults(&mut self) {
        let cur = self.file.current_index();
        let txid = self.file.meta().txid;
        for (i, m) in self.file.metas().iter().enumerate() {
            let Err(fault) = m else { continue };
            self.layout.push_warning(Error::MetaFallback {
                meta: u8::try_from(i).unwrap_or(0),
                fault: *fault,
                used: cur,
                txid,
            });
        }
    }

    fn freelist(&mut self) -> FreelistInfo {
        let meta = *self.file.meta();
        if !meta.has_freelist() {
            return FreelistInfo::NotStored;
        }
        let at = At::Meta(self.file.current_index());
        let pgid = meta.freelist;
        let unreadable = FreelistInfo::Unreadable { pgid };
        // A page past the end is named by the meta field that points
        // there, as the root is (a truncated file, most often).
        let bad = if pgid < 2 || pgid >= self.hwm {
            Some("a page id in [2, high-water mark)")
        } else if pgid >= self.file.file_pages() {
            Some("a page id inside the file")
        } else {
            None
        };
        if let Some(expected) = bad {
            self.problem(Error::Invalid { at, field: "freelist", value: pgid, expected });
            self.incomplete = true;
            return unreadable;
        }
        let page = match self.file.read_page(pgid) {
            Ok(p) => p,
            Err(e) => {
                self.problem(e);
                self.corrupt(pgid);
                self.incomplete = true;
                return unreadable;
            }
        };
        let ids = match FreelistIds::parse(&page) {
            Ok(ids) => ids,
            Err(e) => {
                self.problem(e);
                self.corrupt(pgid);
                self.incomplete = true;
                return unreadable;
            }
        };
        let ovf = page.header.overflow;
        let claimed = self.claim(pgid, u64::from(ovf) + 1, at, "freelist");
        if claimed == 0 {
            return unreadable;
        }
        let n = ids.len() as u64;
        self.push_run(
            pgid,
            page.header.overflow,
            claimed,
            Kind::Freelist,
            None,
            0,
            u32::try_from(n).unwrap_or(u32::MAX),
            ids.used_bytes(),
        );
        if pgid.saturating_add(u64::from(ovf)) >= self.hwm {
            self.problem(Error::Invalid {
                at: At::Page(pgid),
                field: "overflow",
                value: u64::from(ovf),
                expected: "a freelist run ending below the high-water mark",
            });
        }
        for id in ids.iter() {
            if id < 2 || id >= self.hwm {
                self.problem(Error::Invalid {
                    at: At::Page(pgid),
                    field: "ids",
                    value: id,
                    expected: "free page ids in [2, high-water mark)",
                });
                continue;
            }
            if self.free.get(id) {
                self.problem(Error::DoubleFree { pgid: id });
            }
            self.free.set(id);
        }
        FreelistInfo::Stored { pgid, overflow: ovf, ids: n, encoding: ids.encoding }
    }

    fn new_group(
        &mut self,
        host: u64,
        key: &[u8],
        header: BucketHeader,
        parent: u32,
        inline: bool,
    ) -> u32 {
        let (ppath, plevel) =
            self.layout.group(parent).map(|g| (g.path.clone(), g.level)).unwrap_or_default();
        let mut path = ppath;
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(&display_name(key));
        self.layout.groups.push(Group {
            key: key.to_vec(),
            path,
            parent: Some(parent),
            level: plevel.saturating_add(1),
            root: header.root,
            host: inline.then_some(host),
            sequence: header.sequence,
            keys: 0,
            buckets: 0,
            pages: 0,
            height: 0,
        });
        if let Some(g) = self.layout.groups.get_mut(parent as usize) {
            g.buckets += 1;
        }
        u32::try_from(self.layout.groups.len() - 1).unwrap_or(u32::MAX)
    }

    /// Walk the tree rooted at `pgid` for bucket `group`. `frames` counts
    /// every level of nesting (tree depth and bucket nesting) so the
    /// recursion is bounded.
    #[expect(clippy::too_many_arguments)]
    fn tree(
        &mut self,
        pgid: u64,
        referrer: At,
        field: &'static str,
        group: u32,
        depth: u16,
        lo: Bound<'_>,
        hi: Bound<'_>,
        frames: u32,
    ) {
        if self.file.source().interrupted() {
            self.incomplete = true;
            return;
        }
        if frames > MAX_DEPTH * 4 || u32::from(depth) > MAX_DEPTH {
            self.problem(Error::TooDeep { at: At::Page(pgid), limit: MAX_DEPTH });
            self.incomplete = true;
            return;
        }
        // An id outside [2, hwm) is refused by tree_page, with the field
        // named; only a valid id can be a second use of a page.
        if pgid >= 2 && pgid < self.hwm && pgid < self.pages && self.claimed.get(pgid) {
            self.problem(Error::Reused { at: referrer, field, pgid });
            return;
        }
        let (digest, page) =
            match self.pages_from.fetch(pgid, referrer, field, lo, hi, self.opts.check_keys) {
                Fetched::Page(d, p) => (d, p),
                Fetched::Fault(e) => {
                    self.problem(e);
                    if pgid >= 2 && pgid < self.hwm {
                        self.corrupt(pgid);
                    }
                    self.incomplete = true;
                    return;
                }
                Fetched::Missing => {
                    self.missing_count += 1;
                    if self.missing.len() < MAX_MISSING {
                        self.missing.push(pgid);
                    }
                    self.incomplete = true;
                    return;
                }
            };
        let claimed = self.claim(pgid, u64::from(digest.overflow) + 1, referrer, field);
        if claimed == 0 {
            return;
        }
        if self.free.get(pgid) {
            self.problem(Error::ReachableFree { pgid });
        }
        let is_branch = digest.is_branch();
        let kind = if is_branch { Kind::Branch } else { Kind::Leaf };
        self.push_run(
            pgid,
            digest.overflow,
            claimed,
            kind,
            Some(group),
            depth,
            u32::from(digest.count),
            digest.used(),
        );
        if let Some(g) = self.layout.groups.get_mut(group as usize) {
            g.pages += 1;
            g.height = g.height.max(depth);
        }
        if is_branch {
            self.branch(pgid, &digest, page.as_ref(), group, depth, hi, frames);
        } else {
            let pre = digest.pre();
            self.rare_items(digest.rare().get(..pre).unwrap_or_default(), pgid, group, frames);
            self.leaf_entries(&digest, pgid, group, frames);
        }
    }

    /// Descend into the children of a branch page, meeting its problems
    /// where the walk over its elements meets them. `page`, when the
    /// page was read just now, gives the children's bounds as keys;
    /// otherwise they are hashes only.
    #[expect(clippy::too_many_arguments)]
    fn branch(
        &mut self,
        pgid: u64,
        d: &Digest,
        page: Option<&Page<'_>>,
        group: u32,
        depth: u16,
        hi: Bound<'_>,
        frames: u32,
    ) {
        let rare = d.rare();
        let mut next_rare = 0;
        let children = d.children();
        let key_of = |i: usize| -> Option<&[u8]> {
            let p = page?;
            let e = p.branch(i).ok()?;
            p.bytes().get(e.key)
        };
        for (i, c) in children.iter().enumerate() {
            while let Some((at, item)) = rare.get(next_rare)
                && *at as usize <= i
            {
                self.rare_item(item, pgid, group, frames);
                next_rare += 1;
            }
            if !d.descends(i) {
                continue;
            }
            let lo = Bound { hash: c.key, key: key_of(i) };
            let next = match children.get(i + 1) {
                Some(n) => Bound { hash: n.key, key: key_of(i + 1) },
                None => hi,
            };
            self.tree(
                c.pgid,
                At::Element { pgid, index: u32::try_from(i).unwrap_or(u32::MAX) },
                "pgid",
                group,
                depth.saturating_add(1),
                lo,
                next,
                frames + 1,
            );
        }
        for (_, item) in rare.get(next_rare..).unwrap_or_default() {
            self.rare_item(item, pgid, group, frames);
        }
    }

    /// Count the keys of a leaf (or inline) page and walk its sub-buckets,
    /// meeting its problems in element order (the key-order check's
    /// problems come first, from the caller).
    fn leaf_entries(&mut self, d: &Digest, host: u64, group: u32, frames: u32) {
        if let Some(g) = self.layout.groups.get_mut(group as usize) {
            g.keys += u64::from(d.keys);
        }
        let rest = d.rare().get(d.pre()..).unwrap_or_default();
        self.rare_items(rest, host, group, frames);
    }

    fn rare_items(&mut self, items: &[(u32, Rare)], host: u64, group: u32, frames: u32) {
        for (_, item) in items {
            self.rare_item(item, host, group, frames);
        }
    }

    fn rare_item(&mut self, item: &Rare, host: u64, group: u32, frames: u32) {
        match item {
            Rare::Problem { error, incomplete } => {
                self.problem(error.clone());
                self.incomplete |= *incomplete;
            }
            Rare::Bucket(b) => {
                let header: BucketHeader = b.header;
                let g = self.new_group(host, &b.key, header, group, header.root == 0);
                if header.root != 0 {
                    self.tree(
                        header.root,
                        b.at,
                        "root",
                        g,
                        1,
                        Bound::NONE,
                        Bound::NONE,
                        frames + 1,
                    );
                } else if let Some(ip) = &b.inline {
                    if let Some(gr) = self.layout.groups.get_mut(g as usize) {
                        gr.pages = 0;
                    }
                    let pre = ip.pre();
                    self.rare_items(ip.rare().get(..pre).unwrap_or_default(), host, g, frames);
                    if frames < MAX_DEPTH * 4 {
                        self.leaf_entries(ip, host, g, frames + 1);
                    }
                }
            }
        }
    }

    /// Mark pages reachable from the previous snapshot's tree that the
    /// current tree does not use. Faults are not reported: the current
    /// snapshot is what the file says; the previous one only refines the
    /// free/pending split.
    fn previous(&mut self, prev: &BoltFile<'s, S>, pgid: u64, frames: u32) {
        if prev.source().interrupted()
            || frames > MAX_DEPTH * 4
            || pgid >= self.pages
            || self.claimed.get(pgid)
            || self.prev.get(pgid)
        {
            return;
        }
        let Ok(page) = prev.tree_page(pgid, At::Page(pgid), "pgid") else {
            return;
        };
        let end = pgid.saturating_add(u64::from(page.header.overflow) + 1).min(self.pages);
        for p in pgid..end {
            self.prev.set(p);
        }
        for i in 0..page.count() {
            if page.header.flags == BRANCH_PAGE {
                if let Ok(e) = page.branch(i) {
                    self.previous(prev, e.child, frames + 1);
                }
            } else if let Ok(e) = page.leaf(i)
                && e.is_bucket()
            {
                let value = page.bytes().get(e.value.clone()).unwrap_or_default();
                if let Ok(h) = BucketHeader::parse(value, At::Page(pgid))
                    && h.root != 0
                {
                    self.previous(prev, h.root, frames + 1);
                }
            }
        }
    }

    /// The previous snapshot's freelist run is part of that snapshot too:
    /// bbolt reads it if it falls back to the older meta page.
    fn previous_freelist(&mut self, prev: &BoltFile<'s, S>) {
        let pgid = prev.meta().freelist;
        if !prev.meta().has_freelist() || pgid < 2 || pgid >= self.pages || self.claimed.get(pgid) {
            return;
        }
        if let Ok(h) = prev.page_header(pgid)
            && h.flags == super::page::FREELIST_PAGE
            && h.id == pgid
        {
            let end = pgid.saturating_add(u64::from(h.overflow) + 1).min(self.pages);
            for p in pgid..end {
                if !self.claimed.get(p) {
                    self.prev.set(p);
                }
            }
        }
    }

    /// Label every page nobody claimed, merging runs of equal kinds, and
    /// write every region in page order.
    fn finish(&mut self, freelist: FreelistInfo) {
        let stored = !matches!(freelist, FreelistInfo::NotStored);
        let runs = core::mem::replace(&mut self.runs, Runs::new(0, 0));
        // About one region per run, and a few for the spans between them.
        let mut out = Regions::with_capacity(runs.len() + runs.len() / 8 + 16);
        let mut order = runs.into_page_order().peekable();
        // The span of unclaimed pages being merged.
        let mut span: Option<Region> = None;
        let mut p = 0;
        while p < self.pages {
            if let Some((pgid, used, run)) = order.next_if(|(pgid, ..)| *pgid <= p) {
                if let Some(s) = span.take() {
                    out.push(s);
                }
                self.run_regions(pgid, used, &run, &mut out);
                continue;
            }
            if self.claimed.get(p) {
                p += 1;
                continue;
            }
            let kind = if p >= self.hwm || p < 2 {
                Kind::Unused
            } else if self.free.get(p) || (!stored && !self.incomplete) {
                if self.prev.get(p) { Kind::Pending } else { Kind::Free }
            } else if self.incomplete {
                // The lost part of the tree may use it; the damage that
                // lost it is already a problem.
                Kind::Unknown
            } else {
                self.problem(Error::Unreachable { pgid: p });
                Kind::Unreachable
            };
            let r = self.region(p, kind, p, 1);
            match &mut span {
                Some(last) if last.kind == kind && last.end() == r.offset => last.len += r.len,
                _ => {
                    if let Some(s) = span.replace(r) {
                        out.push(s);
                    }
                }
            }
            p += 1;
        }
        if let Some(s) = span {
            out.push(s);
        }
        // Runs past the last page (none: every run starts at a page of
        // the file), kept rather than lost.
        for (pgid, used, run) in order {
            self.run_regions(pgid, used, &run, &mut out);
        }
        out.shrink_to_fit();
        self.layout.regions = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitset() {
        let mut b = BitSet::new(130);
        assert!(!b.get(129));
        b.set(129);
        assert!(b.get(129));
        b.set(1000);
        assert!(!b.get(1000));
    }
}
