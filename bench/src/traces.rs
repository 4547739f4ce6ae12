//! Residency traces of benchmark runs: the file's page-cache residency
//! sampled every [`INTERVAL`] while one run executes (by native's
//! [`Recorder`]), so the report can show *why* a run took what it took;
//! written with the report as `traces/<name>.trace` for `inspector replay`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use mapwise_core::trace::{Frame, Header, Run, Trace};
use mapwise_native::observe::trace::{MAX_DUTY, Recorder};
use serde::Serialize;

use super::charts::{self, Scale};
use super::output::TempPath;

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_millis(50);

/// How a report says its traces were sampled: every [`INTERVAL`], or less
/// often for a large file (the recorder takes at most [`MAX_DUTY`] of a CPU).
fn cadence() -> String {
    format!(
        "every {} ms, or less often for a large file (sampling takes at most {:.0} % of one CPU: \
         a 2 GiB file about every 0.6 s)",
        INTERVAL.as_millis(),
        MAX_DUTY * 100.0
    )
}

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
    /// The traced file, as the bench names it (`inspector replay FILE
    /// --file TRACED` plays the trace over it).
    pub traced: String,
    /// Samples taken.
    pub frames: u64,
    /// The most OS pages resident in one sample.
    pub max_resident_pages: u64,
    #[serde(skip)]
    bytes: Vec<u8>,
}

impl TraceInfo {
    /// The decoded trace.
    pub fn trace(&self) -> Result<Trace> {
        Trace::parse(&self.bytes).map_err(|e| anyhow::anyhow!("{}: {e}", self.file))
    }
}

/// The traces of one bench run.
#[derive(Debug, Default)]
pub struct Traces {
    recorded: Vec<TraceInfo>,
}

/// `cold plain` → `cold-plain`: a file-name-safe word (lower case, letters,
/// digits and dots; every other run of characters one `-`).
pub fn slug(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let words = lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'));
    words.filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
}

impl Traces {
    /// Runs `f` while recording `file`'s residency, kept under (`cell`,
    /// `side`, `run`) as `traces/<cell>-<side>-<run>.trace`; `scratch` is a
    /// directory for the temporary trace file.
    pub fn record<T>(
        &mut self,
        scratch: &Path,
        file: &Path,
        cell: &str,
        side: &str,
        run: usize,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        self.record_files(scratch, &[file], cell, side, run, f)
    }

    /// As [`Traces::record`] with one recorder (and trace) per file of
    /// `files`; several are `traces/<cell>-<side>-<run>/<file name>.trace`.
    pub fn record_files<T, P: AsRef<Path>>(
        &mut self,
        scratch: &Path,
        files: &[P],
        cell: &str,
        side: &str,
        run: usize,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let name = format!("{}-{}-{run}", slug(cell), slug(side));
        std::fs::create_dir_all(scratch)
            .with_context(|| format!("cannot create {}", scratch.display()))?;
        let label = format!("{cell}, {side}, run {run}");
        let mut recording = Vec::with_capacity(files.len());
        for (i, file) in files.iter().enumerate() {
            let file = file.as_ref();
            let dest = match file.file_name() {
                _ if files.len() == 1 => format!("traces/{name}.trace"),
                Some(b) => format!("traces/{name}/{}.trace", slug(&b.to_string_lossy())),
                None => format!("traces/{name}/{i}.trace"),
            };
            let tmp =
                TempPath::new(scratch.join(format!(".{name}.{i}.{}.trace", std::process::id())));
            let rec = Recorder::start(file, tmp.path(), &label, INTERVAL)
                .with_context(|| format!("cannot record a trace into {}", tmp.path().display()))?;
            recording.push((file, dest, tmp, rec));
        }
        let result = f();
        for (file, dest, tmp, rec) in recording {
            let sum = rec.stop().context("the residency trace could not be written")?;
            let bytes = std::fs::read(tmp.path())
                .with_context(|| format!("cannot read back {}", tmp.path().display()))?;
            self.recorded.push(TraceInfo {
                file: dest,
                cell: cell.to_string(),
                side: side.to_string(),
                run,
                traced: file.to_string_lossy().into_owned(),
                frames: sum.frames,
                max_resident_pages: sum.max_resident_pages,
                bytes,
            });
        }
        result
    }

    /// Every trace recorded, in order.
    #[must_use]
    pub fn list(&self) -> &[TraceInfo] {
        &self.recorded
    }

    /// Every trace of the first run recorded for (`cell`, `side`), one per traced file.
    fn first_run(&self, cell: &str, side: &str) -> Vec<&TraceInfo> {
        let of = |t: &&TraceInfo| t.cell == cell && t.side == side;
        let Some(first) = self.recorded.iter().find(of) else {
            return Vec::new();
        };
        self.recorded.iter().filter(of).filter(|t| t.run == first.run).collect()
    }

