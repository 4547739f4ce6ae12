//! Property test: random operation sequences (buckets created and
//! dropped at any depth, puts and deletes with keys and values from empty
//! to overflow-sized, sequences, cursor deletes, commits, rollbacks,
//! reopens) applied to our engine and to a model. After each sequence our
//! own dump equals the model and our check is clean (so proptest can
//! shrink a failure to a small case); then Go bbolt judges every file:
//! the oracle's `check` passes and its `dump` equals the model.
//!
//! `MAPWISE_PROPTEST_CASES` sets the number of sequences (default 200);
//! `cargo xtask crash --proptest-cases N` runs more in release mode.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use mapwise_native::engine::bolt::{BucketMut, Db, Error, Options, WriteTx};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::support::tempdir;
use mapwise_testkit::bolt_model::{self, Bucket, Entry, oracle_run};

/// Judge `files` (path, expected dump) with the oracle on two threads;
/// returns one message per disagreement.
pub fn oracle_judge(files: &[(PathBuf, String)]) -> Vec<String> {
    let failures = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((path, want)) = files.get(i) else {
                        break;
                    };
                    let p = path.to_str().expect("utf-8");
                    let (ok, out, err) = oracle_run(&["check", p]);
                    if !ok || out.trim_end() != "OK" {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{p}: oracle check:\n{out}{err}"));
                        continue;
                    }
                    let (ok, out, err) = oracle_run(&["dump", p]);
                    if !ok || out != *want {
                        let line = out
                            .lines()
                            .zip(want.lines())
                            .position(|(a, b)| a != b)
                            .unwrap_or(out.lines().count().min(want.lines().count()));
                        failures.lock().unwrap().push(format!(
                            "{p}: oracle dump differs from the model at line {}: {:?} vs {:?} {err}",
                            line + 1,
                            out.lines().nth(line),
                            want.lines().nth(line)
                        ));
                    }
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

/// Key choices: a small space so keys collide, some equal to bucket
/// names (to meet `IncompatibleValue`), some long (branch keys that
/// overflow), rarely the longest key bbolt allows.
#[derive(Debug, Clone)]
enum KeySel {
    Short(u8),
    Name(u8),
    Long(u8),
    Max,
}

impl KeySel {
    fn bytes(&self) -> Vec<u8> {
        match self {
            KeySel::Short(n) => format!("k{n:03}").into_bytes(),
            KeySel::Name(n) => name(*n),
            KeySel::Long(n) => {
                let mut k = format!("long{n:03}").into_bytes();
                k.resize(600 + usize::from(*n) * 23, b'a' + n % 26);
                k
            }
            KeySel::Max => vec![b'z'; 32768],
        }
    }
}

fn name(n: u8) -> Vec<u8> {
    format!("b{}", n % 6).into_bytes()
}

/// Value sizes spanning inline buckets, one page and overflow runs.
#[derive(Debug, Clone, Copy)]
enum Size {
    Empty,
    Small(u8),
    Quarter,
    Page,
    Overflow(u8),
}

impl Size {
    fn len(self, ps: usize) -> usize {
        match self {
            Size::Empty => 0,
            Size::Small(n) => usize::from(n),
            Size::Quarter => ps / 4 - 40,
            Size::Page => ps - 50,
            Size::Overflow(n) => ps * (2 + usize::from(n % 3)) + 17,
        }
    }
}

fn value(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[derive(Debug, Clone)]
enum Op {
    Create { parent: u8, name: u8 },
    DeleteBucket { which: u8 },
    Put { which: u8, key: KeySel, size: Size, seed: u8 },
    PutMany { which: u8, from: u8, n: u8, size: Size },
    Delete { which: u8, key: KeySel },
    CursorDelete { which: u8, every: u8 },
    NextSeq { which: u8 },
    SetSeq { which: u8, v: u64 },
    Commit,
    Rollback,
    Reopen,
}

fn key_strategy() -> impl Strategy<Value = KeySel> {
    prop_oneof![
        12 => any::<u8>().prop_map(|n| KeySel::Short(n % 120)),
        2 => any::<u8>().prop_map(KeySel::Name),
        2 => any::<u8>().prop_map(|n| KeySel::Long(n % 20)),
        1 => Just(KeySel::Max),
    ]
}

fn size_strategy() -> impl Strategy<Value = Size> {
    prop_oneof![
        2 => Just(Size::Empty),
        10 => any::<u8>().prop_map(|n| Size::Small(n % 60 + 1)),
        3 => Just(Size::Quarter),
        2 => Just(Size::Page),
        2 => any::<u8>().prop_map(Size::Overflow),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), any::<u8>()).prop_map(|(parent, name)| Op::Create { parent, name }),
        1 => any::<u8>().prop_map(|which| Op::DeleteBucket { which }),
        16 => (any::<u8>(), key_strategy(), size_strategy(), any::<u8>())
            .prop_map(|(which, key, size, seed)| Op::Put { which, key, size, seed }),
        4 => (any::<u8>(), any::<u8>(), 1..80u8, size_strategy())
            .prop_map(|(which, from, n, size)| Op::PutMany { which, from: from % 120, n, size }),
        6 => (any::<u8>(), key_strategy()).prop_map(|(which, key)| Op::Delete { which, key }),
        1 => (any::<u8>(), 1..4u8).prop_map(|(which, every)| Op::CursorDelete { which, every }),
        1 => any::<u8>().prop_map(|which| Op::NextSeq { which }),
        1 => (any::<u8>(), any::<u64>()).prop_map(|(which, v)| Op::SetSeq { which, v }),
        4 => Just(Op::Commit),
        1 => Just(Op::Rollback),
        1 => Just(Op::Reopen),
    ]
}

