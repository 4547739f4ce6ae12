//! The prefetching cursor: a forward scan announces each next leaf once,
//! and a prefetching scan returns exactly what a plain scan returns.
//! (`mapwise bolt bench` against the oracle's workload is in
//! `cli/tests/bolt_bench.rs`.) Nothing here is timed.

use std::cell::RefCell;
use std::path::Path;

use mapwise_native::engine::bolt::{ARM_LEAVES, CursorOptions, Db, Options, Prefetch};

use crate::support::tempdir;

/// Records every hint: read-ahead (`will_need`) in `.0`, CPU cache
/// (`cache`) in `.1`, and the offsets the cursor asked `cached` about in
/// `.2`; `cached` answers `.3` (true: a warm file).
#[derive(Default)]
struct Hints(RefCell<Vec<(u64, u64)>>, RefCell<Vec<(u64, u64)>>, RefCell<Vec<u64>>, bool);

impl Prefetch for Hints {
    fn will_need(&self, offset: u64, len: u64) {
        self.0.borrow_mut().push((offset, len));
    }

    fn cached(&self, offset: u64) -> bool {
        self.2.borrow_mut().push(offset);
        self.3
    }

    fn cache(&self, offset: u64, len: u64) {
        self.1.borrow_mut().push((offset, len));
    }
}

/// A three-level tree in bucket `b` of a new file at `path`: 40k keys of
/// ~120 bytes in hashed order at FillPercent 0.5; opened read-only.
fn three_level_file(path: &Path) -> Db {
    let db = Db::open(path, &Options::read_write()).unwrap();
    db.update(|tx| -> mapwise_native::engine::bolt::Result<()> {
        let mut b = tx.create_bucket(b"b")?;
        for i in 0u32..40_000 {
            let k = (i.wrapping_mul(2_654_435_761)).to_be_bytes();
            b.put(&[&k[..], &i.to_le_bytes()].concat(), &[7u8; 110])?;
        }
        Ok(())
    })
    .unwrap();
    drop(db);
    Db::open(path, &Options::default()).unwrap()
}

