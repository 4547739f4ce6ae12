//! What the page shows, computed from `mapwise-core` over any
//! [`PageSource`]: the file's facts, the page map in cells, the structure
//! (buckets and their keys, revlog entries, RRD archives and rows) one page
//! at a time, one decoded page and its bytes in hex.
//!
//! Everything here is plain Rust (tested on the host over byte slices);
//! [`crate::bindings`] only converts results to JavaScript. No format logic
//! lives here: the layout, the decoded pages and the values all come from
//! `mapwise-core`; this module picks, pages and words them.
//!
//! Memory stays bounded by what is shown, never by the file: opening keeps
//! the [`Layout`] (the walk's three bits per page are dropped when it ends),
//! and every other call reads only the bytes it returns (a page, a screen of
//! keys, a screen of rows). Nothing is built per byte or per page of the
//! file except the map cells asked for.

use std::fmt::Write as _;

use mapwise_core::bolt::{
    self, BUCKET_LEAF_FLAG, Body, BoltFile, Bucket, Element, FreelistInfo, WalkOptions,
};
use mapwise_core::detect;
use mapwise_core::layout::display_name;
use mapwise_core::revlog::{self, Index, LayoutOptions};
use mapwise_core::rrd;
use mapwise_core::{Format, Kind, Layout, PageSource};
use mapwise_view::describe::{self, Item};
use mapwise_view::fmt::{bytes_text, hex, rrd_value};
use mapwise_view::palette;
use mapwise_view::totals::{KindTotal, kind_totals};
use serde::Serialize;

/// Bytes per map page for formats without pages of their own (revlog,
/// RRD, unknown): the OS page size the inspector uses on Linux.
pub const MAP_UNIT: u64 = 4096;

/// Most cells one [`Viewer::map`] call returns (a 4K screen of 2-pixel
/// cells is far fewer).
pub const MAX_CELLS: u32 = 1 << 20;

/// Most items one paged call returns (keys, buckets, entries, rows).
pub const MAX_PAGE_ITEMS: u32 = 1000;

/// Most elements or freelist ids of one decoded page.
pub const MAX_ELEMENTS: usize = 512;

/// Most bytes of one hex dump call.
pub const MAX_HEX: u64 = 16 * 1024;

/// Most problems listed in a [`Summary`] (the rest are counted).
pub const MAX_LISTED_PROBLEMS: usize = 200;

/// The map cell value for "past the end of the file".
pub const NO_KIND: u8 = 255;

/// One kind of the legend.
#[derive(Debug, Clone, Serialize)]
pub struct KindInfo {
    /// Index in [`Kind::ALL`]: the value of a map cell of this kind.
    pub index: u8,
    /// Lower-case name (`leaf`, `cur_row`, ...).
    pub name: &'static str,
    /// CSS colour (`#rrggbb`): the inspector's terminal colour in xterm's
    /// default palette ([`mapwise_view::palette::kind_css`]).
    pub color: String,
}

/// Every kind in legend order, with its colour.
#[must_use]
pub fn kinds() -> Vec<KindInfo> {
    Kind::ALL
        .iter()
        .map(|&k| KindInfo {
            index: u8::try_from(k.index()).unwrap_or(NO_KIND),
            name: k.name(),
            color: palette::kind_css(k),
        })
        .collect()
}

// ---------------------------------------------------------------------
// Results (serialised for JavaScript: u64 as BigInt, maps as objects).
// ---------------------------------------------------------------------

/// Bytes as shown: the first [`bolt::PREVIEW`] bytes in hex and as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// Full length in bytes.
    pub len: u64,
    /// Lower-case hex of the first bytes (at most [`bolt::PREVIEW`]).
    pub hex: String,
    /// The first bytes for people, as the terminal shows them
    /// ([`bytes_text`]: quoted text, or hex with runs folded); `…` marks a
    /// cut.
    pub text: String,
    /// `true` when `hex` holds every byte.
    pub complete: bool,
}

impl Shown {
    /// `bytes` shown (only the first [`bolt::PREVIEW`] are kept).
    #[must_use]
    pub fn of(bytes: &[u8]) -> Shown {
        Shown::prefix(bytes.get(..bytes.len().min(bolt::PREVIEW)).unwrap_or_default(), bytes.len())
    }

    /// The first bytes `prefix` of a value `len` bytes long.
    #[must_use]
    pub fn prefix(prefix: &[u8], len: usize) -> Shown {
        Shown {
            len: len as u64,
            hex: hex(prefix),
            text: bytes_text(prefix, len, usize::MAX),
            complete: prefix.len() >= len,
        }
    }
}

/// A bbolt meta page as validated.
#[derive(Debug, Clone, Serialize)]
pub struct MetaFact {
    /// 0 or 1.
    pub index: u8,
    /// Its transaction id, when it validates.
    pub txid: Option<u64>,
    /// Why it is rejected, when it is.
    pub fault: Option<String>,
}

/// What a bbolt file's meta pages and walk say.
#[derive(Debug, Clone, Serialize)]
pub struct BoltFacts {
    /// Page size in bytes.
    pub page_size: u32,
    /// The meta page in use (0 or 1).
    pub meta: u8,
    /// Its transaction id.
    pub txid: u64,
    /// Root page of the root bucket.
    pub root: u64,
    /// High-water mark in pages (`pgid`).
    pub hwm: u64,
    /// The freelist, in words.
    pub freelist: String,
    /// Meta `flags`.
    pub flags: u32,
    /// Meta `version`.
    pub version: u32,
    /// The stored FNV-1a checksum of the meta in use.
    pub checksum: u64,
    /// Both meta pages.
    pub metas: Vec<MetaFact>,
    /// Buckets at every level.
    pub buckets: u64,
    /// Plain keys in every bucket.
    pub keys: u64,
}

