//! `cargo xtask bench rrd`: the seed experiment re-run — N separate
//! `updatev` processes into a ~1.7 MB RRD, rrdtool 1.7.2 beside each of
//! our I/O modes, warm and cold; the same updates in one process, ours
//! beside librrd; the creates, the mode table, the 2007 figures and the
//! physical limits. Every loop's final file must be byte-identical to
//! rrdtool's, every `updatev` output equal to rrdtool's. The cells are data
//! (`CELLS`) run by one loop runner on [`schedule::rotate`]; the report's
//! prose lives in `text/rrd-report.md`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, anyhow, ensure};
use mapwise_core::rrd::Header;
use mapwise_native::engine::rng::SplitMix64;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cell::{self, CellRuns, Contender, Metrics, Tracing};
use super::charts::{self, ChartFile, RatioBar};
use super::limits::{self, Limit};
use super::machine::{self, Machine, Stamp};
use super::pagecache;
use super::proc::{Cmd, Output, shell_quote, tail};
use super::report::{Bound, Outcome, Report, Role, Table, Verdict, judge, say, vars};
use super::schedule::{self, CacheState};
use super::stats::{
    Summary, fixed, fmt_secs, median, one_or, opt_secs, opt_time, or_dash, pair_ratios,
};
use super::strace;
use super::traces::{self, TraceInfo};
use super::units::{human_size, ranges};
use super::{CommonArgs, Progress, Workspace, interrupt, output, path_arg};
use CacheState::{Cold, HotSet, Warm};

/// Long help of `cargo xtask bench rrd`.
pub const HELP: &str = include_str!("text/rrd-help.txt").trim_ascii_end();

/// Samples per `updatev` call.
const PER_CALL: usize = 3;
/// The sample stream's seed (`peers/rrd/peer bench-updatev`'s default).
const STREAM_SEED: u64 = 0;
/// The starting file's seed (`peers/rrd/peer gen --seed`).
const BIG_SEED: u64 = 1;
/// Targets: process level ours ≤ × rrdtool's total; in-process warm ≥ × librrd's
/// updates/s, cold ≤ × its time.
const TARGETS: [f64; 3] = [0.5, 1.5, 1.0];
/// The seed's finding: direct ≥ this × mmap ("far slower")…
const FAR_SLOWER: f64 = 2.0;
/// …and fd/mmap inside this range ("close").
const CLOSE: (f64, f64) = (0.8, 1.25);
/// The seed's create arguments (`peers/rrd/peer seed-create`).
const SEED_CREATE: &str =
    "-s 86400 -b 962496000 DS:ds0:GAUGE:86400:U:U RRA:AVERAGE:.5:1:10 RRA:HWPREDICT:10:.5:.1:2";
/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/rrd-report.md");

/// `bench rrd` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// 200 calls per loop (the default).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The seed's 1000 calls per loop.
    #[arg(long, conflicts_with = "tiny")]
    full: bool,
    /// Calls per loop (overrides --quick/--full).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000), conflicts_with = "tiny")]
    calls: Option<u64>,
    /// Rounds of the in-process cells (a warm loop lasts a few ms, so
    /// one preemption moves a total) [default: 4 × --runs].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000), conflicts_with = "tiny")]
    inproc_runs: Option<u64>,
    /// Untimed rounds at the start of each cell (same preparation),
    /// kept in results.json only [default: 1, --tiny 0].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=100))]
    warmup: Option<u64>,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// Who runs a loop: rrdtool (librrd in-process) or ours in one I/O mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Tool {
    #[default]
    Rrdtool,
    Mmap,
    #[serde(rename = "mmap-2pages")]
    Mmap2Pages,
    Fd,
    Direct,
}
use Tool::{Direct, Fd, Mmap, Mmap2Pages, Rrdtool};

const TOOLS: [Tool; 5] = [Rrdtool, Mmap, Mmap2Pages, Fd, Direct];
const MODES: [Tool; 4] = [Mmap, Mmap2Pages, Fd, Direct];

impl Tool {
    /// Our `--io` value (none for rrdtool).
    fn io(self) -> Option<&'static str> {
        [None, Some("mmap"), Some("mmap-2pages"), Some("fd"), Some("direct")][self as usize]
    }

    /// Directory and trace side: the mode, `rrdtool`, or `librrd` in-process.
    fn key(self, inproc: bool) -> &'static str {
        self.io().unwrap_or(["rrdtool", "librrd"][usize::from(inproc)])
    }

    /// For tables: `rrdtool`, `librrd`, `ours fd`.
    fn label(self, inproc: bool) -> String {
        self.io().map_or_else(|| self.key(inproc).to_owned(), |m| format!("ours {m}"))
    }

    fn role(self) -> Role {
        if self == Rrdtool { Role::Peer } else { Role::Ours }
    }
}

/// What a cell measures: `updatev` processes (on the big or the seed's file) or in-process calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Level {
    Process,
    SeedFile,
    Inproc,
    InprocHandle,
}
use Level::{Inproc, InprocHandle, Process, SeedFile};

/// Every cell, in order; the kept handle is warm only (it keeps the file open, mapped).
const CELLS: [(Level, CacheState); 6] = [
    (Process, Warm),
    (Process, Cold),
    (SeedFile, Warm),
    (Inproc, Warm),
    (Inproc, Cold),
    (InprocHandle, Warm),
];

impl Level {
    fn inproc(self) -> bool {
        matches!(self, Inproc | InprocHandle)
    }

    fn tools(self) -> &'static [Tool] {
        &TOOLS[..[5, 2, 5, 5][self as usize]]
    }

    /// Its name in the report, in trace names, and on charts (empty: the cache state's).
    fn names(self) -> [&'static str; 3] {
        [
            ["process level", "process", ""],
            ["process level, the seed's file", "seed file", "seed file"],
            ["in-process", "in-process", ""],
            ["in-process, kept handle", "in-process handle", "kept handle"],
        ][self as usize]
    }

    /// The trace cell with `cache`: `process cold`, …
    fn trace_cell(self, cache: CacheState) -> String {
        format!("{} {}", self.names()[1], cache.name())
    }
}

/// The calls `peers/rrd/peer bench-updatev` makes: [`PER_CALL`] samples per
/// call, `TIME:V1:V2…`, one `step` apart from `last_up` on, every value
/// `%.3f` of u·1000 drawn from splitmix64(`seed`), DS by DS.
fn sample_stream(last_up: i64, step: u64, ds: usize, calls: usize, seed: u64) -> Vec<Vec<String>> {
    let mut r = SplitMix64::new(seed);
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    let mut sample = |i: usize| {
        let t = last_up.saturating_add(step.saturating_mul(i64::try_from(i).unwrap_or(0)));
        let values: String = (0..ds).map(|_| format!(":{:.3}", r.unit() * 1000.0)).collect();
        format!("{t}{values}")
    };
    let call = |c: usize| (1..=PER_CALL).map(|k| sample(c * PER_CALL + k)).collect();
    (0..calls).map(call).collect()
}

