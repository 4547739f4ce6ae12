//! `cargo xtask bench bolt`: our bbolt engine beside Go bbolt 1.3.6 —
//! batched puts and gets on the oracle's seeded `bench` workload, full scans
//! of a large file cold and warm, with and without MAP_POPULATE, and our
//! prefetching cursor against bbolt's plain cold scan, with the peak RSS of
//! every process and the residency a prefetching range scan leaves behind.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::bolt_scan::{self as scan, ScanSpec};
use super::boltfile::{self, FileInfo, Versions};
use super::cell::{self, CellRuns, Contender, Metrics, Tracing, metrics};
use super::charts::{self, ChartFile};
use super::limits::{self, Limit};
use super::machine::{Machine, Stamp};
use super::output;
use super::proc::{Cmd, json_line};
use super::report::Role::{Other, Ours, Peer, Ratio};
use super::report::{Bound, Outcome, Report, Table, Verdict, cell_table, judge, say, vars};
use super::schedule::{self, CacheState::Cold, CacheState::Warm};
use super::stats::{Summary, opt_time, or_dash};
use super::units::{format_size, human_size, plural};
use super::{CommonArgs, Progress, Workspace, path_arg};

/// Long help of `cargo xtask bench bolt`.
pub const HELP: &str = include_str!("text/bolt-help.txt");

/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/bolt-notes.md");

/// `bench bolt` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Smaller sizes: 100k puts, a 256 MiB scan file.
    #[arg(long)]
    quick: bool,
    /// Puts per workload run [default: 1000000, --quick 100000, --tiny 2000].
    #[arg(long, value_name = "N", conflicts_with = "tiny")]
    count: Option<u64>,
    /// Logical size of the scan file [default: 2GiB, --quick 256MiB,
    /// --tiny 4MiB generated in transactions of 1000 puts].
    #[arg(long, value_name = "SIZE", value_parser = super::units::parse_size, conflicts_with = "tiny")]
    size: Option<u64>,
    /// Seed of the scan file (oracle `gen --seed`).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Prefetch window of ours in the prefetch cell and the residency check.
    #[arg(long, value_name = "BYTES", default_value = "4MiB", value_parser = super::units::parse_size)]
    prefetch: u64,
    /// Untimed pairs at the start of each cell.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=100))]
    warmup: u64,
    /// Skip the puts/gets cells.
    #[arg(long)]
    no_puts: bool,
    /// Skip the scan cells and the residency check.
    #[arg(long)]
    no_scans: bool,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// What both `bench` commands print (the keys used here).
#[derive(Deserialize)]
struct BenchJson {
    write_ops: u64,
    write_s: f64,
    read_ops: u64,
    read_s: f64,
}

/// Either tool's `bench --json` line as rates and op counts.
fn parse_bench(stdout: &str) -> Result<Metrics, String> {
    let j: BenchJson = json_line(stdout)?;
    let rate = |ops: u64, s: f64| if s > 0.0 { ops as f64 / s } else { 0.0 };
    let (w, r) = (rate(j.write_ops, j.write_s), rate(j.read_ops, j.read_s));
    let counts = [("write_ops", j.write_ops as f64), ("read_ops", j.read_ops as f64)];
    Ok(metrics([("puts_per_s", w), ("gets_per_s", r)].into_iter().chain(counts)))
}

/// The prefetching range scan.
#[derive(Debug, Serialize)]
struct RangeRun {
    label: String,
    cmd: String,
    json: serde_json::Value,
}

