//! Readers never write: every read-only front end — the
//! `mapwise` readers of bbolt, RRD and revlog files, `mapwise mmaptest`,
//! the inspector's subcommands, `inspector record`, and the TUI with its
//! touch, evict, advise and lock keys — runs on copies of real files, and
//! afterwards every file of the copies has the same bytes, length, inode,
//! modification time and change time (nanoseconds), and no file appeared
//! or vanished beside them. (The browser viewer's view layer is checked the
//! same way in `wasm/tests/readonly.rs`.)
//!
//! `mapwise` is `mapwise-cli`'s binary: it is taken from beside the
//! inspector's (`cargo test --workspace` builds both into one directory).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Need, bin, mapwise, need, tmpdir};
use crate::tmux::{Tmux, shell_quote, wait_file};

use mapwise_testkit::fileprint::{copy_tree, differences, prints};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata").join(rel)
}

/// Run `program ARGS` with stdout to /dev/null; its exit status must be 0.
fn ok(program: &Path, args: &[&str], log: &mut Vec<String>) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    let name = program.file_name().unwrap_or_default().to_string_lossy();
    assert!(
        out.status.success(),
        "{name} {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    log.push(format!("{name} {}", args.join(" ")));
}

/// The TUI on `file`: open, `t` touch, `e` evict (`y`), `a` advise
/// DONTNEED on the selected cell, `a` WILLNEED on it, `L` lock and unlock,
/// `q`: each step waited for on screen, exit status 0.
fn tui_session(file: &Path, rc: &Path) {
    let cmd = format!(
        "{} open {} --interval 100; echo $? > {}",
        shell_quote(Path::new(bin())),
        shell_quote(file),
        shell_quote(rc)
    );
    let t = Tmux::new(160, 40, &cmd);
    let step = Duration::from_millis(100);
    let wait = |what: &str, text: &str| {
        t.wait_for(300, step, |s| s.contains(text))
            .unwrap_or_else(|s| panic!("{}: {what}: no {text:?} on screen:\n{s}", file.display()));
    };
    wait("start", "Resident ");
    t.keys(&["t"]);
    wait("touch", "touched the file");
    t.keys(&["e"]);
    wait("evict question", "(y/n)");
    t.keys(&["y"]);
    wait("evict", "evicted ");
    t.keys(&["Right", "a"]);
    wait("advise menu", "advise the kernel");
    t.keys(&["Down", "Enter"]);
    wait("DONTNEED", "DONTNEED on page 1");
    t.keys(&["a"]);
    wait("advise menu", "advise the kernel");
    t.keys(&["Up", "Enter"]);
    wait("WILLNEED", "WILLNEED on page 1");
    t.keys(&["L"]);
    wait("lock", "in memory (mlock)");
    t.keys(&["L"]);
    wait("unlock", "unlocked");
    t.keys(&["q"]);
    let code = wait_file(rc, Duration::from_secs(30)).expect("the inspector did not exit");
    assert_eq!(code.trim(), "0", "{}: exit status", file.display());
}

