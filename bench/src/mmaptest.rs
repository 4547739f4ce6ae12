//! `cargo xtask bench mmaptest`: the read()-vs-mmap microbenchmark of the
//! 2003 PostgreSQL-list "mmap-test", ours (`mapwise mmaptest`) beside the
//! C reconstruction (`peers/mmaptest/mmaptest.c`, built here with
//! the README's -D flags), warm (one 72 KiB file, many iterations) and cold
//! (a list of files, one evicted pass), with and without touching the data.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::cell::{self, CellRuns, Contender, Metrics, Run, Tracing, both, metrics};
use super::charts::{self, ChartFile};
use super::limits::{self, Limit};
use super::machine::{self, Machine, Stamp};
use super::output;
use super::proc::{Cmd, json_line, shell_quote, tail};
use super::report::Role::{Other, Ours, Peer, Ratio};
use super::report::{Bound, Col, Outcome, Report, Table, Verdict, cell_table, judge, say, vars};
use super::schedule::CacheState::{self, Cold, HotSet, Warm};
use super::schedule::Round;
use super::stats::{fixed, or_dash};
use super::traces::{TraceInfo, Traces};
use super::units::{format_size, human_size, mb_per_s, plural};
use super::{CommonArgs, Progress, Workspace, path_arg};

/// Long help of `cargo xtask bench mmaptest`.
pub const HELP: &str = include_str!("text/mmaptest-help.txt");

/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/mmaptest-notes.md");
/// The seed's file: 72 KiB.
const WARM_BYTES: u64 = 72 * 1024;
/// Target: ours ≤ this × C, per cell.
const TARGET: f64 = 1.2;
const READ_64K: &str = "read() 64 KiB";
const MMAP_EACH: &str = "mmap+munmap each";
const MMAP_ONCE: &str = "mmap once";

/// The modes of the matrix, one a line: label | our flags | the C binary
/// (as run-matrix.sh names it) | its -D flags.
const MODES: [&str; 5] = [
    "read() 64 KiB | --mode read --read-size 65536 | read-64K | -DDEFAULT_READSIZE=65536",
    "read() whole file | --mode read --read-size whole | read-whole | -DDEFAULT_READSIZE=0",
    "mmap+munmap each | --mode mmap-each | mmap-per-iter | -DDO_MMAP",
    "mmap+munmap each, MAP_POPULATE | --mode mmap-each --populate | mmap-per-iter+populate | -DDO_MMAP -DPOPULATE",
    "mmap once | --mode mmap-once | mmap-once | -DDO_MMAP -DDO_MMAP_ONCE",
];

/// The four fields of a line of [`MODES`].
fn mode(line: &'static str) -> [&'static str; 4] {
    let mut f = line.split(" | ");
    [(); 4].map(|()| f.next().unwrap_or_default())
}

/// A preset: name, warm iterations, cold files and size, large memcpy.
fn preset(tiny: bool, full: bool) -> (&'static str, u64, u64, u64, u64) {
    if tiny {
        ("tiny", 200, 2, 1 << 20, 8 << 20)
    } else if full {
        ("full", 100_000, 64, 16 << 20, 64 << 20)
    } else {
        ("quick", 20_000, 16, 16 << 20, 64 << 20)
    }
}

/// `bench mmaptest` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Quick matrix (the default): 20 000 iterations warm, 16 files of 16 MiB cold.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The seed's matrix: 100 000 iterations warm, 64 files of 16 MiB (1 GiB) cold.
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

/// One cell of the matrix: its mode and its runs (ours is contender 0, C 1).
#[derive(Debug, Serialize)]
struct MmapCell {
    mode: &'static str,
    touch: bool,
    iterations: u64,
    #[serde(flatten)]
    runs: CellRuns,
}

impl MmapCell {
    /// `read() 64 KiB, touch`: the cell's label without the cache state.
    fn label(&self) -> String {
        self.runs.label.split_once(", ").unwrap_or_default().1.to_owned()
    }

