//! The update algorithm of rrdtool 1.7.2 (`rrd_update.c`), as a pure
//! computation over a [`Header`] and a [`Rows`] store.
//!
//! One argument of `rrdtool update` (`TIME:v1:v2…`) goes through
//! [`Updater::apply`]: its values become primary data points (PDPs), the
//! PDPs are consolidated into the archives (CDPs), and finished rows are
//! written. The arithmetic follows rrdtool operation by operation (same
//! order, same integer/double conversions), so the resulting file is byte
//! for byte the file rrdtool writes.
//!
//! After the last argument, [`Updater::finish`] runs the Holt-Winters
//! smoother if any argument scheduled it: at most once per call, as
//! rrdtool does.

// rrdtool's C conversions (double to unsigned long, unsigned long to int,
// …) are reproduced on purpose: they decide the bytes of the result.
#![expect(clippy::cast_possible_truncation)]

use alloc::string::String;
use alloc::vec::Vec;

use super::format::{Cf, DsType, Header, cdp, rra_par};
use super::hw::{self, BURNIN_CYCLES, Model};
use super::num::{self, DINF, DNAN, Parsed};
use super::rpn::{self, Libm};
use crate::error::Error;

/// Where the values of the archives live: a file, a mapping, a buffer.
/// Offsets are absolute file offsets; values are native doubles.
pub trait Rows {
    /// Fill `out` with the values at `offset`.
    ///
    /// # Errors
    /// When the bytes cannot be read.
    fn read(&mut self, offset: u64, out: &mut [f64]) -> crate::error::Result<()>;
    /// Store `values` at `offset`.
    ///
    /// # Errors
    /// When the bytes cannot be written.
    fn write(&mut self, offset: u64, values: &[f64]) -> crate::error::Result<()>;
}

/// A whole file held in memory as [`Rows`]: values are read and written
/// as little-endian doubles at absolute offsets of the buffer (through
/// `format::le`, so offsets past the end read as that module reads them
/// and are never written out of bounds). The value area of a file a test,
/// the fuzzer or the browser holds as bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemRows(pub alloc::vec::Vec<u8>);

impl Rows for MemRows {
    fn read(&mut self, offset: u64, out: &mut [f64]) -> crate::error::Result<()> {
        for (k, v) in (0u64..).zip(out.iter_mut()) {
            *v = super::format::le::f64_at(&self.0, offset.saturating_add(8 * k));
        }
        Ok(())
    }
    fn write(&mut self, offset: u64, values: &[f64]) -> crate::error::Result<()> {
        for (k, v) in (0u64..).zip(values) {
            super::format::le::put_f64(&mut self.0, offset.saturating_add(8 * k), *v);
        }
        Ok(())
    }
}

/// One update argument, parsed: a time and one input string per data
/// source (`U` where none was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Seconds since the epoch.
    pub time: i64,
    /// Microseconds, 0 to 999999 (0 in files before version 3).
    pub usec: i64,
    /// The input string of each data source, in file order.
    pub values: Vec<Vec<u8>>,
}

/// A value written to an archive row, for `updatev`'s report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Written {
    /// The time rrdtool labels it with (see `docs/format/rrd.md`: the
    /// labels of the second and later rows of one argument are one row
    /// step late, as in rrdtool).
    pub time: i64,
    /// The archive.
    pub rra: usize,
    /// The data source.
    pub ds: usize,
    /// The value written.
    pub value: f64,
}

/// Why an update argument was refused, in rrdtool's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateError {
    /// The argument cannot be used (rrdtool's `process_arg` returns -1).
    Input(String),
    /// The time is not after the last update (rrdtool returns -2;
    /// `--skip-past-updates` skips such arguments).
    Past(String),
    /// The rows could not be read or written.
    Rows(Error),
}

impl core::fmt::Display for UpdateError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UpdateError::Input(s) | UpdateError::Past(s) => f.write_str(s),
            UpdateError::Rows(e) => write!(f, "{e}"),
        }
    }
}

impl From<Error> for UpdateError {
    fn from(e: Error) -> Self {
        UpdateError::Rows(e)
    }
}

/// How the text of an argument maps to data sources (`tmpl_idx`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The data source each value field goes to, in field order.
    pub slots: Vec<usize>,
}

impl Template {
    /// The default: every data source but COMPUTE ones, in file order.
    #[must_use]
    pub fn default_for(h: &Header<'_>) -> Template {
        Template { slots: (0..h.ds_cnt()).filter(|&i| h.ds(i).kind != DsType::Compute).collect() }
    }

    /// `--template a:b:…` (`parse_template`); names may repeat and may
    /// name COMPUTE data sources (whose values are then ignored).
    ///
    /// # Errors
    /// rrdtool's message for an unknown name or too many names.
    pub fn parse(h: &Header<'_>, text: &str) -> Result<Template, String> {
        let mut slots = Vec::new();
        for name in text.split(':') {
            if slots.len() >= h.ds_cnt() {
                return Err(String::from("tmplt contains more DS definitions than RRD"));
            }
            match h.ds_index(name) {
                Some(i) => slots.push(i),
                None => return Err(alloc::format!("unknown DS name '{name}'")),
            }
        }
        Ok(Template { slots })
    }
}

