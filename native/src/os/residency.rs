//! Page-cache residency of files: which pages of a file are in the Linux page
//! cache, and the tools to change that (evict, touch/populate, lock).
//!
//! * [`sample`] / [`sample_range`] map the file read-only (`PROT_READ`,
//!   `MAP_SHARED`, no populate), ask `mincore(2)` one bounded window at a time
//!   and unmap again. They never read a mapped byte, so watching a file never
//!   changes its residency and never dies of `SIGBUS` when another process
//!   truncates the file meanwhile.
//! * [`cachestat`] is the raw `cachestat(2)` call (Linux 6.5): counts of
//!   cached, dirty, under-writeback and evicted pages without any mapping.
//! * [`evict`] is `posix_fadvise(POSIX_FADV_DONTNEED)` (`vmtouch -e`),
//!   [`advise`] gives any `posix_fadvise(2)` advice ([`FileAdvice`]),
//!   [`touch`] populates with `MADV_POPULATE_READ` (`vmtouch -t`), [`lock`]
//!   maps and `mlock(2)`s (`vmtouch -l`), [`release_mapping`] drops the pages
//!   of one of our own mappings so that eviction can take them.
//!
//! # Trust
//!
//! Since Linux 5.2 `mincore(2)` reports the real cache state of a file page
//! only to a caller that owns the file (or has `CAP_FOWNER`) or may open it for
//! writing; everybody else is told that **every page is resident**. Every
//! [`Residency`] therefore carries a [`Trust`]: when it is
//! [`Trust::Unknown`], show "unknown", never 100 %.
//!
//! # Units
//!
//! Offsets and lengths are in bytes, counts in OS pages of
//! [`os_page_size`] bytes (4096 on x86-64). Except for [`cachestat`] (which
//! passes the kernel's convention through), a `len` of 0 is an empty range and
//! [`TO_EOF`] (`u64::MAX`) means "to the end of the file"; ranges are clipped
//! to the file's size at the time of the call.
//!
//! # File systems
//!
//! On tmpfs/shmem (`/dev/shm`, `memfd`) the page cache is the only copy of the
//! data: `POSIX_FADV_DONTNEED` does nothing there, so [`evict`] succeeds and
//! every page stays resident. Residency of large folios (multi-page folios
//! in the page cache, which ext4 uses since Linux 6.16) is still reported per
//! OS page, but changes in folio-sized steps: `DONTNEED` on a range drops only
//! the folios wholly inside it (docs/residency.md, "Large folios").

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

use rustix::mm::{MapFlags, ProtFlags};

/// Pass as `len` to mean "from `offset` to the end of the file".
pub const TO_EOF: u64 = u64::MAX;

/// Bytes of file mapped per `mincore(2)` call (and per populate window): 64 Ki
/// pages of 4 KiB. Bounds the mapping, the per-call byte vector (one byte per
/// page) and the page tables a populate creates.
const WINDOW_BYTES: u64 = 256 * 1024 * 1024;

/// Bytes per OS page (`sysconf(_SC_PAGESIZE)`), the unit of every residency
/// bitmap. Read once per process; 4096 if the system cannot say.
pub fn os_page_size() -> u64 {
    static PAGE_SIZE: OnceLock<u64> = OnceLock::new();
    *PAGE_SIZE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions; it only reads a constant.
        let raw = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        match u64::try_from(raw) {
            Ok(size) if size.is_power_of_two() => size,
            _ => 4096,
        }
    })
}

/// Errors of the residency layer. Each names the system call, the byte range
/// (or address range) it was asked for, and carries the OS error as `source`.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum Error {
    /// `fstat(2)` of the file failed (needed for its size and owner).
    #[error("fstat(2) of the file failed")]
    Fstat {
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `mmap(2)` of a byte range of the file failed (e.g. `EACCES`: the file
    /// is not open for reading; `ENODEV`: the file cannot be mapped, such as a
    /// directory or a pipe; `EOVERFLOW`: the range does not fit this process's
    /// address space).
    #[error("mmap(2) of file bytes {offset}..{} failed", offset.saturating_add(*len))]
    Mmap {
        /// First byte of the range.
        offset: u64,
        /// Bytes in the range.
        len: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `mincore(2)` on our mapping of a byte range failed.
    #[error("mincore(2) of file bytes {offset}..{} failed", offset.saturating_add(*len))]
    Mincore {
        /// First byte of the range.
        offset: u64,
        /// Bytes in the range.
        len: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `cachestat(2)` failed: `ENOSYS` before Linux 6.5, `EPERM` when this
    /// process neither owns nor may write the file, `EOPNOTSUPP` on hugetlbfs.
    #[error("cachestat(2) of file bytes {offset}..{} failed", offset.saturating_add(*len))]
    Cachestat {
        /// First byte of the range.
        offset: u64,
        /// Bytes in the range (0 = to end of file).
        len: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `posix_fadvise(2)` failed.
    #[error("posix_fadvise({advice}) of file bytes {offset}..{} failed", offset.saturating_add(*len))]
    Fadvise {
        /// The advice, e.g. `POSIX_FADV_DONTNEED`.
        advice: &'static str,
        /// First byte of the range.
        offset: u64,
        /// Bytes in the range.
        len: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `madvise(2)` on our mapping of a byte range of the file failed (e.g.
    /// `EFAULT` from `MADV_POPULATE_READ` when the file shrank meanwhile).
    #[error("madvise({advice}) of file bytes {offset}..{} failed", offset.saturating_add(*len))]
    Madvise {
        /// The advice, e.g. `MADV_POPULATE_READ`.
        advice: &'static str,
        /// First byte of the range.
        offset: u64,
        /// Bytes in the range.
        len: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `pread(2)` of one byte (the read fallback of [`touch`]) failed.
    #[error("pread(2) of file byte {offset} failed")]
    Pread {
        /// The byte read.
        offset: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `mlock(2)` of our mapping of a byte range failed (`ENOMEM`/`EPERM`:
    /// `RLIMIT_MEMLOCK` is too small and the process lacks `CAP_IPC_LOCK`;
    /// `ENOMEM` also when the file shrank meanwhile).
    #[error("mlock(2) of file bytes {offset}..{} failed", offset.saturating_add(*len))]
    Mlock {
        /// First byte of the range.
        offset: u64,
        /// Bytes in the range.
        len: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// [`release_mapping`] failed: `madvise(MADV_DONTNEED)` on the caller's
    /// mapping, or the check (via `/proc/self/maps`) that the mapping is a
    /// shared one, whose contents `MADV_DONTNEED` cannot change.
    #[error("madvise(MADV_DONTNEED) of our mapping at {addr:#x}..{:#x} failed", addr.saturating_add(*len))]
    Release {
        /// First address of the mapping (page aligned).
        addr: usize,
        /// Bytes of the mapping.
        len: usize,
        /// The OS error (`InvalidInput` when the mapping is private or anonymous).
        #[source]
        source: io::Error,
    },
    /// The residency bitmap for the range could not be allocated.
    #[error("no memory for the residency bitmap of file bytes {offset}..{} ({pages} pages)", offset.saturating_add(*len))]
    Bitmap {
        /// First byte of the range.
        offset: u64,
        /// Bytes in the range.
        len: u64,
        /// OS pages in the range.
        pages: u64,
        /// `OutOfMemory`.
        #[source]
        source: io::Error,
    },
}

/// Whether the kernel tells this process the truth about a file's residency.
///
/// `mincore(2)` lies to a process that neither owns the file (nor has
/// `CAP_FOWNER`) nor may write it: it reports **every page resident**. When
/// the trust is [`Trust::Unknown`] a [`Residency`] still carries the bitmap
/// the kernel returned, but callers must present the residency as "unknown",
/// never as 100 % (see [`Residency::known_resident_pages`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trust {
    /// The counts are the kernel's real page-cache state.
    Known,
    /// The counts may be invented by the kernel; show "unknown".
    Unknown(UnknownReason),
}

impl Trust {
    /// `true` for [`Trust::Known`].
    pub fn is_known(self) -> bool {
        matches!(self, Trust::Known)
    }
}

impl fmt::Display for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trust::Known => f.write_str("known"),
            Trust::Unknown(reason) => write!(f, "unknown: {reason}"),
        }
    }
}

/// Why a [`Residency`] cannot be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnknownReason {
    /// `cachestat(2)` answered `EPERM`: this process neither owns the file nor
    /// may write it, so the kernel hides its page-cache state (and `mincore(2)`
    /// reports every page resident).
    CachestatDenied,
    /// `cachestat(2)` is unavailable, and by the kernel's `mincore(2)` rule this
    /// process may not see the file's page-cache state: it neither owns the
    /// file, nor has `CAP_FOWNER`, nor may write it.
    NoWritePermission,
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnknownReason::CachestatDenied => {
                "the kernel refused cachestat(2) because this user neither owns \
                 nor may write the file; mincore(2) would report every page as \
                 resident (run as the file's owner or root)"
            }
            UnknownReason::NoWritePermission => {
                "this user neither owns nor may write the file, so the kernel \
                 reports every page as resident (run as the file's owner or root)"
            }
        })
    }
}

/// Page-cache counts of a byte range from `cachestat(2)`, in pages of
/// [`os_page_size`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CacheStat {
    /// Pages of the range in the page cache (resident). Unlike `mincore(2)`,
    /// this includes pages whose read is still in flight, so right after a
    /// read it can exceed a `mincore(2)` count of the same range.
    pub cache: u64,
    /// Of those, dirty (written, not yet written back).
    pub dirty: u64,
    /// Of those, under writeback.
    pub writeback: u64,
    /// Pages that were cached and were evicted **by reclaim** (not by
    /// `POSIX_FADV_DONTNEED` or truncation).
    pub evicted: u64,
    /// Of the evicted pages, those whose refault would count as part of the
    /// active working set.
    pub recently_evicted: u64,
}

impl CacheStat {
    /// The counts of two ranges together.
    #[must_use]
    pub fn plus(self, o: &CacheStat) -> CacheStat {
        CacheStat {
            cache: self.cache.saturating_add(o.cache),
            dirty: self.dirty.saturating_add(o.dirty),
            writeback: self.writeback.saturating_add(o.writeback),
            evicted: self.evicted.saturating_add(o.evicted),
            recently_evicted: self.recently_evicted.saturating_add(o.recently_evicted),
        }
    }
}

/// Per-page residency of a byte range of a file, sampled once (a scan, not an
/// atomic snapshot: read-ahead may land while it runs).
///
/// If [`trust`](Self::trust) is [`Trust::Unknown`], `bitmap` and
/// `resident_pages` are what the kernel returned, typically "everything
/// resident": show "unknown", never 100 %.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Residency {
    /// First byte of the sampled range (page aligned), a file offset.
    pub offset: u64,
    /// Bytes sampled: the file's length at sampling time minus `offset`,
    /// clipped to the requested range.
    pub len: u64,
    /// Bytes per OS page.
    pub page_size: u64,
    /// Bit `i` (LSB-first within each word, word `i / 64`) is set when OS
    /// page `i` of the range (file bytes `offset + i * page_size ..`) is
    /// resident. `total_pages.div_ceil(64)` words; unused high bits are 0.
    pub bitmap: Vec<u64>,
    /// Set bits of `bitmap`: resident OS pages of the range.
    pub resident_pages: u64,
    /// OS pages in the range: `ceil(len / page_size)`.
    pub total_pages: u64,
    /// Whether the counts are the kernel's real answer.
    pub trust: Trust,
    /// Counts from `cachestat(2)` for the same range, when it answered: the
    /// sum of its counts of each 2 MiB block, each taken just before that
    /// block's `mincore(2)`, so a settling read-ahead can make them differ
    /// slightly from `resident_pages`.
    pub cachestat: Option<CacheStat>,
}

