//! `cargo xtask bench mmaptest`: the read()-vs-mmap microbenchmark of the
//! 2003 PostgreSQL-list "mmap-test", ours (`mapwise mmaptest`) beside the
//! C reconstruction (`peers/mmaptest/mmaptest.c`, built here with
//! the README's -D flags), warm (one 72 KiB file, many iterations) and cold
//! (a list of files, one evicted pass), with and without touching the data.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::charts::{self, ChartFile, RatioBar};
use super::limits::{self, Limit};
use super::machine::{self, Machine};
use super::output::{self, Table, TempPath};
use super::pagecache::{self, ReadPass};
use super::proc::{Cmd, shell_quote, tail};
use super::schedule::{self, CacheState, Pair, Side};
use super::stats::{Summary, at_most_verdict, opt_median, opt_ratio, opt_secs, pair_ratios};
use super::traces::{TraceInfo, Traces};
use super::units::{format_size, human_size, mb_per_s, pct, utc_human};
use super::{CommonArgs, Progress, Workspace, interrupt, path_arg};

/// Long help of `cargo xtask bench mmaptest`.
pub const HELP: &str = "\
Builds ours (cargo build --release) and ten variants of the C
reconstruction into target/bench/mmaptest-c/ (cc -O2 -Wall with the
README's -D flags, each also with -DTOUCH), makes the input files once
(cached in target/bench/files/: a 72 KiB file and a list of cold files,
deterministic bytes), then, in each cell, after --warmup untimed pairs,
runs ours and C alternately (A B, B A, …, --runs pairs), stdout to /dev/null
as in the original:
  target/release/mapwise mmaptest --mode M [--read-size whole] [--populate]
      [--touch] --iterations N --json FILE… > /dev/null
  target/bench/mmaptest-c/VARIANT[+touch] -n N FILE… > /dev/null
Modes: read 64 KiB, read whole file, mmap+munmap per iteration (plain and
MAP_POPULATE), mmap once; each untouched (faithful: nothing reads a mapped
byte) and touching (every byte read). Cells: warm (the 72 KiB file, read
once by xtask before every run, --iterations passes) and cold (the list,
fsynced and posix_fadvise(DONTNEED)ed by xtask before every run, one pass).
Compared: the loop time each program measures itself (CLOCK_MONOTONIC
around the loop; files opened and, for mmap-once, mapped before it).
Then the limits: memcpy of 72 KiB in cache, memcpy of large buffers, and
the device and memory limits of the cold list (the warm file with --warm):
a cold O_DIRECT read and a cached read() of every file. One verdict per
cell against the target \"ours ≤ 1.2× C\" (median of per-pair ratios), and a
data check: bytes = file sizes × iterations on both sides, one checksum in
every touching run of ours, equal to the files' byte sum × iterations.

Every timed run is traced: the residency of each file it reads every
50 ms, one trace per file (traces/<cell>-<side>-<run>.trace, or a
directory of them for the cold list; `inspector replay T --file F`).
Charts beside REPORT.md: ratios.svg (ours/C per cell, the 1.2× target)
and residency-cold.svg (the cold list during the first touching run of
read() 64 KiB, mmap per iteration and mmap once, ours and C). The seed's
quoted (unverified) totals stand beside this run's ratios to mmap once,
with what matches and why.

  cargo xtask bench mmaptest [--quick | --full | --tiny] [--iterations N]
                             [--cold-files N] [--cold-size SIZE]
                             [--runs 5] [--warmup 1] [--warm | --cold]
                             [--out DIR]
  --quick (default): 20000 iterations warm, 16 × 16 MiB cold, about a minute.
  --full: the seed's 100000 iterations warm, 64 × 16 MiB (1 GiB) cold,
  a few minutes.
  --tiny: a smoke run (CI): 200 iterations warm, 2 × 1 MiB cold, an
  8 MiB memcpy; seconds. Its times mean nothing.";

/// The seed's file: 72 KiB.
const WARM_BYTES: u64 = 72 * 1024;
/// Target: ours ≤ this × C, per cell.
const TARGET: f64 = 1.2;

/// The inputs and counts of a preset (`--tiny`, `--quick`, `--full`;
/// `--iterations`, `--cold-files` and `--cold-size` override them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// `tiny`, `quick` or `full`.
    pub name: &'static str,
    /// Iterations of the warm cells over the 72 KiB file.
    pub iterations: u64,
    /// Files in the cold list.
    pub cold_files: u64,
    /// Bytes of each cold file.
    pub cold_size: u64,
    /// Buffer size of the large memcpy limit.
    pub memcpy_bytes: u64,
}

impl Preset {
    /// `--tiny` wins over `--full`; the default is `quick`.
    #[must_use]
    pub fn of(tiny: bool, full: bool) -> Preset {
        if tiny {
            Preset {
                name: "tiny",
                iterations: 200,
                cold_files: 2,
                cold_size: 1 << 20,
                memcpy_bytes: 8 << 20,
            }
        } else if full {
            Preset {
                name: "full",
                iterations: 100_000,
                cold_files: 64,
                cold_size: 16 << 20,
                memcpy_bytes: 64 << 20,
            }
        } else {
            Preset {
                name: "quick",
                iterations: 20_000,
                cold_files: 16,
                cold_size: 16 << 20,
                memcpy_bytes: 64 << 20,
            }
        }
    }
}

/// `bench mmaptest` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Quick matrix (the default): 20 000 iterations warm, 16 files of
    /// 16 MiB cold.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The seed's matrix: 100 000 iterations warm, 64 files of 16 MiB
    /// (1 GiB) cold.
    #[arg(long, conflicts_with = "tiny")]
    full: bool,
    /// Iterations of the warm cells (overrides --quick/--full).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "tiny")]
    iterations: Option<u64>,
    /// Files in the cold list (overrides --quick/--full).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4096), conflicts_with = "tiny")]
    cold_files: Option<u64>,
    /// Size of each cold file (binary units: 16MiB, 1GiB).
    #[arg(long, value_name = "SIZE", value_parser = super::units::parse_size, conflicts_with = "tiny")]
    cold_size: Option<u64>,
    /// Untimed pairs at the start of each cell (same reset before each
    /// run), kept in results.json only.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=100))]
    warmup: u64,
    /// Only the warm cells.
    #[arg(long, conflicts_with = "cold")]
    warm: bool,
    /// Only the cold cells.
    #[arg(long)]
    cold: bool,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// The modes of the matrix, each with its C variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Variant {
    Read64K,
    ReadWhole,
    MmapEach,
    MmapEachPopulate,
    MmapOnce,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::Read64K,
        Variant::ReadWhole,
        Variant::MmapEach,
        Variant::MmapEachPopulate,
        Variant::MmapOnce,
    ];

    fn label(self) -> &'static str {
        match self {
            Variant::Read64K => "read() 64 KiB",
            Variant::ReadWhole => "read() whole file",
            Variant::MmapEach => "mmap+munmap each",
            Variant::MmapEachPopulate => "mmap+munmap each, MAP_POPULATE",
            Variant::MmapOnce => "mmap once",
        }
    }

    /// Our flags for this mode.
    fn ours(self) -> &'static [&'static str] {
        match self {
            Variant::Read64K => &["--mode", "read", "--read-size", "65536"],
            Variant::ReadWhole => &["--mode", "read", "--read-size", "whole"],
            Variant::MmapEach => &["--mode", "mmap-each"],
            Variant::MmapEachPopulate => &["--mode", "mmap-each", "--populate"],
            Variant::MmapOnce => &["--mode", "mmap-once"],
        }
    }

    /// The C binary's name (as in run-matrix.sh) and its -D flags.
    fn c(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Variant::Read64K => ("read-64K", &["-DDEFAULT_READSIZE=65536"]),
            Variant::ReadWhole => ("read-whole", &["-DDEFAULT_READSIZE=0"]),
            Variant::MmapEach => ("mmap-per-iter", &["-DDO_MMAP"]),
            Variant::MmapEachPopulate => ("mmap-per-iter+populate", &["-DDO_MMAP", "-DPOPULATE"]),
            Variant::MmapOnce => ("mmap-once", &["-DDO_MMAP", "-DDO_MMAP_ONCE"]),
        }
    }

    fn c_name(self, touch: bool) -> String {
        let (name, _) = self.c();
        if touch {
            format!("{name}+touch")
        } else {
            name.to_owned()
        }
    }
}

