//! Memory mappings with bbolt's knobs: raw mmap flags (`MmapFlags`),
//! an initial mapping length (`InitialMmapSize`), madvise advice, mlock.
//!
//! A [`Mapping`] is read-only and shared (`PROT_READ`, `MAP_SHARED`), as
//! bbolt maps its data file. It may be longer than the file (bbolt rounds
//! the length up to a power of two), but [`Mapping::bytes`] only ever
//! hands out the bytes below the file's length at mapping time.
//!
//! A [`FileMap`] is a mapping of a length the caller knows, made with one
//! `mmap(2)` and no other call: shared and writable for an engine that
//! updates a file in place (rrdtool's `update`), private and read-only for
//! its reads, shared and read-only for the mmaptest benchmark.
//!
//! **The SIGBUS contract.** Touching a mapped page past the *current* end
//! of the file kills the process with SIGBUS. A mapping is therefore only
//! safe while no other process truncates the file below the length seen
//! at mapping time; bbolt relies on the same rule and on `flock` to keep
//! cooperating processes out. Tools that watch files owned by someone else
//! (the inspector) must not read through a mapping: they use
//! [`crate::os::io::QuietSource`] and mincore, which cannot fault.

use std::fs::File;
use std::io;

use memmap2::{Mmap, MmapMut, MmapOptions};
use thiserror::Error;

/// madvise advice applied to a whole mapping after it is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Advice {
    /// `MADV_NORMAL`: the kernel's default read-around on faults.
    Normal,
    /// `MADV_RANDOM`: no read-around; every cold access faults one page.
    /// bbolt applies this to every mapping (`db.go`, `mmap`).
    #[default]
    Random,
    /// `MADV_SEQUENTIAL`: aggressive read-ahead on faults.
    Sequential,
    /// `MADV_WILLNEED`: start asynchronous read-ahead of the whole range.
    WillNeed,
    /// `MADV_HUGEPAGE`: on a file mapping, a fault that must read reads
    /// the whole 2 MiB-aligned block around it into one huge folio (4 MiB
    /// of read-ahead unless the range is also `MADV_RANDOM`), and a fault on
    /// a cached 2 MiB folio maps it with one PMD entry instead of 512 PTEs
    /// (Linux `mm/filemap.c`, `do_sync_mmap_readahead` and
    /// `filemap_map_pages`). That needs a file system whose page cache
    /// holds large folios (ext4 and XFS on current kernels) and a 2
    /// MiB-aligned mapping, which the kernel chooses for file mappings of
    /// 2 MiB or more. A long scan reads the
    /// device in 2 MiB requests; a random lookup reads 2 MiB for one page.
    HugePage,
}

impl Advice {
    /// Name as accepted on command lines (`normal`, `random`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Advice::Normal => "normal",
            Advice::Random => "random",
            Advice::Sequential => "sequential",
            Advice::WillNeed => "willneed",
            Advice::HugePage => "hugepage",
        }
    }

    /// Parse a name as printed by [`Advice::name`].
    #[must_use]
    pub fn from_name(s: &str) -> Option<Advice> {
        [Advice::Normal, Advice::Random, Advice::Sequential, Advice::WillNeed, Advice::HugePage]
            .into_iter()
            .find(|a| a.name() == s)
    }

    fn to_memmap(self) -> memmap2::Advice {
        match self {
            Advice::Normal => memmap2::Advice::Normal,
            Advice::Random => memmap2::Advice::Random,
            Advice::Sequential => memmap2::Advice::Sequential,
            Advice::WillNeed => memmap2::Advice::WillNeed,
            Advice::HugePage => memmap2::Advice::HugePage,
        }
    }
}

