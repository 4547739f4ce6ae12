//! The read()-vs-mmap microbenchmark of the 2003 PostgreSQL-list
//! "mmap-test", reconstructed faithfully and then fairly.
//!
//! The original (a small C program; our reconstruction is
//! `peers/mmaptest/mmaptest.c`) read one file, or a list of
//! files cycled in order, many times and wrote every byte to stdout,
//! which was redirected to `/dev/null`. Its modes were `read()` into a
//! buffer of a compile-time size (or of the whole file), one `mmap` made
//! before the loop, and `mmap` + `munmap` on every iteration. [`run`]
//! does the same with the mode a run-time parameter ([`Mode`]), writing
//! to any [`Write`] the caller hands in (stdout in the command line,
//! written with plain `write(2)` calls exactly as the original did).
//!
//! **The built-in flaw, kept on purpose.** `write(2)` to `/dev/null`
//! returns without looking at the buffer, so the original mmap modes
//! never read a byte of the mapping: they compared copying the data
//! (`read()`) against not touching it at all. [`Options::touch`] makes
//! every mode read every byte (it sums them into
//! [`ModeResult::checksum`], the same value in every mode), which turns
//! the comparison into one between ways of *using* file data. Without it
//! the run is faithful to the original.
//!
//! **Timing as the original.** Files are opened, the read buffer is
//! allocated and (for [`Mode::MmapOnce`]) the files are mapped before the
//! clock starts; [`ModeResult::secs`] is the loop alone and
//! [`ModeResult::setup_secs`] the preparation. With [`Options::cold`]
//! every file is dropped from the page cache (`fsync`, then
//! `posix_fadvise(POSIX_FADV_DONTNEED)`) before each mode's run, outside
//! both times; only the first iteration of such a run is cold.
//!
//! **Warming our own code, not the data.** Before the clock starts, the
//! loop's code path runs once without moving a byte of file data: a
//! zero-length `write` to the writer, a zero-length `pread` (read mode) or
//! one `mmap` + `munmap` of the first file without `MAP_POPULATE` and
//! without touching it (mmap-each), and a checksum of a small local buffer
//! (touch). The C program is a few pages of code; mapwise is megabytes,
//! and without this its first timed iteration paid 10–15 µs for its own
//! first calls (code faulted in, cold caches), which is about half of what
//! a cold untouched mmap pass over 16 files measures. The page cache is not
//! changed by it (nothing is read or faulted from the files).
//!
//! **The SIGBUS contract** (see [`crate::os::map`]): the mmap modes read
//! through mappings, so nobody may truncate a file below its size at
//! [`Files::open`] while a run lasts. The benchmark and the tests run on
//! files of their own; a user pointing `mapwise mmaptest` at a file that
//! another process truncates meanwhile may see the process die of SIGBUS,
//! as the original would.
//!
//! Units: sizes and counts in bytes, times in seconds, rates in GB/s
//! with GB = 10^9 bytes (as the C reconstruction prints them).

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use serde::Serialize;

use crate::os::map::FileMap;
use crate::os::residency;

/// The original's default: 100 000 passes over the file list.
pub const DEFAULT_ITERATIONS: u64 = 100_000;

/// The original's default read size: 64 KiB.
pub const DEFAULT_READ_SIZE: usize = 64 * 1024;

/// How many bytes one `read()` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadSize {
    /// This many bytes per call (the original's `DEFAULT_READSIZE`).
    Bytes(NonZeroUsize),
    /// One call per file into a buffer as large as the largest file (the
    /// original's "whole-file buffers", `DEFAULT_READSIZE` = file size).
    Whole,
}

impl Default for ReadSize {
    /// 64 KiB, as in the original's quoted run.
    fn default() -> Self {
        ReadSize::Bytes(NonZeroUsize::new(DEFAULT_READ_SIZE).unwrap_or(NonZeroUsize::MIN))
    }
}

impl fmt::Display for ReadSize {
    /// `whole` or the byte count (`65536`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadSize::Bytes(n) => write!(f, "{n}"),
            ReadSize::Whole => f.write_str("whole"),
        }
    }
}

/// Why a read size did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad read size {0:?} (a byte count such as 65536, 64K, 64KiB, 1MiB, or `whole`)")]
pub struct BadReadSize(pub String);

impl FromStr for ReadSize {
    type Err = BadReadSize;

