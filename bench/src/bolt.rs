//! `cargo xtask bench bolt`: our bbolt engine beside Go
//! bbolt 1.3.6 — batched puts and gets on the oracle's seeded `bench`
//! workload, full scans of a large file cold and warm, with and without
//! MAP_POPULATE, and our prefetching cursor against bbolt's plain cold
//! scan, with the peak RSS of every process and the residency a
//! prefetching range scan leaves behind.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::bolt_scan::{self, BUCKET, FileInfo, Versions, scan_cell, scan_label};
use super::cell::{self, Cell, CellRuns, Contender, Metrics, Tracing};
use super::charts::ChartFile;
use super::limits::{self, Limit};
use super::machine::{self, Machine};
use super::output;
use super::proc::Cmd;
use super::report::{Outcome, Report, Role, Table, Verdict};
use super::schedule::CacheState;
use super::stats::{Summary, fmt_secs, opt_ratio, opt_secs};
use super::traces::{TraceInfo, Traces};
use super::units::{format_size, human_size, pct, utc_human};
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
#[derive(Deserialize)]
struct BenchJson {
    write_ops: u64,
    write_s: f64,
    read_ops: u64,
    read_s: f64,
}

/// Reads either tool's `bench --json` line into `puts_per_s`,
/// `gets_per_s`, `write_ops` and `read_ops`.
fn parse_bench(stdout: &str) -> Result<Metrics, String> {
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).ok_or("no JSON on stdout")?;
    let j: BenchJson = serde_json::from_str(line).map_err(|e| format!("bad JSON: {e}"))?;
    #[expect(clippy::cast_precision_loss)]
    let rate = |ops: u64, s: f64| if s > 0.0 { ops as f64 / s } else { 0.0 };
    #[expect(clippy::cast_precision_loss)]
    let m = [
        ("puts_per_s", rate(j.write_ops, j.write_s)),
        ("gets_per_s", rate(j.read_ops, j.read_s)),
        ("write_ops", j.write_ops as f64),
        ("read_ops", j.read_ops as f64),
    ];
    Ok(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
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
    bench: &'static str,
    started_utc: String,
    finished_utc: String,
    runs: usize,
    warmup: usize,
    count: u64,
    machine: Machine,
    loadavg_end: Option<String>,
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
    traces: Vec<TraceInfo>,
    charts: Vec<ChartFile>,
}

