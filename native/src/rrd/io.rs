//! The four I/O modes of the RRD engine behind one trait, and rrdtool's
//! file lock.
//!
//! | mode | reads and writes | hints |
//! |---|---|---|
//! | [`IoMode::Mmap`] (default) | a whole-file `MAP_SHARED` mapping (read-only commands: `MAP_PRIVATE`) | `MADV_RANDOM` on the whole mapping, then `MADV_WILLNEED` on exactly the hot pages: the header and the current and next row of each archive ([`mapwise_core::rrd::hot_ranges`]) |
//! | [`IoMode::Mmap2Pages`] | the same mapping | the 2007 `TWO_PAGES` variant: `MADV_WILLNEED` on the first two pages, `MADV_DONTNEED` on the rest |
//! | [`IoMode::Fd`] | `pread`/`pwrite` | `posix_fadvise(POSIX_FADV_RANDOM)` (sequential for `dump`) |
//! | [`IoMode::Direct`] | `O_DIRECT` with 4 KiB-aligned buffers: whole pages read, patched and written back; the partial last page of a file goes through a second, buffered descriptor (an aligned write would lengthen the file) | none (the page cache is bypassed) |
//!
//! rrdtool 1.7.2 itself uses the first (with only the first page marked
//! WILLNEED) or, built `--disable-mmap`, the third; `O_DIRECT` existed only
//! in a 2007 experiment (see `shared/notes/rrd.md` §3.5).
//!
//! **Locking** (`rrd_open.c: rrd_rwlock`): `fcntl(F_SETLK)` on the whole
//! file, a write lock for update, a read lock otherwise, non-blocking: a
//! busy file fails at once. The lock lives as long as the file is open.

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use mapwise_core::PageSource;
use memmap2::{Advice, Mmap, MmapMut, MmapOptions, UncheckedAdvice};

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
    crate::residency::os_page_size()
}

/// Bytes, reads and writes of an open RRD file: a [`PageSource`] plus
/// writing and the hints of its mode.
pub trait RrdIo: PageSource {
    /// The mode.
    fn mode(&self) -> IoMode;
    /// Store `data` at `offset` (inside the file).
    ///
    /// # Errors
    /// A failed write, or a range outside the file.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Tell the kernel which page-aligned ranges the coming work touches
    /// (after the header has been read).
    ///
    /// # Errors
    /// A failed `madvise`.
    fn advise_hot(&mut self, hot: &[(u64, u64)]) -> io::Result<()>;
}

/// The whole-file mapping modes.
pub struct MmapIo {
    map: MapKind,
    len: u64,
    mode: IoMode,
}

enum MapKind {
    Rw(MmapMut),
    Ro(Mmap),
}

impl MapKind {
    fn bytes(&self) -> &[u8] {
        match self {
            MapKind::Rw(m) => m,
            MapKind::Ro(m) => m,
        }
    }
    fn advise_range(&self, a: Advice, off: usize, len: usize) -> io::Result<()> {
        match self {
            MapKind::Rw(m) => m.advise_range(a, off, len),
            MapKind::Ro(m) => m.advise_range(a, off, len),
        }
    }
}

impl MmapIo {
    fn open(file: &File, access: Access, mode: IoMode) -> io::Result<MmapIo> {
        let len = file.metadata()?.len();
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let map = match access {
            // SAFETY: the mapping is only valid while nobody truncates the
            // file; every user holds rrdtool's fcntl lock for the life of
            // the mapping (the SIGBUS contract of crate::map), and reads
            // never go past the length seen here.
            Access::Write => MapKind::Rw(unsafe { MmapOptions::new().map_mut(file)? }),
            Access::ReadAll => {
                // SAFETY: as above; a private read-only mapping.
                MapKind::Ro(unsafe { MmapOptions::new().populate().map_copy_read_only(file)? })
            }
            // SAFETY: as above.
            Access::Read => MapKind::Ro(unsafe { MmapOptions::new().map_copy_read_only(file)? }),
        };
        let whole = usize::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        let io = MmapIo { map, len, mode };
        match (mode, access) {
            (IoMode::Mmap2Pages, _) => {
                let two = usz((2 * page_size()).min(len));
                io.map.advise_range(Advice::WillNeed, 0, two)?;
                if whole > two {
                    io.dontneed(two, whole - two)?;
                }
            }
            (_, Access::ReadAll) => io.map.advise_range(Advice::Sequential, 0, whole)?,
            _ => io.map.advise_range(Advice::Random, 0, whole)?,
        }
        Ok(io)
    }