/// How to map a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapOptions {
    /// Extra `mmap(2)` flags OR-ed into `MAP_SHARED`, as bbolt's
    /// `Options.MmapFlags`: in practice `libc::MAP_POPULATE`, which
    /// faults the whole mapping in (with read-ahead) before `mmap`
    /// returns. Also accepted: `MAP_NORESERVE`, `MAP_HUGETLB`,
    /// `MAP_STACK`; any other bit is refused with
    /// [`MapError::UnsupportedFlags`].
    pub flags: i32,
    /// Advice applied after mapping; `None` leaves the kernel default.
    pub advice: Option<Advice>,
    /// Minimum mapping length in bytes (bbolt `InitialMmapSize`). The
    /// mapping is `max(file length, min_len)` bytes long; it never
    /// enlarges the file.
    pub min_len: u64,
    /// `mlock` the mapped bytes that lie inside the file (bbolt `Mlock`).
    pub mlock: bool,
}

impl Default for MapOptions {
    /// bbolt's defaults: no extra flags, `MADV_RANDOM`, no minimum, no
    /// mlock.
    fn default() -> Self {
        MapOptions { flags: 0, advice: Some(Advice::Random), min_len: 0, mlock: false }
    }
}

/// Why a file could not be mapped.
#[derive(Debug, Error)]
pub enum MapError {
    /// `flags` holds bits mapwise does not pass on.
    #[error(
        "unsupported mmap flags {0:#x} (supported: MAP_POPULATE, MAP_NORESERVE, MAP_HUGETLB, MAP_STACK)"
    )]
    UnsupportedFlags(i32),
    /// The file is empty; a zero-length mapping is impossible.
    #[error("cannot map an empty file")]
    Empty,
    /// The mapping length does not fit in this address space.
    #[error("mapping of {0} bytes does not fit in the address space")]
    TooLarge(u64),
    /// `fstat`, `mmap`, `madvise` or `mlock` failed.
    #[error("{call} failed")]
    Sys {
        /// The failing call.
        call: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A read-only shared mapping of a file.
#[derive(Debug)]
pub struct Mapping {
    map: Mmap,
    file_len: u64,
    locked: bool,
}

impl Mapping {
    /// Map `file` with `opts`.
    ///
    /// # Safety
    /// The SIGBUS contract of the module docs: until the mapping is
    /// dropped, no process may truncate the file below the length it has
    /// now, nor write bytes that a slice from [`Mapping::bytes`] covers
    /// while that slice lives. bbolt keeps both with `flock` (one writer
    /// process or many readers) and its freelist (a page a read
    /// transaction can reach is never rewritten before it ends).
    ///
    /// # Errors
    /// [`MapError`] naming the failing step.
    pub unsafe fn map(file: &File, opts: &MapOptions) -> Result<Mapping, MapError> {
        let known = libc::MAP_POPULATE | libc::MAP_NORESERVE | libc::MAP_HUGETLB | libc::MAP_STACK;
        if opts.flags & !known != 0 {
            return Err(MapError::UnsupportedFlags(opts.flags & !known));
        }
        let file_len =
            file.metadata().map_err(|source| MapError::Sys { call: "fstat", source })?.len();
        if file_len == 0 {
            return Err(MapError::Empty);
        }
        let len = file_len.max(opts.min_len);
        let len_usize = usize::try_from(len).map_err(|_| MapError::TooLarge(len))?;
        let mut mo = MmapOptions::new();
        mo.len(len_usize);
        if opts.flags & libc::MAP_POPULATE != 0 {
            mo.populate();
        }
        if opts.flags & libc::MAP_NORESERVE != 0 {
            mo.no_reserve_swap();
        }
        if opts.flags & libc::MAP_HUGETLB != 0 {
            mo.huge(None);
        }
        if opts.flags & libc::MAP_STACK != 0 {
            mo.stack();
        }
        // SAFETY: the mapping is read-only and shared. memmap2 requires
        // that the file is not modified or truncated behind our back while
        // slices into the mapping are alive: this function's own contract,
        // which its caller keeps; `Mapping::bytes` never hands out bytes
        // past the length seen here.
        let map =
            unsafe { mo.map(file) }.map_err(|source| MapError::Sys { call: "mmap", source })?;
        if let Some(advice) = opts.advice {
            map.advise(advice.to_memmap())
                .map_err(|source| MapError::Sys { call: "madvise", source })?;
        }
        let mut m = Mapping { map, file_len, locked: false };
        if opts.mlock {
            m.lock()?;
        }
        Ok(m)
    }

    fn lock(&mut self) -> Result<(), MapError> {
        let len =
            usize::try_from(self.file_len.min(self.map.len() as u64)).unwrap_or(self.map.len());
        // SAFETY: `[ptr, ptr + len)` lies inside our live mapping (len is
        // at most the mapping length); mlock only pins pages, it neither
        // reads nor writes them through Rust references.
        unsafe { rustix::mm::mlock(self.map.as_ptr().cast_mut().cast(), len) }
            .map_err(|e| MapError::Sys { call: "mlock", source: e.into() })?;
        self.locked = true;
        Ok(())
    }

    /// The file's bytes as mapped: `[0, file length at mapping time)`.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        let n = usize::try_from(self.file_len).unwrap_or(usize::MAX).min(self.map.len());
        self.map.get(..n).unwrap_or_default()
    }

    /// The mapped bytes `[0, min(len, mapping length))`, for an engine
    /// that has grown the file to at least `len` bytes since mapping it
    /// (bbolt's writer grows the file under a mapping made longer than
    /// the file). The SIGBUS contract of the module applies to `len`: the
    /// caller must know the file is at least that long and that nobody
    /// shrinks it while the slice lives.
    #[must_use]
    pub fn bytes_to(&self, len: u64) -> &[u8] {
        let n = usize::try_from(len).unwrap_or(usize::MAX).min(self.map.len());
        self.map.get(..n).unwrap_or_default()
    }

    /// `mlock` the first `min(len, mapping length)` bytes, after the file
    /// grew to `len` bytes (bbolt `DB.mrelock` after `DB.grow`). Locking
    /// a range again is harmless.
    ///
    /// # Errors
    /// [`MapError::Sys`] naming `mlock`.
    pub fn lock_to(&self, len: u64) -> Result<(), MapError> {
        let n = usize::try_from(len.min(self.map.len() as u64)).unwrap_or(self.map.len());
        // SAFETY: `[ptr, ptr + n)` lies inside our live mapping (n is at
        // most the mapping length); mlock only pins pages, it neither
        // reads nor writes them through Rust references.
        unsafe { rustix::mm::mlock(self.map.as_ptr().cast_mut().cast(), n) }
            .map_err(|e| MapError::Sys { call: "mlock", source: e.into() })
    }

    /// `madvise(MADV_WILLNEED)` on the bytes `[offset, offset + len)` of
    /// the mapping (byte offsets into the file; widened to whole OS pages,
    /// clipped to the file length at mapping time): the kernel starts
    /// reading them into the page cache asynchronously and returns. It
    /// maps nothing and does not change the mapping's advice. Advisory: an
    /// empty or out-of-range request does nothing, and errors are ignored.
    pub fn will_need(&self, offset: u64, len: u64) {
        let limit = self.bytes().len() as u64;
        let end = offset.saturating_add(len).min(limit);
        if offset >= end {
            return;
        }
        let (Ok(off), Ok(n)) = (usize::try_from(offset), usize::try_from(end - offset)) else {
            return;
        };
        let _ = self.map.advise_range(memmap2::Advice::WillNeed, off, n);
    }

    /// Whether the OS page holding byte `offset` of the mapping is in the
    /// page cache (`mincore(2)` of that one page: ~0.3 µs, and it never
    /// faults or reads the page). `false` past the file length seen at
    /// mapping time and when mincore fails. Where the kernel hides
    /// residency (a file the caller neither owns nor may write) mincore
    /// says resident for every page, so this says `true`.
    #[must_use]
    pub fn is_resident(&self, offset: u64) -> bool {
        let bytes = self.bytes();
        let Ok(at) = usize::try_from(offset) else {
            return false;
        };
        if at >= bytes.len() {
            return false;
        }
        let page = usize::try_from(crate::os::residency::os_page_size()).unwrap_or(4096);
        let start = at - at % page;
        let mut vec = [0u8; 1];
        #[expect(
            clippy::disallowed_methods,
            reason = "one page of an engine's own mapping, for its prefetch sink"
        )]
        // SAFETY: the mapping starts page aligned (mmap's address) and
        // `start` is a page-aligned offset below the file length seen at
        // mapping time, so `[ptr + start, ptr + start + 1)` lies in one
        // page of our own live mapping; `vec` has room for the one byte
        // mincore writes for that one page. mincore reads page tables and
        // the page cache only: it never faults the page in or touches its
        // bytes.
        let rc = unsafe {
            libc::mincore(
                self.map.as_ptr().add(start).cast_mut().cast(),
                1,
                vec.as_mut_ptr().cast(),
            )
        };
        rc == 0 && vec[0] & 1 == 1
    }

    /// Ask the CPU to pull the bytes `[offset, offset + len)` of the
    /// mapping (clipped to the file length at mapping time) into its
    /// caches: one x86-64 `prefetcht0` per 64-byte line; nothing on other
    /// architectures. A prefetch is a hint the CPU drops when the address
    /// has no page-table entry yet, so it never faults, reads nothing from
    /// the file and never blocks; it only hides memory latency for mapped
    /// pages (a warm scan's next leaves).
    pub fn cache(&self, offset: u64, len: u64) {
        let bytes = self.bytes();
        let end = offset.saturating_add(len).min(bytes.len() as u64);
        let (Ok(start), Ok(end)) = (usize::try_from(offset), usize::try_from(end)) else {
            return;
        };
        let Some(range) = bytes.get(start..end) else {
            return;
        };
        #[cfg(target_arch = "x86_64")]
        for line in range.chunks(64) {
            // SAFETY: `prefetcht0` (SSE, part of the x86-64 baseline) on
            // an address inside our own live mapping. A prefetch is not an
            // architectural access: it cannot fault (an unmapped or
            // truncated page is dropped silently, no SIGBUS), reads no
            // memory into the program and writes nothing.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    line.as_ptr().cast(),
                );
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = range;
    }

    /// File length in bytes when mapped.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Length of the mapping in bytes (may exceed the file length).
    #[must_use]
    pub fn mapped_len(&self) -> u64 {
        self.map.len() as u64
    }

    /// `true` when the mapped file bytes are mlocked.
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.locked
    }

    /// The underlying memmap2 mapping (for residency actions on it).
    #[must_use]
    pub fn mmap(&self) -> &Mmap {
        &self.map
    }
}

