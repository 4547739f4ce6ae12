//! `cargo xtask bench bolt-scan`: the MAP_POPULATE experiment boltdb/bolt's
//! maintainers reported, ours (`mapwise bolt traverse`) vs Go bbolt (the
//! peer's `traverse`), cold/warm × with/without MAP_POPULATE.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::cell::{self, Cell, CellRuns, Contender, Metrics, Tracing};
use super::charts::{self, ChartFile, RatioBar};
use super::limits::{self, Limit};
use super::machine::{self, Machine};
use super::output::{self, TempPath};
use super::proc::{Cmd, tail};
use super::report::{Bound, Outcome, Report, Role, Table, Verdict, fill, judge};
use super::schedule::CacheState;
use super::stats::{Summary, fmt_secs, opt_median, opt_ratio, opt_secs};
use super::traces::Traces;
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
Cells: cold (the harness fsyncs and posix_fadvise(DONTNEED)s the whole file
before every single run) and warm (it evicts it, then reads it whole once
before every pair: both runs of a pair scan the same page cache), each with
and without MAP_POPULATE. Then the limits: a cold O_DIRECT sequential read
and a cached read() of the file (1 MiB buffer), and `inspector residency`
on a 64 GiB sparse file. Go bbolt is the bbolt peer, peers/bolt/peer (its
Debian packages installed first).
--tiny (a smoke run of the harness, e.g. in CI; its times mean nothing)
generates a 4MiB file in transactions of 1000 puts (`gen … --batch 1000`:
about 4000 keys, 8 MiB) unless --size is given.
See `cargo xtask bench --help` for the report.";

/// Timed pairs a warm cell runs at least, whatever `--runs` says. A warm
/// 2 GiB scan takes ~0.05 s but varies up to 15x from one reset to the
/// next in both tools alike (42-770 ms ours, 69-234 ms Go in one cell),
/// mostly after a warming read that was itself slow: on a VM that
/// reports free pages to its host, the memory it lands in may have gone
/// back to the host and be faulted in again there, in small host pages.
/// So the two runs of a warm pair share one reset, and every warm run
/// follows an untimed run of the same command (the first process after a
/// pause of ~2 s paid 170-270 ms instead of ~30 ms for its page tables
/// and heap). Nine pairs cost seconds; a cold pair costs 90 s.
pub const WARM_MIN_RUNS: usize = 9;

/// Wait after a cold reset before the run, on a machine that reports
/// free pages to its VM host: the kernel hands freed blocks back about
/// 2 s after the eviction (`PAGE_REPORTING_DELAY`), and a page the guest
/// then reuses costs a host-side fault at its first touch. Without it a
/// cold 2 GiB `MAP_POPULATE` scan took 0.2 s or 3-4 s, in both tools, by
/// luck; with 5 s every cold run starts from the same state.
pub const COLD_SETTLE: Duration = Duration::from_secs(5);

/// The bucket the `big` shape fills and both tools scan.
pub const BUCKET: &str = "fake-bucket";
/// Size of the sparse file for the residency row.
const SPARSE_BYTES: u64 = 64 << 30;
/// Target for `inspector residency` on it.
const RESIDENCY_TARGET_S: f64 = 0.5;
/// `--tiny`: logical size of the generated file (with [`TINY_BATCH`],
/// about 4000 keys in an 8 MiB file).
pub const TINY_SIZE: u64 = 4 << 20;
/// `--tiny`: puts per transaction of the generator (`gen --batch`).
pub const TINY_BATCH: u64 = 1000;

/// `bench bolt-scan` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Logical size of the generated file (peer `gen --size`; binary
    /// units: 256MiB, 2GiB, 1.5G, bytes). The file comes out a little
    /// larger [default: 256MiB; --tiny: 4MiB in puts of 1000 per
    /// transaction, about 4000 keys in an 8 MiB file].
    #[arg(long, value_name = "SIZE", value_parser = super::units::parse_size, conflicts_with = "tiny")]
    size: Option<u64>,
    /// Seed of the generated file (peer `gen --seed`).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Untimed pairs at the start of each cell (same reset before each
    /// run), kept in results.json only: the first run after a change of
    /// cell pays for the previous cell's leftovers.
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

/// The JSON object `mapwise bolt traverse --json` prints.
#[derive(Deserialize)]
struct OursJson {
    open_s: f64,
    traverse_s: f64,
    took_s: f64,
    keys: u64,
}

