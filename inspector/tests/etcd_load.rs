//! The quiet readers against a real etcd under load (Debian's etcd 3.4,
//! `testkit/etcd.rs`): a preloaded db of a few tens of MiB taking
//! Kubernetes-like writes at about 100 puts/s through the v3 JSON gateway
//! while `inspector check|layout|pages|residency|page` and `mapwise bolt
//! check|pages|info` read it, while etcd compacts and defragments, and
//! while `inspector open` watches it in tmux. The answers they must give
//! come from the peers: etcd's own consistent copy (`etcdctl snapshot
//! save`) checked by Go bbolt, vmtouch's counts, page kinds from Go
//! bbolt's `pages` of byte copies; where etcd cannot be held at a txid,
//! the etcd-shaped test writer (`testkit/writer.rs`) is, between commits.
//! Each test starts its own etcd, which its drop guard kills and reaps
//! whatever the outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mapwise_native::os::residency;
use serde_json::Value;

use crate::cli::vmtouch;
use crate::common::{Need, Run, bin, bolt_oracle, mapwise, need, run, tmpdir};
use crate::etcd::{Config, Etcd, LoadConfig};
use crate::tmux::{Tmux, shell_quote, wait_file};

/// A bound on one reader's run (they settle in well under a second on
/// these files; a follower that cannot keep up gives up on its own).
const T: Duration = Duration::from_secs(60);

/// What the preload puts before the load starts: etcd's dbSize, bytes.
const PRELOAD: u64 = 24 << 20;

/// The bbolt page size etcd uses here (the OS page size).
const PS: u64 = 4096;

/// One test of this module at a time: each keeps both cores busy (etcd,
/// its load, a reader, or the test writer and its copies), and a reader
/// that the machine starves of CPU at a 20 ms commit interval falls
/// behind and gives up (exit 2). Poisoning is ignored: a failed test
/// leaves nothing behind for the next.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An etcd of this test's own, on a disk file system (the target's
/// temporary directory), committing every `batch`.
fn start_etcd(batch: Duration) -> Etcd {
    need(&[Need::Etcd]);
    need(&[Need::Vmtouch]);
    Etcd::start_with(&Config {
        batch_interval: batch,
        parent: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
    })
}

/// [`start_etcd`], preloaded to [`PRELOAD`], with the load generator
/// running (100 puts/s for at most `load_for`) and seen to be writing:
/// the returned revisions are the preload's first and last.
fn loaded_etcd(batch: Duration, load_for: Duration) -> (Etcd, (i64, i64)) {
    let mut etcd = start_etcd(batch);
    let started = Instant::now();
    let preload = etcd.preload(PRELOAD, 7);
    let status = etcd.status();
    eprintln!(
        "etcd {}: preloaded {} keys, revisions {}..={}, dbSize {} in {:.1?}",
        etcd.endpoint,
        etcd.key_count(),
        preload.0,
        preload.1,
        status.db_size,
        started.elapsed()
    );
    etcd.start_load(&LoadConfig { duration: load_for, ..LoadConfig::default() });
    wait_for_writes(&etcd, 50);
    (etcd, preload)
}

