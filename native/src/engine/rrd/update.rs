//! `rrdtool update` / `updatev` on a file: the lock, the I/O mode, the
//! arguments, and the write-back of what the core engine computed.
//!
//! Arguments are applied one by one as rrdtool does; an argument that is
//! refused stops the call with the earlier arguments kept (rrdtool keeps
//! them too, having written them through its mapping), without the
//! Holt-Winters smoothing of the call. A refused value leaves what rrdtool
//! leaves: the data sources before it keep their new `last_ds`, the rest
//! of the header is as before the argument (see
//! [`mapwise_core::rrd::update::Updater::apply`]).

use std::collections::BTreeMap;
use std::path::Path;

use mapwise_core::rrd::call_hot_ranges;
use mapwise_core::rrd::format::{Geometry, Header, le};
use mapwise_core::rrd::update::{
    self, Clock, Rows, Sample, Template, UpdateError, Updater, Written,
};

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
    /// The I/O mode of [`update()`] (an open [`Rrd`] keeps the mode it was
    /// opened with).
    pub io: IoMode,
}

/// What an update call did.
#[derive(Debug)]
pub struct UpdateOutcome {
    /// Values written, when [`UpdateOptions::verbose`].
    pub written: Vec<Written>,
    /// The archives' CF names and PDPs per row (for `updatev` labels) and
    /// the data source names; empty unless [`UpdateOptions::verbose`].
    pub labels: (Vec<(String, u64)>, Vec<String>),
    /// The refusal that stopped the call after the arguments before it
    /// were applied.
    pub error: Option<Error>,
}

/// The archive rows as the update engine sees them: through a mapping
/// they are written in place at once (as rrdtool writes through its
/// mapping); otherwise they are kept in `pending` and written once at the
/// end of the call, each run of adjacent values in one write.
struct Overlay<'a> {
    io: &'a mut dyn RrdIo,
    in_place: bool,
    pending: &'a mut BTreeMap<u64, f64>,
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
        let len = values.len() as u64 * 8;
        let size = self.io.len();
        let oob = || mapwise_core::Error::OutOfBounds {
            at: mapwise_core::At::Offset(offset),
            field: "row",
            offset,
            len,
            size,
        };
        if offset.saturating_add(len) > size {
            return Err(oob());
        }
        if self.in_place {
            let mut buf = [0u8; 8 * 16];
            for (k, chunk) in values.chunks(16).enumerate() {
                let n = chunk.len() * 8;
                for (dst, v) in buf.chunks_exact_mut(8).zip(chunk) {
                    dst.copy_from_slice(&v.to_le_bytes());
                }
                let at = offset + (k * 16 * 8) as u64;
                self.io.write_at(at, buf.get(..n).unwrap_or_default()).map_err(|_| oob())?;
            }
            return Ok(());
        }
        for (k, v) in values.iter().enumerate() {
            self.pending.insert(offset + 8 * k as u64, *v);
        }
        Ok(())
    }
}

/// Write `pending` values in runs of adjacent offsets; `run` is a scratch
/// buffer.
fn flush_rows(
    io: &mut dyn RrdIo,
    pending: &BTreeMap<u64, f64>,
    run: &mut Vec<u8>,
) -> std::io::Result<()> {
    run.clear();
    let mut start = 0u64;
    for (&off, v) in pending {
        if !run.is_empty() && off != start + run.len() as u64 {
            io.write_at(start, run)?;
            run.clear();
        }
        if run.is_empty() {
            start = off;
        }
        run.extend_from_slice(&v.to_le_bytes());
    }
    if !run.is_empty() {
        io.write_at(start, run)?;
    }
    Ok(())
}

