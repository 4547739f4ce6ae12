//! What a reader must leave unchanged about the files it reads: bytes,
//! length, inode, modification and change times (nanoseconds), and the
//! set of files in a directory tree. Shared by the "readers never write"
//! tests of the inspector and the browser viewer.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What must not change about one file.
#[derive(Debug, PartialEq, Eq)]
pub struct Print {
    /// Length in bytes.
    pub len: u64,
    /// Inode number (a rename over the file changes it).
    pub inode: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Status change time, nanoseconds since the epoch: every write and
    /// every change to the inode except its access time moves it.
    pub ctime_ns: i128,
    /// The bytes themselves (the test files are small; compared, never
    /// printed).
    pub bytes: Vec<u8>,
}

/// The print of the file at `path`.
///
/// # Panics
/// When the file cannot be stat'ed or read.
#[must_use]
pub fn print_of(path: &Path) -> Print {
    let m = fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Print {
        len: m.len(),
        inode: m.ino(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        bytes: fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
    }
}

/// The prints of every file under `root`, by path.
///
/// # Panics
/// When a directory or file cannot be read.
#[must_use]
pub fn prints(root: &Path) -> BTreeMap<PathBuf, Print> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.insert(p.clone(), print_of(&p));
            }
        }
    }
    out
}

/// What differs between two sets of prints, one line per file (no bytes);
/// empty when nothing does.
#[must_use]
pub fn differences(
    before: &BTreeMap<PathBuf, Print>,
    after: &BTreeMap<PathBuf, Print>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (p, a) in after {
        match before.get(p) {
            None => out.push(format!("{}: appeared", p.display())),
            Some(b) if b != a => out.push(format!(
                "{}: len {} → {}, inode {} → {}, mtime {} → {} ns, ctime {} → {} ns, bytes {}",
                p.display(),
                b.len,
                a.len,
                b.inode,
                a.inode,
                b.mtime_ns,
                a.mtime_ns,
                b.ctime_ns,
                a.ctime_ns,
                if a.bytes == b.bytes { "same" } else { "CHANGED" }
            )),
            Some(_) => {}
        }
    }
    for p in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("{}: vanished", p.display()));
    }
    out
}

/// Copy `from` (a file or a directory tree) to `to`, each file synced (so
/// that its pages are clean and can be evicted).
///
/// # Panics
/// When anything cannot be read, created or synced.
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
        for e in fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
            let e = e.expect("dir entry");
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        }
        fs::copy(from, to)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
        fs::File::open(to)
            .and_then(|f| f.sync_all())
            .unwrap_or_else(|e| panic!("fsync {}: {e}", to.display()));
    }
}