/// What a revlog index's header and entries say.
#[derive(Debug, Clone, Serialize)]
pub struct RevlogFacts {
    /// Format version number (0 or 1), when the header could be read.
    pub version: Option<u16>,
    /// Data chunks stored inline after each entry.
    pub inline: bool,
    /// Deltas against any earlier revision (generaldelta).
    pub generaldelta: bool,
    /// Entries read.
    pub revisions: u64,
    /// Bytes of stored data chunks.
    pub data_bytes: u64,
}

/// One RRD data source.
#[derive(Debug, Clone, Serialize)]
pub struct DsFact {
    /// Name.
    pub name: String,
    /// Type (`GAUGE`, ...).
    pub kind: &'static str,
    /// Minimal heartbeat, seconds.
    pub heartbeat: u64,
    /// Minimum as rrdtool dump prints it.
    pub min: String,
    /// Maximum as rrdtool dump prints it.
    pub max: String,
    /// The last value fed (`last_ds`).
    pub last_ds: String,
}

/// One RRD archive.
#[derive(Debug, Clone, Serialize)]
pub struct RraFact {
    /// Its index.
    pub index: u32,
    /// Consolidation function.
    pub cf: &'static str,
    /// PDPs per row.
    pub pdp_per_row: u64,
    /// Seconds per row.
    pub seconds_per_row: u64,
    /// Rows.
    pub rows: u64,
    /// The row the last update wrote.
    pub cur_row: u64,
    /// X-files factor, as rrdtool dump prints it (basic CFs only).
    pub xff: Option<String>,
    /// First byte of its values.
    pub offset: u64,
    /// Bytes of its values.
    pub bytes: u64,
}

/// What an RRD's header says.
#[derive(Debug, Clone, Serialize)]
pub struct RrdFacts {
    /// Version as stored (`0003`).
    pub version: String,
    /// Seconds per PDP.
    pub step: u64,
    /// Last update, Unix seconds.
    pub last_update: i64,
    /// The data sources.
    pub ds: Vec<DsFact>,
    /// The archives.
    pub rras: Vec<RraFact>,
}

/// Format-specific facts; exactly one is set for a parsed format.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// A bbolt file.
    pub bolt: Option<BoltFacts>,
    /// A revlog index.
    pub revlog: Option<RevlogFacts>,
    /// An RRD (`None` when its header could not be read).
    pub rrd: Option<RrdFacts>,
}

/// Everything the header, legend and problem list show.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The file name as given.
    pub name: String,
    /// `bolt`, `revlog`, `rrd` or `unknown`.
    pub format: &'static str,
    /// File size in bytes.
    pub size: u64,
    /// The format's page size (0 when it has none).
    pub page_size: u32,
    /// Bytes per map page: the page size, else [`MAP_UNIT`].
    pub unit: u64,
    /// Map pages: `ceil(size / unit)`.
    pub pages: u64,
    /// Regions in the layout.
    pub regions: u64,
    /// Bytes per kind present, in legend order.
    pub kinds: Vec<KindTotal>,
    /// Format facts.
    pub facts: Facts,
    /// Why the file could not be read past its header, when so (the map
    /// still shows what could be labelled).
    pub fatal: Option<String>,
    /// Problems found (at most [`MAX_LISTED_PROBLEMS`]).
    pub problems: Vec<String>,
    /// Problems found in all.
    pub problem_count: u64,
    /// Warnings (e.g. a torn meta page readers skip).
    pub warnings: Vec<String>,
}

/// A layout region, for the hover text.
#[derive(Debug, Clone, Serialize)]
pub struct RegionInfo {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Kind name.
    pub kind: &'static str,
    /// Page id, revision, row or section number (see [`Kind`]).
    pub id: u64,
    /// For `overflow`, the page heading the run.
    pub head: u64,
    /// The owning bucket's path or the RRA's name.
    pub group: Option<String>,
    /// Tree depth (1 = a bucket's root page), 0 when not a tree page.
    pub depth: u16,
    /// Elements, ids, rows or structures in it.
    pub items: u32,
    /// Fill of the page run in percent (0 when not known).
    pub fill: f64,
}

/// A map cell under the pointer: its pages and what they hold.
#[derive(Debug, Clone, Serialize)]
pub struct CellInfo {
    /// First map page of the cell.
    pub first_page: u64,
    /// Map pages in the cell.
    pub pages: u64,
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Bytes per kind inside the cell, most first.
    pub kinds: Vec<KindTotal>,
    /// The region at the cell's first byte.
    pub region: Option<RegionInfo>,
}

/// A bucket (bbolt group) in the structure pane.
#[derive(Debug, Clone, Serialize)]
pub struct GroupInfo {
    /// Index in the layout's groups (what [`Viewer::children`] and
    /// [`Viewer::keys`] take).
    pub index: u32,
    /// Its name for people (text, or `0x…` hex).
    pub name: String,
    /// Its name in hex.
    pub key_hex: String,
    /// Display path from the top (`beta/inner`).
    pub path: String,
    /// Nesting level (1 = top-level bucket).
    pub level: u16,
    /// Plain keys directly in it.
    pub keys: u64,
    /// Sub-buckets directly in it.
    pub buckets: u64,
    /// Branch and leaf page runs of its own tree.
    pub pages: u64,
    /// Tree height (1 = one leaf; 0 = inline).
    pub height: u16,
    /// Root page (0 for an inline bucket).
    pub root: u64,
    /// For an inline bucket, the leaf page holding it.
    pub host: Option<u64>,
    /// `NextSequence` value.
    pub sequence: u64,
}

/// One screen of sub-buckets.
#[derive(Debug, Clone, Serialize)]
pub struct GroupPage {
    /// Sub-buckets of the parent in all.
    pub total: u64,
    /// The first one listed, 0-based.
    pub start: u64,
    /// The ones listed.
    pub items: Vec<GroupInfo>,
}

/// One key of a bucket.
#[derive(Debug, Clone, Serialize)]
pub struct KeyItem {
    /// The key.
    pub key: Shown,
    /// The value (`None` for a sub-bucket).
    pub value: Option<Shown>,
    /// A sub-bucket entry.
    pub bucket: bool,
}

