//! Reports shared by the `mapwise` and `inspector` command lines: the
//! `bbolt pages` table, structural checks, layouts and residency
//! summaries, as text and as JSON with stable field names.
//!
//! Field names are part of the scripting interface: add fields, never
//! rename them.

use mapwise_core::bolt::{BoltFile, FreelistInfo, Meta, PageType, PagesRow, pages};
use mapwise_core::layout::{Kind, KindCounts, Layout};
use mapwise_core::{MetaFault, PageSource};
use mapwise_view::fmt::hex;
pub use mapwise_view::totals::KindTotal;
use serde::Serialize;

use crate::observe::settle;
use crate::os::residency::{Residency, os_page_size};

/// One row of the pages table.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PageRow {
    /// Page id.
    pub id: u64,
    /// `branch`, `leaf`, `meta`, `freelist`, `free`, `unknown<XX>` or
    /// `beyond-eof`.
    #[serde(rename = "type")]
    pub page_type: String,
    /// Header `count` (absent for free pages).
    pub items: Option<u16>,
    /// Header `overflow` (absent for free pages).
    pub overflow: Option<u32>,
}

/// The rows of `bbolt pages` for a file and its walk's layout, streamed.
pub fn page_rows<'a, S: PageSource + ?Sized>(
    file: &'a BoltFile<'_, S>,
    layout: &'a Layout,
) -> impl Iterator<Item = PageRow> + 'a {
    pages(file, layout).map(page_row)
}

/// One row of core's pages table as the report prints it.
fn page_row(r: PagesRow) -> PageRow {
    match r {
        PagesRow::Page { id, page_type, items, overflow } => PageRow {
            id,
            page_type: page_type.name(),
            items: Some(items),
            overflow: Some(overflow),
        },
        PagesRow::Free { id } => {
            PageRow { id, page_type: "free".into(), items: None, overflow: None }
        }
        PagesRow::BeyondEof { id } => {
            PageRow { id, page_type: "beyond-eof".into(), items: None, overflow: None }
        }
    }
}

/// The rows of a pages table, held compactly: a page's row is its
/// header's fields (24 bytes, its type name made only when printed), and
/// a run of consecutive `free` pages, or of pages `beyond-eof`, is one
/// entry, so the table of a file whose meta claims 16 Mi mostly free
/// pages (a 64 GiB file) costs a few entries instead of a row per page.
/// [`PageRows::iter`] gives the rows back as [`PageRow`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRows {
    runs: Vec<RowRun>,
    rows: u64,
}

/// One entry of [`PageRows`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowRun {
    /// A page's row.
    Page { id: u64, page_type: PageType, items: u16, overflow: u32 },
    /// `count` free pages from `first` on.
    Free { first: u64, count: u64 },
    /// `count` pages past the end of the file from `first` on.
    BeyondEof { first: u64, count: u64 },
}

impl PageRows {
    /// Appends one row, merging it into the last run when it continues it.
    pub fn push(&mut self, r: PagesRow) {
        self.rows += 1;
        let last = self.runs.last_mut();
        match (r, last) {
            (PagesRow::Free { id }, Some(RowRun::Free { first, count }))
            | (PagesRow::BeyondEof { id }, Some(RowRun::BeyondEof { first, count }))
                if first.checked_add(*count) == Some(id) =>
            {
                *count += 1;
            }
            (PagesRow::Free { id }, _) => self.runs.push(RowRun::Free { first: id, count: 1 }),
            (PagesRow::BeyondEof { id }, _) => {
                self.runs.push(RowRun::BeyondEof { first: id, count: 1 })
            }
            (PagesRow::Page { id, page_type, items, overflow }, _) => {
                self.runs.push(RowRun::Page { id, page_type, items, overflow })
            }
        }
    }

    /// Rows held.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.rows
    }

    /// `true` when no row is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Entries held in memory (one per run, one per other row).
    #[must_use]
    pub fn entries(&self) -> usize {
        self.runs.len()
    }

    /// The rows, in order, runs expanded as they are reached.
    pub fn iter(&self) -> impl Iterator<Item = PageRow> + '_ {
        self.runs.iter().flat_map(|run| {
            let (one, ids, free) = match *run {
                RowRun::Page { id, page_type, items, overflow } => {
                    (Some(PagesRow::Page { id, page_type, items, overflow }), 0..0, true)
                }
                RowRun::Free { first, count } => (None, first..first.saturating_add(count), true),
                RowRun::BeyondEof { first, count } => {
                    (None, first..first.saturating_add(count), false)
                }
            };
            one.into_iter()
                .chain(ids.map(move |id| {
                    if free { PagesRow::Free { id } } else { PagesRow::BeyondEof { id } }
                }))
                .map(page_row)
        })
    }
}

impl FromIterator<PagesRow> for PageRows {
    fn from_iter<I: IntoIterator<Item = PagesRow>>(iter: I) -> Self {
        let mut rows = PageRows::default();
        for r in iter {
            rows.push(r);
        }
        rows
    }
}