/// A cell: cache state × mode × touch.
#[derive(Clone, Copy, Debug, Serialize)]
struct CellSpec {
    cache: CacheState,
    variant: Variant,
    touch: bool,
}

impl CellSpec {
    fn label(self) -> String {
        format!(
            "{}{}",
            self.variant.label(),
            if self.touch { ", touch" } else { "" }
        )
    }
}

/// What ours prints (`--json`, one object on stderr).
#[derive(Deserialize)]
struct OursJson {
    secs: f64,
    setup_secs: f64,
    bytes: u64,
    checksum: Option<u64>,
}

/// One program's figures for one run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Timing {
    /// Loop seconds as the program measures them.
    pub secs: f64,
    /// Bytes delivered (ours: counted; C: bytes/iter × iters).
    pub bytes: u64,
    /// Ours only: seconds of preparation before the loop.
    pub setup_secs: Option<f64>,
    /// Ours with touch: the byte sum.
    pub checksum: Option<u64>,
}

/// Parses ours: the last line of stderr that is a JSON object.
pub fn parse_ours(stderr: &str) -> Result<Timing, String> {
    let line = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("no JSON object in output {:?}", tail(stderr, 3)))?;
    let j: OursJson =
        serde_json::from_str(line).map_err(|e| format!("bad JSON from mapwise: {e}: {line}"))?;
    Ok(Timing {
        secs: j.secs,
        bytes: j.bytes,
        setup_secs: Some(j.setup_secs),
        checksum: j.checksum,
    })
}

/// Parses the C line: `… bytes/iter=B iters=N wall=W s  U us/iter …`. The
/// loop time is U × N (µs with three decimals: far finer than `wall=`).
pub fn parse_c(stderr: &str) -> Result<Timing, String> {
    let line = stderr
        .lines()
        .find(|l| l.contains(" us/iter"))
        .ok_or_else(|| format!("no `us/iter` line in {:?}", tail(stderr, 3)))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let field = |key: &str| {
        words
            .iter()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| format!("no `{key}N` in {line:?}"))
    };
    let per_iter = field("bytes/iter=")?;
    let iters = field("iters=")?;
    let us = words
        .iter()
        .position(|&w| w == "us/iter")
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| words.get(i))
        .and_then(|w| w.parse::<f64>().ok())
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("no `U us/iter` in {line:?}"))?;
    #[expect(clippy::cast_precision_loss)]
    let secs = us * iters as f64 / 1e6;
    Ok(Timing {
        secs,
        bytes: per_iter
            .checked_mul(iters)
            .ok_or_else(|| format!("byte count overflows in {line:?}"))?,
        setup_secs: None,
        checksum: None,
    })
}

/// The page-cache reset before one run, over the whole file list.
#[derive(Clone, Copy, Debug, Serialize)]
struct Prepared {
    state: CacheState,
    /// Seconds the eviction or warming took.
    prep_s: f64,
    /// Resident fraction of the list right after (mincore), 0–1.
    resident: f64,
}

fn prepare(files: &[PathBuf], state: CacheState) -> Result<Prepared> {
    let start = Instant::now();
    for f in files {
        match state {
            CacheState::Cold => pagecache::evict(f)?,
            CacheState::Warm => {
                pagecache::read_whole(f, false)?;
            }
        }
    }
    let prep_s = start.elapsed().as_secs_f64();
    Ok(Prepared {
        state,
        prep_s,
        resident: resident(files)?,
    })
}

/// One run of one program.
#[derive(Debug, Serialize)]
struct Sample {
    #[serde(flatten)]
    timing: Timing,
    /// Spawn to exit as seen by xtask.
    wall_s: f64,
    prep: Prepared,
    /// Resident fraction of the list right after the run (mincore).
    resident_after: f64,
    /// What the program printed on stderr.
    stderr: String,
}

/// A command whose stdout goes to /dev/null (the data stream), with its
/// stderr captured.
#[derive(Clone, Debug)]
struct NullCmd {
    program: String,
    args: Vec<String>,
}

impl NullCmd {
    fn new(program: String, args: Vec<String>) -> Self {
        Self { program, args }
    }

    /// The line for the report, with the redirection.
    fn shell(&self) -> String {
        let mut c = Cmd::new(self.program.clone());
        for a in &self.args {
            c = c.arg(a.clone());
        }
        format!("{} > /dev/null", c.shell())
    }