/// One screen of keys, in bbolt's order.
#[derive(Debug, Clone, Serialize)]
pub struct KeyPage {
    /// The keys (sub-bucket entries included, as a cursor sees them).
    pub items: Vec<KeyItem>,
    /// Hex of the key after the last one listed (pass it as `from` for the
    /// next screen); `None` at the end of the bucket.
    pub next: Option<String>,
}

/// A decoded bbolt element.
#[derive(Debug, Clone, Serialize)]
pub struct ElementView {
    /// 0-based index.
    pub index: u32,
    /// `branch`, `leaf`, `bucket` or `bad`.
    pub kind: &'static str,
    /// The key.
    pub key: Option<Shown>,
    /// Value (leaf key/value only).
    pub value: Option<Shown>,
    /// Child page (branch) or bucket root page (bucket; 0 = inline).
    pub page: Option<u64>,
    /// Bucket sequence (bucket entries).
    pub sequence: Option<u64>,
    /// Why the element cannot be decoded.
    pub error: Option<String>,
}

/// A decoded bbolt page.
#[derive(Debug, Clone, Serialize)]
pub struct BoltPage {
    /// Page id.
    pub pgid: u64,
    /// `branch`, `leaf`, `meta`, `freelist`, `unknown<xx>`.
    pub page_type: String,
    /// Header `id`.
    pub header_id: u64,
    /// Header `flags`.
    pub flags: u16,
    /// Header `count`.
    pub count: u16,
    /// Header `overflow`.
    pub overflow: u32,
    /// Meta fields as name/value text (meta pages).
    pub meta: Vec<(String, String)>,
    /// Elements (branch and leaf pages), at most [`MAX_ELEMENTS`].
    pub elements: Vec<ElementView>,
    /// Freelist ids (freelist pages), at most [`MAX_ELEMENTS`].
    pub free_ids: Vec<u64>,
    /// All ids on the freelist page.
    pub free_total: Option<u64>,
}

/// One map page decoded.
#[derive(Debug, Clone, Serialize)]
pub struct PageView {
    /// The map page.
    pub page: u64,
    /// First byte of the bytes shown (the page, or the run it belongs to).
    pub offset: u64,
    /// Bytes of the page (or run).
    pub len: u64,
    /// Kind of the region at `offset`.
    pub kind: &'static str,
    /// Set for an overflow page: the page heading its run, which is what
    /// is decoded.
    pub head: Option<u64>,
    /// The decoded bbolt page.
    pub bolt: Option<BoltPage>,
    /// Described structures (other formats).
    pub items: Vec<Item>,
    /// Why the page could not be decoded, when so (its bytes still show).
    pub error: Option<String>,
}

/// One hex dump line: 16 bytes.
#[derive(Debug, Clone, Serialize)]
pub struct HexLine {
    /// Offset of the first byte.
    pub offset: u64,
    /// The bytes in hex, eight and eight.
    pub hex: String,
    /// Printable ASCII, `.` for the rest.
    pub ascii: String,
}

/// One revlog entry as `hg debugindex --debug` names its fields.
#[derive(Debug, Clone, Serialize)]
pub struct EntryView {
    /// Revision.
    pub rev: i32,
    /// Changelog revision that introduced it.
    pub linkrev: i32,
    /// First parent (-1 none).
    pub p1: i32,
    /// Second parent (-1 none).
    pub p2: i32,
    /// Node id, 40 hex digits.
    pub node: String,
    /// Offset of the entry in the index file.
    pub position: u64,
    /// Offset of its data chunk in the data stream.
    pub data_offset: u64,
    /// Stored chunk length.
    pub compressed: u32,
    /// Full text length.
    pub uncompressed: i32,
    /// Delta base revision.
    pub base: i32,
    /// Revision flags.
    pub flags: u16,
}

/// One screen of revlog entries.
#[derive(Debug, Clone, Serialize)]
pub struct EntryPage {
    /// Revisions in the index.
    pub total: u64,
    /// The entries, in the order asked for.
    pub items: Vec<EntryView>,
    /// The first entry that could not be read, when one could not.
    pub error: Option<String>,
}

/// One row of an RRA, as `rrdtool dump` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RowView {
    /// 0 for the newest row (the current row), 1 for the one before, ...
    pub age: u64,
    /// The row's index in the archive.
    pub row: u64,
    /// Its time, Unix seconds (`rrdtool dump`'s comment).
    pub time: i64,
    /// One value per data source, as `rrdtool dump` prints it.
    pub values: Vec<String>,
}

/// One screen of an RRA's rows, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct RowPage {
    /// Rows in the archive.
    pub total: u64,
    /// The rows.
    pub items: Vec<RowView>,
}

// ---------------------------------------------------------------------
// The viewer.
// ---------------------------------------------------------------------

