//! `cargo xtask bench live`: the quiet readers on a bbolt file an
//! etcd-shaped writer commits to — how long each one-shot reader takes to
//! a settled result, how stale and how costly the live view is, beside
//! what an operator does today (`etcdctl snapshot save`, then an offline
//! check of the copy).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde::Serialize;

use super::bolt_scan::{self, FileInfo};
use super::etcd::{self, Etcd, Fill};
use super::machine::{self, Machine};
use super::output::{self, Table, TempPath};
use super::pagecache;
use super::proc::{Cmd, tail};
use super::schedule::{self, Pair};
use super::stats::{Summary, fmt_secs, nearest_rank, pair_ratios};
use super::tui::{self, WatchOptions, Watched};
use super::units::{format_size, human_size, pct, utc_human};
use super::{CommonArgs, Progress, Workspace, path_arg};
use crate::writer::Running;

/// Long help of `cargo xtask bench live`.
pub const HELP: &str = "\
The quiet readers on a bbolt file while a writer commits to it. Files:
Go bbolt's `peers/bolt/peer gen FILE --shape big --seed 1 --size 256MiB` and
`--size 2GiB` (cached in target/bench/files/), each copied to
target/bench/tmp/ and written by the etcd-shaped writer
  cargo xtask writer COPY --interval-ms N --bucket fake-bucket
(testkit/src/writer.rs: one fdatasync'd commit per interval, two appends at
the right edge of the big bucket, one rewrite of a random key, a `meta`
key) at N = 20, 50, 100 and 200 ms, one writer per interval.

Settle time: under each writer, --runs rounds of
  target/release/inspector check COPY
  target/release/inspector layout COPY --json
  target/release/inspector pages COPY
  target/release/mapwise bolt check COPY
each run after a cache reset: fully cached (xtask reads the file whole
first) or ~90 % cached (then drops random 2 MiB blocks with
posix_fadvise(DONTNEED) until at most 91 % is resident; blocks of 1/64 of
the file below 128 MiB), and, under the writers every 20 and 100 ms, half
cached (the same, to at most 51 %; measured, not judged). Wall time of the process, exit status (0 settled,
2 no read could be of one snapshot), peak RSS from GNU time (wait4).
p50 and p95 (nearest rank: of 5 runs, the largest) of the runs that exited
0; exit-2 runs counted.

The live view: `inspector open COPY` (default 500 ms refresh) in a
200 x 50 tmux pane, fully cached first, under each writer for
--view-seconds after its first settled structure: the time to the first screen and to
the first settled structure (`as of txid N` on the status line), the age
it shows (`X s ago`, read every 250 ms: p50/p95 = staleness), how many
commits the file was ahead of it, peak RSS (VmHWM) and CPU (utime+stime of
/proc/PID/stat over the window, % of a core; and from start, which adds
the first whole read).

The alternative: a real etcd (Debian's etcd 3.4, loopback, temporary data
dir, --quota-backend-bytes above the size, --max-request-bytes 8 MiB)
filled through the v3 JSON gateway with 1 MiB values, 4 puts at a time,
until its db is as long as our copy; then, alternating with ours (`inspector
check COPY`, writer every 100 ms, ~90 % cached) pair by pair:
  ETCDCTL_API=3 etcdctl --endpoints URL snapshot save SNAP
  target/release/inspector check SNAP
(etcd's db ~90 % cached first; time and bytes written). A snapshot streams
the whole db, so its cost grows with the db's size. etcd is stopped
whatever happens.

Verdicts, on the largest file (the targets are for 2 GiB): per reader,
p95 settle <= 2 s and no exit 2 under every writer (>= 20 ms), ~90 %
cached; and `inspector check`'s p95 <= 0.25x the alternative's median
time, measured side by side.

--quick: 256 MiB only (no 2 GiB verdict). --tiny (a smoke run of the
harness; its times mean nothing): a 4 MiB file, 3 s views, etcd filled to
the same size. A full run takes about 25 minutes here.

  cargo xtask bench live [--quick | --tiny] [--runs 5] [--view-seconds 20]
                         [--seed 1] [--out DIR]";

/// The writer's commit intervals, in ms.
const INTERVALS_MS: [u64; 4] = [20, 50, 100, 200];
/// The writer interval of the side-by-side cell (etcd's default
/// `--backend-batch-interval`).
const ALT_INTERVAL_MS: u64 = 100;
/// The bucket the `big` shape fills, which the writer writes too.
const BUCKET: &str = "fake-bucket";
/// At most this much of the file stays resident in a ~90 % cell.
const PARTIAL_TARGET: f64 = 0.91;
/// At most this much of the file stays resident in a half-cached cell.
const HALF_TARGET: f64 = 0.51;
/// The writer intervals with a half-cached cell too (etcd's default batch
/// interval and the shortest).
const HALF_INTERVALS_MS: [u64; 2] = [20, 100];
/// Eviction block of a ~90 % cell.
const BLOCK: u64 = 2 << 20;
/// Pane of the live view.
const VIEW_SIZE: (u16, u16) = (200, 50);
/// Targets.
const SETTLE_P95_MAX_S: f64 = 2.0;
/// ours p95 / the alternative's median at most this.
const ALT_RATIO_MAX: f64 = 0.25;
/// etcd's fill: value bytes and requests in flight.
const FILL_VALUE: usize = 1 << 20;
/// Requests in flight while filling etcd.
const FILL_CONCURRENCY: usize = 4;

/// `bench live` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// 256 MiB only.
    #[arg(long)]
    quick: bool,
    /// Seed of the generated files (oracle `gen --seed`).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Seconds the live view is watched under each writer, after its
    /// first settled structure [default: 20; --tiny 3].
    #[arg(long, value_name = "S")]
    view_seconds: Option<f64>,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// The cache state a run starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Cache {
    /// Read whole first.
    Full,
    /// Read whole, then random blocks dropped to ~90 %.
    Partial,
    /// Read whole, then random blocks dropped to ~50 %.
    Half,
}