impl Residency {
    fn empty(offset: u64, trust: Trust) -> Residency {
        Residency {
            offset,
            len: 0,
            page_size: os_page_size(),
            bitmap: Vec::new(),
            resident_pages: 0,
            total_pages: 0,
            trust,
            cachestat: None,
        }
    }

    /// Whether OS page `page` **of the sampled range** (0 = the page at
    /// [`offset`](Self::offset)) is resident; `false` outside the range.
    pub fn is_resident(&self, page: u64) -> bool {
        if page >= self.total_pages {
            return false;
        }
        let word = usize::try_from(page / 64).ok();
        word.and_then(|w| self.bitmap.get(w)).is_some_and(|w| w >> (page % 64) & 1 == 1)
    }

    /// Resident OS pages overlapping the file bytes
    /// `byte_offset..byte_offset + byte_len` (file offsets, like
    /// [`offset`](Self::offset)); the span is clipped to the sampled range,
    /// and an empty span counts 0.
    pub fn resident_in(&self, byte_offset: u64, byte_len: u64) -> u64 {
        let range_end = self.offset.saturating_add(self.len);
        let start = byte_offset.max(self.offset);
        let end = byte_offset.saturating_add(byte_len).min(range_end);
        if byte_len == 0 || start >= end || self.page_size == 0 {
            return 0;
        }
        let first = (start - self.offset) / self.page_size;
        let last = (end - 1 - self.offset) / self.page_size;
        count_bits(&self.bitmap, first, last.min(self.total_pages.saturating_sub(1)))
    }

    /// `Some(resident_pages)` when [`trust`](Self::trust) is known, `None`
    /// when the kernel may have invented the answer ("unknown").
    pub fn known_resident_pages(&self) -> Option<u64> {
        self.trust.is_known().then_some(self.resident_pages)
    }
}

/// Set bits of `bitmap` in the bit index range `first..=last` (bits past
/// its end count 0).
pub(crate) fn count_bits(bitmap: &[u64], first: u64, last: u64) -> u64 {
    let Some(end) = bitmap.len().checked_sub(1) else {
        return 0;
    };
    let (Ok(first_word), Ok(last_word)) = (usize::try_from(first / 64), usize::try_from(last / 64))
    else {
        return 0;
    };
    if first > last || first_word > end {
        return 0;
    }
    let low = u64::MAX << (first % 64);
    let (last_word, high) =
        if last_word > end { (end, u64::MAX) } else { (last_word, u64::MAX >> (63 - last % 64)) };
    let word = |i: usize| bitmap.get(i).copied().unwrap_or(0);
    if first_word == last_word {
        return u64::from((word(first_word) & low & high).count_ones());
    }
    let middle = bitmap.get(first_word + 1..last_word).unwrap_or_default();
    u64::from((word(first_word) & low).count_ones())
        + u64::from((word(last_word) & high).count_ones())
        + middle.iter().map(|w| u64::from(w.count_ones())).sum::<u64>()
}

/// Packs `mincore(2)` bytes (bit 0 = resident) into 64-page words, LSB
/// first; returns the number of resident pages.
fn pack_into(bytes: &[u8], words: &mut [u64]) -> u64 {
    // Multiplying eight 0/1 bytes by this constant gathers them, in order,
    // into the top byte of the product.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    const BIT0: u64 = 0x0101_0101_0101_0101;
    let mut resident = 0u64;
    for (word, chunk) in words.iter_mut().zip(bytes.chunks(64)) {
        let mut w = 0u64;
        let mut eights = chunk.chunks_exact(8);
        for (i, eight) in eights.by_ref().enumerate() {
            let mut le = [0u8; 8];
            le.copy_from_slice(eight);
            let v = u64::from_le_bytes(le) & BIT0;
            w |= (v.wrapping_mul(GATHER) >> 56) << (8 * i);
        }
        let base = chunk.len() - eights.remainder().len();
        for (i, byte) in eights.remainder().iter().enumerate() {
            w |= u64::from(byte & 1) << (base + i);
        }
        *word = w;
        resident += u64::from(w.count_ones());
    }
    resident
}

/// The file's current size in bytes.
fn file_size(file: &File) -> Result<u64, Error> {
    file_stat(file).map(|(size, _)| size)
}

/// The file's current size in bytes, and whether it is a regular file.
fn file_stat(file: &File) -> Result<(u64, bool), Error> {
    let stat = rustix::fs::fstat(file).map_err(|e| Error::Fstat { source: e.into() })?;
    let regular = rustix::fs::FileType::from_raw_mode(stat.st_mode).is_file();
    Ok((u64::try_from(stat.st_size).unwrap_or(0), regular))
}

