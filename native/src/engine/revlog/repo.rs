//! Finding a repository's store and its revlogs.
//!
//! Layout (Mercurial 6.3, `mercurial/localrepo.py`, `makelocalrepository`
//! and `mercurial/store.py`): `.hg/requires` lists the repository's
//! requirements; with `share-safe` the store's own are in
//! `.hg/store/requires`; with `store` the revlogs live under `.hg/store`,
//! else under `.hg`; a shared repository (`shared` / `relshared`) names
//! the source's `.hg` in `.hg/sharedpath`. The changelog is
//! `00changelog.i`, the manifest `00manifest.i`, the filelog of a tracked
//! file `data/<path>.i` under the store name encoding
//! ([`StoreEncoding`]).

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::Error;
use super::load::{IndexFile, Options};
use super::store::{StoreEncoding, filelog_index};

/// Which revlog of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revlog {
    /// `00changelog.i`.
    Changelog,
    /// `00manifest.i`.
    Manifest,
    /// The filelog of a tracked file (repository-relative, `/`-separated).
    File(String),
}

impl Revlog {
    /// `true` for the revlogs hg maps above the threshold (it opens the
    /// changelog and manifest with `mmaplargeindex=True`, filelogs
    /// without).
    #[must_use]
    pub fn maps_large_index(&self) -> bool {
        matches!(self, Revlog::Changelog | Revlog::Manifest)
    }
}

/// An opened repository (or a bare store directory).
#[derive(Debug, Clone)]
pub struct Repo {
    path: PathBuf,
    /// The working copy's own `.hg` (its dirstate, bookmarks, local tags,
    /// merge state); `None` for a bare store directory.
    dot_hg: Option<PathBuf>,
    /// The `.hg` the store belongs to: the share source's for a share,
    /// else `dot_hg`.
    source_hg: Option<PathBuf>,
    store: PathBuf,
    requirements: BTreeSet<String>,
    encoding: StoreEncoding,
}

/// The requirements Mercurial 6.3 reads with no extension loaded
/// (`mercurial/localrepo.py`, `gathersupportedrequirements`: the
/// constants of `mercurial/requirements.py`, `exp-sparse` from
/// `mercurial/sparse.py`, and the compression engines it was built
/// with), then those of the extensions it ships whose data `mapwise
/// revlog` never reads (`largefiles`, `lfs`, `narrowhg-experimental`:
/// they change which file contents exist, not the changelog's index). A
/// repository naming any other is refused as hg refuses it: its revlogs
/// may be in a form this reader does not know.
pub const KNOWN_REQUIREMENTS: &[&str] = &[
    "bookmarksinstore",
    "dirstate-tracked-key-v1",
    "dirstate-v2",
    "dotencode",
    "exp-archived-phase",
    "exp-changelog-v2",
    "exp-compression-none",
    "exp-compression-zlib",
    "exp-compression-zstd",
    "exp-copies-sidedata-changeset",
    "exp-revlogv2.2",
    "exp-sparse",
    "fncache",
    "generaldelta",
    "internal-phase-2",
    "persistent-nodemap",
    "relshared",
    "revlog-compression-zstd",
    "revlogv1",
    "share-safe",
    "shared",
    "sparserevlog",
    "store",
    "treemanifest",
    "largefiles",
    "lfs",
    "narrowhg-experimental",
];

/// `Err` naming the requirements of `reqs` not in [`KNOWN_REQUIREMENTS`],
/// or saying the file is corrupt when one of those is empty or does not
/// begin with an ASCII letter or digit (hg 6.3 `localrepo.py`,
/// `ensurerequirementsrecognized`).
fn check_known(path: &Path, reqs: &BTreeSet<String>) -> Result<(), Error> {
    let unknown: Vec<String> =
        reqs.iter().filter(|r| !KNOWN_REQUIREMENTS.contains(&r.as_str())).cloned().collect();
    if unknown.iter().any(|r| !r.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)) {
        return Err(Error::RequiresCorrupt { path: path.to_owned() });
    }
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::UnknownRequirements { path: path.to_owned(), unknown })
    }
}

/// The lines of a `requires` file as hg splits them (Python's
/// `bytes.splitlines`: at `\n`, `\r\n` or `\r`, nothing trimmed, so an
/// empty line is an empty requirement, which [`check_known`] refuses).
fn read_requires(path: &Path) -> Result<BTreeSet<String>, Error> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
            let mut lines: Vec<&str> = text.split(['\n', '\r']).collect();
            // A final newline ends the last line; it starts no new one.
            if lines.last() == Some(&"") {
                lines.pop();
            }
            Ok(lines.into_iter().map(String::from).collect())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(source) => Err(Error::Io { path: path.to_owned(), source }),
    }
}

