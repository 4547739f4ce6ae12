//! `mapwise mmaptest` against its peers: the C reconstruction of the 2003
//! "mmap-test" (`peers/mmaptest/mmaptest.c`, built here with cc
//! and the README's -D flags) for the data stream, od(1) for the byte sum,
//! vmtouch for what a cold run leaves in the page cache.
//!
//! Nothing here is timed: the timings live in `cargo xtask bench mmaptest`.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::install::{Need, ensure};
use crate::support::{mapwise, run_limited, run_mapwise, tempdir};

/// The C variants this file compares against: name and -D flags.
const C_VARIANTS: &[(&str, &[&str])] = &[
    ("read-1", &["-DDEFAULT_READSIZE=1"]),
    ("read-4097", &["-DDEFAULT_READSIZE=4097"]),
    ("read-64k", &["-DDEFAULT_READSIZE=65536"]),
    ("read-whole", &["-DDEFAULT_READSIZE=0"]),
    ("mmap-each", &["-DDO_MMAP"]),
    ("mmap-each-populate", &["-DDO_MMAP", "-DPOPULATE"]),
    ("mmap-once", &["-DDO_MMAP", "-DDO_MMAP_ONCE"]),
];

/// Each of our modes with the C variant that does the same.
const MODES: &[(&[&str], &str)] = &[
    (&["--mode", "read", "--read-size", "1"], "read-1"),
    (&["--mode", "read", "--read-size", "4097"], "read-4097"),
    (&["--mode", "read"], "read-64k"),
    (&["--mode", "read", "--read-size", "whole"], "read-whole"),
    (&["--mode", "mmap-each"], "mmap-each"),
    (&["--mode", "mmap-each", "--populate"], "mmap-each-populate"),
    (&["--mode", "mmap-once"], "mmap-once"),
];

/// Builds every C variant once per test process into
/// `$CARGO_TARGET_TMPDIR/mmaptest-c/` (outside the repository's sources),
/// each under a temporary name renamed into place, so test processes
/// running at the same time never see a half-written binary.
fn c_bin(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mmaptest-c");
        std::fs::create_dir_all(&dir).expect("create the C build directory");
        let src = mapwise_testkit::peers::mmaptest_c();
        for (name, flags) in C_VARIANTS {
            let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
            let out = run_limited(
                Command::new("cc").args(["-O2", "-Wall", "-o"]).arg(&tmp).args(*flags).arg(&src),
                Duration::from_secs(120),
            );
            assert!(
                out.status.success(),
                "cc {flags:?} {}: {}",
                src.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::rename(&tmp, dir.join(name)).expect("rename the C binary into place");
        }
        dir
    });
    dir.join(name)
}

/// Deterministic bytes of every value (xorshift).
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[3]
        })
        .collect()
}

/// Writes `bytes` to `dir/name`, fsynced (clean pages can be evicted).
fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    let mut f = File::create(&path).expect("create");
    f.write_all(bytes).expect("write");
    f.sync_all().expect("fsync");
    path
}

fn strs(paths: &[PathBuf]) -> Vec<&str> {
    paths.iter().map(|p| p.to_str().expect("utf-8 path")).collect()
}

/// Runs `mapwise mmaptest ARGS --json FILES…`; returns the data stream and
/// the JSON result objects (stderr).
fn ours(args: &[&str], iterations: u64, files: &[PathBuf]) -> (Vec<u8>, Vec<Value>) {
    let n = iterations.to_string();
    let mut all = vec!["mmaptest", "--json", "--iterations", &n];
    all.extend_from_slice(args);
    all.extend(strs(files));
    let out = run_mapwise(&all);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mapwise {all:?}: {err}");
    let results = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON {l}: {e}")))
        .collect();
    (out.stdout, results)
}

