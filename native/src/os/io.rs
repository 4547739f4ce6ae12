//! Page sources over files: `pread`, quiet direct reads, and mappings.
//!
//! Which one to use is an explicit choice:
//! * [`Mapping`] (via its bytes) — zero-copy; the engines' choice, as in
//!   bbolt. Subject to the SIGBUS contract of [`crate::os::map`].
//! * [`PreadSource`] — `pread(2)` into owned buffers; goes through the
//!   page cache like `read()`.
//! * [`QuietSource`] — reads with `O_DIRECT` in aligned chunks, so reading
//!   a file's structure does not change which of its pages are resident.
//!   This is how the inspector reads: watching a file must not disturb
//!   what it shows, and a file truncated under it yields short reads, not
//!   SIGBUS. Falls back to `pread` where the file system refuses
//!   `O_DIRECT` (tmpfs, whose pages are always in memory anyway).
//! * [`QuietPages`] — the same promise, faster: page runs the page cache
//!   holds are copied out of it, the rest are read with `O_DIRECT`, many
//!   at a time. The settling reader of a live bbolt file
//!   ([`crate::observe::settle`]) reads through it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{File, Metadata};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use mapwise_core::{Error, PageSource};

use crate::os::map::Mapping;

impl PageSource for Mapping {
    fn len(&self) -> u64 {
        self.file_len()
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, Error> {
        self.bytes().read_at(offset, len)
    }
}

/// Start writeback of every dirty page cache page of `file`
/// (`sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)`): the kernel
/// queues their writes and returns without waiting for them. Durability
/// still needs fdatasync (it waits for these writes and flushes the
/// device's cache); this only moves the I/O earlier. Advisory: an error
/// here (none is expected on a regular file) shows up again at the
/// fdatasync, so it is ignored.
pub(crate) fn start_writeback(file: &File) {
    // SAFETY: sync_file_range only reads its integer arguments; the
    // descriptor is open for the life of `file`, which we borrow.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

/// The preferred I/O size of what `fd` refers to (`st_blksize` of
/// `fstat`), by which stdio sizes its buffers; `None` when `fstat` fails
/// or says 0.
pub fn block_size(fd: impl std::os::fd::AsFd) -> Option<usize> {
    rustix::fs::fstat(fd).ok().and_then(|st| usize::try_from(st.st_blksize).ok()).filter(|&b| b > 0)
}

/// Open `path` read-only (with `O_DIRECT` when `direct`), refusing
/// anything but a regular file: opening a FIFO would block forever, and a
/// directory or device has no pages to show. The open itself does not
/// block (`O_NONBLOCK`, cleared again for a regular file).
///
/// # Errors
/// The OS error of `open`/`fstat`, or `InvalidInput` naming the file type.
pub fn open_regular(path: &Path, direct: bool) -> std::io::Result<File> {
    open_regular_meta(path, direct).map(|(f, _)| f)
}

/// [`open_regular`], with the file's metadata from the one `statx(2)` that
/// checked its type.
///
/// # Errors
/// As [`open_regular`].
pub fn open_regular_meta(path: &Path, direct: bool) -> std::io::Result<(File, Metadata)> {
    use rustix::fs::OFlags;
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    if direct {
        flags |= OFlags::DIRECT;
    }
    let file = File::from(rustix::fs::open(path, flags, rustix::fs::Mode::empty())?);
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is {what}, not a regular file", path.display()),
        ));
    }
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
    Ok((file, meta))
}

/// [`open_regular_meta`] with `O_DIRECT`, or without where the file
/// system refuses it (`EINVAL`); `true` when reads bypass the page cache.
///
/// # Errors
/// As [`open_regular`].
pub fn open_quiet(path: &Path) -> std::io::Result<(File, Metadata, bool)> {
    match open_regular_meta(path, true) {
        Ok((f, m)) => Ok((f, m, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            open_regular_meta(path, false).map(|(f, m)| (f, m, false))
        }
        Err(e) => Err(e),
    }
}

fn read_error(offset: u64, len: u64, e: &std::io::Error) -> Error {
    Error::Read { offset, len, code: e.raw_os_error().unwrap_or(0) }
}

fn check(offset: u64, len: usize, size: u64) -> Result<(), Error> {
    mapwise_core::source::checked_range(
        offset,
        len as u64,
        size,
        mapwise_core::At::Offset(offset),
        "read",
    )
    .map(|_| ())
}

/// `pread(2)` into owned buffers, bounded by the length seen at open.
#[derive(Debug)]
pub struct PreadSource {
    file: File,
    len: u64,
}

impl PreadSource {
    /// Use `file`, whose current length bounds every read.
    ///
    /// # Errors
    /// `fstat` failures.
    pub fn new(file: File) -> std::io::Result<PreadSource> {
        let len = file.metadata()?.len();
        Ok(PreadSource { file, len })
    }
}

impl PageSource for PreadSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, Error> {
        check(offset, len, self.len)?;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| read_error(offset, len as u64, &e))?;
        Ok(Cow::Owned(buf))
    }
}

/// Alignment of `O_DIRECT` offsets, lengths and buffers. 4 KiB covers
/// every logical block size in common use (512 and 4096 bytes).
pub const DIRECT_ALIGN: usize = 4096;

/// One [`DIRECT_ALIGN`]-aligned block of bytes, as `O_DIRECT` reads and
/// writes want their buffers: an engine that reads, patches and writes
/// back whole blocks keeps them in these, and a run of consecutive blocks
/// is one aligned buffer for one `pread` or `pwrite`.
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
pub struct DirectBlock(pub [u8; DIRECT_ALIGN]);

const _: () = assert!(size_of::<DirectBlock>() == DIRECT_ALIGN);

impl DirectBlock {
    /// A block of zeros.
    pub const ZERO: DirectBlock = DirectBlock([0; DIRECT_ALIGN]);

    /// The bytes of a run of consecutive blocks, as one aligned slice.
    #[must_use]
    pub fn run_bytes(run: &[DirectBlock]) -> &[u8] {
        // SAFETY: `DirectBlock` is `repr(C)` around a byte array whose
        // size is its alignment (asserted above), so a slice of blocks is
        // `run.len() * DIRECT_ALIGN` contiguous, initialised bytes with no
        // padding; the result borrows `run`.
        unsafe { std::slice::from_raw_parts(run.as_ptr().cast::<u8>(), run.len() * DIRECT_ALIGN) }
    }

    /// [`DirectBlock::run_bytes`], writable.
    #[must_use]
    pub fn run_bytes_mut(run: &mut [DirectBlock]) -> &mut [u8] {
        // SAFETY: as in `run_bytes`; every byte value is a valid block,
        // and the result borrows `run` exclusively.
        unsafe {
            std::slice::from_raw_parts_mut(run.as_mut_ptr().cast::<u8>(), run.len() * DIRECT_ALIGN)
        }
    }
}
/// Bytes per direct read.
const CHUNK: usize = 1 << 20;
/// Chunks kept in memory (8 MiB), within `cargo xtask limits`' 24 MiB per
/// command. On a 272 MiB bbolt file, 64 chunks made `check` no faster and
/// `pages` 12 % faster, for 56 MiB more.
const CACHED_CHUNKS: usize = 8;

/// Bytes the first read of a file's first chunk asks for at least: the
/// headers format detection and an RRD's layout read (a collectd RRD's
/// header is 3–8 KiB), without the rest of a small file. A later read
/// past them reads the chunk whole.
const HEAD: usize = 16 << 10;

/// A chunk-cached reader that leaves the page cache alone: `O_DIRECT`
/// reads of 1 MiB aligned chunks, the last 8 chunks kept in memory. The
/// first chunk is read only as far as asked, rounded up to 16 KiB, until
/// something past that is asked: measuring 10k RRD files then reads their
/// headers, not the whole files.
///
/// The length is fixed at open; a file that shrinks later makes reads of
/// the missing part fail with [`Error::Read`] (never SIGBUS).
#[derive(Debug)]
pub struct QuietSource {
    file: File,
    len: u64,
    /// The file's metadata at open.
    meta: Metadata,
    direct: bool,
    cache: RefCell<ChunkCache>,
    /// Stamped on each chunk read from the file ([`QuietSource::set_epoch`]).
    epoch: std::cell::Cell<u64>,
}