#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    runs: usize,
    warmup: usize,
    count: u64,
    versions: Versions,
    build_commands: Vec<String>,
    /// Puts and gets, seq and rnd: ours is contender 0, Go 1.
    work: Vec<CellRuns>,
    file: Option<FileInfo>,
    /// Scan cells: ours is contender 0, Go 1.
    scans: Vec<CellRuns>,
    range: Vec<RangeRun>,
    range_keys: Option<(String, String)>,
    prefetch: u64,
    verdicts: Vec<Verdict>,
    /// Logical size of the scan file, as asked of the generator.
    scan_size: Option<String>,
    /// The physical limits of the scan file.
    limits: Vec<Limit>,
    traces: Vec<super::traces::TraceInfo>,
    #[serde(skip)]
    traces_paragraph: Option<String>,
    charts: Vec<ChartFile>,
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = args.common.runs()?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let tiny = args.common.tiny;
    let (count, size) = match (tiny, args.quick) {
        (true, _) => (2000, boltfile::TINY_SIZE),
        (_, true) => (100_000, 256 << 20),
        _ => (1_000_000, 2 << 30),
    };
    let (count, size) = (args.count.unwrap_or(count), args.size.unwrap_or(size));
    let pf = format_size(args.prefetch);
    // Ours' extra options beyond like for like: the prefetching cursor, and
    // MADV_HUGEPAGE instead of bbolt's MADV_RANDOM (cold faults read 2 MiB).
    // Like for like (`--prefetch 0`: bbolt's exact I/O), ours' defaults
    // (read-ahead once a scan passes 3 leaves), and the window asked for.
    let (prefetch, hugepage) = (["--prefetch", pf.as_str()], ["--advice", "hugepage"]);
    let (plain, defaults, prefetch, hugepage): (&[&str], &[&str], _, _) =
        (scan::LIKE_FOR_LIKE, &[], &prefetch[..], &hugepage[..]);
    let specs: Vec<ScanSpec<'_>> = [(Cold, false, plain), (Cold, true, plain)]
        .into_iter()
        .chain([(Cold, false, defaults), (Cold, false, prefetch), (Cold, false, hugepage)])
        .chain([(Warm, false, plain), (Warm, true, plain)])
        .filter(|_| !args.no_scans)
        .collect();
    let modes: &[&str] = if args.no_puts { &[] } else { &["seq", "rnd"] };
    // The scan cells, and the seek cell (two contenders).
    let scan_steps = scan::scan_steps(&specs, (warmup, runs)) + (warmup + runs) * 2;
    let scan_steps = if args.no_scans { 0 } else { scan_steps + 2 + limits::steps(runs) };
    let progress = Progress::new((1 + scan_steps + modes.len() * (warmup + runs) * 2) as u64);
    let peer = ws.peer("bolt")?;
    let (build_ours, mapwise) = ws.build_mapwise(&progress)?;
    let build_peer = Cmd::new(peer.clone()).arg("build");
    progress.set("building the bbolt peer");
    let dir = build_peer.run(&ws.root).context("cannot build the bbolt peer")?;
    // The peer's Go binary, run from its build directory (a cache
    // directory of this machine), shown as `"$BOLT_ORACLE"/boltoracle`.
    let go_bin = path_arg(&PathBuf::from(dir.stdout.trim()).join("boltoracle"));
    let go = Cmd::new(go_bin).shown_as("\"$BOLT_ORACLE\"/boltoracle");
    progress.inc();

    let tmp = ws.bench_dir().join("tmp");
    fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    // Described before the runs (the load average "at start"); the bench
    // files all live under target/bench, on one file system.
    let machine = Machine::describe(&tmp);
    let tracing = Tracing::new(ws);
    let run_cell = |c: &cell::Cell| cell::run(ws, &progress, c, &tracing);
    let mut work = Vec::new();
    for mode in modes {
        let files = [tmp.join("bolt-bench-ours.db"), tmp.join("bolt-bench-go.db")];
        let flags = format!(
            "--write-mode {mode} --read-mode {mode} --count {count} --batch-size 1000 \
             --key-size 16 --value-size 100 --json --force"
        );
        let bench =
            |cmd: Cmd, i: usize| cmd.arg(path_arg(&files[i])).args(flags.split_whitespace());
        let ours = bench(Cmd::new(&mapwise).args(["bolt", "bench"]), 0);
        // Both files go before every run, as neither run should find the other's in the cache.
        let contenders = [("ours", ours), ("Go", bench(go.clone().arg("bench"), 1))]
            .map(|(n, c)| Contender::new(n, c, |o| parse_bench(&o.stdout)).writing(files.to_vec()));
        let label = format!("{mode} puts, {mode} gets");
        let cell = cell::Cell::new(label, Warm, Vec::new(), contenders.into(), (warmup, runs));
        work.push(run_cell(&cell)?);
        files.iter().for_each(|f| _ = fs::remove_file(f));
    }

    let (mut scans, mut range, mut range_keys, mut file, mut limits) =
        (Vec::new(), Vec::new(), None, None, Vec::new());
    if !args.no_scans {
        let batch = tiny.then_some(boltfile::TINY_BATCH);
        let f = boltfile::ensure_file(ws, &peer, (size, batch), args.seed, &progress)?;
        let path = PathBuf::from(&f.path);
        let mut cells = scan::scan_cells(&specs, (&mapwise, &go), &f.path, (warmup, runs));
        // Point reads: the same seeks on both sides, ours' defaults.
        cells.push(scan::traverse_cell(
            SEEKS_LABEL.to_owned(),
            Cold,
            (&mapwise, &go),
            &f.path,
            (SEEKS, SEEKS),
            (warmup, runs),
        ));
        scans = cells.iter().map(run_cell).collect::<Result<_>>()?;
        limits = limits::standard(&path, runs, &progress)?;
        progress.set("range scans with residency");
        let keys = go.clone().args(["keys", &f.path, boltfile::BUCKET]).run(&ws.root)?;
        let all: Vec<&str> = keys.stdout.lines().collect();
        if all.len() >= 20 {
            let (k1, k2) = (all[all.len() * 45 / 100], all[all.len() / 2]);
            range_keys = Some((k1.to_owned(), k2.to_owned()));
            for (label, extra) in [
                ("--prefetch 0 (bbolt's I/O)".to_owned(), plain),
                ("defaults".to_owned(), defaults),
                (format!("--prefetch {pf}"), prefetch),
            ] {
                schedule::prepare(&[&path], Cold)?;
                let cmd = Cmd::new(&mapwise)
                    .args(["bolt", "traverse", &f.path, "--from", k1, "--to", k2])
                    .args(extra.iter().copied())
                    .args(["--residency", "--json"]);
                let json = json_line(&cmd.run(&ws.root)?.stdout).map_err(anyhow::Error::msg)?;
                range.push(RangeRun { label, cmd: cmd.shell(), json });
                progress.inc();
            }
        }
        file = Some(f);
    }
    drop(progress);
    let (dir, traces) = (ws.report_dir(&args.common, started), tracing.traces.into_inner());
    let charts: Vec<ChartFile> = super::traces::residency_file(
        &traces,
        "residency-cold.svg",
        (
            "bench bolt, cold scans: the file in the page cache (plain, populate, prefetching cursor, hugepage advice)",
            "the file in the page cache during the first timed cold scan of each kind",
        ),
        &scan::cold_picks(&scans),
    )?
    .into_iter()
    .collect();
    let results = Results {
        stamp: Stamp::new("bolt", started, machine),
        runs,
        warmup,
        count,
        versions: Versions::of(&peer),
        build_commands: vec![build_ours.shell(), format!("BOLT_ORACLE=$({})", build_peer.shell())],
        verdicts: verdicts(work.iter().chain(&scans))
            .into_iter()
            .chain(default_verdicts(&scans, &limits, &range))
            .collect(),
        work,
        file,
        scans,
        range,
        range_keys,
        prefetch: args.prefetch,
        scan_size: (!args.no_scans).then(|| format_size(size)),
        limits,
        traces: traces.list().to_vec(),
        traces_paragraph: traces.paragraph(scan::TRACED, Path::new(&ws.rel(&dir))),
        charts,
    };
    output::publish_traced(&dir, &render(&results), &results, &traces, &results.charts)?;
    let agree = results.work.iter().all(|w| agrees(w, "write_ops") && agrees(w, "read_ops"))
        && results.scans.iter().all(|c| agrees(c, "keys"));
    Ok(output::exit(agree, "op or key counts differ between ours and Go"))
}

