//! Bad input for the read-write engine: paths that are not a file or are
//! empty, a file another process holds read-write (we wait for the lock
//! timeout, then fail), and damage deep in the tree, which fails the
//! operation and adds no fault. Corrupt and truncated files refused at
//! open, in the engine's and the command line's words, are in
//! `cli/tests/bolt_badinput.rs`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mapwise_core::bolt::BoltFile;
use mapwise_native::engine::bolt::{Db, Error, Options};
use mapwise_testkit::bolt_model::rw;
use mapwise_testkit::corpus::bolt_patched;

use crate::support::{tempdir, testdata};

const PS: usize = 4096;

fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
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
    assert!(matches!(e, Error::Invalid { .. }) && e.to_string().contains("empty"), "{e}");
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
        .args(["--exact", "bolt_crash::crash_child", "--nocapture", "--test-threads=1"])
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
    let w = Db::open(&path, &Options { timeout: short, ..rw(4096) });
    let r = Db::open(&path, &Options { timeout: short, ..Options::default() });
    child.kill().expect("kill");
    child.wait().expect("wait");
    assert!(matches!(w, Err(Error::Timeout { .. })), "{w:?}");
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(Db::open(&path, &Options::default()).is_ok(), "free after the writer ended");
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
        let wide =
            mapwise_core::bolt::Bucket::root_of(&f).bucket(b"wide").expect("read").expect("wide");
        usize::try_from(wide.root_pgid().expect("page-backed")).expect("small")
    };
    let p = bolt_patched(dir.path(), "small.db", "deep", |b| put_u64(b, leaf * PS, 9999));
    let faults = |p: &Path| -> Vec<String> {
        let db = Db::open(p, &Options::default()).expect("open");
        let mut v: Vec<String> =
            db.begin().expect("tx").check().iter().map(ToString::to_string).collect();
        v.sort();
        v
    };
    let before = faults(&p);
    assert!(!before.is_empty());
    let db = Db::open(&p, &rw(4096)).expect("the damage is not on the open path");
    let mut tx = db.begin_rw().expect("tx");
    let e = tx.delete_bucket(b"wide").expect_err("the bucket's page is damaged");
    assert!(e.to_string().contains("field id = 9999"), "{e}");
    let e = tx
        .bucket(b"wide")
        .expect("open")
        .expect("still there")
        .put(b"k", b"v")
        .expect_err("its leaf is damaged");
    assert!(e.to_string().contains("9999"), "{e}");
    tx.create_bucket(b"fresh").expect("create").put(b"k", b"v").expect("put");
    tx.commit().expect("commit");
    drop(db);
    assert_eq!(faults(&p), before);
}
