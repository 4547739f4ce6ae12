//! The non-interactive subcommands: `residency`, `pages`, `page`, `check`
//! and `layout`, each as text or JSON.
//!
//! They read the file the way the live view does: structure through
//! `O_DIRECT` ([`QuietSource`], [`read_snapshot`]), residency through
//! `mincore(2)`; no lock is taken and nothing is written, so running them
//! neither changes which pages are cached nor blocks a writer.

use std::fmt::Write as _;
use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use mapwise_core::PageSource;
use mapwise_core::bolt::{Body, BoltFile, Element, PageDetail, WalkOptions, page_detail};
use mapwise_core::detect::{detect, is_foreign_endian_bolt};
use mapwise_core::layout::Format;
use mapwise_native::observe::watch::{Effect, Snapshot, read_snapshot, read_snapshot_from};
use mapwise_native::os::io::QuietSource;
use mapwise_native::os::residency::{self, CacheStat, Residency, Trust};
use mapwise_native::report;
use mapwise_view::fmt::{hex, human_size};
use mapwise_view::totals::KindTotal;
use serde::Serialize;

use crate::app::{DETAIL_LIMIT, group_name};
use crate::describe::{Widths, page_lines};
use crate::stats::{self, g3, percent, vmtouch_size};

/// What a subcommand prints and its exit status.
#[derive(Debug, Clone)]
pub struct Output {
    /// Text for standard output (ends with a newline when not empty).
    pub text: String,
    /// Exit status: 0 fine, 1 problems found.
    pub code: u8,
    /// A layout report to print after `text` as JSON (pretty, then a
    /// newline), written straight to the output: as one string, a 2 GiB
    /// bbolt file's half a million regions took about 110 MB more.
    pub layout_json: Option<Box<report::LayoutReport>>,
}

impl Output {
    fn ok(text: String) -> Output {
        Output { text, code: 0, layout_json: None }
    }
}

fn json<T: Serialize>(value: &T) -> Result<String> {
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

/// `cachestat(2)` counts, as printed in JSON.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CacheStatReport {
    /// Pages in the page cache.
    pub cache: u64,
    /// Dirty pages.
    pub dirty: u64,
    /// Pages under writeback.
    pub writeback: u64,
    /// Pages evicted by reclaim.
    pub evicted: u64,
    /// Evicted pages that were part of the working set.
    pub recently_evicted: u64,
}

impl From<CacheStat> for CacheStatReport {
    fn from(c: CacheStat) -> Self {
        CacheStatReport {
            cache: c.cache,
            dirty: c.dirty,
            writeback: c.writeback,
            evicted: c.evicted,
            recently_evicted: c.recently_evicted,
        }
    }
}

/// `inspector residency --json`: vmtouch's totals plus per-kind bytes.
/// Field names are stable; fields may be added, never renamed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ResidencyReport {
    /// The path as given.
    pub file: String,
    /// File size in bytes when sampled.
    pub size: u64,
    /// Detected format (`bolt`, `unknown`, ...).
    pub format: &'static str,
    /// OS page size in bytes (the unit of the page counts).
    pub page_size: u64,
    /// OS pages of the file (`ceil(size / page_size)`).
    pub total_pages: u64,
    /// Resident OS pages; `null` when the trust is unknown.
    pub resident_pages: Option<u64>,
    /// `resident_pages * page_size`; `null` when the trust is unknown.
    pub resident_bytes: Option<u64>,
    /// `100 * resident_pages / total_pages`; `null` when unknown.
    pub percent: Option<f64>,
    /// `known` or `unknown`.
    pub trust: &'static str,
    /// Why the trust is unknown.
    pub trust_reason: Option<String>,
    /// `cachestat(2)` counts for the file, when the kernel answered.
    pub cachestat: Option<CacheStatReport>,
    /// Per kind of the layout, for every recognised format (bbolt page
    /// kinds, RRD sections and rows, revlog entries and chunks): bytes,
    /// distinct OS/format pages touched, resident bytes by popcount over
    /// the kind's regions. Empty when the format is unknown or the
    /// structure unreadable.
    pub kinds: Vec<KindTotal>,
    /// Why the structure could not be read, when it could not.
    pub structure_error: Option<String>,
    /// `true` when `kinds` comes from a read of one snapshot of the file;
    /// `false` when a writer committed faster than the read could follow
    /// (a bbolt file): the split is of an incomplete read, its pages not
    /// read counted as `unknown`.
    pub settled: bool,
    /// Why the read did not settle, when it did not.
    pub unsettled: Option<String>,
    /// RRD with `RRDCACHED_ADDRESS` set: the updates the daemon holds for
    /// the file, not yet written (its `PENDING` reply's lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rrdcached_pending: Option<u64>,
    /// Why the daemon named by `RRDCACHED_ADDRESS` could not say, when it
    /// could not (rrdtool's words).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rrdcached_error: Option<String>,
    /// The line the text output shows for the daemon.
    #[serde(skip)]
    rrdcached_line: Option<String>,
    /// An RRD file's hot set, when its header could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_set: Option<HotSetReport>,
    /// A bbolt file read in one snapshot: its size as bbolt counts it
    /// (high-water mark × page size; etcd's `dbSize`).
    #[serde(skip)]
    pub bolt_size: Option<u64>,
    /// Its free bytes as bbolt counts them (`FreePageN` × page size): the
    /// pages no tree reaches; while a writer holds the file (its `flock`
    /// in `/proc/locks`, as etcd's bbolt), less those the last commit
    /// freed, which that process keeps pending for its readers.
    #[serde(skip)]
    pub bolt_free: Option<u64>,
}