/// The rows of `bbolt pages` for the bbolt file at `path`, read quietly
/// and settled ([`crate::observe::settle`]): every row from one snapshot, even
/// while a writer commits. Collected before anything is printed, so a
/// retry never prints twice; held as [`PageRows`], so runs of free pages
/// cost nothing per page.
///
/// # Errors
/// [`settle::Error`]: not openable, not bbolt, or a writer committed
/// during every attempt.
pub fn settled_page_rows(path: &std::path::Path) -> Result<PageRows, settle::Error> {
    settle::read_bolt_walked(
        path,
        mapwise_core::bolt::WalkOptions::default(),
        settle::CARRY_BUDGET,
        |file, walked| {
            let rows: PageRows = pages(file, &walked.layout).collect();
            (rows, walked.layout.problem_count())
        },
    )?
    .or_unsettled(|(_, problems)| *problems)
    .map(|(rows, _)| rows)
}

/// The structural check of the bbolt file at `path`, read quietly and
/// settled ([`crate::observe::settle`]). A file that does not open as bbolt is a
/// report with that one problem (a failed check, not a failure to check).
///
/// # Errors
/// [`settle::Error::Open`] when the file cannot be opened;
/// [`settle::Error::Unsettled`] when a writer committed during every
/// attempt (the problems seen may be transient: callers exit 2, never 1).
pub fn settled_check(path: &std::path::Path) -> Result<CheckReport, settle::Error> {
    let read = settle::read_bolt_walked(
        path,
        mapwise_core::bolt::WalkOptions::default(),
        settle::CARRY_BUDGET,
        |_, walked| check_report(&walked.layout),
    );
    match read {
        Ok(s) => s.or_unsettled(|r| (r.problems.len() as u64).saturating_add(r.more)),
        Err(settle::Error::NotBolt { path, reason }) => Ok(CheckReport {
            ok: false,
            problems: vec![format!(
                "{}: cannot open as a bbolt database: {reason}",
                path.display()
            )],
            warnings: Vec::new(),
            more: 0,
        }),
        Err(e) => Err(e),
    }
}

/// The meta pages and freelist of the bbolt file at `path` (reading only
/// those pages), with the file's length in bytes, settled
/// ([`crate::observe::settle`]).
///
/// # Errors
/// [`settle::Error`]: not openable, not bbolt, or never settled.
pub fn settled_info(path: &std::path::Path) -> Result<(u64, BoltInfo), settle::Error> {
    settle::read_bolt(path, |file| {
        (file.len(), BoltInfo::of(file, mapwise_core::bolt::freelist_info(file)))
    })?
    .or_unsettled(|_| 0)
}

/// The pages table's two heading lines, as `bbolt pages` prints them.
pub const PAGES_HEADING: &str =
    "ID       TYPE       ITEMS  OVRFLW\n======== ========== ====== ======\n";

/// One row of the pages table as `bbolt pages` prints it (free pages with
/// empty item and overflow columns).
///
/// # Errors
/// `fmt::Error` from `out`.
pub fn write_page_row(out: &mut impl std::fmt::Write, r: &PageRow) -> std::fmt::Result {
    match (r.items, r.overflow) {
        _ if r.page_type == "beyond-eof" => writeln!(out, "{:<8} {:<10}", r.id, r.page_type),
        (Some(items), Some(ovf)) => {
            let ovf = if ovf > 0 { ovf.to_string() } else { String::new() };
            writeln!(out, "{:<8} {:<10} {:<6} {:<6}", r.id, r.page_type, items, ovf)
        }
        _ => writeln!(out, "{:<8} {:<10} {:<6} {:<6}", r.id, r.page_type, "", ""),
    }
}

/// The pages table (heading and rows) as `bbolt pages` prints it.
///
/// # Errors
/// `fmt::Error` from `out`.
pub fn write_pages_text(
    out: &mut impl std::fmt::Write,
    rows: impl IntoIterator<Item = PageRow>,
) -> std::fmt::Result {
    out.write_str(PAGES_HEADING)?;
    for r in rows {
        write_page_row(out, &r)?;
    }
    Ok(())
}

/// The pages table as a JSON array, streamed row by row.
///
/// # Errors
/// `fmt::Error` from `out`.
pub fn write_pages_json(
    out: &mut impl std::fmt::Write,
    rows: impl IntoIterator<Item = PageRow>,
) -> std::fmt::Result {
    out.write_str("[")?;
    for (i, r) in rows.into_iter().enumerate() {
        out.write_str(if i == 0 { "\n  " } else { ",\n  " })?;
        out.write_str(&serde_json::to_string(&r).map_err(|_| std::fmt::Error)?)?;
    }
    out.write_str("\n]\n")
}

/// The pages table as one string (small files and tests).
#[must_use]
pub fn pages_text(rows: &[PageRow]) -> String {
    let mut s = String::new();
    let _ = write_pages_text(&mut s, rows.iter().cloned());
    s
}

