//! Hostile and damaged files, table-driven: every case
//! of `hostile_cases.rs` (truncations at page boundaries and mid-page, bit
//! flips and 0 / 0xFFFF / max in every header field, page ids pointing at
//! themselves, at meta pages, past the end and into cycles, overflow runs
//! longer than the file, a freelist claiming the meta pages, RRD row counts
//! that multiply past the file, revlog inline chunks that overrun) goes
//!
//! * through `core`'s parsers and every read path (the fuzz harness's
//!   per-format functions: open, walk/layout, dump, fetch, cursors):
//!   no panic, within a per-case time limit, and every error or problem
//!   names the structure and where it is;
//! * through the `mapwise` command line (`bolt check|pages|dump|info`,
//!   `rrd dump|info|lastupdate`, `revlog debugindex`) under a 2 GiB address-space
//!   limit and a time limit: exit 0, 1 or 2, never a panic or a signal,
//!   and a failure names the place;
//! * through the writers: a bbolt file that opens read-write and an RRD
//!   that `update` refuses are left byte-identical.
//!
//! The normal run samples the table (`full = false`, well under a minute);
//! `cargo xtask hostile` runs the whole sweep (`#[ignore]`d here).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "hostile_cases.rs"]
mod cases;

use cases::{Case, Fmt, names_a_place};

use crate::harness;
use crate::support::{run_limited, tempdir};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// The errors and problems `core` reports for the case.
fn core_messages(c: &Case) -> Vec<String> {
    let b = c.bytes.as_slice();
    let mut m = Vec::new();
    match c.fmt {
        Fmt::Bolt => match mapwise_core::bolt::BoltFile::open(b) {
            Err(e) => m.push(e.to_string()),
            Ok(f) => {
                let w = mapwise_core::bolt::walk(&f, mapwise_core::bolt::WalkOptions::default());
                m.extend(w.layout.problems.iter().map(ToString::to_string));
            }
        },
        Fmt::Rrd => {
            let l = mapwise_core::rrd::layout(b, 4096);
            m.extend(l.fatal.iter().map(ToString::to_string));
            if let Err(e) = mapwise_core::rrd::Header::parse(b) {
                m.push(e.to_string());
            }
        }
        Fmt::Revlog => {
            let l = mapwise_core::revlog::layout(
                b,
                mapwise_core::revlog::LayoutOptions { data_len: None },
            );
            m.extend(l.fatal.iter().map(ToString::to_string));
            m.extend(l.layout.problems.iter().map(ToString::to_string));
            if let Err(e) = mapwise_core::revlog::Index::open(b) {
                m.push(e.to_string());
            }
        }
    }
    m
}

/// Run `f` on a thread; fail the test if it panics or takes over `limit`.
fn bounded<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => {
            let _ = h.join();
            v
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: not done within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = h.join();
            panic!("{what}: panicked")
        }
    }
}

fn core_case(c: &Case, fails: &mut Vec<String>) {
    let case = c.clone();
    let messages = bounded(&c.name, Duration::from_secs(20), move || {
        match case.fmt {
            Fmt::Bolt => harness::bolt_file(&case.bytes),
            Fmt::Rrd => harness::rrd_file(&case.bytes),
            Fmt::Revlog => harness::revlog_index(&case.bytes),
        }
        core_messages(&case)
    });
    for m in &messages {
        if !names_a_place(m) {
            fails.push(format!("{}: core error names no place: {m:?}", c.name));
        }
    }
}

/// The `mapwise` read commands for a format, `FILE` standing for the path.
fn commands(fmt: Fmt) -> &'static [&'static [&'static str]] {
    match fmt {
        Fmt::Bolt => &[
            &["bolt", "check", "FILE"],
            &["bolt", "pages", "FILE"],
            &["bolt", "dump", "FILE"],
            &["bolt", "info", "FILE"],
        ],
        Fmt::Rrd => &[
            &["rrd", "dump", "FILE"],
            &["rrd", "info", "FILE"],
            &["rrd", "lastupdate", "FILE"],
        ],
        Fmt::Revlog => &[&["revlog", "debugindex", "--index", "FILE"]],
    }
}