/// An RRD file's hot set: the OS pages its next update touches, which are
/// the header's pages and each archive's current and next rows
/// ([`mapwise_core::rrd::hot_ranges`]); and what the page cache spends
/// outside it, on rows no update will touch. Counts are `null` when the
/// kernel does not say.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HotSetReport {
    /// OS pages in the hot set.
    pub hot_pages: u64,
    /// `hot_pages * page_size`.
    pub hot_bytes: u64,
    /// Of them, resident.
    pub hot_resident_pages: Option<u64>,
    /// `100 * hot_resident_pages / hot_pages`.
    pub hot_resident_percent: Option<f64>,
    /// Resident bytes outside the hot set ("cold resident").
    pub cold_resident_bytes: Option<u64>,
}

impl HotSetReport {
    /// The hot set `hot` (page-aligned byte ranges) against `res`.
    #[must_use]
    pub fn of(hot: &[(u64, u64)], res: &Residency) -> HotSetReport {
        let (pages, resident) = Effect::count_all(res, hot);
        let cold = res.known_resident_pages().zip(resident).map(|(all, h)| all.saturating_sub(h));
        HotSetReport {
            hot_pages: pages,
            hot_bytes: pages.saturating_mul(res.page_size),
            hot_resident_pages: resident,
            hot_resident_percent: resident.map(|r| percent(r, pages)),
            cold_resident_bytes: cold.map(|c| c.saturating_mul(res.page_size)),
        }
    }

    /// The line the text outputs show: `hot set 12/12 pages resident
    /// (100%), cold resident 1.2M`.
    #[must_use]
    pub fn line(&self) -> String {
        match (self.hot_resident_pages, self.cold_resident_bytes) {
            (Some(r), Some(c)) => format!(
                "hot set {r}/{} pages resident ({}%), cold resident {}",
                self.hot_pages,
                g3(percent(r, self.hot_pages)),
                vmtouch_size(c)
            ),
            _ => format!("hot set {} pages, residency unknown", self.hot_pages),
        }
    }
}

/// What rrdcached holds for an RRD file (the daemon `RRDCACHED_ADDRESS`
/// names; `PENDING` only, so read-only: nothing is flushed), as the
/// reports show it; all `None` for another format or with no daemon named.
struct RrdcachedPending {
    /// Updates the daemon holds for the file.
    count: Option<u64>,
    /// Why the daemon could not say.
    error: Option<String>,
    /// The text reports' line ([`report::rrdcached_line`]).
    line: Option<String>,
}

fn rrdcached_pending(path: &Path, format: Format) -> RrdcachedPending {
    use mapwise_native::engine::rrd::cached;
    // The variable the timeout message names, when set; else a short wait,
    // so that a silent daemon holds no report up.
    let limit = if std::env::var_os(cached::ENV_TIMEOUT).is_some() {
        cached::timeout()
    } else {
        RRDCACHED_TIMEOUT
    };
    let p = (format == Format::Rrd).then(|| cached::pending_in_env(path, limit)).flatten();
    RrdcachedPending {
        count: p.as_ref().and_then(|(_, n)| n.as_ref().ok()).map(|&n| n as u64),
        error: p.as_ref().and_then(|(_, n)| n.as_ref().err()).map(ToString::to_string),
        line: report::rrdcached_line(&p),
    }
}