/// A structural check: every problem the walk found.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CheckReport {
    /// `true` when no problem was found.
    pub ok: bool,
    /// One sentence per problem, naming the page/element and field.
    pub problems: Vec<String>,
    /// Facts worth a look that are not faults (e.g. a torn meta page
    /// readers skip): they do not make `ok` false.
    pub warnings: Vec<String>,
    /// Problems found beyond those listed.
    pub more: u64,
}

/// The check report of a layout.
#[must_use]
pub fn check_report(layout: &Layout) -> CheckReport {
    CheckReport {
        ok: layout.problem_count() == 0,
        problems: layout.problems.iter().map(ToString::to_string).collect(),
        warnings: layout.warnings.iter().map(ToString::to_string).collect(),
        more: layout.problems_dropped,
    }
}

/// A meta page as decoded, or why it was rejected.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MetaReport {
    /// 0 or 1.
    pub index: u8,
    /// `true` when it validates.
    pub valid: bool,
    /// Why it was rejected.
    pub fault: Option<String>,
    /// Header `id`.
    pub header_id: Option<u64>,
    /// `pageSize` in bytes.
    pub page_size: Option<u32>,
    /// `flags`.
    pub flags: Option<u32>,
    /// `root.root` page id.
    pub root: Option<u64>,
    /// `root.sequence`.
    pub root_sequence: Option<u64>,
    /// `freelist` page id; `None` with `freelist_stored = false` for the
    /// no-freelist sentinel.
    pub freelist: Option<u64>,
    /// `false` for `NoFreelistSync` files.
    pub freelist_stored: Option<bool>,
    /// `pgid`: the high-water mark in pages.
    pub hwm: Option<u64>,
    /// `txid`.
    pub txid: Option<u64>,
    /// `checksum` as lower-case hex.
    pub checksum: Option<String>,
}

/// A meta page's report: its fields when they could be read (`meta`),
/// and why it fails validation (`fault`), if it does.
#[must_use]
pub fn meta_report(index: u8, meta: Option<&Meta>, fault: Option<&MetaFault>) -> MetaReport {
    MetaReport {
        index,
        valid: meta.is_some() && fault.is_none(),
        fault: fault.map(ToString::to_string),
        header_id: meta.map(|m| m.header_id),
        page_size: meta.map(|m| m.page_size),
        flags: meta.map(|m| m.flags),
        root: meta.map(|m| m.root),
        root_sequence: meta.map(|m| m.root_sequence),
        freelist: meta.filter(|m| m.has_freelist()).map(|m| m.freelist),
        freelist_stored: meta.map(Meta::has_freelist),
        hwm: meta.map(|m| m.hwm),
        txid: meta.map(|m| m.txid),
        checksum: meta.map(|m| format!("{:016x}", m.checksum)),
    }
}

/// Both meta pages.
#[must_use]
pub fn meta_reports<S: PageSource + ?Sized>(file: &BoltFile<'_, S>) -> [MetaReport; 2] {
    let one = |i: u8, m: &Result<Meta, MetaFault>| match m {
        Ok(m) => meta_report(i, Some(m), None),
        Err(f) => meta_report(i, None, Some(f)),
    };
    let [a, b] = file.metas();
    [one(0, a), one(1, b)]
}

/// What a bbolt file's meta pages and freelist say.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BoltInfo {
    /// Page size in bytes.
    pub page_size: u32,
    /// Current meta page (0 or 1).
    pub current_meta: u8,
    /// Current txid.
    pub txid: u64,
    /// High-water mark in pages.
    pub hwm: u64,
    /// Both meta pages.
    pub metas: [MetaReport; 2],
    /// The freelist.
    pub freelist: FreelistReport,
}

impl BoltInfo {
    /// The facts of an opened file and its walk's freelist finding.
    #[must_use]
    pub fn of<S: PageSource + ?Sized>(file: &BoltFile<'_, S>, freelist: FreelistInfo) -> BoltInfo {
        BoltInfo {
            page_size: file.page_size(),
            current_meta: file.current_index(),
            txid: file.meta().txid,
            hwm: file.meta().hwm,
            metas: meta_reports(file),
            freelist: freelist.into(),
        }
    }
}

/// What a revlog index's header and entries say.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct RevlogInfo {
    /// Format version (0 or 1).
    pub version: u16,
    /// Data chunks are inline in the index (`FLAG_INLINE_DATA`).
    pub inline: bool,
    /// Deltas against any earlier revision (`FLAG_GENERALDELTA`).
    pub generaldelta: bool,
    /// Revisions (entries) read.
    pub revisions: u64,
    /// Sum of the entries' stored chunk lengths, bytes.
    pub data_bytes: u64,
}

/// One archive of an RRD file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RraSummary {
    /// Consolidation function (`AVERAGE`, `HWPREDICT`, ...).
    pub cf: &'static str,
    /// Rows.
    pub rows: u64,
    /// PDPs per row.
    pub pdp_per_row: u64,
    /// The row the last update wrote.
    pub cur_row: u64,
}