impl Cache {
    fn label(self) -> &'static str {
        match self {
            Cache::Full => "fully cached",
            Cache::Partial => "~90 % cached",
            Cache::Half => "~50 % cached",
        }
    }

    /// The states measured under a writer every `ms`.
    fn under(ms: u64) -> &'static [Cache] {
        if HALF_INTERVALS_MS.contains(&ms) {
            &[Cache::Full, Cache::Partial, Cache::Half]
        } else {
            &[Cache::Full, Cache::Partial]
        }
    }
}

/// One run of one reader.
#[derive(Debug, Serialize)]
struct Run {
    run: usize,
    wall_s: f64,
    code: Option<i32>,
    status: String,
    max_rss_kib: Option<u64>,
    stdout_bytes: u64,
    /// Resident fraction right before the run.
    resident_before: f64,
    /// The end of stderr, when the run did not exit 0.
    stderr_tail: Option<String>,
}

/// What a set of runs came to.
#[derive(Debug, Serialize)]
struct Settle {
    /// Runs that exited 0.
    ok: usize,
    exit2: usize,
    /// Runs that exited otherwise (1, a signal).
    other: usize,
    p50_s: Option<f64>,
    p95_s: Option<f64>,
    max_s: Option<f64>,
    rss_kib: Option<Summary>,
    resident_before: Option<Summary>,
}

impl Settle {
    fn of(runs: &[&Run]) -> Settle {
        let ok: Vec<f64> = runs
            .iter()
            .filter(|r| r.code == Some(0))
            .map(|r| r.wall_s)
            .collect();
        let rss: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.max_rss_kib)
            .map(|k| k as f64)
            .collect();
        let res: Vec<f64> = runs.iter().map(|r| r.resident_before).collect();
        Settle {
            ok: ok.len(),
            exit2: runs.iter().filter(|r| r.code == Some(2)).count(),
            other: runs
                .iter()
                .filter(|r| !matches!(r.code, Some(0 | 2)))
                .count(),
            p50_s: Summary::of(&ok).map(|s| s.median),
            p95_s: nearest_rank(&ok, 0.95),
            max_s: Summary::of(&ok).map(|s| s.max),
            rss_kib: Summary::of(&rss),
            resident_before: Summary::of(&res),
        }
    }
}

/// One reader under one writer in one cache state.
#[derive(Debug, Serialize)]
struct Cell {
    size: String,
    interval_ms: u64,
    cache: Cache,
    reader: String,
    command: String,
    runs: Vec<Run>,
    settle: Settle,
}

/// The live view under one writer.
#[derive(Debug, Serialize)]
struct View {
    size: String,
    interval_ms: u64,
    resident_before: f64,
    watched: Watched,
    age_p50_s: Option<f64>,
    age_p95_s: Option<f64>,
    behind_p50: Option<f64>,
    behind_p95: Option<f64>,
    /// Samples without a settled age on screen.
    unaged: usize,
    /// Samples showing a warning about the structure.
    warned: usize,
    /// Commits the file took during the window (its txid at the last
    /// sample minus at the first).
    window_commits: Option<u64>,
    /// Where the writer was in the kernel right after the window, when
    /// the file took no commit during it.
    writer_state: Option<String>,
}

/// One writer's life.
#[derive(Debug, Serialize)]
struct WriterRun {
    size: String,
    /// What ran under it.
    during: &'static str,
    interval_ms: u64,
    command: String,
    commits: Option<u64>,
    seconds: f64,
    /// What else it printed on stderr.
    notes: String,
}

/// Ours' side of a side-by-side pair.
#[derive(Debug, Serialize)]
struct OursSide {
    wall_s: f64,
    code: Option<i32>,
    max_rss_kib: Option<u64>,
    resident_before: f64,
}

/// The alternative's side of a pair.
#[derive(Debug, Serialize)]
struct AltSide {
    snapshot_s: f64,
    snapshot_code: Option<i32>,
    snapshot_written_bytes: Option<u64>,
    snapshot_rss_kib: Option<u64>,
    snapshot_bytes: u64,
    check_s: f64,
    check_code: Option<i32>,
    total_s: f64,
    /// etcd's db resident before the snapshot.
    db_resident_before: f64,
}

/// The side-by-side cell of one size.
#[derive(Debug, Serialize)]
struct Alt {
    size: String,
    ours_bytes: u64,
    fill: Vec<Fill>,
    etcd_db_bytes: u64,
    ours_cmd: String,
    snapshot_cmd: String,
    check_cmd: String,
    writer_commits: Option<u64>,
    pairs: Vec<Pair<Side>>,
    ours_p50_s: Option<f64>,
    ours_p95_s: Option<f64>,
    ours_exit_nonzero: usize,
    alt_total: Option<Summary>,
    alt_snapshot: Option<Summary>,
    alt_check: Option<Summary>,
    alt_written: Option<Summary>,
    /// ours / alternative, pair by pair.
    ratio: Option<Summary>,
    alt_failures: usize,
}

/// Either side of a pair (results.json keeps both in one list).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Side {
    Ours(OursSide),
    Alt(AltSide),
}

#[derive(Debug, Serialize)]
struct Target {
    what: String,
    goal: String,
    measured: String,
    pass: bool,
}

#[derive(Debug, Serialize)]
struct Results {
    bench: &'static str,
    started_utc: String,
    finished_utc: String,
    runs: usize,
    view_seconds: f64,
    machine: Machine,
    loadavg_end: Option<String>,
    etcd_version: Option<String>,
    build_commands: Vec<String>,
    files: Vec<FileInfo>,
    writers: Vec<WriterRun>,
    cells: Vec<Cell>,
    views: Vec<View>,
    etcd_command: Option<String>,
    alts: Vec<Alt>,
    targets: Vec<Target>,
    /// No charts or traces: results.json lists none.
    charts: Vec<String>,
}

