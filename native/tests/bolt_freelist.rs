//! Free-page management and growth, judged by Go bbolt: pages freed while
//! a reader may still see them stay pending, the freelist page is written
//! in both count encodings or not at all (`no_freelist_sync`, rebuilt at
//! open), and the file and mapping grow in bbolt's steps.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use mapwise_core::bolt::{BoltFile, CountEncoding, FreelistInfo, NO_FREELIST, freelist_info};
use mapwise_native::engine::bolt::{Db, Error, Options};

use crate::support::tempdir;
use mapwise_testkit::bolt_model::oracle_fast as oracle;
use mapwise_testkit::bolt_model::{self, Bucket, Entry};
use mapwise_testkit::bolt_model::{oracle_agrees, oracle_check, our_dump, rw};

fn fill(db: &Db, bucket: &[u8], from: u32, to: u32, len: usize) {
    db.update(|tx| -> Result<(), Error> {
        let mut b = tx.create_bucket_if_not_exists(bucket)?;
        for i in from..to {
            b.put(format!("{i:08}").as_bytes(), &vec![i as u8; len])?;
        }
        Ok(())
    })
    .expect("fill");
}

fn meta_freelist(path: &std::path::Path) -> FreelistInfo {
    let bytes = std::fs::read(path).expect("read");
    let f = BoltFile::open(bytes.as_slice()).expect("open");
    freelist_info(&f)
}

#[test]
fn pages_freed_under_a_reader_stay_pending_until_it_ends() {
    let dir = tempdir();
    let path = dir.path().join("pending.db");
    let db = Db::open(&path, &rw(4096)).expect("create");
    fill(&db, b"b", 0, 400, 100);
    let before = our_dump(&db);
    let reader = db.begin().expect("reader");
    // Rewrite everything twice while the reader is open.
    fill(&db, b"b", 0, 400, 120);
    fill(&db, b"b", 0, 400, 140);
    let s = db.stats();
    assert!(s.pending_page_n > 0, "{s:?}");
    assert_eq!(s.open_tx_n, 1);
    // The reader still sees its snapshot, byte for byte.
    let mut seen = String::new();
    mapwise_core::bolt::dump(&reader.file(), &mut seen).expect("dump");
    assert_eq!(seen, before);
    assert!(reader.check().is_empty());
    let pending_with_reader = db.stats().pending_page_n;
    drop(reader);
    // The next writer releases what only the old reader could see.
    fill(&db, b"b", 0, 1, 140);
    let s = db.stats();
    assert!(s.pending_page_n < pending_with_reader, "{s:?}");
    assert_eq!(s.open_tx_n, 0);
    drop(db);
    oracle_check(&path);
}

#[test]
fn no_freelist_sync_files_rebuild_the_freelist_at_open() {
    let dir = tempdir();
    let path = dir.path().join("nfs.db");
    let opts = Options { no_freelist_sync: true, ..rw(4096) };
    let mut model = Bucket::default();
    {
        let db = Db::open(&path, &opts).expect("create");
        fill(&db, b"a", 0, 500, 64);
        fill(&db, b"b", 0, 300, 64);
        db.update(|tx| tx.delete_bucket(b"a")).expect("drop a");
    }
    let mut b = Bucket::default();
    for i in 0..300u32 {
        b.kv.insert(format!("{i:08}").into_bytes(), Entry::Value(vec![i as u8; 64]));
    }
    model.kv.insert(b"b".to_vec(), Entry::Bucket(b.clone()));
    assert!(matches!(meta_freelist(&path), FreelistInfo::NotStored));
    oracle_agrees(&path, &model);
    // Reopened with no_freelist_sync: the free pages come from a scan and
    // are reused (the file does not grow for a rewrite of the same size).
    {
        let db = Db::open(&path, &opts).expect("reopen");
        let free = db.stats().free_page_n;
        assert!(free > 0, "the dropped bucket's pages are free");
        let len = std::fs::metadata(&path).expect("stat").len();
        fill(&db, b"b", 0, 300, 64);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), len);
    }
    assert!(matches!(meta_freelist(&path), FreelistInfo::NotStored));
    oracle_agrees(&path, &model);
    // Reopened without it: bbolt commits an empty transaction that
    // writes a real freelist; the content is unchanged.
    {
        let db = Db::open(&path, &rw(4096)).expect("reopen synced");
        assert_eq!(our_dump(&db), bolt_model::dump(&model));
    }
    assert!(matches!(
        meta_freelist(&path),
        FreelistInfo::Stored { encoding: CountEncoding::Header, .. }
    ));
    oracle_agrees(&path, &model);
    let info = String::from_utf8(oracle(&["info", path.to_str().expect("utf-8")])).expect("utf-8");
    assert!(info.contains("count-in-header"), "{info}");
    let _ = NO_FREELIST;
}