/// A forward scan asks the CPU to cache the first bytes of every leaf it
/// is about to enter, once each, and nothing else: every leaf the scan
/// visits except the first child of a branch (nothing runs ahead of
/// those), in scan order.
#[test]
fn a_forward_scan_caches_each_next_leaf_once() {
    let dir = tempdir();
    let db = three_level_file(&dir.path().join("scan.db"));
    let tx = db.begin().unwrap();
    let hints = Hints::default();
    let file = tx.file().with_hints(&hints);
    let bucket = mapwise_core::bolt::Bucket::root_of(&file).bucket(b"b").unwrap().unwrap();
    let base = db.mapping().bytes().as_ptr().addr() as u64;
    let ps = 4096u64;
    // Leaves in scan order (the page holding each key: no overflow here).
    let mut leaves: Vec<u64> = Vec::new();
    let off = CursorOptions { prefetch: 0, prefetch_end: None };
    bucket
        .cursor_with(&off, &hints)
        .scan(None, |k, _, _| {
            let p = (k.as_ptr().addr() as u64 - base) / ps;
            if leaves.last() != Some(&p) {
                leaves.push(p);
            }
            true
        })
        .unwrap();
    assert!(leaves.len() > 500, "{} leaves", leaves.len());
    // First children of every branch page of the file.
    let mut first_children = std::collections::BTreeSet::new();
    for pgid in 2..file.file_pages() {
        if let Ok(p) = file.read_page(pgid)
            && p.header.flags == 0x01
        {
            first_children.insert(p.branch(0).unwrap().child);
        }
    }
    assert!(first_children.len() > 2, "a three-level tree");
    let cached: Vec<u64> = {
        let cached = hints.1.borrow();
        assert!(cached.iter().all(|&(_, len)| len == 128), "{cached:?}");
        cached.iter().map(|&(off, _)| off / ps).collect()
    };
    let want: Vec<u64> = leaves.iter().copied().filter(|p| !first_children.contains(p)).collect();
    assert_eq!(cached, want, "leaves cached ahead, in scan order");
    assert!(
        hints.0.borrow().is_empty() && hints.2.borrow().is_empty(),
        "no read-ahead with --prefetch 0"
    );
    // With a 4 MiB window (1,024 leaves): every leaf after the third (the
    // cursor arms once it has moved through ARM_LEAVES leaves), once each,
    // in scan order, in renewals that ramp up from 8 leaves.
    // A renewal is announced after one probe of its first leaf (not
    // cached here), so the probes split the announced pages into
    // renewals. The CPU cache hints stay the same.
    let window = CursorOptions { prefetch: 4 << 20, prefetch_end: None };
    hints.1.borrow_mut().clear();
    let ahead = Hints::default();
    bucket.cursor_with(&window, &ahead).scan(None, |_, _, _| true).unwrap();
    let again: Vec<u64> = hints.1.borrow().iter().map(|&(off, _)| off / ps).collect();
    assert_eq!(again, want, "cache hints with a window");
    let pages_of = |runs: &[(u64, u64)]| -> Vec<u64> {
        runs.iter().flat_map(|&(off, len)| off / ps..(off + len) / ps).collect()
    };
    let announced = pages_of(&ahead.0.borrow());
    let arm = usize::try_from(ARM_LEAVES).unwrap();
    assert_eq!(announced, leaves[arm..], "every leaf after the third, once");
    // The default cursor of a file with a hint sink (the engine's) reads
    // ahead the same way.
    let default = Hints::default();
    let hinted = tx.file().with_hints(&default);
    let b2 = mapwise_core::bolt::Bucket::root_of(&hinted).bucket(b"b").unwrap().unwrap();
    b2.cursor().scan(None, |_, _, _| true).unwrap();
    assert_eq!(pages_of(&default.0.borrow()), leaves[arm..], "the default reads ahead");
    let probes: Vec<u64> = ahead.2.borrow().iter().map(|off| off / ps).collect();
    let mut sizes = Vec::new();
    for (i, p) in probes.iter().enumerate() {
        let at = announced.iter().position(|a| a == p).unwrap();
        let next = probes
            .get(i + 1)
            .map_or(announced.len(), |q| announced.iter().position(|a| a == q).unwrap());
        sizes.push(next - at);
    }
    assert_eq!(
        sizes[..9],
        [8, 12, 24, 48, 96, 192, 384, 768, 512],
        "the ramp: renewed when half of what is ahead is read, up to twice as far, at most 1,024 ahead"
    );
    assert!(sizes.iter().all(|&n| n <= 1024), "{sizes:?}");
    // On a warm file (every probe says cached) nothing is announced, and
    // a renewal costs two probes.
    let warm = Hints(Default::default(), Default::default(), Default::default(), true);
    bucket.cursor_with(&window, &warm).scan(None, |_, _, _| true).unwrap();
    assert!(warm.0.borrow().is_empty(), "a warm scan announces nothing");
    assert_eq!(warm.2.borrow().len(), 2 * probes.len(), "two probes a renewal");
    hints.1.borrow_mut().clear();
    // From a seek into the middle: every such leaf after the one it lands
    // on, from the next one on, once each.
    let mut keys = Vec::new();
    bucket
        .cursor()
        .scan(None, |k, _, _| {
            keys.push(k.to_vec());
            true
        })
        .unwrap();
    let from = &keys[keys.len() / 2];
    hints.1.borrow_mut().clear();
    let mut c = bucket.cursor_with(&off, &hints);
    let mut it = c.seek(from).unwrap();
    let landed = (it.as_ref().unwrap().key.as_ptr().addr() as u64 - base) / ps;
    let mut n = 0;
    while let Some(i) = it {
        drop(i);
        n += 1;
        it = c.next().unwrap();
    }
    assert_eq!(n, keys.len() - keys.len() / 2);
    let at = leaves.iter().position(|&p| p == landed).unwrap();
    let after: Vec<u64> =
        leaves[at + 1..].iter().copied().filter(|p| !first_children.contains(p)).collect();
    let cached: Vec<u64> = hints.1.borrow().iter().map(|&(off, _)| off / ps).collect();
    assert_eq!(cached, after, "a scan from a seek caches the leaves after it");
}

