//! `cargo xtask bench all`: every bench in its own child process (`xtask
//! bench NAME … --out DIR/NAME`), then one index report quoting every
//! verdict of every bench report (from its model), so the whole outcome is
//! on one page. A failing bench is reported and the others still run;
//! Ctrl-C stops the child at once (same process group) and writes no index.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use serde::Serialize;

use super::machine::{Machine, Stamp};
use super::output;
use super::report::{Outcome, Report, Table, Verdict};
use super::schedule::Caches;
use super::units::utc_stamp;
use super::{Workspace, interrupt};

/// Long help of `cargo xtask bench all`.
pub const HELP: &str = include_str!("text/all-help.txt");

/// The benches `all` runs, in order.
const BENCHES: [&str; 8] =
    ["bolt-scan", "bolt", "rrd", "revlog", "mmaptest", "live", "fleet", "etcd"];

/// Arguments of `cargo xtask bench all`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Smaller files and fewer iterations (the default).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The seeds' sizes (2 GiB bbolt file, 1000 updatev calls, 100 000
    /// mmaptest iterations, 1M-revision index).
    #[arg(long)]
    full: bool,
    #[command(flatten)]
    caches: Caches,
    /// Tiny inputs, passed to every bench (a smoke run of the harness).
    #[arg(long, conflicts_with = "full")]
    tiny: bool,
    /// Runs per tool in each cell, passed to every bench.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    runs: Option<u64>,
    /// Directory of the index report and one subdirectory per bench.
    #[arg(long, value_name = "DIR")]
    pub(super) out: Option<PathBuf>,
    /// Run only these benches (comma-separated names).
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(BENCHES))]
    only: Vec<String>,
}