    fn dontneed(&self, off: usize, len: usize) -> io::Result<()> {
        match &self.map {
            // SAFETY: MADV_DONTNEED on a MAP_SHARED file mapping only drops
            // page-table entries; the data stays in the page cache and in
            // the file (dirty pages are not lost), so later reads through
            // the mapping see the same bytes.
            MapKind::Rw(m) => unsafe {
                m.unchecked_advise_range(UncheckedAdvice::DontNeed, off, len)
            },
            // A private read-only mapping has no private copies to lose.
            // SAFETY: as above; pages are re-read from the file.
            MapKind::Ro(m) => unsafe {
                m.unchecked_advise_range(UncheckedAdvice::DontNeed, off, len)
            },
        }
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
        let MapKind::Rw(m) = &mut self.map else {
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
            // memmap2 aligns the start down itself; the range must stay
            // inside the mapping.
            let end = (off + len).min(self.len);
            if end > off {
                self.map
                    .advise_range(Advice::WillNeed, usz(off), usz(end - off))?;
            }
        }
        Ok(())
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
        let len = file.metadata()?.len();
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
    mapwise_core::Error::Read {
        offset,
        len: len as u64,
        code: e.raw_os_error().unwrap_or(0),
    }
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

impl PageSource for FdIo {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        check(offset, len, self.len)?;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| read_error(offset, len, &e))?;
        Ok(Cow::Owned(buf))
    }
}

impl RrdIo for FdIo {
    fn mode(&self) -> IoMode {
        IoMode::Fd
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::Error::other("attempting to write beyond end of file"));
        }
        self.file.write_all_at(data, offset)
    }

    fn advise_hot(&mut self, _hot: &[(u64, u64)]) -> io::Result<()> {
        Ok(())
    }
}

/// Alignment of `O_DIRECT` offsets, lengths and buffers.
const ALIGN: usize = 4096;

/// A 4 KiB-aligned buffer of whole pages.
struct Aligned {
    raw: Vec<u8>,
    skew: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let raw = vec![0u8; len + ALIGN];
        let skew = raw.as_ptr().align_offset(ALIGN).min(ALIGN);
        Aligned { raw, skew, len }
    }
    fn bytes(&self) -> &[u8] {
        self.raw
            .get(self.skew..self.skew + self.len)
            .unwrap_or_default()
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.raw
            .get_mut(self.skew..self.skew + self.len)
            .unwrap_or_default()
    }
}

/// `O_DIRECT` reads and read-modify-write of whole pages.
pub struct DirectIo {
    direct: File,
    buffered: File,
    len: u64,
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
        let len = buffered.metadata()?.len();
        Ok(DirectIo {
            direct: File::from(fd),
            buffered,
            len,
        })
    }

    /// The bytes of the whole pages `[start, end)` (aligned), short at the
    /// end of the file.
    fn read_pages(&self, start: u64, end: u64) -> io::Result<Aligned> {
        let mut buf = Aligned::new(usz(end - start));
        let mut done = 0usize;
        let want = usz(self.len.min(end).saturating_sub(start));
        while done < want {
            let dst = buf.bytes_mut().get_mut(done..).unwrap_or_default();
            match self.direct.read_at(dst, start + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if done < want {
            return Err(io::Error::from_raw_os_error(libc::ENODATA));
        }
        Ok(buf)
    }
}

impl PageSource for DirectIo {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        check(offset, len, self.len)?;
        let a = ALIGN as u64;
        let start = offset - offset % a;
        let end = (offset + len as u64).div_ceil(a) * a;
        let buf = self
            .read_pages(start, end)
            .map_err(|e| read_error(offset, len, &e))?;
        let skip = usz(offset - start);
        Ok(Cow::Owned(
            buf.bytes()
                .get(skip..skip + len)
                .unwrap_or_default()
                .to_vec(),
        ))
    }
}