/// A byte range of the file, start page aligned, end clipped to the file size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
}

impl Span {
    /// `offset` rounded down to a page, `offset + len` clipped to `size`;
    /// empty (at the rounded offset) when no requested byte exists.
    fn clip(offset: u64, len: u64, size: u64, page: u64) -> Span {
        let start = offset - offset % page;
        let end = offset.saturating_add(len).min(size);
        if end <= offset {
            return Span { start, end: start };
        }
        Span { start, end }
    }

    fn len(self) -> u64 {
        self.end - self.start
    }

    fn pages(self, page: u64) -> u64 {
        self.len().div_ceil(page)
    }
}

/// A read-only shared mapping that we own and never read through: its
/// bytes are only handed to syscalls (mincore, madvise, mlock, and
/// `process_vm_readv`, which turns a fault past the end of the file into
/// `EFAULT` instead of `SIGBUS`).
pub(crate) struct Window {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: a Window is an address range owned by this value; it is never
// dereferenced, only passed to mincore/madvise/mlock/munmap, which are safe to
// call from any thread.
unsafe impl Send for Window {}
// SAFETY: as above; &Window exposes no access to the mapped bytes.
unsafe impl Sync for Window {}

impl Window {
    /// Maps `len` (> 0) bytes of `file` from the page-aligned `offset`,
    /// `PROT_READ`, `MAP_SHARED`, without populating.
    pub(crate) fn map(file: &File, offset: u64, len: u64) -> Result<Window, Error> {
        let mmap_err = |source| Error::Mmap { offset, len, source };
        let bytes = usize::try_from(len)
            .map_err(|_| mmap_err(io::Error::from_raw_os_error(libc::EOVERFLOW)))?;
        if bytes == 0 {
            return Err(mmap_err(io::Error::from_raw_os_error(libc::EINVAL)));
        }
        // SAFETY: a null hint with no MAP_FIXED lets the kernel pick a fresh
        // address range, so no existing memory is replaced. The mapping is
        // never dereferenced by us (only handed to syscalls), so a concurrent
        // truncation of the file cannot raise SIGBUS in this process and the
        // usual "file changed under a &[u8]" hazard of mmap does not apply.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                bytes,
                ProtFlags::READ,
                MapFlags::SHARED,
                file,
                offset,
            )
        }
        .map_err(|e| mmap_err(e.into()))?;
        Ok(Window { ptr, len: bytes })
    }
}

impl Window {
    /// Unmap from this process the pages of the window's bytes
    /// `offset..offset + len` that a copy mapped (`madvise(MADV_DONTNEED)`:
    /// of a shared file mapping it drops only our page-table entries; the
    /// pages stay in the page cache, and with [`Window::advise_random`] the
    /// kernel takes no note of our accesses). Keeps copied pages out of
    /// this process's resident set.
    pub(crate) fn unmap_pages(&self, offset: u64, len: u64) {
        let page = os_page_size();
        let start = offset - offset % page;
        let end = offset.saturating_add(len).min(self.len as u64);
        if end <= start {
            return;
        }
        let (Ok(at), Ok(n)) = (usize::try_from(start), usize::try_from(end - start)) else {
            return;
        };
        // SAFETY: start is page aligned and start..end lies inside this
        // window's mapping, which nothing dereferences; MADV_DONTNEED on a
        // shared file mapping only zaps our page-table entries for it.
        let _ = unsafe {
            rustix::mm::madvise(
                self.ptr.cast::<u8>().add(at).cast(),
                n,
                rustix::mm::Advice::LinuxDontNeed,
            )
        };
    }

    /// `madvise(MADV_RANDOM)` on the whole window: a fault through it then
    /// reads only the page it needs, starts no read-ahead, and the kernel
    /// takes no note of its accesses when it ages the page cache
    /// (`VM_RAND_READ`, `vma_has_recency`).
    pub(crate) fn advise_random(&self) -> io::Result<()> {
        // SAFETY: ptr/len are exactly this window's mapping; MADV_RANDOM
        // only sets a flag on the mapping and changes no memory.
        unsafe { rustix::mm::madvise(self.ptr, self.len, rustix::mm::Advice::Random) }
            .map_err(io::Error::from)
    }

    /// `mincore(2)` of the window's bytes `offset..offset + len` (clipped
    /// to the window) into `vec`, one byte per OS page from the page
    /// holding `offset`; returns the pages written.
    pub(crate) fn mincore_range(
        &self,
        offset: u64,
        len: u64,
        vec: &mut Vec<u8>,
    ) -> io::Result<usize> {
        let page = os_page_size();
        let start = offset - offset % page;
        let end = offset.saturating_add(len).min(self.len as u64);
        if end <= start {
            vec.clear();
            return Ok(0);
        }
        let bytes =
            usize::try_from(end - start).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let pages = usize::try_from((end - start).div_ceil(page)).unwrap_or(usize::MAX);
        vec.clear();
        vec.resize(pages, 0);
        let at = usize::try_from(start).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        #[expect(clippy::disallowed_methods, reason = "this is os::residency")]
        // SAFETY: start is page aligned and start..end lies inside this
        // window's mapping (end clipped to its length); vec holds one byte
        // per page of that range. mincore writes only vec and never faults
        // the file's pages in.
        let rc = unsafe {
            libc::mincore(self.ptr.cast::<u8>().add(at).cast(), bytes, vec.as_mut_ptr().cast())
        };
        if rc == 0 { Ok(pages) } else { Err(io::Error::last_os_error()) }
    }

    /// Copy the window's bytes at each `(offset, buffer)` into the buffer
    /// with one `process_vm_readv(2)` of this process (at most 1024 parts;
    /// more are left for the caller): the kernel reads the mapping for us,
    /// so a page past the end of a truncated file ends the copy with
    /// `EFAULT` instead of `SIGBUS`. Returns the bytes copied, in order: a
    /// short count means the part holding that byte and those after it
    /// were not copied whole.
    ///
    /// Only pages in the page cache should be asked for: a page that is
    /// not would be read from the disk (one page: the window is
    /// [`Window::advise_random`]'d) and stay cached.
    pub(crate) fn copy_out(&self, parts: &mut [(u64, &mut [u8])]) -> io::Result<usize> {
        let parts = parts.get_mut(..parts.len().min(1024)).unwrap_or_default();
        let mut local = Vec::with_capacity(parts.len());
        let mut remote = Vec::with_capacity(parts.len());
        for (offset, buf) in parts.iter_mut() {
            let end = offset.saturating_add(buf.len() as u64);
            if end > self.len as u64 {
                break;
            }
            let at =
                usize::try_from(*offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
            local.push(libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() });
            // SAFETY: pointer arithmetic only: at + len <= self.len, so the
            // address stays inside this window's mapping.
            let base = unsafe { self.ptr.cast::<u8>().add(at) };
            remote.push(libc::iovec { iov_base: base.cast(), iov_len: buf.len() });
        }
        if local.is_empty() {
            return Ok(0);
        }
        let n = u64::try_from(local.len()).unwrap_or(0);
        // SAFETY: every local iovec is a live &mut [u8] we borrow for the
        // call; every remote iovec lies inside this window's mapping in our
        // own address space (checked above), which the kernel reads on our
        // behalf: a fault there (a page past the end of the file) is an
        // EFAULT result, not a signal. Nothing else aliases the buffers.
        let rc = unsafe {
            libc::process_vm_readv(
                libc::getpid(),
                local.as_ptr(),
                n as libc::c_ulong,
                remote.as_ptr(),
                n as libc::c_ulong,
                0,
            )
        };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(usize::try_from(rc).unwrap_or(0)) }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly the mapping created in Window::map, owned
        // by this value and not referenced elsewhere; nothing uses it after.
        let _ = unsafe { rustix::mm::munmap(self.ptr, self.len) };
    }
}

/// What `cachestat(2)` said of a block of a window: no page cached; every
/// page cached, and the previous sample found every one resident (so its
/// bits stand, see [`resample`]); or anything else (then `mincore(2)` tells
/// which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Cold,
    Kept,
    Mixed,
}