/// What an RRD file's header says.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RrdInfo {
    /// `stat_head.version` as stored (`0003`, ...).
    pub version: String,
    /// Seconds per PDP.
    pub step: u64,
    /// `live_head.last_up`, seconds since the epoch.
    pub last_update: i64,
    /// Data source names.
    pub ds: Vec<String>,
    /// The archives.
    pub rras: Vec<RraSummary>,
    /// Page-aligned byte ranges the next update touches (`offset`, `len`).
    pub hot: Vec<(u64, u64)>,
}

/// The freelist as found.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum FreelistReport {
    /// `NoFreelistSync`: free pages are the unreachable ones.
    NotStored,
    /// A freelist run.
    Stored {
        /// First page.
        page: u64,
        /// Header `overflow`.
        overflow: u32,
        /// Ids listed.
        ids: u64,
        /// `count-in-header` or `count-in-first-slot`.
        encoding: &'static str,
    },
    /// Unreadable (see the problems).
    Unreadable {
        /// The meta's `freelist` field.
        page: u64,
    },
    /// Not read: the read did not settle.
    NotRead {
        /// The meta's `freelist` field.
        page: u64,
    },
}

impl From<FreelistInfo> for FreelistReport {
    fn from(f: FreelistInfo) -> Self {
        match f {
            FreelistInfo::NotStored => FreelistReport::NotStored,
            FreelistInfo::Stored { pgid, overflow, ids, encoding } => {
                FreelistReport::Stored { page: pgid, overflow, ids, encoding: encoding.name() }
            }
            FreelistInfo::Unreadable { pgid } => FreelistReport::Unreadable { page: pgid },
            FreelistInfo::NotRead { pgid } => FreelistReport::NotRead { page: pgid },
        }
    }
}

/// One bucket of the file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BucketReport {
    /// Display path (`a/b`; names that are not printable ASCII as `0x…`).
    pub path: String,
    /// Name bytes in hex.
    pub name_hex: String,
    /// Nesting level (1 = top level).
    pub level: u16,
    /// Root page id, 0 when inline.
    pub root: u64,
    /// `true` for an inline bucket.
    pub inline: bool,
    /// Sequence.
    pub sequence: u64,
    /// Keys directly in the bucket.
    pub keys: u64,
    /// Sub-buckets directly in the bucket.
    pub buckets: u64,
    /// Page runs of the bucket's own tree.
    pub pages: u64,
    /// Tree height (0 inline).
    pub height: u16,
}

/// A labelled region, as [`RegionsJson`] writes it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RegionReport<'a> {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Kind name.
    pub kind: &'static str,
    /// First page id.
    pub id: u64,
    /// Head of the run (for overflow continuations).
    pub head: u64,
    /// Owning bucket path, if any.
    pub bucket: Option<&'a str>,
    /// Tree depth (1 = bucket root).
    pub depth: u16,
    /// Elements or ids.
    pub items: u32,
    /// Fill of the run, 0..1.
    pub fill: f64,
}

/// Every region of a layout, written as a JSON array of [`RegionReport`]s
/// straight from the layout as it is serialized: nothing is held per
/// region (a 2 GiB bbolt file has half a million), and a region's bucket
/// path is borrowed from its group.
#[derive(Debug, Clone)]
pub struct RegionsJson(pub std::sync::Arc<Layout>);

impl Serialize for RegionsJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq as _;
        let layout = &*self.0;
        let mut seq = s.serialize_seq(Some(layout.regions.len()))?;
        for r in &layout.regions {
            seq.serialize_element(&RegionReport {
                offset: r.offset,
                len: r.len,
                kind: r.kind.name(),
                id: r.id,
                head: r.head,
                bucket: r.group.and_then(|g| layout.group(g)).map(|g| g.path.as_str()),
                depth: r.depth,
                items: r.items,
                fill: (r.fill() * 1000.0).round() / 1000.0,
            })?;
        }
        seq.end()
    }
}

/// The whole layout of a file.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutReport {
    /// `bolt`, `revlog`, `rrd` or `unknown`.
    pub format: &'static str,
    /// File size in bytes: when the layout was read, or when residency
    /// was sampled if the file grew in between (`kinds` counts the growth
    /// as `unused`).
    pub file_size: u64,
    /// Format page size in bytes (0 when the format has no pages).
    pub page_size: u32,
    /// bbolt facts: meta pages, the current one, the freelist.
    pub bolt: Option<BoltInfo>,
    /// revlog facts: version, flags, revisions.
    pub revlog: Option<RevlogInfo>,
    /// RRD facts: step, data sources, archives, hot pages.
    pub rrd: Option<RrdInfo>,
    /// RRD with `RRDCACHED_ADDRESS` set: the updates the daemon holds for
    /// the file, not yet written (the lines of its `PENDING` reply; see
    /// [`crate::engine::rrd::cached::pending_in_env`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rrdcached_pending: Option<u64>,
    /// Why the daemon named by `RRDCACHED_ADDRESS` could not say (rrdtool's
    /// words), when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rrdcached_error: Option<String>,
    /// Totals per kind.
    pub kinds: Vec<KindTotal>,
    /// Every bucket, depth first (bbolt).
    pub buckets: Vec<BucketReport>,
    /// Every region, by offset.
    pub regions: RegionsJson,
    /// Problems found.
    pub problems: Vec<String>,
    /// Warnings (not faults).
    pub warnings: Vec<String>,
}

