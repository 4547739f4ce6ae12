//! `mapwise revlog` against Mercurial 6.3: the corpus hg made
//! (`testdata/revlog`, hg's own outputs beside each index), repositories
//! the revlog peer generates fresh and reads back with hg, and hg's own
//! store-name encoder (through its Python).

use std::path::Path;

use mapwise_core::layout::Kind;
use mapwise_core::revlog::{LayoutOptions, layout};
use mapwise_native::engine::revlog::{
    Hidden, IndexFile, Load, Loaded, Options, StoreEncoding, log, sha1_hex,
};
use mapwise_testkit::corpus::REVLOG_INDEXES;
use mapwise_testkit::run_with_stdin;
use mapwise_testkit::unhex;

use crate::support::{
    assert_same_text, hg, hg_python, revlog_oracle_out, revlog_testdata, run_mapwise, tempdir,
};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `mapwise args…`, which must succeed; its stdout.
fn ok(args: &[&str]) -> Vec<u8> {
    let out = run_mapwise(args);
    assert!(out.status.success(), "mapwise {args:?} failed: {}", text(&out.stderr));
    out.stdout
}

/// `mapwise args…`, which must fail cleanly (exit 2, one message, no
/// panic); its stderr.
fn refused(args: &[&str]) -> String {
    let out = run_mapwise(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "mapwise {args:?}: {err}");
    assert!(!err.contains("panicked"), "mapwise {args:?} panicked: {err}");
    err
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&ok(args)).expect("mapwise JSON")
}

use mapwise_view::fmt::hex;

fn hg_ok(args: &[&str]) -> Vec<u8> {
    let out = hg().args(args).output().expect("run hg");
    assert!(out.status.success(), "hg {args:?} failed: {}", text(&out.stderr));
    out.stdout
}

#[test]
fn corpus_debugindex_is_hgs() {
    for name in REVLOG_INDEXES {
        let file = revlog_testdata(name);
        let want = read(&revlog_testdata(&format!("{name}.debugindex.txt")));
        let ours = ok(&["revlog", "debugindex", "--index", s(&file)]);
        assert_same_text(&format!("debugindex {name}"), &ours, &want);
    }
    // `hg --debug debugindex -c`: every column, full nodes.
    let file = revlog_testdata("00changelog.i");
    let want = read(&revlog_testdata("00changelog.i.debugindex-full.txt"));
    for flag in ["--debug", "--full"] {
        let ours = ok(&["revlog", "debugindex", flag, "--index", s(&file)]);
        assert_same_text("debugindex --debug 00changelog.i", &ours, &want);
    }
    // By name, as hg takes them inside a repository: the corpus is a
    // store directory whose `requires` says fncache + dotencode.
    let store = revlog_testdata("");
    for (args, want) in [
        (vec!["-c"], "00changelog.i"),
        (vec!["-m"], "00manifest.i"),
        (vec!["docs/README"], "data/docs/_r_e_a_d_m_e.i"),
        (vec!["src/Main.rs"], "data/src/_main.rs.i"),
        (vec!["big.txt"], "data/big.txt.i"),
    ] {
        let mut a = vec!["revlog", "debugindex", "-R", s(&store)];
        a.extend(args);
        let want_text = read(&revlog_testdata(&format!("{want}.debugindex.txt")));
        assert_same_text(&format!("debugindex {a:?}"), &ok(&a), &want_text);
    }
}