    /// Runs to completion; a failing exit is an error quoting stderr.
    fn run(&self, cwd: &Path) -> Result<(String, f64)> {
        interrupt::check()?;
        let start = Instant::now();
        let devnull = File::create("/dev/null").context("cannot open /dev/null")?;
        let mut child = std::process::Command::new(&self.program)
            .args(&self.args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(devnull)
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", self.program))?;
        let mut err = Vec::new();
        if let Some(mut e) = child.stderr.take() {
            e.read_to_end(&mut err).context("reading stderr")?;
        }
        let status = child.wait().context("waiting for the child")?;
        let wall_s = start.elapsed().as_secs_f64();
        interrupt::check()?;
        let stderr = String::from_utf8_lossy(&err).into_owned();
        if !status.success() {
            bail!(
                "`{}` failed ({status}):\n{}",
                self.shell(),
                tail(&stderr, 20)
            );
        }
        Ok((stderr, wall_s))
    }
}

fn measure(
    cmd: &NullCmd,
    cwd: &Path,
    files: &[PathBuf],
    prep: Prepared,
    parse: fn(&str) -> Result<Timing, String>,
) -> Result<Sample> {
    let (stderr, wall_s) = cmd.run(cwd)?;
    let timing = parse(&stderr).map_err(|e| anyhow::anyhow!("`{}`: {e}", cmd.shell()))?;
    let resident_after = resident(files)?;
    Ok(Sample {
        timing,
        wall_s,
        prep,
        resident_after,
        stderr,
    })
}

/// Mean resident fraction (mincore) of the files.
fn resident(files: &[PathBuf]) -> Result<f64> {
    let mut sum = 0.0;
    for f in files {
        sum += pagecache::resident_fraction(f)?;
    }
    #[expect(clippy::cast_precision_loss)]
    Ok(sum / files.len().max(1) as f64)
}

/// Summaries of a cell.
#[derive(Debug, Serialize)]
struct CellSummary {
    ours: Option<Summary>,
    c: Option<Summary>,
    /// ours/C loop time, pair by pair.
    ratio: Option<Summary>,
    /// Pairs without a ratio (C measured 0).
    ratio_skipped: usize,
    ours_setup: Option<Summary>,
    ours_wall: Option<Summary>,
    c_wall: Option<Summary>,
    /// Resident fraction after the reset, over all runs.
    resident: Option<Summary>,
    /// Resident fraction right after ours' runs.
    ours_resident_after: Option<Summary>,
    /// Resident fraction right after C's runs.
    c_resident_after: Option<Summary>,
}

#[derive(Debug, Serialize)]
struct CellResult {
    label: String,
    #[serde(flatten)]
    spec: CellSpec,
    iterations: u64,
    ours_cmd: String,
    c_cmd: String,
    warmup: Vec<Pair<Sample>>,
    /// `a` = ours (first in odd-numbered pairs), `b` = C.
    pairs: Vec<Pair<Sample>>,
    summary: CellSummary,
}

#[derive(Debug, Serialize)]
struct Inputs {
    warm_file: String,
    warm_bytes: u64,
    warm_byte_sum: u64,
    cold_files: Vec<String>,
    cold_file_bytes: u64,
    cold_byte_sum: u64,
    /// The cold list in bash brace form, for the report's command lines.
    cold_glob: String,
    /// Made during this bench (otherwise taken from the cache).
    generated_now: usize,
}

#[derive(Debug, Serialize)]
struct Check {
    what: String,
    ok: bool,
    detail: String,
}

/// Everything results.json holds; the report is rendered from it.
#[derive(Debug, Serialize)]
struct Results {
    bench: &'static str,
    sides: [(&'static str, &'static str); 2],
    started_utc: String,
    finished_utc: String,
    preset: &'static str,
    iterations: u64,
    runs: usize,
    warmup: usize,
    machine: Machine,
    cc_version: Option<String>,
    loadavg_end: Option<String>,
    c_source: String,
    inputs: Inputs,
    build_commands: Vec<String>,
    cells: Vec<CellResult>,
    /// memcpy in xtask, then the device (cold O_DIRECT) and memory
    /// (cached read()) limits of the cold list, or of the warm file when no
    /// cold cell ran.
    limits: Vec<Limit>,
    checks: Vec<Check>,
    /// Residency traces of the timed runs (files in `traces/`).
    traces: Vec<TraceInfo>,
    /// SVG charts beside the report.
    charts: Vec<ChartFile>,
    /// The report's paragraph on the traces.
    #[serde(skip)]
    traces_paragraph: Option<String>,
}

/// Runs the bench.
#[expect(clippy::too_many_lines)]
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = usize::try_from(args.common.runs).context("--runs too large")?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let preset = Preset::of(args.common.tiny, args.full);
    let iterations = args.iterations.unwrap_or(preset.iterations);
    let cold_n = args.cold_files.unwrap_or(preset.cold_files);
    let cold_size = args.cold_size.unwrap_or(preset.cold_size);
    let caches: &[CacheState] = if args.warm {
        &[CacheState::Warm]
    } else if args.cold {
        &[CacheState::Cold]
    } else {
        &[CacheState::Warm, CacheState::Cold]
    };
    let cells: Vec<CellSpec> = caches
        .iter()
        .flat_map(|&cache| {
            Variant::ALL.into_iter().flat_map(move |variant| {
                [false, true].map(|touch| CellSpec {
                    cache,
                    variant,
                    touch,
                })
            })
        })
        .collect();
    mapwise_testkit::install::try_ensure(&[mapwise_testkit::install::Need::Cc])
        .map_err(anyhow::Error::msg)?;
    let source = ws.peer_file("mmaptest/mmaptest.c")?;
    let limit_passes = runs.max(3);
    let steps = 3 + cells.len() * (warmup + runs) * 2 + 1 + limits::steps(limit_passes);
    let progress = Progress::new(steps as u64);

    // Builds.
    let build_ours = Cmd::cargo_release("mapwise-cli", Some("mapwise"));
    progress.set("building mapwise (release)");
    build_ours.run(&ws.root).context("cannot build ours")?;
    let mapwise = ws.release_bin("mapwise");
    if !mapwise.is_file() {
        bail!("{} missing after the build", mapwise.display());
    }
    progress.inc();
    progress.set("building the C reconstruction");
    let c_dir = ws.bench_dir().join("mmaptest-c");
    fs::create_dir_all(&c_dir).with_context(|| format!("cannot create {}", c_dir.display()))?;
    let mut build_commands = vec![build_ours.shell()];
    for v in Variant::ALL {
        for touch in [false, true] {
            let (_, flags) = v.c();
            let mut cmd = Cmd::new("cc").arg("-O2").arg("-Wall");
            for f in flags {
                cmd = cmd.arg(*f);
            }
            let cmd = cmd
                .arg_if(touch, "-DTOUCH")
                .arg("-o")
                .arg(path_arg(&c_dir.join(v.c_name(touch))))
                .arg(source.clone());
            cmd.run(&ws.root).context("cannot build the C variant")?;
            build_commands.push(cmd.shell());
        }
    }
    progress.inc();

    // Inputs.
    progress.set("input files");
    let inputs = ensure_inputs(ws, cold_n, cold_size, &progress)?;
    progress.inc();
    let warm_files = vec![PathBuf::from(&inputs.warm_file)];
    let cold_files: Vec<PathBuf> = inputs.cold_files.iter().map(PathBuf::from).collect();
    let machine = Machine::describe(&warm_files[0]);

    // The cells; every timed run is traced (each file's residency every
    // 50 ms).
    let mut traces = Traces::new();
    let scratch = ws.bench_dir().join("scratch");
    let mut cell_results = Vec::with_capacity(cells.len());
    for spec in &cells {
        let (files, n) = match spec.cache {
            CacheState::Warm => (&warm_files, iterations),
            CacheState::Cold => (&cold_files, 1),
        };
        let file_args: Vec<String> = files.iter().map(|p| path_arg(p)).collect();
        let mut ours_args: Vec<String> = std::iter::once("mmaptest")
            .chain(spec.variant.ours().iter().copied())
            .map(str::to_owned)
            .collect();
        if spec.touch {
            ours_args.push("--touch".to_owned());
        }
        ours_args.extend([
            "--iterations".to_owned(),
            n.to_string(),
            "--json".to_owned(),
        ]);
        ours_args.extend(file_args.iter().cloned());
        let ours_cmd = NullCmd::new(path_arg(&mapwise), ours_args);
        let mut c_args = vec!["-n".to_owned(), n.to_string()];
        c_args.extend(file_args.iter().cloned());
        let c_cmd = NullCmd::new(
            path_arg(&c_dir.join(spec.variant.c_name(spec.touch))),
            c_args,
        );
        let label = format!("{}, {}", spec.cache.name(), spec.label());
        let phase = std::cell::Cell::new("warm-up");
        let mut before = |side: Side, run: usize| {
            let who = if side == Side::A { "ours" } else { "C" };
            let of = if phase.get() == "run" { runs } else { warmup };
            progress.set(format!("{label}: {} {run}/{of}, {who}", phase.get()));
            let prep = prepare(files, spec.cache)?;
            let off = match spec.cache {
                CacheState::Cold => prep.resident > 0.01,
                CacheState::Warm => prep.resident < 0.99,
            };
            if off {
                progress.note(&format!(
                    "xtask: warning: {label} {} {run} ({who}) starts with {} of the files resident",
                    phase.get(),
                    pct(prep.resident)
                ));
            }
            Ok(prep)
        };
        let traces = std::cell::RefCell::new(&mut traces);
        let timed = |who: &str, run: usize, cmd: &NullCmd, prep, parse| {
            let go = || measure(cmd, &ws.root, files, prep, parse);
            let sample = if phase.get() == "run" {
                traces
                    .borrow_mut()
                    .record_files(&scratch, files, &label, who, run, go)
            } else {
                go()
            };
            progress.inc();
            sample
        };
        let mut ours = |run, prep| timed("ours", run, &ours_cmd, prep, parse_ours);
        let mut c = |run, prep| timed("C", run, &c_cmd, prep, parse_c);
        let warmup_pairs = schedule::alternate(warmup, &mut before, &mut ours, &mut c)?;
        phase.set("run");
        let pairs = schedule::alternate(runs, &mut before, &mut ours, &mut c)?;
        let summary = summarize(&pairs);
        cell_results.push(CellResult {
            label: spec.label(),
            spec: *spec,
            iterations: n,
            ours_cmd: short_files(&ours_cmd.shell(), &file_args, &inputs.cold_glob),
            c_cmd: short_files(&c_cmd.shell(), &file_args, &inputs.cold_glob),
            warmup: warmup_pairs,
            pairs,
            summary,
        });
    }

