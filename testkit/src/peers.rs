//! The peers the tests compare against, as commands: the repository's
//! peer scripts (`peers/bolt/peer`, `peers/rrd/peer`, `peers/revlog/peer`,
//! each with a README beside it), the mmaptest peer's C source, and `hg`
//! and `rrdtool` in the peers' environment. Each installs what it needs
//! through [`crate::install`] first, so the peers' own fallback installs
//! never run under the tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::install::{Need, ensure};

/// Run `peer args…` (5 minutes at most); its stdout.
///
/// # Panics
/// Unless it exits 0 (the message quotes its stderr).
fn out(peer: &Path, args: &[&str]) -> Vec<u8> {
    let out = crate::run_limited(Command::new(peer).args(args), Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}",
        rel(peer),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `p` relative to the repository, for messages.
fn rel(p: &Path) -> String {
    p.strip_prefix(crate::repo()).unwrap_or(p).display().to_string()
}

/// `peers/bolt/peer`: Go bbolt 1.3.6 from Debian (dump, pages, keys, get,
/// check, gen, …; `build` prints the directory of its binaries), its
/// packages installed first.
#[must_use]
pub fn bolt() -> PathBuf {
    ensure(&[Need::GoBbolt]);
    crate::peer("bolt/peer")
}

/// Run the bbolt peer with `args`; its stdout.
///
/// # Panics
/// Unless it exits 0.
pub fn bolt_out(args: &[&str]) -> Vec<u8> {
    out(&bolt(), args)
}

/// `peers/rrd/peer`: Debian's rrdtool 1.7.2 and its librrd, installed
/// first.
#[must_use]
pub fn rrd() -> PathBuf {
    ensure(&[Need::Rrdtool, Need::Python]);
    crate::peer("rrd/peer")
}

/// Run the rrd peer with `args`; its stdout.
///
/// # Panics
/// Unless it exits 0.
pub fn rrd_out(args: &[&str]) -> Vec<u8> {
    out(&rrd(), args)
}

/// `peers/revlog/peer`: Debian's Mercurial 6.3, installed first.
#[must_use]
pub fn revlog() -> PathBuf {
    ensure(&[Need::Mercurial, Need::Python]);
    crate::peer("revlog/peer")
}

/// Run the revlog peer with `args`; its stdout.
///
/// # Panics
/// Unless it exits 0.
pub fn revlog_out(args: &[&str]) -> Vec<u8> {
    out(&revlog(), args)
}

/// `peers/mmaptest/mmaptest.c`, the C reconstruction of the 2003
/// "mmap-test" (its README gives the `-D` flags of each mode), with a C
/// compiler installed.
#[must_use]
pub fn mmaptest_c() -> PathBuf {
    ensure(&[Need::Cc]);
    crate::peer("mmaptest/mmaptest.c")
}

/// `hg` in the revlog peer's clean environment (no user configuration,
/// plain output, its user and time zone), Mercurial installed first.
#[must_use]
pub fn hg() -> Command {
    ensure(&[Need::Mercurial]);
    let mut c = Command::new("hg");
    c.env("HGRCPATH", "")
        .env("HGPLAIN", "1")
        .env("HGUSER", "oracle <oracle@example.invalid>")
        .env("HGENCODING", "utf-8")
        .env("TZ", "UTC");
    c
}

/// The Python interpreter that runs `hg` (it can import `mercurial`).
///
/// # Panics
/// When `hg` is not on `PATH` after installing it.
#[must_use]
pub fn hg_python() -> Command {
    ensure(&[Need::Mercurial]);
    let hg = crate::which("hg").expect("hg on PATH");
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

/// `rrdtool` in the rrd peer's environment (TZ=UTC, LC_ALL=C, no
/// rrdcached), installed first.
#[must_use]
pub fn rrdtool() -> Command {
    ensure(&[Need::Rrdtool]);
    let mut c = Command::new("rrdtool");
    c.env("TZ", "UTC").env("LC_ALL", "C").env("LANG", "C").env_remove("RRDCACHED_ADDRESS");
    c
}

/// What `rrdtool info` says of an RRD's layout: header size in bytes, the
/// number of data sources, and per archive (rows, cur_row).
pub type RrdInfo = (u64, u64, Vec<(u64, u64)>);

/// `rrdtool info PATH` parsed into an [`RrdInfo`]; `None` when rrdtool
/// cannot be run or prints no `header_size` (nothing is installed here).
#[must_use]
pub fn rrdtool_info(path: &Path) -> Option<RrdInfo> {
    let out = Command::new("rrdtool").arg("info").arg(path).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .and_then(|v| v.trim_matches('"').parse::<u64>().ok())
    };
    let ds: std::collections::BTreeSet<&str> =
        text.lines().filter_map(|l| l.strip_prefix("ds[")?.split(']').next()).collect();
    let rras = (0..)
        .map_while(|i| {
            Some((field(&format!("rra[{i}].rows"))?, field(&format!("rra[{i}].cur_row"))?))
        })
        .collect();
    Some((field("header_size")?, ds.len() as u64, rras))
}