/// The first and last index where `a` and `b` differ (equal lengths),
/// compared 16 bytes at a time.
fn changed_span(a: &[u8], b: &[u8]) -> Option<(usize, usize)> {
    const W: usize = 16;
    let n = a.len().min(b.len());
    let words = n / W;
    let word = |s: &[u8], i: usize| -> u128 {
        s.get(i * W..(i + 1) * W).and_then(|c| c.try_into().ok()).map_or(0, u128::from_ne_bytes)
    };
    let differs = |i: usize| a.get(i) != b.get(i);
    let first_word = (0..words).find(|&i| word(a, i) != word(b, i));
    let first = match first_word {
        Some(w) => (w * W..(w + 1) * W).find(|&i| differs(i))?,
        None => (words * W..n).find(|&i| differs(i))?,
    };
    let last = (words * W..n).rev().find(|&i| differs(i)).or_else(|| {
        let w = (0..words).rev().find(|&i| word(a, i) != word(b, i))?;
        (w * W..(w + 1) * W).rev().find(|&i| differs(i))
    })?;
    Some((first, last))
}

/// Ranges an open [`Rrd`] remembers as prepared; past this many it
/// forgets them all and prepares again.
const MAX_PREPARED: usize = 64;

/// An RRD open for updates: rrdtool's write lock, the I/O of one mode,
/// and the header parsed once.
///
/// [`update()`] opens one for a single call and closes it, as librrd's
/// `rrd_update_r` does (`rrd_open` … `rrd_close` per call). Keeping one
/// open across calls is the in-process form (what a collector that owns
/// its files would do): the header is parsed once and kept in memory, the
/// mapping stays, and pages prepared by earlier calls are not prepared
/// again (the 2007 patch's `CHECK_MADVISE_OVERLAPS` idea). The lock is
/// held until [`Rrd::close`] or drop, so no other rrdtool-compatible
/// writer can change the file meanwhile; a file replaced by `rename`
/// (rrdtool `create` over it, `restore`, `resize` output moved in place)
/// is not seen: this handle goes on updating the old inode.
pub struct Rrd {
    // Field order is drop order: the I/O (mapping, then descriptor and
    // lock) goes last.
    display: String,
    header: Header<'static>,
    /// The header bytes as they are in the file.
    on_disk: Vec<u8>,
    default_tmpl: Template,
    sample: Sample,
    pending: BTreeMap<u64, f64>,
    run: Vec<u8>,
    hot: Vec<(u64, u64)>,
    /// Ranges prepared by earlier calls (handle use only; at most
    /// [`MAX_PREPARED`], then forgotten).
    hinted: Vec<(u64, u64)>,
    /// Kept open across calls: hint the header pages too, and skip
    /// ranges earlier calls hinted.
    persistent: bool,
    io: Box<dyn RrdIo>,
}

impl std::fmt::Debug for Rrd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rrd")
            .field("path", &self.display)
            .field("io", &self.io.mode())
            .finish_non_exhaustive()
    }
}

impl Rrd {
    /// Open `path` for updates in `mode` (`rrd_open` with
    /// `RRD_READWRITE|RRD_LOCK`): open, write lock (`fcntl(F_SETLK)`, not
    /// waited for), one `fstat`, the mode's mapping and hints; then the
    /// header is read and checked. The handle is meant to be kept:
    /// [`Rrd::update`] as often as needed, then [`Rrd::close`].
    ///
    /// # Errors
    /// [`Error::Open`], [`Error::Locked`], [`Error::Map`], [`Error::Io`],
    /// or a header rrdtool would refuse (its words: [`Error::NotRrd`],
    /// [`Error::TooSmall`], …).
    pub fn open(path: &Path, mode: IoMode) -> Result<Rrd, Error> {
        let mut rrd = Rrd::open_once(path, mode)?;
        rrd.persistent = true;
        Ok(rrd)
    }

