//! Bad input: every refusal is rrdtool's (the same `ERROR:` line and exit
//! status as rrdtool for the same command on the same file), and a refused
//! command leaves the file as it was.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use mapwise_core::rrd::Header;
use mapwise_testkit::rrd::copy;

use super::{mw, ok, rt};
use crate::support::tempdir;

/// Run `args` (with `FILE` replaced by the file name) in two directories
/// holding the same file, mapwise in `a`, rrdtool in `b`; both must fail
/// with the same stderr (or ours must start with `prefix` when given),
/// and ours must end byte for byte as rrdtool's (which may have written
/// the `last_ds` of data sources before a refused value).
fn refused_like_rrdtool(corpus: &str, args: &[&str], exact: bool) {
    let dir = tempdir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    copy(corpus, &a, "f.rrd");
    copy(corpus, &b, "f.rrd");
    let before = std::fs::read(a.join("f.rrd")).expect("read");
    let args: Vec<&str> = args.iter().map(|s| if *s == "FILE" { "f.rrd" } else { s }).collect();
    let ours = mw(&a, &args);
    let theirs = rt(&b, &args);
    let (oe, te) = (String::from_utf8_lossy(&ours.stderr), String::from_utf8_lossy(&theirs.stderr));
    assert_eq!(theirs.status.code(), Some(1), "rrdtool {args:?} should fail: {te}");
    assert_eq!(
        ours.status.code(),
        Some(1),
        "mapwise {args:?} should fail like rrdtool ({te}): {oe}"
    );
    assert!(!oe.contains("panicked"), "{args:?}: {oe}");
    if exact {
        assert_eq!(oe, te, "{args:?}: error text");
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{args:?}: stdout"
        );
    } else {
        let head = te.split(':').next().unwrap_or("");
        assert!(oe.starts_with(head), "{args:?}: ours {oe:?}, rrdtool {te:?}");
    }
    let (ours, theirs) = (
        std::fs::read(a.join("f.rrd")).expect("read"),
        std::fs::read(b.join("f.rrd")).expect("read"),
    );
    assert_eq!(ours.len(), before.len(), "{args:?}: the length changed");
    mapwise_testkit::assert_same_bytes(&format!("{args:?}: the file"), &ours, &theirs);
}

#[test]
fn malformed_updates_are_refused_as_rrdtool_refuses_them() {
    // gauge.rrd: DS temp (GAUGE -50..150) and load, last update 1600166414.
    let cases: &[&[&str]] = &[
        &["update", "FILE", "1600170000:5"],
        &["update", "FILE", "1600170000:5:6:7"],
        &["update", "FILE", "1600000000:5:6"],
        &["update", "FILE", "1600166414:5:6"],
        &["update", "FILE", "1600166500:abc:6"],
        &["update", "FILE", "1600166500:1.5x:6"],
        &["update", "FILE", "1600166500:5:"],
        &["update", "FILE", "-t", "temp:nope", "1600170000:1:2"],
        &["update", "FILE", "-t", "temp:load:temp", "1600170000:1:2:3"],
        &["update", "FILE", "16001700x0:1:2"],
        &["update", "FILE", "1600170000"],
        &["updatev", "FILE", "1600000000:5:6"],
    ];
    for c in cases {
        refused_like_rrdtool("gauge.rrd", c, true);
    }
    // counter.rrd: COUNTER octets and DERIVE delta.
    refused_like_rrdtool("counter.rrd", &["update", "FILE", "1600165500:12.5:3"], true);
    refused_like_rrdtool("counter.rrd", &["update", "FILE", "1600165500:12:x3"], true);
    // dtypes.rrd: DCOUNTER and DDERIVE.
    refused_like_rrdtool("dtypes.rrd", &["update", "FILE", "1600166500:1e5q:3"], true);
}