/// The clock and the parser for `@`-style times, which the caller owns.
pub struct Clock<'a> {
    /// "now": seconds and microseconds.
    pub now: (i64, i64),
    /// Parse an at-style time (`rrd_parsetime`) into seconds; the error
    /// is the whole message rrdtool's update gives for it (rrd_update.c:
    /// `ds time: TEXT: REASON` for a time it cannot read, its own words
    /// for a time relative to start or end).
    pub at_time: &'a dyn Fn(&str) -> Result<i64, String>,
}

/// Parse one update argument (`parse_ds`, `get_time_from_reading`).
///
/// # Errors
/// [`UpdateError::Input`] for a malformed argument, [`UpdateError::Past`]
/// for a time not after the last update; rrdtool's words.
pub fn parse_sample(
    h: &Header<'_>,
    tmpl: &Template,
    arg: &str,
    clock: &Clock<'_>,
) -> Result<Sample, UpdateError> {
    let mut s = Sample { time: 0, usec: 0, values: Vec::new() };
    parse_sample_into(h, tmpl, arg, clock, &mut s)?;
    Ok(s)
}

/// Where the time of an argument ends: the `@` of at-style syntax, else
/// the first `:` (`parse_ds`); `(position, at_syntax)`.
fn time_end(input: &[u8]) -> Option<(usize, bool)> {
    match input.iter().position(|&c| c == b'@') {
        Some(p) => Some((p, true)),
        None => input.iter().position(|&c| c == b':').map(|p| (p, false)),
    }
}

/// The time of an argument (`get_time_from_reading`): `N`, a number of
/// seconds (negative: relative to now; the fraction becomes microseconds,
/// truncated), or at-style text before `@`. `(seconds, microseconds)`.
fn parse_time(
    time_text: &[u8],
    at_syntax: bool,
    clock: &Clock<'_>,
) -> Result<(i64, i64), UpdateError> {
    if at_syntax {
        let time_str = String::from_utf8_lossy(time_text);
        let t = (clock.at_time)(&time_str).map_err(UpdateError::Input)?;
        return Ok((t, 0));
    }
    if time_text == b"N" {
        return Ok(clock.now);
    }
    let tmp = match num::strtodbl(time_text) {
        Parsed::Whole(v) => v,
        _ => {
            return Err(UpdateError::Input(
                num::strtodbl_error("error while parsing time in get_time_from_reading", time_text)
                    .unwrap_or_default(),
            ));
        }
    };
    let tmp = if tmp < 0.0 {
        clock.now.0 as f64 + clock.now.1 as f64 * f64::from(1e-6f32) + tmp
    } else {
        tmp
    };
    let t = c_to_i64(num::floor(tmp));
    let u = c_to_i64((tmp - t as f64) * 1e6);
    Ok((t, u))
}

/// The time (seconds) an argument will update to, or `None` when it has
/// none that parses; for planning which pages a call touches
/// ([`super::layout::call_hot_ranges`]) before the arguments are applied.
#[must_use]
pub fn sample_time(arg: &str, clock: &Clock<'_>) -> Option<i64> {
    let input = arg.as_bytes();
    let (sep, at_syntax) = time_end(input)?;
    parse_time(input.get(..sep)?, at_syntax, clock).ok().map(|t| t.0)
}

/// [`parse_sample`] into `out`, reusing its buffers (the update loop's
/// form: no allocation once the buffers have grown).
///
/// # Errors
/// As [`parse_sample`]; `out` is then unspecified.
pub fn parse_sample_into(
    h: &Header<'_>,
    tmpl: &Template,
    arg: &str,
    clock: &Clock<'_>,
    out: &mut Sample,
) -> Result<(), UpdateError> {
    let input = arg.as_bytes();
    out.values.resize_with(h.ds_cnt(), Vec::new);
    for v in &mut out.values {
        v.clear();
        v.push(b'U');
    }
    let Some((sep, at_syntax)) = time_end(input) else {
        return Err(UpdateError::Input(alloc::format!(
            "expected timestamp not found in data source from {arg}"
        )));
    };
    let time_text = input.get(..sep).unwrap_or_default();
    let fields = input.get(sep + 1..).unwrap_or_default();
    if tmpl.slots.is_empty() {
        return Err(UpdateError::Input(String::from(
            "no data source of this RRD takes input (every one is COMPUTE)",
        )));
    }
    let tmpl_cnt = tmpl.slots.len() + 1;
    // Field k starts after the k-th colon; rrdtool cuts at each colon.
    let mut i = 1usize;
    let mut st = 0usize;
    loop {
        if i > 1 && i >= tmpl_cnt {
            let rest = String::from_utf8_lossy(fields.get(st..).unwrap_or_default()).into_owned();
            return Err(UpdateError::Input(alloc::format!(
                "found extra data on update argument: {rest}"
            )));
        }
        let rest = fields.get(st..).unwrap_or_default();
        let next = rest.iter().position(|&c| c == b':');
        let end = next.map_or(fields.len(), |p| st + p);
        if let Some(v) = tmpl.slots.get(i - 1).and_then(|&ds| out.values.get_mut(ds)) {
            v.clear();
            v.extend_from_slice(fields.get(st..end).unwrap_or_default());
        }
        i += 1;
        match next {
            Some(_) => st = end + 1,
            None => break,
        }
    }
    if i != tmpl_cnt {
        return Err(UpdateError::Input(alloc::format!(
            "expected {} data source readings (got {}) from {}",
            tmpl_cnt - 1,
            i - 1,
            String::from_utf8_lossy(time_text)
        )));
    }
    let (time, mut usec) = parse_time(time_text, at_syntax, clock)?;
    if h.version() < 3 {
        usec = 0;
    }
    let last = h.last_up();
    if time < last || (time == last && usec <= h.last_up_usec()) {
        return Err(UpdateError::Past(alloc::format!(
            "illegal attempt to update using time {time} when last update time is {last} (minimum one second step)"
        )));
    }
    out.time = time;
    out.usec = usec;
    Ok(())
}

