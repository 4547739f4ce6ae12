//! The physical limits printed beside every bench's table: how fast this
//! machine can read the bench's own file from the device (a cold
//! sequential `O_DIRECT` read) and from memory (a cached `read()`), so a
//! reader can tell how far ours and the peer are from what the hardware
//! allows.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::Progress;
use super::interrupt;
use super::pagecache::{self, ReadPass};
use super::report::Table;
use super::schedule::{self, CacheState};
use super::stats::Summary;
use super::units::mb_per_s;

/// One limit: whole-file reads of one kind, `passes` of them.
#[derive(Debug, Serialize)]
pub struct Limit {
    /// What was measured, e.g. "sequential O_DIRECT read, cold".
    pub what: String,
    /// How, in one sentence (open flags, buffer).
    pub how: String,
    /// The file read, relative to the workspace root (a list of files in
    /// a shell's brace form; empty for a limit that reads no file, such as
    /// a memory copy).
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
    standard_files(&[file], &file.to_string_lossy(), runs, progress)
}

/// [`standard`] over a list of files read one after the other (each pass
/// resets every file, then reads them all; its time and bytes are the
/// sums), shown as `shown` (e.g. the list's brace form).
///
/// # Errors
/// As [`standard`].
pub fn standard_files<P: AsRef<Path>>(
    files: &[P],
    shown: &str,
    runs: usize,
    progress: &Progress,
) -> Result<Vec<Limit>> {
    let what = |one: &str, many: &str| {
        if files.len() == 1 { one.to_owned() } else { many.to_owned() }
    };
    Ok(vec![
        measure(
            files,
            shown,
            runs,
            progress,
            &what("sequential O_DIRECT read, cold", "sequential O_DIRECT read of every file, cold"),
            "after the cold reset: open(O_RDONLY|O_DIRECT), read(2) 1 MiB at a time into a 4 KiB-aligned buffer",
            CacheState::Cold,
            true,
        )?,
        measure(
            files,
            shown,
            runs,
            progress,
            &what("cached read(), warm", "cached read() of every file, warm"),
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

#[expect(clippy::too_many_arguments)] // one limit's whole description, each used
fn measure<P: AsRef<Path>>(
    files: &[P],
    shown: &str,
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
        for f in files {
            schedule::prepare(&[f.as_ref()], state)?;
        }
        let mut total = ReadPass { bytes: 0, secs: 0.0 };
        for f in files {
            match pagecache::read_whole(f.as_ref(), direct) {
                Ok(p) => {
                    total.bytes += p.bytes;
                    total.secs += p.secs;
                }
                Err(e) if interrupt::is_interrupted(&e) => return Err(e),
                Err(e) => {
                    error = Some(format!("{e:#}"));
                    break;
                }
            }
        }
        if error.is_none() {
            passes.push(total);
        }
    }
    Ok(Limit { what: what.to_owned(), how: how.to_owned(), file: shown.to_owned(), passes, error })
}

/// The limits as a markdown table (what, time, bandwidth, how) under a
/// `## Physical limits` heading, naming the file read.
pub fn add_to(report: &mut crate::report::Report, limits: &[Limit]) {
    report.section("Physical limits");
    if let Some(l) = limits.first() {
        report.text(format!("Whole-file reads of `{}`.", l.file));
    }
    report.table(table(limits));
}

/// The limits table: what, time, bandwidth, how; a row that could not be
/// measured says `unavailable: <reason>`.
#[must_use]
pub fn table(limits: &[Limit]) -> Table {
    let mut t = Table::new(&["what", ">time", ">bandwidth (MB/s = 10^6 B/s)", "notes"]).limits();
    for l in limits {
        if let Some(e) = &l.error {
            t.row([l.what.clone(), "—".to_owned(), "—".to_owned(), format!("unavailable: {e}")]);
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
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_files_is_read_whole_in_each_pass() {
        let dir = std::env::temp_dir().join(format!("xtask-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files: Vec<std::path::PathBuf> = [3usize, 5]
            .iter()
            .map(|&mib| {
                let f = dir.join(format!("{mib}.bin"));
                std::fs::write(&f, vec![9u8; mib << 20]).unwrap();
                f
            })
            .collect();
        let progress = Progress::new(steps(2) as u64);
        let limits = standard_files(&files, "d/{3,5}.bin", 2, &progress).unwrap();
        assert_eq!(limits.len(), 2);
        assert_eq!(limits[0].what, "sequential O_DIRECT read of every file, cold");
        assert_eq!(limits[1].what, "cached read() of every file, warm");
        // The cached read always works: two passes of 8 MiB each.
        let warm = &limits[1];
        assert_eq!(warm.error, None);
        assert_eq!(warm.file, "d/{3,5}.bin");
        let bytes: Vec<u64> = warm.passes.iter().map(|p| p.bytes).collect();
        assert_eq!(bytes, [8 << 20, 8 << 20]);
        // O_DIRECT is refused on some file systems (tmpfs): then the row
        // says why instead of a time.
        let cold = &limits[0];
        match &cold.error {
            None => assert!(cold.passes.iter().all(|p| p.bytes == 8 << 20)),
            Some(e) => assert!(e.contains(&files[0].to_string_lossy().into_owned()), "{e}"),
        }
        let one = standard(&files[0], 1, &progress).unwrap();
        assert_eq!(one[1].what, "cached read(), warm");
        assert_eq!(one[1].passes[0].bytes, 3 << 20);
        assert_eq!(one[1].file, files[0].to_string_lossy());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
