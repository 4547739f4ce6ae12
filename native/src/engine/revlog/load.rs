//! Bringing an index file into memory: read it whole, or map it, or
//! decide by its size as hg does.
//!
//! hg's rule (patch D477, 2017; `revlog._get_data` in 6.3): when a
//! threshold is configured and the index file's size (from `fstat` of the
//! open file) is **at least** the threshold, the whole file is mapped
//! read-only (`util.mmapread`: `mmap.mmap(fd, 0, ACCESS_READ)`, no
//! madvise); otherwise, or with no threshold, the whole file is read.
//! hg ≥ 6.9 also pre-populates the mapping.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use mapwise_core::revlog::Index;

use super::Error;
use crate::os::map::{Advice, MapOptions, Mapping};

/// How to bring an index into memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Read the whole file with `read(2)` (hg's default up to 6.8).
    Read,
    /// Map the whole file read-only (`PROT_READ`, `MAP_SHARED`).
    Mmap,
    /// Map when the file is at least `threshold` bytes, read it whole
    /// otherwise: hg's `mmapindexthreshold` rule.
    Auto {
        /// Size in bytes from which the file is mapped.
        threshold: u64,
    },
}

impl Load {
    /// The load used for a file of `size` bytes.
    #[must_use]
    pub fn decide(self, size: u64) -> Loaded {
        match self {
            Load::Read => Loaded::Read,
            Load::Mmap => Loaded::Mmap,
            Load::Auto { threshold } if size >= threshold => Loaded::Mmap,
            Load::Auto { .. } => Loaded::Read,
        }
    }
}

/// Which load was used for an opened index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Loaded {
    /// Read whole into memory.
    Read,
    /// Mapped.
    Mmap,
}

impl Loaded {
    /// `read` or `mmap`, as printed in JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Loaded::Read => "read",
            Loaded::Mmap => "mmap",
        }
    }
}

/// How to open an index: the load rule and the mapping's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Read, map, or decide by size.
    pub load: Load,
    /// Pre-populate the mapping (`MAP_POPULATE`), as hg ≥ 6.9 does.
    pub populate: bool,
    /// madvise advice after mapping. hg gives none (`None`): the
    /// kernel's read-around then applies on every fault.
    pub advice: Option<Advice>,
}

impl Default for Options {
    /// What hg ≤ 6.8 does with no configuration: read whole.
    fn default() -> Self {
        Options { load: Load::Read, populate: false, advice: None }
    }
}

impl Options {
    fn map_options(&self) -> MapOptions {
        MapOptions {
            flags: if self.populate { libc::MAP_POPULATE } else { 0 },
            advice: self.advice,
            min_len: 0,
            mlock: false,
        }
    }
}

#[derive(Debug)]
enum Data {
    Bytes(Vec<u8>),
    Map(Mapping),
}

/// An index file in memory, read or mapped.
///
/// A mapped index is subject to the SIGBUS contract of [`crate::os::map`]:
/// hg appends to index files in place, and truncates them only on strip
/// or rollback while holding the repository lock; mapwise takes no lock,
/// so keep writers out while a mapped [`IndexFile`] lives (hg's own
/// readers run the same risk).
#[derive(Debug)]
pub struct IndexFile {
    path: PathBuf,
    size: u64,
    loaded: Loaded,
    data: Data,
}

impl IndexFile {
    /// Open the index at `path` with `opts`: `fstat` the open file, decide
    /// the load by its size, then map or read the whole file.
    ///
    /// # Errors
    /// [`Error::Io`] (open, fstat, read), [`Error::Map`].
    pub fn open(path: impl AsRef<Path>, opts: &Options) -> Result<IndexFile, Error> {
        let path = path.as_ref();
        let io = |source| Error::Io { path: path.to_owned(), source };
        let mut file = File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let loaded = opts.load.decide(size);
        let data = match loaded {
            // hg's `mmapread` returns an empty buffer for an empty file.
            Loaded::Mmap if size == 0 => Data::Bytes(Vec::new()),
            Loaded::Mmap => {
                // SAFETY: as hg maps it (`util.mmapread`): a revlog index is
                // only appended to, and the bytes a slice covers (below the
                // length seen here) are never rewritten; only `hg strip`
                // or a rollback truncates one, under the repository lock,
                // and a truncation under us is the SIGBUS the `mapwise`
                // binary turns into exit 3 before any byte is used.
                let map = unsafe { Mapping::map(&file, &opts.map_options()) };
                Data::Map(map.map_err(|source| Error::Map { path: path.to_owned(), source })?)
            }
            Loaded::Read => {
                let mut v = Vec::new();
                v.try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
                    .map_err(|_| io(std::io::ErrorKind::OutOfMemory.into()))?;
                file.read_to_end(&mut v).map_err(io)?;
                Data::Bytes(v)
            }
        };
        Ok(IndexFile { path: path.to_owned(), size, loaded, data })
    }

    /// [`IndexFile::open`], except that a missing file is an empty
    /// revlog (hg's `_get_data` returns no bytes for a missing file: a
    /// repository without commits has no `00changelog.i`).
    ///
    /// # Errors
    /// As [`IndexFile::open`], other than "not found".
    pub fn open_or_empty(path: impl AsRef<Path>, opts: &Options) -> Result<IndexFile, Error> {
        let path = path.as_ref();
        match IndexFile::open(path, opts) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(IndexFile {
                    path: path.to_owned(),
                    size: 0,
                    loaded: opts.load.decide(0),
                    data: Data::Bytes(Vec::new()),
                })
            }
            other => other,
        }
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File size in bytes when opened (0 for a missing file).
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Which load was used.
    #[must_use]
    pub fn loaded(&self) -> Loaded {
        self.loaded
    }

    /// The mapping, when mapped (and not empty).
    #[must_use]
    pub fn mapping(&self) -> Option<&Mapping> {
        match &self.data {
            Data::Map(m) => Some(m),
            Data::Bytes(_) => None,
        }
    }

    /// The file's bytes (borrowed from the mapping when mapped).
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Bytes(v) => v,
            Data::Map(m) => m.bytes(),
        }
    }

    /// The index over [`IndexFile::bytes`]; zero-copy.
    ///
    /// # Errors
    /// [`Error::Format`] when the header or the entry structure is bad.
    pub fn index(&self) -> Result<Index<'_, [u8]>, Error> {
        Index::open(self.bytes())
            .map_err(|source| Error::Format { path: self.path.clone(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_inclusive() {
        let auto = Load::Auto { threshold: 4096 };
        assert_eq!(auto.decide(4095), Loaded::Read);
        assert_eq!(auto.decide(4096), Loaded::Mmap);
        assert_eq!(auto.decide(4097), Loaded::Mmap);
        assert_eq!(Load::Read.decide(u64::MAX), Loaded::Read);
        assert_eq!(Load::Mmap.decide(0), Loaded::Mmap);
    }
}