/// Wait until the load generator's writes have moved etcd's revision on
/// by `n` (polled; the load runs at ~100 puts/s, so well within 30 s).
fn wait_for_writes(etcd: &Etcd, n: i64) {
    let from = etcd.status().revision;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = etcd.status().revision;
        if now >= from + n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "etcd's revision moved from {from} to {now} in 30 s: the load is not writing ({:?})",
            etcd.load_stats()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// FNV-1a 64, bbolt's meta checksum.
fn fnv64a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The txid of the newest valid meta page of the bbolt file at `path`
/// (bbolt's rule: magic `0xED0CDAED`, FNV-1a of the meta's first 56
/// bytes), read from its first two pages with `pread` (etcd writes both
/// at every commit, so they are cached anyway).
fn meta_txid(path: &Path) -> u64 {
    let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = vec![0u8; 2 * 4096];
    f.read_exact_at(&mut buf, 0).expect("read the meta pages");
    (0..2)
        .filter_map(|i| {
            let m = &buf[i * 4096 + 16..i * 4096 + 16 + 64];
            let magic = u32::from_le_bytes(m[0..4].try_into().unwrap());
            (magic == 0xED0C_DAED && fnv64a(&m[..56]) == le64(m, 56)).then(|| le64(m, 48))
        })
        .max()
        .unwrap_or_else(|| panic!("{}: no valid meta page", path.display()))
}

/// Go bbolt's check (the oracle) of `file`: its output, once it is `OK`.
fn oracle_check_ok(file: &Path) {
    let out = Command::new(bolt_oracle()).arg("check").arg(file).output().expect("oracle check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.lines().any(|l| l == "OK"),
        "Go bbolt's check of {}: {:?}\n{text}{}",
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `program ARGS…`, its output read while it runs (a layout's JSON is
/// more than a pipe holds), killed and reaped after [`T`]; with its wall
/// time.
fn bounded(program: &Path, args: &[&str]) -> (Run, Duration) {
    use std::io::Read as _;
    let t = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t.elapsed() > T {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} {args:?} did not finish within {T:?}", program.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = t.elapsed();
    let run = Run { code: status.code(), stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    (run, took)
}

/// `inspector ARGS…` with its wall time.
fn timed(args: &[&str]) -> (Run, Duration) {
    bounded(Path::new(bin()), args)
}

/// `mapwise ARGS…` (the quiet `bolt` readers) with its wall time.
fn mapwise_run(args: &[&str]) -> (Run, Duration) {
    bounded(&mapwise(), args)
}

/// `inspector check` on the live db while the load runs, until `RUNS`
/// runs have read under load (a commit landed while they ran: the newest
/// meta's txid moved; etcd commits on its batch timer, so a run shorter
/// than the interval may see none): every run exits 0 with exactly `OK`.
/// Then the quiet `mapwise bolt` readers, and finally Go bbolt's check of
/// etcd's own consistent copy says the true answer is OK.
fn check_is_ok_under_load(batch: Duration) {
    const RUNS: usize = 8;
    let (mut etcd, _) = loaded_etcd(batch, Duration::from_secs(90));
    let db = etcd.db();
    let p = db.to_str().unwrap();
    let mut times = Vec::new();
    for i in 0..5 * RUNS {
        let (tx0, rev0) = (meta_txid(&db), etcd.status().revision);
        let (r, took) = timed(&["check", p]);
        let (tx1, rev1) = (meta_txid(&db), etcd.status().revision);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (Some(0), "OK\n", ""),
            "inspector check run {i} on etcd's live db (batch interval {batch:?}, took \
             {took:?}, txid {tx0}→{tx1}, revision {rev0}→{rev1})"
        );
        times.push((took, tx1 - tx0));
        if times.iter().filter(|(_, n)| *n > 0).count() == RUNS {
            break;
        }
    }
    let overlapped = times.iter().filter(|(_, n)| *n > 0).count();
    assert_eq!(
        overlapped,
        RUNS,
        "runs of inspector check that a commit landed during, of {}: {times:?}",
        times.len()
    );
    eprintln!(
        "inspector check under load ({batch:?} batches): (time, commits meanwhile) {times:?}"
    );
    // The quiet readers of `mapwise bolt`, as bbolt's CLI prints them.
    for round in 0..2 {
        let tx0 = meta_txid(&db);
        let (r, took) = mapwise_run(&["bolt", "check", p]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (Some(0), "OK\n"),
            "mapwise bolt check round {round} ({took:?}): {}",
            r.stderr
        );
        let (r, took_pages) = mapwise_run(&["bolt", "pages", p]);
        assert_eq!(r.code, Some(0), "mapwise bolt pages: {}", r.stderr);
        let rows = r.stdout.lines().skip(2).count();
        assert!(
            r.stdout.starts_with("ID       TYPE       ITEMS  OVRFLW\n") && rows > 1000,
            "mapwise bolt pages ({rows} rows): {:.300}",
            r.stdout
        );
        let (r, _) = mapwise_run(&["bolt", "info", p]);
        assert_eq!(r.code, Some(0), "mapwise bolt info: {}", r.stderr);
        assert!(r.stdout.starts_with("Page Size: 4096\n"), "mapwise bolt info: {}", r.stdout);
        eprintln!(
            "mapwise bolt check {took:?}, pages {took_pages:?} ({rows} rows), {} commits meanwhile",
            meta_txid(&db) - tx0
        );
    }
    let stats = etcd.stop_load();
    assert_eq!(stats.errors, 0, "the load's requests failed: {stats:?}");
    eprintln!("load: {stats:?}");
    // The true answer: etcd's own consistent copy passes Go bbolt's check.
    let dir = tmpdir();
    let snap = dir.path().join("snap.db");
    etcd.snapshot(&snap);
    oracle_check_ok(&snap);
    snapshot_hash_is_named(&snap);
}

/// The 32 bytes `etcdctl snapshot save` appends past the last page are the
/// SHA-256 of the db before them (coreutils' `sha256sum` says so), and
/// `inspector layout` names them in a warning instead of leaving them an
/// unexplained `unused` tail.
fn snapshot_hash_is_named(snap: &Path) {
    let bytes = fs::read(snap).expect("read the snapshot");
    assert_eq!(bytes.len() % 512, 32, "etcd's snapshot has its hash");
    let (db, tail) = bytes.split_at(bytes.len() - 32);
    let mut sum = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    {
        use std::io::Write as _;
        let mut stdin = sum.stdin.take().expect("stdin");
        stdin.write_all(db).expect("feed sha256sum");
    }
    let out = sum.wait_with_output().expect("sha256sum");
    let want = String::from_utf8_lossy(&out.stdout);
    let got: String = tail.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(want.split_whitespace().next(), Some(got.as_str()));
    let p = snap.to_str().unwrap();
    let (r, _) = timed(&["layout", p, "--json"]);
    assert_eq!(r.code, Some(0), "layout {p}: {}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("layout --json");
    let offset = format!("offset {}", db.len());
    assert!(
        v["warnings"].as_array().is_some_and(|w| w.iter().any(|w| {
            w.as_str().is_some_and(|w| w.contains(&offset) && w.contains("etcdctl snapshot save"))
        })),
        "no warning names the snapshot's hash: {}",
        v["warnings"]
    );
}

#[test]
fn check_is_ok_on_a_live_etcd_db() {
    let _serial = serial();
    check_is_ok_under_load(Duration::from_millis(100));
}

#[test]
fn check_is_ok_on_a_live_etcd_db_committing_every_20ms() {
    let _serial = serial();
    check_is_ok_under_load(Duration::from_millis(20));
}

/// `ID TYPE ITEMS OVRFLW` rows of Go bbolt's `pages` (the oracle): page
/// id → (type, overflow pages).
fn oracle_pages(file: &Path) -> BTreeMap<u64, (String, u64)> {
    let out = Command::new(bolt_oracle()).arg("pages").arg(file).output().expect("oracle pages");
    assert!(
        out.status.success(),
        "Go bbolt's pages of {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip(2)
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let id: u64 = w[0].parse().unwrap_or_else(|_| panic!("row {l:?}"));
            let overflow =
                if w[1] == "free" { 0 } else { w.get(3).map_or(0, |o| o.parse().unwrap()) };
            (id, (w[1].to_string(), overflow))
        })
        .collect()
}

/// The keys of the leaf page at `bytes` (a bbolt page: 16-byte header,
/// then `count` leaf elements of 16 bytes: flags, pos, ksize, vsize, the
/// key at the element's offset + pos).
fn leaf_keys(page: &[u8]) -> Vec<&[u8]> {
    let count = usize::from(u16::from_le_bytes([page[10], page[11]]));
    (0..count)
        .map(|i| {
            let e = 16 + i * 16;
            let word = |k: usize| {
                usize::try_from(u32::from_le_bytes(page[e + k..e + k + 4].try_into().unwrap()))
                    .unwrap()
            };
            let (pos, ksize) = (word(4), word(8));
            &page[e + pos..e + pos + ksize]
        })
        .collect()
}

/// The main revision of an etcd `key` bucket key (8 bytes big-endian,
/// `_`, 8 bytes sub revision, a `t` for a tombstone), if it is one.
fn main_revision(key: &[u8]) -> Option<i64> {
    ((key.len() == 17 || key.len() == 18) && key[8] == b'_')
        .then(|| i64::from_be_bytes(key[..8].try_into().unwrap()))
}

/// Leaf pages of etcd's consistent copy `snap` (Go bbolt's page types)
/// that hold only revisions below `below`: once the preload is over,
/// etcd never writes or reads them again while nothing compacts,
/// defragments or ranges over old revisions (new revisions go to the
/// right edge of the `key` bucket; mvcc finds keys in its in-memory
/// index), so only a reader of ours can bring them into the page cache.
fn cold_leaves(snap: &Path, below: i64) -> BTreeSet<u64> {
    let bytes = fs::read(snap).expect("read the snapshot");
    oracle_pages(snap)
        .into_iter()
        .filter(|(_, (kind, overflow))| kind == "leaf" && *overflow == 0)
        .map(|(id, _)| id)
        .filter(|&id| {
            let at = usize::try_from(id * PS).unwrap();
            let keys = leaf_keys(&bytes[at..at + 4096]);
            !keys.is_empty() && keys.iter().all(|k| main_revision(k).is_some_and(|r| r < below))
        })
        .collect()
}

/// Resident pages of `path` now (mincore), as a set of page numbers.
fn resident_set(path: &Path) -> BTreeSet<u64> {
    let f = File::open(path).unwrap();
    let r = residency::sample(&f).expect("mincore");
    (0..r.total_pages).filter(|&p| r.is_resident(p)).collect()
}

/// The quiet readers leave the page cache as they found it, on a live
/// etcd db. Residency drifts on its own here (etcd's commits dirty pages,
/// its mmap faults map the right edge of the tree, a DAMON reclaimer
/// evicts idle pages), so the test looks where only a reader of ours can
/// change anything: the preload's leaf pages, which etcd never touches
/// again (see [`cold_leaves`]; found in etcd's own snapshot by Go bbolt's
/// page types). After evicting the db (`vmtouch -e`), none of them that
/// went may come back while the readers run; a buffered read of the file
/// then brings them back, so the test would see a reader that reads
/// through the cache. `inspector residency --json`'s totals equal
/// vmtouch's at the same moment.
#[test]
fn readers_leave_the_page_cache_of_a_live_etcd_db_as_they_found_it() {
    let _serial = serial();
    let (mut etcd, (_, last_preload)) =
        loaded_etcd(Duration::from_millis(100), Duration::from_secs(90));
    let db = etcd.db();
    let p = db.to_str().unwrap();
    let dir = tmpdir();
    let snap = dir.path().join("snap.db");
    etcd.snapshot(&snap);
    let cold = cold_leaves(&snap, last_preload);
    assert!(
        cold.len() > 1000,
        "only {} leaf pages of etcd's snapshot hold preload revisions alone",
        cold.len()
    );
    let st = Command::new("vmtouch").args(["-e", "-q", p]).status();
    assert!(st.is_ok_and(|s| s.success()), "vmtouch -e {p}");
    let vm_before = vmtouch(&db);
    let before = resident_set(&db);
    let evicted: BTreeSet<u64> = cold.difference(&before).copied().collect();
    // Pages etcd maps stay resident through DONTNEED; most of the
    // preload's leaves are not mapped.
    assert!(
        evicted.len() * 2 > cold.len(),
        "vmtouch -e left {} of the {} cold leaves resident (mapped by etcd?): nothing to see",
        cold.len() - evicted.len(),
        cold.len()
    );
    let pages: Vec<String> = evicted.iter().take(40).map(u64::to_string).collect();
    let mut page_args = vec!["page", p];
    page_args.extend(pages.iter().map(String::as_str));
    let mut times = Vec::new();
    for args in [
        vec!["check", p],
        vec!["layout", p, "--json"],
        vec!["layout", p],
        vec!["pages", p],
        vec!["residency", p, "--json"],
        page_args,
    ] {
        let (r, took) = timed(&args);
        assert_eq!(
            r.code,
            Some(0),
            "inspector {:?}: {}{}",
            &args[..1],
            r.stdout.chars().take(300).collect::<String>(),
            r.stderr
        );
        let now = resident_set(&db);
        let back: Vec<u64> = evicted.intersection(&now).copied().collect();
        assert!(
            back.is_empty(),
            "after `inspector {}`, {} of the {} evicted cold leaf pages of etcd's db are \
             resident again (first: {:?}); etcd never touches them",
            args[0],
            back.len(),
            evicted.len(),
            &back[..back.len().min(10)]
        );
        times.push((args[0], took));
    }
    for args in [["bolt", "check", p], ["bolt", "pages", p], ["bolt", "info", p]] {
        let (r, took) = mapwise_run(&args);
        assert_eq!(r.code, Some(0), "mapwise {args:?}: {}", r.stderr);
        let now = resident_set(&db);
        let back = evicted.intersection(&now).count();
        assert_eq!(
            back,
            0,
            "after `mapwise bolt {}`, {back} of the {} evicted cold leaf pages are resident again",
            args[1],
            evicted.len()
        );
        times.push((args[1], took));
    }
    eprintln!(
        "readers on a cold live etcd db: {times:?}; vmtouch resident {:?} after eviction, {:?} \
         after the readers (etcd's commits and faults meanwhile); {} cold leaves, {} evicted",
        vm_before,
        vmtouch(&db),
        cold.len(),
        evicted.len()
    );
    // `inspector residency --json` against vmtouch at one moment: etcd's
    // commits move the count every 100 ms, so etcd is stopped (SIGSTOP)
    // meanwhile, and the count compared when vmtouch agrees with itself
    // before and after (the reclaimer may still evict).
    let mut compared = false;
    for _ in 0..20 {
        let paused = etcd.paused();
        let a = vmtouch(&db);
        let (r, _) = timed(&["residency", p, "--json"]);
        let b = vmtouch(&db);
        drop(paused);
        assert_eq!(r.code, Some(0), "inspector residency: {}", r.stderr);
        if a == b {
            let v: Value = serde_json::from_str(&r.stdout).expect("residency JSON");
            assert_eq!(
                (v["resident_pages"].as_u64(), v["total_pages"].as_u64()),
                (Some(a.0), Some(a.1)),
                "inspector residency --json against vmtouch's Resident Pages {a:?}: {v}"
            );
            assert_eq!(v["settled"], true, "{v}");
            eprintln!("inspector residency --json and vmtouch: {a:?} resident of total");
            compared = true;
            break;
        }
    }
    assert!(compared, "vmtouch never gave the same count twice around inspector residency");
    // The control: a buffered read brings the cold pages back, which the
    // test would have seen.
    let _ = fs::read(&db).expect("read the db");
    let now = resident_set(&db);
    let back = evicted.intersection(&now).count();
    assert!(
        back * 10 >= evicted.len() * 9,
        "a buffered read of the db brought back only {back} of {} evicted cold pages",
        evicted.len()
    );
    let stats = etcd.stop_load();
    assert_eq!(stats.errors, 0, "{stats:?}");
}

/// What the test writer's thread is told and tells.
struct Ctl {
    /// Held by the writer while it commits and copies; the test takes it
    /// to wait for a commit in flight.
    turn: Mutex<()>,
    pause: AtomicBool,
    record: AtomicBool,
    stop: AtomicBool,
    /// Time between two commits.
    interval_ms: AtomicU64,
    txid: AtomicU64,
    copies: Mutex<BTreeMap<u64, PathBuf>>,
}

impl Ctl {
    /// Hold the writer between two commits; the txid it stopped at.
    fn pause(&self) -> u64 {
        self.pause.store(true, Ordering::SeqCst);
        drop(self.turn.lock().unwrap());
        self.txid.load(Ordering::SeqCst)
    }

    fn resume(&self) {
        self.pause.store(false, Ordering::SeqCst);
    }
}

/// Stops the writer on drop (also when an assertion fails), so the scope
/// joining it ends.
struct StopOnDrop<'a>(&'a Ctl);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.pause.store(false, Ordering::SeqCst);
    }
}

/// The etcd-shaped writer (`testkit/writer.rs`) on `db`: a commit every
/// `ctl.interval_ms` unless paused; while recording, a byte copy of the file
/// after every commit (and of the state it starts from), made between
/// commits, so each copy is the file at exactly its txid.
fn writer_loop(db: &mapwise_native::engine::bolt::Db, ctl: &Ctl, copies: &Path) {
    let shape = crate::writer::Shape { appends: 2, rewrites: 6, ..crate::writer::Shape::default() };
    let mut rng = crate::writer::Rng::new(0x1a7);
    let mut round = 1_000_000u64;
    let copy = |txid: u64| {
        if let std::collections::btree_map::Entry::Vacant(e) =
            ctl.copies.lock().unwrap().entry(txid)
        {
            let to = copies.join(format!("txid-{txid}.db"));
            fs::copy(db.path(), &to).expect("copy the writer's file");
            e.insert(to);
        }
    };
    while !ctl.stop.load(Ordering::SeqCst) {
        {
            let _turn = ctl.turn.lock().unwrap();
            if !ctl.pause.load(Ordering::SeqCst) {
                let record = ctl.record.load(Ordering::SeqCst);
                if record {
                    copy(ctl.txid.load(Ordering::SeqCst));
                }
                round += 1;
                crate::writer::commit(db, &shape, &mut rng, round).expect("commit");
                let txid = db.begin().expect("begin").id();
                ctl.txid.store(txid, Ordering::SeqCst);
                if record {
                    copy(txid);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(ctl.interval_ms.load(Ordering::SeqCst)));
    }
}

/// Per kind: (bytes, pages) of a `layout --json` report.
fn kinds_of(v: &Value) -> BTreeMap<String, (u64, u64)> {
    v["kinds"]
        .as_array()
        .expect("kinds")
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap().to_string(),
                (k["bytes"].as_u64().unwrap(), k["pages"].as_u64().unwrap()),
            )
        })
        .filter(|(_, (b, p))| *b > 0 || *p > 0)
        .collect()
}