    // The limits: memcpy, then the device and memory limits of the files
    // the cells read (the cold list, or the warm file when no cold cell
    // ran).
    progress.set("limits: memcpy");
    let mut limits = vec![
        memcpy_limit(WARM_BYTES, iterations, limit_passes),
        memcpy_limit(preset.memcpy_bytes, 4, limit_passes),
    ];
    progress.inc();
    if caches.contains(&CacheState::Cold) {
        limits.extend(limits::standard_files(
            &cold_files,
            &inputs.cold_glob,
            limit_passes,
            &progress,
        )?);
    } else {
        limits.extend(limits::standard(&warm_files[0], limit_passes, &progress)?);
    }

    let checks = data_checks(&cell_results, &inputs);
    let finished = SystemTime::now();
    let dir = ws.report_dir(&args.common, started);
    let mut results = Results {
        bench: "mmaptest",
        sides: [("a", "ours"), ("b", "c")],
        started_utc: utc_human(started),
        finished_utc: utc_human(finished),
        preset: preset.name,
        iterations,
        runs,
        warmup,
        machine,
        cc_version: machine::first_line_of("cc", &["--version"]),
        loadavg_end: machine::loadavg(),
        c_source: source,
        inputs,
        build_commands,
        cells: cell_results,
        limits,
        checks,
        traces: traces.list().to_vec(),
        charts: Vec::new(),
        traces_paragraph: traces.paragraph(
            "the file(s) each run reads (the 72 KiB file warm, every file of the list cold, one trace per \
             file)",
            Path::new(&ws.rel(&dir)),
        ),
    };
    progress.set("charts");
    results.charts = mmaptest_charts(&results, &traces)?;
    let report = render(&results);
    drop(progress);
    output::publish_traced(&dir, &report, &results, &traces, &results.charts)?;
    if results.checks.iter().any(|c| !c.ok) {
        eprintln!("xtask: byte counts or checksums are wrong (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The charts of the report: ours/C per cell, and the cold list's
/// residency during the first timed touching run of read() 64 KiB, mmap
/// per iteration and mmap once, ours and C (the untouched mmap modes read
/// nothing, so their lines stay at 0 %).
fn mmaptest_charts(r: &Results, traces: &Traces) -> Result<Vec<ChartFile>> {
    let bars: Vec<RatioBar> = r
        .cells
        .iter()
        .filter_map(|c| {
            let s = c.summary.ratio.as_ref()?;
            Some(RatioBar::of(
                format!("{}, {}", c.spec.cache.name(), c.label),
                s,
            ))
        })
        .collect();
    let mut out = vec![ChartFile {
        file: "ratios.svg".to_owned(),
        what: "loop time, ours / C per cell".to_owned(),
        svg: charts::ratios("mmaptest: loop time, ours / C", &bars, Some(TARGET))?,
    }];
    let picks: Vec<(String, &str, String)> = r
        .cells
        .iter()
        .filter(|c| {
            c.spec.cache == CacheState::Cold
                && c.spec.touch
                && matches!(
                    c.spec.variant,
                    Variant::Read64K | Variant::MmapEach | Variant::MmapOnce
                )
        })
        .flat_map(|c| {
            ["ours", "C"].map(|side| {
                (
                    format!("cold, {}", c.label),
                    side,
                    format!("{side}, {}", c.spec.variant.label()),
                )
            })
        })
        .collect();
    if let Some(svg) = super::traces::residency_chart(
        traces,
        "mmaptest, cold, touching: the list in the page cache during one pass",
        &picks,
    )? {
        out.push(ChartFile {
            file: "residency-cold.svg".to_owned(),
            what: "resident share of the cold list during the first timed touching run, read() vs mmap, ours and C"
                .to_owned(),
            svg,
        });
    }
    Ok(out)
}

/// Deterministic file contents: xorshift64 words from `seed`.
fn fill(buf: &mut [u8], state: &mut u64) {
    for chunk in buf.chunks_mut(8) {
        let mut x = *state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *state = x;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// Makes `path` (`len` bytes from `seed`) unless it exists with that size;
/// written under a temporary name and renamed into place. Returns whether
/// it was made now.
fn ensure_file(path: &Path, len: u64, seed: u64) -> Result<bool> {
    if fs::metadata(path).is_ok_and(|m| m.len() == len) {
        return Ok(false);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = TempPath::new(path.with_file_name(format!(".{name}.tmp-{}", std::process::id())));
    let mut f = File::create(tmp.path())
        .with_context(|| format!("cannot create {}", tmp.path().display()))?;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        fill(&mut buf[..n], &mut state);
        f.write_all(&buf[..n])
            .with_context(|| format!("cannot write {}", tmp.path().display()))?;
        left -= n as u64;
        interrupt::check()?;
    }
    f.sync_all()?;
    fs::rename(tmp.path(), path)
        .with_context(|| format!("cannot rename into {}", path.display()))?;
    let _ = tmp.keep();
    Ok(true)
}

/// Sum of every byte of a file (what ours' checksum must be per pass).
fn file_byte_sum(path: &Path) -> Result<u64> {
    let mut f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut sum = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(sum);
        }
        // 8 bytes at a time: xtask is built without optimisation.
        let mut words = buf[..n].chunks_exact(8);
        for w in &mut words {
            let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
            let pairs = (x & 0x00FF_00FF_00FF_00FF) + ((x >> 8) & 0x00FF_00FF_00FF_00FF);
            let quads = (pairs & 0x0000_FFFF_0000_FFFF) + ((pairs >> 16) & 0x0000_FFFF_0000_FFFF);
            sum += (quads & 0xFFFF_FFFF) + (quads >> 32);
        }
        sum += words.remainder().iter().map(|&b| u64::from(b)).sum::<u64>();
    }
}

fn ensure_inputs(
    ws: &Workspace,
    cold_n: u64,
    cold_size: u64,
    progress: &Progress,
) -> Result<Inputs> {
    let dir = ws.bench_dir().join("files");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let warm = dir.join("mmaptest-72KiB.bin");
    let mut generated_now = usize::from(ensure_file(&warm, WARM_BYTES, 1)?);
    let size = format_size(cold_size);
    let mut cold = Vec::new();
    for i in 0..cold_n {
        let p = dir.join(format!("mmaptest-cold-{size}-{i:03}.bin"));
        if !p.is_file() && i == 0 {
            progress.note(&format!(
                "xtask: making {cold_n} cold files of {size} in {} (cached for later runs)",
                dir.display()
            ));
        }
        generated_now += usize::from(ensure_file(&p, cold_size, 100 + i)?);
        cold.push(p);
    }
    let mut cold_byte_sum = 0u64;
    for p in &cold {
        cold_byte_sum = cold_byte_sum.wrapping_add(file_byte_sum(p)?);
    }
    Ok(Inputs {
        warm_byte_sum: file_byte_sum(&warm)?,
        warm_file: path_arg(&warm),
        warm_bytes: WARM_BYTES,
        cold_files: cold.iter().map(|p| path_arg(p)).collect(),
        cold_file_bytes: cold_size,
        cold_byte_sum,
        cold_glob: path_arg(&dir.join(format!(
            "mmaptest-cold-{size}-{{000..{:03}}}.bin",
            cold_n.saturating_sub(1)
        ))),
        generated_now,
    })
}

/// A command line with a long file list (more than two files) shown as
/// the bash brace form `glob` instead.
fn short_files(line: &str, files: &[String], glob: &str) -> String {
    if files.len() <= 2 {
        return line.to_owned();
    }
    let list: Vec<String> = files.iter().map(|f| shell_quote(f)).collect();
    line.replace(&list.join(" "), glob)
}

/// `memcpy` of `bytes` from one buffer to another, `reps` times per pass:
/// the cost of the copy read() makes, with no kernel around it.
fn memcpy_limit(bytes: u64, reps: u64, passes: usize) -> Limit {
    let n = usize::try_from(bytes).unwrap_or(usize::MAX);
    let src = vec![0x5Au8; n];
    let mut dst = vec![0u8; n];
    dst.copy_from_slice(&src);
    let out = (0..passes)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(&mut dst).copy_from_slice(std::hint::black_box(&src));
            }
            ReadPass {
                bytes: bytes * reps,
                secs: start.elapsed().as_secs_f64(),
            }
        })
        .collect();
    Limit {
        what: format!("memcpy {}", human_size(bytes)),
        how: format!(
            "copy_from_slice (libc memcpy) between two {} buffers, {reps} times per pass, in xtask",
            human_size(bytes)
        ),
        file: String::new(),
        passes: out,
        error: None,
    }
}