/// Pages per block that [`sample_range`] asks `cachestat(2)` about (2 MiB
/// of 4 KiB pages, the size of a large folio): a multiple of 64, so blocks
/// start on bitmap words.
const BLOCK_PAGES: u64 = 512;

/// Pages per part a block that is neither cold nor kept is asked about
/// again (a multiple of 64): a reclaimer that evicts a few stretches of a
/// mostly cached file leaves most parts whole, and a part costs
/// `cachestat(2)` 64 cache entries where `mincore(2)` of it would look up
/// each page.
const PART_PAGES: u64 = 64;

/// `mincore(2)` of the window's bytes from `at` (page aligned), one byte
/// per page into `vec` (as many pages as it holds); `offset` is the
/// window's offset in the file, for the error.
fn mincore_at(window: &Window, at: u64, vec: &mut [u8], offset: u64) -> Result<(), Error> {
    let page = os_page_size();
    let asked = vec.len() as u64 * page;
    let err = |source| Error::Mincore { offset: offset + at, len: asked, source };
    let start = usize::try_from(at).map_err(|_| err(io::Error::from_raw_os_error(libc::EINVAL)))?;
    let bytes = vec.len().saturating_mul(usize::try_from(page).unwrap_or(usize::MAX));
    if start.saturating_add(bytes) > window.len.next_multiple_of(usize::try_from(page).unwrap_or(1))
    {
        return Err(err(io::Error::from_raw_os_error(libc::EINVAL)));
    }
    #[expect(clippy::disallowed_methods, reason = "this is os::residency")]
    // SAFETY: window.ptr is page aligned (returned by mmap) and start is a
    // multiple of the page size, so ptr + start is page aligned; the
    // start..start + bytes range lies within the window's mapping (checked
    // above, up to its last page); vec has one byte per page of it. mincore
    // only writes vec and reads page tables / the page cache; it never
    // faults the file's pages in.
    let rc = unsafe {
        libc::mincore(window.ptr.cast::<u8>().add(start).cast(), bytes, vec.as_mut_ptr().cast())
    };
    if rc == 0 { Ok(()) } else { Err(err(io::Error::last_os_error())) }
}

/// Residency of the whole file: [`sample_range`] from byte 0 to the end of
/// file. See there for errors and trust.
pub fn sample(file: &File) -> Result<Residency, Error> {
    sample_range(file, 0, TO_EOF)
}

/// Residency of the file bytes `offset..offset + len`, sampled once.
///
/// `offset` is rounded down to a page boundary; the range is clipped to the
/// file's size now (pass [`TO_EOF`] for "to the end"), and a zero-length
/// result (empty file, `len == 0`, `offset` at or past the end) returns an
/// empty `Residency` without mapping anything. Pages that vanish because the
/// file is truncated while the scan runs report not-resident.
///
/// The scan maps at most 256 MiB at a time (`PROT_READ`, `MAP_SHARED`, no
/// populate), calls `mincore(2)` into a reused byte vector and unmaps before
/// the next window. It never reads a mapped byte: it does not change
/// residency and cannot die of `SIGBUS`. It first asks `cachestat(2)` for the
/// same range, which fills [`Residency::cachestat`] and decides
/// [`Residency::trust`]; when that answer is trusted, each 2 MiB block for
/// which `cachestat(2)` counts no cached page is reported not resident
/// without `mincore(2)` (a cold 64 GiB sparse file then costs microseconds
/// instead of ~0.2 s of `mincore(2)`).
///
/// The file must be open for reading.
///
/// # Errors
///
/// [`Error::Fstat`], [`Error::Mmap`] (not readable, not mappable, range larger
/// than the address space), [`Error::Mincore`], [`Error::Bitmap`].
pub fn sample_range(file: &File, offset: u64, len: u64) -> Result<Residency, Error> {
    sample_since(file, offset, len, None)
}

/// [`sample`] again, given the sample `prev` taken of the same file
/// before: the same answer, with `mincore(2)` asked only about the 2 MiB
/// blocks that may have changed. A block `prev` found wholly resident and
/// for which `cachestat(2)` still counts every page cached keeps its bits:
/// no page can have left it (the count would drop) and none can have come
/// in (all were there). The one page-level difference between the two calls
/// is a page whose read is still in flight, which `cachestat(2)` counts and
/// `mincore(2)` does not; a block holding one is only kept when it was
/// wholly resident before, so the page was evicted and is being read back
/// between two samples, the same race as a page read just after a plain
/// scan passes it. A `prev` of another range, page size or trust, or of a
/// file that since changed size, is not used.
///
/// On a mostly cached file this is about a quarter of [`sample`]'s
/// cost (cachestat walks the cache's tree once per block; mincore of an
/// unmapped range looks each page up).
///
/// # Errors
/// As [`sample_range`].
pub fn resample(file: &File, prev: &Residency) -> Result<Residency, Error> {
    sample_since(file, 0, TO_EOF, Some(prev))
}

/// [`sample_range`], keeping the bits of blocks `prev` shows unchanged
/// ([`resample`]).
fn sample_since(
    file: &File,
    offset: u64,
    len: u64,
    prev: Option<&Residency>,
) -> Result<Residency, Error> {
    let page = os_page_size();
    let (size, regular) = file_stat(file)?;
    let span = Span::clip(offset, len, size, page);
    if span.len() == 0 {
        let (trust, _) = assess_trust(file, span.start, 0);
        return Ok(Residency::empty(span.start, trust));
    }
    let total_pages = span.pages(page);
    // Trust from a one-page ask; the counts of the whole range are the sum
    // of the blocks' below (one walk of the cache's tree, not two), or one
    // more ask when blocks are not used.
    let (trust, probe) = assess_trust(file, span.start, page.min(span.len()));

    let bitmap_err =
        |source| Error::Bitmap { offset: span.start, len: span.len(), pages: total_pages, source };
    let oom = || io::Error::from(io::ErrorKind::OutOfMemory);
    let words = usize::try_from(total_pages.div_ceil(64)).map_err(|_| bitmap_err(oom()))?;
    let mut bitmap: Vec<u64> = Vec::new();
    bitmap.try_reserve_exact(words).map_err(|_| bitmap_err(oom()))?;
    bitmap.resize(words, 0);

    // Pages per window: a multiple of 64 so windows start on bitmap words.
    let window_pages = (WINDOW_BYTES / page).max(64) / 64 * 64;
    let vec_len = usize::try_from(window_pages.min(total_pages)).map_err(|_| bitmap_err(oom()))?;
    let mut vec: Vec<u8> = Vec::new();
    vec.try_reserve_exact(vec_len).map_err(|_| bitmap_err(oom()))?;
    vec.resize(vec_len, 0);

    // (Only for regular files: anything else must still meet mmap's verdict.)
    let skip_whole = regular && trust.is_known() && probe.is_some();
    let mut stat = if skip_whole {
        Some(CacheStat::default())
    } else if probe.is_some() {
        cachestat(file, span.start, span.len()).ok()
    } else {
        None
    };
    let prev = prev.filter(|p| {
        skip_whole
            && p.trust.is_known()
            && p.offset == span.start
            && p.len == span.len()
            && p.page_size == page
    });
    let mut resident_pages = 0u64;
    let mut done = 0u64;
    let mut blocks: Vec<(u64, u64, Block)> = Vec::new(); // (first page in the window, pages, state)
    while done < total_pages {
        let pages = window_pages.min(total_pages - done);
        let window_offset = span.start + done * page;
        let first_word = usize::try_from(done / 64).unwrap_or(usize::MAX);
        // With a trusted cachestat(2), a block of the window in which it
        // counts no cached page needs no mincore(2): its bits stay 0. This
        // makes cold or sparse stretches of huge files nearly free, and
        // blocks a reclaimer evicted whole cheap (cachestat walks the
        // cache's tree once; mincore of an unmapped range looks each page
        // up). A block it counts wholly cached is still asked: cachestat
        // counts folios mincore does not report (a partly locked folio
        // after an eviction, here), and vmtouch's numbers are mincore's.
        blocks.clear();
        if skip_whole {
            let mut at = 0;
            while at < pages {
                let n = BLOCK_PAGES.min(pages - at);
                let counted = cachestat(file, window_offset + at * page, n * page);
                stat = match (stat, &counted) {
                    (Some(total), Ok(c)) => Some(total.plus(c)),
                    _ => None,
                };
                let state = classify(&counted, n, prev, done + at);
                if state == Block::Mixed && n > PART_PAGES && counted.is_ok() {
                    // Ask again part by part: only the mixed parts need
                    // mincore(2).
                    let mut p = at;
                    while p < at + n {
                        let m = PART_PAGES.min(at + n - p);
                        let part = cachestat(file, window_offset + p * page, m * page);
                        blocks.push((p, m, classify(&part, m, prev, done + p)));
                        p += m;
                    }
                } else {
                    blocks.push((at, n, state));
                }
                at += n;
            }
        } else {
            blocks.push((0, pages, Block::Mixed));
        }
        // Mapped even when no block needs mincore(2) (as long as one holds
        // a cached page): the mapping is what refuses a file not open for
        // reading.
        let window = if blocks.iter().any(|b| b.2 != Block::Cold) {
            Some(Window::map(file, window_offset, pages * page)?)
        } else {
            None
        };
        for &(at, n, state) in &blocks {
            let word = first_word.saturating_add(usize::try_from(at / 64).unwrap_or(usize::MAX));
            let words = usize::try_from(n.div_ceil(64)).unwrap_or(0);
            let Some(words) = bitmap.get_mut(word..word.saturating_add(words)) else {
                continue;
            };
            match (state, &window) {
                (Block::Cold, _) => {}
                (Block::Kept, _) => {
                    for (i, w) in words.iter_mut().enumerate() {
                        let bits = n.saturating_sub(i as u64 * 64).min(64);
                        *w = u64::MAX >> (64 - bits);
                    }
                    resident_pages += n;
                }
                (Block::Mixed, Some(window)) => {
                    let count = usize::try_from(n).unwrap_or(vec.len()).min(vec.len());
                    mincore_at(window, at * page, &mut vec[..count], window_offset)?;
                    resident_pages += pack_into(&vec[..count], words);
                }
                (Block::Mixed, None) => {}
            }
        }
        drop(window);
        done += pages;
    }

    Ok(Residency {
        offset: span.start,
        len: span.len(),
        page_size: page,
        bitmap,
        resident_pages,
        total_pages,
        trust,
        cachestat: stat,
    })
}