impl RrdIo for DirectIo {
    fn mode(&self) -> IoMode {
        IoMode::Direct
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::Error::other("attempting to write beyond end of file"));
        }
        if data.is_empty() {
            return Ok(());
        }
        let a = ALIGN as u64;
        let start = offset - offset % a;
        let end = (offset + data.len() as u64).div_ceil(a) * a;
        let mut buf = self.read_pages(start, end)?;
        let skip = usz(offset - start);
        if let Some(dst) = buf.bytes_mut().get_mut(skip..skip + data.len()) {
            dst.copy_from_slice(data);
        }
        // Whole pages inside the file go straight to the device; a last
        // page the file ends inside is written buffered, only up to EOF.
        let full_end = end.min(self.len - self.len % a);
        if full_end > start {
            let n = usz(full_end - start);
            self.direct
                .write_all_at(buf.bytes().get(..n).unwrap_or_default(), start)?;
        }
        if end > full_end && self.len > full_end.max(start) {
            let from = full_end.max(start);
            let k = usz(from - start);
            let n = usz(self.len - from);
            self.buffered
                .write_all_at(buf.bytes().get(k..k + n).unwrap_or_default(), from)?;
        }
        Ok(())
    }

    fn advise_hot(&mut self, _hot: &[(u64, u64)]) -> io::Result<()> {
        Ok(())
    }
}

/// An open RRD file: the lock holder and the I/O of its mode.
pub struct Opened {
    /// The descriptor holding the lock.
    pub file: File,
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

/// `fcntl(F_SETLK)` of the whole file: `true` when taken, `false` when
/// another process holds a conflicting lock.
///
/// # Errors
/// Any other `fcntl` failure.
pub fn lock(file: &File, write: bool) -> io::Result<bool> {
    // SAFETY: `flock` is a plain C struct; zero is a valid value of every
    // field, and the fields rrdtool sets are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type =
        libc::c_short::try_from(if write { libc::F_WRLCK } else { libc::F_RDLCK }).unwrap_or(0);
    fl.l_whence = libc::c_short::try_from(libc::SEEK_SET).unwrap_or(0);
    fl.l_start = 0;
    fl.l_len = 0;
    // SAFETY: the descriptor is open for the life of `file` and `fl` is a
    // valid `struct flock` that fcntl only reads.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// Open `path` for `access` in `mode`, taking rrdtool's lock first.
///
/// # Errors
/// [`OpenError`] for the step that failed.
pub fn open(path: &Path, access: Access, mode: IoMode) -> Result<Opened, OpenError> {
    let write = access == Access::Write;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .open(path)
        .map_err(OpenError::Open)?;
    match lock(&file, write) {
        Ok(true) => {}
        Ok(false) => return Err(OpenError::Locked),
        Err(e) => return Err(OpenError::Other(e)),
    }
    let io: Box<dyn RrdIo> = match mode {
        IoMode::Mmap | IoMode::Mmap2Pages => {
            Box::new(MmapIo::open(&file, access, mode).map_err(OpenError::Map)?)
        }
        IoMode::Fd => Box::new(
            FdIo::open(file.try_clone().map_err(OpenError::Other)?, access)
                .map_err(OpenError::Other)?,
        ),
        IoMode::Direct => Box::new(
            DirectIo::open(path, file.try_clone().map_err(OpenError::Other)?, write)
                .map_err(OpenError::Map)?,
        ),
    };
    Ok(Opened { file, io })
}