/// Per-sequence engine options.
#[derive(Debug, Clone)]
struct Setup {
    page_size: u32,
    no_freelist_sync: bool,
    fill: f64,
}

fn setup_strategy() -> impl Strategy<Value = Setup> {
    (
        prop_oneof![Just(1024u32), Just(4096), Just(16384)],
        any::<bool>(),
        prop_oneof![Just(0.5f64), Just(0.1), Just(0.9), Just(1.0)],
    )
        .prop_map(|(page_size, no_freelist_sync, fill)| Setup {
            page_size,
            no_freelist_sync,
            fill,
        })
}

fn options(s: &Setup) -> Options {
    Options {
        page_size: s.page_size,
        no_freelist_sync: s.no_freelist_sync,
        no_sync: true,
        fill_percent: s.fill,
        ..Options::read_write()
    }
}

fn err(what: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(what.to_string())
}

/// The bucket at `path` in the open transaction.
fn open<'t>(tx: &'t mut WriteTx<'_>, path: &[Vec<u8>]) -> Result<BucketMut<'t>, TestCaseError> {
    tx.bucket_path(path).map_err(|e| err(format!("open {path:?}: {e}")))
}

/// Apply `op` to the transaction and the model; compare outcomes.
#[expect(clippy::too_many_lines)]
fn apply(
    tx: &mut WriteTx<'_>,
    model: &mut Bucket,
    op: &Op,
    ps: usize,
) -> Result<(), TestCaseError> {
    let paths = model.bucket_paths();
    let pick = |which: u8| -> Option<Vec<Vec<u8>>> {
        (!paths.is_empty()).then(|| paths[usize::from(which) % paths.len()].clone())
    };
    match op {
        Op::Create { parent, name: n } => {
            let idx = usize::from(*parent) % (paths.len() + 1);
            let ppath: Vec<Vec<u8>> = if idx == 0 { Vec::new() } else { paths[idx - 1].clone() };
            if ppath.len() >= 6 {
                return Ok(());
            }
            let nm = name(*n);
            let pm = model.at_mut(&ppath).ok_or_else(|| err("model path"))?;
            let want = match pm.kv.get(&nm) {
                Some(Entry::Bucket(_)) => Some("BucketExists"),
                Some(Entry::Value(_)) => Some("IncompatibleValue"),
                None => None,
            };
            let got = if ppath.is_empty() {
                tx.create_bucket(&nm).map(|_| ())
            } else {
                open(tx, &ppath)?.create_bucket(&nm).map(|_| ())
            };
            match (want, got) {
                (None, Ok(())) => {
                    pm.kv.insert(nm, Entry::Bucket(Bucket::default()));
                }
                (Some("BucketExists"), Err(Error::BucketExists))
                | (Some("IncompatibleValue"), Err(Error::IncompatibleValue)) => {}
                (w, g) => {
                    return Err(err(format!("create {nm:?} in {ppath:?}: want {w:?}, got {g:?}")));
                }
            }
        }
        Op::DeleteBucket { which } => {
            let Some(path) = pick(*which) else {
                return Ok(());
            };
            let (last, parent) = path.split_last().ok_or_else(|| err("empty path"))?;
            let r = if parent.is_empty() {
                tx.delete_bucket(last)
            } else {
                open(tx, parent)?.delete_bucket(last)
            };
            r.map_err(|e| err(format!("delete bucket {path:?}: {e}")))?;
            model.at_mut(parent).ok_or_else(|| err("model"))?.kv.remove(last);
        }
        Op::Put { which, key, size, seed } => {
            let Some(path) = pick(*which) else {
                return Ok(());
            };
            put(tx, model, &path, &key.bytes(), &value(*seed, size.len(ps)))?;
        }
        Op::PutMany { which, from, n, size } => {
            let Some(path) = pick(*which) else {
                return Ok(());
            };
            for i in 0..*n {
                let k = KeySel::Short(from.wrapping_add(i)).bytes();
                put(tx, model, &path, &k, &value(i, size.len(ps)))?;
            }
        }
        Op::Delete { which, key } => {
            let Some(path) = pick(*which) else {
                return Ok(());
            };
            let k = key.bytes();
            let bm = model.at_mut(&path).ok_or_else(|| err("model"))?;
            let got = open(tx, &path)?.delete(&k);
            match (bm.kv.get(&k), got) {
                (Some(Entry::Bucket(_)), Err(Error::IncompatibleValue)) => {}
                (Some(Entry::Value(_)) | None, Ok(())) => {
                    bm.kv.remove(&k);
                }
                (m, g) => return Err(err(format!("delete {k:?}: model {m:?}, got {g:?}"))),
            }
        }
        Op::CursorDelete { which, every } => {
            let Some(path) = pick(*which) else {
                return Ok(());
            };
            let every = usize::from(*every);
            let bm = model.at_mut(&path).ok_or_else(|| err("model"))?;
            let doomed: Vec<Vec<u8>> = bm
                .kv
                .iter()
                .enumerate()
                .filter(|(i, (_, e))| i.is_multiple_of(every) && matches!(e, Entry::Value(_)))
                .map(|(_, (k, _))| k.clone())
                .collect();
            let mut b = open(tx, &path)?;
            let mut c = b.cursor_mut();
            let mut i = 0usize;
            let mut at = c.first().map_err(err)?.map(|it| it.is_bucket());
            while let Some(is_bucket) = at {
                if i.is_multiple_of(every) && !is_bucket {
                    c.delete().map_err(err)?;
                }
                i += 1;
                at = c.next().map_err(err)?.map(|it| it.is_bucket());
            }
            if i != bm.kv.len() {
                return Err(err(format!("cursor visited {i} of {} entries", bm.kv.len())));
            }
            for k in doomed {
                bm.kv.remove(&k);
            }
        }
        Op::NextSeq { which } => {
            let Some(path) = pick(*which) else {
                return Ok(());
            };
            let bm = model.at_mut(&path).ok_or_else(|| err("model"))?;
            bm.seq = bm.seq.wrapping_add(1);
            let got = open(tx, &path)?.next_sequence().map_err(err)?;
            if got != bm.seq {
                return Err(err(format!("next_sequence {got}, model {}", bm.seq)));
            }
        }
        Op::SetSeq { which, v } => {
            let Some(path) = pick(*which) else {
                return Ok(());
            };
            open(tx, &path)?.set_sequence(*v).map_err(err)?;
            model.at_mut(&path).ok_or_else(|| err("model"))?.seq = *v;
        }
        Op::Commit | Op::Rollback | Op::Reopen => {}
    }
    Ok(())
}

