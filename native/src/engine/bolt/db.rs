//! [`Db`]: a bbolt file opened with bbolt's options; read transactions.
//!
//! Concurrency (ARCHITECTURE.md, "The bbolt engine keeps bbolt's
//! promises"): `Db` is `Sync`. Each transaction holds an `Arc` of the
//! mapping it began with plus the snapshot (meta pages) it began at, and
//! registers its txid so the writer knows the oldest reader. Keys and
//! values borrow the transaction, so no slice outlives it. A commit that needs a longer
//! mapping makes a new one and swaps it in for later transactions; the
//! old one stays mapped until its last reader ends, so remapping never
//! waits for readers (bbolt's `mmaplock` makes it wait, and a reader on
//! the committing goroutine deadlocks it; here neither happens).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mapwise_core::bolt::{
    BoltFile, BucketStats, CursorOptions, FreelistIds, MAX_PAGE_SIZE, MIN_PAGE_SIZE, Meta,
    NO_FREELIST, Prefetch, Snapshot, WalkOptions, walk, write_freelist, write_node,
};
use mapwise_core::layout::Kind;

use super::error::{Error, Result, no_valid_meta};
use super::freelist::Freelist;
use super::wtx::{TxState, WriteTx};
use crate::os::lock;
use crate::os::map::{Advice, MapOptions, Mapping, bolt_mmap_size};

/// A bucket read inside a [`Tx`]; keys and values borrow the transaction.
pub type Bucket<'tx> = mapwise_core::bolt::Bucket<'tx, [u8]>;
/// A cursor inside a [`Tx`].
pub type Cursor<'tx> = mapwise_core::bolt::Cursor<'tx, [u8]>;

/// bbolt `DefaultAllocSize`: beyond a mapping of this many bytes the file
/// grows in steps of this size past what a commit needs (db.go,
/// `growSize`).
pub const ALLOC_SIZE: u64 = 16 * 1024 * 1024;
/// bbolt `DefaultFillPercent`.
pub const DEFAULT_FILL_PERCENT: f64 = 0.5;
/// How often a blocked `flock` is retried (bbolt `flockRetryTimeout`).
const FLOCK_RETRY: Duration = Duration::from_millis(50);

/// Bytes of dirty pages a commit's writer thread writes between two starts
/// of writeback ([`Db::write_pages`]). Measured on the bench's random puts
/// (1M keys, batches of 1000, ~4 MiB dirty per commit): 64 KiB to 1 MiB
/// all gave 43k-52k puts/s against 36k-43k without; 4 MiB, about one
/// start per commit, gave nothing.
pub(crate) const WRITEBACK_BATCH: usize = 256 * 1024;

/// Options for [`Db::open`], named after bbolt's `Options`.
///
/// [`Options::default`] opens **read-only** (a shared lock, nothing is
/// ever written): the safe default for a tool that looks at other
/// people's files. [`Options::read_write`] gives bbolt's defaults
/// (`DefaultOptions`: read-write, 4 KiB pages where the OS has them).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Open read-only (bbolt `ReadOnly`): a shared `flock`, no writes.
    pub read_only: bool,
    /// Extra mmap flags (bbolt `MmapFlags`), e.g. `libc::MAP_POPULATE`;
    /// repeated on every remap.
    pub mmap_flags: i32,
    /// Minimum mapping length in bytes (bbolt `InitialMmapSize`): a
    /// mapping this long needs no remap until the file outgrows it.
    pub initial_mmap_size: u64,
    /// Advice after mapping; bbolt always uses `MADV_RANDOM`.
    pub advice: Option<Advice>,
    /// How long to wait for the file lock; `None` waits forever (bbolt
    /// `Timeout` = 0). Retries every 50 ms, as bbolt.
    pub timeout: Option<Duration>,
    /// `mlock` the file's mapped bytes (bbolt `Mlock`), again after every
    /// growth.
    pub mlock: bool,
    /// Page size in bytes for a new file (bbolt `PageSize`); 0 = the OS
    /// page size. Existing files keep theirs.
    pub page_size: u32,
    /// Skip both fdatasyncs of a commit (bbolt `NoSync`): fast, and a
    /// power loss can lose or tear recent commits.
    pub no_sync: bool,
    /// Do not write the freelist at commit (bbolt `NoFreelistSync`, as
    /// etcd runs): the meta says "no freelist" and a read-write open
    /// rebuilds it by a reachability scan.
    pub no_freelist_sync: bool,
    /// Skip `ftruncate` + `fsync` when the file grows (bbolt
    /// `NoGrowSync`); page writes then extend the file.
    pub no_grow_sync: bool,
    /// Default `FillPercent` of every bucket (bbolt
    /// `DefaultFillPercent`, 0.5); [`super::BucketMut::set_fill_percent`]
    /// overrides it per bucket and transaction.
    pub fill_percent: f64,
    /// Permission bits of a file created by a read-write open (bbolt
    /// `Open`'s `mode`).
    pub file_mode: u32,
}

