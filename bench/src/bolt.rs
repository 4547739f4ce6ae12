//! `cargo xtask bench bolt`: our bbolt engine beside Go
//! bbolt 1.3.6 — batched puts and gets on the oracle's seeded `bench`
//! workload, full scans of a large file cold and warm, with and without
//! MAP_POPULATE, and our prefetching cursor against bbolt's plain cold
//! scan, with the peak RSS of every process and the residency a
//! prefetching range scan leaves behind.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::bolt_scan::{self, CellResult, CellSpec, FileInfo, Versions};
use super::limits::{self, Limit};
use super::machine::{self, Machine};
use super::output::{self, Table};
use super::proc::Cmd;
use super::schedule::{self, CacheState, Pair};
use super::stats::{Summary, opt_ratio, opt_secs, pair_ratios};
use super::traces::{TraceInfo, Traces};
use super::units::{format_size, human_size, utc_human};
use super::{CommonArgs, Progress, Workspace, path_arg};

/// Long help of `cargo xtask bench bolt`.
pub const HELP: &str = "\
Puts and gets: the bbolt peer's seeded `bench` workload (peers/bolt/
README.md), the same puts and reads in both engines:
  target/release/mapwise bolt bench FILE --write-mode M --read-mode M \\
      --count N --batch-size 1000 --key-size 16 --value-size 100 --json --force
  <peer binary> bench FILE …the same flags…
for M = seq and rnd (N = 1000000, --quick 100000), alternating ours and Go
(A B, B A, …). Each run writes a new file (one fsync'd commit per batch) and
then reads it back in one read transaction (seq: cursor over everything;
rnd: Get of every key in seeded shuffled order). Ratios are ops/s ours/Go
per pair. Targets: puts >= 1.0x bbolt (both modes), random gets >= 1.5x.

Scans: a Go-made file (oracle gen --shape big, 2GiB, --quick 256MiB,
cached in target/bench/files/), `mapwise bolt traverse` vs the oracle's
`traverse`, cold (xtask evicts the file before every run) and warm (xtask
reads it first), plain mmap and MAP_POPULATE, plus ours with --prefetch
(default 4MiB) and ours with --advice hugepage (MADV_HUGEPAGE: 2 MiB reads
on cold faults where the page cache has large folios), each against Go's
plain cold scan. Targets: warm plain scan
<= 0.7x bbolt's time; prefetching cold scan <= 0.5x bbolt's plain cold scan.
Beside the scans: the seed's published figures (boltdb/bolt pull request
455) and the physical limits of the scan file (a cold O_DIRECT read and a
cached read(), 1 MiB at a time). Then the residency evidence: a cold range
scan over 5 % of the keys (45 % to 50 % of the key list) with and without
--prefetch, `--residency` (mincore after the scan: resident pages holding
what the scan read vs the rest). Peak RSS of every process comes from wait4
(ru_maxrss).

--tiny (a smoke run of the harness, e.g. in CI; its times mean nothing):
2000 puts, and a scan file of about 4000 keys (8 MiB) that the oracle writes
in transactions of 1000 puts; it overrides --quick.

  cargo xtask bench bolt [--quick | --tiny] [--count N] [--size SIZE]
                         [--prefetch BYTES] [--runs 5] [--warmup 1]
                         [--no-puts] [--no-scans] [--out DIR]";

/// The bucket the `big` shape fills.
const BUCKET: &str = "fake-bucket";

/// `bench bolt` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Smaller sizes: 100k puts, a 256 MiB scan file.
    #[arg(long)]
    quick: bool,
    /// Puts per workload run [default: 1000000, --quick 100000, --tiny
    /// 2000].
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

/// The JSON object both `bench` commands print (the keys used here).
#[derive(Clone, Debug, Deserialize, Serialize)]
struct BenchJson {
    write_ops: u64,
    write_s: f64,
    read_ops: u64,
    read_s: f64,
    file_bytes: u64,
    open_s: f64,
}

