//! `rrdtool fetch`: which archive answers, which rows it gives, and the
//! text rrdtool prints (`rrd_fetch.c: rrd_fetch_fn`, the fetch branch of
//! `rrd_tool.c`).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::cfmt::c_e10;
use super::format::{Cf, Header, VALUE_SIZE, le};
use super::num::DNAN;
use crate::error::{At, Error, RrdSection};
use crate::source::PageSource;

/// Most rows [`values`] returns: a larger window is refused.
pub const MAX_ROWS: i64 = 1 << 26;

/// The archive and time window a fetch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The chosen archive.
    pub rra: usize,
    /// Start, rounded down to the archive's step; rows start one step
    /// later.
    pub start: i64,
    /// End, rounded up to the archive's step (past a multiple, by one
    /// step: rrdtool's `end += step - end % step`).
    pub end: i64,
    /// The archive's seconds per row.
    pub step: u64,
}

impl Plan {
    /// Rows printed: `(end - start) / step`, times `start + step` to `end`.
    #[must_use]
    pub fn rows(&self) -> u64 {
        (self.end.wrapping_sub(self.start) as u64) / self.step
    }
}

/// Choose the archive for `cf` over `[start, end]` at the wished
/// resolution `step` as rrdtool does: archives of that CF, or any
/// AVERAGE/MIN/MAX/LAST archive of one PDP per row when one of those four
/// is asked; among those covering the start, the closest step; else the
/// largest overlap, ties by step.
///
/// # Errors
/// rrdtool's message when no archive matches.
pub fn plan(h: &Header<'_>, cf: Cf, start: i64, end: i64, step: u64) -> Result<Plan, String> {
    let basic = |c: Cf| matches!(c, Cf::Average | Cf::Min | Cf::Max | Cf::Last);
    let last = h.last_up();
    let mut best_full: Option<(usize, i64)> = None;
    let mut best_part: Option<(usize, i64, i64)> = None;
    for (i, r) in h.rras().iter().enumerate() {
        if !(r.cf == cf || (r.pdp_cnt == 1 && basic(cf) && basic(r.cf))) {
            continue;
        }
        let span = r.pdp_cnt.wrapping_mul(h.pdp_step());
        let cal_end = (last as u64).wrapping_sub(last as u64 % span) as i64;
        let cal_start =
            cal_end.wrapping_sub(r.pdp_cnt.wrapping_mul(r.rows).wrapping_mul(h.pdp_step()) as i64);
        let full_match = end.wrapping_sub(start);
        let diff = (step as i64).wrapping_sub(span as i64).wrapping_abs();
        if cal_start <= start {
            if best_full.is_none_or(|(_, d)| diff < d) {
                best_full = Some((i, diff));
            }
        } else {
            let mut m = full_match;
            if cal_start > start {
                m = m.wrapping_sub(cal_start.wrapping_sub(start));
            }
            if best_part.is_none_or(|(_, bm, bd)| bm < m || (bm == m && diff < bd)) {
                best_part = Some((i, m, diff));
            }
        }
    }
    let rra = match (best_full, best_part) {
        (Some((i, _)), _) | (None, Some((i, _, _))) => i,
        (None, None) => {
            return Err(String::from("the RRD does not contain an RRA matching the chosen CF"));
        }
    };
    let step = h.pdp_step().wrapping_mul(h.rra(rra).pdp_cnt);
    let start = (start as u64).wrapping_sub(start as u64 % step) as i64;
    let end = (end as u64).wrapping_add(step - end as u64 % step) as i64;
    Ok(Plan { rra, start, end, step })
}

