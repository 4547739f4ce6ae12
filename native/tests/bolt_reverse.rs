//! Files Go bbolt wrote, opened read-write by us and modified: every
//! shape the oracle generates (page sizes 1, 4 and 16 KiB, freelists in
//! both count encodings, no freelist at all, hashmap freelists, big
//! trees) and a real etcd 3.4 data file. After our commits the oracle's
//! `check` passes and its `dump` equals the model: the oracle's own dump
//! of the original file, with our changes applied.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::path::Path;

use mapwise_native::engine::bolt::{Db, Error, Options, WriteTx};

use crate::support::{tempdir, testdata};
use mapwise_testkit::bolt_model::oracle_agrees;
use mapwise_testkit::bolt_model::oracle_fast as oracle;
use mapwise_testkit::bolt_model::{self, Bucket, Entry};

fn sized(i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 13 + j * 7) as u8).collect()
}

/// A bucket handle at `path` inside `tx`.
fn at<'t>(
    tx: &'t mut WriteTx<'_>,
    path: &[Vec<u8>],
) -> mapwise_native::engine::bolt::BucketMut<'t> {
    tx.bucket_path(path).expect("bucket")
}

/// Three commits of changes to whatever `path` holds, mirrored in
/// `model`: new keys of every size in every bucket, every third value
/// deleted, sequences bumped; one top-level bucket dropped and a nested
/// chain created; values rewritten larger.
fn modify(path: &Path, opts: &Options, model: &mut Bucket) {
    let db = Db::open(path, opts).expect("open read-write");
    let ps = db.page_size() as usize;
    let sizes = [0, 1, 30, ps / 4, ps - 40, 3 * ps + 5];
    let buckets = model.bucket_paths();
    db.update(|tx| -> Result<(), Error> {
        for (n, bp) in buckets.iter().enumerate() {
            let bm = model.at_mut(bp).expect("model");
            let doomed: Vec<Vec<u8>> = bm
                .kv
                .iter()
                .filter(|(_, e)| matches!(e, Entry::Value(_)))
                .map(|(k, _)| k.clone())
                .step_by(3)
                .collect();
            let mut b = at(tx, bp);
            for k in &doomed {
                b.delete(k)?;
                bm.kv.remove(k);
            }
            for i in 0..12u32 {
                let k = format!("mapwise-{n}-{i:03}").into_bytes();
                let v = sized(i, sizes[i as usize % sizes.len()]);
                b.put(&k, &v)?;
                bm.kv.insert(k, Entry::Value(v));
            }
            bm.seq = b.next_sequence()?;
        }
        Ok(())
    })
    .expect("commit 1");
    db.update(|tx| -> Result<(), Error> {
        if let Some(last) = model.kv.keys().next_back().cloned() {
            tx.delete_bucket(&last)?;
            model.kv.remove(&last);
        }
        let mut outer = tx.create_bucket(b"mapwise-new")?;
        let mut inner = outer.create_bucket(b"inner")?;
        let mut m_inner = Bucket::default();
        for i in 0..200u32 {
            let k = format!("{i:05}").into_bytes();
            let v = sized(i, 50 + (i as usize % 7) * 100);
            inner.put(&k, &v)?;
            m_inner.kv.insert(k, Entry::Value(v));
        }
        m_inner.seq = 7;
        inner.set_sequence(7)?;
        model.kv.insert(
            b"mapwise-new".to_vec(),
            Entry::Bucket(Bucket {
                seq: 0,
                kv: [(b"inner".to_vec(), Entry::Bucket(m_inner))].into(),
            }),
        );
        Ok(())
    })
    .expect("commit 2");
    let buckets = model.bucket_paths();
    db.update(|tx| -> Result<(), Error> {
        for bp in &buckets {
            let bm = model.at_mut(bp).expect("model");
            let keys: Vec<Vec<u8>> = bm
                .kv
                .iter()
                .filter(|(_, e)| matches!(e, Entry::Value(_)))
                .map(|(k, _)| k.clone())
                .step_by(5)
                .collect();
            let mut b = at(tx, bp);
            for (i, k) in keys.iter().enumerate() {
                let v = sized(i as u32, ps / 2 + i);
                b.put(k, &v)?;
                bm.kv.insert(k.clone(), Entry::Value(v));
            }
        }
        Ok(())
    })
    .expect("commit 3");
    // Our own view agrees before Go's does.
    let tx = db.begin().expect("tx");
    assert!(tx.check().is_empty(), "our check: {:?}", tx.check());
    assert!(bolt_model::read(&tx.file()) == *model, "our read-back differs");
}