#[test]
fn corpus_log_is_hgs_in_every_load_mode() {
    for dir in ["", "synthetic-2000"] {
        let repo = revlog_testdata(dir);
        let want = read(&repo.join("log-l5.txt"));
        let size = std::fs::metadata(repo.join("00changelog.i")).unwrap().len();
        let configs: [(&[&str], &str); 5] = [
            (&[], "read"),
            (&["--config", "experimental.mmapindexthreshold=4k"], "mmap"),
            (&["--config", "storage.revlog.mmap.index:size-threshold=4k"], "mmap"),
            (&["--config", "storage.revlog.mmap.index=no"], "read"),
            (&["--config", "experimental.mmapindexthreshold=1G"], "read"),
        ];
        for (config, load) in configs {
            let mut args = vec!["revlog", "log", "-l", "5", s(&repo)];
            args.extend_from_slice(config);
            assert_same_text(&format!("log {args:?}"), &ok(&args), &want);
            args.push("--json");
            let v = json(&args);
            assert_eq!(v["load"], load, "{args:?}");
            assert_eq!(v["index_bytes"], size);
            let revs: Vec<String> = v["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| format!("{}\n", e["rev"]))
                .collect();
            assert_eq!(revs.concat(), text(&want), "{args:?}");
        }
    }
}

#[test]
fn corpus_nodes_are_hgs() {
    // `hg log -T '{rev}:{node}\n'`, every revision, tip first.
    let want = text(&read(&revlog_testdata("log-all-nodes.txt")));
    let v = json(&["revlog", "log", "--json", s(&revlog_testdata(""))]);
    let ours: String = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}:{}\n", e["rev"], e["node"].as_str().unwrap()))
        .collect();
    assert_same_text("log --json nodes", ours.as_bytes(), want.as_bytes());
    // The library, revision by revision, mapped.
    let file = IndexFile::open(
        revlog_testdata("00changelog.i"),
        &Options { load: Load::Mmap, ..Options::default() },
    )
    .unwrap();
    let index = file.index().unwrap();
    assert_eq!(want.lines().count(), index.len() as usize);
    for line in want.lines() {
        let (rev, node) = line.split_once(':').unwrap();
        assert_eq!(hex(&index.node(rev.parse().unwrap()).unwrap()), node);
    }
}

#[test]
fn threshold_below_at_above() {
    // hg's `_get_data`: mmap when the size is >= the threshold.
    let path = revlog_testdata("00changelog.i");
    let size = std::fs::metadata(&path).unwrap().len();
    let want = read(&revlog_testdata("log-l5.txt"));
    for (threshold, loaded) in
        [(size + 1, Loaded::Read), (size, Loaded::Mmap), (size - 1, Loaded::Mmap)]
    {
        let opts = Options { load: Load::Auto { threshold }, ..Options::default() };
        let f = IndexFile::open(&path, &opts).unwrap();
        assert_eq!(f.loaded(), loaded, "threshold {threshold}");
        assert_eq!(f.mapping().is_some(), loaded == Loaded::Mmap);
        let rows = log(&f.index().unwrap(), Some(5), &Hidden::default()).unwrap();
        let revs: String = rows.iter().map(|r| format!("{}\n", r.rev)).collect();
        assert_eq!(revs.as_bytes(), want);
        // Both spellings of the setting, through the command line.
        let t = threshold.to_string();
        for config in [
            format!("experimental.mmapindexthreshold={t}"),
            format!("storage.revlog.mmap.index:size-threshold={t}"),
        ] {
            let v = json(&[
                "revlog",
                "log",
                "-l",
                "5",
                "--json",
                "--config",
                &config,
                s(&revlog_testdata("")),
            ]);
            assert_eq!(v["load"], loaded.name(), "{config}");
            assert_eq!(v["threshold"], threshold, "{config}");
        }
    }
    // hg maps only the changelog and the manifest: a filelog is read.
    let v = json(&[
        "revlog",
        "debugindex",
        "--json",
        "--config",
        "experimental.mmapindexthreshold=0",
        "-R",
        s(&revlog_testdata("")),
        "a.txt",
    ]);
    assert_eq!(v["load"], "read");
    let v = json(&[
        "revlog",
        "debugindex",
        "--json",
        "--config",
        "experimental.mmapindexthreshold=0",
        "-R",
        s(&revlog_testdata("")),
        "-m",
    ]);
    assert_eq!(v["load"], "mmap");
}

