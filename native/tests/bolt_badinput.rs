//! Bad input for the read-write engine: corrupt or truncated files fail
//! `Db::open` with a clear error naming what is wrong, and are never
//! modified; foreign page sizes and versions are named as such; a file
//! another process holds read-write makes us wait for the lock timeout,
//! then fail.

#![allow(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mapwise_core::bolt::{BoltFile, fnv1a64};
use mapwise_native::engine::bolt::{Db, Error, Options};

use crate::bolt_write::rw;
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

fn copy_patched(dir: &Path, name: &str, tag: &str, patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(testdata(name)).expect("corpus");
    patch(&mut bytes);
    let p = dir.join(format!("{tag}.db"));
    std::fs::write(&p, &bytes).expect("write");
    p
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
        assert!(
            said.contains(n),
            "{}: put said {said:?}, lacks {n:?}",
            path.display()
        );
    }
    let after = std::fs::read(path).expect("read");
    assert!(before == after, "{}: the file was modified", path.display());
}

/// The error and its sources, joined.
fn chain(e: &Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

#[test]
fn truncated_files_fail_to_open_and_stay_as_they_were() {
    let dir = tempdir();
    let p = copy_patched(dir.path(), "small.db", "cut50", |b| b.truncate(50));
    refused(
        &p,
        true,
        |e| matches!(e, Error::Invalid { .. }),
        &["no valid meta page", "truncated"],
    );
    let p = copy_patched(dir.path(), "small.db", "cut2pages", |b| b.truncate(2 * PS));
    refused(
        &p,
        true,
        |e| matches!(e, Error::Corrupt(_)),
        &["high-water mark", "truncated?"],
    );
    let p = copy_patched(dir.path(), "overflow.db", "cutmid", |b| {
        b.truncate(6 * PS + 100)
    });
    refused(
        &p,
        true,
        |e| matches!(e, Error::Corrupt(_)),
        &["passes the end"],
    );
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
    let p = copy_patched(dir.path(), "small.db", "metas", |b| {
        b[72] ^= 0xff; // meta 0 checksum
        b[PS + 16] ^= 0xff; // meta 1 magic
    });
    refused(
        &p,
        true,
        |e| matches!(e, Error::Checksum { .. }),
        &["checksum error", "meta page 1: field magic"],
    );
    let p = copy_patched(dir.path(), "small.db", "version", |b| {
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
    let p = copy_patched(dir.path(), "small.db", "pagesize", |b| {
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
    let p = copy_patched(dir.path(), "small.db", "bigendian", |b| {
        for m in [0, PS] {
            b[m + 16..m + 20].copy_from_slice(&[0xed, 0x0c, 0xda, 0xed]);
        }
    });
    refused(
        &p,
        true,
        |e| matches!(e, Error::Invalid { .. }),
        &["big-endian"],
    );
    let p = dir.path().join("garbage.db");
    std::fs::write(
        &p,
        (0..65536u32)
            .map(|i| ((i * 7919) >> 3) as u8)
            .collect::<Vec<_>>(),
    )
    .expect("write");
    refused(
        &p,
        true,
        |e| matches!(e, Error::Invalid { .. }),
        &["invalid database"],
    );
    // A single bad meta page is not an error: bbolt (and we) use the
    // other one, and the next commit rewrites the bad slot.
    let p = copy_patched(dir.path(), "small.db", "meta0", |b| b[72] ^= 0xff);
    let db = Db::open(&p, &rw(4096)).expect("falls back to meta 1");
    db.update(|tx| tx.create_bucket(b"after-fallback").map(|_| ()))
        .expect("commit");
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
    let p = copy_patched(dir.path(), "small.db", "root", |b| {
        put_u64(b, 32, hwm + 3);
        reseal(b);
    });
    refused(&p, true, |e| matches!(e, Error::Corrupt(_)), &["root page"]);
    let fl = usize::try_from(freelist).expect("small");
    let p = copy_patched(dir.path(), "small.db", "fl-dup", |b| {
        let first = u64::from_le_bytes(b[fl * PS + 16..fl * PS + 24].try_into().unwrap());
        put_u64(b, fl * PS + 24, first);
    });
    refused(
        &p,
        false,
        |e| matches!(e, Error::Corrupt(_)),
        &["listed twice"],
    );
    let p = copy_patched(dir.path(), "small.db", "fl-range", |b| {
        put_u64(b, fl * PS + 16, hwm + 10);
    });
    refused(
        &p,
        false,
        |e| matches!(e, Error::Corrupt(_)),
        &["outside [2, high-water mark"],
    );
    let p = copy_patched(dir.path(), "small.db", "fl-count", |b| {
        put_u16(b, fl * PS + 10, 0xFFFF);
        put_u64(b, fl * PS + 16, u64::MAX / 3);
    });
    refused(&p, false, |e| matches!(e, Error::Format(_)), &["count"]);
    let p = copy_patched(dir.path(), "small.db", "fl-leaf", |b| {
        put_u64(b, 48, root);
        reseal(b);
    });
    refused(
        &p,
        false,
        |e| matches!(e, Error::Format(_)),
        &["freelist page"],
    );
    // No freelist stored and a damaged tree: the rebuild scan finds it
    // (bbolt panics in `freepages`).
    let leaf = {
        let bytes = std::fs::read(testdata("nofreelistsync.db")).expect("corpus");
        let f = BoltFile::open(bytes.as_slice()).expect("open");
        let l = mapwise_core::bolt::walk(&f, mapwise_core::bolt::WalkOptions::default()).layout;
        let r = l
            .regions
            .iter()
            .find(|r| r.kind == mapwise_core::layout::Kind::Leaf)
            .expect("a leaf");
        usize::try_from(r.id).expect("small")
    };
    let p = copy_patched(dir.path(), "nofreelistsync.db", "nfs-tree", |b| {
        put_u64(b, leaf * PS, 9999);
    });
    refused(
        &p,
        false,
        |e| matches!(e, Error::Corrupt(_)),
        &["cannot rebuild the freelist", "field id"],
    );
}

#[test]
fn not_a_file_or_empty() {
    let dir = tempdir();
    let e = Db::open(dir.path(), &rw(4096)).expect_err("a directory");
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let e = Db::open(&fifo, &rw(4096)).expect_err("a FIFO");
    assert!(chain(&e).contains("not a regular file"), "{e}");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("write");
    let e = Db::open(&empty, &Options::default()).expect_err("empty, read-only");
    assert!(
        matches!(e, Error::Invalid { .. }) && e.to_string().contains("empty"),
        "{e}"
    );
    assert_eq!(std::fs::metadata(&empty).expect("stat").len(), 0);
    // bbolt creates a database in an empty file opened read-write; a page
    // size below 512 bytes is refused.
    let e = Db::open(&empty, &rw(256)).expect_err("page size 256");
    assert!(matches!(e, Error::PageSize { page_size: 256, .. }), "{e:?}");
    assert_eq!(std::fs::metadata(&empty).expect("stat").len(), 0);
}

#[test]
fn a_writer_in_another_process_holds_the_lock_until_the_timeout() {
    let dir = tempdir();
    let path = dir.path().join("locked.db");
    drop(Db::open(&path, &rw(4096)).expect("create"));
    // The crash harness's child holds the file read-write and commits.
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "bolt_crash::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MAPWISE_BOLT_CRASH_CHILD", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.contains("start ") {
        line.clear();
        if out.read_line(&mut line).expect("read") == 0 {
            break;
        }
    }
    let short = Some(Duration::from_millis(150));
    let w = Db::open(
        &path,
        &Options {
            timeout: short,
            ..rw(4096)
        },
    );
    let r = Db::open(
        &path,
        &Options {
            timeout: short,
            ..Options::default()
        },
    );
    child.kill().expect("kill");
    child.wait().expect("wait");
    assert!(matches!(w, Err(Error::Timeout { .. })), "{w:?}");
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(
        Db::open(&path, &Options::default()).is_ok(),
        "free after the writer ended"
    );
}

/// Damage deeper in the tree is found when a transaction reaches it: the
/// operation fails, nothing it touched is half-done, and later commits
/// add no fault of their own (the file's faults stay exactly the ones it
/// had).
#[test]
fn deep_damage_fails_the_operation_and_adds_no_fault() {
    let dir = tempdir();
    let leaf = {
        let bytes = std::fs::read(testdata("small.db")).expect("corpus");
        let f = BoltFile::open(bytes.as_slice()).expect("open");
        let wide = mapwise_core::bolt::Bucket::root_of(&f)
            .bucket(b"wide")
            .expect("read")
            .expect("wide");
        usize::try_from(wide.root_pgid().expect("page-backed")).expect("small")
    };
    let p = copy_patched(dir.path(), "small.db", "deep", |b| {
        put_u64(b, leaf * PS, 9999)
    });
    let faults = |p: &Path| -> Vec<String> {
        let db = Db::open(p, &Options::default()).expect("open");
        let mut v: Vec<String> = db
            .begin()
            .expect("tx")
            .check()
            .iter()
            .map(ToString::to_string)
            .collect();
        v.sort();
        v
    };
    let before = faults(&p);
    assert!(!before.is_empty());
    let db = Db::open(&p, &rw(4096)).expect("the damage is not on the open path");
    let mut tx = db.begin_rw().expect("tx");
    let e = tx
        .delete_bucket(b"wide")
        .expect_err("the bucket's page is damaged");
    assert!(e.to_string().contains("field id = 9999"), "{e}");
    let e = tx
        .bucket(b"wide")
        .expect("open")
        .expect("still there")
        .put(b"k", b"v")
        .expect_err("its leaf is damaged");
    assert!(e.to_string().contains("9999"), "{e}");
    tx.create_bucket(b"fresh")
        .expect("create")
        .put(b"k", b"v")
        .expect("put");
    tx.commit().expect("commit");
    drop(db);
    assert_eq!(faults(&p), before);
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
