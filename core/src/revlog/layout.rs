//! The [`Layout`] of a revlog index file: one region per entry and, in an
//! inline revlog, one per data chunk; plus every problem found.
//!
//! The walk never fails: a damaged file gives a layout whose unreadable
//! tail is one `corrupt` region, with the fault in `problems`.

use alloc::vec::Vec;

use crate::error::{At, Error};
use crate::layout::{Format, Kind, Layout, Region};
use crate::source::PageSource;

use super::index::{
    Entry, Header, Index, NULL_REV, REVIDX_KNOWN_FLAGS, Rev, StoredParents, V1_ENTRY_SIZE, Version,
    fixed_count, read_header, scan_inline,
};

/// What the walk knows beyond the index file itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayoutOptions {
    /// Length in bytes of the data (`.d`) file beside a non-inline index,
    /// when known: chunks past its end are reported.
    pub data_len: Option<u64>,
}

/// A revlog index described as regions, with the facts the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevlogLayout {
    /// Regions: `entry` (id = rev), `chunk` (inline data, id = rev),
    /// `corrupt` for bytes past a fault.
    pub layout: Layout,
    /// The version header, when it could be read and is supported.
    pub header: Option<Header>,
    /// Entries read (whole and inside the file).
    pub revisions: u64,
    /// Sum of the entries' stored chunk lengths, bytes.
    pub data_bytes: u64,
    /// Why nothing past the header could be read (bad or unsupported
    /// header), when so. Also in `layout.problems`.
    pub fatal: Option<Error>,
}

fn region(offset: u64, len: u64, kind: Kind, rev: u64, items: u32) -> Region {
    Region { items, used: len, run_len: len, ..Region::of(offset, len, kind, rev) }
}

/// Problems with the fields of one readable entry that hg's readers do
/// not stop at but that no consistent revlog has.
fn entry_problems<S: PageSource + ?Sized>(
    index: Option<&Index<'_, S>>,
    e: &Entry<'_>,
    out: &mut Layout,
) {
    let rev: Rev = e.rev();
    let at =
        At::Revision { rev: u64::try_from(rev).unwrap_or(0), offset: e.position().unwrap_or(0) };
    if e.flags() & !REVIDX_KNOWN_FLAGS != 0 {
        out.push_problem(Error::Invalid {
            at,
            field: "flags",
            value: u64::from(e.flags()),
            expected: "only the known revision flags (bits 12 to 15)",
        });
    }
    let base = e.base_rev();
    if base < NULL_REV || base > rev {
        out.push_problem(Error::Invalid {
            at,
            field: "data_delta_base",
            value: u64::from(base as u32),
            expected: "-1 or a revision up to this one",
        });
    }
    let parents = match e.stored_parents() {
        StoredParents::Revs(p1, p2) => Some((p1, p2)),
        StoredParents::Nodes(..) => index.map(|i| i.parent_revs(e)),
    };
    if let Some((p1, p2)) = parents {
        for (field, p) in [("parent_rev_1", p1), ("parent_rev_2", p2)] {
            if p < NULL_REV || p >= rev {
                out.push_problem(Error::Invalid {
                    at,
                    field,
                    value: u64::from(p as u32),
                    expected: "-1 (none) or an earlier revision",
                });
            }
        }
    }
}