    /// Contender `k`'s median loop time in µs per iteration.
    fn us_per_iter(&self, k: usize) -> Option<f64> {
        Some(self.runs.median(k, "secs")? * 1e6 / self.iterations.max(1) as f64)
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

/// Ours' JSON line on stderr as metrics.
fn parse_ours(stderr: &str) -> Result<Metrics, String> {
    let j: OursJson = json_line(stderr)?;
    let sum = j.checksum.map(|c| ("checksum", c as f64));
    Ok(metrics(
        [("secs", j.secs), ("setup_secs", j.setup_secs), ("bytes", j.bytes as f64)]
            .into_iter()
            .chain(sum),
    ))
}

/// The C line, `… bytes/iter=B iters=N wall=W s  U us/iter …`, as `secs`
/// (U × N: µs with three decimals, far finer than `wall=`) and `bytes`.
fn parse_c(stderr: &str) -> Result<Metrics, String> {
    let line = stderr.lines().find(|l| l.contains(" us/iter"));
    let line = line.ok_or_else(|| format!("no `us/iter` line in {:?}", tail(stderr, 3)))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let field = |key: &str| words.iter().find_map(|w| w.strip_prefix(key)?.parse::<u64>().ok());
    let at = words.iter().position(|&w| w == "us/iter");
    let us = at.and_then(|i| words.get(i.checked_sub(1)?)?.parse::<f64>().ok());
    match (field("bytes/iter="), field("iters="), us) {
        (Some(b), Some(n), Some(us)) if us.is_finite() && us >= 0.0 => {
            Ok(metrics([("secs", us * n as f64 / 1e6), ("bytes", b as f64 * n as f64)]))
        }
        _ => Err(format!("no `bytes/iter=B iters=N … U us/iter` in {line:?}")),
    }
}

#[derive(Debug, Default, Serialize)]
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
            Warm => (self.warm_bytes, self.warm_byte_sum),
            Cold | HotSet => {
                (self.cold_file_bytes * self.cold_files.len() as u64, self.cold_byte_sum)
            }
        }
    }
}

