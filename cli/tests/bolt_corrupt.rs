//! Damaged bbolt files: `mapwise bolt check`, `dump` and `info` give a
//! clear error naming the page and field, within a time limit, never a
//! panic. Where bbolt itself can read the damaged file (a single bad meta
//! page), ours must read what bbolt reads.

use std::path::{Path, PathBuf};
use std::process::Output;

use mapwise_core::bolt::{BoltFile, WalkOptions, fnv1a64, walk};
use mapwise_core::layout::Kind;

use crate::support::{assert_same_text, oracle, run_mapwise, tempdir, testdata};

const PS: usize = 4096;

/// A copy of corpus file `name` with `patch` applied, in `dir`.
fn damaged(dir: &Path, name: &str, tag: &str, patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(testdata(name)).expect("corpus file");
    patch(&mut bytes);
    let path = dir.join(format!("{tag}.db"));
    std::fs::write(&path, &bytes).expect("write copy");
    path
}

fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// First page id of `kind` in the corpus file `name` (test setup only).
fn first_page_of(name: &str, kind: Kind) -> usize {
    let bytes = std::fs::read(testdata(name)).expect("corpus file");
    let file = BoltFile::open(bytes.as_slice()).expect("open");
    let l = walk(&file, WalkOptions::default()).layout;
    let r = l.regions.iter().find(|r| r.kind == kind).expect("page of that kind");
    usize::try_from(r.id).expect("small id")
}

/// Run check, dump and info on `path`: each must fail cleanly (no panic,
/// exit status 1 or 2) with a message containing every one of `needles`.
fn expect_clear_failure(path: &Path, needles: &[&str]) {
    let p = path.to_str().expect("utf-8");
    for cmd in ["check", "dump", "info"] {
        let out: Output = run_mapwise(&["bolt", cmd, p]);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains("panicked"), "{cmd} {p} panicked:\n{text}");
        let code = out.status.code();
        if cmd == "info" && code == Some(0) {
            // `info` reads only the meta pages; a fault deeper in the file
            // is not its business.
            continue;
        }
        assert!(matches!(code, Some(1 | 2)), "{cmd} {p}: exit {code:?}\n{text}");
        for n in needles {
            assert!(text.contains(n), "{cmd} {p}: message lacks {n:?}:\n{text}");
        }
        // Said once: a cause is not repeated by the error chain.
        for line in text.lines() {
            let first = line.find("no valid meta page");
            let last = line.rfind("no valid meta page");
            assert_eq!(first, last, "{cmd} {p}: said twice:\n{line}");
        }
    }
}

/// The oracle's own check must also reject the file: the damage is real.
fn oracle_rejects(path: &Path) {
    let _ = oracle_check_rejects(path, &[]);
}