fn summarize(pairs: &[Pair<Sample>]) -> CellSummary {
    let col = |f: &dyn Fn(&Sample) -> Option<f64>, ours: bool| {
        let v: Vec<f64> = pairs
            .iter()
            .filter_map(|p| f(if ours { &p.a } else { &p.b }))
            .collect();
        Summary::of(&v)
    };
    let secs: Vec<(f64, f64)> = pairs
        .iter()
        .map(|p| (p.a.timing.secs, p.b.timing.secs))
        .collect();
    let (ratios, ratio_skipped) = pair_ratios(&secs);
    let resident: Vec<f64> = pairs
        .iter()
        .flat_map(|p| [p.a.prep.resident, p.b.prep.resident])
        .collect();
    CellSummary {
        ours: col(&|s| Some(s.timing.secs), true),
        c: col(&|s| Some(s.timing.secs), false),
        ratio: Summary::of(&ratios),
        ratio_skipped,
        ours_setup: col(&|s| s.timing.setup_secs, true),
        ours_wall: col(&|s| Some(s.wall_s), true),
        c_wall: col(&|s| Some(s.wall_s), false),
        resident: Summary::of(&resident),
        ours_resident_after: col(&|s| Some(s.resident_after), true),
        c_resident_after: col(&|s| Some(s.resident_after), false),
    }
}

/// Bytes = file sizes × iterations on both sides in every run (warm-up
/// included); every touching run of ours has checksum = byte sum ×
/// iterations.
fn data_checks(cells: &[CellResult], inputs: &Inputs) -> Vec<Check> {
    let mut checks = Vec::new();
    for cache in [CacheState::Warm, CacheState::Cold] {
        let cs: Vec<&CellResult> = cells.iter().filter(|c| c.spec.cache == cache).collect();
        if cs.is_empty() {
            continue;
        }
        let per_pass_bytes = match cache {
            CacheState::Warm => inputs.warm_bytes,
            CacheState::Cold => inputs.cold_file_bytes * inputs.cold_files.len() as u64,
        };
        let per_pass_sum = match cache {
            CacheState::Warm => inputs.warm_byte_sum,
            CacheState::Cold => inputs.cold_byte_sum,
        };
        let mut bad_bytes = Vec::new();
        let mut bad_sums = Vec::new();
        let mut sums_seen = 0usize;
        for c in &cs {
            let want_bytes = per_pass_bytes * c.iterations;
            let want_sum = per_pass_sum.wrapping_mul(c.iterations);
            for p in c.warmup.iter().chain(&c.pairs) {
                for (who, s) in [("ours", &p.a), ("C", &p.b)] {
                    if s.timing.bytes != want_bytes {
                        bad_bytes.push(format!("{} {who}: {}", c.label, s.timing.bytes));
                    }
                }
                match (c.spec.touch, p.a.timing.checksum) {
                    (true, Some(sum)) if sum == want_sum => sums_seen += 1,
                    (false, None) => {}
                    (_, got) => bad_sums.push(format!("{}: {got:?}", c.label)),
                }
            }
        }
        let runs: usize = cs.iter().map(|c| c.warmup.len() + c.pairs.len()).sum();
        let want_bytes = per_pass_bytes * cs[0].iterations;
        checks.push(Check {
            what: format!("{} bytes", cache.name()),
            ok: bad_bytes.is_empty(),
            detail: if bad_bytes.is_empty() {
                format!(
                    "every run of both programs delivered {want_bytes} bytes ({} × {} iteration{}), {} runs each",
                    per_pass_bytes,
                    cs[0].iterations,
                    if cs[0].iterations == 1 { "" } else { "s" },
                    runs
                )
            } else {
                format!("**MISMATCH**, want {want_bytes}: {}", bad_bytes.join("; "))
            },
        });
        let want_sum = per_pass_sum.wrapping_mul(cs[0].iterations);
        checks.push(Check {
            what: format!("{} checksums", cache.name()),
            ok: bad_sums.is_empty(),
            detail: if bad_sums.is_empty() {
                format!(
                    "all {sums_seen} touching runs of ours printed checksum={want_sum} (the files' byte sum, {per_pass_sum}, × iterations), in every mode"
                )
            } else {
                format!("**MISMATCH**, want {want_sum}: {}", bad_sums.join("; "))
            },
        });
    }
    checks
}

/// Median-of-ratios verdict against "ours ≤ 1.2× C".
pub fn verdict(ratio: Option<&Summary>) -> String {
    ratio.map_or_else(
        || "no verdict (no ratio: C measured 0 s)".to_owned(),
        |r| at_most_verdict(r, TARGET, "ours ", " C"),
    )
}

/// GB/s (10^9 B/s) of `bytes` in a median time.
fn gbs(bytes: u64, s: Option<&Summary>) -> String {
    s.filter(|s| s.median > 0.0).map_or_else(
        || "—".to_owned(),
        |s| format!("{:.2}", mb_per_s(bytes, s.median) / 1e3),
    )
}

/// µs per iteration of a median time.
fn us_per_iter(iterations: u64, s: Option<&Summary>) -> String {
    #[expect(clippy::cast_precision_loss)]
    s.map_or_else(
        || "—".to_owned(),
        |s| format!("{:.2}", s.median * 1e6 / iterations.max(1) as f64),
    )
}