/// Parses ours: the last line that is a JSON object with `open_s`,
/// `traverse_s`, `took_s` and `keys`, into `open_s`, `scan_s`, `took_s`
/// and `keys`.
///
/// # Errors
/// When there is no such line.
pub fn parse_ours(stdout: &str) -> Result<Metrics, String> {
    let line = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("no JSON object in output {:?}", tail(stdout, 3)))?;
    let j: OursJson =
        serde_json::from_str(line).map_err(|e| format!("bad JSON from mapwise: {e}: {line}"))?;
    #[expect(clippy::cast_precision_loss)]
    let keys = j.keys as f64;
    Ok(metrics(j.open_s, j.traverse_s, j.took_s, keys))
}

fn metrics(open_s: f64, scan_s: f64, took_s: f64, keys: f64) -> Metrics {
    [("open_s", open_s), ("scan_s", scan_s), ("took_s", took_s), ("keys", keys)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// Parses the peer's text: `open: 0.003s`, `traverse: 0.001s keys=N …`,
/// `took: 0.004s` (other lines, in any order, ignored).
///
/// # Errors
/// When one of the three lines or `keys=` is missing or malformed.
pub fn parse_go(stdout: &str) -> Result<Metrics, String> {
    let secs = |w: Option<&str>| -> Option<f64> {
        w?.trim().strip_suffix('s')?.parse().ok().filter(|x: &f64| x.is_finite() && *x >= 0.0)
    };
    let (mut open, mut scan, mut took, mut keys) = (None, None, None, None);
    for line in stdout.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("open:") {
            open = secs(rest.split_whitespace().next());
        } else if let Some(rest) = line.strip_prefix("traverse:") {
            let mut words = rest.split_whitespace();
            scan = secs(words.next());
            keys = words.find_map(|w| w.strip_prefix("keys=")).and_then(|k| k.parse::<f64>().ok());
        } else if let Some(rest) = line.strip_prefix("took:") {
            took = secs(rest.split_whitespace().next());
        }
    }
    let missing = |what: &str| format!("no `{what}` in peer output {:?}", tail(stdout, 6));
    Ok(metrics(
        open.ok_or_else(|| missing("open: Xs"))?,
        scan.ok_or_else(|| missing("traverse: Xs"))?,
        took.ok_or_else(|| missing("took: Xs"))?,
        keys.ok_or_else(|| missing("keys=N"))?,
    ))
}

/// `entries=N` from the peer's `gen big:` line.
#[must_use]
pub fn parse_gen_entries(text: &str) -> Option<u64> {
    text.split_whitespace().find_map(|w| w.strip_prefix("entries=")).and_then(|n| n.parse().ok())
}

/// The label of a scan cell: `cold, plain mmap`, `warm, MAP_POPULATE`.
#[must_use]
pub fn scan_label(cache: CacheState, populate: bool) -> String {
    format!("{}, {}", cache.name(), if populate { "MAP_POPULATE" } else { "plain mmap" })
}

/// A scan cell of ours against Go on `file`, as this bench and `bench
/// bolt` run it: a warm pair shares its reset and every warm run follows
/// an untimed one ([`WARM_MIN_RUNS`] pairs at least), a cold run waits
/// [`COLD_SETTLE`] on a machine that hands free pages back.
#[must_use]
pub fn scan_cell(
    label: String,
    cache: CacheState,
    file: &Path,
    (ours, go): (Cmd, Cmd),
    (warmup, runs): (usize, usize),
) -> Cell {
    Cell {
        label,
        cache,
        files: vec![file.to_path_buf()],
        fresh: Vec::new(),
        contenders: vec![
            Contender::new("ours", ours, |o| parse_ours(&o.stdout)),
            Contender::new("Go", go, |o| parse_go(&o.stdout)),
        ],
        warmup,
        runs: if cache == CacheState::Warm { runs.max(WARM_MIN_RUNS) } else { runs },
        shared_warm_reset: true,
        untimed_warm_first: true,
        cold_settle: machine::reports_free_pages().then_some(COLD_SETTLE),
    }
}

#[derive(Debug, Serialize)]
struct ResidencyBench {
    /// `ok`, `missing` (no inspector binary or subcommand) or `failed`.
    status: String,
    detail: Option<String>,
    commands: Vec<String>,
    sparse_bytes: u64,
    walls: Vec<f64>,
    /// The first run's `resident_pages` and `total_pages`.
    pages: Option<(u64, u64)>,
}

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

impl FileInfo {
    /// The report's `## File` paragraph.
    #[must_use]
    pub fn paragraph(&self) -> String {
        format!(
            "`{}`: {} ({} bytes), {} keys; {}.",
            self.path,
            human_size(self.bytes),
            self.bytes,
            self.expected_keys.map_or_else(|| "unknown number of".to_owned(), |k| k.to_string()),
            if self.generated_now {
                "generated by this run"
            } else {
                "taken from the cache (generated by an earlier run)"
            },
        )
    }
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
    /// The bbolt versions behind `peer` (its README and the Debian
    /// package).
    #[must_use]
    pub fn of(peer: &str) -> Self {
        let readme = Path::new(peer).with_file_name("README.md");
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

    /// The `## Machine` section with Go's and bbolt's versions.
    pub fn machine(&self, report: &mut Report, m: &Machine, loadavg_end: Option<&str>) {
        let na = || "unknown".to_owned();
        let bbolt = format!(
            "{} (peer README); Debian package golang-github-coreos-bbolt-dev {}",
            self.bbolt_readme.clone().unwrap_or_else(na),
            self.bbolt_package.clone().unwrap_or_else(na)
        );
        m.add_to(
            report,
            "the file",
            &[("Go", m.go_version.clone()), ("bbolt", Some(bbolt))],
            loadavg_end,
        );
    }
}

/// Everything results.json holds; the report is rendered from it.
#[derive(Debug, Serialize)]
struct Results {
    bench: &'static str,
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
    cells: Vec<CellRuns>,
    limits: Vec<Limit>,
    residency: ResidencyBench,
    keys_agree: bool,
    traces: Vec<super::traces::TraceInfo>,
    charts: Vec<ChartFile>,
}

/// Runs the bench.
///
/// # Errors
/// When a build, the file, a run or the report fails.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = usize::try_from(args.common.runs).context("--runs too large")?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let tiny = args.common.tiny;
    let size = args.size.unwrap_or(if tiny { TINY_SIZE } else { 256 << 20 });
    let caches: &[CacheState] = if args.cold {
        &[CacheState::Cold]
    } else if args.warm {
        &[CacheState::Warm]
    } else {
        &[CacheState::Cold, CacheState::Warm]
    };
    let peer = ws.peer("bolt")?;
    let specs: Vec<(CacheState, bool)> =
        caches.iter().flat_map(|&c| [(c, false), (c, true)]).collect();
    let cell_steps: usize = specs
        .iter()
        .map(|&(c, _)| {
            (warmup + if c == CacheState::Warm { runs.max(WARM_MIN_RUNS) } else { runs }) * 2
        })
        .sum();
    let progress = Progress::new((4 + cell_steps + limits::steps(runs) + runs) as u64);

    let build_ours = Cmd::cargo_release("mapwise-cli", Some("mapwise"));
    let build_inspector = Cmd::cargo_release("mapwise-inspector", None);
    let build_peer = Cmd::new(peer.clone()).arg("build");
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
    progress.set("building the bbolt peer");
    build_peer.run(&ws.root).context("cannot build the bbolt peer")?;
    progress.inc();

    progress.set(format!("bbolt file, {} seed {}", format_size(size), args.seed));
    let file = ensure_file(ws, &peer, (size, tiny.then_some(TINY_BATCH)), args.seed, &progress)?;
    progress.inc();
    let path = PathBuf::from(&file.path);
    let machine = Machine::describe(&path);

    let traces = std::cell::RefCell::new(Traces::new());
    let scratch = ws.bench_dir().join("scratch");
    let tracing = Tracing { traces: &traces, scratch: &scratch };
    let mut cells = Vec::with_capacity(specs.len());
    for &(cache, populate) in &specs {
        let ours = Cmd::new(path_arg(&mapwise))
            .args(["bolt", "traverse", &file.path])
            .arg_if(populate, "--populate")
            .arg("--json");
        let go =
            Cmd::new(peer.clone()).args(["traverse", &file.path]).arg_if(populate, "--populate");
        let cell = scan_cell(scan_label(cache, populate), cache, &path, (ours, go), (warmup, runs));
        cells.push(cell::run(ws, &progress, &cell, &tracing)?);
    }
    let limits = limits::standard(&path, runs, &progress)?;
    let residency = residency_bench(ws, &inspector_build, &build_inspector, runs, &progress)?;
    let mut keys: Vec<u64> =
        cells.iter().flat_map(|c| c.distinct("keys")).chain(file.expected_keys).collect();
    keys.sort_unstable();
    keys.dedup();
    let charts = bolt_scan_charts(&cells, &traces.borrow())?;
    let results = Results {
        bench: "bolt-scan",
        started_utc: utc_human(started),
        finished_utc: utc_human(SystemTime::now()),
        size_bytes: size,
        size: format_size(size),
        seed: args.seed,
        runs,
        warmup,
        bucket: BUCKET,
        machine,
        loadavg_end: machine::loadavg(),
        versions: Versions::of(&peer),
        file,
        build_commands: vec![build_ours.shell(), build_inspector.shell(), build_peer.shell()],
        cells,
        limits,
        residency,
        keys_agree: keys.len() == 1,
        traces: traces.borrow().list().to_vec(),
        charts,
    };
    drop(progress);
    output::publish_traced(
        &ws.report_dir(&args.common, started),
        &render(&results),
        &results,
        &traces.borrow(),
        &results.charts,
    )?;
    if !results.keys_agree {
        eprintln!("xtask: key counts differ between runs or tools (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The ratio bars of every cell, and the residency of the first cold run
/// of each (cell, tool).
fn bolt_scan_charts(cells: &[CellRuns], traces: &Traces) -> Result<Vec<ChartFile>> {
    let bars: Vec<RatioBar> = cells
        .iter()
        .filter_map(|c| Some(RatioBar::of(c.label.clone(), c.ratio(0, 1, "took_s").0.as_ref()?)))
        .collect();
    let mut out = vec![ChartFile {
        file: "ratios.svg".to_owned(),
        what: "took, ours / Go bbolt, per cell".to_owned(),
        svg: charts::ratios("bolt-scan: took, ours / Go bbolt", &bars, None)?,
    }];
    let picks: Vec<(String, &str, String)> = cells
        .iter()
        .filter(|c| c.cache == CacheState::Cold)
        .flat_map(|c| {
            ["ours", "Go"].map(|side| {
                (c.label.clone(), side, format!("{side}, {}", c.label.trim_start_matches("cold, ")))
            })
        })
        .collect();
    if let Some(svg) = super::traces::residency_chart(
        traces,
        "bolt-scan, cold: the file in the page cache during the scan",
        &picks,
    )? {
        out.push(ChartFile {
            file: "residency-cold.svg".to_owned(),
            what:
                "resident share of the file during the first timed cold run of each tool and mode"
                    .to_owned(),
            svg,
        });
    }
    Ok(out)
}

/// The cached bbolt file: `target/bench/files/bolt-big-seed<S>-<SIZE>.db`
/// (`…-<SIZE>-batch<B>.db` when `batch` sets the generator's puts per
/// transaction, `gen --batch`), generated by the peer under a temporary
/// name and renamed into place when missing; `<file>.gen.txt` keeps the
/// command and its output.
///
/// # Errors
/// When the file cannot be made.
pub fn ensure_file(
    ws: &Workspace,
    peer: &str,
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
        Cmd::new(peer.to_owned())
            .args([
                "gen",
                &path_arg(p),
                "--shape",
                "big",
                "--seed",
                &seed.to_string(),
                "--size",
                &format_size(size),
            ])
            .args(batch.map(|b| ["--batch".to_owned(), b.to_string()]).into_iter().flatten())
    };
    let generated_now = !path.is_file();
    let (gen_line, gen_output) = if generated_now {
        progress.note(&format!(
            "xtask: generating {} with Go bbolt (cached for later runs)",
            path.display()
        ));
        let tmp = TempPath::new(dir.join(format!(".{name}.tmp-{}", std::process::id())));
        let cmd = gen_cmd(tmp.path());
        let out = cmd.run(&ws.root).context("cannot generate the bbolt file")?;
        let line = format!("{}  # then renamed to {}", cmd.shell(), path.display());
        fs::write(&sidecar, format!("# {line}\n{}", out.stdout))?;
        interrupt::check()?;
        fs::rename(tmp.path(), &path)
            .with_context(|| format!("cannot rename into {}", path.display()))?;
        let _ = tmp.keep();
        (line, out.stdout)
    } else if let Ok(text) = fs::read_to_string(&sidecar) {
        let (first, rest) = text.split_once('\n').unwrap_or((text.as_str(), ""));
        (first.trim_start_matches("# ").to_owned(), rest.to_owned())
    } else {
        (
            format!("{}  # (cached; no record of how it was made)", gen_cmd(&path).shell()),
            String::new(),
        )
    };
    Ok(FileInfo {
        bytes: fs::metadata(&path)?.len(),
        path: path_arg(&path),
        generated_now,
        gen_cmd: gen_line,
        expected_keys: parse_gen_entries(&gen_output),
    })
}

/// `inspector residency --json` on a 64 GiB sparse file, `runs` times.
fn residency_bench(
    ws: &Workspace,
    build: &super::proc::Output,
    build_cmd: &Cmd,
    runs: usize,
    progress: &Progress,
) -> Result<ResidencyBench> {
    let inspector = ws.release_bin("inspector");
    let sparse = path_arg(&ws.bench_dir().join(format!("sparse-64GiB-{}.img", std::process::id())));
    let truncate = Cmd::new("truncate").args(["-s", "64G", &sparse]);
    let cmd = Cmd::new(path_arg(&inspector)).args(["residency", &sparse, "--json"]);
    let remove = Cmd::new("rm").args(["-f", &sparse]);
    let mut bench = ResidencyBench {
        status: "missing".to_owned(),
        detail: None,
        commands: vec![truncate.shell(), cmd.shell(), remove.shell()],
        sparse_bytes: SPARSE_BYTES,
        walls: Vec::new(),
        pages: None,
    };
    let missing = if build.success {
        (!inspector.is_file()).then(|| format!("no {} after the build", inspector.display()))
    } else {
        let first_error =
            build.stderr.lines().find(|l| l.starts_with("error")).unwrap_or("").trim().to_owned();
        Some(format!("`{}` failed: {first_error}", build_cmd.shell()))
    };
    if let Some(detail) = missing {
        bench.detail = Some(detail);
        (0..runs).for_each(|_| progress.inc());
        return Ok(bench);
    }
    let guard = TempPath::new(PathBuf::from(&sparse));
    truncate.run(&ws.root)?;
    for run in 1..=runs {
        progress.set(format!("inspector residency, 64 GiB sparse, run {run}/{runs}"));
        progress.inc();
        let out = cmd.output(&ws.root)?;
        if !out.success {
            let msg = tail(&out.stderr, 3).replace('\n', " / ");
            // clap's "unrecognized subcommand": the subcommand is not there.
            bench.status =
                if msg.contains("unrecognized subcommand") { "missing" } else { "failed" }
                    .to_owned();
            bench.detail = Some(format!("{} ({}): {msg}", cmd.shell(), out.status));
            return Ok(bench);
        }
        bench.walls.push(out.wall_s);
        bench.pages = bench.pages.or_else(|| {
            let v: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
            Some((v.get("resident_pages")?.as_u64()?, v.get("total_pages")?.as_u64()?))
        });
    }
    drop(guard);
    bench.status = "ok".to_owned();
    Ok(bench)
}

/// The verdict on a cell's median ratio against "ours ≤ 1.0× Go bbolt".
#[must_use]
pub fn verdict(name: &str, ratio: Option<&Summary>) -> Verdict {
    judge(name, ratio, (1.0, Bound::AtMost), ("ours ", " Go bbolt"))
}

/// The seed's figures (boltdb/bolt pull request 455, Nov 2015: a 2 GB
/// file read in full after dropping the page cache, without and with
/// `MAP_POPULATE`) beside this run's cold medians of ours (contender 0)
/// and Go (1) in `plain` and `populate`, on a file of `size`.
pub fn seed_section(
    report: &mut Report,
    plain: Option<&CellRuns>,
    populate: Option<&CellRuns>,
    size: &str,
) {
    report.section("The seed's published figures").text(
        "boltdb/bolt pull request 455 (2015), which added `MmapFlags`, timed a full read of a 2 GB file after \
         `echo 1 > /proc/sys/vm/drop_caches`, without and with `MAP_POPULATE`. Its figures beside this run's \
         cold medians (took = open + scan):",
    );
    let mut t = Table::new(&["machine", "file", ">without", ">with", ">without / with"]);
    t.row(["i7-4910MQ laptop, SSD, Linux 3.16, Go 1.5.1 (the seed)", "2 GB", "8 s", "4 s", "2.0×"]);
    t.row(["1-vCPU cloud VM, HDD, Linux 3.16, Go 1.5.1 (the seed)", "2 GB", "130 s", "8 s", "16×"]);
    let mut speedups = Vec::new();
    if let (Some(plain), Some(pop)) = (plain, populate) {
        for (i, who) in [(0, "ours"), (1, "Go bbolt")] {
            if let (Some(a), Some(b)) = (plain.summary(i, "took_s"), pop.summary(i, "took_s")) {
                let x = a.median / b.median.max(1e-9);
                speedups.push(x);
                let role = if i == 0 { Role::Ours } else { Role::Peer };
                t.row_as(
                    role,
                    [
                        format!("this machine, {who}"),
                        size.to_owned(),
                        fmt_secs(a.median),
                        fmt_secs(b.median),
                        format!("{x:.1}×"),
                    ],
                );
            }
        }
    }
    report.table(t).text(if speedups.is_empty() {
        "No cold cells ran, so there is nothing to set beside the seed's figures."
    } else if speedups.iter().all(|&x| x > 1.0) {
        "What matches: on a cold cache `MAP_POPULATE` wins for both tools, as in the seed. The size of the \
         win depends on the device's latency and on read-ahead: bbolt maps with `MADV_RANDOM`, so a plain \
         scan faults one page at a time (the seed's HDD paid a seek each), while populate reads the file \
         sequentially with read-ahead. The residency chart below shows it: populate fills the cache before \
         the scan, the plain scan fills it behind the cursor."
    } else {
        "What differs: on this machine `MAP_POPULATE` did not win on a cold cache for every tool; the \
         device here (see read_ahead_kb and the O_DIRECT limit below) serves single-page faults fast enough \
         that reading the whole file up front does not pay."
    });
}

/// The results table of scan cells: took per tool and the ratio.
pub fn took_table(cells: &[&CellRuns]) -> Table {
    let mut t = Table::new(&["cell", ">ours", ">Go bbolt", ">ours/Go (per pair)"])
        .compares(&[1], &[2])
        .roles(Role::Ratio, &[3]);
    for c in cells {
        let (ratio, skipped) = c.ratio(0, 1, "took_s");
        let mut ratio = opt_ratio(ratio.as_ref());
        if skipped > 0 {
            ratio.push_str(&format!(" ({skipped} pair(s) without ratio)"));
        }
        t.row([
            c.label.clone(),
            opt_secs(c.summary(0, "took_s").as_ref()),
            opt_secs(c.summary(1, "took_s").as_ref()),
            ratio,
        ]);
    }
    t
}

/// The split table of scan cells: open, scan, wall, residency, keys.
pub fn split_table(cells: &[&CellRuns]) -> Table {
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
    ])
    .compares(&[1, 3, 6], &[2, 4, 7])
    .roles(Role::Ratio, &[5]);
    for c in cells {
        let m = |i, metric| opt_median(c.summary(i, metric).as_ref());
        let at_start: Vec<f64> =
            [0, 1].iter().flat_map(|&i| c.values(i, "resident_before")).collect();
        let after =
            |i| c.summary(i, "resident_after").map_or_else(|| "—".to_owned(), |x| pct(x.median));
        t.row([
            c.label.clone(),
            m(0, "open_s"),
            m(1, "open_s"),
            m(0, "scan_s"),
            m(1, "scan_s"),
            c.ratio(0, 1, "scan_s")
                .0
                .map_or_else(|| "—".to_owned(), |x| format!("{:.2}×", x.median)),
            m(0, "wall_s"),
            m(1, "wall_s"),
            Summary::of(&at_start).map_or_else(
                || "—".to_owned(),
                |x| {
                    if (x.max - x.min).abs() < 5e-4 {
                        pct(x.min)
                    } else {
                        format!("{}–{}", pct(x.min), pct(x.max))
                    }
                },
            ),
            format!("{} / {}", after(0), after(1)),
            c.distinct("keys").iter().map(u64::to_string).collect::<Vec<_>>().join(" / "),
        ]);
    }
    t
}

/// The note under [`split_table`].
pub const SPLIT_NOTE: &str = "*wall* = spawn to exit as seen by the harness: process start-up and exit for both, plus \
    for Go the peer script's checks (dpkg-query, source hash) before it execs the binary; not part of `took`. \
    *resident after*: fraction of the file in the page cache right after the run (median), i.e. what the tool \
    read in (cold) or left in place (warm).";

/// The warm-up list of scan cells: took per tool per untimed pair.
pub fn warmup_list(cells: &[&CellRuns]) -> Vec<String> {
    cells
        .iter()
        .map(|c| {
            let runs: Vec<String> = c
                .warmup
                .iter()
                .map(|r| {
                    let t = |i: usize| {
                        r.results
                            .get(i)
                            .and_then(|x| x.get("took_s"))
                            .map_or_else(|| "—".to_owned(), fmt_secs)
                    };
                    format!("{} / {}", t(0), t(1))
                })
                .collect();
            format!("{}: {}", c.label, runs.join("; "))
        })
        .collect()
}

/// The verdict of a scan cell, with the medians' differences when ours
/// is slower and a note when Go's whole-ms rounding matters.
pub fn scan_verdict(c: &CellRuns) -> Verdict {
    let ratio = c.ratio(0, 1, "took_s").0;
    let mut v = verdict(&c.label, ratio.as_ref());
    if ratio.is_some_and(|x| x.median > 1.0) {
        let d = |metric| match (c.summary(0, metric), c.summary(1, metric)) {
            (Some(a), Some(b)) => {
                let v = a.median - b.median;
                format!("{}{}", if v >= 0.0 { "+" } else { "−" }, fmt_secs(v.abs()))
            }
            _ => "?".to_owned(),
        };
        v.detail.push_str(&format!(
            "; ours − Go at the median: took {}, open {}, scan {}",
            d("took_s"),
            d("open_s"),
            d("scan_s")
        ));
    }
    if let Some(go) = c.summary(1, "took_s").filter(|g| g.median < 0.05) {
        v.detail.push_str(&format!(
            " (Go prints whole ms: at {} its rounding alone moves the ratio by up to ±{:.0} %)",
            fmt_secs(go.median),
            0.05 / go.median.max(1e-3)
        ));
    }
    v
}

fn render(r: &Results) -> Report {
    let mut o = Report::new(format!("bench bolt-scan — {}", r.started_utc));
    let warm_runs = r.runs.max(WARM_MIN_RUNS);
    o.text(format!(
        "The MAP_POPULATE experiment boltdb/bolt's maintainers reported, re-run: read-only cursor scan over every key of \
         bucket `{}` of a bbolt file made by Go bbolt, **ours** (`mapwise bolt traverse`) vs **Go bbolt {}** \
         (the peer's `traverse`), {} run{} each per cell ({warm_runs} in a warm cell), alternating ours and Go, the order \
         turning every pair (ours, Go; Go, ours; …). Finished {}.",
        r.bucket,
        r.versions.bbolt_readme.as_deref().unwrap_or("unknown"),
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        r.finished_utc,
    ));
    r.versions.machine(&mut o, &r.machine, r.loadavg_end.as_deref());
    o.section("File").text(r.file.paragraph());
    let settle = if r.machine.free_page_reporting.as_deref().is_some_and(|f| f.starts_with("on")) {
        format!(
            "This machine reports free pages to its VM host, so after a cold reset the harness waits {} s before the \
             run: the evicted page cache goes back to the host about 2 s after it is freed, and memory the guest \
             reuses after that costs a host-side fault at its first touch. Started at once, a run got a random mix \
             (a cold 2 GiB MAP_POPULATE scan took 0.2 s or 3–4 s after its populate, in both tools, by luck); after \
             the wait every cold run of both tools starts from the same state. ",
            COLD_SETTLE.as_secs()
        )
    } else {
        String::new()
    };
    let warmup = if r.warmup == 0 {
        "No warm-up pairs (`--warmup 0`)".to_owned()
    } else {
        format!(
            "Each cell starts with {} untimed warm-up pair{} (same reset before each run; listed below the split, raw in results.json)",
            r.warmup,
            if r.warmup == 1 { "" } else { "s" }
        )
    };
    o.section("Method").text(fill(
        include_str!("text/bolt-scan-method.md"),
        &[("settle", &settle), ("warm_min", &WARM_MIN_RUNS.to_string()), ("warmup", &warmup)],
    ));
    let mut commands = r.build_commands.clone();
    commands.push(r.file.gen_cmd.clone());
    for c in &r.cells {
        for (_, cmd) in &c.contenders {
            if !commands.contains(cmd) {
                commands.push(cmd.clone());
            }
        }
    }
    commands.extend(r.residency.commands.iter().cloned());
    o.section("Commands").text("Run from the workspace root.").code("sh", commands.join("\n"));
    let cells: Vec<&CellRuns> = r.cells.iter().collect();
    o.section("Results: took = open + scan").table(took_table(&cells));
    o.subsection("Open / scan split (medians), process wall time, cache state")
        .table(split_table(&cells))
        .text(SPLIT_NOTE);
    if r.warmup > 0 {
        o.text("Warm-up pairs (not in the statistics), took ours / Go:").list(warmup_list(&cells));
    }
    let cold = |populate| {
        r.cells.iter().find(|c| {
            c.cache == CacheState::Cold && c.label == scan_label(CacheState::Cold, populate)
        })
    };
    seed_section(&mut o, cold(false), cold(true), &r.size);
    o.section("Charts and residency traces");
    charts::add_images(&mut o, &r.charts);
    o.text(format!(
        "Every timed run was traced: the file's residency {}; {} traces in `traces/`. Play one with \
         `inspector replay traces/<cell>-<tool>-<run>.trace --file {}` (or load it beside the file in the browser viewer).",
        super::traces::cadence(),
        r.traces.len(),
        r.file.path
    ));
    limits::add_to(&mut o, &r.limits);
    let rs = &r.residency;
    let wall = Summary::of(&rs.walls);
    let (time, note) = match (rs.status.as_str(), &wall) {
        ("ok", Some(w)) => (
            w.secs(),
            format!(
                "target < {RESIDENCY_TARGET_S} s: {} (wall time of the whole process, median of {}){}",
                if w.median < RESIDENCY_TARGET_S { "PASS" } else { "FAIL" },
                rs.walls.len(),
                rs.pages.map_or_else(String::new, |(res, total)| format!(
                    "; it reported {res} of {total} pages resident"
                ))
            ),
        ),
        (other, _) => {
            ("—".to_owned(), format!("{other}: {}", rs.detail.clone().unwrap_or_default()))
        }
    };
    let mut t = Table::new(&["what", ">time", "notes"]);
    t.row([
        format!("`inspector residency`, {} sparse file", human_size(rs.sparse_bytes)),
        time,
        note,
    ]);
    o.section("Residency of a sparse file").table(t);
    let mut verdicts: Vec<Verdict> = r.cells.iter().map(scan_verdict).collect();
    verdicts.push(Verdict::new(
        "key counts",
        Outcome::of(r.keys_agree),
        if r.keys_agree {
            format!(
                "ours and Go agree in every run ({} keys{})",
                r.cells
                    .first()
                    .and_then(|c| c.distinct("keys").first().copied())
                    .map_or_else(|| "unknown".to_owned(), |k| k.to_string()),
                if r.file.expected_keys.is_some() { ", as generated" } else { "" }
            )
        } else {
            "**MISMATCH** — see the keys column and results.json".to_owned()
        },
    ));
    o.section("Verdicts (target: ours ≤ 1.0× Go bbolt, took)").verdicts(verdicts);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(open: f64, scan: f64, took: f64, keys: f64) -> Metrics {
        metrics(open, scan, took, keys)
    }

    #[test]
    fn ours_json_parses() {
        let out = r#"{"advice":"random","cold":false,"file_bytes":30941184,"keys":20000,"mlock":false,"open_s":0.000029289,"populate":false,"took_s":0.002935657,"touch":false,"traverse_s":0.002906368,"value_bytes":10922035}"#;
        assert_eq!(
            parse_ours(&format!("{out}\n")).unwrap(),
            m(0.000_029_289, 0.002_906_368, 0.002_935_657, 20000.0)
        );
        assert!(parse_ours("").is_err());
        assert!(parse_ours("{\"open_s\": 1}").is_err());
        assert!(
            parse_ours("warning: x\n{\"open_s\":1,\"traverse_s\":2,\"took_s\":3,\"keys\":4}\n")
                .is_ok()
        );
    }

    #[test]
    fn go_text_parses_in_any_order() {
        let out = "file: 30941184 bytes populate=true\nopen: 0.003s\ntraverse: 0.001s keys=20000 value_bytes=1 xor=00\ntook: 0.004s\n";
        assert_eq!(parse_go(out).unwrap(), m(0.003, 0.001, 0.004, 20000.0));
        let out = "resident-before: 0.0%\ntook: 4.321s\nopen: 0.000s\ntraverse: 4.321s keys=7\nresident-after: 100.0%\n";
        assert_eq!(parse_go(out).unwrap(), m(0.0, 4.321, 4.321, 7.0));
    }

    #[test]
    fn go_text_missing_parts_is_an_error() {
        assert!(parse_go("open: 0.003s\ntraverse: 0.001s keys=1\n").unwrap_err().contains("took"));
        assert!(
            parse_go("open: 0.003s\ntraverse: 0.001s\ntook: 1s\n").unwrap_err().contains("keys")
        );
        assert!(
            parse_go("open: xs\ntraverse: 0.001s keys=1\ntook: 1s\n").unwrap_err().contains("open")
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
        let v = verdict("c", Some(&s(&[0.8, 0.9, 0.95])));
        assert_eq!(v.outcome, Outcome::Pass);
        assert!(v.detail.starts_with("ours 0.90× Go bbolt"), "{v:?}");
        let v = verdict("c", Some(&s(&[0.9, 1.2, 1.3])));
        assert_eq!(v.outcome, Outcome::Fail);
        assert!(v.detail.ends_with("straddles 1.0×"), "{v:?}");
        assert_eq!(verdict("c", None).outcome, Outcome::None);
    }
}
