//! Quiet reads of a bbolt file a writer commits to
//! (`mapwise_native::observe::settle`): a walk overlapped by commits is
//! read again, and a long walk settles under a steady writer. What
//! `mapwise bolt` does with them for a user is in `cli/tests/bolt_cli.rs`.

use mapwise_testkit::churn::writer_db;

use crate::support::churn::rewrite;
use crate::support::tempdir;

/// Commits that land while a quiet reader walks the file make the walk mix
/// two snapshots (pages of the one it began at are reused): `settle`
/// notices the meta pages changed and reads again. Deterministic: the
/// commits run inside the first walk.
#[test]
fn a_walk_overlapped_by_commits_is_read_again() {
    use mapwise_core::bolt::{WalkOptions, walk};
    let dir = tempdir();
    let path = dir.path().join("busy.db");
    // About 5 MiB: most pages lie past the first 1 MiB chunk, which the
    // reader caches when it reads the meta pages.
    let db = writer_db(&path, 20_000);
    let mut seen = Vec::new();
    let read = mapwise_native::observe::settle::read_bolt(&path, |file| {
        if seen.is_empty() {
            for round in 1..=3 {
                rewrite(&db, 20_000, round);
            }
        }
        let problems = walk(file, WalkOptions::default()).layout.problem_count();
        seen.push(problems);
        problems
    })
    .expect("read");
    assert!(seen[0] > 0, "the first walk mixed snapshots and should have seen damage: {seen:?}");
    assert_eq!(read.attempts, 2, "{seen:?}");
    assert!(read.settled);
    assert_eq!(read.value, 0, "the settled walk finds a healthy file");
    drop(db);
    mapwise_testkit::bolt_model::oracle_check(&path);
}

/// A walk longer than the time between two commits settles all the same
/// (`read_bolt_walked`: the follower reads each commit's pages as it
/// lands and keeps every page the new tree still uses). Deterministic: a
/// commit lands after every 150 pages read, so no walk of the
/// ~1,300-page file ends between two commits. What it settles on is one
/// snapshot: each commit adds one key, so the bucket's key count must be
/// what the snapshot's txid says.
#[test]
fn a_long_walk_settles_under_a_steady_writer() {
    use mapwise_core::bolt::WalkOptions;
    use std::rc::Rc;
    let dir = tempdir();
    let path = dir.path().join("steady.db");
    let base: u64 = 15_000;
    let db = Rc::new(writer_db(&path, base));
    let txid0 = db.begin().expect("tx").id();
    let commits = Rc::new(std::cell::Cell::new(0u64));
    {
        let (db, commits) = (Rc::clone(&db), Rc::clone(&commits));
        mapwise_native::observe::settle::testing::after_every(150, move || {
            let n = base + commits.get();
            db.update(|tx| -> Result<(), mapwise_native::engine::bolt::Error> {
                let mut b = tx.bucket(b"w")?.expect("w");
                b.put(&n.to_be_bytes(), b"appended")
            })
            .expect("commit");
            commits.set(commits.get() + 1);
        });
    }
    let walked = mapwise_native::observe::settle::read_bolt_walked(
        &path,
        WalkOptions::default(),
        mapwise_native::observe::settle::CARRY_BUDGET,
        |file, w| {
            let keys = w.layout.groups.iter().find(|g| g.path == "w").map(|g| g.keys);
            (file.meta().txid, keys, w.layout.problem_count(), w.layout.regions.len())
        },
    );
    mapwise_native::observe::settle::testing::clear();
    let walked = walked.expect("walked read");
    assert!(walked.settled, "{walked:?}");
    assert!(commits.get() >= 3, "{} commits landed", commits.get());
    assert!(walked.struggle.followed >= 3, "{walked:?}");
    assert_eq!(walked.attempts, 1, "no restart: {walked:?}");
    let (txid, keys, problems, _) = walked.value;
    assert_eq!(problems, 0, "{walked:?}");
    assert_eq!(keys, Some(base + (txid - txid0)), "txid {txid} (first {txid0})");
    drop(db);
    mapwise_testkit::bolt_model::oracle_check(&path);
}

/// A batch of reads between two looks at the meta pages stays within
/// `BATCH_BYTES` (one run at least) when the pages it takes turn out to
/// be long runs, as the leaves of an etcd db holding big values are: read
/// whole, 120 runs of 64–200 KiB would keep the reader from looking for
/// a commit for as long as a cold disk takes to read 16 MiB. And the walk
/// still settles on one snapshot while a commit that rewrites a big value
/// lands after every 10 pages read.
#[test]
fn batches_of_long_runs_stay_small_and_settle() {
    use mapwise_core::bolt::WalkOptions;
    use mapwise_native::observe::settle::{self, BATCH_BYTES};
    use std::rc::Rc;
    let dir = tempdir();
    let path = dir.path().join("big-values.db");
    let opts = mapwise_native::engine::bolt::Options {
        no_sync: true,
        ..mapwise_testkit::bolt_model::rw(4096)
    };
    let db = Rc::new(mapwise_native::engine::bolt::Db::open(&path, &opts).expect("create"));
    let value = |k: u64| -> Vec<u8> {
        let len = 64 * 1024 + (k * 7919 % 136) as usize * 1024;
        (0..len).map(|i| ((i as u64 ^ k) & 0xff).to_le_bytes()[0]).collect()
    };
    let keys: u64 = 120;
    db.update(|tx| -> Result<(), mapwise_native::engine::bolt::Error> {
        let mut b = tx.create_bucket(b"v")?;
        for k in 0..keys {
            b.put(&k.to_be_bytes(), &value(k))?;
        }
        Ok(())
    })
    .expect("fill");
    let txid0 = db.begin().expect("tx").id();
    let commits = Rc::new(std::cell::Cell::new(0u64));
    {
        let (db, commits) = (Rc::clone(&db), Rc::clone(&commits));
        settle::testing::after_every(10, move || {
            let n = commits.get();
            db.update(|tx| -> Result<(), mapwise_native::engine::bolt::Error> {
                let mut b = tx.bucket(b"v")?.expect("v");
                // One big value rewritten, one key added.
                b.put(&(n * 13 % keys).to_be_bytes(), &value(n + keys))?;
                b.put(&(keys + n).to_be_bytes(), b"added")
            })
            .expect("commit");
            commits.set(n + 1);
        });
    }
    let walked =
        settle::read_bolt_walked(&path, WalkOptions::default(), settle::CARRY_BUDGET, |file, w| {
            let keys = w.layout.groups.iter().find(|g| g.path == "v").map(|g| g.keys);
            (file.meta().txid, keys, w.layout.problem_count())
        });
    settle::testing::clear();
    let walked = walked.expect("walked read");
    assert!(walked.settled, "{walked:?}");
    assert!(commits.get() >= 3, "{} commits landed", commits.get());
    let (txid, got, problems) = walked.value;
    assert_eq!(problems, 0, "{walked:?}");
    assert_eq!(got, Some(keys + (txid - txid0)), "txid {txid} (first {txid0})");
    let longest_run = 256 * 1024;
    assert!(
        walked.struggle.largest_batch <= BATCH_BYTES + longest_run,
        "a batch read {} bytes between two looks",
        walked.struggle.largest_batch
    );
    assert!(walked.struggle.largest_batch > 0, "{walked:?}");
    drop(db);
    mapwise_testkit::bolt_model::oracle_check(&path);
}