/// What `counted` (cachestat(2) of `n` pages from page `first` of the
/// range) says of a block: cold, kept as `prev` had it (wholly cached
/// then and now), or mixed.
fn classify(
    counted: &Result<CacheStat, Error>,
    n: u64,
    prev: Option<&Residency>,
    first: u64,
) -> Block {
    match counted {
        Ok(c) if c.cache == 0 => Block::Cold,
        Ok(c) if c.cache == n && prev.is_some_and(|p| all_set(p, first, n)) => Block::Kept,
        _ => Block::Mixed,
    }
}

/// Whether every one of the `n` pages from page `first` of `r`'s range is
/// resident in `r` (`false` when they are not all inside it).
fn all_set(r: &Residency, first: u64, n: u64) -> bool {
    n > 0
        && first.saturating_add(n) <= r.total_pages
        && count_bits(&r.bitmap, first, first + n - 1) == n
}

/// Decides whether the kernel tells us the truth, asking `cachestat(2)` for
/// the range first (`len` 0 = only the trust, counts discarded).
fn assess_trust(file: &File, offset: u64, len: u64) -> (Trust, Option<CacheStat>) {
    match cachestat(file, offset, len.max(1)) {
        Ok(stat) => {
            // cachestat also admits a caller whose fd is open for writing;
            // mincore does not look at the fd. With a read-only fd the kernel
            // has just applied the mincore rule itself.
            let trust = if fd_open_for_writing(file) { mincore_trust(file) } else { Trust::Known };
            (trust, (len != 0).then_some(stat))
        }
        Err(Error::Cachestat { source, .. }) if source.raw_os_error() == Some(libc::EPERM) => {
            // The kernel's cachestat check admits everyone its mincore check
            // admits, so if our own evaluation of the mincore rule passes,
            // the EPERM came from a filter (seccomp), not from the kernel's
            // permission rule.
            match mincore_trust(file) {
                Trust::Known => (Trust::Known, None),
                Trust::Unknown(_) => (Trust::Unknown(UnknownReason::CachestatDenied), None),
            }
        }
        // ENOSYS (before 6.5), EOPNOTSUPP (hugetlbfs), EINVAL, anything else.
        Err(_) => (mincore_trust(file), None),
    }
}

fn fd_open_for_writing(file: &File) -> bool {
    rustix::fs::fcntl_getfl(file).is_ok_and(|flags| {
        let mode = flags & rustix::fs::OFlags::RWMODE;
        mode == rustix::fs::OFlags::WRONLY || mode == rustix::fs::OFlags::RDWR
    })
}

/// The trust the kernel's `mincore(2)` rule (Linux 5.2) gives this process for
/// `file`, evaluated by us without `cachestat(2)`: the effective user owns the
/// file, or has `CAP_FOWNER` (root, where capabilities cannot be read), or may
/// write the file (`faccessat(W_OK, AT_EACCESS)`, which also honours ACLs,
/// `CAP_DAC_OVERRIDE` and read-only mounts). Anything that cannot be checked
/// counts as "may not", so the answer errs towards [`Trust::Unknown`].
///
/// [`sample_range`] uses `cachestat(2)` when the kernel has it; this is the
/// fallback, public so that front ends can explain the result.
pub fn mincore_trust(file: &File) -> Trust {
    let Ok(stat) = rustix::fs::fstat(file) else {
        return Trust::Unknown(UnknownReason::NoWritePermission);
    };
    let euid = rustix::process::geteuid();
    if euid.as_raw() == stat.st_uid || has_cap_fowner(euid.is_root()) || may_write(file) {
        Trust::Known
    } else {
        Trust::Unknown(UnknownReason::NoWritePermission)
    }
}

/// Whether `CAP_FOWNER` is in our effective capability set; `fallback` (euid
/// is root) when the set cannot be read.
fn has_cap_fowner(fallback: bool) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
        const CAP_FOWNER: u32 = 3;
        let mut header = Header { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let mut data = [Data::default(); 2];
        // SAFETY: capget(2) with a version-3 header reads the header and writes
        // two Data structs, which is exactly what the pointers refer to; both
        // live until the call returns.
        let rc = unsafe {
            libc::syscall(libc::SYS_capget, &mut header as *mut Header, data.as_mut_ptr())
        };
        if rc == 0 {
            return data[0].effective & (1 << CAP_FOWNER) != 0;
        }
    }
    fallback
}

/// Whether the effective user may open `file` for writing.
fn may_write(file: &File) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // faccessat2(fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH) checks the open
        // file itself (Linux 5.8+), even when it was renamed or unlinked.
        // SAFETY: the path is a valid NUL-terminated empty string that lives
        // for the call; the syscall only reads it and the fd number.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_faccessat2,
                std::os::fd::AsRawFd::as_raw_fd(file),
                c"".as_ptr(),
                libc::W_OK,
                libc::AT_EACCESS | libc::AT_EMPTY_PATH,
            )
        };
        if rc == 0 {
            return true;
        }
        let errno = io::Error::last_os_error().raw_os_error();
        if errno != Some(libc::ENOSYS) && errno != Some(libc::EINVAL) {
            return false;
        }
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(file));
        rustix::fs::accessat(
            rustix::fs::CWD,
            path.as_str(),
            rustix::fs::Access::WRITE_OK,
            rustix::fs::AtFlags::EACCESS,
        )
        .is_ok()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = file;
        false
    }
}

/// `cachestat(2)` system call number.
#[cfg(any(target_os = "linux", target_os = "android"))]
const SYS_CACHESTAT: libc::c_long = if cfg!(target_arch = "mips") {
    4451
} else if cfg!(target_arch = "mips64") {
    5451
} else {
    451
};