/// `inspector residency FILE`.
///
/// # Errors
/// When the file cannot be opened or sampled.
pub fn residency(path: &Path, as_json: bool) -> Result<Output> {
    let measured = measure(path)?;
    if as_json {
        return Ok(Output::ok(json(&measured.report)?));
    }
    Ok(Output::ok(residency_text(&measured.report, &measured.residency, measured.format_page)))
}

/// One file's residency, as `inspector residency FILE` reports it: the
/// report and the sample it was made from.
#[derive(Debug)]
pub struct Measured {
    /// The report (`--json`'s object).
    pub report: ResidencyReport,
    /// The sample (its page bitmap; drop it once the report is made).
    pub residency: Residency,
    /// The format's own page size (bbolt), 0 when it has none.
    pub format_page: u32,
}

/// Measure one file as `inspector residency FILE` does: its structure read
/// quietly, its residency by `mincore(2)`, the per-kind split when the
/// format is known. Shared by the one-file and the many-file reports.
///
/// # Errors
/// When the file cannot be opened or sampled.
pub fn measure(path: &Path) -> Result<Measured> {
    measure_structure(path).map(|(m, _)| m)
}

/// [`measure`], and the structure it read (quietly, one snapshot).
///
/// # Errors
/// As [`measure`].
pub fn measure_structure(path: &Path) -> Result<(Measured, Snapshot)> {
    // One descriptor for both: its structure is read `O_DIRECT`, and the
    // mapping `mincore(2)` asks through needs no particular open mode.
    let src = QuietSource::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let snap = read_snapshot_from(path, &src, STRUCTURE)
        .with_context(|| format!("cannot open {}", path.display()))?;
    Ok((measure_file(path, src.file(), &snap)?, snap))
}

/// How [`measure`] walks a file: no key-order checks, and the previous
/// snapshot kept.
const STRUCTURE: WalkOptions = WalkOptions { check_keys: false, previous_snapshot: true };

/// [`measure`] with the file's structure already read ([`measure_structure`]):
/// only the residency is sampled.
///
/// # Errors
/// When the file cannot be opened or sampled.
pub fn measure_with(path: &Path, snap: &Snapshot) -> Result<Measured> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    measure_file(path, &file, snap)
}

/// [`measure_with`] through `file`, open on `path`.
fn measure_file(path: &Path, file: &File, snap: &Snapshot) -> Result<Measured> {
    let res = residency::sample(file)
        .map_err(|e| anyhow!("{}: cannot sample residency: {e}", path.display()))?;
    let kinds = if snap.format != Format::Unknown && snap.error.is_none() {
        stats::kind_totals(&snap.layout, Some(&res))
    } else {
        Vec::new()
    };
    let bolt_free = snap.bolt.as_ref().filter(|_| snap.unsettled.is_none()).and_then(|_| {
        let live = mapwise_native::os::lock::flock_writer(&file.metadata().ok()?)?;
        let free = |k: &str| kinds.iter().filter(|t| t.kind == k).map(|t| t.bytes).sum::<u64>();
        Some(free("free") + if live { 0 } else { free("pending") })
    });
    let size = res.offset.saturating_add(res.len);
    // An RRD file never grows: shorter than its header says is truncated.
    let short = snap.format == Format::Rrd && snap.rrd.is_some() && snap.expected_len > size;
    let known = res.known_resident_pages();
    let pending = rrdcached_pending(path, snap.format);
    let rep = ResidencyReport {
        file: path.display().to_string(),
        size: res.offset.saturating_add(res.len),
        format: snap.format.name(),
        page_size: res.page_size,
        total_pages: res.total_pages,
        resident_pages: known,
        resident_bytes: known.map(|n| n.saturating_mul(res.page_size)),
        percent: known.map(|n| percent(n, res.total_pages)),
        trust: if res.trust.is_known() { "known" } else { "unknown" },
        trust_reason: match res.trust {
            Trust::Known => None,
            Trust::Unknown(r) => Some(r.to_string()),
        },
        cachestat: res.cachestat.map(Into::into),
        kinds,
        structure_error: snap.error.clone().or_else(|| {
            // rrdtool refuses such a file (`rrd_open.c`: "is too small").
            short.then(|| {
                format!(
                    "the file is {size} bytes and its header says {}: truncated (rrdtool refuses \
                     it as too small)",
                    snap.expected_len
                )
            })
        }),
        settled: snap.unsettled.is_none(),
        // A copy's residency says nothing of the file's: no advice to read
        // one, but what the numbers are.
        unsettled: snap.unsettled.as_deref().map(|u| {
            let why = u.strip_suffix(mapwise_native::observe::settle::READ_A_COPY).unwrap_or(u);
            format!(
                "{} The totals are the file's own; only the split by kind needs its structure.",
                why.trim_end()
            )
        }),
        rrdcached_pending: pending.count,
        rrdcached_error: pending.error,
        rrdcached_line: pending.line,
        hot_set: snap.rrd.as_ref().filter(|_| !short).map(|r| HotSetReport::of(&r.hot, &res)),
        bolt_size: snap
            .bolt
            .as_ref()
            .filter(|_| snap.unsettled.is_none())
            .map(|b| b.hwm.saturating_mul(u64::from(b.page_size))),
        bolt_free,
    };
    Ok(Measured { report: rep, residency: res, format_page: snap.layout.page_size })
}