    /// `whole`, or a positive byte count with an optional binary suffix:
    /// `65536`, `64K`, `64KiB`, `1M`, `1MiB` (K = KiB = 1024; case does
    /// not matter).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadReadSize(s.to_owned());
        let t = s.trim().to_ascii_lowercase();
        if t == "whole" {
            return Ok(ReadSize::Whole);
        }
        let units: [(&str, usize); 7] = [
            ("kib", 1 << 10),
            ("mib", 1 << 20),
            ("gib", 1 << 30),
            ("k", 1 << 10),
            ("m", 1 << 20),
            ("g", 1 << 30),
            ("b", 1),
        ];
        let (num, mult) = units
            .iter()
            .find_map(|&(suffix, m)| t.strip_suffix(suffix).map(|n| (n.trim(), m)))
            .unwrap_or((t.as_str(), 1));
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: usize = num.parse().map_err(|_| bad())?;
        n.checked_mul(mult).and_then(NonZeroUsize::new).map(ReadSize::Bytes).ok_or_else(bad)
    }
}

/// How the data reaches the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `pread(2)` into one buffer, then write the bytes read (the original
    /// without `DO_MMAP`).
    Read(ReadSize),
    /// Map every file once before the loop and write the mapping each
    /// iteration (`DO_MMAP` + `DO_MMAP_ONCE`).
    MmapOnce,
    /// `mmap` + write + `munmap` for every file on every iteration
    /// (`DO_MMAP`).
    MmapEach,
}

impl Mode {
    /// `read`, `mmap-once` or `mmap-each`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mode::Read(_) => "read",
            Mode::MmapOnce => "mmap-once",
            Mode::MmapEach => "mmap-each",
        }
    }

    /// `true` for the two mmap modes.
    #[must_use]
    pub fn is_mmap(self) -> bool {
        !matches!(self, Mode::Read(_))
    }
}

impl fmt::Display for Mode {
    /// `read(65536)`, `read(whole)`, `mmap-once`, `mmap-each`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Read(size) => write!(f, "read({size})"),
            other => f.write_str(other.name()),
        }
    }
}

/// What every mode of a run shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Passes over the whole file list.
    pub iterations: u64,
    /// Map with `MAP_POPULATE` (mmap modes only; the reconstruction's
    /// `-DPOPULATE`). Read mode ignores it.
    pub populate: bool,
    /// Read every byte in every mode, summing them into
    /// [`ModeResult::checksum`] (the reconstruction's `-DTOUCH`, which
    /// sums 8-byte words; ours sums bytes so that the value does not
    /// depend on how the data was cut into reads).
    pub touch: bool,
    /// `fsync` and evict every file from the page cache before the run.
    pub cold: bool,
}

impl Default for Options {
    /// The original: 100 000 iterations, no populate, no touch, warm.
    fn default() -> Self {
        Options { iterations: DEFAULT_ITERATIONS, populate: false, touch: false, cold: false }
    }
}

/// The result of one mode over the file list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeResult {
    /// `read`, `mmap-once` or `mmap-each`.
    pub mode: &'static str,
    /// Read mode: bytes asked for per `pread` (with `whole_file`, the
    /// size of the largest file). `None` in the mmap modes.
    pub read_size: Option<u64>,
    /// Read mode with a whole-file buffer.
    pub whole_file: bool,
    /// `MAP_POPULATE` was used (always `false` in read mode).
    pub populate: bool,
    /// Every byte was read by this process ([`Options::touch`]).
    pub touch: bool,
    /// The files were evicted before the run ([`Options::cold`]).
    pub cold: bool,
    /// Files in the list.
    pub files: usize,
    /// Sum of the file sizes at open, bytes.
    pub bytes_per_iteration: u64,
    /// Passes over the list.
    pub iterations: u64,
    /// Bytes handed to the writer; `bytes_per_iteration × iterations`
    /// unless a file changed size during the run.
    pub bytes: u64,
    /// Seconds before the clock started: the code-path warm-up (module
    /// docs), then buffer allocation, or mapping every file (`mmap-once`;
    /// with `MAP_POPULATE` this includes reading the files in). Eviction
    /// is not included.
    pub setup_secs: f64,
    /// Seconds of the loop alone, as the original timed it.
    pub secs: f64,
    /// `bytes / secs / 10^9` (0 when nothing was timed).
    pub gb_per_s: f64,
    /// With [`Options::touch`]: the sum of every byte delivered, over all
    /// iterations (wrapping at 2^64), equal in every mode. `None`
    /// without touch.
    pub checksum: Option<u64>,
}