/// Numbers in a time spec past what a C `long` holds, or past what a
/// `struct tm` holds: rrdtool's parsetime reads them with glibc's `atol`
/// (saturating), prints them with `%d` (the low 32 bits) and keeps going
/// when `localtime_r` overflows part-way; each refusal must read as
/// rrdtool's. (The first of these once made our parser overflow.)
#[test]
fn time_specs_past_a_long_are_refused_as_rrdtool_refuses_them() {
    let specs = [
        "1.99999999999999999999",
        "1.4294967296",
        "1/99999999999999999999",
        "12/4294967298",
        "1/1/99999999999999999999",
        "10:99999999999999999999",
        "now+99999999999999999999s",
        "99999999999999999999",
        "67768036191676800",
        "12:30 99999999999999999999",
    ];
    for s in specs {
        refused_like_rrdtool(
            "gauge.rrd",
            &["fetch", "FILE", "AVERAGE", "-s", s, "-e", "1600166414"],
            true,
        );
    }
}

/// A refused argument after good ones keeps the good ones (rrdtool has
/// written them): the same bytes and message as rrdtool; with
/// `--skip-past-updates` the past argument is skipped.
#[test]
fn a_refused_argument_keeps_the_ones_before() {
    let dir = tempdir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    for (args, fails) in [
        (&["update", "f.rrd", "1600170000:1:2", "1600180000:3:4", "1600169000:1:2"][..], true),
        (
            &["update", "f.rrd", "-s", "1600170000:1:2", "1600160000:9:9", "1600180000:3:4"][..],
            false,
        ),
        (&["updatev", "f.rrd", "1600170000:1:2", "1600260000:3:4", "1600169000:1:2"][..], true),
    ] {
        copy("hw.rrd", &a, "f.rrd");
        copy("hw.rrd", &b, "f.rrd");
        let ours = mw(&a, args);
        let theirs = rt(&b, args);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert_eq!(ours.status.success(), !fails);
        assert_eq!(String::from_utf8_lossy(&ours.stderr), String::from_utf8_lossy(&theirs.stderr));
        assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&theirs.stdout));
        assert!(
            std::fs::read(a.join("f.rrd")).expect("a")
                == std::fs::read(b.join("f.rrd")).expect("b"),
            "{args:?}: files differ"
        );
    }
}

