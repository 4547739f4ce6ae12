//! Bad input for the read-write engine and `mapwise bolt`: corrupt or
//! truncated files fail `Db::open` with a clear error naming what is wrong,
//! `mapwise bolt put` refuses them in the same words, and they are never
//! modified; foreign page sizes and versions are named as such; every
//! subcommand says the same of a file that is not bbolt.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mapwise_core::bolt::{BoltFile, fnv1a64};
use mapwise_native::engine::bolt::{Db, Error, Options};
use mapwise_testkit::bolt_model::rw;
use mapwise_testkit::corpus::bolt_patched;

use crate::support::{oracle, tempdir, testdata};

const PS: usize = 4096;

fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Rewrite both meta pages' checksums after a patch.
fn reseal(b: &mut [u8]) {
    for m in [0, PS] {
        let sum = fnv1a64(&b[m + 16..m + 72]);
        put_u64(b, m + 72, sum);
    }
}

/// Opening `path` read-write fails, the error passes `expect` and its
/// message holds every needle, and the file is unchanged. A read-only
/// open must fail as well when `read_only_too` (damage a reader would
/// trip over); a damaged freelist is no reader's business (bbolt does not
/// load it read-only), so there it may open.
fn refused(path: &Path, read_only_too: bool, expect: impl Fn(&Error) -> bool, needles: &[&str]) {
    let before = std::fs::read(path).expect("read");
    let err = Db::open(path, &rw(4096)).expect_err("a damaged file must not open read-write");
    assert!(expect(&err), "{}: unexpected error {err:?}", path.display());
    let msg = err.to_string();
    for n in needles {
        assert!(msg.contains(n), "{}: {msg:?} lacks {n:?}", path.display());
    }
    let ro = Db::open(path, &Options::default());
    if read_only_too {
        assert!(ro.is_err(), "{}: opened read-only", path.display());
    }
    drop(ro);
    // The command line's writer refuses it with the same names.
    let o = crate::support::run_mapwise(&[
        "bolt",
        "put",
        path.to_str().expect("utf-8"),
        "alpha",
        "k",
        "v",
    ]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{}: put succeeded", path.display());
    for n in needles {
        assert!(said.contains(n), "{}: put said {said:?}, lacks {n:?}", path.display());
    }
    let after = std::fs::read(path).expect("read");
    assert!(before == after, "{}: the file was modified", path.display());
}

#[test]
fn truncated_files_fail_to_open_and_stay_as_they_were() {
    let dir = tempdir();
    let p = bolt_patched(dir.path(), "small.db", "cut50", |b| b.truncate(50));
    refused(&p, true, |e| matches!(e, Error::Invalid { .. }), &["no valid meta page", "truncated"]);
    let p = bolt_patched(dir.path(), "small.db", "cut2pages", |b| b.truncate(2 * PS));
    refused(&p, true, |e| matches!(e, Error::Corrupt(_)), &["high-water mark", "truncated?"]);
    let p = bolt_patched(dir.path(), "overflow.db", "cutmid", |b| b.truncate(6 * PS + 100));
    refused(&p, true, |e| matches!(e, Error::Corrupt(_)), &["passes the end"]);
    // Go bbolt agrees these files are damaged.
    let out = crate::support::run_limited(
        Command::new(crate::support::bolt_oracle()).args(["check", p.to_str().expect("utf-8")]),
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
}

#[test]
fn damaged_meta_pages_are_named_as_bbolt_names_them() {
    let dir = tempdir();
    let p = bolt_patched(dir.path(), "small.db", "metas", |b| {
        b[72] ^= 0xff; // meta 0 checksum
        b[PS + 16] ^= 0xff; // meta 1 magic
    });
    refused(
        &p,
        true,
        |e| matches!(e, Error::Checksum { .. }),
        &["checksum error", "meta page 1: field magic"],
    );
    let p = bolt_patched(dir.path(), "small.db", "version", |b| {
        put_u32(b, 20, 3);
        put_u32(b, PS + 20, 3);
        reseal(b);
    });
    refused(
        &p,
        true,
        |e| matches!(e, Error::VersionMismatch { found: 3, .. }),
        &["version mismatch"],
    );
    let p = bolt_patched(dir.path(), "small.db", "pagesize", |b| {
        // Below bbolt's smallest meaningful page (and any size we take).
        put_u32(b, 24, 256);
        put_u32(b, PS + 24, 256);
        reseal(b);
    });
    refused(
        &p,
        true,
        |e| matches!(e, Error::PageSize { page_size: 256, .. }),
        &["foreign page size 256"],
    );
    let p = bolt_patched(dir.path(), "small.db", "bigendian", |b| {
        for m in [0, PS] {
            b[m + 16..m + 20].copy_from_slice(&[0xed, 0x0c, 0xda, 0xed]);
        }
    });
    refused(&p, true, |e| matches!(e, Error::Invalid { .. }), &["big-endian"]);
    let p = dir.path().join("garbage.db");
    std::fs::write(&p, (0..65536u32).map(|i| ((i * 7919) >> 3) as u8).collect::<Vec<_>>())
        .expect("write");
    refused(&p, true, |e| matches!(e, Error::Invalid { .. }), &["invalid database"]);
    // A single bad meta page is not an error: bbolt (and we) use the
    // other one, and the next commit rewrites the bad slot.
    let p = bolt_patched(dir.path(), "small.db", "meta0", |b| b[72] ^= 0xff);
    let db = Db::open(&p, &rw(4096)).expect("falls back to meta 1");
    db.update(|tx| tx.create_bucket(b"after-fallback").map(|_| ())).expect("commit");
    drop(db);
    let out = String::from_utf8(oracle(&["check", p.to_str().expect("utf-8")])).expect("utf-8");
    assert_eq!(out.trim_end(), "OK");
}

#[test]
fn damaged_geometry_and_freelists_are_refused_before_any_write() {
    let dir = tempdir();
    let (root, freelist, hwm) = {
        let bytes = std::fs::read(testdata("small.db")).expect("corpus");
        let f = BoltFile::open(bytes.as_slice()).expect("open");
        (f.meta().root, f.meta().freelist, f.meta().hwm)
    };
    // small.db's current meta is page 0.
    let p = bolt_patched(dir.path(), "small.db", "root", |b| {
        put_u64(b, 32, hwm + 3);
        reseal(b);
    });
    refused(&p, true, |e| matches!(e, Error::Corrupt(_)), &["root page"]);
    let fl = usize::try_from(freelist).expect("small");
    let p = bolt_patched(dir.path(), "small.db", "fl-dup", |b| {
        let first = u64::from_le_bytes(b[fl * PS + 16..fl * PS + 24].try_into().unwrap());
        put_u64(b, fl * PS + 24, first);
    });
    refused(&p, false, |e| matches!(e, Error::Corrupt(_)), &["listed twice"]);
    let p = bolt_patched(dir.path(), "small.db", "fl-range", |b| {
        put_u64(b, fl * PS + 16, hwm + 10);
    });
    refused(&p, false, |e| matches!(e, Error::Corrupt(_)), &["outside [2, high-water mark"]);
    let p = bolt_patched(dir.path(), "small.db", "fl-count", |b| {
        put_u16(b, fl * PS + 10, 0xFFFF);
        put_u64(b, fl * PS + 16, u64::MAX / 3);
    });
    refused(&p, false, |e| matches!(e, Error::Format(_)), &["count"]);
    let p = bolt_patched(dir.path(), "small.db", "fl-leaf", |b| {
        put_u64(b, 48, root);
        reseal(b);
    });
    refused(&p, false, |e| matches!(e, Error::Format(_)), &["freelist page"]);
    // No freelist stored and a damaged tree: the rebuild scan finds it
    // (bbolt panics in `freepages`).
    let leaf = {
        let bytes = std::fs::read(testdata("nofreelistsync.db")).expect("corpus");
        let f = BoltFile::open(bytes.as_slice()).expect("open");
        let l = mapwise_core::bolt::walk(&f, mapwise_core::bolt::WalkOptions::default()).layout;
        let r =
            l.regions.iter().find(|r| r.kind == mapwise_core::layout::Kind::Leaf).expect("a leaf");
        usize::try_from(r.id).expect("small")
    };
    let p = bolt_patched(dir.path(), "nofreelistsync.db", "nfs-tree", |b| {
        put_u64(b, leaf * PS, 9999);
    });
    refused(
        &p,
        false,
        |e| matches!(e, Error::Corrupt(_)),
        &["cannot rebuild the freelist", "field id"],
    );
}

/// A file that is not bbolt is a problem with the file, exit status 1, for
/// every subcommand alike (exit 2 is kept for failing to run at all).
#[test]
fn every_subcommand_says_a_non_bbolt_file_the_same_way() {
    let dir = tempdir();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("write");
    let text_file = dir.path().join("text.db");
    std::fs::write(&text_file, "not a database\n".repeat(1000)).expect("write");
    for f in [&empty, &text_file] {
        let p = f.to_str().expect("utf-8");
        for args in [
            &["check", p][..],
            &["buckets", p],
            &["keys", p, "b"],
            &["get", p, "b", "k"],
            &["stats", p],
            &["pages", p],
            &["info", p],
            &["dump", p],
        ] {
            let out = crate::support::run_mapwise(&[&["bolt"][..], args].concat());
            let err = String::from_utf8_lossy(&out.stderr);
            let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
            assert_eq!(out.status.code(), Some(1), "{args:?}: {all}");
            assert!(!all.contains("panicked"), "{args:?}: {all}");
        }
        assert_eq!(
            std::fs::metadata(f).expect("stat").len(),
            if f == &empty { 0 } else { 15_000 },
            "unchanged"
        );
    }
}