/// Whether every run of `c` counted the same `metric`.
fn agrees(c: &CellRuns, metric: &str) -> bool {
    c.distinct(metric).len() == 1
}

/// The targets: name (empty: `scan: <cell>`), part of the cell's label, metric, target, bound.
const TARGETS: [(&str, &str, &str, f64, Bound); 7] = [
    ("seq puts", "seq puts", "puts_per_s", 1.0, Bound::AtLeast),
    ("rnd puts", "rnd puts", "puts_per_s", 1.0, Bound::AtLeast),
    ("random gets", "rnd puts", "gets_per_s", 1.5, Bound::AtLeast),
    ("", "ours' defaults", "took_s", 0.1, Bound::AtMost),
    ("", "--prefetch", "took_s", 0.5, Bound::AtMost),
    ("", "warm, plain mmap", "took_s", 0.5, Bound::AtMost),
    ("", "1000 seeks", "took_s", 1.0, Bound::AtMost),
];

/// The point-read cell: a thousand seeks, each followed by ten keys, the
/// same keys on both sides (`traverse --seeks`).
const SEEKS: &[&str] = &["--seeks", "1000", "--per-seek", "10", "--seed", "1"];

/// Its label.
const SEEKS_LABEL: &str = "cold, 1000 seeks × 10 keys, ours' defaults vs Go";

/// Ours' defaults, cold full scan, against the cold sequential `O_DIRECT`
/// read of the same file: at most this many times its time.
const LIMIT_TARGET: f64 = 1.2;