fn residency_text(rep: &ResidencyReport, res: &Residency, format_page: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "           File: {}", rep.file);
    let _ = writeln!(s, "           Size: {} ({})", rep.size, human_size(rep.size));
    if format_page > 0 {
        let _ = writeln!(s, "         Format: {}, page size {format_page}", rep.format);
    } else {
        let _ = writeln!(s, "         Format: {}", rep.format);
    }
    match stats::vmtouch_line(res) {
        Some(line) => {
            let _ = writeln!(s, "  {line}");
        }
        None => {
            let _ = writeln!(
                s,
                "  Resident Pages: unknown/{}  (the kernel does not say; see Trust)",
                rep.total_pages
            );
        }
    }
    let _ = writeln!(s, "          Trust: {}", res.trust);
    if let Some(c) = &rep.cachestat {
        let _ = writeln!(
            s,
            "      Cachestat: cache {}, dirty {}, writeback {}, evicted {}, recently evicted {}",
            c.cache, c.dirty, c.writeback, c.evicted, c.recently_evicted
        );
    }
    if let Some(line) = &rep.rrdcached_line {
        let _ = writeln!(s, "      Rrdcached: {line}");
    }
    if let Some(h) = &rep.hot_set {
        let _ = writeln!(s, "        Hot set: {}", h.line());
    }
    if let Some(e) = &rep.structure_error {
        let _ = writeln!(s, "      Structure: unreadable: {e}");
    }
    if let Some(u) = &rep.unsettled {
        let _ = writeln!(
            s,
            "      Structure: unsettled (the split below is of an incomplete read): {u}"
        );
    }
    if !rep.kinds.is_empty() {
        s.push('\n');
        s.push_str(&kinds_table(&rep.kinds));
    }
    s
}

/// The per-kind table. PAGES is [`KindTotal::pages`]: the distinct pages
/// each kind's regions touch, so a page holding two kinds counts for both
/// (the note under the table says so when it happens).
fn kinds_table(kinds: &[KindTotal]) -> String {
    let mut s =
        String::from("KIND                  BYTES      PAGES    RESIDENT BYTES  RESIDENT\n");
    for k in kinds {
        let (rb, pct) = match k.resident_bytes {
            Some(b) => (b.to_string(), format!("{:.1}%", percent(b, k.bytes))),
            None => ("?".into(), "?".into()),
        };
        let _ = writeln!(s, "{:<12} {:>14} {:>10} {:>17} {:>9}", k.kind, k.bytes, k.pages, rb, pct);
    }
    s.push_str(
        "(PAGES: distinct pages each kind touches; a page holding several kinds counts for each)\n",
    );
    s
}

/// An error that is about the file, not the command: the file is not of
/// a format the command reads, or does not open as one. `inspector`
/// exits 1 for it (the file has problems), as `mapwise bolt` does for a
/// file that is not bbolt; other errors exit 2 (the command could not
/// run).
#[derive(Debug)]
pub struct FileProblem(pub String);

impl std::fmt::Display for FileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FileProblem {}

/// Whether `e` is about the file ([`FileProblem`], or a bbolt file whose
/// meta pages both fail) rather than about running the command.
#[must_use]
pub fn is_file_problem(e: &anyhow::Error) -> bool {
    e.downcast_ref::<FileProblem>().is_some()
        || matches!(
            e.downcast_ref::<mapwise_native::observe::settle::Error>(),
            Some(mapwise_native::observe::settle::Error::NotBolt { .. })
        )
}

fn problem(msg: String) -> anyhow::Error {
    anyhow::Error::new(FileProblem(msg))
}

fn open_source(path: &Path) -> Result<QuietSource> {
    let src = QuietSource::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    if src.is_empty() {
        return Err(problem(format!("{}: empty file, not a bbolt file", path.display())));
    }
    match detect(&src) {
        Format::Bolt if is_foreign_endian_bolt(&src) => Err(problem(format!(
            "{}: bbolt file written on a big-endian host: not readable on this machine",
            path.display()
        ))),
        Format::Bolt => Ok(src),
        other => Err(problem(format!(
            "{}: not a bbolt file (detected format: {})",
            path.display(),
            other.name()
        ))),
    }
}