impl fmt::Display for ModeResult {
    /// One line: `read(65536) 0.530124 s 7372800000 bytes 13.91 GB/s
    /// (1 file × 73728 bytes × 100000 iterations; setup 0.000012 s)
    /// checksum=939991200000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match (self.mode, self.read_size) {
            ("read", _) if self.whole_file => "read(whole)".to_owned(),
            ("read", Some(n)) => format!("read({n})"),
            (m, _) if self.populate => format!("{m}+populate"),
            (m, _) => m.to_owned(),
        };
        write!(
            f,
            "{label:<18} {:.6} s {} bytes {:.2} GB/s ({} file{}, {} bytes × {} iterations; setup {:.6} s{})",
            self.secs,
            self.bytes,
            self.gb_per_s,
            self.files,
            if self.files == 1 { "" } else { "s" },
            self.bytes_per_iteration,
            self.iterations,
            self.setup_secs,
            if self.cold { "; cold" } else { "" },
        )?;
        match self.checksum {
            Some(sum) => write!(f, " checksum={sum}"),
            None if self.mode != "read" => f.write_str(" untouched"),
            None => Ok(()),
        }
    }
}

/// Why a run failed. Each variant names the file (or the output) and
/// carries the OS error as `source`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file list is empty.
    #[error("no files to read")]
    NoFiles,
    /// `open(2)` failed.
    #[error("{}: cannot open", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `fstat(2)` failed.
    #[error("{}: fstat(2) failed", path.display())]
    Stat {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file is larger than this address space can map or buffer.
    #[error("{}: {len} bytes do not fit in the address space", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        len: u64,
    },
    /// `pread(2)` failed.
    #[error("{}: pread(2) at byte {offset} failed", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Byte offset of the failing read.
        offset: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `mmap(2)` failed.
    #[error("{}: mmap(2) of {len} bytes failed", path.display())]
    Map {
        /// The file.
        path: PathBuf,
        /// Bytes asked for.
        len: u64,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `fsync(2)` before eviction failed.
    #[error("{}: fsync(2) before eviction failed", path.display())]
    Sync {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Eviction from the page cache failed.
    #[error("{}: cannot evict from the page cache", path.display())]
    Evict {
        /// The file.
        path: PathBuf,
        /// What the residency layer said.
        #[source]
        source: residency::Error,
    },
    /// Writing the data stream failed (a closed pipe shows up here as
    /// `BrokenPipe`).
    #[error("writing the data stream failed")]
    Write {
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// One open input file.
#[derive(Debug)]
struct Input {
    path: PathBuf,
    file: File,
    /// Size at open, bytes.
    len: u64,
    /// The same as `usize` (checked at open).
    len_usize: usize,
}

/// The file list of a run, opened read-only, in the order given.
#[derive(Debug)]
pub struct Files {
    inputs: Vec<Input>,
}

impl Files {
    /// Opens every path read-only and notes its size; refuses anything
    /// but a regular file (FIFO, socket, directory, device) without
    /// blocking, as the inspector does ([`crate::os::io::open_regular`]). The same path may
    /// appear more than once (it is then read that often per iteration).
    ///
    /// # Errors
    /// [`Error::NoFiles`], [`Error::Open`], [`Error::Stat`],
    /// [`Error::TooLarge`].
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Files, Error> {
        if paths.is_empty() {
            return Err(Error::NoFiles);
        }
        let mut inputs = Vec::with_capacity(paths.len());
        for p in paths {
            let path = p.as_ref().to_path_buf();
            // Regular files only: a FIFO would block the open (and then
            // the loop) forever, a directory or device has no length.
            let file = match crate::os::io::open_regular(&path, false) {
                Ok(f) => f,
                Err(source) => return Err(Error::Open { path, source }),
            };
            let len = match file.metadata() {
                Ok(m) => m.len(),
                Err(source) => return Err(Error::Stat { path, source }),
            };
            let Ok(len_usize) = usize::try_from(len) else {
                return Err(Error::TooLarge { path, len });
            };
            inputs.push(Input { path, file, len, len_usize });
        }
        Ok(Files { inputs })
    }

    /// Number of files in the list.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// Always `false` (an empty list is refused at open).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Sum of the file sizes at open, bytes: what one iteration delivers.
    #[must_use]
    pub fn total_len(&self) -> u64 {
        self.inputs.iter().map(|i| i.len).sum()
    }

    /// `fsync` every file, then drop it from the page cache.
    fn evict(&self) -> Result<(), Error> {
        for i in &self.inputs {
            i.file.sync_all().map_err(|source| Error::Sync { path: i.path.clone(), source })?;
            residency::evict(&i.file, 0, residency::TO_EOF)
                .map_err(|source| Error::Evict { path: i.path.clone(), source })?;
        }
        Ok(())
    }
}

/// Maps `input` read-only and shared, as the original did (`PROT_READ`,
/// `MAP_SHARED`, optionally `MAP_POPULATE`, no madvise).
fn map(input: &Input, populate: bool) -> Result<FileMap, Error> {
    // The length is given, so there is no fstat on every call: one
    // mmap(2) per map, as in the C program.
    // SAFETY: a read-only shared mapping of a file we hold open, of the
    // length seen at open. It requires that the file is not truncated or
    // modified while the mapping lives; the module's SIGBUS contract
    // (documented on `run`) puts that on the caller, and the benchmark and
    // tests run on files of their own that nobody changes during a run.
    // Nothing here writes through the mapping.
    unsafe { FileMap::shared_read_only(&input.file, input.len_usize, populate) }
        .map_err(|source| Error::Map { path: input.path.clone(), len: input.len, source })
}

/// The data stream: every write goes to the caller's writer, and with
/// touch the bytes are summed first.
struct Sink<'w, W: Write + ?Sized> {
    out: &'w mut W,
    touch: bool,
    sum: u64,
    bytes: u64,
}

impl<W: Write + ?Sized> Sink<'_, W> {
    #[inline]
    fn emit(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.touch {
            self.sum = self.sum.wrapping_add(byte_sum(data));
        }
        self.out.write_all(data).map_err(|source| Error::Write { source })?;
        self.bytes += data.len() as u64;
        Ok(())
    }
}

/// Runs one mode over `files`, writing every byte delivered to `out`.
///
/// `out` should not read what it is given if the run is to be faithful:
/// the command line passes a plain `write(2)` on stdout (no buffering, no
/// newline scan), redirected to `/dev/null`. A writer that inspects the
/// buffer (a `LineWriter`, a `Vec`) touches the data in every mode.
///
/// The caller must keep other processes from truncating the files while
/// the run lasts (the SIGBUS contract of the module docs).
///
/// # Errors
/// [`Error::Sync`] or [`Error::Evict`] (cold), [`Error::Read`],
/// [`Error::Map`], [`Error::Write`].
pub fn run<W: Write + ?Sized>(
    files: &Files,
    mode: Mode,
    opts: &Options,
    out: &mut W,
) -> Result<ModeResult, Error> {
    if opts.cold {
        files.evict()?;
    }
    let mut sink = Sink { out, touch: opts.touch, sum: 0, bytes: 0 };
    let setup_start = Instant::now();
    warm_code_path(files, mode, &mut sink)?;
    let (setup_secs, secs, read_size) = match mode {
        Mode::Read(size) => {
            let largest = files.inputs.iter().map(|i| i.len_usize).max().unwrap_or(0);
            let buf_len = match size {
                ReadSize::Bytes(n) => n.get(),
                ReadSize::Whole => largest,
            };
            let mut buf = vec![0u8; buf_len.max(1)];
            let setup = setup_start.elapsed().as_secs_f64();
            let start = Instant::now();
            read_loop(files, opts.iterations, &mut buf, &mut sink)?;
            (setup, start.elapsed().as_secs_f64(), Some(buf_len as u64))
        }
        Mode::MmapOnce => {
            let maps = files
                .inputs
                .iter()
                .map(|i| map(i, opts.populate))
                .collect::<Result<Vec<_>, _>>()?;
            let setup = setup_start.elapsed().as_secs_f64();
            let start = Instant::now();
            for _ in 0..opts.iterations {
                for m in &maps {
                    sink.emit(m.bytes())?;
                }
            }
            let secs = start.elapsed().as_secs_f64();
            drop(maps);
            (setup, secs, None)
        }
        Mode::MmapEach => {
            let setup = setup_start.elapsed().as_secs_f64();
            let start = Instant::now();
            for _ in 0..opts.iterations {
                for i in &files.inputs {
                    let m = map(i, opts.populate)?;
                    sink.emit(m.bytes())?;
                    drop(m);
                }
            }
            (setup, start.elapsed().as_secs_f64(), None)
        }
    };
    #[expect(clippy::cast_precision_loss)]
    let gb_per_s = if secs > 0.0 { sink.bytes as f64 / secs / 1e9 } else { 0.0 };
    Ok(ModeResult {
        mode: mode.name(),
        read_size,
        whole_file: mode == Mode::Read(ReadSize::Whole),
        populate: opts.populate && mode.is_mmap(),
        touch: opts.touch,
        cold: opts.cold,
        files: files.len(),
        bytes_per_iteration: files.total_len(),
        iterations: opts.iterations,
        bytes: sink.bytes,
        setup_secs,
        secs,
        gb_per_s,
        checksum: opts.touch.then_some(sink.sum),
    })
}

/// Runs each mode in turn over the same files (each mode cold again with
/// [`Options::cold`]). Errors as [`run`].
///
/// # Errors
/// The first failing mode's [`Error`].
pub fn run_modes<W: Write + ?Sized>(
    files: &Files,
    modes: &[Mode],
    opts: &Options,
    out: &mut W,
) -> Result<Vec<ModeResult>, Error> {
    modes.iter().map(|&m| run(files, m, opts, out)).collect()
}

/// Runs the loop's code path once without moving file data (see the
/// module docs): nothing is read from, faulted from or written of the
/// files, so neither the page cache nor the byte counts change.
fn warm_code_path<W: Write + ?Sized>(
    files: &Files,
    mode: Mode,
    sink: &mut Sink<'_, W>,
) -> Result<(), Error> {
    // A zero-length write(2): allowed by the `Write` contract, and a no-op
    // for /dev/null, files and pipes.
    let _ = sink.out.write(&[]).map_err(|source| Error::Write { source })?;
    if sink.touch {
        std::hint::black_box(byte_sum(std::hint::black_box(&[0u8; 256])));
    }
    let Some(first) = files.inputs.first() else {
        return Ok(());
    };
    match mode {
        Mode::Read(_) => {
            // A zero-length pread(2) reads nothing.
            let _ = first.file.read_at(&mut [], 0);
        }
        // Never populated and never read: no page of the file is faulted.
        Mode::MmapEach if first.len > 0 => drop(map(first, false)?),
        Mode::MmapEach | Mode::MmapOnce => {}
    }
    Ok(())
}

/// The read loop of the original: `pread` from offset 0 until the size seen
/// at open (or end of file), writing each chunk as it arrives.
fn read_loop<W: Write + ?Sized>(
    files: &Files,
    iterations: u64,
    buf: &mut [u8],
    sink: &mut Sink<'_, W>,
) -> Result<(), Error> {
    for _ in 0..iterations {
        for i in &files.inputs {
            let mut offset = 0u64;
            while offset < i.len {
                let n = match i.file.read_at(buf, offset) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(source) => {
                        return Err(Error::Read { path: i.path.clone(), offset, source });
                    }
                };
                sink.emit(buf.get(..n).unwrap_or(buf))?;
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// The sum of every byte of `data` as unsigned numbers, wrapping at 2^64:
/// the `--touch` checksum. It reads every byte once and does not depend on
/// how the data is split (`byte_sum(a) + byte_sum(b) == byte_sum(a ++ b)`).
/// On x86-64 it runs at cache bandwidth (SSE2 `psadbw`, 64 bytes a step).
#[must_use]
pub fn byte_sum(data: &[u8]) -> u64 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        // SAFETY: this branch is compiled only for x86-64 targets with SSE2
        // enabled (cfg above; SSE2 is part of the x86-64 baseline), so the
        // CPU running it has the instructions byte_sum_sse2 is built with.
        // (Rust 1.95 asks for `unsafe` to call a `#[target_feature]`
        // function from one without the attribute, even for a feature the
        // whole build has; the function itself does nothing unsafe.)
        unsafe { byte_sum_sse2(data) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        byte_sum_portable(data)
    }
}

/// Portable [`byte_sum`]: 64 lanes of u16, widened before they can
/// overflow (256 × 255 < 2^16). Vectorises to whatever the target has.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), expect(dead_code))]
fn byte_sum_portable(data: &[u8]) -> u64 {
    const LANES: usize = 64;
    let mut total = 0u64;
    let mut blocks = data.chunks_exact(LANES * 256);
    let fold = |acc: &[u16; LANES]| acc.iter().map(|&x| u64::from(x)).sum::<u64>();
    for big in &mut blocks {
        let mut acc = [0u16; LANES];
        for b in big.chunks_exact(LANES) {
            for (a, &x) in acc.iter_mut().zip(b) {
                *a += u16::from(x);
            }
        }
        total = total.wrapping_add(fold(&acc));
    }
    let tail = blocks.remainder().iter().fold(0u64, |s, &b| s.wrapping_add(u64::from(b)));
    total.wrapping_add(tail)
}

/// SSE2 [`byte_sum`]: `psadbw` against zero adds 8 bytes into a 64-bit
/// lane; four independent accumulators hide its latency. Every intrinsic
/// here is safe to call inside a function built with SSE2: each 16-byte
/// load is two little-endian `u64` reads put together by
/// `_mm_set_epi64x` (measured as fast as the pointer loads of
/// `_mm_loadu_si128`), and the sums leave the register through
/// `_mm_cvtsi128_si64`, so only the call into this function is `unsafe`.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn byte_sum_sse2(data: &[u8]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi64, _mm_cvtsi128_si64, _mm_sad_epu8, _mm_set_epi64x, _mm_setzero_si128,
        _mm_unpackhi_epi64,
    };
    let load = |b: &[u8]| -> __m128i {
        let (lo, hi) = b.split_at(8);
        let word = |w: &[u8]| i64::from_le_bytes(w.try_into().unwrap_or_default());
        _mm_set_epi64x(word(hi), word(lo))
    };
    let zero = _mm_setzero_si128();
    let (mut a0, mut a1, mut a2, mut a3) = (zero, zero, zero, zero);
    let mut blocks = data.chunks_exact(64);
    for b in &mut blocks {
        let (q01, q23) = b.split_at(32);
        let ((q0, q1), (q2, q3)) = (q01.split_at(16), q23.split_at(16));
        a0 = _mm_add_epi64(a0, _mm_sad_epu8(load(q0), zero));
        a1 = _mm_add_epi64(a1, _mm_sad_epu8(load(q1), zero));
        a2 = _mm_add_epi64(a2, _mm_sad_epu8(load(q2), zero));
        a3 = _mm_add_epi64(a3, _mm_sad_epu8(load(q3), zero));
    }
    let acc = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
    // The two 64-bit lanes, as the unsigned sums they are.
    let lane = |v: __m128i| _mm_cvtsi128_si64(v).cast_unsigned();
    let sum = lane(acc).wrapping_add(lane(_mm_unpackhi_epi64(acc, acc)));
    blocks.remainder().iter().fold(sum, |s, &b| s.wrapping_add(u64::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i.wrapping_mul(2_654_435_761) >> 7).to_le_bytes()[0]).collect()
    }

    #[test]
    fn read_sizes_parse() {
        let b = |n: usize| ReadSize::Bytes(NonZeroUsize::new(n).unwrap());
        assert_eq!("65536".parse(), Ok(b(65536)));
        assert_eq!("64K".parse(), Ok(b(65536)));
        assert_eq!("64kib".parse(), Ok(b(65536)));
        assert_eq!("1MiB".parse(), Ok(b(1 << 20)));
        assert_eq!("1".parse(), Ok(b(1)));
        assert_eq!("8192B".parse(), Ok(b(8192)));
        assert_eq!("whole".parse(), Ok(ReadSize::Whole));
        assert_eq!(" Whole ".parse(), Ok(ReadSize::Whole));
        for bad in ["", "0", "-1", "K", "1.5K", "64 KB", "x", "99999999999999999999"] {
            assert!(bad.parse::<ReadSize>().is_err(), "{bad:?} accepted");
        }
        assert_eq!(ReadSize::default(), b(65536));
        assert_eq!(ReadSize::Whole.to_string(), "whole");
        assert_eq!(Mode::Read(b(8192)).to_string(), "read(8192)");
        assert_eq!(Mode::MmapEach.to_string(), "mmap-each");
    }

    #[test]
    fn byte_sums_agree_with_a_plain_loop() {
        let data = pattern(70_001);
        for len in [0, 1, 15, 16, 63, 64, 65, 4095, 16_384, 16_449, 70_001] {
            let d = &data[..len];
            let want: u64 = d.iter().map(|&b| u64::from(b)).sum();
            assert_eq!(byte_sum(d), want, "len {len}");
            assert_eq!(byte_sum_portable(d), want, "portable, len {len}");
        }
        let ones = vec![0xFFu8; 1 << 20];
        assert_eq!(byte_sum(&ones), 255 << 20);
        assert_eq!(byte_sum_portable(&ones), 255 << 20);
        // Unaligned starts.
        assert_eq!(byte_sum(&ones[3..]), 255 * ((1 << 20) - 3));
    }
}