#[derive(Debug, Default)]
struct ChunkCache {
    /// Chunk bytes and the epoch they were read from the file in.
    chunks: HashMap<u64, (Rc<Vec<u8>>, u64)>,
    order: VecDeque<u64>,
}

impl QuietSource {
    /// Open `path` for quiet reads (`O_RDONLY | O_DIRECT`, or plain
    /// `O_RDONLY` where `O_DIRECT` is refused).
    ///
    /// # Errors
    /// `open`/`fstat` failures.
    pub fn open(path: &Path) -> std::io::Result<QuietSource> {
        let (file, meta, direct) = open_quiet(path)?;
        Ok(QuietSource {
            file,
            len: meta.len(),
            meta,
            direct,
            cache: RefCell::new(ChunkCache::default()),
            epoch: std::cell::Cell::new(0),
        })
    }

    /// `true` when reads bypass the page cache (`O_DIRECT` accepted).
    #[must_use]
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// The open file (for fstat/residency calls on the same inode).
    #[must_use]
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The file's metadata as it was at open (its length is [`PageSource::len`]).
    #[must_use]
    pub fn metadata(&self) -> &Metadata {
        &self.meta
    }

    /// Drop every cached chunk, so the next reads see the file as it is
    /// now (a writer may have changed it since the chunks were read). The
    /// length stays the one seen at open.
    pub fn forget(&self) {
        let mut cache = self.cache.borrow_mut();
        cache.chunks.clear();
        cache.order.clear();
    }

    /// Stamp the chunks read from the file from now on with `epoch`
    /// (the caller's clock: [`crate::observe::settle`] counts its checks of the meta
    /// pages), so [`QuietSource::read_at_epoch`] can tell when bytes served
    /// from memory were read.
    pub fn set_epoch(&self, epoch: u64) {
        self.epoch.set(epoch);
    }

    /// `len` bytes at `offset` read from the file now, past the chunk
    /// cache (which is left as it is).
    ///
    /// # Errors
    /// [`Error::Read`] when the bytes cannot be read.
    pub fn read_fresh(&self, offset: u64, len: usize) -> Result<Vec<u8>, Error> {
        check(offset, len, self.len)?;
        let start = offset - offset % DIRECT_ALIGN as u64;
        let skip = usize::try_from(offset - start).unwrap_or(0);
        let want = skip + len;
        let mut data = self.read_aligned(start, want)?;
        data.drain(..skip);
        Ok(data)
    }

    /// `want` bytes at aligned `offset` from the file, `O_DIRECT` when it
    /// was opened so.
    fn read_aligned(&self, offset: u64, want: usize) -> Result<Vec<u8>, Error> {
        if self.direct {
            return self.read_direct(offset, want);
        }
        let mut buf = vec![0u8; want];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| read_error(offset, want as u64, &e))?;
        Ok(buf)
    }

    /// Chunk `index`, holding at least its first `need` bytes (or all it
    /// has when the file ends sooner), from the cache or read now.
    fn read_chunk(&self, index: u64, need: usize) -> Result<(Rc<Vec<u8>>, u64), Error> {
        let offset = index * CHUNK as u64;
        let whole =
            usize::try_from((self.len - offset.min(self.len)).min(CHUNK as u64)).unwrap_or(CHUNK);
        let cached = self.cache.borrow().chunks.get(&index).cloned();
        if let Some((c, e)) = &cached
            && c.len() >= need.min(whole)
        {
            return Ok((Rc::clone(c), *e));
        }
        let want = if index == 0 && cached.is_none() {
            need.max(1).div_ceil(HEAD).saturating_mul(HEAD).min(whole)
        } else {
            whole
        };
        let data = Rc::new(self.read_aligned(offset, want)?);
        let mut cache = self.cache.borrow_mut();
        if cached.is_none() {
            if cache.order.len() >= CACHED_CHUNKS
                && let Some(old) = cache.order.pop_front()
            {
                cache.chunks.remove(&old);
            }
            cache.order.push_back(index);
        }
        let epoch = self.epoch.get();
        cache.chunks.insert(index, (Rc::clone(&data), epoch));
        Ok((data, epoch))
    }

    /// One aligned `O_DIRECT` read of `want` bytes at aligned `offset`
    /// (the tail rounded up to the alignment; the file may end early).
    fn read_direct(&self, offset: u64, want: usize) -> Result<Vec<u8>, Error> {
        let padded = want.div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        // An over-allocated buffer holds an aligned window of `padded` bytes.
        let mut raw = vec![0u8; padded + DIRECT_ALIGN];
        let skew = raw.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
        let window = raw.get_mut(skew..skew + padded).unwrap_or_default();
        let mut done = 0usize;
        while done < want {
            let at = offset + done as u64;
            let dst = window.get_mut(done..).unwrap_or_default();
            match self.file.read_at(dst, at) {
                Ok(0) => {
                    return Err(Error::Read {
                        offset: at,
                        len: (want - done) as u64,
                        code: libc::ENODATA,
                    });
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(read_error(at, (want - done) as u64, &e)),
            }
        }
        Ok(window.get(..want).unwrap_or_default().to_vec())
    }
}

impl PageSource for QuietSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, Error> {
        self.read_at_epoch(offset, len).map(|(b, _)| Cow::Owned(b))
    }
}

impl QuietSource {
    /// [`PageSource::read_at`], with the oldest epoch
    /// ([`QuietSource::set_epoch`]) of the chunks the bytes came from.
    ///
    /// # Errors
    /// As [`PageSource::read_at`].
    pub fn read_at_epoch(&self, offset: u64, len: usize) -> Result<(Vec<u8>, u64), Error> {
        check(offset, len, self.len)?;
        let mut out = Vec::with_capacity(len);
        let end = offset + len as u64;
        let mut pos = offset;
        let mut oldest = u64::MAX;
        while pos < end {
            let index = pos / CHUNK as u64;
            let need =
                usize::try_from((end - index * CHUNK as u64).min(CHUNK as u64)).unwrap_or(CHUNK);
            let (chunk, epoch) = self.read_chunk(index, need)?;
            oldest = oldest.min(epoch);
            let start = usize::try_from(pos - index * CHUNK as u64).unwrap_or(0);
            let stop =
                usize::try_from((end - index * CHUNK as u64).min(chunk.len() as u64)).unwrap_or(0);
            let part = chunk.get(start..stop).unwrap_or_default();
            if part.is_empty() {
                return Err(Error::Read { offset: pos, len: end - pos, code: libc::ENODATA });
            }
            out.extend_from_slice(part);
            pos += part.len() as u64;
        }
        Ok((out, oldest.min(self.epoch.get())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn quiet_source_reads_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> =
            (0..(3 * CHUNK + 123)).map(|i| u8::try_from(i % 251).unwrap()).collect();
        std::fs::File::create(&path).unwrap().write_all(&data).unwrap();
        let q = QuietSource::open(&path).unwrap();
        assert_eq!(q.len(), data.len() as u64);
        for (off, len) in
            [(0, 10), (CHUNK - 5, 10), (2 * CHUNK + 7, CHUNK + 100), (data.len() - 1, 1)]
        {
            assert_eq!(&*q.read_at(off as u64, len).unwrap(), &data[off..off + len]);
        }
        assert!(q.read_at(data.len() as u64, 1).is_err());
        let p = PreadSource::new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(&*p.read_at(5, 5).unwrap(), &data[5..10]);
    }

    /// Bytes this thread has read through system calls (`rchar`), and
    /// then, reading the counter, less than [`PROC_IO`] more.
    fn rchar() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        io.lines().find_map(|l| l.strip_prefix("rchar: ")).unwrap().trim().parse().unwrap()
    }

    #[test]
    fn quiet_source_reads_a_header_without_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..100_000).map(|i| u8::try_from(i % 249).unwrap()).collect();
        std::fs::File::create(&path).unwrap().write_all(&data).unwrap();
        let q = QuietSource::open(&path).unwrap();
        let before = rchar();
        assert_eq!(&*q.read_at(8, 100).unwrap(), &data[8..108]);
        assert_eq!(&*q.read_at(HEAD as u64 - 4, 4).unwrap(), &data[HEAD - 4..HEAD]);
        let first = rchar() - before;
        assert!(
            (HEAD as u64..HEAD as u64 + PROC_IO).contains(&first),
            "the first 16 KiB once: {first}"
        );
        // Past them: the chunk is read whole, and then served from memory.
        assert_eq!(&*q.read_at(90_000, 10).unwrap(), &data[90_000..90_010]);
        assert_eq!(&*q.read_at(0, 100_000).unwrap(), &data[..]);
        let all = rchar() - before;
        let want = HEAD as u64 + 100_000;
        assert!((want..want + 2 * PROC_IO).contains(&all), "then the file whole once: {all}");
    }

    /// Bytes of `/proc/thread-self/io` at most.
    const PROC_IO: u64 = 512;
}

