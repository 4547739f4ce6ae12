//! Mercurial revlogs over files: open an index the way hg does (read
//! whole, mapped, or by hg's size threshold), find a repository's store
//! and its revlogs (store name encoding included), and list the newest
//! revisions as `hg log` does.
//!
//! The index format and its parser live in [`mapwise_core::revlog`]; this
//! module adds files, mappings and repositories. Entry points:
//! [`Repo::open`], [`Repo::open_index`], [`IndexFile::open`], [`log`],
//! [`HgConfig::index_load`], [`hidden`] (obsolete changesets hg hides).

mod config;
mod load;
mod log;
mod repo;
mod store;
mod visible;

use std::path::PathBuf;

pub use config::{ConfigError, DEFAULT_MMAP_THRESHOLD, HgConfig, parse_bool, size_to_int};
pub use load::{IndexFile, Load, Loaded, Options};
pub use log::{LogRow, log};
pub use repo::{KNOWN_REQUIREMENTS, Repo, Revlog};
pub use store::{StoreEncoding, encode_dir, filelog_index, sha1_hex};
pub use visible::{Hidden, MAX_OBSSTORE, MAX_SMALL_FILE, dirstate_parents, hidden, pinned_nodes};

use mapwise_core::revlog::{Index, Rev};

/// Errors of the revlog layer; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Opening, stat'ing or reading a file failed.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Mapping the index failed.
    #[error("{}", path.display())]
    Map {
        /// The index file.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::os::map::MapError,
    },
    /// The index is damaged or of an unsupported version.
    #[error("{}", path.display())]
    Format {
        /// The index file.
        path: PathBuf,
        /// The fault, with its location.
        #[source]
        source: mapwise_core::Error,
    },
    /// A chunk of a non-inline revlog lies past the end of its data file.
    #[error("{}: rev {rev}: chunk outside the data file {}", index.display(), data.display())]
    DataFile {
        /// The index file.
        index: PathBuf,
        /// The data (`.d`) file.
        data: PathBuf,
        /// The revision whose chunk is outside.
        rev: Rev,
        /// The fault (`data_offset`, with the data file's size).
        #[source]
        source: mapwise_core::Error,
    },
    /// The repository names requirements this reader does not know
    /// ([`KNOWN_REQUIREMENTS`]); hg 6.3 aborts with the same words
    /// ("repository requires features unknown to this Mercurial").
    #[error("{}: repository requires features unknown to mapwise: {} (it reads what Mercurial 6.3 reads; see https://mercurial-scm.org/wiki/MissingRequirement)", path.display(), unknown.join(" "))]
    UnknownRequirements {
        /// The repository.
        path: PathBuf,
        /// The requirements not known, sorted.
        unknown: Vec<String>,
    },
    /// A `requires` file holds an empty line or one not starting with an
    /// ASCII letter or digit (hg 6.3: "abort: .hg/requires file is
    /// corrupt").
    #[error("{}: .hg/requires file is corrupt", path.display())]
    RequiresCorrupt {
        /// The repository.
        path: PathBuf,
    },
    /// Neither a repository (`.hg`) nor a store directory.
    #[error("{}: no repository found (.hg not found, and no 00changelog.i or requires of a store)", path.display())]
    NotARepo {
        /// The path given.
        path: PathBuf,
    },
    /// A file is larger than mapwise reads whole (the obsstore, or a small
    /// metadata file such as `phaseroots`).
    #[error("{}: {size} bytes, more than the {limit} bytes mapwise reads whole", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// `.hg/dirstate` is too short to hold the working directory's
    /// parents (hg: "working directory state appears damaged!").
    #[error("{}: working directory state appears damaged (too short for its parents)", path.display())]
    Dirstate {
        /// The dirstate file.
        path: PathBuf,
    },
    /// A `--config` value hg would refuse.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The data (`.d`) file beside an index: the index path with `.i`
/// replaced by `.d` (hg: `radix + ".d"`); `None` when `index` does not
/// end in `.i`.
#[must_use]
pub fn data_path(index: &std::path::Path) -> Option<PathBuf> {
    let name = index.file_name()?.to_str()?;
    let radix = name.strip_suffix(".i")?;
    Some(index.with_file_name(format!("{radix}.d")))
}

/// Check the chunks of `revs` against the data file beside a non-inline
/// index; returns the data file's size, or `None` when there is no data
/// file (hg reads data lazily, so a missing `.d` only fails when data is
/// read) or the index is inline.
///
/// # Errors
/// [`Error::DataFile`] for the first chunk outside; [`Error::Io`] when the
/// data file cannot be stat'ed; [`Error::Format`] for unreadable entries.
pub fn check_data_file(
    file: &IndexFile,
    index: &Index<'_, [u8]>,
    revs: impl IntoIterator<Item = Rev>,
) -> Result<Option<u64>, Error> {
    if index.is_inline() {
        return Ok(None);
    }
    let Some(data) = data_path(file.path()) else {
        return Ok(None);
    };
    let data_len = match std::fs::metadata(&data) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(Error::Io { path: data, source }),
    };
    let es = index.version().entry_size() as u64;
    index.check_data_len(data_len, revs).map_err(|source| match source {
        mapwise_core::Error::OutOfBounds {
            at: mapwise_core::At::Offset(pos),
            field: "data_offset",
            ..
        } => Error::DataFile {
            index: file.path().to_owned(),
            data: data.clone(),
            rev: Rev::try_from(pos / es).unwrap_or(Rev::MAX),
            source,
        },
        source => Error::Format { path: file.path().to_owned(), source },
    })?;
    Ok(Some(data_len))
}
