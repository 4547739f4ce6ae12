//! Residency traces: which OS pages of one file sat in the page cache,
//! sampled again and again while something ran (a benchmark, a scan).
//!
//! A trace answers "why was this run fast?": a plain mmap scan fills the
//! cache page by page behind the cursor, `MAP_POPULATE` fills it before
//! the first key is read, a prefetching cursor fills it just ahead. The
//! recorder lives in `mapwise-native` (`trace::Recorder`); `inspector
//! replay` and the browser viewer play traces back.
//!
//! # File format (version 1)
//!
//! ```text
//! offset  size  field
//! 0       8     magic  "MWTRACE\0"
//! 8       4     version, u32 little-endian (1)
//! 12      4     header length H, u32 little-endian
//! 16      H     Header, bincode 2 (standard config: varint integers) via serde
//! then, once per sample:
//!         4     frame length F, u32 little-endian
//!         F     Frame, bincode 2 (standard config) via serde
//! ```
//!
//! Frames are appended as they are taken, so a recorder killed mid-write
//! leaves a readable prefix: [`Trace::parse`] drops a final frame whose
//! length runs past the end and says so in [`Trace::truncated_tail`].
//! A newer version than this build knows fails with
//! [`TraceError::Version`]; every later version keeps the magic and the
//! version word where they are, so old builds always fail clearly.
//!
//! Decoding never trusts the file: frame and header lengths are capped
//! ([`MAX_RECORD`]), bincode's own allocation limit is set to the same
//! cap, and every run must lie inside the file length its frame records,
//! in ascending order. A hostile trace gets an error naming the frame and
//! byte offset, never a panic or an unbounded allocation.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde::{Deserialize, Serialize};

/// First 8 bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"MWTRACE\0";

/// The version this build writes (and the newest it reads).
pub const VERSION: u32 = 1;

/// Largest header or frame, in bytes (64 MiB: one run per page of a
/// fully fragmented 64 GiB file still fits at ≤ 4 bytes per run).
pub const MAX_RECORD: usize = 64 << 20;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_RECORD>()
}

/// What was traced, written once at the start of the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Path of the traced file, as the recorder was given it.
    pub path: String,
    /// What ran while the trace was taken (free text, e.g.
    /// `"bolt-scan cold populate run 2: ours"`).
    pub label: String,
    /// Bytes per OS page: the unit of every [`Run`].
    pub os_page_size: u64,
    /// Requested time between samples, in microseconds.
    pub interval_us: u64,
    /// Wall-clock time of the first sample, milliseconds since the Unix
    /// epoch.
    pub started_unix_ms: u64,
}

/// One sample: the resident pages of the file at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Microseconds since the first sample.
    pub t_us: u64,
    /// The file's length at sampling time, in bytes.
    pub file_len: u64,
    /// `false` when the kernel would not tell real residency (mincore
    /// answers "all resident" for files the caller may not write); the
    /// runs are then what it said, to be shown as "unknown".
    pub known: bool,
    /// Resident OS pages as ascending, non-overlapping, non-adjacent
    /// runs.
    pub runs: Vec<Run>,
}

/// `len` resident OS pages starting at page `start` (page `i` is file
/// bytes `i * os_page_size ..`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// First page of the run.
    pub start: u64,
    /// Pages in the run (≥ 1).
    pub len: u64,
}

impl Frame {
    /// A frame from a residency bitmap: bit `i` (LSB first in word
    /// `i / 64`) set when OS page `i` is resident; bits at or past
    /// `total_pages` are ignored.
    #[must_use]
    pub fn from_bitmap(
        t_us: u64,
        file_len: u64,
        known: bool,
        bitmap: &[u64],
        total_pages: u64,
    ) -> Frame {
        let mut runs: Vec<Run> = Vec::new();
        let mut open: Option<u64> = None;
        let mut page = 0u64;
        for &word in bitmap {
            if page >= total_pages {
                break;
            }
            let bits = (total_pages - page).min(64);
            let word = if bits == 64 { word } else { word & ((1u64 << bits) - 1) };
            // Whole-word fast paths: most words are all 0 or all 1.
            if word == 0 && bits == 64 {
                if let Some(s) = open.take() {
                    runs.push(Run { start: s, len: page - s });
                }
            } else if word == u64::MAX {
                open.get_or_insert(page);
            } else {
                for b in 0..bits {
                    let resident = word >> b & 1 == 1;
                    match (resident, open) {
                        (true, None) => open = Some(page + b),
                        (false, Some(s)) => {
                            runs.push(Run { start: s, len: page + b - s });
                            open = None;
                        }
                        _ => {}
                    }
                }
            }
            page += bits;
        }
        if let Some(s) = open {
            runs.push(Run { start: s, len: page - s });
        }
        Frame { t_us, file_len, known, runs }
    }

