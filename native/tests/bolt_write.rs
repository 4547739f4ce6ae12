//! The write side against Go bbolt: files our engine writes pass the
//! oracle's `check` (bbolt 1.3.6 `Tx.Check` plus the raw structural walk)
//! and the oracle's `dump` equals the model of what was written.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::path::Path;

use mapwise_native::engine::bolt::{Db, Error};
use mapwise_testkit::bolt_model::oracle_fast as oracle;
use mapwise_testkit::bolt_model::{self, Bucket, Entry, oracle_agrees, oracle_check, our_dump, rw};

use crate::support::tempdir;

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:06}").into_bytes()
}

fn value(i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 7 + j) as u8).collect()
}

#[test]
fn one_bucket_put_get_delete_commit_and_rollback() {
    let dir = tempdir();
    let path = dir.path().join("one.db");
    let db = Db::open(&path, &rw(4096)).expect("create");
    let mut model = Bucket::default();
    let mut b = Bucket::default();
    db.update(|tx| -> Result<(), Error> {
        let mut bk = tx.create_bucket(b"widgets")?;
        for i in 0..2000u32 {
            // Mostly small values; every 97th spans pages (overflow).
            let len = if i.is_multiple_of(97) { 9000 } else { (i % 50) as usize };
            bk.put(&key(i), &value(i, len))?;
            b.kv.insert(key(i), Entry::Value(value(i, len)));
        }
        // The transaction reads its own writes.
        assert_eq!(bk.get(&key(97))?, Some(&value(97, 9000)[..]));
        assert_eq!(bk.get(b"absent")?, None);
        Ok(())
    })
    .expect("first tx");
    model.kv.insert(b"widgets".to_vec(), Entry::Bucket(b.clone()));
    assert_eq!(our_dump(&db), bolt_model::dump(&model));

    // A rolled-back transaction leaves nothing behind.
    let mut tx = db.begin_rw().expect("tx");
    {
        let mut bk = tx.bucket(b"widgets").expect("bucket").expect("exists");
        for i in 0..1000u32 {
            bk.delete(&key(i)).expect("delete");
        }
        assert_eq!(bk.get(&key(5)).expect("get"), None);
    }
    tx.create_bucket(b"other").expect("create");
    tx.rollback();
    assert_eq!(our_dump(&db), bolt_model::dump(&model));

    db.update(|tx| -> Result<(), Error> {
        let mut bk = tx.bucket(b"widgets")?.expect("exists");
        for i in (0..2000u32).step_by(3) {
            bk.delete(&key(i))?;
            b.kv.remove(&key(i));
        }
        for i in 2000..2100u32 {
            bk.put(&key(i), &value(i, 200))?;
            b.kv.insert(key(i), Entry::Value(value(i, 200)));
        }
        Ok(())
    })
    .expect("second tx");
    model.kv.insert(b"widgets".to_vec(), Entry::Bucket(b.clone()));
    assert_eq!(our_dump(&db), bolt_model::dump(&model));
    assert!(db.begin().expect("tx").check().is_empty());
    drop(db);
    oracle_agrees(&path, &model);
}

