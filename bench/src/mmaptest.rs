//! `cargo xtask bench mmaptest`: the read()-vs-mmap microbenchmark of the
//! 2003 PostgreSQL-list "mmap-test", ours (`mapwise mmaptest`) beside the
//! C reconstruction (`peers/mmaptest/mmaptest.c`, built here with
//! the README's -D flags), warm (one 72 KiB file, many iterations) and cold
//! (a list of files, one evicted pass), with and without touching the data.

use std::fs::{self, File};
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::cell::{self, Cell, CellRuns, Contender, Metrics, Tracing};
use super::charts::{self, ChartFile, RatioBar};
use super::limits::{self, Limit};
use super::machine::{self, Machine};
use super::output::{self, TempPath};
use super::pagecache::ReadPass;
use super::proc::{Cmd, shell_quote, tail};
use super::report::{Outcome, Report, Role, Table, Verdict, fill};
use super::schedule::CacheState;
use super::stats::{Summary, at_most_verdict, opt_median, opt_ratio, opt_secs};
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
byte) and touching (every byte read). Cells: warm (the 72 KiB file, evicted
then read once by xtask before every run, --iterations passes) and cold (the
list, fsynced and posix_fadvise(DONTNEED)ed by xtask before every run, one
pass). Compared: the loop time each program measures itself
(CLOCK_MONOTONIC around the loop; files opened and, for mmap-once, mapped
before it). Then the limits: memcpy of 72 KiB in cache and of large
buffers, and a cold O_DIRECT and a cached read() of the cold list (the warm
file with --warm). One verdict per cell against the target \"ours ≤ 1.2× C\"
(median of per-pair ratios), and data checks: bytes = file sizes ×
iterations on both sides, and every touching run of ours printing the
files' byte sum × iterations as its checksum (exit status 1 otherwise).

Every timed run traces each file it reads (traces/; `inspector replay T
--file F`). Charts: ratios.svg (ours/C per cell, the 1.2× target) and
residency-cold.svg (the cold list during the first touching run of read()
64 KiB, mmap per iteration and mmap once, ours and C). The seed's quoted
(unverified) totals stand beside this run's ratios to mmap once.

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
const DASH: &str = "—";

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
        let (name, iterations, cold_files, cold_size, memcpy_bytes) = if tiny {
            ("tiny", 200, 2, 1 << 20, 8 << 20)
        } else if full {
            ("full", 100_000, 64, 16 << 20, 64 << 20)
        } else {
            ("quick", 20_000, 16, 16 << 20, 64 << 20)
        };
        Preset {
            name,
            iterations,
            cold_files,
            cold_size,
            memcpy_bytes,
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

    /// Its label, our flags, the C binary's name (as in run-matrix.sh) and
    /// its -D flags.
    fn spec(self) -> [&'static str; 4] {
        match self {
            Variant::Read64K => [
                "read() 64 KiB",
                "--mode read --read-size 65536",
                "read-64K",
                "-DDEFAULT_READSIZE=65536",
            ],
            Variant::ReadWhole => [
                "read() whole file",
                "--mode read --read-size whole",
                "read-whole",
                "-DDEFAULT_READSIZE=0",
            ],
            Variant::MmapEach => [
                "mmap+munmap each",
                "--mode mmap-each",
                "mmap-per-iter",
                "-DDO_MMAP",
            ],
            Variant::MmapEachPopulate => [
                "mmap+munmap each, MAP_POPULATE",
                "--mode mmap-each --populate",
                "mmap-per-iter+populate",
                "-DDO_MMAP -DPOPULATE",
            ],
            Variant::MmapOnce => [
                "mmap once",
                "--mode mmap-once",
                "mmap-once",
                "-DDO_MMAP -DDO_MMAP_ONCE",
            ],
        }
    }

    fn label(self) -> &'static str {
        self.spec()[0]
    }

    fn c_name(self, touch: bool) -> String {
        format!("{}{}", self.spec()[2], if touch { "+touch" } else { "" })
    }
}

/// One cell of the matrix: its mode and its runs (contender 0 is ours,
/// 1 is C).
#[derive(Debug, Serialize)]
struct MmapCell {
    variant: Variant,
    touch: bool,
    iterations: u64,
    #[serde(flatten)]
    runs: CellRuns,
}

/// `read() 64 KiB, touch`: a cell's label without the cache state.
fn mode(variant: Variant, touch: bool) -> String {
    format!("{}{}", variant.label(), if touch { ", touch" } else { "" })
}