impl Default for Options {
    /// Read-only, otherwise bbolt's defaults.
    fn default() -> Self {
        Options {
            read_only: true,
            mmap_flags: 0,
            initial_mmap_size: 0,
            advice: Some(Advice::Random),
            timeout: None,
            mlock: false,
            page_size: 0,
            no_sync: false,
            no_freelist_sync: false,
            no_grow_sync: false,
            fill_percent: DEFAULT_FILL_PERCENT,
            file_mode: 0o600,
        }
    }
}

impl Options {
    /// bbolt's `DefaultOptions`: read-write, everything else default.
    #[must_use]
    pub fn read_write() -> Options {
        Options { read_only: false, ..Options::default() }
    }
}

/// Database statistics (bbolt `Stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Free pages on the freelist (allocatable now).
    pub free_page_n: u64,
    /// Pending pages: freed, waiting for older readers.
    pub pending_page_n: u64,
    /// Bytes of free and pending pages.
    pub free_alloc: u64,
    /// Bytes the freelist page needs.
    pub freelist_inuse: u64,
    /// Read transactions started.
    pub tx_n: u64,
    /// Read transactions open now.
    pub open_tx_n: u64,
}

/// What readers and the writer share: the current mapping and snapshot,
/// and who is reading which txid.
#[derive(Debug)]
struct Shared {
    open: bool,
    map: Arc<Mapping>,
    snap: Snapshot,
    /// Bytes of the file readers may touch (file length, grown by commits).
    file_len: u64,
    readers: BTreeMap<u64, usize>,
    stats: Stats,
}

/// The writer's state, behind the lock a write transaction holds.
#[derive(Debug, Default)]
pub(crate) struct WriterState {
    pub(crate) freelist: Freelist,
    /// The file's size on disk.
    file_size: u64,
    /// bbolt 1.3.6's `DB.filesz`: the size its own growth last set, which
    /// is what it compares a commit's need with: 4 pages after creating
    /// the file, 0 after opening an existing one (db.go, `init` and
    /// `grow`).
    grown_to: u64,
    /// Page-image buffers the last commits wrote, kept for the next one
    /// ([`Spilled::page_buf`](super::node::Spilled::page_buf)).
    pub(crate) spare: SparePages,
}

/// Buffers of page images a commit has written, kept for the next commit
/// to fill instead of allocating: a commit frees all its page images at
/// once, glibc then hands the top of the heap back to the kernel (brk),
/// and the next commit faulted it in again, zeroed. Seen on the bench's
/// sequential puts (1000 commits of 1000 puts): 76.5k minor faults
/// against Go bbolt's 13-15k. At most [`SparePages::BUDGET`] bytes are
/// kept.
#[derive(Debug, Default)]
pub(crate) struct SparePages {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

impl SparePages {
    /// The most bytes of buffers kept between commits.
    pub(crate) const BUDGET: usize = 4 << 20;

    /// Keep `bufs` while the budget lasts; drop the rest.
    pub(crate) fn keep(&mut self, bufs: impl IntoIterator<Item = Vec<u8>>) {
        for b in bufs {
            let cap = b.capacity();
            if self.bytes + cap <= Self::BUDGET {
                self.bytes += cap;
                self.bufs.push(b);
            }
        }
    }