/// Bytes a direct read of [`QuietPages`] spans at most (runs closer than
/// [`DIRECT_GAP`] are read in one go, up to this).
const DIRECT_SPAN: u64 = 1 << 20;
/// Runs of [`QuietPages::read_runs`] at most this far apart are read with
/// one direct read (the bytes between are read and dropped).
const DIRECT_GAP: u64 = 64 << 10;
/// A copy out of the page cache maps a whole large folio around each page
/// it reads (up to a 2 MiB PMD): runs are copied a few such blocks at a
/// time and the blocks unmapped again, so scattered runs never hold more
/// than [`COPY_BLOCKS`] blocks in this process's resident set.
const COPY_BLOCK: u64 = 2 << 20;
/// Blocks of [`COPY_BLOCK`] one copy of [`QuietPages::read_runs`] touches
/// at most.
const COPY_BLOCKS: usize = 8;

/// The runs `sorted` (indices into `runs`, by offset) in groups that
/// touch at most [`COPY_BLOCKS`] blocks and hold at most 1024 runs.
fn copy_groups<'a>(sorted: &'a [usize], runs: &[(u64, usize)]) -> Vec<&'a [usize]> {
    let mut groups = Vec::new();
    let (mut start, mut blocks, mut last) = (0, 0u64, None);
    for (k, &i) in sorted.iter().enumerate() {
        let (o, l) = runs[i];
        let (first, end) = (o / COPY_BLOCK, (o + l as u64).saturating_sub(1) / COPY_BLOCK);
        let all = end - first + 1;
        let add = if last == Some(first) { all - 1 } else { all };
        if k > start && (blocks + add > COPY_BLOCKS as u64 || k - start >= 1024) {
            groups.push(&sorted[start..k]);
            start = k;
            blocks = all;
        } else {
            blocks += add;
        }
        last = Some(end);
    }
    if start < sorted.len() {
        groups.push(&sorted[start..]);
    }
    groups
}

/// Bytes one `mincore(2)` of [`QuietPages::read_runs`] spans at most.
const MINCORE_SPAN: u64 = 16 << 20;
/// Runs further apart than this get a `mincore(2)` each (it costs ~50 ns
/// a page of the range, the call itself ~0.3 µs).
const MINCORE_GAP: u64 = 64 << 10;
/// Direct reads in flight at most: this machine's device gives ~21k
/// reads/s one at a time and ~53k sixteen at a time.
const DIRECT_THREADS: usize = 8;

/// Quiet reads of page runs that leave residency as it was, fast: a run
/// whose every page is in the page cache (`mincore(2)`) is copied out of
/// the cache (`process_vm_readv(2)` of a whole-file `MAP_SHARED` mapping
/// with `MADV_RANDOM`, which reads nothing from the disk for a cached page,
/// starts no read-ahead and leaves the kernel's page ages alone); every
/// other run is read with `O_DIRECT` (as [`QuietSource`]), several at a
/// time on threads, runs close together in one read.
///
/// A `read()`-style buffered read of a cached page would also change
/// nothing, except that it starts read-ahead when the page carries the
/// kernel's read-ahead mark: measured here, 20 cached pages read with
/// `preadv2(RWF_NOWAIT)` brought 71 more into the cache, even with
/// `POSIX_FADV_RANDOM`. Copying through the mapping brought none.
///
/// One race is left: a page evicted between the `mincore` and the copy
/// (microseconds) is read back from the disk, one page. Where residency
/// cannot be trusted ([`crate::os::residency::Trust::Unknown`]: `mincore`
/// then says every page is cached) or `process_vm_readv` is refused (some
/// seccomp profiles), every run is read with `O_DIRECT`.
///
/// Reads beyond the length seen at open (or at the last
/// [`QuietPages::refresh`]) fail; a file truncated meanwhile gives failed
/// reads, never SIGBUS.
pub struct QuietPages {
    direct: File,
    is_direct: bool,
    /// The threads of direct reads, shared with clones, started at the
    /// first read of several spans.
    pool: std::sync::Arc<std::sync::OnceLock<Option<SpanPool>>>,
    map: Option<crate::os::residency::Window>,
    len: u64,
    stats: std::cell::Cell<ReadStats>,
    /// Buffers of direct reads done, kept for the next ones: a fresh one
    /// costs a fault per page to fill and an unmap to drop.
    spare: std::cell::RefCell<Vec<Vec<u8>>>,
}

/// Direct-read buffers a [`QuietPages`] keeps for reuse, at most (each
/// at most [`DIRECT_SPAN`] and a little): enough for the direct reads of
/// a batch of 64 MiB of scattered pages, read again and again.
const SPARE_BUFFERS: usize = 96;

/// Runs as [`QuietPages::read_parts`] leaves them: buffers, and where
/// each run is (a buffer's index and a range of it), or why it could not
/// be read.
#[derive(Debug, Default)]
pub struct Parts {
    /// The buffers: the cached runs' arena first, then one per direct
    /// read.
    pub bufs: Vec<Vec<u8>>,
    /// Per run, in the order asked.
    pub at: Vec<Result<(usize, std::ops::Range<usize>), Error>>,
    /// Per buffer, the range that holds the file's bytes contiguously: a
    /// direct read's whole span (a run's neighbours read with it are there
    /// too); empty for the arena, whose runs lie side by side.
    pub windows: Vec<std::ops::Range<usize>>,
}

/// What [`QuietPages`] has read, and how.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Bytes copied out of the page cache.
    pub cached_bytes: u64,
    /// Bytes asked for that were read with `O_DIRECT`.
    pub direct_bytes: u64,
    /// Direct reads made (each one or more runs).
    pub direct_reads: u64,
}

impl std::fmt::Debug for QuietPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuietPages")
            .field("len", &self.len)
            .field("is_direct", &self.is_direct)
            .field("copies_cached", &self.map.is_some())
            .finish_non_exhaustive()
    }
}

impl QuietPages {
    /// Open `path` (a regular file) for quiet reads.
    ///
    /// # Errors
    /// `open`/`fstat` failures.
    pub fn open(path: &Path) -> std::io::Result<QuietPages> {
        let (direct, _, is_direct) = open_quiet(path)?;
        let mut q = QuietPages {
            direct,
            is_direct,
            pool: std::sync::Arc::default(),
            map: None,
            len: 0,
            stats: std::cell::Cell::new(ReadStats::default()),
            spare: std::cell::RefCell::default(),
        };
        q.refresh()?;
        Ok(q)
    }

    /// Another reader of the same open file (a duplicated descriptor),
    /// at the same length.
    ///
    /// # Errors
    /// `dup` failures.
    pub fn try_clone(&self) -> std::io::Result<QuietPages> {
        let mut q = QuietPages {
            direct: self.direct.try_clone()?,
            is_direct: self.is_direct,
            pool: std::sync::Arc::clone(&self.pool),
            map: None,
            len: 0,
            stats: std::cell::Cell::new(ReadStats::default()),
            spare: std::cell::RefCell::default(),
        };
        q.refresh()?;
        Ok(q)
    }

