//! A residency trace (from `inspector record` or `cargo xtask bench`)
//! loaded beside a file: its frames as residency levels of the page map's
//! cells, so the map can be played back as the terminal's `inspector
//! replay` plays it.

use mapwise_core::trace::Trace;
use mapwise_view::residency::Residence;
use serde::Serialize;

/// A map cell's residency in one frame: the inspector's four glyphs, as
/// the numbers of [`Residence::level`] (the one rule, [`Residence::of`]).
pub mod level {
    use mapwise_view::residency::Residence;

    /// No OS page of the cell resident (`░`).
    pub const NONE: u8 = Residence::None.level();
    /// Some, at most half, resident (`▒`).
    pub const SOME: u8 = Residence::Some.level();
    /// More than half resident (`▓`).
    pub const MOST: u8 = Residence::Most.level();
    /// Every OS page resident (`█`).
    pub const ALL: u8 = Residence::All.level();
    /// The cell lies past the file's length at that moment.
    pub const PAST_END: u8 = Residence::PastEof.level();
}

/// What a trace holds, for the page's header line.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TraceSummary {
    /// The traced file's path where it was recorded.
    pub path: String,
    /// What ran while it was recorded.
    pub label: String,
    /// Bytes per OS page of the recording machine.
    pub os_page_size: u64,
    /// Requested microseconds between frames.
    pub interval_us: u64,
    /// Frames in the trace.
    pub frames: usize,
    /// Microseconds from the first frame to the last.
    pub duration_us: u64,
    /// `true` when the recorder was stopped mid-frame (that frame is
    /// dropped).
    pub truncated_tail: bool,
}

/// One frame's numbers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FrameInfo {
    /// 0-based frame number.
    pub index: usize,
    /// Microseconds since the first frame.
    pub t_us: u64,
    /// The file's length then, in bytes.
    pub file_len: u64,
    /// `false` when the kernel would not tell (show "unknown").
    pub known: bool,
    /// Resident OS pages.
    pub resident_pages: u64,
    /// OS pages of the file then.
    pub total_pages: u64,
}

/// A decoded, checked trace.
#[derive(Debug)]
pub struct TraceView {
    trace: Trace,
}

impl TraceView {
    /// Decode a trace file's bytes.
    ///
    /// # Errors
    /// Why it is not a readable trace (see [`Trace::parse`]), as text.
    pub fn parse(bytes: &[u8]) -> Result<TraceView, String> {
        let trace = Trace::parse(bytes).map_err(|e| e.to_string())?;
        if trace.frames.is_empty() {
            return Err("the trace holds no frames".into());
        }
        Ok(TraceView { trace })
    }

    /// The header and frame count.
    #[must_use]
    pub fn summary(&self) -> TraceSummary {
        let h = &self.trace.header;
        TraceSummary {
            path: h.path.clone(),
            label: h.label.clone(),
            os_page_size: h.os_page_size,
            interval_us: h.interval_us,
            frames: self.trace.frames.len(),
            duration_us: self.trace.duration_us(),
            truncated_tail: self.trace.truncated_tail,
        }
    }

    /// Frame `index` (clamped to the last).
    #[must_use]
    pub fn frame(&self, index: usize) -> FrameInfo {
        let index = index.min(self.trace.frames.len().saturating_sub(1));
        let base = self.trace.frames.first().map_or(0, |f| f.t_us);
        let ps = self.trace.header.os_page_size;
        self.trace.frames.get(index).map_or(
            FrameInfo {
                index,
                t_us: 0,
                file_len: 0,
                known: false,
                resident_pages: 0,
                total_pages: 0,
            },
            |f| FrameInfo {
                index,
                t_us: f.t_us - base,
                file_len: f.file_len,
                known: f.known,
                resident_pages: f.resident_pages(),
                total_pages: f.total_pages(ps),
            },
        )
    }

    /// The frame on show `t_us` microseconds after the first.
    #[must_use]
    pub fn frame_at(&self, t_us: u64) -> usize {
        let base = self.trace.frames.first().map_or(0, |f| f.t_us);
        self.trace.frame_at(base.saturating_add(t_us))
    }