/// Everything results.json holds; the report is built from it.
#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    preset: &'static str,
    iterations: u64,
    runs: usize,
    warmup: usize,
    cc_version: Option<String>,
    c_source: String,
    inputs: Inputs,
    build_commands: Vec<String>,
    cells: Vec<MmapCell>,
    /// The device (cold O_DIRECT) and memory (cached read()) limits of the
    /// cold list, or of the warm file when no cold cell ran, then memcpy in xtask.
    limits: Vec<Limit>,
    checks: Vec<Verdict>,
    traces: Vec<TraceInfo>,
    charts: Vec<ChartFile>,
    #[serde(skip)]
    traces_paragraph: Option<String>,
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = args.common.runs()?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let (preset, iterations, cold_n, cold_size, memcpy_bytes) = preset(args.common.tiny, args.full);
    let iterations = args.iterations.unwrap_or(iterations);
    let caches: &[CacheState] = match (args.warm, args.cold) {
        (true, _) => &[Warm],
        (_, true) => &[Cold],
        _ => &[Warm, Cold],
    };
    mapwise_testkit::install::try_ensure(&[mapwise_testkit::install::Need::Cc])
        .map_err(anyhow::Error::msg)?;
    let source = ws.peer_file("mmaptest/mmaptest.c")?;
    let limit_passes = runs.max(3);
    let steps = 4 + caches.len() * MODES.len() * 4 * (warmup + runs) + limits::steps(limit_passes);
    let progress = Progress::new(steps as u64);
    let (build_ours, mapwise) = ws.build_mapwise(&progress)?;
    progress.set("building the C reconstruction");
    let c_dir = ws.bench_dir().join("mmaptest-c");
    fs::create_dir_all(&c_dir).with_context(|| format!("cannot create {}", c_dir.display()))?;
    let c_bin = |name, touch| path_arg(&c_dir.join(format!("{name}{}", plus(touch, "+touch"))));
    let mut build_commands = vec![build_ours.shell()];
    // Every mode, untouched and touching: ten C binaries, ten cells per cache state.
    let variants: Vec<_> =
        MODES.map(mode).into_iter().flat_map(|m| [(m, false), (m, true)]).collect();
    for &([.., name, flags], touch) in &variants {
        let cmd = Cmd::new("cc")
            .args(["-O2", "-Wall"])
            .args(flags.split_whitespace())
            .arg_if(touch, "-DTOUCH")
            .args(["-o", &c_bin(name, touch), &source]);
        cmd.run(&ws.root).context("cannot build the C variant")?;
        build_commands.push(cmd.shell());
    }
    progress.inc();

    progress.set("input files");
    let cold_n = args.cold_files.unwrap_or(cold_n);
    let cold_size = args.cold_size.unwrap_or(cold_size);
    let inputs = ensure_inputs(ws, cold_n, cold_size, &progress)?;
    progress.inc();
    let warm_files = vec![PathBuf::from(&inputs.warm_file)];
    let cold_files: Vec<PathBuf> = inputs.cold_files.iter().map(PathBuf::from).collect();
    let machine = Machine::describe(&warm_files[0]);

    // Every timed run is traced: each file's residency every 50 ms.
    let tracing = Tracing::new(ws);
    let mut cells = Vec::new();
    for &cache in caches {
        let (files, n) = if cache == Warm { (&warm_files, iterations) } else { (&cold_files, 1) };
        let file_args: Vec<String> = files.iter().map(|p| path_arg(p)).collect();
        for &([mode, flags, name, _], touch) in &variants {
            let ours = Cmd::new(&mapwise)
                .arg("mmaptest")
                .args(flags.split_whitespace())
                .arg_if(touch, "--touch")
                .args(["--iterations", &n.to_string(), "--json"]);
            let c = Cmd::new(c_bin(name, touch)).args(["-n", &n.to_string()]);
            let [ours, c] = [ours, c].map(|x| x.args(file_args.clone()).stdout_to_null());
            let contenders = vec![
                Contender::new("ours", ours, |o| parse_ours(&o.stderr)),
                Contender::new("C", c, |o| parse_c(&o.stderr)),
            ];
            let label = format!("{}, {mode}{}", cache.name(), plus(touch, ", touch"));
            let cell = cell::Cell::new(label, cache, files.clone(), contenders, (warmup, runs));
            let runs = cell::run(ws, &progress, &cell, &tracing)?;
            cells.push(MmapCell { mode, touch, iterations: n, runs });
        }
    }

    // The limits: memcpy, then the device and memory limits of the files
    // the cells read (the cold list, or the warm file when no cold cell ran).
    let mut limits = if caches.contains(&Cold) {
        limits::standard_files(&cold_files, &inputs.cold_glob, limit_passes, &progress)?
    } else {
        limits::standard(&warm_files[0], limit_passes, &progress)?
    };
    progress.set("limits: memcpy");
    limits
        .extend([WARM_BYTES, memcpy_bytes].map(|b| {
            limits::memcpy(b, if b == WARM_BYTES { iterations } else { 4 }, limit_passes)
        }));
    progress.inc();

    let dir = ws.report_dir(&args.common, started);
    let traces = tracing.traces.into_inner();
    let what = "the file(s) each run reads (the 72 KiB file warm, every file of the list cold, one \
                trace per file)";
    progress.set("charts");
    let charts = mmaptest_charts(&cells, &traces)?;
    let results = Results {
        stamp: Stamp::new("mmaptest", started, machine),
        preset,
        iterations,
        runs,
        warmup,
        cc_version: machine::first_line_of("cc", &["--version"]),
        c_source: source,
        checks: data_checks(&cells, &inputs),
        inputs,
        build_commands,
        cells,
        limits,
        traces: traces.list().to_vec(),
        charts,
        traces_paragraph: traces.paragraph(what, Path::new(&ws.rel(&dir))),
    };
    drop(progress);
    output::publish_traced(&dir, &render(&results), &results, &traces, &results.charts)?;
    let ok = results.checks.iter().all(|c| c.outcome != Outcome::Fail);
    Ok(output::exit(ok, "byte counts or checksums are wrong"))
}

/// `text` when `on`, else nothing.
fn plus(on: bool, text: &str) -> &str {
    if on { text } else { "" }
}

/// The charts: ours/C per cell, and the cold list's residency during the
/// first timed touching run of read() 64 KiB, mmap per iteration and mmap
/// once, ours and C (untouched mmap modes read nothing: their lines stay at 0).
fn mmaptest_charts(cells: &[MmapCell], traces: &Traces) -> Result<Vec<ChartFile>> {
    let mut out = vec![ChartFile::ratios(
        cells.iter().map(|c| &c.runs),
        "secs",
        ("mmaptest: loop time, ours / C", "loop time, ours / C per cell"),
        Some(TARGET),
    )?];
    let shown = |c: &&MmapCell| {
        c.runs.cache == Cold && c.touch && [READ_64K, MMAP_EACH, MMAP_ONCE].contains(&c.mode)
    };
    let pick = |c: &MmapCell, side| (c.runs.label.clone(), side, format!("{side}, {}", c.mode));
    let picks: Vec<(String, &str, String)> =
        cells.iter().filter(shown).flat_map(|c| ["ours", "C"].map(|side| pick(c, side))).collect();
    out.extend(super::traces::residency_file(
        traces,
        "residency-cold.svg",
        (
            "mmaptest, cold, touching: the list in the page cache during one pass",
            "resident share of the cold list during the first timed touching run, read() vs mmap, \
             ours and C",
        ),
        &picks,
    )?);
    Ok(out)
}