/// The cost of touching the data: touch − untouched, per mode, µs per
/// iteration (medians), ours and C.
fn touch_costs(o: &mut String, cs: &[&CellResult], iterations: u64) {
    let _ = writeln!(
        o,
        "Cost of touching the data (touch − untouched, medians, µs per iteration): the summing loop for read(), \
         the page faults plus the summing loop for mmap. Ours sums bytes with SSE2 `psadbw`, C sums 8-byte words \
         in a scalar loop, so the read() rows mostly compare the two summing loops.\n"
    );
    let mut t = Table::new(&["mode", ">ours", ">C"]);
    #[expect(clippy::cast_precision_loss)]
    let per_iter = |x: Option<&Summary>| x.map(|x| x.median * 1e6 / iterations.max(1) as f64);
    for v in Variant::ALL {
        let find = |touch: bool| {
            cs.iter()
                .find(|c| c.spec.variant == v && c.spec.touch == touch)
                .map(|c| &c.summary)
        };
        let (Some(plain), Some(touched)) = (find(false), find(true)) else {
            continue;
        };
        let diff = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}", a - b),
            _ => "—".to_owned(),
        };
        t.row([
            v.label().to_owned(),
            diff(
                per_iter(touched.ours.as_ref()),
                per_iter(plain.ours.as_ref()),
            ),
            diff(per_iter(touched.c.as_ref()), per_iter(plain.c.as_ref())),
        ]);
    }
    o.push_str(&t.render());
    o.push('\n');
}

/// The seed's figures (72 KiB × 100 000), none of them verified: the
/// mode as the seed names it, the total as quoted, seconds, and our mode.
const HISTORICAL: [(&str, &str, Option<f64>, Option<Variant>); 4] = [
    ("mmap once", "1.28 s", Some(1.28), Some(Variant::MmapOnce)),
    (
        "mmap+munmap per iteration",
        "7.49 s",
        Some(7.49),
        Some(Variant::MmapEach),
    ),
    (
        "read() 64 KiB",
        "19.35 s",
        Some(19.35),
        Some(Variant::Read64K),
    ),
    (
        "unattributed (not 1-byte reads: at 100 000 iterations those take ~3 200 s on the notes' machine)",
        "82.4 s",
        None,
        None,
    ),
];

/// Whether times (any unit) keep the seed's order: mmap once faster than
/// mmap+munmap per iteration, faster than read() 64 KiB.
#[must_use]
pub fn seed_order_holds(once: f64, each: f64, read64k: f64) -> bool {
    once < each && each < read64k
}

/// The seed's figures beside this run's untouched warm ratios (ours and
/// C), and what matches.
fn seed_section(o: &mut String, r: &Results, warm: &[(Variant, &CellResult)]) {
    let _ = writeln!(o, "## The seed's figures (unverified)\n");
    let _ = writeln!(
        o,
        "The seed quotes these totals for 72 KiB × 100 000 iterations (2003, machine unknown). The message \
         that posted the program and its table was **not found** in any archive we could search \
         (pgsql-performance and pgsql-hackers, March 2003; searched again for this report), so they are hearsay, quoted for their \
         ratios only. Beside them, this run's untouched warm cells ({} iterations, the faithful \
         reconstruction), each as a ratio to mmap once (ratios of medians):\n",
        r.iterations
    );
    let median = |v: Variant, ours: bool| {
        warm.iter()
            .find(|(w, _)| *w == v)
            .and_then(|(_, c)| if ours { c.summary.ours } else { c.summary.c })
            .map(|s| s.median)
    };
    let to_once = |v: Variant, ours: bool| match (median(v, ours), median(Variant::MmapOnce, ours))
    {
        (Some(x), Some(once)) if once > 0.0 => Some(x / once),
        _ => None,
    };
    let fmt = |x: Option<f64>| x.map_or_else(|| "—".to_owned(), |x| format!("{x:.1}×"));
    let mut t = Table::new(&[
        "mode",
        ">2003 total",
        ">2003, ratio to mmap once",
        ">ours, ratio to mmap once",
        ">C, ratio to mmap once",
    ]);
    for (mode, text, secs, variant) in HISTORICAL {
        // A seed row naming no mode has nothing of this run beside it.
        let ours_c = |ours: bool| {
            variant.map_or_else(
                || "not run: the seed names no mode".to_owned(),
                |v| fmt(to_once(v, ours)),
            )
        };
        t.row([
            mode.to_owned(),
            format!("{text} (unverified)"),
            fmt(secs.map(|s| s / 1.28)),
            ours_c(true),
            ours_c(false),
        ]);
    }
    for v in Variant::ALL {
        if HISTORICAL.iter().any(|h| h.3 == Some(v)) {
            continue;
        }
        t.row([
            v.label().to_owned(),
            "—".to_owned(),
            "—".to_owned(),
            fmt(to_once(v, true)),
            fmt(to_once(v, false)),
        ]);
    }
    o.push_str(&t.render());
    let order = |ours: bool| match (
        median(Variant::MmapOnce, ours),
        median(Variant::MmapEach, ours),
        median(Variant::Read64K, ours),
    ) {
        (Some(a), Some(b), Some(c)) => Some(seed_order_holds(a, b, c)),
        _ => None,
    };
    let said = |x: Option<bool>| match x {
        Some(true) => "holds",
        Some(false) => "does not hold",
        None => "cannot be checked (cells missing)",
    };
    let memcpy72 = r
        .limits
        .iter()
        .find(|l| l.what == format!("memcpy {}", human_size(WARM_BYTES)))
        .and_then(|l| {
            let per: Vec<f64> = l
                .passes
                .iter()
                .map(|p| {
                    #[expect(clippy::cast_precision_loss)]
                    let copies = p.bytes as f64 / WARM_BYTES as f64;
                    p.secs / copies.max(1.0) * 1e6
                })
                .collect();
            Summary::of(&per).map(|s| s.median)
        });
    #[expect(clippy::cast_precision_loss)]
    let per_iter =
        |v: Variant, ours: bool| median(v, ours).map(|s| s * 1e6 / r.iterations.max(1) as f64);
    let us = |x: Option<f64>| x.map_or_else(|| "?".to_owned(), |x| format!("{x:.2} µs"));
    let _ = writeln!(
        o,
        "\nWhat matches: the seed's order (mmap once fastest, then mmap+munmap per iteration, then read() 64 KiB) \
         {} for ours and {} for C. What does not: the sizes of the ratios, the seed's 5.9× (per iteration) and \
         15.1× (read) against {} and {} here (ours), {} and {} (C). Why: untouched, the mmap modes read no byte \
         of the file in either run (`write(2)` to /dev/null never reads its buffer), so each ratio weighs a \
         72 KiB copy (read) or one mmap+munmap (per iteration) against almost nothing, and those costs are the \
         machine's: here a 72 KiB memcpy takes {} (the limits below), an iteration of read() 64 KiB {} (C) and \
         of mmap+munmap {} (C); the 2003 machine is not known. The touch cells above are the fair comparison.\n",
        said(order(true)),
        said(order(false)),
        fmt(to_once(Variant::MmapEach, true)),
        fmt(to_once(Variant::Read64K, true)),
        fmt(to_once(Variant::MmapEach, false)),
        fmt(to_once(Variant::Read64K, false)),
        us(memcpy72),
        us(per_iter(Variant::Read64K, false)),
        us(per_iter(Variant::MmapEach, false)),
    );
}

