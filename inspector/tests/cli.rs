//! The subcommands, run as a user would: residency against vmtouch, no
//! change to residency, corrupt inputs, sparse files.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mapwise_native::os::residency;

use crate::common::{Need, bolt_oracle, copy_to, need, run, testdata, tmpdir};

const T: Duration = Duration::from_secs(20);

fn resident(path: &Path) -> u64 {
    let f = File::open(path).unwrap();
    residency::sample(&f).unwrap().resident_pages
}

fn evict(path: &Path) {
    let f = File::open(path).unwrap();
    residency::evict(&f, 0, residency::TO_EOF).unwrap();
}

/// vmtouch's "Resident Pages: R/T" for `path`.
pub(crate) fn vmtouch(path: &Path) -> (u64, u64) {
    crate::common::need(&[crate::common::Need::Vmtouch]);
    let out = Command::new("vmtouch").arg(path).output().expect("vmtouch");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("Resident Pages:"))
        .unwrap_or_else(|| panic!("no totals in {text}"));
    let counts = line.split_whitespace().nth(2).unwrap();
    let (r, t) = counts.split_once('/').unwrap();
    (r.parse().unwrap(), t.parse().unwrap())
}

fn json(args: &[&str]) -> serde_json::Value {
    let r = run(args, T);
    assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

#[test]
fn residency_matches_vmtouch() {
    need(&[Need::Vmtouch]);
    let dir = tmpdir();
    let path = dir.path().join("data.bin");
    {
        let mut f = File::create(&path).unwrap();
        let chunk: Vec<u8> = (0..1 << 20)
            .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
            .collect();
        for _ in 0..8 {
            f.write_all(&chunk).unwrap();
        }
        f.sync_all().unwrap();
    }
    evict(&path);
    // A partial read: 1 MiB from the middle (read-ahead adds more, and may
    // land while we look, so compare only when vmtouch agrees with itself).
    let f = File::open(&path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    f.read_exact_at(&mut buf, 3 << 20).unwrap();
    let p = path.to_str().unwrap();
    for attempt in 0.. {
        let before = vmtouch(&path);
        let v = json(&["residency", p, "--json"]);
        let after = vmtouch(&path);
        if before == after {
            assert!(before.0 > 0 && before.0 < before.1, "a partial read: {before:?}");
            assert_eq!(v["resident_pages"].as_u64(), Some(before.0), "{v}");
            assert_eq!(v["total_pages"].as_u64(), Some(before.1), "{v}");
            assert_eq!(v["trust"], "known");
            assert_eq!(v["size"].as_u64(), Some(8 << 20));
            assert_eq!(v["format"], "unknown");
            assert_eq!(v["kinds"].as_array().map(Vec::len), Some(0));
            // The text form prints vmtouch's totals line verbatim.
            let text = run(&["residency", p], T).stdout;
            let vm = Command::new("vmtouch").arg(&path).output().unwrap();
            let vm = String::from_utf8_lossy(&vm.stdout).into_owned();
            let vm_line = vm.lines().find(|l| l.contains("Resident Pages:")).unwrap().trim();
            if vmtouch(&path) == before {
                assert!(text.contains(vm_line), "{text}\nvs\n{vm}");
            }
            break;
        }
        assert!(attempt < 50, "residency never settled");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn residency_json_fields_and_kinds() {
    let dir = tmpdir();
    let path = copy_to(dir.path(), "small.db");
    evict(&path);
    let v = json(&["residency", path.to_str().unwrap(), "--json"]);
    for field in [
        "file",
        "size",
        "page_size",
        "total_pages",
        "resident_pages",
        "resident_bytes",
        "percent",
        "trust",
        "trust_reason",
        "cachestat",
        "kinds",
    ] {
        assert!(v.get(field).is_some(), "missing {field}: {v}");
    }
    assert_eq!(v["resident_pages"].as_u64(), Some(0));
    assert_eq!(v["total_pages"].as_u64(), Some(16));
    let kinds: Vec<&str> =
        v["kinds"].as_array().unwrap().iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["meta", "freelist", "leaf", "pending", "unused"]);
    assert!(v["kinds"].as_array().unwrap().iter().all(|k| k["resident_bytes"] == 0));
}

#[test]
fn subcommands_leave_an_evicted_file_evicted_and_unchanged() {
    let dir = tmpdir();
    let path = copy_to(dir.path(), "etcd-small.db");
    let p = path.to_str().unwrap();
    let before = fs::metadata(&path).unwrap();
    evict(&path);
    assert_eq!(resident(&path), 0);
    for args in [
        vec!["residency", p],
        vec!["residency", p, "--json"],
        vec!["pages", p],
        vec!["pages", p, "--json"],
        vec!["page", p, "0", "1", "3", "53", "54"],
        vec!["page", p, "53", "--json"],
        vec!["check", p],
        vec!["check", p, "--json"],
        vec!["layout", p],
        vec!["layout", p, "--json"],
    ] {
        let r = run(&args, T);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
        assert!(!r.stdout.is_empty(), "{args:?}");
        assert_eq!(resident(&path), 0, "`inspector {}` changed residency", args.join(" "));
    }
    let after = fs::metadata(&path).unwrap();
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
    assert_eq!(fs::read(&path).unwrap(), fs::read(testdata("etcd-small.db")).unwrap());
}

#[test]
fn pages_table_of_small_db() {
    let r = run(&["pages", testdata("small.db").to_str().unwrap()], T);
    assert_eq!(r.code, Some(0));
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("pages_small_db", r.stdout);
    });
    let v = json(&["pages", testdata("small.db").to_str().unwrap(), "--json"]);
    assert_eq!(v[11]["type"], "freelist");
    assert_eq!(v[2]["type"], "free");
    assert!(v[2]["items"].is_null());
}

#[test]
fn page_decodes_as_the_detail_pane() {
    let p = testdata("small.db");
    let p = p.to_str().unwrap();
    let r = run(&["page", p, "0", "11", "5"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("page_small_db_0_11_5", r.stdout);
    });
    let v = json(&["page", p, "5", "--json"]);
    assert_eq!(v[0]["type"], "leaf");
    let els = v[0]["elements"].as_array().unwrap();
    assert!(els.iter().any(|e| e["kind"] == "bucket"), "{v}");
    // A page past the end is a clear error and exit 1, not a panic.
    let r = run(&["page", p, "99999"], T);
    assert_eq!(r.code, Some(1));
    assert!(r.stdout.contains("page 99999: cannot decode"), "{}", r.stdout);
}

#[test]
fn check_ok_on_the_corpus() {
    for name in [
        "small.db",
        "etcd-small.db",
        "freelist.db",
        "overflow.db",
        "nofreelistsync.db",
        "freelist-1k.db",
    ] {
        let r = run(&["check", testdata(name).to_str().unwrap()], T);
        assert_eq!((r.code, r.stdout.as_str()), (Some(0), "OK\n"), "{name}: {}", r.stderr);
    }
}

/// `inspector check` on a damaged copy: exit 1, a clear line, no panic.
fn check_damaged(name: &str, damage: impl FnOnce(&Path)) -> String {
    let dir = tmpdir();
    let path = copy_to(dir.path(), name);
    damage(&path);
    let start = Instant::now();
    let r = run(&["check", path.to_str().unwrap()], Duration::from_secs(10));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(r.code, Some(1), "stdout {} stderr {}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(!r.stdout.trim().is_empty());
    assert!(!r.stdout.lines().any(|l| l == "OK"), "{}", r.stdout);
    // The other subcommands fail cleanly too.
    for cmd in ["pages", "layout", "residency"] {
        let o = run(&[cmd, path.to_str().unwrap()], Duration::from_secs(10));
        assert!(!o.stderr.contains("panicked"), "{cmd}: {}", o.stderr);
        if o.code != Some(0) {
            if cmd == "layout" && o.stderr.is_empty() {
                assert_eq!(o.code, Some(1), "{cmd}");
                // The layout was read; its problems are counted.
                assert!(o.stdout.contains("problem(s) found"), "{}", o.stdout);
            } else {
                // The file does not read as bbolt: exit 1 (a problem of
                // the file, as `check` says) and one line.
                assert_eq!(o.code, Some(1), "{cmd}");
                assert!(o.stderr.starts_with("inspector: "), "{cmd}: {}", o.stderr);
                assert_eq!(o.stderr.trim().lines().count(), 1, "{cmd}: {}", o.stderr);
            }
        }
    }
    r.stdout.replace(&path.display().to_string(), "FILE")
}

fn poke(path: &Path, offset: u64, bytes: &[u8]) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, offset).unwrap();
}