/// `raw: stats:` fields of `peers/bolt/peer check -v` (the peer's own walk).
fn oracle_stats(path: &Path) -> std::collections::HashMap<String, String> {
    let p = path.to_str().expect("utf-8");
    let out = String::from_utf8(oracle(&["check", p, "-v"])).expect("utf-8");
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("raw: stats: "))
        .unwrap_or_else(|| panic!("no stats line:\n{out}"));
    line.split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn nested_buckets_sequences_and_recursive_delete() {
    let dir = tempdir();
    let path = dir.path().join("nested.db");
    let db = Db::open(&path, &rw(4096)).expect("create");
    let mut root = Bucket::default();
    db.update(|tx| -> Result<(), Error> {
        let mut a = tx.create_bucket(b"a")?;
        a.put(b"k", b"v")?;
        let mut b = a.create_bucket(b"b")?;
        b.set_sequence(41)?;
        assert_eq!(b.next_sequence()?, 42);
        let mut c = b.create_bucket(b"c")?;
        let mut d = c.create_bucket(b"d")?;
        for i in 0..300u32 {
            d.put(&key(i), &value(i, 30))?;
        }
        Ok(())
    })
    .expect("tx1");
    let mut d = Bucket::default();
    for i in 0..300u32 {
        d.kv.insert(key(i), Entry::Value(value(i, 30)));
    }
    let c = Bucket { seq: 0, kv: [(b"d".to_vec(), Entry::Bucket(d))].into() };
    let b = Bucket { seq: 42, kv: [(b"c".to_vec(), Entry::Bucket(c))].into() };
    let a = Bucket {
        seq: 0,
        kv: [(b"b".to_vec(), Entry::Bucket(b)), (b"k".to_vec(), Entry::Value(b"v".to_vec()))]
            .into(),
    };
    root.kv.insert(b"a".to_vec(), Entry::Bucket(a));
    assert_eq!(our_dump(&db), bolt_model::dump(&root));

    // Errors as bbolt names them.
    db.update(|tx| -> Result<(), Error> {
        assert!(matches!(tx.create_bucket(b"a"), Err(Error::BucketExists)));
        assert!(matches!(tx.create_bucket(b""), Err(Error::BucketNameRequired)));
        assert!(matches!(tx.delete_bucket(b"zz"), Err(Error::BucketNotFound)));
        let mut a = tx.bucket(b"a")?.expect("a");
        assert!(matches!(a.put(b"", b"x"), Err(Error::KeyRequired)));
        assert!(matches!(a.put(&vec![1u8; 32769], b"x"), Err(Error::KeyTooLarge(32769))));
        assert!(a.put(&vec![1u8; 32768], b"max key").is_ok());
        a.delete(&vec![1u8; 32768])?;
        assert!(matches!(a.put(b"b", b"x"), Err(Error::IncompatibleValue)));
        assert!(matches!(a.delete(b"b"), Err(Error::IncompatibleValue)));
        assert!(matches!(a.create_bucket(b"k"), Err(Error::IncompatibleValue)));
        assert!(matches!(a.bucket(b"k"), Err(Error::IncompatibleValue)));
        assert!(matches!(a.delete_bucket(b"k"), Err(Error::IncompatibleValue)));
        assert_eq!(a.get(b"b")?, None, "a bucket has no value");
        Ok(())
    })
    .expect("errors");

    // Drop the middle of the chain: c and d go with b.
    db.update(|tx| -> Result<(), Error> { tx.bucket(b"a")?.expect("a").delete_bucket(b"b") })
        .expect("delete");
    if let Some(Entry::Bucket(a)) = root.kv.get_mut(b"a".as_slice()) {
        a.kv.remove(b"b".as_slice());
    }
    assert_eq!(our_dump(&db), bolt_model::dump(&root));
    drop(db);
    oracle_agrees(&path, &root);
}

#[test]
fn buckets_are_inline_exactly_when_bbolt_inlines_them() {
    // 16 + Σ(16 + key + value) ≤ page size / 4 (1024 with 4 KiB pages):
    // one entry with a 1-byte key and a 991-byte value is exactly 1024
    // bytes (inline); one byte more is not.
    let dir = tempdir();
    let path = dir.path().join("inline.db");
    let db = Db::open(&path, &rw(4096)).expect("create");
    db.update(|tx| -> Result<(), Error> {
        tx.create_bucket(b"at-limit")?.put(b"k", &[7u8; 991])?;
        tx.create_bucket(b"over-limit")?.put(b"k", &[7u8; 992])?;
        tx.create_bucket(b"empty")?;
        let mut p = tx.create_bucket(b"parent")?;
        p.create_bucket(b"child")?.put(b"x", b"y")?;
        Ok(())
    })
    .expect("tx");
    {
        let tx = db.begin().expect("tx");
        let inline = |name: &[u8]| tx.bucket(name).unwrap().unwrap().root_pgid().is_none();
        assert!(inline(b"at-limit"));
        assert!(!inline(b"over-limit"));
        assert!(inline(b"empty"));
        assert!(!inline(b"parent"), "a bucket with a sub-bucket is never inline");
        let child = tx.bucket_path(&[&b"parent"[..], b"child"]).unwrap();
        assert!(child.root_pgid().is_none());
    }
    // Shrink over-limit below the limit: it becomes inline and its page
    // is freed; grow at-limit: it gets a page.
    db.update(|tx| -> Result<(), Error> {
        tx.bucket(b"over-limit")?.expect("b").put(b"k", b"small")?;
        tx.bucket(b"at-limit")?.expect("b").put(b"k2", b"more")?;
        Ok(())
    })
    .expect("tx2");
    {
        let tx = db.begin().expect("tx");
        assert!(tx.bucket(b"over-limit").unwrap().unwrap().root_pgid().is_none());
        assert!(tx.bucket(b"at-limit").unwrap().unwrap().root_pgid().is_some());
    }
    drop(db);
    oracle_check(&path);
    let stats = oracle_stats(&path);
    // over-limit, empty, child (+ the root bucket is not counted).
    assert_eq!(stats["inline_buckets"], "3", "{stats:?}");
}

