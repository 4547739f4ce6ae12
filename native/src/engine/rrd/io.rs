//! The four I/O modes of the RRD engine behind one trait, and rrdtool's
//! file lock.
//!
//! | mode | reads and writes | hints |
//! |---|---|---|
//! | [`IoMode::Mmap`] (default) | a whole-file `MAP_SHARED` mapping (read-only commands: `MAP_PRIVATE`) | `MADV_RANDOM` on the whole mapping (no read-around on faults). Update: once the header is parsed, one merged `MADV_WILLNEED` of exactly the row pages the call writes ([`mapwise_core::rrd::call_hot_ranges`], page-aligned; [`RrdIo::prepare_write`]), and of the header pages past the first when the header spans several. Read-only commands: `MADV_WILLNEED` on the first page, as rrdtool |
//! | [`IoMode::Mmap2Pages`] | the same mapping | the 2007 `TWO_PAGES` variant: `MADV_RANDOM`, then `MADV_WILLNEED` on the first two pages; rows are faulted in one by one |
//! | [`IoMode::Fd`] | `pread`/`pwrite` | `posix_fadvise(POSIX_FADV_RANDOM)` (sequential for `dump`), as rrdtool built `--disable-mmap` |
//! | [`IoMode::Direct`] | `O_DIRECT` with 4 KiB-aligned buffers: each page the call touches is read once, patched in memory, and the dirty pages written back once at the end, adjacent pages in one `pwrite`; the partial last page of a file goes through the buffered descriptor (an aligned write would lengthen the file) | none (the page cache is bypassed) |
//!
//! rrdtool 1.7.2 itself uses the first (`rrd_open.c: rrd_open`:
//! `MADV_RANDOM` on the mapping, then `MADV_NORMAL` and `MADV_WILLNEED`
//! on the first page only, after it has read the header) or, built
//! `--disable-mmap`, the third; `O_DIRECT` existed only in a 2007
//! experiment (see `docs/format/rrd.md` §15).
//!
//! Every mode opens the file once, takes the lock on that descriptor and
//! learns the length with one `fstat` (rrdtool's order: `open`, `fcntl`,
//! `fstat`, then `mmap`); closing unmaps before the descriptor (and with it
//! the lock) goes, as `rrd_close` does.
//!
//! **Locking** (`rrd_open.c: rrd_rwlock`): `fcntl(F_SETLK)` on the whole
//! file, a write lock for update, a read lock otherwise, non-blocking: a
//! busy file fails at once. The lock lives as long as the file is open.

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use mapwise_core::PageSource;

use crate::os::io::{DIRECT_ALIGN, DirectBlock};
use crate::os::lock;
use crate::os::map::{Advice, FileMap};

/// How the engine reads and writes a file; chosen per call (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// Whole-file mapping with `MADV_RANDOM` and `MADV_WILLNEED` on the
    /// hot pages (the default, as rrdtool 1.7).
    #[default]
    Mmap,
    /// Whole-file mapping, only the first two pages flagged (2007).
    Mmap2Pages,
    /// `pread`/`pwrite` with `POSIX_FADV_RANDOM` (rrdtool built without
    /// mmap).
    Fd,
    /// `O_DIRECT`: read-modify-write of whole aligned pages.
    Direct,
}

impl IoMode {
    /// Every mode.
    pub const ALL: [IoMode; 4] = [IoMode::Mmap, IoMode::Mmap2Pages, IoMode::Fd, IoMode::Direct];

    /// Name as accepted by `--io`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Mmap => "mmap",
            IoMode::Mmap2Pages => "mmap-2pages",
            IoMode::Fd => "fd",
            IoMode::Direct => "direct",
        }
    }

    /// Parse a name as printed by [`IoMode::name`].
    #[must_use]
    pub fn from_name(s: &str) -> Option<IoMode> {
        IoMode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// What the opener will do with the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read a few structures (fetch, info, last, first, lastupdate).
    Read,
    /// Read everything in order (dump: rrdtool's `RRD_READAHEAD`).
    ReadAll,
    /// Update in place.
    Write,
}

