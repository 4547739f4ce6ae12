//! The mapwise workspace's own test kit, shared by the test crates
//! (`native`, `inspector`, `wasm`) and `xtask` as a dependency instead of
//! files included with `#[path]`:
//!
//! * [`repo`], [`testdata`], [`peer`]: where the repository, its corpus
//!   (`testdata/`) and its peers (`peers/`) are. Everything a test reads
//!   lives in the repository: a fresh clone runs its own tests.
//! * [`install`]: the one installer of what the tests need (Debian
//!   packages, the wasm32 target, the wasm-bindgen CLI, playwright-core),
//!   serialised by locks, idempotent, saying what it installs; `.ci/run`
//!   runs it whole (`cargo run -q -p mapwise-testkit -- install`), tests
//!   call [`install::ensure`] with what they need.
//! * [`peers`]: the peers' command lines (`peers/bolt/peer`,
//!   `peers/rrd/peer`, `peers/revlog/peer`, the mmaptest C source, `hg`,
//!   `rrdtool`), each installing what it needs first.
//! * [`run_limited`], [`run_with_stdin`], [`assert_same_text`],
//!   [`assert_same_bytes`], [`which`]: running commands with a time limit
//!   and comparing outputs.
//! * [`corpus`], [`hostile`]: the corpus files by format, and the table of
//!   damaged variants of them every reader is run on.
//! * [`bolt_model`], [`rrd`]: the bbolt model the oracle's dumps are
//!   compared with, and the RRD suites' corpus copies and replays.
//! * [`churn`], [`writer`], [`etcd`], [`rrdcached`], [`fileprint`]: bbolt
//!   writers, a real etcd and rrdcached of a test's own, and what a reader
//!   must leave unchanged about a file.
//!
//! Test code: it panics where a test should fail, and never skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub mod bolt_model;
pub mod churn;
pub mod corpus;
pub mod etcd;
pub mod fileprint;
pub mod hostile;
pub mod install;
pub mod peers;
pub mod rrd;
pub mod rrdcached;
pub mod writer;

/// The repository's root (this crate lives one level below it).
#[must_use]
pub fn repo() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// `testdata/REL`: the repository's corpus of real files (read-only).
#[must_use]
pub fn testdata(rel: &str) -> PathBuf {
    repo().join("testdata").join(rel)
}

/// The bytes of `testdata/REL`.
///
/// # Panics
/// When the file cannot be read (a test's fixture is missing), naming it.
#[must_use]
pub fn read_testdata(rel: &str) -> Vec<u8> {
    let p = testdata(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `peers/REL`: the repository's peers (see `peers/*/README.md`).
#[must_use]
pub fn peer(rel: &str) -> PathBuf {
    repo().join("peers").join(rel)
}

/// The first `tool` on `PATH`.
#[must_use]
pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(tool)).find(|f| f.is_file()))
}

/// A fresh temporary directory under `dir` (a test passes its
/// `CARGO_TARGET_TMPDIR`: on disk, not tmpfs).
///
/// # Panics
/// When it cannot be made.
#[must_use]
pub fn tempdir_in(dir: &Path) -> tempfile::TempDir {
    tempfile::tempdir_in(dir).expect("tempdir")
}

/// Run `cmd`, killing it after `limit`, its output captured.
///
/// # Panics
/// When it cannot start, or on timeout (a hang).
pub fn run_limited(cmd: &mut Command, limit: Duration) -> Output {
    let desc = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {desc}: {e}"));
    // Drain the pipes on threads so a large output cannot block the child.
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("{desc} did not finish within {limit:?} (hang)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

/// Run `cmd` with `input` on its stdin; its output (not checked).
///
/// # Panics
/// When it cannot start or be waited for.
pub fn run_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(input).expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// The bytes a hex string spells (two digits a byte).
///
/// # Panics
/// On a digit that is not hex.
#[must_use]
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// Panic with both texts when `ours` and `want` differ (first differing
/// line shown).
///
/// # Panics
/// When they differ.
pub fn assert_same_text(what: &str, ours: &[u8], want: &[u8]) {
    if ours == want {
        return;
    }
    let (o, w) = (String::from_utf8_lossy(ours), String::from_utf8_lossy(want));
    let line = o
        .lines()
        .zip(w.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(o.lines().count().min(w.lines().count()));
    let show = |s: &str| {
        s.lines()
            .nth(line)
            .map(|l| l.chars().take(200).collect::<String>())
            .unwrap_or_else(|| "<end>".into())
    };
    panic!(
        "{what}: outputs differ at line {}\n--- ours ---\n{}\n--- peer ---\n{}\n({} vs {} lines)",
        line + 1,
        show(&o),
        show(&w),
        o.lines().count(),
        w.lines().count()
    );
}

/// Panic with the first differing byte when two files differ.
///
/// # Panics
/// When they differ.
pub fn assert_same_bytes(what: &str, ours: &[u8], want: &[u8]) {
    if ours != want {
        let at =
            ours.iter().zip(want).position(|(a, b)| a != b).unwrap_or(ours.len().min(want.len()));
        panic!("{what}: files differ at byte {at} ({} vs {} bytes)", ours.len(), want.len());
    }
}
