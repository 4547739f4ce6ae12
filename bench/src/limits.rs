//! The physical limits printed beside every bench's table: how fast this
//! machine reads the bench's own file from the device (a cold sequential
//! `O_DIRECT` read) and from memory (a cached `read()`), so a reader can
//! tell how far ours and the peer are from what the hardware allows.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::Progress;
use super::interrupt;
use super::pagecache::{self, ReadPass};
use super::report::Table;
use super::schedule::{self, CacheState};
use super::stats::{Summary, opt_secs, or_dash};
use super::units::{human_size, mb_per_s};

/// One limit: whole-file reads of one kind, `passes` of them.
#[derive(Debug, Serialize)]
pub struct Limit {
    /// What was measured, e.g. "sequential O_DIRECT read, cold".
    pub what: String,
    /// How, in one sentence (open flags, buffer).
    pub how: String,
    /// The file read, relative to the workspace root (a list in a shell's
    /// brace form; empty for a limit that reads no file).
    pub file: String,
    /// One entry per pass, in run order.
    pub passes: Vec<ReadPass>,
    /// Why the measurement could not be made (e.g. no O_DIRECT on this file
    /// system); `passes` is then empty or partial.
    pub error: Option<String>,
}

/// The two standard limits of `file`, `runs` passes each (one progress step
/// per pass): a cold sequential `O_DIRECT` read and a warm cached `read()`;
/// a read that cannot be made is recorded in [`Limit::error`].
pub fn standard(file: &Path, runs: usize, progress: &Progress) -> Result<Vec<Limit>> {
    standard_files(&[file], &file.to_string_lossy(), runs, progress)
}

/// [`standard`] over a list of files shown as `shown`: each pass resets
/// every file, then reads them all; its time and bytes are the sums.
pub fn standard_files<P: AsRef<Path>>(
    files: &[P],
    shown: &str,
    runs: usize,
    progress: &Progress,
) -> Result<Vec<Limit>> {
    let kinds = [
        (
            CacheState::Cold,
            "sequential O_DIRECT read",
            "after the cold reset: open(O_RDONLY|O_DIRECT), read(2) 1 MiB at a time into a 4 KiB-aligned buffer",
        ),
        (
            CacheState::Warm,
            "cached read()",
            "after one warming read: open(O_RDONLY), read(2) 1 MiB at a time",
        ),
    ];
    let every = if files.len() == 1 { "" } else { " of every file" };
    let mut limits = Vec::new();
    for (state, kind, how) in kinds {
        let (what, how, file) =
            (format!("{kind}{every}, {}", state.name()), how.into(), shown.into());
        let mut l = Limit { what, how, file, passes: Vec::with_capacity(runs), error: None };
        for run in 1..=runs {
            progress.set(format!("limit: {}, run {run}/{runs}", l.what));
            progress.inc();
            if l.error.is_some() {
                continue;
            }
            schedule::prepare(files, state)?;
            let pass = files.iter().try_fold(ReadPass { bytes: 0, secs: 0.0 }, |t, f| {
                let p = pagecache::read_whole(f.as_ref(), state == CacheState::Cold)?;
                anyhow::Ok(ReadPass { bytes: t.bytes + p.bytes, secs: t.secs + p.secs })
            });
            match pass {
                Ok(p) => l.passes.push(p),
                Err(e) if interrupt::is_interrupted(&e) => return Err(e),
                Err(e) => l.error = Some(format!("{e:#}")),
            }
        }
        limits.push(l);
    }
    Ok(limits)
}

/// Progress steps [`standard`] takes for `runs`.
#[must_use]
pub fn steps(runs: usize) -> usize {
    2 * runs
}

/// `memcpy` of `bytes` from one buffer to another, `reps` times per pass:
/// the cost of the copy read() makes, with no kernel around it.
pub fn memcpy(bytes: u64, reps: u64, passes: usize) -> Limit {
    let src = vec![0x5Au8; usize::try_from(bytes).unwrap_or(usize::MAX)];
    let mut dst = src.clone();
    let pass = |_| {
        let start = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(&mut dst).copy_from_slice(std::hint::black_box(&src));
        }
        ReadPass { bytes: bytes * reps, secs: start.elapsed().as_secs_f64() }
    };
    let size = human_size(bytes);
    Limit {
        what: format!("memcpy {size}"),
        how: format!(
            "copy_from_slice (libc memcpy) between two {size} buffers, {reps} times per pass, in xtask"
        ),
        file: String::new(),
        passes: (0..passes).map(pass).collect(),
        error: None,
    }
}

/// A `## Physical limits` section naming the file read, with [`table`].
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
        let [secs, rate] = [secs, rates].map(|v| Summary::of(&v));
        let (secs, rate) = (opt_secs(secs.as_ref()), or_dash(rate, |r| r.counts()));
        t.row([l.what.clone(), secs, rate, l.how.clone()]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_files_is_read_whole_in_each_pass() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<std::path::PathBuf> = [3usize, 5]
            .iter()
            .map(|&mib| {
                let f = dir.path().join(format!("{mib}.bin"));
                std::fs::write(&f, vec![9u8; mib << 20]).unwrap();
                f
            })
            .collect();
        let progress = Progress::new(steps(2) as u64);
        let limits = standard_files(&files, "d/{3,5}.bin", 2, &progress).unwrap();
        let whats: Vec<&str> = limits.iter().map(|l| l.what.as_str()).collect();
        assert_eq!(
            whats,
            ["sequential O_DIRECT read of every file, cold", "cached read() of every file, warm"]
        );
        // The cached read always works: two passes of 8 MiB each.
        let (cold, warm) = (&limits[0], &limits[1]);
        assert_eq!((warm.error.as_deref(), warm.file.as_str()), (None, "d/{3,5}.bin"));
        assert!(warm.passes.iter().map(|p| p.bytes).eq([8 << 20, 8 << 20]));
        // O_DIRECT is refused on some file systems (tmpfs): then the row
        // says why instead of a time.
        match &cold.error {
            None => assert!(cold.passes.iter().all(|p| p.bytes == 8 << 20)),
            Some(e) => assert!(e.contains(&*files[0].to_string_lossy()), "{e}"),
        }
        let one = standard(&files[0], 1, &progress).unwrap();
        assert_eq!(
            (one[1].what.as_str(), one[1].passes[0].bytes),
            ("cached read(), warm", 3 << 20)
        );
    }
}
