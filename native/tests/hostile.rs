//! Hostile and damaged files, table-driven: every case of
//! `mapwise_testkit::hostile` (truncations at page boundaries and
//! mid-page, bit flips and 0 / 0xFFFF / max in every header field, page
//! ids pointing at themselves, at meta pages, past the end and into
//! cycles, overflow runs longer than the file, a freelist claiming the meta
//! pages, RRD row counts that multiply past the file, revlog inline chunks
//! that overrun) goes
//!
//! * through `core`'s parsers and every read path (the fuzz harness's
//!   per-format functions: open, walk/layout, dump, fetch, cursors):
//!   no panic, within a per-case time limit, and every error or problem
//!   names the structure and where it is;
//! * through the writers, on every 16th case: a bbolt file that opens
//!   read-write and an RRD that `update` refuses are left byte-identical.
//!
//! The `mapwise` command line's part of the sweep is `cli/tests/hostile.rs`.
//! The normal run samples the table (`full = false`, well under a minute);
//! `cargo xtask hostile` runs the whole sweep (`#[ignore]`d here).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use mapwise_testkit::hostile::{self as cases, Case, Fmt, names_a_place};

use crate::harness;
use crate::support::tempdir;

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

/// Writers leave what they refuse (and what they merely open) as it was.
fn writer_case(dir: &Path, c: &Case, fails: &mut Vec<String>) {
    let path = c.write_to(dir);
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
                assert!(r.is_err(), "{}: update accepted a file core refuses", c.name);
                let after = std::fs::read(&path).expect("read");
                assert!(after == c.bytes, "{}: a refused update changed the file", c.name);
            }
        }
        Fmt::Bolt | Fmt::Revlog => {}
    }
}

fn run(full: bool, writers_every: usize) {
    let dir = tempdir();
    let what = format!("hostile files (writers on every {writers_every}th)");
    cases::sweep(&what, full, |i, c, fails| {
        core_case(c, fails);
        if i % writers_every == 0 {
            writer_case(dir.path(), c, fails);
        }
    });
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