#[test]
fn malformed_creates_are_refused_as_rrdtool_refuses_them() {
    let cases: &[&[&str]] = &[
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U"],
        &["-b", "1600000000", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "1600000000", "DS:a:GAUGE:600:5:1", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "1600000000", "DS:a:FOO:600:U:U", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "1600000000", "DS:a b:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "1600000000", "DS:a:GAUGE:x:U:U", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:1.5:1:10"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:BOGUS:0.5:1:10"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:7m:10"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:HWPREDICT:10:0.5:0.1:20"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:HWPREDICT:10:1.5:0.1:2"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:FAILURES:10:30:9:1"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:FAILURES:10:7:5:1"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:DEVPREDICT:10:1:5"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:SEASONAL:10:0.5:1:foo"],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "junk"],
        &["-s", "0", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "100", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"],
        &["-b", "yesterday x", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"],
        &[
            "-b",
            "1600000000",
            "DS:a:GAUGE:600:U:U",
            "DS:c:COMPUTE:a,TIME,+",
            "RRA:AVERAGE:0.5:1:10",
        ],
        &["-b", "1600000000", "DS:a:GAUGE:600:U:U", "DS:c:COMPUTE:a,1.5,*", "RRA:AVERAGE:0.5:1:10"],
    ];
    let dir = tempdir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    for c in cases {
        let mut args = vec!["create", "n.rrd"];
        args.extend_from_slice(c);
        let ours = mw(&a, &args);
        let theirs = rt(&b, &args);
        let (oe, te) =
            (String::from_utf8_lossy(&ours.stderr), String::from_utf8_lossy(&theirs.stderr));
        assert_eq!(theirs.status.code(), Some(1), "rrdtool {args:?}: {te}");
        assert_eq!(ours.status.code(), Some(1), "mapwise {args:?}: {oe}");
        assert_eq!(oe, te, "{args:?}");
        assert!(!a.join("n.rrd").exists(), "{args:?}: a file was left");
        assert_eq!(
            std::fs::read_dir(&a).expect("ls").count(),
            0,
            "{args:?}: a temporary file was left"
        );
    }
    // An expression rrdtool only rejects with a reason mapwise adds to.
    let args = [
        "create",
        "n.rrd",
        "-b",
        "1600000000",
        "DS:a:GAUGE:600:U:U",
        "DS:c:COMPUTE:x,2,+",
        "RRA:AVERAGE:0.5:1:10",
    ];
    let ours = mw(&a, &args);
    let theirs = rt(&b, &args);
    assert_eq!((ours.status.code(), theirs.status.code()), (Some(1), Some(1)));
    let te = String::from_utf8_lossy(&theirs.stderr);
    assert!(String::from_utf8_lossy(&ours.stderr).starts_with(te.trim_end()), "{te}");
}

/// Files cut anywhere: the same error as rrdtool for every command, and
/// an update leaves them unchanged.
#[test]
fn truncated_files() {
    let full = std::fs::read(crate::support::rrd_testdata("gauge.rrd")).expect("read");
    let h = Header::parse(&full[..]).expect("header");
    let g = h.geometry().clone();
    let dir = tempdir();
    let d = dir.path();
    let cuts = [
        0,
        50,
        130,
        g.rra_def as usize + 10,
        g.pdp_prep as usize + 3,
        g.rra_ptr as usize + 4,
        g.header_len as usize + 100,
        full.len() - 8,
    ];
    for cut in cuts {
        std::fs::write(d.join("cut.rrd"), &full[..cut]).expect("write");
        for args in [
            &["info", "cut.rrd"][..],
            &["last", "cut.rrd"],
            &["lastupdate", "cut.rrd"],
            &["dump", "cut.rrd"],
            &["fetch", "cut.rrd", "AVERAGE", "-s", "1600000000", "-e", "1600100000"],
            &["update", "cut.rrd", "1600170000:1:2"],
        ] {
            let ours = mw(d, args);
            let theirs = rt(d, args);
            assert_eq!(theirs.status.code(), Some(1), "rrdtool {args:?} at {cut}");
            assert_eq!(
                ours.status.code(),
                Some(1),
                "mapwise {args:?} at {cut}: {}",
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&ours.stderr),
                String::from_utf8_lossy(&theirs.stderr),
                "{args:?} cut at {cut}"
            );
            assert_eq!(
                std::fs::read(d.join("cut.rrd")).expect("read"),
                &full[..cut],
                "{args:?} changed the file"
            );
        }
        // The layout of a cut file still covers it.
        let l = mapwise_core::rrd::layout(&full[..cut], 4096);
        let end = l.layout.regions.last().map_or(0, |r| r.end());
        assert_eq!(end, cut as u64);
    }
}

/// Files from other architectures: rrdtool's "created on another
/// architecture" line, naming the layout; nothing changed.
#[test]
fn foreign_architectures_are_named() {
    let full = std::fs::read(crate::support::rrd_testdata("gauge.rrd")).expect("read");
    let dir = tempdir();
    let d = dir.path();
    // 64-bit big-endian: every integer and double byte-swapped; the
    // cookie is what rrdtool and mapwise look at.
    let mut be = full.clone();
    be[16..24].reverse();
    be[24..32].reverse();
    be[32..40].reverse();
    be[40..48].reverse();
    // i386: the double at byte 12, 4-byte counts after it.
    let mut i386 = full.clone();
    i386[12..20].copy_from_slice(&full[16..24]);
    i386[20..24].copy_from_slice(&2u32.to_le_bytes());
    i386[24..28].copy_from_slice(&3u32.to_le_bytes());
    // 32-bit ARM: the double at 16, ds_cnt and rra_cnt in 4 bytes each.
    let mut arm = full.clone();
    arm[24..28].copy_from_slice(&2u32.to_le_bytes());
    arm[28..32].copy_from_slice(&3u32.to_le_bytes());
    for (bytes, name, rrdtool_same) in
        [(be, "64-bit big-endian", true), (i386, "i386", true), (arm, "32-bit ARM", false)]
    {
        std::fs::write(d.join("f.rrd"), &bytes).expect("write");
        for args in
            [&["info", "f.rrd"][..], &["update", "f.rrd", "1600170000:1:2"], &["dump", "f.rrd"]]
        {
            let ours = mw(d, args);
            let theirs = rt(d, args);
            let oe = String::from_utf8_lossy(&ours.stderr);
            let te = String::from_utf8_lossy(&theirs.stderr);
            assert_eq!(ours.status.code(), Some(1), "{args:?}: {oe}");
            assert_eq!(theirs.status.code(), Some(1), "{args:?}: {te}");
            assert!(
                oe.starts_with("ERROR: This RRD was created on another architecture ("),
                "{oe}"
            );
            assert!(oe.contains(name), "{name}: {oe}");
            if rrdtool_same {
                assert!(
                    te.starts_with("ERROR: This RRD was created on another architecture"),
                    "{te}"
                );
            }
            assert_eq!(std::fs::read(d.join("f.rrd")).expect("read"), bytes);
        }
        let l = mapwise_core::rrd::layout(&bytes[..], 4096);
        assert!(l.arch.is_some_and(|a| a != mapwise_core::rrd::Arch::Native), "{name}");
        assert!(l.fatal.is_some());
        assert!(mapwise_core::detect::foreign_rrd(&bytes[..]).is_some(), "{name}");
    }
}

