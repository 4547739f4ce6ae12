//! `inspector residency PATH... -R` on a tree of real files, against
//! vmtouch and util-linux fincore on the same tree, sampled back to back:
//! a page-cache reclaimer may evict pages at any moment, so a comparison
//! counts only when vmtouch, run before and after, agrees with itself.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write as _;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mapwise_native::os::residency;

use crate::common::{Need, need, run, tmpdir};

const T: Duration = Duration::from_secs(60);

/// vmtouch's view of a tree: resident/total pages per file, and its
/// totals (files, resident, total).
#[derive(Debug, PartialEq, Eq)]
struct Vmtouch {
    files: BTreeMap<String, (u64, u64)>,
    count: u64,
    resident: u64,
    total: u64,
}

/// `vmtouch -v [-F] ROOT` (`-F`: stay on one file system), parsed.
fn vmtouch(root: &Path, one_fs: bool) -> Vmtouch {
    let mut cmd = Command::new("vmtouch");
    cmd.arg("-v");
    if one_fs {
        cmd.arg("-F");
    }
    let out = cmd.arg(root).output().expect("vmtouch");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut files = BTreeMap::new();
    let mut last_path: Option<String> = None;
    let (mut count, mut resident, mut total) = (None, None, None);
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('/') {
            last_path = Some(t.to_string());
        } else if t.starts_with('[') {
            // `[OOo  ] R/T`, printed twice when stdout is no terminal.
            let counts = t.split_whitespace().last().unwrap();
            let (r, n) = counts.split_once('/').unwrap();
            let path = last_path.take().unwrap_or_else(|| panic!("no path before {t}\n{text}"));
            files.insert(path, (r.parse().unwrap(), n.parse().unwrap()));
        } else if let Some(n) = t.strip_prefix("Files:") {
            count = Some(n.trim().parse().unwrap());
        } else if let Some(rest) = t.strip_prefix("Resident Pages:") {
            let (r, n) = rest.split_whitespace().next().unwrap().split_once('/').unwrap();
            resident = Some(r.parse().unwrap());
            total = Some(n.parse().unwrap());
        }
    }
    Vmtouch {
        files,
        count: count.unwrap_or_else(|| panic!("no Files: in {text}")),
        resident: resident.unwrap(),
        total: total.unwrap(),
    }
}

/// `fincore --bytes --raw` and `fincore --bytes --json` over `files`:
/// per file, resident bytes and resident pages (both forms must agree).
fn fincore(files: &[String]) -> BTreeMap<String, (u64, u64)> {
    let out = Command::new("fincore").args(["--bytes", "--raw"]).args(files).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut raw = BTreeMap::new();
    for l in text.lines().skip(1) {
        // RES PAGES SIZE FILE (no spaces in our names).
        let f: Vec<&str> = l.split_whitespace().collect();
        raw.insert(f[3].to_string(), (f[0].parse().unwrap(), f[1].parse().unwrap()));
    }
    let out = Command::new("fincore").args(["--bytes", "--json"]).args(files).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut json = BTreeMap::new();
    for f in v["fincore"].as_array().unwrap() {
        let n = |k: &str| f[k].as_u64().or_else(|| f[k].as_str().and_then(|s| s.parse().ok()));
        json.insert(
            f["file"].as_str().unwrap().to_string(),
            (n("res").unwrap(), n("pages").unwrap()),
        );
    }
    if raw == json { raw } else { BTreeMap::new() }
}

/// A file of `len` pseudo-random bytes, synced, evicted, then read in
/// `reads` (offset, length) so that it is partly resident.
fn make(path: &Path, len: usize, reads: &[(u64, usize)]) {
    let mut f = File::create(path).unwrap();
    let data: Vec<u8> =
        (0..len as u64).map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0]).collect();
    f.write_all(&data).unwrap();
    f.sync_all().unwrap();
    drop(f);
    partly_resident(path, reads);
}

