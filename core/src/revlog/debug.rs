//! The text of `hg debugindex` (Mercurial 6.3: `mercurial/debugcommands.py`,
//! `debugindex`; `mercurial/revlogutils/debug.py`, `debug_index` and its
//! `debug_column` table).
//!
//! hg prints one header line of column names, each right-aligned to the
//! column's width, then one line per revision with every value
//! right-aligned the same way, columns separated by one space. A column's
//! width is the larger of its name's length and its declared size; node
//! columns are as wide as the printed nodes (12 hex digits, or 40 with
//! `--debug`). `-v` adds the verbose-only columns; `--debug` implies `-v`
//! and prints full nodes.

use core::fmt::{self, Write};

use crate::error::Error;
use crate::source::PageSource;

use super::index::{COMP_MODE_INLINE, Index, NODE_LEN, Node, RANK_UNKNOWN, Rev};

/// Which columns and node width to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DebugStyle {
    /// Include the verbose-only columns (hg's `-v`).
    pub verbose: bool,
    /// Print nodes as 40 hex digits instead of 12 (hg's `--debug`, which
    /// also turns on `verbose`).
    pub full_nodes: bool,
}

impl DebugStyle {
    /// hg's `--debug`: every column, full nodes.
    pub const DEBUG: DebugStyle = DebugStyle { verbose: true, full_nodes: true };
}

/// Every value `hg debugindex` can print for one revision, named after
/// its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugRow {
    /// `rev`.
    pub rev: Rev,
    /// `rank`: not stored before revlog v2, always -1.
    pub rank: i32,
    /// `linkrev`.
    pub linkrev: Rev,
    /// `nodeid`.
    pub nodeid: Node,
    /// `p1-rev`.
    pub p1_rev: Rev,
    /// `p1-nodeid`: the node of `p1-rev` (null for -1).
    pub p1_nodeid: Node,
    /// `p2-rev`.
    pub p2_rev: Rev,
    /// `p2-nodeid`.
    pub p2_nodeid: Node,
    /// `full-size`: full-text length in bytes (-1 when unknown, v0).
    pub full_size: i32,
    /// `delta-base`.
    pub delta_base: Rev,
    /// `flags`: per-revision flags (`REVIDX_*`).
    pub flags: u16,
    /// `comp-mode`: always 2 (`COMP_MODE_INLINE`) before revlog v2.
    pub comp_mode: u8,
    /// `data-offset`, bytes into the data stream.
    pub data_offset: u64,
    /// `chunk-size`, bytes.
    pub chunk_size: u32,
    /// `sd-comp-mode`: always `inline` before revlog v2.
    pub sd_comp_mode: &'static str,
    /// `sidedata-offset`: always 0 before revlog v2.
    pub sidedata_offset: u64,
    /// `sd-chunk-size`: always 0 before revlog v2.
    pub sd_chunk_size: u32,
}

/// The values of revision `rev`, parents resolved to their nodes.
///
/// # Errors
/// Entry read errors; [`Error::Invalid`] for a parent that is neither -1
/// nor an earlier revision (hg would fail to look it up).
pub fn debug_row<S: PageSource + ?Sized>(
    index: &Index<'_, S>,
    rev: Rev,
) -> Result<DebugRow, Error> {
    let e = index.entry(rev)?;
    let (p1, p2) = index.checked_parents(&e)?;
    Ok(DebugRow {
        rev,
        rank: RANK_UNKNOWN,
        linkrev: e.link_rev(),
        nodeid: *e.node(),
        p1_rev: p1,
        p1_nodeid: index.node(p1)?,
        p2_rev: p2,
        p2_nodeid: index.node(p2)?,
        full_size: e.uncompressed_len(),
        delta_base: e.base_rev(),
        flags: e.flags(),
        comp_mode: COMP_MODE_INLINE,
        data_offset: e.data_offset(),
        chunk_size: e.compressed_len(),
        sd_comp_mode: "inline",
        sidedata_offset: 0,
        sd_chunk_size: 0,
    })
}

/// Why printing stopped.
#[derive(Debug)]
pub enum PrintError {
    /// The index is damaged (the first fault met).
    Format(Error),
    /// The output sink refused a write.
    Write,
}

impl From<Error> for PrintError {
    fn from(e: Error) -> Self {
        PrintError::Format(e)
    }
}

impl From<fmt::Error> for PrintError {
    fn from(_: fmt::Error) -> Self {
        PrintError::Write
    }
}

impl fmt::Display for PrintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrintError::Format(e) => e.fmt(f),
            PrintError::Write => f.write_str("write to the output failed"),
        }
    }
}