/// Held by another process's fcntl lock: update fails at once with
/// "could not lock RRD" (as rrdtool), leaving the file; a read lock lets
/// readers in but not writers.
#[test]
fn a_locked_file_fails_at_once() {
    let dir = tempdir();
    let d = dir.path();
    let p = copy("gauge.rrd", d, "l.rrd");
    let before = std::fs::read(&p).expect("read");
    for (kind, readers_ok) in [("LOCK_EX", false), ("LOCK_SH", true)] {
        let (mut child, _guard) = hold_lock(&p, kind);
        let ours = mw(d, &["update", "l.rrd", "1600170000:1:2"]);
        let theirs = rt(d, &["update", "l.rrd", "1600170000:1:2"]);
        let oe = String::from_utf8_lossy(&ours.stderr).into_owned();
        assert_eq!(ours.status.code(), Some(1), "{kind}: {oe}");
        assert_eq!(oe, "ERROR: could not lock RRD\n", "{kind}: rrdtool's exact line");
        assert_eq!(theirs.status.code(), Some(1));
        assert_eq!(String::from_utf8_lossy(&theirs.stderr), "ERROR: could not lock RRD\n");
        assert_eq!(std::fs::read(&p).expect("read"), before);
        let info = mw(d, &["info", "l.rrd"]);
        assert_eq!(
            info.status.success(),
            readers_ok,
            "{kind}: {}",
            String::from_utf8_lossy(&info.stderr)
        );
        child.kill().ok();
        child.wait().ok();
    }
    // Free again: the update goes through.
    assert!(mw(d, &["update", "l.rrd", "1600170000:1:2"]).status.success());
}

/// Hold an fcntl lock on `p` in a python3 child (lockf is fcntl F_SETLK).
fn hold_lock(p: &Path, kind: &str) -> (std::process::Child, ()) {
    crate::support::install::ensure(&[crate::support::install::Need::Python]);
    let mode = if kind == "LOCK_EX" { "r+" } else { "r" };
    let script = format!(
        "import fcntl,sys,time\nf=open(sys.argv[1],'{mode}')\nfcntl.lockf(f, fcntl.{kind})\nprint('locked', flush=True)\ntime.sleep(60)\n"
    );
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(p)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout")).read_line(&mut line).expect("read");
    assert_eq!(line.trim(), "locked");
    (child, ())
}

/// rrdtool's rrdcached options without a daemon: `info --noflush` is
/// accepted and changes nothing (the same output as rrdtool's); the other
/// commands do not take `-F/--noflush` and refuse it as rrdtool's getopt
/// does; `updatev` takes no `--daemon`. (Through a real daemon:
/// `rrd::cached`.)
#[test]
fn rrdcached_options() {
    for args in [
        &["info", "--noflush", "FILE"][..],
        &["info", "-F", "FILE"],
        &["info", "--daemon", "", "FILE"],
    ] {
        let dir = tempdir();
        copy("gauge.rrd", dir.path(), "f.rrd");
        let args: Vec<&str> = args.iter().map(|s| if *s == "FILE" { "f.rrd" } else { s }).collect();
        let ours = ok("mapwise", &mw(dir.path(), &args));
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&ok("rrdtool", &rt(dir.path(), &args))),
            "{args:?}"
        );
    }
    for args in [
        &["lastupdate", "-F", "FILE"][..],
        &["last", "--noflush", "FILE"],
        &["fetch", "FILE", "AVERAGE", "-F"],
        &["update", "FILE", "-F", "N:1:2"],
        &["updatev", "FILE", "--daemon", "unix:/nonexistent", "N:1:2"],
        &["updatev", "FILE", "-d", "unix:/nonexistent", "N:1:2"],
    ] {
        refused_like_rrdtool("gauge.rrd", args, true);
    }
}