/// Bytes of the file range `[offset, offset + len)` that lie in resident
/// OS pages, clipped to the sampled range of `res` (bytes past the end of
/// the file are never resident).
///
/// Costs one popcount over the range's bitmap words, so it stays fast on
/// huge regions (a 64 GiB file is one region when its format is unknown).
#[must_use]
pub fn resident_bytes(res: &Residency, offset: u64, len: u64) -> u64 {
    let ps = res.page_size;
    if ps == 0 || len == 0 {
        return 0;
    }
    let range_end = res.offset.saturating_add(res.len);
    let start = offset.max(res.offset);
    let end = offset.saturating_add(len).min(range_end);
    if start >= end {
        return 0;
    }
    let count = res.resident_in(start, end - start);
    if count == 0 {
        return 0;
    }
    let first = (start - res.offset) / ps;
    let last = (end - 1 - res.offset) / ps;
    let mut bytes = count.saturating_mul(ps);
    if res.is_resident(first) {
        bytes = bytes.saturating_sub(start - (res.offset + first * ps));
    }
    if res.is_resident(last) {
        let page_end = res.offset.saturating_add((last + 1).saturating_mul(ps));
        bytes = bytes.saturating_sub(page_end.saturating_sub(end));
    }
    bytes
}

/// The unit of the page map and of per-kind page counts: the format's
/// page size, or the OS page size when the format has none.
#[must_use]
pub fn unit(layout: &Layout) -> u64 {
    match layout.page_size {
        0 => os_page_size(),
        ps => u64::from(ps),
    }
}

/// `true` when map page `p` (of `unit` bytes) is wholly resident: every
/// OS page of it inside the sampled range is, and it has at least one.
fn page_resident(res: &Residency, unit: u64, p: u64) -> bool {
    let ps = res.page_size.max(1);
    let start = p.saturating_mul(unit).max(res.offset);
    let end = p.saturating_add(1).saturating_mul(unit).min(res.offset.saturating_add(res.len));
    if start >= end {
        return false;
    }
    let os = (end - 1 - res.offset) / ps - (start - res.offset) / ps + 1;
    res.resident_in(start, end - start) == os
}

/// Wholly resident map pages among `[first, last]`: one popcount for the
/// run when map pages are OS pages, else page by page.
fn resident_pages_in(res: &Residency, unit: u64, first: u64, last: u64) -> u64 {
    if unit == res.page_size && first >= res.offset / unit {
        let start = first.saturating_mul(unit);
        let end =
            last.saturating_add(1).saturating_mul(unit).min(res.offset.saturating_add(res.len));
        return if start < end { res.resident_in(start, end - start) } else { 0 };
    }
    (first..=last).filter(|&p| page_resident(res, unit, p)).count() as u64
}

/// Totals per kind (kinds present only, in legend order): bytes and
/// distinct pages from [`Layout::kind_counts`], the one count every front
/// end shows; with resident bytes ([`resident_bytes`], a popcount per
/// region) and wholly resident pages when `res` is given and trusted.
///
/// When `res` reaches past the end of the file the layout was read from
/// (the file grew since), the bytes past it count as `unused`: no page of
/// the layout's snapshot is there (bbolt grows a file before the commit
/// that uses the new pages), so every page `res` covers counts once.
///
/// One call walks the layout; a front end that counts a new residency
/// sample of the same layout again and again keeps a [`KindIndex`].
#[must_use]
pub fn kind_totals(layout: &Layout, res: Option<&Residency>) -> Vec<KindTotal> {
    KindIndex::of(layout).totals(layout, res)
}

/// What [`kind_totals`] needs of a layout, made once so that each new
/// residency sample costs a popcount per kind instead of a walk of every
/// region: the per-kind counts, and for the regions that are exactly one
/// OS page at an OS page boundary (most of a bbolt file) one bitmap per
/// kind of the pages they sit on. Two such regions never share a page, and
/// no other region overlaps them, so a kind's resident pages and bytes
/// among them are `popcount(mask & residency)` pages of `unit` bytes.
#[derive(Debug, Clone, Default)]
pub struct KindIndex {
    unit: u64,
    counts: KindCounts,
    /// End of the layout's last region or its source length, whichever
    /// is further: bytes of a sample past it are a grown file's tail.
    covered: u64,
    /// Kind index and bitmap (LSB first, page `i` = bit `i % 64` of word
    /// `i / 64`) of its one-page regions; kinds with none are absent.
    masks: Vec<(usize, Vec<u64>)>,
    /// The other regions, in layout order.
    rest: mapwise_core::Regions,
}