    /// Residency levels (see [`level`]) of `cells` map cells of
    /// `per_cell` map pages of `unit` bytes each, from map page `first`,
    /// in frame `index` (clamped). At most `max_cells` cells.
    #[must_use]
    pub fn levels(
        &self,
        index: usize,
        first: u64,
        per_cell: u64,
        unit: u64,
        cells: u32,
    ) -> Vec<u8> {
        let index = index.min(self.trace.frames.len().saturating_sub(1));
        let Some(f) = self.trace.frames.get(index) else {
            return Vec::new();
        };
        let ps = self.trace.header.os_page_size.max(1);
        let cell_bytes = per_cell.max(1).saturating_mul(unit.max(1));
        let cells = cells.min(crate::view::MAX_CELLS);
        let mut out = Vec::with_capacity(cells as usize);
        for c in 0..u64::from(cells) {
            let start =
                first.saturating_mul(unit.max(1)).saturating_add(c.saturating_mul(cell_bytes));
            if start >= f.file_len {
                out.push(level::PAST_END);
                continue;
            }
            let end = start.saturating_add(cell_bytes).min(f.file_len);
            let (p0, p1) = (start / ps, end.div_ceil(ps));
            let n = p1 - p0;
            out.push(Residence::of(f.resident_between(p0, p1), n).level());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapwise_core::trace::{Frame, Header, encode_frame, encode_header};

    fn bytes() -> Vec<u8> {
        let mut b = encode_header(&Header {
            path: "/x.db".into(),
            label: "scan".into(),
            os_page_size: 4096,
            interval_us: 50_000,
            started_unix_ms: 0,
        })
        .unwrap();
        // 16 OS pages; frame 0 nothing, frame 1 pages 0..3 and 8..16.
        b.extend(encode_frame(&Frame::from_bitmap(7, 16 * 4096, true, &[0], 16)).unwrap());
        b.extend(
            encode_frame(&Frame::from_bitmap(
                50_007,
                16 * 4096,
                true,
                &[0b1111_1111_0000_0111],
                16,
            ))
            .unwrap(),
        );
        b
    }

    #[test]
    fn levels_per_cell() {
        let t = TraceView::parse(&bytes()).unwrap();
        let s = t.summary();
        assert_eq!((s.frames, s.duration_us, s.path.as_str()), (2, 50_000, "/x.db"));
        assert_eq!(t.frame(1).resident_pages, 11);
        assert_eq!(t.frame(9).index, 1);
        assert_eq!(t.frame_at(49_999), 0);
        assert_eq!(t.frame_at(50_000), 1);
        // Map pages of 8 KiB (2 OS pages), 2 per cell: 4 cells + 1 past.
        assert_eq!(t.levels(0, 0, 2, 8192, 5), vec![0, 0, 0, 0, 255]);
        assert_eq!(
            t.levels(1, 0, 2, 8192, 5),
            vec![level::MOST, level::NONE, level::ALL, level::ALL, 255]
        );
        // One OS page per cell, from map page 2 (bytes 8192..).
        assert_eq!(t.levels(1, 2, 1, 4096, 2), vec![level::ALL, level::NONE]);
        assert_eq!(t.levels(1, 0, 4, 4096, 1), vec![level::MOST]);
        assert_eq!(t.levels(1, 3, 4, 4096, 1), vec![level::NONE]);
        assert_eq!(t.levels(1, 1, 4, 4096, 1), vec![level::SOME]);
        assert_eq!(t.levels(1, 2, 2, 4096, 1), vec![level::SOME]);
    }

    #[test]
    fn bad_traces_say_why() {
        assert!(TraceView::parse(b"nope").unwrap_err().contains("not a mapwise"));
        let b = bytes();
        let one = encode_frame(&Frame::from_bitmap(7, 16 * 4096, true, &[0], 16)).unwrap().len();
        let two = encode_frame(&Frame::from_bitmap(
            50_007,
            16 * 4096,
            true,
            &[0b1111_1111_0000_0111],
            16,
        ))
        .unwrap()
        .len();
        let header_only = &b[..b.len() - one - two];
        assert_eq!(TraceView::parse(header_only).unwrap_err(), "the trace holds no frames");
    }
}
