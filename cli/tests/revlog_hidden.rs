//! `mapwise revlog log` hides what `hg log` hides (obsolete changesets,
//! phases, pins), and `mapwise revlog debugindex FILE` takes what `hg
//! debugindex` takes. Every repository is made here by the real `hg`
//! (Debian's 6.3) and every expected text is what that `hg` prints.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::support::{assert_same_text, hg, mapwise, run_limited, run_mapwise, tempdir};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Markers are created only with the evolution feature on; reading them
/// needs nothing (hg hides obsolete changesets whatever its config).
const EVOLVE: &[&str] = &[
    "--config",
    "experimental.evolution=createmarkers",
    "--config",
    "experimental.evolution.allowunstable=yes",
    "--config",
    "extensions.rebase=",
    "--config",
    "extensions.share=",
];

/// `hg -R repo args…` with evolution on; must succeed; its stdout.
fn hgr(repo: &Path, args: &[&str]) -> Vec<u8> {
    let out = hg().arg("-R").arg(repo).args(EVOLVE).args(args).output().expect("run hg");
    assert!(out.status.success(), "hg {args:?} failed: {}", text(&out.stderr));
    out.stdout
}

/// `hg log` as the user runs it (no extra configuration).
fn hg_log(repo: &Path, extra: &[&str]) -> Vec<u8> {
    let out = hg()
        .arg("-R")
        .arg(repo)
        .args(["log", "-T", "{rev}\n"])
        .args(extra)
        .output()
        .expect("run hg");
    assert!(out.status.success(), "hg log: {}", text(&out.stderr));
    out.stdout
}

/// A new repository in `dir/name`.
fn init(dir: &Path, name: &str) -> PathBuf {
    let repo = dir.join(name);
    let out = hg().arg("init").arg(&repo).output().expect("hg init");
    assert!(out.status.success(), "{}", text(&out.stderr));
    repo
}

/// Append a line to `file` and commit it (adding it when new).
fn commit(repo: &Path, file: &str, msg: &str) {
    let p = repo.join(file);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let mut old = std::fs::read(&p).unwrap_or_default();
    old.extend_from_slice(msg.as_bytes());
    old.push(b'\n');
    std::fs::write(&p, old).expect("write");
    hgr(repo, &["commit", "-A", "-q", "-m", msg]);
}

fn node(repo: &Path, rev: &str) -> String {
    text(&hgr(repo, &["log", "--hidden", "-r", rev, "-T", "{node}"]))
}

/// The revisions `hg log` lists, as numbers.
fn revs(b: &[u8]) -> Vec<i64> {
    text(b).lines().map(|l| l.parse().expect("rev")).collect()
}

/// Our `log -l N` against hg's for every N up to past the end, by path
/// and from inside the repository; `--hidden` against `hg log --hidden`.
/// Returns hg's full visible list.
fn same_as_hg(repo: &Path) -> Vec<i64> {
    let all = revs(&hg_log(repo, &["--hidden"]));
    for n in 1..=all.len() + 1 {
        let n = n.to_string();
        let want = hg_log(repo, &["-l", &n]);
        let ours = run_mapwise(&["revlog", "log", "-l", &n, s(repo)]);
        assert!(ours.status.success(), "{}", text(&ours.stderr));
        assert_same_text(&format!("log -l {n} {}", repo.display()), &ours.stdout, &want);
        let want = hg_log(repo, &["-l", &n, "--hidden"]);
        let ours = run_mapwise(&["revlog", "log", "--hidden", "-l", &n, s(repo)]);
        assert_same_text(&format!("log --hidden -l {n}"), &ours.stdout, &want);
    }
    let want = hg_log(repo, &[]);
    let ours =
        run_limited(mapwise().args(["revlog", "log"]).current_dir(repo), Duration::from_secs(60));
    assert_same_text("log in the repository", &ours.stdout, &want);
    revs(&want)
}

#[test]
fn amend_hides_the_amended_changeset() {
    let dir = tempdir();
    let r = init(dir.path(), "rh");
    commit(&r, "a", "c1");
    commit(&r, "a", "c2");
    std::fs::write(r.join("a"), "c1\nc2\n3\n").expect("write");
    hgr(&r, &["commit", "--amend", "-m", "c2b"]);
    // The user's report: hg prints `2 0`.
    assert_eq!(revs(&hg_log(&r, &["-l", "2"])), [2, 0]);
    same_as_hg(&r);
    // Amend again: a chain 1 → 2 → 3.
    std::fs::write(r.join("a"), "c1\nc2\n4\n").expect("write");
    hgr(&r, &["commit", "--amend", "-m", "c2c"]);
    assert_eq!(same_as_hg(&r), [3, 0]);
}