/// A file offset or length as a `usize` (lengths here are bounded by a
/// file that fits in memory or a mapping; saturates otherwise).
fn usz(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// The OS page size.
#[must_use]
pub fn page_size() -> u64 {
    crate::os::residency::os_page_size()
}

/// Bytes, reads and writes of an open RRD file: a [`PageSource`] plus
/// writing and the hints of its mode. Every implementation owns the
/// descriptor that holds the lock; dropping it unmaps (if mapped) and then
/// closes, releasing the lock.
pub trait RrdIo: PageSource {
    /// The mode.
    fn mode(&self) -> IoMode;
    /// Store `data` at `offset` (inside the file). `direct` keeps the
    /// bytes in its page buffers until [`RrdIo::flush`].
    ///
    /// # Errors
    /// A failed write, or a range outside the file ("attempting to write
    /// beyond end of file", rrdtool's words in `rrd_open.c: rrd_write`).
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Tell the kernel which page-aligned, merged ranges `(offset, len)` in
    /// bytes the coming work touches (after the header has been read). Only
    /// [`IoMode::Mmap`] acts on it: one `MADV_WILLNEED` per range.
    ///
    /// # Errors
    /// A failed `madvise`.
    fn advise_hot(&mut self, hot: &[(u64, u64)]) -> io::Result<()>;
    /// Hint the page-aligned, merged ranges `(offset, len)` (bytes) the
    /// call is about to write. Only [`IoMode::Mmap`] acts on it: one
    /// `MADV_WILLNEED` for all of them (`process_madvise(PIDFD_SELF, …)`,
    /// or one `madvise` per range where that is refused), so a cold file
    /// reads them in parallel before the writes fault them in.
    /// (`MADV_POPULATE_WRITE` was tried instead: a little faster warm, but
    /// cold calls took milliseconds at the median; see docs/format/rrd.md
    /// §15.)
    ///
    /// # Errors
    /// A failed `madvise`.
    fn prepare_write(&mut self, ranges: &[(u64, u64)]) -> io::Result<()> {
        let _ = ranges;
        Ok(())
    }
    /// Write back whatever the mode buffered (`direct`: the dirty pages);
    /// nothing for the others, whose writes are already in the page cache.
    ///
    /// # Errors
    /// A failed write.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// `true` when [`RrdIo::write_at`] lands in memory that later reads of
    /// the same call see at once and costs no system call (a mapping), so
    /// the engine may write rows through instead of batching them.
    fn writes_in_place(&self) -> bool {
        false
    }
}

/// The file's length from one `fstat` (bytes).
fn file_len(file: &File) -> io::Result<u64> {
    let st = rustix::fs::fstat(file).map_err(io::Error::from)?;
    u64::try_from(st.st_size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))
}

/// The whole-file mapping modes.
pub struct MmapIo {
    // Field order is drop order: unmap first, then close (rrd_close).
    map: FileMap,
    len: u64,
    mode: IoMode,
    _file: File,
}

impl MmapIo {
    fn open(file: File, access: Access, mode: IoMode) -> io::Result<MmapIo> {
        let len = file_len(&file)?;
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let whole = usize::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        // The length is known, so mapping makes no second fstat.
        let map = match access {
            // SAFETY: the mapping is only valid while nobody truncates the
            // file or writes it behind our back; every user holds
            // rrdtool's fcntl lock for the life of the mapping (the SIGBUS
            // contract of crate::os::map), and reads never go past the
            // length seen here.
            Access::Write => unsafe { FileMap::shared_writable(&file, whole)? },
            // SAFETY: as above; a private read-only mapping.
            Access::ReadAll => unsafe { FileMap::private_read_only(&file, whole, true)? },
            // SAFETY: as above.
            Access::Read => unsafe { FileMap::private_read_only(&file, whole, false)? },
        };
        let io = MmapIo { map, len, mode, _file: file };
        match (mode, access) {
            (_, Access::ReadAll) => io.map.advise(Advice::Sequential, 0, whole)?,
            (IoMode::Mmap2Pages, _) => {
                // The 2007 TWO_PAGES variant: "keep 2 pages worth of data,
                // likely headers" (its MADV_WILLNEED|MADV_SEQUENTIAL is the
                // value MADV_WILLNEED, as rrdtool's tracker later noted). Its MADV_DONTNEED of
                // the rest is left out: on a fresh mapping there is no page
                // table entry for it to drop, and it never touched the page
                // cache; MADV_RANDOM stands for its posix_fadvise(RANDOM).
                io.map.advise(Advice::Random, 0, whole)?;
                let two = usz((2 * page_size()).min(len));
                io.map.advise(Advice::WillNeed, 0, two)?;
            }
            _ => io.map.advise(Advice::Random, 0, whole)?,
        }
        Ok(io)
    }
}