#[test]
fn store_names_are_hgs() {
    let mut names: Vec<Vec<u8>> = [
        "README",
        "src/Main.rs",
        "a_b",
        "AUX",
        "aux.txt",
        "con/prn.c",
        "lpt1",
        "com0",
        "foo.",
        "dir. /x",
        ".hidden",
        " lead",
        "a~b",
        "x:y?",
        "dir.i/f",
        "dir.d/f",
        "dir.hg/f",
        "nul.tar.gz",
        "été",
        "Caps.I/Deep.D/x",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    names.push(b"latin\xe9".to_vec());
    names.push(format!("{}/f.txt", "Verylongdirectoryname/".repeat(8)).into_bytes());
    names.push(format!("{}.txt", "l".repeat(150)).into_bytes());
    names.push(format!("a/{}", "B".repeat(119)).into_bytes());
    names.push(b".dotdir/.dotfile".to_vec());
    names.push(format!("{}/x", "d.".repeat(40)).into_bytes());
    // hg's own encoders: `_pathencode` (the C one when built), the
    // fncache one without dotencode, `encodefilename`, `encodedir`.
    let script = "import sys, binascii\nfrom mercurial import store\n\
        for h in sys.stdin.read().split():\n\
        \x20   p = binascii.unhexlify(h)\n\
        \x20   outs = [store._pathencode(p), store._hybridencode(p, False), store.encodefilename(p), store.encodedir(p)]\n\
        \x20   print(' '.join(binascii.hexlify(o).decode() for o in outs))\n";
    let mut input = String::new();
    for n in &names {
        for ext in [&b".i"[..], b".d"] {
            let mut p = b"data/".to_vec();
            p.extend_from_slice(n);
            p.extend_from_slice(ext);
            input.push_str(&hex(&p));
            input.push('\n');
        }
    }
    let out = run_with_stdin(hg_python().args(["-c", script]), input.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hgs = text(&out.stdout);
    let mut hashed = 0;
    for (path, line) in input.lines().zip(hgs.lines()) {
        let p = unhex(path);
        let want: Vec<Vec<u8>> = line.split(' ').map(unhex).collect();
        for (enc, w) in [
            StoreEncoding::Dotencode,
            StoreEncoding::Fncache,
            StoreEncoding::Encoded,
            StoreEncoding::Plain,
        ]
        .into_iter()
        .zip(&want)
        {
            assert_eq!(text(&enc.encode(&p)), text(w), "{enc:?} of {}", text(&p));
        }
        hashed += usize::from(want[0].starts_with(b"dh/"));
    }
    assert_eq!(hgs.lines().count(), names.len() * 2);
    assert!(hashed >= 6, "the long names take the hashed form");
    // hg's SHA-1, for the hashed names' digests.
    let out = run_with_stdin(
        hg_python().args([
            "-c",
            "import sys, hashlib; print(hashlib.sha1(sys.stdin.buffer.read()).hexdigest())",
        ]),
        input.as_bytes(),
    );
    assert_eq!(text(&out.stdout).trim(), sha1_hex(input.as_bytes()));

    // End to end: a repository hg commits those files to; `debugindex`
    // by tracked name finds the filelog hg wrote.
    let dir = tempdir();
    let repo = dir.path().join("names");
    hg_ok(&["init", s(&repo)]);
    let some =
        ["AUX", "aux.txt", "con/prn.c", "foo.", ".hidden", "x:y?", "dir.i/f", "Caps.I/Deep.D/x"];
    let long = format!("{}.txt", "l".repeat(150));
    let deep = format!("{}f.txt", "Verylongdirectoryname/".repeat(8));
    let mut tracked: Vec<&str> = some.to_vec();
    tracked.push(&long);
    tracked.push(&deep);
    for (i, n) in tracked.iter().enumerate() {
        let p = repo.join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("file {i}\n")).unwrap();
    }
    hg_ok(&["-R", s(&repo), "commit", "-q", "-A", "-m", "names", "-d", "0 0"]);
    for n in tracked {
        let want = hg_ok(&["-R", s(&repo), "debugindex", n]);
        let ours = ok(&["revlog", "debugindex", "-R", s(&repo), n]);
        assert_same_text(&format!("debugindex {n}"), &ours, &want);
    }
}

#[test]
fn generated_repo_is_read_as_hg_reads_it() {
    let dir = tempdir();
    let repo = dir.path().join("r3000");
    let r = s(&repo);
    revlog_oracle_out(&["gen-repo", r, "--revs", "3000", "--mode", "builddag"]);
    for n in ["5", "1", "2999", "100000"] {
        let want = revlog_oracle_out(&["log", r, n]);
        assert_same_text(&format!("log -l {n}"), &ok(&["revlog", "log", "-l", n, r]), &want);
        let want = revlog_oracle_out(&["log", r, n, "--threshold", "4k"]);
        let ours =
            ok(&["revlog", "log", "-l", n, r, "--config", "experimental.mmapindexthreshold=4k"]);
        assert_same_text(&format!("mapped log -l {n}"), &ours, &want);
    }
    // -l as hg reads it (Python's int: spaces, a sign, underscores, no
    // upper bound).
    for n in [" 3", "+2", "1_0", "18446744073709551616"] {
        let want = hg_ok(&["-R", r, "log", "-l", n, "-T", "{rev}\n"]);
        assert_same_text(&format!("log -l {n:?}"), &ok(&["revlog", "log", "-l", n, r]), &want);
    }
    for n in ["3x", "1__0", "0"] {
        let hg_said = hg().args(["-R", r, "log", "-l", n]).output().expect("hg");
        assert!(!hg_said.status.success(), "hg accepts -l {n:?}");
        let out = run_mapwise(&["revlog", "log", "-l", n, r]);
        assert!(!out.status.success(), "-l {n:?}");
        let (ours, theirs) = (text(&out.stderr), text(&hg_said.stderr));
        let reason = theirs.trim().trim_start_matches("abort: ");
        assert!(ours.contains(reason), "-l {n:?}: ours {ours:?}, hg {theirs:?}");
    }
    // -c, -m and the filelog `of` (store name `data/of.i`), with and
    // without the debug columns.
    for (ours_args, oracle_arg) in [(["-c"], "-c"), (["-m"], "-m"), (["of"], "data/of.i")] {
        let mut a = vec!["revlog", "debugindex", "-R", r];
        a.extend(ours_args);
        let want = revlog_oracle_out(&["debugindex", r, oracle_arg]);
        assert_same_text(&format!("{a:?}"), &ok(&a), &want);
        a.push("--debug");
        let want = revlog_oracle_out(&["debugindex", r, oracle_arg, "--full"]);
        assert_same_text(&format!("{a:?}"), &ok(&a), &want);
    }
    // --json: the same values as `hg --debug debugindex -Tjson` (which
    // prints every value as a string).
    let hgj: serde_json::Value =
        serde_json::from_slice(&hg_ok(&["-R", r, "--debug", "debugindex", "-m", "-Tjson"]))
            .unwrap();
    let ours = json(&["revlog", "debugindex", "-R", r, "-m", "--json"]);
    let (hgj, entries) = (hgj.as_array().unwrap(), ours["entries"].as_array().unwrap());
    assert_eq!(hgj.len(), entries.len());
    for (h, o) in hgj.iter().zip(entries) {
        let h = h.as_object().unwrap();
        assert_eq!(h.len(), o.as_object().unwrap().len());
        for (k, v) in h {
            let ov = match &o[k] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            assert_eq!(v.as_str().unwrap(), ov, "rev {} field {k}", h["rev"]);
        }
    }
    // hg's own decision to map, seen through its `util.mmapread`, beside
    // ours, at thresholds just below, at and above the changelog's size.
    let size = std::fs::metadata(repo.join(".hg/store/00changelog.i")).unwrap().len();
    for t in [size - 1, size, size + 1] {
        let t = t.to_string();
        let hg_mapped = text(&revlog_oracle_out(&["check-mmap", r, "5", &t]))
            .lines()
            .any(|l| l.starts_with("mmap: ") && l.ends_with("00changelog.i"));
        let v = json(&[
            "revlog",
            "log",
            "-l",
            "5",
            r,
            "--json",
            "--config",
            &format!("experimental.mmapindexthreshold={t}"),
        ]);
        assert_eq!(v["load"] == "mmap", hg_mapped, "threshold {t}");
    }
}

#[test]
fn empty_repo_is_read_as_hg_reads_it() {
    let dir = tempdir();
    let repo = dir.path().join("empty");
    let r = s(&repo);
    revlog_oracle_out(&["gen-repo", r, "--revs", "0", "--mode", "empty"]);
    let want = revlog_oracle_out(&["log", r, "5"]);
    assert!(want.is_empty());
    assert_same_text("empty log", &ok(&["revlog", "log", "-l", "5", r]), &want);
    let v = json(&["revlog", "log", "--json", r]);
    assert_eq!(v["revisions"], 0);
    // hg refuses `debugindex -c` of an empty changelog; so do we.
    let refuses = |args: &[&str]| !hg().args(args).output().unwrap().status.success();
    assert!(refuses(&["-R", r, "debugindex", "-c"]));
    refused(&["revlog", "debugindex", "-R", r, "-c"]);
    // and both refuse a non-positive limit.
    assert!(refuses(&["-R", r, "log", "-l", "0"]));
    assert!(refused(&["revlog", "log", "-l", "0", r]).contains("limit must be positive"));
}

/// `-R REPO` before the subcommand, where hg's global option goes, reads
/// the repository hg reads there, and with a `-R` on each side (or two
/// before it) the last one wins, as in hg: every output is hg's own on
/// the same command line.
#[test]
fn repository_before_the_subcommand_reads_what_hg_reads() {
    let dir = tempdir();
    let (ra, rb) = (dir.path().join("a"), dir.path().join("b"));
    revlog_oracle_out(&["gen-repo", s(&ra), "--revs", "3"]);
    revlog_oracle_out(&["gen-repo", s(&rb), "--revs", "5"]);
    let (a, b) = (s(&ra), s(&rb));
    // hg's arguments after `hg`; ours are the same after `mapwise revlog`.
    let debugindex: [&[&str]; 6] = [
        &["-R", a, "debugindex", "of"],
        &["-R", a, "debugindex", "-c"],
        &["-R", a, "debugindex", "-m", "--debug"],
        &["-R", a, "debugindex", "-R", b, "of"],
        &["-R", a, "-R", b, "debugindex", "-c"],
        &["debugindex", "-R", b, "-R", a, "-m"],
    ];
    for args in debugindex {
        let mut ours = vec!["revlog"];
        ours.extend_from_slice(args);
        assert_same_text(&format!("{args:?}"), &ok(&ours), &hg_ok(args));
    }
    // The two repositories differ, so "the last one wins" is seen.
    assert_ne!(hg_ok(&["-R", a, "debugindex", "of"]), hg_ok(&["-R", b, "debugindex", "of"]));
    // `log`: hg's `-T '{rev}\n'` is what ours prints.
    let log: [&[&str]; 4] = [
        &["-R", a, "log", "-l", "2"],
        &["-R", b, "log"],
        &["-R", a, "log", "-R", b, "-l", "4"],
        &["-R", b, "-R", a, "log"],
    ];
    for args in log {
        let mut theirs = args.to_vec();
        theirs.extend(["-T", "{rev}\n"]);
        let mut ours = vec!["revlog"];
        ours.extend_from_slice(args);
        assert_same_text(&format!("{args:?}"), &ok(&ours), &hg_ok(&theirs));
    }
    // Two repositories where the command cannot take both: refused, as
    // clap refuses them when both come after the subcommand.
    let index = format!("{b}/.hg/store/00changelog.i");
    for args in [
        ["revlog", "-R", a, "log", b].as_slice(),
        &["revlog", "log", "-R", a, b],
        &["revlog", "-R", a, "debugindex", "--index", &index],
        &["revlog", "debugindex", "-R", a, "--index", &index],
    ] {
        refused(args);
    }
}

/// A damaged copy of a corpus index: hg must refuse it too (when `hg_too`),
/// we must refuse it with `message`, and its layout must still cover it.
fn damaged(name: &str, bytes: &[u8], message: &str, hg_too: bool) {
    let dir = tempdir();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let err = refused(&["revlog", "debugindex", "--index", s(&path)]);
    assert!(err.contains(message), "{name}: {err}");
    if hg_too {
        let out = hg().current_dir(dir.path()).args(["debugrevlogindex", name]).output().unwrap();
        assert!(!out.status.success(), "hg read the damaged {name}");
    }
    let l = layout(bytes, LayoutOptions::default());
    assert!(!l.layout.problems.is_empty(), "{name}");
    let end = l.layout.regions.last().map_or(0, |r| r.end());
    assert_eq!(end, bytes.len() as u64, "{name}: covered");
}

#[test]
fn damaged_indexes_are_refused_clearly() {
    let inline = read(&revlog_testdata("00changelog.i"));
    let split = read(&revlog_testdata("synthetic-2000/00changelog.i"));
    // An inline chunk running past the end.
    damaged(
        "cut.i",
        &inline[..inline.len() - 1],
        "field data_compressed_length points outside the file",
        true,
    );
    // A truncated non-inline index: the last entry is cut.
    damaged(
        "trunc.i",
        &split[..split.len() - 10],
        "offset 127936: field entry points outside the file",
        true,
    );
    // A file shorter than the header.
    damaged("tiny.i", &split[..3], "field format_version points outside", true);
    // Wrong version, unknown flags, revlog v2 and changelog v2.
    for (name, head, message) in [
        ("v2.i", [0u8, 0, 0, 2], "field format_version = 2"),
        ("flags.i", [0, 4, 0, 1], "field format_flags = 4"),
        ("rv2.i", [0, 0, 0xde, 0xad], "unsupported: revlog v2"),
        ("clv2.i", [0, 0, 0xd3, 0x4d], "unsupported: changelog v2"),
    ] {
        let mut b = split.clone();
        b[..4].copy_from_slice(&head);
        damaged(name, &b, message, true);
    }
    // Chunks past the end of the data file: hg notices only when it reads
    // a changeset's data (`hg log -T '{rev}'` and `hg debugindex` print
    // from the index alone); we print the same as with the whole data
    // file and warn, naming the revision.
    let dir = tempdir();
    let store = dir.path();
    std::fs::write(store.join("00changelog.i"), &split).unwrap();
    let data = read(&revlog_testdata("synthetic-2000/00changelog.d"));
    std::fs::write(store.join("00changelog.d"), &data).unwrap();
    let whole_log = ok(&["revlog", "log", "-l", "5", s(store)]);
    let index_arg = store.join("00changelog.i");
    let whole_debug = ok(&["revlog", "debugindex", "--index", s(&index_arg)]);
    std::fs::write(store.join("00changelog.d"), &data[..data.len() - 100]).unwrap();
    for (args, whole) in [
        (&["revlog", "log", "-l", "5", s(store)][..], &whole_log),
        (&["revlog", "debugindex", "--index", s(&index_arg)][..], &whole_debug),
    ] {
        let out = run_mapwise(args);
        let err = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert_eq!(&out.stdout, whole, "{args:?}: the same rows");
        assert!(
            // (log checks the listed revisions from the tip down,
            // debugindex all from 0: the first found differs)
            err.contains("warning: ") && err.contains(": chunk outside the data file"),
            "{args:?}: {err}"
        );
    }
    let l = layout(&split[..], LayoutOptions { data_len: Some(data.len() as u64 - 100) });
    assert!(!l.layout.problems.is_empty());
    // A parent that is not older than its child.
    let mut b = split.clone();
    b[64 * 5 + 24..64 * 5 + 28].copy_from_slice(&7i32.to_be_bytes());
    let path = store.join("parent.i");
    std::fs::write(&path, &b).unwrap();
    let err = refused(&["revlog", "debugindex", "--index", s(&path)]);
    assert!(err.contains("field parent_rev_1 = 7"), "{err}");
    assert!(!layout(&b[..], LayoutOptions::default()).layout.problems.is_empty());
    // Not a repository at all.
    assert!(refused(&["revlog", "log", s(&store.join("nowhere"))]).contains("no repository"));
}

/// A v0 index that ends inside an entry reads as hg reads it: the whole
/// entries, the partial last one ignored (hg's `debugrevlogindex` counts
/// the rows); the layout marks the tail unused with a warning.
#[test]
fn a_v0_index_with_a_partial_last_entry_reads_as_hg_reads_it() {
    let dir = tempdir();
    let whole = dir.path().join("whole.i");
    let part = dir.path().join("part.i");
    std::fs::write(&whole, vec![0u8; 84 * 76]).unwrap();
    std::fs::write(&part, vec![0u8; 84 * 76 + 16]).unwrap();
    let hg_rows = |p: &Path| {
        let out =
            hg().current_dir(dir.path()).args(["debugrevlogindex", s(p)]).output().expect("hg");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).lines().skip(1).count()
    };
    assert_eq!(hg_rows(&part), 84);
    assert_eq!(hg_rows(&whole), 84);
    let ours = ok(&["revlog", "debugindex", "--index", s(&part)]);
    assert_eq!(text(&ours).lines().skip(1).count(), 84);
    assert_eq!(ours, ok(&["revlog", "debugindex", "--index", s(&whole)]));
    let bytes = std::fs::read(&part).unwrap();
    let l = layout(&bytes[..], LayoutOptions { data_len: None });
    assert!(l.layout.problems.is_empty(), "{:?}", l.layout.problems);
    let tail = l.layout.regions.last().unwrap();
    assert_eq!((tail.offset, tail.len, tail.kind), (84 * 76, 16, Kind::Unused));
}

