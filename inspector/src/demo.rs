//! The file `inspector open` shows when given none: a real etcd bbolt
//! database from the repository's test data.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The bundled copy of `testdata/bolt/etcd-small.db`.
pub const DEMO_BYTES: &[u8] = include_bytes!("../../testdata/bolt/etcd-small.db");

/// The demo file in the repository, when running from a checkout.
pub const REPO_DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/bolt/etcd-small.db");

/// The demo file to open and how to name it in the title: the
/// repository's copy when it exists, else the bundled bytes written once
/// to `$TMPDIR/mapwise-demo/etcd-small.db` (and reused).
///
/// # Errors
/// When the temporary copy cannot be written.
pub fn demo_file() -> io::Result<(PathBuf, String)> {
    demo_file_in(Path::new(REPO_DEMO), &std::env::temp_dir().join("mapwise-demo"))
}

/// [`demo_file`] with the repository copy at `repo` and the fallback
/// directory `dir`.
///
/// # Errors
/// When the copy in `dir` cannot be written.
pub fn demo_file_in(repo: &Path, dir: &Path) -> io::Result<(PathBuf, String)> {
    if repo.is_file() {
        let path = fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
        let label = format!("{} [demo]", path.display());
        return Ok((path, label));
    }
    fs::create_dir_all(dir)?;
    let path = dir.join("etcd-small.db");
    let same_len =
        fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == DEMO_BYTES.len() as u64);
    if !same_len {
        let tmp = dir.join(format!("etcd-small.db.{}.tmp", std::process::id()));
        fs::write(&tmp, DEMO_BYTES)?;
        fs::rename(&tmp, &path)?;
    }
    let label = format!("{} [demo, bundled copy]", path.display());
    Ok((path, label))
}
