//! The one vocabulary every front end draws: a [`Layout`] of labelled
//! byte regions.
//!
//! A parser turns a file into a `Layout`; the TUI page map, the web page
//! map, `inspector pages` and `inspector residency` all read the same
//! `Layout`, so they cannot disagree about what a byte of the file is.
//!
//! Regions are sorted by offset, never overlap, and cover the whole source
//! from byte 0 to its length. Runs of pages of the same dull kind (free,
//! unused, unreachable) are merged into one region, so the layout of a
//! mostly empty file stays small.

use alloc::string::String;
use alloc::vec::Vec;

use crate::error::Error;
use crate::regions::Regions;

/// Which format a [`Layout`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// A bbolt (Go) database file.
    Bolt,
    /// An RRDtool round-robin database.
    Rrd,
    /// A Mercurial revlog index (`.i`).
    Revlog,
    /// Bytes no parser recognised.
    Unknown,
}

impl Format {
    /// Lower-case name, as printed in JSON output.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Format::Bolt => "bolt",
            Format::Rrd => "rrd",
            Format::Revlog => "revlog",
            Format::Unknown => "unknown",
        }
    }

    /// The name people know the format by, for messages: `bbolt`, `rrd`,
    /// `revlog`, `unknown` (the JSON name [`Format::name`] says `bolt`).
    #[must_use]
    pub fn display_name(self) -> &'static str {
        match self {
            Format::Bolt => "bbolt",
            other => other.name(),
        }
    }
}

/// What a region of the file is. Front ends colour by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
#[repr(u8)]
pub enum Kind {
    /// bbolt meta page (pages 0 and 1).
    Meta,
    /// bbolt freelist page (first page of the freelist run).
    Freelist,
    /// bbolt branch page (first page of its run).
    Branch,
    /// bbolt leaf page (first page of its run).
    Leaf,
    /// Continuation pages of a multi-page run (bbolt `overflow`); the
    /// region's `head` is the run's first page.
    Overflow,
    /// Listed as free and not needed by the previous snapshot.
    Free,
    /// Free in the current snapshot but still reachable from the previous
    /// meta page's tree: released only when no reader of that snapshot
    /// remains (bbolt's pending pages).
    Pending,
    /// Below the high-water mark, neither reachable nor free: a leak
    /// (bbolt's `Tx.Check` "unreachable unfreed").
    Unreachable,
    /// At or past the high-water mark: allocated file space no page uses.
    Unused,
    /// Below the high-water mark and not reached, but the walk lost part
    /// of the tree (or the freelist) to damage, so whether the page is in
    /// use or free cannot be told.
    Unknown,
    /// RRDtool definitions that only create/tune change: `stat_head`,
    /// `ds_def`, `rra_def` (`rrd_format.h`); `id` is the section number
    /// (0, 1, 2), `items` its structure count.
    Header,
    /// RRDtool state rewritten by every update: `live_head`, `pdp_prep`,
    /// `cdp_prep`, `rra_ptr`; `id` is the section number (3 to 6).
    Prep,
    /// Rows of an RRDtool archive (RRA); `group` is the RRA, `id` the
    /// first row, `items` the rows in the region.
    Rows,
    /// The row of an RRA that the last update wrote (`rra_ptr.cur_row`);
    /// the next update writes the row after it.
    CurRow,
    /// A revlog index entry (64 bytes in v1, 76 in v0); `id` is the
    /// revision.
    Entry,
    /// A revlog data chunk stored inline after its entry; `id` is the
    /// revision.
    Chunk,
    /// A page the parser tried to read and rejected; see the layout's
    /// problems for why.
    Corrupt,
    /// Bytes of a file whose format is unknown.
    Data,
}

impl Kind {
    /// Every kind, in legend order.
    pub const ALL: [Kind; 18] = [
        Kind::Meta,
        Kind::Freelist,
        Kind::Branch,
        Kind::Leaf,
        Kind::Overflow,
        Kind::Free,
        Kind::Pending,
        Kind::Unreachable,
        Kind::Unused,
        Kind::Unknown,
        Kind::Header,
        Kind::Prep,
        Kind::Rows,
        Kind::CurRow,
        Kind::Entry,
        Kind::Chunk,
        Kind::Corrupt,
        Kind::Data,
    ];

    /// Kinds that win a map cell whenever they are in it, in order of
    /// precedence ([`Layout::cell_kind`]): `corrupt`, then the small
    /// regions a reader of the map looks for — an RRD archive's current
    /// row and the header sections every update reads and rewrites.
    pub const MARKERS: [Kind; 4] = [Kind::Corrupt, Kind::CurRow, Kind::Header, Kind::Prep];

