//! Recording residency traces: a background thread samples one file's
//! page-cache residency every interval and appends each sample to a trace
//! file (format: [`mapwise_core::trace`]).
//!
//! Sampling uses [`residency::sample`] (mincore on a mapping that is never
//! touched, cachestat when the kernel has it), so recording does not change
//! what it records. The traced file may not exist yet when recording
//! starts, may grow, shrink, or be replaced by a rename: each sample
//! re-checks the path's identity and re-opens it when it changed; while
//! the path is missing no frame is written.
//!
//! A sample is not free: mincore walks the page cache page by page, about
//! 25 ms of system time for a 2 GiB file on the bench VM. Sampling such a
//! file every 50 ms took half of one of its two CPUs from the very run
//! being recorded, so the recorder caps itself at [`MAX_DUTY`] of one CPU
//! and samples a large file less often than asked (the frames carry their
//! own times, so a replay is still true to the clock).

use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mapwise_core::trace::{Frame, Header, Trace, encode_frame, encode_header};

use crate::os::residency::{self, os_page_size};

/// The largest share of one CPU a recording takes: after a sample that
/// took `t`, the next one waits at least `t × (1 / MAX_DUTY − 1)` even when
/// the interval asked for less (5 %: ~0.6 s between samples of a 2 GiB
/// file; files up to ~100 MiB keep a 50 ms interval).
pub const MAX_DUTY: f64 = 0.05;

/// What a finished recording wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// Frames written.
    pub frames: u64,
    /// Bytes of the trace file.
    pub bytes: u64,
    /// The most resident OS pages seen in one frame.
    pub max_resident_pages: u64,
    /// Waits the [`MAX_DUTY`] cap made longer than the interval asked
    /// for: the file took too long to sample that often.
    pub stretched: u64,
    /// Time spent sampling, all frames together.
    pub sampling: Duration,
    /// From the first sample to the last.
    pub span: Duration,
}

/// A running recording; [`stop`](Self::stop) it to take the last sample
/// and close the trace. Dropping it stops it too (errors are then lost).
#[derive(Debug)]
pub struct Recorder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<Summary>>>,
}

fn to_io(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl Recorder {
    /// Create the trace file `out` (truncating it), write its header (with
    /// `file` made absolute) and start sampling `file` every `interval` (at
    /// least 1 ms, and less often when a sample costs more than
    /// [`MAX_DUTY`] of it) on a background thread. The first sample is
    /// taken before this returns, so what the caller starts next does not
    /// share the CPU with it. `label` says what runs (free text, stored in
    /// the header).
    ///
    /// # Errors
    /// When `out` cannot be created or written.
    pub fn start(
        file: impl AsRef<Path>,
        out: impl AsRef<Path>,
        label: &str,
        interval: Duration,
    ) -> io::Result<Recorder> {
        let interval = interval.max(Duration::from_millis(1));
        let path = file.as_ref().to_owned();
        // Absolute, so a replay from another directory finds this file
        // (and not one of the same name there).
        let recorded = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        let header = Header {
            path: recorded.display().to_string(),
            label: label.to_owned(),
            os_page_size: os_page_size(),
            interval_us: u64::try_from(interval.as_micros()).unwrap_or(u64::MAX),
            started_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        };
        let mut trace = File::create(out.as_ref())?;
        let head = encode_header(&header).map_err(to_io)?;
        trace.write_all(&head)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let (first_done, first_taken) = std::sync::mpsc::sync_channel(1);
        let thread = std::thread::Builder::new().name("mapwise-trace".into()).spawn(move || {
            sample_loop(&path, trace, head.len() as u64, interval, &flag, first_done)
        })?;
        // Err: the thread ended before its first sample (a write error,
        // which `stop` reports).
        let _ = first_taken.recv();
        Ok(Recorder { stop, thread: Some(thread) })
    }

    /// Take one last sample, close the trace and say what it holds.
    ///
    /// # Errors
    /// The first write error of the recording thread.
    pub fn stop(mut self) -> io::Result<Summary> {
        self.finish()
    }

    fn finish(&mut self) -> io::Result<Summary> {
        self.stop.store(true, Ordering::Release);
        let Some(t) = self.thread.take() else {
            return Ok(Summary::default());
        };
        t.thread().unpark();
        t.join().unwrap_or_else(|_| Err(io::Error::other("the trace thread panicked")))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The open traced file and its identity.
struct Traced {
    file: File,
    dev: u64,
    ino: u64,
}

fn sample_loop(
    path: &Path,
    mut trace: File,
    mut bytes: u64,
    interval: Duration,
    stop: &AtomicBool,
    first_done: std::sync::mpsc::SyncSender<()>,
) -> io::Result<Summary> {
    let start = Instant::now();
    let mut traced: Option<Traced> = None;
    let mut sum = Summary { bytes, ..Summary::default() };
    let mut next = start;
    let mut first_done = Some(first_done);
    loop {
        // Read the flag before sampling, so the sample after `stop` is
        // always taken: the trace ends with the file's final state.
        let last = stop.load(Ordering::Acquire);
        let began = Instant::now();
        if let Some(frame) = sample_once(path, &mut traced, start) {
            let rec = encode_frame(&frame).map_err(to_io)?;
            trace.write_all(&rec)?;
            bytes += rec.len() as u64;
            sum.frames += 1;
            sum.max_resident_pages = sum.max_resident_pages.max(frame.resident_pages());
        }
        if let Some(tx) = first_done.take() {
            let _ = tx.send(());
        }
        if last {
            break;
        }
        let now = Instant::now();
        sum.sampling += now - began;
        let idle = (now - began).mul_f64(1.0 / MAX_DUTY - 1.0);
        if now + idle > next + interval {
            sum.stretched += 1;
        }
        next = (next + interval).max(now + idle);
        if next <= now {
            // Sampling took longer than the interval: skip ahead instead
            // of bursting to catch up.
            next = now + interval;
        }
        while !stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::park_timeout(next - now);
        }
    }
    trace.flush()?;
    sum.bytes = bytes;
    sum.span = start.elapsed();
    Ok(sum)
}

/// One frame of `path`, re-opening it when it was replaced; `None` while
/// it is missing or unreadable.
fn sample_once(path: &Path, traced: &mut Option<Traced>, start: Instant) -> Option<Frame> {
    let meta = std::fs::metadata(path).ok()?;
    let same = traced.as_ref().is_some_and(|t| t.dev == meta.dev() && t.ino == meta.ino());
    if !same {
        *traced =
            File::open(path).ok().map(|file| Traced { file, dev: meta.dev(), ino: meta.ino() });
    }
    let r = residency::sample(&traced.as_ref()?.file).ok()?;
    let t_us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
    Some(Frame::from_bitmap(
        t_us,
        r.len.saturating_add(r.offset),
        r.trust.is_known(),
        &r.bitmap,
        r.total_pages,
    ))
}

/// Read and check a whole trace file.
///
/// # Errors
/// When the file cannot be read, or [`Trace::parse`]'s errors (not a
/// trace, a newer version, a damaged header or frame), with the path.
pub fn read(path: impl AsRef<Path>) -> io::Result<Trace> {
    let path = path.as_ref();
    let bytes = std::fs::read(path)?;
    Trace::parse(&bytes)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))
}

/// Where the traced file of `trace` is now, if it still exists: its
/// recorded path.
#[must_use]
pub fn traced_path(trace: &Trace) -> Option<PathBuf> {
    let p = PathBuf::from(&trace.header.path);
    p.exists().then_some(p)
}