impl PageSource for MmapIo {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        self.map.bytes().read_at(offset, len)
    }
}

impl RrdIo for MmapIo {
    fn mode(&self) -> IoMode {
        self.mode
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let Some(m) = self.map.bytes_mut() else {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        };
        let start =
            usize::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let dst = start
            .checked_add(data.len())
            .and_then(|end| m.get_mut(start..end))
            .ok_or_else(|| io::Error::other("attempting to write beyond end of file"))?;
        dst.copy_from_slice(data);
        Ok(())
    }

    fn advise_hot(&mut self, hot: &[(u64, u64)]) -> io::Result<()> {
        if self.mode != IoMode::Mmap {
            return Ok(());
        }
        for &(off, len) in hot {
            // madvise aligns the start down itself; the range must stay
            // inside the mapping.
            let end = off.saturating_add(len).min(self.len);
            if end > off {
                self.map.advise(Advice::WillNeed, usz(off), usz(end - off))?;
            }
        }
        Ok(())
    }

    fn writes_in_place(&self) -> bool {
        self.map.is_writable()
    }

    fn prepare_write(&mut self, ranges: &[(u64, u64)]) -> io::Result<()> {
        if self.mode != IoMode::Mmap || !self.writes_in_place() {
            return Ok(());
        }
        let clip = |&(off, len): &(u64, u64)| {
            let end = off.saturating_add(len).min(self.len);
            (end > off).then(|| (usz(off), usz(end - off)))
        };
        let v: Vec<(usize, usize)> = ranges.iter().filter_map(clip).collect();
        self.map.will_need_all(&v)
    }
}

/// `pread`/`pwrite`.
pub struct FdIo {
    file: File,
    len: u64,
}

fn fadvise(file: &File, advice: rustix::fs::Advice) -> io::Result<()> {
    rustix::fs::fadvise(file, 0, None, advice).map_err(io::Error::from)
}

impl FdIo {
    fn open(file: File, access: Access) -> io::Result<FdIo> {
        let len = file_len(&file)?;
        // rrd_open.c without HAVE_MMAP: posix_fadvise(fd, 0, 0,
        // SEQUENTIAL for RRD_COPY, else RANDOM).
        let advice = if access == Access::ReadAll {
            rustix::fs::Advice::Sequential
        } else {
            rustix::fs::Advice::Random
        };
        fadvise(&file, advice)?;
        Ok(FdIo { file, len })
    }
}

fn read_error(offset: u64, len: usize, e: &io::Error) -> mapwise_core::Error {
    mapwise_core::Error::Read { offset, len: len as u64, code: e.raw_os_error().unwrap_or(0) }
}

fn check(offset: u64, len: usize, size: u64) -> Result<(), mapwise_core::Error> {
    mapwise_core::source::checked_range(
        offset,
        len as u64,
        size,
        mapwise_core::At::Offset(offset),
        "read",
    )
    .map(|_| ())
}

fn beyond_end(offset: u64, len: usize, size: u64) -> bool {
    offset.checked_add(len as u64).is_none_or(|e| e > size)
}

impl PageSource for FdIo {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        check(offset, len, self.len)?;
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, offset).map_err(|e| read_error(offset, len, &e))?;
        Ok(Cow::Owned(buf))
    }
}