impl KindIndex {
    /// The index of `layout`.
    #[must_use]
    pub fn of(layout: &Layout) -> KindIndex {
        KindIndex::of_visiting(layout, |_| {})
    }

    /// [`KindIndex::of`], handing `visit` every region on the way, so a
    /// caller needing its own figures of the regions makes them in the
    /// same pass.
    pub fn of_visiting(layout: &Layout, mut visit: impl FnMut(&mapwise_core::Region)) -> KindIndex {
        let unit = unit(layout).max(1);
        let one_page = |r: &mapwise_core::Region| {
            unit == os_page_size() && r.len == unit && r.offset.is_multiple_of(unit)
        };
        let mut masks: Vec<(usize, Vec<u64>)> = Vec::new();
        let mut rest = mapwise_core::Regions::new();
        let mut counts = mapwise_core::layout::KindCounter::new(unit);
        for r in &layout.regions {
            visit(&r);
            counts.add(&r);
            if r.len == 0 {
                continue;
            }
            if !one_page(&r) {
                rest.push(r);
                continue;
            }
            let kind = r.kind.index();
            let page = r.offset / unit;
            let Ok(word) = usize::try_from(page / 64) else {
                rest.push(r);
                continue;
            };
            let mask = match masks.iter().position(|(k, _)| *k == kind) {
                Some(m) => &mut masks[m].1,
                None => {
                    masks.push((kind, Vec::new()));
                    &mut masks.last_mut().expect("just pushed").1
                }
            };
            if mask.len() <= word {
                mask.resize(word + 1, 0);
            }
            mask[word] |= 1 << (page % 64);
        }
        KindIndex {
            unit,
            counts: counts.counts(),
            covered: layout.regions.last().map_or(0, |r| r.end()).max(layout.source_len),
            masks,
            rest,
        }
    }

    /// [`Layout::cell_kinds`] of `layout` (the layout this index was made
    /// of), from the index: the one-page regions' kinds by their page
    /// bitmaps, only the other regions read, so a new structure's map
    /// costs no pass over half a million page runs. Falls back to
    /// [`Layout::cell_kinds`] for an empty index.
    #[must_use]
    pub fn cell_kinds(&self, layout: &Layout, cells: &[(u64, u64)]) -> Vec<Kind> {
        if self.unit == 0 || (self.masks.is_empty() && self.rest.is_empty()) {
            return layout.cell_kinds(cells);
        }
        let unit = self.unit;
        let mut out = Vec::with_capacity(cells.len());
        let mut rest = mapwise_core::layout::CellBytes::new(&self.rest);
        for &(start, end) in cells {
            let mut bytes = [0u64; Kind::ALL.len()];
            if start < end {
                // Pages wholly inside the cell, then the partial ones at
                // its edges with the bytes they share with it.
                let (full_lo, full_hi) = (start.div_ceil(unit), end / unit);
                let edges = [start / unit, (end - 1) / unit];
                for (kind, mask) in &self.masks {
                    let bit = |p: u64| crate::os::residency::count_bits(mask, p, p) > 0;
                    let mut n = if full_lo < full_hi {
                        crate::os::residency::count_bits(mask, full_lo, full_hi - 1)
                            .saturating_mul(unit)
                    } else {
                        0
                    };
                    for (i, &p) in edges.iter().enumerate() {
                        let inside = full_lo <= p && p < full_hi;
                        if inside || (i == 1 && p == edges[0]) || !bit(p) {
                            continue;
                        }
                        let page = p.saturating_mul(unit);
                        n += end.min(page.saturating_add(unit)) - start.max(page);
                    }
                    if let Some(b) = bytes.get_mut(*kind) {
                        *b = b.saturating_add(n);
                    }
                }
            }
            rest.add(start, end, &mut bytes);
            out.push(mapwise_core::layout::kind_of_cell(&bytes));
        }
        out
    }