/// A column: name, declared size (0 = node width), verbose only.
const COLUMNS: [(&str, usize, bool); 17] = [
    ("rev", 6, false),
    ("rank", 6, true),
    ("linkrev", 6, false),
    ("nodeid", 0, false),
    ("p1-rev", 6, true),
    ("p1-nodeid", 0, false),
    ("p2-rev", 6, true),
    ("p2-nodeid", 0, false),
    ("full-size", 20, true),
    ("delta-base", 6, true),
    ("flags", 2, true),
    ("comp-mode", 4, true),
    ("data-offset", 20, true),
    ("chunk-size", 10, true),
    ("sd-comp-mode", 7, true),
    ("sidedata-offset", 20, true),
    ("sd-chunk-size", 10, true),
];

fn node_width(style: DebugStyle) -> usize {
    if style.full_nodes { NODE_LEN * 2 } else { 12 }
}

fn width(name: &str, size: usize, style: DebugStyle) -> usize {
    if size == 0 { node_width(style) } else { size.max(name.len()) }
}

fn columns(style: DebugStyle) -> impl Iterator<Item = (usize, &'static str, usize)> {
    COLUMNS
        .iter()
        .enumerate()
        .filter(move |(_, (_, _, verbose))| style.verbose || !verbose)
        .map(move |(i, &(name, size, _))| (i, name, width(name, size, style)))
}

/// Lower-case hex of `node`, 12 digits (hg's `short`) or all 40.
fn write_node(out: &mut impl Write, node: &Node, full: bool) -> fmt::Result {
    let n = if full { NODE_LEN } else { 6 };
    for b in node.iter().take(n) {
        write!(out, "{b:02x}")?;
    }
    Ok(())
}

/// The header line, with its newline.
///
/// # Errors
/// When `out` refuses a write.
pub fn write_header(out: &mut impl Write, style: DebugStyle) -> fmt::Result {
    let mut first = true;
    for (_, name, w) in columns(style) {
        if !first {
            out.write_char(' ')?;
        }
        first = false;
        write!(out, "{name:>w$}")?;
    }
    out.write_char('\n')
}

/// One revision's line, with its newline.
///
/// # Errors
/// When `out` refuses a write.
pub fn write_row(out: &mut impl Write, row: &DebugRow, style: DebugStyle) -> fmt::Result {
    let mut first = true;
    for (i, _, w) in columns(style) {
        if !first {
            out.write_char(' ')?;
        }
        first = false;
        match i {
            0 => write!(out, "{:>w$}", row.rev)?,
            1 => write!(out, "{:>w$}", row.rank)?,
            2 => write!(out, "{:>w$}", row.linkrev)?,
            3 => write_node(out, &row.nodeid, style.full_nodes)?,
            4 => write!(out, "{:>w$}", row.p1_rev)?,
            5 => write_node(out, &row.p1_nodeid, style.full_nodes)?,
            6 => write!(out, "{:>w$}", row.p2_rev)?,
            7 => write_node(out, &row.p2_nodeid, style.full_nodes)?,
            8 => write!(out, "{:>w$}", row.full_size)?,
            9 => write!(out, "{:>w$}", row.delta_base)?,
            10 => write!(out, "{:>w$}", row.flags)?,
            11 => write!(out, "{:>w$}", row.comp_mode)?,
            12 => write!(out, "{:>w$}", row.data_offset)?,
            13 => write!(out, "{:>w$}", row.chunk_size)?,
            14 => write!(out, "{:>w$}", row.sd_comp_mode)?,
            15 => write!(out, "{:>w$}", row.sidedata_offset)?,
            _ => write!(out, "{:>w$}", row.sd_chunk_size)?,
        }
    }
    out.write_char('\n')
}

/// The whole `hg debugindex` text of `index`: the header, then every
/// revision from 0 up.
///
/// # Errors
/// [`PrintError::Format`] at the first damaged entry (the lines before it
/// are written); [`PrintError::Write`] when `out` refuses a write.
pub fn write_debugindex<S: PageSource + ?Sized>(
    out: &mut impl Write,
    index: &Index<'_, S>,
    style: DebugStyle,
) -> Result<(), PrintError> {
    write_header(out, style)?;
    for rev in 0..=index.tip() {
        let row = debug_row(index, rev)?;
        write_row(out, &row, style)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn header_widths_follow_the_column_table() {
        let mut s = String::new();
        write_header(&mut s, DebugStyle::default()).unwrap();
        // The header line of `hg debugindex` (corpus, Mercurial 6.3.2).
        assert_eq!(s, "   rev linkrev       nodeid    p1-nodeid    p2-nodeid\n");
        let mut s = String::new();
        write_header(&mut s, DebugStyle::DEBUG).unwrap();
        assert!(
            s.starts_with("   rev   rank linkrev                                   nodeid p1-rev")
        );
        assert!(s.ends_with("sd-comp-mode      sidedata-offset sd-chunk-size\n"));
    }
}