    /// Lower-case label, as printed by `inspector pages` and in JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::Meta => "meta",
            Kind::Freelist => "freelist",
            Kind::Branch => "branch",
            Kind::Leaf => "leaf",
            Kind::Overflow => "overflow",
            Kind::Free => "free",
            Kind::Pending => "pending",
            Kind::Unreachable => "unreachable",
            Kind::Unused => "unused",
            Kind::Unknown => "unknown",
            Kind::Header => "header",
            Kind::Prep => "prep",
            Kind::Rows => "rows",
            Kind::CurRow => "cur_row",
            Kind::Entry => "entry",
            Kind::Chunk => "chunk",
            Kind::Corrupt => "corrupt",
            Kind::Data => "data",
        }
    }

    /// Index of this kind in [`Kind::ALL`].
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One labelled byte range of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// First byte of the region.
    pub offset: u64,
    /// Length in bytes (a whole number of format pages, except possibly
    /// for a partial page at the end of the file).
    pub len: u64,
    /// What the bytes are.
    pub kind: Kind,
    /// Format page id of the region's first page (bbolt `pgid`).
    pub id: u64,
    /// For [`Kind::Overflow`], the id of the page that heads the run;
    /// otherwise equal to `id`.
    pub head: u64,
    /// Index into [`Layout::groups`] of the structure owning this region
    /// (the bbolt bucket whose tree holds the page).
    pub group: Option<u32>,
    /// Depth of the page in its tree: 1 for a bucket's root page.
    /// 0 when not a tree page.
    pub depth: u16,
    /// Elements in the page (branch/leaf), ids (freelist), 0 otherwise.
    pub items: u32,
    /// Bytes of the run in use (header + element array + data); with
    /// `run_len` this gives the fill factor.
    pub used: u64,
    /// Bytes of the whole run this region belongs to (head and
    /// continuation pages), so `used / run_len` is the fill.
    pub run_len: u64,
}

impl Region {
    /// `len` bytes from `offset` of `kind`, with format id `id` heading
    /// itself, in no group, and every other field 0: what a parser
    /// starts from before it sets the fields its format has.
    #[must_use]
    pub fn of(offset: u64, len: u64, kind: Kind, id: u64) -> Region {
        Region {
            offset,
            len,
            kind,
            id,
            head: id,
            group: None,
            depth: 0,
            items: 0,
            used: 0,
            run_len: 0,
        }
    }

    /// Fill of the page run in `[0, 1]`; 0 when the run is empty.
    #[must_use]
    #[expect(clippy::cast_precision_loss)]
    pub fn fill(&self) -> f64 {
        if self.run_len == 0 { 0.0 } else { (self.used as f64 / self.run_len as f64).min(1.0) }
    }

    /// One past the last byte of the region.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// A named structure that owns regions: a bbolt bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Raw name bytes (bucket key); empty for the root bucket.
    pub key: Vec<u8>,
    /// Display path from the top, e.g. `key/sub` (names printed as text
    /// when printable ASCII, else hex).
    pub path: String,
    /// Enclosing group (`None` for the root bucket).
    pub parent: Option<u32>,
    /// Nesting level: 0 for the root bucket, 1 for top-level buckets.
    pub level: u16,
    /// Root page id of the bucket's tree; 0 for an inline bucket.
    pub root: u64,
    /// For an inline bucket, the page id of the leaf holding it.
    pub host: Option<u64>,
    /// Bucket sequence (`NextSequence`).
    pub sequence: u64,
    /// Plain key/value entries directly in this bucket.
    pub keys: u64,
    /// Sub-buckets directly in this bucket.
    pub buckets: u64,
    /// Page runs (branch + leaf) of this bucket's own tree.
    pub pages: u64,
    /// Height of the tree: 1 for a single leaf, 0 for an inline bucket.
    pub height: u16,
}

/// Per-kind totals of a layout, all indexed by [`Kind::index`]: the one
/// place the text reports, JSON, the TUI status line and the browser
/// legend get their per-kind figures from ([`Layout::kind_counts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindCounts {
    /// Bytes of each kind.
    pub bytes: [u64; Kind::ALL.len()],
    /// Distinct map pages (of the `unit` given to [`Layout::kind_counts`])
    /// that regions of each kind overlap, however little. A page holding
    /// two kinds counts for both, so the column can sum to more than the
    /// file's pages: it answers "how many pages does touching every
    /// region of this kind touch", not "how the pages divide".
    pub pages: [u64; Kind::ALL.len()],
    /// Regions of each kind.
    pub regions: [u64; Kind::ALL.len()],
}

