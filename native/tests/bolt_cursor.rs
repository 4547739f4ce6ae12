//! The read API (Db, Tx, Bucket, Cursor) moves as bbolt's cursor does:
//! forward order equals `peers/bolt/peer keys`, backward is its reverse,
//! `seek` lands on the first key `>=` the probe, `get` returns
//! `peers/bolt/peer get`.

use std::collections::BTreeMap;

use mapwise_native::engine::bolt::{Db, Options};
use mapwise_testkit::unhex;

use crate::support::{oracle, testdata};

/// Bucket paths (hex components) listed in a corpus dump.
fn buckets(name: &str) -> Vec<Vec<String>> {
    let dump = std::fs::read_to_string(testdata(&format!("{name}.dump.txt"))).expect("dump");
    dump.lines()
        .filter_map(|l| l.strip_prefix("bucket "))
        .map(|l| l.split(' ').next().expect("path").split('/').map(str::to_owned).collect())
        .collect()
}

#[test]
fn cursors_move_as_bbolt_cursors_do() {
    for name in ["small", "overflow", "freelist-1k", "etcd-small", "nofreelistsync"] {
        let path = testdata(&format!("{name}.db"));
        let p = path.to_str().expect("utf-8");
        let db = Db::open(&path, &Options::default()).expect("open");
        let tx = db.begin().expect("tx");
        for bucket in buckets(name) {
            let hex_path = bucket.join("/");
            let want: Vec<Vec<u8>> =
                String::from_utf8(oracle(&["keys", p, &hex_path, "--hex-path"]))
                    .expect("utf-8")
                    .lines()
                    .map(unhex)
                    .collect();
            let names: Vec<Vec<u8>> = bucket.iter().map(|c| unhex(c)).collect();
            let b = tx.bucket_path(&names).expect("bucket");
            let mut c = b.cursor();
            let mut fwd = Vec::new();
            let mut it = c.first().expect("first");
            while let Some(i) = it {
                fwd.push(i.key.to_vec());
                it = c.next().expect("next");
            }
            assert_eq!(fwd, want, "{name} {hex_path}: forward");
            let mut back = Vec::new();
            let mut it = c.last().expect("last");
            while let Some(i) = it {
                back.push(i.key.to_vec());
                it = c.prev().expect("prev");
            }
            back.reverse();
            assert_eq!(back, want, "{name} {hex_path}: backward");
            // Seek to each key, to a key just below it, and past the end.
            for (i, k) in want.iter().enumerate().step_by(7) {
                assert_eq!(c.seek(k).expect("seek").map(|x| x.key.to_vec()).as_ref(), Some(k));
                let mut below = k.clone();
                if let Some(last) = below.last_mut()
                    && *last > 0
                {
                    *last -= 1;
                    below.push(0xff);
                    let expect = want.iter().find(|w| **w >= below);
                    assert_eq!(
                        c.seek(&below).expect("seek").map(|x| x.key.to_vec()).as_ref(),
                        expect,
                        "seek below key {i}"
                    );
                }
            }
            let mut past = want.last().cloned().unwrap_or_default();
            past.push(0);
            assert!(c.seek(&past).expect("seek").is_none() || want.is_empty());
        }
    }
}

#[test]
fn get_returns_what_bbolt_returns() {
    let path = testdata("small.db");
    let p = path.to_str().expect("utf-8");
    let db = Db::open(&path, &Options::default()).expect("open");
    let dump = std::fs::read_to_string(testdata("small.dump.txt")).expect("dump");
    let mut kv: BTreeMap<(String, String), ()> = BTreeMap::new();
    for l in dump.lines().filter_map(|l| l.strip_prefix("kv ")) {
        let mut f = l.split(' ');
        kv.insert((f.next().expect("path").into(), f.next().expect("key").into()), ());
    }
    db.view(|tx| -> Result<(), mapwise_native::engine::bolt::Error> {
        for (bucket, key) in kv.keys() {
            let want =
                String::from_utf8(oracle(&["get", p, bucket, key, "--hex-path"])).expect("utf-8");
            let names: Vec<Vec<u8>> = bucket.split('/').map(unhex).collect();
            let got = tx.bucket_path(&names)?.get(&unhex(key))?.expect("present");
            assert_eq!(
                want.trim_end(),
                got.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                "{bucket} {key}"
            );
        }
        // Absent keys and sub-bucket names give None, as bbolt's Get.
        let alpha = tx.bucket(b"alpha")?.expect("alpha");
        assert_eq!(alpha.get(b"no such key")?, None);
        let beta = tx.bucket(b"beta")?.expect("beta");
        assert_eq!(beta.get(b"inner")?, None);
        assert!(tx.bucket(b"no such bucket")?.is_none());
        Ok(())
    })
    .expect("view");
}