/// The create arguments of shape `name` in `peers/rrd/peer shapes` output.
fn shape_args(shapes: &str, name: &str) -> Option<Vec<String>> {
    let mut lines = shapes.lines();
    lines.find(|l| l.split_whitespace().next() == Some(name))?;
    let rest = lines.next()?.trim().strip_prefix("rrdtool create NAME.rrd ")?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The seed's finding in one setting: direct/mmap, fd/mmap (medians of per-round ratios).
#[derive(Clone, Copy, Debug, Serialize)]
struct Finding {
    direct_vs_mmap: Option<f64>,
    fd_vs_mmap: Option<f64>,
}

impl Finding {
    /// Whether direct is far slower, whether fd is close, and both (the finding reproduced).
    fn holds(&self) -> [Option<bool>; 3] {
        let far = self.direct_vs_mmap.map(|r| r >= FAR_SLOWER);
        let close = self.fd_vs_mmap.map(|r| (CLOSE.0..=CLOSE.1).contains(&r));
        [far, close, far.zip(close).map(|(a, b)| a && b)]
    }
}

/// `program` in `cwd` with the peer's environment (TZ=UTC LC_ALL=C LANG=C), shown as `shown`.
fn in_env(program: impl AsRef<Path>, shown: &str, cwd: &Path) -> Cmd {
    let cmd = Cmd::new(path_arg(program.as_ref())).shown_as(shell_quote(shown)).in_dir(cwd);
    [("TZ", "UTC"), ("LC_ALL", "C"), ("LANG", "C")].into_iter().fold(cmd, |c, (k, v)| c.env(k, v))
}

fn rrdtool(cwd: &Path) -> Cmd {
    in_env("rrdtool", "rrdtool", cwd)
}

/// `path` (relative to `root`) as seen from `cwd` (under `root`).
fn relative(path: &Path, root: &Path, cwd: &Path) -> String {
    let ups = cwd.strip_prefix(root).unwrap_or(cwd).components().count();
    path_arg(&std::iter::repeat_n(Path::new(".."), ups).collect::<PathBuf>().join(path))
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

fn count(pages: &[u32]) -> u32 {
    u32::try_from(pages.len()).unwrap_or(u32::MAX)
}

/// Where the peer's librrd driver copies the file: `dir/rrd-bench-*/NAME` (Python's `mkdtemp`).
fn find_librrd_copy(dir: &Path, name: &str) -> Option<PathBuf> {
    fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let p = e.path().join(name);
        let ours = e.file_name().to_string_lossy().starts_with("rrd-bench-");
        (ours && p.is_file()).then_some(p)
    })
}

/// A starting file, its copies' name, the calls, and rrdtool's outputs and final bytes for them.
struct Input {
    path: PathBuf,
    name: &'static str,
    calls: Vec<Vec<String>>,
    reference: (Vec<String>, Vec<u8>),
}

/// One loop of one tool: `total_s` sums the timed calls; pages per call
/// when cold, after the loop when warm (librrd's final file is not checked).
#[derive(Debug, Default, Serialize)]
struct LoopResult {
    tool: Tool,
    total_s: f64,
    median_call_s: Option<f64>,
    times_s: Vec<f64>,
    evict_s: Vec<f64>,
    pages_after: Vec<u32>,
    first_call_pages: Option<Vec<u32>>,
    failures: u64,
    output_mismatches: usize,
    problem: Option<String>,
    file_identical: Option<bool>,
    driver: Option<Driver>,
    #[serde(skip)]
    outputs: Vec<String>,
}

/// What an in-process driver prints (`--json`; ours also its getrusage over the loop).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
struct Driver {
    total_s: Option<f64>,
    times_s: Vec<f64>,
    median_us: Option<f64>,
    resident_pages_after: Vec<u32>,
    failures: Option<u64>,
    first_error: Option<String>,
    user_s: Option<f64>,
    sys_s: Option<f64>,
    minor_faults: Option<f64>,
}

impl LoopResult {
    fn ok(&self) -> bool {
        self.failures == 0 && self.output_mismatches == 0 && self.file_identical != Some(false)
    }

    /// Counts call `call`'s failure or an output unlike `want` (rrdtool's).
    fn check(&mut self, call: usize, out: &Output, want: Option<&str>) {
        if !out.success || !out.stdout.starts_with("return_value = 0\n") {
            self.failures += 1;
            let said = tail(&format!("{}{}", out.stdout, out.stderr), 3);
            self.problem.get_or_insert(format!("call {call}: {} — {said}", out.status));
        } else if let Some(want) = want.filter(|w| *w != out.stdout) {
            self.output_mismatches += 1;
            let at = out.stdout.lines().zip(want.lines()).position(|(a, b)| a != b);
            self.problem.get_or_insert(format!("call {call}: not rrdtool's output, line {at:?}"));
        }
    }
}

/// Where a timed loop's trace is kept: its cell and round.
type TraceAt = (String, usize);

/// Each tool's system calls on the file in one traced call.
type Syscalls = Vec<(Tool, Vec<String>)>;

/// What every loop shares.
struct Ctx<'a> {
    ws: &'a Workspace,
    mapwise: PathBuf,
    oracle: String,
    work: PathBuf,
    progress: &'a Progress,
    tracing: Tracing,
}