#[test]
fn check_truncated_file() {
    let out = check_damaged("etcd-small.db", |p| {
        OpenOptions::new().write(true).open(p).unwrap().set_len(100_000).unwrap();
    });
    assert!(out.lines().next().unwrap().contains("page"), "{out}");
}

#[test]
fn check_both_meta_checksums_flipped() {
    let out = check_damaged("small.db", |p| {
        // The checksum field: page header (16) + 56 checksummed bytes.
        poke(p, 16 + 56, &[0xde, 0xad]);
        poke(p, 4096 + 16 + 56, &[0xbe, 0xef]);
    });
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("checksum"), "{out}");
    assert!(out.starts_with("FILE: "), "{out}");
}

#[test]
fn check_element_pos_past_the_page() {
    // Page 4 of small.db is a leaf; its first element's `pos` (bytes 4..8
    // of the 16-byte element at page offset 16) now points far outside.
    let out = check_damaged("small.db", |p| {
        poke(p, 4 * 4096 + 16 + 4, &0x00ff_fff0u32.to_le_bytes());
    });
    assert!(out.contains("page 4"), "{out}");
}

#[test]
fn not_bolt_and_empty_files() {
    let dir = tmpdir();
    let junk = dir.path().join("junk.bin");
    fs::write(&junk, vec![0x5a; 10_000]).unwrap();
    let empty = dir.path().join("empty");
    File::create(&empty).unwrap();
    for path in [&junk, &empty] {
        let p = path.to_str().unwrap();
        let r = run(&["check", p], T);
        assert_eq!(r.code, Some(1), "{p}");
        assert!(
            r.stdout.contains("not a bbolt, RRDtool or revlog file") || r.stdout.contains("empty"),
            "{}",
            r.stdout
        );
        for cmd in ["pages", "layout"] {
            let r = run(&[cmd, p], T);
            // A file of no format these read: exit 1, as `check`.
            assert_eq!(r.code, Some(1), "{cmd} {p}");
            assert!(r.stderr.starts_with("inspector: "), "{}", r.stderr);
            assert!(!r.stderr.contains("panicked"));
        }
        // layout names every format it tried.
        if path == &junk {
            let r = run(&["layout", p], T);
            assert!(
                r.stderr.contains("format not recognised (tried bbolt, rrd, revlog)"),
                "{}",
                r.stderr
            );
        }
        // residency works on any file.
        let v = json(&["residency", p, "--json"]);
        assert_eq!(v["format"], "unknown");
    }
    let r = run(&["check", dir.path().join("missing").to_str().unwrap()], T);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("cannot open"), "{}", r.stderr);
}

