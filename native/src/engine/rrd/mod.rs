//! The RRDtool engine: `create`, `update`/`updatev`, `fetch`, `dump`,
//! `info`, `last`, `first`, `lastupdate` on real files, with rrdtool
//! 1.7.2's results byte for byte and its error wording.
//!
//! The computations live in [`mapwise_core::rrd`]; this module adds files,
//! the lock, the clock, local time, the C math library and the four I/O
//! modes ([`io::IoMode`]).

pub mod cached;
pub mod create;
pub mod io;
pub mod time;
pub mod update;

use std::fmt;
use std::path::Path;

use mapwise_core::error::RrdSection;
use mapwise_core::rrd::dump::{self, DumpHeader, PrintError};
use mapwise_core::rrd::fetch::{self, Plan};
use mapwise_core::rrd::info::{self, InfoValue};
use mapwise_core::rrd::{Arch, Cf, Header, num};
use mapwise_core::{At, PageSource};
use thiserror::Error;

pub use create::{CreateOptions, create};
pub use io::{Access, IoMode};
pub use update::{Rrd, UpdateOptions, UpdateOutcome, update};

/// What went wrong, worded as rrdtool words it where rrdtool has a word
/// for it (scripts match on these), so `ERROR: {error}` is rrdtool's line.
#[derive(Debug, Error)]
pub enum Error {
    /// `open(2)` failed.
    #[error("opening '{path}': {}", strerror(source))]
    Open {
        /// The path as given.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Another process holds the file's lock: rrdtool's exact words
    /// "could not lock RRD" (`rrd_open.c`; the lock is never waited for).
    #[error("could not lock RRD")]
    Locked {
        /// The path as given.
        path: String,
    },
    /// The file could not be mapped (or opened with `O_DIRECT`).
    #[error("mmaping file '{path}': {}", strerror(source))]
    Map {
        /// The path as given.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A read, write or `fstat` failed.
    #[error("'{path}': {}", strerror(source))]
    Io {
        /// The path as given.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The `RRD\0` cookie is missing.
    #[error("'{path}' is not an RRD file")]
    NotRrd {
        /// The path as given.
        path: String,
    },
    /// The float cookie is not this machine's (rrdtool's words, then the
    /// layout mapwise recognised).
    #[error("This RRD was created on another architecture ({}); run `rrdtool dump` there and `rrdtool restore` here", arch.map_or("a float cookie of no known layout: a damaged file?", Arch::description))]
    ForeignArch {
        /// The path as given.
        path: String,
        /// The layout found, if any.
        arch: Option<Arch>,
    },
    /// A newer file version.
    #[error("can't handle RRD file version {version}")]
    Version {
        /// The version field as stored.
        version: String,
    },
    /// The file ends inside the header.
    #[error("reached EOF while loading header rrd->{section}")]
    Eof {
        /// The section that does not fit.
        section: &'static str,
    },
    /// The file ends inside the values.
    #[error("'{path}' is too small (should be {should} bytes)")]
    TooSmall {
        /// The path as given.
        path: String,
        /// The size a whole file has.
        should: u64,
    },
    /// A field rrdtool would trust and mapwise refuses (see
    /// `docs/format/rrd.md`, "what the parser rejects").
    #[error("'{path}': {source}")]
    Format {
        /// The path as given.
        path: String,
        /// The fault.
        source: mapwise_core::Error,
    },
    /// An argument or an update refused, in rrdtool's words.
    #[error("{0}")]
    Rrdtool(String),
    /// The output sink refused a write.
    #[error("error writing output")]
    Output,
}

/// `strerror` text of an I/O error (without Rust's "(os error N)").
pub(crate) fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s.get(..i).unwrap_or(&s).to_owned(),
        None => s,
    }
}

/// The rrdtool message for a header the core parser refused.
fn header_error(path: &str, src: &dyn PageSource, e: mapwise_core::Error) -> Error {
    use mapwise_core::Error as E;
    match e {
        E::OutOfBounds { at: At::Rrd { section: RrdSection::Values, .. }, offset, len, .. } => {
            Error::TooSmall { path: path.into(), should: offset.saturating_add(len) }
        }
        E::OutOfBounds { at: At::Rrd { section, .. }, .. } => {
            Error::Eof { section: section.name() }
        }
        E::Invalid { field: "cookie", .. } => Error::NotRrd { path: path.into() },
        E::Unsupported { at: At::Rrd { .. }, .. } | E::Invalid { field: "float_cookie", .. } => {
            Error::ForeignArch { path: path.into(), arch: mapwise_core::rrd::foreign_arch(&src) }
        }
        E::Invalid { field: "version", .. } => Error::Version {
            version: src
                .read_at(4, 5)
                .map(|b| {
                    String::from_utf8_lossy(mapwise_core::rrd::format::le::cstr(&b)).into_owned()
                })
                .unwrap_or_default(),
        },
        other => Error::Format { path: path.into(), source: other },
    }
}

/// Open `path` for `access` and parse its header; the open file and a
/// function over its header.
fn with_header<T>(
    path: &Path,
    mode: IoMode,
    access: Access,
    f: impl FnOnce(&Header<'_>, &dyn io::RrdIo) -> Result<T, Error>,
) -> Result<T, Error> {
    let name = path.display().to_string();
    let mut opened = open(path, access, mode)?;
    // rrdtool marks the header page WILLNEED before reading it.
    let _ = opened.io.advise_hot(&[(0, io::page_size())]);
    let src: &dyn io::RrdIo = &*opened.io;
    let h = Header::parse(src).map_err(|e| header_error(&name, src, e))?;
    f(&h, src)
}

/// Open with the lock, mapping `OpenError` to rrdtool's words.
pub(crate) fn open(path: &Path, access: Access, mode: IoMode) -> Result<io::Opened, Error> {
    let name = path.display().to_string();
    io::open(path, access, mode).map_err(|e| match e {
        io::OpenError::Open(source) => Error::Open { path: name, source },
        io::OpenError::Locked => Error::Locked { path: name },
        io::OpenError::Map(source) => Error::Map { path: name, source },
        io::OpenError::Other(source) => Error::Io { path: name, source },
    })
}

/// `rrdtool dump`: the XML of `path` into `out`.
///
/// # Errors
/// Opening, parsing or reading the file; [`Error::Output`] when `out`
/// refuses.
pub fn dump_to(
    path: &Path,
    mode: IoMode,
    header: DumpHeader,
    out: &mut impl fmt::Write,
) -> Result<(), Error> {
    let name = path.display().to_string();
    with_header(path, mode, Access::ReadAll, |h, src| {
        dump::write_dump(out, h, src, header, &time::local_string).map_err(|e| match e {
            PrintError::Write => Error::Output,
            PrintError::Format(e) => Error::Format { path: name.clone(), source: e },
        })
    })
}

/// `rrdtool info`: the `(key, value)` pairs; `filename` is printed as
/// given.
///
/// # Errors
/// Opening or parsing the file.
pub fn info(path: &Path, mode: IoMode, filename: &str) -> Result<Vec<(String, InfoValue)>, Error> {
    with_header(path, mode, Access::Read, |h, _| Ok(info::info(h, filename)))
}

/// The data source names of `path`, in file order (`rrd_update.c:
/// rrd_get_file_template`, which `update --template` through rrdcached
/// reads with a read lock to map the template's values).
///
/// # Errors
/// Opening or parsing the file.
pub fn ds_names(path: &Path, mode: IoMode) -> Result<Vec<String>, Error> {
    with_header(path, mode, Access::Read, |h, _| {
        Ok(h.dss().iter().map(|d| d.name.clone()).collect())
    })
}

/// `rrdtool last`: the time of the last update.
///
/// # Errors
/// Opening or parsing the file.
pub fn last(path: &Path, mode: IoMode) -> Result<i64, Error> {
    with_header(path, mode, Access::Read, |h, _| Ok(h.last_up()))
}

/// `rrdtool first --rraindex N`: the time of the oldest row of RRA `rra`.
///
/// # Errors
/// Opening or parsing the file; "invalid rraindex number".
pub fn first(path: &Path, mode: IoMode, rra: i64) -> Result<i64, Error> {
    with_header(path, mode, Access::Read, |h, _| {
        usize::try_from(rra)
            .ok()
            .and_then(|i| info::first(h, i))
            .ok_or_else(|| Error::Rrdtool("invalid rraindex number".into()))
    })
}

/// What `rrdtool lastupdate` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastUpdate {
    /// Time of the last update.
    pub time: i64,
    /// Each data source's name and last input string.
    pub ds: Vec<(String, String)>,
    /// The text rrdtool prints.
    pub text: String,
}

/// `rrdtool lastupdate`.
///
/// # Errors
/// Opening or parsing the file.
pub fn lastupdate(path: &Path, mode: IoMode) -> Result<LastUpdate, Error> {
    with_header(path, mode, Access::Read, |h, _| {
        let mut text = String::new();
        info::write_lastupdate(&mut text, h).map_err(|_| Error::Output)?;
        Ok(LastUpdate {
            time: h.last_up(),
            ds: h
                .dss()
                .iter()
                .enumerate()
                .map(|(i, d)| (d.name.clone(), String::from_utf8_lossy(h.last_ds(i)).into_owned()))
                .collect(),
            text,
        })
    })
}

/// The options of `rrdtool fetch FILE CF`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchOptions {
    /// `-s/--start` (default `end-24h`).
    pub start: Option<String>,
    /// `-e/--end` (default `now`).
    pub end: Option<String>,
    /// `-r/--resolution` (default 1 second: the finest archive).
    pub resolution: Option<String>,
    /// `-a/--align-start`.
    pub align_start: bool,
    /// The I/O mode.
    pub io: IoMode,
}