impl Ctx<'_> {
    /// `f`, with the residency of `(file, (cell, round), side)` traced when given.
    fn record<T>(
        &self,
        at: Option<(&Path, &TraceAt, &str)>,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let Some((file, (cell, run), side)) = at else { return f() };
        self.tracing.traces.borrow_mut().record(&self.tracing.scratch, file, cell, side, *run, f)
    }

    /// `target/release/mapwise` as seen from `cwd`.
    fn ours(&self, cwd: &Path) -> Cmd {
        let abs = std::path::absolute(&self.mapwise).unwrap_or_else(|_| self.mapwise.clone());
        in_env(abs, &relative(&self.mapwise, &self.ws.root, cwd), cwd)
    }

    fn peer(&self) -> Cmd {
        in_env(&self.oracle, &self.oracle, &self.ws.root)
    }

    /// The `updatev` command of `tool` on `name` in `cwd`.
    fn updatev(&self, tool: Tool, cwd: &Path, name: &str, args: &[String]) -> Cmd {
        let run = match tool.io() {
            None => rrdtool(cwd).args(["updatev", name]),
            Some(m) => self.ours(cwd).args(["rrd", "updatev", name, "--io", m]),
        };
        run.args(args.iter().cloned())
    }

    /// Where ours' in-process driver updates in mode `m`.
    fn inproc_file(&self, m: &str, handle: bool) -> PathBuf {
        let dir = format!("inproc-{}{m}", ["", "handle-"][usize::from(handle)]);
        self.work.join(dir).join("big.rrd")
    }

    /// The in-process command of `tool`: ours' driver on its copy (made by
    /// xtask), or the peer's librrd driver (which copies `start` itself,
    /// into TMPDIR = `work/librrd-tmp`).
    fn inproc(&self, tool: Tool, start: &Path, n: usize, cache: CacheState, handle: bool) -> Cmd {
        let (cold, rel) = ((cache == Cold).then_some("--cold"), |p: &Path| self.ws.rel(p));
        let Some(m) = tool.io() else {
            let r = self.peer().env("TMPDIR", rel(&self.work.join("librrd-tmp")));
            let args = ["bench-inproc".to_owned(), rel(start), n.to_string(), "--json".into()];
            return r.args(args).args(cold);
        };
        let (file, calls) = (rel(&self.inproc_file(m, handle)), rel(&self.work.join("calls.txt")));
        let run = self.ours(&self.ws.root).args(["rrd", "bench-inproc", &file, "--calls", &calls]);
        run.args(["--io", m]).args(cold).args(handle.then_some("--handle"))
    }

    /// `runs` timed rounds of ours' and rrdtool's `cmds` (process wall times), each
    /// removing its `writes` before a run.
    fn pair(
        &self,
        what: &str,
        cmds: [Cmd; 2],
        runs: usize,
        writes: [Vec<PathBuf>; 2],
    ) -> Result<CellRuns> {
        let none: cell::Parser = |_| Ok(Metrics::new());
        let sides = cmds.into_iter().zip(writes).zip(["ours", "rrdtool"]);
        let contenders = sides.map(|((c, w), who)| Contender::new(who, c, none).writing(w));
        let c = cell::Cell::new(what.into(), Warm, Vec::new(), contenders.collect(), (0, runs));
        cell::run(self.ws, self.progress, &c, &self.tracing)
    }

    /// One process-level loop in `work/<dir>`: one `updatev` per call, checked against rrdtool's.
    fn process_loop(
        &self,
        tool: Tool,
        dir: &str,
        inp: &Input,
        cache: CacheState,
        at: Option<&TraceAt>,
    ) -> Result<LoopResult> {
        let (cwd, cold) = (self.work.join(dir), cache == Cold);
        let file = cwd.join(inp.name);
        pagecache::fresh_copy(&inp.path, &file, cache)?;
        let mut l = LoopResult { tool, ..LoopResult::default() };
        let reference = (!inp.reference.0.is_empty()).then_some(&inp.reference);
        self.record(at.map(|at| (file.as_path(), at, tool.key(false))), || {
            for (i, args) in inp.calls.iter().enumerate() {
                if cold {
                    let t = Instant::now();
                    pagecache::evict(&file)?;
                    l.evict_s.push(t.elapsed().as_secs_f64());
                }
                let out = self.updatev(tool, &cwd, inp.name, args).output(&self.ws.root)?;
                l.times_s.push(out.wall_s);
                if cold {
                    let pages = pagecache::resident_pages(&file)?;
                    l.pages_after.push(count(&pages));
                    l.first_call_pages.get_or_insert(pages);
                }
                l.check(i + 1, &out, reference.map(|r| r.0.get(i).map_or("", String::as_str)));
                l.outputs.push(out.stdout);
                if i % 50 == 49 {
                    self.progress.set(format!("{dir} {}: call {}", cache.name(), i + 1));
                }
            }
            Ok(())
        })?;
        if !cold {
            l.pages_after.push(count(&pagecache::resident_pages(&file)?));
        }
        (l.total_s, l.median_call_s) = (l.times_s.iter().sum(), median(&l.times_s));
        // After the trace: reading the file pulls all of it into the cache.
        if let Some((_, bytes)) = reference {
            l.file_identical = Some(fs::read(&file)? == *bytes);
        }
        Ok(l)
    }

    /// One in-process loop, traced on ours' copy, or on librrd's from the moment it appears.
    fn inproc_loop(
        &self,
        tool: Tool,
        inp: &Input,
        cache: CacheState,
        handle: bool,
        at: Option<&TraceAt>,
    ) -> Result<LoopResult> {
        let run = self.inproc(tool, &inp.path, inp.calls.len(), cache, handle);
        let ours = tool.io().map(|m| self.inproc_file(m, handle));
        let out = if let Some(f) = &ours {
            pagecache::fresh_copy(&inp.path, f, cache)?; // cold: as the driver leaves it before every call
            self.record(at.map(|at| (f.as_path(), at, tool.key(true))), || {
                run.output(&self.ws.root)
            })?
        } else {
            let (tmp, name) = (self.work.join("librrd-tmp"), file_name(&inp.path));
            let _ = fs::remove_dir_all(&tmp); // so the only copy found is this run's
            fs::create_dir_all(&tmp)?;
            std::thread::scope(|s| {
                let driver = s.spawn(|| run.output(&self.ws.root));
                let seen = loop {
                    let found = find_librrd_copy(&tmp, &name);
                    if found.is_some() || at.is_none() || driver.is_finished() {
                        break found;
                    }
                    interrupt::check()?;
                    std::thread::sleep(std::time::Duration::from_micros(250));
                };
                // Not seen (it came and went between two looks): a trace
                // without frames, under the pattern's name.
                let path = seen.unwrap_or_else(|| tmp.join("rrd-bench-*").join(&name));
                let join = || driver.join().map_err(|_| anyhow!("the librrd driver panicked"))?;
                self.record(at.map(|at| (path.as_path(), at, tool.key(true))), join)
            })?
        };
        let said = tail(&format!("{}{}", out.stdout, out.stderr), 10);
        let bad = |e| anyhow!("`{}`: bad JSON ({e}):\n{said}", run.shell());
        let d: Driver = serde_json::from_str(&out.stdout).map_err(bad)?;
        let failures = d.failures.unwrap_or(1).max(u64::from(!out.success));
        let why = d.first_error.clone().unwrap_or_else(|| tail(&out.stderr, 3));
        let problem =
            (failures > 0).then(|| format!("{}: {failures} failed calls; {why}", out.status));
        let same = |f: &PathBuf| fs::read(f).map(|b| b == inp.reference.1);
        Ok(LoopResult {
            tool,
            total_s: d.total_s.context("no total_s in the driver's JSON")?,
            median_call_s: median(&d.times_s).or(d.median_us.map(|us| us * 1e-6)),
            times_s: d.times_s.clone(),
            pages_after: d.resident_pages_after.clone(),
            failures,
            problem,
            file_identical: ours.as_ref().map(same).transpose()?,
            driver: Some(d),
            ..LoopResult::default()
        })
    }
}

/// One round: every tool's loop, indexed like the cell's tools.
type Round = schedule::Round<LoopResult>;

/// A tool's figures over a cell's timed rounds; ratios of totals (or median calls), round by round.
#[derive(Debug, Serialize)]
struct ToolSummary {
    tool: Tool,
    total: Option<Summary>,
    median_call: Option<Summary>,
    vs_reference: Option<Summary>,
    speedup: Option<Summary>,
    median_vs_reference: Option<Summary>,
    vs_mmap: Option<Summary>,
    evict: Option<Summary>,
    pages_after: Option<Summary>,
    first_call_pages: Option<Vec<u32>>,
    faults_per_call: Option<Summary>,
}

impl ToolSummary {
    /// In-process ratios as the targets read them, and the same of the
    /// median calls: warm librrd's / ours (a speed-up), cold ours / librrd's.
    fn against(&self, cache: CacheState) -> (Option<Summary>, Option<f64>) {
        let m = self.median_vs_reference.map(|m| m.median);
        match cache {
            Warm => (self.speedup, m.map(|m| 1.0 / m)),
            Cold | HotSet => (self.vs_reference, m),
        }
    }
}

#[derive(Debug, Serialize)]
struct Cell {
    level: Level,
    cache: CacheState,
    calls: usize,
    warmup: Vec<Round>,
    rounds: Vec<Round>,
    summary: Vec<ToolSummary>,
}

impl Cell {
    fn problems(&self) -> impl Iterator<Item = String> + '_ {
        let rounds = self.warmup.iter().chain(&self.rounds);
        let loops = rounds.flat_map(|r| r.results.iter().map(move |l| (r.round, l)));
        loops.filter(|(_, l)| !l.ok()).map(|(round, l)| {
            let differs =
                if l.file_identical == Some(false) { " (final file differs)" } else { "" };
            let (name, cache, tool) = (self.level.names()[0], self.cache.name(), l.tool.key(false));
            let why = l.problem.as_deref().unwrap_or_default();
            format!("{name} {cache} round {round}, {tool}: {why}{differs}")
        })
    }
}

/// Runs a cell: `rounds[0]` untimed rounds, then `rounds[1]` timed (and traced) ones.
fn run_cell(
    x: &Ctx<'_>,
    (level, cache): (Level, CacheState),
    rounds: [usize; 2],
    [big, seed]: [&Input; 2],
) -> Result<Cell> {
    let tools = level.tools();
    let one = |tool: Tool, round: Option<usize>| {
        let at = round.map(|r| (level.trace_cell(cache), r));
        let (key, at) = (tool.key(false), at.as_ref());
        match level {
            Process => x.process_loop(tool, key, big, cache, at),
            SeedFile => x.process_loop(tool, &format!("seed-{key}"), seed, cache, at),
            _ => x.inproc_loop(tool, big, cache, level == InprocHandle, at),
        }
    };
    let what = format!("{} {}", level.names()[0], cache.name());
    let phase = |name: &str, n: usize| {
        let before = |i: usize, r| {
            x.progress.set(format!("{what}: {name} {r}/{n}, {}", tools[i].key(false)));
            Ok(())
        };
        let timed = name == "round";
        let run = |i: usize, r, ()| one(tools[i], timed.then_some(r)).inspect(|_| x.progress.inc());
        schedule::rotate(tools.len(), n, before, run)
    };
    let (warmup, rounds) = (phase("warm-up", rounds[0])?, phase("round", rounds[1])?);
    let summary = tools.iter().enumerate().map(|(i, &t)| summarize(i, t, &rounds)).collect();
    Ok(Cell { level, cache, calls: big.calls.len(), warmup, rounds, summary })
}

