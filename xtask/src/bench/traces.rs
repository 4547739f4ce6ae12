//! Residency traces of benchmark runs: the file's page-cache residency
//! sampled every [`INTERVAL`] while one run executes, so the report can
//! show *why* a run took what it took (a plain mmap scan fills the cache
//! behind the cursor, `MAP_POPULATE` before the first key, a prefetching
//! cursor just ahead).
//!
//! Each run's trace is recorded by [`mapwise_native::trace::Recorder`]
//! into a temporary file, read back into memory, and written into the
//! report directory with the report (`traces/<name>.trace`, all at once at
//! the end, like every report file). `inspector replay` plays them; the
//! browser viewer loads them beside the file.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use mapwise_core::trace::Trace;
use mapwise_native::trace::Recorder;
use serde::Serialize;

use super::output::TempPath;

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_millis(50);

/// One recorded trace, as results.json lists it.
#[derive(Debug, Clone, Serialize)]
pub struct TraceInfo {
    /// Path inside the report directory (`traces/<name>.trace`).
    pub file: String,
    /// The bench cell (e.g. `cold plain`).
    pub cell: String,
    /// `ours` or the peer's name.
    pub side: String,
    /// Run number, from 1.
    pub run: usize,
    /// Samples taken.
    pub frames: u64,
    /// The most OS pages resident in one sample.
    pub max_resident_pages: u64,
    #[serde(skip)]
    bytes: Vec<u8>,
}

impl TraceInfo {
    /// The decoded trace (it was written by this process, so decoding
    /// only fails if memory was corrupted).
    ///
    /// # Errors
    /// When the bytes do not decode.
    pub fn trace(&self) -> Result<Trace> {
        Trace::parse(&self.bytes).map_err(|e| anyhow::anyhow!("{}: {e}", self.file))
    }
}

/// The traces of one bench run.
#[derive(Debug, Default)]
pub struct Traces {
    recorded: Vec<TraceInfo>,
}

/// `cold plain` → `cold-plain`: a file-name-safe word.
fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

impl Traces {
    /// No traces yet.
    #[must_use]
    pub fn new() -> Traces {
        Traces::default()
    }

    /// Run `f` while recording `file`'s residency; the trace is kept under
    /// (`cell`, `side`, `run`). `scratch` is a directory for the
    /// temporary trace file.
    ///
    /// # Errors
    /// `f`'s error, or when the trace cannot be written or read back.
    pub fn record<T>(
        &mut self,
        scratch: &Path,
        file: &Path,
        cell: &str,
        side: &str,
        run: usize,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let name = format!("{}-{}-{run}", slug(cell), slug(side));
        std::fs::create_dir_all(scratch)
            .with_context(|| format!("cannot create {}", scratch.display()))?;
        let tmp = TempPath::new(scratch.join(format!(".{name}.{}.trace", std::process::id())));
        let label = format!("{cell}, {side}, run {run}");
        let rec = Recorder::start(file, tmp.path(), &label, INTERVAL)
            .with_context(|| format!("cannot record a trace into {}", tmp.path().display()))?;
        let result = f();
        let sum = rec
            .stop()
            .context("the residency trace could not be written")?;
        let bytes = std::fs::read(tmp.path())
            .with_context(|| format!("cannot read back {}", tmp.path().display()))?;
        self.recorded.push(TraceInfo {
            file: format!("traces/{name}.trace"),
            cell: cell.to_string(),
            side: side.to_string(),
            run,
            frames: sum.frames,
            max_resident_pages: sum.max_resident_pages,
            bytes,
        });
        result
    }

    /// Every trace recorded, in order.
    #[must_use]
    pub fn list(&self) -> &[TraceInfo] {
        &self.recorded
    }

    /// The first trace of (`cell`, `side`).
    #[must_use]
    pub fn first(&self, cell: &str, side: &str) -> Option<&TraceInfo> {
        self.recorded
            .iter()
            .find(|t| t.cell == cell && t.side == side)
    }

    /// (report-relative path, bytes) of every trace, for
    /// [`super::output::write_all_atomically`].
    #[must_use]
    pub fn files(&self) -> Vec<(&str, &[u8])> {
        self.recorded
            .iter()
            .map(|t| (t.file.as_str(), t.bytes.as_slice()))
            .collect()
    }
}

/// The residency-over-time chart of the first trace of each (`cell`,
/// `side`) in `picks`, each drawn as `legend`; `None` when none of them
/// was traced.
///
/// # Errors
/// When a chart cannot be drawn.
pub fn residency_chart(
    traces: &Traces,
    title: &str,
    picks: &[(String, &str, String)],
) -> Result<Option<String>> {
    chart_of(traces, title, picks, super::charts::residency)
}

/// As [`residency_chart`], in resident OS pages instead of a share of the
/// file ([`super::charts::residency_pages`]): for runs that touch a few
/// pages of a larger file.
///
/// # Errors
/// When a chart cannot be drawn.
pub fn residency_pages_chart(
    traces: &Traces,
    title: &str,
    picks: &[(String, &str, String)],
) -> Result<Option<String>> {
    chart_of(traces, title, picks, super::charts::residency_pages)
}

/// A chart drawer of [`super::charts`]: title, (legend, trace) series.
type Draw = fn(&str, &[(String, &Trace)]) -> Result<String>;

/// Decodes the picked traces and draws them with `draw`; `None` when none
/// of them was traced or none has a frame.
fn chart_of(
    traces: &Traces,
    title: &str,
    picks: &[(String, &str, String)],
    draw: Draw,
) -> Result<Option<String>> {
    let decoded: Vec<(String, Trace)> = picks
        .iter()
        .filter_map(|(cell, side, legend)| {
            let t = traces.first(cell, side)?.trace().ok()?;
            Some((legend.clone(), t))
        })
        .collect();
    if decoded.iter().all(|(_, t)| t.frames.is_empty()) {
        return Ok(None);
    }
    let series: Vec<(String, &Trace)> = decoded.iter().map(|(l, t)| (l.clone(), t)).collect();
    draw(title, &series).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("cold plain"), "cold-plain");
        assert_eq!(slug("Go bbolt 1.3.6"), "go-bbolt-1.3.6");
        assert_eq!(slug("  a//b  "), "a-b");
    }

    #[test]
    fn a_recorded_run_reads_back() {
        let dir = std::env::temp_dir().join(format!("xtask-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.bin");
        std::fs::write(&file, vec![7u8; 64 << 10]).unwrap();
        let mut t = Traces::new();
        let v = t
            .record(&dir, &file, "cold plain", "ours", 1, || {
                std::thread::sleep(Duration::from_millis(120));
                Ok(42)
            })
            .unwrap();
        assert_eq!(v, 42);
        let info = &t.list()[0];
        assert_eq!(info.file, "traces/cold-plain-ours-1.trace");
        let trace = info.trace().unwrap();
        assert_eq!(trace.frames.len() as u64, info.frames);
        assert!(info.frames >= 3, "{} frames in 120 ms", info.frames);
        assert_eq!(trace.frames[0].file_len, 64 << 10);
        assert!(t.first("cold plain", "ours").is_some());
        assert!(t.first("cold plain", "Go").is_none());
        // The temporary file is gone.
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".trace"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
