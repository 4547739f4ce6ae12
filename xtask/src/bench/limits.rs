//! The physical limits printed beside every bench's table: how fast this
//! machine can read the bench's own file from the device (a cold
//! sequential `O_DIRECT` read) and from memory (a cached `read()`), so a
//! reader can tell how far ours and the peer are from what the hardware
//! allows.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::Progress;
use super::alternate::{self, CacheState};
use super::interrupt;
use super::output::Table;
use super::pagecache::{self, ReadPass};
use super::stats::Summary;
use super::units::mb_per_s;

/// One limit: whole-file reads of one kind, `passes` of them.
#[derive(Debug, Serialize)]
pub struct Limit {
    /// What was measured, e.g. "sequential O_DIRECT read, cold".
    pub what: String,
    /// How, in one sentence (open flags, buffer).
    pub how: String,
    /// The file read, relative to the workspace root.
    pub file: String,
    /// One entry per pass, in run order.
    pub passes: Vec<ReadPass>,
    /// Set when the measurement could not be made (e.g. no O_DIRECT on
    /// this file system); `passes` is then empty or partial.
    pub error: Option<String>,
}

/// The two standard limits of `file`, `runs` passes each: a cold
/// sequential `O_DIRECT` read (the device) and a warm cached `read()` (the
/// memory copy), both 1 MiB at a time. One progress step per pass.
///
/// # Errors
/// Only an interrupt (Ctrl-C) or a failure to reset the cache; a read that
/// cannot be made is recorded in [`Limit::error`].
pub fn standard(file: &Path, runs: usize, progress: &Progress) -> Result<Vec<Limit>> {
    Ok(vec![
        measure(
            file,
            runs,
            progress,
            "sequential O_DIRECT read, cold",
            "after the cold reset: open(O_RDONLY|O_DIRECT), read(2) 1 MiB at a time into a 4 KiB-aligned buffer",
            CacheState::Cold,
            true,
        )?,
        measure(
            file,
            runs,
            progress,
            "cached read(), warm",
            "after one warming read: open(O_RDONLY), read(2) 1 MiB at a time",
            CacheState::Warm,
            false,
        )?,
    ])
}

/// Progress steps [`standard`] takes for `runs`.
#[must_use]
pub fn steps(runs: usize) -> usize {
    2 * runs
}

fn measure(
    file: &Path,
    runs: usize,
    progress: &Progress,
    what: &str,
    how: &str,
    state: CacheState,
    direct: bool,
) -> Result<Limit> {
    let mut passes = Vec::with_capacity(runs);
    let mut error = None;
    for run in 1..=runs {
        progress.set(format!("limit: {what}, run {run}/{runs}"));
        progress.inc();
        if error.is_some() {
            continue;
        }
        alternate::prepare(file, state)?;
        match pagecache::read_whole(file, direct) {
            Ok(p) => passes.push(p),
            Err(e) if interrupt::is_interrupted(&e) => return Err(e),
            Err(e) => error = Some(format!("{e:#}")),
        }
    }
    Ok(Limit {
        what: what.to_owned(),
        how: how.to_owned(),
        file: file.to_string_lossy().into_owned(),
        passes,
        error,
    })
}

/// The limits as a markdown table (what, time, bandwidth, how) under a
/// `## Physical limits` heading, naming the file read.
pub fn section(o: &mut String, limits: &[Limit]) {
    let _ = writeln!(o, "## Physical limits\n");
    if let Some(l) = limits.first() {
        let _ = writeln!(o, "Whole-file reads of `{}`.\n", l.file);
    }
    let mut t = Table::new(&["what", ">time", ">bandwidth (MB/s = 10^6 B/s)", "notes"]);
    for l in limits {
        if let Some(e) = &l.error {
            t.row([
                l.what.clone(),
                "—".to_owned(),
                "—".to_owned(),
                format!("unavailable: {e}"),
            ]);
            continue;
        }
        let secs: Vec<f64> = l.passes.iter().map(|p| p.secs).collect();
        let rates: Vec<f64> = l.passes.iter().map(|p| mb_per_s(p.bytes, p.secs)).collect();
        let time = Summary::of(&secs).map_or_else(|| "—".to_owned(), |s| s.secs());
        let rate = Summary::of(&rates).map_or_else(
            || "—".to_owned(),
            |s| format!("{:.0} [{:.0}–{:.0}]", s.median, s.min, s.max),
        );
        t.row([l.what.clone(), time, rate, l.how.clone()]);
    }
    let _ = writeln!(o, "{}", t.render());
}