    /// The report's paragraph on the traces: how many, what was traced
    /// (`what`), and the command that replays one from the workspace root
    /// once the report is in `report_dir` (the first of a cold cell, where
    /// residency changes most, else the first); `None` without traces.
    #[must_use]
    pub fn paragraph(&self, what: &str, report_dir: &Path) -> Option<String> {
        let cold = self.recorded.iter().find(|t| t.cell.contains("cold"));
        let first = cold.or_else(|| self.recorded.first())?;
        let mut runs: Vec<(&str, &str, usize)> =
            self.recorded.iter().map(|t| (t.cell.as_str(), t.side.as_str(), t.run)).collect();
        runs.dedup();
        let (n, runs) = (self.recorded.len(), runs.len());
        Some(format!(
            "Every timed run was traced: the residency of {what} while the run went on, sampled {}; \
             {n} trace{} of {runs} run{} in `traces/`, named `<cell>-<side>-<run>`. Replay one in the page map \
             from the workspace root with `inspector replay {} --file {}` (`Space` plays, `,` `.` step), or load \
             it beside the file in the browser viewer.",
            cadence(),
            crate::units::plural(n),
            crate::units::plural(runs),
            report_dir.join(&first.file).display(),
            first.traced,
        ))
    }

    /// (report-relative path, bytes) of every trace.
    #[must_use]
    pub fn files(&self) -> Vec<(&str, &[u8])> {
        self.recorded.iter().map(|t| (t.file.as_str(), t.bytes.as_slice())).collect()
    }
}

/// The residency-over-time chart of the first run of each (`cell`, `side`, legend) in `picks`
/// as the chart file `file` (`residency-cold.svg`), described as `what`; `None` when none of
/// the picks was traced.
pub fn residency_file(
    traces: &Traces,
    file: &str,
    (title, what): (&str, &str),
    picks: &[(String, &str, String)],
) -> Result<Option<charts::ChartFile>> {
    let chart = chart_of(traces, title, picks, Scale::Percent)?;
    Ok(chart.map(|svg| charts::ChartFile { file: file.to_owned(), what: what.to_owned(), svg }))
}

/// The chart of [`residency_file`] in resident OS pages, for runs that touch a few pages of a
/// larger file.
pub fn residency_pages_chart(
    traces: &Traces,
    title: &str,
    picks: &[(String, &str, String)],
) -> Result<Option<String>> {
    chart_of(traces, title, picks, Scale::Pages)
}

fn chart_of(
    traces: &Traces,
    title: &str,
    picks: &[(String, &str, String)],
    scale: Scale,
) -> Result<Option<String>> {
    let decoded: Vec<(String, Trace)> = picks
        .iter()
        .filter_map(|(cell, side, legend)| {
            let run: Vec<Trace> =
                traces.first_run(cell, side).iter().filter_map(|t| t.trace().ok()).collect();
            Some((legend.clone(), combined(&run.iter().collect::<Vec<_>>())?))
        })
        .collect();
    if decoded.iter().all(|(_, t)| t.frames.is_empty()) {
        return Ok(None);
    }
    let series: Vec<(String, &Trace)> = decoded.iter().map(|(l, t)| (l.clone(), t)).collect();
    charts::residency(title, &series, scale).map(Some)
}