/// Makes `path` (`len` bytes of xorshift64 words from `seed`) unless it
/// exists with that size, under a temporary name renamed into place;
/// whether it was made now.
fn ensure_file(path: &Path, len: u64, seed: u64) -> Result<bool> {
    output::make_once(path, fs::metadata(path).is_ok_and(|m| m.len() == len), |tmp| {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let words = std::iter::repeat_with(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        });
        let bytes: Vec<u8> = words.flatten().take(usize::try_from(len)?).collect();
        fs::write(tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))
    })
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
        // 8 bytes at a time (SWAR): the bench is built without optimisation.
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

/// The 72 KiB file and the cold list, made when missing, with their byte sums.
fn ensure_inputs(ws: &Workspace, cold_n: u64, size: u64, progress: &Progress) -> Result<Inputs> {
    let dir = ws.bench_dir().join("files");
    let warm = dir.join("mmaptest-72KiB.bin");
    let mut generated_now = usize::from(ensure_file(&warm, WARM_BYTES, 1)?);
    let (mut cold_files, mut cold_byte_sum) = (Vec::new(), 0u64);
    let name = |i: &str| dir.join(format!("mmaptest-cold-{}-{i}.bin", format_size(size)));
    for i in 0..cold_n {
        let p = name(&format!("{i:03}"));
        if !p.is_file() && i == 0 {
            let (at, size) = (dir.display(), format_size(size));
            progress.note(&format!("xtask: making {cold_n} files of {size} in {at} (cached)"));
        }
        generated_now += usize::from(ensure_file(&p, size, 100 + i)?);
        cold_byte_sum = cold_byte_sum.wrapping_add(file_byte_sum(&p)?);
        cold_files.push(path_arg(&p));
    }
    let glob = name(&format!("{{000..{:03}}}", cold_n.saturating_sub(1)));
    Ok(Inputs {
        warm_byte_sum: file_byte_sum(&warm)?,
        warm_file: path_arg(&warm),
        warm_bytes: WARM_BYTES,
        cold_files,
        cold_file_bytes: size,
        cold_byte_sum,
        cold_glob: path_arg(&glob),
        generated_now,
    })
}

/// A command line with a list of more than two files shown as its brace form `glob`.
fn short_files(line: &str, files: &[String], glob: &str) -> String {
    if files.len() <= 2 {
        return line.to_owned();
    }
    let list: Vec<String> = files.iter().map(|f| shell_quote(f)).collect();
    line.replace(&list.join(" "), glob)
}

