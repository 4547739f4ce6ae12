//! `mapwise rrd` and `mapwise_native::engine::rrd` against rrdtool 1.7.2, the
//! judge: the corpus rrdtool made (`testdata/rrd`, rrdtool's own outputs
//! beside each file), rrdtool run live on the same inputs (through the
//! rrd peer, `peers/rrd/peer`, or the `rrdtool` binary),
//! with TZ=UTC so that dump comments agree.
//!
//! * [`corpus`]: headers, layouts and every read command on the corpus;
//!   every corpus update sequence replayed from `NAME.empty.rrd` in every
//!   I/O mode, byte-identical to rrdtool's `NAME.rrd`.
//! * [`create`]: `create` against `rrdtool create` with the same name and
//!   start (bytes equal once the random row pointers are aligned).
//! * [`prop`]: random definitions and random update sequences applied by
//!   rrdtool and by mapwise to the same file.
//! * [`bad`]: malformed input, past times, truncated, foreign and locked
//!   files: rrdtool's error, a non-zero exit and an unchanged file.
//! * [`cached`]: every command through a real rrdcached, against rrdtool
//!   through the same daemon; a daemon that is down or misbehaves.

// Offsets and counts of small test files are cast freely.
#![allow(clippy::cast_possible_truncation)]

mod bad;
mod cached;
mod corpus;
mod create;
mod prop;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use mapwise_native::engine::rrd::{IoMode, UpdateOptions};

use crate::support::{mapwise, rrd_testdata, rrdtool, run_limited};

/// The corpus shapes and their fetch windows (from MANIFEST.txt).
pub const SHAPES: &[(&str, i64, i64)] = &[
    ("gauge", 1_600_000_142, 1_600_166_414),
    ("counter", 1_600_000_426, 1_600_165_332),
    ("mixed", 1_600_000_366, 1_600_166_112),
    ("hw", 1_600_000_526, 1_600_166_100),
    ("compute", 1_600_000_510, 1_600_161_612),
    ("dtypes", 1_600_000_186, 1_600_166_400),
    ("mhw", 1_600_000_150, 1_600_168_341),
    ("seed", 962_582_400, 963_273_600),
];

/// Run `mapwise rrd args…` in `dir` with TZ=UTC.
pub fn mw(dir: &Path, args: &[&str]) -> Output {
    let mut c = mapwise();
    c.arg("rrd")
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C");
    run_limited(&mut c, Duration::from_secs(120))
}

/// Run `rrdtool args…` in `dir` (TZ=UTC).
pub fn rt(dir: &Path, args: &[&str]) -> Output {
    let mut c: Command = rrdtool();
    c.args(args).current_dir(dir);
    run_limited(&mut c, Duration::from_secs(120))
}

/// Stdout of a command that must succeed.
pub fn ok(what: &str, o: &Output) -> Vec<u8> {
    assert!(
        o.status.success(),
        "{what} failed ({:?}): {}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout.clone()
}

/// Copy `testdata/rrd/name` to `dir/as_name` (writable).
pub fn copy(name: &str, dir: &Path, as_name: &str) -> PathBuf {
    let to = dir.join(as_name);
    std::fs::copy(rrd_testdata(name), &to).expect("copy corpus file");
    set_writable(&to);
    to
}

/// Make `p` mode 0644.
pub fn set_writable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
}

/// `gzip -dc src > dst`.
pub fn gunzip(src: &Path, dst: &Path) {
    let out = run_limited(
        Command::new("gzip").arg("-dc").arg(src),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "gzip -dc {}", src.display());
    std::fs::write(dst, out.stdout).expect("write");
    set_writable(dst);
}

/// The spec lines of a corpus update file.
pub fn spec(name: &str) -> Vec<String> {
    std::fs::read_to_string(rrd_testdata(&format!("{name}.updates.txt")))
        .expect("spec")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// One `update` call per line through the library, as rrdtool's pipe mode
/// does; panics on the first refusal.
pub fn apply(path: &Path, lines: &[String], io: IoMode) {
    let o = UpdateOptions {
        io,
        ..UpdateOptions::default()
    };
    for (n, l) in lines.iter().enumerate() {
        let out = mapwise_native::engine::rrd::update(path, &o, std::slice::from_ref(l))
            .unwrap_or_else(|e| panic!("{}: line {}: {e}", path.display(), n + 1));
        if let Some(e) = out.error {
            panic!("{}: line {} ({l}): {e}", path.display(), n + 1);
        }
    }
}

/// Panic with the first differing byte when two files differ.
pub fn assert_same_bytes(what: &str, ours: &[u8], want: &[u8]) {
    if ours != want {
        let at = ours
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(ours.len().min(want.len()));
        panic!(
            "{what}: files differ at byte {at} ({} vs {} bytes)",
            ours.len(),
            want.len()
        );
    }
}