/// The markdown report.
#[expect(clippy::too_many_lines)]
fn render(r: &Results) -> String {
    let m = &r.machine;
    let mut o = String::new();
    let _ = writeln!(o, "# bench mmaptest — {}\n", r.started_utc);
    if r.preset == "tiny" {
        let _ = writeln!(
            o,
            "**`--tiny`: a smoke run of the harness on tiny inputs; its times mean nothing.**\n"
        );
    }
    let _ = writeln!(
        o,
        "The read()-vs-mmap microbenchmark of the 2003 PostgreSQL-list \"mmap-test\", reconstructed: **ours** \
         (`mapwise mmaptest`) beside **the C reconstruction** (`{}`, built with cc -O2 and the README's -D flags), \
         {} run{} each per cell after {} warm-up pair{}, alternating ours and C, the order turning every pair (ours, C; C, ours; …). Preset `{}`. Finished {}.\n",
        r.c_source,
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        r.warmup,
        if r.warmup == 1 { "" } else { "s" },
        r.preset,
        r.finished_utc,
    );

    o.push_str(&m.section(
        "the files",
        &[("C compiler", r.cc_version.clone())],
        r.loadavg_end.as_deref(),
    ));

    let i = &r.inputs;
    let _ = writeln!(
        o,
        "\n## Files\n\n- warm: `{}`, {} ({} bytes, the seed's size), byte sum {}\n- cold: {} files of {} \
         (`{}` …), {} in all, byte sum {}\n- deterministic contents (xorshift64), cached in target/bench/files/; \
         {} made by this run\n",
        i.warm_file,
        human_size(i.warm_bytes),
        i.warm_bytes,
        i.warm_byte_sum,
        i.cold_files.len(),
        human_size(i.cold_file_bytes),
        i.cold_files.first().cloned().unwrap_or_default(),
        human_size(i.cold_file_bytes * i.cold_files.len() as u64),
        i.cold_byte_sum,
        i.generated_now,
    );

    let _ = writeln!(o, "## Method\n");
    let _ = writeln!(
        o,
        "- Both programs write every byte to stdout, which is `/dev/null` (as in the original), with plain \
         `write(2)` calls. `write(2)` to `/dev/null` never reads the buffer, so **untouched** mmap modes never \
         read a byte of the file: they compare copying (read) with nothing. That is the faithful reconstruction.\n\
         - **touch** reads every byte in every mode: ours sums bytes (`--touch`, SSE2 `psadbw`), C sums 8-byte \
         words (`-DTOUCH`, a scalar loop at -O2). Both read each byte once; the kernels differ, so touch cells \
         compare two implementations of \"read the data\", not identical instructions.\n\
         - **time** = the loop as each program measures it with CLOCK_MONOTONIC: files opened (and for mmap once, \
         mapped) before the clock starts, in both. C prints µs/iteration with three decimals; its loop time is \
         that × iterations. Ours' preparation is shown as *setup*; it includes one run of the loop's code path \
         without file data (a zero-length write, a zero-length pread or one untouched mmap+munmap), which keeps \
         the first timed iteration from paying for faulting in mapwise's own code (megabytes, where the C program \
         is a few pages).\n\
         - **warm**: the 72 KiB file, {} iterations; before every single run xtask reads it once with read(2). \
         **cold**: the file list, 1 iteration (one pass), before every single run xtask `fsync`s and \
         `posix_fadvise(DONTNEED)`s every file (the tools' own `--cold` is not used); *resident at start* is \
         measured with mincore after each reset.\n\
         - Runs alternate ours and C, the order turning every pair (ours, C; C, ours; …); ratio = ours/C loop time **pair by pair**, median [min–max]; \
         times are median [min–max]. Each cell starts with {} untimed warm-up pair(s) (raw in results.json).\n\
         - Not done here (each part of a fair run of this benchmark): pinning to one CPU (`taskset`), a memory cgroup for a \
         data set larger than RAM, perf fault counts.\n",
        r.iterations, r.warmup
    );

    let _ = writeln!(o, "## Commands\n\nRun from the workspace root.\n\n```sh");
    for c in &r.build_commands {
        let _ = writeln!(o, "{c}");
    }
    for c in &r.cells {
        let _ = writeln!(o, "{}\n{}", c.ours_cmd, c.c_cmd);
    }
    let _ = writeln!(o, "```\n");

    for cache in [CacheState::Warm, CacheState::Cold] {
        let cs: Vec<&CellResult> = r.cells.iter().filter(|c| c.spec.cache == cache).collect();
        if cs.is_empty() {
            continue;
        }
        let iterations = cs[0].iterations;
        let bytes = match cache {
            CacheState::Warm => i.warm_bytes * iterations,
            CacheState::Cold => i.cold_file_bytes * i.cold_files.len() as u64,
        };
        match cache {
            CacheState::Warm => {
                let _ = writeln!(
                    o,
                    "## Results: warm, {} × {iterations} iterations ({} per run)\n",
                    human_size(i.warm_bytes),
                    human_size(bytes)
                );
            }
            CacheState::Cold => {
                let _ = writeln!(
                    o,
                    "## Results: cold, one pass over {} files of {} ({})\n",
                    i.cold_files.len(),
                    human_size(i.cold_file_bytes),
                    human_size(bytes)
                );
            }
        }
        let warm = cache == CacheState::Warm;
        let mut t = Table::new(&[
            "mode",
            ">ours",
            ">C",
            ">ours/C (per pair)",
            if warm {
                ">µs/iter ours / C"
            } else {
                ">resident after ours / C"
            },
            ">GB/s ours / C",
        ]);
        for c in &cs {
            let s = &c.summary;
            let mut ratio = opt_ratio(s.ratio.as_ref());
            if s.ratio_skipped > 0 {
                let _ = write!(ratio, " ({} pair(s) without ratio)", s.ratio_skipped);
            }
            let fourth = if warm {
                format!(
                    "{} / {}",
                    us_per_iter(iterations, s.ours.as_ref()),
                    us_per_iter(iterations, s.c.as_ref())
                )
            } else {
                format!(
                    "{} / {}",
                    s.ours_resident_after
                        .as_ref()
                        .map_or_else(|| "—".to_owned(), |x| pct(x.median)),
                    s.c_resident_after
                        .as_ref()
                        .map_or_else(|| "—".to_owned(), |x| pct(x.median)),
                )
            };
            t.row([
                c.label.clone(),
                opt_secs(s.ours.as_ref()),
                opt_secs(s.c.as_ref()),
                ratio,
                fourth,
                format!(
                    "{} / {}",
                    gbs(bytes, s.ours.as_ref()),
                    gbs(bytes, s.c.as_ref())
                ),
            ]);
        }
        o.push_str(&t.render());
        let _ = writeln!(o);
        let mut t = Table::new(&[
            "mode",
            ">ours setup",
            ">ours wall",
            ">C wall",
            ">resident at start",
        ]);
        for c in &cs {
            let s = &c.summary;
            t.row([
                c.label.clone(),
                opt_median(s.ours_setup.as_ref()),
                opt_median(s.ours_wall.as_ref()),
                opt_median(s.c_wall.as_ref()),
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
            ]);
        }
        o.push_str(&t.render());
        let _ = writeln!(
            o,
            "\n*setup*: ours' preparation before the clock (buffer, or mapping every file for mmap once, plus one \
             run of the loop's code path without file data); C does its preparation untimed too and does not print \
             it. *wall*: spawn to exit as seen by xtask (medians).\n"
        );
        if warm {
            touch_costs(&mut o, &cs, iterations);
        } else {
            let _ = writeln!(
                o,
                "*resident after*: fraction of the list in the page cache right after the run (median): untouched \
                 mmap modes read nothing, so their times are {} `mmap`/`write`/`munmap` calls (tens of µs: one \
                 slow run moves the ratio a lot).\n",
                i.cold_files.len()
            );
        }
    }

    let warm: Vec<(Variant, &CellResult)> = r
        .cells
        .iter()
        .filter(|c| c.spec.cache == CacheState::Warm && !c.spec.touch)
        .map(|c| (c.spec.variant, c))
        .collect();
    if !warm.is_empty() {
        seed_section(&mut o, r, &warm);
    }

    let _ = writeln!(o, "## Charts and residency traces\n");
    charts::links(&mut o, &r.charts);
    if let Some(p) = &r.traces_paragraph {
        let _ = writeln!(o, "{p}\n");
    }

    let _ = writeln!(o, "## Physical limits\n");
    let mut t = Table::new(&[
        "what",
        ">time per pass",
        ">GB/s (10^9 B/s)",
        ">µs per 72 KiB",
        "how",
    ]);
    for l in &r.limits {
        if let Some(e) = &l.error {
            t.row([
                l.what.clone(),
                "—".to_owned(),
                "—".to_owned(),
                "—".to_owned(),
                format!("unavailable: {e}"),
            ]);
            continue;
        }
        let secs: Vec<f64> = l.passes.iter().map(|p| p.secs).collect();
        let rates: Vec<f64> = l
            .passes
            .iter()
            .map(|p| mb_per_s(p.bytes, p.secs) / 1e3)
            .collect();
        let rate = Summary::of(&rates);
        #[expect(clippy::cast_precision_loss)]
        let per72 = rate.as_ref().map_or_else(
            || "—".to_owned(),
            |s| format!("{:.2}", WARM_BYTES as f64 / (s.median * 1e3)),
        );
        t.row([
            l.what.clone(),
            opt_secs(Summary::of(&secs).as_ref()),
            rate.as_ref().map_or_else(
                || "—".to_owned(),
                |s| format!("{:.2} [{:.2}–{:.2}]", s.median, s.min, s.max),
            ),
            per72,
            l.how.clone(),
        ]);
    }
    o.push_str(&t.render());
    if let Some(l) = r.limits.iter().find(|l| !l.file.is_empty()) {
        let _ = writeln!(
            o,
            "\nThe read rows read `{}` whole, file after file (memcpy runs in xtask's memory).",
            l.file
        );
    }
    let _ = writeln!(
        o,
        "\nA warm read() is that in-cache copy plus a system call, so it lands near the 72 KiB memcpy (the \
         kernel's copy routine is not libc's, so it can come out a little faster); a cold pass cannot beat the \
         O_DIRECT device read by much (read-ahead overlaps I/O with the copy). Untouched mmap modes claim rates \
         above all of these because they read nothing.\n"
    );

    let _ = writeln!(o, "## Verdicts (target: ours ≤ {TARGET}× C, loop time)\n");
    for c in &r.cells {
        let _ = writeln!(
            o,
            "- **{}, {}**: {}",
            c.spec.cache.name(),
            c.label,
            verdict(c.summary.ratio.as_ref())
        );
    }
    let _ = writeln!(o, "\n## Data checks\n");
    for c in &r.checks {
        let _ = writeln!(
            o,
            "- **{}**: {} — {}",
            c.what,
            if c.ok { "OK" } else { "FAIL" },
            c.detail
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_lines_parse() {
        let err = "read-chunked readsize=65536 files=1 bytes/iter=73728 iters=100000 wall=0.530 s  5.304 us/iter  13.90 GB/s (data not touched by user space in mmap modes)\n";
        let t = parse_c(err).unwrap();
        assert_eq!(t.bytes, 7_372_800_000);
        assert!((t.secs - 0.5304).abs() < 1e-9, "{}", t.secs);
        assert_eq!(t.setup_secs, None);
        let cold = "mmap-once readsize=65536 files=16 bytes/iter=268435456 iters=1 wall=0.000 s  12.345 us/iter  21745.00 GB/s (touching data)";
        let t = parse_c(cold).unwrap();
        assert_eq!(t.bytes, 268_435_456);
        assert!((t.secs - 12.345e-6).abs() < 1e-12);
        assert!(parse_c("usage: mmaptest [-n ITERATIONS] FILE...").is_err());
        assert!(parse_c("x bytes/iter=1 wall=1 s 2.0 us/iter").is_err());
    }

    #[test]
    fn ours_json_parses() {
        let err = "{\"mode\":\"read\",\"read_size\":65536,\"whole_file\":false,\"populate\":false,\"touch\":true,\"cold\":false,\"files\":1,\"bytes_per_iteration\":73728,\"iterations\":10,\"bytes\":737280,\"setup_secs\":3e-5,\"secs\":0.0001,\"gb_per_s\":7.3,\"checksum\":93986630}\n";
        let t = parse_ours(err).unwrap();
        assert_eq!(
            t,
            Timing {
                secs: 0.0001,
                bytes: 737_280,
                setup_secs: Some(3e-5),
                checksum: Some(93_986_630)
            }
        );
        assert!(parse_ours("mapwise: boom\n").is_err());
    }

    #[test]
    fn generated_contents_are_deterministic() {
        let mut a = vec![0u8; 21];
        let mut b = vec![0u8; 21];
        let (mut s1, mut s2) = (7u64, 7u64);
        fill(&mut a, &mut s1);
        fill(&mut b, &mut s2);
        assert_eq!(a, b);
        assert!(a.iter().any(|&x| x != 0));
    }

    #[test]
    fn long_file_lists_show_as_brace_forms() {
        let files: Vec<String> = (0..3).map(|i| format!("d/c-{i:03}.bin")).collect();
        let line = format!("prog -n 1 {} > /dev/null", files.join(" "));
        assert_eq!(
            short_files(&line, &files, "d/c-{000..002}.bin"),
            "prog -n 1 d/c-{000..002}.bin > /dev/null"
        );
        assert_eq!(short_files("prog a b", &files[..2], "x"), "prog a b");
    }

    #[test]
    fn presets() {
        let tiny = Preset::of(true, true);
        assert_eq!(
            (tiny.name, tiny.iterations, tiny.cold_files, tiny.cold_size),
            ("tiny", 200, 2, 1 << 20)
        );
        let quick = Preset::of(false, false);
        assert_eq!(
            (
                quick.name,
                quick.iterations,
                quick.cold_files,
                quick.cold_size
            ),
            ("quick", 20_000, 16, 16 << 20)
        );
        // The seed's count.
        assert_eq!(Preset::of(false, true).iterations, 100_000);
    }

    #[test]
    fn the_seeds_order() {
        // The seed's own totals keep it.
        assert!(seed_order_holds(1.28, 7.49, 19.35));
        assert!(!seed_order_holds(1.28, 19.35, 7.49));
        assert!(!seed_order_holds(7.49, 1.28, 19.35));
        assert!(!seed_order_holds(1.0, 1.0, 2.0));
        // Each seed mode names one of ours.
        let named: Vec<Variant> = HISTORICAL.iter().filter_map(|h| h.3).collect();
        assert_eq!(
            named,
            [Variant::MmapOnce, Variant::MmapEach, Variant::Read64K]
        );
    }

    #[test]
    fn verdicts() {
        let s = |v: &[f64]| Summary::of(v).unwrap();
        assert!(verdict(Some(&s(&[0.9, 1.0, 1.1]))).starts_with("PASS — ours 1.00× C"));
        let v = verdict(Some(&s(&[1.1, 1.3, 1.4])));
        assert!(v.starts_with("FAIL — ours 1.30×"), "{v}");
        assert!(v.ends_with("straddles 1.2×"), "{v}");
        assert!(verdict(None).starts_with("no verdict"));
    }
}