/// The values of a fetch, row after row, one per data source; NaN where
/// the archive has no row (`rrd_fetch_fn`'s loop).
///
/// # Errors
/// When a row cannot be read, or the window asks for more than
/// [`MAX_ROWS`] rows (rrdtool would try to allocate them all).
pub fn values<S: PageSource + ?Sized>(
    h: &Header<'_>,
    p: &Plan,
    src: &S,
) -> Result<Vec<f64>, Error> {
    let ds = h.ds_cnt();
    let r = *h.rra(p.rra);
    let Ok(step) = i64::try_from(p.step) else {
        return Ok(Vec::new());
    };
    if step == 0 {
        return Ok(Vec::new());
    }
    let last = h.last_up();
    let rows = r.rows as i64;
    let rra_end = (last as u64).wrapping_sub(last as u64 % p.step) as i64;
    let rra_start = rra_end.wrapping_sub(step.wrapping_mul(rows - 1));
    let start_offset = (p.start.wrapping_add(step).wrapping_sub(rra_start)) / step;
    let end_offset = (rra_end.wrapping_sub(p.end)) / step;
    let stop = rows.saturating_sub(end_offset);
    let count = stop.saturating_sub(start_offset);
    if count > MAX_ROWS {
        return Err(Error::Invalid {
            at: At::Rrd { section: RrdSection::Values, index: p.rra as u64 },
            field: "fetch window",
            value: count as u64,
            expected: "at most 2^26 rows",
        });
    }
    let mut pointer: i64 = 0;
    if p.start <= rra_end && p.end >= rra_start.wrapping_sub(step) {
        pointer = (h.cur_row(p.rra) as i64 + 1).wrapping_add(start_offset.max(0));
        pointer = pointer.rem_euclid(rows);
    }
    let mut out = Vec::with_capacity(usize::try_from(count.max(0)).unwrap_or(0) * ds);
    let row_len = usize::try_from(h.geometry().row_len()).unwrap_or(0);
    let mut i = start_offset;
    while i < stop {
        if i < 0 || i >= rows {
            out.extend(core::iter::repeat_n(DNAN, ds));
        } else {
            if pointer >= rows {
                pointer -= rows;
            }
            let bytes = src.read_at(h.row_offset(p.rra, pointer as u64), row_len)?;
            out.extend((0..ds).map(|k| le::f64_at(&bytes, k as u64 * VALUE_SIZE)));
            pointer += 1;
        }
        i += 1;
    }
    Ok(out)
}

/// Print a fetch as the `rrdtool fetch` command does: the data source
/// names right-aligned in 20 columns after 11 blanks, a blank line, then
/// `%10lu:` and ` %0.10e` per value for times `start + step` to `end`.
///
/// # Errors
/// When `out` refuses a write.
pub fn write_fetch(out: &mut impl Write, h: &Header<'_>, p: &Plan, values: &[f64]) -> fmt::Result {
    let names: Vec<&str> = h.dss().iter().map(|d| d.name.as_str()).collect();
    write_fetch_rows(out, &names, p.start, p.end, p.step, values)
}

/// [`write_fetch`] of any window and names (`rrd_tool.c`'s printing of
/// what `rrd_fetch` returned, from the file or from rrdcached): `values`
/// row after row, `names.len()` per row, a missing one printed as
/// rrdtool's NaN.
///
/// # Errors
/// When `out` refuses a write.
pub fn write_fetch_rows(
    out: &mut impl Write,
    names: &[&str],
    start: i64,
    end: i64,
    step: u64,
    values: &[f64],
) -> fmt::Result {
    out.write_str("           ")?;
    for d in names {
        write!(out, "{d:>20}")?;
    }
    out.write_str("\n\n")?;
    let ds = names.len().max(1);
    let mut it = values.chunks(ds);
    // The rows end where time would pass `i64::MAX` (a damaged file's
    // last update near the limit): wrapping round would never end.
    let Ok(step @ 1..) = i64::try_from(step) else {
        return Ok(());
    };
    let mut t = start.checked_add(step);
    while let Some(now) = t
        && now <= end
    {
        write!(out, "{:>10}:", now as u64)?;
        let row = it.next().unwrap_or_default();
        for k in 0..names.len() {
            write!(out, " {}", c_e10(row.get(k).copied().unwrap_or(DNAN)))?;
        }
        out.write_str("\n")?;
        t = now.checked_add(step);
    }
    Ok(())
}
