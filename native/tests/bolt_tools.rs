//! `Db::compact`, `Tx::check` and bucket statistics against Go bbolt:
//! a compacted file dumps exactly as its source in the oracle and passes
//! its check; our check rejects exactly the files the oracle's check
//! rejects; our statistics count the pages, buckets and keys the oracle's
//! walk counts.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::collections::HashMap;
use std::path::Path;

use mapwise_core::bolt::BoltFile;
use mapwise_native::engine::bolt::{Db, Options};

use crate::support::{tempdir, testdata};
use mapwise_testkit::bolt_model::oracle_check;
use mapwise_testkit::bolt_model::oracle_fast as oracle;

fn generate(dir: &Path, shape: &str, extra: &[&str]) -> std::path::PathBuf {
    let path = dir.join(format!("{shape}{}.db", extra.join("")));
    let p = path.to_str().expect("utf-8");
    let mut args = vec!["gen", p, "--shape", shape, "--seed", "5", "-q", "--force"];
    args.extend_from_slice(extra);
    oracle(&args);
    path
}

fn oracle_stats(path: &Path) -> HashMap<String, u64> {
    let out =
        String::from_utf8(oracle(&["check", path.to_str().expect("utf-8"), "-v"])).expect("utf-8");
    out.lines()
        .find_map(|l| l.strip_prefix("raw: stats: "))
        .expect("stats line")
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v)))
        .collect()
}

#[test]
fn compacted_files_dump_as_their_source_in_go() {
    let dir = tempdir();
    let mut files =
        vec![testdata("small.db"), testdata("etcd-small.db"), testdata("freelist-1k.db")];
    files.push(generate(dir.path(), "overflow", &[]));
    files.push(generate(dir.path(), "freelist", &[]));
    files.push(generate(dir.path(), "big", &["--size", "1MiB"]));
    for (i, src) in files.iter().enumerate() {
        let s = src.to_str().expect("utf-8");
        let db = Db::open(src, &Options::default()).expect("open source");
        for (j, max) in [0u64, 20_000].into_iter().enumerate() {
            let dst = dir.path().join(format!("compact-{i}-{j}.db"));
            let (from, to) = db
                .compact(
                    &dst,
                    &Options { page_size: db.page_size(), no_sync: true, ..Options::read_write() },
                    max,
                )
                .expect("compact");
            let d = dst.to_str().expect("utf-8");
            oracle_check(&dst);
            assert_eq!(
                String::from_utf8(oracle(&["dump", d])).expect("utf-8"),
                String::from_utf8(oracle(&["dump", s])).expect("utf-8"),
                "{s} compacted (tx max {max})"
            );
            // Fewer pages in use (the file itself grows in bbolt's
            // power-of-two steps, so its length may not shrink).
            let hwm = |p: &Path| {
                let bytes = std::fs::read(p).expect("read");
                BoltFile::open(bytes.as_slice()).expect("open").meta().hwm
            };
            if max == 0 {
                assert!(hwm(&dst) <= hwm(src), "{s}: compacted to more pages");
            }
            assert!(from > 0 && to > 0);
        }
    }
}

#[test]
fn statistics_count_what_the_oracle_walk_counts() {
    let dir = tempdir();
    let mut files: Vec<std::path::PathBuf> =
        ["small", "overflow", "freelist-1k", "nofreelistsync", "etcd-small"]
            .iter()
            .map(|n| testdata(&format!("{n}.db")))
            .collect();
    files.push(generate(dir.path(), "big", &["--size", "2MiB"]));
    for f in files {
        let db = Db::open(&f, &Options::default()).expect("open");
        let ours = db.begin().expect("tx").tree_stats().expect("stats");
        let go = oracle_stats(&f);
        let name = f.display();
        assert_eq!(ours.branch_page_n, go["branch_pages"], "{name}: branch pages");
        assert_eq!(ours.leaf_page_n, go["leaf_pages"], "{name}: leaf pages");
        assert_eq!(
            ours.branch_overflow_n + ours.leaf_overflow_n,
            go["overflow_pages"],
            "{name}: overflow pages"
        );
        assert_eq!(ours.bucket_n - 1, go["buckets"], "{name}: buckets");
        assert_eq!(ours.inline_bucket_n, go["inline_buckets"], "{name}: inline buckets");
        assert_eq!(ours.key_n - go["buckets"], go["keys"], "{name}: keys");
        assert_eq!(
            ours.branch_alloc + ours.leaf_alloc,
            (ours.branch_page_n + ours.branch_overflow_n + ours.leaf_page_n + ours.leaf_overflow_n)
                * u64::from(db.page_size())
        );
        assert!(ours.leaf_inuse <= ours.leaf_alloc && ours.branch_inuse <= ours.branch_alloc);
    }
}

#[test]
fn our_check_rejects_what_go_rejects() {
    let dir = tempdir();
    let ps = 4096usize;
    let (freelist, hwm, root) = {
        let bytes = std::fs::read(testdata("small.db")).expect("corpus");
        let f = BoltFile::open(bytes.as_slice()).expect("open");
        (f.meta().freelist as usize, f.meta().hwm, f.meta().root)
    };
    let patch = |tag: &str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = std::fs::read(testdata("small.db")).expect("corpus");
        f(&mut b);
        let p = dir.path().join(format!("{tag}.db"));
        std::fs::write(&p, &b).expect("write");
        p
    };
    let count =
        |b: &[u8]| u16::from_le_bytes([b[freelist * ps + 10], b[freelist * ps + 11]]) as usize;
    let cases = vec![
        ("intact", patch("intact", &|_| {})),
        // A free id listed twice ("already freed").
        (
            "double-free",
            patch("double", &|b| {
                let first = b[freelist * ps + 16..freelist * ps + 24].to_vec();
                b[freelist * ps + 24..freelist * ps + 32].copy_from_slice(&first);
            }),
        ),
        // The last free id dropped: a leak ("unreachable unfreed").
        (
            "leak",
            patch("leak", &|b| {
                let n = count(b) as u16 - 1;
                b[freelist * ps + 10..freelist * ps + 12].copy_from_slice(&n.to_le_bytes());
            }),
        ),
        // The root page listed as free ("reachable freed").
        (
            "reachable-free",
            patch("reachfree", &|b| {
                b[freelist * ps + 16..freelist * ps + 24].copy_from_slice(&root.to_le_bytes());
            }),
        ),
    ];
    let _ = hwm;
    for (name, p) in cases {
        let db = Db::open(&p, &Options::default()).expect("open");
        let ours = db.begin().expect("tx").check();
        let out = crate::support::run_limited(
            std::process::Command::new(mapwise_testkit::bolt_model::oracle_binary())
                .args(["check", p.to_str().expect("utf-8")]),
            std::time::Duration::from_secs(60),
        );
        let go_ok = out.status.success();
        assert_eq!(
            ours.is_empty(),
            go_ok,
            "{name}: ours {ours:?}, Go: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