/// `buf` taken out of its owner, `n` zeros long (its allocation reused).
fn scratch(buf: &mut Vec<f64>, n: usize) -> Vec<f64> {
    let mut v = core::mem::take(buf);
    v.clear();
    v.resize(n, 0.0);
    v
}

/// A C conversion of a double to `time_t`/`long` as x86_64 does it
/// (`cvttsd2si`): truncation, and `i64::MIN` for NaN or out of range.
fn c_to_i64(x: f64) -> i64 {
    if x.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// The update engine for one `rrdtool update` call.
pub struct Updater<'a> {
    h: &'a mut Header<'static>,
    rows: &'a mut dyn Rows,
    math: &'a dyn Libm,
    now: i64,
    schedule_smooth: bool,
    step_cnt: Vec<u64>,
    skip: Vec<bool>,
    seasonal_coef: Option<Vec<f64>>,
    last_seasonal_coef: Option<Vec<f64>>,
    /// Scratch buffers reused from argument to argument: the saved state
    /// of [`Updater::apply`], `pdp_new`, `pdp_temp`, the open-PDP share
    /// and one row of values.
    saved: Vec<u8>,
    pdp_new: Vec<f64>,
    pdp_temp: Vec<f64>,
    open_share: Vec<f64>,
    row: Vec<f64>,
    /// Every value written, when asked for (`updatev`).
    pub written: Option<Vec<Written>>,
    /// The data source `update_pdp_prep` is at; `None` once it is done.
    prep_at: Option<usize>,
}