/// The figures over `rounds` of `t`, the cell's tool `i`.
fn summarize(i: usize, t: Tool, rounds: &[Round]) -> ToolSummary {
    let loops: Vec<&LoopResult> = rounds.iter().map(|r| &r.results[i]).collect();
    let col = |f: &dyn Fn(&LoopResult) -> Option<f64>| {
        Summary::of(&loops.iter().filter_map(|l| f(l)).collect::<Vec<_>>())
    };
    // Per-round ratios of `f` of `t` to `f` of `other` (`inv`: the inverse).
    let ratio = |other: usize, f: fn(&LoopResult) -> Option<f64>, inv: bool| {
        let pair = |r: &Round| Some((f(&r.results[i])?, f(r.results.get(other)?)?));
        let pairs = rounds.iter().filter_map(pair).map(|(a, b)| if inv { (b, a) } else { (a, b) });
        Summary::of(&pair_ratios(&pairs.collect::<Vec<_>>()).0)
    };
    let (total, call) = (|l: &LoopResult| Some(l.total_s), |l: &LoopResult| l.median_call_s);
    let faults =
        |l: &LoopResult| Some(l.driver.as_ref()?.minor_faults? / l.times_s.len().max(1) as f64);
    let pages =
        |l: &LoopResult| median(&l.pages_after.iter().map(|&p| f64::from(p)).collect::<Vec<_>>());
    ToolSummary {
        tool: t,
        total: col(&total),
        median_call: col(&call),
        vs_reference: ratio(0, total, false),
        speedup: ratio(0, total, true),
        median_vs_reference: ratio(0, call, false),
        vs_mmap: ratio(1, total, false),
        evict: col(&|l| median(&l.evict_s)),
        pages_after: col(&pages),
        first_call_pages: loops.first().and_then(|l| l.first_call_pages.clone()),
        faults_per_call: col(&faults),
    }
}

/// One create, timed, whether both files dump alike, and how many bytes differ.
#[derive(Debug, Serialize)]
struct CreateCell {
    what: String,
    args: Vec<String>,
    runs: CellRuns,
    dumps_identical: bool,
    bytes_differing: usize,
    file_bytes: u64,
}

/// A create by both in their own directories (rrdtool seeds the HWPREDICT index from the name).
fn create_cell(
    x: &Ctx<'_>,
    what: String,
    name: &str,
    args: Vec<String>,
    runs: usize,
) -> Result<CreateCell> {
    let (file, dirs) = (
        format!("{name}.rrd"),
        ["ours", "rrdtool"].map(|w| x.work.join(format!("create-{w}-{name}"))),
    );
    let ours = x.ours(&dirs[0]).args(["rrd", "create", &file]).args(args.clone());
    let theirs = rrdtool(&dirs[1]).args(["create", &file]).args(args.clone());
    dirs.iter().try_for_each(fs::create_dir_all)?;
    let runs = x.pair(&what, [ours, theirs], runs, dirs.clone().map(|d| vec![d.join(&file)]))?;
    let dumps_identical = dump(x, &dirs[0], &file)? == dump(x, &dirs[1], &file)?;
    let [a, b] = [fs::read(dirs[0].join(&file))?, fs::read(dirs[1].join(&file))?];
    let differing = a.iter().zip(&b).filter(|(p, q)| p != q).count();
    let (bytes_differing, file_bytes) = (differing + a.len().abs_diff(b.len()), b.len() as u64);
    Ok(CreateCell { what, args, runs, dumps_identical, bytes_differing, file_bytes })
}

/// `rrdtool dump` of `file` in `dir`.
fn dump(x: &Ctx<'_>, dir: &Path, file: &str) -> Result<String> {
    Ok(rrdtool(dir).args(["dump", file]).run(&x.ws.root)?.stdout)
}

/// Each tool's system calls on the file in one call under strace (`None` without strace).
fn trace_calls(x: &Ctx<'_>, start: &Path, args: &[String]) -> Result<Option<Syscalls>> {
    if !strace::available() {
        return Ok(None);
    }
    let one = |tool: Tool| {
        let dir = x.work.join(format!("trace-{}", tool.key(false)));
        pagecache::fresh_copy(start, &dir.join("big.rrd"), Warm)?;
        let call = x.updatev(tool, &dir, "big.rrd", args);
        Ok((tool, strace::file_calls(&call, &x.ws.root, &dir.join("strace.txt"), "big.rrd")?))
    };
    TOOLS.into_iter().map(one).collect::<Result<_>>().map(Some)
}

/// A starting file, its header as core reads it, how it was made, whether `rrdtool last` agrees.
#[derive(Debug, Serialize)]
struct StartFile {
    path: String,
    bytes: u64,
    pages: u64,
    ds_cnt: usize,
    rra_cnt: usize,
    step: u64,
    last_up: i64,
    header_len: u64,
    made: String,
    last_checked: bool,
}

impl StartFile {
    /// The starting file of `shape` (seed [`BIG_SEED`]), cached as
    /// `target/bench/files/rrd-<shape>-seed<S>.rrd`: made by the peer when missing.
    fn ensure(x: &Ctx<'_>, shape: &str) -> Result<StartFile> {
        let path = x.ws.bench_dir().join(format!("files/rrd-{shape}-seed{BIG_SEED}.rrd"));
        let how = format!("{} gen {} --shape {shape} --seed {BIG_SEED}", x.oracle, path_arg(&path));
        let mut made = how.clone() + " (cached)";
        output::make_once(&path, true, |tmp| {
            x.progress.note(&format!("xtask: making {} (cached for later runs)", path.display()));
            let make = x.peer().args(["gen".to_owned(), path_arg(tmp), "--shape".into()]);
            let secs = make.args([shape, "--seed", &BIG_SEED.to_string()]).run(&x.ws.root)?.wall_s;
            made = format!("{how} (now, {})", fmt_secs(secs));
            Ok(())
        })?;
        Self::describe(x, &path, made)
    }

    fn describe(x: &Ctx<'_>, path: &Path, made: String) -> Result<StartFile> {
        let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let h = Header::parse(bytes.as_slice()).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let (g, len, last_up) = (h.geometry(), bytes.len() as u64, h.last_up());
        ensure!(
            g.file_len == len,
            "{}: {len} bytes, the header says {}",
            path.display(),
            g.file_len
        );
        let dir = path.parent().unwrap_or(Path::new("."));
        let last = rrdtool(dir).args(["last".to_owned(), file_name(path)]).run(&x.ws.root)?;
        Ok(StartFile {
            path: path_arg(path),
            bytes: len,
            pages: len.div_ceil(4096),
            ds_cnt: h.ds_cnt(),
            rra_cnt: h.rra_cnt(),
            step: h.pdp_step(),
            last_up,
            header_len: g.header_len,
            made,
            last_checked: last.stdout.trim() == last_up.to_string(),
        })
    }
}

/// Everything measured, as results.json holds it (`oracle_runs`: the peer's own rrdtool loops).
#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    preset: &'static str,
    shape: &'static str,
    calls: usize,
    runs: usize,
    inproc_runs: usize,
    warmup: usize,
    rrdtool_version: Option<String>,
    start: StartFile,
    seed_start: StartFile,
    first_last_call: [String; 2],
    commands: String,
    creates: Vec<CreateCell>,
    floor: CellRuns,
    oracle_runs: Vec<(CacheState, String, Value, bool)>,
    cells: Vec<Cell>,
    findings: Vec<(String, Finding)>,
    strace: Option<Syscalls>,
    limits: Vec<Limit>,
    traces: Vec<TraceInfo>,
    charts: Vec<ChartFile>,
    problems: Vec<String>,
}