/// A copy of `copy` whose newest meta page is broken (bbolt then opens
/// its other meta page): the file as of the previous txid, as a reader
/// falling back to it sees it.
fn previous_snapshot(copy: &Path, to: &Path) -> PathBuf {
    let mut bytes = fs::read(copy).unwrap();
    let txid = |i: usize| le64(&bytes, i * 4096 + 16 + 48);
    let newest = if txid(1) > txid(0) { 1 } else { 0 };
    // The checksum: no longer what the meta's bytes give.
    bytes[newest * 4096 + 16 + 56] ^= 0xff;
    fs::write(to, &bytes).unwrap();
    to.to_path_buf()
}

/// What Go bbolt's `pages` says the copy `copy` is made of, per kind as
/// the inspector names them: meta, freelist (the stored freelist run),
/// branch and leaf (run heads), overflow (their continuation pages),
/// free and pending (bbolt's free pages: pending are those the previous
/// snapshot's tree or freelist run uses, from `pages` of the copy with
/// its newest meta broken), unused (past the high-water mark to the end
/// of a file of `file_len` bytes).
fn oracle_kinds(copy: &Path, file_len: u64, scratch: &Path) -> BTreeMap<String, (u64, u64)> {
    let now = oracle_pages(copy);
    let prev = oracle_pages(&previous_snapshot(copy, scratch));
    let hwm = now.iter().map(|(id, (_, o))| id + 1 + o).max().expect("pages");
    let prev_used: BTreeSet<u64> = prev
        .iter()
        .filter(|(_, (k, _))| matches!(k.as_str(), "branch" | "leaf" | "freelist"))
        .flat_map(|(id, (_, o))| *id..=id + o)
        .collect();
    let mut n: BTreeMap<String, u64> = BTreeMap::new();
    for (id, (kind, overflow)) in &now {
        let kind = match kind.as_str() {
            "free" if prev_used.contains(id) => "pending",
            k => k,
        };
        *n.entry(kind.to_string()).or_default() += 1;
        if *overflow > 0 {
            let k = if kind == "freelist" { "freelist" } else { "overflow" };
            *n.entry(k.to_string()).or_default() += overflow;
        }
    }
    let unused = file_len / PS - hwm;
    if unused > 0 {
        n.insert("unused".into(), unused);
    }
    n.into_iter().map(|(k, p)| (k, (p * PS, p))).collect()
}

