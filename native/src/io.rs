//! Page sources over files: `pread`, quiet direct reads, and mappings.
//!
//! Which one to use is an explicit choice:
//! * [`Mapping`] (via its bytes) — zero-copy; the engines' choice, as in
//!   bbolt. Subject to the SIGBUS contract of [`crate::map`].
//! * [`PreadSource`] — `pread(2)` into owned buffers; goes through the
//!   page cache like `read()`.
//! * [`QuietSource`] — reads with `O_DIRECT` in aligned chunks, so reading
//!   a file's structure does not change which of its pages are resident.
//!   This is how the inspector reads: watching a file must not disturb
//!   what it shows, and a file truncated under it yields short reads, not
//!   SIGBUS. Falls back to `pread` where the file system refuses
//!   `O_DIRECT` (tmpfs, whose pages are always in memory anyway).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::rc::Rc;

use mapwise_core::{Error, PageSource};

use crate::map::Mapping;

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

/// Open `path` read-only (with `O_DIRECT` when `direct`), refusing
/// anything but a regular file: opening a FIFO would block forever, and a
/// directory or device has no pages to show. The open itself does not
/// block (`O_NONBLOCK`, cleared again for a regular file).
///
/// # Errors
/// The OS error of `open`/`fstat`, or `InvalidInput` naming the file type.
pub fn open_regular(path: &Path, direct: bool) -> std::io::Result<File> {
    use rustix::fs::{FileType, Mode, OFlags};
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    if direct {
        flags |= OFlags::DIRECT;
    }
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    let st = rustix::fs::fstat(&fd)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        let what = match kind {
            FileType::Directory => "a directory",
            FileType::Fifo => "a FIFO",
            FileType::Socket => "a socket",
            FileType::CharacterDevice | FileType::BlockDevice => "a device",
            _ => "not a regular file",
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is {what}, not a regular file", path.display()),
        ));
    }
    rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)?;
    Ok(File::from(fd))
}

fn read_error(offset: u64, len: u64, e: &std::io::Error) -> Error {
    Error::Read {
        offset,
        len,
        code: e.raw_os_error().unwrap_or(0),
    }
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
const DIRECT_ALIGN: usize = 4096;
/// Bytes per direct read.
const CHUNK: usize = 1 << 20;
/// Chunks kept in memory (8 MiB), within `cargo xtask limits`' 24 MiB per
/// command. On a 272 MiB bbolt file, 64 chunks made `check` no faster and
/// `pages` 12 % faster, for 56 MiB more.
const CACHED_CHUNKS: usize = 8;

/// A chunk-cached reader that leaves the page cache alone: `O_DIRECT`
/// reads of 1 MiB aligned chunks, the last 8 chunks kept in memory.
///
/// The length is fixed at open; a file that shrinks later makes reads of
/// the missing part fail with [`Error::Read`] (never SIGBUS).
#[derive(Debug)]
pub struct QuietSource {
    file: File,
    len: u64,
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
        let (file, direct) = match open_regular(path, true) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open_regular(path, false)?, false),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        Ok(QuietSource {
            file,
            len,
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

    /// Drop every cached chunk, so the next reads see the file as it is
    /// now (a writer may have changed it since the chunks were read). The
    /// length stays the one seen at open.
    pub fn forget(&self) {
        let mut cache = self.cache.borrow_mut();
        cache.chunks.clear();
        cache.order.clear();
    }

    /// Stamp the chunks read from the file from now on with `epoch`
    /// (the caller's clock: [`crate::settle`] counts its checks of the meta
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

    fn read_chunk(&self, index: u64) -> Result<(Rc<Vec<u8>>, u64), Error> {
        if let Some((c, e)) = self.cache.borrow().chunks.get(&index) {
            return Ok((Rc::clone(c), *e));
        }
        let offset = index * CHUNK as u64;
        let want =
            usize::try_from((self.len - offset.min(self.len)).min(CHUNK as u64)).unwrap_or(CHUNK);
        let data = Rc::new(self.read_aligned(offset, want)?);
        let mut cache = self.cache.borrow_mut();
        if cache.order.len() >= CACHED_CHUNKS
            && let Some(old) = cache.order.pop_front()
        {
            cache.chunks.remove(&old);
        }
        cache.order.push_back(index);
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
            let (chunk, epoch) = self.read_chunk(index)?;
            oldest = oldest.min(epoch);
            let start = usize::try_from(pos - index * CHUNK as u64).unwrap_or(0);
            let stop =
                usize::try_from((end - index * CHUNK as u64).min(chunk.len() as u64)).unwrap_or(0);
            let part = chunk.get(start..stop).unwrap_or_default();
            if part.is_empty() {
                return Err(Error::Read {
                    offset: pos,
                    len: end - pos,
                    code: libc::ENODATA,
                });
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
        let data: Vec<u8> = (0..(3 * CHUNK + 123))
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&data)
            .unwrap();
        let q = QuietSource::open(&path).unwrap();
        assert_eq!(q.len(), data.len() as u64);
        for (off, len) in [
            (0, 10),
            (CHUNK - 5, 10),
            (2 * CHUNK + 7, CHUNK + 100),
            (data.len() - 1, 1),
        ] {
            assert_eq!(&*q.read_at(off as u64, len).unwrap(), &data[off..off + len]);
        }
        assert!(q.read_at(data.len() as u64, 1).is_err());
        let p = PreadSource::new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(&*p.read_at(5, 5).unwrap(), &data[5..10]);
    }
}