/// Evict `path` (POSIX_FADV_DONTNEED), then read `reads` from it.
fn partly_resident(path: &Path, reads: &[(u64, usize)]) {
    let f = File::open(path).unwrap();
    f.sync_all().ok();
    residency::evict(&f, 0, residency::TO_EOF).unwrap();
    for &(off, len) in reads {
        let mut buf = vec![0u8; len];
        let _ = f.read_at(&mut buf, off).unwrap();
    }
}

fn inspector_json(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let r = run(args, T);
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    (r.code, v)
}

/// The measured files of a report: path → (resident pages, total pages).
fn measured(v: &serde_json::Value) -> BTreeMap<String, (u64, u64)> {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "measured")
        .map(|f| {
            let r = f["resident_pages"].as_u64().unwrap();
            (f["file"].as_str().unwrap().to_string(), (r, f["total_pages"].as_u64().unwrap()))
        })
        .collect()
}

fn entry<'v>(v: &'v serde_json::Value, path: &Path) -> &'v serde_json::Value {
    let p = path.to_str().unwrap();
    v["files"].as_array().unwrap().iter().find(|f| f["file"] == p).unwrap_or_else(|| {
        panic!("{p} not listed in {v:#}");
    })
}

/// A tmpfs mounted on `dir` for the test's life (root only).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Option<Tmpfs> {
        fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "mapwise-test"])
            .arg(dir)
            .output()
            .ok()?;
        if out.status.success() {
            Some(Tmpfs(dir.to_path_buf()))
        } else {
            eprintln!(
                "skipping the second file system: cannot mount a tmpfs ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The tree: corpus copies (bbolt, RRD, revlog) and generated files made
/// partly resident, a link to a file and one to a directory, a FIFO and a
/// socket; the per-file and total resident pages must equal vmtouch's
/// and fincore's, the split by kind must be there for known formats, and
/// nothing that is not a regular file may be counted.
#[test]
fn a_tree_matches_vmtouch_and_fincore() {
    need(&[Need::Vmtouch, Need::Fincore]);
    let dir = tmpdir();
    let root = dir.path().join("tree");
    fs::create_dir_all(root.join("sub/deeper")).unwrap();
    for (from, to) in [
        (mapwise_testkit::testdata("bolt").join("small.db"), "small.db"),
        (mapwise_testkit::testdata("rrd").join("compute.rrd"), "sub/compute.rrd"),
        (mapwise_testkit::testdata("revlog").join("00changelog.i"), "sub/00changelog.i"),
    ] {
        fs::copy(&from, root.join(to)).unwrap();
        partly_resident(&root.join(to), &[(0, 4096)]);
    }
    make(&root.join("big.bin"), 3 << 20, &[(1 << 20, 256 << 10)]);
    make(&root.join("sub/half.bin"), 1 << 20, &[(0, 512 << 10)]);
    make(&root.join("sub/deeper/cold.bin"), 200_000, &[]);
    make(&root.join("sub/deeper/tiny.bin"), 100, &[(0, 100)]);
    File::create(root.join("empty.bin")).unwrap();
    // Two names of one file: counted once, under the first name met.
    make(&root.join("sub/linked-a.bin"), 60_000, &[(0, 8192)]);
    fs::hard_link(root.join("sub/linked-a.bin"), root.join("sub/linked-b.bin")).unwrap();
    std::os::unix::fs::symlink(root.join("big.bin"), root.join("link-to-file")).unwrap();
    std::os::unix::fs::symlink(root.join("sub"), root.join("link-to-dir")).unwrap();
    let mkfifo = Command::new("mkfifo").arg(root.join("fifo")).status().unwrap();
    assert!(mkfifo.success());
    let _socket = std::os::unix::net::UnixListener::bind(root.join("socket")).unwrap();
    let mnt = Tmpfs::mount(&root.join("mnt"));
    if let Some(m) = &mnt {
        fs::write(m.0.join("on-tmpfs.bin"), vec![7u8; 50_000]).unwrap();
    }
    let r = root.to_str().unwrap();
    let regular: Vec<String> = [
        "small.db",
        "sub/compute.rrd",
        "sub/00changelog.i",
        "big.bin",
        "sub/half.bin",
        "sub/deeper/cold.bin",
        "sub/deeper/tiny.bin",
        "empty.bin",
    ]
    .iter()
    .map(|p| root.join(p).to_str().unwrap().to_string())
    .collect();
    let mut compared = false;
    for attempt in 0..50 {
        let before = vmtouch(&root, true);
        let (code, v) = inspector_json(&["residency", r, "-R", "--json"]);
        let (_, top) = inspector_json(&["residency", r, "-R", "--top", "3", "--json"]);
        let fc = fincore(&regular);
        let after = vmtouch(&root, true);
        if before != after || fc.is_empty() {
            std::thread::sleep(Duration::from_millis(20 * attempt));
            continue;
        }
        assert_eq!(code, Some(0), "nothing is skipped: {v:#}");
        // Per file, as vmtouch: the same files and the same counts.
        let mut ours = measured(&v);
        let mut vm: BTreeMap<String, (u64, u64)> =
            before.files.iter().map(|(p, c)| (p.clone(), *c)).collect();
        // Both count the linked file once, under the name each met first
        // (vmtouch in directory order, we in name order).
        let linked = |m: &mut BTreeMap<String, (u64, u64)>| {
            let names = ["sub/linked-a.bin", "sub/linked-b.bin"]
                .map(|n| m.remove(root.join(n).to_str().unwrap()));
            assert_eq!(names.iter().flatten().count(), 1, "one name counted: {names:?}");
            names.into_iter().flatten().next().unwrap()
        };
        assert_eq!(linked(&mut ours), linked(&mut vm), "the hard-linked file");
        let e = entry(&v, &root.join("sub/linked-b.bin"));
        assert_eq!(e["status"], "hard_link", "{e}");
        // vmtouch lists no line for an empty file; we do, with 0/0.
        let mut ours_nonempty = ours.clone();
        assert_eq!(ours_nonempty.remove(&regular[7]), Some((0, 0)));
        assert_eq!(ours_nonempty, vm, "per file, against vmtouch -v -F");
        // Totals, as vmtouch's.
        let t = &v["totals"];
        assert_eq!(t["files"].as_u64(), Some(before.count), "{t}");
        assert_eq!(t["resident_pages"].as_u64(), Some(before.resident), "{t}");
        assert_eq!(t["total_pages"].as_u64(), Some(before.total), "{t}");
        // And fincore's, in pages and bytes.
        let ps = residency::os_page_size();
        for f in &regular {
            let (res_bytes, res_pages) = fc[f];
            let (pages, _) = ours[f];
            assert_eq!(pages, res_pages, "{f}: fincore --bytes --raw/--json pages");
            let e = &v["files"].as_array().unwrap().iter().find(|e| e["file"] == *f).unwrap();
            assert_eq!(e["resident_bytes"].as_u64(), Some(res_bytes), "{f}: fincore bytes");
            assert_eq!(res_bytes, res_pages * ps);
        }
        assert!(ours[&regular[3]].0 > 0 && ours[&regular[3]].0 < ours[&regular[3]].1);
        // --top 3: the three largest resident counts vmtouch finds, largest
        // first (names may differ only for the hard-linked file), with the
        // totals of all.
        let mut want: Vec<u64> = before.files.values().map(|c| c.0).collect();
        want.sort_unstable_by(|a, b| b.cmp(a));
        want.truncate(3);
        let top_files = top["files"].as_array().unwrap();
        let got: Vec<u64> =
            top_files.iter().map(|f| f["resident_pages"].as_u64().unwrap()).collect();
        assert_eq!(got, want, "--top 3 against vmtouch's counts: {top:#}");
        for f in top_files {
            let name = f["file"].as_str().unwrap();
            if let Some(c) = before.files.get(name) {
                assert_eq!(f["resident_pages"].as_u64(), Some(c.0), "{name}");
            }
        }
        assert_eq!(top["totals"]["resident_pages"].as_u64(), Some(before.resident));
        compared = true;
        eprintln!(
            "attempt {attempt}: {} files, {}/{} pages resident, as vmtouch -v -F and fincore",
            ours.len(),
            before.resident,
            before.total
        );
        // What is not counted, and why.
        for (name, status, ty) in [
            ("link-to-file", "symlink", "symlink"),
            ("link-to-dir", "symlink", "symlink"),
            ("fifo", "not_regular", "fifo"),
            ("socket", "not_regular", "socket"),
        ] {
            let e = entry(&v, &root.join(name));
            assert_eq!((e["status"].as_str(), e["file_type"].as_str()), (Some(status), Some(ty)));
            assert!(e["resident_pages"].is_null(), "{e}");
        }
        assert_eq!(v["totals"]["symlinks"].as_u64(), Some(2));
        assert_eq!(v["totals"]["not_regular"].as_u64(), Some(2));
        // The per-kind split of known formats, the one-file report's.
        for f in &regular[..3] {
            let e = v["files"].as_array().unwrap().iter().find(|e| e["file"] == *f).unwrap();
            assert_ne!(e["format"], "unknown", "{e}");
            assert!(!e["kinds"].as_array().unwrap().is_empty(), "{e}");
        }
        break;
    }
    assert!(compared, "vmtouch never agreed with itself around our run");
    // A second file system is not entered unless asked.
    if let Some(m) = &mnt {
        let (_, v) = inspector_json(&["residency", r, "-R", "--json"]);
        let e = entry(&v, &m.0);
        assert_eq!(e["status"], "not_entered", "{e}");
        let inside = m.0.join("on-tmpfs.bin");
        assert!(
            !v["files"].as_array().unwrap().iter().any(|f| f["file"] == inside.to_str().unwrap())
        );
        let (_, v) = inspector_json(&["residency", r, "-R", "--cross-mounts", "--json"]);
        let vm = vmtouch(&root, false);
        let e = entry(&v, &inside);
        assert_eq!(e["status"], "measured", "{e}");
        assert_eq!(
            (e["resident_pages"].as_u64().unwrap(), e["total_pages"].as_u64().unwrap()),
            vm.files[inside.to_str().unwrap()],
            "tmpfs pages against vmtouch without -F"
        );
        eprintln!("the tmpfs under the tree: not entered, and with --cross-mounts as vmtouch");
    } else {
        eprintln!("the second-file-system part was skipped (no tmpfs mount)");
    }
}

/// The text listing: one line per file, the split by kind under a known
/// format, a line with the reason for what is not counted, then totals.
#[test]
fn text_listing_and_totals() {
    let dir = tmpdir();
    let root = dir.path();
    fs::copy(mapwise_testkit::testdata("bolt").join("small.db"), root.join("small.db")).unwrap();
    make(&root.join("a.bin"), 40_960, &[(0, 4096)]);
    fs::create_dir(root.join("sub")).unwrap();
    make(&root.join("sub/b.bin"), 8192, &[]);
    let mkfifo = Command::new("mkfifo").arg(root.join("fifo")).status().unwrap();
    assert!(mkfifo.success());
    let r = root.to_str().unwrap();
    // Without -R: the directory's files; its subdirectory is named.
    let out = run(&["residency", r], T);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = out.stdout;
    assert!(text.starts_with("  RESIDENT PAGES"), "{text}");
    assert!(text.contains("resident by kind: meta"), "{text}");
    assert!(text.contains("(directory not entered: -R enters it)"), "{text}");
    assert!(text.contains("fifo  (not a regular file: fifo)"), "{text}");
    assert!(!text.contains("b.bin"), "{text}");
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("Total: ") && last.contains(" in 2 files;"), "{last}");
    // With -R, the subdirectory's file too.
    let text = run(&["residency", r, "-R"], T).stdout;
    assert!(text.contains("sub/b.bin"), "{text}");
    assert!(text.lines().last().unwrap().contains(" in 3 files;"), "{text}");
    // A file and a directory together are many files, not the one-file
    // report.
    let a = root.join("a.bin");
    let text = run(&["residency", a.to_str().unwrap(), r], T).stdout;
    assert!(text.lines().last().unwrap().contains(" in 3 files;"), "{text}");
}

/// As another user: a file it cannot open and a file whose residency the
/// kernel hides from it are listed as skipped with the reason and never
/// counted, the scan goes on, and the exit status is 1; its own file is
/// measured as vmtouch, run as that user, measures it.
#[test]
fn unreadable_and_hidden_are_skipped_with_a_reason() {
    need(&[Need::Vmtouch, Need::UtilLinux]);
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to run the scan as another user (setpriv)");
        return;
    }
    let dir = tempfile::Builder::new().prefix("mapwise-many-").tempdir().unwrap();
    let root = dir.path();
    fs::set_permissions(root, fs::Permissions::from_mode(0o755)).unwrap();
    make(&root.join("locked.bin"), 16_384, &[(0, 16_384)]);
    fs::set_permissions(root.join("locked.bin"), fs::Permissions::from_mode(0o000)).unwrap();
    make(&root.join("hidden.bin"), 16_384, &[(0, 4096)]);
    fs::set_permissions(root.join("hidden.bin"), fs::Permissions::from_mode(0o644)).unwrap();
    make(&root.join("mine.bin"), 65_536, &[(0, 8192)]);
    let nobody = 65_534;
    std::os::unix::fs::chown(root.join("mine.bin"), Some(nobody), Some(nobody)).unwrap();
    let bin = env!("CARGO_BIN_EXE_inspector");
    let as_nobody = |prog: &str, args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", prog])
            .args(args)
            .output()
            .unwrap()
    };
    let r = root.to_str().unwrap();
    let mine = root.join("mine.bin");
    for attempt in 0..50 {
        let before = vmtouch_as(&as_nobody, &mine);
        let out = as_nobody(bin, &["residency", r, "--json"]);
        let after = vmtouch_as(&as_nobody, &mine);
        if before != after {
            std::thread::sleep(Duration::from_millis(20 * attempt));
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(out.status.code(), Some(1), "something was skipped: {v:#}");
        let locked = entry(&v, &root.join("locked.bin"));
        assert_eq!(locked["status"], "skipped");
        assert!(locked["reason"].as_str().unwrap().contains("Permission denied"), "{locked}");
        let hidden = entry(&v, &root.join("hidden.bin"));
        assert_eq!(hidden["status"], "skipped", "{hidden}");
        assert_eq!(hidden["trust"], "unknown", "{hidden}");
        assert!(hidden["resident_pages"].is_null(), "no false number: {hidden}");
        assert!(hidden["reason"].as_str().unwrap().contains("hides"), "{hidden}");
        let e = entry(&v, &mine);
        assert_eq!(e["status"], "measured", "{e}");
        assert_eq!(
            (e["resident_pages"].as_u64().unwrap(), e["total_pages"].as_u64().unwrap()),
            before
        );
        let t = &v["totals"];
        assert_eq!((t["files"].as_u64(), t["skipped"].as_u64()), (Some(1), Some(2)), "{t}");
        assert_eq!(t["resident_pages"].as_u64(), Some(before.0), "{t}");
        eprintln!("as uid {nobody}: locked and hidden skipped, {before:?} as its vmtouch");
        return;
    }
    panic!("vmtouch never agreed with itself around our run");
}

