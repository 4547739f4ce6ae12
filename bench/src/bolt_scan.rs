//! `cargo xtask bench bolt-scan`: the MAP_POPULATE experiment boltdb/bolt's
//! maintainers reported, ours (`mapwise bolt traverse`) vs Go bbolt (the
//! oracle's `traverse`), cold/warm × with/without MAP_POPULATE.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::charts::{self, RatioBar};
use super::limits::{self, Limit};
use super::machine::{self, Machine};
use super::output::{self, Table, TempPath};
use super::pagecache;
use super::proc::{Cmd, tail};
use super::schedule::{self, CacheState, Pair, Prepared};
use super::stats::{
    Summary, at_most_verdict, fmt_secs, opt_median, opt_ratio, opt_secs, pair_ratios,
};
use super::traces::{TraceInfo, Traces};
use super::units::{format_size, human_size, pct, utc_human};
use super::{CommonArgs, Progress, Workspace, interrupt, path_arg};

/// Long help of `cargo xtask bench bolt-scan`.
pub const HELP: &str = "\
Generates (once, cached in target/bench/files/) a bbolt file with Go bbolt:
  peers/bolt/peer gen FILE --shape big --seed SEED --size SIZE
then, in each cell, after --warmup untimed pairs, runs ours and Go
alternately (A B, B A, A B, …, --runs pairs):
  target/release/mapwise bolt traverse FILE [--populate] --json
  peers/bolt/peer traverse FILE [--populate]
Cells: cold (xtask fsyncs and posix_fadvise(DONTNEED)s the whole file before
every single run) and warm (xtask evicts it, then reads it whole once before
every pair: both runs of a pair scan the same page cache), each with and
without MAP_POPULATE. Then the limits: a cold O_DIRECT
sequential read and a cached read() of the file (1 MiB buffer), and
`inspector residency` on a 64 GiB sparse file. Go bbolt is the bbolt
peer, peers/bolt/peer (its Debian packages installed first).
--tiny (a smoke run of the harness, e.g. in CI; its times mean nothing)
generates a 4MiB file in transactions of 1000 puts (`gen … --batch 1000`:
about 4000 keys, 8 MiB) unless --size is given.
See `cargo xtask bench --help` for the report.";

/// Timed pairs a warm cell runs at least, whatever `--runs` says. A warm
/// 2 GiB scan takes ~0.05 s but varies up to 15x from one reset to the
/// next in both tools alike (42-770 ms ours, 69-234 ms Go in one cell at
/// 152df4f). The slow resets are mostly those whose warming read itself
/// was slow (4-5 s against 1.3-1.8 s for 2 GiB): on a VM that reports
/// free pages to its host, the memory the read lands in may have gone
/// back to the host and be faulted in again there, in small host pages
/// that make every TLB miss of the scan dearer. So the two runs of a warm
/// pair share one reset (evict, read whole; the second run only re-checks
/// residency and shows a prep time of 0): each pair compares both tools
/// on the same memory, and the ratio, taken pair by pair, no longer mixes
/// two draws of it (at 152df4f, with a reset per run, the pair ratios
/// spread 0.21-3.65 around a 0.75 median while the medians of the times
/// stood at 0.46). Nine pairs cost seconds; a cold pair costs 90 s.
/// The first run after a shared reset still paid more than the second,
/// in both tools (a 2 GiB scan at 170-270 ms instead of ~30 ms, about
/// half the time, and again after any pause of ~2 s): the first process
/// to allocate memory after a pause gets pages that went back to the VM
/// host (its page tables, its heap) and pays a host-side fault at each
/// first touch, while the next process reuses what the first just freed.
/// That penalty fell on whichever tool ran first in the pair, 5 times in
/// 9 on ours. A mapping pass by xtask itself (mmap and
/// `MADV_POPULATE_READ`) took only part of it away (9-pair cells at
/// dd33989: still 66-152 ms first runs), so now every warm run follows
/// an untimed run of the same command, which leaves just what that
/// command needs freed a moment ago: every warm run of either tool is a
/// repeated scan of a cached file.
pub(super) const WARM_MIN_RUNS: usize = 9;

/// Wait after a cold reset before the run, on a machine that reports
/// free pages to its VM host. The eviction frees the file's page cache;
/// the kernel hands freed blocks back to the host about 2 s later
/// (`PAGE_REPORTING_DELAY`), and a page the guest then reuses costs a
/// host-side fault at its first touch. A run started at once got a random
/// mix of backed and returned memory: the scan after a cold 2 GiB
/// `MAP_POPULATE` took 0.2 s or 3-4 s, in both tools, by luck (measured
/// at ba2885f: 5 s waits gave 3.4-4.4 s in both, no wait 0.2-2.8 s). A
/// fixed wait puts every cold run of both tools in the same state.
const COLD_SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Timed pairs of a cell: `runs`, at least [`WARM_MIN_RUNS`] when warm.
pub(super) fn cell_runs(cache: CacheState, runs: usize) -> usize {
    match cache {
        CacheState::Warm => runs.max(WARM_MIN_RUNS),
        CacheState::Cold => runs,
    }
}

/// The bucket the `big` shape fills and both tools scan.
const BUCKET: &str = "fake-bucket";
/// Size of the sparse file for the residency row.
const SPARSE_BYTES: u64 = 64 << 30;
/// Target for `inspector residency` on it.
const RESIDENCY_TARGET_S: f64 = 0.5;
/// `--tiny`: logical size of the generated file. The oracle writes the
/// `big` shape in transactions of 10000 puts unless told otherwise, which
/// makes at least 20000 keys (30 MiB); with [`TINY_BATCH`] it stops at
/// about 4000 keys in an 8 MiB file.
pub(super) const TINY_SIZE: u64 = 4 << 20;
/// `--tiny`: puts per transaction of the generator (`gen --batch`).
pub(super) const TINY_BATCH: u64 = 1000;

/// `bench bolt-scan` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Logical size of the generated file (oracle `gen --size`; binary
    /// units: 256MiB, 2GiB, 1.5G, bytes). The file comes out a little
    /// larger [default: 256MiB; --tiny: 4MiB in puts of 1000 per
    /// transaction, about 4000 keys in an 8 MiB file].
    #[arg(long, value_name = "SIZE", value_parser = super::units::parse_size, conflicts_with = "tiny")]
    size: Option<u64>,
    /// Seed of the generated file (oracle `gen --seed`).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Untimed pairs at the start of each cell (same reset before each
    /// run), kept in results.json only: the first run after a change of
    /// cell pays for the previous cell's leftovers (see the report).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=100))]
    warmup: u64,
    /// Only the cold cells.
    #[arg(long, conflicts_with_all = ["warm", "both"])]
    cold: bool,
    /// Only the warm cells.
    #[arg(long, conflicts_with = "both")]
    warm: bool,
    /// Cold and warm cells (the default).
    #[arg(long)]
    both: bool,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// One tool's timings of one run, as the tool itself reports them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Timing {
    /// Opening the database (mmap, with MAP_POPULATE the prefault too).
    pub open_s: f64,
    /// Cursor scan of the bucket.
    pub scan_s: f64,
    /// open + scan.
    pub took_s: f64,
    /// Keys the cursor saw.
    pub keys: u64,
}