/// As `oracle_rejects`, with extra `check` arguments (`--raw-only` where
/// bbolt's own `Tx.Check` would loop forever on the damage); returns what
/// the oracle printed.
fn oracle_check_rejects(path: &Path, extra: &[&str]) -> String {
    let mut args = vec!["check", path.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    let out = crate::support::run_limited(
        std::process::Command::new(crate::support::bolt_oracle()).args(&args),
        std::time::Duration::from_secs(60),
    );
    assert!(!out.status.success(), "oracle check accepted {}", path.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `mapwise bolt dump` of `path` succeeds and prints what the oracle's
/// `dump` (with `extra` arguments) prints; returns the oracle's dump and
/// what ours said on stderr.
fn dump_as_bbolt_does(path: &str, what: &str, extra: &[&str]) -> (Vec<u8>, String) {
    let ours = run_mapwise(&["bolt", "dump", path]);
    let stderr = String::from_utf8_lossy(&ours.stderr).into_owned();
    assert!(ours.status.success(), "{stderr}");
    let mut args = vec!["dump", path];
    args.extend_from_slice(extra);
    let bbolt = oracle(&args);
    assert_same_text(what, &ours.stdout, &bbolt);
    (bbolt, stderr)
}

#[test]
fn truncated_files() {
    let dir = tempdir();
    // Cut inside meta page 0: no meta page can be read.
    let p = damaged(dir.path(), "small.db", "cut50", |b| b.truncate(50));
    expect_clear_failure(&p, &["no valid meta page", "truncated"]);
    // Cut right after meta page 1: the tree's pages are gone.
    let p = damaged(dir.path(), "small.db", "cut8192", |b| b.truncate(2 * PS));
    expect_clear_failure(&p, &["page"]);
    oracle_rejects(&p);
    // Cut in the middle of a page run of overflow.db.
    let p = damaged(dir.path(), "overflow.db", "cutmid", |b| b.truncate(6 * PS + 100));
    expect_clear_failure(&p, &["page"]);
}

#[test]
fn one_bad_meta_falls_back_like_bbolt() {
    let dir = tempdir();
    // small.db's current meta is page 0 (txid 4); flip a byte of its
    // checksum and bbolt reads the previous snapshot from meta page 1.
    let p = damaged(dir.path(), "small.db", "meta0", |b| b[72] ^= 0xff);
    let ps = p.to_str().expect("utf-8");
    dump_as_bbolt_does(ps, "dump after meta 0 checksum flip", &[]);
    let info = String::from_utf8(run_mapwise(&["bolt", "info", ps]).stdout).expect("utf-8");
    assert!(info.contains("meta0: INVALID: field checksum"), "{info}");
    assert!(info.contains("current=meta1"), "{info}");
}

/// A newer meta page whose `pageSize` is 0 but whose checksum matches is
/// the current meta to bbolt, which reads every page at the size meta 0
/// gave and never looks at the other meta's field: ours reads the same
/// snapshot. The field is still damage to the oracle's raw walk and to
/// our `check`, which both name meta page 1.
#[test]
fn a_newer_meta_with_page_size_0_is_current_as_in_bbolt() {
    let dir = tempdir();
    // small.db: meta 0 is current (txid 4), meta 1 holds txid 3. Make
    // meta 1 the newer one (txid 5) with pageSize 0, checksum matching.
    let p = damaged(dir.path(), "small.db", "meta1ps0", |b| {
        let m = PS + 16;
        put_u32(b, m + 8, 0);
        put_u64(b, m + 48, 5);
        let sum = fnv1a64(&b[m..m + 56]);
        put_u64(b, m + 56, sum);
    });
    let ps = p.to_str().expect("utf-8");
    let (bbolt, _) =
        dump_as_bbolt_does(ps, "dump with a newer meta of pageSize 0", &["--no-precheck"]);
    // The snapshot read is meta 1's (txid 3's tree), not meta 0's.
    let newest = oracle(&["dump", testdata("small.db").to_str().expect("utf-8")]);
    assert_ne!(bbolt, newest, "meta 1's snapshot equals meta 0's: the test shows nothing");
    let info = String::from_utf8(run_mapwise(&["bolt", "info", ps]).stdout).expect("utf-8");
    assert!(info.contains("current=meta1"), "{info}");
    // bbolt's own check passes the file; the oracle's raw walk fails it
    // for meta page 1's field, and so does ours, naming the same page.
    let raw = oracle_check_rejects(&p, &[]);
    assert!(raw.contains("meta page 1: page size 0 differs from 4096"), "{raw}");
    assert!(raw.contains("1 errors found"), "{raw}");
    let check = run_mapwise(&["bolt", "check", ps]);
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(text.contains("meta page 1: field pageSize = 0,"), "{text}");
    assert!(text.ends_with("1 errors found\n"), "{text}");
}

#[test]
fn both_metas_bad() {
    let dir = tempdir();
    let p = damaged(dir.path(), "small.db", "metas", |b| {
        b[72] ^= 0xff;
        b[PS + 16] ^= 0xff; // meta 1 magic
    });
    expect_clear_failure(
        &p,
        &["no valid meta page", "meta page 0: field checksum", "meta page 1: field magic"],
    );
    oracle_rejects(&p);
}

#[test]
fn branch_cycle() {
    let dir = tempdir();
    let branch = first_page_of("freelist.db", Kind::Branch);
    // Point the branch's second child back at the branch itself.
    let p = damaged(dir.path(), "freelist.db", "cycle", |b| {
        put_u64(b, branch * PS + 16 + 16 + 8, branch as u64);
    });
    expect_clear_failure(&p, &[&format!("page {branch}")]);
    // bbolt 1.3.6's Tx.Check itself never returns on this file: only the
    // oracle's raw walk can be asked.
    let _ = oracle_check_rejects(&p, &["--raw-only"]);
    // A longer loop: the child's child is the branch (via the root).
    let root = {
        let bytes = std::fs::read(testdata("freelist.db")).expect("corpus");
        let f = BoltFile::open(bytes.as_slice()).expect("open");
        usize::try_from(f.meta().root).expect("small")
    };
    let p = damaged(dir.path(), "freelist.db", "cycle2", |b| {
        put_u64(b, branch * PS + 16 + 8, root as u64);
    });
    expect_clear_failure(&p, &["already in use"]);
}

#[test]
fn element_pos_past_the_page() {
    let dir = tempdir();
    let leaf = first_page_of("small.db", Kind::Leaf);
    let p = damaged(dir.path(), "small.db", "pos", |b| {
        put_u32(b, leaf * PS + 16 + 4, 0xFFFF_0000);
    });
    expect_clear_failure(&p, &[&format!("page {leaf} element 0"), "pos"]);
    oracle_rejects(&p);
}

#[test]
fn freelist_count_0xffff_with_absurd_first_slot() {
    let dir = tempdir();
    let fl = first_page_of("small.db", Kind::Freelist);
    let p = damaged(dir.path(), "small.db", "freelist", |b| {
        put_u16(b, fl * PS + 10, 0xFFFF);
        put_u64(b, fl * PS + 16, u64::MAX / 3);
    });
    let ps = p.to_str().expect("utf-8");
    let check = run_mapwise(&["bolt", "check", ps]);
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("page {fl}: field count points outside the page")), "{text}");
    oracle_rejects(&p);
    // A read-only open does not load the freelist (bbolt neither), so the
    // keys still dump as bbolt dumps them.
    dump_as_bbolt_does(ps, "dump with a broken freelist", &["--no-precheck"]);
}

/// A freelist page damaged four ways in a file the oracle (bbolt) wrote:
/// `dump` still prints the whole content, equal to bbolt's own dump of
/// the damaged file (the oracle's with `--no-precheck`) and of the file
/// before the damage, exits 0 as bbolt's read-only open and dump do, and
/// warns once on stderr naming the page and the fault the oracle's own
/// check names. The undamaged file gets no warning.
#[test]
fn a_damaged_freelist_is_dumped_with_a_warning() {
    let dir = tempdir();
    let good = dir.path().join("good.db");
    let gp = good.to_str().expect("utf-8");
    oracle(&["gen", gp, "--shape", "freelist", "--seed", "5"]);
    let info = String::from_utf8(oracle(&["info", gp])).expect("utf-8");
    let field = |name: &str| -> u64 {
        let line = info
            .lines()
            .find(|l| l.starts_with("freelist: "))
            .unwrap_or_else(|| panic!("no freelist line in {info}"));
        line.split(' ')
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
            .parse()
            .expect("number")
    };
    let (fl, ids) = (field("page"), field("ids"));
    assert!(ids >= 2, "{info}");
    let hwm: u64 = info
        .lines()
        .find(|l| l.starts_with("meta0: "))
        .and_then(|l| l.split(' ').find_map(|w| w.strip_prefix("hwm=")))
        .expect("hwm")
        .parse()
        .expect("hwm");
    let (before, said) = dump_as_bbolt_does(gp, "the undamaged file", &[]);
    assert_eq!(said, "", "a warning for a healthy file");
    let at = usize::try_from(fl).expect("small") * PS;
    let first = u64::from_le_bytes(
        std::fs::read(&good).expect("read")[at + 16..at + 24].try_into().unwrap(),
    );
    let out_of_range = hwm + 1000;
    // (tag, damage, what the oracle's check says, what our warning says)
    type Patch = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: [(&str, Patch, String, String); 4] = [
        (
            "type",
            Box::new(move |b| put_u16(b, at + 8, 0x02)),
            format!("page {fl}: expected freelist page, found leaf"),
            format!("page {fl}: field flags = 2, expected 0x10 (freelist page)"),
        ),
        (
            "twice",
            Box::new(move |b| put_u64(b, at + 24, first)),
            format!("page {first}: already freed"),
            format!("page {first} is listed twice on the freelist"),
        ),
        (
            "range",
            Box::new(move |b| put_u64(b, at + 16, out_of_range)),
            format!("page id {out_of_range} outside [2,{hwm})"),
            format!("freelist id {out_of_range} outside [2, high-water mark {hwm})"),
        ),
        (
            "count",
            Box::new(move |b| {
                put_u16(b, at + 10, 0xFFFF);
                put_u64(b, at + 16, u64::MAX / 3);
            }),
            format!("freelist page {fl}: "),
            format!("page {fl}: field count points outside the page"),
        ),
    ];
    for (tag, patch, theirs, ours) in &cases {
        let mut bytes = std::fs::read(&good).expect("read");
        patch(&mut bytes);
        let p = dir.path().join(format!("{tag}.db"));
        std::fs::write(&p, &bytes).expect("write");
        let ps = p.to_str().expect("utf-8");
        // The damage is real to the oracle, and is the one we name.
        let check = oracle_check_rejects(&p, &["--raw-only"]);
        assert!(check.contains(theirs.as_str()), "{tag}: {check}");
        let (bbolt, said) = dump_as_bbolt_does(ps, tag, &["--no-precheck"]);
        assert_eq!(bbolt, before, "{tag}: the damage changed bbolt's dump");
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.len(), 1, "{tag}: {said}");
        let head = format!("warning: {ps}: the freelist (page {fl}) is damaged: {ours}");
        assert!(lines[0].starts_with(&head), "{tag}: {said}\nwanted {head}");
    }
}