    /// Resident OS pages (the sum of the run lengths).
    #[must_use]
    pub fn resident_pages(&self) -> u64 {
        self.runs.iter().fold(0u64, |n, r| n.saturating_add(r.len))
    }

    /// OS pages of the file at sampling time: `ceil(file_len /
    /// page_size)`; 0 when `page_size` is 0.
    #[must_use]
    pub fn total_pages(&self, page_size: u64) -> u64 {
        if page_size == 0 { 0 } else { self.file_len.div_ceil(page_size) }
    }

    /// Whether OS page `page` was resident (binary search over the runs).
    #[must_use]
    pub fn is_resident(&self, page: u64) -> bool {
        let i = self.runs.partition_point(|r| r.start <= page);
        i > 0 && self.runs.get(i - 1).is_some_and(|r| page - r.start < r.len)
    }

    /// Resident pages among `first..end` (OS pages).
    #[must_use]
    pub fn resident_between(&self, first: u64, end: u64) -> u64 {
        let i = self.runs.partition_point(|r| r.start.saturating_add(r.len) <= first);
        let mut n = 0u64;
        for r in self.runs.iter().skip(i) {
            if r.start >= end {
                break;
            }
            let s = r.start.max(first);
            let e = r.start.saturating_add(r.len).min(end);
            n = n.saturating_add(e.saturating_sub(s));
        }
        n
    }

    /// The frame as a bitmap of `total_pages` bits (the inverse of
    /// [`from_bitmap`](Self::from_bitmap)); runs past `total_pages` are
    /// clipped. `total_pages.div_ceil(64)` words.
    #[must_use]
    pub fn to_bitmap(&self, total_pages: u64) -> Vec<u64> {
        let words = usize::try_from(total_pages.div_ceil(64)).unwrap_or(usize::MAX);
        let mut map = alloc::vec![0u64; words];
        for r in &self.runs {
            let end = r.start.saturating_add(r.len).min(total_pages);
            let mut p = r.start;
            while p < end {
                let (w, b) = (usize::try_from(p / 64).unwrap_or(usize::MAX), p % 64);
                let take = (64 - b).min(end - p);
                let mask = if take == 64 { u64::MAX } else { ((1u64 << take) - 1) << b };
                if let Some(word) = map.get_mut(w) {
                    *word |= mask;
                }
                p += take;
            }
        }
        map
    }
}

/// Why a trace could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceError {
    /// The first 8 bytes are not [`MAGIC`].
    NotATrace,
    /// A version this build does not read.
    Version {
        /// The file's version word.
        found: u32,
        /// The newest version this build reads ([`VERSION`]).
        supported: u32,
    },
    /// The header is damaged.
    Header {
        /// Byte offset of the damaged part: 8 (version word), 12 (header
        /// length word) or 16 (the encoded header).
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A frame is damaged.
    Frame {
        /// 0-based frame number.
        index: usize,
        /// Byte offset of the frame's length word in the file.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A header or frame could not be encoded.
    Encode(String),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::NotATrace => {
                f.write_str("not a mapwise residency trace (no MWTRACE magic at offset 0)")
            }
            TraceError::Version { found, supported } => write!(
                f,
                "trace version {found} is not readable by this build (it reads versions 1 to {supported})"
            ),
            TraceError::Header { offset, reason } => {
                write!(f, "trace header at offset {offset}: {reason}")
            }
            TraceError::Frame { index, offset, reason } => {
                write!(f, "trace frame {index} at offset {offset}: {reason}")
            }
            TraceError::Encode(e) => write!(f, "cannot encode trace record: {e}"),
        }
    }
}

impl core::error::Error for TraceError {}

/// The bytes that start a trace file: magic, version and the header
/// record.
///
/// # Errors
/// [`TraceError::Encode`] when the header does not fit [`MAX_RECORD`].
pub fn encode_header(header: &Header) -> Result<Vec<u8>, TraceError> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    record(&mut out, header)?;
    Ok(out)
}

/// The bytes of one frame record (length word + body), to append to a
/// trace file.
///
/// # Errors
/// [`TraceError::Encode`] when the frame does not fit [`MAX_RECORD`].
pub fn encode_frame(frame: &Frame) -> Result<Vec<u8>, TraceError> {
    let mut out = Vec::with_capacity(16 + frame.runs.len() * 4);
    record(&mut out, frame)?;
    Ok(out)
}

fn record<T: Serialize>(out: &mut Vec<u8>, value: &T) -> Result<(), TraceError> {
    let body = bincode::serde::encode_to_vec(value, config())
        .map_err(|e| TraceError::Encode(alloc::format!("{e}")))?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&l| l as usize <= MAX_RECORD)
        .ok_or_else(|| TraceError::Encode(alloc::format!("{} bytes", body.len())))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(())
}