/// Generate `shape` with the oracle, modify it, judge it.
fn round_trip(dir: &Path, shape: &str, extra: &[&str], opts: &Options) -> String {
    let path = dir.join(format!("{shape}{}.db", extra.join("")));
    let p = path.to_str().expect("utf-8");
    let mut args = vec!["gen", p, "--shape", shape, "--seed", "11", "-q", "--force"];
    args.extend_from_slice(extra);
    oracle(&args);
    let mut model =
        bolt_model::parse_dump(&String::from_utf8(oracle(&["dump", p])).expect("utf-8"));
    modify(&path, opts, &mut model);
    oracle_agrees(&path, &model);
    String::from_utf8(oracle(&["info", p])).expect("utf-8")
}

#[test]
fn files_go_bbolt_wrote_stay_valid_after_our_commits() {
    let dir = tempdir();
    let rw = Options::read_write();
    for (shape, extra) in [
        ("small", &[][..]),
        ("small", &["--page-size", "1024"][..]),
        ("overflow", &[][..]),
        ("overflow", &["--page-size", "16384"][..]),
        ("freelist", &[][..]),
        ("freelist", &["--page-size", "1024"][..]),
        ("freelist", &["--freelist-type", "hashmap"][..]),
        ("big", &["--size", "2MiB"][..]),
    ] {
        let info = round_trip(dir.path(), shape, extra, &rw);
        assert!(info.contains("count-in-header"), "{shape}: {info}");
    }
}

#[test]
fn no_freelist_files_keep_or_gain_a_freelist() {
    let dir = tempdir();
    let keep = Options { no_freelist_sync: true, ..Options::read_write() };
    let info = round_trip(dir.path(), "nofreelistsync", &[], &keep);
    assert!(info.contains("not synced") || info.contains("none"), "{info}");
    let info =
        round_trip(dir.path(), "nofreelistsync", &["--page-size", "16384"], &Options::read_write());
    assert!(info.contains("count-in-header"), "{info}");
}

#[test]
fn a_huge_freelist_is_written_back_in_the_long_form() {
    let dir = tempdir();
    let info = round_trip(dir.path(), "freelist-huge", &[], &Options::read_write());
    assert!(info.contains("count-in-first-slot"), "{info}");
}

#[test]
fn an_etcd_data_file_modified_by_us_reads_in_go() {
    let dir = tempdir();
    let path = dir.path().join("etcd.db");
    std::fs::copy(testdata("etcd-small.db"), &path).expect("copy");
    let p = path.to_str().expect("utf-8");
    let mut model =
        bolt_model::parse_dump(&String::from_utf8(oracle(&["dump", p])).expect("utf-8"));
    // As etcd runs it: no freelist on disk.
    let opts = Options { no_freelist_sync: true, ..Options::read_write() };
    let db = Db::open(&path, &opts).expect("open");
    db.update(|tx| -> Result<(), Error> {
        // etcd's "key" bucket: revision → mvccpb.KeyValue. Add entries
        // the way etcd appends revisions (ascending 17-byte keys).
        let mut b = tx.bucket(b"key")?.expect("etcd's key bucket");
        let bm = match model.kv.get_mut(b"key".as_slice()) {
            Some(Entry::Bucket(bm)) => bm,
            _ => panic!("model lacks the key bucket"),
        };
        for rev in 10_000u64..10_200 {
            let mut k = rev.to_be_bytes().to_vec();
            k.push(b'_');
            k.extend_from_slice(&0u64.to_be_bytes());
            let v = sized(rev as u32, 120);
            b.put(&k, &v)?;
            bm.kv.insert(k, Entry::Value(v));
        }
        Ok(())
    })
    .expect("commit");
    drop(db);
    oracle_agrees(&path, &model);
    let info = String::from_utf8(oracle(&["info", p])).expect("utf-8");
    assert!(info.contains("not synced") || info.contains("none"), "{info}");
}
