//! `cargo xtask bench all`: every seed experiment in one go, each bench in
//! its own child process (`xtask bench NAME … --out DIR/NAME`), then one
//! index report over them.
//!
//! A bench that fails (its exit status is not 0) is reported as such and
//! the others still run; Ctrl-C stops the child at once (same process
//! group), and then nothing of the index is written. The index quotes
//! every verdict line of every bench report (a list item whose text holds
//! `PASS —` or `FAIL —`), so the whole outcome is on one page.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use serde::Serialize;

use super::machine::Machine;
use super::output::{self, Table};
use super::units::{utc_human, utc_stamp};
use super::{Workspace, interrupt};

/// Long help of `cargo xtask bench all`.
pub const HELP: &str = "\
Runs bolt-scan, bolt, rrd, revlog, mmaptest and live (or the ones named with
--only), one after the other, each as `xtask bench NAME` with the options
below translated to it, into DIR/NAME/ (REPORT.md, results.json, charts,
traces). Then writes DIR/REPORT.md: the machine, one row per bench (exit
status, minutes, its report) and every PASS/FAIL verdict line of every
bench report; and DIR/results.json with the same. DIR defaults to
target/bench/<UTC timestamp>-all.

  --quick (default) / --full   passed to each bench (bolt-scan: --full
                               means --size 2GiB, the seed's file; bolt:
                               --full means its default sizes; live:
                               --full means 256 MiB and 2 GiB)
  --tiny                       passed to every bench: tiny inputs, a
                               smoke run of the harness (CI); its times
                               mean nothing
  --cold / --warm / --both     passed to the benches that choose
                               (bolt-scan, mmaptest); the others always
                               run both and say so
  --runs N                     passed to every bench

A bench that fails is reported and the rest still run; the exit status is 1
when any bench failed.";

/// The benches `all` runs, in order.
const BENCHES: [&str; 6] = ["bolt-scan", "bolt", "rrd", "revlog", "mmaptest", "live"];

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
    /// Only cold-cache cells, where a bench can choose.
    #[arg(long, conflicts_with_all = ["warm", "both"])]
    cold: bool,
    /// Only warm-cache cells, where a bench can choose.
    #[arg(long, conflicts_with = "both")]
    warm: bool,
    /// Cold and warm cells (the default).
    #[arg(long)]
    both: bool,
    /// Tiny inputs, passed to every bench (a smoke run of the harness).
    #[arg(long, conflicts_with = "full")]
    tiny: bool,
    /// Runs per tool in each cell, passed to every bench.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    runs: Option<u64>,
    /// Directory of the index report and one subdirectory per bench.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only these benches (comma-separated names).
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(BENCHES))]
    only: Vec<String>,
}

