//! `inspector replay TRACE`: a recorded residency trace played back in the
//! page map.
//!
//! The residency shown is the trace's, frame by frame; the structure is
//! the traced file's as it is *now* (read once, quietly) when the file
//! still exists, else a plain map of the largest length the trace saw.
//! Touch, evict and lock are refused: a replay shows the past.

use std::path::Path;
use std::time::Duration;

use mapwise_core::bolt::{PageDetail, WalkOptions};
use mapwise_core::layout::{Format, Layout};
use mapwise_core::trace::Trace;
use mapwise_native::observe::watch::{Effect, Refreshed, Snapshot, Stamp, Watch};
use mapwise_native::os::residency::{FileAdvice, Residency, Trust, UnknownReason};
use mapwise_view::describe::Item;

use crate::app::{DETAIL_LIMIT, Playback, Target};

/// Playback speeds, slowest first; [`Replay`] starts at 1×.
const SPEEDS: [f64; 9] = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0];
const NORMAL: usize = 3;

/// A trace under playback: a [`Target`] whose residency comes from the
/// trace's frames and whose clock advances by `tick × speed` at each
/// refresh while playing.
#[derive(Debug)]
pub struct Replay {
    trace: Trace,
    frame: usize,
    /// Microseconds of trace time since the first frame.
    clock_us: u64,
    playing: bool,
    speed: usize,
    tick: Duration,
    snapshot: Snapshot,
    watch: Option<Watch>,
    residency: Option<Residency>,
    /// Why the structure on show may not be the traced file's.
    mismatch: Option<String>,
}

/// The title line of a replay: the file whose structure is on screen (the
/// copy given with `--file`, else `recorded`, the path in the trace's
/// header), the trace, and with `--file` the path it was recorded on.
#[must_use]
pub fn title(recorded: &str, trace: &Path, file: Option<&Path>) -> String {
    match file {
        Some(f) => {
            format!("{} (replay of {}, recorded on {recorded})", f.display(), trace.display())
        }
        None => format!("{recorded} (replay of {})", trace.display()),
    }
}

impl Replay {
    /// Play `trace`, advancing by `tick` of trace time per refresh at 1×.
    /// `file` overrides where the traced file is looked for (default: the
    /// path in the trace's header); it is read once, quietly, for the
    /// structure and for decoding pages.
    #[must_use]
    pub fn new(trace: Trace, file: Option<&Path>, tick: Duration) -> Replay {
        let path = file.map_or_else(|| Path::new(&trace.header.path).to_owned(), Path::to_owned);
        let longest = trace.frames.iter().map(|f| f.file_len).max().unwrap_or(0);
        let watch = Watch::open(&path, WalkOptions::default()).ok();
        let snapshot = match &watch {
            Some(w) => w.snapshot().clone(),
            None => Snapshot {
                stamp: Stamp { dev: 0, ino: 0, size: longest, mtime_ns: 0 },
                format: Format::Unknown,
                layout: std::sync::Arc::new(Layout::unknown(longest)),
                bolt: None,
                revlog: None,
                rrd: None,
                error: Some(format!(
                    "{} is gone: pages shown without their structure (replay --file names another copy)",
                    path.display()
                )),
                unsettled: None,
                expected_len: 0,
                quiet: true,
                took: Duration::ZERO,
                as_of: None,
                reading: false,
            },
        };
        // The file read for the structure should be the one traced: its
        // length now against the length the trace last saw.
        let traced_len = trace.frames.last().map_or(0, |f| f.file_len);
        let mismatch = watch.as_ref().and_then(|w| {
            let now = w.snapshot().stamp.size;
            (now != traced_len).then(|| {
                format!(
                    "{} is {now} bytes, the traced file was {traced_len} at the end of the trace: \
                     the structure shown may not be the traced file's",
                    path.display()
                )
            })
        });
        let mut r = Replay {
            trace,
            frame: 0,
            clock_us: 0,
            playing: true,
            speed: NORMAL,
            tick,
            snapshot,
            watch,
            residency: None,
            mismatch,
        };
        r.show(0);
        r
    }

    /// The trace played.
    #[must_use]
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Index of the frame on show.
    #[must_use]
    pub fn frame(&self) -> usize {
        self.frame
    }

    fn first_us(&self) -> u64 {
        self.trace.frames.first().map_or(0, |f| f.t_us)
    }

    /// Show frame `i` (clamped) and set the clock to its time.
    fn show(&mut self, i: usize) {
        let Some(last) = self.trace.frames.len().checked_sub(1) else {
            self.residency = None;
            return;
        };
        self.frame = i.min(last);
        let base = self.first_us();
        let f = &self.trace.frames[self.frame];
        self.clock_us = f.t_us - base;
        let page_size = self.trace.header.os_page_size;
        let total_pages = f.total_pages(page_size);
        self.residency = Some(Residency {
            offset: 0,
            len: f.file_len,
            page_size,
            bitmap: f.to_bitmap(total_pages),
            resident_pages: f.resident_pages(),
            total_pages,
            trust: if f.known {
                Trust::Known
            } else {
                Trust::Unknown(UnknownReason::NoWritePermission)
            },
            cachestat: None,
        });
    }
}