/// Page id → kind, from a `layout --json` report's regions.
fn page_kinds(v: &Value) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    for r in v["regions"].as_array().expect("regions") {
        let (off, len) = (r["offset"].as_u64().unwrap(), r["len"].as_u64().unwrap());
        for page in off / PS..(off + len).div_ceil(PS) {
            out.insert(page, r["kind"].as_str().unwrap().to_string());
        }
    }
    out
}

/// Pages whose kind differs between two layouts: (page, in `a`, in `b`),
/// the first 20.
fn differing_pages(a: &Value, b: &Value) -> Vec<(u64, String, String)> {
    let (a, b) = (page_kinds(a), page_kinds(b));
    let none = String::from("-");
    a.keys()
        .chain(b.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|p| a.get(p) != b.get(p))
        .take(20)
        .map(|p| (*p, a.get(p).unwrap_or(&none).clone(), b.get(p).unwrap_or(&none).clone()))
        .collect()
}

/// `inspector layout --json FILE` (its output can be more than a pipe
/// holds, so read while it runs).
fn layout_json(file: &Path) -> Value {
    let out = Command::new(bin())
        .args(["layout", file.to_str().unwrap(), "--json"])
        .output()
        .expect("run inspector layout");
    layout_value(&out, file)
}

fn layout_value(out: &Output, file: &Path) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "inspector layout --json {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("layout JSON")
}