/// The readers timed, as (label, command) on `file`.
fn readers(ws: &Workspace, file: &str) -> Vec<(String, Cmd)> {
    let inspector = path_arg(&ws.release_bin("inspector"));
    let mapwise = path_arg(&ws.release_bin("mapwise"));
    let i = |args: &[&str]| {
        Cmd::new(inspector.clone())
            .args(args.iter().map(|a| if *a == "FILE" { file } else { a }))
            .metered()
            .counting_stdout()
    };
    vec![
        ("inspector check".to_owned(), i(&["check", "FILE"])),
        (
            "inspector layout --json".to_owned(),
            i(&["layout", "FILE", "--json"]),
        ),
        ("inspector pages".to_owned(), i(&["pages", "FILE"])),
        (
            "mapwise bolt check".to_owned(),
            Cmd::new(mapwise)
                .args(["bolt", "check", file])
                .metered()
                .counting_stdout(),
        ),
    ]
}

/// The eviction block for a file of `len` bytes: 2 MiB, or 1/64 of a file
/// below 128 MiB (in 4 KiB pages).
fn block_for(len: u64) -> u64 {
    if len >= 64 * BLOCK {
        BLOCK
    } else {
        (len / 64 / 4096).max(1) * 4096
    }
}

/// Puts `file` into `cache` (the `n`-th reset draws its own blocks) and
/// returns the resident fraction.
fn prepare(file: &Path, cache: Cache, n: u64) -> Result<f64> {
    let r = pagecache::resident_fraction(file)?;
    if r < 0.999 {
        pagecache::read_whole(file, false)?;
    }
    match cache {
        Cache::Full => pagecache::resident_fraction(file),
        Cache::Partial | Cache::Half => {
            let target = if cache == Cache::Half {
                HALF_TARGET
            } else {
                PARTIAL_TARGET
            };
            let len = fs::metadata(file)?.len();
            Ok(pagecache::evict_random_until(file, target, block_for(len), n)?.after)
        }
    }
}

/// One timed run of `cmd`, after `file` was put into `cache`.
fn timed(ws: &Workspace, cmd: &Cmd, file: &Path, cache: Cache, n: u64, run: usize) -> Result<Run> {
    let resident_before = prepare(file, cache, n)?;
    let out = cmd.output(&ws.root)?;
    Ok(Run {
        run,
        wall_s: out.wall_s,
        code: out.code,
        status: out.status,
        max_rss_kib: out.max_rss_kib,
        stdout_bytes: out.stdout_bytes,
        resident_before,
        stderr_tail: (out.code != Some(0)).then(|| tail(&out.stderr, 3)),
    })
}

/// Everything measured on one size.
struct SizeResult {
    cells: Vec<Cell>,
    views: Vec<View>,
    writers: Vec<WriterRun>,
}

/// The settle cells and live views of one file under every writer.
fn measure_size(
    ws: &Workspace,
    progress: &Progress,
    file: &Path,
    size: &str,
    runs: usize,
    view: &WatchOptions,
    resets: &mut u64,
) -> Result<SizeResult> {
    let shown = path_arg(file);
    let cmds = readers(ws, &shown);
    let mut out = SizeResult {
        cells: Vec::new(),
        views: Vec::new(),
        writers: Vec::new(),
    };
    for ms in INTERVALS_MS {
        progress.set(format!("{size}: starting the writer (every {ms} ms)"));
        let started = std::time::Instant::now();
        let writer = Running::start(file, Duration::from_millis(ms), BUCKET)?;
        let command = writer.shown().to_owned();
        for &cache in Cache::under(ms) {
            let mut cells: Vec<Cell> = cmds
                .iter()
                .map(|(label, c)| Cell {
                    size: size.to_owned(),
                    interval_ms: ms,
                    cache,
                    reader: label.clone(),
                    command: c.shell(),
                    runs: Vec::new(),
                    settle: Settle::of(&[]),
                })
                .collect();
            for run in 1..=runs {
                // The readers' order turns every round.
                for k in 0..cmds.len() {
                    let i = (k + run) % cmds.len();
                    progress.set(format!(
                        "{size}, writer every {ms} ms, {}: {} {run}/{runs}",
                        cache.label(),
                        cmds[i].0
                    ));
                    *resets += 1;
                    let r = timed(ws, &cmds[i].1, file, cache, *resets, run)?;
                    if r.code != Some(0) {
                        progress.note(&format!(
                            "xtask: {} on {size} (writer every {ms} ms, {}): {} in {}",
                            cmds[i].0,
                            cache.label(),
                            r.status,
                            fmt_secs(r.wall_s)
                        ));
                    }
                    cells[i].runs.push(r);
                    progress.inc();
                }
            }
            for c in &mut cells {
                c.settle = Settle::of(&c.runs.iter().collect::<Vec<_>>());
            }
            out.cells.extend(cells);
        }
        progress.set(format!("{size}: the live view, writer every {ms} ms"));
        let resident_before = prepare(file, Cache::Full, 0)?;
        let watched = tui::watch(&ws.release_bin("inspector"), file, view)?;
        let mut v = view_of(size, ms, resident_before, watched);
        if v.window_commits == Some(0) {
            v.writer_state = Some(writer.kernel_state());
        }
        out.views.push(v);
        progress.inc();
        let stopped = writer.stop()?;
        out.writers.push(WriterRun {
            size: size.to_owned(),
            during: "settle runs, then the live view",
            interval_ms: ms,
            command,
            commits: stopped.commits,
            seconds: started.elapsed().as_secs_f64(),
            notes: stopped.notes,
        });
    }
    Ok(out)
}