/// An opened file: its source, its layout and facts.
#[derive(Debug)]
pub struct Viewer<S: PageSource> {
    src: S,
    name: String,
    layout: Layout,
    unit: u64,
    facts: Facts,
    fatal: Option<String>,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl<S: PageSource> Viewer<S> {
    /// Detect the format of `src` and label every byte of it.
    ///
    /// # Errors
    /// When the file cannot be read as the format it was detected as at
    /// all (bbolt: neither meta page validates, or a big-endian file).
    /// A damaged file that can be partly read opens, with problems.
    pub fn open(src: S, name: impl Into<String>) -> Result<Viewer<S>, String> {
        let name = name.into();
        // Detection calls an unreadable file "unknown": say why instead.
        let probe = usize::try_from(src.len().min(4096)).unwrap_or(0);
        src.read_at(0, probe).map_err(|e| format!("cannot read the file: {e}"))?;
        let format = detect::detect(&src);
        let mut facts = Facts::default();
        let mut fatal = None;
        let layout = match format {
            Format::Bolt => {
                if detect::is_foreign_endian_bolt(&src) {
                    return Err(
                        "bbolt file written on a big-endian host: unsupported (little-endian readers cannot use it)"
                            .into(),
                    );
                }
                let file = BoltFile::open(&src).map_err(err)?;
                let walked = bolt::walk(&file, WalkOptions::default());
                facts.bolt = Some(bolt_facts(&file, &walked.layout, walked.freelist));
                walked.layout
            }
            Format::Revlog => {
                let r = revlog::layout(&src, LayoutOptions::default());
                fatal = r.fatal.as_ref().map(err);
                facts.revlog = Some(RevlogFacts {
                    version: r.header.map(|h| h.version.number()),
                    inline: r.header.is_some_and(|h| h.is_inline()),
                    generaldelta: r.header.is_some_and(|h| h.is_generaldelta()),
                    revisions: r.revisions,
                    data_bytes: r.data_bytes,
                });
                r.layout
            }
            Format::Rrd => {
                let r = rrd::layout(&src, MAP_UNIT);
                fatal = r.fatal.as_ref().map(err);
                if r.fatal.is_none() {
                    facts.rrd = rrd::Header::parse_header(&src).ok().map(|h| rrd_facts(&h, &r));
                }
                r.layout
            }
            _ => {
                fatal = Some(format!(
                    "not a bbolt, RRDtool or revlog file: {}",
                    if src.len() == 0 {
                        "the file is empty".to_string()
                    } else {
                        format!(
                            "none of their identifying bytes is there (bbolt: magic 0xED0CDAED at byte 16 of a meta page; \
                             RRDtool: the cookie \"RRD\\0\" at byte 0; revlog: a version word and a first index entry) \
                             in its {} bytes",
                            src.len()
                        )
                    }
                ));
                Layout::unknown(src.len())
            }
        };
        let unit = match layout.page_size {
            0 => MAP_UNIT,
            ps => u64::from(ps),
        };
        Ok(Viewer { src, name, layout, unit, facts, fatal })
    }

    /// The layout.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The source.
    #[must_use]
    pub fn source(&self) -> &S {
        &self.src
    }

    /// Map pages: `ceil(size / unit)`.
    #[must_use]
    pub fn pages(&self) -> u64 {
        self.layout.source_len.div_ceil(self.unit)
    }

    /// The header, legend and problem list.
    #[must_use]
    pub fn summary(&self) -> Summary {
        let counts = self.layout.kind_counts(self.unit);
        let kinds = Kind::ALL
            .iter()
            .map(|&k| KindTotal::of(k, &counts))
            .filter(|t| t.regions > 0)
            .collect();
        Summary {
            name: self.name.clone(),
            format: self.layout.format.name(),
            size: self.layout.source_len,
            page_size: self.layout.page_size,
            unit: self.unit,
            pages: self.pages(),
            regions: self.layout.regions.len() as u64,
            kinds,
            facts: self.facts.clone(),
            fatal: self.fatal.clone(),
            problems: self.layout.problems.iter().take(MAX_LISTED_PROBLEMS).map(err).collect(),
            problem_count: self.layout.problem_count(),
            warnings: self.layout.warnings.iter().take(MAX_LISTED_PROBLEMS).map(err).collect(),
        }
    }

    /// Bytes `[start, end)` of map pages `[first, first + n)`, clipped to
    /// the file.
    fn span(&self, first: u64, n: u64) -> (u64, u64) {
        let start = first.saturating_mul(self.unit).min(self.layout.source_len);
        let end = first.saturating_add(n).saturating_mul(self.unit).min(self.layout.source_len);
        (start, end)
    }

    /// The map: `cells` cells of `per_cell` map pages each from page
    /// `first` on, each the index of the kind it is drawn in
    /// ([`Layout::cell_kinds`], the rule the inspector's map shares) in
    /// [`Kind::ALL`] (see
    /// [`kinds`]), [`NO_KIND`] past the end of the file. At most
    /// [`MAX_CELLS`] cells.
    #[must_use]
    pub fn map(&self, first: u64, per_cell: u64, cells: u32) -> Vec<u8> {
        let per_cell = per_cell.max(1);
        let pages = self.pages();
        let cells = cells.min(MAX_CELLS);
        // The cells inside the file, their kinds in one pass.
        let spans: Vec<(u64, u64)> = (0..u64::from(cells))
            .map(|c| first.saturating_add(c.saturating_mul(per_cell)))
            .take_while(|&p| p < pages)
            .map(|p| self.span(p, per_cell))
            .collect();
        let mut out: Vec<u8> = self
            .layout
            .cell_kinds(&spans)
            .into_iter()
            .map(|k| u8::try_from(k.index()).unwrap_or(NO_KIND))
            .collect();
        out.resize(cells as usize, NO_KIND);
        out
    }

    fn region_info(&self, r: &mapwise_core::Region) -> RegionInfo {
        let group = r
            .group
            .and_then(|g| self.layout.group(g))
            .map(|g| if g.path.is_empty() { "(root)".to_string() } else { g.path.clone() });
        RegionInfo {
            offset: r.offset,
            len: r.len,
            kind: r.kind.name(),
            id: r.id,
            head: r.head,
            group,
            depth: r.depth,
            items: r.items,
            fill: (r.fill() * 1000.0).round() / 10.0,
        }
    }

    /// What the `pages` map pages from `first` hold.
    #[must_use]
    pub fn cell(&self, first: u64, pages: u64) -> CellInfo {
        let (start, end) = self.span(first, pages.max(1));
        // The cell's slice of the layout, counted by the one rule
        // (`Layout::kind_counts`): regions clipped to the cell.
        let mut cell = Layout::unknown(0);
        cell.regions = self
            .layout
            .regions_in(start, end - start)
            .map(|r| {
                let mut r = r;
                let s = r.offset.max(start);
                r.len = r.end().min(end).saturating_sub(s);
                r.offset = s;
                r
            })
            .collect();
        let mut kinds = kind_totals(&cell.kind_counts(self.unit));
        kinds.sort_by_key(|k| std::cmp::Reverse(k.bytes));
        CellInfo {
            first_page: first,
            pages: (end - start).div_ceil(self.unit),
            offset: start,
            len: end - start,
            kinds,
            region: self.layout.region_at(start).map(|r| self.region_info(&r)),
        }
    }

    // ----- bbolt buckets -----

    /// Sub-buckets of group `parent` (`None`: the top-level buckets, the
    /// children of the root bucket), `count` of them from the `start`th.
    #[must_use]
    pub fn children(&self, parent: Option<u32>, start: u64, count: u32) -> GroupPage {
        let parent = match (self.layout.format, parent) {
            (Format::Bolt, None) => Some(0),
            (_, p) => p,
        };
        let count = count.min(MAX_PAGE_ITEMS) as usize;
        let mut total = 0u64;
        let mut items = Vec::new();
        for (i, g) in self.layout.groups.iter().enumerate() {
            let top = parent.is_none() && g.level == 0;
            if g.parent != parent && !top {
                continue;
            }
            if total >= start && items.len() < count {
                items.push(GroupInfo {
                    index: u32::try_from(i).unwrap_or(u32::MAX),
                    name: display_name(&g.key),
                    key_hex: hex(&g.key),
                    path: g.path.clone(),
                    level: g.level,
                    keys: g.keys,
                    buckets: g.buckets,
                    pages: g.pages,
                    height: g.height,
                    root: g.root,
                    host: g.host,
                    sequence: g.sequence,
                });
            }
            total += 1;
        }
        GroupPage { total, start, items }
    }

    /// Bucket names from the top down to group `index`.
    fn key_path(&self, index: u32) -> Result<Vec<&[u8]>, String> {
        let mut path = Vec::new();
        let mut at = Some(index);
        let mut steps = 0usize;
        while let Some(i) = at {
            let g = self.layout.group(i).ok_or_else(|| format!("no bucket #{i}"))?;
            if g.parent.is_none() {
                break;
            }
            path.push(g.key.as_slice());
            at = g.parent;
            steps += 1;
            if steps > self.layout.groups.len() {
                return Err("bucket parents form a cycle".into());
            }
        }
        path.reverse();
        Ok(path)
    }

    /// `count` keys of bucket `group` (a layout group index; 0 is the root
    /// bucket), from the first key `>= from` (the first key when `None`),
    /// in bbolt's cursor order. Reads only the pages on the way.
    ///
    /// # Errors
    /// When the file is not a bbolt file or a page on the way is damaged.
    pub fn keys(&self, group: u32, from: Option<&[u8]>, count: u32) -> Result<KeyPage, String> {
        if self.layout.format != Format::Bolt {
            return Err("keys: not a bbolt file".into());
        }
        let path = self.key_path(group)?;
        let file = BoltFile::open(&self.src).map_err(err)?;
        let bucket = Bucket::root_of(&file).bucket_path(&path).map_err(err)?;
        let mut cursor = bucket.cursor();
        let mut item = match from {
            Some(k) => cursor.seek(k).map_err(err)?,
            None => cursor.first().map_err(err)?,
        };
        let count = count.clamp(1, MAX_PAGE_ITEMS) as usize;
        let mut items = Vec::new();
        let mut next = None;
        while let Some(it) = item {
            if items.len() == count {
                next = Some(hex(&it.key));
                break;
            }
            let is_bucket = it.is_bucket();
            items.push(KeyItem {
                key: Shown::of(&it.key),
                value: (!is_bucket).then(|| Shown::of(&it.value)),
                bucket: is_bucket,
            });
            item = cursor.next().map_err(err)?;
        }
        Ok(KeyPage { items, next })
    }

    // ----- one page -----

    /// Map page `page` decoded: a bbolt page (the head of its run for an
    /// overflow page) with its header and elements; for other formats the
    /// structures in its bytes, described.
    #[must_use]
    pub fn page(&self, page: u64) -> PageView {
        let (start, end) = self.span(page, 1);
        let region = self.layout.region_at(start);
        let mut view = PageView {
            page,
            offset: start,
            len: end - start,
            kind: region.map_or("none", |r| r.kind.name()),
            head: None,
            bolt: None,
            items: Vec::new(),
            error: None,
        };
        if start >= self.layout.source_len {
            view.error = Some(format!("page {page} is past the end of the file"));
            return view;
        }
        match self.layout.format {
            Format::Bolt => {
                let pgid = match region {
                    Some(r) if r.kind == Kind::Overflow => {
                        view.head = Some(r.head);
                        r.head
                    }
                    _ => page,
                };
                match self.bolt_page(pgid) {
                    Ok(p) => {
                        let run = (u64::from(p.overflow) + 1).saturating_mul(self.unit);
                        view.offset = pgid.saturating_mul(self.unit);
                        view.len = run.min(self.layout.source_len.saturating_sub(view.offset));
                        view.bolt = Some(p);
                        // An etcd db's records, decoded (none for other bbolt files).
                        view.items =
                            describe::describe(&self.layout, &self.src, start, end - start)
                                .unwrap_or_default();
                    }
                    Err(e) => view.error = Some(e),
                }
            }
            Format::Revlog | Format::Rrd => {
                match describe::describe(&self.layout, &self.src, start, end - start) {
                    Ok(items) => view.items = items,
                    Err(e) => view.error = Some(e),
                }
            }
            _ => {}
        }
        view
    }

    fn bolt_page(&self, pgid: u64) -> Result<BoltPage, String> {
        let file = BoltFile::open(&self.src).map_err(err)?;
        let d = bolt::page_detail(&file, pgid, MAX_ELEMENTS).map_err(err)?;
        let h = d.header;
        let mut out = BoltPage {
            pgid,
            page_type: d.page_type.name(),
            header_id: h.id,
            flags: h.flags,
            count: h.count,
            overflow: h.overflow,
            meta: Vec::new(),
            elements: Vec::new(),
            free_ids: Vec::new(),
            free_total: None,
        };
        match d.body {
            Body::Meta { meta: m, fault } => out.meta = describe::meta_fields(&m, fault.as_ref()),
            Body::Elements(els) => {
                out.elements = els.iter().enumerate().map(|(i, e)| element_view(i, e)).collect();
            }
            Body::Freelist { ids, total } => {
                out.free_ids = ids;
                out.free_total = Some(total as u64);
            }
            Body::Other => {}
        }
        Ok(out)
    }

    /// The bytes `[offset, offset + len)` as hex dump lines (at most
    /// [`MAX_HEX`] bytes, clipped to the file).
    ///
    /// # Errors
    /// When the bytes cannot be read.
    pub fn hex(&self, offset: u64, len: u64) -> Result<Vec<HexLine>, String> {
        let size = self.layout.source_len;
        let offset = offset.min(size);
        let len = len.min(MAX_HEX).min(size - offset);
        let n = usize::try_from(len).map_err(err)?;
        let bytes = self.src.read_at(offset, n).map_err(err)?;
        Ok(bytes
            .chunks(16)
            .enumerate()
            .map(|(i, chunk)| {
                let mut h = String::with_capacity(50);
                for (j, b) in chunk.iter().enumerate() {
                    if j == 8 {
                        h.push(' ');
                    }
                    let _ = write!(h, "{b:02x} ");
                }
                HexLine {
                    offset: offset + 16 * i as u64,
                    hex: h.trim_end().to_string(),
                    ascii: chunk
                        .iter()
                        .map(|&b| if (0x20..0x7f).contains(&b) { char::from(b) } else { '.' })
                        .collect(),
                }
            })
            .collect())
    }

    // ----- revlog entries -----

    /// `count` entries from revision `from`, towards older revisions when
    /// `newest_first` (hg log's order), else towards newer ones.
    ///
    /// # Errors
    /// When the file is not a revlog index or its header is unreadable.
    pub fn entries(&self, from: i64, count: u32, newest_first: bool) -> Result<EntryPage, String> {
        if self.layout.format != Format::Revlog {
            return Err("entries: not a revlog index".into());
        }
        let index = Index::open(&self.src).map_err(err)?;
        let total = u64::from(index.len());
        let mut items = Vec::new();
        let mut error = None;
        let count = i64::from(count.min(MAX_PAGE_ITEMS));
        for k in 0..count {
            let rev = if newest_first { from - k } else { from + k };
            let Ok(rev) = i32::try_from(rev) else { break };
            if rev < 0 || i64::from(rev) >= i64::from(index.len()) {
                break;
            }
            match index.entry(rev) {
                Ok(e) => {
                    let (p1, p2) = index.parent_revs(&e);
                    items.push(EntryView {
                        rev,
                        linkrev: e.link_rev(),
                        p1,
                        p2,
                        node: hex(e.node()),
                        position: e.position().unwrap_or(0),
                        data_offset: e.data_offset(),
                        compressed: e.compressed_len(),
                        uncompressed: e.uncompressed_len(),
                        base: e.base_rev(),
                        flags: e.flags(),
                    });
                }
                Err(e) => {
                    error = Some(format!("rev {rev}: {e}"));
                    break;
                }
            }
        }
        Ok(EntryPage { total, items, error })
    }

    // ----- RRD rows -----

    /// `count` rows of archive `rra`, newest first, from the `from`th
    /// newest (0 = the current row), with the times and value texts
    /// `rrdtool dump` gives them.
    ///
    /// # Errors
    /// When the file is not a readable RRD, `rra` does not exist, or a row
    /// cannot be read.
    pub fn rra_rows(&self, rra: u32, from: u64, count: u32) -> Result<RowPage, String> {
        if self.layout.format != Format::Rrd {
            return Err("rows: not an RRD file".into());
        }
        let h = rrd::Header::parse_header(&self.src).map_err(err)?;
        let i = rra as usize;
        let r = *h
            .rras()
            .get(i)
            .ok_or_else(|| format!("no archive {rra} (the file has {})", h.rra_cnt()))?;
        let step = h.pdp_step();
        let span = r.pdp_cnt.wrapping_mul(step).max(1);
        let last_up = h.last_up();
        // rrdtool dump: the current row's time is the last update rounded
        // down to a whole row; each older row is one row span earlier.
        let end = (last_up as u64).wrapping_sub(last_up as u64 % span) as i64;
        let row_len = usize::try_from(h.geometry().row_len()).map_err(err)?;
        let cur = h.cur_row(i);
        let mut items = Vec::new();
        for age in from..from.saturating_add(u64::from(count.min(MAX_PAGE_ITEMS))) {
            if age >= r.rows {
                break;
            }
            let row = (cur + r.rows - age) % r.rows;
            let bytes = self.src.read_at(h.row_offset(i, row), row_len).map_err(err)?;
            let values = (0..h.ds_cnt())
                .map(|k| rrd_value(rrd::format::le::f64_at(&bytes, k as u64 * 8)))
                .collect();
            let back = i64::try_from(age.wrapping_mul(span)).unwrap_or(i64::MAX);
            items.push(RowView { age, row, time: end.wrapping_sub(back), values });
        }
        Ok(RowPage { total: r.rows, items })
    }
}

fn element_view(i: usize, e: &Element) -> ElementView {
    let index = u32::try_from(i).unwrap_or(u32::MAX);
    let shown = |b: &bolt::Bytes| Shown::prefix(&b.prefix, b.len);
    match e {
        Element::Branch { key, child } => ElementView {
            index,
            kind: "branch",
            key: Some(shown(key)),
            value: None,
            page: Some(*child),
            sequence: None,
            error: None,
        },
        Element::Leaf { flags, key, value, bucket } => match bucket {
            Some(b) => ElementView {
                index,
                kind: "bucket",
                key: Some(shown(key)),
                value: None,
                page: Some(b.root),
                sequence: Some(b.sequence),
                error: None,
            },
            None if flags & BUCKET_LEAF_FLAG != 0 => ElementView {
                index,
                kind: "bucket",
                key: Some(shown(key)),
                value: None,
                page: None,
                sequence: None,
                error: Some("bucket entry with a bad header".into()),
            },
            None => ElementView {
                index,
                kind: "leaf",
                key: Some(shown(key)),
                value: Some(shown(value)),
                page: None,
                sequence: None,
                error: None,
            },
        },
        Element::Bad(e) => ElementView {
            index,
            kind: "bad",
            key: None,
            value: None,
            page: None,
            sequence: None,
            error: Some(e.to_string()),
        },
    }
}

fn bolt_facts<S: PageSource + ?Sized>(
    file: &BoltFile<'_, S>,
    layout: &Layout,
    freelist: FreelistInfo,
) -> BoltFacts {
    let m = file.meta();
    let freelist = match freelist {
        FreelistInfo::NotStored => "not stored (NoFreelistSync)".to_string(),
        FreelistInfo::Stored { pgid, overflow, ids, encoding } => {
            let run = if overflow > 0 { format!(" (+{overflow} overflow)") } else { String::new() };
            format!("page {pgid}{run}, {ids} ids, {}", encoding.name())
        }
        FreelistInfo::Unreadable { pgid } => format!("page {pgid}, unreadable"),
        FreelistInfo::NotRead { pgid } => format!("page {pgid}, not read"),
    };
    let metas = file
        .metas()
        .iter()
        .enumerate()
        .map(|(i, r)| MetaFact {
            index: u8::try_from(i).unwrap_or(0),
            txid: r.as_ref().ok().map(|m| m.txid),
            fault: r.as_ref().err().map(err),
        })
        .collect();
    BoltFacts {
        page_size: file.page_size(),
        meta: file.current_index(),
        txid: m.txid,
        root: m.root,
        hwm: m.hwm,
        freelist,
        flags: m.flags,
        version: m.version,
        checksum: m.checksum,
        metas,
        buckets: layout.groups.len().saturating_sub(1) as u64,
        keys: layout.groups.iter().map(|g| g.keys).sum(),
    }
}

fn rrd_facts(h: &rrd::Header<'_>, l: &rrd::RrdLayout) -> RrdFacts {
    let step = h.pdp_step();
    let ds = h
        .dss()
        .iter()
        .enumerate()
        .map(|(i, d)| DsFact {
            name: d.name.clone(),
            kind: d.kind.name(),
            heartbeat: h.heartbeat(i),
            min: rrd_value(h.ds_min(i)),
            max: rrd_value(h.ds_max(i)),
            last_ds: String::from_utf8_lossy(h.last_ds(i)).into_owned(),
        })
        .collect();
    let rras = l
        .rras
        .iter()
        .enumerate()
        .map(|(i, a)| RraFact {
            index: u32::try_from(i).unwrap_or(u32::MAX),
            cf: a.cf.name(),
            pdp_per_row: a.pdp_cnt,
            seconds_per_row: a.pdp_cnt.wrapping_mul(step),
            rows: a.rows,
            cur_row: a.cur_row,
            xff: matches!(a.cf, rrd::Cf::Average | rrd::Cf::Min | rrd::Cf::Max | rrd::Cf::Last)
                .then(|| rrd_value(h.rra_par_f64(i, rrd::format::rra_par::XFF))),
            offset: a.offset,
            bytes: a.len,
        })
        .collect();
    RrdFacts { version: h.version_str().to_string(), step, last_update: h.last_up(), ds, rras }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_bytes() {
        assert_eq!(Shown::of(b"key").text, "\"key\"");
        assert_eq!(Shown::of(b"key").hex, "6b6579");
        assert_eq!(Shown::of(&[0, 0xff]).text, "0x00ff");
        assert_eq!(Shown::of(b"").text, "\"\"");
        let long = vec![b'a'; 100];
        let s = Shown::of(&long);
        assert_eq!(s.len, 100);
        assert!(!s.complete);
        assert_eq!(s.hex.len(), 2 * bolt::PREVIEW);
        assert!(s.text.ends_with('…'));
    }

    #[test]
    fn bolt_summary_tree_keys_and_pages() {
        let bytes = mapwise_testkit::read_testdata("bolt/small.db");
        let v = Viewer::open(bytes.as_slice(), "small.db").expect("open");
        let s = v.summary();
        assert_eq!(s.format, "bolt");
        assert_eq!(s.page_size, 4096);
        assert_eq!(s.pages, 16);
        let b = s.facts.bolt.as_ref().expect("bolt facts");
        assert_eq!((b.meta, b.txid), (0, 4));
        assert!(b.freelist.starts_with("page 11, 5 ids"), "{}", b.freelist);
        assert_eq!(s.problem_count, 0);

        let top = v.children(None, 0, 100);
        let names: Vec<_> = top.items.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta", "empty", "gamma-inline", "wide"]);
        let beta = &top.items[1];
        assert_eq!((beta.keys, beta.buckets), (2, 1));
        let inner = v.children(Some(beta.index), 0, 10);
        assert_eq!(inner.items[0].path, "beta/inner");
        assert_eq!(inner.items[0].sequence, 42);

        let wide = top.items[4].index;
        let first = v.keys(wide, None, 50).expect("keys");
        assert_eq!(first.items.len(), 50);
        assert_eq!(first.items[0].key.hex, "7730303030");
        let next = first.next.expect("more keys");
        let second = v.keys(wide, mapwise_view::fmt::unhex(&next).as_deref(), 50).expect("keys");
        assert_eq!(second.items.len(), 10);
        assert!(second.next.is_none());
        // Sub-bucket entries come back as buckets, with no value.
        let root = v.keys(beta.index, None, 10).expect("keys");
        assert!(root.items.iter().any(|k| k.bucket && k.value.is_none()));

        let meta = v.page(0);
        let p = meta.bolt.expect("decoded");
        assert_eq!(p.page_type, "meta");
        assert!(p.meta.iter().any(|(n, val)| n == "txid" && val == "4"));
        let hex = v.hex(0, 32).expect("hex");
        assert_eq!(hex.len(), 2);
        assert_eq!(hex[0].offset, 0);
    }

    fn k(kind: Kind) -> u8 {
        u8::try_from(kind.index()).expect("kind index")
    }

    #[test]
    fn map_cells_follow_the_inspector_rule() {
        let bytes = mapwise_testkit::read_testdata("bolt/small.db");
        let v = Viewer::open(bytes.as_slice(), "small.db").expect("open");
        let cells = v.map(0, 1, 20);
        assert_eq!(cells.len(), 20);
        assert_eq!(cells[0], k(Kind::Meta));
        assert_eq!(cells[1], k(Kind::Meta));
        assert_eq!(cells[11], k(Kind::Freelist));
        assert!(cells[16..].iter().all(|&c| c == NO_KIND));
        // One cell for the whole file: the kind with the most bytes.
        let whole = v.map(0, 16, 1);
        let s = v.summary();
        let most = s.kinds.iter().max_by_key(|k| k.bytes).expect("kinds");
        assert_eq!(whole[0], most.index);
        let c = v.cell(0, 2);
        assert_eq!(c.kinds[0].kind, "meta");
        assert_eq!(c.len, 8192);
    }

    /// `rrdtool info` of `testdata/rrd/NAME`
    /// ([`mapwise_testkit::peers::rrdtool_info`]).
    fn rrdtool_info(name: &str) -> Option<mapwise_testkit::peers::RrdInfo> {
        mapwise_testkit::peers::rrdtool_info(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd").join(name),
        )
    }

    /// The map shows every archive's current row and the header in their
    /// own colours, though rows fill most of their pages; the legend
    /// counts the distinct pages each kind touches. Positions from
    /// `rrdtool info` (skipped when rrdtool is missing).
    #[test]
    fn rrd_markers_win_their_cells_and_pages_are_touched_pages() {
        for name in ["gauge.rrd", "hw.rrd", "mixed.rrd"] {
            let Some((header, ds, rras)) = rrdtool_info(name) else {
                eprintln!("rrdtool missing: skipped");
                return;
            };
            let bytes = mapwise_testkit::read_testdata(&format!("rrd/{name}"));
            let v = Viewer::open(bytes.as_slice(), name).expect("open");
            let cells = v.map(0, 1, u32::try_from(v.pages()).expect("pages"));
            let row = ds * 8;
            let mut at = header;
            let mut cur_pages = std::collections::BTreeSet::new();
            for (rows, cur) in rras {
                let off = at + cur * row;
                let pages = off / MAP_UNIT..=(off + row - 1) / MAP_UNIT;
                for p in pages {
                    cur_pages.insert(p);
                    assert_eq!(
                        cells[usize::try_from(p).expect("page")],
                        k(Kind::CurRow),
                        "{name}: page {p}"
                    );
                }
                at += rows * row;
            }
            if !cur_pages.contains(&0) {
                assert_eq!(cells[0], k(Kind::Header), "{name}: page 0 holds the header");
            }
            let s = v.summary();
            let cur = s.kinds.iter().find(|t| t.kind == "cur_row").expect("cur_row");
            assert_eq!(cur.pages, cur_pages.len() as u64, "{name}");
        }
    }

    #[test]
    fn revlog_entries_newest_first() {
        let bytes = mapwise_testkit::read_testdata("revlog/00changelog.i");
        let v = Viewer::open(bytes.as_slice(), "00changelog.i").expect("open");
        let s = v.summary();
        assert_eq!(s.format, "revlog");
        let f = s.facts.revlog.as_ref().expect("facts");
        assert_eq!(f.version, Some(1));
        assert!(f.inline);
        let e = v.entries(199, 5, true).expect("entries");
        let revs: Vec<i32> = e.items.iter().map(|x| x.rev).collect();
        assert_eq!(revs, [199, 198, 197, 196, 195]);
        assert!(e.items[0].node.starts_with("e7f66e6b4d40"));
        let p = v.page(0);
        assert!(p.items.iter().any(|i| i.title == "rev 0"));
    }

    #[test]
    fn rrd_rows_as_rrdtool_dump_prints_them() {
        let bytes = mapwise_testkit::read_testdata("rrd/gauge.rrd");
        let v = Viewer::open(bytes.as_slice(), "gauge.rrd").expect("open");
        let s = v.summary();
        assert_eq!(s.format, "rrd");
        let f = s.facts.rrd.as_ref().expect("facts");
        assert_eq!(f.step, 300);
        assert_eq!(f.rras.len(), 3);
        let rows = v.rra_rows(2, 0, 1).expect("rows");
        // The last <row> of the MAX archive in gauge.dump.xml.
        assert_eq!(rows.items[0].time, 1_600_164_000);
        assert_eq!(rows.items[0].values, ["1.5494994000e+01", "1.7959940000e+00"]);
    }

    #[test]
    fn damaged_and_unknown_files() {
        let mut bytes = mapwise_testkit::read_testdata("bolt/small.db");
        bytes[64] ^= 0xff;
        bytes[4096 + 64] ^= 0xff;
        let e = Viewer::open(bytes.as_slice(), "bad.db").expect_err("no valid meta");
        assert!(e.contains("no valid meta page"), "{e}");
        let junk = vec![7u8; 10_000];
        let v = Viewer::open(junk.as_slice(), "junk").expect("opens as unknown");
        assert_eq!(v.summary().format, "unknown");
        // The page shows why in its error panel (`summary.fatal`).
        for bytes in [&junk[..], &[0u8; 10][..], &[][..]] {
            let v = Viewer::open(bytes, "x").expect("opens as unknown");
            let fatal = v.summary().fatal.unwrap_or_default();
            assert!(fatal.starts_with("not a bbolt, RRDtool or revlog file: "), "{fatal}");
        }
        assert_eq!(v.pages(), 3);
        assert_eq!(v.map(0, 1, 4)[3], NO_KIND);
        let empty: &[u8] = &[];
        let v = Viewer::open(empty, "empty").expect("opens");
        assert_eq!(v.pages(), 0);
        assert!(v.page(0).error.is_some());
    }
}
