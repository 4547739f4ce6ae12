//! Canonical text dump and the `bbolt pages` table.
//!
//! The dump format is the one our bbolt peer prints
//! (`peers/bolt/README.md`, "Dump format"), so a file can be
//! compared with what Go bbolt reads from it, line for line:
//!
//! ```text
//! bucket <path> seq=<decimal sequence>
//! kv <path> <key-hex> <value-hex, or - when empty>
//! ```
//!
//! `<path>` is the bucket names from the top, each in lower-case hex,
//! joined by `/`; records come in bbolt's iteration order (byte-wise key
//! order, depth first). Keys stored directly in the root tree (bbolt's API
//! cannot make them) print with path `-`.

use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::error::{Error, Result};
use crate::layout::{Kind, Layout};
use crate::source::PageSource;

use super::cursor::Bucket;
use super::file::BoltFile;
use super::page::PageType;
use super::walk::{WalkOptions, walk};

/// Why a dump stopped.
#[derive(Debug)]
pub enum DumpError {
    /// The file is damaged (the first fault met).
    Format(Error),
    /// The output sink refused a write.
    Write,
}

impl From<Error> for DumpError {
    fn from(e: Error) -> Self {
        DumpError::Format(e)
    }
}

impl From<fmt::Error> for DumpError {
    fn from(_: fmt::Error) -> Self {
        DumpError::Write
    }
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DumpError::Format(e) => e.fmt(f),
            DumpError::Write => f.write_str("write to the output failed"),
        }
    }
}

fn hex(out: &mut impl Write, bytes: &[u8]) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    // Encode in chunks so a large value costs few calls into the sink.
    let mut buf = [0u8; 512];
    for chunk in bytes.chunks(buf.len() / 2) {
        for (i, b) in chunk.iter().enumerate() {
            buf[2 * i] = DIGITS[usize::from(b >> 4)];
            buf[2 * i + 1] = DIGITS[usize::from(b & 15)];
        }
        // Hex digits are ASCII, so this is valid UTF-8.
        out.write_str(core::str::from_utf8(&buf[..chunk.len() * 2]).unwrap_or_default())?;
    }
    Ok(())
}

fn value(out: &mut impl Write, v: &[u8]) -> fmt::Result {
    if v.is_empty() { out.write_char('-') } else { hex(out, v) }
}

/// Refuse files whose trees share or loop pages: a traversal of them
/// could revisit pages without end. Other faults surface as errors
/// when the traversal reaches them.
fn precheck<S: PageSource + ?Sized>(file: &BoltFile<'_, S>) -> Result<()> {
    let opts = WalkOptions { check_keys: false, previous_snapshot: false };
    let walked = walk(file, opts);
    match walked
        .layout
        .problems
        .into_iter()
        .find(|p| matches!(p, Error::Reused { .. } | Error::TooDeep { .. }))
    {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

/// One record of a dump, in bbolt iteration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A bucket begins; its keys and sub-buckets follow.
    Bucket {
        /// Names from the top, this bucket's last.
        path: &'a [&'a [u8]],
        /// The bucket's sequence.
        sequence: u64,
    },
    /// A key/value pair of the bucket at `path` (empty path: the root
    /// tree, which bbolt's API never fills).
    Kv {
        /// Names of the enclosing buckets from the top.
        path: &'a [&'a [u8]],
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
}