impl MmapCell {
    fn mode(&self) -> String {
        mode(self.variant, self.touch)
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

#[expect(clippy::cast_precision_loss)]
fn metrics(pairs: &[(&str, u64)], secs: &[(&str, f64)]) -> Metrics {
    let ints = pairs.iter().map(|&(k, v)| (k.to_owned(), v as f64));
    ints.chain(secs.iter().map(|&(k, v)| (k.to_owned(), v)))
        .collect()
}

/// Parses ours: the last line of stderr that is a JSON object, into
/// `secs`, `setup_secs`, `bytes` and (touching) `checksum`.
///
/// # Errors
/// When there is no such line.
pub fn parse_ours(stderr: &str) -> Result<Metrics, String> {
    let line = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("no JSON object in output {:?}", tail(stderr, 3)))?;
    let j: OursJson =
        serde_json::from_str(line).map_err(|e| format!("bad JSON from mapwise: {e}: {line}"))?;
    let mut ints = vec![("bytes", j.bytes)];
    ints.extend(j.checksum.map(|c| ("checksum", c)));
    Ok(metrics(
        &ints,
        &[("secs", j.secs), ("setup_secs", j.setup_secs)],
    ))
}

/// Parses the C line: `… bytes/iter=B iters=N wall=W s  U us/iter …` into
/// `secs` and `bytes`. The loop time is U × N (µs with three decimals: far
/// finer than `wall=`).
///
/// # Errors
/// When the line or one of its fields is missing.
pub fn parse_c(stderr: &str) -> Result<Metrics, String> {
    let line = stderr
        .lines()
        .find(|l| l.contains(" us/iter"))
        .ok_or_else(|| format!("no `us/iter` line in {:?}", tail(stderr, 3)))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let field = |key: &str| {
        words
            .iter()
            .find_map(|w| w.strip_prefix(key)?.parse::<u64>().ok())
            .ok_or_else(|| format!("no `{key}N` in {line:?}"))
    };
    let (per_iter, iters) = (field("bytes/iter=")?, field("iters=")?);
    let us = words
        .iter()
        .position(|&w| w == "us/iter")
        .and_then(|i| words.get(i.checked_sub(1)?)?.parse::<f64>().ok())
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("no `U us/iter` in {line:?}"))?;
    let bytes = per_iter
        .checked_mul(iters)
        .ok_or_else(|| format!("byte count overflows in {line:?}"))?;
    #[expect(clippy::cast_precision_loss)]
    let secs = us * iters as f64 / 1e6;
    Ok(metrics(&[("bytes", bytes)], &[("secs", secs)]))
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

impl Inputs {
    /// Bytes and byte sum of one pass over the files of `cache`.
    fn per_pass(&self, cache: CacheState) -> (u64, u64) {
        match cache {
            CacheState::Warm => (self.warm_bytes, self.warm_byte_sum),
            CacheState::Cold => (
                self.cold_file_bytes * self.cold_files.len() as u64,
                self.cold_byte_sum,
            ),
        }
    }
}

/// Everything results.json holds; the report is built from it.
#[derive(Debug, Serialize)]
struct Results {
    bench: &'static str,
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
    cells: Vec<MmapCell>,
    /// memcpy in xtask, then the device (cold O_DIRECT) and memory
    /// (cached read()) limits of the cold list, or of the warm file when no
    /// cold cell ran.
    limits: Vec<Limit>,
    checks: Vec<Verdict>,
    traces: Vec<TraceInfo>,
    charts: Vec<ChartFile>,
    #[serde(skip)]
    traces_paragraph: Option<String>,
}

/// Runs the bench.
///
/// # Errors
/// When a build, an input file, a run or the report fails.
#[expect(clippy::too_many_lines)]
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = usize::try_from(args.common.runs).context("--runs too large")?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let preset = Preset::of(args.common.tiny, args.full);
    let iterations = args.iterations.unwrap_or(preset.iterations);
    let caches: &[CacheState] = if args.warm {
        &[CacheState::Warm]
    } else if args.cold {
        &[CacheState::Cold]
    } else {
        &[CacheState::Warm, CacheState::Cold]
    };
    mapwise_testkit::install::try_ensure(&[mapwise_testkit::install::Need::Cc])
        .map_err(anyhow::Error::msg)?;
    let source = ws.peer_file("mmaptest/mmaptest.c")?;
    let limit_passes = runs.max(3);
    let cells_n = caches.len() * Variant::ALL.len() * 2;
    let steps = 4 + cells_n * (warmup + runs) * 2 + limits::steps(limit_passes);
    let progress = Progress::new(steps as u64);

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
            let cmd = Cmd::new("cc")
                .args(["-O2", "-Wall"])
                .args(v.spec()[3].split_whitespace())
                .arg_if(touch, "-DTOUCH")
                .arg("-o")
                .arg(path_arg(&c_dir.join(v.c_name(touch))))
                .arg(source.clone());
            cmd.run(&ws.root).context("cannot build the C variant")?;
            build_commands.push(cmd.shell());
        }
    }
    progress.inc();

    progress.set("input files");
    let cold_n = args.cold_files.unwrap_or(preset.cold_files);
    let cold_size = args.cold_size.unwrap_or(preset.cold_size);
    let inputs = ensure_inputs(ws, cold_n, cold_size, &progress)?;
    progress.inc();
    let warm_files = vec![PathBuf::from(&inputs.warm_file)];
    let cold_files: Vec<PathBuf> = inputs.cold_files.iter().map(PathBuf::from).collect();
    let machine = Machine::describe(&warm_files[0]);

    // Every timed run is traced: each file's residency every 50 ms.
    let traces = std::cell::RefCell::new(Traces::new());
    let scratch = ws.bench_dir().join("scratch");
    let tracing = Tracing {
        traces: &traces,
        scratch: &scratch,
    };
    let mut cells = Vec::with_capacity(cells_n);
    for &cache in caches {
        let (files, n) = match cache {
            CacheState::Warm => (&warm_files, iterations),
            CacheState::Cold => (&cold_files, 1),
        };
        let file_args: Vec<String> = files.iter().map(|p| path_arg(p)).collect();
        for variant in Variant::ALL {
            for touch in [false, true] {
                let ours = Cmd::new(path_arg(&mapwise))
                    .arg("mmaptest")
                    .args(variant.spec()[1].split_whitespace())
                    .arg_if(touch, "--touch")
                    .args(["--iterations", &n.to_string(), "--json"])
                    .args(file_args.iter().cloned())
                    .stdout_to_null();
                let c = Cmd::new(path_arg(&c_dir.join(variant.c_name(touch))))
                    .args(["-n", &n.to_string()])
                    .args(file_args.iter().cloned())
                    .stdout_to_null();
                let cell = Cell {
                    label: format!("{}, {}", cache.name(), mode(variant, touch)),
                    cache,
                    files: files.clone(),
                    fresh: Vec::new(),
                    contenders: vec![
                        Contender::new("ours", ours, |o| parse_ours(&o.stderr)),
                        Contender::new("C", c, |o| parse_c(&o.stderr)),
                    ],
                    warmup,
                    runs,
                    shared_warm_reset: false,
                    untimed_warm_first: false,
                    cold_settle: None,
                };
                cells.push(MmapCell {
                    variant,
                    touch,
                    iterations: n,
                    runs: cell::run(ws, &progress, &cell, &tracing)?,
                });
            }
        }
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
    limits.extend(if caches.contains(&CacheState::Cold) {
        limits::standard_files(&cold_files, &inputs.cold_glob, limit_passes, &progress)?
    } else {
        limits::standard(&warm_files[0], limit_passes, &progress)?
    });

    let dir = ws.report_dir(&args.common, started);
    let traces = traces.into_inner();
    let mut results = Results {
        bench: "mmaptest",
        started_utc: utc_human(started),
        finished_utc: utc_human(SystemTime::now()),
        preset: preset.name,
        iterations,
        runs,
        warmup,
        machine,
        cc_version: machine::first_line_of("cc", &["--version"]),
        loadavg_end: machine::loadavg(),
        c_source: source,
        checks: data_checks(&cells, &inputs),
        inputs,
        build_commands,
        cells,
        limits,
        traces: traces.list().to_vec(),
        charts: Vec::new(),
        traces_paragraph: traces.paragraph(
            "the file(s) each run reads (the 72 KiB file warm, every file of the list cold, one trace per \
             file)",
            Path::new(&ws.rel(&dir)),
        ),
    };
    progress.set("charts");
    results.charts = mmaptest_charts(&results.cells, &traces)?;
    drop(progress);
    let report = render(&results);
    output::publish_traced_report(&dir, &report, &results, &traces, &results.charts)?;
    if results.checks.iter().any(|c| c.outcome == Outcome::Fail) {
        eprintln!("xtask: byte counts or checksums are wrong (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The charts of the report: ours/C per cell, and the cold list's
/// residency during the first timed touching run of read() 64 KiB, mmap
/// per iteration and mmap once, ours and C (the untouched mmap modes read
/// nothing, so their lines would stay at 0 %).
fn mmaptest_charts(cells: &[MmapCell], traces: &Traces) -> Result<Vec<ChartFile>> {
    let bars: Vec<RatioBar> = cells
        .iter()
        .filter_map(|c| Some(RatioBar::of(&c.runs.label, &c.runs.ratio(0, 1, "secs").0?)))
        .collect();
    let mut out = vec![ChartFile {
        file: "ratios.svg".to_owned(),
        what: "loop time, ours / C per cell".to_owned(),
        svg: charts::ratios("mmaptest: loop time, ours / C", &bars, Some(TARGET))?,
    }];
    let picks: Vec<(String, &str, String)> = cells
        .iter()
        .filter(|c| {
            c.runs.cache == CacheState::Cold
                && c.touch
                && matches!(
                    c.variant,
                    Variant::Read64K | Variant::MmapEach | Variant::MmapOnce
                )
        })
        .flat_map(|c| {
            ["ours", "C"].map(|side| {
                let line = format!("{side}, {}", c.variant.label());
                (c.runs.label.clone(), side, line)
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
            what: "resident share of the cold list during the first timed touching run, read() vs \
                   mmap, ours and C"
                .to_owned(),
            svg,
        });
    }
    Ok(out)
}

/// Deterministic file contents: xorshift64 words from `state`.
fn fill_bytes(buf: &mut [u8], state: &mut u64) {
    for chunk in buf.chunks_mut(8) {
        let mut x = *state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *state = x;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// Makes `path` (`len` bytes from `seed`) unless it exists with that size;
/// written under a temporary name and renamed into place. Returns whether
/// it was made now.
fn ensure_file(path: &Path, len: u64, seed: u64) -> Result<bool> {
    if fs::metadata(path).is_ok_and(|m| m.len() == len) {
        return Ok(false);
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = TempPath::new(path.with_file_name(format!(".{name}.tmp-{}", std::process::id())));
    let mut f = File::create(tmp.path())
        .with_context(|| format!("cannot create {}", tmp.path().display()))?;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        fill_bytes(&mut buf[..n], &mut state);
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
        // 8 bytes at a time: the bench is built without optimisation.
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
    let mut cold_byte_sum = 0u64;
    for i in 0..cold_n {
        let p = dir.join(format!("mmaptest-cold-{size}-{i:03}.bin"));
        if !p.is_file() && i == 0 {
            progress.note(&format!(
                "xtask: making {cold_n} cold files of {size} in {} (cached for later runs)",
                dir.display()
            ));
        }
        generated_now += usize::from(ensure_file(&p, cold_size, 100 + i)?);
        cold_byte_sum = cold_byte_sum.wrapping_add(file_byte_sum(&p)?);
        cold.push(path_arg(&p));
    }
    let last = cold_n.saturating_sub(1);
    Ok(Inputs {
        warm_byte_sum: file_byte_sum(&warm)?,
        warm_file: path_arg(&warm),
        warm_bytes: WARM_BYTES,
        cold_files: cold,
        cold_file_bytes: cold_size,
        cold_byte_sum,
        cold_glob: path_arg(&dir.join(format!("mmaptest-cold-{size}-{{000..{last:03}}}.bin"))),
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
    let src = vec![0x5Au8; usize::try_from(bytes).unwrap_or(usize::MAX)];
    let mut dst = src.clone();
    let passes = (0..passes)
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
    let size = human_size(bytes);
    Limit {
        what: format!("memcpy {size}"),
        how: format!(
            "copy_from_slice (libc memcpy) between two {size} buffers, {reps} times per pass, in xtask"
        ),
        file: String::new(),
        passes,
        error: None,
    }
}

/// Bytes = file sizes × iterations on both sides in every run (warm-up
/// included); every touching run of ours has checksum = byte sum ×
/// iterations, and no untouched run has one.
fn data_checks(cells: &[MmapCell], inputs: &Inputs) -> Vec<Verdict> {
    let mut checks = Vec::new();
    for cache in [CacheState::Warm, CacheState::Cold] {
        let cs: Vec<&MmapCell> = cells.iter().filter(|c| c.runs.cache == cache).collect();
        let Some(n) = cs.first().map(|c| c.iterations) else {
            continue;
        };
        let (pass_bytes, pass_sum) = inputs.per_pass(cache);
        let (want_bytes, want_sum) = (pass_bytes * n, pass_sum.wrapping_mul(n));
        #[expect(clippy::cast_precision_loss)]
        let (want_b, want_s) = (want_bytes as f64, want_sum as f64);
        let (mut bad_bytes, mut bad_sums, mut sums, mut rounds) = (vec![], vec![], 0, 0);
        for c in &cs {
            for round in c.runs.warmup.iter().chain(&c.runs.rounds) {
                rounds += 1;
                for (run, who) in round.results.iter().zip(["ours", "C"]) {
                    let got = run.get("bytes");
                    if got != Some(want_b) {
                        bad_bytes.push(format!("{} {who}: {got:?}", c.runs.label));
                    }
                }
                match (
                    c.touch,
                    round.results.first().and_then(|r| r.get("checksum")),
                ) {
                    (true, Some(s)) if s == want_s => sums += 1,
                    (false, None) => {}
                    (_, got) => bad_sums.push(format!("{}: {got:?}", c.runs.label)),
                }
            }
        }
        let check = |what: &str, bad: Vec<String>, want: u64, ok: String| {
            let detail = if bad.is_empty() {
                ok
            } else {
                format!("**MISMATCH**, want {want}: {}", bad.join("; "))
            };
            Verdict::new(
                format!("{} {what}", cache.name()),
                Outcome::of(bad.is_empty()),
                detail,
            )
        };
        let s = if n == 1 { "" } else { "s" };
        checks.push(check("bytes", bad_bytes, want_bytes, format!(
            "every run of both programs delivered {want_bytes} bytes ({pass_bytes} × {n} iteration{s}), {rounds} runs each"
        )));
        checks.push(check("checksums", bad_sums, want_sum, format!(
            "all {sums} touching runs of ours printed checksum={want_sum} (the files' byte sum, {pass_sum}, × iterations), in every mode"
        )));
    }
    checks
}

/// The verdict on a cell's median ratio against "ours ≤ 1.2× C".
fn verdict(name: &str, ratio: Option<&Summary>) -> Verdict {
    let Some(r) = ratio else {
        return Verdict::new(name, Outcome::None, "no ratio: C measured 0 s");
    };
    let line = at_most_verdict(r, TARGET, "ours ", " C");
    let (word, detail) = line.split_once(" — ").unwrap_or((&line, ""));
    Verdict::new(name, Outcome::of(word == "PASS"), detail)
}

/// GB/s (10^9 B/s) of `bytes` in a median time.
fn gbs(bytes: u64, s: Option<&Summary>) -> String {
    s.filter(|s| s.median > 0.0).map_or_else(
        || DASH.to_owned(),
        |s| format!("{:.2}", mb_per_s(bytes, s.median) / 1e3),
    )
}

/// µs per iteration of a median time.
#[expect(clippy::cast_precision_loss)]
fn per_iter(iterations: u64, median: Option<f64>) -> Option<f64> {
    median.map(|m| m * 1e6 / iterations.max(1) as f64)
}

fn fixed2(x: Option<f64>) -> String {
    x.map_or_else(|| DASH.to_owned(), |x| format!("{x:.2}"))
}

/// The cost of touching the data: touch − untouched, per mode, µs per
/// iteration (medians), ours and C.
fn touch_costs(o: &mut Report, cs: &[&MmapCell], iterations: u64) {
    o.text(
        "Cost of touching the data (touch − untouched, medians, µs per iteration): the summing loop for read(), \
         the page faults plus the summing loop for mmap. Ours sums bytes with SSE2 `psadbw`, C sums 8-byte words \
         in a scalar loop, so the read() rows mostly compare the two summing loops.",
    );
    let mut t = Table::new(&["mode", ">ours", ">C"]).compares(&[1], &[2]);
    for v in Variant::ALL {
        let find = |touch| cs.iter().find(|c| c.variant == v && c.touch == touch);
        let (Some(plain), Some(touched)) = (find(false), find(true)) else {
            continue;
        };
        let diff = |k| {
            let us =
                |c: &MmapCell| per_iter(iterations, c.runs.summary(k, "secs").map(|s| s.median));
            fixed2(us(touched).zip(us(plain)).map(|(a, b)| a - b))
        };
        t.row([v.label().to_owned(), diff(0), diff(1)]);
    }
    o.table(t);
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
fn seed_section(o: &mut Report, r: &Results) {
    let warm: Vec<&MmapCell> = r
        .cells
        .iter()
        .filter(|c| c.runs.cache == CacheState::Warm && !c.touch)
        .collect();
    if warm.is_empty() {
        return;
    }
    o.section("The seed's figures (unverified)").text(format!(
        "The seed quotes these totals for 72 KiB × 100 000 iterations (2003, machine unknown). The message \
         that posted the program and its table was **not found** in any archive we could search \
         (pgsql-performance and pgsql-hackers, March 2003; searched again for this report), so they are hearsay, \
         quoted for their ratios only. Beside them, this run's untouched warm cells ({} iterations, the faithful \
         reconstruction), each as a ratio to mmap once (ratios of medians):",
        r.iterations
    ));
    let median = |v: Variant, k: usize| {
        let c = warm.iter().find(|c| c.variant == v)?;
        Some(c.runs.summary(k, "secs")?.median)
    };
    let to_once = |v, k| Some(median(v, k)? / median(Variant::MmapOnce, k).filter(|&m| m > 0.0)?);
    let fmt = |x: Option<f64>| x.map_or_else(|| DASH.to_owned(), |x| format!("{x:.1}×"));
    let mut t = Table::new(&[
        "mode",
        ">2003 total",
        ">2003, ratio to mmap once",
        ">ours, ratio to mmap once",
        ">C, ratio to mmap once",
    ])
    .compares(&[3], &[4]);
    for (mode, text, secs, variant) in HISTORICAL {
        // A seed row naming no mode has nothing of this run beside it.
        let ours_c = |k| {
            variant.map_or_else(
                || "not run: the seed names no mode".to_owned(),
                |v| fmt(to_once(v, k)),
            )
        };
        let seed = fmt(secs.map(|s| s / 1.28));
        t.row([
            mode.to_owned(),
            format!("{text} (unverified)"),
            seed,
            ours_c(0),
            ours_c(1),
        ]);
    }
    for v in Variant::ALL {
        if !HISTORICAL.iter().any(|h| h.3 == Some(v)) {
            let row = [v.label(), DASH, DASH].map(str::to_owned);
            t.row(
                row.into_iter()
                    .chain([fmt(to_once(v, 0)), fmt(to_once(v, 1))]),
            );
        }
    }
    let said = |k| match (
        median(Variant::MmapOnce, k),
        median(Variant::MmapEach, k),
        median(Variant::Read64K, k),
    ) {
        (Some(a), Some(b), Some(c)) if seed_order_holds(a, b, c) => "holds",
        (Some(_), Some(_), Some(_)) => "does not hold",
        _ => "cannot be checked (cells missing)",
    };
    let memcpy72 = r
        .limits
        .iter()
        .find(|l| l.what == format!("memcpy {}", human_size(WARM_BYTES)))
        .and_then(|l| {
            #[expect(clippy::cast_precision_loss)]
            let per: Vec<f64> = l
                .passes
                .iter()
                .map(|p| p.secs / (p.bytes as f64 / WARM_BYTES as f64).max(1.0) * 1e6)
                .collect();
            Summary::of(&per).map(|s| s.median)
        });
    let us = |x: Option<f64>| x.map_or_else(|| "?".to_owned(), |x| format!("{x:.2} µs"));
    let c_us = |v| us(per_iter(r.iterations, median(v, 1)));
    o.table(t).text(format!(
        "What matches: the seed's order (mmap once fastest, then mmap+munmap per iteration, then read() 64 KiB) \
         {} for ours and {} for C. What does not: the sizes of the ratios, the seed's 5.9× (per iteration) and \
         15.1× (read) against {} and {} here (ours), {} and {} (C). Why: untouched, the mmap modes read no byte \
         of the file in either run (`write(2)` to /dev/null never reads its buffer), so each ratio weighs a \
         72 KiB copy (read) or one mmap+munmap (per iteration) against almost nothing, and those costs are the \
         machine's: here a 72 KiB memcpy takes {} (the limits below), an iteration of read() 64 KiB {} (C) and \
         of mmap+munmap {} (C); the 2003 machine is not known. The touch cells above are the fair comparison.",
        said(0),
        said(1),
        fmt(to_once(Variant::MmapEach, 0)),
        fmt(to_once(Variant::Read64K, 0)),
        fmt(to_once(Variant::MmapEach, 1)),
        fmt(to_once(Variant::Read64K, 1)),
        us(memcpy72),
        c_us(Variant::Read64K),
        c_us(Variant::MmapEach),
    ));
}

/// The limits table: memcpy and the reads of the files, with the rate
/// as µs per 72 KiB beside the warm cells' µs per iteration.
fn limits_table(limits: &[Limit]) -> Table {
    let header = [
        "what",
        ">time per pass",
        ">GB/s (10^9 B/s)",
        ">µs per 72 KiB",
        "how",
    ];
    let mut t = Table::new(&header).limits();
    for l in limits {
        if let Some(e) = &l.error {
            t.row([
                l.what.clone(),
                DASH.into(),
                DASH.into(),
                DASH.into(),
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
        let per72 = fixed2(rate.map(|s| WARM_BYTES as f64 / (s.median * 1e3)));
        let rate = rate.map_or_else(
            || DASH.to_owned(),
            |s| format!("{:.2} [{:.2}–{:.2}]", s.median, s.min, s.max),
        );
        t.row([
            l.what.clone(),
            opt_secs(Summary::of(&secs).as_ref()),
            rate,
            per72,
            l.how.clone(),
        ]);
    }
    t
}

/// The report.
#[expect(clippy::too_many_lines)]
fn render(r: &Results) -> Report {
    let mut o = Report::new(format!("bench mmaptest — {}", r.started_utc));
    if r.preset == "tiny" {
        o.text("**`--tiny`: a smoke run of the harness on tiny inputs; its times mean nothing.**");
    }
    let s = |n: usize| if n == 1 { "" } else { "s" };
    o.text(format!(
        "The read()-vs-mmap microbenchmark of the 2003 PostgreSQL-list \"mmap-test\", reconstructed: **ours** \
         (`mapwise mmaptest`) beside **the C reconstruction** (`{}`, built with cc -O2 and the README's -D flags), \
         {} run{} each per cell after {} warm-up pair{}, alternating ours and C, the order turning every pair \
         (ours, C; C, ours; …). Preset `{}`. Finished {}.",
        r.c_source,
        r.runs,
        s(r.runs),
        r.warmup,
        s(r.warmup),
        r.preset,
        r.finished_utc,
    ));
    let cc = [("C compiler", r.cc_version.clone())];
    r.machine
        .add_to(&mut o, "the files", &cc, r.loadavg_end.as_deref());
    let i = &r.inputs;
    let n_cold = i.cold_files.len();
    o.section("Files").list([
        format!(
            "warm: `{}`, {} ({} bytes, the seed's size), byte sum {}",
            i.warm_file,
            human_size(i.warm_bytes),
            i.warm_bytes,
            i.warm_byte_sum
        ),
        format!(
            "cold: {n_cold} files of {} (`{}` …), {} in all, byte sum {}",
            human_size(i.cold_file_bytes),
            i.cold_files.first().cloned().unwrap_or_default(),
            human_size(i.per_pass(CacheState::Cold).0),
            i.cold_byte_sum
        ),
        format!(
            "deterministic contents (xorshift64), cached in target/bench/files/; {} made by this run",
            i.generated_now
        ),
    ]);
    let vars = [
        ("iterations", r.iterations.to_string()),
        ("warmup", r.warmup.to_string()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    o.section("Method")
        .text(fill(include_str!("text/mmaptest-method.md"), &vars));
    let mut commands = r.build_commands.clone();
    let cmds = r.cells.iter().flat_map(|c| &c.runs.contenders);
    commands.extend(cmds.map(|(_, cmd)| short_files(cmd, &i.cold_files, &i.cold_glob)));
    o.section("Commands")
        .text("Run from the workspace root.")
        .code("sh", commands.join("\n"));

    for cache in [CacheState::Warm, CacheState::Cold] {
        let cs: Vec<&MmapCell> = r.cells.iter().filter(|c| c.runs.cache == cache).collect();
        let Some(n) = cs.first().map(|c| c.iterations) else {
            continue;
        };
        let warm = cache == CacheState::Warm;
        let bytes = i.per_pass(cache).0 * n;
        o.section(if warm {
            let each = human_size(i.warm_bytes);
            format!(
                "Results: warm, {each} × {n} iterations ({} per run)",
                human_size(bytes)
            )
        } else {
            let each = human_size(i.cold_file_bytes);
            format!(
                "Results: cold, one pass over {n_cold} files of {each} ({})",
                human_size(bytes)
            )
        });
        let fourth = if warm {
            ">µs/iter ours / C"
        } else {
            ">resident after ours / C"
        };
        let mut t = Table::new(&[
            "mode",
            ">ours",
            ">C",
            ">ours/C (per pair)",
            fourth,
            ">GB/s ours / C",
        ])
        .compares(&[1], &[2])
        .roles(Role::Ratio, &[3]);
        let mut split = Table::new(&[
            "mode",
            ">ours setup",
            ">ours wall",
            ">C wall",
            ">resident at start",
        ])
        .compares(&[1, 2], &[3]);
        for c in &cs {
            let runs = &c.runs;
            let secs = |k| runs.summary(k, "secs");
            let both = |f: &dyn Fn(usize) -> String| format!("{} / {}", f(0), f(1));
            let (ratio, skipped) = runs.ratio(0, 1, "secs");
            let mut ratio = opt_ratio(ratio.as_ref());
            if skipped > 0 {
                ratio.push_str(&format!(" ({skipped} pair(s) without ratio)"));
            }
            let fourth = if warm {
                both(&|k| fixed2(per_iter(n, secs(k).map(|s| s.median))))
            } else {
                both(&|k| {
                    runs.summary(k, "resident_after")
                        .map_or_else(|| DASH.to_owned(), |x| pct(x.median))
                })
            };
            let gb = both(&|k| gbs(bytes, secs(k).as_ref()));
            t.row([
                c.mode(),
                opt_secs(secs(0).as_ref()),
                opt_secs(secs(1).as_ref()),
                ratio,
                fourth,
                gb,
            ]);
            let start: Vec<f64> = [0, 1]
                .iter()
                .flat_map(|&k| runs.values(k, "resident_before"))
                .collect();
            let start = Summary::of(&start).map_or_else(
                || DASH.to_owned(),
                |x| {
                    if x.max - x.min < 5e-4 {
                        pct(x.min)
                    } else {
                        format!("{}–{}", pct(x.min), pct(x.max))
                    }
                },
            );
            let m = |k, metric| opt_median(runs.summary(k, metric).as_ref());
            split.row([
                c.mode(),
                m(0, "setup_secs"),
                m(0, "wall_s"),
                m(1, "wall_s"),
                start,
            ]);
        }
        o.table(t).table(split).text(
            "*setup*: ours' preparation before the clock (buffer, or mapping every file for mmap once, plus one \
             run of the loop's code path without file data); C does its preparation untimed too and does not print \
             it. *wall*: spawn to exit as seen by xtask (medians).",
        );
        if warm {
            touch_costs(&mut o, &cs, n);
        } else {
            o.text(format!(
                "*resident after*: fraction of the list in the page cache right after the run (median): untouched \
                 mmap modes read nothing, so their times are {n_cold} `mmap`/`write`/`munmap` calls (tens of µs: \
                 one slow run moves the ratio a lot)."
            ));
        }
    }
    seed_section(&mut o, r);

    o.section("Charts and residency traces");
    charts::add_images(&mut o, &r.charts);
    if let Some(p) = &r.traces_paragraph {
        o.text(p.clone());
    }
    o.section("Physical limits").table(limits_table(&r.limits));
    if let Some(l) = r.limits.iter().find(|l| !l.file.is_empty()) {
        o.text(format!(
            "The read rows read `{}` whole, file after file (memcpy runs in xtask's memory).",
            l.file
        ));
    }
    o.text(
        "A warm read() is that in-cache copy plus a system call, so it lands near the 72 KiB memcpy (the \
         kernel's copy routine is not libc's, so it can come out a little faster); a cold pass cannot beat the \
         O_DIRECT device read by much (read-ahead overlaps I/O with the copy). Untouched mmap modes claim rates \
         above all of these because they read nothing.",
    );
    let verdicts = r
        .cells
        .iter()
        .map(|c| verdict(&c.runs.label, c.runs.ratio(0, 1, "secs").0.as_ref()));
    o.section(format!("Verdicts (target: ours ≤ {TARGET}× C, loop time)"))
        .verdicts(verdicts.collect());
    o.section("Data checks").verdicts(r.checks.clone());
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_lines_parse() {
        let err = "read-chunked readsize=65536 files=1 bytes/iter=73728 iters=100000 wall=0.530 s  5.304 us/iter  13.90 GB/s (data not touched by user space in mmap modes)\n";
        let t = parse_c(err).unwrap();
        assert_eq!(t["bytes"], 7_372_800_000.0);
        assert!((t["secs"] - 0.5304).abs() < 1e-9, "{t:?}");
        assert_eq!(t.len(), 2);
        let cold = "mmap-once readsize=65536 files=16 bytes/iter=268435456 iters=1 wall=0.000 s  12.345 us/iter  21745.00 GB/s (touching data)";
        let t = parse_c(cold).unwrap();
        assert_eq!(t["bytes"], 268_435_456.0);
        assert!((t["secs"] - 12.345e-6).abs() < 1e-12);
        assert!(parse_c("usage: mmaptest [-n ITERATIONS] FILE...").is_err());
        assert!(parse_c("x bytes/iter=1 wall=1 s 2.0 us/iter").is_err());
    }

    #[test]
    fn ours_json_parses() {
        let err = "{\"mode\":\"read\",\"read_size\":65536,\"whole_file\":false,\"populate\":false,\"touch\":true,\"cold\":false,\"files\":1,\"bytes_per_iteration\":73728,\"iterations\":10,\"bytes\":737280,\"setup_secs\":3e-5,\"secs\":0.0001,\"gb_per_s\":7.3,\"checksum\":93986630}\n";
        let want = metrics(
            &[("bytes", 737_280), ("checksum", 93_986_630)],
            &[("secs", 0.0001), ("setup_secs", 3e-5)],
        );
        assert_eq!(parse_ours(err).unwrap(), want);
        let untouched = err.replace(",\"checksum\":93986630", "");
        assert!(!parse_ours(&untouched).unwrap().contains_key("checksum"));
        assert!(parse_ours("mapwise: boom\n").is_err());
    }

    #[test]
    fn generated_contents_are_deterministic() {
        let (mut a, mut b) = ([0u8; 21], [0u8; 21]);
        let (mut s1, mut s2) = (7u64, 7u64);
        fill_bytes(&mut a, &mut s1);
        fill_bytes(&mut b, &mut s2);
        assert_eq!(a, b);
        assert!(a.iter().any(|&x| x != 0));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.bin");
        assert!(ensure_file(&p, 1000, 3).unwrap());
        assert!(!ensure_file(&p, 1000, 3).unwrap());
        let bytes = fs::read(&p).unwrap();
        let sum: u64 = bytes.iter().map(|&x| u64::from(x)).sum();
        assert_eq!(file_byte_sum(&p).unwrap(), sum);
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
        let p = |t, f| {
            let p = Preset::of(t, f);
            (p.name, p.iterations, p.cold_files, p.cold_size)
        };
        assert_eq!(p(true, true), ("tiny", 200, 2, 1 << 20));
        assert_eq!(p(false, false), ("quick", 20_000, 16, 16 << 20));
        // The seed's count.
        assert_eq!(p(false, true), ("full", 100_000, 64, 16 << 20));
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
        let v = verdict("c", Some(&s(&[0.9, 1.0, 1.1])));
        assert_eq!(v.outcome, Outcome::Pass);
        assert!(v.detail.starts_with("ours 1.00× C"), "{v:?}");
        let v = verdict("c", Some(&s(&[1.1, 1.3, 1.4])));
        assert_eq!(v.outcome, Outcome::Fail);
        assert!(v.detail.ends_with("straddles 1.2×"), "{v:?}");
        assert_eq!(verdict("c", None).outcome, Outcome::None);
    }
}