/// The one-file commands given two files: rrdtool's usage line (`last`
/// prints its -1 first; `first` ignores the extra words).
#[test]
fn extra_files_get_rrdtools_usage() {
    for args in [
        &["lastupdate", "FILE", "FILE"][..],
        &["info", "FILE", "FILE"],
        &["last", "FILE", "FILE"],
        &["info", "--noflush"],
    ] {
        refused_like_rrdtool("gauge.rrd", args, true);
    }
    let dir = tempdir();
    copy("gauge.rrd", dir.path(), "f.rrd");
    let args = ["first", "f.rrd", "f.rrd", "extra"];
    assert_eq!(ok("mapwise", &mw(dir.path(), &args)), ok("rrdtool", &rt(dir.path(), &args)));
}

/// A value refused part-way through the data sources leaves the file as
/// rrdtool leaves it: rrdtool has already copied the inputs of the data
/// sources before the refused one into their `last_ds` (through its
/// mapping) and keeps them. Every failing position, after good arguments
/// and alone, `update` and `updatev`, in every I/O mode: the same bytes,
/// output and error as rrdtool's.
#[test]
fn a_refused_value_leaves_the_last_ds_rrdtool_leaves() {
    let dir = tempdir();
    let create = [
        "create",
        "f.rrd",
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:g1:GAUGE:600:U:U",
        "DS:g2:GAUGE:600:U:U",
        "DS:c:COUNTER:600:U:U",
        "DS:d:DERIVE:600:U:U",
        "DS:a:ABSOLUTE:600:U:U",
        "RRA:AVERAGE:0.5:1:20",
        "RRA:MAX:0.5:4:10",
    ];
    let seed = dir.path().join("seed");
    std::fs::create_dir_all(&seed).expect("mkdir");
    ok("create", &rt(&seed, &create));
    ok("seed update", &rt(&seed, &["update", "f.rrd", "1600000300:1:2:100:5:7"]));
    let bad_at = [
        "1600000600:x:2:100:5:7",
        "1600000600:1:2x:100:5:7",
        "1600000600:1:2:1e5:5:7",
        "1600000600:1:2:100:5.5:7",
        "1600000600:1:2:100:5:seven",
    ];
    let mut cases: Vec<Vec<String>> = Vec::new();
    for (i, bad) in bad_at.iter().enumerate() {
        cases.push(vec![(*bad).to_owned()]);
        let bad_later = bad.replace("1600000600", "1600001200");
        cases.push(vec!["1600000600:3:4:200:9:1".to_owned(), bad_later]);
        if i % 2 == 0 {
            cases.push(vec!["-t".into(), "c:g2:d".into(), "1600000600:300:5:zz".into()]);
        }
    }
    for (n, case) in cases.iter().enumerate() {
        for cmd in ["update", "updatev"] {
            for io in ["mmap", "fd", "direct", "mmap-2pages"] {
                let (a, b) = (
                    dir.path().join(format!("a{n}{cmd}{io}")),
                    dir.path().join(format!("b{n}{cmd}{io}")),
                );
                for d in [&a, &b] {
                    std::fs::create_dir_all(d).expect("mkdir");
                    std::fs::copy(seed.join("f.rrd"), d.join("f.rrd")).expect("copy");
                }
                let mut args: Vec<&str> = vec![cmd, "f.rrd"];
                args.extend(case.iter().map(String::as_str));
                let theirs = rt(&b, &args);
                args.extend(["--io", io]);
                let ours = mw(&a, &args);
                assert_eq!(theirs.status.code(), Some(1), "{args:?}");
                assert_eq!(ours.status.code(), Some(1), "{args:?}");
                assert_eq!(
                    String::from_utf8_lossy(&ours.stderr),
                    String::from_utf8_lossy(&theirs.stderr),
                    "{args:?}"
                );
                assert_eq!(
                    String::from_utf8_lossy(&ours.stdout),
                    String::from_utf8_lossy(&theirs.stdout),
                    "{args:?}"
                );
                mapwise_testkit::assert_same_bytes(
                    &format!("{args:?}"),
                    &std::fs::read(a.join("f.rrd")).expect("a"),
                    &std::fs::read(b.join("f.rrd")).expect("b"),
                );
            }
        }
    }
}