fn put(
    tx: &mut WriteTx<'_>,
    model: &mut Bucket,
    path: &[Vec<u8>],
    k: &[u8],
    v: &[u8],
) -> Result<(), TestCaseError> {
    let bm = model.at_mut(path).ok_or_else(|| err("model"))?;
    let mut b = open(tx, path)?;
    let got = b.put(k, v);
    match (bm.kv.get(k), got) {
        (Some(Entry::Bucket(_)), Err(Error::IncompatibleValue)) => {}
        (Some(Entry::Value(_)) | None, Ok(())) => {
            // The transaction reads its own write.
            let back = b.get(k).map_err(err)?;
            if back != Some(v) {
                return Err(err(format!("get after put {k:?}: {:?} bytes", back.map(<[u8]>::len))));
            }
            bm.kv.insert(k.to_vec(), Entry::Value(v.to_vec()));
        }
        (m, g) => {
            return Err(err(format!("put {k:?}: model {:?}, got {g:?}", m.is_some())));
        }
    }
    Ok(())
}

/// Run one sequence against a fresh file; returns the model's dump.
fn run_case(path: &Path, setup: &Setup, ops: &[Op]) -> Result<String, TestCaseError> {
    let _ = std::fs::remove_file(path);
    let opts = options(setup);
    let ps = setup.page_size as usize;
    let mut db = Db::open(path, &opts).map_err(err)?;
    let mut committed = Bucket::default();
    let mut i = 0;
    while i < ops.len() {
        let mut pending = committed.clone();
        let mut tx = db.begin_rw().map_err(err)?;
        let mut end = None;
        while i < ops.len() {
            let op = &ops[i];
            i += 1;
            if matches!(op, Op::Commit | Op::Rollback | Op::Reopen) {
                end = Some(op.clone());
                break;
            }
            apply(&mut tx, &mut pending, op, ps)?;
        }
        match end {
            Some(Op::Rollback) => tx.rollback(),
            Some(Op::Reopen) => {
                tx.commit().map_err(err)?;
                committed = pending;
                drop(db);
                db = Db::open(path, &opts).map_err(err)?;
            }
            _ => {
                tx.commit().map_err(err)?;
                committed = pending;
            }
        }
        let rtx = db.begin().map_err(err)?;
        let problems = rtx.check();
        if !problems.is_empty() {
            return Err(err(format!("our check after op {i}: {problems:?}")));
        }
        if bolt_model::read(&rtx.file()) != committed {
            return Err(err(format!("our content after op {i} differs from the model")));
        }
    }
    Ok(bolt_model::dump(&committed))
}

fn cases() -> u32 {
    std::env::var("MAPWISE_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(200)
}

#[test]
fn random_operation_sequences_match_the_model_and_go_bbolt() {
    let t0 = std::time::Instant::now();
    let dir = tempdir();
    let kept: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
    let counter = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    });
    let strategy = (setup_strategy(), prop::collection::vec(op_strategy(), 1..70));
    let result = runner.run(&strategy, |(setup, ops)| {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let path = dir.path().join(format!("case-{n}.db"));
        let want = run_case(&path, &setup, &ops)?;
        kept.lock().unwrap().push((path, want));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let kept = kept.into_inner().unwrap();
    eprintln!("TIMING in-process done at {:?}", t0.elapsed());
    assert!(kept.len() >= cases() as usize, "{} files", kept.len());
    let failures = oracle_judge(&kept);
    eprintln!("TIMING oracle done at {:?}", t0.elapsed());
    assert!(
        failures.is_empty(),
        "{} of {} files rejected by Go bbolt:\n{}",
        failures.len(),
        kept.len(),
        failures.join("\n")
    );
}
