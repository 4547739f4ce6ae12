//! How `mapwise bolt` behaves for a user in an incident: quiet reads that
//! leave the page cache alone, warnings for meta pages readers skip, clear
//! refusals of files that are not regular files, JSON errors for scripts.

use std::os::unix::fs::FileExt;
use std::process::Command;

use mapwise_core::bolt::fnv1a64;

use crate::support::{oracle, peers, run_mapwise, tempdir, testdata};

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn copy(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::copy(testdata(name), &p).expect("copy");
    std::fs::File::open(&p)
        .and_then(|f| f.sync_all())
        .expect("fsync");
    p
}

/// Resident pages of `path` as vmtouch counts them.
fn vmtouch_resident(path: &std::path::Path) -> u64 {
    peers::ensure("vmtouch", "vmtouch");
    let out = Command::new("vmtouch").arg(path).output().expect("vmtouch");
    let s = String::from_utf8_lossy(&out.stdout);
    let line = s
        .lines()
        .find(|l| l.contains("Resident Pages:"))
        .expect("vmtouch line");
    line.split_whitespace()
        .nth(2)
        .and_then(|c| c.split('/').next())
        .and_then(|n| n.parse().ok())
        .expect("count")
}

#[test]
fn pages_check_and_info_leave_the_page_cache_alone() {
    let dir = tempdir();
    let p = copy(dir.path(), "overflow.db");
    let ps = p.to_str().expect("utf-8");
    Command::new("vmtouch")
        .args(["-e", ps])
        .output()
        .expect("vmtouch -e");
    assert_eq!(vmtouch_resident(&p), 0);
    for cmd in ["pages", "check", "info"] {
        let o = run_mapwise(&["bolt", cmd, ps]);
        assert!(o.status.success(), "{cmd}: {}", text(&o));
        assert_eq!(
            vmtouch_resident(&p),
            0,
            "{cmd} changed the residency of the file"
        );
    }
    // And they still say what Go bbolt says.
    assert_eq!(
        run_mapwise(&["bolt", "pages", ps]).stdout,
        oracle(&["pages", ps])
    );
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
    assert!(
        t.contains("warning: meta page 0 is invalid (field checksum"),
        "{t}"
    );
    assert!(t.contains("readers use meta page 1 (txid 3)"), "{t}");
    // Meta 0 with a checksummed, absurd page size: bbolt (which checks only
    // magic, version and checksum) would use it; we must not call it OK.
    let bad = copy(dir.path(), "small.db");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&bad)
        .expect("open");
    f.write_at(&5000u32.to_le_bytes(), 16 + 8).expect("write");
    let mut meta = [0u8; 56];
    f.read_exact_at(&mut meta, 16).expect("read");
    f.write_at(&fnv1a64(&meta).to_le_bytes(), 72)
        .expect("write");
    drop(f);
    let bp = bad.to_str().expect("utf-8");
    let o = run_mapwise(&["bolt", "check", bp]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("meta page 0: field pageSize = 5000"), "{t}");
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
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("No such file")),
        "{v}"
    );
}

#[test]
fn traverse_reaches_nested_buckets() {
    let db = testdata("small.db");
    let p = db.to_str().expect("utf-8");
    let o = run_mapwise(&["bolt", "traverse", p, "--bucket", "beta/inner", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let want = String::from_utf8(oracle(&["keys", p, "beta/inner"]))
        .expect("utf-8")
        .lines()
        .count();
    assert_eq!(v["keys"].as_u64(), Some(want as u64));
}
