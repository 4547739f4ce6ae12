//! The page cache around a bench file: evict, warm, measure residency, and
//! the physical limits (sequential O_DIRECT read, cached read bandwidth).
//!
//! xtask does this itself, not through the tools under test, so both sides
//! of a comparison start from the same state.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::interrupt;

/// Buffer size of every whole-file read here.
pub const CHUNK: usize = 1 << 20;
/// Alignment of that buffer (O_DIRECT needs the logical block size; 4 KiB
/// covers every common device).
const ALIGN: usize = 4096;

/// Drops the file from the page cache: `fsync` (dirty pages cannot be
/// dropped), then `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)` over the
/// whole file. Needs only read permission; mapped or locked pages stay.
pub fn evict(path: &Path) -> Result<()> {
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    f.sync_all()
        .with_context(|| format!("{}: fsync", path.display()))?;
    // SAFETY: plain syscall on a descriptor we own for the duration.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        bail!(
            "{}: posix_fadvise(DONTNEED): {}",
            path.display(),
            std::io::Error::from_raw_os_error(rc)
        );
    }
    Ok(())
}

/// What [`evict_random_until`] did.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PartialEviction {
    /// Resident fraction before.
    pub before: f64,
    /// Resident fraction after.
    pub after: f64,
    /// Blocks dropped (a block may be drawn twice).
    pub blocks: usize,
}

/// Drops random `block`-byte, block-aligned ranges of the file from the
/// page cache (`posix_fadvise(DONTNEED)` on each, blocks drawn from
/// splitmix64(`seed`)) until at most `target` (0–1) of its pages are
/// resident, measuring with mincore between rounds; fsyncs first (dirty
/// pages cannot be dropped). Each round drops as many blocks as the excess
/// would fill if every one were wholly resident; after 64 rounds it stops
/// wherever it is (pages another process maps or locks stay).
///
/// # Errors
/// When the file cannot be opened, synced or measured.
pub fn evict_random_until(
    path: &Path,
    target: f64,
    block: u64,
    seed: u64,
) -> Result<PartialEviction> {
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    f.sync_all()
        .with_context(|| format!("{}: fsync", path.display()))?;
    let len = f.metadata()?.len();
    let block = block.max(4096);
    let blocks_in_file = len.div_ceil(block).max(1);
    let mut rng = mapwise_native::engine::rng::SplitMix64::new(seed);
    let before = resident_fraction(path)?;
    let (mut now, mut dropped) = (before, 0usize);
    for _ in 0..64 {
        if now <= target {
            break;
        }
        #[expect(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let want = (((now - target) * len as f64) / block as f64)
            .ceil()
            .max(1.0) as u64;
        for _ in 0..want {
            let at = rng.next_u64() % blocks_in_file * block;
            let (off, n) = (
                libc::off_t::try_from(at).context("offset too large")?,
                libc::off_t::try_from(block).context("block too large")?,
            );
            // SAFETY: plain syscall on a descriptor we own for the duration.
            let rc =
                unsafe { libc::posix_fadvise(f.as_raw_fd(), off, n, libc::POSIX_FADV_DONTNEED) };
            if rc != 0 {
                bail!(
                    "{}: posix_fadvise(DONTNEED): {}",
                    path.display(),
                    std::io::Error::from_raw_os_error(rc)
                );
            }
            dropped += 1;
        }
        now = resident_fraction(path)?;
    }
    Ok(PartialEviction {
        before,
        after: now,
        blocks: dropped,
    })
}

/// Fraction (0–1) of the file's pages in the page cache, from `mincore` on a
/// fresh read-only mapping (mapping alone faults nothing in, so measuring
/// does not change what is measured).
pub fn resident_fraction(path: &Path) -> Result<f64> {
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let len = usize::try_from(f.metadata()?.len()).context("file too large to map")?;
    if len == 0 {
        return Ok(1.0);
    }
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .unwrap_or(4096)
        .max(1);
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: a fresh PROT_READ shared mapping of a file we hold open; the
    // result is checked before use.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        bail!(
            "{}: mmap: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: `addr..addr+len` is the mapping made above; `vec` holds one
    // byte per page of it, as mincore requires.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: unmapping exactly the mapping made above, used no more.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        bail!("{}: mincore: {err}", path.display());
    }
    let resident = vec.iter().filter(|&&b| b & 1 != 0).count();
    #[expect(clippy::cast_precision_loss)]
    Ok(resident as f64 / pages as f64)
}

/// One timed whole-file read.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ReadPass {
    /// Bytes read (the file size).
    pub bytes: u64,
    /// Seconds from open to the last byte.
    pub secs: f64,
}

/// Reads the whole file sequentially with `read(2)` into a 1 MiB buffer,
/// through the page cache or, with `direct`, with `O_DIRECT` (bypassing
/// it; the buffer is 4 KiB aligned). Timed from open to the last byte.
pub fn read_whole(path: &Path, direct: bool) -> Result<ReadPass> {
    let mut buf = AlignedBuf::new(CHUNK, ALIGN);
    let start = Instant::now();
    let mut opts = OpenOptions::new();
    opts.read(true);
    if direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let what = if direct { "open with O_DIRECT" } else { "open" };
    let mut f = opts
        .open(path)
        .with_context(|| format!("{}: {what}", path.display()))?;
    let mut bytes = 0u64;
    loop {
        let n = match f.read(buf.as_mut_slice()) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("{}: read at {bytes}", path.display()));
            }
        };
        bytes += n as u64;
        interrupt::check()?;
    }
    Ok(ReadPass {
        bytes,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// A zeroed heap buffer with a chosen alignment.
struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize, align: usize) -> Self {
        let layout = std::alloc::Layout::from_size_align(len, align).expect("valid buffer layout");
        assert!(len > 0, "empty buffer");
        // SAFETY: the layout has a non-zero size (asserted above).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Self { ptr, layout }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points to `layout.size()` initialised (zeroed) bytes
        // owned by `self`, borrowed mutably for the slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}