#[test]
fn residency_of_a_64_gib_sparse_file() {
    let dir = tmpdir();
    let path = dir.path().join("sparse");
    File::create(&path).unwrap().set_len(64 << 30).unwrap();
    // Its speed is measured by `cargo xtask bench bolt-scan`; here only
    // what it says (and that it finishes within the run limit).
    let v = json(&["residency", path.to_str().unwrap(), "--json"]);
    assert_eq!(v["total_pages"].as_u64(), Some((64u64 << 30) / 4096));
    assert_eq!(v["resident_pages"].as_u64(), Some(0));
}

#[test]
fn demo_file_from_the_repo_or_a_bundled_copy() {
    use mapwise_inspector::demo::{DEMO_BYTES, demo_file, demo_file_in};
    let (path, label) = demo_file().unwrap();
    assert!(label.ends_with(" [demo]"), "{label}");
    assert_eq!(fs::read(&path).unwrap(), DEMO_BYTES);
    // Without the repository: the bundled bytes, written once, reused.
    let dir = tmpdir();
    let (p1, l1) = demo_file_in(&dir.path().join("no-repo.db"), &dir.path().join("demo")).unwrap();
    assert!(l1.ends_with(" [demo, bundled copy]"), "{l1}");
    assert_eq!(fs::read(&p1).unwrap(), DEMO_BYTES);
    let before = fs::metadata(&p1).unwrap().modified().unwrap();
    let (p2, _) = demo_file_in(&dir.path().join("no-repo.db"), &dir.path().join("demo")).unwrap();
    assert_eq!(p1, p2);
    assert_eq!(fs::metadata(&p2).unwrap().modified().unwrap(), before);
    let r = run(&["check", p1.to_str().unwrap()], T);
    assert_eq!(r.stdout, "OK\n");
}

