//! Errors of the bbolt engine, named as bbolt names them
//! (`errors.go` in 1.3.6, `errors/errors.go` later).

use std::path::PathBuf;

use mapwise_core::MetaFault;

use crate::os::map::MapError;

/// Errors of the bbolt engine. Where bbolt has a named error
/// (`ErrKeyRequired`, `ErrBucketExists`, ...) the variant carries its
/// name and message; faults bbolt would crash on (a damaged page, a
/// freelist listing a page twice) are [`Error::Format`] or
/// [`Error::Corrupt`], naming the page and field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Opening, reading, writing, syncing or resizing the file failed.
    #[error("{path}: {what}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failing step (`open`, `pwrite`, `fdatasync`, ...).
        what: &'static str,
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
    /// Mapping the file failed.
    #[error("{path}")]
    Map {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: MapError,
    },
    /// Neither meta page is a bbolt meta page, or the file is too short to
    /// hold one (bbolt `ErrInvalid`, "invalid database"). The detail names
    /// both meta pages' faults.
    #[error("{path}: invalid database: {detail}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// The newest usable meta page has another format version (bbolt
    /// `ErrVersionMismatch`).
    #[error("{path}: version mismatch: the file has format version {found}, bbolt writes 2")]
    VersionMismatch {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: u32,
    },
    /// Both meta pages fail their checksum (bbolt `ErrChecksum`): the file
    /// is damaged, e.g. by a torn write of both.
    #[error("{path}: checksum error: {detail}")]
    Checksum {
        /// The file.
        path: PathBuf,
        /// Both meta pages' faults.
        detail: String,
    },
    /// The meta page names a page size mapwise does not accept (outside
    /// 512 B ..= 16 MiB): damage, or a file no bbolt would write.
    #[error("{path}: foreign page size {page_size} (expected 512 to 16777216)")]
    PageSize {
        /// The file.
        path: PathBuf,
        /// The page size in the meta page.
        page_size: u32,
    },
    /// The file is damaged or is not a valid bbolt file (a fault bbolt
    /// would crash on or misread).
    #[error(transparent)]
    Format(#[from] mapwise_core::Error),
    /// The file is damaged in a way the engine detects (geometry, the
    /// freelist, a tree that contradicts itself), naming where.
    #[error("corrupt database: {0}")]
    Corrupt(String),
    /// A key is empty (bbolt `ErrKeyRequired`).
    #[error("key required")]
    KeyRequired,
    /// A key is longer than 32768 bytes (bbolt `ErrKeyTooLarge`,
    /// `MaxKeySize`).
    #[error("key too large: {0} bytes (at most 32768)")]
    KeyTooLarge(usize),
    /// A value is longer than 2^31 - 2 bytes (bbolt `ErrValueTooLarge`,
    /// `MaxValueSize`).
    #[error("value too large: {0} bytes (at most 2147483646)")]
    ValueTooLarge(usize),
    /// A bucket name is empty (bbolt `ErrBucketNameRequired`).
    #[error("bucket name required")]
    BucketNameRequired,
    /// The bucket exists already (bbolt `ErrBucketExists`).
    #[error("bucket already exists")]
    BucketExists,
    /// The bucket does not exist (bbolt `ErrBucketNotFound`).
    #[error("bucket not found")]
    BucketNotFound,
    /// A key holds a value where a bucket is expected, or a bucket where a
    /// value is expected (bbolt `ErrIncompatibleValue`).
    #[error("incompatible value")]
    IncompatibleValue,
    /// The transaction is closed (bbolt `ErrTxClosed`). With this API a
    /// closed transaction cannot be used (commit and rollback consume it);
    /// the variant exists for bbolt parity.
    #[error("tx closed")]
    TxClosed,
    /// A write was attempted in a read-only transaction (bbolt
    /// `ErrTxNotWritable`). Read transactions here have no write methods,
    /// so the type system rules this out; kept for bbolt parity.
    #[error("tx not writable")]
    TxNotWritable,
    /// The database was closed (bbolt `ErrDatabaseNotOpen`).
    #[error("database not open")]
    DatabaseNotOpen,
    /// A write transaction was requested on a database opened read-only
    /// (bbolt `ErrDatabaseReadOnly`).
    #[error("database is in read-only mode")]
    DatabaseReadOnly,
    /// Serialising a page failed (e.g. 65535 or more keys in one page).
    #[error("cannot write page: {0}")]
    Write(#[from] mapwise_core::bolt::WriteError),
}

/// Result with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Summary of a failed [`super::Tx::check`] for a refusal: `N error(s),
/// the first: …`; `None` when `problems` is empty (the check passed).
/// Used by every writer that refuses a damaged file (compact, the CLI's
/// put and del).
#[must_use]
pub fn check_summary(problems: &[mapwise_core::Error]) -> Option<String> {
    let first = problems.first()?;
    let n = problems.len();
    Some(format!("{n} error{}, the first: {first}", if n == 1 { "" } else { "s" }))
}

/// The bbolt error for an open that found no usable meta page: bbolt
/// returns meta page 0's fault (`db.go`, `DB.mmap`), named as its
/// `Meta.Validate` names it.
pub(crate) fn no_valid_meta(path: &std::path::Path, meta0: MetaFault, meta1: MetaFault) -> Error {
    let path = path.to_owned();
    let detail = format!("no valid meta page: meta page 0: {meta0}; meta page 1: {meta1}");
    match meta0 {
        MetaFault::Version(found) => Error::VersionMismatch { path, found },
        MetaFault::Checksum { .. } => Error::Checksum { path, detail },
        MetaFault::PageSize(page_size) => Error::PageSize { path, page_size },
        MetaFault::Magic(0xEDDA_0CED) => Error::Invalid {
            path,
            detail: format!("written on a big-endian host (magic reads 0xedda0ced); {detail}"),
        },
        _ => Error::Invalid { path, detail },
    }
}