impl Results {
    fn tool(&self, (level, cache): (Level, CacheState), t: Tool) -> Option<&ToolSummary> {
        let c = self.cells.iter().find(|c| c.level == level && c.cache == cache)?;
        c.summary.iter().find(|s| s.tool == t)
    }

    /// The median of `f` of `t` in a cell.
    fn med(
        &self,
        cell: (Level, CacheState),
        t: Tool,
        f: fn(&ToolSummary) -> Option<Summary>,
    ) -> Option<f64> {
        Some(f(self.tool(cell, t)?)?.median)
    }

    /// Update calls per second of `t` in a cell: calls / the median total.
    fn per_s(&self, cell: (Level, CacheState), t: Tool) -> Option<f64> {
        Some(self.calls as f64 / self.med(cell, t, |s| s.total).filter(|t| *t > 0.0)?)
    }

    /// Pages a cold process-level call of `t` leaves.
    fn pages(&self, t: Tool) -> Option<f64> {
        self.med((Process, Cold), t, |s| s.pages_after)
    }
}

/// Runs the bench.
#[expect(clippy::too_many_lines)]
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    // rrdtool's updatev refuses a defined RRDCACHED_ADDRESS, and ours would
    // go through the daemon: no child may see it.
    let daemon = std::env::var_os("RRDCACHED_ADDRESS").is_some();
    ensure!(!daemon, "RRDCACHED_ADDRESS is set: unset it to time the files themselves");
    let tiny = args.common.tiny;
    let preset = usize::from(args.full) + 2 * usize::from(tiny);
    let n = usize::try_from(args.calls.unwrap_or([200, 1000, 5][preset]))?;
    let (shape, preset) = (["big", "gauge"][usize::from(tiny)], ["quick", "full", "tiny"][preset]);
    let runs = args.common.runs()?;
    let warmup = usize::try_from(args.warmup.unwrap_or(u64::from(!tiny)))?;
    let inproc = args.inproc_runs.unwrap_or([4 * args.common.runs, 1][usize::from(tiny)]);
    let (inproc_runs, floor_runs) =
        (usize::try_from(inproc)?, if tiny { 2 } else { (n / 10).max(10) });
    let rounds = |l: Level| [warmup, [runs, inproc_runs][usize::from(l.inproc())]];
    let loops = |&(l, _): &(Level, _)| rounds(l).iter().sum::<usize>() * l.tools().len();
    let pairs = 2 * (2 * runs + floor_runs) + limits::steps(runs);
    let progress = Progress::new(1 + (CELLS.iter().map(loops).sum::<usize>() + pairs) as u64);
    let out_dir = ws.report_dir(&args.common, started);

    let (build, mapwise) = ws.build_mapwise(&progress)?;
    let oracle = ws.peer("rrd")?; // installs rrdtool when missing
    let work =
        std::path::absolute(ws.bench_dir())?.join(format!(".rrd-work-{}", std::process::id()));
    let work = output::TempPath::new(work);
    let _ = fs::remove_dir_all(work.path());
    fs::create_dir_all(work.path())?;
    let (mapwise, tracing) = (PathBuf::from(mapwise), Tracing::new(ws));
    let x =
        Ctx { ws, mapwise, oracle, work: work.path().to_path_buf(), progress: &progress, tracing };
    let shapes = x.peer().args(["shapes"]).run(&ws.root)?;
    let version = machine::first_line_of("rrdtool", &["--version"]);
    let rrdtool_version = version.map(|l| l.split("  ").next().unwrap_or(&l).trim().to_owned());
    let start = StartFile::ensure(&x, shape)?;
    // A starting file's input, with its reference: an untimed rrdtool loop.
    let input = |path: PathBuf, name, s: &StartFile| -> Result<Input> {
        let calls = sample_stream(s.last_up, s.step, s.ds_cnt, n, STREAM_SEED);
        let mut inp = Input { path, name, calls, reference: Default::default() };
        let dir = format!("reference-{name}");
        let l = x.process_loop(Rrdtool, &dir, &inp, Warm, None)?;
        ensure!(l.ok(), "rrdtool's reference loop failed: {}", l.problem.unwrap_or_default());
        inp.reference = (l.outputs, fs::read(x.work.join(dir).join(name))?);
        Ok(inp)
    };
    let start_path = ws.root.join(&start.path);
    progress.set("reference: rrdtool loops (untimed)");
    let big = input(start_path.clone(), "big.rrd", &start)?;
    let calls_text: String = big.calls.iter().map(|c| c.join(" ") + "\n").collect();
    fs::write(x.work.join("calls.txt"), &calls_text)?;

    // Creates: the seed's (which must also be the peer's seed-create), then
    // the shape's; the seed-file loops start from rrdtool's seed file.
    let shape_create = shape_args(&shapes.stdout, shape).context("no such peer shape")?;
    let seed_args = SEED_CREATE.split_whitespace().map(str::to_owned).collect();
    let mut creates = vec![
        create_cell(&x, "the seed's create".into(), "in", seed_args, runs)?,
        create_cell(&x, format!("shape {shape}'s create"), shape, shape_create, runs)?,
    ];
    let (oseed, seed_dir) = (x.work.join("oracle-seed"), x.work.join("create-rrdtool-in"));
    x.peer().args(["seed-create".to_owned(), path_arg(&oseed.join("in.rrd"))]).run(&ws.root)?;
    creates[0].dumps_identical &= dump(&x, &oseed, "in.rrd")? == dump(&x, &seed_dir, "in.rrd")?;
    let made = "the rrdtool-made file of the seed's create above".to_owned();
    let seed_start = StartFile::describe(&x, &seed_dir.join("in.rrd"), made)?;
    let seed = input(seed_dir.join("in.rrd"), "in.rrd", &seed_start)?;

    progress.set("strace of one call per tool");
    let strace = trace_calls(&x, &start_path, &big.calls[0])?;
    let last = |r: Cmd| r.args(["last", &start.path]);
    let lasts = [last(x.ours(&ws.root).args(["rrd"])), last(rrdtool(&ws.root))];
    let floor = x.pair("start-up floor", lasts, floor_runs, Default::default())?;
    let cell = |&(l, c): &(Level, CacheState)| run_cell(&x, (l, c), rounds(l), [&big, &seed]);
    let cells: Vec<Cell> = CELLS.iter().map(cell).collect::<Result<_>>()?;

    // The peer's own measurement of rrdtool (and the stream check).
    let mut oracle_runs = Vec::new();
    for cache in [Warm, Cold] {
        progress.set(format!("peers/rrd/peer bench-updatev, {}", cache.name()));
        let copy = x.work.join("oracle-bench").join("big.rrd");
        pagecache::fresh_copy(&start_path, &copy, Warm)?;
        let run = x.peer().args(["bench-updatev".to_owned(), ws.rel(&copy), n.to_string()]);
        let run = run.args(["--in-place", "--json"]).args((cache == Cold).then_some("--cold"));
        let j: Value = serde_json::from_str(&run.output(&ws.root)?.stdout).unwrap_or_default();
        oracle_runs.push((cache, run.shell(), j, fs::read(&copy)? == big.reference.1));
    }
    let limits = limits::standard(Path::new(&start.path), runs, &progress)?;
    let settings = cells.iter().filter(|c| matches!(c.level, Process | Inproc));
    let findings = settings.map(|c| {
        let r = |t| c.summary.iter().find(|s| s.tool == t)?.vs_mmap.map(|s| s.median);
        let f = Finding { direct_vs_mmap: r(Direct), fd_vs_mmap: r(Fd) };
        (format!("{}, {}", c.level.names()[0], c.cache.name()), f)
    });
    let findings = findings.collect();

    let mut problems: Vec<String> = cells.iter().flat_map(Cell::problems).collect();
    let differ = creates.iter().filter(|c| !c.dumps_identical);
    problems.extend(
        differ.map(|c| format!("{}: the dumps of ours and rrdtool's files differ", c.what)),
    );
    for (cache, _, j, same) in &oracle_runs {
        if !same || j.get("failures").and_then(Value::as_u64) != Some(0) {
            let what =
                if *same { "failures" } else { "its final file is not xtask's rrdtool result" };
            problems.push(format!("peer bench-updatev {}: {what}", cache.name()));
        }
    }
    if !start.last_checked || !seed_start.last_checked {
        problems.push("rrdtool last disagrees with the decoded header".to_owned());
    }
    let mut results = Results {
        stamp: Stamp::new("rrd", started, Machine::describe(Path::new(&start.path))),
        preset,
        shape,
        calls: n,
        runs,
        inproc_runs,
        warmup,
        rrdtool_version,
        first_last_call: [0, n - 1].map(|i| big.calls[i].join(" ")),
        commands: commands(&x, &build, &big, &out_dir),
        start,
        seed_start,
        creates,
        floor,
        oracle_runs,
        cells,
        findings,
        strace,
        limits,
        traces: x.tracing.traces.borrow().list().to_vec(),
        charts: Vec::new(),
        problems,
    };
    progress.set("charts and the report");
    results.charts = rrd_charts(&results, &x.tracing.traces.borrow())?;
    let report = report(&results);
    let traces = x.tracing.traces.into_inner();
    drop((work, progress));
    // calls.txt beside the traces and charts: the commands read it.
    let mut extra = vec![("calls.txt", calls_text.as_bytes())];
    extra.extend(traces.files().into_iter().chain(results.charts.iter().map(ChartFile::output)));
    output::publish(&out_dir, &report, &results, &extra)?;
    let ok = results.problems.is_empty();
    Ok(output::exit(ok, "a file, an output or a check was not as expected"))
}

