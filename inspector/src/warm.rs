//! `inspector warm [--hot]` and `inspector evict [--cold]` over files and
//! trees: bring pages into the page cache (`vmtouch -t`) or drop them
//! (`vmtouch -e`). With `--hot`, only an RRD file's hot set, the pages its
//! next update touches ([`HotSetReport`]); with `--cold`, every page but
//! those, so the cache keeps what updates need and gives back the rows no
//! update will touch. Files other than RRD are left alone with `--hot` and
//! `--cold`.
//!
//! Each file is sampled before and after (`mincore(2)`), and the report
//! says what changed, as the TUI's touch and evict do. `--dry-run` samples
//! and reports what would be done, and does nothing. Nothing is written:
//! touching reads, evicting is `posix_fadvise(DONTNEED)`, which leaves
//! dirty, mapped and locked pages where they are.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use mapwise_core::detect::detect;
use mapwise_core::layout::Format;
use mapwise_native::observe::watch::{Effect, read_snapshot_from};
use mapwise_native::os::io::QuietSource;
use mapwise_native::os::residency::{self, Residency, TO_EOF};
use serde::Serialize;

use crate::cli::HotSetReport;
use crate::many::{TreeArgs, map_tree};
use crate::stats::vmtouch_size;

/// What `warm` or `evict` does to each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Act {
    /// Read the whole file into the page cache.
    Warm,
    /// Read an RRD file's hot set into the page cache.
    WarmHot,
    /// Drop the whole file from the page cache.
    Evict,
    /// Drop all of an RRD file but its hot set from the page cache.
    EvictCold,
}

impl Act {
    fn verb(self) -> &'static str {
        match self {
            Act::Warm | Act::WarmHot => "touch",
            Act::Evict | Act::EvictCold => "evict",
        }
    }

    fn rrd_only(self) -> bool {
        matches!(self, Act::WarmHot | Act::EvictCold)
    }
}

/// The command line of `inspector warm` and `inspector evict`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The paths.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Sample and say what would be done; do nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What became of one file; in JSON, one element of `files`.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The path.
    pub file: String,
    /// `done`, `dry_run`, `left_alone` (not an RRD file with `--hot` or
    /// `--cold`), `skipped` (could not be opened, read or sampled) or a
    /// listing status of the tree walk (`not_regular`, `symlink`, ...).
    pub status: String,
    /// Why it was left alone or skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// OS pages acted on (the whole file, the hot set, or all but it).
    pub pages: u64,
    /// Of them, resident before; `null` when the kernel does not say.
    pub before: Option<u64>,
    /// Of them, resident after (before, for a dry run).
    pub after: Option<u64>,
    /// An RRD file's hot set before and after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_set_before: Option<HotSetReport>,
    /// See `hot_set_before`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_set_after: Option<HotSetReport>,
}

/// The totals over the files acted on.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    /// Files acted on (or that would be, for a dry run).
    pub files: u64,
    /// Their OS pages acted on.
    pub pages: u64,
    /// Of them, resident before.
    pub before: u64,
    /// Of them, resident after.
    pub after: u64,
    /// Files left alone (with `--hot` or `--cold`: not RRD files, or
    /// truncated ones).
    pub left_alone: u64,
    /// Files skipped with an error.
    pub skipped: u64,
    /// Other paths listed (not regular files, links, directories not
    /// entered, further names of a file).
    pub other: u64,
}