#[test]
fn pages_match_the_bbolt_oracle() {
    let oracle = bolt_oracle();
    for name in [
        "small.db",
        "etcd-small.db",
        "freelist.db",
        "freelist-1k.db",
        "overflow.db",
        "nofreelistsync.db",
    ] {
        let file = testdata(name);
        let ours = run(&["pages", file.to_str().unwrap()], T);
        let theirs = Command::new(&oracle).arg("pages").arg(&file).output().expect("oracle");
        assert!(theirs.status.success(), "oracle failed on {name}");
        assert_eq!(ours.stdout, String::from_utf8_lossy(&theirs.stdout), "{name}");
    }
}

/// `inspector layout --json` on an RRD file reports the archives as
/// `rrdtool info` reports them, and `check` finds the corpus clean.
#[test]
fn rrd_layout_agrees_with_rrdtool_info() {
    need(&[Need::Rrdtool]);
    for name in ["gauge.rrd", "hw.rrd", "mhw.rrd", "dtypes.rrd"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd").join(name);
        let p = path.to_str().unwrap();
        let info = Command::new("rrdtool").args(["info", p]).env("TZ", "UTC").output().unwrap();
        let info = String::from_utf8(info.stdout).unwrap();
        let field = |key: &str| -> String {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = ")))
                .unwrap_or_else(|| panic!("{name}: no {key} in rrdtool info"))
                .trim_matches('"')
                .to_string()
        };
        let v = json(&["layout", p, "--json"]);
        let rrd = &v["rrd"];
        assert_eq!(rrd["step"].as_u64().unwrap().to_string(), field("step"), "{name}");
        assert_eq!(
            rrd["last_update"].as_i64().unwrap().to_string(),
            field("last_update"),
            "{name}"
        );
        assert_eq!(rrd["version"].as_str().unwrap(), field("rrd_version"), "{name}");
        for (i, a) in rrd["rras"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                a["cf"].as_str().unwrap(),
                field(&format!("rra[{i}].cf")),
                "{name} rra[{i}]"
            );
            assert_eq!(
                a["rows"].as_u64().unwrap().to_string(),
                field(&format!("rra[{i}].rows")),
                "{name} rra[{i}]"
            );
            assert_eq!(
                a["cur_row"].as_u64().unwrap().to_string(),
                field(&format!("rra[{i}].cur_row")),
                "{name} rra[{i}]"
            );
        }
        let r = run(&["check", p], T);
        assert_eq!((r.code, r.stdout.as_str()), (Some(0), "OK\n"), "{name}: {}", r.stderr);
    }
}

#[test]
fn open_without_a_terminal_fails_before_touching_it() {
    // `echo | inspector open small.db | head`: nothing on stdout (no
    // escape codes), a clear message, exit 2.
    let mut child = Command::new(crate::common::bin())
        .args(["open", testdata("small.db").to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn inspector");
    let _ = child.stdin.take().unwrap().write_all(b"\n");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < T, "inspector open did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "stdout untouched");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "the live view needs a terminal, but standard input and standard output are not one"
        ),
        "{err}"
    );
}