/// Bytes = file sizes × iterations on both sides in every run (warm-up
/// included); every touching run of ours has checksum = byte sum ×
/// iterations, and no untouched run has one.
fn data_checks(cells: &[MmapCell], inputs: &Inputs) -> Vec<Verdict> {
    let mut checks = Vec::new();
    for cache in [Warm, Cold] {
        let cs: Vec<&MmapCell> = cells.iter().filter(|c| c.runs.cache == cache).collect();
        let Some(n) = cs.first().map(|c| c.iterations) else {
            continue;
        };
        let (pass_bytes, pass_sum) = inputs.per_pass(cache);
        let (want_bytes, want_sum) = (pass_bytes * n, pass_sum.wrapping_mul(n));
        let (mut bad_bytes, mut bad_sums, mut sums, mut rounds) = (vec![], vec![], 0, 0);
        for c in &cs {
            let all = || c.runs.warmup.iter().chain(&c.runs.rounds);
            rounds += all().count();
            let bytes = c.runs.distinct("bytes");
            if bytes != [want_bytes] {
                bad_bytes.push(format!("{}: {bytes:?}", c.runs.label));
            }
            let got = c.runs.distinct("checksum");
            let summed = |r: &&Round<Run>| r.results.first().and_then(|o| o.get("checksum"));
            let with = all().filter(|r| summed(r).is_some()).count();
            sums += with;
            let want: &[u64] = if c.touch { &[want_sum] } else { &[] };
            if got != want || (c.touch && with != all().count()) {
                bad_sums.push(format!("{}: {got:?} in {with} runs", c.runs.label));
            }
        }
        let iters = format!("{n} iteration{}", plural(usize::try_from(n).unwrap_or(2)));
        let ok_bytes = format!(
            "every run of both programs delivered {want_bytes} bytes ({pass_bytes} × {iters}), \
             {rounds} runs each"
        );
        let ok_sums = format!(
            "all {sums} touching runs of ours printed checksum={want_sum} (the files' byte sum, \
             {pass_sum}, × iterations), in every mode"
        );
        for (what, bad, want, ok) in
            [("bytes", bad_bytes, want_bytes, ok_bytes), ("checksums", bad_sums, want_sum, ok_sums)]
        {
            let outcome = Outcome::of(bad.is_empty());
            let mismatch = || format!("**MISMATCH**, want {want}: {}", bad.join("; "));
            let detail = if bad.is_empty() { ok } else { mismatch() };
            checks.push(Verdict::new(format!("{} {what}", cache.name()), outcome, detail));
        }
    }
    checks
}

/// The seed's figures (72 KiB × 100 000), none of them verified: the
/// mode as the seed names it, the total it quotes in seconds, and our mode.
const HISTORICAL: [(&str, f64, Option<&str>); 4] = [
    (MMAP_ONCE, 1.28, Some(MMAP_ONCE)),
    ("mmap+munmap per iteration", 7.49, Some(MMAP_EACH)),
    (READ_64K, 19.35, Some(READ_64K)),
    (
        "unattributed (not 1-byte reads: at 100 000 iterations those take ~3 200 s on the notes' machine)",
        82.4,
        None,
    ),
];

/// The seed's figures beside this run's untouched warm ratios (ours and
/// C), and whether the seed's order holds: mmap once faster than
/// mmap+munmap per iteration, faster than read() 64 KiB.
fn seed_section(o: &mut Report, r: &Results) {
    let warm = |mode| r.cells.iter().find(|c| c.runs.cache == Warm && !c.touch && c.mode == mode);
    if warm(MMAP_ONCE).is_none() {
        return;
    }
    let n = r.iterations.to_string();
    o.section("The seed's figures (unverified)").text(say(NOTES, "seed", &[("iterations", &n)]));
    let median = |mode, k| warm(mode)?.runs.median(k, "secs");
    let ratio = |mode, k| Some(median(mode, k)? / median(MMAP_ONCE, k).filter(|&m| m > 0.0)?);
    let to_once = |mode: Option<&'static str>, k| {
        mode.map_or_else(
            || "not run: the seed names no mode".to_owned(),
            |m| fixed(ratio(m, k), 1, "×"),
        )
    };
    let mut t = Table::of(
        "mode | >2003 total | >2003, ratio to mmap once | >ours, ratio to mmap once \
         | >C, ratio to mmap once",
    )
    .compares(&[3], &[4]);
    // The seed's rows, then our modes it does not name.
    let ours_only = MODES.map(|m| mode(m)[0]).into_iter();
    let ours_only = ours_only.filter(|m| !HISTORICAL.iter().any(|h| h.2 == Some(*m)));
    let rows = HISTORICAL.into_iter().map(|(name, secs, ours)| (name, Some(secs), ours));
    for (name, secs, ours) in rows.chain(ours_only.map(|m| (m, None, Some(m)))) {
        let total = or_dash(secs, |s| format!("{s} s (unverified)"));
        let seed = fixed(secs.filter(|_| ours.is_some()).map(|s| s / 1.28), 1, "×");
        t.row([name.to_owned(), total, seed, to_once(ours, 0), to_once(ours, 1)]);
    }
    let said = |k| match (median(MMAP_ONCE, k), median(MMAP_EACH, k), median(READ_64K, k)) {
        (Some(a), Some(b), Some(c)) if a < b && b < c => "holds",
        (Some(_), Some(_), Some(_)) => "does not hold",
        _ => "cannot be checked (cells missing)",
    };
    o.table(t).text(say(NOTES, "order", &[("said0", said(0)), ("said1", said(1))]));
}