    /// Take the file's length now (a writer grows it), mapping it again
    /// when it changed; returns the length.
    ///
    /// # Errors
    /// `fstat` failures.
    pub fn refresh(&mut self) -> std::io::Result<u64> {
        let len = self.direct.metadata()?.len();
        if len != self.len || (self.map.is_none() && len > 0) {
            self.len = len;
            self.map = None;
            let trusted = crate::os::residency::mincore_trust(&self.direct).is_known();
            if trusted && len > 0 {
                self.map = crate::os::residency::Window::map(&self.direct, 0, len)
                    .ok()
                    .filter(|w| w.advise_random().is_ok())
                    .filter(|w| {
                        // process_vm_readv may be refused (seccomp): try one
                        // byte of a page that is cached, if any is.
                        let mut v = Vec::new();
                        let cached = w.mincore_range(0, 4096, &mut v).is_ok()
                            && v.first().is_some_and(|b| b & 1 != 0);
                        let mut b = [0u8; 1];
                        let ok =
                            !cached || w.copy_out(&mut [(0, &mut b[..])]).is_ok_and(|n| n == 1);
                        // The copy mapped the page (and its fault-around
                        // neighbours): a page we map cannot be evicted.
                        w.unmap_pages(0, COPY_BLOCK);
                        ok
                    });
            }
        }
        Ok(len)
    }

    /// The length reads are bounded by.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `true` when the length is 0.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The open file (`O_DIRECT` where accepted).
    #[must_use]
    pub fn file(&self) -> &File {
        &self.direct
    }

    /// `true` when reads bypass the page cache or only copy what it holds
    /// (`O_DIRECT` accepted).
    #[must_use]
    pub fn is_direct(&self) -> bool {
        self.is_direct
    }

    /// What has been read so far.
    #[must_use]
    pub fn stats(&self) -> ReadStats {
        self.stats.get()
    }

    /// Read the runs `(offset, len)`, each into its own buffer, in the
    /// order given; cached runs are copied, the others read directly (see
    /// the type's documentation).
    pub fn read_runs(&self, runs: &[(u64, usize)]) -> Vec<Result<Vec<u8>, Error>> {
        let mut arena = Vec::new();
        self.read_into(runs, None, &mut arena)
            .into_iter()
            .map(|r| r.map(|range| arena.get(range).unwrap_or_default().to_vec()))
            .collect()
    }

    /// The runs the page cache does not hold whole: those a read must
    /// take from the disk (`O_DIRECT`), worth starting ahead of need on
    /// another thread; a cached run is copied faster where it is needed
    /// than handed over from another thread.
    #[must_use]
    pub fn uncached(&self, runs: &[(u64, usize)]) -> Vec<(u64, usize)> {
        let all: Vec<usize> = (0..runs.len()).collect();
        let (_, direct) = self.split_cached(runs, &all);
        let mut out: Vec<(u64, usize)> = direct.iter().map(|&i| runs[i]).collect();
        out.sort_unstable_by_key(|r| r.0);
        out
    }

    /// Of the runs `which` (indices into `runs`), those the page cache
    /// holds whole and that can be copied out of it, and the others.
    fn split_cached(&self, runs: &[(u64, usize)], which: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let mut direct: Vec<usize> = Vec::new();
        let mut cached: Vec<usize> = Vec::new();
        let Some(map) = &self.map else {
            return (cached, which.to_vec());
        };
        // One mincore(2) per stretch of nearby runs.
        let mut order = which.to_vec();
        order.sort_unstable_by_key(|&i| runs[i].0);
        let page = crate::os::residency::os_page_size();
        let mut vec = Vec::new();
        let mut k = 0;
        while k < order.len() {
            let first = runs[order[k]].0 - runs[order[k]].0 % page;
            let mut j = k;
            let mut end = first;
            while let Some(&i) = order.get(j) {
                let (o, l) = runs[i];
                let e = o.saturating_add(l as u64);
                // Nearby runs share a call; mincore of the gap between
                // far ones would cost more than a call of their own.
                if j > k
                    && (e.saturating_sub(first) > MINCORE_SPAN
                        || o > end.saturating_add(MINCORE_GAP))
                {
                    break;
                }
                end = end.max(e);
                j += 1;
            }
            let ok = map.mincore_range(first, end - first, &mut vec).is_ok();
            for &i in &order[k..j] {
                let (o, l) = runs[i];
                let a = usize::try_from((o - first) / page).unwrap_or(usize::MAX);
                let b =
                    usize::try_from((o + l as u64 - first).div_ceil(page)).unwrap_or(usize::MAX);
                let all =
                    ok && l > 0 && vec.get(a..b).is_some_and(|v| v.iter().all(|b| b & 1 != 0));
                if all { cached.push(i) } else { direct.push(i) }
            }
            k = j;
        }
        (cached, direct)
    }

