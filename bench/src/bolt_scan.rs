//! `cargo xtask bench bolt-scan`: the MAP_POPULATE experiment boltdb/bolt's
//! maintainers reported, ours (`mapwise bolt traverse`) vs Go bbolt (the
//! peer's `traverse`), cold/warm × with/without MAP_POPULATE; and what the
//! `bolt` and `live` benches share with it (the bbolt file, scan cells, the
//! seed's figures).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::boltfile::{self, BUCKET, FileInfo, TINY_BATCH, TINY_SIZE, Versions};
use super::cell::{self, Cell, CellRuns, Contender, Metrics, Tracing, both, metrics};
use super::charts::{self, ChartFile};
use super::limits::{self, Limit};
use super::machine::{self, Machine, Stamp};
use super::output::{self, TempPath};
use super::proc::{Cmd, json_line, tail};
use super::report::Role::{Other, Ours, Peer, Ratio};
use super::report::{Bound, Col, Outcome, Report, Table, Verdict, cell_table, judge, say, vars};
use super::schedule::CacheState::{self, Cold, Warm};
use super::schedule::Caches;
use super::stats::{Summary, fixed, fmt_secs};
use super::traces;
use super::units::{format_size, human_size, plural};
use super::{CommonArgs, Progress, Workspace, path_arg};

/// Long help of `cargo xtask bench bolt-scan`.
pub const HELP: &str = include_str!("text/bolt-scan-help.txt");

/// Timed pairs a warm scan cell runs at least (warm scans vary: see the method).
pub const WARM_MIN_RUNS: usize = 9;
/// What the traces of the scan cells follow ([`traces::Traces::paragraph`]).
pub const TRACED: &str = "the bbolt file each scan reads";
/// Wait after a cold reset where free pages go back to a VM host (see the method).
pub const COLD_SETTLE: Duration = Duration::from_secs(5);
/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/bolt-scan-notes.md");
const SPARSE_BYTES: u64 = 64 << 30;
/// Target for `inspector residency` on the sparse file.
const RESIDENCY_TARGET_S: f64 = 0.5;

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
    #[command(flatten)]
    caches: Caches,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// What `mapwise bolt traverse --json` prints.
#[derive(Deserialize)]
struct OursJson {
    open_s: f64,
    #[serde(rename = "traverse_s")]
    scan_s: f64,
    took_s: f64,
    keys: f64,
}

/// Ours' `--json` line as `open_s`, `scan_s`, `took_s` and `keys`.
fn parse_ours(stdout: &str) -> Result<Metrics, String> {
    let j: OursJson = json_line(stdout)?;
    Ok(metrics([
        ("open_s", j.open_s),
        ("scan_s", j.scan_s),
        ("took_s", j.took_s),
        ("keys", j.keys),
    ]))
}

/// The peer's `open: Xs`, `traverse: Xs keys=N …` and `took: Xs` lines, in any order.
fn parse_go(stdout: &str) -> Result<Metrics, String> {
    let mut m = Metrics::new();
    for mut words in stdout.lines().map(str::split_whitespace) {
        let name = match words.next() {
            Some("open:") => "open_s",
            Some("traverse:") => "scan_s",
            Some("took:") => "took_s",
            _ => continue,
        };
        let secs = words.next().and_then(|w| w.strip_suffix('s')?.parse().ok());
        m.extend(secs.filter(|x: &f64| x.is_finite() && *x >= 0.0).map(|s| (name.to_owned(), s)));
        let keys = words.find_map(|w| w.strip_prefix("keys=")?.parse().ok());
        m.extend(keys.filter(|_| name == "scan_s").map(|k| ("keys".to_owned(), k)));
    }
    let wanted = [("open_s", "open: Xs"), ("scan_s", "traverse: Xs"), ("took_s", "took: Xs")];
    match wanted.iter().chain(&[("keys", "keys=N")]).find(|w| !m.contains_key(w.0)) {
        Some((_, what)) => Err(format!("no `{what}` in peer output {:?}", tail(stdout, 6))),
        None => Ok(m),
    }
}

/// The label of a scan cell: `cold, plain mmap`, `warm, MAP_POPULATE`.
pub(crate) fn scan_label(cache: CacheState, populate: bool) -> String {
    format!("{}, {}", cache.name(), if populate { "MAP_POPULATE" } else { "plain mmap" })
}