    /// [`kind_totals`] of `layout` (the layout this index was made of) and
    /// `res`.
    #[must_use]
    pub fn totals(&self, layout: &Layout, res: Option<&Residency>) -> Vec<KindTotal> {
        let unit = self.unit;
        let mut counts = self.counts.clone();
        let covered = self.covered;
        let grown =
            res.map_or(0, |r| r.offset.saturating_add(r.len).saturating_sub(covered.max(r.offset)));
        let res = res.filter(|r| r.trust.is_known());
        let mut resident = [0u64; Kind::ALL.len()];
        let mut resident_pages = [0u64; Kind::ALL.len()];
        let mut last_page: [Option<u64>; Kind::ALL.len()] = [None; Kind::ALL.len()];
        if grown > 0 {
            let i = Kind::Unused.index();
            let first = covered.div_ceil(unit);
            let last = (covered + grown - 1) / unit;
            if let (Some(b), Some(p)) = (counts.bytes.get_mut(i), counts.pages.get_mut(i)) {
                *b = b.saturating_add(grown);
                *p = p.saturating_add((last + 1).saturating_sub(first));
            }
            if let Some(r) = res
                && let (Some(b), Some(p)) = (resident.get_mut(i), resident_pages.get_mut(i))
            {
                *b = resident_bytes(r, covered, grown);
                if first <= last {
                    *p = resident_pages_in(r, unit, first, last);
                }
            }
        }
        if let Some(r) = res {
            let others: Box<dyn Iterator<Item = mapwise_core::Region>> =
                if r.offset == 0 && r.page_size == unit {
                    for (kind, mask) in &self.masks {
                        let n: u64 = mask
                            .iter()
                            .zip(&r.bitmap)
                            .map(|(m, b)| u64::from((m & b).count_ones()))
                            .sum();
                        if let (Some(b), Some(p)) =
                            (resident.get_mut(*kind), resident_pages.get_mut(*kind))
                        {
                            *b = b.saturating_add(n.saturating_mul(unit));
                            *p = p.saturating_add(n);
                        }
                    }
                    Box::new(self.rest.iter())
                } else {
                    Box::new(layout.regions.iter().filter(|g| g.len > 0))
                };
            for region in others {
                let i = region.kind.index();
                if let Some(slot) = resident.get_mut(i) {
                    *slot = slot.saturating_add(resident_bytes(r, region.offset, region.len));
                }
                // The same distinct pages as `kind_counts`: a region shares
                // at most its first page with the kind's previous region.
                let mut first = region.offset / unit;
                let last = (region.end() - 1) / unit;
                if let Some(prev) = last_page.get_mut(i) {
                    if *prev == Some(first) {
                        first += 1;
                    }
                    *prev = Some(last);
                }
                if first <= last
                    && let Some(slot) = resident_pages.get_mut(i)
                {
                    *slot = slot.saturating_add(resident_pages_in(r, unit, first, last));
                }
            }
        }
        mapwise_view::totals::kind_totals(&counts)
            .into_iter()
            .map(|t| {
                let i = usize::from(t.index);
                KindTotal {
                    resident_bytes: res.map(|_| resident.get(i).copied().unwrap_or(0)),
                    resident_pages: res.map(|_| resident_pages.get(i).copied().unwrap_or(0)),
                    ..t
                }
            })
            .collect()
    }
}

/// How an RRD's pending updates in rrdcached read in a report and on the
/// inspector's status line: `N updates pending in rrdcached` (`ADDRESS`
/// named; `1 update` for one), or the daemon's error; `None` unless `RRDCACHED_ADDRESS` is set.
#[must_use]
pub fn rrdcached_line(
    pending: &Option<(String, Result<usize, crate::engine::rrd::Error>)>,
) -> Option<String> {
    let (addr, n) = pending.as_ref()?;
    Some(match n {
        Ok(1) => format!("1 update pending in rrdcached ({addr})"),
        Ok(n) => format!("{n} updates pending in rrdcached ({addr})"),
        Err(e) => format!("rrdcached ({addr}): {e}"),
    })
}