impl<'a> Updater<'a> {
    /// An engine over `h` and its rows; `now` is the wall clock for the
    /// COMPUTE operator `NOW`.
    ///
    /// # Errors
    /// [`UpdateError::Input`] when a COMPUTE expression of the file cannot
    /// be evaluated (rrdtool would fail at every update with the same
    /// message, after changing part of the file).
    pub fn new(
        h: &'a mut Header<'static>,
        rows: &'a mut dyn Rows,
        math: &'a dyn Libm,
        now: i64,
    ) -> Result<Updater<'a>, UpdateError> {
        for d in h.dss() {
            if d.kind == DsType::Compute {
                rpn::check(&d.rpn).map_err(UpdateError::Input)?;
            }
        }
        let n = h.rra_cnt();
        Ok(Updater {
            h,
            rows,
            math,
            now,
            schedule_smooth: false,
            step_cnt: alloc::vec![0; n],
            skip: alloc::vec![false; n],
            seasonal_coef: None,
            last_seasonal_coef: None,
            saved: Vec::new(),
            pdp_new: Vec::new(),
            pdp_temp: Vec::new(),
            open_share: Vec::new(),
            row: Vec::new(),
            written: None,
            prep_at: None,
        })
    }

    /// The header as updated so far.
    #[must_use]
    pub fn header(&self) -> &Header<'static> {
        self.h
    }

    /// `true` when an argument scheduled the Holt-Winters smoother.
    #[must_use]
    pub fn smoothing_scheduled(&self) -> bool {
        self.schedule_smooth
    }

    /// Apply one argument (`process_arg`). On error the header is as it
    /// was before the argument, except where rrdtool has already changed
    /// it: a value refused by `update_pdp_prep` leaves the data sources
    /// before it with their new `last_ds` (rrdtool copies each input into
    /// `pdp_prep[ds].last_ds` as it goes, through its mapping, and stops at
    /// the refused one), so the file ends byte-identical to rrdtool's.
    ///
    /// # Errors
    /// rrdtool's refusal of a value, or a failed row read/write.
    pub fn apply(&mut self, s: &Sample) -> Result<(), UpdateError> {
        let mut saved = core::mem::take(&mut self.saved);
        self.h.state_into(&mut saved);
        let schedule = self.schedule_smooth;
        let written = self.written.as_ref().map(Vec::len);
        self.prep_at = None;
        let r = self.process(s);
        if r.is_err() {
            self.h.restore_state(&saved);
            if let Some(failed) = self.prep_at.take() {
                for ds in 0..failed {
                    let input: &[u8] = s.values.get(ds).map_or(b"U", Vec::as_slice);
                    self.h.set_last_ds(ds, input);
                }
            }
            self.schedule_smooth = schedule;
            if let (Some(w), Some(n)) = (self.written.as_mut(), written) {
                w.truncate(n);
            }
        }
        self.saved = saved;
        self.seasonal_coef = None;
        self.last_seasonal_coef = None;
        r
    }

    /// Run the smoother if scheduled (`smooth_all_rras`); call once after
    /// the last argument.
    ///
    /// # Errors
    /// A failed row read/write.
    pub fn finish(&mut self) -> Result<(), UpdateError> {
        if !self.schedule_smooth {
            return Ok(());
        }
        for rra in 0..self.h.rra_cnt() {
            if matches!(self.h.rra(rra).cf, Cf::Seasonal | Cf::DevSeasonal) {
                hw::apply_smoother(self.h, self.rows, rra)?;
            }
        }
        Ok(())
    }

    fn process(&mut self, s: &Sample) -> Result<(), UpdateError> {
        let ds_cnt = self.h.ds_cnt();
        let mut pdp_new = scratch(&mut self.pdp_new, ds_cnt);
        let mut pdp_temp = scratch(&mut self.pdp_temp, ds_cnt);
        let r = self.process_with(s, &mut pdp_new, &mut pdp_temp);
        self.pdp_new = pdp_new;
        self.pdp_temp = pdp_temp;
        r
    }

    fn process_with(
        &mut self,
        s: &Sample,
        pdp_new: &mut [f64],
        pdp_temp: &mut [f64],
    ) -> Result<(), UpdateError> {
        let ds_cnt = self.h.ds_cnt();
        let last_up = self.h.last_up();
        let last_usec = self.h.last_up_usec();
        let mut interval =
            (s.time.wrapping_sub(last_up)) as f64 + (s.usec.wrapping_sub(last_usec)) as f64 / 1e6;
        self.update_pdp_prep(&s.values, interval, pdp_new)?;
        let step = self.h.pdp_step();
        let (mut elapsed, mut pre_int, post_int, mut proc_pdp_cnt) =
            self.elapsed_steps(s.time, s.usec, interval);
        if elapsed == 0 {
            self.simple_update(interval, pdp_new);
        } else {
            if elapsed > 1 {
                let sec_open = (pre_int as u64) % step;
                if sec_open > 0 {
                    // The oldest open PDP is closed by a separate one-step
                    // update carrying its share of the input (rrdtool's
                    // "JKammler" fix of 1.7.2).
                    let mut open = scratch(&mut self.open_share, ds_cnt);
                    for (o, p) in open.iter_mut().zip(pdp_new.iter_mut()) {
                        if !p.is_nan() && interval > 0.0 {
                            *o = *p * sec_open as f64 / interval;
                            *p -= *o;
                        } else {
                            *o = DNAN;
                        }
                    }
                    let so = sec_open as f64;
                    let r = self.process_all_pdp_st(so, so, 0.0, 1, &open, pdp_temp);
                    self.open_share = open;
                    r?;
                    self.update_all_cdp_prep(1, proc_pdp_cnt, pdp_temp)?;
                    self.update_aberrant_cdps(1, pdp_temp)?;
                    self.write_to_rras(last_up.wrapping_add(sec_open as i64))?;
                    interval -= so;
                    pre_int -= so;
                    elapsed -= 1;
                    proc_pdp_cnt = proc_pdp_cnt.wrapping_add(1);
                }
            }
            self.process_all_pdp_st(interval, pre_int, post_int, elapsed, pdp_new, pdp_temp)?;
            self.update_all_cdp_prep(elapsed, proc_pdp_cnt, pdp_temp)?;
            self.update_aberrant_cdps(elapsed, pdp_temp)?;
            self.write_to_rras(s.time)?;
        }
        self.h.set_last_up(s.time, s.usec);
        Ok(())
    }

    /// `update_pdp_prep`: turn each input into `pdp_new` (rate × seconds).
    fn update_pdp_prep(
        &mut self,
        values: &[Vec<u8>],
        interval: f64,
        pdp_new: &mut [f64],
    ) -> Result<(), UpdateError> {
        for (ds, slot) in pdp_new.iter_mut().enumerate() {
            self.prep_at = Some(ds);
            let kind = self.h.ds(ds).kind;
            let hb = self.h.heartbeat(ds) as f64;
            if hb < interval {
                self.h.set_last_ds(ds, b"U");
            }
            let input: &[u8] = values.get(ds).map_or(b"U", Vec::as_slice);
            let mut new = DNAN;
            if input.first() != Some(&b'U') && kind != DsType::Compute && hb >= interval {
                let mut rate = DNAN;
                let last_known = self.h.last_ds(ds).first() != Some(&b'U');
                let whole = |what: &str, s: &[u8]| -> Result<f64, UpdateError> {
                    match num::strtodbl(s) {
                        Parsed::Whole(v) => Ok(v),
                        _ => Err(UpdateError::Input(
                            num::strtodbl_error(what, s).unwrap_or_default(),
                        )),
                    }
                };
                match kind {
                    DsType::Counter | DsType::Derive => {
                        for (k, &c) in input.iter().enumerate() {
                            if k == 0 && kind == DsType::Derive && c == b'-' {
                                continue;
                            }
                            if !c.is_ascii_digit() {
                                return Err(UpdateError::Input(alloc::format!(
                                    "not a simple {} integer: '{}'",
                                    if kind == DsType::Derive { "signed" } else { "unsigned" },
                                    String::from_utf8_lossy(input)
                                )));
                            }
                        }
                        if last_known {
                            new = num::diff(input, self.h.last_ds(ds));
                            if kind == DsType::Counter {
                                if new < 0.0 {
                                    new += 4_294_967_295.0;
                                }
                                if new < 0.0 {
                                    new += 18_446_744_069_414_584_320.0;
                                }
                            }
                            rate = new / interval;
                        }
                    }
                    DsType::Absolute => {
                        new = whole("Function update_pdp_prep, case DST_ABSOLUTE", input)?;
                        rate = new / interval;
                    }
                    DsType::Gauge => {
                        let v = whole("Function update_pdp_prep, case DST_GAUGE", input)?;
                        new = v * interval;
                        rate = v;
                    }
                    DsType::DCounter | DsType::DDerive => {
                        if last_known {
                            let what = if kind == DsType::DCounter {
                                "Function update_pdp_prep, case DST_DCOUNTER"
                            } else {
                                "Function update_pdp_prep, case DST_DDERIVE"
                            };
                            let nv = whole(what, input)?;
                            let ov = whole(what, self.h.last_ds(ds))?;
                            if kind == DsType::DCounter
                                && ((nv > 0.0 && ov > nv) || (nv < 0.0 && nv > ov))
                            {
                                new = DNAN;
                            } else {
                                new = nv - ov;
                                rate = new / interval;
                            }
                        }
                    }
                    DsType::Compute => {}
                }
                let (min, max) = (self.h.ds_min(ds), self.h.ds_max(ds));
                if !rate.is_nan()
                    && ((!max.is_nan() && rate > max) || (!min.is_nan() && rate < min))
                {
                    new = DNAN;
                }
            }
            *slot = new;
            self.h.set_last_ds(ds, input);
        }
        self.prep_at = None;
        Ok(())
    }

    /// `calculate_elapsed_steps`: PDP boundaries passed since the last
    /// update, and the parts of the interval before and after the newest.
    fn elapsed_steps(&self, time: i64, usec: i64, interval: f64) -> (u64, f64, f64, u64) {
        let step = self.h.pdp_step();
        let last_up = self.h.last_up();
        let proc_pdp_st = (last_up as u64).wrapping_sub(last_up as u64 % step);
        let occu_pdp_age = time as u64 % step;
        let occu_pdp_st = (time as u64).wrapping_sub(occu_pdp_age);
        let (pre_int, post_int) = if occu_pdp_st > proc_pdp_st {
            let pre = (occu_pdp_st as i64).wrapping_sub(last_up) as f64
                - self.h.last_up_usec() as f64 / 1e6;
            let post = occu_pdp_age as f64 + usec as f64 / 1e6;
            (pre, post)
        } else {
            (interval, 0.0)
        };
        // rrdtool returns the step count as an int.
        let elapsed = (occu_pdp_st.wrapping_sub(proc_pdp_st) / step) as i32 as i64 as u64;
        (elapsed, pre_int, post_int, proc_pdp_st / step)
    }

    /// `simple_update`: no PDP boundary was passed.
    fn simple_update(&mut self, interval: f64, pdp_new: &[f64]) {
        for (ds, &p) in pdp_new.iter().enumerate() {
            if p.is_nan() {
                let u = self.h.pdp_unknown_sec(ds);
                self.h.set_pdp_unknown_sec(ds, (u as f64 + num::floor(interval)) as u64);
            } else {
                let v = self.h.pdp_value(ds);
                self.h.set_pdp_value(ds, if v.is_nan() { p } else { v + p });
            }
        }
    }

    /// `process_all_pdp_st` / `process_pdp_st`: close the PDPs, compute
    /// their rates into `pdp_temp` (COMPUTE data sources included), and
    /// start the next PDP.
    fn process_all_pdp_st(
        &mut self,
        interval: f64,
        pre_int: f64,
        post_int: f64,
        elapsed: u64,
        pdp_new: &[f64],
        pdp_temp: &mut [f64],
    ) -> Result<(), UpdateError> {
        let step = self.h.pdp_step();
        let diff_pdp_st = elapsed.wrapping_mul(step);
        for ds in 0..self.h.ds_cnt() {
            let p = pdp_new.get(ds).copied().unwrap_or(DNAN);
            let mut pre_unknown = 0.0;
            let mut val = self.h.pdp_value(ds);
            if p.is_nan() {
                pre_unknown = pre_int;
            } else {
                if val.is_nan() {
                    val = 0.0;
                }
                val += p / interval * pre_int;
                self.h.set_pdp_value(ds, val);
            }
            let unkn = self.h.pdp_unknown_sec(ds);
            let mrhb = self.h.heartbeat(ds) as f64;
            let rate = if interval > mrhb || (step as f64 / 2.0) < f64::from(unkn as i32) {
                DNAN
            } else {
                val / (diff_pdp_st.wrapping_sub(unkn) as f64 - pre_unknown)
            };
            if let Some(t) = pdp_temp.get_mut(ds) {
                *t = rate;
            }
            if self.h.ds(ds).kind == DsType::Compute {
                let v = rpn::eval(&self.h.ds(ds).rpn, pdp_temp, self.now, self.math)
                    .map_err(UpdateError::Input)?;
                if let Some(t) = pdp_temp.get_mut(ds) {
                    *t = v;
                }
            }
            if p.is_nan() {
                self.h.set_pdp_unknown_sec(ds, num::floor(post_int) as u64);
                self.h.set_pdp_value(ds, DNAN);
            } else {
                self.h.set_pdp_unknown_sec(ds, 0);
                self.h.set_pdp_value(ds, p / interval * post_int);
            }
        }
        Ok(())
    }

    /// `lookup_seasonal`: the coefficients in row `cur_row + offset`.
    fn lookup_seasonal(&mut self, rra: usize, offset: u64) -> Result<Vec<f64>, UpdateError> {
        let rows = self.h.rra(rra).rows;
        let mut row = self.h.cur_row(rra).wrapping_add(offset);
        if row >= rows {
            row %= rows;
        }
        let mut out = alloc::vec![0.0f64; self.h.ds_cnt()];
        self.rows.read(self.h.row_offset(rra, row), &mut out)?;
        Ok(out)
    }

    /// `update_all_cdp_prep`: rows due per archive, seasonal look-ups for
    /// catch-up updates, the smoothing schedule, and consolidation.
    fn update_all_cdp_prep(
        &mut self,
        elapsed: u64,
        proc_pdp_cnt: u64,
        pdp_temp: &[f64],
    ) -> Result<(), UpdateError> {
        for rra in 0..self.h.rra_cnt() {
            let info = *self.h.rra(rra);
            let start_off = info.pdp_cnt - proc_pdp_cnt % info.pdp_cnt;
            if let Some(s) = self.skip.get_mut(rra) {
                *s = false;
            }
            let cnt = if start_off <= elapsed {
                ((elapsed - start_off) / info.pdp_cnt + 1).min(info.rows)
            } else {
                0
            };
            if let Some(c) = self.step_cnt.get_mut(rra) {
                *c = cnt;
            }
            if matches!(info.cf, Cf::Seasonal | Cf::DevSeasonal) {
                if cnt > 1 {
                    if let Some(s) = self.skip.get_mut(rra) {
                        *s = true;
                    }
                    self.last_seasonal_coef = Some(self.lookup_seasonal(rra, elapsed)?);
                    self.seasonal_coef = Some(self.lookup_seasonal(rra, elapsed.wrapping_add(1))?);
                }
                if self.schedule_smooth_due(rra, elapsed) {
                    self.schedule_smooth = true;
                }
            }
            for ds in 0..self.h.ds_cnt() {
                let p = pdp_temp.get(ds).copied().unwrap_or(DNAN);
                if info.pdp_cnt > 1 {
                    let xff = self.h.rra_par_f64(rra, rra_par::XFF);
                    self.update_cdp(
                        rra,
                        ds,
                        info.cf,
                        p,
                        cnt,
                        elapsed,
                        start_off,
                        info.pdp_cnt,
                        xff,
                    );
                } else if elapsed > 2 {
                    self.reset_cdp(rra, ds, info.cf, p, elapsed);
                }
            }
        }
        Ok(())
    }

    /// `do_schedule_smooth`; counts burn-in cycles in the first data
    /// source's `cdp_prep`.
    fn schedule_smooth_due(&mut self, rra: usize, elapsed: u64) -> bool {
        let cur = self.h.cur_row(rra);
        let rows = self.h.rra(rra).rows;
        let idx = self.h.rra_par_u64(rra, rra_par::SMOOTH_IDX);
        let init = self.h.cdp_u64(rra, 0, cdp::INIT_SEASONAL);
        let reach = cur.wrapping_add(elapsed);
        if init > BURNIN_CYCLES {
            if idx > cur {
                return reach >= idx;
            }
            return reach >= rows && reach >= rows.wrapping_add(idx);
        }
        if reach >= rows {
            let next = init.wrapping_add(1);
            self.h.set_cdp_u64(rra, 0, cdp::INIT_SEASONAL, next);
            return next != 0;
        }
        false
    }

    /// `update_cdp`: consolidate for an archive of several PDPs per row.
    #[expect(clippy::too_many_arguments)]
    fn update_cdp(
        &mut self,
        rra: usize,
        ds: usize,
        cf: Cf,
        p: f64,
        cnt: u64,
        elapsed: u64,
        start_off: u64,
        pdp_cnt: u64,
        xff: f64,
    ) {
        let h = &mut *self.h;
        if cnt > 0 {
            let mut unkn = h.cdp_u64(rra, ds, cdp::UNKN_PDP_CNT);
            if p.is_nan() {
                unkn = unkn.wrapping_add(start_off);
                h.set_cdp_u64(rra, ds, cdp::UNKN_PDP_CNT, unkn);
                h.set_cdp_f64(rra, ds, cdp::SECONDARY, DNAN);
            } else {
                h.set_cdp_f64(rra, ds, cdp::SECONDARY, p);
            }
            if unkn as f64 > pdp_cnt as f64 * xff {
                h.set_cdp_f64(rra, ds, cdp::PRIMARY, DNAN);
            } else {
                let val = h.cdp_f64(rra, ds, cdp::VAL);
                let ifnan = |x: f64, d: f64| if x.is_nan() { d } else { x };
                let primary = match cf {
                    Cf::Average => {
                        (ifnan(val, 0.0) + ifnan(p, 0.0) * start_off as f64)
                            / pdp_cnt.wrapping_sub(unkn) as f64
                    }
                    Cf::Max => {
                        let (cum, cur) = (ifnan(val, -DINF), ifnan(p, -DINF));
                        if cur > cum { cur } else { cum }
                    }
                    Cf::Min => {
                        let (cum, cur) = (ifnan(val, DINF), ifnan(p, DINF));
                        if cur < cum { cur } else { cum }
                    }
                    _ => p,
                };
                h.set_cdp_f64(rra, ds, cdp::PRIMARY, primary);
            }
            // initialize_carry_over
            let into = elapsed.wrapping_sub(start_off) % pdp_cnt;
            let carry = if into == 0 || p.is_nan() {
                match cf {
                    Cf::Max => -DINF,
                    Cf::Min => DINF,
                    Cf::Average => 0.0,
                    _ => DNAN,
                }
            } else if cf == Cf::Average {
                p * into as f64
            } else {
                p
            };
            h.set_cdp_f64(rra, ds, cdp::VAL, carry);
            h.set_cdp_u64(rra, ds, cdp::UNKN_PDP_CNT, if p.is_nan() { into } else { 0 });
        } else if p.is_nan() {
            let unkn = h.cdp_u64(rra, ds, cdp::UNKN_PDP_CNT);
            h.set_cdp_u64(rra, ds, cdp::UNKN_PDP_CNT, unkn.wrapping_add(elapsed));
        } else {
            // calculate_cdp_val
            let val = h.cdp_f64(rra, ds, cdp::VAL);
            let v = if val.is_nan() {
                if cf == Cf::Average { p * elapsed as f64 } else { p }
            } else {
                match cf {
                    Cf::Average => val + p * elapsed as f64,
                    Cf::Min => {
                        if p < val {
                            p
                        } else {
                            val
                        }
                    }
                    Cf::Max => {
                        if p > val {
                            p
                        } else {
                            val
                        }
                    }
                    _ => p,
                }
            };
            h.set_cdp_f64(rra, ds, cdp::VAL, v);
        }
    }

    /// `reset_cdp`: an archive of one PDP per row after three or more
    /// steps in one argument.
    fn reset_cdp(&mut self, rra: usize, ds: usize, cf: Cf, p: f64, elapsed: u64) {
        let nan_vec = || -> f64 { DNAN };
        match cf {
            Cf::Seasonal | Cf::DevSeasonal => {
                let last = self
                    .last_seasonal_coef
                    .as_ref()
                    .and_then(|v| v.get(ds).copied())
                    .unwrap_or_else(nan_vec);
                let cur = self
                    .seasonal_coef
                    .as_ref()
                    .and_then(|v| v.get(ds).copied())
                    .unwrap_or_else(nan_vec);
                self.h.set_cdp_f64(rra, ds, cdp::LAST_SEASONAL, last);
                self.h.set_cdp_f64(rra, ds, cdp::SEASONAL, cur);
            }
            Cf::HwPredict | Cf::MhwPredict | Cf::DevPredict => {
                if cf != Cf::DevPredict {
                    let n = self.h.cdp_u64(rra, ds, cdp::NULL_COUNT);
                    self.h.set_cdp_u64(rra, ds, cdp::NULL_COUNT, n.wrapping_add(elapsed));
                    let l = self.h.cdp_u64(rra, ds, cdp::LAST_NULL_COUNT);
                    self.h.set_cdp_u64(rra, ds, cdp::LAST_NULL_COUNT, l.wrapping_add(elapsed - 1));
                }
                self.h.set_cdp_f64(rra, ds, cdp::PRIMARY, DNAN);
                self.h.set_cdp_f64(rra, ds, cdp::SECONDARY, DNAN);
            }
            Cf::Failures => {
                self.h.set_cdp_f64(rra, ds, cdp::PRIMARY, 0.0);
                self.h.set_cdp_f64(rra, ds, cdp::SECONDARY, 0.0);
                hw::erase_violations(self.h, rra, ds);
            }
            Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                self.h.set_cdp_f64(rra, ds, cdp::PRIMARY, p);
                self.h.set_cdp_f64(rra, ds, cdp::SECONDARY, p);
            }
        }
    }

    /// `update_aberrant_cdps`: one or two steps through every archive of
    /// one PDP per row (primary, then secondary value).
    fn update_aberrant_cdps(&mut self, elapsed: u64, pdp_temp: &[f64]) -> Result<(), UpdateError> {
        if !(1..3).contains(&elapsed) {
            return Ok(());
        }
        let passes: &[(usize, u64)] = if elapsed == 2 {
            &[(cdp::PRIMARY, 3), (cdp::SECONDARY, 4)]
        } else {
            &[(cdp::PRIMARY, 2)]
        };
        for &(idx, look) in passes {
            for rra in 0..self.h.rra_cnt() {
                let info = *self.h.rra(rra);
                if info.pdp_cnt != 1 {
                    continue;
                }
                if matches!(info.cf, Cf::Seasonal | Cf::DevSeasonal) {
                    self.seasonal_coef = Some(self.lookup_seasonal(rra, look)?);
                }
                for ds in 0..self.h.ds_cnt() {
                    let p = pdp_temp.get(ds).copied().unwrap_or(DNAN);
                    self.h.set_cdp_f64(rra, ds, idx, p);
                    let next = self
                        .seasonal_coef
                        .as_ref()
                        .and_then(|v| v.get(ds).copied())
                        .unwrap_or(DNAN);
                    match info.cf {
                        Cf::HwPredict | Cf::MhwPredict => {
                            hw::update_hwpredict(self.h, rra, ds, idx, Model::of(info.cf))
                        }
                        Cf::DevPredict => hw::update_devpredict(self.h, rra, ds, idx),
                        Cf::Seasonal => hw::update_seasonal(self.h, rra, ds, idx, next),
                        Cf::DevSeasonal => hw::update_devseasonal(self.h, rra, ds, idx, next),
                        Cf::Failures => hw::update_failures(self.h, rra, ds, idx),
                        Cf::Average | Cf::Min | Cf::Max | Cf::Last => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// `write_to_rras`: advance each archive's `cur_row` once per row due
    /// and write the primary, then secondary values (SEASONAL and
    /// DEVSEASONAL rows of a catch-up are skipped, their pointer still
    /// moves).
    fn write_to_rras(&mut self, time: i64) -> Result<(), UpdateError> {
        let ds_cnt = self.h.ds_cnt();
        let step = self.h.pdp_step();
        for rra in 0..self.h.rra_cnt() {
            let info = *self.h.rra(rra);
            let mut cnt = self.step_cnt.get(rra).copied().unwrap_or(0);
            let mut idx = cdp::PRIMARY;
            let mut subtract: u64 = 1;
            while cnt > 0 {
                let mut cur = self.h.cur_row(rra).wrapping_add(1);
                if cur >= info.rows {
                    cur = 0;
                }
                self.h.set_cur_row(rra, cur);
                if !self.skip.get(rra).copied().unwrap_or(false) {
                    let step_time = info.pdp_cnt.wrapping_mul(step);
                    let t = (time as u64)
                        .wrapping_sub(time as u64 % step_time)
                        .wrapping_sub(cnt.wrapping_sub(subtract).wrapping_mul(step_time))
                        as i64;
                    let mut row = core::mem::take(&mut self.row);
                    row.clear();
                    row.extend((0..ds_cnt).map(|ds| self.h.cdp_f64(rra, ds, idx)));
                    if let Some(w) = self.written.as_mut() {
                        w.extend(row.iter().enumerate().map(|(ds, &value)| Written {
                            time: t,
                            rra,
                            ds,
                            value,
                        }));
                    }
                    let r = self.rows.write(self.h.row_offset(rra, cur), &row);
                    self.row = row;
                    r?;
                }
                cnt -= 1;
                idx = cdp::SECONDARY;
                subtract = 2;
            }
            if let Some(c) = self.step_cnt.get_mut(rra) {
                *c = 0;
            }
        }
        Ok(())
    }
}