/// A whole-file mapping of a length the caller gives (see the module
/// docs): no `fstat`, no advice and no populate unless asked, so one
/// [`FileMap`] is one `mmap(2)`, as the C tools the engines reproduce
/// make it. Unmapped when dropped.
#[derive(Debug)]
pub struct FileMap {
    map: FileMapKind,
}

#[derive(Debug)]
enum FileMapKind {
    Writable(MmapMut),
    ReadOnly(Mmap),
}

impl FileMap {
    /// `PROT_READ | PROT_WRITE`, `MAP_SHARED`: `len` bytes of `file` from
    /// offset 0, written in place through [`FileMap::bytes_mut`].
    ///
    /// # Safety
    /// The SIGBUS contract of the module docs for `len` bytes, and no
    /// other process or mapping writes the bytes while a slice from
    /// [`FileMap::bytes`] covers them (rrdtool's `fcntl` write lock keeps
    /// both for a cooperating process).
    ///
    /// # Errors
    /// The `mmap` failure.
    pub unsafe fn shared_writable(file: &File, len: usize) -> io::Result<FileMap> {
        // SAFETY: this function's own contract, which its caller keeps.
        let map = unsafe { MmapOptions::new().len(len).map_mut(file)? };
        Ok(FileMap { map: FileMapKind::Writable(map) })
    }