/// [`Layout::kind_counts`] as an accumulator, for a caller that makes
/// other figures in the same pass over the regions: feed it every region
/// in layout order.
#[derive(Debug, Clone)]
pub struct KindCounter {
    unit: u64,
    counts: KindCounts,
    last_page: [Option<u64>; Kind::ALL.len()],
}

impl KindCounter {
    /// Counting map pages of `unit` bytes (0 is taken as 1).
    #[must_use]
    pub fn new(unit: u64) -> KindCounter {
        KindCounter {
            unit: unit.max(1),
            counts: KindCounts::default(),
            last_page: [None; Kind::ALL.len()],
        }
    }

    /// Count `r`, the region after the last one added. Regions are sorted
    /// and do not overlap, so a region can share only its first page with
    /// an earlier region of its kind.
    pub fn add(&mut self, r: &Region) {
        if r.len == 0 {
            return;
        }
        let i = r.kind.index();
        let first = r.offset / self.unit;
        let last = (r.end() - 1) / self.unit;
        let mut pages = last - first + 1;
        if let Some(prev) = self.last_page.get_mut(i) {
            if *prev == Some(first) {
                pages -= 1;
            }
            *prev = Some(last);
        }
        let c = &mut self.counts;
        if let (Some(b), Some(p), Some(n)) =
            (c.bytes.get_mut(i), c.pages.get_mut(i), c.regions.get_mut(i))
        {
            *b = b.saturating_add(r.len);
            *p = p.saturating_add(pages);
            *n = n.saturating_add(1);
        }
    }

    /// The counts of the regions added.
    #[must_use]
    pub fn counts(self) -> KindCounts {
        self.counts
    }
}

/// Adds up the bytes of each kind that regions hold inside cells, for
/// cells asked in ascending order in one pass over the regions (cells out
/// of order start a new pass): [`Layout::cell_kinds`] and the live view's
/// index of the regions it has no page bitmap for.
#[derive(Clone)]
pub struct CellBytes<'a> {
    regions: &'a Regions,
    next: core::iter::Peekable<crate::regions::Iter<'a>>,
    /// Start of the last cell asked; `u64::MAX` before the first.
    at: u64,
}

impl<'a> CellBytes<'a> {
    /// Over `regions` (sorted, not overlapping).
    #[must_use]
    pub fn new(regions: &'a Regions) -> CellBytes<'a> {
        CellBytes { regions, next: regions.iter_from(0).peekable(), at: u64::MAX }
    }

    /// Add to `bytes` (by [`Kind::index`]) the bytes of each region inside
    /// `[start, end)`.
    pub fn add(&mut self, start: u64, end: u64, bytes: &mut [u64; Kind::ALL.len()]) {
        if start < self.at {
            // (Also the first cell.)
            let from = self.regions.first_ending_after(start);
            self.next = self.regions.iter_from(from).peekable();
        }
        self.at = start;
        while let Some(r) = self.next.peek() {
            if r.offset >= end {
                break;
            }
            let overlap = r.end().min(end).saturating_sub(r.offset.max(start));
            if let Some(b) = bytes.get_mut(r.kind.index()) {
                *b = b.saturating_add(overlap);
            }
            if r.end() > end {
                // It goes on into the next cell.
                break;
            }
            self.next.next();
        }
    }
}

/// The kind a cell with `bytes` of each kind (by [`Kind::index`]) is
/// drawn in: the rule of [`Layout::cell_kind`], for a caller that counts
/// the bytes its own way.
#[must_use]
pub fn kind_of_cell(bytes: &[u64; Kind::ALL.len()]) -> Kind {
    let has = |k: Kind| bytes.get(k.index()).is_some_and(|&b| b > 0);
    if let Some(k) = Kind::MARKERS.iter().copied().find(|&k| has(k)) {
        return k;
    }
    let mut best = Kind::Data;
    let mut most = 0;
    for k in Kind::ALL {
        let b = bytes.get(k.index()).copied().unwrap_or(0);
        if b > most {
            most = b;
            best = k;
        }
    }
    best
}

/// A whole file described as regions, plus the structures that own them
/// and every problem found on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Which parser produced it.
    pub format: Format,
    /// Source length in bytes when parsed.
    pub source_len: u64,
    /// The format's page size in bytes (bbolt: the meta's `pageSize`);
    /// 0 when the format has no pages.
    pub page_size: u32,
    /// Sorted, non-overlapping regions covering `[0, source_len)`,
    /// stored compactly.
    pub regions: Regions,
    /// Structures that own regions (bbolt buckets; index 0 is the root
    /// bucket).
    pub groups: Vec<Group>,
    /// Problems found, at most [`Layout::MAX_PROBLEMS`] of them.
    pub problems: Vec<Error>,
    /// Problems found beyond the ones kept in `problems`.
    pub problems_dropped: u64,
    /// Facts worth a look that are not faults of the file as its readers
    /// use it (e.g. a torn meta page that readers skip), at most
    /// [`Layout::MAX_PROBLEMS`].
    pub warnings: Vec<Error>,
}

