//! The [`Layout`] of an RRD file: every section, each archive's rows with
//! its current row, and the pages the next update will touch.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::error::Error;
use crate::layout::{Format, Group, Kind, Layout, Region};
use crate::source::PageSource;

use super::arch::{self, Arch};
use super::format::{Cf, Header, STAT_HEAD_SIZE};

/// A named section of the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The `rrd_t` member rrdtool reads it into: `stat_head`, `ds_def`,
    /// `rra_def`, `live_head`, `pdp_prep`, `cdp_prep`, `rra_ptr`.
    pub name: &'static str,
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Structures in it.
    pub count: u64,
}

/// One archive's value area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RraArea {
    /// Consolidation function.
    pub cf: Cf,
    /// First byte of row 0.
    pub offset: u64,
    /// Bytes of the area (rows × data sources × 8).
    pub len: u64,
    /// Rows.
    pub rows: u64,
    /// PDPs per row.
    pub pdp_cnt: u64,
    /// The row the last update wrote; the next writes the row after it.
    pub cur_row: u64,
}

/// An RRD file described for the page map and the web viewer.
#[derive(Debug, Clone, PartialEq)]
pub struct RrdLayout {
    /// Regions: `header` (ids 0–2: `stat_head`, `ds_def`, `rra_def`),
    /// `prep` (ids 3–6: `live_head`, `pdp_prep`, `cdp_prep`, `rra_ptr`),
    /// per archive `rows` and one `cur_row` (group = archive), `unused`
    /// for bytes past the values, `corrupt` for what cannot be read.
    pub layout: Layout,
    /// The header sections, in file order.
    pub sections: Vec<Section>,
    /// The archives.
    pub rras: Vec<RraArea>,
    /// Page-aligned byte ranges `(offset, len)` the next update touches:
    /// the header pages, and for each archive the pages of its current and
    /// next row (plus the row after for SEASONAL/DEVSEASONAL, which look
    /// it up); sorted and merged.
    pub hot: Vec<(u64, u64)>,
    /// The layout the file was written in, when its cookie was found.
    pub arch: Option<Arch>,
    /// Why the header could not be read, when it could not.
    pub fatal: Option<Error>,
}

fn region(offset: u64, len: u64, kind: Kind, id: u64, group: Option<u32>, items: u32) -> Region {
    Region {
        offset,
        len,
        kind,
        id,
        head: id,
        group,
        depth: 0,
        items,
        used: len,
        run_len: len,
    }
}

fn page_range(offset: u64, len: u64, page: u64) -> (u64, u64) {
    let page = page.max(1);
    let start = offset - offset % page;
    let end = offset
        .saturating_add(len)
        .div_ceil(page)
        .saturating_mul(page);
    (start, end - start)
}

/// The pages the next update of `h` touches (see [`RrdLayout::hot`]), for
/// OS pages of `page` bytes, clipped to `file_len`.
#[must_use]
pub fn hot_ranges(h: &Header<'_>, page: u64, file_len: u64) -> Vec<(u64, u64)> {
    let g = h.geometry();
    let mut v = alloc::vec![page_range(0, g.header_len, page)];
    for (i, r) in h.rras().iter().enumerate() {
        let cur = h.cur_row(i);
        let mut rows = alloc::vec![cur, (cur + 1) % r.rows];
        if matches!(r.cf, Cf::Seasonal | Cf::DevSeasonal) {
            rows.push((cur + 2) % r.rows);
        }
        for row in rows {
            v.push(page_range(h.row_offset(i, row), g.row_len(), page));
        }
    }
    v.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (o, l) in v {
        let end = (o + l).min(file_len.div_ceil(page.max(1)) * page.max(1));
        if end <= o {
            continue;
        }
        match merged.last_mut() {
            Some(last) if o <= last.0 + last.1 => last.1 = last.1.max(end - last.0),
            _ => merged.push((o, end - o)),
        }
    }
    merged
}