/// The verdicts against the limit and on the range scans: a full scan
/// with ours' defaults at most [`LIMIT_TARGET`]× the sequential `O_DIRECT`
/// read, and a range scan with them reading no page outside its range.
fn default_verdicts(scans: &[CellRuns], limits: &[Limit], range: &[RangeRun]) -> Vec<Verdict> {
    let mut out = Vec::new();
    let scan = scans.iter().find(|c| c.label.contains("ours' defaults"));
    let read = limits.iter().find(|l| l.what.starts_with("sequential O_DIRECT read"));
    if let (Some(c), Some(l)) = (scan, read) {
        let secs: Vec<f64> = l.passes.iter().map(|p| p.secs).collect();
        let (ours, limit) = (c.summary(0, "took_s"), Summary::of(&secs));
        let name = "scan: cold, ours' defaults against the sequential O_DIRECT read";
        let target = format!("time ≤ {LIMIT_TARGET:.1}× the read's");
        out.push(match (ours, limit) {
            (Some(o), Some(r)) if r.median > 0.0 => {
                let x = o.median / r.median;
                let outcome = if x <= LIMIT_TARGET { Outcome::Pass } else { Outcome::Fail };
                let detail = format!(
                    "{x:.2}× (medians: ours {:.2} s, the read {:.2} s)",
                    o.median, r.median
                );
                Verdict::new(name, outcome, detail).target(target)
            }
            _ => Verdict::new(name, Outcome::None, "no figures").target(target),
        });
    }
    // Point reads read no more pages than bbolt's cursor.
    if let Some(c) = scans.iter().find(|c| c.label == SEEKS_LABEL) {
        let name = "1000 seeks × 10 keys, pages read";
        let target = "resident after, ours ≤ Go's (both start cold)";
        let (o, g) = (c.summary(0, "resident_after"), c.summary(1, "resident_after"));
        out.push(
            match (o, g) {
                (Some(o), Some(g)) => {
                    let outcome = if o.median <= g.median { Outcome::Pass } else { Outcome::Fail };
                    let detail = format!(
                        "medians: ours {:.3} %, Go {:.3} % of the file's pages",
                        o.median * 100.0,
                        g.median * 100.0
                    );
                    Verdict::new(name, outcome, detail)
                }
                _ => Verdict::new(name, Outcome::None, "no residency"),
            }
            .target(target),
        );
    }
    // Pages resident outside those the scan returned: meta, branch pages
    // and leaf headers bbolt's own cursor reads too, and whatever a hint
    // brought in past the range.
    let outside = |label: &str| {
        let x = range.iter().find(|x| x.label.starts_with(label))?;
        x.json.pointer("/residency/resident_outside").and_then(serde_json::Value::as_u64)
    };
    if let (Some(d), Some(p)) = (outside("defaults"), outside("--prefetch 0")) {
        let name = "range scan (5 %), ours' defaults";
        let target = "no more pages outside the range than bbolt's I/O (--prefetch 0)";
        let outcome = if d <= p { Outcome::Pass } else { Outcome::Fail };
        let detail = format!("{d} pages resident outside the range, {p} with --prefetch 0");
        out.push(Verdict::new(name, outcome, detail).target(target));
    }
    out
}

/// The verdict of every target whose cell ran.
fn verdicts<'a>(cells: impl Iterator<Item = &'a CellRuns> + Clone) -> Vec<Verdict> {
    let verdict = |&(name, cell, metric, target, bound): &(&str, &str, &str, f64, Bound)| {
        let c = cells.clone().find(|c| c.label.contains(cell))?;
        let name = if name.is_empty() { format!("scan: {}", c.label) } else { name.to_owned() };
        let (what, cmp) = if bound == Bound::AtLeast { ("ops/s", "≥") } else { ("time", "≤") };
        let ratio = c.ratio(0, 1, metric).0;
        let v = judge(name, ratio.as_ref(), (target, bound), ("", ""));
        Some(v.target(format!("{what} ours/Go {cmp} {target:.1}×")))
    };
    TARGETS.iter().filter_map(verdict).collect()
}

/// Median and range of ops/s, `—` when none.
fn ops(s: Option<Summary>) -> String {
    let k = |x: f64| if x >= 1e6 { format!("{:.2}M", x / 1e6) } else { format!("{:.0}k", x / 1e3) };
    or_dash(s, |s| s.shown(k))
}