fn open_bolt<'s>(path: &Path, src: &'s QuietSource) -> Result<BoltFile<'s, QuietSource>> {
    BoltFile::open(src)
        .map_err(|e| problem(format!("{}: cannot open as bbolt: {e}", path.display())))
}

/// `inspector pages FILE`: the `bbolt pages` table, streamed to `out` (a
/// file with millions of pages prints as it goes).
///
/// # Errors
/// When the file is not a readable bbolt file.
pub fn pages(path: &Path, as_json: bool, out: &mut impl std::fmt::Write) -> Result<()> {
    drop(open_source(path)?);
    // Every row from one snapshot, even while a writer commits.
    let rows = report::settled_page_rows(path)?;
    let _ = if as_json {
        report::write_pages_json(out, rows.iter())
    } else {
        report::write_pages_text(out, rows.iter())
    };
    Ok(())
}

/// One element of a decoded page, in JSON.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ElementReport {
    /// `branch`, `leaf`, `bucket` or `bad`.
    pub kind: &'static str,
    /// Key length in bytes.
    pub key_len: Option<usize>,
    /// Key (first bytes, at most 64) as hex.
    pub key_hex: Option<String>,
    /// Value length (leaf and bucket entries).
    pub value_len: Option<usize>,
    /// Value (first bytes, at most 64) as hex.
    pub value_hex: Option<String>,
    /// Child page (branch elements).
    pub child: Option<u64>,
    /// Bucket root page (bucket entries; 0 = inline).
    pub bucket_root: Option<u64>,
    /// Bucket sequence (bucket entries).
    pub bucket_sequence: Option<u64>,
    /// Leaf flags.
    pub flags: Option<u32>,
    /// Why the element cannot be read (`bad`).
    pub error: Option<String>,
}

/// A decoded page, in JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PageReport {
    /// The page id asked for.
    pub id: u64,
    /// Why it could not be decoded (then the other fields are empty).
    pub error: Option<String>,
    /// Type name (`leaf`, `branch`, `meta`, `freelist`, `unknown<XX>`).
    #[serde(rename = "type")]
    pub page_type: Option<String>,
    /// Header `id`.
    pub header_id: Option<u64>,
    /// Header `flags`.
    pub flags: Option<u16>,
    /// Header `count`.
    pub count: Option<u16>,
    /// Header `overflow`.
    pub overflow: Option<u32>,
    /// Byte offset.
    pub offset: Option<u64>,
    /// For pages 0 and 1: the meta page.
    pub meta: Option<report::MetaReport>,
    /// Branch/leaf elements.
    pub elements: Vec<ElementReport>,
    /// Freelist ids listed (at most 65535).
    pub freelist_ids: Option<Vec<u64>>,
    /// Freelist ids in total.
    pub freelist_total: Option<usize>,
    /// For an overflow page (the continuation of a page run, not a page
    /// of its own): the run's first page, which decodes it.
    pub overflow_of: Option<u64>,
    /// The lines `inspector page` prints for it.
    pub text: Vec<String>,
}

fn element_report(e: &Element) -> ElementReport {
    let empty = ElementReport {
        kind: "bad",
        key_len: None,
        key_hex: None,
        value_len: None,
        value_hex: None,
        child: None,
        bucket_root: None,
        bucket_sequence: None,
        flags: None,
        error: None,
    };
    match e {
        Element::Branch { key, child } => ElementReport {
            kind: "branch",
            key_len: Some(key.len),
            key_hex: Some(hex(&key.prefix)),
            child: Some(*child),
            ..empty
        },
        Element::Leaf { flags, key, value, bucket } => ElementReport {
            kind: if bucket.is_some() { "bucket" } else { "leaf" },
            key_len: Some(key.len),
            key_hex: Some(hex(&key.prefix)),
            value_len: Some(value.len),
            value_hex: Some(hex(&value.prefix)),
            bucket_root: bucket.map(|b| b.root),
            bucket_sequence: bucket.map(|b| b.sequence),
            flags: Some(*flags),
            ..empty
        },
        Element::Bad(err) => ElementReport { error: Some(err.to_string()), ..empty },
    }
}

/// How far back `inspector page` looks for the first page of an overflow
/// page's run (pages; 16 MiB at 4 KiB).
const OVERFLOW_BACK: u64 = 4096;