#[test]
fn prune_pins_and_live_descendants() {
    let dir = tempdir();
    let r = init(dir.path(), "p");
    for i in 0..6 {
        commit(&r, &format!("f{i}"), &format!("c{i}"));
    }
    // Prune 2, which has live descendants 3..5: it stays visible.
    hgr(&r, &["debugobsolete", &node(&r, "2")]);
    assert_eq!(same_as_hg(&r), [5, 4, 3, 2, 1, 0]);
    // Prune the head 5 while checked out: pinned, visible.
    hgr(&r, &["debugobsolete", &node(&r, "5")]);
    assert_eq!(revs(&hg_log(&r, &["-l", "1"])), [5]);
    same_as_hg(&r);
    // Update away: 5 is hidden.
    hgr(&r, &["update", "-q", "0"]);
    assert_eq!(revs(&hg_log(&r, &["-l", "1"])), [4]);
    same_as_hg(&r);
    // Prune 3 and 4 as well: 2..5 all hidden.
    hgr(&r, &["debugobsolete", &node(&r, "4")]);
    hgr(&r, &["debugobsolete", &node(&r, "3")]);
    assert_eq!(same_as_hg(&r), [1, 0]);
    // A bookmark on 4 shows 4 and its ancestors 3 and 2.
    hgr(&r, &["bookmark", "--hidden", "-r", &node(&r, "4"), "bm"]);
    assert_eq!(same_as_hg(&r), [4, 3, 2, 1, 0]);
    hgr(&r, &["bookmark", "-d", "bm"]);
    assert_eq!(same_as_hg(&r), [1, 0]);
    // So does a local tag on 3.
    hgr(&r, &["tag", "--hidden", "-l", "-r", &node(&r, "3"), "lt"]);
    assert_eq!(same_as_hg(&r), [3, 2, 1, 0]);
    // Checking out a hidden changeset pins it.
    hgr(&r, &["update", "-q", "--hidden", &node(&r, "5")]);
    assert_eq!(same_as_hg(&r), [5, 4, 3, 2, 1, 0]);
}

#[test]
fn public_changesets_stay_visible_with_markers() {
    let dir = tempdir();
    let r = init(dir.path(), "pub");
    for i in 0..4 {
        commit(&r, &format!("f{i}"), &format!("c{i}"));
    }
    hgr(&r, &["phase", "--public", "-r", "2"]);
    hgr(&r, &["update", "-q", "0"]);
    for rev in ["1", "2", "3"] {
        hgr(&r, &["debugobsolete", &node(&r, rev)]);
    }
    // 1 and 2 are public: only 3 goes.
    assert_eq!(same_as_hg(&r), [2, 1, 0]);
    // Everything public: nothing hidden.
    hgr(&r, &["phase", "--hidden", "--public", "-r", "3"]);
    assert_eq!(same_as_hg(&r), [3, 2, 1, 0]);
}

/// Two branches rebased onto each other and amended, as in a working
/// day: hg hides the rewritten changesets, not their survivors.
#[test]
fn rebase_chains() {
    let dir = tempdir();
    let r = init(dir.path(), "rb");
    commit(&r, "base", "c0");
    commit(&r, "main", "c1");
    commit(&r, "main", "c2");
    hgr(&r, &["update", "-q", "0"]);
    commit(&r, "side", "c3");
    commit(&r, "side", "c4");
    commit(&r, "side", "c5");
    hgr(&r, &["rebase", "-q", "-s", "3", "-d", "2"]);
    let after_rebase = same_as_hg(&r);
    assert!(!after_rebase.contains(&3), "{after_rebase:?}");
    // Amend the middle of the rebased chain: its descendant stays (orphan),
    // so the amended changeset stays visible too.
    hgr(&r, &["update", "-q", "7"]);
    std::fs::write(r.join("side"), "amended\n").expect("write");
    hgr(&r, &["commit", "--amend", "-m", "c4b"]);
    same_as_hg(&r);
    // Rebase the orphan onto the amended one: it conflicts; while the
    // merge is unresolved its two sides are pinned (`.hg/merge/state2`).
    let out = hg()
        .arg("-R")
        .arg(&r)
        .args(EVOLVE)
        .args(["rebase", "-q", "-s", "8", "-d", "tip"])
        .output()
        .expect("hg rebase");
    assert!(!out.status.success(), "expected a conflict");
    assert!(r.join(".hg/merge/state2").exists());
    same_as_hg(&r);
    hgr(&r, &["rebase", "--abort"]);
    // The same rebase, conflicts resolved by taking the rebased side:
    // the old one goes.
    hgr(&r, &["rebase", "-q", "-s", "8", "-d", "tip", "--tool", ":other"]);
    hgr(&r, &["update", "-q", "tip"]);
    same_as_hg(&r);
    // More work on top and a rewrite of an old draft, as in the report
    // (hg `12 11 10 9 7`-like gaps).
    commit(&r, "more", "c11");
    commit(&r, "more", "c12");
    hgr(&r, &["debugobsolete", &node(&r, "tip"), &node(&r, "tip^")]);
    hgr(&r, &["update", "-q", "tip^"]);
    same_as_hg(&r);
    let shown = revs(&hg_log(&r, &[]));
    let all = revs(&hg_log(&r, &["--hidden"]));
    assert!(shown.len() < all.len(), "{shown:?} vs {all:?}");
}