impl Args {
    /// Make `--out` absolute against the caller's directory.
    ///
    /// # Errors
    /// When the path cannot be made absolute.
    pub fn fix_out(&mut self) -> Result<()> {
        if let Some(o) = &self.out {
            self.out =
                Some(std::path::absolute(o).with_context(|| format!("bad --out {}", o.display()))?);
        }
        Ok(())
    }
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
    /// Its verdict lines (PASS/FAIL).
    verdicts: Vec<String>,
    /// Options that did not apply to it.
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Index {
    bench: &'static str,
    started_utc: String,
    finished_utc: String,
    mode: &'static str,
    cache: &'static str,
    machine: Machine,
    loadavg_end: Option<String>,
    benches: Vec<BenchRun>,
}

/// The arguments of `xtask bench NAME` for these options, and what did
/// not apply.
fn child_args(name: &str, a: &Args, out: &Path) -> (Vec<String>, Vec<String>) {
    let mut v: Vec<String> = vec!["bench".into(), name.into()];
    let mut notes = Vec::new();
    match name {
        "bolt-scan" => {
            if a.full {
                v.extend(["--size".into(), "2GiB".into()]);
            }
        }
        // bench bolt and bench live run their full sizes unless told --quick.
        "bolt" | "live" => {
            if !a.full {
                v.push("--quick".into());
            }
        }
        _ => v.push(if a.full { "--full" } else { "--quick" }.into()),
    }
    let cache = if a.cold {
        Some("--cold")
    } else if a.warm {
        Some("--warm")
    } else {
        None
    };
    match (name, cache) {
        ("bolt-scan", None) => v.push("--both".into()),
        ("bolt-scan" | "mmaptest", Some(c)) => v.push(c.into()),
        (_, Some(c)) => notes.push(format!("{c} does not apply: this bench runs its own cells")),
        _ => {}
    }
    if let Some(r) = a.runs {
        v.extend(["--runs".into(), r.to_string()]);
    }
    if a.tiny {
        v.push("--tiny".into());
    }
    v.push("--out".into());
    v.push(out.to_string_lossy().into_owned());
    (v, notes)
}

/// (PASS, FAIL) among verdict lines ([`verdicts`]): the index's count
/// cell `N PASS, M FAIL`.
pub(super) fn verdict_counts(lines: &[String]) -> (usize, usize) {
    let pass = lines.iter().filter(|v| v.contains("PASS —")).count();
    let fail = lines.iter().filter(|v| v.contains("FAIL —")).count();
    (pass, fail)
}

/// The verdict lines of a bench report: list items holding `PASS —` or
/// `FAIL —`, and rows of verdict tables (a cell `PASS` or `FAIL`, or one
/// starting `PASS —` / `FAIL —`), which become list items (`- **first
/// cell**: PASS — the other cells`) so that the index, which lists them
/// one per line, holds no table without a header.
pub(super) fn verdicts(report: &str) -> Vec<String> {
    let is_verdict = |c: &str| {
        let c = c.trim().trim_matches('*');
        ["PASS", "FAIL"]
            .iter()
            .any(|w| c == *w || c.starts_with(&format!("{w} —")))
    };
    report
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            if l.starts_with("- ") || l.starts_with("* ") {
                return (l.contains("PASS —") || l.contains("FAIL —")).then(|| l.to_string());
            }
            let cells: Vec<&str> = l
                .strip_prefix('|')?
                .strip_suffix('|')?
                .split(" | ")
                .map(str::trim)
                .collect();
            let v = cells.iter().skip(1).position(|c| is_verdict(c))? + 1;
            let verdict = cells[v].trim_matches('*');
            let rest: Vec<&str> = cells
                .iter()
                .enumerate()
                .filter(|&(i, c)| i != 0 && i != v && !c.is_empty())
                .map(|(_, c)| *c)
                .collect();
            let mut line = format!("- **{}**: {verdict}", cells[0].trim_matches('*'));
            if !rest.is_empty() {
                let sep = if verdict.contains('—') {
                    "; "
                } else {
                    " — "
                };
                line.push_str(sep);
                line.push_str(&rest.join(", "));
            }
            Some(line)
        })
        .collect()
}