#[test]
fn page_id_mismatch() {
    let dir = tempdir();
    let leaf = first_page_of("small.db", Kind::Leaf);
    let p = damaged(dir.path(), "small.db", "id", |b| put_u64(b, leaf * PS, 99));
    expect_clear_failure(&p, &[&format!("page {leaf}"), "field id = 99"]);
    oracle_rejects(&p);
}

#[test]
fn huge_overflow_and_counts_stay_bounded() {
    let dir = tempdir();
    let leaf = first_page_of("small.db", Kind::Leaf);
    // overflow = u32::MAX: a run far past the end of the file.
    let p = damaged(dir.path(), "small.db", "ovf", |b| put_u32(b, leaf * PS + 12, u32::MAX));
    expect_clear_failure(&p, &[&format!("page {leaf}"), "overflow"]);
    // count = 0xFFFF on a leaf: the element array cannot fit.
    let p = damaged(dir.path(), "small.db", "count", |b| put_u16(b, leaf * PS + 10, 0xFFFF));
    expect_clear_failure(&p, &[&format!("page {leaf}"), "count"]);
    // A valid meta whose high-water mark and root point far past the end.
    let p = damaged(dir.path(), "small.db", "hwm", |b| {
        for m in [0, PS] {
            put_u64(b, m + 16 + 40, u64::MAX / 2);
            put_u64(b, m + 16 + 16, u64::MAX / 4);
            let sum = fnv1a64(&b[m + 16..m + 72]);
            put_u64(b, m + 72, sum);
        }
    });
    expect_clear_failure(&p, &["root"]);
}