/// Markers in the old format 0 (`format.obsstore-version=0`) read the same.
#[test]
fn obsstore_format_0() {
    let dir = tempdir();
    let r = init(dir.path(), "v0");
    for i in 0..4 {
        commit(&r, &format!("f{i}"), &format!("c{i}"));
    }
    hgr(&r, &["update", "-q", "0"]);
    let three = node(&r, "3");
    let two = node(&r, "2");
    let out = hg()
        .arg("-R")
        .arg(&r)
        .args(EVOLVE)
        .args(["--config", "format.obsstore-version=0", "debugobsolete"])
        .args([&three, &two])
        .output()
        .expect("hg");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(r.join(".hg/store/obsstore")).expect("obsstore")[0], 0);
    hgr(&r, &["debugobsolete", &two]);
    assert_eq!(same_as_hg(&r), [1, 0]);
}

/// `hg share`: the store (changelog, obsstore, phases) is the source's;
/// the working directory (its parents) and local tags are the share's.
#[test]
fn share_has_its_own_working_directory() {
    let dir = tempdir();
    let src = init(dir.path(), "src");
    for i in 0..4 {
        commit(&src, &format!("f{i}"), &format!("c{i}"));
    }
    let share = dir.path().join("share");
    let out =
        hg().args(EVOLVE).args(["share", "-q"]).arg(&src).arg(&share).output().expect("hg share");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Prune 3 with the source checked out at 3, the share at 1.
    hgr(&share, &["update", "-q", "1"]);
    hgr(&src, &["debugobsolete", &node(&src, "3")]);
    assert_eq!(same_as_hg(&src), [3, 2, 1, 0]);
    assert_eq!(same_as_hg(&share), [2, 1, 0]);
    hgr(&src, &["update", "-q", "0"]);
    assert_eq!(same_as_hg(&src), [2, 1, 0]);
    hgr(&share, &["update", "-q", "--hidden", &node(&src, "3")]);
    assert_eq!(same_as_hg(&share), [3, 2, 1, 0]);
}

/// Damaged or unknown obsstores: hg aborts, we refuse with a message
/// naming the file, never a panic, and `--json` gets `{"error": …}`.
#[test]
fn damaged_obsstore_is_refused() {
    let dir = tempdir();
    let r = init(dir.path(), "bad");
    commit(&r, "a", "c0");
    commit(&r, "a", "c1");
    hgr(&r, &["update", "-q", "0"]);
    hgr(&r, &["debugobsolete", &node(&r, "1")]);
    let path = r.join(".hg/store/obsstore");
    let good = std::fs::read(&path).expect("obsstore");
    // (A lone version byte is an empty obsstore to hg, whatever the byte.)
    let mut cases: Vec<Vec<u8>> = vec![vec![7, 0], {
        let mut b = good.clone();
        b[1..5].copy_from_slice(&u32::MAX.to_be_bytes());
        b
    }];
    cases.push(good[..good.len() - 3].to_vec());
    for bytes in cases {
        std::fs::write(&path, &bytes).expect("write");
        let h = hg().arg("-R").arg(&r).args(["log", "-l", "1"]).output().expect("hg");
        assert!(!h.status.success(), "hg read the damaged obsstore {bytes:?}");
        let ours = run_mapwise(&["revlog", "log", "-l", "1", s(&r)]);
        let err = text(&ours.stderr);
        assert_eq!(ours.status.code(), Some(2), "{err}");
        assert!(err.contains("obsstore") && !err.contains("panicked"), "{err}");
        let ours = run_mapwise(&["revlog", "log", "--json", "-l", "1", s(&r)]);
        assert_eq!(ours.status.code(), Some(2));
        let v: serde_json::Value = serde_json::from_slice(&ours.stdout).expect("json");
        assert!(v["error"].as_str().is_some_and(|e| e.contains("obsstore")), "{v}");
        // --hidden does not read the obsstore, as hg's `--hidden` does not
        // need the hidden set.
        let ours = run_mapwise(&["revlog", "log", "--hidden", "-l", "1", s(&r)]);
        assert!(ours.status.success());
    }
}