/// Runs a C variant with `-n ITERATIONS FILES…`; returns its data stream.
fn c_stream(variant: &str, iterations: u64, files: &[PathBuf]) -> Vec<u8> {
    let out = run_limited(
        Command::new(c_bin(variant)).arg("-n").arg(iterations.to_string()).args(files),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{variant}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The sum of every byte of `path` as od(1) prints them (`od -An -v -tu1`).
fn od_byte_sum(path: &Path) -> u64 {
    let out = run_limited(
        Command::new("od").args(["-An", "-v", "-tu1"]).arg(path),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "od {}", path.display());
    String::from_utf8_lossy(&out.stdout)
        .split_ascii_whitespace()
        .map(|w| w.parse::<u64>().expect("od prints decimal bytes"))
        .sum()
}

fn num(v: &Value, field: &str) -> u64 {
    v.get(field).and_then(Value::as_u64).unwrap_or_else(|| panic!("no integer {field:?} in {v}"))
}

fn two_files(dir: &Path) -> Vec<PathBuf> {
    // 72 KiB as in the original, and a size that is neither a multiple of
    // a page nor of 8 bytes.
    vec![write_file(dir, "f72k", &pattern(73_728, 1)), write_file(dir, "odd", &pattern(5_001, 2))]
}

#[test]
fn every_mode_writes_the_c_reconstructions_stream_and_counts_its_bytes() {
    let dir = tempdir();
    let files = two_files(dir.path());
    let sizes = [73_728u64, 5_001];
    for &(args, variant) in MODES {
        // One byte per read() is 78 729 calls per pass: one pass is plenty.
        let iterations = if variant == "read-1" { 1 } else { 3 };
        let (stream, results) = ours(args, iterations, &files);
        let want = c_stream(variant, iterations, &files);
        assert_eq!(want.len() as u64, (sizes[0] + sizes[1]) * iterations, "{variant}");
        assert!(stream == want, "{args:?}: stream differs from {variant}");
        let [r] = results.as_slice() else { panic!("{args:?}: want one result, got {results:?}") };
        assert_eq!(num(r, "bytes"), (sizes[0] + sizes[1]) * iterations, "{r}");
        assert_eq!(num(r, "bytes_per_iteration"), sizes[0] + sizes[1]);
        assert_eq!(num(r, "iterations"), iterations);
        assert_eq!(num(r, "files"), 2);
        assert_eq!(r["checksum"], Value::Null, "no checksum without --touch");
        let mode = r["mode"].as_str().expect("mode");
        assert_eq!(mode.starts_with("read"), variant.starts_with("read"));
        assert_eq!(r["populate"], Value::Bool(variant.ends_with("populate")));
    }
    // --mode all: three results, the stream of three passes of each.
    let (stream, results) = ours(&["--mode", "all"], 2, &files);
    let modes: Vec<&str> = results.iter().filter_map(|r| r["mode"].as_str()).collect();
    assert_eq!(modes, ["read", "mmap-once", "mmap-each"]);
    assert_eq!(stream, c_stream("read-64k", 6, &files));
    for r in &results {
        assert_eq!(num(r, "bytes"), (sizes[0] + sizes[1]) * 2, "{r}");
    }
}

#[test]
fn touch_checksums_are_equal_in_every_mode_and_equal_the_byte_sum() {
    let dir = tempdir();
    let files = two_files(dir.path());
    let per_pass: u64 = files.iter().map(|f| od_byte_sum(f)).sum();
    let iterations = 4;
    for &(args, variant) in MODES {
        let n = if variant == "read-1" { 1 } else { iterations };
        let mut touching = args.to_vec();
        touching.push("--touch");
        let (stream, results) = ours(&touching, n, &files);
        // Touching reads the data; it does not change what is written.
        assert!(
            stream == c_stream(variant, n, &files),
            "{args:?} --touch: stream differs from {variant}"
        );
        let [r] = results.as_slice() else { panic!("{args:?}: want one result, got {results:?}") };
        assert_eq!(num(r, "checksum"), per_pass * n, "{args:?} --touch: {r}");
        assert_eq!(r["touch"], Value::Bool(true));
    }
    // The same list with an empty file and a repeated file: the C program
    // cannot map an empty file, ours delivers it as 0 bytes.
    let empty = write_file(dir.path(), "empty", b"");
    let list = vec![files[1].clone(), empty, files[0].clone(), files[1].clone()];
    let want_sum = (per_pass + od_byte_sum(&files[1])) * 2;
    let want_bytes = (2 * 5_001 + 73_728) * 2;
    let (_, results) = ours(&["--mode", "all", "--touch", "--populate"], 2, &list);
    assert_eq!(results.len(), 3);
    for r in &results {
        assert_eq!(num(r, "checksum"), want_sum, "{r}");
        assert_eq!(num(r, "bytes"), want_bytes, "{r}");
    }
}

/// Runs `mapwise mmaptest ARGS FILE` with stdout on /dev/null, as the
/// original was run (a pipe would read the data in every mode).
fn ours_to_dev_null(args: &[&str], file: &Path) -> Output {
    let mut child = mapwise()
        .arg("mmaptest")
        .args(args)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(File::create("/dev/null").expect("/dev/null"))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mapwise");
    let mut se = child.stderr.take().expect("stderr");
    let drain = std::thread::spawn(move || {
        let mut v = Vec::new();
        se.read_to_end(&mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            child.wait().ok();
            panic!("mapwise mmaptest {args:?} did not finish within 60 s (hang)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = Output { status, stdout: Vec::new(), stderr: drain.join().unwrap_or_default() };
    assert!(
        out.status.success(),
        "mapwise mmaptest {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// vmtouch's "Resident Pages: R/T" for `path`.
fn vmtouch(path: &Path) -> (u64, u64) {
    ensure(&[Need::Vmtouch]);
    let out = run_limited(Command::new("vmtouch").arg(path), Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "vmtouch: {text}");
    let counts = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Resident Pages:"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no 'Resident Pages:' line in vmtouch output:\n{text}"));
    let (r, t) = counts.split_once('/').expect("R/T");
    (r.parse().expect("R"), t.parse().expect("T"))
}

#[test]
fn cold_runs_start_evicted_and_untouched_mmap_reads_nothing() {
    let dir = tempdir();
    // 1 MiB: 256 pages of 4 KiB, all resident after the write.
    let file = write_file(dir.path(), "cold", &pattern(1 << 20, 3));
    let (_, total) = vmtouch(&file);
    assert_eq!(total, 256);

    // The original's flaw: mapping and writing to /dev/null reads nothing,
    // so a cold file stays out of the page cache.
    for mode in ["mmap-once", "mmap-each"] {
        ours_to_dev_null(&["--cold", "--mode", mode, "--iterations", "3"], &file);
        assert_eq!(vmtouch(&file), (0, total), "{mode}, untouched");
    }
    // read() copies every byte, and so does --touch in every mode.
    let runs: &[&[&str]] = &[
        &["--cold", "-n", "2", "--mode", "read"],
        &["--cold", "-n", "2", "--mode", "mmap-once", "--touch"],
        &["--cold", "-n", "2", "--mode", "mmap-each", "--touch"],
    ];
    for args in runs {
        let out = ours_to_dev_null(args, &file);
        assert_eq!(vmtouch(&file), (total, total), "{args:?}");
        let line = String::from_utf8_lossy(&out.stderr);
        assert!(line.contains("; cold)"), "{args:?}: {line}");
    }
}

#[test]
fn mmaptest_refuses_bad_arguments() {
    let dir = tempdir();
    let file = write_file(dir.path(), "f", &pattern(100, 4));
    let f = file.to_str().expect("utf-8");
    for args in [
        &["mmaptest", "--read-size", "0", f][..],
        &["mmaptest", "--read-size", "big", f],
        &["mmaptest", "--iterations", "0", f],
        &["mmaptest", "--mode", "pread", f],
        &["mmaptest"],
    ] {
        let out = run_mapwise(args);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(out.stdout.is_empty(), "{args:?} wrote data");
    }
    let out = run_mapwise(&["mmaptest", "--mode", "read", "missing-file"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing-file: cannot open"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --json=PATH: JSON into the file, text on stderr.
    let json = dir.path().join("r.json");
    let arg = format!("--json={}", json.display());
    let out = run_mapwise(&["mmaptest", &arg, "-n", "5", "--touch", f]);
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 3 * 5 * 100);
    let text = std::fs::read_to_string(&json).expect("json file");
    let sums: Vec<u64> = text
        .lines()
        .map(|l| num(&serde_json::from_str(l).expect("JSON line"), "checksum"))
        .collect();
    assert_eq!(sums.len(), 3);
    assert!(sums.iter().all(|&s| s == sums[0]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(err.lines().all(|l| l.contains(&format!("checksum={}", sums[0]))));
}

/// `mapwise mmaptest -n 2 FIFO > /dev/null` used to block forever in
/// open(2); a FIFO, a directory or a device is refused at once, as the
/// inspector refuses them.
#[test]
fn non_regular_files_are_refused() {
    let dir = tempdir();
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    for (path, what) in [
        (fifo.as_path(), "a FIFO"),
        (dir.path(), "a directory"),
        (Path::new("/dev/null"), "a device"),
    ] {
        let out =
            run_limited(mapwise().args(["mmaptest", "-n", "2"]).arg(path), Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(what) && err.contains("not a regular file"), "{err}");
    }
}