    /// `PROT_READ`, `MAP_PRIVATE` (with `MAP_POPULATE` when `populate`):
    /// `len` bytes of `file` from offset 0, for reading only.
    ///
    /// # Safety
    /// As [`FileMap::shared_writable`]: nobody truncates the file below
    /// `len` bytes nor writes the bytes a live slice covers.
    ///
    /// # Errors
    /// The `mmap` failure.
    pub unsafe fn private_read_only(
        file: &File,
        len: usize,
        populate: bool,
    ) -> io::Result<FileMap> {
        let o = read_only_options(len, populate);
        // SAFETY: this function's own contract, which its caller keeps.
        let map = unsafe { o.map_copy_read_only(file)? };
        Ok(FileMap { map: FileMapKind::ReadOnly(map) })
    }

    /// `PROT_READ`, `MAP_SHARED` (with `MAP_POPULATE` when `populate`):
    /// `len` bytes of `file` from offset 0, for reading only.
    ///
    /// # Safety
    /// As [`FileMap::private_read_only`].
    ///
    /// # Errors
    /// The `mmap` failure.
    pub unsafe fn shared_read_only(file: &File, len: usize, populate: bool) -> io::Result<FileMap> {
        let o = read_only_options(len, populate);
        // SAFETY: this function's own contract, which its caller keeps.
        let map = unsafe { o.map(file)? };
        Ok(FileMap { map: FileMapKind::ReadOnly(map) })
    }