impl Layout {
    /// Most problems a layout keeps; more are only counted.
    pub const MAX_PROBLEMS: usize = 1000;

    /// A layout of a source no parser recognised: one `Data` region.
    #[must_use]
    pub fn unknown(source_len: u64) -> Layout {
        let mut regions = Regions::new();
        if source_len > 0 {
            regions.push(Region::of(0, source_len, Kind::Data, 0));
        }
        Layout {
            format: Format::Unknown,
            source_len,
            page_size: 0,
            regions,
            groups: Vec::new(),
            problems: Vec::new(),
            problems_dropped: 0,
            warnings: Vec::new(),
        }
    }

    /// Index of the region containing byte `offset`, if any.
    #[must_use]
    pub fn region_index_at(&self, offset: u64) -> Option<usize> {
        self.locate(offset).map(|(i, _)| i)
    }

    /// The region containing byte `offset`, if any.
    #[must_use]
    pub fn region_at(&self, offset: u64) -> Option<Region> {
        self.locate(offset).map(|(_, r)| r)
    }

    /// Index and value of the region containing byte `offset`.
    fn locate(&self, offset: u64) -> Option<(usize, Region)> {
        let i = self.regions.first_ending_after(offset);
        self.regions.get(i).filter(|r| r.offset <= offset && offset < r.end()).map(|r| (i, r))
    }

    /// Regions overlapping `[offset, offset + len)`, in order.
    pub fn regions_in(&self, offset: u64, len: u64) -> impl Iterator<Item = Region> + '_ {
        let end = offset.saturating_add(len);
        let first = self.regions.first_ending_after(offset);
        self.regions.iter_from(first).take_while(move |r| r.offset < end)
    }

    /// Bytes, regions and distinct map pages of each kind, for map pages
    /// of `unit` bytes (see [`KindCounts::pages`]; `unit` 0 is taken as
    /// 1). One pass over the regions: they are sorted and do not overlap,
    /// so a region can share only its first page with an earlier region
    /// of its kind.
    #[must_use]
    pub fn kind_counts(&self, unit: u64) -> KindCounts {
        let mut c = KindCounter::new(unit);
        for r in &self.regions {
            c.add(&r);
        }
        c.counts()
    }

    /// The kind a map cell covering bytes `[start, end)` is drawn in —
    /// the rule the TUI page map and the browser map share:
    ///
    /// 1. `corrupt` if any byte of the cell is;
    /// 2. else the first [marker kind](Kind::MARKERS) present in the cell,
    ///    however few its bytes: `cur_row` (the row the next update
    ///    follows), then the RRD `header` and `prep` sections (read and
    ///    rewritten by every update), so a 80-byte current row or a
    ///    header sharing its page with rows stays visible;
    /// 3. else the kind with the most bytes (ties: legend order);
    /// 4. `data` for an empty cell.
    #[must_use]
    pub fn cell_kind(&self, start: u64, end: u64) -> Kind {
        self.cell_kinds(&[(start, end)]).pop().unwrap_or(Kind::Data)
    }

    /// [`Layout::cell_kind`] of each cell `[start, end)` of `cells`, in
    /// one pass over the regions when the cells come in ascending order
    /// (a map's row, a screen); cells out of order start a new pass.
    #[must_use]
    pub fn cell_kinds(&self, cells: &[(u64, u64)]) -> Vec<Kind> {
        let mut cursor = CellBytes::new(&self.regions);
        cells
            .iter()
            .map(|&(start, end)| {
                let mut bytes = [0u64; Kind::ALL.len()];
                cursor.add(start, end, &mut bytes);
                kind_of_cell(&bytes)
            })
            .collect()
    }

    /// The group at `index`, if any.
    #[must_use]
    pub fn group(&self, index: u32) -> Option<&Group> {
        self.groups.get(index as usize)
    }

    /// Record a problem, keeping at most [`Layout::MAX_PROBLEMS`].
    pub fn push_problem(&mut self, e: Error) {
        if self.problems.len() < Self::MAX_PROBLEMS {
            self.problems.push(e);
        } else {
            self.problems_dropped = self.problems_dropped.saturating_add(1);
        }
    }

    /// Record a warning, keeping at most [`Layout::MAX_PROBLEMS`].
    pub fn push_warning(&mut self, e: Error) {
        if self.warnings.len() < Self::MAX_PROBLEMS {
            self.warnings.push(e);
        }
    }

    /// Total problems found (kept and dropped).
    #[must_use]
    pub fn problem_count(&self) -> u64 {
        (self.problems.len() as u64).saturating_add(self.problems_dropped)
    }
}