impl Repo {
    /// Open the repository at `path` (the directory holding `.hg`), or a
    /// bare store directory (holding `00changelog.i` or `requires` and no
    /// `.hg`, like `testdata/revlog`), whose `requires` lists the
    /// store requirements.
    ///
    /// # Errors
    /// [`Error::NotARepo`] when `path` is neither; [`Error::Io`] when a
    /// `requires` or `sharedpath` file cannot be read;
    /// [`Error::UnknownRequirements`] when a requirement is not in
    /// [`KNOWN_REQUIREMENTS`].
    pub fn open(path: impl AsRef<Path>) -> Result<Repo, Error> {
        let path = path.as_ref();
        let dot_hg = path.join(".hg");
        if dot_hg.is_dir() {
            let mut reqs = read_requires(&dot_hg.join("requires"))?;
            let mut source = dot_hg.clone();
            if reqs.contains("shared") || reqs.contains("relshared") {
                let file = dot_hg.join("sharedpath");
                let raw = std::fs::read_to_string(&file)
                    .map_err(|source| Error::Io { path: file.clone(), source })?;
                let shared = PathBuf::from(raw.trim_end_matches(['\n', '\r']));
                source = if reqs.contains("relshared") { dot_hg.join(shared) } else { shared };
            }
            // `makelocalrepository`: with share-safe the store's own
            // requirements (`store` among them) are in `store/requires`.
            if reqs.contains("share-safe") {
                reqs.extend(read_requires(&source.join("store").join("requires"))?);
            }
            check_known(path, &reqs)?;
            let store = if reqs.contains("store") { source.join("store") } else { source.clone() };
            let encoding = StoreEncoding::from_requirements(&reqs);
            return Ok(Repo {
                path: path.to_owned(),
                dot_hg: Some(dot_hg),
                source_hg: Some(source),
                store,
                requirements: reqs,
                encoding,
            });
        }
        if path.join("00changelog.i").is_file() || path.join("requires").is_file() {
            let mut reqs = read_requires(&path.join("requires"))?;
            // A store directory is a store: the `store` requirement holds.
            reqs.insert("store".into());
            check_known(path, &reqs)?;
            let encoding = StoreEncoding::from_requirements(&reqs);
            return Ok(Repo {
                path: path.to_owned(),
                dot_hg: None,
                source_hg: None,
                store: path.to_owned(),
                requirements: reqs,
                encoding,
            });
        }
        Err(Error::NotARepo { path: path.to_owned() })
    }

    /// Find the repository holding `start` or one of its ancestors (as hg
    /// does from the working directory).
    ///
    /// # Errors
    /// [`Error::NotARepo`] when no ancestor holds `.hg`.
    pub fn discover(start: impl AsRef<Path>) -> Result<Repo, Error> {
        let start = start.as_ref();
        start
            .ancestors()
            .find(|a| a.join(".hg").is_dir())
            .map_or_else(|| Err(Error::NotARepo { path: start.to_owned() }), Repo::open)
    }

    /// The path given to [`Repo::open`].
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The working copy's `.hg` directory (hg's `repo.vfs`); `None` for a
    /// bare store directory.
    #[must_use]
    pub fn dot_hg(&self) -> Option<&Path> {
        self.dot_hg.as_deref()
    }

    /// The `.hg` directory of the repository that owns the store: the
    /// share source's for `hg share`, else [`Repo::dot_hg`].
    #[must_use]
    pub fn source_hg(&self) -> Option<&Path> {
        self.source_hg.as_deref()
    }

    /// The directory holding the revlogs.
    #[must_use]
    pub fn store(&self) -> &Path {
        &self.store
    }

    /// Every requirement (repository and store).
    #[must_use]
    pub fn requirements(&self) -> &BTreeSet<String> {
        &self.requirements
    }

    /// The store name scheme.
    #[must_use]
    pub fn encoding(&self) -> StoreEncoding {
        self.encoding
    }

    /// The index file of `which`.
    #[must_use]
    pub fn index_path(&self, which: &Revlog) -> PathBuf {
        match which {
            Revlog::Changelog => self.store.join("00changelog.i"),
            Revlog::Manifest => self.store.join("00manifest.i"),
            Revlog::File(name) => {
                let rel = filelog_index(self.encoding, name.as_bytes());
                self.store.join(std::ffi::OsStr::from_bytes(&rel))
            }
        }
    }

    /// Open the index of `which` as hg does: `opts` (the mmap rule) for
    /// the changelog and manifest, a whole read for filelogs; a missing
    /// file is an empty revlog.
    ///
    /// # Errors
    /// As [`IndexFile::open_or_empty`].
    pub fn open_index(&self, which: &Revlog, opts: &Options) -> Result<IndexFile, Error> {
        let opts = if which.maps_large_index() { *opts } else { Options::default() };
        IndexFile::open_or_empty(self.index_path(which), &opts)
    }
}