/// A cache state's results: loop times and ratios; setup, wall times, start state.
fn results_tables(cs: &[&MmapCell], bytes: u64) -> [Table; 2] {
    let warm = cs.first().is_some_and(|c| c.runs.cache == Warm);
    let us = |c: &&MmapCell| both(|k| fixed(c.us_per_iter(k), 2, ""));
    let after = |c: &&MmapCell| both(|k| c.runs.resident_after(k));
    let gbs = |c: &&MmapCell| {
        let secs = |k| c.runs.median(k, "secs").filter(|&s| s > 0.0);
        both(|k| fixed(secs(k).map(|s| mb_per_s(bytes, s) / 1e3), 2, ""))
    };
    let label: Col<'_, &MmapCell> = ("mode", Other, &|c| c.label());
    let m = |k, metric| move |c: &&MmapCell| c.runs.median_time(k, metric);
    let (setup, ours_wall, c_wall) = (m(0, "setup_secs"), m(0, "wall_s"), m(1, "wall_s"));
    [
        cell_table(
            cs,
            &[
                label,
                (">ours", Ours, &|c| c.runs.time(0, "secs")),
                (">C", Peer, &|c| c.runs.time(1, "secs")),
                (">ours/C (per pair)", Ratio, &|c| c.runs.ratio_text("secs")),
                if warm {
                    (">µs/iter ours / C", Other, &us)
                } else {
                    (">resident after ours / C", Other, &after)
                },
                (">GB/s ours / C", Other, &gbs),
            ],
        ),
        cell_table(
            cs,
            &[
                label,
                (">ours setup", Ours, &setup),
                (">ours wall", Ours, &ours_wall),
                (">C wall", Peer, &c_wall),
                (">resident at start", Other, &|c| c.runs.resident_at_start()),
            ],
        ),
    ]
}

/// Touch − untouched per mode, µs per iteration (medians), ours and C.
fn touch_costs(cs: &[&MmapCell]) -> Table {
    let mut t = Table::of("mode | >ours | >C").compares(&[1], &[2]);
    for [mode, ..] in MODES.map(mode) {
        let find = |touch| cs.iter().find(|c| c.mode == mode && c.touch == touch);
        if let (Some(plain), Some(touched)) = (find(false), find(true)) {
            let diff = |k| Some(touched.us_per_iter(k)? - plain.us_per_iter(k)?);
            t.row([mode.to_owned(), fixed(diff(0), 2, ""), fixed(diff(1), 2, "")]);
        }
    }
    t
}