    /// Copy the runs `cached` out of the page cache into their ranges of
    /// `arena` (`out`), a few blocks at a time (see [`COPY_BLOCK`]);
    /// returns the runs the copy did not reach (evicted meanwhile), for a
    /// direct read.
    fn copy_cached(
        &self,
        runs: &[(u64, usize)],
        mut cached: Vec<usize>,
        out: &[Result<std::ops::Range<usize>, Error>],
        arena: &mut [u8],
        stats: &mut ReadStats,
    ) -> Vec<usize> {
        let mut direct = Vec::new();
        let Some(map) = &self.map else {
            return cached;
        };
        cached.sort_unstable_by_key(|&i| runs[i].0);
        for chunk in copy_groups(&cached, runs) {
            let mut parts: Vec<(u64, &mut [u8])> = Vec::with_capacity(chunk.len());
            // Each run's range in the arena, in arena order, split off
            // one by one (ranges are disjoint and ascending by index).
            let mut order: Vec<usize> = chunk.to_vec();
            order.sort_unstable();
            let mut rest: &mut [u8] = &mut *arena;
            let mut base = 0usize;
            let mut slices: Vec<(usize, &mut [u8])> = Vec::with_capacity(order.len());
            for &i in &order {
                let Ok(r) = &out[i] else { continue };
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - base);
                let (mine, tail) = tail.split_at_mut(r.len());
                slices.push((i, mine));
                rest = tail;
                base = r.end;
            }
            // Back into offset order for the copy.
            slices.sort_unstable_by_key(|(i, _)| runs[*i].0);
            for (i, buf) in slices {
                parts.push((runs[i].0, buf));
            }
            let copied = map.copy_out(&mut parts).unwrap_or(0);
            // Unmap the blocks the copy touched, adjacent blocks in one
            // call: each call flushes the TLB of every CPU this
            // process's threads ran on (an IPI each), whatever its length.
            let mut blocks: Option<(u64, u64)> = None;
            for p in &parts {
                let first = p.0 / COPY_BLOCK;
                let last = (p.0 + p.1.len() as u64).saturating_sub(1) / COPY_BLOCK;
                blocks = match blocks {
                    Some((a, b)) if first <= b + 1 => Some((a, b.max(last))),
                    Some((a, b)) => {
                        map.unmap_pages(a * COPY_BLOCK, (b - a + 1) * COPY_BLOCK);
                        Some((first, last))
                    }
                    None => Some((first, last)),
                };
            }
            if let Some((a, b)) = blocks {
                map.unmap_pages(a * COPY_BLOCK, (b - a + 1) * COPY_BLOCK);
            }
            let mut seen = 0usize;
            for &i in chunk {
                let len = runs[i].1;
                if seen + len <= copied {
                    stats.cached_bytes += len as u64;
                } else {
                    direct.push(i);
                }
                seen += len;
            }
        }
        direct
    }

    /// Read the runs `direct` (indices into `runs`) with `O_DIRECT`, runs
    /// close together in one read ([`direct_spans`]): the reads made, and
    /// where each run landed (an index into them and a range of its
    /// buffer's `raw`), or why it could not be read.
    #[expect(clippy::type_complexity, reason = "one result per run, read once")]
    fn read_direct(
        &self,
        runs: &[(u64, usize)],
        mut direct: Vec<usize>,
        stats: &mut ReadStats,
    ) -> (Vec<(usize, Result<(usize, std::ops::Range<usize>), Error>)>, Vec<DirectBuf>) {
        direct.sort_unstable_by_key(|&i| runs[i].0);
        let spans = direct_spans(&direct, runs);
        stats.direct_reads += spans.len() as u64;
        let mut placed = Vec::with_capacity(direct.len());
        let mut read = Vec::with_capacity(spans.len());
        for (span, data) in spans.iter().zip(self.read_spans(&spans)) {
            for &i in &span.runs {
                let (offset, len) = runs[i];
                let place = match &data {
                    Ok(d) => {
                        let start = d.skew
                            + d.skip
                            + usize::try_from(offset - span.offset).unwrap_or(usize::MAX);
                        let r = start..start.saturating_add(len);
                        match d.raw.get(r.clone()) {
                            Some(_) => {
                                stats.direct_bytes += len as u64;
                                Ok((read.len(), r))
                            }
                            None => {
                                Err(Error::Read { offset, len: len as u64, code: libc::ENODATA })
                            }
                        }
                    }
                    Err(e) => Err(e.clone()),
                };
                placed.push((i, place));
            }
            if let Ok(d) = data {
                read.push(d);
            }
        }
        (placed, read)
    }

    /// Read the runs `(offset, len)` and leave each where it landed: runs
    /// copied out of the page cache in `arena` (reused as it is, grown as
    /// needed), runs read with `O_DIRECT` in their read's own buffer, so
    /// nothing is copied twice. Give the buffers back with
    /// [`QuietPages::recycle`] once done with them.
    pub fn read_parts(&self, runs: &[(u64, usize)], mut arena: Vec<u8>) -> Parts {
        let mut out: Vec<Result<std::ops::Range<usize>, Error>> =
            runs.iter().map(|&(offset, len)| check(offset, len, self.len).map(|()| 0..0)).collect();
        let ok: Vec<usize> = (0..out.len()).filter(|&i| out[i].is_ok()).collect();
        let (cached, mut direct) = self.split_cached(runs, &ok);
        // The cached runs one after the other, page-aligned.
        let total: usize = cached.iter().map(|&i| runs[i].1).sum::<usize>() + DIRECT_ALIGN;
        if arena.len() < total {
            // With room to spare: the next batch, a little larger, reuses it.
            arena = vec![0; total.saturating_add(total / 4)];
        }
        let mut at = arena.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
        for &i in &cached {
            out[i] = Ok(at..at + runs[i].1);
            at += runs[i].1;
        }
        let mut stats = self.stats.get();
        direct.extend(self.copy_cached(runs, cached, &out, &mut arena, &mut stats));
        let mut at: Vec<Result<(usize, std::ops::Range<usize>), Error>> =
            out.into_iter().map(|r| r.map(|r| (0, r))).collect();
        let (placed, read) = self.read_direct(runs, direct, &mut stats);
        for (i, place) in placed {
            at[i] = place.map(|(b, r)| (b + 1, r));
        }
        let mut bufs = vec![arena];
        let mut windows = vec![0..0; 1];
        for d in read {
            windows.push(d.skew + d.skip..d.skew + d.skip + d.len);
            bufs.push(d.raw);
        }
        self.stats.set(stats);
        Parts { bufs, at, windows }
    }

    /// Keep `bufs` (of a [`Parts`]) for the direct reads to come: a fresh
    /// buffer costs a fault per page to fill and an unmap to drop.
    pub fn recycle(&self, bufs: impl IntoIterator<Item = Vec<u8>>) {
        let mut spare = self.spare.borrow_mut();
        let most =
            usize::try_from(DIRECT_SPAN).unwrap_or(usize::MAX).saturating_add(2 * DIRECT_ALIGN);
        for b in bufs {
            if spare.len() >= SPARE_BUFFERS {
                break;
            }
            if b.len() <= most && b.len() >= DIRECT_ALIGN {
                spare.push(b);
            }
        }
    }

    /// Read the runs into `arena`, one after the other (it grows as needed
    /// and is reused as it is: nothing is zeroed that was long enough),
    /// returning where each run's bytes are; otherwise as
    /// [`QuietPages::read_runs`], taking the runs that `ahead` has read
    /// already (started ahead of need, [`Ahead`]) at the epoch given
    /// instead of reading them again.
    pub fn read_into(
        &self,
        runs: &[(u64, usize)],
        ahead: Option<(&Ahead, u64)>,
        arena: &mut Vec<u8>,
    ) -> Vec<Result<std::ops::Range<usize>, Error>> {
        self.read_into_from(runs, ahead, arena, 0)
    }

    /// [`QuietPages::read_into`], leaving the arena's first `from` bytes
    /// as they are: the runs go after them.
    pub fn read_into_from(
        &self,
        runs: &[(u64, usize)],
        ahead: Option<(&Ahead, u64)>,
        arena: &mut Vec<u8>,
        from: usize,
    ) -> Vec<Result<std::ops::Range<usize>, Error>> {
        // Runs start page-aligned in memory: the kernel's copy into a
        // buffer that straddles page boundaries ran at a fraction of the
        // speed.
        let total: usize = from + runs.iter().map(|r| r.1).sum::<usize>() + DIRECT_ALIGN;
        if arena.is_empty() {
            // A new arena comes zeroed from the allocator (fresh pages for
            // a large one: nothing to clear).
            *arena = vec![0; total];
        } else if arena.len() < total {
            // Exactly what is needed, not twice: arenas are kept and reused.
            arena.reserve_exact(total - arena.len());
            arena.resize(total, 0);
        }
        let start = arena.as_ptr().wrapping_add(from);
        let mut at = from + start.align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
        let mut out: Vec<Result<std::ops::Range<usize>, Error>> = runs
            .iter()
            .map(|&(offset, len)| {
                check(offset, len, self.len)?;
                let r = at..at + len;
                at += len;
                Ok(r)
            })
            .collect();
        let mut stats = self.stats.get();
        let mut ok: Vec<usize> = (0..out.len()).filter(|&i| out[i].is_ok()).collect();
        if let Some((ahead, epoch)) = ahead {
            // A run read ahead is copied into place; one it failed to
            // read, or did not read at this epoch, is read here.
            ok.retain(|&i| match &out[i] {
                Ok(r) => !arena
                    .get_mut(r.clone())
                    .is_some_and(|dst| ahead.take_into(epoch, runs[i].0, dst)),
                Err(_) => true,
            });
        }
        let (cached, mut direct) = self.split_cached(runs, &ok);
        direct.extend(self.copy_cached(runs, cached, &out, arena, &mut stats));
        let (placed, read) = self.read_direct(runs, direct, &mut stats);
        for (i, place) in placed {
            let copied = place.and_then(|(b, r)| {
                let src = read.get(b).and_then(|d| d.raw.get(r));
                match (&out[i], src) {
                    (Ok(dst), Some(src)) if dst.len() == src.len() => {
                        arena[dst.clone()].copy_from_slice(src);
                        Ok(())
                    }
                    _ => Err(Error::Read {
                        offset: runs[i].0,
                        len: runs[i].1 as u64,
                        code: libc::ENODATA,
                    }),
                }
            });
            if let Err(e) = copied {
                out[i] = Err(e);
            }
        }
        self.recycle(read.into_iter().map(|d| d.raw));
        self.stats.set(stats);
        out
    }

    /// `len` bytes at `offset`, as [`QuietPages::read_runs`] reads a run.
    ///
    /// # Errors
    /// [`Error::Read`] / [`Error::OutOfBounds`] as a [`PageSource`] gives.
    pub fn read(&self, offset: u64, len: usize) -> Result<Vec<u8>, Error> {
        self.read_runs(&[(offset, len)]).pop().unwrap_or(Err(Error::Read {
            offset,
            len: len as u64,
            code: libc::EIO,
        }))
    }

    /// Read each span with one direct read, up to [`DIRECT_THREADS`] at a
    /// time (buffers allocated here, filled by the [`SpanPool`]).
    fn read_spans(&self, spans: &[Span]) -> Vec<Result<DirectBuf, Error>> {
        let is_direct = self.is_direct;
        let bufs: Vec<DirectBuf> = {
            let mut spare = self.spare.borrow_mut();
            let mut raw = || spare.pop().unwrap_or_default();
            spans.iter().map(|s| DirectBuf::new(s.offset, s.len, is_direct, raw())).collect()
        };
        let bufs = bufs.into_iter();
        let pool = if spans.len() > 1 {
            self.pool.get_or_init(|| SpanPool::start(&self.direct).ok()).as_ref()
        } else {
            None
        };
        let Some(pool) = pool else {
            return bufs.map(|mut b| b.fill(&self.direct).map(|()| b)).collect();
        };
        pool.fill(bufs, &self.direct)
    }
}

