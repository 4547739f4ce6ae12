//! Shared helpers: locating the oracles, running commands with a timeout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A read-only corpus file under testdata/bolt.
pub fn testdata(name: &str) -> PathBuf {
    repo().join("testdata/bolt").join(name)
}

/// The `shared` folder with the oracles: `$MAPWISE_SHARED`, else the
/// first `shared/` beside the repository or one of its ancestors.
pub fn shared() -> PathBuf {
    if let Some(p) = std::env::var_os("MAPWISE_SHARED") {
        return PathBuf::from(p);
    }
    let repo = repo().canonicalize().expect("repo path");
    repo.ancestors()
        .map(|a| a.join("shared"))
        .find(|s| s.join("oracles/bolt/oracle.sh").is_file())
        .unwrap_or_else(|| {
            panic!(
                "no shared/oracles found above {}; set MAPWISE_SHARED",
                repo.display()
            )
        })
}

/// `shared/oracles/bolt/oracle.sh` (Go bbolt 1.3.6 from Debian).
pub fn bolt_oracle() -> PathBuf {
    shared().join("oracles/bolt/oracle.sh")
}

/// A fresh temporary directory under the target dir (on disk, not tmpfs).
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir")
}

/// Run `cmd`, killing it after `limit`; panics on timeout.
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

/// Run the oracle with `args`; panics unless it exits 0.
pub fn oracle(args: &[&str]) -> Vec<u8> {
    let out = run_limited(
        Command::new(bolt_oracle()).args(args),
        Duration::from_secs(300),
    );
    assert!(
        out.status.success(),
        "oracle.sh {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The `mapwise` binary under test.
pub fn mapwise() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mapwise"))
}

/// Run `mapwise args…` with a 60 s limit.
pub fn run_mapwise(args: &[&str]) -> Output {
    run_limited(mapwise().args(args), Duration::from_secs(60))
}

/// Panic with both texts when `ours` and `want` differ (first differing
/// line shown).
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

#[path = "../../../testkit/peers.rs"]
pub mod peers;

#[path = "../../../testkit/churn.rs"]
pub mod churn;

#[path = "../../../testkit/rrdcached.rs"]
pub mod rrdcached;

/// `shared/oracles/revlog/oracle.sh` (Debian's Mercurial 6.3).
pub fn revlog_oracle() -> PathBuf {
    shared().join("oracles/revlog/oracle.sh")
}

/// Run the revlog oracle with `args` (it installs Mercurial on first
/// use); panics unless it exits 0.
pub fn revlog_oracle_out(args: &[&str]) -> Vec<u8> {
    let out = run_limited(
        Command::new(revlog_oracle()).args(args),
        Duration::from_secs(300),
    );
    assert!(
        out.status.success(),
        "revlog oracle.sh {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A read-only corpus file under testdata/revlog (copied from
/// `shared/corpus/revlog`, made by Mercurial 6.3.2).
pub fn revlog_testdata(name: &str) -> PathBuf {
    repo().join("testdata/revlog").join(name)
}

/// `hg` in the oracle's clean environment (no user configuration, plain
/// output), installing Debian's `mercurial` on first use.
pub fn hg() -> Command {
    peers::ensure("hg", "mercurial");
    let mut c = Command::new("hg");
    c.env("HGRCPATH", "")
        .env("HGPLAIN", "1")
        .env("HGUSER", "oracle <oracle@example.invalid>")
        .env("HGENCODING", "utf-8")
        .env("TZ", "UTC");
    c
}

/// The Python interpreter that runs `hg` (it can import `mercurial`).
pub fn hg_python() -> Command {
    peers::ensure("hg", "mercurial");
    let hg = which("hg").expect("hg on PATH");
    let first = std::fs::read_to_string(&hg)
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_default();
    let interp = first
        .strip_prefix("#!")
        .map_or("python3", str::trim)
        .split_whitespace()
        .next()
        .unwrap_or("python3")
        .to_owned();
    let mut c = Command::new(interp);
    c.env("HGRCPATH", "");
    c
}

/// The first `tool` on `PATH`.
pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|f| f.is_file())
    })
}

/// `shared/oracles/rrd/oracle.sh` (Debian's rrdtool 1.7.2).
pub fn rrd_oracle() -> PathBuf {
    shared().join("oracles/rrd/oracle.sh")
}

/// Run the rrd oracle with `args` (it installs rrdtool on first use);
/// panics unless it exits 0.
pub fn rrd_oracle_out(args: &[&str]) -> Vec<u8> {
    let out = run_limited(
        Command::new(rrd_oracle()).args(args),
        Duration::from_secs(300),
    );
    assert!(
        out.status.success(),
        "rrd oracle.sh {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `rrdtool` in the oracle's environment (TZ=UTC, LC_ALL=C, no rrdcached),
/// installing Debian's `rrdtool` on first use.
pub fn rrdtool() -> Command {
    peers::ensure("rrdtool", "rrdtool");
    let mut c = Command::new("rrdtool");
    c.env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env("LANG", "C")
        .env_remove("RRDCACHED_ADDRESS");
    c
}

/// A read-only corpus file under testdata/rrd (copied from
/// `shared/corpus/rrd`, made by rrdtool 1.7.2).
pub fn rrd_testdata(name: &str) -> PathBuf {
    repo().join("testdata/rrd").join(name)
}