/// A fetch result.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// Data source names.
    pub names: Vec<String>,
    /// Archive and window.
    pub plan: Plan,
    /// Values, row after row.
    pub values: Vec<f64>,
    /// The text rrdtool prints.
    pub text: String,
}

/// The window of `rrdtool fetch` (`rrd_fetch`'s checks of its options,
/// in its order): start and end after `-s`, `-e`, `-r` and `-a`, before
/// the file or a daemon is asked.
///
/// # Errors
/// rrdtool's message for a bad time or resolution, a start before 1980,
/// or an end before the start.
pub fn fetch_window(o: &FetchOptions) -> Result<(i64, i64), Error> {
    Ok(fetch_window_step(o)?.0)
}

fn fetch_window_step(o: &FetchOptions) -> Result<((i64, i64), u64), Error> {
    let rr = |s: String| Error::Rrdtool(s);
    let start_tv = time::parse(o.start.as_deref().unwrap_or("end-24h"))
        .map_err(|e| rr(format!("start time: {e}")))?;
    let end_tv =
        time::parse(o.end.as_deref().unwrap_or("now")).map_err(|e| rr(format!("end time: {e}")))?;
    let step = match &o.resolution {
        Some(r) => num::scaled_duration(r, 1).map_err(|e| rr(format!("resolution: {e}")))?,
        None => 1,
    };
    let (mut start, mut end) = time::start_end(&start_tv, &end_tv).map_err(rr)?;
    if start < 3600 * 24 * 365 * 10 {
        return Err(rr("the first entry to fetch should be after 1980".into()));
    }
    if o.align_start {
        let delta = (start as u64 % step) as i64;
        start -= delta;
        end -= delta;
    }
    if end < start {
        return Err(rr(format!("start ({start}) should be less than end ({end})")));
    }
    Ok(((start, end), step))
}