    /// Every kept buffer, leaving none.
    pub(crate) fn take(&mut self) -> Vec<Vec<u8>> {
        self.bytes = 0;
        std::mem::take(&mut self.bufs)
    }
}

/// An open bbolt file: a lock, a mapping, and (read-write) the writer.
#[derive(Debug)]
pub struct Db {
    path: PathBuf,
    file: File,
    opts: Options,
    page_size: u32,
    shared: Mutex<Shared>,
    writer: Mutex<WriterState>,
}

// `Db` is shared between threads (bbolt's `*DB` is safe for concurrent
// use); keep it so.
const _: () = {
    const fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<Db>();
};

fn lock_shared(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn flock(file: &File, path: &Path, exclusive: bool, timeout: Option<Duration>) -> Result<()> {
    let start = Instant::now();
    loop {
        match lock::try_flock(file, exclusive) {
            Ok(true) => return Ok(()),
            Ok(false) => {
                if timeout.is_some_and(|t| start.elapsed() >= t) {
                    return Err(Error::Timeout { path: path.to_owned() });
                }
                std::thread::sleep(FLOCK_RETRY);
            }
            Err(source) => {
                return Err(Error::Io { path: path.to_owned(), what: "flock", source });
            }
        }
    }
}

/// Open `path` read-write, creating it with `mode`; refuses anything but
/// a regular file (a FIFO would block, a directory has no pages).
fn open_rw(path: &Path, mode: u32) -> std::io::Result<File> {
    use rustix::fs::{FileType, Mode, OFlags};
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = rustix::fs::open(path, flags, Mode::from_raw_mode(mode))?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK - OFlags::CREATE)?;
    Ok(File::from(fd))
}

fn os_page_size() -> u32 {
    u32::try_from(crate::os::residency::os_page_size()).unwrap_or(4096)
}

/// The four pages of a new file (bbolt `DB.init`): metas 0 and 1 (txid 0
/// and 1, root 3, freelist 2, high-water mark 4), an empty freelist page
/// and an empty leaf.
fn new_file_image(page_size: u32) -> Result<Vec<u8>> {
    let ps = page_size as usize;
    let mut buf = vec![0u8; 4 * ps];
    for i in 0..2u8 {
        let at = usize::from(i) * ps;
        Meta::new_file(page_size, i).write_page(&mut buf[at..at + ps])?;
    }
    write_freelist(&mut buf[2 * ps..3 * ps], 2, 0, std::iter::empty())?;
    write_node(&mut buf[3 * ps..], 3, 0, true, std::iter::empty())?;
    Ok(buf)
}

impl Db {
    /// Open (or, read-write, create) the bbolt file at `path` as bbolt's
    /// `Open` does: take the `flock` (shared read-only, exclusive
    /// read-write; retried every 50 ms until `timeout`), initialise an
    /// empty file with four pages, map it (`MAP_SHARED`, `PROT_READ`,
    /// bbolt's length rule: `max(file, initial_mmap_size)` rounded up to
    /// a power of two from 32 KiB, then to 1 GiB steps), validate the
    /// meta pages, and, read-write, load the freelist (or rebuild it by a
    /// reachability scan when the file has none; then, without
    /// `no_freelist_sync`, commit an empty transaction that writes one).
    ///
    /// Every open validates the geometry (high-water mark within the
    /// file, root and freelist pages below it); a read-write open also
    /// validates the freelist (ids in range, none twice) before it writes
    /// anything: a damaged file fails here and is left as it was. Deeper
    /// damage (a bad page in a tree) surfaces as an error when a
    /// transaction reaches it, as bbolt does no full check at open either.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Timeout`], [`Error::Map`],
    /// [`Error::Invalid`] / [`Error::VersionMismatch`] /
    /// [`Error::Checksum`] / [`Error::PageSize`] (no usable meta page),
    /// [`Error::Corrupt`] / [`Error::Format`] (damage found before any
    /// write).
    pub fn open(path: impl AsRef<Path>, opts: &Options) -> Result<Db> {
        let path = path.as_ref();
        let io = |what: &'static str| {
            let path = path.to_owned();
            move |source| Error::Io { path, what, source }
        };
        let file = if opts.read_only {
            crate::os::io::open_regular(path, false).map_err(io("open"))?
        } else {
            open_rw(path, opts.file_mode).map_err(io("open"))?
        };
        Db::open_file(path, file, opts)
    }

