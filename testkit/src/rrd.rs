//! The RRD suites' corpus helpers: the corpus shapes, writable copies of
//! corpus files, their update specs, and updates replayed through the
//! engine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mapwise_native::engine::rrd::{IoMode, UpdateOptions};

use crate::corpus;
use crate::run_limited;

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

/// Copy `testdata/rrd/name` to `dir/as_name` (writable).
pub fn copy(name: &str, dir: &Path, as_name: &str) -> PathBuf {
    let to = dir.join(as_name);
    std::fs::copy(corpus::rrd(name), &to).expect("copy corpus file");
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
    let out = run_limited(Command::new("gzip").arg("-dc").arg(src), Duration::from_secs(60));
    assert!(out.status.success(), "gzip -dc {}", src.display());
    std::fs::write(dst, out.stdout).expect("write");
    set_writable(dst);
}

/// The spec lines of a corpus update file.
pub fn spec(name: &str) -> Vec<String> {
    std::fs::read_to_string(corpus::rrd(&format!("{name}.updates.txt")))
        .expect("spec")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// One `update` call per line through the library, as rrdtool's pipe mode
/// does; panics on the first refusal.
pub fn apply(path: &Path, lines: &[String], io: IoMode) {
    let o = UpdateOptions { io, ..UpdateOptions::default() };
    for (n, l) in lines.iter().enumerate() {
        let out = mapwise_native::engine::rrd::update(path, &o, std::slice::from_ref(l))
            .unwrap_or_else(|e| panic!("{}: line {}: {e}", path.display(), n + 1));
        if let Some(e) = out.error {
            panic!("{}: line {} ({l}): {e}", path.display(), n + 1);
        }
    }
}