#[test]
fn a_prefetching_scan_returns_exactly_what_a_plain_scan_returns() {
    let dir = tempdir();
    let path = dir.path().join("scan.db");
    let db = three_level_file(&path);
    let tx = db.begin().unwrap();
    let bucket = tx.bucket(b"b").unwrap().unwrap();
    let collect = |c: &mut mapwise_native::engine::bolt::Cursor<'_>,
                   from: Option<&[u8]>,
                   to: Option<&[u8]>| {
        let mut keys = Vec::new();
        let mut it = match from {
            Some(k) => c.seek(k).unwrap(),
            None => c.first().unwrap(),
        };
        while let Some(i) = it {
            if to.is_some_and(|t| *i.key >= *t) {
                break;
            }
            keys.push((i.key.into_owned(), i.value.into_owned()));
            it = c.next().unwrap();
        }
        keys
    };
    let plain = collect(&mut bucket.cursor(), None, None);
    assert_eq!(plain.len(), 40_000);
    for window in [1u64, 4096, 3 * 4096, 1 << 20, 1 << 30] {
        let hints = Hints::default();
        let opts = CursorOptions { prefetch: window, prefetch_end: None };
        let got = collect(&mut bucket.cursor_with(&opts, &hints), None, None);
        assert!(got == plain, "window {window}: keys differ");
        assert!(!hints.0.borrow().is_empty(), "window {window}: no hints");
        // Through the transaction (madvise on the mapping) too.
        let got = collect(&mut tx.cursor_with(&bucket, &opts), None, None);
        assert!(got == plain, "window {window} (tx): keys differ");
        // And through the closure scan.
        let mut scanned = Vec::new();
        tx.cursor_with(&bucket, &opts)
            .scan(None, |k, v, _| {
                scanned.push((k.to_vec(), v.to_vec()));
                true
            })
            .unwrap();
        assert!(scanned == plain, "window {window} (scan): keys differ");
    }
    // A range scan: same keys, and no hint reaches past the leaves that
    // hold keys of the range.
    let (from, to) = (plain[10_000].0.clone(), plain[12_000].0.clone());
    let want = collect(&mut bucket.cursor(), Some(&from), Some(&to));
    assert_eq!(want.len(), 2000);
    let hints = Hints::default();
    let opts = CursorOptions { prefetch: 64 * 4096, prefetch_end: Some(to.clone()) };
    let got = collect(&mut bucket.cursor_with(&opts, &hints), Some(&from), Some(&to));
    assert!(got == want, "range scan: keys differ");
    let mut scanned = Vec::new();
    bucket
        .cursor_with(&opts, &hints)
        .scan(Some(&from), |k, v, _| {
            if k >= &to[..] {
                return false;
            }
            scanned.push((k.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
    assert!(scanned == want, "range scan (scan): keys differ");
    let map = db.mapping();
    let base = map.bytes().as_ptr().addr() as u64;
    let ps = 4096u64;
    // Pages holding the range's keys (from a second, recording scan).
    let mut pages = std::collections::BTreeSet::new();
    let mut c = bucket.cursor();
    let mut it = c.seek(&from).unwrap();
    while let Some(i) = it {
        if *i.key >= *to {
            break;
        }
        pages.insert((i.key.as_ptr().addr() as u64 - base) / ps);
        it = c.next().unwrap();
    }
    let hinted = hints.0.borrow();
    assert!(!hinted.is_empty());
    for &(off, len) in hinted.iter() {
        for p in off / ps..(off + len).div_ceil(ps) {
            assert!(pages.contains(&p), "hinted page {p} holds no key of the range");
        }
    }
}

/// With the default options, a point lookup and a short range (a seek,
/// then keys from fewer than ARM_LEAVES leaves) announce nothing: they
/// read exactly the pages bbolt's cursor reads. A longer range announces
/// from its third leaf on.
#[test]
fn seeks_and_short_ranges_announce_nothing_by_default() {
    let dir = tempdir();
    let db = three_level_file(&dir.path().join("seek.db"));
    let tx = db.begin().unwrap();
    let bucket = tx.bucket(b"b").unwrap().unwrap();
    let mut keys = Vec::new();
    let off = CursorOptions { prefetch: 0, prefetch_end: None };
    let quiet = Hints::default();
    bucket
        .cursor_with(&off, &quiet)
        .scan(None, |k, _, _| {
            keys.push(k.to_vec());
            true
        })
        .unwrap();
    let base = db.mapping().bytes().as_ptr().addr() as u64;
    let leaf_of = |k: &[u8]| (k.as_ptr().addr() as u64 - base) / 4096;
    let mut announced_after = Vec::new();
    for (n, start) in [(1usize, 17usize), (10, 1000), (10, 25_000), (60, 3000), (400, 9000)] {
        let hints = Hints::default();
        let mut c = bucket.cursor_with(&CursorOptions::default(), &hints);
        let mut it = c.seek(&keys[start]).unwrap();
        let mut leaves = std::collections::BTreeSet::new();
        for _ in 0..n {
            let Some(i) = it else { break };
            leaves.insert(leaf_of(&i.key));
            drop(i);
            it = c.next().unwrap();
        }
        let announced = !hints.0.borrow().is_empty();
        assert_eq!(
            announced,
            leaves.len() as u64 >= ARM_LEAVES,
            "{n} keys from key {start} over {} leaves",
            leaves.len()
        );
        announced_after.push(announced);
    }
    assert_eq!(announced_after, [false, false, false, true, true], "short ranges stay quiet");
    // Gets never announce.
    let hints = Hints::default();
    let file = tx.file().with_hints(&hints);
    let b = mapwise_core::bolt::Bucket::root_of(&file).bucket(b"b").unwrap().unwrap();
    for k in keys.iter().step_by(97) {
        assert!(b.get(k).unwrap().is_some());
    }
    assert!(hints.0.borrow().is_empty(), "a get announces nothing");
}