#[test]
fn readers_never_write() {
    need(&[Need::Tmux]);
    let dir = tmpdir();
    let files = dir.path().join("files");
    let out = dir.path().join("out");
    fs::create_dir_all(&out).expect("mkdir");
    for (from, to) in [
        ("bolt/etcd-small.db", "etcd.db"),
        ("bolt/small.db", "small.db"),
        ("bolt/freelist-1k.db", "freelist-1k.db"),
        ("rrd/hw.rrd", "hw.rrd"),
        ("rrd/seed.rrd", "seed.rrd"),
        ("revlog", "store"),
    ] {
        copy_tree(&testdata(from), &files.join(to));
    }
    let before = prints(&files);
    let f = |name: &str| files.join(name).to_str().expect("utf-8").to_owned();
    let (etcd, small, k1, hw, seed) =
        (f("etcd.db"), f("small.db"), f("freelist-1k.db"), f("hw.rrd"), f("seed.rrd"));
    let store = f("store");
    let changelog = f("store/00changelog.i");
    let a_txt = f("store/data/a.txt.i");
    let trace = out.join("t.trace");
    let trace = trace.to_str().expect("utf-8");
    let mw = mapwise();
    let insp = PathBuf::from(bin());
    let mut log = Vec::new();

    // mapwise bolt: every read-only command, text and JSON.
    for db in [&etcd, &small, &k1] {
        for args in [
            &["bolt", "info", db][..],
            &["bolt", "buckets", db],
            &["bolt", "buckets", db, "--json"],
            &["bolt", "dump", db],
            &["bolt", "dump", db, "--json"],
            &["bolt", "dump", db, "0", "1", "2"],
            &["bolt", "check", db],
            &["bolt", "stats", db],
            &["bolt", "pages", db],
            &["bolt", "page", db, "--all"],
            &["bolt", "page", db, "--all", "--json"],
        ] {
            ok(&mw, args, &mut log);
        }
    }
    // Buckets and keys that Go bbolt's dump of small.db lists.
    for args in [
        &["bolt", "keys", &small, "alpha"][..],
        &["bolt", "keys", &small, "beta", "inner", "--json"],
        &["bolt", "get", &small, "alpha", "key-001"],
        &["bolt", "get", &small, "beta", "inner", "deeper", "leaf"],
        &["bolt", "stats", &small, "b"],
        &["bolt", "keys", &etcd, "meta"],
        &["bolt", "traverse", &etcd, "--bucket", "key"],
        &[
            "bolt",
            "traverse",
            &etcd,
            "--bucket",
            "key",
            "--populate",
            "--cold",
            "--prefetch",
            "65536",
            "--residency",
        ],
    ] {
        ok(&mw, args, &mut log);
    }
    // mapwise rrd: every reader in every I/O mode.
    for rrd in [&hw, &seed] {
        for io in ["mmap", "mmap-2pages", "fd", "direct"] {
            for args in [
                &["rrd", "fetch", rrd, "AVERAGE", "--io", io][..],
                &["rrd", "fetch", rrd, "AVERAGE", "--json", "--io", io],
                &["rrd", "dump", rrd, "--io", io],
                &["rrd", "info", rrd, "--io", io],
                &["rrd", "last", rrd, "--io", io],
                &["rrd", "first", rrd, "--io", io],
                &["rrd", "lastupdate", rrd, "--io", io],
            ] {
                ok(&mw, args, &mut log);
            }
        }
    }
    // mapwise revlog: read whole and mapped, by flag, by name, by path.
    for args in [
        &["revlog", "log", "-l", "5", &store][..],
        &[
            "revlog",
            "log",
            "-l",
            "5",
            &store,
            "--config",
            "experimental.mmapindexthreshold=4k",
            "--json",
        ],
        &["revlog", "log", "-l", "5", &store, "--hidden"],
        &["revlog", "debugindex", "-c", "-R", &store],
        &["revlog", "debugindex", "-m", "-R", &store],
        &["revlog", "debugindex", "-R", &store, "big.txt"],
        &["revlog", "debugindex", "--index", &a_txt],
    ] {
        ok(&mw, args, &mut log);
    }
    // mapwise mmaptest: every mode, faithful and touching, cold.
    for args in [
        &["mmaptest", "--mode", "all", "-n", "3", &etcd, &hw, &changelog][..],
        &[
            "mmaptest",
            "--mode",
            "all",
            "-n",
            "3",
            "--touch",
            "--populate",
            "--cold",
            &etcd,
            &hw,
            &changelog,
        ],
    ] {
        ok(&mw, args, &mut log);
    }
    // The inspector's subcommands and the recorder, on each format.
    for file in [&etcd, &k1, &hw, &changelog] {
        for args in [
            &["residency", file][..],
            &["residency", file, "--json"],
            &["layout", file],
            &["layout", file, "--json"],
            &["check", file],
            &["record", file, "-o", trace, "--interval", "10", "--duration", "0.3"],
        ] {
            ok(&insp, args, &mut log);
        }
    }
    for db in [&etcd, &k1] {
        for args in [
            &["pages", db][..],
            &["page", db, "0", "1", "2"],
            &["page", db, "0", "1", "2", "--json"],
        ] {
            ok(&insp, args, &mut log);
        }
    }
    // The etcd report and its forecasts (made in memory, never beside
    // the db).
    for args in [&["etcd", &etcd][..], &["etcd", &etcd, "--json", "--depth", "1"]] {
        ok(&insp, args, &mut log);
    }
    // The TUI, with every key that acts on the file.
    for file in [&etcd, &hw, &changelog] {
        tui_session(Path::new(file), &out.join("rc"));
        let _ = fs::remove_file(out.join("rc"));
        log.push(format!("inspector open {file} (t, e y, a DONTNEED, a WILLNEED, L, L, q)"));
    }

    let after = prints(&files);
    let diff = differences(&before, &after);
    assert!(
        diff.is_empty(),
        "after {} reader runs, files changed:\n{}",
        log.len(),
        diff.join("\n")
    );
    eprintln!(
        "{} reader runs left {} files byte-identical with the same mtime and ctime",
        log.len(),
        after.len()
    );
}