/// A whole trace, decoded and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// What was traced.
    pub header: Header,
    /// The samples, in time order.
    pub frames: Vec<Frame>,
    /// `true` when the file ended inside a frame (the recorder was
    /// killed mid-write); that frame is dropped.
    pub truncated_tail: bool,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

impl Trace {
    /// Decode a trace file's bytes.
    ///
    /// # Errors
    /// [`TraceError::NotATrace`], [`TraceError::Version`],
    /// [`TraceError::Header`], or [`TraceError::Frame`] for the first
    /// damaged frame (a bad encoding, a length over [`MAX_RECORD`], time
    /// going backwards, runs out of order, empty or past the frame's file
    /// length).
    pub fn parse(bytes: &[u8]) -> Result<Trace, TraceError> {
        if bytes.get(..8) != Some(&MAGIC[..]) {
            return Err(TraceError::NotATrace);
        }
        match u32_at(bytes, 8) {
            Some(VERSION) => {}
            Some(found) => {
                return Err(TraceError::Version { found, supported: VERSION });
            }
            None => {
                return Err(TraceError::Header {
                    offset: 8,
                    reason: "file ends before the version word".into(),
                });
            }
        }
        let header_err =
            |offset: usize, reason: &str| TraceError::Header { offset, reason: reason.into() };
        let hlen = u32_at(bytes, 12)
            .ok_or_else(|| header_err(12, "file ends before the header length"))?
            as usize;
        if hlen > MAX_RECORD {
            return Err(header_err(12, "header length over the 64 MiB limit"));
        }
        let body = bytes
            .get(16..16 + hlen)
            .ok_or_else(|| header_err(16, "header runs past the end of the file"))?;
        let (header, used): (Header, usize) = bincode::serde::decode_from_slice(body, config())
            .map_err(|e| TraceError::Header { offset: 16, reason: alloc::format!("{e}") })?;
        if used != hlen {
            return Err(header_err(16, "header length does not match its encoding"));
        }
        if header.os_page_size == 0 || !header.os_page_size.is_power_of_two() {
            return Err(header_err(16, "OS page size is not a power of two"));
        }
        let mut frames: Vec<Frame> = Vec::new();
        let mut at = 16 + hlen;
        let mut truncated_tail = false;
        while at < bytes.len() {
            let index = frames.len();
            let bad = |reason: String| TraceError::Frame { index, offset: at, reason };
            let Some(len) = u32_at(bytes, at) else {
                truncated_tail = true;
                break;
            };
            let len = len as usize;
            if len > MAX_RECORD {
                return Err(bad(alloc::format!("length {len} over the 64 MiB limit")));
            }
            let Some(body) = bytes.get(at + 4..at + 4 + len) else {
                truncated_tail = true;
                break;
            };
            let (frame, used): (Frame, usize) = bincode::serde::decode_from_slice(body, config())
                .map_err(|e| bad(alloc::format!("{e}")))?;
            if used != len {
                return Err(bad("length does not match its encoding".into()));
            }
            if let Some(prev) = frames.last()
                && frame.t_us < prev.t_us
            {
                return Err(bad(alloc::format!(
                    "time goes backwards ({} µs after {} µs)",
                    frame.t_us,
                    prev.t_us
                )));
            }
            let pages = frame.total_pages(header.os_page_size);
            let mut next = 0u64;
            for (i, r) in frame.runs.iter().enumerate() {
                let end = r.start.checked_add(r.len);
                if r.len == 0 || r.start < next || end.is_none_or(|e| e > pages) {
                    return Err(bad(alloc::format!(
                        "run {i} (pages {}+{}) is empty, out of order or past the file's {pages} pages",
                        r.start,
                        r.len
                    )));
                }
                next = end.unwrap_or(u64::MAX);
            }
            frames.push(frame);
            at += 4 + len;
        }
        Ok(Trace { header, frames, truncated_tail })
    }

    /// Index of the frame on show at `t_us` microseconds: the last frame
    /// taken at or before it (0 before the first).
    #[must_use]
    pub fn frame_at(&self, t_us: u64) -> usize {
        self.frames.partition_point(|f| f.t_us <= t_us).saturating_sub(1)
    }

    /// Microseconds from the first to the last frame.
    #[must_use]
    pub fn duration_us(&self) -> u64 {
        match (self.frames.first(), self.frames.last()) {
            (Some(a), Some(b)) => b.t_us.saturating_sub(a.t_us),
            _ => 0,
        }
    }
}

#[cfg(test)]
#[expect(clippy::cast_possible_truncation)] // test sizes are small
mod tests {
    use super::*;
    use alloc::vec;

    fn header() -> Header {
        Header {
            path: "/tmp/x.db".into(),
            label: "test".into(),
            os_page_size: 4096,
            interval_us: 50_000,
            started_unix_ms: 1_700_000_000_000,
        }
    }