/// Run `args` with stdout and stderr in one pipe (`2>&1`), as a script
/// capturing both would.
fn merged(dir: &Path, program: &Path, args: &[&str]) -> (Option<i32>, Vec<u8>) {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("exec \"$0\" \"$@\" 2>&1")
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("RRDCACHED_ADDRESS");
    let o = crate::support::run_limited(&mut c, std::time::Duration::from_secs(60));
    (o.status.code(), o.stdout)
}

/// stdout and stderr in one pipe come in rrdtool's order: rrdtool's
/// results go through stdio's buffer (a pipe's: 4096 bytes, written out as
/// it fills) and its error line straight to stderr, so a short result
/// comes after the error and a long one is cut by it at a 4096-byte
/// boundary.
#[test]
fn merged_streams_come_in_rrdtools_order() {
    let rrdtool = crate::support::which("rrdtool").expect("rrdtool on PATH");
    let ours = Path::new(env!("CARGO_BIN_EXE_mapwise"));
    let cases: &[&[&str]] = &[
        &["updatev", "f.rrd", "1600166700:1:2", "1600167000:x:2"],
        &["updatev", "f.rrd", "1600266700:1:2", "1600267000:x:2"],
        &["updatev", "f.rrd", "1600366700:1:2", "1600366800:3:4", "1600100000:1:1"],
        &["info", "junk.rrd"],
        &["last", "junk.rrd"],
        &["first", "junk.rrd"],
        &["last", "f.rrd", "--bogus"],
        &["info", "--daemon", "unix:/nonexistent/sock", "f.rrd"],
        &[
            "fetch",
            "--daemon",
            "unix:/nonexistent/sock",
            "f.rrd",
            "AVERAGE",
            "-s",
            "1600000000",
            "-e",
            "1600166414",
        ],
        &["dump", "--daemon", "unix:/nonexistent/sock", "f.rrd"],
    ];
    let dir = tempdir();
    for (i, args) in cases.iter().enumerate() {
        let (a, b) = (dir.path().join(format!("a{i}")), dir.path().join(format!("b{i}")));
        for d in [&a, &b] {
            std::fs::create_dir_all(d).expect("mkdir");
            copy("gauge.rrd", d, "f.rrd");
            std::fs::write(d.join("junk.rrd"), b"junk").expect("write");
        }
        let mut full = vec!["rrd"];
        full.extend_from_slice(args);
        let (oc, ot) = merged(&a, ours, &full);
        let (tc, tt) = merged(&b, &rrdtool, args);
        assert_eq!(oc, tc, "{args:?}");
        crate::support::assert_same_text(&format!("{args:?} (2>&1)"), &ot, &tt);
    }
}

/// A command line rrdtool refuses before touching the file (missing
/// arguments, an unknown option) fails as rrdtool's does: exit status 1
/// and an `ERROR: ` line, so a script that checks either still works.
#[test]
fn usage_errors_look_like_rrdtools() {
    let dir = tempdir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir_all(d).expect("mkdir");
        ok(
            "create",
            &rt(d, &["create", "u.rrd", "-s", "300", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]),
        );
    }
    let before = std::fs::read(a.join("u.rrd")).expect("read");
    for args in [
        &["fetch", "u.rrd"][..],
        &["update", "u.rrd", "--bogus", "N:1"][..],
        &["fetch", "u.rrd", "AVERAGE", "--bogus"][..],
    ] {
        let ours = mw(&a, args);
        let theirs = rt(&b, args);
        let (oe, te) =
            (String::from_utf8_lossy(&ours.stderr), String::from_utf8_lossy(&theirs.stderr));
        assert_eq!(theirs.status.code(), Some(1), "rrdtool {args:?}: {te}");
        assert!(te.starts_with("ERROR: "), "rrdtool {args:?}: {te}");
        assert_eq!(ours.status.code(), Some(1), "mapwise {args:?}: {oe}");
        assert!(oe.starts_with("ERROR: "), "mapwise {args:?}: {oe}");
        assert_eq!(oe.lines().count(), 1, "mapwise {args:?}: {oe}");
    }
    assert_eq!(std::fs::read(a.join("u.rrd")).expect("read"), before, "file changed");
}