/// A scan cell: cache state, `--populate` on both, ours' extra options
/// ([`LIKE_FOR_LIKE`]: bbolt's exact I/O; none: ours' defaults).
pub(crate) type ScanSpec<'a> = (CacheState, bool, &'a [&'a str]);

/// Ours' options that read as bbolt reads: no read-ahead hints.
pub(crate) const LIKE_FOR_LIKE: &[&str] = &["--prefetch", "0"];

/// The scan cells of `specs`, ours (`mapwise`) against Go (`go`) on `file`:
/// a warm pair shares its reset and every warm run follows an untimed one
/// ([`WARM_MIN_RUNS`] pairs at least), a cold run waits [`COLD_SETTLE`] on
/// a machine that hands free pages back.
pub(crate) fn scan_cells(
    specs: &[ScanSpec<'_>],
    (mapwise, go): (&str, &Cmd),
    file: &str,
    (warmup, runs): (usize, usize),
) -> Vec<Cell> {
    let cell = |&(cache, populate, extra): &ScanSpec<'_>| {
        let label = if extra == LIKE_FOR_LIKE {
            scan_label(cache, populate)
        } else if extra.is_empty() {
            "cold, ours' defaults vs Go plain mmap".to_owned()
        } else {
            format!("cold, ours {} vs Go plain mmap", extra.join(" "))
        };
        let populate: &[&str] = if populate { &["--populate"] } else { &[] };
        let ours: Vec<&str> = populate.iter().chain(extra).copied().collect();
        traverse_cell(label, cache, (mapwise, go), file, (&ours, populate), (warmup, runs))
    };
    specs.iter().map(cell).collect()
}

/// A cell of `traverse` runs on `file`: ours (`mapwise bolt traverse …
/// --json`) with `extra.0`, Go's peer with `extra.1`; warm runs follow an
/// untimed one ([`WARM_MIN_RUNS`] pairs at least), cold ones wait
/// [`COLD_SETTLE`] on a machine that hands free pages back.
pub(crate) fn traverse_cell(
    label: String,
    cache: CacheState,
    (mapwise, go): (&str, &Cmd),
    file: &str,
    (ours, theirs): (&[&str], &[&str]),
    (warmup, runs): (usize, usize),
) -> Cell {
    let ours = Cmd::new(mapwise).args(["bolt", "traverse", file]).args(ours.iter().copied());
    let go = go.clone().args(["traverse", file]).args(theirs.iter().copied());
    let contenders = vec![
        Contender::new("ours", ours.arg("--json"), |o| parse_ours(&o.stdout)),
        Contender::new("Go", go, |o| parse_go(&o.stdout)),
    ];
    let runs = if cache == Warm { runs.max(WARM_MIN_RUNS) } else { runs };
    Cell {
        shared_warm_reset: true,
        untimed_warm_first: true,
        cold_settle: machine::reports_free_pages().then_some(COLD_SETTLE),
        ..Cell::new(label, cache, vec![PathBuf::from(file)], contenders, (warmup, runs))
    }
}

/// Progress steps of the scan cells of `specs`.
pub(crate) fn scan_steps(specs: &[ScanSpec<'_>], (warmup, runs): (usize, usize)) -> usize {
    let cell = |c: &ScanSpec<'_>| warmup + if c.0 == Warm { runs.max(WARM_MIN_RUNS) } else { runs };
    specs.iter().map(cell).sum::<usize>() * 2
}

/// `inspector residency` on a sparse file, as results.json keeps it.
#[derive(Debug, Default, Serialize)]
struct ResidencyBench {
    /// `ok` or `failed`.
    status: String,
    detail: Option<String>,
    commands: Vec<String>,
    sparse_bytes: u64,
    walls: Vec<f64>,
    /// The first run's `resident_pages` and `total_pages`.
    pages: Option<(u64, u64)>,
}

/// Everything results.json holds; the report is rendered from it.
#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    size_bytes: u64,
    size: String,
    seed: u64,
    runs: usize,
    warmup: usize,
    bucket: &'static str,
    versions: Versions,
    file: FileInfo,
    build_commands: Vec<String>,
    cells: Vec<CellRuns>,
    limits: Vec<Limit>,
    residency: ResidencyBench,
    keys_agree: bool,
    traces: Vec<traces::TraceInfo>,
    charts: Vec<ChartFile>,
    #[serde(skip)]
    traces_paragraph: Option<String>,
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let tiny = args.common.tiny;
    let size = args.size.unwrap_or(if tiny { TINY_SIZE } else { 256 << 20 });
    let states = args.caches.states().iter();
    let specs: Vec<ScanSpec<'_>> =
        states.flat_map(|&c| [(c, false, LIKE_FOR_LIKE), (c, true, LIKE_FOR_LIKE)]).collect();
    let runs = args.common.runs()?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let peer = ws.peer("bolt")?;
    let steps = 4 + scan_steps(&specs, (warmup, runs)) + limits::steps(runs) + runs;
    let progress = Progress::new(steps as u64);
    let (build_ours, mapwise) = ws.build_mapwise(&progress)?;
    let build_inspector = Cmd::cargo_release("mapwise-inspector", None);
    let build_peer = Cmd::new(peer.clone()).arg("build");
    for (what, cmd) in [("inspector (release)", &build_inspector), ("the bbolt peer", &build_peer)]
    {
        progress.set(format!("building {what}"));
        cmd.run(&ws.root).with_context(|| format!("cannot build {what}"))?;
        progress.inc();
    }
    let file =
        boltfile::ensure_file(ws, &peer, (size, tiny.then_some(TINY_BATCH)), args.seed, &progress)?;
    progress.inc();
    let path = PathBuf::from(&file.path);
    let machine = Machine::describe(&path);
    let tracing = Tracing::new(ws);
    let cells = scan_cells(&specs, (&mapwise, &Cmd::new(&peer)), &file.path, (warmup, runs));
    let run = |c| cell::run(ws, &progress, c, &tracing);
    let cells: Vec<CellRuns> = cells.iter().map(run).collect::<Result<_>>()?;
    let limits = limits::standard(&path, runs, &progress)?;
    let residency = residency_bench(ws, runs, &progress)?;
    let keys: BTreeSet<u64> =
        cells.iter().flat_map(|c| c.distinct("keys")).chain(file.expected_keys).collect();
    let (dir, traces) = (ws.report_dir(&args.common, started), tracing.traces.into_inner());
    let mut charts = vec![ChartFile::ratios(
        &cells,
        "took_s",
        ("bolt-scan: took, ours / Go bbolt", "took, ours / Go bbolt, per cell"),
        None,
    )?];
    charts.extend(traces::residency_file(
        &traces,
        "residency-cold.svg",
        (
            "bolt-scan, cold: the file in the page cache during the scan",
            "resident share of the file during the first timed cold run of each tool and mode",
        ),
        &cold_picks(&cells),
    )?);
    let results = Results {
        stamp: Stamp::new("bolt-scan", started, machine),
        size_bytes: size,
        size: format_size(size),
        seed: args.seed,
        runs,
        warmup,
        bucket: BUCKET,
        versions: Versions::of(&peer),
        file,
        build_commands: vec![build_ours.shell(), build_inspector.shell(), build_peer.shell()],
        cells,
        limits,
        residency,
        keys_agree: keys.len() == 1,
        traces: traces.list().to_vec(),
        traces_paragraph: traces.paragraph(TRACED, Path::new(&ws.rel(&dir))),
        charts,
    };
    drop(progress);
    output::publish_traced(&dir, &render(&results), &results, &traces, &results.charts)?;
    Ok(output::exit(results.keys_agree, "key counts differ between runs or tools"))
}

/// Chart lines of the cold scans: both tools, or ours alone with extra options.
pub(crate) fn cold_picks(cells: &[CellRuns]) -> Vec<(String, &'static str, String)> {
    let mut picks = Vec::new();
    for c in cells.iter().filter(|c| c.cache == Cold) {
        let what = c.label.trim_start_matches("cold, ");
        match what.split_once(" vs ") {
            Some((ours, _)) => picks.push((c.label.clone(), "ours", ours.to_owned())),
            None => {
                picks.extend(["ours", "Go"].map(|s| (c.label.clone(), s, format!("{s}, {what}"))))
            }
        }
    }
    picks
}

/// `inspector residency --json` on a 64 GiB sparse file, `runs` times.
fn residency_bench(ws: &Workspace, runs: usize, progress: &Progress) -> Result<ResidencyBench> {
    let sparse = path_arg(&ws.bench_dir().join(format!("sparse-64GiB-{}.img", std::process::id())));
    let truncate = Cmd::new("truncate").args(["-s", "64G", &sparse]);
    let inspector = path_arg(&ws.release_bin("inspector"));
    let cmd = Cmd::new(inspector).args(["residency", &sparse, "--json"]);
    let rm = Cmd::new("rm").args(["-f", &sparse]);
    let commands = vec![truncate.shell(), cmd.shell(), rm.shell()];
    let (status, sparse_bytes) = ("ok".to_owned(), SPARSE_BYTES);
    let mut bench = ResidencyBench { status, commands, sparse_bytes, ..ResidencyBench::default() };
    let _guard = TempPath::new(PathBuf::from(&sparse));
    truncate.run(&ws.root)?;
    for run in 1..=runs {
        progress.set(format!("inspector residency, 64 GiB sparse, run {run}/{runs}"));
        progress.inc();
        let out = cmd.output(&ws.root)?;
        if !out.success {
            let msg = tail(&out.stderr, 3).replace('\n', " / ");
            bench.status = "failed".to_owned();
            bench.detail = Some(format!("{} ({}): {msg}", cmd.shell(), out.status));
            break;
        }
        bench.walls.push(out.wall_s);
        bench.pages = bench.pages.or_else(|| {
            let v: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
            Some((v.get("resident_pages")?.as_u64()?, v.get("total_pages")?.as_u64()?))
        });
    }
    Ok(bench)
}

/// The seed's figures (boltdb/bolt pull request 455: a 2 GB file read cold,
/// without and with `MAP_POPULATE`) beside this run's cold medians.
pub(crate) fn seed_section(report: &mut Report, cells: &[CellRuns], size: &str) {
    report.section("The seed's published figures").text(say(NOTES, "seed", &[]));
    let mut t = Table::of("machine | file | >without | >with | >without / with");
    t.row(["i7-4910MQ laptop, SSD, Linux 3.16, Go 1.5.1 (the seed)", "2 GB", "8 s", "4 s", "2.0×"]);
    t.row(["1-vCPU cloud VM, HDD, Linux 3.16, Go 1.5.1 (the seed)", "2 GB", "130 s", "8 s", "16×"]);
    let cold = |populate| cells.iter().find(|c| c.label == scan_label(Cold, populate));
    let mut speedups = Vec::new();
    for (i, who, role) in [(0, "ours", Ours), (1, "Go bbolt", Peer)] {
        let took = |p| cold(p).and_then(|c| c.summary(i, "took_s"));
        if let (Some(a), Some(b)) = (took(false), took(true)) {
            let x = a.median / b.median.max(1e-9);
            speedups.push(x);
            let (a, b) = (fmt_secs(a.median), fmt_secs(b.median));
            let row = [format!("this machine, {who}"), size.to_owned(), a, b, format!("{x:.1}×")];
            t.row_as(role, row);
        }
    }
    report.table(t).text(if speedups.is_empty() {
        "No cold cells ran, so there is nothing to set beside the seed's figures.".to_owned()
    } else {
        say(NOTES, if speedups.iter().all(|&x| x > 1.0) { "matches" } else { "differs" }, &[])
    });
}

/// The scan table of both bolt benches: took, ours/Go, peak RSS, residency after, keys.
pub(crate) fn scan_table(cells: &[CellRuns]) -> Table {
    cell_table(
        cells,
        &[
            ("cell", Other, &|c| c.label.clone()),
            (">ours took", Ours, &|c| c.time(0, "took_s")),
            (">Go took", Peer, &|c| c.time(1, "took_s")),
            (">ours/Go (per pair)", Ratio, &|c| c.ratio_text("took_s")),
            (">peak RSS ours / Go", Other, &CellRuns::rss),
            (">resident after ours / Go", Other, &|c| both(|i| c.resident_after(i))),
            (">keys", Other, &|c| c.distinct_text("keys")),
        ],
    )
}

fn render(r: &Results) -> Report {
    let mut o = r.stamp.report();
    let (runs, warm_runs) = (r.runs.to_string(), r.runs.max(WARM_MIN_RUNS).to_string());
    let (version, bucket, s) =
        (r.versions.bbolt_readme.as_deref().unwrap_or("unknown"), r.bucket, plural(r.runs));
    let finished = &r.stamp.finished_utc;
    o.text(say(NOTES, "intro", vars![bucket, version, runs, s, warm_runs, finished]));
    r.versions.machine(&mut o, &r.stamp);
    let f = &r.file;
    let keys = f.expected_keys.map_or_else(|| "unknown number of".to_owned(), |k| k.to_string());
    let made = if f.generated_now { "generated by this run" } else { "taken from the cache" };
    let size = human_size(f.bytes);
    o.section("File")
        .text(format!("`{}`: {size} ({} bytes), {keys} keys; {made}.", f.path, f.bytes));
    let machine = &r.stamp.machine;
    let reports = machine.free_page_reporting.as_deref().is_some_and(|f| f.starts_with("on"));
    let secs = COLD_SETTLE.as_secs().to_string();
    let settle =
        if reports { say(NOTES, "settle", &[("secs", &secs)]) + " " } else { String::new() };
    let (warm_min, warmup) = (WARM_MIN_RUNS.to_string(), r.warmup.to_string());
    o.section("Method").text(say(NOTES, "method", vars![settle, warm_min, warmup]));
    let mut commands = r.build_commands.clone();
    commands.push(r.file.gen_cmd.clone());
    for (_, cmd) in r.cells.iter().flat_map(|c| &c.contenders) {
        if !commands.contains(cmd) {
            commands.push(cmd.clone());
        }
    }
    commands.extend(r.residency.commands.iter().cloned());
    o.commands(&commands);
    o.section("Results: took = open + scan").table(scan_table(&r.cells));
    let scan_ratio = |c: &CellRuns| fixed(c.ratio(0, 1, "scan_s").0.map(|x| x.median), 2, "×");
    let label: Col<'_, CellRuns> = ("cell", Other, &|c| c.label.clone());
    o.subsection("Open / scan split (medians), process wall time, cache state")
        .table(cell_table(
            &r.cells,
            &[
                label,
                (">ours open", Ours, &|c| c.median_time(0, "open_s")),
                (">Go open", Peer, &|c| c.median_time(1, "open_s")),
                (">ours scan", Ours, &|c| c.median_time(0, "scan_s")),
                (">Go scan", Peer, &|c| c.median_time(1, "scan_s")),
                (">scan ours/Go", Ratio, &scan_ratio),
                (">ours wall", Ours, &|c| c.median_time(0, "wall_s")),
                (">Go wall", Peer, &|c| c.median_time(1, "wall_s")),
                (">resident at start", Other, &CellRuns::resident_at_start),
            ],
        ))
        .text(say(NOTES, "split", &[]));
    seed_section(&mut o, &r.cells, &r.size);
    charts::section(&mut o, &r.charts, r.traces_paragraph.clone());
    limits::add_to(&mut o, &r.limits);
    let rs = &r.residency;
    let (time, note) = match Summary::of(&rs.walls).filter(|_| rs.status == "ok") {
        Some(w) => {
            let pass = Outcome::of(w.median < RESIDENCY_TARGET_S).word();
            let pages = rs.pages.map_or_else(String::new, |(res, total)| {
                format!("; it reported {res} of {total} pages resident")
            });
            let n = rs.walls.len();
            let note = format!(
                "target < {RESIDENCY_TARGET_S} s: {pass} (wall time of the whole process, median \
                 of {n}){pages}"
            );
            (w.secs(), note)
        }
        None => {
            ("—".to_owned(), format!("{}: {}", rs.status, rs.detail.clone().unwrap_or_default()))
        }
    };
    let mut t = Table::of("what | >time | notes");
    let what = format!("`inspector residency`, {} sparse file", human_size(rs.sparse_bytes));
    t.row([what, time, note]);
    o.section("Residency of a sparse file").table(t);
    let ratio = |c: &CellRuns| c.ratio(0, 1, "took_s").0;
    let target = (1.0, Bound::AtMost);
    let verdict = |c: &CellRuns| judge(&c.label, ratio(c).as_ref(), target, ("ours ", " Go bbolt"));
    let mut verdicts: Vec<Verdict> = r.cells.iter().map(verdict).collect();
    let n = r.cells.first().and_then(|c| c.distinct("keys").first().copied());
    let n = n.map_or_else(|| "unknown".to_owned(), |k| k.to_string());
    let as_generated = if r.file.expected_keys.is_some() { ", as generated" } else { "" };
    let detail = if r.keys_agree {
        format!("ours and Go agree in every run ({n} keys{as_generated})")
    } else {
        "**MISMATCH** — see the keys column and results.json".to_owned()
    };
    verdicts.push(Verdict::new("key counts", Outcome::of(r.keys_agree), detail));
    o.section("Verdicts (target: ours ≤ 1.0× Go bbolt, took)").verdicts(verdicts);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(open: f64, scan: f64, took: f64, keys: f64) -> Metrics {
        metrics([("open_s", open), ("scan_s", scan), ("took_s", took), ("keys", keys)])
    }

    #[test]
    fn both_tools_outputs_parse() {
        let out =
            r#"{"advice":"random","keys":20000,"open_s":0.25,"took_s":1.5,"traverse_s":1.25}"#;
        assert_eq!(parse_ours(&format!("warning: x\n{out}\n")).unwrap(), m(0.25, 1.25, 1.5, 2e4));
        assert!(parse_ours("{\"open_s\": 1}").is_err());
        let out = "resident-before: 0.0%\ntook: 4.321s\nopen: 0.000s\ntraverse: 4.321s keys=7\n";
        assert_eq!(parse_go(out).unwrap(), m(0.0, 4.321, 4.321, 7.0));
        let err = |s| parse_go(s).unwrap_err();
        assert!(err("open: 0.003s\ntraverse: 0.001s keys=1\n").contains("took"));
        assert!(err("open: 0.003s\ntraverse: 0.001s\ntook: 1s\n").contains("keys"));
    }
}
