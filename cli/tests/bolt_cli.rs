//! How `mapwise bolt` behaves for a user in an incident: quiet reads that
//! leave the page cache alone, warnings for meta pages readers skip, clear
//! refusals of files that are not regular files, JSON errors for scripts.

use std::os::unix::fs::FileExt;
use std::process::Command;

use mapwise_core::bolt::fnv1a64;
use mapwise_testkit::churn::writer_db;

use crate::support::churn::rewrite;
use crate::support::install::{Need, ensure};
use crate::support::{oracle, run_mapwise, tempdir, testdata};

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn copy(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::copy(testdata(name), &p).expect("copy");
    std::fs::File::open(&p).and_then(|f| f.sync_all()).expect("fsync");
    p
}

/// Resident pages of `path` as vmtouch counts them.
fn vmtouch_resident(path: &std::path::Path) -> u64 {
    ensure(&[Need::Vmtouch]);
    let out = Command::new("vmtouch").arg(path).output().expect("vmtouch");
    let s = String::from_utf8_lossy(&out.stdout);
    let line = s.lines().find(|l| l.contains("Resident Pages:")).expect("vmtouch line");
    line.split_whitespace()
        .nth(2)
        .and_then(|c| c.split('/').next())
        .and_then(|n| n.parse().ok())
        .expect("count")
}

#[test]
fn pages_check_and_info_leave_the_page_cache_alone() {
    ensure(&[Need::Vmtouch]);
    let dir = tempdir();
    let p = copy(dir.path(), "overflow.db");
    let ps = p.to_str().expect("utf-8");
    Command::new("vmtouch").args(["-e", ps]).output().expect("vmtouch -e");
    assert_eq!(vmtouch_resident(&p), 0);
    for cmd in ["pages", "check", "info"] {
        let o = run_mapwise(&["bolt", cmd, ps]);
        assert!(o.status.success(), "{cmd}: {}", text(&o));
        assert_eq!(vmtouch_resident(&p), 0, "{cmd} changed the residency of the file");
    }
    // And they still say what Go bbolt says.
    assert_eq!(run_mapwise(&["bolt", "pages", ps]).stdout, oracle(&["pages", ps]));
}

#[test]
fn a_torn_meta_page_is_a_warning_and_a_bad_page_size_an_error() {
    let dir = tempdir();
    // Meta 0 (txid 4, current) with a broken checksum: readers use meta 1.
    let torn = copy(dir.path(), "small.db");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&torn)
        .expect("open")
        .write_at(&[0xff], 72)
        .expect("write");
    let o = run_mapwise(&["bolt", "check", torn.to_str().expect("utf-8")]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("warning: meta page 0 is invalid (field checksum"), "{t}");
    assert!(t.contains("readers use meta page 1 (txid 3)"), "{t}");
    // Meta 0 with a checksummed, absurd page size (below 512 bytes): bbolt
    // (which checks only magic, version and checksum) would use it; we
    // must not call it OK.
    let bad = copy(dir.path(), "small.db");
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&bad).expect("open");
    f.write_at(&256u32.to_le_bytes(), 16 + 8).expect("write");
    let mut meta = [0u8; 56];
    f.read_exact_at(&mut meta, 16).expect("read");
    f.write_at(&fnv1a64(&meta).to_le_bytes(), 72).expect("write");
    drop(f);
    let bp = bad.to_str().expect("utf-8");
    let o = run_mapwise(&["bolt", "check", bp]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("meta page 0: field pageSize = 256"), "{t}");
    // The oracle's check rejects the file as well.
    let peer = crate::support::run_limited(
        Command::new(crate::support::bolt_oracle()).args(["check", bp, "--raw-only"]),
        std::time::Duration::from_secs(60),
    );
    assert!(!peer.status.success());
}

#[test]
fn directories_and_fifos_are_refused_not_waited_on() {
    let dir = tempdir();
    let fifo = dir.path().join("fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(st.success());
    for path in [dir.path().to_path_buf(), fifo] {
        let p = path.to_str().expect("utf-8");
        for cmd in ["check", "pages", "info", "dump"] {
            let o = run_mapwise(&["bolt", cmd, p]);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd} {p}: {t}");
            assert!(t.contains("not a regular file"), "{cmd} {p}: {t}");
        }
    }
}

#[test]
fn json_callers_get_json_errors() {
    let o = run_mapwise(&["bolt", "info", "/nonexistent/x.db", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json on stdout");
    assert!(v["error"].as_str().is_some_and(|e| e.contains("No such file")), "{v}");
}

#[test]
fn traverse_reaches_nested_buckets() {
    let db = testdata("small.db");
    let p = db.to_str().expect("utf-8");
    let o = run_mapwise(&["bolt", "traverse", p, "--bucket", "beta/inner", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let want =
        String::from_utf8(oracle(&["keys", p, "beta/inner"])).expect("utf-8").lines().count();
    assert_eq!(v["keys"].as_u64(), Some(want as u64));
    // A missing bucket is exit 1, as for `keys` and `get`.
    let o = run_mapwise(&["bolt", "traverse", p, "--bucket", "no-such"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("bucket not found"), "{}", text(&o));
}

/// `traverse --touch` counts and XORs what bbolt's cursor returns: a
/// sub-bucket's entry is a key with no value (bbolt `Cursor.Next` gives a
/// nil value), whether the sub-bucket is inline or has its own pages.
#[test]
fn traverse_counts_what_bbolts_cursor_returns() {
    for name in ["small", "overflow"] {
        let db = testdata(&format!("{name}.db"));
        let p = db.to_str().expect("utf-8");
        let buckets = run_mapwise(&["bolt", "buckets", p]);
        let buckets = String::from_utf8(buckets.stdout).expect("utf-8");
        let tally = |out: &[u8]| {
            let t = String::from_utf8_lossy(out);
            t.lines()
                .find_map(|l| l.split_once("keys=").map(|(_, r)| r.to_owned()))
                .unwrap_or_else(|| panic!("no traverse line in {t:?}"))
        };
        for b in buckets.lines() {
            let ours = run_mapwise(&["bolt", "traverse", p, "--bucket", b, "--touch"]);
            assert!(ours.status.success(), "{b}: {}", text(&ours));
            let go = oracle(&["traverse", p, "--bucket", b, "--touch"]);
            assert_eq!(tally(&ours.stdout), tally(&go), "{name} bucket {b}");
        }
    }
}

/// The user's report: `mapwise bolt check` in a loop while a writer
/// commits. It never reports a healthy file corrupt (exit 1): either the
/// read settles (OK, exit 0) or it says a writer kept committing (exit 2).
#[test]
fn check_while_a_writer_commits_never_reports_false_problems() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempdir();
    let path = dir.path().join("w3.db");
    let db = writer_db(&path, 8_000);
    let stop = AtomicBool::new(false);
    let ps = path.to_str().expect("utf-8");
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut round = 1;
            while !stop.load(Ordering::Relaxed) {
                rewrite(&db, 8_000, round);
                round += 1;
            }
        });
        for i in 0..8 {
            let cmd = ["check", "pages", "info"][i % 3];
            let o = run_mapwise(&["bolt", cmd, ps]);
            let code = o.status.code();
            assert!(
                code == Some(0)
                    || (code == Some(2)
                        && String::from_utf8_lossy(&o.stderr)
                            .contains("no read was of one snapshot")),
                "bolt {cmd} run {i} while a writer commits: {code:?}\n{}",
                text(&o)
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
    drop(db);
    let o = run_mapwise(&["bolt", "check", ps]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "OK\n", "{}", text(&o));
}