/// The report.
fn render(r: &Results) -> Report {
    let mut o = r.stamp.report();
    if r.preset == "tiny" {
        o.text("**`--tiny`: a smoke run of the harness on tiny inputs; its times mean nothing.**");
    }
    let (runs, warmup, s, s2) =
        (r.runs.to_string(), r.warmup.to_string(), plural(r.runs), plural(r.warmup));
    let (c_source, preset, finished) = (&r.c_source, r.preset, &r.stamp.finished_utc);
    o.text(say(NOTES, "intro", vars![runs, s, warmup, s2, c_source, preset, finished]));
    let cc = [("C compiler", r.cc_version.clone())];
    r.stamp.add_to(&mut o, "the files", &cc);
    let i = &r.inputs;
    let (n_cold, cold_bytes) = (i.cold_files.len(), human_size(i.per_pass(Cold).0));
    let (warm_size, cold_size) = (human_size(i.warm_bytes), human_size(i.cold_file_bytes));
    let (warm, first) = (&i.warm_file, i.cold_files.first().map_or("", String::as_str));
    let (warm_bytes, warm_sum, cold_sum) = (i.warm_bytes, i.warm_byte_sum, i.cold_byte_sum);
    o.section("Files").list([
        format!("warm: `{warm}`, {warm_size} ({warm_bytes} bytes, the seed's size), byte sum {warm_sum}"),
        format!("cold: {n_cold} files of {cold_size} (`{first}` …), {cold_bytes} in all, byte sum {cold_sum}"),
        format!(
            "deterministic contents (xorshift64), cached in target/bench/files/; {} made by this run",
            i.generated_now
        ),
    ]);
    let n = r.iterations.to_string();
    o.section("Method").text(say(NOTES, "method", &[("iterations", &n), ("warmup", &warmup)]));
    let mut commands = r.build_commands.clone();
    let cmds = r.cells.iter().flat_map(|c| &c.runs.contenders);
    commands.extend(cmds.map(|(_, cmd)| short_files(cmd, &i.cold_files, &i.cold_glob)));
    o.commands(&commands);
    for cache in [Warm, Cold] {
        let cs: Vec<&MmapCell> = r.cells.iter().filter(|c| c.runs.cache == cache).collect();
        let Some(n) = cs.first().map(|c| c.iterations) else {
            continue;
        };
        let bytes = i.per_pass(cache).0 * n;
        let run = human_size(bytes);
        o.section(match cache {
            Warm => format!("Results: warm, {warm_size} × {n} iterations ({run} per run)"),
            Cold | HotSet => {
                format!("Results: cold, one pass over {n_cold} files of {cold_size} ({run})")
            }
        });
        let [t, split] = results_tables(&cs, bytes);
        o.table(t).table(split).text(say(NOTES, "setup", &[]));
        if cache == Warm {
            o.text(say(NOTES, "touch", &[])).table(touch_costs(&cs));
        } else {
            o.text(say(NOTES, "cold", &[("n_cold", &n_cold.to_string())]));
        }
    }
    seed_section(&mut o, r);
    charts::section(&mut o, &r.charts, r.traces_paragraph.clone());
    limits::add_to(&mut o, &r.limits);
    o.text(say(NOTES, "limits", &[("iterations", &n)]));
    let verdict = |c: &MmapCell| {
        let ratio = c.runs.ratio(0, 1, "secs").0;
        judge(&c.runs.label, ratio.as_ref(), (TARGET, Bound::AtMost), ("ours ", " C"))
    };
    o.section(format!("Verdicts (target: ours ≤ {TARGET}× C, loop time)"))
        .verdicts(r.cells.iter().map(verdict).collect());
    o.section("Data checks").verdicts(r.checks.clone());
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers() {
        let c = "read-chunked files=1 bytes/iter=73728 iters=100000 wall=0.530 s  5.304 us/iter\n";
        let t = parse_c(c).unwrap();
        assert_eq!((t.len(), t["bytes"]), (2, 7_372_800_000.0));
        assert!((t["secs"] - 0.5304).abs() < 1e-9, "{t:?}");
        assert!(parse_c("x bytes/iter=1 wall=1 s 2.0 us/iter").is_err());
        let ours = r#"{"mode":"read","bytes":737280,"setup_secs":3e-5,"secs":0.0001,"checksum":9}"#;
        let t = parse_ours(&format!("warning: x\n{ours}\n")).unwrap();
        assert_eq!((t["secs"], t["bytes"], t["checksum"]), (1e-4, 737_280.0, 9.0));
        assert!(
            !parse_ours(&ours.replace(r#","checksum":9"#, "")).unwrap().contains_key("checksum")
        );
    }

    #[test]
    fn data_checks_want_every_byte_and_checksum() {
        let run = |kv: &[(&str, f64)]| Run {
            metrics: metrics(kv.iter().copied()),
            wall_s: 0.0,
            max_rss_kib: None,
            prep: None,
            resident_after: None,
            pages_after: None,
            stdout: String::new(),
            stderr: String::new(),
        };
        let cell = |touch, ours_sum: f64| {
            let ours = run(&[("bytes", 20.0), ("checksum", ours_sum)][..1 + usize::from(touch)]);
            let results = vec![ours, run(&[("bytes", 20.0)])];
            let (label, cache, contenders) = ("warm, m".to_owned(), Warm, Vec::new());
            let rounds = vec![Round { round: 1, order: vec![0, 1], results }];
            let runs = CellRuns { label, cache, contenders, warmup: Vec::new(), rounds };
            MmapCell { mode: "m", touch, iterations: 2, runs }
        };
        let inputs = Inputs { warm_bytes: 10, warm_byte_sum: 7, ..Inputs::default() };
        let outcomes = |cells: Vec<MmapCell>| {
            data_checks(&cells, &inputs).iter().map(|v| v.outcome).collect::<Vec<_>>()
        };
        assert_eq!(outcomes(vec![cell(false, 0.0), cell(true, 14.0)]), [Outcome::Pass; 2]);
        assert_eq!(outcomes(vec![cell(true, 7.0)]), [Outcome::Pass, Outcome::Fail]);
    }
}