/// One live `layout --json` against the writer: what happened.
#[derive(Debug)]
struct LiveRun {
    /// Milliseconds between the writer's commits.
    interval_ms: u64,
    /// The writer's txid when the read started.
    start: u64,
    /// The txid the writer was paused at.
    paused: u64,
    /// The txid the read settled on.
    settled: u64,
    took: Duration,
}

/// Live `layout --json` settled totals equal those of the offline walk
/// of a byte copy at the same txid, and Go bbolt's page kinds of it,
/// `pending` and `free` included, with the writer committing while the
/// live read runs: the read starts with the writer running; the writer is
/// paused only after `commits` more commits (or when the read ends first),
/// so the read follows commits and settles on the txid the writer stopped
/// at or on one it committed meanwhile, every one of which was copied.
fn layout_matches_copies(no_freelist_sync: bool) {
    use mapwise_native::engine::bolt::{Db, Options};
    let dir = tmpdir();
    let path = dir.path().join("w.db");
    // The copies go to memory (tmpfs) where there is one: a copy per
    // commit written to the disk would make every fsync of the writer's
    // (and of etcd's in the other tests) wait for it (ext4's ordered
    // journal).
    let copies_dir = tempfile::Builder::new()
        .prefix("mw-copies")
        .tempdir_in(Some(Path::new("/dev/shm")).filter(|d| d.is_dir()).unwrap_or(dir.path()))
        .expect("copies dir");
    let copies = copies_dir.path();
    let opts = Options { page_size: 4096, no_freelist_sync, ..Options::read_write() };
    let db = Db::open(&path, &opts).expect("create the writer's file");
    // A few MiB of etcd-shaped revisions first, so the walk takes time.
    let big =
        crate::writer::Shape { appends: 4000, rewrites: 0, ..crate::writer::Shape::default() };
    let mut rng = crate::writer::Rng::new(1);
    for round in 0..3 {
        crate::writer::commit(&db, &big, &mut rng, round).expect("preload");
    }
    let ctl = Ctl {
        turn: Mutex::new(()),
        pause: AtomicBool::new(false),
        record: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        interval_ms: AtomicU64::new(10),
        txid: AtomicU64::new(db.begin().unwrap().id()),
        copies: Mutex::new(BTreeMap::new()),
    };
    let mode = if no_freelist_sync { "NoFreelistSync" } else { "freelist synced" };
    let p = path.to_str().unwrap();
    let mut runs = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| writer_loop(&db, &ctl, copies));
        let _stop = StopOnDrop(&ctl);
        // Live runs: the writer commits every `ms` while the read runs,
        // and is paused after `commits` more commits or when the read
        // ends (`u64::MAX`: commits may land after the read settled,
        // while it replays its walk). A commit every 10 ms makes the read
        // follow commits; every 150 ms, about as long as a read takes, it
        // often settles without following one while commits still land.
        // Last, one with the writer paused throughout (a read that
        // follows no commit on a quiet file).
        let plan = [
            (12, 10),
            (6, 10),
            (u64::MAX, 10),
            (u64::MAX, 10),
            (20, 10),
            (u64::MAX, 150),
            (u64::MAX, 150),
            (u64::MAX, 150),
            (0, 10),
        ];
        for (i, (commits, ms)) in plan.into_iter().enumerate() {
            ctl.interval_ms.store(ms, Ordering::SeqCst);
            ctl.record.store(true, Ordering::SeqCst);
            if commits == 0 {
                let txid = ctl.pause();
                let to = copies.join(format!("txid-{txid}.db"));
                fs::copy(&path, &to).unwrap();
                ctl.copies.lock().unwrap().insert(txid, to);
            }
            // The state the read starts from is copied first: wait for
            // the writer's copy of its current txid (each turn it copies
            // the state it starts from, then its commit's).
            let deadline = Instant::now() + Duration::from_secs(20);
            let start = loop {
                let now = ctl.txid.load(Ordering::SeqCst);
                if ctl.copies.lock().unwrap().contains_key(&now) {
                    break now;
                }
                assert!(
                    Instant::now() < deadline,
                    "{mode} run {i}: the writer made no copy of txid {now} in 20 s"
                );
                std::thread::sleep(Duration::from_millis(1));
            };
            let t = Instant::now();
            let child = Command::new(bin())
                .args(["layout", p, "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn inspector layout");
            let reader = std::thread::spawn(move || child.wait_with_output());
            while commits > 0
                && !reader.is_finished()
                && ctl.txid.load(Ordering::SeqCst) < start.saturating_add(commits)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            let paused = ctl.pause();
            let out = reader.join().unwrap().expect("inspector layout");
            let took = t.elapsed();
            ctl.record.store(false, Ordering::SeqCst);
            let live = layout_value(&out, &path);
            let settled = live["bolt"]["txid"].as_u64().expect("txid");
            let run = LiveRun { interval_ms: ms, start, paused, settled, took };
            assert!(
                (start..=paused).contains(&settled),
                "{mode} run {i}: the live read settled on txid {settled}, not one of those the \
                 file had while it ran: {run:?}"
            );
            if commits > 0 {
                assert!(
                    paused > start,
                    "{mode} run {i}: no commit landed during the live read: {run:?}"
                );
            }
            let copy = ctl.copies.lock().unwrap()[&settled].clone();
            let copy_len = fs::metadata(&copy).unwrap().len();
            let offline = layout_json(&copy);
            let scratch = dir.path().join("previous.db");
            let oracle = oracle_kinds(&copy, copy_len, &scratch);
            let live_len = live["file_size"].as_u64().unwrap();
            let mut oracle_live = oracle.clone();
            // The live file may have grown since the copy: past the
            // high-water mark, so unused.
            if live_len > copy_len {
                let e = oracle_live.entry("unused".into()).or_default();
                e.0 += live_len - copy_len;
                e.1 += (live_len - copy_len) / PS;
            }
            // The offline walk is the reference the live one is held to:
            // it must agree with Go bbolt first.
            assert_eq!(
                kinds_of(&offline),
                oracle,
                "{mode} run {i}: offline layout of the copy at txid {settled} (bytes, pages per \
                 kind) against Go bbolt's pages of it ({run:?})"
            );
            // The live read's differences are collected over every run, so
            // one failure shows which kinds of run it happens in.
            if kinds_of(&live) != oracle_live {
                failures.push(format!(
                    "{mode} run {i}: live settled layout at txid {settled} (bytes, pages per \
                     kind) against Go bbolt's pages of the copy at that txid ({run:?}; file \
                     {live_len} bytes live, {copy_len} in the copy)\n  live:   {:?}\n  \
                     oracle: {oracle_live:?}\n  pages whose kind differs (page, live, offline \
                     walk of the copy): {:?}; the previous meta's freelist page: {}",
                    kinds_of(&live),
                    differing_pages(&live, &offline),
                    offline["bolt"]["metas"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|m| m["txid"].as_u64() == Some(settled - 1))
                        .map(|m| m["freelist"].to_string())
                        .collect::<String>()
                ));
            }
            if live["buckets"] != offline["buckets"] {
                failures.push(format!(
                    "{mode} run {i}: buckets, live against the copy at txid {settled} \
                     ({run:?}):\n  live:    {}\n  offline: {}",
                    live["buckets"], offline["buckets"]
                ));
            }
            if live["bolt"] != offline["bolt"] {
                failures.push(format!(
                    "{mode} run {i}: meta facts, live against the copy at txid {settled} \
                     ({run:?}):\n  live:    {}\n  offline: {}",
                    live["bolt"], offline["bolt"]
                ));
            }
            eprintln!("{mode} run {i}: {run:?}: kinds {:?}", kinds_of(&live));
            runs.push(run);
            // Only copies still to come matter.
            for (_, f) in std::mem::take(&mut *ctl.copies.lock().unwrap()) {
                let _ = fs::remove_file(f);
            }
            ctl.resume();
        }
    });
    let followed = runs.iter().filter(|r| r.settled > r.start).count();
    let after = runs.iter().filter(|r| r.paused > r.settled).count();
    let unfollowed: Vec<u64> = runs
        .iter()
        .filter(|r| r.settled == r.start && r.paused > r.start)
        .map(|r| r.interval_ms)
        .collect();
    let slowest = runs.iter().map(|r| r.took).max().unwrap_or_default();
    eprintln!(
        "layout live against copies ({mode}): {} runs, {followed} settled on a txid committed \
         during the read, {} settled on the txid they started at while commits landed (writer \
         intervals, ms: {unfollowed:?}), {after} saw commits after the txid they settled on; \
         slowest {slowest:?}",
        runs.len(),
        unfollowed.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} live reads differ from the same snapshot read offline:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
}