#[test]
fn check_while_a_writer_commits_never_reports_false_problems() {
    // The user's report: `inspector check` in a loop while a writer
    // commits said 'page N is already in use' on a healthy file. A read
    // that a commit overlaps is retried; one that never settles exits 2.
    use mapwise_native::engine::bolt::{Db, Options};
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tmpdir();
    let path = dir.path().join("w3.db");
    let opts = Options { page_size: 4096, no_sync: true, ..Options::read_write() };
    let db = Db::open(&path, &opts).expect("create");
    let rewrite = |round: u64| crate::churn::rewrite(&db, 8_000, round);
    rewrite(0);
    let pages = fs::metadata(&path).unwrap().len() / 4096;
    let stop = AtomicBool::new(false);
    let p = path.to_str().unwrap();
    // Stops the writer when the loop below ends, also by a failed
    // assertion (else the scope would wait for the writer forever).
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut round = 1;
            while !stop.load(Ordering::Relaxed) {
                rewrite(round);
                round += 1;
            }
        });
        let _stop = StopOnDrop(&stop);
        for i in 0..8 {
            let cmd = ["check", "layout", "pages", "page"][i % 4];
            let r = if cmd == "page" {
                // Every page the file had at the start, decoded: the ones
                // a commit rewrites meanwhile are read again with it.
                let ids: Vec<String> = (0..pages).map(|i| i.to_string()).collect();
                let mut args = vec![cmd, p];
                args.extend(ids.iter().map(String::as_str));
                run(&args, T)
            } else {
                run(&[cmd, p], T)
            };
            assert!(
                r.code == Some(0)
                    || (r.code == Some(2) && r.stderr.contains("no read was of one snapshot")),
                "{cmd} run {i}: {:?}\n{}{}",
                r.code,
                r.stdout,
                r.stderr
            );
        }
    });
    drop(db);
    let r = run(&["check", p], T);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "OK\n"), "{}", r.stderr);
}

fn revlog_testdata(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/revlog").join(name)
}

/// Revisions hg lists for a corpus index (`hg debugindex` beside it).
fn hg_revisions(name: &str) -> u64 {
    let text = fs::read_to_string(revlog_testdata(&format!("{name}.debugindex.txt"))).unwrap();
    text.lines().skip(1).filter(|l| !l.trim().is_empty()).count() as u64
}