fn view_of(size: &str, ms: u64, resident_before: f64, watched: Watched) -> View {
    let ages: Vec<f64> = watched.samples.iter().filter_map(|s| s.age_s).collect();
    let behind: Vec<f64> = watched
        .samples
        .iter()
        .filter_map(|s| Some(s.file_txid?.saturating_sub(s.txid?) as f64))
        .collect();
    View {
        size: size.to_owned(),
        interval_ms: ms,
        resident_before,
        age_p50_s: nearest_rank(&ages, 0.5),
        age_p95_s: nearest_rank(&ages, 0.95),
        behind_p50: nearest_rank(&behind, 0.5),
        behind_p95: nearest_rank(&behind, 0.95),
        unaged: watched.samples.iter().filter(|s| s.age_s.is_none()).count(),
        warned: watched.samples.iter().filter(|s| s.warned).count(),
        window_commits: watched
            .samples
            .first()
            .and_then(|a| a.file_txid)
            .zip(watched.samples.last().and_then(|b| b.file_txid))
            .map(|(a, b)| b.saturating_sub(a)),
        writer_state: None,
        watched,
    }
}

/// The side-by-side cell of one size: ours' check under a writer against
/// `etcdctl snapshot save` + an offline check of the copy.
#[expect(clippy::too_many_arguments)] // one cell's whole context, each used
fn alt_cell(
    ws: &Workspace,
    progress: &Progress,
    etcd: &mut Etcd,
    file: &Path,
    size: &str,
    runs: usize,
    resets: &mut u64,
    writers: &mut Vec<WriterRun>,
) -> Result<Alt> {
    let ours_bytes = fs::metadata(file)?.len();
    progress.set(format!("etcd: filling to {}", human_size(ours_bytes)));
    let fill = etcd.fill_to(ours_bytes, FILL_VALUE, FILL_CONCURRENCY)?;
    progress.inc();
    let db = etcd.db_path();
    let snap = etcd.dir().join("snapshot.db");
    let snap_guard = TempPath::new(snap.clone());
    let snapshot_cmd = etcd.snapshot_cmd(&snap).metered();
    let check_cmd = Cmd::new(path_arg(&ws.release_bin("inspector")))
        .arg("check")
        .arg(path_arg(&snap))
        .metered()
        .counting_stdout();
    let ours_cmd = readers(ws, &path_arg(file)).swap_remove(0).1;
    let started = std::time::Instant::now();
    let writer = Running::start(file, Duration::from_millis(ALT_INTERVAL_MS), BUCKET)?;
    let writer_shown = writer.shown().to_owned();
    let mut before = |side, run| -> Result<f64> {
        progress.set(format!(
            "{size}: side by side {run}/{runs}, {}",
            if side == schedule::Side::A {
                "ours"
            } else {
                "etcdctl snapshot save + check"
            }
        ));
        *resets += 1;
        if side == schedule::Side::A {
            prepare(file, Cache::Partial, *resets)
        } else {
            let _ = fs::remove_file(&snap);
            prepare(&db, Cache::Partial, *resets)
        }
    };
    let mut ours = |_, resident_before| -> Result<Side> {
        let out = ours_cmd.output(&ws.root)?;
        progress.inc();
        Ok(Side::Ours(OursSide {
            wall_s: out.wall_s,
            code: out.code,
            max_rss_kib: out.max_rss_kib,
            resident_before,
        }))
    };
    let mut alt = |_, db_resident_before| -> Result<Side> {
        let s = snapshot_cmd.output(&ws.root)?;
        let snapshot_bytes = fs::metadata(&snap).map_or(0, |m| m.len());
        let c = check_cmd.output(&ws.root)?;
        let _ = fs::remove_file(&snap);
        progress.inc();
        Ok(Side::Alt(AltSide {
            snapshot_s: s.wall_s,
            snapshot_code: s.code,
            snapshot_written_bytes: s.written_bytes,
            snapshot_rss_kib: s.max_rss_kib,
            snapshot_bytes,
            check_s: c.wall_s,
            check_code: c.code,
            total_s: s.wall_s + c.wall_s,
            db_resident_before,
        }))
    };
    let pairs = schedule::alternate(runs, &mut before, &mut ours, &mut alt)?;
    let stopped = writer.stop()?;
    let commits = stopped.commits;
    writers.push(WriterRun {
        size: size.to_owned(),
        during: "side by side with the alternative",
        interval_ms: ALT_INTERVAL_MS,
        command: writer_shown,
        commits,
        seconds: started.elapsed().as_secs_f64(),
        notes: stopped.notes,
    });
    drop(snap_guard);
    let ours_side = |p: &Pair<Side>| match &p.a {
        Side::Ours(o) => Some((o.wall_s, o.code)),
        Side::Alt(_) => None,
    };
    fn alt_side(p: &Pair<Side>) -> Option<&AltSide> {
        match &p.b {
            Side::Alt(a) => Some(a),
            Side::Ours(_) => None,
        }
    }
    let ours_ok: Vec<f64> = pairs
        .iter()
        .filter_map(ours_side)
        .filter(|o| o.1 == Some(0))
        .map(|o| o.0)
        .collect();
    let alt_ok: Vec<&AltSide> = pairs
        .iter()
        .filter_map(alt_side)
        .filter(|a| a.snapshot_code == Some(0) && a.check_code == Some(0))
        .collect();
    let col =
        |f: &dyn Fn(&AltSide) -> f64| Summary::of(&alt_ok.iter().map(|a| f(a)).collect::<Vec<_>>());
    let both: Vec<(f64, f64)> = pairs
        .iter()
        .filter_map(|p| {
            let (o, code) = ours_side(p)?;
            let a = alt_side(p)?;
            (code == Some(0) && a.snapshot_code == Some(0) && a.check_code == Some(0))
                .then_some((o, a.total_s))
        })
        .collect();
    Ok(Alt {
        size: size.to_owned(),
        ours_bytes,
        etcd_db_bytes: fill.db_bytes,
        fill: vec![fill],
        ours_cmd: ours_cmd.shell(),
        snapshot_cmd: snapshot_cmd.shell(),
        check_cmd: check_cmd.shell(),
        writer_commits: commits,
        ours_p50_s: Summary::of(&ours_ok).map(|s| s.median),
        ours_p95_s: nearest_rank(&ours_ok, 0.95),
        ours_exit_nonzero: runs - ours_ok.len(),
        alt_total: col(&|a| a.total_s),
        alt_snapshot: col(&|a| a.snapshot_s),
        alt_check: col(&|a| a.check_s),
        alt_written: col(&|a| a.snapshot_written_bytes.unwrap_or(0) as f64),
        ratio: Summary::of(&pair_ratios(&both).0),
        alt_failures: runs - alt_ok.len(),
        pairs,
    })
}