/// A direct read the [`SpanPool`] makes: the span's index, its buffer, and
/// where the filled buffer goes.
type SpanJob = (usize, DirectBuf, SpanReply);
type SpanReply = std::sync::mpsc::Sender<(usize, DirectBuf, Result<(), Error>)>;

/// [`DIRECT_THREADS`] threads, each with its own descriptor of the file,
/// that make the direct reads of one [`QuietPages`] and its clones. They
/// live as long as the readers: a walk makes thousands of reads of several
/// spans, and a thread started for each cost a `clone3(2)` each and, under
/// a busy writer, most of a core. They end when the last reader is dropped.
struct SpanPool {
    jobs: std::sync::Mutex<std::sync::mpsc::Sender<SpanJob>>,
}

impl SpanPool {
    fn start(file: &File) -> std::io::Result<SpanPool> {
        let (tx, rx) = std::sync::mpsc::channel::<SpanJob>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        for _ in 0..DIRECT_THREADS {
            let (file, rx) = (file.try_clone()?, std::sync::Arc::clone(&rx));
            std::thread::Builder::new().name("direct".to_owned()).spawn(move || {
                loop {
                    let job = rx.lock().ok().and_then(|r| r.recv().ok());
                    let Some((i, mut buf, reply)) = job else {
                        break;
                    };
                    let r = buf.fill(&file);
                    // The asker may have gone: nothing waits for it then.
                    let _ = reply.send((i, buf, r));
                }
            })?;
        }
        Ok(SpanPool { jobs: std::sync::Mutex::new(tx) })
    }

    /// Fill `bufs` on the pool's threads, in their order; a buffer the pool
    /// could not take is filled here, from `file`.
    fn fill(
        &self,
        bufs: impl Iterator<Item = DirectBuf>,
        file: &File,
    ) -> Vec<Result<DirectBuf, Error>> {
        let (reply, replies) = std::sync::mpsc::channel();
        let mut out: Vec<Option<Result<DirectBuf, Error>>> = Vec::new();
        for (i, buf) in bufs.enumerate() {
            out.push(None);
            let sent = match self.jobs.lock() {
                Ok(jobs) => jobs.send((i, buf, reply.clone())).map_err(|e| e.0.1),
                Err(_) => Err(buf),
            };
            if let Err(mut buf) = sent {
                out[i] = Some(buf.fill(file).map(|()| buf));
            }
        }
        drop(reply);
        for (i, buf, r) in replies {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(r.map(|()| buf));
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or(Err(Error::Read { offset: 0, len: 0, code: libc::EIO })))
            .collect()
    }
}

/// A buffer for one direct read of `len` bytes at `offset`: the enclosing
/// aligned range, in an aligned window of an over-allocated vector (or
/// exactly the bytes, for a file read without `O_DIRECT`).
struct DirectBuf {
    raw: Vec<u8>,
    /// Where the aligned window starts in `raw`.
    skew: usize,
    /// Aligned file offset of the window.
    start: u64,
    /// Where the asked-for bytes start in the window, and how many.
    skip: usize,
    len: usize,
    /// Window bytes (a multiple of the alignment when direct).
    padded: usize,
}

impl DirectBuf {
    /// A buffer for `len` bytes at `offset`, in `raw` when it is long
    /// enough (its bytes are overwritten by the read), else a new one.
    fn new(offset: u64, len: usize, direct: bool, mut raw: Vec<u8>) -> DirectBuf {
        if !direct {
            if raw.len() < len {
                raw = vec![0u8; len];
            }
            return DirectBuf { raw, skew: 0, start: offset, skip: 0, len, padded: len };
        }
        let start = offset - offset % DIRECT_ALIGN as u64;
        let skip = usize::try_from(offset - start).unwrap_or(0);
        let padded = (skip + len).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        if raw.len() < padded + DIRECT_ALIGN {
            raw = vec![0u8; padded + DIRECT_ALIGN];
        }
        let skew = raw.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
        DirectBuf { raw, skew, start, skip, len, padded }
    }

