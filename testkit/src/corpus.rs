//! What the corpus under `testdata/` holds, by format: the files the
//! peers made, and the lists the suites walk.

use std::path::{Path, PathBuf};

/// A read-only corpus file under `testdata/bolt`.
#[must_use]
pub fn bolt(name: &str) -> PathBuf {
    crate::testdata("bolt").join(name)
}

/// A copy of the bbolt corpus file `name` with `patch` applied to its
/// bytes, written to `dir/TAG.db`.
///
/// # Panics
/// When the corpus file cannot be read or the copy written.
pub fn bolt_patched(
    dir: &Path,
    name: &str,
    tag: &str,
    patch: impl FnOnce(&mut Vec<u8>),
) -> PathBuf {
    let mut bytes = std::fs::read(bolt(name)).expect("corpus");
    patch(&mut bytes);
    let p = dir.join(format!("{tag}.db"));
    std::fs::write(&p, &bytes).expect("write");
    p
}

/// A read-only corpus file under `testdata/rrd` (made by rrdtool 1.7.2
/// through `peers/rrd/peer corpus`).
#[must_use]
pub fn rrd(name: &str) -> PathBuf {
    crate::testdata("rrd").join(name)
}

/// A read-only corpus file under `testdata/revlog` (made by Mercurial
/// 6.3.2 through `peers/revlog/peer make-corpus`).
#[must_use]
pub fn revlog(name: &str) -> PathBuf {
    crate::testdata("revlog").join(name)
}

/// Every index of the revlog corpus with a `.debugindex.txt` from hg.
pub const REVLOG_INDEXES: &[&str] = &[
    "00changelog.i",
    "00manifest.i",
    "data/a.txt.i",
    "data/big.txt.i",
    "data/docs/_r_e_a_d_m_e.i",
    "data/src/_main.rs.i",
    "synthetic-2000/00changelog.i",
    "synthetic-2000/00manifest.i",
];