/// The commands, the scratch directory made again as `$WORK` (as deep: relative paths hold).
fn commands(x: &Ctx<'_>, build: &Cmd, big: &Input, out_dir: &Path) -> String {
    let (work, root, n) = (x.ws.rel(&x.work), &x.ws.root, big.calls.len().to_string());
    let (start, out, bin) = (x.ws.rel(&big.path), x.ws.rel(out_dir), path_arg(&x.mapwise));
    let (ours, build, call) =
        (relative(&x.mapwise, root, &x.work.join("fd")), build.shell(), big.calls[0].join(" "));
    let peer = &x.oracle;
    say(NOTES, "commands", vars![work, start, out, build, call, ours, peer, n, bin])
}

/// The ratio charts of both levels and the residency of the first cold process-level loops.
fn rrd_charts(r: &Results, traces: &traces::Traces) -> Result<Vec<ChartFile>> {
    let bar = |c: &Cell, s: &ToolSummary| {
        let name = c.level.names()[2];
        let prefix = if name.is_empty() { c.cache.name() } else { name };
        Some(RatioBar::of(format!("{prefix}, {}", s.tool.io()?), s.vs_reference.as_ref()?))
    };
    let ratios = |levels: [Level; 2], peer: &str, target| -> Result<_> {
        let cells = r.cells.iter().filter(|c| levels.contains(&c.level));
        let bars: Vec<RatioBar> =
            cells.flat_map(|c| c.summary.iter().filter_map(move |s| bar(c, s))).collect();
        let level = levels[0].names()[0];
        let title = format!("bench rrd, {level}: total time, ours / {peer}");
        let svg = (!bars.is_empty()).then(|| charts::ratios(&title, &bars, target));
        let what = format!(
            "{level}: a loop's total time, ours / {peer}, round by round, per cell and mode"
        );
        Ok((what, svg.transpose()?))
    };
    let picks: Vec<_> =
        TOOLS.iter().map(|&t| (Process.trace_cell(Cold), t.key(false), t.label(false))).collect();
    let title =
        format!("bench rrd, cold: the file's resident pages over {} updatev calls", r.calls);
    let residency = traces::residency_pages_chart(traces, &title, &picks)?;
    let what =
        "resident pages of the file during the first timed cold process-level loop of each tool";
    let svgs = [
        ("ratios-process.svg", ratios([Process, SeedFile], "rrdtool", Some(TARGETS[0]))?),
        ("ratios-inproc.svg", ratios([Inproc, InprocHandle], "librrd", None)?),
        ("residency-cold.svg", (what.to_owned(), residency)),
    ];
    let chart = |(file, (what, svg)): (&str, (String, Option<String>))| {
        Some(ChartFile { file: file.into(), what, svg: svg? })
    };
    Ok(svgs.into_iter().filter_map(chart).collect())
}

/// The whole report, from the results.
fn report(r: &Results) -> Report {
    let mut rep = r.stamp.report();
    setup(&mut rep, r);
    rep.section(format!("Process level: {} × `updatev` ({PER_CALL} samples each)", r.calls));
    cells(&mut rep, r, false);
    let h =
        "run|>total|>per call|>`rrdtool last` baseline|same final file as xtask's rrdtool loops";
    let mut t = Table::of(h);
    for (_, cmd, j, same) in &r.oracle_runs {
        let secs = |k, unit: f64| j.get(k).and_then(Value::as_f64).map(|v| fmt_secs(v * unit));
        let keys =
            [("total_s", 1.0), ("median_ms", 1e-3), ("baseline_rrdtool_last_median_ms", 1e-3)];
        let same = ["**NO**", "yes (the same sample stream)"][usize::from(*same)].to_owned();
        let cells = keys.map(|(k, u)| or_dash(secs(k, u), |s| s));
        t.row_as(Role::Peer, [format!("`{cmd}`")].into_iter().chain(cells).chain([same]));
    }
    rep.text(say(NOTES, "peer", &[])).table(t);
    rep.section(format!("In-process: {} calls × {PER_CALL} updates in one process", r.calls));
    cells(&mut rep, r, true);
    rep.text(say(NOTES, "inproc", &[]));
    limits::add_to(&mut rep, &r.limits);
    mode_table(&mut rep, r);
    seed_figures(&mut rep, r);
    charts::section(&mut rep, &r.charts, None);
    traces_table(&mut rep, r);
    let v = verdicts(r);
    let failed = v.iter().any(|v| v.outcome == Outcome::Fail);
    rep.section("Verdicts").verdicts(v);
    if failed {
        rep.text(say(NOTES, "why-fail", &[]));
    }
    rep
}