#[test]
fn live_layout_totals_equal_a_copy_at_the_same_txid_no_freelist_sync() {
    let _serial = serial();
    layout_matches_copies(true);
}

#[test]
fn live_layout_totals_equal_a_copy_at_the_same_txid_freelist_synced() {
    let _serial = serial();
    layout_matches_copies(false);
}

/// One `etcdctl defrag`: when, and the db file's inode and newest txid
/// before it, its inode after.
struct Defrag {
    start: Instant,
    end: Instant,
    inode_before: u64,
    inode_after: u64,
    txid_before: u64,
}

/// One reader's run during compaction and defrag.
#[derive(Debug)]
struct Read {
    cmd: &'static str,
    start: Instant,
    end: Instant,
    code: Option<i32>,
    txid: Option<u64>,
}

/// `inspector check` and `layout`, and `mapwise bolt check`, in a loop
/// while etcd compacts (physically) and defragments twice under the load:
/// defrag writes a new file and renames it over the db, so a reader must
/// settle on the old inode or the new one (exit 0, `OK`), or say it
/// could not, naming the file (exit 2); never report a healthy db
/// corrupt (exit 1). At least one read overlaps each defrag, and each
/// defrag replaced the file (its inode changed).
#[test]
fn readers_during_compaction_and_defrag() {
    let _serial = serial();
    let (mut etcd, _) = loaded_etcd(Duration::from_millis(100), Duration::from_secs(90));
    let db = etcd.db();
    let p = db.to_str().unwrap().to_string();
    let done = AtomicBool::new(false);
    let windows: Mutex<Vec<Defrag>> = Mutex::new(Vec::new());
    let mut reads: Vec<Read> = Vec::new();
    let etcd_ref = &etcd;
    std::thread::scope(|s| {
        s.spawn(|| {
            struct Done<'a>(&'a AtomicBool);
            impl Drop for Done<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            let _done = Done(&done);
            for _ in 0..2 {
                // Let the readers run a while first.
                std::thread::sleep(Duration::from_secs(2));
                let rev = etcd_ref.status().revision;
                etcd_ref.compact(rev - 200, true);
                let inode_before = fs::metadata(&db).unwrap().ino();
                let txid_before = meta_txid(&db);
                let start = Instant::now();
                etcd_ref.defrag();
                let end = Instant::now();
                windows.lock().unwrap().push(Defrag {
                    start,
                    end,
                    inode_before,
                    inode_after: fs::metadata(&db).unwrap().ino(),
                    txid_before,
                });
            }
            std::thread::sleep(Duration::from_secs(1));
        });
        let mut i = 0;
        while !done.load(Ordering::SeqCst) {
            let cmd = ["check", "layout", "bolt check"][i % 3];
            i += 1;
            let start = Instant::now();
            let (r, txid) = match cmd {
                "check" => (timed(&["check", &p]).0, None),
                "layout" => {
                    let (mut r, _) = timed(&["layout", &p, "--json"]);
                    let txid = (r.code == Some(0))
                        .then(|| serde_json::from_str::<Value>(&r.stdout).ok())
                        .flatten()
                        .and_then(|v| v["bolt"]["txid"].as_u64());
                    // Regions and buckets: not for the messages below.
                    r.stdout.clear();
                    (r, txid)
                }
                _ => (mapwise_run(&["bolt", "check", &p]).0, None),
            };
            let end = Instant::now();
            match r.code {
                Some(0) => assert!(
                    cmd == "layout" || r.stdout == "OK\n",
                    "{cmd} exited 0 without OK: {}",
                    r.stdout
                ),
                Some(2) => assert!(
                    r.stderr.contains(&p),
                    "{cmd} exited 2 without naming the file: {}",
                    r.stderr
                ),
                c => panic!(
                    "{cmd} on etcd's db during compaction/defrag: exit {c:?} (a healthy db \
                     reported as damaged?)\n{}{}",
                    r.stdout.chars().take(2000).collect::<String>(),
                    r.stderr
                ),
            }
            assert!(
                !r.stdout.contains("corrupt"),
                "{cmd}: {}",
                r.stdout.chars().take(2000).collect::<String>()
            );
            reads.push(Read { cmd, start, end, code: r.code, txid });
        }
    });
    let windows = windows.into_inner().unwrap();
    assert_eq!(windows.len(), 2, "two defrags");
    for (k, d) in windows.iter().enumerate() {
        assert_ne!(d.inode_before, d.inode_after, "defrag {k} did not replace the db file");
        let during: Vec<&Read> =
            reads.iter().filter(|r| r.start < d.end && r.end > d.start).collect();
        assert!(!during.is_empty(), "no read overlapped defrag {k} ({:?})", d.end - d.start);
        // A layout that settled names its txid: the old file's go on from
        // `txid_before`, the new file's start again near 1.
        let file = |t: Option<u64>| match t {
            Some(t) if t >= d.txid_before => "old file",
            Some(_) => "new file",
            None => "-",
        };
        eprintln!(
            "defrag {k}: {:?}, inode {} → {} (txid {} before); reads during it: {:?}",
            d.end - d.start,
            d.inode_before,
            d.inode_after,
            d.txid_before,
            during
                .iter()
                .map(|r| (r.cmd, r.code, r.txid, file(r.txid), r.end - r.start))
                .collect::<Vec<_>>()
        );
    }
    let exit2 = reads.iter().filter(|r| r.code == Some(2)).count();
    eprintln!("{} reads during compaction and defrag, {exit2} exited 2", reads.len());
    let stats = etcd.stop_load();
    assert_eq!(stats.errors, 0, "{stats:?}");
    let r = run(&["check", &p], T);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "OK\n"), "{}", r.stderr);
}

