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
    Region { group, items, used: len, run_len: len, ..Region::of(offset, len, kind, id) }
}

fn page_range(offset: u64, len: u64, page: u64) -> (u64, u64) {
    let page = page.max(1);
    let start = offset - offset % page;
    let end = offset.saturating_add(len).div_ceil(page).saturating_mul(page);
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
    merge_pages(&mut v, page, file_len);
    v
}

/// Sort `v` (byte ranges `(offset, len)`), round each out to whole pages
/// of `page` bytes, clip them to the pages of a `file_len`-byte file, and
/// merge the ones that overlap or touch.
fn merge_pages(v: &mut Vec<(u64, u64)>, page: u64, file_len: u64) {
    let page = page.max(1);
    let limit = file_len.div_ceil(page).saturating_mul(page);
    for r in v.iter_mut() {
        *r = page_range(r.0, r.1, page);
    }
    v.sort_unstable();
    let mut out = 0usize;
    for k in 0..v.len() {
        let Some(&(o, l)) = v.get(k) else { break };
        let end = o.saturating_add(l).min(limit);
        if end <= o {
            continue;
        }
        match out.checked_sub(1).and_then(|j| v.get_mut(j)) {
            Some(last) if o <= last.0 + last.1 => last.1 = last.1.max(end - last.0),
            _ => {
                if let Some(slot) = v.get_mut(out) {
                    *slot = (o, end - o);
                }
                out += 1;
            }
        }
    }
    v.truncate(out);
}

/// Rows archive `i` of `h` writes when the file is updated from its
/// `last_up` to `until` (seconds) in one or more arguments: the CDP
/// boundaries of the archive passed on the way (`rrd_update.c:
/// update_all_cdp_prep`: `start_pdp_offset` and `rra_step_cnt`; summed
/// over the arguments this telescopes to `until/(step·pdp_cnt) −
/// last_up/(step·pdp_cnt)` whole rows), at most `row_cnt`.
#[must_use]
pub fn rows_due(h: &Header<'_>, i: usize, until: i64) -> u64 {
    let r = h.rra(i);
    let step = h.pdp_step().max(1);
    // rrdtool computes these in unsigned long.
    let proc_pdp = h.last_up() as u64 / step;
    let occu_pdp = until as u64 / step;
    let p = r.pdp_cnt.max(1);
    (occu_pdp / p).saturating_sub(proc_pdp / p).min(r.rows)
}

/// The pages one update call will touch, as merged, page-aligned byte
/// ranges `(offset, len)` in `out` (cleared first; its allocation is
/// reused), for OS pages of `page` bytes in a `file_len`-byte file:
///
/// * with `header`, the header pages (`stat_head` to `rra_ptr`; the call
///   rewrites `live_head`, `pdp_prep`, `cdp_prep` and `rra_ptr`). A call
///   that has just parsed the header leaves them out: it has read them;
/// * per archive, the rows the call writes ([`rows_due`] rows from
///   `cur_row + 1`, wrapping), plus for SEASONAL/DEVSEASONAL the row
///   after them, which `rrd_update.c: lookup_seasonal` reads.
///
/// `until` is the time of the call's last argument; `None` (a time that
/// cannot be known before the update runs) plans the next row of every
/// archive instead. An archive that writes no row is left out, so a cold
/// call pulls in the pages rrdtool's update faults in and no others.
pub fn call_hot_ranges(
    h: &Header<'_>,
    until: Option<i64>,
    header: bool,
    page: u64,
    file_len: u64,
    out: &mut Vec<(u64, u64)>,
) {
    out.clear();
    let g = h.geometry();
    if header {
        out.push((0, g.header_len));
    }
    for (i, r) in h.rras().iter().enumerate() {
        let mut n = match until {
            Some(t) => rows_due(h, i, t),
            None => 1,
        };
        if n == 0 {
            continue;
        }
        if matches!(r.cf, Cf::Seasonal | Cf::DevSeasonal) {
            n += 1;
        }
        let n = n.min(r.rows);
        let first = (h.cur_row(i) + 1) % r.rows;
        let in_place = n.min(r.rows - first);
        out.push((h.row_offset(i, first), in_place * g.row_len()));
        if n > in_place {
            out.push((h.row_offset(i, 0), (n - in_place) * g.row_len()));
        }
    }
    merge_pages(out, page, file_len);
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
                out.layout.regions.push(region(0, len, Kind::Corrupt, 0, None, 0));
            }
            out.layout.push_problem(e.clone());
            out.fatal = Some(e);
            return out;
        }
    };
    let g = h.geometry().clone();
    let sections = [
        ("stat_head", 0, STAT_HEAD_SIZE, 1u64, Kind::Header),
        ("ds_def", g.ds_def, g.rra_def - g.ds_def, g.ds_cnt as u64, Kind::Header),
        ("rra_def", g.rra_def, g.live_head - g.rra_def, g.rra_cnt as u64, Kind::Header),
        ("live_head", g.live_head, g.live_head_len, 1, Kind::Prep),
        ("pdp_prep", g.pdp_prep, g.cdp_prep - g.pdp_prep, g.ds_cnt as u64, Kind::Prep),
        ("cdp_prep", g.cdp_prep, g.rra_ptr - g.cdp_prep, (g.ds_cnt * g.rra_cnt) as u64, Kind::Prep),
        ("rra_ptr", g.rra_ptr, g.header_len - g.rra_ptr, g.rra_cnt as u64, Kind::Prep),
    ];
    for (id, (name, offset, slen, count, kind)) in sections.into_iter().enumerate() {
        out.sections.push(Section { name, offset, len: slen, count });
        if slen > 0 {
            let items = u32::try_from(count).unwrap_or(u32::MAX);
            out.layout.regions.push(region(offset, slen, kind, id as u64, None, items));
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
        let parts =
            [(0, cur, Kind::Rows), (cur, 1, Kind::CurRow), (cur + 1, r.rows - cur - 1, Kind::Rows)];
        for (first, n, kind) in parts {
            let off = r.start + first * row_len;
            let blen = n * row_len;
            if blen == 0 || off >= len {
                continue;
            }
            let blen = blen.min(len - off);
            out.layout.regions.push(region(off, blen, kind, first, group, items(n)));
        }
        end = r.start + area_len;
    }
    if end > len {
        let have = out.layout.regions.last().map_or(0, |r| r.end());
        if have < len {
            out.layout.regions.push(region(have, len - have, Kind::Corrupt, 0, None, 0));
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
        out.layout.regions.push(region(end, len - end, Kind::Unused, 0, None, 0));
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