fn cli_case(dir: &Path, c: &Case, fails: &mut Vec<String>) {
    let ext = match c.fmt {
        Fmt::Bolt => "db",
        Fmt::Rrd => "rrd",
        Fmt::Revlog => "i",
    };
    let path = dir.join(format!("case.{ext}"));
    std::fs::write(&path, &c.bytes).expect("write case");
    for args in commands(c.fmt) {
        let args: Vec<&str> = args
            .iter()
            .map(|a| {
                if *a == "FILE" {
                    path.to_str().expect("utf-8")
                } else {
                    a
                }
            })
            .collect();
        // Memory: a 2 GiB address-space limit (the file is mapped, so
        // this is far above what a sane reader needs).
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("ulimit -v 2097152; exec \"$@\"")
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_mapwise"))
            .args(&args);
        let out = run_limited(&mut cmd, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        if !matches!(code, Some(0..=2)) || err.contains("panicked") {
            fails.push(format!(
                "{}: mapwise {args:?} exited {:?}: {err}",
                c.name, out.status
            ));
        } else if code != Some(0) {
            let text = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
            if !names_a_place(&text) {
                fails.push(format!(
                    "{}: mapwise {args:?} failed without naming a place: {}",
                    c.name,
                    text.lines().next().unwrap_or_default()
                ));
            }
        }
    }
    // Writers leave what they refuse (and what they merely open) as it was.
    match c.fmt {
        // An empty file is a new database to bbolt (and to us): opening it
        // read-write writes the first four pages.
        Fmt::Bolt if !c.bytes.is_empty() => {
            let opts = mapwise_native::engine::bolt::Options {
                timeout: Some(Duration::from_secs(5)),
                ..mapwise_native::engine::bolt::Options::read_write()
            };
            let r = mapwise_native::engine::bolt::Db::open(&path, &opts);
            drop(r);
            let after = std::fs::read(&path).expect("read");
            if after != c.bytes {
                fails.push(format!("{}: Db::open read-write changed the file", c.name));
            }
        }
        Fmt::Rrd => {
            if mapwise_core::rrd::Header::parse(c.bytes.as_slice()).is_err() {
                let r = mapwise_native::engine::rrd::update(
                    &path,
                    &mapwise_native::engine::rrd::UpdateOptions::default(),
                    &["N:1:2".to_owned()],
                );
                assert!(
                    r.is_err(),
                    "{}: update accepted a file core refuses",
                    c.name
                );
                let after = std::fs::read(&path).expect("read");
                assert!(
                    after == c.bytes,
                    "{}: a refused update changed the file",
                    c.name
                );
            }
        }
        Fmt::Bolt | Fmt::Revlog => {}
    }
}

fn run(full: bool, cli_every: usize) {
    let started = Instant::now();
    let all = cases::cases(&repo(), full);
    let dir = tempdir();
    let mut counts = [0usize; 3];
    let mut fails = Vec::new();
    for (i, c) in all.iter().enumerate() {
        counts[c.fmt as usize] += 1;
        core_case(c, &mut fails);
        if i % cli_every == 0 {
            cli_case(dir.path(), c, &mut fails);
        }
    }
    eprintln!(
        "hostile files: {} cases (bolt {}, rrd {}, revlog {}), CLI on every {cli_every}th, {:.1} s",
        all.len(),
        counts[0],
        counts[1],
        counts[2],
        started.elapsed().as_secs_f64()
    );
    cases::assert_no_failures("hostile files", &fails);
}

#[test]
fn hostile_files_are_named_never_panic_and_stay_bounded() {
    run(false, 16);
}

#[test]
#[ignore = "the full sweep: cargo xtask hostile"]
fn hostile_files_full_sweep() {
    run(true, 1);
}