/// What one bench did.
#[derive(Debug, Serialize)]
struct BenchRun {
    name: String,
    command: String,
    /// Exit status (`None`: killed by a signal).
    status: Option<i32>,
    seconds: f64,
    /// Its report directory, relative to the index's.
    dir: String,
    /// Its verdicts, from its report's model.
    verdicts: Vec<Verdict>,
    /// Options that did not apply to it.
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Index {
    #[serde(flatten)]
    stamp: Stamp,
    mode: &'static str,
    cache: &'static str,
    benches: Vec<BenchRun>,
}

/// The arguments of `xtask bench NAME` for these options, and what did not apply.
fn child_args(name: &str, a: &Args, out: &Path) -> (Vec<String>, Vec<String>) {
    let mut v: Vec<String> = vec!["bench".into(), name.into()];
    match name {
        "bolt-scan" if a.full => v.extend(["--size".into(), "2GiB".into()]),
        "bolt-scan" => {}
        // bench bolt and bench live run their full sizes unless told --quick.
        "bolt" | "live" if a.full => {}
        // bench fleet runs 10 000 files unless told --full (100 000).
        "fleet" => v.extend(a.full.then(|| "--full".to_owned())),
        // bench etcd has one size, a 2 GiB db (--tiny aside).
        "etcd" => {}
        _ => v.push(if a.full { "--full" } else { "--quick" }.into()),
    }
    let cache = a.caches.word();
    let mut notes = Vec::new();
    match (name, cache) {
        ("bolt-scan", _) | ("mmaptest", "cold" | "warm") => v.push(format!("--{cache}")),
        (_, "both") => {}
        _ => notes.push(format!("--{cache} does not apply: this bench runs its own cells")),
    }
    if let Some(r) = a.runs {
        v.extend(["--runs".into(), r.to_string()]);
    }
    if a.tiny {
        v.push("--tiny".into());
    }
    v.extend(["--out".into(), out.to_string_lossy().into_owned()]);
    (v, notes)
}

/// (PASS, FAIL) among `verdicts`: the index's count cell `N PASS, M FAIL`.
#[must_use]
pub fn verdict_counts(verdicts: &[Verdict]) -> (usize, usize) {
    let n = |o| verdicts.iter().filter(|v| v.outcome == o).count();
    (n(Outcome::Pass), n(Outcome::Fail))
}

/// The verdicts of the bench report in `dir` (none when it has no readable report).
#[must_use]
pub fn verdicts(dir: &Path) -> Vec<Verdict> {
    let report = crate::check::read_report(dir).ok();
    report.map(|(_, r)| r.all_verdicts().cloned().collect()).unwrap_or_default()
}

/// Runs `cargo xtask bench all`.
pub fn run(ws: &Workspace, a: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let dir =
        a.out.clone().unwrap_or_else(|| ws.bench_dir().join(format!("{}-all", utc_stamp(started))));
    let exe = std::env::current_exe().context("cannot find the xtask binary")?;
    let mut runs = Vec::new();
    for name in BENCHES.into_iter().filter(|b| a.only.is_empty() || a.only.iter().any(|o| o == b)) {
        let sub = dir.join(name);
        // The child runs from the root: a root-relative --out is the same
        // directory, and the index's command line names no machine path.
        let (args, notes) = child_args(name, a, Path::new(&ws.rel(&sub)));
        let command = format!("cargo xtask {}", args.join(" "));
        eprintln!("xtask: bench all: {command}");
        let t = Instant::now();
        let status = Command::new(&exe)
            .args(&args)
            .current_dir(&ws.root)
            .status()
            .with_context(|| format!("cannot run {command}"))?;
        interrupt::check()?;
        runs.push(BenchRun {
            name: name.to_string(),
            command,
            status: status.code(),
            seconds: t.elapsed().as_secs_f64(),
            dir: format!("{name}/"),
            verdicts: verdicts(&sub),
            notes,
        });
    }
    let index = Index {
        stamp: Stamp::new("all", started, Machine::describe(&ws.bench_dir())),
        mode: match (a.full, a.tiny) {
            (true, _) => "full",
            (_, true) => "tiny",
            _ => "quick",
        },
        cache: a.caches.word(),
        benches: runs,
    };
    output::publish(&dir, &render(&index), &index, &[])?;
    Ok(output::exit(index.benches.iter().all(|b| b.status == Some(0)), "a bench failed"))
}

fn render(x: &Index) -> Report {
    let mut o = Report::new(format!("cargo xtask bench all — {}", x.stamp.started_utc));
    o.text(format!(
        "Every seed experiment re-run beside its peer ({} mode, {} cache cells), finished {}. \
         Each bench's own report (tables, charts, residency traces, commands, the seed's published \
         figures) is in its directory; this page gathers their verdicts.",
        x.mode, x.cache, x.stamp.finished_utc
    ));
    x.stamp.add_to(&mut o, "target/bench", &[]);
    let mut t = Table::new(&["bench", "status", ">minutes", "report", "verdicts"]);
    for b in &x.benches {
        let (pass, fail) = verdict_counts(&b.verdicts);
        t.row([
            b.name.clone(),
            match b.status {
                Some(0) => "ok".to_owned(),
                Some(c) => format!("**exit {c}**"),
                None => "**killed**".to_owned(),
            },
            format!("{:.1}", b.seconds / 60.0),
            format!("[{0}REPORT.md]({0}REPORT.md)", b.dir),
            format!("{pass} PASS, {fail} FAIL"),
        ]);
    }
    o.section("Benches").table(t);
    for b in &x.benches {
        o.section(&b.name).text(format!("`{}`", b.command));
        for n in &b.notes {
            o.text(format!("Note: {n}."));
        }
        if b.verdicts.is_empty() {
            o.text("No verdict lines (see its report).");
        } else {
            o.verdicts(b.verdicts.clone());
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }

    fn args(v: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("all").chain(v.iter().copied())).unwrap().a
    }

    #[test]
    fn options_translate_per_bench() {
        let out = Path::new("/o");
        let (v, n) = child_args("bolt-scan", &args(&["--full", "--runs", "3"]), out);
        assert_eq!(
            v,
            ["bench", "bolt-scan", "--size", "2GiB", "--both", "--runs", "3", "--out", "/o"]
        );
        assert!(n.is_empty());
        let (v, n) = child_args("rrd", &args(&["--cold"]), out);
        assert_eq!(v, ["bench", "rrd", "--quick", "--out", "/o"]);
        assert_eq!(n.len(), 1);
        let (v, _) = child_args("bolt", &args(&["--full"]), out);
        assert_eq!(v, ["bench", "bolt", "--out", "/o"]);
        let (v, _) = child_args("live", &args(&["--tiny", "--runs", "1"]), out);
        assert_eq!(v, ["bench", "live", "--quick", "--runs", "1", "--tiny", "--out", "/o"]);
        let (v, _) = child_args("mmaptest", &args(&["--warm"]), out);
        assert_eq!(v, ["bench", "mmaptest", "--quick", "--warm", "--out", "/o"]);
        let (v, _) = child_args("fleet", &args(&["--full"]), out);
        assert_eq!(v, ["bench", "fleet", "--full", "--out", "/o"]);
        let (v, _) = child_args("fleet", &args(&["--tiny"]), out);
        assert_eq!(v, ["bench", "fleet", "--tiny", "--out", "/o"]);
        assert!(Cli::try_parse_from(["all", "--quick", "--full"]).is_err());
        assert!(Cli::try_parse_from(["all", "--cold", "--warm"]).is_err());
    }
}