/// The layout report of a file: its layout, its format's facts, and
/// resident bytes per kind when `res` is given and trusted.
#[must_use]
pub fn layout_report(
    layout: &std::sync::Arc<Layout>,
    bolt: Option<&BoltInfo>,
    revlog: Option<&RevlogInfo>,
    rrd: Option<&RrdInfo>,
    res: Option<&Residency>,
) -> LayoutReport {
    LayoutReport {
        format: layout.format.name(),
        file_size: res
            .map_or(layout.source_len, |r| r.offset.saturating_add(r.len).max(layout.source_len)),
        page_size: layout.page_size,
        bolt: bolt.cloned(),
        revlog: revlog.copied(),
        rrd: rrd.cloned(),
        rrdcached_pending: None,
        rrdcached_error: None,
        kinds: kind_totals(layout, res),
        // Group 0 of a bbolt layout is the root bucket; other formats'
        // groups are not buckets.
        buckets: layout
            .groups
            .iter()
            .skip(1)
            .filter(|_| layout.format == mapwise_core::layout::Format::Bolt)
            .map(|g| BucketReport {
                path: g.path.clone(),
                name_hex: hex(&g.key),
                level: g.level,
                root: g.root,
                inline: g.host.is_some(),
                sequence: g.sequence,
                keys: g.keys,
                buckets: g.buckets,
                pages: g.pages,
                height: g.height,
            })
            .collect(),
        regions: RegionsJson(std::sync::Arc::clone(layout)),
        problems: layout.problems.iter().map(ToString::to_string).collect(),
        warnings: layout.warnings.iter().map(ToString::to_string).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::residency::Trust;

    #[test]
    fn page_rows_hold_runs_of_free_pages_as_one_entry() {
        let row = |id, t: &str, items: Option<u16>| PageRow {
            id,
            page_type: t.into(),
            items,
            overflow: items.map(|_| 0),
        };
        let mut want = vec![row(0, "meta", Some(0)), row(1, "meta", Some(0))];
        want.extend((2..1_000_002).map(|id| row(id, "free", None)));
        want.push(row(1_000_002, "leaf", Some(3)));
        want.push(row(1_000_003, "free", None));
        want.extend((1_000_004..1_000_010).map(|id| row(id, "beyond-eof", None)));
        let page = |id, page_type, items| PagesRow::Page { id, page_type, items, overflow: 0 };
        let mut core_rows = vec![page(0, PageType::Meta, 0), page(1, PageType::Meta, 0)];
        core_rows.extend((2..1_000_002).map(|id| PagesRow::Free { id }));
        core_rows.push(page(1_000_002, PageType::Leaf, 3));
        core_rows.push(PagesRow::Free { id: 1_000_003 });
        core_rows.extend((1_000_004..1_000_010).map(|id| PagesRow::BeyondEof { id }));
        let rows: PageRows = core_rows.into_iter().collect();
        assert_eq!(rows.len(), want.len() as u64);
        // meta, meta, a run of a million free pages, leaf, one free page,
        // a run beyond the end.
        assert_eq!(rows.entries(), 6);
        assert!(rows.iter().eq(want.iter().cloned()));
        assert_eq!(
            pages_text(&want),
            {
                let mut s = String::new();
                write_pages_text(&mut s, rows.iter()).unwrap();
                s
            },
            "the table prints the same from runs"
        );
    }

    #[test]
    fn cell_kinds_from_the_index_are_the_layouts() {
        let ps = os_page_size();
        let mut l = Layout::unknown(0);
        l.format = mapwise_core::Format::Bolt;
        l.page_size = u32::try_from(ps).unwrap();
        let kinds = [Kind::Leaf, Kind::Branch, Kind::Leaf, Kind::Corrupt, Kind::Free];
        let mut regions = Vec::new();
        let mut at = 0u64;
        for i in 0..300u64 {
            // Mostly one-page runs, now and then a longer run or a span.
            let pages = if i % 17 == 0 { 1 + i % 5 } else { 1 };
            let kind = if i % 17 == 0 { Kind::Overflow } else { kinds[(i % 5) as usize] };
            regions.push(mapwise_core::Region {
                offset: at,
                len: pages * ps,
                kind,
                id: at / ps,
                head: at / ps,
                group: None,
                depth: 1,
                items: 0,
                used: 0,
                run_len: pages * ps,
            });
            at += pages * ps;
        }
        // A partial page at the end.
        regions.push(mapwise_core::Region {
            offset: at,
            len: ps / 2,
            kind: Kind::Unused,
            id: at / ps,
            head: at / ps,
            group: None,
            depth: 0,
            items: 0,
            used: 0,
            run_len: 0,
        });
        l.source_len = at + ps / 2;
        l.regions = regions.into();
        let index = KindIndex::of(&l);
        for per in [1, 2, 3, 7, 64, 1000] {
            let cells: Vec<(u64, u64)> = (0..)
                .map(|c: u64| (c * per * ps, ((c + 1) * per * ps).min(l.source_len)))
                .take_while(|c| c.0 < l.source_len)
                .collect();
            assert_eq!(index.cell_kinds(&l, &cells), l.cell_kinds(&cells), "{per} pages a cell");
        }
        // Cells not on page boundaries, and out of order.
        let odd = [(ps / 3, 5 * ps + 7), (7 * ps + 1, 7 * ps + 2), (0, 1), (9 * ps, 40 * ps - 1)];
        assert_eq!(index.cell_kinds(&l, &odd), l.cell_kinds(&odd));
    }

    fn res(len: u64, bits: &[u64]) -> Residency {
        let ps = 4096;
        let total = len.div_ceil(ps);
        let mut bitmap = vec![0u64; usize::try_from(total.div_ceil(64)).unwrap()];
        for &b in bits {
            bitmap[usize::try_from(b / 64).unwrap()] |= 1 << (b % 64);
        }
        Residency {
            offset: 0,
            len,
            page_size: ps,
            resident_pages: bits.len() as u64,
            bitmap,
            total_pages: total,
            trust: Trust::Known,
            cachestat: None,
        }
    }

    /// The obvious per-byte definition.
    fn naive(r: &Residency, offset: u64, len: u64) -> u64 {
        (offset..offset + len).filter(|b| *b < r.len && r.is_resident(b / r.page_size)).count()
            as u64
    }

    #[test]
    fn resident_bytes_matches_naive() {
        let r = res(5 * 4096 + 100, &[0, 2, 3, 5]);
        for (o, l) in [
            (0, 100),
            (10, 4096),
            (4000, 200),
            (4096, 4096),
            (8000, 9000),
            (0, 30000),
            (20480, 100),
            (20480 + 50, 1000),
            (12288 + 5, 1),
        ] {
            assert_eq!(resident_bytes(&r, o, l), naive(&r, o, l), "{o}+{l}");
        }
        assert_eq!(resident_bytes(&r, u64::MAX - 1, 10), 0);
        assert_eq!(resident_bytes(&r, 0, 0), 0);
    }
}