/// Label every byte of the RRD in `src`. Never fails: a file whose header
/// cannot be read is one `corrupt` region with the fault in `fatal` and in
/// the problems. `page` is the OS page size for [`RrdLayout::hot`].
#[must_use]
pub fn layout<S: PageSource + ?Sized>(src: &S, page: u64) -> RrdLayout {
    let len = src.len();
    let mut l = Layout::unknown(0);
    l.format = Format::Rrd;
    l.source_len = len;
    let mut out = RrdLayout {
        layout: l,
        sections: Vec::new(),
        rras: Vec::new(),
        hot: Vec::new(),
        arch: src
            .read_at(0, usize::try_from(STAT_HEAD_SIZE.min(len)).unwrap_or(0))
            .ok()
            .and_then(|b| arch::detect(&b)),
        fatal: None,
    };
    let h = match Header::parse_header(src) {
        Ok(h) => h,
        Err(e) => {
            if len > 0 {
                out.layout
                    .regions
                    .push(region(0, len, Kind::Corrupt, 0, None, 0));
            }
            out.layout.push_problem(e.clone());
            out.fatal = Some(e);
            return out;
        }
    };
    let g = h.geometry().clone();
    let sections = [
        ("stat_head", 0, STAT_HEAD_SIZE, 1u64, Kind::Header),
        (
            "ds_def",
            g.ds_def,
            g.rra_def - g.ds_def,
            g.ds_cnt as u64,
            Kind::Header,
        ),
        (
            "rra_def",
            g.rra_def,
            g.live_head - g.rra_def,
            g.rra_cnt as u64,
            Kind::Header,
        ),
        ("live_head", g.live_head, g.live_head_len, 1, Kind::Prep),
        (
            "pdp_prep",
            g.pdp_prep,
            g.cdp_prep - g.pdp_prep,
            g.ds_cnt as u64,
            Kind::Prep,
        ),
        (
            "cdp_prep",
            g.cdp_prep,
            g.rra_ptr - g.cdp_prep,
            (g.ds_cnt * g.rra_cnt) as u64,
            Kind::Prep,
        ),
        (
            "rra_ptr",
            g.rra_ptr,
            g.header_len - g.rra_ptr,
            g.rra_cnt as u64,
            Kind::Prep,
        ),
    ];
    for (id, (name, offset, slen, count, kind)) in sections.into_iter().enumerate() {
        out.sections.push(Section {
            name,
            offset,
            len: slen,
            count,
        });
        if slen > 0 {
            let items = u32::try_from(count).unwrap_or(u32::MAX);
            out.layout
                .regions
                .push(region(offset, slen, kind, id as u64, None, items));
        }
    }
    let row_len = g.row_len();
    let mut end = g.header_len;
    for (i, r) in h.rras().iter().enumerate() {
        let cur = h.cur_row(i);
        let area_len = r.rows * row_len;
        out.rras.push(RraArea {
            cf: r.cf,
            offset: r.start,
            len: area_len,
            rows: r.rows,
            pdp_cnt: r.pdp_cnt,
            cur_row: cur,
        });
        out.layout.groups.push(Group {
            key: r.cf.name().as_bytes().to_vec(),
            path: format!("rra[{i}] {} {}x{}", r.cf.name(), r.pdp_cnt, r.rows),
            parent: None,
            level: 0,
            root: 0,
            host: None,
            sequence: 0,
            keys: r.rows,
            buckets: 0,
            pages: 0,
            height: 0,
        });
        let group = u32::try_from(i).ok();
        let items = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let parts = [
            (0, cur, Kind::Rows),
            (cur, 1, Kind::CurRow),
            (cur + 1, r.rows - cur - 1, Kind::Rows),
        ];
        for (first, n, kind) in parts {
            let off = r.start + first * row_len;
            let blen = n * row_len;
            if blen == 0 || off >= len {
                continue;
            }
            let blen = blen.min(len - off);
            out.layout
                .regions
                .push(region(off, blen, kind, first, group, items(n)));
        }
        end = r.start + area_len;
    }
    if end > len {
        let have = out.layout.regions.last().map_or(0, Region::end);
        if have < len {
            out.layout
                .regions
                .push(region(have, len - have, Kind::Corrupt, 0, None, 0));
        }
        out.layout.push_problem(Error::OutOfBounds {
            at: crate::error::At::Rrd {
                section: crate::error::RrdSection::Values,
                index: h.rra_cnt() as u64 - 1,
            },
            field: "row_cnt",
            offset: g.header_len,
            len: g.file_len - g.header_len,
            size: len,
        });
    } else if end < len {
        out.layout
            .regions
            .push(region(end, len - end, Kind::Unused, 0, None, 0));
    }
    // Regions must be contiguous; a file cut inside the header was handled
    // above, so only a cut inside the values can leave a short last region.
    out.hot = hot_ranges(&h, page, len);
    out
}

/// A one-line description of an RRD for status bars.
#[must_use]
pub fn summary(l: &RrdLayout) -> String {
    match &l.fatal {
        Some(e) => format!("rrd: {e}"),
        None => format!("rrd: {} archives, {} hot ranges", l.rras.len(), l.hot.len()),
    }
}