/// Runs the bench.
#[expect(clippy::too_many_lines)]
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = usize::try_from(args.common.runs).context("--runs too large")?;
    let tiny = args.common.tiny;
    let sizes: Vec<u64> = if tiny {
        vec![bolt_scan::TINY_SIZE]
    } else if args.quick {
        vec![256 << 20]
    } else {
        vec![256 << 20, 2 << 30]
    };
    let batch = tiny.then_some(bolt_scan::TINY_BATCH);
    let view_seconds = args.view_seconds.unwrap_or(if tiny { 3.0 } else { 20.0 });
    let view = WatchOptions {
        size: VIEW_SIZE,
        interval_ms: None,
        window: Duration::from_secs_f64(view_seconds.max(0.5)),
        sample_every: Duration::from_millis(250),
        first_timeout: Duration::from_secs(300),
    };
    let oracle = ws.peer("bolt")?;
    let cells: usize = INTERVALS_MS.iter().map(|&ms| Cache::under(ms).len()).sum();
    let per_size = cells * runs * 4 + INTERVALS_MS.len() + 1 + 2 * runs;
    let progress = Progress::new((3 + sizes.len() * (2 + per_size)) as u64);

    let build_inspector = Cmd::cargo_release("mapwise-inspector", Some("inspector"));
    let build_mapwise = Cmd::cargo_release("mapwise-cli", Some("mapwise"));
    let build_oracle = Cmd::new(oracle.clone()).arg("build");
    for (what, c) in [
        ("inspector", &build_inspector),
        ("mapwise", &build_mapwise),
        ("the bbolt oracle", &build_oracle),
    ] {
        progress.set(format!("building {what}"));
        c.run(&ws.root)
            .with_context(|| format!("cannot build {what}"))?;
        progress.inc();
    }
    etcd::ensure_installed()?;

    let tmp = ws.bench_dir().join("tmp");
    fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let machine = Machine::describe(&tmp);
    let mut files = Vec::new();
    let mut copies = Vec::new();
    for &size in &sizes {
        progress.set(format!("bbolt file, {}", format_size(size)));
        let f = bolt_scan::ensure_file(ws, &oracle, (size, batch), args.seed, &progress)?;
        progress.inc();
        let copy = TempPath::new(tmp.join(format!("live-{}.db", format_size(size))));
        progress.set(format!("copying {} for the writer", f.path));
        fs::copy(&f.path, copy.path())
            .with_context(|| format!("cannot copy {} to {}", f.path, copy.path().display()))?;
        progress.inc();
        files.push(f);
        copies.push(copy);
    }

    let mut resets = 0u64;
    let mut cells = Vec::new();
    let mut views = Vec::new();
    let mut writers = Vec::new();
    for (&size, copy) in sizes.iter().zip(&copies) {
        let r = measure_size(
            ws,
            &progress,
            copy.path(),
            &format_size(size),
            runs,
            &view,
            &mut resets,
        )?;
        cells.extend(r.cells);
        views.extend(r.views);
        writers.extend(r.writers);
    }

    // The alternative: one etcd, filled size by size.
    let largest = copies
        .last()
        .map_or(Ok(0), |c| fs::metadata(c.path()).map(|m| m.len()))?;
    let quota = (largest * 2).max(largest + (1 << 30));
    progress.set("starting etcd");
    let mut etcd = Etcd::start(&tmp, quota)?;
    let etcd_command = etcd.command.clone();
    let mut alts = Vec::new();
    for (&size, copy) in sizes.iter().zip(&copies) {
        alts.push(alt_cell(
            ws,
            &progress,
            &mut etcd,
            copy.path(),
            &format_size(size),
            runs,
            &mut resets,
            &mut writers,
        )?);
    }
    drop(etcd);
    drop(copies);

    let targets = targets(&cells, &alts, sizes.last().copied().unwrap_or(0));
    let results = Results {
        bench: "live",
        started_utc: utc_human(started),
        finished_utc: utc_human(SystemTime::now()),
        runs,
        view_seconds,
        machine,
        loadavg_end: machine::loadavg(),
        etcd_version: etcd::version(),
        build_commands: vec![
            build_inspector.shell(),
            build_mapwise.shell(),
            build_oracle.shell(),
        ],
        files,
        writers,
        cells,
        views,
        etcd_command: Some(etcd_command),
        alts,
        targets,
        charts: Vec::new(),
    };
    drop(progress);
    output::publish(
        &ws.report_dir(&args.common, started),
        &render(&results),
        &results,
        &[],
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The verdicts, on the largest size measured (`largest` bytes).
fn targets(cells: &[Cell], alts: &[Alt], largest: u64) -> Vec<Target> {
    let size = format_size(largest);
    let mut t = Vec::new();
    let mut readers: Vec<&str> = Vec::new();
    for c in cells {
        if !readers.contains(&c.reader.as_str()) {
            readers.push(&c.reader);
        }
    }
    for r in readers {
        let mine: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.reader == r && c.size == size && c.cache == Cache::Partial)
            .collect();
        let exit2: usize = mine.iter().map(|c| c.settle.exit2).sum();
        let other: usize = mine.iter().map(|c| c.settle.other).sum();
        let worst = mine
            .iter()
            .filter_map(|c| Some((c.settle.p95_s?, c.interval_ms)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let all_settled = mine.iter().all(|c| c.settle.ok > 0);
        let pass = exit2 == 0
            && other == 0
            && all_settled
            && worst.is_some_and(|w| w.0 <= SETTLE_P95_MAX_S);
        t.push(Target {
            what: format!("{r}, {size}, ~90 % cached"),
            goal: format!(
                "p95 settle ≤ {SETTLE_P95_MAX_S} s and no exit 2 under a writer every 20–200 ms"
            ),
            measured: format!(
                "worst p95 {} (writer every {} ms); {exit2} exit 2{}",
                worst.map_or_else(|| "—".to_owned(), |w| fmt_secs(w.0)),
                worst.map_or(0, |w| w.1),
                if other > 0 {
                    format!(", {other} other failures")
                } else {
                    String::new()
                }
            ),
            pass,
        });
    }
    if let Some(a) = alts.iter().find(|a| a.size == size) {
        let limit = a.alt_total.map(|s| s.median * ALT_RATIO_MAX);
        let pass = a.ours_exit_nonzero == 0
            && a.alt_failures == 0
            && a.ours_p95_s.zip(limit).is_some_and(|(p, l)| p <= l);
        t.push(Target {
            what: format!("inspector check vs etcdctl snapshot save + check, {size}"),
            goal: format!("ours p95 ≤ {ALT_RATIO_MAX}× the alternative's median time"),
            measured: format!(
                "p95 {} vs {} ({} per pair; {} of ours exited non-zero)",
                a.ours_p95_s.map_or_else(|| "—".to_owned(), fmt_secs),
                a.alt_total
                    .map_or_else(|| "—".to_owned(), |s| fmt_secs(s.median)),
                a.ratio.map_or_else(|| "no ratio".to_owned(), |r| r.ratio()),
                a.ours_exit_nonzero
            ),
            pass,
        });
    }
    t
}

/// The writers that fell short of their interval, and what they said.
fn writer_notes(o: &mut String, writers: &[WriterRun]) {
    let short: Vec<String> = writers
        .iter()
        .filter_map(|w| {
            let want = 1000.0 / w.interval_ms as f64;
            let got = w.commits? as f64 / w.seconds;
            (got < 0.8 * want).then(|| {
                format!(
                    "{} every {} ms ({}): {got:.1} commits/s of {want:.0}",
                    w.size, w.interval_ms, w.during
                )
            })
        })
        .collect();
    if !short.is_empty() {
        let _ = writeln!(
            o,
            "\nThe writer fell short of its interval (below 80 % of its rate) at: {}. The cells under such a \
             writer saw fewer commits than their label says; see the live view's notes for where it was stuck.",
            short.join("; ")
        );
    }
    for w in writers.iter().filter(|w| !w.notes.is_empty()) {
        let _ = writeln!(
            o,
            "\nThe writer on {} every {} ms also said: `{}`",
            w.size,
            w.interval_ms,
            w.notes.replace('\n', " / ")
        );
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_owned(), fmt_secs)
}

fn bytes(b: Option<f64>) -> String {
    // Byte counts: non-negative and far below 2^53.
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    b.map_or_else(|| "—".to_owned(), |b| human_size(b as u64))
}

fn kib(k: Option<f64>) -> String {
    bytes(k.map(|k| k * 1024.0))
}

/// The markdown report.
#[expect(clippy::too_many_lines)]
fn render(r: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# bench live — {}\n", r.started_utc);
    let _ = writeln!(
        o,
        "The quiet readers (**ours**: `inspector check|layout|pages`, `mapwise bolt check`, and the live view \
         `inspector open`) on a bbolt file that an etcd-shaped writer commits to, beside what an operator does \
         today: **etcdctl** `snapshot save` from a real etcd of the same size, then an offline check of the copy. \
         {} run{} per cell; p95 by nearest rank (of 5 runs, the slowest). Finished {}.\n",
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        r.finished_utc
    );
    o.push_str(&r.machine.section(
        "the files",
        &[("etcd", r.etcd_version.clone())],
        r.loadavg_end.as_deref(),
    ));

    let _ = writeln!(o, "\n## Verdicts\n");
    let mut t = Table::new(&["target", "goal", "measured", "verdict"]);
    for x in &r.targets {
        t.row([
            x.what.clone(),
            x.goal.clone(),
            x.measured.clone(),
            if x.pass { "PASS" } else { "FAIL" }.to_owned(),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\nThe targets are for 2 GiB; a run without the 2 GiB file (`--quick`, `--tiny`) judges its largest file.\n"
    );

    let _ = writeln!(o, "## Files and writers\n");
    let mut t = Table::new(&["file", ">bytes", ">keys", "made by"]);
    for f in &r.files {
        t.row([
            f.path.clone(),
            human_size(f.bytes),
            f.expected_keys
                .map_or_else(|| "?".to_owned(), |k| k.to_string()),
            format!("`{}`", f.gen_cmd),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\nEach file is copied to `target/bench/tmp/live-SIZE.db`, which the writer then commits to, \
         one writer per interval (each commit: two appends at the right edge of `{BUCKET}`, one rewrite of a \
         random key of it, a key of `meta`, fdatasync):\n"
    );
    let mut t = Table::new(&[
        "file",
        "during",
        ">writer every",
        ">commits",
        ">seconds",
        ">commits/s",
    ]);
    for w in &r.writers {
        t.row([
            w.size.clone(),
            w.during.to_owned(),
            format!("{} ms", w.interval_ms),
            w.commits.map_or_else(|| "?".to_owned(), |c| c.to_string()),
            format!("{:.1}", w.seconds),
            w.commits.map_or_else(
                || "?".to_owned(),
                |c| format!("{:.1}", c as f64 / w.seconds),
            ),
        ]);
    }
    o.push_str(&t.render());
    writer_notes(&mut o, &r.writers);

    let mut sizes: Vec<&str> = Vec::new();
    for c in &r.cells {
        if !sizes.contains(&c.size.as_str()) {
            sizes.push(&c.size);
        }
    }
    for size in sizes {
        let _ = writeln!(o, "\n## Settle time, {size}\n");
        let mut t = Table::new(&[
            "reader",
            ">writer every",
            "cache",
            ">p50",
            ">p95",
            ">slowest",
            ">exit 0 / 2 / other",
            ">peak RSS median [max]",
            ">resident before",
        ]);
        for c in r.cells.iter().filter(|c| c.size == size) {
            let s = &c.settle;
            t.row([
                c.reader.clone(),
                format!("{} ms", c.interval_ms),
                c.cache.label().to_owned(),
                opt(s.p50_s),
                opt(s.p95_s),
                opt(s.max_s),
                format!("{} / {} / {}", s.ok, s.exit2, s.other),
                s.rss_kib.map_or_else(
                    || "—".to_owned(),
                    |k| format!("{} [{}]", kib(Some(k.median)), kib(Some(k.max))),
                ),
                s.resident_before
                    .map_or_else(|| "—".to_owned(), |x| pct(x.median)),
            ]);
        }
        o.push_str(&t.render());
    }
    let _ = writeln!(
        o,
        "\nWall time from spawn to exit, as xtask sees it (process start-up included); p50/p95 of the runs \
         that exited 0 (a settled result); exit 2 = no read could be of one snapshot (the writer outran the \
         reader). Peak RSS from GNU time. Before each run xtask reads the file whole (fully cached) and then, \
         for ~90 % (or ~50 %), drops random blocks until at most {:.0} % (or {:.0} %) is resident; the VM's \
         DAMON reclaimer (see Machine) may drop more on its own. The writer keeps committing throughout.\n",
        PARTIAL_TARGET * 100.0,
        HALF_TARGET * 100.0
    );

    let _ = writeln!(o, "## The live view\n");
    let mut t = Table::new(&[
        "file",
        ">writer every",
        ">first screen",
        ">first settled",
        ">age p50",
        ">age p95",
        ">commits behind p50 / p95",
        ">samples without a settled age",
        ">file's commits in the window",
        ">peak RSS",
        ">CPU, window",
        ">CPU, from start",
    ]);
    for v in &r.views {
        let w = &v.watched;
        t.row([
            v.size.clone(),
            format!("{} ms", v.interval_ms),
            fmt_secs(w.first_screen_s),
            opt(w.first_settled_s),
            opt(v.age_p50_s),
            opt(v.age_p95_s),
            format!(
                "{} / {}",
                v.behind_p50
                    .map_or_else(|| "—".to_owned(), |b| format!("{b:.0}")),
                v.behind_p95
                    .map_or_else(|| "—".to_owned(), |b| format!("{b:.0}"))
            ),
            format!("{} of {}", v.unaged, w.samples.len()),
            v.window_commits
                .map_or_else(|| "?".to_owned(), |c| c.to_string()),
            kib(w.vm_hwm_kib.map(|k| k as f64)),
            w.cpu_pct_window
                .map_or_else(|| "—".to_owned(), |c| format!("{c:.1} %")),
            w.cpu_pct_total
                .map_or_else(|| "—".to_owned(), |c| format!("{c:.1} %")),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\n`{}` in a {}×{} tmux pane at its default 500 ms refresh, the file read whole first, for {:.0} s after \
         the first settled structure. *first settled*: from start until the status line shows `as of txid N` (a structure \
         of one snapshot). *age*: the `X s ago` it shows, read every 250 ms (the view redraws every 500 ms, so \
         what a user sees can be up to 0.5 s older). *commits behind*: the file's txid (its newer meta page, \
         read by xtask at the same moment) minus the one shown. *CPU, window*: utime+stime of the process over \
         the window, in % of one core; *from start* includes the first read. Peak RSS: VmHWM at the end.\n",
        r.views.first().map_or_else(
            || "inspector open FILE".to_owned(),
            |v| v.watched.command.clone()
        ),
        VIEW_SIZE.0,
        VIEW_SIZE.1,
        r.view_seconds
    );
    for v in r.views.iter().filter(|v| v.window_commits == Some(0)) {
        let _ = writeln!(
            o,
            "- {} under a writer every {} ms: the file took no commit during the window (the writer was \
             stuck: `{}`), so the age shown is the time since its last commit, not staleness.",
            v.size,
            v.interval_ms,
            v.writer_state.as_deref().unwrap_or("state unknown")
        );
    }
    let warned: Vec<&View> = r
        .views
        .iter()
        .filter(|v| v.watched.first_warning.is_some())
        .collect();
    for v in warned {
        let _ = writeln!(
            o,
            "- {} under a writer every {} ms: {} of {} samples showed a warning; the first: `{}`",
            v.size,
            v.interval_ms,
            v.warned,
            v.watched.samples.len(),
            v.watched.first_warning.clone().unwrap_or_default()
        );
    }

    let _ = writeln!(
        o,
        "\n## Beside the alternative: etcdctl snapshot save, then an offline check\n"
    );
    let mut t = Table::new(&[
        "file",
        ">ours p50",
        ">ours p95",
        ">etcdctl snapshot save",
        ">inspector check SNAP",
        ">etcdctl + check total",
        ">bytes written by snapshot save",
        ">per-pair ratio ours/alternative",
        ">p95 ours / median alternative",
    ]);
    for a in &r.alts {
        t.row([
            format!("{} (etcd's db {})", a.size, human_size(a.etcd_db_bytes)),
            opt(a.ours_p50_s),
            opt(a.ours_p95_s),
            a.alt_snapshot.map_or_else(|| "—".to_owned(), |s| s.secs()),
            a.alt_check.map_or_else(|| "—".to_owned(), |s| s.secs()),
            a.alt_total.map_or_else(|| "—".to_owned(), |s| s.secs()),
            bytes(a.alt_written.map(|s| s.median)),
            a.ratio.map_or_else(|| "—".to_owned(), |s| s.ratio()),
            a.ours_p95_s
                .zip(a.alt_total)
                .map_or_else(|| "—".to_owned(), |(p, s)| format!("{:.3}×", p / s.median)),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\nMeasured side by side, alternating pair by pair (ours, alternative; alternative, ours; …). Ours: \
         `inspector check` on our copy while the writer commits every {ALT_INTERVAL_MS} ms (etcd's default \
         batch interval), ~90 % cached. The alternative: a real etcd, filled through its JSON gateway with \
         {} values, {} requests at a time, until its db was as long as our copy; before each run its db is \
         brought to ~90 % cached the same way; etcd takes no writes meanwhile. `snapshot save` streams the \
         whole db (a read transaction's `WriteTo`) and the client writes and fsyncs it, so its time and the \
         bytes it writes grow with the db's size, not with what changed; the offline check then reads the \
         copy. *bytes written*: GNU time's file-system outputs of etcdctl (× 512 B).\n",
        human_size(FILL_VALUE as u64),
        FILL_CONCURRENCY
    );
    for a in &r.alts {
        for f in &a.fill {
            let _ = writeln!(
                o,
                "- etcd filled for {}: {} puts of {} in {:.1} s; db {}",
                a.size,
                f.puts,
                human_size(f.value_bytes as u64),
                f.seconds,
                human_size(f.db_bytes)
            );
        }
    }

    let _ = writeln!(o, "\n## Commands\n\nRun from the workspace root.\n\n```sh");
    for c in &r.build_commands {
        let _ = writeln!(o, "{c}");
    }
    for f in &r.files {
        let _ = writeln!(o, "{}", f.gen_cmd);
    }
    if let Some(w) = r.writers.first() {
        let _ = writeln!(o, "{}   # and every other --interval-ms", w.command);
    }
    let mut seen: Vec<&str> = Vec::new();
    for c in &r.cells {
        if c.size == r.cells.last().map_or("", |l| l.size.as_str())
            && !seen.contains(&c.command.as_str())
        {
            seen.push(&c.command);
            let _ = writeln!(o, "{}", c.command);
        }
    }
    if let Some(v) = r.views.last() {
        let _ = writeln!(
            o,
            "tmux new-session -d -x {} -y {} '{}'",
            VIEW_SIZE.0, VIEW_SIZE.1, v.watched.command
        );
    }
    if let Some(e) = &r.etcd_command {
        let _ = writeln!(o, "{e}");
    }
    if let Some(a) = r.alts.last() {
        let _ = writeln!(o, "{}\n{}", a.snapshot_cmd, a.check_cmd);
    }
    let _ = writeln!(o, "```");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: i32, wall_s: f64) -> Run {
        Run {
            run: 1,
            wall_s,
            code: Some(code),
            status: String::new(),
            max_rss_kib: Some(1024),
            stdout_bytes: 0,
            resident_before: 0.9,
            stderr_tail: None,
        }
    }

    #[test]
    fn settle_counts_exits_and_takes_percentiles_of_the_settled() {
        let runs = [
            run(0, 1.0),
            run(2, 9.0),
            run(0, 3.0),
            run(0, 2.0),
            run(1, 0.1),
        ];
        let s = Settle::of(&runs.iter().collect::<Vec<_>>());
        assert_eq!((s.ok, s.exit2, s.other), (3, 1, 1));
        assert_eq!(s.p50_s, Some(2.0));
        assert_eq!(s.p95_s, Some(3.0));
    }

    #[test]
    fn eviction_blocks_shrink_for_small_files() {
        assert_eq!(block_for(2 << 30), BLOCK);
        assert_eq!(block_for(128 << 20), BLOCK);
        assert_eq!(block_for(8 << 20), 128 << 10);
        assert_eq!(block_for(4096), 4096);
    }

    #[test]
    fn verdicts_judge_the_largest_file_at_90_percent() {
        let cell = |size: &str, ms, cache, code, wall| {
            let runs = vec![run(code, wall)];
            Cell {
                size: size.to_owned(),
                interval_ms: ms,
                cache,
                reader: "inspector check".to_owned(),
                command: String::new(),
                settle: Settle::of(&runs.iter().collect::<Vec<_>>()),
                runs,
            }
        };
        let cells = [
            cell("2GiB", 20, Cache::Partial, 0, 1.5),
            cell("2GiB", 50, Cache::Partial, 0, 1.9),
            // Not judged: another size, another cache state.
            cell("256MiB", 20, Cache::Partial, 2, 9.0),
            cell("2GiB", 20, Cache::Full, 0, 9.0),
        ];
        let t = targets(&cells, &[], 2 << 30);
        assert_eq!(t.len(), 1);
        assert!(t[0].pass, "{:?}", t[0]);
        assert!(
            t[0].measured
                .starts_with("worst p95 1.90 s (writer every 50 ms)"),
            "{}",
            t[0].measured
        );
        let mut failing = cells;
        failing[1] = cell("2GiB", 50, Cache::Partial, 2, 0.5);
        let t = targets(&failing, &[], 2 << 30);
        assert!(!t[0].pass);
        assert!(t[0].measured.contains("1 exit 2"), "{}", t[0].measured);
    }
}
