//! [`Db`]: a bbolt file opened with bbolt's options.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mapwise_core::bolt::BoltFile;
use rustix::fs::FlockOperation;

use crate::map::{Advice, MapError, MapOptions, Mapping, bolt_mmap_size};

/// A bucket read inside a [`Tx`]; keys and values borrow the mapping.
pub type Bucket<'tx, 'db> = mapwise_core::bolt::Bucket<'tx, 'db, [u8]>;
/// A cursor inside a [`Tx`].
pub type Cursor<'tx, 'db> = mapwise_core::bolt::Cursor<'tx, 'db, [u8]>;

/// Options for [`Db::open`], named after bbolt's `Options`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Open read-only (bbolt `ReadOnly`): a shared `flock`, no writes.
    /// Read-write opens come with the write side of the engine; until
    /// then `false` is refused with [`Error::ReadWriteUnsupported`].
    pub read_only: bool,
    /// Extra mmap flags (bbolt `MmapFlags`), e.g. `libc::MAP_POPULATE`.
    pub mmap_flags: i32,
    /// Minimum mapping length in bytes (bbolt `InitialMmapSize`).
    pub initial_mmap_size: u64,
    /// Advice after mapping; bbolt always uses `MADV_RANDOM`.
    pub advice: Option<Advice>,
    /// How long to wait for the file lock; `None` waits forever (bbolt
    /// `Timeout` = 0).
    pub timeout: Option<Duration>,
    /// `mlock` the file's mapped bytes (bbolt `Mlock`).
    pub mlock: bool,
}

impl Default for Options {
    /// bbolt's defaults, read-only.
    fn default() -> Self {
        Options {
            read_only: true,
            mmap_flags: 0,
            initial_mmap_size: 0,
            advice: Some(Advice::Random),
            timeout: None,
            mlock: false,
        }
    }
}

/// Errors of the bbolt engine, named as bbolt names them where it has a
/// name.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Opening or reading the file failed.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The lock was not granted within the timeout (bbolt `ErrTimeout`).
    #[error(
        "{path}: timeout waiting for the file lock (another process has it open read-write, e.g. a running etcd; `inspector` reads without taking the lock)"
    )]
    Timeout {
        /// The file.
        path: PathBuf,
    },
    /// Mapping failed.
    #[error("{path}")]
    Map {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: MapError,
    },
    /// The file is not a valid bbolt file, or is damaged (bbolt
    /// `ErrInvalid`, `ErrVersionMismatch`, `ErrChecksum`, and faults bbolt
    /// itself would crash on).
    #[error(transparent)]
    Format(#[from] mapwise_core::Error),
    /// Read-write opens arrive with the write side of the engine.
    #[error("read-write open is not supported yet; open with read_only = true")]
    ReadWriteUnsupported,
}

/// An open bbolt file: a shared lock and a read-only mapping.
#[derive(Debug)]
pub struct Db {
    path: PathBuf,
    _file: File,
    map: Mapping,
}

fn lock(file: &File, path: &Path, timeout: Option<Duration>) -> Result<(), Error> {
    let start = Instant::now();
    loop {
        match rustix::fs::flock(file, FlockOperation::NonBlockingLockShared) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) => {
                if timeout.is_some_and(|t| start.elapsed() >= t) {
                    return Err(Error::Timeout {
                        path: path.to_owned(),
                    });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                return Err(Error::Io {
                    path: path.to_owned(),
                    source: e.into(),
                });
            }
        }
    }
}

impl Db {
    /// Open the bbolt file at `path` as bbolt does: take a shared `flock`
    /// (retrying every 50 ms until `timeout`), map it read-only with the
    /// given flags and advice at bbolt's mapping length
    /// (`max(file, initial_mmap_size)` rounded as bbolt's `mmapSize`),
    /// and validate the meta pages.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Timeout`], [`Error::Map`],
    /// [`Error::Format`] (no valid meta page, with each meta's fault).
    pub fn open(path: impl AsRef<Path>, opts: &Options) -> Result<Db, Error> {
        let path = path.as_ref();
        if !opts.read_only {
            return Err(Error::ReadWriteUnsupported);
        }
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let file = crate::io::open_regular(path, false).map_err(io)?;
        lock(&file, path, opts.timeout)?;
        let size = file.metadata().map_err(io)?.len();
        let map_opts = MapOptions {
            flags: opts.mmap_flags,
            advice: opts.advice,
            min_len: bolt_mmap_size(size.max(opts.initial_mmap_size), 0),
            mlock: opts.mlock,
        };
        let map = Mapping::map(&file, &map_opts).map_err(|source| Error::Map {
            path: path.to_owned(),
            source,
        })?;
        BoltFile::open(map.bytes())?;
        Ok(Db {
            path: path.to_owned(),
            _file: file,
            map,
        })
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mapping (for residency actions and statistics).
    #[must_use]
    pub fn mapping(&self) -> &Mapping {
        &self.map
    }

    /// Begin a read transaction: a stable snapshot at the current meta.
    ///
    /// # Errors
    /// [`Error::Format`] when no meta page validates.
    pub fn begin(&self) -> Result<Tx<'_>, Error> {
        Ok(Tx {
            file: BoltFile::open(self.map.bytes())?,
        })
    }

    /// Run `f` in a read transaction (bbolt `DB.View`).
    ///
    /// # Errors
    /// Whatever `begin` or `f` returns.
    pub fn view<T, E: From<Error>>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T, E>) -> Result<T, E> {
        let tx = self.begin()?;
        f(&tx)
    }
}

/// A read transaction. Keys and values it returns borrow the mapping and
/// cannot outlive the transaction.
#[derive(Debug)]
pub struct Tx<'db> {
    file: BoltFile<'db, [u8]>,
}

impl<'db> Tx<'db> {
    /// The snapshot's txid.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.file.meta().txid
    }

    /// The parsed file at this snapshot (for the walk and the dump).
    #[must_use]
    pub fn file(&self) -> &BoltFile<'db, [u8]> {
        &self.file
    }

    /// The top-level bucket `name` (bbolt `Tx.Bucket`); `None` when absent.
    ///
    /// # Errors
    /// [`Error::Format`] on a damaged page, or when `name` is a plain key.
    pub fn bucket(&self, name: &[u8]) -> Result<Option<Bucket<'_, 'db>>, Error> {
        Ok(mapwise_core::bolt::Bucket::root_of(&self.file).bucket(name)?)
    }

    /// The bucket at `path` (top-level name, then nested names).
    ///
    /// # Errors
    /// [`Error::Format`] with `BucketNotFound` / `IncompatibleValue`, or a
    /// damaged page.
    pub fn bucket_path<P: AsRef<[u8]>>(&self, path: &[P]) -> Result<Bucket<'_, 'db>, Error> {
        Ok(mapwise_core::bolt::Bucket::root_of(&self.file).bucket_path(path)?)
    }

    /// A cursor over the top-level buckets (bbolt `Tx.Cursor`).
    #[must_use]
    pub fn cursor(&self) -> Cursor<'_, 'db> {
        mapwise_core::bolt::Bucket::root_of(&self.file).cursor()
    }
}
