//! `mapwise bolt dump` and `pages` print what Go bbolt reads from the same
//! files: the corpus (made by bbolt 1.3.6 and etcd 3.4) and files the
//! oracle generates fresh with several shapes, seeds and page sizes.

use crate::support::{assert_same_text, oracle, run_mapwise, tempdir, testdata};

const CORPUS: &[&str] =
    &["small", "overflow", "freelist", "freelist-1k", "nofreelistsync", "etcd-small"];

/// `mapwise bolt pages P` prints the oracle's `pages` table; returns
/// ours' output.
fn pages_as_go(p: &str) -> std::process::Output {
    let ours = run_mapwise(&["bolt", "pages", p]);
    assert_same_text(&format!("pages {p}"), &ours.stdout, &oracle(&["pages", p]));
    ours
}

/// [`pages_as_go`], and ours succeeds.
fn pages_succeed_as_go(p: &str) {
    let ours = pages_as_go(p);
    assert!(ours.status.success(), "pages {p}: {}", String::from_utf8_lossy(&ours.stderr));
}

fn compare(path: &std::path::Path, want_dump: &[u8]) {
    let p = path.to_str().expect("utf-8 path");
    let out = run_mapwise(&["bolt", "dump", p]);
    assert!(out.status.success(), "dump {p}: {}", String::from_utf8_lossy(&out.stderr));
    assert_same_text(&format!("dump {p}"), &out.stdout, want_dump);
    pages_succeed_as_go(p);
    let check = run_mapwise(&["bolt", "check", p]);
    assert!(check.status.success(), "check {p}: {}", String::from_utf8_lossy(&check.stdout));
}

#[test]
fn corpus_reads_as_go_bbolt_reads_it() {
    for name in CORPUS {
        let db = testdata(&format!("{name}.db"));
        let want = std::fs::read(testdata(&format!("{name}.dump.txt"))).expect("dump");
        compare(&db, &want);
    }
}

/// A truncated file's page table is the peer's too: a page whose 16-byte
/// header is in the file is listed (a partial last page included), the
/// first one whose header is not is `beyond-eof`, and without a stored
/// freelist pages the damaged tree cannot place, or whose run the cut
/// ends, are `free`.
#[test]
fn truncated_files_list_their_pages_as_go_bbolt_lists_them() {
    let dir = tempdir();
    for name in CORPUS {
        let bytes = std::fs::read(testdata(&format!("{name}.db"))).expect("read");
        let ps = if *name == "freelist-1k" { 1024 } else { 4096 };
        let mut cuts =
            vec![100, ps + 16, ps + 904, 3 * ps + 12, bytes.len() / 2 + 100, bytes.len() - 1];
        cuts.retain(|&n| n < bytes.len());
        for n in cuts {
            let path = dir.path().join(format!("{name}-{n}.db"));
            std::fs::write(&path, &bytes[..n]).expect("write");
            let p = path.to_str().expect("utf-8 path");
            pages_succeed_as_go(p);
            if n < ps {
                // bbolt's `page` reads a page whole: a file shorter than
                // one page has no page 0 to print.
                let page = run_mapwise(&["bolt", "page", p, "0"]);
                let t = String::from_utf8_lossy(&page.stdout);
                assert!(!t.contains("Page ID"), "page 0 of {n} bytes: {t}");
            }
        }
    }
}

/// Without a stored freelist, a page whose header names another id is
/// never reached (a reader rejects it), so the peer's table lists it
/// free; with one, by its header.
#[test]
fn a_page_naming_another_id_is_listed_as_go_bbolt_lists_it() {
    let dir = tempdir();
    for name in ["nofreelistsync", "etcd-small", "small"] {
        let bytes = std::fs::read(testdata(&format!("{name}.db"))).expect("read");
        let pages = bytes.len() / 4096;
        for pgid in [3, pages / 2, pages - 2] {
            let mut b = bytes.clone();
            b[pgid * 4096] ^= 0x40;
            let path = dir.path().join(format!("{name}-{pgid}.db"));
            std::fs::write(&path, &b).expect("write");
            let p = path.to_str().expect("utf-8 path");
            pages_as_go(p);
        }
    }
}

#[test]
fn freshly_generated_files_read_as_go_bbolt_reads_them() {
    let dir = tempdir();
    let cases: &[(&str, &str, &[&str])] = &[
        ("small", "2", &[]),
        ("small", "3", &["--page-size", "8192"]),
        ("overflow", "2", &[]),
        ("overflow", "5", &["--page-size", "16384"]),
        ("freelist", "4", &[]),
        ("freelist", "6", &["--page-size", "1024"]),
        ("freelist", "7", &["--freelist-type", "hashmap"]),
        ("nofreelistsync", "3", &[]),
        ("big", "3", &["--size", "8MiB"]),
        ("big", "4", &["--size", "4MiB", "--keys", "random", "--fill", "0.9"]),
        // More than 0xFFFF free ids: count 0xFFFF in the header, the real
        // count in the first slot.
        ("freelist-huge", "3", &[]),
    ];
    for (shape, seed, extra) in cases {
        let path = dir.path().join(format!("{shape}-{seed}.db"));
        let p = path.to_str().expect("utf-8");
        let mut args = vec!["gen", p, "--shape", shape, "--seed", seed, "-q"];
        args.extend_from_slice(extra);
        oracle(&args);
        compare(&path, &oracle(&["dump", p]));
    }
}

#[test]
fn dump_json_lines_carry_the_same_records() {
    let db = testdata("small.db");
    let out = run_mapwise(&["bolt", "dump", db.to_str().expect("utf-8"), "--json"]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(testdata("small.dump.txt")).expect("dump");
    let json = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(json.lines().count(), text.lines().count());
    for (j, t) in json.lines().zip(text.lines()) {
        let v: serde_json::Value = serde_json::from_str(j).expect("json line");
        let path = v["path"]
            .as_array()
            .expect("path")
            .iter()
            .map(|p| p.as_str().expect("hex"))
            .collect::<Vec<_>>()
            .join("/");
        let rebuilt = match v["type"].as_str() {
            Some("bucket") => format!("bucket {path} seq={}", v["sequence"]),
            Some("kv") => {
                let value = v["value"].as_str().expect("value");
                format!(
                    "kv {path} {} {}",
                    v["key"].as_str().expect("key"),
                    if value.is_empty() { "-" } else { value }
                )
            }
            other => panic!("unexpected record type {other:?}"),
        };
        assert_eq!(rebuilt, t);
    }
}