    /// A new, empty read-write database held in memory only: its file is
    /// anonymous (`memfd_create(2)`: no name in any file system, its pages
    /// in RAM or swap, freed when the `Db` is dropped), otherwise opened
    /// and written exactly as [`Db::open`] opens and writes a file (the
    /// same page allocation, splits and commits; syncs cost nothing). For
    /// answers that need a real layout without writing one anywhere: what
    /// a copy packed by the engine's own rules would weigh (its high-water
    /// mark, [`Tx::size`]), as `inspector etcd` forecasts etcd's defrag.
    /// `name` shows in `/proc/PID/fd` and in error messages (as
    /// `memfd:NAME`). `opts.read_only` is ignored.
    ///
    /// # Errors
    /// [`Error::Io`] when the kernel refuses the anonymous file; then as
    /// [`Db::open`] (a bad `opts.page_size` is [`Error::PageSize`]).
    pub fn open_in_memory(name: &str, opts: &Options) -> Result<Db> {
        let path = PathBuf::from(format!("memfd:{name}"));
        let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC).map_err(|e| {
            Error::Io { path: path.clone(), what: "memfd_create", source: e.into() }
        })?;
        Db::open_file(&path, File::from(fd), &Options { read_only: false, ..opts.clone() })
    }

    /// [`Db::open`] once `file` is open: lock, initialise, map, validate.
    fn open_file(path: &Path, file: File, opts: &Options) -> Result<Db> {
        let io = |what: &'static str| {
            let path = path.to_owned();
            move |source| Error::Io { path, what, source }
        };
        flock(&file, path, !opts.read_only, opts.timeout)?;
        let mut size = file.metadata().map_err(io("fstat"))?.len();
        let mut grown_to = 0;
        if size == 0 {
            if opts.read_only {
                return Err(Error::Invalid {
                    path: path.to_owned(),
                    detail: "the file is empty".into(),
                });
            }
            let ps = if opts.page_size == 0 { os_page_size() } else { opts.page_size };
            if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&ps) {
                return Err(Error::PageSize { path: path.to_owned(), page_size: ps });
            }
            let image = new_file_image(ps)?;
            file.write_all_at(&image, 0).map_err(io("pwrite"))?;
            file.sync_data().map_err(io("fdatasync"))?;
            size = image.len() as u64;
            grown_to = size;
        }
        // SAFETY: the file is flock'ed for as long as the Db lives (shared
        // for a reader, exclusive for a writer, as bbolt does), so no
        // cooperating process truncates or writes it under a reader; this
        // process's own writer only grows it and writes pages no open read
        // transaction reaches (the freelist keeps them pending until then).
        let map = unsafe {
            Mapping::map(
                &file,
                &MapOptions {
                    flags: opts.mmap_flags,
                    advice: opts.advice,
                    min_len: bolt_mmap_size(size.max(opts.initial_mmap_size), 0),
                    mlock: opts.mlock,
                },
            )
        }
        .map_err(|source| Error::Map { path: path.to_owned(), source })?;
        let snap = match BoltFile::open(map.bytes()) {
            Ok(f) => f.snapshot(),
            Err(mapwise_core::Error::NoValidMeta { meta0, meta1 }) => {
                return Err(no_valid_meta(path, meta0, meta1));
            }
            Err(e) => return Err(e.into()),
        };
        let mut writer = WriterState {
            freelist: Freelist::default(),
            file_size: size,
            grown_to,
            spare: SparePages::default(),
        };
        let file_view = BoltFile::at(map.bytes(), &snap);
        validate_geometry(path, &file_view, size)?;
        if !opts.read_only {
            writer.freelist = load_freelist(path, &file_view)?;
        }
        let has_freelist = snap.meta.has_freelist();
        let db = Db {
            path: path.to_owned(),
            opts: opts.clone(),
            page_size: snap.page_size,
            shared: Mutex::new(Shared {
                open: true,
                map: Arc::new(map),
                snap,
                file_len: size,
                readers: BTreeMap::new(),
                stats: Stats::default(),
            }),
            writer: Mutex::new(writer),
            file,
        };
        db.update_stats(&lock_writer(&db.writer).freelist);
        if !opts.read_only && !opts.no_freelist_sync && !has_freelist {
            // bbolt flushes a freelist when a file written with
            // NoFreelistSync is opened without it (db.go, `Open`).
            db.begin_rw()?.commit()?;
        }
        Ok(db)
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options the database was opened with.
    #[must_use]
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Page size in bytes (from the file).
    #[must_use]
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// `true` when opened read-only (bbolt `DB.IsReadOnly`).
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.opts.read_only
    }

    /// The current mapping (for residency actions and statistics). A
    /// commit that outgrows it swaps in a longer one; this handle keeps
    /// the old one mapped while it lives.
    #[must_use]
    pub fn mapping(&self) -> Arc<Mapping> {
        Arc::clone(&lock_shared(&self.shared).map)
    }

    /// Database statistics (bbolt `DB.Stats`).
    #[must_use]
    pub fn stats(&self) -> Stats {
        lock_shared(&self.shared).stats
    }

    /// Begin a read transaction: a stable snapshot at the current meta
    /// page (bbolt `DB.Begin(false)`). It may live across any number of
    /// commits; pages it can see are not reused until it ends.
    ///
    /// # Errors
    /// [`Error::DatabaseNotOpen`] after [`Db::close`].
    pub fn begin(&self) -> Result<Tx<'_>> {
        let mut sh = lock_shared(&self.shared);
        if !sh.open {
            return Err(Error::DatabaseNotOpen);
        }
        let txid = sh.snap.meta.txid;
        *sh.readers.entry(txid).or_default() += 1;
        sh.stats.tx_n += 1;
        sh.stats.open_tx_n += 1;
        Ok(Tx { db: self, map: Arc::clone(&sh.map), len: sh.file_len, snap: sh.snap })
    }

    /// Begin the read-write transaction (bbolt `DB.Begin(true)`). Waits
    /// while another one runs. Pages freed by commits older than every
    /// open reader become reusable here (bbolt `DB.freePages`).
    ///
    /// # Errors
    /// [`Error::DatabaseReadOnly`], [`Error::DatabaseNotOpen`].
    pub fn begin_rw(&self) -> Result<WriteTx<'_>> {
        if self.opts.read_only {
            return Err(Error::DatabaseReadOnly);
        }
        let mut guard = lock_writer(&self.writer);
        let (map, len, snap, oldest) = {
            let sh = lock_shared(&self.shared);
            if !sh.open {
                return Err(Error::DatabaseNotOpen);
            }
            (Arc::clone(&sh.map), sh.file_len, sh.snap, sh.readers.keys().next().copied())
        };
        guard.freelist.release(oldest.unwrap_or(u64::MAX));
        let fl = std::mem::take(&mut guard.freelist);
        let st = TxState::new(map, len, snap, fl, self.opts.fill_percent);
        Ok(WriteTx::new(self, guard, st))
    }

    /// Run `f` in a read transaction (bbolt `DB.View`).
    ///
    /// # Errors
    /// Whatever `begin` or `f` returns.
    pub fn view<T, E: From<Error>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let tx = self.begin()?;
        f(&tx)
    }

    /// Run `f` in a read-write transaction and commit it if `f` returns
    /// `Ok`, roll it back otherwise (bbolt `DB.Update`).
    ///
    /// # Errors
    /// Whatever `begin_rw`, `f` or the commit returns.
    pub fn update<T, E: From<Error>>(
        &self,
        f: impl FnOnce(&mut WriteTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut tx = self.begin_rw()?;
        match f(&mut tx) {
            Ok(v) => {
                tx.commit()?;
                Ok(v)
            }
            Err(e) => {
                tx.rollback();
                Err(e)
            }
        }
    }

    /// fdatasync the file (bbolt `DB.Sync`, for `no_sync` users).
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|source| Error::Io {
            path: self.path.clone(),
            what: "fdatasync",
            source,
        })
    }

    /// Close the database (bbolt `DB.Close`): waits for a running write
    /// transaction, then refuses new transactions
    /// ([`Error::DatabaseNotOpen`]) and releases the file lock. Read
    /// transactions still open keep their snapshot and mapping until they
    /// end. Dropping the `Db` closes it too.
    ///
    /// # Errors
    /// [`Error::Io`] when unlocking fails.
    pub fn close(&self) -> Result<()> {
        let _writer = lock_writer(&self.writer);
        let mut sh = lock_shared(&self.shared);
        if !sh.open {
            return Ok(());
        }
        sh.open = false;
        lock::unflock(&self.file).map_err(|source| Error::Io {
            path: self.path.clone(),
            what: "flock",
            source,
        })
    }

    fn end_reader(&self, txid: u64) {
        let mut sh = lock_shared(&self.shared);
        if let Some(n) = sh.readers.get_mut(&txid) {
            *n -= 1;
            if *n == 0 {
                sh.readers.remove(&txid);
            }
        }
        sh.stats.open_tx_n = sh.stats.open_tx_n.saturating_sub(1);
    }

    fn update_stats(&self, fl: &Freelist) {
        let ps = u64::from(self.page_size);
        let mut sh = lock_shared(&self.shared);
        sh.stats.free_page_n = fl.free_count() as u64;
        sh.stats.pending_page_n = fl.pending_count() as u64;
        sh.stats.free_alloc = fl.count() as u64 * ps;
        sh.stats.freelist_inuse = mapwise_core::bolt::freelist_size(fl.count()) as u64;
    }

    fn io(&self, what: &'static str) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |source| Error::Io { path: self.path.clone(), what, source }
    }

    /// Grow the file to hold `need` bytes as bbolt 1.3.6's `DB.grow`
    /// does (db.go; the peer our tests run): nothing when `need` fits the
    /// size its last growth set ([`WriterState::grown_to`], not the size
    /// on disk); else to the whole mapping while the mapping is under
    /// 16 MiB, from there on to `need` + 16 MiB — `ftruncate` then
    /// `fsync`, both skipped with `no_grow_sync`. One departure: where
    /// 1.3.6 would shorten a reopened file that is already longer (past
    /// its high-water mark), the file is left as it is, because read
    /// transactions may still map that tail. bbolt 1.3.7 and later compare
    /// with the size on disk and take the whole mapping at exactly 16 MiB
    /// too; the files differ only in length.
    fn grow(&self, ws: &mut WriterState, need: u64, map: &Mapping) -> Result<()> {
        if need <= ws.grown_to {
            return Ok(());
        }
        let map_len = map.mapped_len();
        let size = if map_len < ALLOC_SIZE { map_len.max(need) } else { need + ALLOC_SIZE };
        ws.grown_to = size;
        if self.opts.no_grow_sync || size <= ws.file_size {
            return Ok(());
        }
        self.file.set_len(size).map_err(self.io("ftruncate"))?;
        self.file.sync_all().map_err(self.io("fsync"))?;
        ws.file_size = size;
        if self.opts.mlock {
            map.lock_to(size).map_err(|source| Error::Map { path: self.path.clone(), source })?;
        }
        Ok(())
    }

    /// A crash the test hook ([`super::failpoint`]) placed at this write:
    /// write the torn prefix of `buf` at `off` and stop the commit.
    fn crash_point(&self, buf: &[u8], off: u64, meta: bool) -> Result<()> {
        let Some(n) = super::failpoint::before_write(buf.len(), meta) else {
            return Ok(());
        };
        self.file.write_all_at(buf.get(..n).unwrap_or(buf), off).map_err(self.io("pwrite"))?;
        Err(Error::Io {
            path: self.path.clone(),
            what: "pwrite",
            source: std::io::Error::other("simulated crash (test hook)"),
        })
    }

    /// A commit's writer thread: `pwrite` each dirty page (first page id,
    /// bytes) received until the sender closes; returns the end of the
    /// furthest write in bytes (0 if none), or the first error (it then
    /// stops receiving, and the commit fails).
    ///
    /// bbolt writes its dirty pages after spilling the whole tree, then
    /// fdatasyncs (tx.go, `Tx.write`), so the device sits idle while the
    /// tree is spilled and the CPU while the pages go to disk. Here the
    /// pages are written while the tree is still being spilled, and every
    /// [`WRITEBACK_BATCH`] bytes their writeback is started
    /// ([`crate::os::io::start_writeback`]), so the device is busy during the
    /// spill and the fdatasync that follows waits for less. Nothing
    /// changes for crash safety: every page goes to a page that is free in
    /// this commit's snapshot, the commit joins this thread before its
    /// first fdatasync, and the meta page that makes the pages reachable
    /// is written only after that fdatasync.
    ///
    /// Returns where the writes ended (bytes) and the written buffers, for
    /// the next commit to reuse.
    pub(crate) fn write_pages(&self, rx: &Receiver<(u64, Vec<u8>)>) -> Result<(u64, Vec<Vec<u8>>)> {
        let ps = u64::from(self.page_size);
        let mut end = 0u64;
        let mut unstarted = 0usize;
        let mut written = Vec::new();
        for (id, buf) in rx {
            let off = id * ps;
            self.file.write_all_at(&buf, off).map_err(self.io("pwrite"))?;
            end = end.max(off + buf.len() as u64);
            unstarted += buf.len();
            // Only synced commits get this thread (`WriteTx::commit`).
            if unstarted >= WRITEBACK_BATCH {
                unstarted = 0;
                crate::os::io::start_writeback(&self.file);
            }
            written.push(buf);
        }
        Ok((end, written))
    }

    /// The I/O of a commit, in bbolt's order: remap if the mapping is too
    /// short for the new high-water mark, grow the file when `grow` (the
    /// freelist's allocation raised the high-water mark: 1.3.6 grows only
    /// then, tx.go `commitFreelist`), write the dirty pages not yet written
    /// by the writer thread sorted by id (`written_end`: where its writes
    /// ended, bytes), fdatasync, write the meta page to page `txid % 2`,
    /// fdatasync; then publish the new snapshot.
    pub(crate) fn write_commit(
        &self,
        ws: &mut WriterState,
        st: &TxState,
        dirty: &mut [(u64, Vec<u8>)],
        grow: bool,
        written_end: u64,
    ) -> Result<()> {
        let meta = st.meta;
        let ps = u64::from(self.page_size);
        if meta.root >= meta.hwm || (meta.freelist != NO_FREELIST && meta.freelist >= meta.hwm) {
            return Err(Error::Corrupt(format!(
                "commit would write root {} / freelist {} at or above the high-water mark {}",
                meta.root, meta.freelist, meta.hwm
            )));
        }
        // Remap (bbolt does it while allocating, `DB.allocate`): the
        // mapping must reach past the new high-water mark.
        let need = (meta.hwm + 1) * ps;
        let current = st.mapping();
        let new_map = if need >= current.mapped_len() {
            let len = bolt_mmap_size(ws.file_size.max(need), ps);
            // SAFETY: as at open: this writer holds the exclusive flock,
            // grows the file only, and writes only pages no open read
            // transaction reaches.
            let m = unsafe {
                Mapping::map(
                    &self.file,
                    &MapOptions {
                        flags: self.opts.mmap_flags,
                        advice: self.opts.advice,
                        min_len: len,
                        mlock: self.opts.mlock,
                    },
                )
            }
            .map_err(|source| Error::Map { path: self.path.clone(), source })?;
            Some(Arc::new(m))
        } else {
            None
        };
        let map_now = new_map.as_ref().unwrap_or(current);
        if grow {
            self.grow(ws, need, map_now)?;
        }
        dirty.sort_unstable_by_key(|(id, _)| *id);
        let mut end = written_end;
        for (id, buf) in dirty.iter() {
            let off = id * ps;
            self.crash_point(buf, off, false)?;
            self.file.write_all_at(buf, off).map_err(self.io("pwrite"))?;
            end = end.max(off + buf.len() as u64);
        }
        if !self.opts.no_sync {
            self.file.sync_data().map_err(self.io("fdatasync"))?;
        }
        let mut page = vec![0u8; self.page_size as usize];
        let id = meta.write_page(&mut page)?;
        self.crash_point(&page, id * ps, true)?;
        super::failpoint::commit_ended();
        self.file.write_all_at(&page, id * ps).map_err(self.io("pwrite"))?;
        if !self.opts.no_sync {
            self.file.sync_data().map_err(self.io("fdatasync"))?;
        }
        ws.file_size = ws.file_size.max(end);
        // Publish: later transactions see the new meta (and mapping).
        let index = u8::try_from(id).unwrap_or(0);
        let written = Meta::parse(&page, index)
            .ok_or_else(|| Error::Corrupt("the meta page just written does not parse".into()))?;
        let mut metas = st.snap.metas;
        metas[usize::from(index)] = Ok(written);
        {
            let mut sh = lock_shared(&self.shared);
            sh.snap = Snapshot { page_size: self.page_size, metas, current: index, meta: written };
            sh.file_len = ws.file_size;
            if let Some(m) = new_map {
                sh.map = m;
            }
        }
        self.update_stats(&st.fl);
        Ok(())
    }
}