impl RrdIo for FdIo {
    fn mode(&self) -> IoMode {
        IoMode::Fd
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if beyond_end(offset, data.len(), self.len) {
            return Err(io::Error::other("attempting to write beyond end of file"));
        }
        self.file.write_all_at(data, offset)
    }

    fn advise_hot(&mut self, _hot: &[(u64, u64)]) -> io::Result<()> {
        Ok(())
    }
}

/// A page read during the call, and whether it was changed.
struct Cached {
    page: Box<DirectBlock>,
    dirty: bool,
}

/// `O_DIRECT` reads and read-modify-write of whole pages: each page the
/// call touches is read once (adjacent missing pages in one `pread`),
/// patched in memory, and written back once by [`RrdIo::flush`].
pub struct DirectIo {
    direct: File,
    /// The descriptor that holds the lock; also writes the partial last
    /// page of the file.
    buffered: File,
    len: u64,
    /// Page index → page, for the pages read so far.
    pages: std::cell::RefCell<std::collections::BTreeMap<u64, Cached>>,
}

impl DirectIo {
    fn open(path: &Path, buffered: File, write: bool) -> io::Result<DirectIo> {
        use rustix::fs::{Mode, OFlags};
        let base = if write { OFlags::RDWR } else { OFlags::RDONLY };
        let fd = rustix::fs::open(path, base | OFlags::DIRECT | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| {
                if e == rustix::io::Errno::INVAL {
                    io::Error::other("direct I/O (O_DIRECT) is not supported on this file system")
                } else {
                    io::Error::from(e)
                }
            })?;
        let len = file_len(&buffered)?;
        Ok(DirectIo {
            direct: File::from(fd),
            buffered,
            len,
            pages: std::cell::RefCell::new(std::collections::BTreeMap::new()),
        })
    }

    /// Make the pages `first..=last` present, reading each run of missing
    /// pages with one `pread` (short at the end of the file).
    fn load(&self, first: u64, last: u64) -> io::Result<()> {
        let mut pages = self.pages.borrow_mut();
        let mut p = first;
        while p <= last {
            if pages.contains_key(&p) {
                p += 1;
                continue;
            }
            let mut end = p;
            while end < last && !pages.contains_key(&(end + 1)) {
                end += 1;
            }
            let n = usz(end - p + 1);
            let mut run: Vec<DirectBlock> = vec![DirectBlock::ZERO; n];
            let bytes = DirectBlock::run_bytes_mut(&mut run);
            let start = p * DIRECT_ALIGN as u64;
            let want = usz(self.len.min(start + (n * DIRECT_ALIGN) as u64).saturating_sub(start));
            let mut done = 0usize;
            while done < want {
                let dst = bytes.get_mut(done..).unwrap_or_default();
                match self.direct.read_at(dst, start + done as u64) {
                    Ok(0) => break,
                    Ok(k) => done += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if done < want {
                return Err(io::Error::from_raw_os_error(libc::ENODATA));
            }
            for (k, page) in run.into_iter().enumerate() {
                pages.insert(p + k as u64, Cached { page: Box::new(page), dirty: false });
            }
            p = end + 1;
        }
        Ok(())
    }

    /// Write `pages` (consecutive indices) at page `first`: whole pages
    /// inside the file through `O_DIRECT`, a last page the file ends inside
    /// through the buffered descriptor, only up to the end of the file.
    fn write_run(&self, first: u64, run: &[DirectBlock]) -> io::Result<()> {
        let a = DIRECT_ALIGN as u64;
        let start = first * a;
        let bytes = DirectBlock::run_bytes(run);
        let end = start + bytes.len() as u64;
        let full_end = end.min(self.len - self.len % a).max(start);
        if full_end > start {
            self.direct
                .write_all_at(bytes.get(..usz(full_end - start)).unwrap_or_default(), start)?;
        }
        if self.len > full_end && end > full_end {
            let k = usz(full_end - start);
            let n = usz(self.len.min(end) - full_end);
            self.buffered.write_all_at(bytes.get(k..k + n).unwrap_or_default(), full_end)?;
        }
        Ok(())
    }
}

impl PageSource for DirectIo {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        check(offset, len, self.len)?;
        if len == 0 {
            return Ok(Cow::Owned(Vec::new()));
        }
        let a = DIRECT_ALIGN as u64;
        let end = offset + len as u64;
        self.load(offset / a, (end - 1) / a).map_err(|e| read_error(offset, len, &e))?;
        let pages = self.pages.borrow();
        let mut out = Vec::with_capacity(len);
        let mut at = offset;
        while at < end {
            let idx = at / a;
            let within = usz(at % a);
            let take = usz((a - at % a).min(end - at));
            let page = pages.get(&idx).map(|c| &c.page.0[..]).unwrap_or_default();
            out.extend_from_slice(page.get(within..within + take).unwrap_or_default());
            at += take as u64;
        }
        Ok(Cow::Owned(out))
    }
}

impl RrdIo for DirectIo {
    fn mode(&self) -> IoMode {
        IoMode::Direct
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if beyond_end(offset, data.len(), self.len) {
            return Err(io::Error::other("attempting to write beyond end of file"));
        }
        if data.is_empty() {
            return Ok(());
        }
        let a = DIRECT_ALIGN as u64;
        let end = offset + data.len() as u64;
        self.load(offset / a, (end - 1) / a)?;
        let pages = self.pages.get_mut();
        let mut at = offset;
        while at < end {
            let within = usz(at % a);
            let take = usz((a - at % a).min(end - at));
            let from = usz(at - offset);
            if let Some(c) = pages.get_mut(&(at / a)) {
                if let (Some(dst), Some(src)) =
                    (c.page.0.get_mut(within..within + take), data.get(from..from + take))
                {
                    dst.copy_from_slice(src);
                }
                c.dirty = true;
            }
            at += take as u64;
        }
        Ok(())
    }