/// Page `id`, an overflow page of the run headed by page `head`.
fn overflow_report(id: u64, head: u64) -> PageReport {
    let mut rep = page_report(id, &Err(String::new()));
    rep.error = None;
    rep.overflow_of = Some(head);
    rep.text = vec![format!(
        "page {id} is an overflow page: a continuation of the run headed by page {head}, \
         decoded with it (inspector page FILE {head})"
    )];
    rep
}

fn page_report(id: u64, d: &Result<PageDetail, String>) -> PageReport {
    let mut rep = PageReport {
        id,
        error: None,
        page_type: None,
        header_id: None,
        flags: None,
        count: None,
        overflow: None,
        offset: None,
        meta: None,
        elements: Vec::new(),
        freelist_ids: None,
        freelist_total: None,
        overflow_of: None,
        text: Vec::new(),
    };
    let d = match d {
        Ok(d) => d,
        Err(e) => {
            rep.error = Some(e.clone());
            rep.text = vec![format!("page {id}: cannot decode: {e}")];
            return rep;
        }
    };
    rep.page_type = Some(d.page_type.name());
    rep.header_id = Some(d.header.id);
    rep.flags = Some(d.header.flags);
    rep.count = Some(d.header.count);
    rep.overflow = Some(d.header.overflow);
    rep.offset = Some(d.offset);
    match &d.body {
        Body::Meta { meta, fault } => {
            let index = u8::try_from(id).unwrap_or(0);
            rep.meta = Some(report::meta_report(index, Some(meta), fault.as_ref()));
        }
        Body::Elements(els) => rep.elements = els.iter().map(element_report).collect(),
        Body::Freelist { ids, total } => {
            rep.freelist_ids = Some(ids.clone());
            rep.freelist_total = Some(*total);
        }
        Body::Other => {}
    }
    rep.text = page_lines(d, Widths::FULL).iter().map(crate::describe::Line::text).collect();
    rep
}

