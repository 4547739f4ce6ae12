//! Hostile and damaged files through the `mapwise` command line: every
//! 16th case of `mapwise_testkit::hostile` (every case in the full sweep)
//! through `bolt check|pages|dump|info`, `rrd dump|info|lastupdate` and
//! `revlog debugindex` under a 2 GiB address-space limit and a time limit:
//! exit 0, 1 or 2, never a panic or a signal, and a failure names the
//! place.
//!
//! Core's parsers and the writers get the same table in
//! `native/tests/hostile.rs`. The normal run samples the table
//! (`full = false`); `cargo xtask hostile` runs the whole sweep
//! (`#[ignore]`d here).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mapwise_testkit::hostile::{self as cases, Case, Fmt, names_a_place};

use crate::support::{run_limited, tempdir};

/// The `mapwise` read commands for a format, `FILE` standing for the path.
fn commands(fmt: Fmt) -> &'static [&'static [&'static str]] {
    match fmt {
        Fmt::Bolt => &[
            &["bolt", "check", "FILE"],
            &["bolt", "pages", "FILE"],
            &["bolt", "dump", "FILE"],
            &["bolt", "info", "FILE"],
        ],
        Fmt::Rrd => {
            &[&["rrd", "dump", "FILE"], &["rrd", "info", "FILE"], &["rrd", "lastupdate", "FILE"]]
        }
        Fmt::Revlog => &[&["revlog", "debugindex", "--index", "FILE"]],
    }
}

fn cli_case(dir: &Path, c: &Case, fails: &mut Vec<String>) {
    let path = c.write_to(dir);
    for args in commands(c.fmt) {
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "FILE" { path.to_str().expect("utf-8") } else { a })
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
            fails.push(format!("{}: mapwise {args:?} exited {:?}: {err}", c.name, out.status));
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
}

fn run(full: bool, cli_every: usize) {
    let dir = tempdir();
    let what = format!("hostile files through mapwise (every {cli_every}th)");
    cases::sweep(&what, full, |i, c, fails| {
        if i % cli_every == 0 {
            cli_case(dir.path(), c, fails);
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
