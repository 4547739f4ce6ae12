//! Readers on several threads while a writer commits: every read
//! transaction sees one consistent snapshot (all keys of one commit, no
//! mix), whatever the writer does meanwhile (page reuse, growth, remaps);
//! and the file Go bbolt reads at the end is consistent.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mapwise_native::engine::bolt::{Db, Error, Options};

use crate::support::tempdir;
use mapwise_testkit::bolt_model::{oracle_check, rw};

/// Commit `n`: bucket `c` holds keys 0..width(n), each with value
/// `n` repeated to a size that varies with the key and `n`; key `n`
/// holds `n`. Sizes vary so commits free, reuse and add pages, and some
/// values overflow.
fn width(n: u64) -> u64 {
    50 + (n * 37) % 400
}

fn value(n: u64, k: u64) -> Vec<u8> {
    let len = if (n + k).is_multiple_of(53) { 5000 } else { ((n + k) % 90) as usize + 8 };
    n.to_le_bytes().iter().copied().cycle().take(len).collect()
}

fn commit(db: &Db, n: u64) {
    db.update(|tx| -> Result<(), Error> {
        let mut b = tx.create_bucket_if_not_exists(b"c")?;
        let w = width(n);
        for k in 0..w {
            b.put(&k.to_be_bytes(), &value(n, k))?;
        }
        // Drop what the previous commit had beyond this width.
        for k in w..width(n.saturating_sub(1)).max(w) {
            b.delete(&k.to_be_bytes())?;
        }
        b.put(b"n", &n.to_le_bytes())?;
        Ok(())
    })
    .expect("commit");
}

/// Check one snapshot; returns its commit number.
fn verify(tx: &mapwise_native::engine::bolt::Tx<'_>) -> u64 {
    let Some(b) = tx.bucket(b"c").expect("bucket") else {
        return 0;
    };
    let n = u64::from_le_bytes(
        b.get(b"n").expect("get").expect("n").as_ref().try_into().expect("8 bytes"),
    );
    let mut c = b.cursor();
    let mut k = 0u64;
    let mut it = c.first().expect("first");
    while let Some(item) = it {
        if &*item.key == b"n" {
            break;
        }
        assert_eq!(&*item.key, &k.to_be_bytes(), "snapshot {n}: key order");
        assert_eq!(&*item.value, &value(n, k)[..], "snapshot {n}: key {k} from another commit");
        k += 1;
        it = c.next().expect("next");
    }
    assert_eq!(k, width(n), "snapshot {n}: key count");
    n
}

#[test]
fn readers_on_threads_see_consistent_snapshots_during_commits() {
    let dir = tempdir();
    let path = dir.path().join("stress.db");
    let db = Db::open(&path, &Options { no_sync: true, ..rw(4096) }).expect("create");
    const COMMITS: u64 = 150;
    let done = AtomicBool::new(false);
    let snapshots = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (db, done, snapshots) = (&db, &done, &snapshots);
            s.spawn(move || {
                let mut last = 0;
                let mut rounds = 0u64;
                while !done.load(Ordering::Acquire) || rounds < 3 {
                    rounds += 1;
                    let tx = db.begin().expect("begin");
                    let n = verify(&tx);
                    assert!(n >= last, "snapshots go forward: {n} after {last}");
                    last = n;
                    // Some readers hold their snapshot across commits and
                    // read it again: it must not have changed.
                    if (rounds + t).is_multiple_of(5) {
                        std::thread::yield_now();
                        assert_eq!(verify(&tx), n);
                        if rounds.is_multiple_of(25) {
                            assert!(tx.check().is_empty(), "snapshot {n}: {:?}", tx.check());
                        }
                    }
                    snapshots.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for n in 1..=COMMITS {
            commit(&db, n);
        }
        done.store(true, Ordering::Release);
    });
    assert!(snapshots.load(Ordering::Relaxed) >= 9);
    assert_eq!(verify(&db.begin().expect("tx")), COMMITS);
    drop(db);
    oracle_check(&path);
}

#[test]
fn explicit_begin_commit_rollback_and_read_only_handles() {
    let dir = tempdir();
    let path = dir.path().join("explicit.db");
    let db = Db::open(&path, &rw(4096)).expect("create");
    let mut tx = db.begin_rw().expect("begin");
    assert_eq!(tx.id(), 2, "a new file is at txid 1");
    tx.create_bucket(b"b").expect("create").put(b"k", b"v").expect("put");
    tx.commit().expect("commit");
    let tx = db.begin().expect("read");
    assert_eq!(tx.id(), 2);
    drop(tx);
    let mut tx = db.begin_rw().expect("begin");
    tx.delete_bucket(b"b").expect("delete");
    drop(tx); // dropped = rolled back
    assert!(db.begin().expect("read").bucket(b"b").expect("b").is_some());
    // A second handle cannot open the file read-write while this one
    // holds it: it waits for the lock, then times out.
    let second = Db::open(
        &path,
        &Options { timeout: Some(std::time::Duration::from_millis(120)), ..rw(4096) },
    );
    assert!(matches!(second, Err(Error::Timeout { .. })), "{second:?}");
    db.close().expect("close");
    assert!(matches!(db.begin(), Err(Error::DatabaseNotOpen)));
    assert!(matches!(db.begin_rw(), Err(Error::DatabaseNotOpen)));
    // Closed: the lock is free; a read-only handle refuses writes.
    let ro = Db::open(&path, &Options::default()).expect("read-only");
    assert!(matches!(ro.begin_rw(), Err(Error::DatabaseReadOnly)));
    assert!(ro.begin().expect("tx").bucket(b"b").expect("b").is_some());
}
