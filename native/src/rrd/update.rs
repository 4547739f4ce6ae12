//! `rrdtool update` / `updatev` on a file: the lock, the I/O mode, the
//! arguments, and the write-back of what the core engine computed.
//!
//! Arguments are applied one by one as rrdtool does; an argument that is
//! refused stops the call with the earlier arguments kept (rrdtool keeps
//! them too, having written them through its mapping), without the
//! Holt-Winters smoothing of the call. Unlike rrdtool, a refused argument
//! changes nothing at all (rrdtool may already have stored `last_ds` of
//! the data sources before the bad value).

use std::collections::BTreeMap;
use std::path::Path;

use mapwise_core::rrd::format::{Header, le};
use mapwise_core::rrd::hot_ranges;
use mapwise_core::rrd::update::{self, Clock, Rows, Template, UpdateError, Updater, Written};

use super::io::{self, Access, IoMode, RrdIo};
use super::{Error, StdMath, header_error, time};

/// The options of `rrdtool update`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateOptions {
    /// `-t/--template ds:ds…`: which data sources the values are for.
    pub template: Option<String>,
    /// `-s/--skip-past-updates`: skip arguments not after the last update.
    pub skip_past: bool,
    /// Collect every written value (`updatev`).
    pub verbose: bool,
    /// The I/O mode.
    pub io: IoMode,
}

/// What an update call did.
#[derive(Debug)]
pub struct UpdateOutcome {
    /// Values written, when [`UpdateOptions::verbose`].
    pub written: Vec<Written>,
    /// The archives' CF names and PDPs per row (for `updatev` labels) and
    /// the data source names.
    pub labels: (Vec<(String, u64)>, Vec<String>),
    /// The refusal that stopped the call after the arguments before it
    /// were applied.
    pub error: Option<Error>,
}

/// Rows read from the file and written to a buffer first, so a call
/// writes each touched value once at the end, through the I/O mode.
struct Overlay<'a> {
    io: &'a dyn RrdIo,
    pending: BTreeMap<u64, f64>,
}

impl Rows for Overlay<'_> {
    fn read(&mut self, offset: u64, out: &mut [f64]) -> mapwise_core::Result<()> {
        let bytes = self.io.read_at(offset, out.len() * 8)?;
        for (k, v) in out.iter_mut().enumerate() {
            let off = offset + 8 * k as u64;
            *v = match self.pending.get(&off) {
                Some(p) => *p,
                None => le::f64_at(&bytes, 8 * k as u64),
            };
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, values: &[f64]) -> mapwise_core::Result<()> {
        let end = offset.saturating_add(values.len() as u64 * 8);
        if end > self.io.len() {
            return Err(mapwise_core::Error::OutOfBounds {
                at: mapwise_core::At::Offset(offset),
                field: "row",
                offset,
                len: values.len() as u64 * 8,
                size: self.io.len(),
            });
        }
        for (k, v) in values.iter().enumerate() {
            self.pending.insert(offset + 8 * k as u64, *v);
        }
        Ok(())
    }
}

/// Write `pending` values in runs of adjacent offsets.
fn flush_rows(io: &mut dyn RrdIo, pending: &BTreeMap<u64, f64>) -> std::io::Result<()> {
    let mut run: Vec<u8> = Vec::new();
    let mut start = 0u64;
    for (&off, v) in pending {
        if !run.is_empty() && off != start + run.len() as u64 {
            io.write_at(start, &run)?;
            run.clear();
        }
        if run.is_empty() {
            start = off;
        }
        run.extend_from_slice(&v.to_le_bytes());
    }
    if !run.is_empty() {
        io.write_at(start, &run)?;
    }
    Ok(())
}