/// Call `visit` with every bucket and key/value of `file`, in bbolt's
/// iteration order (byte-wise key order, depth first).
///
/// # Errors
/// [`DumpError::Format`] with the first fault met (a file whose trees
/// share or loop pages is refused before `visit` is called); any error
/// `visit` returns.
pub fn visit<S, F>(file: &BoltFile<'_, S>, mut visit: F) -> Result<(), DumpError>
where
    S: PageSource + ?Sized,
    F: FnMut(Record<'_>) -> Result<(), DumpError>,
{
    precheck(file)?;
    let root = Bucket::root_of(file);
    let mut names: Vec<Vec<u8>> = Vec::new();
    visit_bucket(&root, &mut names, &mut visit, false)
}

fn visit_bucket<S, F>(
    b: &Bucket<'_, S>,
    names: &mut Vec<Vec<u8>>,
    visit: &mut F,
    announce: bool,
) -> Result<(), DumpError>
where
    S: PageSource + ?Sized,
    F: FnMut(Record<'_>) -> Result<(), DumpError>,
{
    if announce {
        let path: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        visit(Record::Bucket { path: &path, sequence: b.sequence() })?;
    }
    // This bucket's path, fixed while `names` grows and shrinks below.
    let own = names.clone();
    let path: Vec<&[u8]> = own.iter().map(Vec::as_slice).collect();
    let mut c = b.cursor();
    let mut item = c.first()?;
    while let Some(it) = item {
        if it.is_bucket() {
            let sub = c.bucket()?.ok_or(Error::BucketNotFound)?;
            names.push(it.key.to_vec());
            visit_bucket(&sub, names, visit, true)?;
            names.pop();
        } else {
            visit(Record::Kv { path: &path, key: &it.key, value: &it.value })?;
        }
        item = c.next()?;
    }
    Ok(())
}

fn write_path(out: &mut impl Write, path: &[&[u8]]) -> fmt::Result {
    if path.is_empty() {
        return out.write_char('-');
    }
    for (i, name) in path.iter().enumerate() {
        if i > 0 {
            out.write_char('/')?;
        }
        hex(out, name)?;
    }
    Ok(())
}

/// Write one record as a line of the canonical dump.
///
/// # Errors
/// `fmt::Error` from `out`.
pub fn write_record(out: &mut impl Write, rec: Record<'_>) -> fmt::Result {
    match rec {
        Record::Bucket { path, sequence } => {
            out.write_str("bucket ")?;
            write_path(out, path)?;
            writeln!(out, " seq={sequence}")
        }
        Record::Kv { path, key, value: v } => {
            out.write_str("kv ")?;
            write_path(out, path)?;
            out.write_char(' ')?;
            hex(out, key)?;
            out.write_char(' ')?;
            value(out, v)?;
            out.write_char('\n')
        }
    }
}

/// Write the canonical dump of every bucket and key of `file` to `out`.
///
/// # Errors
/// As [`visit`]; [`DumpError::Write`] when `out` fails.
pub fn dump<S: PageSource + ?Sized, W: Write>(
    file: &BoltFile<'_, S>,
    out: &mut W,
) -> Result<(), DumpError> {
    visit(file, |rec| write_record(out, rec).map_err(DumpError::from))
}

/// Lower-case hex of `bytes` appended to `out`.
///
/// # Errors
/// `fmt::Error` from `out`.
pub fn write_hex(out: &mut impl Write, bytes: &[u8]) -> fmt::Result {
    hex(out, bytes)
}

/// One row of the `bbolt pages` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PagesRow {
    /// A page run: its id, the type its header names, `count`, `overflow`.
    Page {
        /// Page id.
        id: u64,
        /// Type from the header's `flags`.
        page_type: PageType,
        /// Header `count`.
        items: u16,
        /// Header `overflow`.
        overflow: u32,
    },
    /// A free page (on the freelist, or unreachable when no freelist is
    /// stored — how bbolt rebuilds it).
    Free {
        /// Page id.
        id: u64,
    },
    /// The high-water mark points past the end of the file here.
    BeyondEof {
        /// First page id past the end.
        id: u64,
    },
}

/// The rows of `bbolt pages`: every page run below the high-water mark,
/// free pages one per row, stopping at the end of the file. `layout` is
/// the file's walk (it tells free pages from used ones). An iterator, so a
/// file with millions of pages streams its table.
#[must_use]
pub fn pages<'a, 's, S: PageSource + ?Sized>(
    file: &'a BoltFile<'s, S>,
    layout: &'a Layout,
) -> Pages<'a, 's, S> {
    Pages { file, regions: layout.regions.iter(), region: None, id: 0, done: false }
}

/// Iterator of [`pages`].
#[derive(Debug)]
pub struct Pages<'a, 's, S: PageSource + ?Sized> {
    file: &'a BoltFile<'s, S>,
    /// The layout's regions from the one after `region` on: pages come in
    /// increasing order, so each region is decoded once.
    regions: crate::regions::Iter<'a>,
    /// The first region not ending before the last page asked about.
    region: Option<crate::layout::Region>,
    id: u64,
    done: bool,
}

impl<S: PageSource + ?Sized> Pages<'_, '_, S> {
    /// The kind of the region holding byte `offset`, none in a gap; for
    /// offsets that never decrease from one call to the next.
    fn kind_at(&mut self, offset: u64) -> Option<Kind> {
        while self.region.is_none_or(|r| r.end() <= offset) {
            self.region = Some(self.regions.next()?);
        }
        self.region.filter(|r| r.offset <= offset).map(|r| r.kind)
    }
}

impl<S: PageSource + ?Sized> Iterator for Pages<'_, '_, S> {
    type Item = PagesRow;

    fn next(&mut self) -> Option<PagesRow> {
        if self.done || self.id >= self.file.meta().hwm {
            return None;
        }
        let id = self.id;
        // A page whose header is not in the file ends the table, free or
        // not (the peer reads the header first).
        let Ok(h) = self.file.page_header(id) else {
            self.done = true;
            return Some(PagesRow::BeyondEof { id });
        };
        let kind =
            id.checked_mul(u64::from(self.file.page_size())).and_then(|off| self.kind_at(off));
        // Without a stored freelist every page the tree does not reach is
        // free (bbolt rebuilds the freelist that way), including pages the
        // walk could not place because the tree is damaged, a page whose
        // header names another id (a reader rejects it, so it is never
        // reached) and a run that ends past the end of the file (nothing
        // can reach it whole): the peer's table (the oracle's `cmdPages`)
        // counts them free too.
        let ps = u64::from(self.file.page_size());
        let cut = id >= 2
            && id.saturating_add(u64::from(h.overflow) + 1).saturating_mul(ps) > self.file.len();
        let unplaced = !self.file.meta().has_freelist()
            && (cut
                || (id >= 2 && h.id != id)
                || matches!(kind, Some(Kind::Unknown | Kind::Unreachable)));
        if matches!(kind, Some(Kind::Free | Kind::Pending)) || unplaced {
            self.id += 1;
            return Some(PagesRow::Free { id });
        }
        self.id = id.saturating_add(u64::from(h.overflow) + 1);
        Some(PagesRow::Page { id, page_type: h.page_type(), items: h.count, overflow: h.overflow })
    }
}