/// One run's traces of several files as one trace of them all end to end,
/// sampled at the times of the trace with the most frames (the recorders of
/// a run start within a millisecond of each other).
fn combined(traces: &[&Trace]) -> Option<Trace> {
    let clock = *traces.iter().max_by_key(|t| t.frames.len())?;
    if traces.len() == 1 {
        return Some(clock.clone());
    }
    let page = clock.header.os_page_size.max(1);
    let base = |t: &Trace| t.frames.first().map_or(0, |f| f.t_us);
    let t0 = base(clock);
    let frames = clock
        .frames
        .iter()
        .map(|f| {
            let dt = f.t_us.saturating_sub(t0);
            let mut runs: Vec<Run> = Vec::new();
            let (mut pages, mut known) = (0u64, true);
            for t in traces {
                let Some(g) = t.frames.get(t.frame_at(base(t).saturating_add(dt))) else {
                    continue;
                };
                for r in &g.runs {
                    let start = pages.saturating_add(r.start);
                    match runs.last_mut() {
                        // Runs stay non-adjacent across a file boundary.
                        Some(last) if last.start.saturating_add(last.len) == start => {
                            last.len = last.len.saturating_add(r.len);
                        }
                        _ => runs.push(Run { start, len: r.len }),
                    }
                }
                pages = pages.saturating_add(g.total_pages(page));
                known &= g.known;
            }
            Frame { t_us: f.t_us, file_len: pages.saturating_mul(page), known, runs }
        })
        .collect();
    Some(Trace {
        header: Header {
            path: format!("{} and {} more", clock.header.path, traces.len() - 1),
            ..clock.header.clone()
        },
        frames,
        truncated_tail: traces.iter().any(|t| t.truncated_tail),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn recorded_runs_read_back_one_file_or_several() {
        assert_eq!(slug("  Go bbolt 1.3.6//x "), "go-bbolt-1.3.6-x");
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<std::path::PathBuf> = (0..3)
            .map(|i| {
                let f = dir.path().join(format!("Cold {i}.bin"));
                std::fs::write(&f, vec![1u8; (i + 1) * 4096]).unwrap();
                f
            })
            .collect();
        let mut t = Traces::default();
        let sleep = || {
            std::thread::sleep(Duration::from_millis(120));
            Ok(42)
        };
        assert_eq!(t.record(dir.path(), &files[0], "cold plain", "ours", 1, sleep).unwrap(), 42);
        let info = &t.list()[0];
        assert_eq!(info.file, "traces/cold-plain-ours-1.trace");
        let trace = info.trace().unwrap();
        assert_eq!(trace.frames.len() as u64, info.frames);
        assert!(info.frames >= 3, "{} frames in 120 ms", info.frames);
        let p = t.paragraph("the file", Path::new("target/bench/x")).unwrap();
        let replay = "`inspector replay target/bench/x/traces/cold-plain-ours-1.trace --file";
        assert!(p.contains("; 1 trace of 1 run in `traces/`") && p.contains(replay), "{p}");
        assert!(Traces::default().paragraph("x", Path::new(".")).is_none());
        for run in 1..=2 {
            t.record_files(dir.path(), &files, "cold, mmap once", "C", run, || Ok(())).unwrap();
        }
        let names: Vec<&str> = t.list().iter().map(|i| i.file.as_str()).collect();
        assert_eq!(names[1], "traces/cold-mmap-once-c-1/cold-0.bin.trace");
        assert_eq!(names[6], "traces/cold-mmap-once-c-2/cold-2.bin.trace");
        // Every trace samples its own file: 1, 2 and 3 pages long.
        let first = t.first_run("cold, mmap once", "C");
        let lens: Vec<u64> = first.iter().map(|i| i.trace().unwrap().frames[0].file_len).collect();
        assert_eq!((lens, first[2].run), (vec![4096, 8192, 12288], 1));
        assert!(t.first_run("cold, mmap once", "ours").is_empty());
        assert!(t.paragraph("each file", Path::new("d")).unwrap().contains("; 7 traces of 3 runs"));
        // The temporary files are gone.
        let left = std::fs::read_dir(dir.path()).unwrap().filter_map(Result::ok);
        assert_eq!(left.filter(|e| e.file_name().to_string_lossy().ends_with(".trace")).count(), 0);
    }

    /// A trace of `path` sampled every 50 ms, OS pages of 4 KiB.
    pub(crate) fn trace(path: &str, frames: Vec<Frame>) -> Trace {
        Trace {
            header: Header {
                path: path.into(),
                label: "l".into(),
                os_page_size: 4096,
                interval_us: 50_000,
                started_unix_ms: 0,
            },
            frames,
            truncated_tail: false,
        }
    }

    #[test]
    fn traces_of_a_list_combine_into_one_file() {
        // File a: 4 pages, 0 then 2 then 4 resident (the last page of a
        // last); file b: 4 pages, the first 2 resident throughout,
        // sampled once (its frame stays on show).
        let a = trace(
            "a",
            vec![
                Frame::from_bitmap(10, 4 * 4096, true, &[0], 4),
                Frame::from_bitmap(50_010, 4 * 4096, true, &[0b1100], 4),
                Frame::from_bitmap(100_010, 4 * 4096, true, &[0b1111], 4),
            ],
        );
        let b = trace("b", vec![Frame::from_bitmap(7, 4 * 4096, true, &[0b0011], 4)]);
        let c = combined(&[&a, &b]).unwrap();
        assert_eq!(c.header.path, "a and 1 more");
        let shares: Vec<(u64, u64, u64)> =
            c.frames.iter().map(|f| (f.t_us, f.resident_pages(), f.total_pages(4096))).collect();
        assert_eq!(shares, [(10, 2, 8), (50_010, 4, 8), (100_010, 6, 8)]);
        // a's pages 2–3 and b's pages 0–1 touch: one run, pages 2–5.
        assert_eq!(c.frames[1].runs.len(), 1);
        assert_eq!((c.frames[1].runs[0].start, c.frames[1].runs[0].len), (2, 4));
        assert!(c.frames[2].is_resident(5) && !c.frames[2].is_resident(6));
        // One trace is itself; none is nothing.
        assert_eq!(combined(&[&a]).unwrap().frames, a.frames);
        assert!(combined(&[]).is_none());
    }
}