    fn file(frames: &[Frame]) -> Vec<u8> {
        let mut out = encode_header(&header()).unwrap();
        for f in frames {
            out.extend(encode_frame(f).unwrap());
        }
        out
    }

    fn bits(pages: &[u64], total: u64) -> Vec<u64> {
        let mut m = vec![0u64; total.div_ceil(64) as usize];
        for &p in pages {
            m[(p / 64) as usize] |= 1 << (p % 64);
        }
        m
    }

    #[test]
    fn bitmap_runs_round_trip() {
        let total = 200;
        let resident: Vec<u64> = (0..3).chain(63..130).chain([150, 199]).collect();
        let map = bits(&resident, total);
        let f = Frame::from_bitmap(0, total * 4096, true, &map, total);
        assert_eq!(
            f.runs,
            vec![
                Run { start: 0, len: 3 },
                Run { start: 63, len: 67 },
                Run { start: 150, len: 1 },
                Run { start: 199, len: 1 }
            ]
        );
        assert_eq!(f.resident_pages(), resident.len() as u64);
        assert_eq!(f.to_bitmap(total), map);
        for p in 0..total {
            assert_eq!(f.is_resident(p), resident.contains(&p), "page {p}");
        }
        assert_eq!(f.resident_between(60, 70), 7);
        assert_eq!(f.resident_between(0, total), resident.len() as u64);
    }

    #[test]
    fn bits_past_total_pages_are_ignored() {
        let f = Frame::from_bitmap(0, 10 * 4096, true, &[u64::MAX], 10);
        assert_eq!(f.runs, vec![Run { start: 0, len: 10 }]);
    }

    #[test]
    fn file_round_trip_and_truncated_tail() {
        let frames = vec![
            Frame::from_bitmap(0, 8192, true, &[0b01], 2),
            Frame::from_bitmap(50_000, 8192, true, &[0b11], 2),
            Frame::from_bitmap(100_000, 4096, false, &[0b1], 1),
        ];
        let bytes = file(&frames);
        let t = Trace::parse(&bytes).unwrap();
        assert_eq!(t.header, header());
        assert_eq!(t.frames, frames);
        assert!(!t.truncated_tail);
        assert_eq!(t.frame_at(0), 0);
        assert_eq!(t.frame_at(60_000), 1);
        assert_eq!(t.frame_at(u64::MAX), 2);
        assert_eq!(t.duration_us(), 100_000);
        // Every cut inside the last frame keeps the first two.
        let last = encode_frame(&frames[2]).unwrap().len();
        for cut in 1..last {
            let t = Trace::parse(&bytes[..bytes.len() - cut]).unwrap();
            assert_eq!(t.frames.len(), 2, "cut {cut}");
            assert!(t.truncated_tail);
        }
    }

    #[test]
    fn bad_files_are_named() {
        assert_eq!(Trace::parse(b"hello"), Err(TraceError::NotATrace));
        let mut v2 = file(&[]);
        v2[8] = 2;
        assert_eq!(Trace::parse(&v2), Err(TraceError::Version { found: 2, supported: 1 }));
        let hdr = file(&[]);
        assert!(matches!(
            Trace::parse(&hdr[..hdr.len() - 1]),
            Err(TraceError::Header { offset: 16, .. })
        ));
        // Each damaged part is named at its own offset.
        use alloc::string::ToString;
        assert_eq!(
            Trace::parse(&hdr[..9]).unwrap_err().to_string(),
            "trace header at offset 8: file ends before the version word"
        );
        assert_eq!(
            Trace::parse(&hdr[..13]).unwrap_err().to_string(),
            "trace header at offset 12: file ends before the header length"
        );
        // A run past the end of the file.
        let f =
            Frame { t_us: 0, file_len: 4096, known: true, runs: vec![Run { start: 0, len: 2 }] };
        let err = Trace::parse(&file(&[f])).unwrap_err();
        assert!(matches!(err, TraceError::Frame { index: 0, .. }), "{err}");
        // Time going backwards.
        let a = Frame::from_bitmap(10, 4096, true, &[1], 1);
        let b = Frame::from_bitmap(5, 4096, true, &[1], 1);
        let err = Trace::parse(&file(&[a, b])).unwrap_err();
        assert!(matches!(err, TraceError::Frame { index: 1, .. }), "{err}");
        // A huge length word.
        let mut huge = file(&[]);
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&[0; 16]);
        assert!(matches!(Trace::parse(&huge), Err(TraceError::Frame { index: 0, .. })));
    }

    #[test]
    fn hostile_bytes_never_panic() {
        let good = file(&[Frame::from_bitmap(0, 1 << 20, true, &[u64::MAX; 4], 256)]);
        for i in 16..good.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut b = good.clone();
                b[i] ^= flip;
                let _ = Trace::parse(&b);
            }
        }
    }
}