#[test]
fn write_cursors_see_uncommitted_state_and_delete_without_skipping() {
    let dir = tempdir();
    let path = dir.path().join("cursor.db");
    let db = Db::open(&path, &rw(1024)).expect("create");
    db.update(|tx| -> Result<(), Error> {
        let mut b = tx.create_bucket(b"b")?;
        for i in 0..500u32 {
            b.put(&key(i), &value(i, 40))?;
        }
        Ok(())
    })
    .expect("fill");
    db.update(|tx| -> Result<(), Error> {
        let mut b = tx.bucket(b"b")?.expect("b");
        // Uncommitted: delete a range, add some keys.
        for i in 100..200u32 {
            b.delete(&key(i))?;
        }
        b.put(b"key-000150x", b"new")?;
        let mut want: Vec<Vec<u8>> =
            (0..500u32).filter(|i| !(100..200).contains(i)).map(key).collect();
        want.push(b"key-000150x".to_vec());
        want.sort();
        let mut c = b.cursor();
        let mut got = Vec::new();
        let mut it = c.first()?;
        while let Some(i) = it {
            got.push(i.key.to_vec());
            it = c.next()?;
        }
        assert_eq!(got, want, "forward");
        let mut back = Vec::new();
        let mut it = c.last()?;
        while let Some(i) = it {
            back.push(i.key.to_vec());
            it = c.prev()?;
        }
        back.reverse();
        assert_eq!(back, want, "backward");
        assert_eq!(c.seek(b"key-000100")?.map(|i| i.key.to_vec()), Some(b"key-000150x".to_vec()));
        // Delete every other key through a cursor.
        let mut cm = b.cursor_mut();
        let mut n = 0usize;
        let mut it = cm.first()?.is_some();
        while it {
            if n.is_multiple_of(2) {
                cm.delete()?;
            }
            n += 1;
            it = cm.next()?.is_some();
        }
        assert_eq!(n, want.len(), "the cursor visits every key once");
        Ok(())
    })
    .expect("tx");
    drop(db);
    oracle_check(&path);
}

/// A database in memory (`Db::open_in_memory`, on an anonymous file) is
/// written exactly as a file is: the same commits give the same pages,
/// byte for byte, and so the same high-water mark; and the file's copy
/// passes Go bbolt's check.
#[test]
fn in_memory_database_is_written_as_a_file_is() {
    let dir = tempdir();
    let path = dir.path().join("file.db");
    let file = Db::open(&path, &rw(4096)).expect("create");
    let mem = Db::open_in_memory("test", &rw(4096)).expect("in memory");
    assert!(mem.path().to_string_lossy().starts_with("memfd:"));
    for db in [&file, &mem] {
        for round in 0..5u32 {
            db.update(|tx| -> Result<(), Error> {
                let mut b = tx.create_bucket_if_not_exists(b"key")?;
                b.set_fill_percent(0.9);
                for i in round * 3000..(round + 1) * 3000 {
                    let len = if i.is_multiple_of(501) { 6000 } else { (i % 300) as usize };
                    b.put(&key(i), &value(i, len))?;
                }
                if round == 3 {
                    for i in (0..6000u32).step_by(3) {
                        b.delete(&key(i))?;
                    }
                }
                Ok(())
            })
            .expect("commit");
        }
    }
    let (fs, ms) = (file.begin().expect("tx").size(), mem.begin().expect("tx").size());
    assert_eq!(fs, ms, "high-water marks");
    let len = usize::try_from(fs).expect("size");
    assert!(file.mapping().bytes()[..len] == mem.mapping().bytes()[..len], "the pages differ");
    drop(file);
    oracle_check(&path);
}