/// A repository naming a requirement hg 6.3 does not know is refused by
/// both (hg: "repository requires features unknown to this Mercurial"),
/// whether in `.hg/requires` or a share-safe store's `requires`; and
/// every requirement hg 6.3 itself supports is one we accept.
#[test]
fn unknown_requirements_are_refused_as_hg_refuses_them() {
    let out = crate::support::hg_python()
        .args([
            "-c",
            "from mercurial import localrepo, ui\n\
             for r in sorted(localrepo.gathersupportedrequirements(ui.ui.load())): print(r.decode())",
        ])
        .output()
        .expect("python");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let supported = text(&out.stdout);
    assert!(supported.lines().count() > 10, "{supported}");
    for r in supported.lines() {
        assert!(
            mapwise_native::engine::revlog::KNOWN_REQUIREMENTS.contains(&r),
            "hg supports {r:?}, mapwise refuses it"
        );
    }
    let cases = [
        (
            ".hg/requires",
            "frobnicate\n",
            "unknown to this Mercurial: frobnicate",
            "repository requires features unknown to mapwise: frobnicate",
        ),
        (
            ".hg/store/requires",
            "frobnicate\n",
            "unknown to this Mercurial: frobnicate",
            "repository requires features unknown to mapwise: frobnicate",
        ),
        // hg refuses an empty line or one not starting with a letter or
        // digit as a corrupt file.
        (".hg/requires", "\n", "requires file is corrupt", "requires file is corrupt"),
        (".hg/requires", " store\n", "requires file is corrupt", "requires file is corrupt"),
    ];
    for (file, line, hg_says, we_say) in cases {
        let dir = tempdir();
        let repo = dir.path().join("r");
        let r = s(&repo);
        revlog_oracle_out(&["gen-repo", r, "--revs", "3"]);
        assert_same_text(
            "log before",
            &ok(&["revlog", "log", "-l", "2", r]),
            &revlog_oracle_out(&["log", r, "2"]),
        );
        let path = repo.join(file);
        let mut reqs = std::fs::read_to_string(&path).expect(file);
        reqs.push_str(line);
        std::fs::write(&path, reqs).unwrap();
        let hg_out = hg().args(["-R", r, "log", "-l", "1"]).output().unwrap();
        assert!(!hg_out.status.success(), "hg read it ({file} {line:?})");
        assert!(text(&hg_out.stderr).contains(hg_says), "{}", text(&hg_out.stderr));
        let err = refused(&["revlog", "log", "-l", "1", r]);
        assert!(err.contains(we_say), "{file} {line:?}: {err}");
    }
}