/// `rrdtool update FILE [-t tpl] [-s] ARG…` (and `updatev` with
/// `verbose`). `display` is the file name as given, used in messages.
///
/// # Errors
/// Opening, locking or parsing the file, or a bad template (nothing
/// changed). A refused argument is reported in [`UpdateOutcome::error`].
pub fn update(path: &Path, opts: &UpdateOptions, args: &[String]) -> Result<UpdateOutcome, Error> {
    let display = path.display().to_string();
    if args.is_empty() {
        return Err(Error::Rrdtool("Not enough arguments".into()));
    }
    let mut opened = super::open(path, Access::Write, opts.io)?;
    let src: &dyn RrdIo = &*opened.io;
    let header = Header::parse(src).map_err(|e| header_error(&display, src, e))?;
    let hot = hot_ranges(&header, io::page_size(), src.len());
    let original = header.bytes().to_vec();
    let mut h = header.into_owned();
    opened.io.advise_hot(&hot).map_err(|source| Error::Map {
        path: display.clone(),
        source,
    })?;
    let tmpl = match &opts.template {
        Some(t) => Template::parse(&h, t).map_err(Error::Rrdtool)?,
        None => Template::default_for(&h),
    };
    let labels = (
        h.rras()
            .iter()
            .map(|r| (r.cf.name().to_owned(), r.pdp_cnt))
            .collect(),
        h.dss().iter().map(|d| d.name.clone()).collect(),
    );
    let now = time::now();
    let at = |s: &str| time::at_time(s);
    let clock = Clock { now, at_time: &at };
    let mut rows = Overlay {
        io: &*opened.io,
        pending: BTreeMap::new(),
    };
    let mut failure = None;
    let mut written = Vec::new();
    {
        let mut u = Updater::new(&mut h, &mut rows, &StdMath, now.0)
            .map_err(|e| Error::Rrdtool(format!("{display}: {e}")))?;
        if opts.verbose {
            u.written = Some(Vec::new());
        }
        for arg in args {
            let r = update::parse_sample(u.header(), &tmpl, arg, &clock).and_then(|s| u.apply(&s));
            match r {
                Ok(()) => {}
                Err(UpdateError::Past(_)) if opts.skip_past => {}
                Err(e) => {
                    failure = Some(Error::Rrdtool(format!("{display}: {e}")));
                    break;
                }
            }
        }
        if failure.is_none()
            && let Err(e) = u.finish()
        {
            failure = Some(Error::Rrdtool(format!("{display}: {e}")));
        }
        if let Some(w) = u.written.take() {
            written = w;
        }
    }
    let pending = std::mem::take(&mut rows.pending);
    let io_err = |source| Error::Io {
        path: display.clone(),
        source,
    };
    flush_rows(&mut *opened.io, &pending).map_err(io_err)?;
    // Only the changed bytes of the header are written back.
    let new = h.bytes();
    let first = new.iter().zip(&original).position(|(a, b)| a != b);
    let last = new.iter().zip(&original).rposition(|(a, b)| a != b);
    if let (Some(a), Some(b)) = (first, last) {
        opened
            .io
            .write_at(a as u64, new.get(a..=b).unwrap_or_default())
            .map_err(io_err)?;
    }
    drop(opened);
    Ok(UpdateOutcome {
        written,
        labels,
        error: failure,
    })
}

/// The `updatev` text: `return_value = 0|-1`, then each written value as
/// `[T]RRA[CF][PDPs]DS[name] = %0.10e` (`NaN` for NaN).
#[must_use]
pub fn updatev_text(o: &UpdateOutcome) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "return_value = {}",
        if o.error.is_some() { -1 } else { 0 }
    );
    for w in &o.written {
        let (cf, pdp) = o.labels.0.get(w.rra).cloned().unwrap_or_default();
        let ds = o.labels.1.get(w.ds).cloned().unwrap_or_default();
        let v = if w.value.is_nan() {
            "NaN".to_owned()
        } else {
            mapwise_core::rrd::cfmt::c_e10(w.value)
        };
        let _ = writeln!(s, "[{}]RRA[{cf}][{pdp}]DS[{ds}] = {v}", w.time);
    }
    s
}