fn lock_writer(m: &Mutex<WriterState>) -> MutexGuard<'_, WriterState> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Refuse a file whose current meta contradicts its length: the pages
/// the meta claims must exist (bbolt would fault with SIGBUS touching
/// them), root and freelist must lie below the high-water mark.
fn validate_geometry(path: &Path, file: &BoltFile<'_, [u8]>, size: u64) -> Result<()> {
    let m = file.meta();
    let ps = u64::from(file.page_size());
    let bad = |detail: String| {
        Err(Error::Corrupt(format!(
            "{}: meta page {} (txid {}, root {}, high-water mark {}): {detail}",
            path.display(),
            file.current_index(),
            m.txid,
            m.root,
            m.hwm
        )))
    };
    if m.hwm < 2 {
        return bad(format!("high-water mark {} below 2", m.hwm));
    }
    if m.hwm.checked_mul(ps).is_none_or(|end| end > size) {
        return bad(format!(
            "high-water mark {} × page size {ps} passes the end of the {size}-byte file (truncated?)",
            m.hwm
        ));
    }
    if m.root < 2 || m.root >= m.hwm {
        return bad(format!("root page {} outside [2, {})", m.root, m.hwm));
    }
    if m.freelist != NO_FREELIST && (m.freelist < 2 || m.freelist >= m.hwm) {
        return bad(format!("freelist page {} outside [2, {})", m.freelist, m.hwm));
    }
    Ok(())
}