    fn advise_hot(&mut self, _hot: &[(u64, u64)]) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let pages = std::mem::take(self.pages.get_mut());
        let mut run: Vec<DirectBlock> = Vec::new();
        let mut first = 0u64;
        for (idx, c) in pages.into_iter().filter(|(_, c)| c.dirty) {
            if !run.is_empty() && idx != first + run.len() as u64 {
                self.write_run(first, &run)?;
                run.clear();
            }
            if run.is_empty() {
                first = idx;
            }
            run.push(*c.page);
        }
        if !run.is_empty() {
            self.write_run(first, &run)?;
        }
        Ok(())
    }
}

/// An open RRD file: the I/O of its mode, which owns the descriptor
/// holding the lock.
pub struct Opened {
    /// Reads and writes.
    pub io: Box<dyn RrdIo>,
}

/// Why a file could not be opened for the engine.
#[derive(Debug)]
pub enum OpenError {
    /// `open(2)` failed.
    Open(io::Error),
    /// Another process holds a conflicting lock.
    Locked,
    /// The mapping (or the `O_DIRECT` descriptor) could not be made.
    Map(io::Error),
    /// `fstat`/`fadvise` failed.
    Other(io::Error),
}

/// Open `path` for `access` in `mode`, taking rrdtool's lock first
/// (`open`, `fcntl(F_SETLK)`, one `fstat`, then the mode's own calls).
///
/// # Errors
/// [`OpenError`] for the step that failed.
pub fn open(path: &Path, access: Access, mode: IoMode) -> Result<Opened, OpenError> {
    let write = access == Access::Write;
    let file =
        std::fs::OpenOptions::new().read(true).write(write).open(path).map_err(OpenError::Open)?;
    match lock::try_record_lock(&file, write) {
        Ok(true) => {}
        Ok(false) => return Err(OpenError::Locked),
        Err(e) => return Err(OpenError::Other(e)),
    }
    let io: Box<dyn RrdIo> = match mode {
        IoMode::Mmap | IoMode::Mmap2Pages => {
            Box::new(MmapIo::open(file, access, mode).map_err(OpenError::Map)?)
        }
        IoMode::Fd => Box::new(FdIo::open(file, access).map_err(OpenError::Other)?),
        IoMode::Direct => Box::new(DirectIo::open(path, file, write).map_err(OpenError::Map)?),
    };
    Ok(Opened { io })
}