fn render(r: &Results) -> Report {
    let mut o = r.stamp.report();
    let (runs, warmup, s) = (r.runs.to_string(), r.warmup.to_string(), plural(r.runs));
    let (warm_runs, finished) =
        (r.runs.max(scan::WARM_MIN_RUNS).to_string(), &r.stamp.finished_utc);
    let version = r.versions.bbolt_readme.as_deref().unwrap_or_default();
    o.text(say(NOTES, "intro", vars![runs, s, warm_runs, version, warmup, finished]));
    r.versions.machine(&mut o, &r.stamp);
    o.section("Verdicts").verdicts(r.verdicts.clone());
    if !r.work.is_empty() {
        let count = r.count;
        o.section(format!(
            "Puts and gets ({count} keys, batches of 1000, 16-byte keys, 100-byte values)"
        ));
        let agree = |c: &CellRuns| agrees(c, "write_ops") && agrees(c, "read_ops");
        o.table(cell_table(
            &r.work,
            &[
                ("mode", Other, &|c| c.label.clone()),
                (">ours puts/s", Ours, &|c| ops(c.summary(0, "puts_per_s"))),
                (">Go puts/s", Peer, &|c| ops(c.summary(1, "puts_per_s"))),
                (">puts ours/Go", Ratio, &|c| c.ratio_text("puts_per_s")),
                (">ours gets/s", Ours, &|c| ops(c.summary(0, "gets_per_s"))),
                (">Go gets/s", Peer, &|c| ops(c.summary(1, "gets_per_s"))),
                (">gets ours/Go", Ratio, &|c| c.ratio_text("gets_per_s")),
                (">peak RSS ours / Go", Other, &CellRuns::rss),
                ("ops agree", Other, &|c| if agree(c) { "yes" } else { "**NO**" }.to_owned()),
            ],
        ))
        .text(say(NOTES, "puts", &[]));
    }
    if let Some(f) = &r.file {
        let keys = f.expected_keys.map_or_else(|| "?".to_owned(), |k| k.to_string());
        o.section(format!("Scans of `{}` ({}, {keys} keys)", f.path, human_size(f.bytes)));
        o.table(scan::scan_table(&r.scans)).text(say(NOTES, "scans", &[]));
        scan::seed_section(&mut o, &r.scans, r.scan_size.as_deref().unwrap_or_default());
        limits::add_to(&mut o, &r.limits);
    }
    if let Some((k1, k2)) = r.range_keys.as_ref().filter(|_| !r.range.is_empty()) {
        let read_ahead =
            r.stamp.machine.read_ahead_kb.map_or_else(|| "unknown".to_owned(), |k| k.to_string());
        o.section("Prefetch reads only its range").text(say(
            NOTES,
            "range",
            vars![k1, k2, read_ahead],
        ));
        let mut t = Table::of(
            "scan | >keys | >took | >file pages | >pages read by the scan | >resident among them \
             | >resident elsewhere",
        );
        for x in &r.range {
            let get = |k: &str| or_dash(x.json.pointer(k), ToString::to_string);
            let took = opt_time(x.json.get("took_s").and_then(serde_json::Value::as_f64));
            let res = ["file_pages", "visited_pages", "resident_visited", "resident_outside"];
            let res = res.map(|k| get(&format!("/residency/{k}")));
            t.row([x.label.clone(), get("/keys"), took].into_iter().chain(res));
        }
        o.table(t).text(say(NOTES, "range-note", &[]));
    }
    let mut commands = r.build_commands.clone();
    let cmds = |cells: &[CellRuns]| -> Vec<String> {
        cells.iter().flat_map(|w| &w.contenders).map(|c| c.1.clone()).collect()
    };
    commands.extend(cmds(&r.work));
    commands.extend(r.file.as_ref().map(|f| f.gen_cmd.clone()));
    commands.extend(cmds(&r.scans));
    commands.extend(r.range.iter().map(|x| x.cmd.clone()));
    o.commands(&commands);
    if r.file.is_some() {
        charts::section(&mut o, &r.charts, r.traces_paragraph.clone());
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_json_reads_as_rates_in_k_and_m() {
        let m = parse_bench("note\n{\"write_ops\":1000,\"write_s\":0.5,\"read_ops\":1000,\"read_s\":0.25,\"file_bytes\":1}\n").unwrap();
        assert_eq!((m["puts_per_s"], m["gets_per_s"], m["write_ops"]), (2000.0, 4000.0, 1000.0));
        assert!(parse_bench("no json").is_err());
        let s = |v: &[f64]| Summary::of(v);
        assert_eq!(ops(s(&[950_000.0, 1_234_567.0])), "1.09M [950k–1.23M]");
    }
}