/// One run of one tool on the workload.
#[derive(Debug, Serialize)]
struct WorkSample {
    #[serde(flatten)]
    out: BenchJson,
    wall_s: f64,
    max_rss_kib: Option<u64>,
}

#[derive(Debug, Serialize)]
struct WorkCell {
    mode: &'static str,
    ours_cmd: String,
    go_cmd: String,
    warmup: Vec<Pair<WorkSample>>,
    pairs: Vec<Pair<WorkSample>>,
    ours_write: Option<Summary>,
    go_write: Option<Summary>,
    /// ours/Go write ops/s, pair by pair.
    ratio_write: Option<Summary>,
    ours_read: Option<Summary>,
    go_read: Option<Summary>,
    /// ours/Go read ops/s, pair by pair.
    ratio_read: Option<Summary>,
    ours_rss: Option<Summary>,
    go_rss: Option<Summary>,
    ops_agree: bool,
}

/// The prefetching range scan.
#[derive(Debug, Serialize)]
struct RangeRun {
    label: String,
    cmd: String,
    json: serde_json::Value,
}

#[derive(Debug, Serialize)]
struct Target {
    what: String,
    target: String,
    ratio: Option<Summary>,
    pass: Option<bool>,
}

#[derive(Debug, Serialize)]
struct Results {
    bench: &'static str,
    sides: [(&'static str, &'static str); 2],
    started_utc: String,
    finished_utc: String,
    runs: usize,
    warmup: usize,
    count: u64,
    machine: Machine,
    loadavg_end: Option<String>,
    versions: Versions,
    build_commands: Vec<String>,
    work: Vec<WorkCell>,
    file: Option<FileInfo>,
    scans: Vec<CellResult>,
    range: Vec<RangeRun>,
    range_keys: Option<(String, String)>,
    prefetch: u64,
    targets: Vec<Target>,
    /// Logical size of the scan file, as asked of the generator.
    scan_size: Option<String>,
    /// The physical limits of the scan file.
    limits: Vec<Limit>,
    /// Residency traces of the timed scan runs (files in `traces/`).
    traces: Vec<TraceInfo>,
    /// SVG charts beside the report.
    charts: Vec<String>,
}