/// Per-kind page totals on the status line (`KIND R/P PCT` chunks) and
/// the `Resident R/T pages` total, from one screen.
fn screen_totals(screen: &str) -> (Option<u64>, BTreeMap<String, u64>) {
    let kinds = [
        "meta",
        "freelist",
        "branch",
        "leaf",
        "overflow",
        "free",
        "pending",
        "unreachable",
        "unused",
        "unknown",
        "corrupt",
    ];
    let mut total = None;
    let mut per = BTreeMap::new();
    for line in screen.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        for i in 0..w.len().saturating_sub(1) {
            let Some((_, p)) = w[i + 1].split_once('/') else {
                continue;
            };
            let Ok(p) = p.parse::<u64>() else { continue };
            if w[i] == "Resident" {
                total = Some(p);
            } else if kinds.contains(&w[i]) {
                per.insert(w[i].to_string(), p);
            }
        }
    }
    (total, per)
}

/// `as of txid N, X s ago` (or `as of txid N, now`: X = 0) on the screen: (N, X).
fn screen_age(screen: &str) -> Option<(u64, f64)> {
    let at = screen.find("as of txid ")?;
    let rest = &screen[at + "as of txid ".len()..];
    let (n, rest) = rest.split_once(", ")?;
    if rest.starts_with("now") {
        // The structure is of the newest commit the follower has seen.
        return Some((n.parse().ok()?, 0.0));
    }
    let x = rest.split_once(" s ago")?.0;
    Some((n.parse().ok()?, x.parse().ok()?))
}