    /// The mapped bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            FileMapKind::Writable(m) => m,
            FileMapKind::ReadOnly(m) => m,
        }
    }

    /// The mapped bytes, writable: `None` for a read-only mapping.
    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match &mut self.map {
            FileMapKind::Writable(m) => Some(m),
            FileMapKind::ReadOnly(_) => None,
        }
    }

    /// `true` for [`FileMap::shared_writable`].
    #[must_use]
    pub fn is_writable(&self) -> bool {
        matches!(self.map, FileMapKind::Writable(_))
    }

    /// `madvise(advice)` of the bytes `[offset, offset + len)` (the start
    /// aligned down to its page).
    ///
    /// # Errors
    /// The `madvise` failure, or a range outside the mapping.
    pub fn advise(&self, advice: Advice, offset: usize, len: usize) -> io::Result<()> {
        match &self.map {
            FileMapKind::Writable(m) => m.advise_range(advice.to_memmap(), offset, len),
            FileMapKind::ReadOnly(m) => m.advise_range(advice.to_memmap(), offset, len),
        }
    }

    /// `MADV_WILLNEED` on every range `(offset, len)` of the mapping: one
    /// `process_madvise(PIDFD_SELF, …)` for all of them (Linux 6.14: any
    /// advice on the calling process, one `mmap_lock` round), or, where
    /// that call is refused (older kernels) or there is one range, one
    /// `madvise` per range.
    ///
    /// # Errors
    /// A failed `madvise`, or a range outside the mapping.
    pub fn will_need_all(&self, ranges: &[(usize, usize)]) -> io::Result<()> {
        let bytes = self.bytes();
        let inside = ranges
            .iter()
            .all(|&(off, len)| off.checked_add(len).is_some_and(|end| end <= bytes.len()));
        if ranges.len() > 1 && inside {
            let base = bytes.as_ptr();
            let iov: Vec<libc::iovec> = ranges
                .iter()
                .map(|&(off, len)| libc::iovec {
                    iov_base: base.wrapping_add(off).cast_mut().cast(),
                    iov_len: len,
                })
                .collect();
            let total: usize = ranges.iter().map(|r| r.1).sum();
            // SAFETY: every iovec lies inside this live mapping (checked
            // above); the kernel only reads the vector, and MADV_WILLNEED
            // neither frees, moves nor changes memory.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_process_madvise,
                    PIDFD_SELF,
                    iov.as_ptr(),
                    iov.len(),
                    libc::MADV_WILLNEED,
                    0u32,
                )
            };
            if usize::try_from(r).is_ok_and(|n| n == total) {
                return Ok(());
            }
        }
        for &(off, len) in ranges {
            self.advise(Advice::WillNeed, off, len)?;
        }
        Ok(())
    }
}