/// The introduction, machine, files, method, commands, creates and start-up floor.
fn setup(rep: &mut Report, r: &Results) {
    let (n, p, s) = (r.calls.to_string(), PER_CALL.to_string(), &r.start);
    let tiny = if r.preset == "tiny" { say(NOTES, "tiny", &[]) } else { String::new() };
    let (size, ds) = (human_size(s.bytes), s.ds_cnt.to_string());
    let version = r.rrdtool_version.clone().unwrap_or_else(|| "unknown".into());
    let [runs, inproc, warmup] = [r.runs, r.inproc_runs, r.warmup].map(|c| c.to_string());
    let (shape, preset) = (r.shape, r.preset);
    let vars = vars![n, p, size, ds, shape, version, preset, runs, inproc, warmup, tiny];
    rep.text(say(NOTES, "intro", vars));
    r.stamp.add_to(rep, "the files", &[("rrdtool / librrd", r.rrdtool_version.clone())]);
    let mut t = Table::of("file|>bytes|>pages|>DS|>RRAs|>step|>header|>last update|made");
    for s in [&r.start, &r.seed_start] {
        let name = format!("`{}`", s.path.rsplit('/').next().unwrap_or(&s.path));
        let nums = [s.bytes, s.pages, s.ds_cnt as u64, s.rra_cnt as u64].map(|v| v.to_string());
        let (step, header) = (format!("{} s", s.step), format!("{} B", s.header_len));
        let rest = [step, header, s.last_up.to_string(), s.made.clone()];
        t.row([name].into_iter().chain(nums).chain(rest));
    }
    let [first, last] = &r.first_last_call;
    rep.section("Files").table(t).text(say(NOTES, "files", &[("first", first), ("last", last)]));
    let method = say(NOTES, "method", &[("n", &n), ("p", &p), ("seed", &STREAM_SEED.to_string())]);
    rep.section("Method").list(method.lines());
    rep.commands(std::slice::from_ref(&r.commands));

    let h = "create|>file|>ours|>rrdtool|>ours/rrdtool (per pair)|check";
    let mut t = Table::of(h).compares(&[2], &[3]).roles(Role::Ratio, &[4]);
    for c in &r.creates {
        let dumps = ["**DUMPS DIFFER**", "dumps identical"][usize::from(c.dumps_identical)];
        let check =
            format!("{dumps}; {} bytes differ (the random row pointers)", c.bytes_differing);
        let times = [0, 1].map(|i| c.runs.time(i, "wall_s"));
        let cells = [c.what.clone(), human_size(c.file_bytes)].into_iter().chain(times);
        t.row(cells.chain([c.runs.ratio_text("wall_s"), check]));
    }
    let cmd = r.creates.first().map_or("", |c| c.runs.contenders[1].1.as_str());
    rep.section("Create").table(t).text(say(NOTES, "create", &[("cmd", cmd)]));
    let mut t = Table::new(&["command", ">wall (median [min–max])"]);
    for (i, role) in [Role::Ours, Role::Peer].into_iter().enumerate() {
        t.row_as(role, [format!("`{}`", r.floor.contenders[i].1), r.floor.time(i, "wall_s")]);
    }
    rep.section("Start-up floor").table(t).text(say(NOTES, "floor", &[]));
}

/// The process-level or in-process cells' tables, one row per tool.
fn cells(rep: &mut Report, r: &Results, inproc: bool) {
    for c in r.cells.iter().filter(|c| c.level.inproc() == inproc) {
        let (cache, cold) = (c.cache.name(), c.cache == Cold);
        let size = |s: &StartFile| human_size(s.bytes);
        rep.subsection(match c.level {
            Process => format!("shape {} ({}), {cache}", r.shape, size(&r.start)),
            SeedFile => format!("the seed's file ({}), {cache}", size(&r.seed_start)),
            Inproc => format!("{cache}, one open per call (like `rrd_update_r`)"),
            InprocHandle => format!("{cache}, ours through one kept handle"),
        });
        if c.level == InprocHandle {
            rep.text(say(NOTES, "handle", &[]));
        }
        let head = [
            ">vs rrdtool (per round)|>vs ours mmap",
            ">updates/s|>time vs librrd (per round)|>speed-up over librrd|>per-call median vs librrd\
             |>vs ours mmap|>page faults per call",
        ][usize::from(inproc)];
        let pages = [
            [">pages resident after the loop", ">eviction before a call|>pages after a call"],
            ["", ">pages after a call"],
        ][usize::from(inproc)][usize::from(cold)];
        let h = format!("tool|>total|>per call|{head}|{pages}");
        let h: Vec<&str> = h.split('|').filter(|h| !h.is_empty()).collect();
        let ratios: Vec<usize> =
            (0..h.len()).filter(|&i| h[i].contains("vs ") || h[i].contains("speed-up")).collect();
        let mut t = Table::new(&h).roles(Role::Ratio, &ratios);
        let of = [r.start.pages, r.seed_start.pages][usize::from(c.level == SeedFile)];
        for s in &c.summary {
            let vs = |base, v: Option<Summary>| one_or(s.tool == base, v);
            let total = [s.total, s.median_call].map(|v| opt_secs(v.as_ref()));
            let mut row: Vec<String> = [s.tool.label(inproc)].into_iter().chain(total).collect();
            if inproc {
                let rate = |t: Summary| format!("{:.0}", (c.calls * PER_CALL) as f64 / t.median);
                let faults = or_dash(s.faults_per_call, |f| format!("{:.1}", f.median));
                row.push(or_dash(s.total, rate));
                let ratios =
                    [s.vs_reference, s.speedup, s.median_vs_reference].map(|v| vs(Rrdtool, v));
                row.extend(ratios.into_iter().chain([vs(Mmap, s.vs_mmap), faults]));
            } else {
                row.extend([vs(Rrdtool, s.vs_reference), vs(Mmap, s.vs_mmap)]);
                row.extend(cold.then(|| opt_secs(s.evict.as_ref())));
            }
            let pages = format!("{} of {of}", or_dash(s.pages_after, |s| s.counts()));
            let pages = if inproc && s.tool == Rrdtool { "not reported".to_owned() } else { pages };
            row.extend((!inproc || cold).then_some(pages));
            t.row_as(s.tool.role(), row);
        }
        rep.table(t);
    }
}