/// Page-cache counts of the file bytes `offset..offset + len` from the raw
/// `cachestat(2)` system call (Linux 6.5; number 451). `len == 0` means "to
/// the end of the file" (the kernel's convention). Counts are in OS pages and
/// cover every page that overlaps the range. It maps nothing and changes no
/// residency.
///
/// # Errors
///
/// [`Error::Cachestat`] with `ENOSYS` (kernel before 6.5, or not Linux),
/// `EPERM` (this process neither owns nor may write the file, and the fd is
/// not open for writing), `EOPNOTSUPP` (hugetlbfs), `EINVAL`, `EBADF`.
pub fn cachestat(file: &File, offset: u64, len: u64) -> Result<CacheStat, Error> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        #[repr(C)]
        struct Range {
            off: u64,
            len: u64,
        }
        #[repr(C)]
        #[derive(Default)]
        struct Stat {
            nr_cache: u64,
            nr_dirty: u64,
            nr_writeback: u64,
            nr_evicted: u64,
            nr_recently_evicted: u64,
        }
        let range = Range { off: offset, len };
        let mut stat = Stat::default();
        // SAFETY: cachestat(fd, *const cachestat_range, *mut cachestat, 0)
        // reads the 16-byte range and writes the 40-byte stat, both repr(C)
        // with the kernel's layout (u64 fields) and alive for the call.
        let rc = unsafe {
            libc::syscall(
                SYS_CACHESTAT,
                std::os::fd::AsRawFd::as_raw_fd(file),
                &range as *const Range,
                &mut stat as *mut Stat,
                0 as libc::c_uint,
            )
        };
        if rc != 0 {
            return Err(Error::Cachestat { offset, len, source: io::Error::last_os_error() });
        }
        Ok(CacheStat {
            cache: stat.nr_cache,
            dirty: stat.nr_dirty,
            writeback: stat.nr_writeback,
            evicted: stat.nr_evicted,
            recently_evicted: stat.nr_recently_evicted,
        })
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = file;
        Err(Error::Cachestat { offset, len, source: io::Error::from_raw_os_error(libc::ENOSYS) })
    }
}

/// Advice for [`advise`]: the `posix_fadvise(2)` hints, in the order the
/// inspector's menu lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileAdvice {
    /// `POSIX_FADV_WILLNEED`: start reading the range into the page cache
    /// now (asynchronous read-ahead of the whole range on Linux; nothing
    /// to do on tmpfs).
    WillNeed,
    /// `POSIX_FADV_DONTNEED`: drop the range's clean pages that no process
    /// maps or locks (dirty pages only start their writeback). What
    /// [`evict`] does.
    DontNeed,
    /// `POSIX_FADV_SEQUENTIAL`: read ahead twice as far. Linux keeps this
    /// per open file (the descriptor passed, and its duplicates) and
    /// ignores the range: other processes' reads are unaffected.
    Sequential,
    /// `POSIX_FADV_RANDOM`: no read-ahead. Per open file, as
    /// [`FileAdvice::Sequential`].
    Random,
    /// `POSIX_FADV_NORMAL`: the default read-ahead. Per open file, as
    /// [`FileAdvice::Sequential`].
    Normal,
}

impl FileAdvice {
    /// Every advice, in menu order.
    pub const ALL: [FileAdvice; 5] = [
        FileAdvice::WillNeed,
        FileAdvice::DontNeed,
        FileAdvice::Sequential,
        FileAdvice::Random,
        FileAdvice::Normal,
    ];

    /// The C name, e.g. `POSIX_FADV_WILLNEED`.
    pub fn c_name(self) -> &'static str {
        match self {
            FileAdvice::WillNeed => "POSIX_FADV_WILLNEED",
            FileAdvice::DontNeed => "POSIX_FADV_DONTNEED",
            FileAdvice::Sequential => "POSIX_FADV_SEQUENTIAL",
            FileAdvice::Random => "POSIX_FADV_RANDOM",
            FileAdvice::Normal => "POSIX_FADV_NORMAL",
        }
    }

    /// The short name, e.g. `WILLNEED`.
    pub fn name(self) -> &'static str {
        self.c_name().trim_start_matches("POSIX_FADV_")
    }

    /// `true` for the advice that changes only the read-ahead of the open
    /// file it is given on (Linux ignores their range).
    pub fn per_open_file(self) -> bool {
        matches!(self, FileAdvice::Sequential | FileAdvice::Random | FileAdvice::Normal)
    }
}

/// Gives the kernel `advice` about the file bytes `offset..offset + len`
/// with `posix_fadvise(2)`. Offsets and lengths are in bytes; `0,`
/// [`TO_EOF`] is the whole file, `len == 0` does nothing (unlike the system
/// call, where 0 means "to the end"), and a range reaching past
/// `i64::MAX` runs to the end of the file. The advice needs no permission
/// beyond the open fd (`O_DIRECT` fds included).
///
/// What it does on Linux: [`FileAdvice::WillNeed`] starts asynchronous
/// reads of the range (pages arrive shortly after this returns, or not at
/// all under memory pressure); [`FileAdvice::DontNeed`] drops only clean,
/// unmapped, unlocked pages, so re-sample to see what it did; the other
/// three change the read-ahead of this open file only. On tmpfs/shmem
/// nothing changes.
///
/// # Errors
///
/// [`Error::Fadvise`] (`ESPIPE` for a pipe, `EBADF`, `EINVAL`; `ENOSYS` on
/// systems without `posix_fadvise`, such as macOS).
pub fn advise(file: &File, offset: u64, len: u64, advice: FileAdvice) -> Result<(), Error> {
    const FILE_MAX: u64 = i64::MAX as u64;
    if len == 0 || offset > FILE_MAX {
        return Ok(());
    }
    let err = |source| Error::Fadvise { advice: advice.c_name(), offset, len, source };
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        use rustix::fs::Advice;
        // None = to the end of file.
        let fadvise_len = offset
            .checked_add(len)
            .filter(|end| *end <= FILE_MAX)
            .and_then(|_| std::num::NonZeroU64::new(len));
        let a = match advice {
            FileAdvice::WillNeed => Advice::WillNeed,
            FileAdvice::DontNeed => Advice::DontNeed,
            FileAdvice::Sequential => Advice::Sequential,
            FileAdvice::Random => Advice::Random,
            FileAdvice::Normal => Advice::Normal,
        };
        rustix::fs::fadvise(file, offset, fadvise_len, a).map_err(|e| err(e.into()))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    {
        // macOS has no posix_fadvise (vmtouch uses msync(MS_INVALIDATE) there).
        let _ = file;
        Err(err(io::Error::from_raw_os_error(libc::ENOSYS)))
    }
}

/// Evicts the file bytes `offset..offset + len` from the page cache with
/// `posix_fadvise(POSIX_FADV_DONTNEED)`, like `vmtouch -e`: [`advise`] with
/// [`FileAdvice::DontNeed`]. Pass `0,` [`TO_EOF`] for the whole file;
/// `len == 0` does nothing.
///
/// Only whole pages inside the range are dropped. The advice needs no
/// permission beyond the open fd, but the kernel keeps pages that are dirty
/// (it only starts their writeback: `fsync` first), under writeback, mapped
/// by any process (see [`release_mapping`]) or locked (see [`lock`]). On
/// tmpfs/shmem it does nothing at all. Re-sample to see what it dropped.
///
/// # Errors
///
/// [`Error::Fadvise`] (`ESPIPE` for a pipe, `EBADF`; `ENOSYS` on systems
/// without `posix_fadvise`, such as macOS).
pub fn evict(file: &File, offset: u64, len: u64) -> Result<(), Error> {
    advise(file, offset, len, FileAdvice::DontNeed)
}

/// How [`touch`] made pages resident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TouchMethod {
    /// `madvise(MADV_POPULATE_READ)` on a fresh read-only mapping (Linux 5.14):
    /// synchronous, reports I/O errors, reads nothing into this process.
    PopulateRead,
    /// `pread(2)` of one byte per page (what `vmtouch -t` does through its
    /// mapping), used where `MADV_POPULATE_READ` is unavailable.
    Pread,
}

/// Result of [`touch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Touched {
    /// The method that ran.
    pub method: TouchMethod,
    /// OS pages populated (the range's pages, clipped to the file size).
    pub pages: u64,
}

