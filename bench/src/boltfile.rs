//! The Go-made bbolt file the bolt benches share (cached in `target/bench/files`), and the
//! bbolt versions behind the peer that made it.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::machine::{self, Stamp};
use crate::output;
use crate::proc::Cmd;
use crate::report::Report;
use crate::units::format_size;
use crate::{Progress, Workspace, path_arg};

/// The bucket the `big` shape fills and both tools scan.
pub const BUCKET: &str = "fake-bucket";
/// `--tiny`: logical size of the generated file (about 4000 keys, 8 MiB).
pub const TINY_SIZE: u64 = 4 << 20;
/// `--tiny`: puts per transaction of the generator (`gen --batch`).
pub const TINY_BATCH: u64 = 1000;
/// A Go-made bbolt file of the bench cache ([`ensure_file`]).
#[derive(Debug, Serialize)]
pub struct FileInfo {
    /// Its path, relative to the workspace root.
    pub path: String,
    /// Its length.
    pub bytes: u64,
    /// Made during this bench (otherwise taken from the cache).
    pub generated_now: bool,
    /// How it was made.
    pub gen_cmd: String,
    /// `entries=` from the generator, if known.
    pub expected_keys: Option<u64>,
}

/// The bbolt versions behind the peer.
#[derive(Debug, Serialize)]
pub struct Versions {
    /// From the peer README.
    pub bbolt_readme: Option<String>,
    /// Installed Debian package version of golang-github-coreos-bbolt-dev.
    pub bbolt_package: Option<String>,
}

impl Versions {
    /// The bbolt versions behind `peer` (its README and the Debian package).
    pub fn of(peer: &str) -> Self {
        let readme = fs::read_to_string(Path::new(peer).with_file_name("README.md"));
        let package = ["-W", "-f=${Version}", "golang-github-coreos-bbolt-dev"];
        Versions {
            bbolt_readme: readme.ok().and_then(|t| machine::bbolt_version_from_readme(&t)),
            bbolt_package: machine::first_line_of("dpkg-query", &package),
        }
    }

    /// The `## Machine` section with Go's and bbolt's versions.
    pub fn machine(&self, report: &mut Report, stamp: &Stamp) {
        let na = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".to_owned());
        let (readme, package) = (na(&self.bbolt_readme), na(&self.bbolt_package));
        let bbolt = format!(
            "{readme} (peer README); Debian package golang-github-coreos-bbolt-dev {package}"
        );
        let tools = [("Go", stamp.machine.go_version.clone()), ("bbolt", Some(bbolt))];
        stamp.add_to(report, "the file", &tools);
    }
}

/// The cached bbolt file `target/bench/files/bolt-big-seed<S>-<SIZE>[-batch<B>].db`
/// (`batch`: `gen --batch`), made by the peer when missing; `<file>.gen.txt`
/// keeps the command and its output.
pub fn ensure_file(
    ws: &Workspace,
    peer: &str,
    (size, batch): (u64, Option<u64>),
    seed: u64,
    progress: &Progress,
) -> Result<FileInfo> {
    progress.set(format!("bbolt file, {} seed {seed}", format_size(size)));
    let batched = batch.map(|b| format!("-batch{b}")).unwrap_or_default();
    let name = format!("bolt-big-seed{seed}-{}{batched}.db", format_size(size));
    let path = ws.bench_dir().join("files").join(&name);
    let sidecar = path.with_file_name(format!("{name}.gen.txt"));
    let gen_cmd = |p: &Path| {
        let (seed, size) = (seed.to_string(), format_size(size));
        Cmd::new(peer)
            .args(["gen", &path_arg(p), "--shape", "big", "--seed", &seed, "--size", &size])
            .args(batch.map(|b| ["--batch".to_owned(), b.to_string()]).into_iter().flatten())
    };
    let generated_now = output::make_once(&path, true, |tmp| {
        let at = path.display();
        progress.note(&format!("xtask: generating {at} with Go bbolt (cached for later runs)"));
        let cmd = gen_cmd(tmp);
        let out = cmd.run(&ws.root).context("cannot generate the bbolt file")?;
        let line = format!("{}  # then renamed to {at}", cmd.shell());
        Ok(fs::write(&sidecar, format!("# {line}\n{}", out.stdout))?)
    })?;
    let (gen_line, gen_output) = if let Ok(text) = fs::read_to_string(&sidecar) {
        let (first, rest) = text.split_once('\n').unwrap_or((text.as_str(), ""));
        (first.trim_start_matches("# ").to_owned(), rest.to_owned())
    } else {
        let cmd = gen_cmd(&path).shell();
        (format!("{cmd}  # (cached; no record of how it was made)"), String::new())
    };
    Ok(FileInfo {
        bytes: fs::metadata(&path)?.len(),
        path: path_arg(&path),
        generated_now,
        gen_cmd: gen_line,
        expected_keys: parse_gen_entries(&gen_output),
    })
}

/// `entries=N` from the peer's `gen big:` line.
fn parse_gen_entries(text: &str) -> Option<u64> {
    text.split_whitespace().find_map(|w| w.strip_prefix("entries=")).and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_generators_entries_parse() {
        let gen_out = "gen big: entries=200000 payload=1 bytes keys=sorted\ngen: shape=big\n";
        assert_eq!(super::parse_gen_entries(gen_out), Some(200_000));
    }
}