/// The freelist of a file opened read-write: its freelist page, checked
/// (type, ids within the run and in [2, hwm), none twice), or, for a file
/// without one, every page in [2, hwm) the trees do not reach (bbolt
/// `DB.freepages`, which panics where this returns the fault).
fn load_freelist(path: &Path, file: &BoltFile<'_, [u8]>) -> Result<Freelist> {
    let m = file.meta();
    let bad = |detail: String| Error::Corrupt(format!("{}: {detail}", path.display()));
    if m.has_freelist() {
        return stored_freelist(file).map(Freelist::from_sorted).map_err(|e| match e {
            Error::Corrupt(detail) => bad(detail),
            e => e,
        });
    }
    let walked = walk(file, WalkOptions { check_keys: false, previous_snapshot: false });
    if let Some(p) = walked.layout.problems.first() {
        return Err(bad(format!("cannot rebuild the freelist (no freelist stored): {p}")));
    }
    let ps = u64::from(file.page_size());
    let mut free = Vec::new();
    for r in &walked.layout.regions {
        if r.kind == Kind::Free {
            let first = r.offset / ps;
            let n = r.len / ps;
            free.extend((first..first + n).filter(|&p| p >= 2 && p < m.hwm));
        }
    }
    Ok(Freelist::from_sorted(free))
}