/// bbolt's mapping length (`DB.mmapSize`), written out again here so the
/// test does not take it from the code under test.
fn mmap_size(size: u64) -> u64 {
    for i in 15..=30 {
        if size <= 1 << i {
            return 1 << i;
        }
    }
    size.div_ceil(1 << 30) * (1 << 30)
}

#[test]
fn the_file_and_mapping_grow_in_bbolt_steps() {
    let dir = tempdir();
    let path = dir.path().join("grow.db");
    let ps = 4096u64;
    let db = Db::open(&path, &rw(4096)).expect("create");
    // A new file is four pages, mapped at 32 KiB.
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), 4 * ps);
    assert_eq!(db.mapping().mapped_len(), 32 << 10);
    let mut last_len = 4 * ps;
    for round in 0..14u32 {
        let before_map = db.mapping().mapped_len();
        // Each round adds ~1.5× the data of the previous, in values of
        // 20 KiB (overflow runs of 6 pages): past 16 MiB by the end.
        let n = 3u32.pow(round / 2 + 1) / 2;
        fill(&db, format!("r{round}").as_bytes(), 0, n, 20 << 10);
        let tx = db.begin().expect("tx");
        let hwm = tx.file().meta().hwm;
        drop(tx);
        let need = (hwm + 1) * ps;
        let map = db.mapping().mapped_len();
        let len = std::fs::metadata(&path).expect("stat").len();
        // The mapping reaches past the high-water mark, remapped to
        // bbolt's size for max(file, need) when it did not.
        if need >= before_map {
            assert_eq!(map, mmap_size(last_len.max(need)), "round {round}");
        } else {
            assert_eq!(map, before_map, "round {round}: no remap needed");
        }
        // The file, as bbolt 1.3.6 leaves it: grown (when the freelist's
        // allocation raised hwm) to the mapping length while that is
        // under 16 MiB, else to need + 16 MiB; otherwise as long as the
        // page writes made it. Which of the two a commit does is checked
        // against bbolt itself in bolt_bench.rs; here, that it is one.
        let grown = if map < 16 << 20 { map } else { need + (16 << 20) };
        let written = last_len.max(hwm * ps);
        assert!(
            len == written || len == grown,
            "round {round}: hwm {hwm}, map {map}: length {len}, neither {written} nor {grown}"
        );
        last_len = len;
    }
    assert!(last_len > 32 << 20, "grew past the 16 MiB step: {last_len}");
    drop(db);
    oracle_check(&path);
}

#[test]
fn initial_mmap_size_avoids_remaps_and_old_mappings_outlive_remaps() {
    let dir = tempdir();
    let path = dir.path().join("mmap.db");
    let opts = Options { initial_mmap_size: 8 << 20, ..rw(4096) };
    let db = Db::open(&path, &opts).expect("create");
    let first = db.mapping();
    assert_eq!(first.mapped_len(), 8 << 20);
    fill(&db, b"a", 0, 5000, 500);
    assert!(std::sync::Arc::ptr_eq(&first, &db.mapping()), "no remap");
    drop(first);
    // Without it, a reader keeps the old mapping across a remap and still
    // reads its snapshot.
    let path2 = dir.path().join("remap.db");
    let db2 = Db::open(&path2, &rw(4096)).expect("create");
    fill(&db2, b"a", 0, 10, 10);
    let reader = db2.begin().expect("reader");
    let old = db2.mapping().mapped_len();
    fill(&db2, b"a", 0, 5000, 500);
    assert!(db2.mapping().mapped_len() > old, "remapped");
    let b = reader.bucket(b"a").expect("bucket").expect("a");
    assert_eq!(b.get(b"00000009").expect("get").as_deref(), Some(&[9u8; 10][..]));
    assert_eq!(b.get(b"00004000").expect("get"), None);
    drop(reader);
    drop(db2);
    oracle_check(&path2);
    drop(db);
    oracle_check(&path);
}

#[test]
fn populate_mlock_and_no_grow_sync_options() {
    let dir = tempdir();
    // MAP_POPULATE and mlock on every (re)mapping and growth.
    let path = dir.path().join("opts.db");
    let opts = Options { mmap_flags: libc::MAP_POPULATE, mlock: true, ..rw(4096) };
    let db = Db::open(&path, &opts).expect("create");
    assert!(db.mapping().is_locked());
    fill(&db, b"a", 0, 300, 3000);
    assert!(db.mapping().is_locked(), "the new mapping is locked too");
    drop(db);
    oracle_check(&path);
    // no_grow_sync: no ftruncate, the file is as long as its last page.
    let path = dir.path().join("nogrow.db");
    let db = Db::open(&path, &Options { no_grow_sync: true, ..rw(4096) }).expect("create");
    fill(&db, b"a", 0, 300, 3000);
    let hwm = db.begin().expect("tx").file().meta().hwm;
    drop(db);
    assert_eq!(std::fs::metadata(&path).expect("stat").len(), hwm * 4096);
    oracle_check(&path);
}