impl Target for Replay {
    fn refresh(&mut self) -> Refreshed {
        if self.playing && !self.trace.frames.is_empty() {
            let step = self.tick.as_secs_f64() * 1e6 * SPEEDS[self.speed];
            #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let step = step as u64;
            self.clock_us = self.clock_us.saturating_add(step.max(1));
            let i = self.trace.frame_at(self.first_us().saturating_add(self.clock_us));
            let clock = self.clock_us;
            self.show(i);
            if i + 1 >= self.trace.frames.len() {
                self.playing = false; // at the end: stay on the last frame
            } else {
                self.clock_us = clock;
            }
        }
        Refreshed::default()
    }
    fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
    fn residency(&self) -> Option<&Residency> {
        self.residency.as_ref()
    }
    fn problem(&self) -> Option<&str> {
        self.mismatch.as_deref()
    }
    fn rereading(&self) -> bool {
        false
    }
    fn is_locked(&self) -> bool {
        false
    }
    fn page_detail(&self, pgid: u64) -> Result<PageDetail, String> {
        let w = self.watch.as_ref().ok_or("the traced file is gone")?;
        w.page_detail(pgid, DETAIL_LIMIT)
    }
    fn describe(&self, offset: u64, len: u64) -> Result<Vec<Item>, String> {
        let w = self.watch.as_ref().ok_or("the traced file is gone")?;
        w.describe(offset, len)
    }
    fn touch(&mut self) -> Result<Effect, String> {
        Err("a replay shows a recorded trace; it does not touch the file".into())
    }
    fn evict(&mut self) -> Result<Effect, String> {
        Err("a replay shows a recorded trace; it does not evict the file".into())
    }
    fn advise(&mut self, _: FileAdvice, _: u64, _: u64) -> Result<Effect, String> {
        Err("a replay shows a recorded trace; it does not advise the kernel".into())
    }
    fn toggle_lock(&mut self) -> Result<bool, String> {
        Err("a replay shows a recorded trace; it does not lock the file".into())
    }
    fn playback(&mut self, cmd: Playback) -> Result<String, String> {
        let frames = self.trace.frames.len();
        if frames == 0 {
            return Err("the trace has no frames".into());
        }
        match cmd {
            Playback::Toggle => {
                if !self.playing && self.frame + 1 >= frames {
                    self.show(0); // at the end: play again from the start
                }
                self.playing = !self.playing;
            }
            Playback::StepBack => {
                self.playing = false;
                self.show(self.frame.saturating_sub(1));
            }
            Playback::StepForward => {
                self.playing = false;
                self.show(self.frame + 1);
            }
            Playback::Slower => self.speed = self.speed.saturating_sub(1),
            Playback::Faster => self.speed = (self.speed + 1).min(SPEEDS.len() - 1),
        }
        Ok(match cmd {
            Playback::Toggle if self.playing => "playing".into(),
            Playback::Toggle => "paused".into(),
            Playback::StepBack | Playback::StepForward => {
                let f = &self.trace.frames[self.frame];
                format!(
                    "frame {}: {} of {} pages resident",
                    self.frame + 1,
                    f.resident_pages(),
                    f.total_pages(self.trace.header.os_page_size)
                )
            }
            Playback::Slower | Playback::Faster => format!("speed {}×", SPEEDS[self.speed]),
        })
    }
    fn is_playing(&self) -> bool {
        self.playing
    }
    fn clock(&self) -> Option<String> {
        let frames = self.trace.frames.len();
        #[expect(clippy::cast_precision_loss)]
        let secs = |us: u64| us as f64 / 1e6;
        Some(format!(
            "{} frame {}/{frames} · {:.2}/{:.2} s · {}× · sampled every {} ms",
            if self.playing { "▶" } else { "⏸" },
            (self.frame + 1).min(frames),
            secs(self.clock_us),
            secs(self.trace.duration_us()),
            SPEEDS[self.speed],
            secs(self.trace.header.interval_us) * 1000.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_names_the_file_on_screen() {
        let trace = Path::new("t/run.trace");
        assert_eq!(
            title("/tmp/gone/x.rrd", trace, None),
            "/tmp/gone/x.rrd (replay of t/run.trace)"
        );
        let t = title("/tmp/gone/x.rrd", trace, Some(Path::new("copy.rrd")));
        assert!(t.starts_with("copy.rrd (replay of t/run.trace"), "{t}");
        assert!(t.contains("recorded on /tmp/gone/x.rrd"), "{t}");
    }
}