/// Run `act` over `args`' paths, a few files at once ([`map_tree`]),
/// writing one line per file and the totals to `out`; the exit status is 1
/// when a file was skipped.
///
/// # Errors
/// When writing to `out` fails.
pub fn run(act: Act, args: &Args, out: &mut dyn Write) -> std::io::Result<u8> {
    let mut totals = Totals::default();
    let mut first = true;
    if args.json {
        out.write_all(b"{\n\"files\": [")?;
    }
    let work = |p: &Path| one(act, p, args.dry_run);
    let other = |e: crate::many::Entry| Outcome {
        file: e.file.clone().unwrap_or_default(),
        status: serde_json::to_value(e.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        reason: e.reason,
        pages: 0,
        before: None,
        after: None,
        hot_set_before: None,
        hot_set_after: None,
    };
    map_tree(&args.tree, &work, &other, &mut |o| {
        match o.status.as_str() {
            "done" | "dry_run" => {
                totals.files += 1;
                totals.pages += o.pages;
                totals.before += o.before.unwrap_or(0);
                totals.after += o.after.unwrap_or(0);
            }
            "left_alone" => totals.left_alone += 1,
            "skipped" => totals.skipped += 1,
            _ => totals.other += 1,
        }
        if args.json {
            let sep = if first { "\n" } else { ",\n" };
            let line = serde_json::to_string(&o).map_err(std::io::Error::other)?;
            write!(out, "{sep}{line}")?;
        } else {
            out.write_all(line(act, &o).as_bytes())?;
        }
        first = false;
        Ok(())
    })?;
    if args.json {
        let t = serde_json::to_string(&totals).map_err(std::io::Error::other)?;
        writeln!(out, "\n],\n\"totals\": {t}\n}}")?;
    } else {
        out.write_all(totals_line(act, args.dry_run, &totals).as_bytes())?;
    }
    out.flush()?;
    Ok(u8::from(totals.skipped > 0))
}

/// Act on one regular file.
fn one(act: Act, path: &Path, dry_run: bool) -> Outcome {
    let mut o = Outcome {
        file: path.display().to_string(),
        status: String::new(),
        reason: None,
        pages: 0,
        before: None,
        after: None,
        hot_set_before: None,
        hot_set_after: None,
    };
    match act_on(act, path, dry_run, &mut o) {
        Ok(status) => o.status = status.into(),
        Err(e) => {
            o.status = "skipped".into();
            o.reason = Some(format!("{e:#}"));
        }
    }
    o
}

fn act_on(act: Act, path: &Path, dry_run: bool, o: &mut Outcome) -> Result<&'static str> {
    let file = File::open(path).context("cannot open")?;
    let sample = |f: &File| residency::sample(f).map_err(|e| anyhow!("cannot sample: {e}"));
    let before = sample(&file)?;
    let hot = if act.rrd_only() {
        // The format first: only an RRD file's structure is read (a bbolt
        // file's would be a walk of its every branch page, to no use).
        let src = QuietSource::open(path).context("cannot open")?;
        let format = detect(&src);
        if format != Format::Rrd {
            o.reason = Some(format!("{} file, not an RRD file: no hot set", a_name(format.name())));
            return Ok("left_alone");
        }
        let snap = read_snapshot_from(path, &src, mapwise_core::bolt::WalkOptions::default())
            .context("cannot read")?;
        let size = before.offset.saturating_add(before.len);
        match snap.rrd {
            Some(_) if snap.expected_len > size => {
                o.reason = Some(format!(
                    "truncated: {size} bytes, its header says {} (rrdtool refuses it)",
                    snap.expected_len
                ));
                return Ok("left_alone");
            }
            Some(r) => Some(r.hot),
            None => {
                let why = snap.error.as_deref().unwrap_or("its header cannot be read");
                o.reason =
                    Some(format!("an RRD file whose header is unreadable ({why}): no hot set"));
                return Ok("left_alone");
            }
        }
    } else {
        None
    };
    let ranges = match (act, &hot) {
        (Act::WarmHot, Some(h)) => h.clone(),
        (Act::EvictCold, Some(h)) => cold_ranges(h, &before),
        _ => vec![(0, TO_EOF)],
    };
    let count = |r: &Residency| Effect::count_all(r, &ranges);
    let (pages, resident_before) = count(&before);
    o.pages = pages;
    o.before = resident_before;
    o.hot_set_before = hot.as_ref().map(|h| HotSetReport::of(h, &before));
    if dry_run {
        o.after = resident_before;
        return Ok("dry_run");
    }
    let evict =
        |off, len| residency::evict(&file, off, len).map_err(|e| anyhow!("cannot evict: {e}"));
    match act {
        Act::Warm => {
            residency::touch(&file, 0, TO_EOF).map_err(|e| anyhow!("cannot touch: {e}"))?;
        }
        Act::WarmHot => touch_exactly(&file, &ranges)?,
        Act::Evict => evict(0, TO_EOF)?,
        Act::EvictCold => {
            for &(off, len) in &ranges {
                evict(off, len)?;
            }
            // The kernel drops no large folio that reaches past the range
            // asked, so cold pages sharing a folio with a hot page stay.
            // Then: the whole file goes, and the hot pages that were
            // resident come back one page each.
            let now = sample(&file)?;
            if count(&now).1.is_some_and(|n| n > 0) {
                let keep = resident_pages(hot.as_deref().unwrap_or_default(), &now);
                evict(0, TO_EOF)?;
                touch_exactly(&file, &keep)?;
            }
        }
    }
    let after = sample(&file)?;
    o.after = count(&after).1;
    o.hot_set_after = hot.as_ref().map(|h| HotSetReport::of(h, &after));
    Ok("done")
}