/// Runs `cargo xtask bench all`.
///
/// # Errors
/// When the index cannot be written, or on Ctrl-C.
pub fn run(ws: &Workspace, a: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| ws.bench_dir().join(format!("{}-all", utc_stamp(started))));
    let exe = std::env::current_exe().context("cannot find the xtask binary")?;
    let chosen: Vec<&str> = BENCHES
        .iter()
        .copied()
        .filter(|b| a.only.is_empty() || a.only.iter().any(|o| o == b))
        .collect();
    let mut runs = Vec::new();
    for name in chosen {
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
        let report = std::fs::read_to_string(sub.join("REPORT.md")).unwrap_or_default();
        runs.push(BenchRun {
            name: name.to_string(),
            command,
            status: status.code(),
            seconds: t.elapsed().as_secs_f64(),
            dir: format!("{name}/"),
            verdicts: verdicts(&report),
            notes,
        });
    }
    let index = Index {
        bench: "all",
        started_utc: utc_human(started),
        finished_utc: utc_human(SystemTime::now()),
        mode: if a.full {
            "full"
        } else if a.tiny {
            "tiny"
        } else {
            "quick"
        },
        cache: if a.cold {
            "cold"
        } else if a.warm {
            "warm"
        } else {
            "both"
        },
        machine: Machine::describe(&ws.bench_dir()),
        loadavg_end: super::machine::loadavg(),
        benches: runs,
    };
    let report = render(&index);
    let json = serde_json::to_string_pretty(&index)? + "\n";
    output::write_all_atomically(
        &dir,
        &[
            ("results.json", json.as_bytes()),
            ("REPORT.md", report.as_bytes()),
        ],
    )?;
    print!("{report}");
    eprintln!("xtask: wrote {}", dir.join("REPORT.md").display());
    Ok(if index.benches.iter().all(|b| b.status == Some(0)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn render(x: &Index) -> String {
    let m = &x.machine;
    let mut o = String::new();
    let _ = writeln!(o, "# cargo xtask bench all — {}\n", x.started_utc);
    let _ = writeln!(
        o,
        "Every seed experiment re-run beside its peer ({} mode, {} cache cells), finished {}. \
         Each bench's own report (tables, charts, residency traces, commands, the seed's published \
         figures) is in its directory; this page gathers their verdicts.\n",
        x.mode, x.cache, x.finished_utc
    );
    o.push_str(&m.section("target/bench", &[], x.loadavg_end.as_deref()));
    let _ = writeln!(o, "\n## Benches\n");
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
    o.push_str(&t.render());
    for b in &x.benches {
        let _ = writeln!(o, "\n## {}\n\n`{}`\n", b.name, b.command);
        for n in &b.notes {
            let _ = writeln!(o, "Note: {n}.\n");
        }
        if b.verdicts.is_empty() {
            let _ = writeln!(o, "No verdict lines (see its report).");
        }
        for v in &b.verdicts {
            let _ = writeln!(o, "{v}");
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
        Cli::try_parse_from(std::iter::once("all").chain(v.iter().copied()))
            .unwrap()
            .a
    }

    #[test]
    fn options_translate_per_bench() {
        let out = Path::new("/o");
        let (v, n) = child_args("bolt-scan", &args(&["--full", "--runs", "3"]), out);
        assert_eq!(
            v,
            [
                "bench",
                "bolt-scan",
                "--size",
                "2GiB",
                "--both",
                "--runs",
                "3",
                "--out",
                "/o"
            ]
        );
        assert!(n.is_empty());
        let (v, n) = child_args("rrd", &args(&["--cold"]), out);
        assert_eq!(v, ["bench", "rrd", "--quick", "--out", "/o"]);
        assert_eq!(n.len(), 1);
        let (v, _) = child_args("bolt", &args(&["--full"]), out);
        assert_eq!(v, ["bench", "bolt", "--out", "/o"]);
        let (v, _) = child_args("live", &args(&["--tiny", "--runs", "1"]), out);
        assert_eq!(
            v,
            [
                "bench", "live", "--quick", "--runs", "1", "--tiny", "--out", "/o"
            ]
        );
        let (v, _) = child_args("mmaptest", &args(&["--warm"]), out);
        assert_eq!(v, ["bench", "mmaptest", "--quick", "--warm", "--out", "/o"]);
        assert!(Cli::try_parse_from(["all", "--quick", "--full"]).is_err());
        assert!(Cli::try_parse_from(["all", "--cold", "--warm"]).is_err());
    }

    #[test]
    fn verdict_lines_are_found() {
        let r = "# x\n- **cold, plain mmap**: PASS — ours 0.9×\ntext PASS — no\n  - **b**: FAIL — 2×\n| c | PASS — 1× |\n";
        assert_eq!(
            verdicts(r),
            [
                "- **cold, plain mmap**: PASS — ours 0.9×",
                "- **b**: FAIL — 2×",
                "- **c**: PASS — 1×"
            ]
        );
        // bench bolt's verdict table (a real row of its report).
        let t = "| target   | goal                 | ours/Go (per pair) | verdict |\n\
                 | -------- | -------------------- | -----------------: | ------- |\n\
                 | rnd puts | ops/s ours/Go ≥ 1.0× |  1.18× [1.15–1.35] | PASS    |\n\
                 | scan: warm, plain mmap | time ours/Go ≤ 0.7× | 1.05× [0.93–1.10] | FAIL |\n";
        assert_eq!(
            verdicts(t),
            [
                "- **rnd puts**: PASS — ops/s ours/Go ≥ 1.0×, 1.18× [1.15–1.35]",
                "- **scan: warm, plain mmap**: FAIL — time ours/Go ≤ 0.7×, 1.05× [0.93–1.10]"
            ]
        );
    }
}