/// `inspector page FILE ID…`: pages decoded as the detail pane shows
/// them. Exit status 1 when a page cannot be decoded.
///
/// # Errors
/// When the file is not a readable bbolt file.
pub fn page(path: &Path, ids: &[u64], as_json: bool) -> Result<Output> {
    {
        // Formats other than bbolt: the structures on each OS page.
        let src =
            QuietSource::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        if matches!(detect(&src), Format::Revlog | Format::Rrd) {
            return described_pages(path, &src, ids, as_json);
        }
    }
    // Checked first for its messages (foreign, empty, not bbolt).
    let src = open_source(path)?;
    open_bolt(path, &src)?;
    drop(src);
    // Every page from one snapshot, even while a writer commits.
    let reports: Vec<PageReport> = mapwise_native::observe::settle::read_bolt(path, |file| {
        let hwm = file.meta().hwm;
        ids.iter()
            .map(|&id| match page_detail(file, id, DETAIL_LIMIT) {
                Ok(d) => page_report(id, &Ok(d)),
                Err(e) if id >= file.file_pages() => {
                    let n = file.file_pages();
                    let why = format!("{e} (page {id} is past the end of the file: {n} pages)");
                    page_report(id, &Err(why))
                }
                // bbolt has not used the page (`layout` calls it unused):
                // say so beside the fault.
                Err(e) if id >= hwm => {
                    let why = format!("{e} (page {id} is past the high-water mark {hwm}: unused)");
                    page_report(id, &Err(why))
                }
                // An overflow page is decoded with the first page of its
                // run, which its header bytes do not name.
                Err(e) => match file.run_holding(id, OVERFLOW_BACK) {
                    Some(head) => overflow_report(id, head),
                    None => page_report(id, &Err(e.to_string())),
                },
            })
            .collect::<Vec<_>>()
    })?
    .or_unsettled(|r| r.iter().filter(|p| p.error.is_some()).count() as u64)?;
    let code = u8::from(reports.iter().any(|r| r.error.is_some()));
    let text = if as_json {
        json(&reports)?
    } else {
        let mut s = String::new();
        for (i, r) in reports.iter().enumerate() {
            if i > 0 {
                s.push('\n');
            }
            for l in &r.text {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    };
    Ok(Output { text, code, layout_json: None })
}

/// One OS page of the file and the structures on it, described.
#[derive(Debug, Clone, Serialize)]
struct DescribedPage {
    /// Page number (OS pages).
    page: u64,
    /// Byte offset of the page.
    offset: u64,
    /// The structures overlapping it.
    items: Vec<mapwise_view::describe::Item>,
    /// Why they could not be described.
    error: Option<String>,
}

fn described_pages(path: &Path, src: &QuietSource, ids: &[u64], as_json: bool) -> Result<Output> {
    let snap = read_snapshot(path, WalkOptions::default())
        .with_context(|| format!("cannot open {}", path.display()))?;
    let unit = stats::unit(&snap.layout);
    let pages: Vec<DescribedPage> = ids
        .iter()
        .map(|&page| {
            let offset = page.saturating_mul(unit);
            let r = if offset >= snap.layout.source_len {
                Err(format!("page {page} is past the end of the file"))
            } else {
                mapwise_view::describe::describe(&snap.layout, src, offset, unit)
            };
            match r {
                Ok(items) => DescribedPage { page, offset, items, error: None },
                Err(e) => DescribedPage { page, offset, items: Vec::new(), error: Some(e) },
            }
        })
        .collect();
    let code = u8::from(pages.iter().any(|p| p.error.is_some()));
    if as_json {
        return Ok(Output { text: json(&pages)?, code, layout_json: None });
    }
    let mut s = String::new();
    for (i, p) in pages.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let _ =
            writeln!(s, "page {} (bytes {}..{})", p.page, p.offset, p.offset.saturating_add(unit));
        if let Some(e) = &p.error {
            let _ = writeln!(s, "page {}: cannot decode: {e}", p.page);
        }
        for line in crate::describe::item_lines(&p.items) {
            s.push_str(&line.text());
            s.push('\n');
        }
    }
    Ok(Output { text: s, code, layout_json: None })
}

/// `inspector check FILE`: one line per problem and exit status 1, or
/// `OK` and 0. A file that cannot be read as bbolt at all is one problem.
///
/// # Errors
/// When the file cannot be opened, or when a writer committed during every
/// attempt to read it (`mapwise_native::observe::settle`): the problems such a read
/// sees may be transient, so the check could not run (exit 2), rather
/// than failed.
pub fn check(path: &Path, as_json: bool) -> Result<Output> {
    let snap = read_snapshot(path, WalkOptions::default())
        .with_context(|| format!("cannot open {}", path.display()))?;
    if let Some(u) = &snap.unsettled {
        bail!("{u}");
    }
    let rep = if let Some(e) = &snap.error {
        report::CheckReport {
            ok: false,
            problems: vec![format!("{}: {e}", path.display())],
            warnings: Vec::new(),
            more: 0,
        }
    } else if snap.format == Format::Unknown {
        report::CheckReport {
            ok: false,
            problems: vec![format!(
                "{}: not a bbolt, RRDtool or revlog file (detected format: {})",
                path.display(),
                snap.format.name()
            )],
            warnings: Vec::new(),
            more: 0,
        }
    } else {
        report::check_report(&snap.layout)
    };
    let code = u8::from(!rep.ok);
    if as_json {
        return Ok(Output { text: json(&rep)?, code, layout_json: None });
    }
    let mut s = String::new();
    for w in &rep.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    for p in &rep.problems {
        let _ = writeln!(s, "{p}");
    }
    if rep.more > 0 {
        let _ = writeln!(s, "... and {} more", rep.more);
    }
    if rep.ok {
        s.push_str("OK\n");
    }
    Ok(Output { text: s, code, layout_json: None })
}

/// How long the reports wait for rrdcached's `PENDING` reply, unless
/// `MAPWISE_RRDCACHED_TIMEOUT` says.
pub const RRDCACHED_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `inspector layout FILE`: kinds and buckets (text), or the whole layout
/// report (JSON), with resident bytes per kind.
///
/// # Errors
/// A [`FileProblem`] when the file is in no format mapwise reads or its
/// structure is unreadable; another error when a writer committed during
/// every attempt to read it.
pub fn layout(path: &Path, as_json: bool) -> Result<Output> {
    let snap = read_snapshot(path, WalkOptions::default())
        .with_context(|| format!("cannot open {}", path.display()))?;
    if let Some(e) = &snap.error {
        return Err(problem(format!("{}: {e}", path.display())));
    }
    if let Some(u) = &snap.unsettled {
        bail!("{u}");
    }
    if snap.format == Format::Unknown {
        return Err(problem(format!(
            "{}: format not recognised (tried {})",
            path.display(),
            mapwise_core::detect::TRIED
                .iter()
                .map(|f| f.display_name())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let res = std::fs::File::open(path).ok().and_then(|f| residency::sample(&f).ok());
    let mut rep = report::layout_report(
        &snap.layout,
        snap.bolt.as_ref(),
        snap.revlog.as_ref(),
        snap.rrd.as_ref(),
        res.as_ref(),
    );
    let pending = rrdcached_pending(path, snap.format);
    rep.rrdcached_pending = pending.count;
    rep.rrdcached_error = pending.error;
    let problems = snap.layout.problem_count();
    if as_json {
        // Same exit status as the text form: 1 when the file has problems.
        return Ok(Output {
            text: String::new(),
            code: u8::from(problems > 0),
            layout_json: Some(Box::new(rep)),
        });
    }
    let mut s = String::new();
    if let Some(r) = &rep.revlog {
        let _ = writeln!(
            s,
            "format revlog · {} bytes ({}) · version {}{}{} · {} revisions · {} data bytes",
            rep.file_size,
            human_size(rep.file_size),
            r.version,
            if r.inline { " inline" } else { "" },
            if r.generaldelta { " generaldelta" } else { "" },
            r.revisions,
            r.data_bytes
        );
        s.push('\n');
        s.push_str(&kinds_table(&rep.kinds));
        if problems > 0 {
            let _ = writeln!(s, "\n{problems} problem(s) found; `inspector check` lists them");
        }
        return Ok(Output { text: s, code: u8::from(problems > 0), layout_json: None });
    }
    if let Some(r) = &rep.rrd {
        let _ = writeln!(
            s,
            "format rrd · {} bytes ({}) · version {} · step {} s · last update {} · ds {}",
            rep.file_size,
            human_size(rep.file_size),
            r.version,
            r.step,
            r.last_update,
            r.ds.join(",")
        );
        if let Some(line) = &pending.line {
            let _ = writeln!(s, "{line}");
        }
        s.push('\n');
        s.push_str(&kinds_table(&rep.kinds));
        let _ = writeln!(
            s,
            "\n{:<8} {:<12} {:>8} {:>12} {:>8}",
            "RRA", "CF", "ROWS", "PDP/ROW", "CUR_ROW"
        );
        for (i, a) in r.rras.iter().enumerate() {
            let _ = writeln!(
                s,
                "{:<8} {:<12} {:>8} {:>12} {:>8}",
                i, a.cf, a.rows, a.pdp_per_row, a.cur_row
            );
        }
        let hot: Vec<String> = r.hot.iter().map(|(o, l)| format!("{o}..{}", o + l)).collect();
        let _ = writeln!(s, "\nnext update touches bytes {}", hot.join(", "));
        if problems > 0 {
            let _ = writeln!(s, "\n{problems} problem(s) found; `inspector check` lists them");
        }
        return Ok(Output { text: s, code: u8::from(problems > 0), layout_json: None });
    }
    let Some(bolt) = rep.bolt.as_ref() else {
        bail!("{}: no structure to report", path.display());
    };
    let walked_groups = &snap.layout.groups;
    let _ = writeln!(
        s,
        "format {} · {} bytes ({}) · page size {} · meta {} (txid {}) · hwm {}",
        rep.format,
        rep.file_size,
        human_size(rep.file_size),
        rep.page_size,
        bolt.current_meta,
        bolt.txid,
        bolt.hwm
    );
    let _ = writeln!(s, "{}", crate::ui::freelist_text(&bolt.freelist));
    s.push('\n');
    s.push_str(&kinds_table(&rep.kinds));
    s.push('\n');
    let _ = writeln!(
        s,
        "{:<32} {:>8} {:>10} {:>6} {:>7} {:>6}",
        "BUCKET", "ROOT", "KEYS", "SUB", "PAGES", "HEIGHT"
    );
    let _ = writeln!(
        s,
        "{:<32} {:>8} {:>10} {:>6} {:>7} {:>6}",
        group_name(walked_groups.first()),
        walked_groups.first().map_or(0, |g| g.root),
        walked_groups.first().map_or(0, |g| g.keys),
        walked_groups.first().map_or(0, |g| g.buckets),
        walked_groups.first().map_or(0, |g| g.pages),
        walked_groups.first().map_or(0, |g| g.height),
    );
    for b in &rep.buckets {
        let root = if b.inline { "inline".to_string() } else { b.root.to_string() };
        let name = format!("{}{}", "  ".repeat(usize::from(b.level)), b.path);
        let _ = writeln!(
            s,
            "{:<32} {:>8} {:>10} {:>6} {:>7} {:>6}",
            name, root, b.keys, b.buckets, b.pages, b.height
        );
    }
    let n = problems;
    if n > 0 {
        let _ = writeln!(s, "\n{n} problem(s) found; `inspector check` lists them");
    }
    Ok(Output { text: s, code: u8::from(n > 0), layout_json: None })
}
