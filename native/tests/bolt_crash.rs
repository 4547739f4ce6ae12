//! Crash safety. A child process (this test binary re-executed in child
//! mode) commits numbered transactions — some large enough to grow the
//! file — printing `acked N` after each commit returns, and is killed
//! with SIGKILL at a random moment. After each kill the file must open,
//! pass our check and Go bbolt's check, and hold exactly the content
//! after transaction N or N + 1 (an unacknowledged commit may have
//! landed, but never in part). Torn meta writes fall back to the
//! previous snapshot.
//!
//! `MAPWISE_CRASH_KILLS` sets the number of kills (default 100);
//! `cargo xtask crash --kills N` runs the long version.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mapwise_native::engine::bolt::{Db, Error, Options, WriteTx};

use crate::bolt_props::oracle_judge;
use crate::support::tempdir;
use mapwise_testkit::bolt_model::rw;
use mapwise_testkit::bolt_model::{self, Bucket, Entry, oracle_fast};

const CHILD_ENV: &str = "MAPWISE_BOLT_CRASH_CHILD";

fn be(n: u64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

fn sized(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// One operation of the crash workload, applied alike to the engine and
/// the model.
enum Step {
    Put(Vec<Vec<u8>>, Vec<u8>, Vec<u8>),
    Delete(Vec<Vec<u8>>, Vec<u8>),
    CreateIfMissing(Vec<Vec<u8>>, Vec<u8>),
    DropIfPresent(Vec<Vec<u8>>, Vec<u8>),
}

/// Transaction `n` of the workload: a log with a sliding window of keys,
/// a counter, nested buckets created and dropped, and every tenth
/// transaction ~0.5–1 MB of 2–8 KiB values that overwrite the previous
/// batch (growing the file early on, then reusing freed pages).
fn steps(n: u64) -> Vec<Step> {
    let log = vec![b"log".to_vec()];
    let mut s = vec![
        Step::CreateIfMissing(vec![], b"log".to_vec()),
        Step::Put(log.clone(), be(n), sized(n, (n * 37 % 300) as usize + 1)),
        Step::Delete(log.clone(), be(n.wrapping_sub(40))),
        Step::CreateIfMissing(vec![], b"meta".to_vec()),
        Step::Put(vec![b"meta".to_vec()], b"n".to_vec(), be(n)),
    ];
    if n.is_multiple_of(7) {
        let child = format!("c{}", n % 5).into_bytes();
        s.push(Step::CreateIfMissing(vec![], b"sub".to_vec()));
        s.push(Step::CreateIfMissing(vec![b"sub".to_vec()], child.clone()));
        for i in 0..(n % 30) {
            s.push(Step::Put(
                vec![b"sub".to_vec(), child.clone()],
                be(i),
                sized(n + i, 20 + (i as usize * 50) % 1500),
            ));
        }
    }
    if n.is_multiple_of(13) {
        let child = format!("c{}", (n / 13) % 5).into_bytes();
        s.push(Step::CreateIfMissing(vec![], b"sub".to_vec()));
        s.push(Step::DropIfPresent(vec![b"sub".to_vec()], child));
    }
    if n.is_multiple_of(10) {
        s.push(Step::CreateIfMissing(vec![], b"big".to_vec()));
        let count = 100 + (n * 7) % 100;
        for i in 0..count {
            s.push(Step::Put(
                vec![b"big".to_vec()],
                be(i),
                sized(n ^ i, 2048 + ((n + i) as usize * 131) % 6144),
            ));
        }
    }
    if n % 50 == 25 {
        s.push(Step::DropIfPresent(vec![], b"big".to_vec()));
    }
    s
}

fn apply_model(model: &mut Bucket, n: u64) {
    for step in steps(n) {
        match step {
            Step::Put(p, k, v) => {
                model.at_mut(&p).expect("bucket").kv.insert(k, Entry::Value(v));
            }
            Step::Delete(p, k) => {
                model.at_mut(&p).expect("bucket").kv.remove(&k);
            }
            Step::CreateIfMissing(p, name) => {
                model
                    .at_mut(&p)
                    .expect("bucket")
                    .kv
                    .entry(name)
                    .or_insert_with(|| Entry::Bucket(Bucket::default()));
            }
            Step::DropIfPresent(p, name) => {
                model.at_mut(&p).expect("bucket").kv.remove(&name);
            }
        }
    }
}

fn apply_engine(tx: &mut WriteTx<'_>, n: u64) -> Result<(), Error> {
    for step in steps(n) {
        match step {
            Step::Put(p, k, v) => tx.bucket_path(&p)?.put(&k, &v)?,
            Step::Delete(p, k) => tx.bucket_path(&p)?.delete(&k)?,
            Step::CreateIfMissing(p, name) => {
                if p.is_empty() {
                    tx.create_bucket_if_not_exists(&name)?;
                } else {
                    tx.bucket_path(&p)?.create_bucket_if_not_exists(&name)?;
                }
            }
            Step::DropIfPresent(p, name) => {
                let r = if p.is_empty() {
                    tx.delete_bucket(&name)
                } else {
                    tx.bucket_path(&p)?.delete_bucket(&name)
                };
                match r {
                    Ok(()) | Err(Error::BucketNotFound) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(())
}

/// The counter in a snapshot: the last transaction it holds.
fn counter(tx: &mapwise_native::engine::bolt::Tx<'_>) -> u64 {
    let Some(b) = tx.bucket(b"meta").expect("meta bucket") else {
        return 0;
    };
    let v = b.get(b"n").expect("get").expect("counter");
    u64::from_be_bytes(v.as_ref().try_into().expect("8 bytes"))
}

/// Child mode: commit transactions after the one the file holds, printing
/// `acked N` after each commit returns, until killed. A no-op test unless
/// `MAPWISE_BOLT_CRASH_CHILD` names the file.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let limit: Option<u64> =
        std::env::var("MAPWISE_BOLT_CRASH_COMMITS").ok().and_then(|s| s.parse().ok());
    let db = Db::open(&path, &rw(4096)).expect("child: open");
    let mut n = counter(&db.begin().expect("child: tx")) + 1;
    println!("start {n}");
    let mut done = 0;
    while limit.is_none_or(|l| done < l) {
        db.update(|tx| apply_engine(tx, n)).expect("child: commit");
        println!("acked {n}");
        n += 1;
        done += 1;
    }
}

/// One system call on the database file, as strace shows it.
#[derive(Debug, PartialEq, Eq)]
enum Call {
    Pwrite { len: u64, off: u64 },
    Fdatasync,
    Fsync,
    Ftruncate(u64),
}

/// The commit protocol, observed with strace on a child process: for
/// every commit, the dirty pages (never a meta page, each written once;
/// sorted as bbolt writes them, or, in a commit big enough for a writer
/// thread, in the order the spill makes them), with an optional
/// `ftruncate` + `fsync` (growth) before them, as bbolt does, or after
/// them when the writer thread wrote them during the spill; then
/// `fdatasync`, one page-sized write of the meta page `txid % 2`
/// (alternating), and `fdatasync` (bbolt `tx.go`, `Commit`, `write`,
/// `writeMeta`).
#[test]
fn commits_write_pages_then_sync_then_meta_then_sync() {
    crate::support::install::ensure(&[crate::support::install::Need::Strace]);
    let dir = tempdir();
    let path = dir.path().join("order.db");
    drop(Db::open(&path, &rw(4096)).expect("create"));
    let log = dir.path().join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-y", "-s", "0", "-e", "trace=pwrite64,fdatasync,fsync,ftruncate", "-o"])
        .arg(&log)
        .arg(std::env::current_exe().expect("exe"))
        .args(["--exact", "bolt_crash::crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .env("MAPWISE_BOLT_CRASH_COMMITS", "40")
        .output()
        .expect("run strace");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tag = format!("<{}>", path.display());
    let calls: Vec<Call> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .filter(|l| l.contains(&tag))
        .map(|l| {
            let args = |l: &str| -> Vec<u64> {
                let inner = &l[l.find('(').expect("(") + 1..l.rfind(')').expect(")")];
                inner.rsplit(", ").filter_map(|a| a.trim().parse().ok()).collect()
            };
            if l.contains("pwrite64(") {
                let a = args(l);
                Call::Pwrite { off: a[0], len: a[1] }
            } else if l.contains("fdatasync(") {
                Call::Fdatasync
            } else if l.contains("ftruncate(") {
                Call::Ftruncate(args(l)[0])
            } else {
                Call::Fsync
            }
        })
        .collect();
    let ps = 4096u64;
    let mut i = 0;
    let mut commits = 0;
    let mut slot = None;
    let mut grew = 0;
    while i < calls.len() {
        // Growth comes before the page writes (bbolt's order, and ours
        // when the committing thread writes) or after them (when a
        // writer thread wrote them during the spill); never both.
        let mut grow = |i: &mut usize| {
            if let Some(&Call::Ftruncate(size)) = calls.get(*i) {
                assert_eq!(calls.get(*i + 1), Some(&Call::Fsync), "ftruncate then fsync");
                assert!(size.is_power_of_two() && size <= 16 << 20, "growth to {size}");
                grew += 1;
                *i += 2;
                true
            } else {
                false
            }
        };
        let grew_first = grow(&mut i);
        let mut written = std::collections::BTreeSet::new();
        while let Some(&Call::Pwrite { off, len }) = calls.get(i) {
            assert!(off >= 2 * ps, "metas untouched by data: {:?}", calls[i]);
            assert!(
                (off..off + len).step_by(ps as usize).all(|p| written.insert(p)),
                "commit {commits}: a page written twice: {:?}",
                calls[i]
            );
            i += 1;
        }
        assert!(!written.is_empty(), "commit {commits}: no data pages");
        if !grew_first {
            grow(&mut i);
        }
        assert_eq!(calls.get(i), Some(&Call::Fdatasync), "commit {commits}: sync after data");
        let Some(&Call::Pwrite { off, len }) = calls.get(i + 1) else {
            panic!("commit {commits}: no meta write: {:?}", calls.get(i + 1));
        };
        assert_eq!(len, ps, "meta write is one page");
        assert!(off == 0 || off == ps, "meta write at page 0 or 1");
        if let Some(prev) = slot {
            assert_ne!(off, prev, "metas alternate");
        }
        slot = Some(off);
        assert_eq!(calls.get(i + 2), Some(&Call::Fdatasync), "commit {commits}: sync after meta");
        i += 3;
        commits += 1;
    }
    assert_eq!(commits, 40);
    assert!(grew > 0, "the workload grows the file");
}

/// splitmix64, for kill delays.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The file at `path` as a crash left it, opened read-only: our check
/// must find nothing (`what` names the case in a failure); returns the
/// last transaction it holds and its whole content.
fn read_after_crash(path: &Path, what: &str) -> (u64, Bucket) {
    let db = Db::open(path, &Options::default()).expect("open after the crash");
    let tx = db.begin().expect("tx");
    let problems = tx.check();
    assert!(problems.is_empty(), "{what}: our check: {problems:?}");
    (counter(&tx), bolt_model::read(&tx.file()))
}

/// Go bbolt checks each crashed file and dumps it as the model says.
fn go_accepts(judged: &[(PathBuf, String)]) {
    let failures = oracle_judge(judged);
    assert!(
        failures.is_empty(),
        "Go bbolt rejected {} of {} crashed files:\n{}",
        failures.len(),
        judged.len(),
        failures.join("\n")
    );
}

/// What a crash run saw.
struct Tally {
    kills: u64,
    acked: u64,
    /// Kills after a commit's meta write but before its acknowledgement.
    landed_unacked: u64,
}

/// Run `kills` SIGKILLs against children. Panics on the first
/// inconsistency.
fn crash_loop(dir: &Path, kills: u64, seed: u64) -> Tally {
    let exe = std::env::current_exe().expect("test binary");
    let mut rng = seed;
    let mut judged: Vec<(PathBuf, String)> = Vec::new();
    let mut acked_total = 0u64;
    let mut landed_unacked = 0u64;
    let mut path = PathBuf::new();
    let mut model = Bucket::default();
    let mut model_n = 0u64;
    for kill in 0..kills {
        // A fresh file every 10 kills, so growth happens again and again.
        if kill.is_multiple_of(10) {
            path = dir.join(format!("crash-{}.db", kill / 10));
            drop(Db::open(&path, &rw(4096)).expect("create"));
            model = Bucket::default();
            model_n = 0;
        }
        let mut child = Command::new(&exe)
            .args(["--exact", "bolt_crash::crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        // Wait until the child has the file open, then let it run a
        // random while: up to 40 ms, often inside a commit.
        // (libtest prints its own lines first; `start` ends one of them.)
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if out.read_line(&mut line).expect("child output") == 0 {
                child.kill().ok();
                child.wait().ok();
                let mut err = String::new();
                child.stderr.take().expect("stderr").read_to_string(&mut err).ok();
                panic!("child did not start:\n{seen}{err}");
            }
            seen.push_str(&line);
            if line.contains("start ") {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(next(&mut rng) % 40_000));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        let mut rest = String::new();
        out.read_to_string(&mut rest).expect("child output");
        let acked = rest
            .lines()
            .filter_map(|l| l.rsplit_once("acked ").map(|(_, n)| n))
            .filter_map(|n| n.parse::<u64>().ok())
            .next_back()
            .unwrap_or(model_n);
        acked_total += acked.saturating_sub(model_n);

        let (c, got) = read_after_crash(&path, &format!("kill {kill}"));
        assert!(
            c == acked || c == acked + 1,
            "kill {kill}: file holds transaction {c}, child acknowledged {acked}"
        );
        landed_unacked += u64::from(c == acked + 1);
        while model_n < c {
            model_n += 1;
            apply_model(&mut model, model_n);
        }
        assert!(got == model, "kill {kill}: content is not exactly transaction {c}'s");
        let copy = dir.join(format!("kill-{kill}.db"));
        std::fs::copy(&path, &copy).expect("copy");
        judged.push((copy, bolt_model::dump(&model)));
    }
    go_accepts(&judged);
    Tally { kills, acked: acked_total, landed_unacked }
}

#[test]
fn sigkill_at_random_moments_never_loses_or_tears_a_commit() {
    let kills =
        std::env::var("MAPWISE_CRASH_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    let seed =
        std::env::var("MAPWISE_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED);
    let dir = tempdir();
    let t = crash_loop(dir.path(), kills, seed);
    println!(
        "crash harness: {} kills, {} acknowledged transactions, {} commits landed unacknowledged, 0 failures",
        t.kills, t.acked, t.landed_unacked
    );
    assert!(t.acked > 0, "the children committed nothing");
}

/// The newest meta page torn or overwritten (a crash during the meta
/// write, or no meta write at all): bbolt falls back to the previous meta
/// page, and so do we; the file is consistent and holds the previous
/// transaction's content, for our reader and for Go's.
#[test]
fn torn_meta_writes_fall_back_to_the_previous_snapshot() {
    let dir = tempdir();
    let path = dir.path().join("torn.db");
    let db = Db::open(&path, &rw(4096)).expect("create");
    let mut model = Bucket::default();
    for n in 1..=20 {
        db.update(|tx| apply_engine(tx, n)).expect("commit");
        apply_model(&mut model, n);
    }
    let before = model.clone();
    let ps = 4096usize;
    let slot = (db.begin().expect("tx").id() + 1) % 2;
    let old_meta = std::fs::read(&path).expect("read")[slot as usize * ps..][..ps].to_vec();
    db.update(|tx| apply_engine(tx, 21)).expect("commit 21");
    apply_model(&mut model, 21);
    drop(db);
    let good = std::fs::read(&path).expect("read");
    let new_meta = good[slot as usize * ps..][..ps].to_vec();
    assert_ne!(old_meta, new_meta);

    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    // A torn write: only the first k bytes of the new meta reached disk.
    for k in [17usize, 24, 40, 64, 71, 79] {
        let mut page = old_meta.clone();
        page[..k].copy_from_slice(&new_meta[..k]);
        cases.push((format!("torn-{k}"), page));
    }
    // Garbage, zeros, and the meta write never happening.
    cases.push(("garbage".into(), sized(99, ps)));
    cases.push(("zeros".into(), vec![0; ps]));
    cases.push(("unwritten".into(), old_meta.clone()));
    let mut judged = Vec::new();
    for (name, page) in cases {
        let mut bytes = good.clone();
        bytes[slot as usize * ps..][..ps].copy_from_slice(&page);
        let p = dir.path().join(format!("{name}.db"));
        std::fs::write(&p, &bytes).expect("write");
        {
            let db = Db::open(&p, &Options::default()).expect("open");
            let tx = db.begin().expect("tx");
            assert_eq!(counter(&tx), 20, "{name}");
            assert!(tx.check().is_empty(), "{name}: {:?}", tx.check());
            assert!(bolt_model::read(&tx.file()) == before, "{name}");
        }
        let kept = dir.path().join(format!("{name}-as-found.db"));
        std::fs::copy(&p, &kept).expect("copy");
        judged.push((kept, bolt_model::dump(&before)));
        // A writer carries on from the previous snapshot: the next commit
        // reuses the txid and rewrites the torn slot.
        let db = Db::open(&p, &rw(4096)).expect("open read-write");
        db.update(|tx| apply_engine(tx, 21)).expect("redo 21");
        drop(db);
        let redone = dir.path().join(format!("{name}-redone.db"));
        std::fs::copy(&p, &redone).expect("copy");
        judged.push((redone, bolt_model::dump(&model)));
    }
    let failures = oracle_judge(&judged);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // And the intact file holds transaction 21.
    std::fs::write(dir.path().join("good.db"), &good).expect("write");
    let out = String::from_utf8(oracle_fast(&[
        "dump",
        dir.path().join("good.db").to_str().expect("utf-8"),
    ]))
    .expect("utf-8");
    assert_eq!(out, bolt_model::dump(&model));
}

/// A commit stopped after each of its writes in turn (the engine's test
/// hook, `bolt::failpoint`), with none, part or all of the next write on
/// disk: the file must reopen, pass our check and Go bbolt's, and hold
/// exactly the transaction before (or, once the new meta page's 80
/// checksummed bytes are whole, the new one). Transaction 10 is the
/// workload's large one (growth and overflow runs), 11 reuses its pages.
#[test]
fn a_commit_stopped_after_any_write_keeps_the_previous_or_the_new_state() {
    use mapwise_native::engine::bolt::failpoint;
    let dir = tempdir();
    let base = dir.path().join("base.db");
    let mut model = Bucket::default();
    {
        let db = Db::open(&base, &rw(4096)).expect("create");
        for n in 1..=9 {
            let mut tx = db.begin_rw().expect("begin");
            apply_engine(&mut tx, n).expect("apply");
            tx.commit().expect("commit");
            apply_model(&mut model, n);
        }
    }
    let mut judged: Vec<(PathBuf, String)> = Vec::new();
    let mut crashes = 0;
    for n in [10u64, 11] {
        let before = bolt_model::dump(&model);
        let mut after_model = model.clone();
        apply_model(&mut after_model, n);
        let after = bolt_model::dump(&after_model);
        let mut k = 0u32;
        loop {
            // Nothing of the next write, about half of it, or all but
            // one byte; at the meta page also the bytes around the
            // checksum's end (79, 80).
            let mut done = false;
            for torn in [0usize, 2051, 4095, 79, 80] {
                let path = dir.path().join(format!("t{n}-w{k}-b{torn}.db"));
                std::fs::copy(&base, &path).expect("copy");
                let db = Db::open(&path, &rw(4096)).expect("open");
                let mut tx = db.begin_rw().expect("begin");
                apply_engine(&mut tx, n).expect("apply");
                failpoint::arm(k, torn);
                let r = tx.commit();
                let fired = failpoint::take();
                drop(db);
                let Some(f) = fired else {
                    r.expect("the commit ran out of writes before the crash point");
                    std::fs::remove_file(&path).ok();
                    done = true;
                    break;
                };
                assert!(r.is_err(), "{n}/{k}/{torn}: a crashed commit fails");
                if !f.meta && torn >= 79 {
                    // 79/80 matter at the meta page only.
                    std::fs::remove_file(&path).ok();
                    continue;
                }
                crashes += 1;
                let durable = f.meta && f.bytes >= 80;
                let (c, got) = read_after_crash(&path, &format!("{n}/{k}/{torn}"));
                let want_n = if durable { n } else { n - 1 };
                assert_eq!(c, want_n, "{n}/{k}/{torn}: {f:?}");
                let want = if durable { &after_model } else { &model };
                assert!(
                    got == *want,
                    "{n}/{k}/{torn}: content is not exactly transaction {want_n}'s"
                );
                // And the engine takes it back for writing.
                drop(Db::open(&path, &rw(4096)).expect("reopen read-write"));
                judged.push((path, if durable { after.clone() } else { before.clone() }));
            }
            if done {
                break;
            }
            k += 1;
        }
        assert!(k > 2, "transaction {n} made only {k} writes");
        // The next transaction starts from the completed commit.
        let db = Db::open(&base, &rw(4096)).expect("open base");
        let mut tx = db.begin_rw().expect("begin");
        apply_engine(&mut tx, n).expect("apply");
        tx.commit().expect("commit");
        model = after_model;
    }
    go_accepts(&judged);
    println!("{crashes} crash points judged by Go bbolt");
}