    /// Read the window from `file` (its last block may end at the end of
    /// the file: only the asked-for bytes must be there).
    fn fill(&mut self, file: &File) -> Result<(), Error> {
        let want = self.skip + self.len;
        let window = self.raw.get_mut(self.skew..self.skew + self.padded).unwrap_or_default();
        let mut done = 0usize;
        while done < want {
            let at = self.start + done as u64;
            let dst = window.get_mut(done..).unwrap_or_default();
            match file.read_at(dst, at) {
                Ok(0) => {
                    return Err(Error::Read {
                        offset: at,
                        len: (want - done) as u64,
                        code: libc::ENODATA,
                    });
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(read_error(at, (want - done) as u64, &e)),
            }
        }
        Ok(())
    }
}

impl PageSource for QuietPages {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, Error> {
        self.read(offset, len).map(Cow::Owned)
    }
}

/// One direct read covering some runs.
#[derive(Debug)]
struct Span {
    offset: u64,
    len: usize,
    runs: Vec<usize>,
}

/// Group the runs `order` (indices into `runs`, sorted by offset) into
/// direct reads: runs at most [`DIRECT_GAP`] apart share one, up to
/// [`DIRECT_SPAN`] bytes.
fn direct_spans(order: &[usize], runs: &[(u64, usize)]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for &i in order {
        let (offset, len) = runs[i];
        let end = offset.saturating_add(len as u64);
        if let Some(last) = spans.last_mut() {
            let last_end = last.offset + last.len as u64;
            if offset <= last_end.saturating_add(DIRECT_GAP)
                && end.saturating_sub(last.offset) <= DIRECT_SPAN.max(len as u64)
            {
                last.len = usize::try_from(end.max(last_end) - last.offset).unwrap_or(usize::MAX);
                last.runs.push(i);
                continue;
            }
        }
        spans.push(Span { offset, len, runs: vec![i] });
    }
    spans
}

/// Lower the calling thread's priority to niceness `nice` (0 to 19;
/// `setpriority(2)` of this thread): for the background work of a reader
/// that follows a writer (reading ahead, replaying a walk), which must
/// leave the thread that looks for the writer's commits the CPU it needs,
/// without being starved itself on a busy host (at nice 19 a thread gets
/// about 1.5 % of a core beside one at nice 0). Best effort: a refusal
/// changes nothing.
pub fn lower_priority(nice: i32) {
    // SAFETY: gettid takes no argument and cannot fail.
    let tid = unsafe { libc::gettid() };
    let Ok(tid) = libc::id_t::try_from(tid) else {
        return;
    };
    // SAFETY: setpriority only reads its integer arguments; raising the
    // niceness of our own thread needs no privilege and touches no memory.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice.clamp(0, 19)) };
}

/// Niceness of [`Ahead`]'s threads: the follower waits for their reads,
/// so they must run on a busy host, but below the thread that looks for
/// commits (weight 335 against 1024 at nice 0).
pub const AHEAD_NICE: i32 = 5;

/// Bytes [`Ahead`] holds at most: runs being read, and the buffers of
/// jobs with runs not taken yet.
const AHEAD_BYTES: usize = 8 << 20;

/// Reads started ahead of need: page runs a reader will want soon, read
/// on background threads as [`QuietPages::read_into`] reads them (copied
/// from the page cache, or with `O_DIRECT`: several in flight, as one at
/// a time the device gives a third of its speed), while the caller works
/// on what it read before; each tagged with the caller's epoch. A run is handed out
/// only to a caller at the same epoch: the caller bumps the epoch whenever
/// what it read before may no longer be what the file holds (for
/// [`crate::observe::settle`]: at each commit it follows).
///
/// A job's runs stay in the one buffer they were read into until each is
/// taken ([`Ahead::take_into`] copies it out), and the buffer then goes
/// back to the threads: nothing is allocated per run.
pub struct Ahead {
    jobs: Option<std::sync::mpsc::Sender<AheadJob>>,
    shared: std::sync::Arc<(std::sync::Mutex<AheadState>, std::sync::Condvar)>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// One read of [`Ahead`]: the epoch, the runs.
type AheadJob = (u64, Vec<(u64, usize)>);

/// Threads of [`Ahead`].
const AHEAD_THREADS: usize = 4;

/// Runs per job of [`Ahead`] at most.
const AHEAD_JOB: usize = 128;

/// Buffers of finished jobs kept for reuse at most.
const AHEAD_SPARE: usize = 2 * AHEAD_THREADS;

/// Where a run read ahead is.
enum Piece {
    /// In a job's buffer: a slot of [`AheadState::bufs`], a range of it.
    Job(usize, std::ops::Range<usize>),
    /// A run extended past what was asked ([`Extend`]), on its own.
    Own(Vec<u8>),
}

/// How far a run read ahead really reaches, from its first bytes: its
/// whole length (a bbolt page's overflow pages, from its header), or the
/// length asked for. [`Ahead`] reads the rest of the run in the same job,
/// so a reader that wants the whole run next takes it without waiting.
pub type Extend = Box<dyn Fn(&[u8], usize) -> usize + Send + Sync>;

/// Bytes one run is extended by at most ([`Extend`]); a longer run is
/// left for its reader to read.
const EXTEND_RUN: usize = 256 << 10;

/// Bytes the runs of one job are extended by at most.
const EXTEND_JOB: usize = 1 << 20;

#[derive(Default)]
struct AheadState {
    /// Runs read, by offset: epoch, and the buffer (an index into `bufs`)
    /// and range holding the run's bytes, or why it could not be read.
    done: HashMap<u64, (u64, Result<Piece, Error>)>,
    /// Runs being read, by offset: epoch.
    busy: HashMap<u64, u64>,
    /// Runs forgotten while being read ([`Ahead::retain`]): what their
    /// jobs bring back is dropped.
    cancelled: HashSet<u64>,
    /// Finished jobs' buffers, each with the number of its runs not taken
    /// yet (0: the slot is free).
    bufs: Vec<(Vec<u8>, usize)>,
    /// Buffers no run refers to, for the next jobs.
    spare: Vec<Vec<u8>>,
    /// Bytes of runs being read, plus the capacity of `bufs` in use.
    bytes: usize,
    epoch: u64,
}

impl AheadState {
    /// Store a finished job's buffer holding `runs` runs; its slot.
    fn keep(&mut self, buf: Vec<u8>, runs: usize) -> usize {
        self.bytes += buf.capacity();
        if let Some(i) = self.bufs.iter().position(|b| b.1 == 0) {
            self.bufs[i] = (buf, runs);
            i
        } else {
            self.bufs.push((buf, runs));
            self.bufs.len() - 1
        }
    }

    /// One run of slot `i` taken: the buffer is spare once all are.
    fn taken(&mut self, i: usize) {
        let Some(b) = self.bufs.get_mut(i) else {
            return;
        };
        b.1 = b.1.saturating_sub(1);
        if b.1 == 0 {
            let buf = std::mem::take(&mut b.0);
            self.bytes = self.bytes.saturating_sub(buf.capacity());
            self.spare(buf);
        }
    }

    fn spare(&mut self, buf: Vec<u8>) {
        if self.spare.len() < AHEAD_SPARE {
            self.spare.push(buf);
        }
    }
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead").finish_non_exhaustive()
    }
}

impl Ahead {
    /// Background readers of `reader`'s file (its own descriptors), which
    /// read each run as far as `extend` says it reaches.
    ///
    /// # Errors
    /// `dup` failures, and a thread that cannot be started.
    pub fn new(reader: &QuietPages, extend: Extend) -> std::io::Result<Ahead> {
        let extend = std::sync::Arc::new(extend);
        let (tx, rx) = std::sync::mpsc::channel::<AheadJob>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let shared = std::sync::Arc::new((
            std::sync::Mutex::new(AheadState::default()),
            std::sync::Condvar::new(),
        ));
        let mut threads = Vec::new();
        for _ in 0..AHEAD_THREADS {
            let q = reader.try_clone()?;
            let (rx, shared) = (std::sync::Arc::clone(&rx), std::sync::Arc::clone(&shared));
            let extend = std::sync::Arc::clone(&extend);
            threads.push(std::thread::Builder::new().name("ahead".to_owned()).spawn(
                move || {
                    lower_priority(AHEAD_NICE);
                    // Where a job's extended runs are read (reused).
                    let mut more = Vec::new();
                    loop {
                        let job = rx.lock().ok().and_then(|r| r.recv().ok());
                        let Some((epoch, runs)) = job else {
                            break;
                        };
                        let (stale, mut buf) = match shared.0.lock() {
                            Ok(mut st) => (st.epoch != epoch, st.spare.pop().unwrap_or_default()),
                            Err(_) => break,
                        };
                        let data = (!stale).then(|| q.read_into(&runs, None, &mut buf));
                        let longer = data
                            .as_ref()
                            .map(|d| extended(&q, &runs, d, &buf, &**extend, &mut more))
                            .unwrap_or_default();
                        let Ok(mut st) = shared.0.lock() else { break };
                        let st = &mut *st;
                        let read: usize = runs.iter().map(|r| r.1).sum();
                        // Runs forgotten while they were read ([`Ahead::retain`]).
                        let dropped: Vec<bool> =
                            runs.iter().map(|(o, _)| st.cancelled.remove(o)).collect();
                        for (&(offset, _), &gone) in runs.iter().zip(&dropped) {
                            if !gone {
                                st.busy.remove(&offset);
                            }
                        }
                        match data {
                            Some(data) if st.epoch == epoch => {
                                st.bytes = st.bytes.saturating_sub(read);
                                let mut longer = longer.into_iter().peekable();
                                let mut pieces: Vec<Option<Result<Piece, Error>>> = Vec::new();
                                for (k, d) in data.into_iter().enumerate() {
                                    let whole = longer.next_if(|(i, _)| *i == k);
                                    if dropped[k] {
                                        pieces.push(None);
                                        continue;
                                    }
                                    pieces.push(Some(match whole {
                                        Some((_, whole)) => {
                                            st.bytes += whole.len();
                                            Ok(Piece::Own(whole))
                                        }
                                        None => d.map(|r| Piece::Job(usize::MAX, r)),
                                    }));
                                }
                                let held = pieces
                                    .iter()
                                    .filter(|p| matches!(p, Some(Ok(Piece::Job(..)))))
                                    .count();
                                let slot = if held > 0 {
                                    st.keep(buf, held)
                                } else {
                                    st.spare(buf);
                                    usize::MAX
                                };
                                for (&(offset, _), p) in runs.iter().zip(pieces) {
                                    let Some(mut p) = p else { continue };
                                    if let Ok(Piece::Job(s, _)) = &mut p {
                                        *s = slot;
                                    }
                                    st.done.insert(offset, (epoch, p));
                                }
                            }
                            _ => st.spare(buf),
                        }
                        shared.1.notify_all();
                    }
                },
            )?);
        }
        Ok(Ahead { jobs: Some(tx), shared, threads })
    }