/// The JSON object `mapwise bolt traverse --json` prints.
#[derive(Deserialize)]
struct OursJson {
    open_s: f64,
    traverse_s: f64,
    took_s: f64,
    keys: u64,
}

/// Parses ours: one JSON object with `open_s`, `traverse_s`, `took_s`,
/// `keys` (other fields ignored); the last line that looks like one.
pub fn parse_ours(stdout: &str) -> Result<Timing, String> {
    let line = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("no JSON object in output {:?}", tail(stdout, 3)))?;
    let j: OursJson =
        serde_json::from_str(line).map_err(|e| format!("bad JSON from mapwise: {e}: {line}"))?;
    Ok(Timing {
        open_s: j.open_s,
        scan_s: j.traverse_s,
        took_s: j.took_s,
        keys: j.keys,
    })
}

/// Parses the oracle's text: `open: 0.003s`, `traverse: 0.001s keys=N …`,
/// `took: 0.004s` (other lines ignored).
pub fn parse_go(stdout: &str) -> Result<Timing, String> {
    fn secs(word: Option<&str>) -> Option<f64> {
        word?
            .trim()
            .strip_suffix('s')?
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
    }
    let (mut open, mut scan, mut took, mut keys) = (None, None, None, None);
    for line in stdout.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("open:") {
            open = secs(rest.split_whitespace().next());
        } else if let Some(rest) = line.strip_prefix("traverse:") {
            let mut words = rest.split_whitespace();
            scan = secs(words.next());
            keys = words
                .find_map(|w| w.strip_prefix("keys="))
                .and_then(|k| k.parse().ok());
        } else if let Some(rest) = line.strip_prefix("took:") {
            took = secs(rest.split_whitespace().next());
        }
    }
    let missing = |what: &str| format!("no `{what}` in oracle output {:?}", tail(stdout, 6));
    Ok(Timing {
        open_s: open.ok_or_else(|| missing("open: Xs"))?,
        scan_s: scan.ok_or_else(|| missing("traverse: Xs"))?,
        took_s: took.ok_or_else(|| missing("took: Xs"))?,
        keys: keys.ok_or_else(|| missing("keys=N"))?,
    })
}

/// `entries=N` from the oracle's `gen big:` line.
pub fn parse_gen_entries(text: &str) -> Option<u64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("entries="))
        .and_then(|n| n.parse().ok())
}

/// One run of one tool.
#[derive(Debug, Serialize)]
pub(super) struct Sample {
    #[serde(flatten)]
    pub(super) timing: Timing,
    /// Spawn to exit as seen by xtask (process start-up included; for Go
    /// also the peer script's own checks before it execs the binary).
    pub(super) wall_s: f64,
    /// The cache reset before this run.
    pub(super) prep: Prepared,
    /// Fraction of the file resident right after the run (mincore): how
    /// much of it the tool brought in.
    pub(super) resident_after: f64,
    /// Peak RSS of the process, KiB (wait4).
    pub(super) max_rss_kib: Option<u64>,
    /// What the tool printed.
    stdout: String,
}

/// A cell: cache state × populate.
#[derive(Clone, Copy, Debug, Serialize)]
pub(super) struct CellSpec {
    pub(super) cache: CacheState,
    pub(super) populate: bool,
}

impl CellSpec {
    pub(super) fn label(self) -> String {
        format!(
            "{}, {}",
            self.cache.name(),
            if self.populate {
                "MAP_POPULATE"
            } else {
                "plain mmap"
            }
        )
    }
}

/// Summaries of a cell.
#[derive(Debug, Serialize)]
pub(super) struct CellSummary {
    pub(super) ours_took: Option<Summary>,
    pub(super) go_took: Option<Summary>,
    /// ours/Go `took`, pair by pair.
    pub(super) ratio_took: Option<Summary>,
    /// Pairs without a ratio (Go printed 0.000 s).
    pub(super) ratio_skipped: usize,
    pub(super) ours_open: Option<Summary>,
    pub(super) ours_scan: Option<Summary>,
    pub(super) go_open: Option<Summary>,
    pub(super) go_scan: Option<Summary>,
    /// ours/Go scan time, pair by pair.
    pub(super) ratio_scan: Option<Summary>,
    pub(super) ours_wall: Option<Summary>,
    pub(super) go_wall: Option<Summary>,
    /// Resident fraction after the reset, over all runs of the cell.
    pub(super) resident: Option<Summary>,
    /// Resident fraction after ours' runs.
    pub(super) ours_resident_after: Option<Summary>,
    /// Resident fraction after Go's runs.
    pub(super) go_resident_after: Option<Summary>,
    /// Every key count seen (one value when all agree).
    pub(super) key_counts: Vec<u64>,
}

impl CellSummary {
    /// `ours / Go` median resident fractions after the runs.
    pub(super) fn resident_after_text(&self) -> String {
        let f = |x: Option<&Summary>| x.map_or_else(|| "—".to_owned(), |x| pct(x.median));
        format!(
            "{} / {}",
            f(self.ours_resident_after.as_ref()),
            f(self.go_resident_after.as_ref())
        )
    }