fn vmtouch_as(as_user: &dyn Fn(&str, &[&str]) -> std::process::Output, path: &Path) -> (u64, u64) {
    let out = as_user("vmtouch", &[path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("Resident Pages:")).unwrap();
    let (r, t) = line.split_whitespace().nth(2).unwrap().split_once('/').unwrap();
    (r.parse().unwrap(), t.parse().unwrap())
}

/// Watching never changes what it watches: a tree made cold stays cold
/// (vmtouch counts no page) and unchanged after `residency -R`, text and
/// JSON, though known formats are read for their structure.
#[test]
fn a_cold_tree_stays_cold_and_unchanged() {
    need(&[Need::Vmtouch]);
    let dir = tmpdir();
    let root = dir.path().join("tree");
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::copy(mapwise_testkit::testdata("bolt").join("small.db"), root.join("small.db")).unwrap();
    fs::copy(mapwise_testkit::testdata("rrd").join("compute.rrd"), root.join("sub/compute.rrd"))
        .unwrap();
    fs::copy(mapwise_testkit::testdata("revlog").join("00changelog.i"), root.join("sub/cl.i"))
        .unwrap();
    make(&root.join("sub/data.bin"), 1 << 20, &[]);
    let names = ["small.db", "sub/compute.rrd", "sub/cl.i", "sub/data.bin"];
    let stamp = |n: &str| {
        let m = fs::metadata(root.join(n)).unwrap();
        (m.len(), m.modified().unwrap(), fs::read(root.join(n)).unwrap())
    };
    let before: Vec<_> = names.iter().map(|n| stamp(n)).collect();
    let cold = || {
        for n in names {
            partly_resident(&root.join(n), &[]);
        }
        vmtouch(&root, true)
    };
    let r = root.to_str().unwrap();
    for args in [vec!["residency", r, "-R"], vec!["residency", r, "-R", "--json"]] {
        let start = cold();
        assert_eq!(start.resident, 0, "the tree could not be made cold: {start:?}");
        let out = run(&args, T);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_eq!(
            vmtouch(&root, true).resident,
            0,
            "`inspector {}` read the tree",
            args.join(" ")
        );
    }
    let after: Vec<_> = names.iter().map(|n| stamp(n)).collect();
    assert!(before == after, "a file changed");
}

/// The pages an RRD file's next update may touch, worked out from what
/// `rrdtool info` says (`header_size`, each archive's `rows` and
/// `cur_row`, the data sources): the header's pages, and each archive's
/// current and next rows (none of big.rrd's archives is SEASONAL or
/// DEVSEASONAL, which look one row further).
fn hot_pages_by_rrdtool(path: &Path, page: u64) -> std::collections::BTreeSet<u64> {
    let (header, ds, rras) = mapwise_testkit::peers::rrdtool_info(path).expect("rrdtool info");
    let row = ds * 8;
    let mut pages: std::collections::BTreeSet<u64> = (0..header.div_ceil(page)).collect();
    let mut start = header;
    for (rows, cur) in rras {
        for r in [cur, (cur + 1) % rows] {
            let at = start + r * row;
            pages.extend(at / page..=(at + row - 1) / page);
        }
        start += rows * row;
    }
    pages
}

/// OS pages of `path` resident now (mincore).
fn resident_set(path: &Path) -> std::collections::BTreeSet<u64> {
    let r = residency::sample(&File::open(path).unwrap()).unwrap();
    assert!(r.trust.is_known());
    (0..r.total_pages).filter(|&p| r.is_resident(p)).collect()
}

#[test]
fn evict_cold_keeps_what_rrdtools_next_update_touches() {
    need(&[Need::Rrdtool, Need::Vmtouch]);
    let dir = tmpdir();
    let copy = |from: &str, to: &str| {
        let to = dir.path().join(to);
        fs::copy(mapwise_testkit::testdata(from), &to).unwrap();
        File::open(&to).unwrap().sync_all().unwrap();
        to
    };
    let rrd = copy("rrd/big.rrd", "big.rrd");
    let db = copy("bolt/small.db", "small.db");
    let root = dir.path().to_str().unwrap();
    let page = residency::os_page_size();
    assert!(
        !String::from_utf8(Command::new("rrdtool").arg("info").arg(&rrd).output().unwrap().stdout)
            .unwrap()
            .contains("SEASONAL")
    );
    let hot = hot_pages_by_rrdtool(&rrd, page);

    // Warm: the whole tree is resident, as vmtouch counts it.
    assert_eq!(run(&["warm", root], T).code, Some(0));
    let vm = vmtouch(dir.path(), true);
    assert_eq!(vm.resident, vm.total, "{vm:?}");

    // Evict the cold pages: the RRD keeps exactly rrdtool's hot pages; the
    // bbolt file has no hot set and is left alone.
    let (code, v) = inspector_json(&["evict", "--cold", "--json", root]);
    assert_eq!(code, Some(0), "{v:#}");
    let e = entry(&v, &rrd);
    assert_eq!(e["status"], "done");
    assert_eq!(e["hot_set_after"]["hot_pages"].as_u64(), Some(hot.len() as u64));
    assert_eq!(e["hot_set_after"]["cold_resident_bytes"].as_u64(), Some(0));
    assert_eq!(entry(&v, &db)["status"], "left_alone");
    assert_eq!(resident_set(&rrd), hot, "resident after evict --cold");
    let vm = vmtouch(dir.path(), true);
    assert_eq!(vm.files[db.to_str().unwrap()], (16, 16), "small.db untouched");
    assert_eq!(vm.files[rrd.to_str().unwrap()].0, hot.len() as u64);

    // rrdtool's next update (one step on, every data source unknown)
    // touches no page outside the hot set.
    let out = Command::new("rrdtool").arg("info").arg(&rrd).output().unwrap();
    let info = String::from_utf8(out.stdout).unwrap();
    let num = |k: &str| -> i64 {
        info.lines().find_map(|l| l.strip_prefix(k)).unwrap().trim().parse().unwrap()
    };
    let next = num("last_update = ") + num("step = ");
    let st = mapwise_testkit::peers::rrdtool()
        .args(["update", rrd.to_str().unwrap(), &format!("{next}:U:U")])
        .status()
        .unwrap();
    assert!(st.success());
    let after = resident_set(&rrd);
    assert!(
        after.is_subset(&hot),
        "rrdtool touched pages outside the hot set: {after:?} vs {hot:?}"
    );

    // Warm --hot after a full evict brings in exactly the hot set.
    assert_eq!(run(&["evict", root], T).code, Some(0));
    let hot = hot_pages_by_rrdtool(&rrd, page);
    assert_eq!(run(&["warm", "--hot", root], T).code, Some(0));
    assert_eq!(resident_set(&rrd), hot, "resident after warm --hot");
    assert!(resident_set(&db).is_empty(), "warm --hot leaves a bbolt file alone");
}

#[test]
fn top_lists_what_a_process_holds_as_vmtouch_counts_it() {
    need(&[Need::Vmtouch]);
    let dir = tmpdir();
    let data = dir.path().join("held");
    let mut f = File::create(&data).unwrap();
    f.write_all(&vec![3u8; 1 << 20]).unwrap();
    f.sync_all().unwrap();
    drop(f);
    // A process holding the file open (its stdin), and the file's
    // residency pinned at 16 pages.
    let sleeper = crate::common::Kill(
        Command::new("sleep").arg("120").stdin(File::open(&data).unwrap()).spawn().unwrap(),
    );
    let pid = sleeper.0.id();
    // Until it runs sleep (a fork still has the test's name).
    while fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim() != "sleep" {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _pin = crate::common::pin_16_pages(&data);
    let pid = sleeper.0.id().to_string();
    let (code, v) = inspector_json(&["top", "--pid", &pid, "--json"]);
    assert_eq!(code, Some(0), "{v:#}");
    let files = v["files"].as_array().unwrap();
    let f = files.iter().find(|f| f["file"] == data.to_str().unwrap()).unwrap_or_else(|| {
        panic!("{} not listed: {v:#}", data.display());
    });
    let page = residency::os_page_size();
    assert_eq!(
        f["resident_bytes"].as_u64(),
        Some(crate::common::vmtouch_resident(&data) * page),
        "vmtouch disagrees"
    );
    assert_eq!(f["resident_bytes"].as_u64(), Some(16 * page));
    assert_eq!(f["size"].as_u64(), Some(1 << 20));
    assert_eq!(f["how"], "open");
    assert_eq!(f["held_by"], serde_json::json!([format!("{pid} sleep")]));
    assert_eq!(v["processes"].as_u64(), Some(1));
    // Its cgroup (this test's: v2, or v1's memory controller) lists it,
    // beside the kernel's count of the cgroup's page cache.
    let cgroups = fs::read_to_string("/proc/self/cgroup").unwrap();
    let cg = cgroups
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':').skip(1);
            f.next().zip(f.next())
        })
        .find(|(ctl, _)| ctl.is_empty() || ctl.split(',').any(|c| c == "memory"))
        .map(|(_, p)| p.to_owned())
        .unwrap();
    let (code, v) = inspector_json(&["top", "--cgroup", &cg, "-n", "100000", "--json"]);
    assert_eq!(code, Some(0), "{v:#}");
    let listed = v["files"].as_array().unwrap().iter().any(|f| f["file"] == data.to_str().unwrap());
    assert!(listed, "{} not in cgroup {cg}: {v:#}", data.display());
    assert!(v["cgroup_file_bytes"].as_u64().unwrap() >= 16 * page, "{v:#}");
    let r = run(&["top", "--pid", "999999999"], T);
    assert_ne!(r.code, Some(0));
    assert!(r.stderr.contains("no process 999999999"), "{}", r.stderr);
}

