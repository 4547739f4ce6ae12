//! A seek into an empty leaf moves on to the next key as bbolt's cursor
//! does, through `mapwise bolt traverse --from/--to` and the read API.
//! (The read API against the oracle on the corpus is
//! `native/tests/bolt_cursor.rs`.)

use mapwise_native::engine::bolt::{Db, Options};
use mapwise_testkit::unhex;

use crate::support::oracle;

/// A seek that lands in an empty leaf moves on to the next leaf's first
/// key, as bbolt's `Cursor.Seek` does (it calls `next`, which skips empty
/// pages). An empty leaf is legal (the oracle's check passes); the file
/// is a Go-written bench file with one leaf's count zeroed. The expected
/// range counts come from the oracle's `keys` of the damaged file: bbolt's
/// order, so a scan from `k` must yield exactly the listed keys `>= k`.
#[test]
fn a_seek_into_an_empty_leaf_moves_on_as_bbolt_does() {
    let dir = crate::support::tempdir();
    let base = dir.path().join("seq.db");
    let base_s = base.to_str().expect("utf-8 path");
    oracle(&[
        "bench",
        base_s,
        "--write-mode",
        "seq",
        "--read-mode",
        "seq",
        "--count",
        "5000",
        "--batch-size",
        "500",
        "--key-size",
        "8",
        "--value-size",
        "50",
        "--page-size",
        "1024",
        "--no-sync",
    ]);
    let listed = |path: &str| -> Vec<String> {
        String::from_utf8(oracle(&["keys", path, "bench"]))
            .expect("utf-8")
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let all = listed(base_s);
    // Leaves of `bench` (more than one item: the root bucket's leaf holds
    // one), from the oracle's page table.
    let pages = String::from_utf8(oracle(&["pages", base_s])).expect("utf-8");
    let leaves: Vec<u64> = pages
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && f[1] == "leaf" && f[2].parse::<u32>().is_ok_and(|n| n > 1))
                .then(|| f[0].parse().expect("page id"))
        })
        .collect();
    assert!(leaves.len() > 100, "a multi-leaf bucket: {} leaves", leaves.len());
    for leaf in [leaves[0], leaves[leaves.len() / 2]] {
        let path = dir.path().join(format!("empty-{leaf}.db"));
        let path_s = path.to_str().expect("utf-8 path");
        let mut bytes = std::fs::read(&base).expect("read");
        // The page header's count (u16 at byte 10 of the page).
        let at = usize::try_from(leaf * 1024 + 10).expect("offset");
        bytes[at..at + 2].copy_from_slice(&[0, 0]);
        std::fs::write(&path, &bytes).expect("write");
        oracle(&["check", path_s]);
        let kept = listed(path_s);
        let gone: Vec<&String> = all.iter().filter(|k| !kept.contains(k)).collect();
        assert!(!gone.is_empty(), "leaf {leaf} held keys");
        let count_from = |from: &str, to: Option<&str>| {
            kept.iter().filter(|k| k.as_str() >= from && to.is_none_or(|t| k.as_str() < t)).count()
        };
        let next_kept = &kept[count_from("", None) - count_from(gone[0], None)];
        let cases: Vec<(&str, Option<&str>)> = vec![
            (gone[0], None),
            (gone[gone.len() / 2], None),
            (gone[gone.len() - 1], None),
            (gone[0], Some(next_kept.as_str())),
            (gone[1], Some(all[all.len() - 1].as_str())),
        ];
        for (from, to) in cases {
            let mut args = vec!["bolt", "traverse", path_s, "--bucket", "bench", "--from", from];
            if let Some(t) = to {
                args.extend(["--to", t]);
            }
            args.push("--json");
            let out = crate::support::run_mapwise(&args);
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(
                v["keys"].as_u64(),
                Some(count_from(from, to) as u64),
                "leaf {leaf} emptied, {args:?}"
            );
        }
        // The read API's seek lands on the oracle's next key.
        let db = Db::open(&path, &Options::default()).expect("open");
        let tx = db.begin().expect("begin");
        let b = tx.bucket(b"bench").expect("lookup").expect("bucket");
        let mut c = b.cursor();
        let item = c.seek(&unhex(gone[0])).expect("seek").expect("an item");
        assert_eq!(item.key.as_ref(), unhex(next_kept).as_slice());
    }
}