    /// Every key count seen, `a / b` when they differ.
    pub(super) fn keys_text(&self) -> String {
        self.key_counts
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

#[derive(Debug, Serialize)]
pub(super) struct CellResult {
    pub(super) label: String,
    #[serde(flatten)]
    pub(super) spec: CellSpec,
    pub(super) ours_cmd: String,
    pub(super) go_cmd: String,
    /// Untimed pairs run first (`--warmup`), not in the statistics.
    warmup: Vec<Pair<Sample>>,
    /// `a` = ours (first in odd-numbered pairs), `b` = Go.
    pub(super) pairs: Vec<Pair<Sample>>,
    pub(super) summary: CellSummary,
}

#[derive(Debug, Serialize)]
struct ResidencyRun {
    wall_s: f64,
    stdout: String,
}

#[derive(Debug, Serialize)]
struct ResidencyBench {
    /// `ok`, `missing` (no inspector binary or subcommand yet) or `failed`.
    status: String,
    detail: Option<String>,
    commands: Vec<String>,
    sparse_bytes: u64,
    runs: Vec<ResidencyRun>,
    wall: Option<Summary>,
}

/// A Go-made bbolt file of the bench cache ([`ensure_file`]).
#[derive(Debug, Serialize)]
pub struct FileInfo {
    /// Its path, relative to the workspace root.
    pub path: String,
    pub(super) bytes: u64,
    /// Made during this bench (otherwise taken from the cache).
    generated_now: bool,
    pub(super) gen_cmd: String,
    gen_output: String,
    /// `entries=` from the generator, if known.
    pub(super) expected_keys: Option<u64>,
}

#[derive(Debug, Serialize)]
pub(super) struct Versions {
    /// From the oracle README.
    pub(super) bbolt_readme: Option<String>,
    /// Installed Debian package version of golang-github-coreos-bbolt-dev.
    pub(super) bbolt_package: Option<String>,
}

impl Versions {
    /// The bbolt versions behind `oracle` (its README and the Debian
    /// package).
    pub(super) fn of(oracle: &str) -> Self {
        let readme = Path::new(oracle).with_file_name("README.md");
        Versions {
            bbolt_readme: fs::read_to_string(&readme)
                .ok()
                .and_then(|t| machine::bbolt_version_from_readme(&t)),
            bbolt_package: machine::first_line_of(
                "dpkg-query",
                &["-W", "-f=${Version}", "golang-github-coreos-bbolt-dev"],
            ),
        }
    }
}

/// Everything results.json holds; the report is rendered from it.
#[derive(Debug, Serialize)]
struct Results {
    bench: &'static str,
    /// What `a` and `b` of every pair are.
    sides: [(&'static str, &'static str); 2],
    started_utc: String,
    finished_utc: String,
    size_bytes: u64,
    size: String,
    seed: u64,
    runs: usize,
    warmup: usize,
    bucket: &'static str,
    machine: Machine,
    loadavg_end: Option<String>,
    versions: Versions,
    file: FileInfo,
    build_commands: Vec<String>,
    cells: Vec<CellResult>,
    limits: Vec<Limit>,
    residency: ResidencyBench,
    keys_agree: bool,
    /// Residency traces of the timed runs (files in `traces/`).
    traces: Vec<TraceInfo>,
    /// SVG charts beside the report.
    charts: Vec<String>,
}

/// The charts of this bench: (file, what it shows).
const CHARTS: [(&str, &str); 2] = [
    ("ratios.svg", "took, ours / Go bbolt, per cell"),
    (
        "residency-cold.svg",
        "resident share of the file during the first timed cold run of each tool and mode",
    ),
];

/// The SVGs named in [`CHARTS`]: the ratio bars of every cell, and the
/// residency of the first cold run of each (cell, tool).
fn bolt_scan_charts(r: &Results, traces: &Traces) -> Result<Vec<(String, String)>> {
    let bars: Vec<RatioBar> = r
        .cells
        .iter()
        .filter_map(|c| {
            Some(RatioBar::of(
                c.label.clone(),
                c.summary.ratio_took.as_ref()?,
            ))
        })
        .collect();
    let mut out = vec![(
        CHARTS[0].0.to_string(),
        charts::ratios("bolt-scan: took, ours / Go bbolt", &bars, None)?,
    )];
    let picks: Vec<(String, &str, String)> = r
        .cells
        .iter()
        .filter(|c| c.spec.cache == CacheState::Cold)
        .flat_map(|c| {
            ["ours", "Go"].map(|side| {
                let legend = format!("{side}, {}", c.label.trim_start_matches("cold, "));
                (c.label.clone(), side, legend)
            })
        })
        .collect();
    if let Some(svg) = super::traces::residency_chart(
        traces,
        "bolt-scan, cold: the file in the page cache during the scan",
        &picks,
    )? {
        out.push((CHARTS[1].0.to_string(), svg));
    }
    Ok(out)
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = usize::try_from(args.common.runs).context("--runs too large")?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let tiny = args.common.tiny;
    let size = args
        .size
        .unwrap_or(if tiny { TINY_SIZE } else { 256 << 20 });
    let batch = tiny.then_some(TINY_BATCH);
    let caches: &[CacheState] = if args.cold {
        &[CacheState::Cold]
    } else if args.warm {
        &[CacheState::Warm]
    } else {
        &[CacheState::Cold, CacheState::Warm]
    };
    let cells: Vec<CellSpec> = caches
        .iter()
        .flat_map(|&cache| [false, true].map(|populate| CellSpec { cache, populate }))
        .collect();
    let oracle = ws.peer("bolt")?;
    let cell_steps: usize = cells
        .iter()
        .map(|c| (warmup + cell_runs(c.cache, runs)) * 2)
        .sum();
    let steps = 4 + cell_steps + limits::steps(runs) + runs;
    let progress = Progress::new(steps as u64);

    // Builds: ours (required), the inspector (optional), the oracle.
    let build_ours = Cmd::cargo_release("mapwise-cli", Some("mapwise"));
    let build_inspector = Cmd::cargo_release("mapwise-inspector", None);
    let build_oracle = Cmd::new(oracle.clone()).arg("build");
    progress.set("building mapwise (release)");
    build_ours.run(&ws.root).context("cannot build ours")?;
    let mapwise = ws.release_bin("mapwise");
    if !mapwise.is_file() {
        bail!("{} missing after the build", mapwise.display());
    }
    progress.inc();
    progress.set("building inspector (release)");
    let inspector_build = build_inspector.output(&ws.root)?;
    progress.inc();
    progress.set("building the bbolt oracle");
    build_oracle
        .run(&ws.root)
        .context("cannot build the bbolt oracle")?;
    progress.inc();

    // The file.
    progress.set(format!(
        "bbolt file, {} seed {}",
        format_size(size),
        args.seed
    ));
    let file = ensure_file(ws, &oracle, (size, batch), args.seed, &progress)?;
    progress.inc();
    let file_path = PathBuf::from(&file.path);
    let machine = Machine::describe(&file_path);
    let versions = Versions::of(&oracle);

    // The cells; every timed run is traced (`traces::cadence`).
    let traces = std::cell::RefCell::new(Traces::new());
    let scratch = ws.bench_dir().join("scratch");
    let mut cell_results = Vec::with_capacity(cells.len());
    for spec in &cells {
        let ours_cmd = Cmd::new(path_arg(&mapwise))
            .arg("bolt")
            .arg("traverse")
            .arg(file.path.clone())
            .arg_if(spec.populate, "--populate")
            .arg("--json");
        let go_cmd = Cmd::new(oracle.clone())
            .arg("traverse")
            .arg(file.path.clone())
            .arg_if(spec.populate, "--populate");
        cell_results.push(run_cell(
            ws,
            &progress,
            &file_path,
            *spec,
            spec.label(),
            (ours_cmd, go_cmd),
            (warmup, runs),
            (&traces, &scratch),
        )?);
    }

    // The physical limits.
    let limits = limits::standard(&file_path, runs, &progress)?;

    // inspector residency on a sparse file.
    let residency = residency_bench(ws, &inspector_build, &build_inspector, runs, &progress)?;

    let keys_agree = {
        let mut all: Vec<u64> = cell_results
            .iter()
            .flat_map(|c| c.summary.key_counts.iter().copied())
            .collect();
        all.extend(file.expected_keys);
        let warmups = cell_results.iter().flat_map(|c| &c.warmup);
        all.extend(warmups.flat_map(|p| [p.a.timing.keys, p.b.timing.keys]));
        all.sort_unstable();
        all.dedup();
        all.len() == 1
    };
    let finished = SystemTime::now();
    let mut results = Results {
        bench: "bolt-scan",
        sides: [("a", "ours"), ("b", "go")],
        started_utc: utc_human(started),
        finished_utc: utc_human(finished),
        size_bytes: size,
        size: format_size(size),
        seed: args.seed,
        runs,
        warmup,
        bucket: BUCKET,
        machine,
        loadavg_end: machine::loadavg(),
        versions,
        file,
        build_commands: vec![
            build_ours.shell(),
            build_inspector.shell(),
            build_oracle.shell(),
        ],
        cells: cell_results,
        limits,
        residency,
        keys_agree,
        traces: traces.borrow().list().to_vec(),
        charts: Vec::new(),
    };
    let svgs = bolt_scan_charts(&results, &traces.borrow())?;
    results.charts = svgs.iter().map(|(n, _)| n.clone()).collect();
    drop(progress);
    let traced = traces.borrow();
    output::publish(
        &ws.report_dir(&args.common, started),
        &render(&results),
        &results,
        &traced
            .files()
            .into_iter()
            .chain(svgs.iter().map(|(n, s)| (n.as_str(), s.as_bytes())))
            .collect::<Vec<_>>(),
    )?;
    if !results.keys_agree {
        eprintln!("xtask: key counts differ between runs or tools (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs one cell: `warmup` untimed pairs, then `runs` timed pairs of
/// `cmds` (ours, Go) alternately, each after the cell's cache reset.
#[expect(clippy::too_many_arguments)] // one cell's whole context, each used
pub(super) fn run_cell(
    ws: &Workspace,
    progress: &Progress,
    file_path: &Path,
    spec: CellSpec,
    label: String,
    cmds: (Cmd, Cmd),
    (warmup, runs): (usize, usize),
    (traces, scratch): (&std::cell::RefCell<Traces>, &Path),
) -> Result<CellResult> {
    let (ours_cmd, go_cmd) = cmds;
    let runs = cell_runs(spec.cache, runs);
    let settle = (spec.cache == CacheState::Cold && super::machine::reports_free_pages())
        .then_some(COLD_SETTLE);
    let phase = std::cell::Cell::new("warm-up");
    let mut before = |side, run| {
        let who = if side == schedule::Side::A {
            "ours"
        } else {
            "Go"
        };
        let of = if phase.get() == "run" { runs } else { warmup };
        progress.set(format!("{label}: {} {run}/{of}, {who}", phase.get()));
        // A warm pair shares one reset: see `WARM_MIN_RUNS`.
        let prep = if spec.cache == CacheState::Warm && side != schedule::first_in_pair(run) {
            schedule::recheck(file_path, spec.cache)?
        } else {
            schedule::prepare(file_path, spec.cache)?
        };
        if let Some(wait) = settle {
            std::thread::sleep(wait);
        }
        // Every warm run follows an untimed run of the same command: see
        // `WARM_MIN_RUNS`.
        if spec.cache == CacheState::Warm {
            let cmd = if side == schedule::Side::A {
                &ours_cmd
            } else {
                &go_cmd
            };
            cmd.run(&ws.root)?;
        }
        let off = match spec.cache {
            CacheState::Cold => prep.resident > 0.01,
            CacheState::Warm => prep.resident < 0.99,
        };
        if off {
            progress.note(&format!(
                "xtask: warning: {label} {} {run} ({who}) starts with {} of the file resident",
                phase.get(),
                pct(prep.resident)
            ));
        }
        Ok(prep)
    };
    // Every timed run is traced (`traces::cadence`).
    let timed = |side: &str, run: usize, cmd: &Cmd, prep, parse| {
        let go = || measure(cmd, &ws.root, file_path, prep, parse);
        let s = if phase.get() == "run" {
            traces
                .borrow_mut()
                .record(scratch, file_path, &label, side, run, go)
        } else {
            go()
        };
        progress.inc();
        s
    };
    let mut ours = |run, prep| timed("ours", run, &ours_cmd, prep, parse_ours);
    let mut go = |run, prep| timed("Go", run, &go_cmd, prep, parse_go);
    let warmup_pairs = schedule::alternate(warmup, &mut before, &mut ours, &mut go)?;
    phase.set("run");
    let pairs = schedule::alternate(runs, &mut before, &mut ours, &mut go)?;
    let summary = summarize(&pairs);
    Ok(CellResult {
        label,
        spec,
        ours_cmd: ours_cmd.shell(),
        go_cmd: go_cmd.shell(),
        warmup: warmup_pairs,
        pairs,
        summary,
    })
}

/// Runs one tool once, parses its timings and notes how much of the file
/// it left resident.
fn measure(
    cmd: &Cmd,
    cwd: &Path,
    file: &Path,
    prep: Prepared,
    parse: fn(&str) -> Result<Timing, String>,
) -> Result<Sample> {
    let out = cmd.run(cwd)?;
    let timing = parse(&out.stdout).map_err(|e| anyhow::anyhow!("`{}`: {e}", cmd.shell()))?;
    let resident_after = pagecache::resident_fraction(file)?;
    Ok(Sample {
        timing,
        wall_s: out.wall_s,
        prep,
        resident_after,
        max_rss_kib: out.max_rss_kib,
        stdout: out.stdout,
    })
}

/// The cached bbolt file: `target/bench/files/bolt-big-seed<S>-<SIZE>.db`
/// (`…-<SIZE>-batch<B>.db` when `batch` sets the generator's puts per
/// transaction, `gen --batch`), generated by the oracle under a temporary
/// name and renamed into place when missing; `<file>.gen.txt` keeps the
/// command and its output.
pub fn ensure_file(
    ws: &Workspace,
    oracle: &str,
    (size, batch): (u64, Option<u64>),
    seed: u64,
    progress: &Progress,
) -> Result<FileInfo> {
    let dir = ws.bench_dir().join("files");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = match batch {
        None => format!("bolt-big-seed{seed}-{}.db", format_size(size)),
        Some(b) => format!("bolt-big-seed{seed}-{}-batch{b}.db", format_size(size)),
    };
    let path = dir.join(&name);
    let sidecar = dir.join(format!("{name}.gen.txt"));
    let gen_cmd = |p: &Path| {
        Cmd::new(oracle.to_owned())
            .arg("gen")
            .arg(path_arg(p))
            .arg("--shape")
            .arg("big")
            .arg("--seed")
            .arg(seed.to_string())
            .arg("--size")
            .arg(format_size(size))
            .arg_if(batch.is_some(), "--batch")
            .arg_if(batch.is_some(), batch.unwrap_or_default().to_string())
    };
    let generated_now = !path.is_file();
    let (cmd_line, gen_output) = if generated_now {
        progress.note(&format!(
            "xtask: generating {} with Go bbolt (cached for later runs)",
            path.display()
        ));
        let tmp = TempPath::new(dir.join(format!(".{name}.tmp-{}", std::process::id())));
        let cmd = gen_cmd(tmp.path());
        let out = cmd
            .run(&ws.root)
            .context("cannot generate the bbolt file")?;
        let line = format!("{}  # then renamed to {}", cmd.shell(), path.display());
        fs::write(&sidecar, format!("# {line}\n{}", out.stdout))?;
        interrupt::check()?;
        fs::rename(tmp.path(), &path)
            .with_context(|| format!("cannot rename into {}", path.display()))?;
        let _ = tmp.keep();
        (line, out.stdout)
    } else {
        match fs::read_to_string(&sidecar) {
            Ok(text) => {
                let (first, rest) = text.split_once('\n').unwrap_or((text.as_str(), ""));
                (first.trim_start_matches("# ").to_owned(), rest.to_owned())
            }
            Err(_) => (
                format!(
                    "{}  # (cached; no record of how it was made)",
                    gen_cmd(&path).shell()
                ),
                String::new(),
            ),
        }
    };
    let bytes = fs::metadata(&path)?.len();
    Ok(FileInfo {
        path: path_arg(&path),
        bytes,
        generated_now,
        gen_cmd: cmd_line,
        expected_keys: parse_gen_entries(&gen_output),
        gen_output,
    })
}

fn summarize(pairs: &[Pair<Sample>]) -> CellSummary {
    let col = |f: &dyn Fn(&Sample) -> f64, ours: bool| {
        let v: Vec<f64> = pairs
            .iter()
            .map(|p| f(if ours { &p.a } else { &p.b }))
            .collect();
        Summary::of(&v)
    };
    let took: Vec<(f64, f64)> = pairs
        .iter()
        .map(|p| (p.a.timing.took_s, p.b.timing.took_s))
        .collect();
    let (ratios, ratio_skipped) = pair_ratios(&took);
    let scan: Vec<(f64, f64)> = pairs
        .iter()
        .map(|p| (p.a.timing.scan_s, p.b.timing.scan_s))
        .collect();
    let (scan_ratios, _) = pair_ratios(&scan);
    let resident: Vec<f64> = pairs
        .iter()
        .flat_map(|p| [p.a.prep.resident, p.b.prep.resident])
        .collect();
    let mut key_counts: Vec<u64> = pairs
        .iter()
        .flat_map(|p| [p.a.timing.keys, p.b.timing.keys])
        .collect();
    key_counts.sort_unstable();
    key_counts.dedup();
    CellSummary {
        ours_took: col(&|s| s.timing.took_s, true),
        go_took: col(&|s| s.timing.took_s, false),
        ratio_took: Summary::of(&ratios),
        ratio_skipped,
        ours_open: col(&|s| s.timing.open_s, true),
        ours_scan: col(&|s| s.timing.scan_s, true),
        go_open: col(&|s| s.timing.open_s, false),
        go_scan: col(&|s| s.timing.scan_s, false),
        ratio_scan: Summary::of(&scan_ratios),
        ours_wall: col(&|s| s.wall_s, true),
        go_wall: col(&|s| s.wall_s, false),
        resident: Summary::of(&resident),
        ours_resident_after: col(&|s| s.resident_after, true),
        go_resident_after: col(&|s| s.resident_after, false),
        key_counts,
    }
}

fn residency_bench(
    ws: &Workspace,
    build: &super::proc::Output,
    build_cmd: &Cmd,
    runs: usize,
    progress: &Progress,
) -> Result<ResidencyBench> {
    let inspector = ws.release_bin("inspector");
    let sparse = ws
        .bench_dir()
        .join(format!("sparse-64GiB-{}.img", std::process::id()));
    let truncate = Cmd::new("truncate")
        .arg("-s")
        .arg("64G")
        .arg(path_arg(&sparse));
    let cmd = Cmd::new(path_arg(&inspector))
        .arg("residency")
        .arg(path_arg(&sparse))
        .arg("--json");
    let remove = Cmd::new("rm").arg("-f").arg(path_arg(&sparse));
    let mut bench = ResidencyBench {
        status: "missing".to_owned(),
        detail: None,
        commands: vec![truncate.shell(), cmd.shell(), remove.shell()],
        sparse_bytes: SPARSE_BYTES,
        runs: Vec::new(),
        wall: None,
    };
    let skip = |bench: &mut ResidencyBench, detail: String| {
        bench.detail = Some(detail);
        for _ in 0..runs {
            progress.inc();
        }
    };
    if !build.success {
        let first_error = build
            .stderr
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or("")
            .trim()
            .to_owned();
        skip(
            &mut bench,
            format!("`{}` failed: {first_error}", build_cmd.shell()),
        );
        return Ok(bench);
    }
    if !inspector.is_file() {
        skip(
            &mut bench,
            format!("no {} after the build", inspector.display()),
        );
        return Ok(bench);
    }
    let guard = TempPath::new(sparse.clone());
    truncate.run(&ws.root)?;
    let mut failure = None;
    for run in 1..=runs {
        progress.set(format!(
            "inspector residency, 64 GiB sparse, run {run}/{runs}"
        ));
        progress.inc();
        if failure.is_some() {
            continue;
        }
        let out = cmd.output(&ws.root)?;
        if out.success {
            bench.runs.push(ResidencyRun {
                wall_s: out.wall_s,
                stdout: out.stdout.chars().take(4096).collect(),
            });
        } else {
            let msg = tail(&out.stderr, 3).replace('\n', " / ");
            failure = Some(format!("{} ({}): {msg}", cmd.shell(), out.status));
        }
    }
    drop(guard);
    if let Some(f) = failure {
        // clap's "unrecognized subcommand" means the subcommand is not written yet.
        bench.status = if f.contains("unrecognized subcommand") {
            "missing"
        } else {
            "failed"
        }
        .to_owned();
        bench.detail = Some(f);
    } else {
        bench.status = "ok".to_owned();
        let walls: Vec<f64> = bench.runs.iter().map(|r| r.wall_s).collect();
        bench.wall = Summary::of(&walls);
    }
    Ok(bench)
}

/// Median-of-ratios verdict against "ours ≤ 1.0× Go bbolt".
pub fn verdict(ratio: Option<&Summary>) -> String {
    ratio.map_or_else(
        || "no verdict (no ratio: Go's time printed as 0.000 s)".to_owned(),
        |r| at_most_verdict(r, 1.0, "ours ", " Go bbolt"),
    )
}

/// The report's `## Machine` section with Go's and bbolt's versions
/// (shared with `bench bolt`).
pub(super) fn machine_section(
    m: &Machine,
    versions: &Versions,
    loadavg_end: Option<&String>,
) -> String {
    let na = || "unknown".to_owned();
    let bbolt = format!(
        "{} (oracle README); Debian package golang-github-coreos-bbolt-dev {}",
        versions.bbolt_readme.clone().unwrap_or_else(na),
        versions.bbolt_package.clone().unwrap_or_else(na)
    );
    m.section(
        "the file",
        &[("Go", m.go_version.clone()), ("bbolt", Some(bbolt))],
        loadavg_end.map(String::as_str),
    )
}

/// The seed's own figures (boltdb/bolt pull request 455, Nov 2015: a 2 GB
/// file read in full after dropping the page cache, without and with
/// `MAP_POPULATE`) beside this run's cold medians: the first cold cell of
/// `cells` without and the first with populate, on a file of `size`
/// (shared with `bench bolt`, which passes its plain scan cells).
pub(super) fn seed_section(o: &mut String, cells: &[&CellResult], size: &str) {
    let _ = writeln!(o, "## The seed's published figures\n");
    let _ = writeln!(
        o,
        "boltdb/bolt pull request 455 (2015), which added `MmapFlags`, timed a full read of a 2 GB file after \
         `echo 1 > /proc/sys/vm/drop_caches`, without and with `MAP_POPULATE`. Its figures beside this run's \
         cold medians (took = open + scan):\n"
    );
    let mut t = Table::new(&["machine", "file", ">without", ">with", ">without / with"]);
    t.row([
        "i7-4910MQ laptop, SSD, Linux 3.16, Go 1.5.1 (the seed)",
        "2 GB",
        "8 s",
        "4 s",
        "2.0×",
    ]);
    t.row([
        "1-vCPU cloud VM, HDD, Linux 3.16, Go 1.5.1 (the seed)",
        "2 GB",
        "130 s",
        "8 s",
        "16×",
    ]);
    let cold = |populate: bool| {
        cells
            .iter()
            .find(|c| c.spec.cache == CacheState::Cold && c.spec.populate == populate)
    };
    let mut speedups = Vec::new();
    if let (Some(plain), Some(pop)) = (cold(false), cold(true)) {
        for (who, a, b) in [
            (
                "ours",
                plain.summary.ours_took.as_ref(),
                pop.summary.ours_took.as_ref(),
            ),
            (
                "Go bbolt",
                plain.summary.go_took.as_ref(),
                pop.summary.go_took.as_ref(),
            ),
        ] {
            if let (Some(a), Some(b)) = (a, b) {
                let x = a.median / b.median.max(1e-9);
                speedups.push(x);
                t.row([
                    format!("this machine, {who}"),
                    size.to_owned(),
                    fmt_secs(a.median),
                    fmt_secs(b.median),
                    format!("{x:.1}×"),
                ]);
            }
        }
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\n{}\n",
        if speedups.is_empty() {
            "No cold cells ran, so there is nothing to set beside the seed's figures.".to_owned()
        } else if speedups.iter().all(|&x| x > 1.0) {
            "What matches: on a cold cache `MAP_POPULATE` wins for both tools, as in the seed. The size of the \
             win depends on the device's latency and on read-ahead: bbolt maps with `MADV_RANDOM`, so a plain \
             scan faults one page at a time (the seed's HDD paid a seek each), while populate reads the file \
             sequentially with read-ahead. The residency chart below shows it: populate fills the cache before \
             the scan, the plain scan fills it behind the cursor."
                .to_owned()
        } else {
            "What differs: on this machine `MAP_POPULATE` did not win on a cold cache for every tool; the \
             device here (see read_ahead_kb and the O_DIRECT limit below) serves single-page faults fast enough \
             that reading the whole file up front does not pay."
                .to_owned()
        }
    );
}

/// The markdown report.
#[expect(clippy::too_many_lines)]
fn render(r: &Results) -> String {
    let m = &r.machine;
    let mut o = String::new();
    let na = || "unknown".to_owned();
    let _ = writeln!(o, "# bench bolt-scan — {}\n", r.started_utc);
    let _ = writeln!(
        o,
        "The MAP_POPULATE experiment boltdb/bolt's maintainers reported, re-run: read-only cursor scan over every key of \
         bucket `{}` of a bbolt file made by Go bbolt, **ours** (`mapwise bolt traverse`) vs **Go bbolt {}** \
         (the oracle's `traverse`), {} run{} each per cell ({} in a warm cell), alternating ours and Go, the order turning every pair (ours, Go; Go, ours; …). \
         Finished {}.\n",
        r.bucket,
        r.versions.bbolt_readme.clone().unwrap_or_else(na),
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        cell_runs(CacheState::Warm, r.runs),
        r.finished_utc,
    );

    o.push_str(&machine_section(m, &r.versions, r.loadavg_end.as_ref()));

    let f = &r.file;
    let _ = writeln!(
        o,
        "\n## File\n\n`{}`: {} ({} bytes), {} keys; {}.\n",
        f.path,
        human_size(f.bytes),
        f.bytes,
        f.expected_keys
            .map_or_else(|| "unknown number of".to_owned(), |k| k.to_string()),
        if f.generated_now {
            "generated by this run"
        } else {
            "taken from the cache (generated by an earlier run)"
        },
    );

    let _ = writeln!(o, "## Method\n");
    let _ = writeln!(
        o,
        "- **cold**: before every single run (ours and Go alike) xtask itself opens the file, `fsync`s it and calls \
         `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)` over the whole file; the tools' own `--cold` is not used. \
         **warm**: before every pair (the two runs of a pair share it) xtask evicts the file as for cold, then reads it whole once with \
         `read(2)` into a 1 MiB buffer, so every warm run starts from the same page cache: the folios a \
         sequential read leaves (large ones, with read-ahead), which a mapping maps a folio per fault, not \
         the single pages a previous `MADV_RANDOM` scan left, mapped 16 per fault (a warm 2 GiB scan: \
         ~1.4k against ~33k faults, ~60 against ~140 ms). \
         After each reset xtask measures the resident fraction with `mincore` (column *resident at start*). \
         {}\
         A warm cell runs at least {WARM_MIN_RUNS} pairs, and both runs of a pair share one reset (the second \
         shows a prep time of 0): a warm scan takes a twentieth of a second, but from one reset to the next it \
         varies up to 15× in both tools alike, mostly after a warming read that was itself slow (the memory it \
         landed in had gone back to the VM host and was faulted in again there, in small host pages that make \
         every TLB miss of the scan dearer). A reset per run made each pair ratio a ratio of two draws of that \
         state; sharing it compares both tools on the same memory. Right before every warm run (both sides, \
         after the reset or the re-check) xtask runs the same command once untimed: the first process after \
         a pause of ~2 s gets memory (page tables, heap) that has gone back to the VM host and took \
         170-270 ms instead of ~30 ms about half the time, a penalty that fell on whichever tool ran first in \
         the pair; after its own untimed run every warm run of either tool is a repeated scan of a cached file.\n\
         - **MAP_POPULATE**: `--populate` on both tools (bbolt `Options.MmapFlags = syscall.MAP_POPULATE`); \
         both map with `madvise(MADV_RANDOM)` after `mmap`, as bbolt does.\n\
         - **took** = open + scan as each tool times itself (Go: `took:` line, printed in whole ms; ours: `took_s`). \
         The split is Go's `open:`/`traverse:` and ours' `open_s`/`traverse_s`.\n\
         - Within a cell, runs alternate ours and Go, the order turning every pair (ours, Go; Go, ours; …), so \
         what a run leaves behind lands on both tools; ratio = ours/Go computed **pair by pair**, shown as \
         median [min–max]. Times are median [min–max].\n\
         - {}: the first run after a change of cell pays for what the previous cell left behind (seen while \
         this bench was built: the first cold MAP_POPULATE run after the cold plain-mmap cell took up to 6× as long \
         as the next ones, in both tools, without a single major fault; this run's warm-up pairs are in \
         results.json), and ours, first in the first pair, would pay it alone.\n",
        if r.machine
            .free_page_reporting
            .as_deref()
            .is_some_and(|f| f.starts_with("on"))
        {
            format!(
                "This machine reports free pages to its VM host, so after a cold reset xtask waits {} s before \
                 the run: the evicted page cache goes back to the host about 2 s after it is freed, and memory \
                 the guest reuses after that costs a host-side fault at its first touch. Started at once, a run \
                 got a random mix (a cold 2 GiB MAP_POPULATE scan took 0.2 s or 3–4 s after its populate, in \
                 both tools, by luck); after the wait every cold run of both tools starts from the same state. ",
                COLD_SETTLE.as_secs()
            )
        } else {
            String::new()
        },
        if r.warmup == 0 {
            "No warm-up pairs (`--warmup 0`)".to_owned()
        } else {
            format!(
                "Each cell starts with {} untimed warm-up pair{} (same reset before each run; listed below the \
                 split, raw in results.json)",
                r.warmup,
                if r.warmup == 1 { "" } else { "s" }
            )
        }
    );

    let _ = writeln!(o, "## Commands\n\nRun from the workspace root.\n\n```sh");
    for c in &r.build_commands {
        let _ = writeln!(o, "{c}");
    }
    let _ = writeln!(o, "{}", f.gen_cmd);
    let mut seen = Vec::new();
    for c in &r.cells {
        if !seen.contains(&c.ours_cmd) {
            let _ = writeln!(o, "{}\n{}", c.ours_cmd, c.go_cmd);
            seen.push(c.ours_cmd.clone());
        }
    }
    for c in &r.residency.commands {
        let _ = writeln!(o, "{c}");
    }
    let _ = writeln!(o, "```\n");

    let _ = writeln!(o, "## Results: took = open + scan\n");
    let mut t = Table::new(&["cell", ">ours", ">Go bbolt", ">ours/Go (per pair)"]);
    for c in &r.cells {
        let s = &c.summary;
        let mut ratio = opt_ratio(s.ratio_took.as_ref());
        if s.ratio_skipped > 0 {
            let _ = write!(ratio, " ({} pair(s) without ratio)", s.ratio_skipped);
        }
        t.row([
            c.label.clone(),
            opt_secs(s.ours_took.as_ref()),
            opt_secs(s.go_took.as_ref()),
            ratio,
        ]);
    }
    o.push_str(&t.render());

    let _ = writeln!(
        o,
        "\n### Open / scan split (medians), process wall time, cache state\n"
    );
    let mut t = Table::new(&[
        "cell",
        ">ours open",
        ">Go open",
        ">ours scan",
        ">Go scan",
        ">scan ours/Go",
        ">ours wall",
        ">Go wall",
        ">resident at start",
        ">resident after (ours / Go)",
        ">keys",
    ]);
    for c in &r.cells {
        let s = &c.summary;
        t.row([
            c.label.clone(),
            opt_median(s.ours_open.as_ref()),
            opt_median(s.go_open.as_ref()),
            opt_median(s.ours_scan.as_ref()),
            opt_median(s.go_scan.as_ref()),
            s.ratio_scan
                .as_ref()
                .map_or_else(|| "—".to_owned(), |x| format!("{:.2}×", x.median)),
            opt_median(s.ours_wall.as_ref()),
            opt_median(s.go_wall.as_ref()),
            s.resident.as_ref().map_or_else(
                || "—".to_owned(),
                |x| {
                    if (x.max - x.min).abs() < 5e-4 {
                        pct(x.min)
                    } else {
                        format!("{}–{}", pct(x.min), pct(x.max))
                    }
                },
            ),
            s.resident_after_text(),
            s.keys_text(),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\n*wall* = spawn to exit as seen by xtask: process start-up and exit for both, plus for Go the peer \
         script's checks (dpkg-query, source hash) before it execs the binary; not part of `took`. \
         *resident after*: fraction of the file in the page cache right after the run (median), i.e. what the \
         tool read in (cold) or left in place (warm).\n"
    );
    if r.warmup > 0 {
        let _ = writeln!(
            o,
            "Warm-up pairs (not in the statistics), took ours / Go:\n"
        );
        for c in &r.cells {
            let runs: Vec<String> = c
                .warmup
                .iter()
                .map(|p| {
                    format!(
                        "{} / {}",
                        fmt_secs(p.a.timing.took_s),
                        fmt_secs(p.b.timing.took_s)
                    )
                })
                .collect();
            let _ = writeln!(o, "- {}: {}", c.label, runs.join("; "));
        }
        o.push('\n');
    }

    seed_section(&mut o, &r.cells.iter().collect::<Vec<_>>(), &r.size);
    let _ = writeln!(o, "## Charts and residency traces\n");
    for (file, what) in CHARTS {
        if r.charts.iter().any(|c| c == file) {
            let _ = writeln!(o, "![{what}]({file})\n");
        }
    }
    let _ = writeln!(
        o,
        "Every timed run was traced: the file's residency {}; {} traces in `traces/`. \
         Play one with `inspector replay traces/<cell>-<tool>-<run>.trace --file {}` \
         (or load it beside the file in the browser viewer).\n",
        super::traces::cadence(),
        r.traces.len(),
        r.file.path
    );
    limits::section(&mut o, &r.limits);
    let rs = &r.residency;
    let (time, note) = match rs.status.as_str() {
        "ok" => {
            let pass = rs
                .wall
                .as_ref()
                .is_some_and(|w| w.median < RESIDENCY_TARGET_S);
            let said = rs
                .runs
                .first()
                .and_then(|run| serde_json::from_str::<serde_json::Value>(&run.stdout).ok())
                .and_then(|v| {
                    Some((
                        v.get("resident_pages")?.as_u64()?,
                        v.get("total_pages")?.as_u64()?,
                    ))
                })
                .map_or_else(String::new, |(res, total)| {
                    format!("; it reported {res} of {total} pages resident")
                });
            (
                opt_secs(rs.wall.as_ref()),
                format!(
                    "target < {RESIDENCY_TARGET_S} s: {} (wall time of the whole process, median of {}){said}",
                    if pass { "PASS" } else { "FAIL" },
                    rs.runs.len()
                ),
            )
        }
        other => (
            "—".to_owned(),
            format!("{other}: {}", rs.detail.clone().unwrap_or_default()),
        ),
    };
    let mut t = Table::new(&["what", ">time", "notes"]);
    t.row([
        format!(
            "`inspector residency`, {} sparse file",
            human_size(rs.sparse_bytes)
        ),
        time,
        note,
    ]);
    let _ = writeln!(o, "## Residency of a sparse file\n");
    o.push_str(&t.render());

    let _ = writeln!(o, "\n## Verdicts (target: ours ≤ 1.0× Go bbolt, took)\n");
    for c in &r.cells {
        let s = &c.summary;
        let mut line = format!("- **{}**: {}", c.label, verdict(s.ratio_took.as_ref()));
        if s.ratio_took.as_ref().is_some_and(|x| x.median > 1.0) {
            let d = |a: Option<&Summary>, b: Option<&Summary>| match (a, b) {
                (Some(a), Some(b)) => {
                    let v = a.median - b.median;
                    format!("{}{}", if v >= 0.0 { "+" } else { "−" }, fmt_secs(v.abs()))
                }
                _ => "?".to_owned(),
            };
            let _ = write!(
                line,
                "; ours − Go at the median: took {}, open {}, scan {}",
                d(s.ours_took.as_ref(), s.go_took.as_ref()),
                d(s.ours_open.as_ref(), s.go_open.as_ref()),
                d(s.ours_scan.as_ref(), s.go_scan.as_ref())
            );
        }
        if let Some(go) = s.go_took.as_ref().filter(|g| g.median < 0.05) {
            let _ = write!(
                line,
                " (Go prints whole ms: at {} its rounding alone moves the ratio by up to ±{:.0} %)",
                fmt_secs(go.median),
                0.05 / go.median.max(1e-3)
            );
        }
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(
        o,
        "- **key counts**: {}",
        if r.keys_agree {
            format!(
                "ours and Go agree in every run ({} keys{})",
                r.cells
                    .first()
                    .and_then(|c| c.summary.key_counts.first())
                    .map_or_else(na, u64::to_string),
                if r.file.expected_keys.is_some() {
                    ", as generated"
                } else {
                    ""
                }
            )
        } else {
            "**MISMATCH** — see the keys column and results.json".to_owned()
        }
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_json_parses() {
        let out = r#"{"advice":"random","cold":false,"file_bytes":30941184,"keys":20000,"mlock":false,"open_s":0.000029289,"populate":false,"took_s":0.002935657,"touch":false,"traverse_s":0.002906368,"value_bytes":10922035}"#;
        let t = parse_ours(&format!("{out}\n")).unwrap();
        assert_eq!(
            t,
            Timing {
                open_s: 0.000_029_289,
                scan_s: 0.002_906_368,
                took_s: 0.002_935_657,
                keys: 20000
            }
        );
        assert!(parse_ours("").is_err());
        assert!(parse_ours("{\"open_s\": 1}").is_err());
        assert!(
            parse_ours("warning: x\n{\"open_s\":1,\"traverse_s\":2,\"took_s\":3,\"keys\":4}\n")
                .is_ok()
        );
    }

    #[test]
    fn go_text_parses() {
        let out = "file: 30941184 bytes populate=true cold=false touch=false mlock=false\n\
                   open: 0.003s\n\
                   traverse: 0.001s keys=20000 value_bytes=10922035 xor=00\n\
                   took: 0.004s\n";
        let t = parse_go(out).unwrap();
        assert_eq!(
            t,
            Timing {
                open_s: 0.003,
                scan_s: 0.001,
                took_s: 0.004,
                keys: 20000
            }
        );
        // With --residency there are extra lines; order does not matter.
        let out = "resident-before: 0.0%\ntook: 4.321s\nopen: 0.000s\ntraverse: 4.321s keys=7\nresident-after: 100.0%\n";
        assert_eq!(
            parse_go(out).unwrap(),
            Timing {
                open_s: 0.0,
                scan_s: 4.321,
                took_s: 4.321,
                keys: 7
            }
        );
    }

    #[test]
    fn go_text_missing_parts_is_an_error() {
        assert!(
            parse_go("open: 0.003s\ntraverse: 0.001s keys=1\n")
                .unwrap_err()
                .contains("took")
        );
        assert!(
            parse_go("open: 0.003s\ntraverse: 0.001s\ntook: 1s\n")
                .unwrap_err()
                .contains("keys")
        );
        assert!(
            parse_go("open: xs\ntraverse: 0.001s keys=1\ntook: 1s\n")
                .unwrap_err()
                .contains("open")
        );
        assert!(parse_go("boltoracle: traverse: open: timeout\n").is_err());
    }

    #[test]
    fn gen_entries() {
        let out = "gen big: entries=200000 payload=1 bytes keys=sorted vsize=[64,1024] fill=0.50\ngen: shape=big\n";
        assert_eq!(parse_gen_entries(out), Some(200_000));
        assert_eq!(parse_gen_entries("gen: shape=small"), None);
    }

    #[test]
    fn verdicts() {
        let s = |v: &[f64]| Summary::of(v).unwrap();
        assert!(verdict(Some(&s(&[0.8, 0.9, 0.95]))).starts_with("PASS — ours 0.90×"));
        assert_eq!(
            verdict(Some(&s(&[1.0]))),
            "PASS — ours 1.00× Go bbolt (median of 1 per-pair ratio, range 1.00–1.00)"
        );
        let v = verdict(Some(&s(&[0.9, 1.2, 1.3])));
        assert!(v.starts_with("FAIL — ours 1.20×"), "{v}");
        assert!(v.ends_with("straddles 1.0×"), "{v}");
        assert!(verdict(None).starts_with("no verdict"));
    }
}