/// Makes the file bytes `offset..offset + len` resident, like `vmtouch -t`:
/// `madvise(MADV_POPULATE_READ)` on a fresh read-only mapping (at most 256 MiB
/// mapped at a time), falling back to reading one byte per page with `pread`
/// when the kernel lacks the advice (before 5.14). `offset` rounds down to a
/// page, the range is clipped to the file size, `len == 0` does nothing.
/// As with `vmtouch -t`, the page faults start the kernel's read-around, so
/// pages next to the range (up to the device's `read_ahead_kb`) may become
/// resident too, some of them shortly after this returns.
///
/// # Errors
///
/// [`Error::Fstat`], [`Error::Mmap`], [`Error::Madvise`] (`EFAULT` when the
/// file shrank meanwhile, `EIO`), [`Error::Pread`].
pub fn touch(file: &File, offset: u64, len: u64) -> Result<Touched, Error> {
    touch_with(file, offset, len, TouchMethod::PopulateRead)
}

/// [`touch`] with a chosen method: [`TouchMethod::PopulateRead`] (falls back
/// to `Pread` where unsupported) or [`TouchMethod::Pread`]. Errors as
/// [`touch`].
pub fn touch_with(
    file: &File,
    offset: u64,
    len: u64,
    method: TouchMethod,
) -> Result<Touched, Error> {
    let page = os_page_size();
    let span = Span::clip(offset, len, file_size(file)?, page);
    if span.len() == 0 {
        return Ok(Touched { method, pages: 0 });
    }
    if method == TouchMethod::PopulateRead {
        match populate_read(file, span) {
            Ok(pages) => return Ok(Touched { method, pages }),
            Err(Error::Madvise { source, .. })
                if matches!(source.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {}
            Err(e) => return Err(e),
        }
    }
    touch_by_pread(file, span, page)
}

fn populate_read(file: &File, span: Span) -> Result<u64, Error> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let page = os_page_size();
        let window_bytes = (WINDOW_BYTES / page).max(1) * page;
        let mut at = span.start;
        while at < span.end {
            let bytes = (span.end - at).min(window_bytes).div_ceil(page) * page;
            let window = Window::map(file, at, bytes)?;
            // SAFETY: the advice applies to our own fresh PROT_READ|MAP_SHARED
            // window, which nobody references; populating read-faults the
            // file's pages into it without changing any data. Pages beyond the
            // end of file make the call fail with EFAULT (no SIGBUS).
            unsafe {
                rustix::mm::madvise(window.ptr, window.len, rustix::mm::Advice::LinuxPopulateRead)
            }
            .map_err(|e| Error::Madvise {
                advice: "MADV_POPULATE_READ",
                offset: at,
                len: bytes,
                source: e.into(),
            })?;
            drop(window);
            at += bytes;
        }
        Ok(span.pages(page))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = file;
        Err(Error::Madvise {
            advice: "MADV_POPULATE_READ",
            offset: span.start,
            len: span.len(),
            source: io::Error::from_raw_os_error(libc::EINVAL),
        })
    }
}

fn touch_by_pread(file: &File, span: Span, page: u64) -> Result<Touched, Error> {
    let mut pages = 0u64;
    let mut byte = [0u8; 1];
    let mut at = span.start;
    while at < span.end {
        match file.read_at(&mut byte, at) {
            Ok(0) => break, // the file shrank meanwhile
            Ok(_) => pages += 1,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => return Err(Error::Pread { offset: at, source }),
        }
        at = at.saturating_add(page);
    }
    Ok(Touched { method: TouchMethod::Pread, pages })
}

/// Makes exactly the OS pages of `ranges` resident (each `(offset, len)`,
/// rounded out to whole pages and clipped to the file size), and no other:
/// read-ahead is turned off on this open file description
/// (`POSIX_FADV_RANDOM`, which holds for it alone), so a `pread(2)` reads
/// just the pages it asks for (`page_cache_sync_ra` forces a read of the
/// request's pages only), and each run of adjacent pages is one `pread`
/// into a reused buffer of at most 1 MiB. Returns the pages read through
/// (resident or not before).
///
/// # Errors
/// [`Error::Fstat`], [`Error::Fadvise`], [`Error::Pread`].
pub fn touch_exactly(file: &File, ranges: &[(u64, u64)]) -> Result<u64, Error> {
    const BUF: u64 = 1 << 20;
    let page = os_page_size();
    let size = file_size(file)?;
    advise(file, 0, TO_EOF, FileAdvice::Random)?;
    let mut spans: Vec<Span> = ranges
        .iter()
        .map(|&(off, len)| Span::clip(off, len, size, page))
        .filter(|s| s.len() > 0)
        .collect();
    spans.sort_by_key(|s| s.start);
    let mut runs: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match runs.last_mut() {
            Some(last) if s.start <= last.end.div_ceil(page) * page => {
                last.end = last.end.max(s.end);
            }
            _ => runs.push(s),
        }
    }
    let longest = runs.iter().map(|r| r.end.div_ceil(page) * page - r.start).max().unwrap_or(0);
    let mut buf = vec![0u8; usize::try_from(longest.min(BUF)).unwrap_or(0)];
    let mut pages = 0u64;
    for run in runs {
        let mut at = run.start;
        while at < run.end {
            let want = usize::try_from((run.end - at).min(BUF)).unwrap_or(0);
            match file.read_at(&mut buf[..want], at) {
                Ok(0) => break, // the file shrank meanwhile
                Ok(n) => {
                    let end = at + n as u64;
                    pages += end.div_ceil(page) - at / page;
                    at = end.div_ceil(page) * page;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(Error::Pread { offset: at, source }),
            }
        }
    }
    Ok(pages)
}

/// File pages held resident by [`lock`]: a read-only mapping locked with
/// `mlock(2)`. Dropping it munlocks and unmaps; the pages stay cached until
/// evicted or reclaimed.
#[derive(Debug)]
pub struct Locked {
    window: Option<Window>,
    offset: u64,
    len: u64,
    pages: u64,
}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window").field("ptr", &self.ptr).field("len", &self.len).finish()
    }
}

impl Locked {
    /// First locked byte of the file (page aligned).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Locked bytes (clipped to the file size at lock time).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `true` when nothing is locked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Locked OS pages.
    pub fn pages(&self) -> u64 {
        self.pages
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        if let Some(window) = &self.window {
            // SAFETY: the range is our own mapping, locked in `lock`; unlocking
            // it changes no memory contents. munmap (Window's drop) follows.
            let _ = unsafe { rustix::mm::munlock(window.ptr, window.len) };
        }
    }
}

/// Maps the file bytes `offset..offset + len` read-only and `mlock(2)`s them,
/// like `vmtouch -l`: the pages become resident and stay so, even against
/// [`evict`] and reclaim, until the returned [`Locked`] is dropped. `offset`
/// rounds down to a page, the range is clipped to the file size, `len == 0`
/// locks nothing. The range is mapped in one piece. The faults of `mlock`
/// start read-around beyond the range as well: those neighbouring pages are
/// cached (possibly after this returns) but not locked.
///
/// # Errors
///
/// [`Error::Fstat`], [`Error::Mmap`], [`Error::Mlock`] (`ENOMEM`/`EPERM` when
/// `RLIMIT_MEMLOCK` is too small and the process lacks `CAP_IPC_LOCK`).
pub fn lock(file: &File, offset: u64, len: u64) -> Result<Locked, Error> {
    let page = os_page_size();
    let span = Span::clip(offset, len, file_size(file)?, page);
    if span.len() == 0 {
        return Ok(Locked { window: None, offset: span.start, len: 0, pages: 0 });
    }
    let pages = span.pages(page);
    let window = Window::map(file, span.start, pages * page)?;
    // SAFETY: mlock on our own fresh read-only mapping: it read-faults the
    // pages in kernel-side (no SIGBUS here; a vanished page makes it fail
    // with ENOMEM) and changes no memory contents.
    unsafe { rustix::mm::mlock(window.ptr, window.len) }.map_err(|e| Error::Mlock {
        offset: span.start,
        len: span.len(),
        source: e.into(),
    })?;
    Ok(Locked { window: Some(window), offset: span.start, len: span.len(), pages })
}