/// The mode table, the traced system calls, and whether the seed's finding holds.
fn mode_table(rep: &mut Report, r: &Results) {
    let h = "mode|>process warm|>process cold|>in-process warm|>in-process cold\
             |>per call in-process warm / cold|>pages after a cold call|which pages (first cold call)";
    let mut t = Table::of(h).roles(Role::Ratio, &[1, 2, 3, 4]);
    let settings = [(Process, Warm), (Process, Cold), (Inproc, Warm), (Inproc, Cold)];
    for tool in TOOLS {
        let rel = |cell| one_or(tool == Mmap, r.tool(cell, tool).and_then(|s| s.vs_mmap));
        let call = |c| opt_time(r.med((Inproc, c), tool, |s| s.median_call));
        let cold = r.tool((Process, Cold), tool);
        let pages = format!(
            "{} of {}",
            or_dash(cold.and_then(|s| s.pages_after), |s| s.counts()),
            r.start.pages
        );
        let first = or_dash(cold.and_then(|s| s.first_call_pages.as_deref()), ranges);
        let label =
            if tool == Rrdtool { "rrdtool (librrd in-process)".into() } else { tool.label(false) };
        let rest = [format!("{} / {}", call(Warm), call(Cold)), pages, first];
        t.row_as(tool.role(), [label].into_iter().chain(settings.map(rel)).chain(rest));
    }
    rep.section("The mode table").text(say(NOTES, "modes", &[])).table(t);
    if let Some(traced) = &r.strace {
        let mut t = Table::new(&["tool", ">calls", "sequence"]);
        for (tool, calls) in traced {
            t.row_as(
                tool.role(),
                [tool.label(false), calls.len().to_string(), strace::run_length(calls)],
            );
        }
        rep.text(say(NOTES, "strace", &[])).table(t);
    } else {
        rep.text("(`strace` is not installed: no system-call traces.)");
    }
    let [far, lo, hi] = [FAR_SLOWER, CLOSE.0, CLOSE.1].map(|v| v.to_string());
    rep.text(say(NOTES, "finding", &[("far", &far), ("lo", &lo), ("hi", &hi)]));
    let word = |b: Option<bool>, w: [&'static str; 3]| w[b.map_or(0, |b| 1 + usize::from(b))];
    let times = |v| fixed(v, 2, "×");
    rep.list(r.findings.iter().map(|(setting, f)| {
        let (d, fd, [far, close, held]) = (times(f.direct_vs_mmap), times(f.fd_vs_mmap), f.holds());
        let [far, close] = [far, close].map(|b| word(b, ["unknown", "no", "yes"]));
        let verdict = word(held, ["no data", "not reproduced", "reproduced"]);
        format!("{setting}: direct/mmap {d} (far slower: {far}), fd/mmap {fd} (close: {close}) — {verdict}")
    }));
    if r.findings.iter().any(|(_, f)| f.holds()[2] == Some(false)) {
        rep.text(say(NOTES, "finding-why", &[]));
    }
}

/// The 2007 figures and this run's nearest ones.
fn seed_figures(rep: &mut Report, r: &Results) {
    let mut published = Table::new(&["source", "what", ">figure"]);
    for line in say(NOTES, "published", &[]).lines() {
        published.row(line.split('|'));
    }
    rep.section("The seed's published figures").text(say(NOTES, "seed", &[])).table(published);
    let shown = [Rrdtool, Mmap, Fd, Direct];
    let h = "what|>rrdtool / librrd|>ours mmap|>ours fd|>ours direct";
    let mut t = Table::of(h).compares(&[2, 3, 4], &[1]);
    let rows = [
        ("in-process, file cached: update calls/s", (Inproc, Warm)),
        ("in-process, file evicted before every call: calls/s", (Inproc, Cold)),
        ("process level (one updatev process per call), cached: calls/s", (Process, Warm)),
    ];
    let whole = |v| fixed(v, 0, "");
    for (what, cell) in rows {
        t.row([what.to_owned()].into_iter().chain(shown.map(|tool| whole(r.per_s(cell, tool)))));
    }
    let what = format!("pages of the {}-page file a cold call leaves in the cache", r.start.pages);
    t.row([what].into_iter().chain(shown.map(|t| whole(r.pages(t)))));
    let n = r.calls.to_string();
    rep.text(say(NOTES, "this-run", &[("n", &n), ("p", &PER_CALL.to_string())])).table(t);
    rep.text(say(NOTES, "seed-compare", &[]));
}

/// What the traces are, how to play one, and per cell how many there are.
fn traces_table(rep: &mut Report, r: &Results) {
    let empty = match r.traces.iter().filter(|t| t.frames == 0).count() {
        0 => String::new(),
        k => say(NOTES, "traces-empty", &[("k", &k.to_string())]),
    };
    let (ms, n) = (traces::INTERVAL.as_millis().to_string(), r.traces.len().to_string());
    let (file, create) = (&r.start.path, SEED_CREATE);
    rep.text(say(NOTES, "traces", vars![ms, n, empty, file, create]));
    let mut t = Table::of("cell|>traces|>frames per trace|>most pages resident in a frame");
    let mut cells: Vec<&str> = r.traces.iter().map(|t| t.cell.as_str()).collect();
    cells.dedup();
    for c in cells {
        let of: Vec<&TraceInfo> = r.traces.iter().filter(|t| t.cell == c).collect();
        let frames = Summary::of(&of.iter().map(|t| t.frames as f64).collect::<Vec<_>>());
        let most = of.iter().map(|t| t.max_resident_pages).max().unwrap_or(0);
        t.row([
            c.to_owned(),
            of.len().to_string(),
            or_dash(frames, |s| s.counts()),
            most.to_string(),
        ]);
    }
    rep.table(t).text(say(NOTES, "traces-after", &[]));
}

/// The verdicts: process level, in-process (by the best mode), kept handle, mode table, files.
fn verdicts(r: &Results) -> Vec<Verdict> {
    let [p, w, c] = TARGETS;
    let against =
        |t, cell: (Level, CacheState)| r.tool(cell, t).map_or((None, None), |s| s.against(cell.1));
    let judged = |name: String, (s, m): (Option<Summary>, Option<f64>), bound| {
        let mut v = judge(name, s.as_ref(), bound, ("", ""));
        v.detail += &m.map_or_else(String::new, |m| format!("; by per-call medians {m:.2}×"));
        v
    };
    let mut v = Vec::new();
    for cache in [Warm, Cold] {
        for t in MODES {
            let ratio = r.tool((Process, cache), t).and_then(|s| s.vs_reference);
            let name = format!("{}, process level, {}", t.label(false), cache.name());
            let line = judged(name, (ratio, None), (p, Bound::AtMost));
            let name = format!("Process level, {}", cache.name());
            let goal = format!("ours mmap ≤ {p}× rrdtool's total");
            v.push(if t == Mmap { Verdict { name, ..line }.target(goal) } else { line.sub() });
        }
    }
    // The in-process targets name no I/O mode: a caller picks the mode for
    // the workload. The headline names the modes that meet both (warm and
    // cold, the same mode); every mode's own lines follow.
    let meets = |t: Tool| {
        let (warm, cold) =
            (against(t, (Inproc, Warm)).0?.median, against(t, (Inproc, Cold)).0?.median);
        let name = t.label(false);
        (warm >= w && cold <= c).then(|| format!("{name} (warm {warm:.2}×, cold {cold:.2}×)"))
    };
    let winners: Vec<String> = MODES.into_iter().filter_map(meets).collect();
    let detail = match (winners.is_empty(), meets(Mmap).is_some()) {
        (true, _) => "no mode of ours meets both".to_owned(),
        (false, true) => winners.join(", "),
        (false, false) => {
            format!("{}; not ours mmap, the default (see why below)", winners.join(", "))
        }
    };
    let goal =
        format!("≥ {w}× librrd's updates/s warm and ≤ {c}× its time cold, both by the same mode");
    let name = "In-process, one open per call, the I/O mode chosen for the workload";
    v.push(Verdict::new(name, Outcome::of(!winners.is_empty()), detail).target(goal));
    let goals = [
        (
            Warm,
            (w, Bound::AtLeast),
            format!("≥ {w}× librrd's updates/s; ratio = librrd's time / ours"),
        ),
        (Cold, (c, Bound::AtMost), format!("≤ {c}× librrd's time; ratio = ours / librrd's")),
    ];
    for (cache, bound, goal) in goals {
        for t in MODES {
            let name = format!("{}, in-process, {}", t.label(false), cache.name());
            v.push(judged(name, against(t, (Inproc, cache)), bound).target(&goal).sub());
        }
    }
    let name = "In-process, warm, ours through one kept handle".to_owned();
    let line = judged(name, against(Mmap, (InprocHandle, Warm)), (w, Bound::AtLeast));
    v.push(line.target("not like-for-like: librrd opens per call; same target"));
    let held = r.findings.iter().filter(|(_, f)| f.holds()[2] == Some(true)).count();
    let detail = match (held, r.findings.len()) {
        (h, all) if h == all => "REPRODUCED in every setting".to_owned(),
        (0, _) => "NOT REPRODUCED; see why above".to_owned(),
        (h, all) => format!("REPRODUCED in {h} of {all} settings; see why above"),
    };
    let mode_table = Verdict::new("Mode table", Outcome::None, detail);
    v.push(mode_table.target("the seed's finding, or why not"));
    let ok = r.problems.is_empty();
    let detail = if ok { say(NOTES, "files-ok", &[]) } else { r.problems.join("; ") };
    v.push(Verdict::new("Files and outputs", Outcome::of(ok), detail));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peer's stream (`peers/rrd/peer bench-updatev`, seed 0), values
    /// computed by its Python for the big file (last update 1600167228).
    #[test]
    fn the_stream_is_the_peers() {
        let s = sample_stream(1_600_167_228, 300, 2, 1000, 0);
        let first =
            "1600167528:883.311:431.528 1600167828:26.434:970.882 1600168128:106.347:327.326";
        assert_eq!(s[0].join(" "), first);
        assert_eq!(s[999][2], "1601067228:284.743:205.144");
        let seed = sample_stream(962_496_000, 86_400, 1, 2, 0);
        assert_eq!(
            (seed[0][0].as_str(), seed[1][2].as_str()),
            ("962582400:883.311", "963014400:327.326")
        );
    }

    #[test]
    fn commands_name_their_directory_and_environment() {
        let root = Path::new("/w");
        let r = in_env("/abs/rrdtool", "rrdtool", Path::new("t/d")).args(["updatev", "f"]);
        assert_eq!(r.shell(), "(cd t/d && TZ=UTC LC_ALL=C LANG=C rrdtool updatev f)");
        let deep = Path::new("/w/target/bench/.rrd-work-1/fd");
        let ours = relative(Path::new("target/release/mapwise"), root, deep);
        assert_eq!(ours, "../../../../target/release/mapwise");
    }
}