/// The ids of the freelist page `file`'s meta names (the file must store
/// one, [`Meta::has_freelist`]), sorted, after the checks a writer needs:
/// the page reads and is a freelist page whose count fits its run (bbolt
/// `freelist.read` panics otherwise), the run ends below the high-water
/// mark, and every id is in [2, high-water mark) and listed once.
///
/// # Errors
/// [`Error::Format`] when the page does not read or decode;
/// [`Error::Corrupt`] for the run or an id out of range or an id listed
/// twice (its text names no file: callers add it).
fn stored_freelist(file: &BoltFile<'_, [u8]>) -> Result<Vec<u64>> {
    let m = file.meta();
    let page = file.read_page(m.freelist)?;
    if u64::from(page.header.overflow).saturating_add(m.freelist) >= m.hwm {
        return Err(Error::Corrupt(format!(
            "freelist run {}+{} passes the high-water mark {}",
            m.freelist, page.header.overflow, m.hwm
        )));
    }
    let ids = FreelistIds::parse(&page)?;
    let mut v: Vec<u64> = ids.iter().collect();
    v.sort_unstable();
    if let Some(w) = v.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Corrupt(format!("page {} is listed twice on the freelist", w[0])));
    }
    if let Some(&id) = v.iter().find(|&&id| id < 2 || id >= m.hwm) {
        return Err(Error::Corrupt(format!(
            "freelist id {id} outside [2, high-water mark {})",
            m.hwm
        )));
    }
    Ok(v)
}

/// A read transaction (bbolt `Tx` opened with `Begin(false)`): a stable
/// snapshot at the meta page current when it began. Keys and values it
/// returns borrow it and cannot outlive it, so no slice into a mapping
/// survives the transaction that keeps the mapping alive:
///
/// ```compile_fail
/// # use mapwise_native::engine::bolt::{Db, Options};
/// # fn f(db: &Db) {
/// let value = {
///     let tx = db.begin().unwrap();
///     let b = tx.bucket(b"b").unwrap().unwrap();
///     b.get(b"k").unwrap().unwrap()
/// }; // error: `tx` does not live long enough
/// # drop(value);
/// # }
/// ```
#[derive(Debug)]
pub struct Tx<'db> {
    db: &'db Db,
    map: Arc<Mapping>,
    len: u64,
    snap: Snapshot,
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        self.db.end_reader(self.snap.meta.txid);
    }
}

/// A read transaction announces the pages a prefetching cursor will read
/// with `madvise(MADV_WILLNEED)` on its mapping, answers whether a page is
/// cached with `mincore(2)` of that one page (~0.3 µs: two per renewal of
/// the cursor's window, so a warm scan announces nothing), and asks the
/// CPU to cache the leaves a forward move reaches next (offsets are file
/// offsets, all clipped to this snapshot's length). Where mincore hides
/// residency (a file the caller neither owns nor may write, see
/// [`crate::os::residency::mincore_trust`]) every page looks cached, so the
/// cursor announces nothing and reads as bbolt's does.
impl Prefetch for Tx<'_> {
    fn will_need(&self, offset: u64, len: u64) {
        let end = offset.saturating_add(len).min(self.len);
        self.map.will_need(offset, end.saturating_sub(offset));
    }

    fn cached(&self, offset: u64) -> bool {
        offset < self.len && self.map.is_resident(offset)
    }

    fn cache(&self, offset: u64, len: u64) {
        let end = offset.saturating_add(len).min(self.len);
        self.map.cache(offset, end.saturating_sub(offset));
    }
}