/// Drops this process's page-table entries for `map` with
/// `madvise(MADV_DONTNEED)`, so its pages are no longer mapped by us and
/// [`evict`] can drop them ("drop our own mapping's pages first"). The page
/// cache itself is untouched; the next access through `map` faults the same
/// file data back in.
///
/// Only shared mappings are accepted (checked in `/proc/self/maps`): on a
/// private (copy-on-write) or anonymous mapping `MADV_DONTNEED` would throw
/// away the mapping's own contents. An empty map is a no-op.
///
/// # Errors
///
/// [`Error::Release`]: `InvalidInput` for a private or anonymous mapping, the
/// error of reading `/proc/self/maps` (`Unsupported` outside Linux), or the
/// error of `madvise`.
pub fn release_mapping(map: &memmap2::Mmap) -> Result<(), Error> {
    if map.is_empty() {
        return Ok(());
    }
    let page = usize::try_from(os_page_size()).unwrap_or(4096);
    let addr = map.as_ptr() as usize;
    let start = addr - addr % page;
    let end = addr.saturating_add(map.len());
    let err = |source| Error::Release { addr: start, len: end - start, source };
    match mapping_is_shared(start, end) {
        Ok(true) => {}
        Ok(false) => {
            return Err(err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a shared mapping: MADV_DONTNEED would discard its private contents",
            )));
        }
        Err(e) => return Err(err(e)),
    }
    // SAFETY: every page of the mapping is MAP_SHARED (checked just above in
    // /proc/self/maps while `map` is borrowed, so it cannot be unmapped or
    // replaced meanwhile). For shared mappings MADV_DONTNEED only removes our
    // page-table entries; later accesses fault the same page-cache pages (the
    // file's current contents) back in, so no byte visible through `map`
    // changes.
    unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) }.map_err(err)
}

/// Whether `start..end` is covered, without gaps, by shared mappings.
fn mapping_is_shared(start: usize, end: usize) -> io::Result<bool> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let maps = std::fs::read_to_string("/proc/self/maps")?;
        Ok(maps_cover_shared(&maps, start, end))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (start, end);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Parses `/proc/self/maps` text: is `start..end` covered by `s` mappings?
#[cfg(any(target_os = "linux", target_os = "android", test))]
fn maps_cover_shared(maps: &str, start: usize, end: usize) -> bool {
    let mut vmas: Vec<(usize, usize, bool)> = maps
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (lo, hi) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            let lo = usize::from_str_radix(lo, 16).ok()?;
            let hi = usize::from_str_radix(hi, 16).ok()?;
            Some((lo, hi, perms.as_bytes().get(3) == Some(&b's')))
        })
        .filter(|&(lo, hi, _)| lo < end && hi > start)
        .collect();
    vmas.sort_unstable();
    let mut covered = start;
    for (lo, hi, shared) in vmas {
        if lo > covered || !shared {
            return false;
        }
        covered = covered.max(hi);
    }
    covered >= end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_count() {
        let mut bytes = vec![0u8; 130];
        for i in [0usize, 1, 63, 64, 100, 129] {
            bytes[i] = 1;
        }
        bytes[5] = 0b10; // only bit 0 counts
        let mut words = vec![0u64; 3];
        assert_eq!(pack_into(&bytes, &mut words), 6);
        assert_eq!(words[0], 1 | 2 | 1 << 63);
        assert_eq!(words[2], 1 << 1);
        assert_eq!(count_bits(&words, 0, 129), 6);
        assert_eq!(count_bits(&words, 1, 63), 2);
        assert_eq!(count_bits(&words, 64, 64), 1);
        assert_eq!(count_bits(&words, 65, 99), 0);
        assert_eq!(count_bits(&words, 5, 4), 0);
        assert_eq!(count_bits(&words, 0, u64::MAX), 6);
    }

    #[test]
    fn pack_matches_naive() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in [0usize, 1, 7, 8, 9, 63, 64, 65, 200] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x & 0xff) as u8
                })
                .collect();
            let mut words = vec![0u64; len.div_ceil(64)];
            let resident = pack_into(&bytes, &mut words);
            for (i, b) in bytes.iter().enumerate() {
                assert_eq!(words[i / 64] >> (i % 64) & 1, u64::from(b & 1), "len {len} bit {i}");
            }
            assert_eq!(resident, bytes.iter().filter(|b| *b & 1 == 1).count() as u64);
        }
    }

    #[test]
    fn count_matches_naive() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let words: Vec<u64> = (0..5)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        for first in 0..330u64 {
            for last in (first.saturating_sub(2)..330).step_by(7) {
                let naive = (first..=last)
                    .filter(|&b| b < 320 && words[(b / 64) as usize] >> (b % 64) & 1 == 1)
                    .count() as u64;
                assert_eq!(count_bits(&words, first, last), naive, "{first}..={last}");
            }
        }
    }

    #[test]
    fn residency_queries() {
        let ps = 4096;
        let mut r = Residency::empty(8192, Trust::Known);
        r.page_size = ps;
        r.len = 3 * ps + 10; // 4 pages, last partial
        r.total_pages = 4;
        r.bitmap = vec![0b1010];
        r.resident_pages = 2;
        assert!(!r.is_resident(0) && r.is_resident(1) && r.is_resident(3));
        assert!(!r.is_resident(4) && !r.is_resident(u64::MAX));
        assert_eq!(r.resident_in(0, u64::MAX), 2);
        assert_eq!(r.resident_in(8192 + ps, 1), 1);
        assert_eq!(r.resident_in(8192 + ps - 1, 2), 1); // pages 0 and 1
        assert_eq!(r.resident_in(8192, ps), 0);
        assert_eq!(r.resident_in(8192 + 3 * ps + 9, 100), 1);
        assert_eq!(r.resident_in(8192 + 3 * ps + 10, 100), 0); // past len
        assert_eq!(r.resident_in(8192, 0), 0);
        assert_eq!(r.resident_in(u64::MAX, u64::MAX), 0);
        assert_eq!(r.known_resident_pages(), Some(2));
        r.trust = Trust::Unknown(UnknownReason::CachestatDenied);
        assert_eq!(r.known_resident_pages(), None);
    }

    #[test]
    fn span_clip() {
        let p = 4096;
        assert_eq!(Span::clip(5000, 100, 1 << 20, p), Span { start: 4096, end: 5100 });
        assert_eq!(Span::clip(0, TO_EOF, 10, p), Span { start: 0, end: 10 });
        assert_eq!(Span::clip(0, 0, 10, p).len(), 0);
        assert_eq!(Span::clip(u64::MAX, u64::MAX, 10, p).len(), 0);
        assert_eq!(Span::clip(8192, 10, 5000, p).len(), 0);
        assert_eq!(Span::clip(5000, 10, 5000, p), Span { start: 4096, end: 4096 });
        assert_eq!(Span::clip(4999, 10, 5000, p), Span { start: 4096, end: 5000 });
        assert_eq!(Span::clip(0, TO_EOF, 4097, p).pages(p), 2);
    }

    #[test]
    fn maps_parsing() {
        let maps = "1000-3000 r--s 00000000 08:01 12 /f\n\
                    3000-4000 r--s 00002000 08:01 12 /f\n\
                    5000-6000 r--p 00000000 08:01 12 /f\n\
                    garbage\n";
        assert!(maps_cover_shared(maps, 0x1000, 0x4000));
        assert!(maps_cover_shared(maps, 0x2000, 0x2001));
        assert!(!maps_cover_shared(maps, 0x1000, 0x4001));
        assert!(!maps_cover_shared(maps, 0x5000, 0x6000));
        assert!(!maps_cover_shared(maps, 0x7000, 0x8000));
    }

    #[test]
    fn messages_explain() {
        let t = Trust::Unknown(UnknownReason::CachestatDenied).to_string();
        assert!(t.starts_with("unknown: ") && t.contains("every page"));
        let e =
            Error::Mincore { offset: 4096, len: 4096, source: io::Error::from_raw_os_error(12) };
        assert_eq!(e.to_string(), "mincore(2) of file bytes 4096..8192 failed");
    }
}