/// `inspector open DB` in tmux for 20 s while etcd takes the load: the
/// status line shows a settled structure (`as of txid N, X s ago`, N a
/// txid etcd committed, moving on), the per-kind page totals it shows add
/// up to the file's pages, nothing is `corrupt`, and `q` exits 0.
#[test]
fn tui_follows_a_live_etcd_for_20_s() {
    let _serial = serial();
    need(&[Need::Tmux]);
    let (mut etcd, _) = loaded_etcd(Duration::from_millis(100), Duration::from_secs(90));
    let db = etcd.db();
    let dir = tmpdir();
    let rc = dir.path().join("rc");
    let cmd = format!(
        "{} open {} --interval 500; echo $? > {}",
        shell_quote(Path::new(bin())),
        shell_quote(&db),
        shell_quote(&rc)
    );
    let t = Tmux::new(250, 50, &cmd);
    let first = t
        .wait_for(300, Duration::from_millis(100), |s| screen_age(s).is_some())
        .unwrap_or_else(|s| panic!("no settled structure on screen within 30 s:\n{s}"));
    let (first_txid, _) = screen_age(&first).unwrap();
    let start = Instant::now();
    let mut seen = Vec::new();
    let (mut mismatch, mut mismatches) = (None, 0);
    while start.elapsed() < Duration::from_secs(20) {
        // A capture can catch a frame half drawn (tmux shows what the
        // terminal has been sent so far): its status line is looked at
        // again, up to 3 times, 100 ms apart, before it counts as cut.
        let mut screen = t.screen();
        for _ in 0..3 {
            if screen_age(&screen).is_some() && screen.contains("· every 500 ms") {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            screen = t.screen();
        }
        let newest = meta_txid(&db);
        assert!(!screen.contains("corrupt"), "`corrupt` on screen under load:\n{screen}");
        let Some((txid, age)) = screen_age(&screen) else {
            panic!("the status line lost its `as of txid` under load:\n{screen}");
        };
        assert!(
            txid <= newest,
            "the screen shows txid {txid}, past the newest etcd committed ({newest}):\n{screen}"
        );
        let (total, per) = screen_totals(&screen);
        assert!(
            screen.contains("· every 500 ms"),
            "the status line was cut (kind totals may be missing):\n{screen}"
        );
        let mut total = total.unwrap_or_else(|| panic!("no Resident total:\n{screen}"));
        let (mut per, mut screen) = (per, screen);
        let mut sum: u64 = per.values().sum();
        // tmux shows what the terminal has been sent so far: under load a
        // capture can catch a frame half drawn, its status line a mix of
        // two frames' (a kind named `freew`, seen once). Such a screen is
        // looked at again; a frame that does not add up stays on screen
        // for the 500 ms between two redraws and is counted.
        for _ in 0..3 {
            if sum == total {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            screen = t.screen();
            let (again, p) = screen_totals(&screen);
            total = again.unwrap_or(total);
            sum = p.values().sum();
            per = p;
        }
        if sum != total {
            let len = fs::metadata(&db).unwrap().len();
            if mismatch.is_none() {
                mismatch = Some(format!(
                    "kind totals {per:?} sum to {sum}, the file has {total} pages (as of txid \
                     {txid}, {age} s ago; file {len} bytes just after):\n{screen}"
                ));
            }
            mismatches += 1;
        }
        seen.push((txid, age, sum == total));
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!("TUI under load: (txid, age, totals add up) {seen:?}");
    let last = seen.last().unwrap().0;
    assert!(
        last > first_txid,
        "the shown structure stayed at txid {first_txid} for 20 s of commits: {seen:?}"
    );
    t.keys(&["q"]);
    let code = wait_file(&rc, Duration::from_secs(10)).expect("the inspector did not exit");
    assert_eq!(code.trim(), "0", "inspector open's exit status");
    let stats = etcd.stop_load();
    assert_eq!(stats.errors, 0, "{stats:?}");
    // Last, so that the checks above run whatever this finds.
    assert!(
        mismatch.is_none(),
        "on {mismatches} of {} screens over 20 s, the per-kind page totals on the status line \
         did not add up to the file's pages; the first:\n{}",
        seen.len(),
        mismatch.unwrap_or_default()
    );
}