/// Runs the bench.
#[expect(clippy::too_many_lines)]
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = usize::try_from(args.common.runs).context("--runs too large")?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let tiny = args.common.tiny;
    let count = args.count.unwrap_or(if tiny {
        2000
    } else if args.quick {
        100_000
    } else {
        1_000_000
    });
    let size = args.size.unwrap_or(if tiny {
        bolt_scan::TINY_SIZE
    } else if args.quick {
        256 << 20
    } else {
        2 << 30
    });
    let batch = tiny.then_some(bolt_scan::TINY_BATCH);
    let oracle = ws.peer("bolt")?;
    let scan_cells = if args.no_scans { 0 } else { 5 };
    let work_cells = if args.no_puts { 0 } else { 2 };
    let limit_steps = if args.no_scans {
        0
    } else {
        limits::steps(runs)
    };
    // Of the scan cells, the last two are warm.
    let scan_runs = if args.no_scans {
        0
    } else {
        (scan_cells - 2) * runs + 2 * bolt_scan::cell_runs(CacheState::Warm, runs)
    };
    let steps = 3
        + (scan_cells + work_cells) * warmup * 2
        + (work_cells * runs + scan_runs) * 2
        + 2
        + limit_steps;
    let progress = Progress::new(steps as u64);

    let build_ours = Cmd::cargo_release("mapwise-cli", Some("mapwise"));
    let build_oracle = Cmd::new(oracle.clone()).arg("build");
    progress.set("building mapwise (release)");
    build_ours.run(&ws.root).context("cannot build ours")?;
    let mapwise = path_arg(&ws.release_bin("mapwise"));
    progress.inc();
    progress.set("building the bbolt oracle");
    let dir = build_oracle
        .run(&ws.root)
        .context("cannot build the bbolt oracle")?;
    let go_bin = path_arg(&PathBuf::from(dir.stdout.trim()).join("boltoracle"));
    progress.inc();

    let tmp = ws.bench_dir().join("tmp");
    fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    // Described before the runs (the load average "at start"); the bench
    // files all live under target/bench, on one file system.
    let machine = Machine::describe(&tmp);
    let mut work = Vec::new();
    if !args.no_puts {
        for mode in ["seq", "rnd"] {
            work.push(work_cell(
                ws,
                &progress,
                &tmp,
                (&mapwise, &go_bin),
                mode,
                count,
                (warmup, runs),
            )?);
        }
    }

    let mut scans = Vec::new();
    let traces = std::cell::RefCell::new(Traces::new());
    let scratch = ws.bench_dir().join("scratch");
    let mut range = Vec::new();
    let mut range_keys = None;
    let mut file = None;
    let mut limits = Vec::new();
    if !args.no_scans {
        progress.set(format!(
            "bbolt file, {} seed {}",
            format_size(size),
            args.seed
        ));
        let f = bolt_scan::ensure_file(ws, &oracle, (size, batch), args.seed, &progress)?;
        let path = PathBuf::from(&f.path);
        let pf = format_size(args.prefetch);
        // Ours' extra options in a cell: none (like for like), the
        // prefetching cursor, or MADV_HUGEPAGE instead of bbolt's
        // MADV_RANDOM (cold faults read whole 2 MiB folios).
        let prefetch_opts = ["--prefetch".to_owned(), pf.clone()];
        let hugepage_opts = ["--advice".to_owned(), "hugepage".to_owned()];
        for (cache, populate, extra) in [
            (CacheState::Cold, false, &[][..]),
            (CacheState::Cold, true, &[][..]),
            (CacheState::Cold, false, &prefetch_opts[..]),
            (CacheState::Cold, false, &hugepage_opts[..]),
            (CacheState::Warm, false, &[][..]),
            (CacheState::Warm, true, &[][..]),
        ] {
            let spec = CellSpec { cache, populate };
            let label = if extra.is_empty() {
                spec.label()
            } else {
                format!("cold, ours {} vs Go plain mmap", extra.join(" "))
            };
            let ours = Cmd::new(mapwise.clone())
                .arg("bolt")
                .arg("traverse")
                .arg(f.path.clone())
                .arg_if(populate, "--populate")
                .args(extra.iter().cloned())
                .arg("--json");
            let go = oracle_cmd(&go_bin)
                .arg("traverse")
                .arg(f.path.clone())
                .arg_if(populate, "--populate");
            scans.push(bolt_scan::run_cell(
                ws,
                &progress,
                &path,
                spec,
                label,
                (ours, go),
                (warmup, runs),
                (&traces, &scratch),
            )?);
        }
        limits = limits::standard(&path, runs, &progress)?;
        progress.set("range scans with residency");
        let keys = oracle_cmd(&go_bin)
            .arg("keys")
            .arg(f.path.clone())
            .arg(BUCKET)
            .run(&ws.root)?;
        let all: Vec<&str> = keys.stdout.lines().collect();
        if all.len() >= 20 {
            let (k1, k2) = (all[all.len() * 45 / 100], all[all.len() / 2]);
            range_keys = Some((k1.to_owned(), k2.to_owned()));
            for prefetch in [false, true] {
                schedule::prepare(&path, CacheState::Cold)?;
                let cmd = Cmd::new(mapwise.clone())
                    .arg("bolt")
                    .arg("traverse")
                    .arg(f.path.clone())
                    .arg("--from")
                    .arg(k1)
                    .arg("--to")
                    .arg(k2)
                    .arg_if(prefetch, "--prefetch")
                    .arg_if(prefetch, pf.clone())
                    .arg("--residency")
                    .arg("--json");
                let out = cmd.run(&ws.root)?;
                range.push(RangeRun {
                    label: if prefetch {
                        format!("--prefetch {pf}")
                    } else {
                        "plain".to_owned()
                    },
                    cmd: cmd.shell(),
                    json: serde_json::from_str(out.stdout.trim())
                        .with_context(|| format!("`{}`: not JSON", cmd.shell()))?,
                });
                progress.inc();
            }
        }
        file = Some(f);
    }

    let targets = targets(&work, &scans);
    let versions = Versions::of(&oracle);
    let mut results = Results {
        bench: "bolt",
        sides: [("a", "ours"), ("b", "go")],
        started_utc: utc_human(started),
        finished_utc: utc_human(SystemTime::now()),
        runs,
        warmup,
        count,
        machine,
        loadavg_end: machine::loadavg(),
        versions,
        build_commands: vec![
            build_ours.shell(),
            format!("BOLT_ORACLE=$({})", build_oracle.shell()),
        ],
        work,
        file,
        scans,
        range,
        range_keys,
        prefetch: args.prefetch,
        targets,
        scan_size: (!args.no_scans).then(|| format_size(size)),
        limits,
        traces: Vec::new(),
        charts: Vec::new(),
    };
    drop(progress);
    let traced = traces.borrow();
    let picks: Vec<(String, &str, String)> = results
        .scans
        .iter()
        .filter(|c| c.spec.cache == CacheState::Cold)
        .flat_map(|c| {
            let sides: &[&str] = if c.label.starts_with("cold, ours") {
                &["ours"]
            } else {
                &["ours", "Go"]
            };
            sides
                .iter()
                .map(|&side| {
                    let what = c.label.trim_start_matches("cold, ");
                    let legend = if what.starts_with("ours") {
                        what.split(" vs ").next().unwrap_or(what).to_string()
                    } else {
                        format!("{side}, {what}")
                    };
                    (c.label.clone(), side, legend)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let chart = super::traces::residency_chart(
        &traced,
        "bench bolt, cold scans: the file in the page cache (plain, populate, prefetching cursor, hugepage advice)",
        &picks,
    )?;
    let mut extra: Vec<(&str, &[u8])> = traced.files();
    if let Some(svg) = &chart {
        extra.push(("residency-cold.svg", svg.as_bytes()));
        results.charts.push("residency-cold.svg".to_owned());
    }
    results.traces = traced.list().to_vec();
    let mut report = render(&results);
    if chart.is_some() || !traced.list().is_empty() {
        report.push_str(&format!(
            "\n## Residency traces\n\n{}Every timed scan run was traced (the file's residency {}): {} \
             traces in `traces/`; `inspector replay traces/<cell>-<tool>-<run>.trace --file FILE` plays one.\n",
            if chart.is_some() {
                "![the file in the page cache during the first timed cold scan of each kind](residency-cold.svg)\n\n"
            } else {
                ""
            },
            super::traces::cadence(),
            traced.list().len()
        ));
    }
    output::publish(
        &ws.report_dir(&args.common, started),
        &report,
        &results,
        &extra,
    )?;
    let agree = results.work.iter().all(|w| w.ops_agree)
        && results
            .scans
            .iter()
            .all(|c| c.summary.key_counts.len() == 1);
    if !agree {
        eprintln!("xtask: op or key counts differ between ours and Go (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The bbolt peer's Go binary, run from its build directory (a cache
/// directory of this machine), shown in the report as
/// `"$BOLT_ORACLE"/boltoracle`, the commands section setting `BOLT_ORACLE`
/// from `peers/bolt/peer build`.
fn oracle_cmd(go_bin: &str) -> Cmd {
    Cmd::new(go_bin).shown_as("\"$BOLT_ORACLE\"/boltoracle")
}

/// One workload mode, ours and Go alternately.
fn work_cell(
    ws: &Workspace,
    progress: &Progress,
    tmp: &Path,
    (mapwise, go_bin): (&str, &str),
    mode: &'static str,
    count: u64,
    (warmup, runs): (usize, usize),
) -> Result<WorkCell> {
    let cmd = |base: Cmd, file: &str| {
        base.arg(file)
            .arg("--write-mode")
            .arg(mode)
            .arg("--read-mode")
            .arg(mode)
            .arg("--count")
            .arg(count.to_string())
            .arg("--batch-size")
            .arg("1000")
            .arg("--key-size")
            .arg("16")
            .arg("--value-size")
            .arg("100")
            .arg("--json")
            .arg("--force")
    };
    let ours_file = path_arg(&tmp.join("bolt-bench-ours.db"));
    let go_file = path_arg(&tmp.join("bolt-bench-go.db"));
    let ours_cmd = cmd(Cmd::new(mapwise).arg("bolt").arg("bench"), &ours_file);
    let go_cmd = cmd(oracle_cmd(go_bin).arg("bench"), &go_file);
    let phase = std::cell::Cell::new("warm-up");
    let mut before = |side, run| {
        let who = if side == schedule::Side::A {
            "ours"
        } else {
            "Go"
        };
        progress.set(format!("puts/gets {mode}: {} {run}, {who}", phase.get()));
        // Neither side's file from the previous run stays around dirty.
        for f in [&ours_file, &go_file] {
            let _ = fs::remove_file(ws.root.join(f));
        }
        Ok(())
    };
    let measure = |c: &Cmd| -> Result<WorkSample> {
        let out = c.run(&ws.root)?;
        let line = out.stdout.lines().rev().find(|l| l.starts_with('{'));
        let parsed: BenchJson = serde_json::from_str(line.unwrap_or_default())
            .with_context(|| format!("`{}`: no JSON on stdout", c.shell()))?;
        progress.inc();
        Ok(WorkSample {
            out: parsed,
            wall_s: out.wall_s,
            max_rss_kib: out.max_rss_kib,
        })
    };
    let mut ours = |_, ()| measure(&ours_cmd);
    let mut go = |_, ()| measure(&go_cmd);
    let warm = schedule::alternate(warmup, &mut before, &mut ours, &mut go)?;
    phase.set("run");
    let pairs = schedule::alternate(runs, &mut before, &mut ours, &mut go)?;
    for f in [&ours_file, &go_file] {
        let _ = fs::remove_file(ws.root.join(f));
    }
    let rate = |ops: u64, s: f64| if s > 0.0 { ops as f64 / s } else { 0.0 };
    let col = |f: &dyn Fn(&WorkSample) -> f64, a: bool| {
        let v: Vec<f64> = pairs
            .iter()
            .map(|p| f(if a { &p.a } else { &p.b }))
            .collect();
        Summary::of(&v)
    };
    let ratio = |f: &dyn Fn(&WorkSample) -> f64| {
        let v: Vec<(f64, f64)> = pairs.iter().map(|p| (f(&p.a), f(&p.b))).collect();
        Summary::of(&pair_ratios(&v).0)
    };
    let write = |s: &WorkSample| rate(s.out.write_ops, s.out.write_s);
    let read = |s: &WorkSample| rate(s.out.read_ops, s.out.read_s);
    let rss = |s: &WorkSample| s.max_rss_kib.map_or(f64::NAN, |k| k as f64 * 1024.0);
    let ops_agree = pairs
        .iter()
        .chain(&warm)
        .all(|p| (p.a.out.write_ops, p.a.out.read_ops) == (p.b.out.write_ops, p.b.out.read_ops));
    Ok(WorkCell {
        mode,
        ours_cmd: ours_cmd.shell(),
        go_cmd: go_cmd.shell(),
        ours_write: col(&write, true),
        go_write: col(&write, false),
        ratio_write: ratio(&write),
        ours_read: col(&read, true),
        go_read: col(&read, false),
        ratio_read: ratio(&read),
        ours_rss: col(&rss, true),
        go_rss: col(&rss, false),
        ops_agree,
        warmup: warm,
        pairs,
    })
}

/// The issue's targets, from the cells that measured them. Work ratios
/// are ops/s ours/Go (higher is better); scan ratios are time ours/Go
/// (lower is better).
fn targets(work: &[WorkCell], scans: &[CellResult]) -> Vec<Target> {
    let mut t = Vec::new();
    let mut at_least = |what: String, min: f64, r: Option<&Summary>| {
        t.push(Target {
            what,
            target: format!("ops/s ours/Go ≥ {min:.1}×"),
            ratio: r.copied(),
            pass: r.map(|r| r.median >= min),
        });
    };
    for w in work {
        at_least(format!("{} puts", w.mode), 1.0, w.ratio_write.as_ref());
        if w.mode == "rnd" {
            at_least("random gets".to_owned(), 1.5, w.ratio_read.as_ref());
        }
    }
    for c in scans {
        let max = if c.spec.cache == CacheState::Warm && !c.spec.populate {
            0.7
        } else if c.label.contains("--prefetch") {
            0.5
        } else {
            continue;
        };
        let r = c.summary.ratio_took.as_ref();
        t.push(Target {
            what: format!("scan: {}", c.label),
            target: format!("time ours/Go ≤ {max:.1}×"),
            ratio: r.copied(),
            pass: r.map(|r| r.median <= max),
        });
    }
    t
}

fn ops(s: Option<&Summary>) -> String {
    s.map_or_else(
        || "—".to_owned(),
        |s| format!("{} [{}–{}]", kops(s.median), kops(s.min), kops(s.max)),
    )
}

fn kops(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else {
        format!("{:.0}k", x / 1e3)
    }
}

fn mib(s: Option<&Summary>) -> String {
    // A median of byte counts: non-negative and far below 2^53.
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    s.map_or_else(|| "—".to_owned(), |s| human_size(s.median as u64))
}

/// The markdown report.
#[expect(clippy::too_many_lines)]
fn render(r: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# bench bolt — {}\n", r.started_utc);
    let _ = writeln!(
        o,
        "Our bbolt engine (**ours**, `mapwise bolt bench` / `mapwise bolt traverse`) beside **Go bbolt {}** \
         (the oracle binary's `bench` / `traverse`), {} run{} per cell ({} in a warm scan cell: they vary up to 5× from \
         one reset to the next in both tools, see bolt-scan's method) after {} warm-up pair(s), alternating \
         ours and Go with the order turning every pair (ours, Go; Go, ours; …). Ratios are computed pair by pair: median [min–max]. Finished {}.\n",
        r.versions.bbolt_readme.clone().unwrap_or_default(),
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        bolt_scan::cell_runs(CacheState::Warm, r.runs),
        r.warmup,
        r.finished_utc
    );
    o.push_str(&bolt_scan::machine_section(
        &r.machine,
        &r.versions,
        r.loadavg_end.as_ref(),
    ));

    let _ = writeln!(o, "\n## Verdicts\n");
    let mut t = Table::new(&["target", "goal", ">ours/Go (per pair)", "verdict"]);
    for x in &r.targets {
        t.row([
            x.what.clone(),
            x.target.clone(),
            opt_ratio(x.ratio.as_ref()),
            match x.pass {
                Some(true) => "PASS".to_owned(),
                Some(false) => "FAIL".to_owned(),
                None => "no ratio".to_owned(),
            },
        ]);
    }
    o.push_str(&t.render());

    if !r.work.is_empty() {
        let _ = writeln!(
            o,
            "\n## Puts and gets ({} keys, batches of 1000, 16-byte keys, 100-byte values)\n",
            r.count
        );
        let mut t = Table::new(&[
            "mode",
            ">ours puts/s",
            ">Go puts/s",
            ">puts ours/Go",
            ">ours gets/s",
            ">Go gets/s",
            ">gets ours/Go",
            ">peak RSS ours / Go",
            "ops agree",
        ]);
        for w in &r.work {
            t.row([
                format!("{0} puts, {0} gets", w.mode),
                ops(w.ours_write.as_ref()),
                ops(w.go_write.as_ref()),
                opt_ratio(w.ratio_write.as_ref()),
                ops(w.ours_read.as_ref()),
                ops(w.go_read.as_ref()),
                opt_ratio(w.ratio_read.as_ref()),
                format!("{} / {}", mib(w.ours_rss.as_ref()), mib(w.go_rss.as_ref())),
                if w.ops_agree { "yes" } else { "**NO**" }.to_owned(),
            ]);
        }
        o.push_str(&t.render());
        let _ = writeln!(
            o,
            "\nputs/s = count / write time (all write transactions, one fdatasync'd commit each, as each tool \
             times itself); gets/s = reads / read time (seq: one cursor pass; rnd: Get of every key in the \
             seeded shuffled order), on the file just written (warm). Peak RSS: `ru_maxrss` from wait4, median.\n"
        );
    }

    if let Some(f) = &r.file {
        let _ = writeln!(
            o,
            "## Scans of `{}` ({}, {} keys)\n",
            f.path,
            human_size(f.bytes),
            f.expected_keys
                .map_or_else(|| "?".to_owned(), |k| k.to_string())
        );
        let mut t = Table::new(&[
            "cell",
            ">ours took",
            ">Go took",
            ">ours/Go (per pair)",
            ">peak RSS ours / Go",
            ">resident after ours / Go",
            ">keys",
        ]);
        for c in &r.scans {
            let s = &c.summary;
            let rss = |a: bool| {
                let v: Vec<f64> = c
                    .pairs
                    .iter()
                    .filter_map(|p| (if a { &p.a } else { &p.b }).max_rss_kib)
                    .map(|k| k as f64 * 1024.0)
                    .collect();
                mib(Summary::of(&v).as_ref())
            };
            t.row([
                c.label.clone(),
                opt_secs(s.ours_took.as_ref()),
                opt_secs(s.go_took.as_ref()),
                opt_ratio(s.ratio_took.as_ref()),
                format!("{} / {}", rss(true), rss(false)),
                s.resident_after_text(),
                s.keys_text(),
            ]);
        }
        o.push_str(&t.render());
        let _ = writeln!(
            o,
            "\ntook = open + scan as each tool times itself. cold: xtask fsyncs and evicts the file \
             (posix_fadvise DONTNEED) before every run, then, on a machine that reports free pages to a VM host, waits 5 s (see bolt-scan's method); warm: xtask evicts it, then reads it whole first, once per pair: both runs of a pair scan the same page cache, and each timed warm run follows an untimed run of the same command, so that neither tool is the first to run after a pause (see bolt-scan's method). Both tools map with \
             MADV_RANDOM, as bbolt does. The prefetch cell runs ours with `--prefetch` (madvise(MADV_WILLNEED) \
             of the next leaves, known from the branch pages above the current leaf) against Go's plain cold scan; \
             the hugepage cell runs ours with `--advice hugepage` (MADV_HUGEPAGE instead of MADV_RANDOM: where the \
             page cache has large folios, a cold fault reads the whole 2 MiB block around it and maps it with one \
             entry) against the same. Neither is like for like: they are what ours offers beyond bbolt.\n"
        );
        // The seed's figures set beside the plain and populate cells (not
        // the prefetching one, which the seed did not have).
        let plain: Vec<&CellResult> = r
            .scans
            .iter()
            .filter(|c| !c.label.starts_with("cold, ours"))
            .collect();
        bolt_scan::seed_section(&mut o, &plain, r.scan_size.as_deref().unwrap_or_default());
        limits::section(&mut o, &r.limits);
    }

    if !r.range.is_empty() {
        let (k1, k2) = r.range_keys.clone().unwrap_or_default();
        let _ = writeln!(
            o,
            "## Prefetch reads only its range\n\nCold range scan from key `{k1}` to `{k2}` (45 % to 50 % of \
             the key list), ours, evicted first; residency sampled with mincore right after the scan, in OS \
             pages. read_ahead_kb of the device = {} (bbolt's MADV_RANDOM turns fault read-around off; \
             MADV_WILLNEED reads exactly the ranges asked, up to read_ahead_kb per call).\n",
            r.machine
                .read_ahead_kb
                .map_or_else(|| "unknown".to_owned(), |k| k.to_string())
        );
        let mut t = Table::new(&[
            "scan",
            ">keys",
            ">took",
            ">file pages",
            ">pages read by the scan",
            ">resident among them",
            ">resident elsewhere",
        ]);
        for x in &r.range {
            let j = &x.json;
            let g = |k: &str| j.get(k).cloned().unwrap_or_default();
            let rs = |k: &str| {
                j.get("residency")
                    .and_then(|v| v.get(k))
                    .map_or_else(|| "—".to_owned(), ToString::to_string)
            };
            t.row([
                x.label.clone(),
                g("keys").to_string(),
                g("took_s")
                    .as_f64()
                    .map_or_else(|| "—".to_owned(), super::stats::fmt_secs),
                rs("file_pages"),
                rs("visited_pages"),
                rs("resident_visited"),
                rs("resident_outside"),
            ]);
        }
        o.push_str(&t.render());
        let _ = writeln!(
            o,
            "\n*pages read by the scan* = OS pages holding the keys and values it returned; *resident elsewhere* \
             = every other resident page of the file (meta, freelist and branch pages, and leaf headers on \
             other pages, included). Equal counts with and without prefetch mean the prefetch brought in \
             nothing outside the range.\n"
        );
    }

    let _ = writeln!(o, "## Commands\n\nRun from the workspace root.\n\n```sh");
    for c in &r.build_commands {
        let _ = writeln!(o, "{c}");
    }
    for w in &r.work {
        let _ = writeln!(o, "{}\n{}", w.ours_cmd, w.go_cmd);
    }
    if let Some(f) = &r.file {
        let _ = writeln!(o, "{}", f.gen_cmd);
    }
    for c in &r.scans {
        let _ = writeln!(o, "{}\n{}", c.ours_cmd, c.go_cmd);
    }
    for x in &r.range {
        let _ = writeln!(o, "{}", x.cmd);
    }
    let _ = writeln!(o, "```");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_print_in_k_and_m() {
        assert_eq!(kops(950_000.0), "950k");
        assert_eq!(kops(1_234_567.0), "1.23M");
    }

    #[test]
    fn targets_read_the_right_cells() {
        let s = |m| Some(Summary::of(&[m]).unwrap());
        let cell = |mode, w, rd| WorkCell {
            mode,
            ours_cmd: String::new(),
            go_cmd: String::new(),
            warmup: Vec::new(),
            pairs: Vec::new(),
            ours_write: None,
            go_write: None,
            ratio_write: s(w),
            ours_read: None,
            go_read: None,
            ratio_read: s(rd),
            ours_rss: None,
            go_rss: None,
            ops_agree: true,
        };
        let t = targets(&[cell("seq", 1.1, 0.5), cell("rnd", 0.9, 1.6)], &[]);
        let got: Vec<_> = t.iter().map(|x| (x.what.as_str(), x.pass)).collect();
        assert_eq!(
            got,
            [
                ("seq puts", Some(true)),
                ("rnd puts", Some(false)),
                ("random gets", Some(true))
            ]
        );
    }
}