/// One bad field in revision 0 (p1 = 5000, which hg itself trips over:
/// `IndexError: revlog index out of range`) leaves the file a revlog: the
/// layout still has every revision hg lists, and the fault is a problem
/// naming the revision and the field.
#[test]
fn revlog_with_a_bad_field_in_rev_0_is_still_a_revlog() {
    let dir = tmpdir();
    let path = dir.path().join("00changelog.i");
    fs::copy(revlog_testdata("00changelog.i"), &path).unwrap();
    // v1 entry: offset/flags (8), comp (4), uncomp (4), base (4),
    // link (4), p1 (4) at byte 24.
    poke(&path, 24, &5000i32.to_be_bytes());
    let p = path.to_str().unwrap();
    let r = run(&["check", p], T);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stdout.contains("revision 0")
            && r.stdout.contains("parent_rev_1")
            && r.stdout.contains("5000"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("not a"), "{}", r.stdout);
    // The JSON lists every region: more than a pipe holds, so read it
    // while the command runs.
    let out = Command::new(crate::common::bin()).args(["layout", p, "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "problems found");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "revlog");
    assert_eq!(v["revlog"]["revisions"].as_u64(), Some(hg_revisions("00changelog.i")));
    let r = run(&["layout", p], T);
    assert!(r.stdout.starts_with("format revlog"), "{}{}", r.stdout, r.stderr);
}

/// `rrdtool info` of `path` (the peer must be there: the test needs it).
fn rrd_info(path: &Path) -> crate::peers::RrdInfo {
    crate::peers::rrdtool_info(path).expect("rrdtool info")
}

/// PAGES per kind is the number of distinct OS pages the kind's regions
/// touch: each archive's current row, where `rrdtool info` puts it, and
/// the rows around them.
#[test]
fn rrd_kind_pages_are_pages_touched() {
    need(&[Need::Rrdtool]);
    let ps = residency::os_page_size();
    let files = [
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd/gauge.rrd"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd/hw.rrd"),
        // The corpus's 1.7 MiB `big` shape (`peers/rrd/peer gen --shape big`).
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd/big.rrd"),
    ];
    for path in files {
        let (header, ds, rras) = rrd_info(&path);
        let row = ds * 8;
        let mut cur = std::collections::BTreeSet::new();
        let mut rows = std::collections::BTreeSet::new();
        let mut at = header;
        for (n, c) in rras {
            for r in 0..n {
                let off = at + r * row;
                let set = if r == c { &mut cur } else { &mut rows };
                set.extend(off / ps..=(off + row - 1) / ps);
            }
            at += n * row;
        }
        let v = json(&["layout", path.to_str().unwrap(), "--json"]);
        let kind = |k: &str| {
            v["kinds"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["kind"] == k)
                .map(|t| t["pages"].as_u64().unwrap())
        };
        assert_eq!(kind("cur_row"), Some(cur.len() as u64), "{}", path.display());
        assert_eq!(kind("rows"), Some(rows.len() as u64), "{}", path.display());
    }
}

/// `inspector residency` breaks resident bytes down per kind for RRD and
/// revlog files too, agreeing with vmtouch: nothing after an eviction,
/// every byte after vmtouch -t.
#[test]
fn residency_per_kind_for_rrd_and_revlog() {
    need(&[Need::Vmtouch]);
    let dir = tmpdir();
    for (from, name) in [
        (revlog_testdata("00changelog.i"), "00changelog.i"),
        (Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd/hw.rrd"), "hw.rrd"),
    ] {
        let path = dir.path().join(name);
        fs::copy(&from, &path).unwrap();
        File::open(&path).unwrap().sync_all().unwrap();
        let p = path.to_str().unwrap();
        evict(&path);
        assert_eq!(vmtouch(&path).0, 0, "{name} evicted");
        let v = json(&["residency", p, "--json"]);
        let kinds = v["kinds"].as_array().unwrap().clone();
        assert!(kinds.len() >= 2, "{name}: {v}");
        for k in &kinds {
            assert_eq!(k["resident_bytes"].as_u64(), Some(0), "{name}: {k}");
        }
        Command::new("vmtouch").args(["-t", "-q", p]).status().unwrap();
        let (r, t) = vmtouch(&path);
        assert_eq!(r, t, "{name} touched");
        let v = json(&["residency", p, "--json"]);
        for k in v["kinds"].as_array().unwrap() {
            assert_eq!(k["resident_bytes"], k["bytes"], "{name}: {k}");
        }
        let text = run(&["residency", p], T).stdout;
        assert!(text.contains("KIND "), "{name}: {text}");
    }
}

/// A page past the high-water mark (Go bbolt's `info` gives it) that does
/// not decode is named as unused, beside the fault; pages below it
/// decode.
#[test]
fn a_page_past_the_high_water_mark_is_named_unused() {
    let file = testdata("freelist.db");
    let info = Command::new(bolt_oracle()).arg("info").arg(&file).output().expect("oracle");
    let text = String::from_utf8_lossy(&info.stdout);
    let hwm: u64 = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("hwm="))
        .and_then(|v| v.parse().ok())
        .expect("hwm in the oracle's info");
    let p = file.to_str().unwrap();
    let past = hwm.to_string();
    let r = run(&["page", p, &past], T);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!("page {hwm} is past the high-water mark {hwm}: unused")),
        "{}",
        r.stdout
    );
    let below = (hwm - 1).to_string();
    let r = run(&["page", p, &below], T);
    assert!(!r.stdout.contains("high-water"), "{}", r.stdout); // Past the end of the file, and an overflow continuation (page 5 of
    // overflow.db, in the run Go bbolt's `pages` lists at page 4).
    let r = run(&["page", p, "999999"], T);
    assert!(r.stdout.contains("past the end of the file"), "{}", r.stdout);
    let o = testdata("overflow.db");
    let o = o.to_str().unwrap();
    let pages = String::from_utf8(
        Command::new(bolt_oracle()).args(["pages", o]).output().expect("oracle").stdout,
    )
    .unwrap();
    assert!(pages.lines().any(|l| l.split_whitespace().eq(["4", "leaf", "2", "1"])), "{pages}");
    let r = run(&["page", o, "5"], T);
    assert!(r.stdout.contains("a continuation of the run headed by page 4"), "{}", r.stdout);
}