/// Runs the bench.
///
/// # Errors
/// When a build, the file, a run or the report fails.
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
    let peer = ws.peer("bolt")?;
    let warm_runs = runs.max(bolt_scan::WARM_MIN_RUNS);
    let scan_steps = if args.no_scans {
        0
    } else {
        (5 * warmup + 4 * runs + 2 * warm_runs) * 2 + 2 + limits::steps(runs)
    };
    let work_steps = if args.no_puts { 0 } else { 2 * (warmup + runs) * 2 };
    let progress = Progress::new((2 + scan_steps + work_steps) as u64);

    let build_ours = Cmd::cargo_release("mapwise-cli", Some("mapwise"));
    let build_peer = Cmd::new(peer.clone()).arg("build");
    progress.set("building mapwise (release)");
    build_ours.run(&ws.root).context("cannot build ours")?;
    let mapwise = path_arg(&ws.release_bin("mapwise"));
    progress.inc();
    progress.set("building the bbolt peer");
    let dir = build_peer.run(&ws.root).context("cannot build the bbolt peer")?;
    // The peer's Go binary, run from its build directory (a cache
    // directory of this machine), shown as `"$BOLT_ORACLE"/boltoracle`.
    let go_bin = path_arg(&PathBuf::from(dir.stdout.trim()).join("boltoracle"));
    let go = || Cmd::new(go_bin.clone()).shown_as("\"$BOLT_ORACLE\"/boltoracle");
    progress.inc();

    let tmp = ws.bench_dir().join("tmp");
    fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    // Described before the runs (the load average "at start"); the bench
    // files all live under target/bench, on one file system.
    let machine = Machine::describe(&tmp);
    let traces = std::cell::RefCell::new(Traces::new());
    let scratch = ws.bench_dir().join("scratch");
    let tracing = Tracing { traces: &traces, scratch: &scratch };
    let mut work = Vec::new();
    for mode in if args.no_puts { &[][..] } else { &["seq", "rnd"][..] } {
        let files = [tmp.join("bolt-bench-ours.db"), tmp.join("bolt-bench-go.db")];
        let flags = |cmd: Cmd, file: &PathBuf| {
            cmd.arg(path_arg(file))
                .args(["--write-mode", mode, "--read-mode", mode, "--count", &count.to_string()])
                .args([
                    "--batch-size",
                    "1000",
                    "--key-size",
                    "16",
                    "--value-size",
                    "100",
                    "--json",
                    "--force",
                ])
        };
        let cell = Cell {
            label: format!("{mode} puts, {mode} gets"),
            cache: CacheState::Warm,
            files: Vec::new(),
            fresh: files.to_vec(),
            contenders: vec![
                Contender::new(
                    "ours",
                    flags(Cmd::new(mapwise.clone()).args(["bolt", "bench"]), &files[0]),
                    |o| parse_bench(&o.stdout),
                ),
                Contender::new("Go", flags(go().arg("bench"), &files[1]), |o| {
                    parse_bench(&o.stdout)
                }),
            ],
            warmup,
            runs,
            shared_warm_reset: false,
            untimed_warm_first: false,
            cold_settle: None,
        };
        work.push(cell::run(ws, &progress, &cell, &tracing)?);
    }

    let (mut scans, mut range, mut range_keys, mut file, mut limits) =
        (Vec::new(), Vec::new(), None, None, Vec::new());
    if !args.no_scans {
        progress.set(format!("bbolt file, {} seed {}", format_size(size), args.seed));
        let f = bolt_scan::ensure_file(
            ws,
            &peer,
            (size, tiny.then_some(bolt_scan::TINY_BATCH)),
            args.seed,
            &progress,
        )?;
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
            let label = if extra.is_empty() {
                scan_label(cache, populate)
            } else {
                format!("cold, ours {} vs Go plain mmap", extra.join(" "))
            };
            let ours = Cmd::new(mapwise.clone())
                .args(["bolt", "traverse", &f.path])
                .arg_if(populate, "--populate")
                .args(extra.iter().cloned())
                .arg("--json");
            let go = go().args(["traverse", &f.path]).arg_if(populate, "--populate");
            scans.push(cell::run(
                ws,
                &progress,
                &scan_cell(label, cache, &path, (ours, go), (warmup, runs)),
                &tracing,
            )?);
        }
        limits = limits::standard(&path, runs, &progress)?;
        progress.set("range scans with residency");
        let keys = go().args(["keys", &f.path, BUCKET]).run(&ws.root)?;
        let all: Vec<&str> = keys.stdout.lines().collect();
        if all.len() >= 20 {
            let (k1, k2) = (all[all.len() * 45 / 100], all[all.len() / 2]);
            range_keys = Some((k1.to_owned(), k2.to_owned()));
            for prefetch in [false, true] {
                super::schedule::prepare(&[&path], CacheState::Cold)?;
                let cmd = Cmd::new(mapwise.clone())
                    .args(["bolt", "traverse", &f.path, "--from", k1, "--to", k2])
                    .args(if prefetch {
                        vec!["--prefetch".to_owned(), pf.clone()]
                    } else {
                        Vec::new()
                    })
                    .args(["--residency", "--json"]);
                let out = cmd.run(&ws.root)?;
                range.push(RangeRun {
                    label: if prefetch { format!("--prefetch {pf}") } else { "plain".to_owned() },
                    cmd: cmd.shell(),
                    json: serde_json::from_str(out.stdout.trim())
                        .with_context(|| format!("`{}`: not JSON", cmd.shell()))?,
                });
                progress.inc();
            }
        }
        file = Some(f);
    }
    drop(progress);
    let traced = traces.borrow();
    let mut charts = Vec::new();
    let picks: Vec<(String, &str, String)> = scans
        .iter()
        .filter(|c| c.cache == CacheState::Cold)
        .flat_map(|c| {
            let what = c.label.trim_start_matches("cold, ");
            let sides: &[&str] = if what.starts_with("ours") { &["ours"] } else { &["ours", "Go"] };
            sides.iter().map(move |&side| {
                let legend = if what.starts_with("ours") {
                    what.split(" vs ").next().unwrap_or(what).to_string()
                } else {
                    format!("{side}, {what}")
                };
                (c.label.clone(), side, legend)
            })
        })
        .collect();
    if let Some(svg) = super::traces::residency_chart(
        &traced,
        "bench bolt, cold scans: the file in the page cache (plain, populate, prefetching cursor, hugepage advice)",
        &picks,
    )? {
        charts.push(ChartFile {
            file: "residency-cold.svg".to_owned(),
            what: "the file in the page cache during the first timed cold scan of each kind"
                .to_owned(),
            svg,
        });
    }
    let results = Results {
        bench: "bolt",
        started_utc: utc_human(started),
        finished_utc: utc_human(SystemTime::now()),
        runs,
        warmup,
        count,
        machine,
        loadavg_end: machine::loadavg(),
        versions: Versions::of(&peer),
        build_commands: vec![build_ours.shell(), format!("BOLT_ORACLE=$({})", build_peer.shell())],
        verdicts: verdicts(&work, &scans),
        work,
        file,
        scans,
        range,
        range_keys,
        prefetch: args.prefetch,
        scan_size: (!args.no_scans).then(|| format_size(size)),
        limits,
        traces: traced.list().to_vec(),
        charts,
    };
    output::publish_traced(
        &ws.report_dir(&args.common, started),
        &render(&results),
        &results,
        &traced,
        &results.charts,
    )?;
    let agree = results
        .work
        .iter()
        .all(|w| w.distinct("write_ops").len() == 1 && w.distinct("read_ops").len() == 1)
        && results.scans.iter().all(|c| c.distinct("keys").len() == 1);
    if !agree {
        eprintln!("xtask: op or key counts differ between ours and Go (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The targets, from the cells that measured them. Work ratios are ops/s
/// ours/Go (higher is better); scan ratios are time ours/Go (lower is
/// better).
fn verdicts(work: &[CellRuns], scans: &[CellRuns]) -> Vec<Verdict> {
    let judge = |what: String, target: String, r: Option<Summary>, pass: &dyn Fn(f64) -> bool| {
        Verdict::new(
            what,
            r.map_or(Outcome::None, |r| Outcome::of(pass(r.median))),
            opt_ratio(r.as_ref()),
        )
        .target(target)
    };
    let mut v = Vec::new();
    for (w, mode) in work.iter().zip(["seq", "rnd"]) {
        v.push(judge(
            format!("{mode} puts"),
            "ops/s ours/Go ≥ 1.0×".to_owned(),
            w.ratio(0, 1, "puts_per_s").0,
            &|m| m >= 1.0,
        ));
        if mode == "rnd" {
            v.push(judge(
                "random gets".to_owned(),
                "ops/s ours/Go ≥ 1.5×".to_owned(),
                w.ratio(0, 1, "gets_per_s").0,
                &|m| m >= 1.5,
            ));
        }
    }
    for c in scans {
        let max = if c.label == scan_label(CacheState::Warm, false) {
            0.7
        } else if c.label.contains("--prefetch") {
            0.5
        } else {
            continue;
        };
        v.push(judge(
            format!("scan: {}", c.label),
            format!("time ours/Go ≤ {max:.1}×"),
            c.ratio(0, 1, "took_s").0,
            &|m| m <= max,
        ));
    }
    v
}

fn kops(x: f64) -> String {
    if x >= 1e6 { format!("{:.2}M", x / 1e6) } else { format!("{:.0}k", x / 1e3) }
}

/// Median and range of ops/s, `—` when none.
fn ops(s: Option<Summary>) -> String {
    s.map_or_else(
        || "—".to_owned(),
        |s| format!("{} [{}–{}]", kops(s.median), kops(s.min), kops(s.max)),
    )
}

/// The median peak RSS of contender `i` in `c`.
fn rss(c: &CellRuns, i: usize) -> String {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    c.summary(i, "rss_kib").map_or_else(|| "—".to_owned(), |s| human_size(s.median as u64 * 1024))
}

#[expect(clippy::too_many_lines)]
fn render(r: &Results) -> Report {
    let mut o = Report::new(format!("bench bolt — {}", r.started_utc));
    o.text(format!(
        "Our bbolt engine (**ours**, `mapwise bolt bench` / `mapwise bolt traverse`) beside **Go bbolt {}** \
         (the peer binary's `bench` / `traverse`), {} run{} per cell ({} in a warm scan cell: they vary up to 5× from \
         one reset to the next in both tools, see bolt-scan's method) after {} warm-up pair(s), alternating \
         ours and Go with the order turning every pair (ours, Go; Go, ours; …). Ratios are computed pair by pair: \
         median [min–max]. Finished {}.",
        r.versions.bbolt_readme.clone().unwrap_or_default(),
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        r.runs.max(bolt_scan::WARM_MIN_RUNS),
        r.warmup,
        r.finished_utc
    ));
    r.versions.machine(&mut o, &r.machine, r.loadavg_end.as_deref());
    o.section("Verdicts").verdicts(r.verdicts.clone());

    if !r.work.is_empty() {
        o.section(format!(
            "Puts and gets ({} keys, batches of 1000, 16-byte keys, 100-byte values)",
            r.count
        ));
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
        ])
        .compares(&[1, 4], &[2, 5])
        .roles(Role::Ratio, &[3, 6]);
        for w in &r.work {
            let agree = w.distinct("write_ops").len() == 1 && w.distinct("read_ops").len() == 1;
            t.row([
                w.label.clone(),
                ops(w.summary(0, "puts_per_s")),
                ops(w.summary(1, "puts_per_s")),
                opt_ratio(w.ratio(0, 1, "puts_per_s").0.as_ref()),
                ops(w.summary(0, "gets_per_s")),
                ops(w.summary(1, "gets_per_s")),
                opt_ratio(w.ratio(0, 1, "gets_per_s").0.as_ref()),
                format!("{} / {}", rss(w, 0), rss(w, 1)),
                if agree { "yes" } else { "**NO**" }.to_owned(),
            ]);
        }
        o.table(t).text(
            "puts/s = count / write time (all write transactions, one fdatasync'd commit each, as each tool \
             times itself); gets/s = reads / read time (seq: one cursor pass; rnd: Get of every key in the \
             seeded shuffled order), on the file just written (warm). Peak RSS: `ru_maxrss` from wait4, median.",
        );
    }

    if let Some(f) = &r.file {
        o.section(format!(
            "Scans of `{}` ({}, {} keys)",
            f.path,
            human_size(f.bytes),
            f.expected_keys.map_or_else(|| "?".to_owned(), |k| k.to_string())
        ));
        let mut t = Table::new(&[
            "cell",
            ">ours took",
            ">Go took",
            ">ours/Go (per pair)",
            ">peak RSS ours / Go",
            ">resident after ours / Go",
            ">keys",
        ])
        .compares(&[1], &[2])
        .roles(Role::Ratio, &[3]);
        for c in &r.scans {
            let after = |i| {
                c.summary(i, "resident_after").map_or_else(|| "—".to_owned(), |x| pct(x.median))
            };
            t.row([
                c.label.clone(),
                opt_secs(c.summary(0, "took_s").as_ref()),
                opt_secs(c.summary(1, "took_s").as_ref()),
                opt_ratio(c.ratio(0, 1, "took_s").0.as_ref()),
                format!("{} / {}", rss(c, 0), rss(c, 1)),
                format!("{} / {}", after(0), after(1)),
                c.distinct("keys").iter().map(u64::to_string).collect::<Vec<_>>().join(" / "),
            ]);
        }
        o.table(t).text(
            "took = open + scan as each tool times itself. cold: the harness fsyncs and evicts the file \
             (posix_fadvise DONTNEED) before every run, then, on a machine that reports free pages to a VM host, \
             waits 5 s (see bolt-scan's method); warm: it evicts it, then reads it whole first, once per pair: both \
             runs of a pair scan the same page cache, and each timed warm run follows an untimed run of the same \
             command, so that neither tool is the first to run after a pause (see bolt-scan's method). Both tools \
             map with MADV_RANDOM, as bbolt does. The prefetch cell runs ours with `--prefetch` \
             (madvise(MADV_WILLNEED) of the next leaves, known from the branch pages above the current leaf) \
             against Go's plain cold scan; the hugepage cell runs ours with `--advice hugepage` (MADV_HUGEPAGE \
             instead of MADV_RANDOM: where the page cache has large folios, a cold fault reads the whole 2 MiB \
             block around it and maps it with one entry) against the same. Neither is like for like: they are \
             what ours offers beyond bbolt.",
        );
        // The seed's figures beside the plain and populate cells (not the
        // prefetching one, which the seed did not have).
        let cold =
            |populate| r.scans.iter().find(|c| c.label == scan_label(CacheState::Cold, populate));
        bolt_scan::seed_section(
            &mut o,
            cold(false),
            cold(true),
            r.scan_size.as_deref().unwrap_or_default(),
        );
        limits::add_to(&mut o, &r.limits);
    }

    if !r.range.is_empty() {
        let (k1, k2) = r.range_keys.clone().unwrap_or_default();
        o.section("Prefetch reads only its range").text(format!(
            "Cold range scan from key `{k1}` to `{k2}` (45 % to 50 % of the key list), ours, evicted first; \
             residency sampled with mincore right after the scan, in OS pages. read_ahead_kb of the device = {} \
             (bbolt's MADV_RANDOM turns fault read-around off; MADV_WILLNEED reads exactly the ranges asked, up \
             to read_ahead_kb per call).",
            r.machine.read_ahead_kb.map_or_else(|| "unknown".to_owned(), |k| k.to_string())
        ));
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
            let rs = |k: &str| {
                j.get("residency")
                    .and_then(|v| v.get(k))
                    .map_or_else(|| "—".to_owned(), ToString::to_string)
            };
            t.row([
                x.label.clone(),
                j.get("keys").cloned().unwrap_or_default().to_string(),
                j.get("took_s")
                    .and_then(serde_json::Value::as_f64)
                    .map_or_else(|| "—".to_owned(), fmt_secs),
                rs("file_pages"),
                rs("visited_pages"),
                rs("resident_visited"),
                rs("resident_outside"),
            ]);
        }
        o.table(t).text(
            "*pages read by the scan* = OS pages holding the keys and values it returned; *resident elsewhere* \
             = every other resident page of the file (meta, freelist and branch pages, and leaf headers on \
             other pages, included). Equal counts with and without prefetch mean the prefetch brought in \
             nothing outside the range.",
        );
    }

    let mut commands = r.build_commands.clone();
    commands.extend(r.work.iter().flat_map(|w| w.contenders.iter().map(|c| c.1.clone())));
    commands.extend(r.file.as_ref().map(|f| f.gen_cmd.clone()));
    commands.extend(r.scans.iter().flat_map(|c| c.contenders.iter().map(|c| c.1.clone())));
    commands.extend(r.range.iter().map(|x| x.cmd.clone()));
    o.section("Commands").text("Run from the workspace root.").code("sh", commands.join("\n"));
    if !r.charts.is_empty() || !r.traces.is_empty() {
        o.section("Residency traces");
        super::charts::add_images(&mut o, &r.charts);
        o.text(format!(
            "Every timed scan run was traced (the file's residency {}): {} traces in `traces/`; \
             `inspector replay traces/<cell>-<tool>-<run>.trace --file FILE` plays one.",
            super::traces::cadence(),
            r.traces.len()
        ));
    }
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
    fn bench_json_reads_as_rates() {
        let m = parse_bench("note\n{\"write_ops\":1000,\"write_s\":0.5,\"read_ops\":1000,\"read_s\":0.25,\"file_bytes\":1}\n").unwrap();
        assert_eq!((m["puts_per_s"], m["gets_per_s"], m["write_ops"]), (2000.0, 4000.0, 1000.0));
        assert!(parse_bench("no json").is_err());
    }
}