    /// `true` when none of the runs at `offsets` is being read at `epoch`
    /// (each is read, or was not asked for).
    #[must_use]
    pub fn ready(&self, epoch: u64, offsets: &[u64]) -> bool {
        self.wait_ready(epoch, offsets, Duration::ZERO)
    }

    /// [`Ahead::ready`], waiting up to `timeout` for the runs still being
    /// read (woken as each job finishes, not by polling).
    #[must_use]
    pub fn wait_ready(&self, epoch: u64, offsets: &[u64], timeout: Duration) -> bool {
        let (lock, cv) = &*self.shared;
        let until = std::time::Instant::now() + timeout;
        let Ok(mut st) = lock.lock() else {
            return false;
        };
        loop {
            if st.epoch != epoch || offsets.iter().all(|o| st.busy.get(o) != Some(&epoch)) {
                return true;
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            match cv.wait_timeout(st, left) {
                Ok((g, _)) => st = g,
                Err(_) => return false,
            }
        }
    }

    /// Forget everything read or being read at other epochs than `epoch`.
    pub fn set_epoch(&self, epoch: u64) {
        if let Ok(mut st) = self.shared.0.lock()
            && st.epoch != epoch
        {
            let st = &mut *st;
            st.epoch = epoch;
            st.done.clear();
            st.busy.clear();
            st.cancelled.clear();
            for (buf, _) in std::mem::take(&mut st.bufs) {
                st.spare(buf);
            }
            st.bytes = 0;
        }
    }

    /// Keep, at the same epoch, only what was read or is being read for
    /// runs at offsets `keep` accepts, and forget the rest: a follower that
    /// followed a commit keeps the reads of pages the new snapshot still
    /// reaches (their bytes are its bytes too) instead of reading them all
    /// again.
    pub fn retain(&self, keep: impl Fn(u64) -> bool) {
        let Ok(mut st) = self.shared.0.lock() else {
            return;
        };
        let st = &mut *st;
        let gone: Vec<u64> = st.done.keys().copied().filter(|&o| !keep(o)).collect();
        for o in gone {
            match st.done.remove(&o) {
                Some((_, Ok(Piece::Job(slot, _)))) => st.taken(slot),
                Some((_, Ok(Piece::Own(whole)))) => {
                    st.bytes = st.bytes.saturating_sub(whole.len());
                }
                _ => {}
            }
        }
        let stopped: Vec<u64> = st.busy.keys().copied().filter(|&o| !keep(o)).collect();
        for o in stopped {
            st.busy.remove(&o);
            st.cancelled.insert(o);
        }
    }

    /// Start reading `runs` (those not read or being read already), at
    /// `epoch`, while fewer than `AHEAD_BYTES` (8 MiB) are held.
    pub fn submit(&self, epoch: u64, runs: &[(u64, usize)]) {
        self.submit_within(epoch, runs, AHEAD_BYTES);
    }

    /// [`Ahead::submit`] for runs the caller waits for next: all of them,
    /// however much is held (the runs read further ahead must not keep
    /// out the ones needed now, or the caller reads them itself, on its
    /// own thread).
    pub fn submit_now(&self, epoch: u64, runs: &[(u64, usize)]) {
        self.submit_within(epoch, runs, usize::MAX);
    }

    fn submit_within(&self, epoch: u64, runs: &[(u64, usize)], most: usize) {
        let Some(jobs) = &self.jobs else { return };
        let Ok(mut st) = self.shared.0.lock() else {
            return;
        };
        if st.epoch != epoch {
            return;
        }
        let mut fresh: Vec<(u64, usize)> = Vec::new();
        for &(offset, len) in runs {
            if st.bytes.saturating_add(len) > most {
                break;
            }
            if st.done.contains_key(&offset) || st.busy.contains_key(&offset) {
                continue;
            }
            st.busy.insert(offset, epoch);
            st.bytes += len;
            fresh.push((offset, len));
        }
        drop(st);
        for job in fresh.chunks(AHEAD_JOB) {
            let _ = jobs.send((epoch, job.to_vec()));
        }
    }

    /// Copy the run at `offset` read at `epoch` into `dst` (its first
    /// `dst.len()` bytes), waiting for it when it is being read: `false`
    /// when it was not asked for at that epoch, could not be read, or is
    /// shorter than `dst`.
    pub fn take_into(&self, epoch: u64, offset: u64, dst: &mut [u8]) -> bool {
        let (lock, cv) = &*self.shared;
        let Ok(mut st) = lock.lock() else {
            return false;
        };
        loop {
            if st.epoch != epoch {
                return false;
            }
            if st.done.get(&offset).is_some_and(|(e, _)| *e == epoch) {
                // A run read further than asked stays for the reader that
                // wants all of it.
                if let Some((_, Ok(Piece::Own(whole)))) = st.done.get(&offset)
                    && whole.len() > dst.len()
                {
                    dst.copy_from_slice(&whole[..dst.len()]);
                    return true;
                }
                let Some((_, r)) = st.done.remove(&offset) else {
                    return false;
                };
                return match r {
                    Ok(Piece::Job(slot, range)) => {
                        let bytes = st
                            .bufs
                            .get(slot)
                            .and_then(|b| b.0.get(range))
                            .and_then(|b| b.get(..dst.len()));
                        let copied = bytes.is_some_and(|b| {
                            dst.copy_from_slice(b);
                            true
                        });
                        st.taken(slot);
                        copied
                    }
                    Ok(Piece::Own(whole)) => {
                        st.bytes = st.bytes.saturating_sub(whole.len());
                        whole.get(..dst.len()).is_some_and(|b| {
                            dst.copy_from_slice(b);
                            true
                        })
                    }
                    Err(_) => false,
                };
            }
            if st.busy.get(&offset) != Some(&epoch) {
                return false;
            }
            st = match cv.wait(st) {
                Ok(g) => g,
                Err(_) => return false,
            };
        }
    }
}

/// The runs of a job that `extend` says reach further than they were read
/// (within [`EXTEND_RUN`] each and [`EXTEND_JOB`] in all), read whole:
/// index into `runs` and the run's bytes, by index.
fn extended(
    q: &QuietPages,
    runs: &[(u64, usize)],
    data: &[Result<std::ops::Range<usize>, Error>],
    buf: &[u8],
    extend: &(dyn Fn(&[u8], usize) -> usize + Send + Sync),
    more: &mut Vec<u8>,
) -> Vec<(usize, Vec<u8>)> {
    let mut rest: Vec<(usize, (u64, usize))> = Vec::new();
    let mut budget = EXTEND_JOB;
    for (i, (&(offset, len), d)) in runs.iter().zip(data).enumerate() {
        let Some(first) = d.as_ref().ok().and_then(|r| buf.get(r.clone())) else {
            continue;
        };
        let more = extend(first, len).saturating_sub(len);
        let fits = (offset + len as u64).checked_add(more as u64).is_some_and(|end| end <= q.len());
        if more > 0 && more <= EXTEND_RUN && more <= budget && fits {
            budget -= more;
            rest.push((i, (offset + len as u64, more)));
        }
    }
    if rest.is_empty() {
        return Vec::new();
    }
    let tails: Vec<(u64, usize)> = rest.iter().map(|r| r.1).collect();
    let got = q.read_into(&tails, None, more);
    rest.iter()
        .zip(got)
        .filter_map(|(&(i, _), tail)| {
            let tail = more.get(tail.ok()?)?;
            let first = buf.get(data[i].as_ref().ok()?.clone())?;
            let mut whole = Vec::with_capacity(first.len() + tail.len());
            whole.extend_from_slice(first);
            whole.extend_from_slice(tail);
            Some((i, whole))
        })
        .collect()
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.jobs = None;
        self.set_epoch(u64::MAX);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