/// [`residency::touch_exactly`], as this command's error.
fn touch_exactly(file: &File, ranges: &[(u64, u64)]) -> Result<()> {
    residency::touch_exactly(file, ranges).map_err(|e| anyhow!("cannot touch: {e}"))?;
    Ok(())
}

/// The resident pages of `ranges` in `r`, one range each.
fn resident_pages(ranges: &[(u64, u64)], r: &Residency) -> Vec<(u64, u64)> {
    let ps = r.page_size.max(1);
    let mut out = Vec::new();
    for &(off, len) in ranges {
        let mut at = off / ps * ps;
        while at < off.saturating_add(len) {
            if r.is_resident((at.saturating_sub(r.offset)) / ps) {
                out.push((at, ps));
            }
            at += ps;
        }
    }
    out
}

/// The OS pages of the file sampled in `r` outside `hot` (sorted,
/// page-aligned, merged ranges), as byte ranges.
fn cold_ranges(hot: &[(u64, u64)], r: &Residency) -> Vec<(u64, u64)> {
    let ps = r.page_size.max(1);
    let end = r.offset.saturating_add(r.len).div_ceil(ps).saturating_mul(ps);
    let mut out = Vec::new();
    let mut at = 0u64;
    for &(off, len) in hot {
        if off > at {
            out.push((at, off - at));
        }
        at = at.max(off.saturating_add(len));
    }
    if at < end {
        out.push((at, end - at));
    }
    out
}

/// `a NAME` or `an NAME`.
fn a_name(name: &str) -> String {
    let an = name.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {name}", if an { "an" } else { "a" })
}

/// One file's line: before → after of the pages acted on, and for an RRD
/// file with `--hot` or `--cold` of the hot set and the cold resident bytes.
fn line(act: Act, o: &Outcome) -> String {
    let pages = |b: Option<u64>, a: Option<u64>, n: u64| match (b, a) {
        (Some(b), Some(a)) if b == a => format!("{a} of {n} pages resident"),
        (Some(b), Some(a)) => format!("{b} → {a} of {n} pages resident"),
        _ => format!("{n} pages, residency unknown"),
    };
    let cold = |h: &HotSetReport| h.cold_resident_bytes.map_or_else(|| "?".into(), vmtouch_size);
    let head = match o.status.as_str() {
        "done" => String::new(),
        "dry_run" => format!("would {}: ", act.verb()),
        status => {
            let why = o.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            return format!("{}: {}{why}\n", o.file, status.replace('_', " "));
        }
    };
    // Pages an eviction left: the kernel keeps some, and says nothing.
    let stayed = match (act, o.status.as_str(), o.after) {
        (Act::Evict | Act::EvictCold, "done", Some(a)) if a > 0 => {
            format!(" ({a} still resident: {})", crate::app::STAY)
        }
        _ => String::new(),
    };
    let body = match (act, &o.hot_set_before, &o.hot_set_after) {
        (Act::WarmHot | Act::EvictCold, Some(b), a) => {
            let a = a.as_ref().unwrap_or(b);
            let hot = pages(b.hot_resident_pages, a.hot_resident_pages, a.hot_pages);
            let (cb, ca) = (cold(b), cold(a));
            let cold = if cb == ca { cb } else { format!("{cb} → {ca}") };
            format!("hot set {hot}; cold resident {cold}")
        }
        _ => pages(o.before, o.after, o.pages),
    };
    format!("{}: {head}{body}{stayed}\n", o.file)
}

fn totals_line(act: Act, dry_run: bool, t: &Totals) -> String {
    let ps = residency::os_page_size();
    let files = format!("{} file{}", t.files, if t.files == 1 { "" } else { "s" });
    let which = match act {
        Act::Warm | Act::Evict => "pages",
        Act::WarmHot => "hot-set pages",
        Act::EvictCold => "cold pages",
    };
    let mut s = if dry_run {
        format!(
            "Total: would {} {files}: {} of {} {which} resident ({})",
            act.verb(),
            t.before,
            t.pages,
            vmtouch_size(t.before.saturating_mul(ps))
        )
    } else {
        format!(
            "Total: {}ed {files}: {} → {} of {} {which} resident ({} → {})",
            act.verb(),
            t.before,
            t.after,
            t.pages,
            vmtouch_size(t.before.saturating_mul(ps)),
            vmtouch_size(t.after.saturating_mul(ps)),
        )
    };
    for (n, what) in [
        (t.left_alone, "left alone (not RRD, or truncated)"),
        (t.skipped, "skipped"),
        (t.other, "other paths listed"),
    ] {
        if n > 0 {
            s.push_str(&format!("; {n} {what}"));
        }
    }
    s.push('\n');
    s
}