fn in_dir(dir: &Path, args: &[&str]) -> Output {
    run_limited(mapwise().args(args).current_dir(dir), Duration::from_secs(60))
}

fn hg_in(dir: &Path, args: &[&str]) -> Output {
    hg().args(args).current_dir(dir).output().expect("hg")
}

#[test]
fn debugindex_takes_tracked_names_as_hg() {
    let dir = tempdir();
    let r = init(dir.path(), "di");
    commit(&r, "f1", "one");
    commit(&r, "sub/Upper_Case.txt", "two");
    commit(&r, "f1", "three");
    let sub = r.join("sub");
    for cwd in [&r, &sub] {
        for name in ["f1", "sub/Upper_Case.txt", "/f1"] {
            let want = hg_in(cwd, &["debugindex", name]);
            assert!(want.status.success(), "{}", text(&want.stderr));
            let ours = in_dir(cwd, &["revlog", "debugindex", name]);
            assert!(ours.status.success(), "{}", text(&ours.stderr));
            assert_same_text(&format!("debugindex {name}"), &ours.stdout, &want.stdout);
        }
        for flag in ["-c", "-m"] {
            let want = hg_in(cwd, &["debugindex", flag]);
            let ours = in_dir(cwd, &["revlog", "debugindex", flag]);
            assert_same_text(&format!("debugindex {flag}"), &ours.stdout, &want.stdout);
        }
    }
    // Store paths, untracked names, nothing: hg aborts with one message.
    for args in
        [vec![".hg/store/data/f1.i"], vec!["nosuchfile"], vec!["sub/_upper___case.txt.i"], vec![]]
    {
        let mut h = vec!["debugindex"];
        h.extend(&args);
        let want = hg_in(&r, &h);
        assert!(!want.status.success());
        let msg = text(&want.stderr);
        let msg = msg.trim().strip_prefix("abort: ").expect("hg abort");
        let mut a = vec!["revlog", "debugindex"];
        a.extend(&args);
        let ours = in_dir(&r, &a);
        assert_eq!(ours.status.code(), Some(2));
        assert_eq!(text(&ours.stderr).trim(), format!("mapwise: {msg}"), "{args:?}");
        a.push("--json");
        let ours = in_dir(&r, &a);
        assert_eq!(ours.status.code(), Some(2));
        let v: serde_json::Value = serde_json::from_slice(&ours.stdout).expect("json");
        assert_eq!(v["error"], msg);
    }
    // The explicit way to read a store file: --index PATH, same entries
    // as hg's view of that filelog.
    let want = hg_in(&r, &["debugindex", "sub/Upper_Case.txt"]);
    let ours = in_dir(
        dir.path(),
        &["revlog", "debugindex", "--index", "di/.hg/store/data/sub/_upper___case.txt.i"],
    );
    assert_same_text("debugindex --index", &ours.stdout, &want.stdout);
    // Outside any repository hg finds none; neither do we.
    let outside = tempdir();
    let want = hg_in(outside.path(), &["debugindex", "f1"]);
    assert!(!want.status.success());
    let ours = in_dir(outside.path(), &["revlog", "debugindex", "f1"]);
    assert_eq!(ours.status.code(), Some(2));
    assert!(text(&ours.stderr).contains("no repository"));
}

#[test]
fn json_failures_are_json() {
    let dir = tempdir();
    let nowhere = dir.path().join("nowhere");
    for args in [
        vec!["revlog", "log", "--json", s(&nowhere)],
        vec!["revlog", "debugindex", "--json", "--index", s(&nowhere)],
        vec!["revlog", "log", "--json", "-l", "0", s(dir.path())],
    ] {
        let out = run_mapwise(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&out.stdout)));
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    }
}