/// Display form of a name: printable ASCII as is, anything else as hex.
#[must_use]
pub fn display_name(bytes: &[u8]) -> String {
    use core::fmt::Write;
    let printable =
        !bytes.is_empty() && bytes.iter().all(|&b| b.is_ascii_graphic() && b != b'/' && b != b'\\');
    let mut s = String::new();
    if printable {
        for &b in bytes {
            s.push(char::from(b));
        }
    } else {
        s.push_str("0x");
        for b in bytes {
            let _ = write!(s, "{b:02x}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(offset: u64, len: u64, kind: Kind) -> Region {
        Region { run_len: len, ..Region::of(offset, len, kind, offset / 10) }
    }

    #[test]
    fn lookup_by_offset() {
        let mut l = Layout::unknown(0);
        l.source_len = 40;
        l.regions = alloc::vec![
            region(0, 10, Kind::Meta),
            region(10, 20, Kind::Leaf),
            region(30, 10, Kind::Free)
        ]
        .into();
        assert_eq!(l.region_at(0).map(|r| r.kind), Some(Kind::Meta));
        assert_eq!(l.region_at(29).map(|r| r.kind), Some(Kind::Leaf));
        assert_eq!(l.region_at(30).map(|r| r.kind), Some(Kind::Free));
        assert_eq!(l.region_at(40), None);
        assert_eq!(l.regions_in(5, 10).count(), 2);
        assert_eq!(l.regions_in(40, 10).count(), 0);
        let c = l.kind_counts(10);
        assert_eq!(c.bytes[Kind::Leaf.index()], 20);
        assert_eq!(c.pages[Kind::Leaf.index()], 2);
    }

    #[test]
    fn kind_pages_are_distinct_pages_touched() {
        // Pages of 10 bytes: rows 0..13, cur_row 13..15, rows 15..25,
        // cur_row 25..28, rows 28..40 — cur_row overlaps pages 1 and 2,
        // rows all four, page 1 holding both kinds.
        let mut l = Layout::unknown(0);
        l.source_len = 40;
        l.regions = alloc::vec![
            region(0, 13, Kind::Rows),
            region(13, 2, Kind::CurRow),
            region(15, 10, Kind::Rows),
            region(25, 3, Kind::CurRow),
            region(28, 12, Kind::Rows),
        ]
        .into();
        let c = l.kind_counts(10);
        assert_eq!(c.pages[Kind::CurRow.index()], 2);
        assert_eq!(c.pages[Kind::Rows.index()], 4);
        assert_eq!(c.regions[Kind::Rows.index()], 3);
        assert_eq!(c.bytes[Kind::CurRow.index()], 5);
        // Markers win their cell however small; corrupt wins over them.
        assert_eq!(l.cell_kind(10, 20), Kind::CurRow);
        assert_eq!(l.cell_kind(30, 40), Kind::Rows);
        let cells = [(0, 10), (10, 20), (20, 30), (30, 40)];
        let want = [Kind::Rows, Kind::CurRow, Kind::CurRow, Kind::Rows];
        assert_eq!(l.cell_kinds(&cells), want);
        // Out of order, and cells that do not meet, give the same kinds.
        assert_eq!(
            l.cell_kinds(&[(30, 40), (0, 10), (20, 30)]),
            [Kind::Rows, Kind::Rows, Kind::CurRow]
        );
        assert_eq!(
            l.cell_kinds(&[(0, 5), (12, 14), (35, 40)]),
            [Kind::Rows, Kind::CurRow, Kind::Rows]
        );
        let mut v = l.regions.to_vec();
        v[4].kind = Kind::Corrupt;
        l.regions = v.into();
        assert_eq!(l.cell_kind(20, 30), Kind::Corrupt);
    }

    #[test]
    fn names() {
        assert_eq!(display_name(b"key"), "key");
        assert_eq!(display_name(b"a/b"), "0x612f62");
        assert_eq!(display_name(b""), "0x");
        assert_eq!(display_name(&[0, 255]), "0x00ff");
    }
}