/// `len` bytes from offset 0, with `MAP_POPULATE` when `populate`.
fn read_only_options(len: usize, populate: bool) -> MmapOptions {
    let mut o = MmapOptions::new();
    o.len(len);
    if populate {
        o.populate();
    }
    o
}

/// `PIDFD_SELF` (Linux 6.14): "the calling process" for `pidfd` calls.
const PIDFD_SELF: libc::c_int = -10000;

/// bbolt's mapping length for a file of `size` bytes (`db.go`,
/// `mmapSize`): powers of two from 32 KiB up to 1 GiB, then multiples of
/// 1 GiB, rounded to `page_size` and capped at 2^48 - 1 bytes.
#[must_use]
pub fn bolt_mmap_size(size: u64, page_size: u64) -> u64 {
    const MAX_MMAP_STEP: u64 = 1 << 30;
    const MAX_MAP_SIZE: u64 = 0xFFFF_FFFF_FFFF;
    let mut s = size;
    if let Some(p) = (15..=30).map(|i| 1u64 << i).find(|&p| size <= p) {
        return p;
    }
    if !s.is_multiple_of(MAX_MMAP_STEP) {
        s = (s / MAX_MMAP_STEP + 1) * MAX_MMAP_STEP;
    }
    if page_size > 0 && !s.is_multiple_of(page_size) {
        s = (s / page_size + 1) * page_size;
    }
    s.min(MAX_MAP_SIZE)
}

/// The message [`exit_cleanly_on_sigbus`] prints.
const SIGBUS_MESSAGE: &[u8] = b"\nmapwise: SIGBUS: a mapped file shrank while it was being read \
(another process truncated it). Nothing was written. Readers that must survive \
this use `inspector`, which never reads through a mapping.\n";

extern "C" fn on_sigbus(_signal: libc::c_int) {
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is
    // a static byte string. Nothing else runs in the handler.
    unsafe {
        let _ = libc::write(2, SIGBUS_MESSAGE.as_ptr().cast(), SIGBUS_MESSAGE.len());
        libc::_exit(3);
    }
}

/// Make a process that reads through mappings (the engines' command
/// lines) end with a clear message and exit status 3 when a mapped file is
/// truncated under it (SIGBUS, see the module docs), instead of the bare
/// "Bus error" of the default action. Call once at program start.
pub fn exit_cleanly_on_sigbus() {
    // SAFETY: installs a handler that only calls async-signal-safe
    // functions (see `on_sigbus`); `sigaction` with a zeroed mask and no
    // flags is a plain, well-defined registration.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&raw mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &raw const action, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bolt_mmap_sizes() {
        assert_eq!(bolt_mmap_size(0, 4096), 32 << 10);
        assert_eq!(bolt_mmap_size(65536, 4096), 65536);
        assert_eq!(bolt_mmap_size(65537, 4096), 131072);
        assert_eq!(bolt_mmap_size((1 << 30) + 1, 4096), 2 << 30);
    }

    #[test]
    fn refuses_unknown_flags_and_empty_files() {
        let f = tempfile::tempfile().unwrap();
        // SAFETY: an anonymous temporary file nobody else can open, so
        // nobody truncates or writes it (and an empty file is not mapped).
        let empty = unsafe { Mapping::map(&f, &MapOptions::default()) };
        assert!(matches!(empty, Err(MapError::Empty)));
        let opts = MapOptions { flags: libc::MAP_FIXED, ..MapOptions::default() };
        // SAFETY: as above; unknown flags are refused before any mapping.
        let refused = unsafe { Mapping::map(&f, &opts) };
        assert!(matches!(refused, Err(MapError::UnsupportedFlags(_))));
    }
}