/// Options are read as rrdtool's getopt reads them: an unknown one is
/// named by its letter (`-1@…` is option `1`) or its whole long form; an
/// option's value may start with `-`; `last`/`first` still print -1 and
/// `dump` its usage. A repeated option's last value wins, and words after
/// fetch's CF are ignored — the same output as rrdtool's, and the same
/// file.
#[test]
fn options_are_read_as_getopt_reads_them() {
    for args in [
        &["fetch", "FILE", "AVERAGE", "-Q"][..],
        &["fetch", "FILE", "AVERAGE", "--bogus=3"],
        &["update", "FILE", "-1@1:2"],
        &["update", "FILE", "end-1h@1:2"],
        &["update", "FILE", "start+1h@1:2"],
        &["update", "FILE", "bogus@1:2"],
        &["fetch", "FILE", "AVERAGE", "-r", "-5m", "-e", "1600166414"],
        &["fetch", "FILE", "AVERAGE", "--resolution", "-5m"],
        &["last", "FILE", "--x"],
        &["first", "FILE", "-Z"],
        &["dump", "FILE", "--x"],
        &["info", "FILE", "--x"],
        &["fetch", "FILE"],
        &["fetch", "FILE", "-s", "1600000000"],
        &["create", "FILE"],
        &["create", "FILE", "-s", "300", "DS:a:GAUGE:600:U:U"],
    ] {
        refused_like_rrdtool("gauge.rrd", args, true);
    }
    let dir = tempdir();
    for (i, args) in [
        &["fetch", "f.rrd", "AVERAGE", "-s", "1600160000", "-s", "1600150000", "-e", "1600166414"]
            [..],
        &["fetch", "f.rrd", "AVERAGE", "--start", "1600160000", "--end", "1600166414", "extra"],
        &["fetch", "f.rrd", "AVERAGE", "-a", "-a", "-s", "1600160000", "-e", "1600166414"],
        &["update", "f.rrd", "-t", "temp", "-t", "load", "1600170000:5"],
        &["updatev", "f.rrd", "-s", "-s", "1600170000:5:6"],
    ]
    .into_iter()
    .enumerate()
    {
        let (a, b) = (dir.path().join(format!("a{i}")), dir.path().join(format!("b{i}")));
        std::fs::create_dir_all(&a).expect("mkdir");
        std::fs::create_dir_all(&b).expect("mkdir");
        copy("gauge.rrd", &a, "f.rrd");
        copy("gauge.rrd", &b, "f.rrd");
        let theirs = ok(&format!("rrdtool {args:?}"), &rt(&b, args));
        let ours = ok(&format!("mapwise {args:?}"), &mw(&a, args));
        assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs), "{args:?}");
        assert_eq!(
            std::fs::read(a.join("f.rrd")).expect("read"),
            std::fs::read(b.join("f.rrd")).expect("read"),
            "{args:?}: the files"
        );
    }
    // create: the last -b is the start.
    let (a, b) = (dir.path().join("ca"), dir.path().join("cb"));
    for (d, run) in [(&a, mw as fn(&Path, &[&str]) -> _), (&b, rt)] {
        std::fs::create_dir_all(d).expect("mkdir");
        let args = [
            "create",
            "c.rrd",
            "-b",
            "1600000000",
            "-b",
            "1600100000",
            "DS:x:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:10",
        ];
        ok("create", &run(d, &args));
    }
    assert_eq!(ok("last", &mw(&a, &["last", "c.rrd"])), ok("last", &rt(&b, &["last", "c.rrd"])));
}