impl Tx<'_> {
    /// The snapshot's txid (bbolt `Tx.ID`).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.snap.meta.txid
    }

    /// Database size in bytes at this snapshot: high-water mark × page
    /// size (bbolt `Tx.Size`).
    #[must_use]
    pub fn size(&self) -> u64 {
        self.snap.meta.hwm * u64::from(self.snap.page_size)
    }

    /// The parsed file at this snapshot (for the walk and the dump), with
    /// this transaction as its CPU cache hint sink: cursors and lookups of
    /// buckets read from it prefetch the pages they are about to read.
    #[must_use]
    pub fn file(&self) -> BoltFile<'_, [u8]> {
        BoltFile::at(self.map.bytes_to(self.len), &self.snap).with_hints(self)
    }

    /// The top-level bucket `name` (bbolt `Tx.Bucket`); `None` when absent.
    ///
    /// # Errors
    /// [`Error::Format`] on a damaged page, or when `name` is a plain key.
    pub fn bucket(&self, name: &[u8]) -> Result<Option<Bucket<'_>>> {
        Ok(mapwise_core::bolt::Bucket::root_of(&self.file()).bucket(name)?)
    }

    /// The bucket at `path` (top-level name, then nested names).
    ///
    /// # Errors
    /// [`Error::Format`] with `BucketNotFound` / `IncompatibleValue`, or a
    /// damaged page.
    pub fn bucket_path<P: AsRef<[u8]>>(&self, path: &[P]) -> Result<Bucket<'_>> {
        Ok(mapwise_core::bolt::Bucket::root_of(&self.file()).bucket_path(path)?)
    }

    /// A cursor over `bucket` with `opts` (e.g. [`CursorOptions::prefetch`]:
    /// a window in bytes of leaf pages announced ahead of a forward scan
    /// with `madvise(MADV_WILLNEED)` on this transaction's mapping). It
    /// returns exactly what `bucket.cursor()` returns.
    #[must_use]
    pub fn cursor_with<'a>(&'a self, bucket: &Bucket<'a>, opts: &CursorOptions) -> Cursor<'a> {
        bucket.cursor_with(opts, self)
    }

    /// A cursor over the top-level buckets (bbolt `Tx.Cursor`).
    #[must_use]
    pub fn cursor(&self) -> Cursor<'_> {
        mapwise_core::bolt::Bucket::root_of(&self.file()).cursor()
    }

    /// Call `f` with each top-level bucket name and bucket (bbolt
    /// `Tx.ForEach`).
    ///
    /// # Errors
    /// The first error of `f`, or a damaged page.
    pub fn for_each<E: From<Error>>(
        &self,
        mut f: impl FnMut(&[u8], Bucket<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut c = self.cursor();
        let mut item = c.first().map_err(Error::from)?;
        while let Some(it) = item {
            if let Some(b) = c.bucket().map_err(Error::from)? {
                f(&it.key, b)?;
            }
            item = c.next().map_err(Error::from)?;
        }
        Ok(())
    }

    /// Statistics of the whole tree: the root bucket's [`BucketStats`]
    /// (bbolt `Bucket.Stats` applied to `Tx.root`), so `bucket_n`
    /// counts the root bucket too.
    ///
    /// # Errors
    /// A damaged page.
    pub fn tree_stats(&self) -> Result<BucketStats> {
        Ok(mapwise_core::bolt::Bucket::root_of(&self.file()).stats()?)
    }

    /// The checks a read-write [`Db::open`] makes of the stored freelist,
    /// for this snapshot (the freelist page reads, has the freelist type
    /// and a count that fits its run, the run ends below the high-water
    /// mark, ids are in [2, high-water mark) and listed once), reading
    /// that one page run. A read-only open skips them, as bbolt's does:
    /// readers never use the freelist (bbolt 1.3.6 `db.go`: `Open`
    /// returns before `loadFreelist` when `ReadOnly`), so its damage
    /// shows only when a writer opens the file. `Ok` for a file that
    /// stores no freelist (`NoFreelistSync`).
    ///
    /// # Errors
    /// [`Error::Format`] when the freelist page does not read or decode
    /// (the error names the page and field); [`Error::Corrupt`] for the
    /// run past the high-water mark, an id out of range or listed twice
    /// (its text names no file).
    pub fn check_freelist(&self) -> Result<()> {
        if self.snap.meta.has_freelist() {
            stored_freelist(&self.file())?;
        }
        Ok(())
    }

    /// Check this snapshot as bbolt's `Tx.Check` does, and more (the
    /// structural walk, docs/format/bolt.md §12): every page reachable or
    /// free and used once, no reachable page free, no page freed twice,
    /// page types and ids, keys in order within their parents' bounds.
    /// Empty when the snapshot is consistent.
    #[must_use]
    pub fn check(&self) -> Vec<mapwise_core::Error> {
        walk(&self.file(), WalkOptions::default()).layout.problems
    }
}