/// `rrdtool fetch FILE CF [-s] [-e] [-r] [-a]`, with rrdtool's checks in
/// its order.
///
/// # Errors
/// rrdtool's message for a bad time, CF or window; opening or reading the
/// file.
pub fn fetch(path: &Path, cf: &str, o: &FetchOptions) -> Result<Fetched, Error> {
    let rr = |s: String| Error::Rrdtool(s);
    let ((start, end), step) = fetch_window_step(o)?;
    let cf = Cf::from_name(cf.as_bytes())
        .ok_or_else(|| rr(format!("unknown consolidation function '{cf}'")))?;
    let name = path.display().to_string();
    with_header(path, o.io, Access::Read, |h, src| {
        let plan = fetch::plan(h, cf, start, end, step).map_err(rr)?;
        let values = fetch::values(h, &plan, src)
            .map_err(|e| Error::Format { path: name.clone(), source: e })?;
        let mut text = String::new();
        fetch::write_fetch(&mut text, h, &plan, &values).map_err(|_| Error::Output)?;
        Ok(Fetched { names: h.dss().iter().map(|d| d.name.clone()).collect(), plan, values, text })
    })
}

/// The C library's math functions, which rrdtool links: COMPUTE results
/// match rrdtool's bit for bit.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdMath;

impl mapwise_core::rrd::rpn::Libm for StdMath {
    fn sin(&self, x: f64) -> f64 {
        x.sin()
    }
    fn cos(&self, x: f64) -> f64 {
        x.cos()
    }
    fn log(&self, x: f64) -> f64 {
        x.ln()
    }
    fn exp(&self, x: f64) -> f64 {
        x.exp()
    }
    fn atan(&self, x: f64) -> f64 {
        x.atan()
    }
    fn atan2(&self, y: f64, x: f64) -> f64 {
        y.atan2(x)
    }
    fn sqrt(&self, x: f64) -> f64 {
        x.sqrt()
    }
    fn pow(&self, x: f64, y: f64) -> f64 {
        x.powf(y)
    }
}