/// Label every byte of the index in `src`.
#[must_use]
pub fn layout<S: PageSource + ?Sized>(src: &S, opts: LayoutOptions) -> RevlogLayout {
    let len = src.len();
    let mut out = RevlogLayout {
        layout: Layout::unknown(0),
        header: None,
        revisions: 0,
        data_bytes: 0,
        fatal: None,
    };
    out.layout.format = Format::Revlog;
    out.layout.source_len = len;
    if len == 0 {
        out.header = Some(Header::DEFAULT);
        return out;
    }
    let mut regions: Vec<Region> = Vec::new();
    let header = match read_header(src) {
        Ok(h) => h,
        Err(e) => {
            regions.push(region(0, len, Kind::Corrupt, 0, 0));
            out.layout.regions = regions.into();
            out.layout.push_problem(e.clone());
            out.fatal = Some(e);
            return out;
        }
    };
    out.header = Some(header);
    // The index is opened again for parent checks only when it opens
    // whole; a damaged file is still labelled entry by entry below.
    let index = Index::open(src).ok();
    let es = header.version.entry_size() as u64;
    if header.is_inline() {
        let mut expected_offset = 0u64;
        let mut end = 0u64;
        let scanned = scan_inline(src, |rev, pos, comp| {
            let comp = u64::from(comp);
            regions.push(region(pos, es, Kind::Entry, u64::from(rev), 1));
            if comp > 0 {
                regions.push(region(pos + es, comp, Kind::Chunk, u64::from(rev), 0));
            }
            end = pos + es + comp;
        });
        // Field checks need the entries decoded: a second pass over what
        // the scan accepted (at most the regions just built).
        let entries: Vec<(u64, u64)> =
            regions.iter().filter(|r| r.kind == Kind::Entry).map(|r| (r.id, r.offset)).collect();
        for (rev, pos) in entries {
            let rev = Rev::try_from(rev).unwrap_or(Rev::MAX);
            let e = src
                .read_at(pos, V1_ENTRY_SIZE)
                .and_then(|b| Entry::decode(rev, pos, Version::V1, b));
            match e {
                Ok(e) => {
                    if e.data_offset() != expected_offset {
                        out.layout.push_problem(Error::Invalid {
                            at: At::Revision { rev: u64::try_from(rev).unwrap_or(0), offset: pos },
                            field: "data_offset",
                            value: e.data_offset(),
                            expected: "the sum of the earlier chunk lengths (inline revlog)",
                        });
                    }
                    expected_offset = expected_offset.saturating_add(u64::from(e.compressed_len()));
                    entry_problems(index.as_ref(), &e, &mut out.layout);
                    out.revisions += 1;
                    out.data_bytes += u64::from(e.compressed_len());
                }
                Err(err) => out.layout.push_problem(err),
            }
        }
        if let Err(err) = scanned {
            if end < len {
                regions.push(region(end, len - end, Kind::Corrupt, out.revisions, 0));
            }
            out.layout.push_problem(err);
        }
    } else {
        let (whole, fault) = match fixed_count(len, header.version) {
            Ok(n) => (u64::from(n), None),
            Err(e) => (len / es, Some(e)),
        };
        for i in 0..whole {
            let pos = i * es;
            let rev = Rev::try_from(i).unwrap_or(Rev::MAX);
            let e = src
                .read_at(pos, header.version.entry_size())
                .and_then(|b| Entry::decode(rev, pos, header.version, b));
            match e {
                Ok(e) => {
                    regions.push(region(pos, es, Kind::Entry, i, 1));
                    entry_problems(index.as_ref(), &e, &mut out.layout);
                    if let Some(data_len) = opts.data_len {
                        let (off, n) = (e.data_offset(), u64::from(e.compressed_len()));
                        if off.checked_add(n).is_none_or(|end| end > data_len) {
                            out.layout.push_problem(Error::OutOfBounds {
                                at: At::Revision { rev: i, offset: pos },
                                field: "data_offset",
                                offset: off,
                                len: n,
                                size: data_len,
                            });
                        }
                    }
                    out.revisions += 1;
                    out.data_bytes += u64::from(e.compressed_len());
                }
                Err(err) => {
                    regions.push(region(pos, es, Kind::Corrupt, i, 0));
                    out.layout.push_problem(err);
                }
            }
        }
        if let Some(err) = fault {
            let pos = whole * es;
            regions.push(region(pos, len - pos, Kind::Corrupt, whole, 0));
            out.layout.push_problem(err);
        } else if whole * es < len {
            // v0's partial last entry, which hg ignores: unused bytes, and
            // a warning naming them.
            let pos = whole * es;
            regions.push(region(pos, len - pos, Kind::Unused, whole, 0));
            out.layout.push_warning(Error::OutOfBounds {
                at: At::Offset(pos),
                field: "entry",
                offset: pos,
                len: es,
                size: len,
            });
        }
    }
    out.layout.regions = regions.into();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::revlog::index::tests::v1_entry;
    use alloc::vec;

    fn covers(l: &Layout) {
        let mut at = 0;
        for r in &l.regions {
            assert_eq!(r.offset, at, "regions are contiguous");
            assert!(r.len > 0);
            at = r.end();
        }
        assert_eq!(at, l.source_len, "regions cover the file");
    }

    #[test]
    fn inline_entries_and_chunks() {
        let mut data = v1_entry(0, 0, 3, 3, 0, 0, -1, -1, 1);
        data[..4].copy_from_slice(&0x0001_0001u32.to_be_bytes());
        data.extend_from_slice(b"uab");
        data.extend(v1_entry(3, 0, 0, 0, 1, 1, 0, -1, 2));
        data.extend(v1_entry(3, 0, 2, 2, 2, 2, 1, -1, 3));
        data.extend_from_slice(b"ux");
        let l = layout(&data[..], LayoutOptions::default());
        covers(&l.layout);
        let kinds: Vec<_> = l.layout.regions.iter().map(|r| (r.kind, r.id)).collect();
        assert_eq!(
            kinds,
            vec![
                (Kind::Entry, 0),
                (Kind::Chunk, 0),
                (Kind::Entry, 1),
                (Kind::Entry, 2),
                (Kind::Chunk, 2)
            ]
        );
        assert!(l.layout.problems.is_empty(), "{:?}", l.layout.problems);
        assert_eq!((l.revisions, l.data_bytes), (3, 5));

        // Cut inside the last chunk: entry kept, the rest corrupt.
        let cut = &data[..data.len() - 1];
        let l = layout(cut, LayoutOptions::default());
        covers(&l.layout);
        assert_eq!(l.layout.regions.last().map(|r| r.kind), Some(Kind::Corrupt));
        assert_eq!(l.layout.problems.len(), 1);
    }

    #[test]
    fn non_inline_faults_are_problems() {
        let mut data = v1_entry(0, 0, 4, 4, 0, 0, -1, -1, 1);
        data[..4].copy_from_slice(&1u32.to_be_bytes());
        data.extend(v1_entry(4, 0x0001, 4, 4, 5, 1, 3, -1, 2));
        data.extend_from_slice(&[0; 10]);
        let l = layout(&data[..], LayoutOptions { data_len: Some(6) });
        covers(&l.layout);
        // flags, base, parent, data past the .d file, truncated tail.
        let fields: Vec<_> = l
            .layout
            .problems
            .iter()
            .map(|p| match p {
                Error::Invalid { field, .. } | Error::OutOfBounds { field, .. } => *field,
                _ => "?",
            })
            .collect();
        assert_eq!(
            fields,
            vec!["flags", "data_delta_base", "parent_rev_1", "data_offset", "entry"]
        );
    }

    #[test]
    fn unsupported_header_is_one_corrupt_region() {
        let data = [0u8, 0, 0xde, 0xad, 1, 2, 3];
        let l = layout(&data[..], LayoutOptions::default());
        covers(&l.layout);
        assert!(matches!(l.fatal, Some(Error::Unsupported { .. })));
        assert_eq!(l.layout.regions.get(0).map(|r| r.kind), Some(Kind::Corrupt));
    }
}