    /// [`Rrd::open`] for one call ([`update`]).
    fn open_once(path: &Path, mode: IoMode) -> Result<Rrd, Error> {
        let display = path.display().to_string();
        let mut io = super::open(path, Access::Write, mode)?.io;
        if mode == IoMode::Mmap {
            advise_header(&mut *io)
                .map_err(|source| Error::Map { path: display.clone(), source })?;
        }
        let src: &dyn RrdIo = &*io;
        let header = Header::parse(src).map_err(|e| header_error(&display, src, e))?.into_owned();
        let on_disk = header.bytes().to_vec();
        let default_tmpl = Template::default_for(&header);
        Ok(Rrd {
            display,
            header,
            on_disk,
            default_tmpl,
            sample: Sample { time: 0, usec: 0, values: Vec::new() },
            pending: BTreeMap::new(),
            run: Vec::new(),
            hot: Vec::new(),
            hinted: Vec::new(),
            persistent: false,
            io,
        })
    }

    /// The header as of the last update (what the file holds).
    #[must_use]
    pub fn header(&self) -> &Header<'static> {
        &self.header
    }

    /// The I/O mode.
    #[must_use]
    pub fn mode(&self) -> IoMode {
        self.io.mode()
    }

    /// `rrdtool update` (`verbose`: `updatev`) on the open file with the
    /// arguments `args` (`TIME:V…` or `TIME@V…`), applied one by one;
    /// [`UpdateOptions::io`] is ignored (the handle keeps its mode).
    ///
    /// # Errors
    /// "Not enough arguments", a bad template (nothing changed), or a
    /// failed write ([`Error::Io`]). A refused argument is reported in
    /// [`UpdateOutcome::error`] with the arguments before it applied.
    pub fn update<S: AsRef<str>>(
        &mut self,
        opts: &UpdateOptions,
        args: &[S],
    ) -> Result<UpdateOutcome, Error> {
        if args.is_empty() {
            return Err(Error::Rrdtool("Not enough arguments".into()));
        }
        let now = time::now();
        let at = |s: &str| time::at_time(s);
        let clock = Clock { now, at_time: &at };
        if self.io.mode() == IoMode::Mmap {
            self.advise_call(args, &clock)
                .map_err(|source| Error::Map { path: self.display.clone(), source })?;
        }
        let parsed_tmpl;
        let tmpl = match &opts.template {
            Some(t) => {
                parsed_tmpl = Template::parse(&self.header, t).map_err(Error::Rrdtool)?;
                &parsed_tmpl
            }
            None => &self.default_tmpl,
        };
        let labels = if opts.verbose {
            (
                self.header.rras().iter().map(|r| (r.cf.name().to_owned(), r.pdp_cnt)).collect(),
                self.header.dss().iter().map(|d| d.name.clone()).collect(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let display = &self.display;
        let in_place = self.io.writes_in_place();
        self.pending.clear();
        let mut rows = Overlay { io: &mut *self.io, in_place, pending: &mut self.pending };
        let mut failure = None;
        let mut written = Vec::new();
        {
            let mut u = Updater::new(&mut self.header, &mut rows, &StdMath, now.0)
                .map_err(|e| Error::Rrdtool(format!("{display}: {e}")))?;
            if opts.verbose {
                u.written = Some(Vec::new());
            }
            for arg in args {
                let r = update::parse_sample_into(
                    u.header(),
                    tmpl,
                    arg.as_ref(),
                    &clock,
                    &mut self.sample,
                )
                .and_then(|()| u.apply(&self.sample));
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
        let io_err = |source| Error::Io { path: display.clone(), source };
        flush_rows(&mut *self.io, &self.pending, &mut self.run).map_err(io_err)?;
        // Only the changed bytes of the header are written back.
        if let Some((a, b)) = changed_span(self.header.bytes(), &self.on_disk) {
            let new = self.header.bytes().get(a..=b).unwrap_or_default();
            self.io.write_at(a as u64, new).map_err(io_err)?;
            if let Some(d) = self.on_disk.get_mut(a..=b) {
                d.copy_from_slice(new);
            }
        }
        self.io.flush().map_err(io_err)?;
        Ok(UpdateOutcome { written, labels, error: failure })
    }

    /// Hint the pages this call will write ([`call_hot_ranges`] up to the
    /// time of the last argument, merged, page-aligned) with
    /// [`RrdIo::prepare_write`] (one merged `MADV_WILLNEED`); a kept handle
    /// adds the header pages and skips ranges earlier calls hinted, whose
    /// pages stay mapped (the 2007 patch's `CHECK_MADVISE_OVERLAPS`).
    fn advise_call<S: AsRef<str>>(&mut self, args: &[S], clock: &Clock<'_>) -> std::io::Result<()> {
        let mut until = None;
        for a in args {
            match update::sample_time(a.as_ref(), clock) {
                Some(t) => until = Some(until.map_or(t, |u: i64| u.max(t))),
                None => {
                    until = None;
                    break;
                }
            }
        }
        let page = io::page_size();
        let len = self.io.len();
        call_hot_ranges(&self.header, until, self.persistent, page, len, &mut self.hot);
        if !self.persistent {
            return self.io.prepare_write(&self.hot);
        }
        let hinted = &self.hinted;
        let fresh: Vec<(u64, u64)> = self
            .hot
            .iter()
            .copied()
            .filter(|&(o, l)| !hinted.iter().any(|&(ho, hl)| ho <= o && o + l <= ho + hl))
            .collect();
        self.io.prepare_write(&fresh)?;
        if self.hinted.len() + fresh.len() > MAX_PREPARED {
            self.hinted.clear();
        }
        self.hinted.extend(fresh);
        Ok(())
    }

    /// Write back what the mode buffered and close: unmap, then close the
    /// descriptor (releasing the lock), as `rrd_close`.
    ///
    /// # Errors
    /// A failed write ([`Error::Io`]).
    pub fn close(mut self) -> Result<(), Error> {
        self.io.flush().map_err(|source| Error::Io { path: self.display.clone(), source })
    }
}

/// Before the header is parsed through a mapping: when it spans more than
/// one page, `MADV_WILLNEED` the pages after the first
/// ([`RrdIo::prepare_write`]; the update rewrites `pdp_prep`, `cdp_prep`
/// and `rra_ptr`), so a cold file reads them together instead of one
/// fault at a time. The size comes from the counts in `stat_head` (its
/// first page is faulted in for them: one page, `MADV_RANDOM` being set),
/// with a version-3 `live_head` (the larger); nothing is trusted beyond
/// the hint, the parser checks everything.
fn advise_header(io: &mut dyn RrdIo) -> std::io::Result<()> {
    let page = io::page_size();
    let Ok(head) = io.read_at(0, 48) else {
        return Ok(());
    };
    let (ds, rra, step) = (le::u64_at(&head, 24), le::u64_at(&head, 32), le::u64_at(&head, 40));
    drop(head);
    let Some(g) = Geometry::of(3, ds, rra, step) else {
        return Ok(());
    };
    let end = g.header_len.min(io.len());
    if end > page {
        io.prepare_write(&[(page, end.div_ceil(page) * page - page)])?;
    }
    Ok(())
}

/// `rrdtool update FILE [-t tpl] [-s] ARG…` (and `updatev` with
/// `verbose`) as one librrd `rrd_update_r` call: open, lock, update,
/// close. `display` is the file name as given, used in messages.
///
/// # Errors
/// Opening, locking or parsing the file, or a bad template (nothing
/// changed). A refused argument is reported in [`UpdateOutcome::error`].
pub fn update<S: AsRef<str>>(
    path: &Path,
    opts: &UpdateOptions,
    args: &[S],
) -> Result<UpdateOutcome, Error> {
    if args.is_empty() {
        return Err(Error::Rrdtool("Not enough arguments".into()));
    }
    let mut rrd = Rrd::open_once(path, opts.io)?;
    let out = rrd.update(opts, args)?;
    rrd.close()?;
    Ok(out)
}

/// The `updatev` text: `return_value = 0|-1`, then each written value as
/// `[T]RRA[CF][PDPs]DS[name] = %0.10e` (`NaN` for NaN).
#[must_use]
pub fn updatev_text(o: &UpdateOutcome) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "return_value = {}", if o.error.is_some() { -1 } else { 0 });
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