#[test]
fn a_path_given_twice_or_inside_another_counts_once_as_vmtouch_does() {
    need(&[Need::Vmtouch]);
    let dir = tmpdir();
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("sub")).unwrap();
    make(&root.join("a"), 40_000, &[(0, 8192)]);
    make(&root.join("sub/b"), 70_000, &[(4096, 4096)]);
    std::os::unix::fs::symlink(&root, dir.path().join("link")).unwrap();
    let r = root.to_str().unwrap();
    let sub = root.join("sub");
    let link = dir.path().join("link");
    for args in [
        vec![r, r],
        vec![r, sub.to_str().unwrap()],
        vec![sub.to_str().unwrap(), r],
        vec![r, link.to_str().unwrap()],
    ] {
        let out = Command::new("vmtouch").args(&args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let files: u64 = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Files:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut cmd = vec!["residency", "-R", "--json"];
        cmd.extend(&args);
        let (code, v) = inspector_json(&cmd);
        assert_eq!(code, Some(0), "{args:?}: {v:#}");
        assert_eq!(v["totals"]["files"].as_u64(), Some(files), "{args:?}: vmtouch says {files}");
        assert_eq!(v["totals"]["repeated"].as_u64(), Some(1), "{args:?}");
    }
}

#[test]
fn a_truncated_rrd_has_no_hot_set_and_is_left_alone() {
    need(&[Need::Rrdtool]);
    let dir = tmpdir();
    let rrd = dir.path().join("short.rrd");
    let bytes = fs::read(mapwise_testkit::testdata("rrd/big.rrd")).unwrap();
    fs::write(&rrd, &bytes[..100_000]).unwrap();
    // The peer refuses it.
    let out = mapwise_testkit::peers::rrdtool().arg("info").arg(&rrd).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("too small"));
    let (_, v) = inspector_json(&["residency", "--json", rrd.to_str().unwrap()]);
    assert!(v["structure_error"].as_str().unwrap().contains("truncated"), "{v:#}");
    assert!(v.get("hot_set").is_none(), "{v:#}");
    let (code, v) = inspector_json(&["evict", "--cold", "--json", rrd.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert_eq!(v["files"][0]["status"], "left_alone", "{v:#}");
}
