//! `cargo xtask bench live`: the quiet readers on a bbolt file an
//! etcd-shaped writer commits to — how long each one-shot reader takes to
//! a settled result, how stale and how costly the live view is, beside
//! what an operator does today (`etcdctl snapshot save`, then an offline
//! check of the copy).

use std::fs;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde::Serialize;

use super::boltfile::{self, BUCKET, FileInfo};
use super::etcd::{self, Etcd, Fill};
use super::machine::{Machine, Stamp};
use super::output::{self, TempPath};
use super::pagecache;
use super::proc::{Cmd, tail};
use super::report::{Outcome, Report, Role, Table, Verdict, say};
use super::schedule::{self, Round};
use super::stats::{
    Summary, fixed, fmt_secs, nearest_rank, opt_count, opt_median, opt_ratio, opt_secs, opt_time,
    or_dash, pair_ratios,
};
use super::tui::{self, WatchOptions, Watched};
use super::units::{format_size, human_size, kib, pct, plural};
use super::writer::Running;
use super::{CommonArgs, Progress, Workspace, path_arg};

/// Long help of `cargo xtask bench live`.
pub const HELP: &str = include_str!("text/live-help.txt");
/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/live-notes.md");

// The texts in `text/` state the numbers below.
/// The writer's commit intervals, in ms.
const INTERVALS_MS: [u64; 4] = [20, 50, 100, 200];
/// The writer interval of the side-by-side cell (etcd's default `--backend-batch-interval`).
const ALT_INTERVAL_MS: u64 = 100;
/// Target: p95 settle time at most this, seconds.
const SETTLE_P95_MAX_S: f64 = 2.0;
/// Target: ours p95 / the alternative's median at most this.
const ALT_RATIO_MAX: f64 = 0.25;
/// etcd's fill: value bytes, and requests in flight.
const FILL: (usize, usize) = (1 << 20, 4);

/// live's own cache state (the shared `CacheState` has no partial ones):
/// the file read whole, then random blocks dropped until at most
/// `resident` of it is left.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
struct Cache {
    label: &'static str,
    resident: f64,
}

const FULL: Cache = Cache { label: "fully cached", resident: 1.0 };
const PARTIAL: Cache = Cache { label: "~90 % cached", resident: 0.91 };
const HALF: Cache = Cache { label: "~50 % cached", resident: 0.51 };

/// The cache states measured under a writer every `ms`: half cached too
/// under etcd's default batch interval and the shortest.
fn caches(ms: u64) -> &'static [Cache] {
    if [20, 100].contains(&ms) { &[FULL, PARTIAL, HALF] } else { &[FULL, PARTIAL] }
}

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

/// One run of one command.
#[derive(Debug, Default, Serialize)]
struct Run {
    wall_s: f64,
    code: Option<i32>,
    status: String,
    max_rss_kib: Option<u64>,
    written_bytes: Option<u64>,
    /// Resident fraction of its file right before the run.
    resident_before: f64,
    /// The end of stderr, when the run did not exit 0.
    stderr_tail: Option<String>,
}

/// What a set of runs came to: exits (`other`: 1, a signal), and times of the runs that exited 0.
#[derive(Debug, Serialize)]
struct Settle {
    ok: usize,
    exit2: usize,
    other: usize,
    wall: Option<Summary>,
    p95_s: Option<f64>,
    rss_kib: Option<Summary>,
    resident_before: Option<Summary>,
}

impl Settle {
    fn of<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Settle {
        let runs: Vec<&Run> = runs.into_iter().collect();
        let ok: Vec<f64> = runs.iter().filter(|r| r.code == Some(0)).map(|r| r.wall_s).collect();
        let rss: Vec<f64> = runs.iter().filter_map(|r| Some(r.max_rss_kib? as f64)).collect();
        let exit2 = runs.iter().filter(|r| r.code == Some(2)).count();
        let res: Vec<f64> = runs.iter().map(|r| r.resident_before).collect();
        Settle {
            ok: ok.len(),
            exit2,
            other: runs.len() - ok.len() - exit2,
            wall: Summary::of(&ok),
            p95_s: nearest_rank(&ok, 0.95),
            rss_kib: Summary::of(&rss),
            resident_before: Summary::of(&res),
        }
    }

    /// Whether every run exited 0.
    fn clean(&self) -> bool {
        self.exit2 + self.other == 0
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

/// The live view under one writer; `writer_state`: where the writer was
/// in the kernel right after the window, when the file took no commit.
#[derive(Debug, Serialize)]
struct View {
    size: String,
    interval_ms: u64,
    resident_before: f64,
    watched: Watched,
    writer_state: Option<String>,
}

/// One writer's life, `during` what, and the rest of its stderr (`notes`).
#[derive(Debug, Serialize)]
struct WriterRun {
    size: String,
    during: &'static str,
    interval_ms: u64,
    command: String,
    commits: Option<u64>,
    seconds: f64,
    notes: String,
}

/// The side-by-side cell of one size: ours' check under a writer (side A,
/// one run) against `etcdctl snapshot save` and an offline check of the
/// copy (side B, two runs).
#[derive(Debug, Serialize)]
struct Alt {
    size: String,
    fill: Fill,
    commands: [String; 3],
    /// Each round's runs: ours' one, then the alternative's two.
    pairs: Vec<Round<Vec<Run>>>,
}

impl Alt {
    /// Ours' runs, or the alternative's step `b` (0 snapshot, 1 check).
    fn settle(&self, b: Option<usize>) -> Settle {
        Settle::of(self.pairs.iter().map(|p| b.map_or(&p.results[0][0], |i| &p.results[1][i])))
    }

    /// The alternative's total times, and ours / them pair by pair, over
    /// the pairs whose commands all exited 0.
    fn totals(&self) -> (Option<Summary>, Option<Summary>) {
        let total = |runs: &[Run]| runs.iter().map(|r| r.wall_s).sum::<f64>();
        let ok = self.pairs.iter().filter(|p| Settle::of(p.results.iter().flatten()).clean());
        let pairs: Vec<(f64, f64)> =
            ok.map(|p| (total(&p.results[0]), total(&p.results[1]))).collect();
        let alt: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        (Summary::of(&alt), Summary::of(&pair_ratios(&pairs).0))
    }
}

/// What the bench measured, filled as it goes.
#[derive(Debug, Default, Serialize)]
struct Measured {
    files: Vec<FileInfo>,
    writers: Vec<WriterRun>,
    cells: Vec<Cell>,
    views: Vec<View>,
    alts: Vec<Alt>,
}

#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    runs: usize,
    view_seconds: f64,
    etcd_version: Option<String>,
    build_commands: Vec<String>,
    etcd_command: String,
    #[serde(flatten)]
    m: Measured,
    verdicts: Vec<Verdict>,
}

/// The readers timed, as (label, command) on `file`.
fn readers(ws: &Workspace, file: &Path) -> Vec<(String, Cmd)> {
    let file = path_arg(file);
    let inspector =
        ["inspector check FILE", "inspector layout FILE --json", "inspector pages FILE"];
    let reader = |spec: &str| {
        let mut words = spec.split(' ');
        let bin = path_arg(&ws.release_bin(words.next().unwrap_or_default()));
        let args = words.map(|w| if w == "FILE" { file.as_str() } else { w });
        (spec.replace(" FILE", ""), Cmd::new(bin).args(args).metered().counting_stdout())
    };
    inspector.into_iter().chain(["mapwise bolt check FILE"]).map(reader).collect()
}

/// The eviction block for a file of `len` bytes: 2 MiB, or 1/64 of a file
/// below 128 MiB (in 4 KiB pages).
fn block_for(len: u64) -> u64 {
    if len >= 128 << 20 { 2 << 20 } else { (len / 64 / 4096).max(1) * 4096 }
}

/// What every measurement shares, and the count of cache resets (each draws its own blocks).
struct Ctx<'a> {
    ws: &'a Workspace,
    progress: &'a Progress,
    runs: usize,
    view: WatchOptions,
    resets: std::cell::Cell<u64>,
}

impl Ctx<'_> {
    /// Puts `file` into `cache` and returns the resident fraction.
    fn prepare(&self, file: &Path, cache: Cache) -> Result<f64> {
        self.resets.set(self.resets.get() + 1);
        if pagecache::resident_fraction(file)? < 0.999 {
            pagecache::read_whole(file, false)?;
        }
        if cache.resident >= 1.0 {
            return pagecache::resident_fraction(file);
        }
        let (block, seed) = (block_for(fs::metadata(file)?.len()), self.resets.get());
        Ok(pagecache::evict_random_until(file, cache.resident, block, seed)?.after)
    }

    /// One run of `cmd`, its file `resident_before`.
    fn run(&self, cmd: &Cmd, resident_before: f64) -> Result<Run> {
        let out = cmd.output(&self.ws.root)?;
        Ok(Run {
            wall_s: out.wall_s,
            code: out.code,
            stderr_tail: (out.code != Some(0)).then(|| tail(&out.stderr, 3)),
            status: out.status,
            max_rss_kib: out.max_rss_kib,
            written_bytes: out.written_bytes,
            resident_before,
        })
    }

    /// Runs `f` under a writer committing to `file` (of `size`) every
    /// `ms`, then stops it and adds its row, which says it ran `during`.
    fn under_writer(
        &self,
        m: &mut Measured,
        (file, size, ms): (&Path, &str, u64),
        during: &'static str,
        f: impl FnOnce(&Running, &mut Measured) -> Result<()>,
    ) -> Result<()> {
        self.progress.set(format!("{size}: starting the writer (every {ms} ms)"));
        let started = Instant::now();
        let running = Running::start(file, Duration::from_millis(ms), BUCKET)?;
        f(&running, m)?;
        let command = running.shown.clone();
        let stopped = running.stop()?;
        m.writers.push(WriterRun {
            size: size.to_owned(),
            during,
            interval_ms: ms,
            command,
            commits: stopped.commits,
            seconds: started.elapsed().as_secs_f64(),
            notes: stopped.notes,
        });
        Ok(())
    }
}

/// Under a writer at each interval: the readers on `file` in each cache
/// state, in turn, `cx.runs` rounds; then the live view.
fn measure_size(cx: &Ctx, m: &mut Measured, file: &Path, size: &str) -> Result<()> {
    let readers = readers(cx.ws, file);
    for ms in INTERVALS_MS {
        cx.under_writer(m, (file, size, ms), "settle runs, then the live view", |writer, m| {
            for &cache in caches(ms) {
                let what = format!("{size}, writer every {ms} ms, {}", cache.label);
                let mut runs: Vec<Vec<Run>> = readers.iter().map(|_| Vec::new()).collect();
                let before = |i: usize, round| {
                    cx.progress.set(format!("{what}: {} {round}/{}", readers[i].0, cx.runs));
                    cx.prepare(file, cache)
                };
                schedule::rotate(readers.len(), cx.runs, before, |i, _, resident| {
                    let run = cx.run(&readers[i].1, resident)?;
                    if run.code != Some(0) {
                        let (who, st, t) = (&readers[i].0, &run.status, fmt_secs(run.wall_s));
                        cx.progress.note(&format!("xtask: {who} ({what}): {st} in {t}"));
                    }
                    runs[i].push(run);
                    cx.progress.inc();
                    Ok(())
                })?;
                for ((reader, cmd), runs) in readers.iter().zip(runs) {
                    let (size, reader, command) = (size.to_owned(), reader.clone(), cmd.shell());
                    let (interval_ms, settle) = (ms, Settle::of(&runs));
                    m.cells.push(Cell { size, interval_ms, cache, reader, command, runs, settle });
                }
            }
            cx.progress.set(format!("{size}: the live view, writer every {ms} ms"));
            let resident_before = cx.prepare(file, FULL)?;
            let watched = tui::watch(&cx.ws.release_bin("inspector"), file, &cx.view)?;
            let writer_state = (watched.window_commits() == Some(0)).then(|| writer.kernel_state());
            let (size, interval_ms) = (size.to_owned(), ms);
            m.views.push(View { size, interval_ms, resident_before, watched, writer_state });
            cx.progress.inc();
            Ok(())
        })?;
    }
    Ok(())
}

/// The side-by-side cell of `file`: ours' check under a writer against
/// `etcdctl snapshot save` from `etcd`, filled to the same size, and an
/// offline check of the copy.
fn alt_cell(cx: &Ctx, m: &mut Measured, etcd: &Etcd, file: &Path, size: &str) -> Result<()> {
    let bytes = fs::metadata(file)?.len();
    cx.progress.set(format!("etcd: filling to {}", human_size(bytes)));
    let fill = etcd::fill_to(etcd, bytes, FILL.0, FILL.1)?;
    cx.progress.inc();
    let db = etcd.db();
    let snap = TempPath::new(etcd.dir().join("snapshot.db"));
    let snapshot = etcd::snapshot_cmd(etcd, snap.path()).metered();
    let check = readers(cx.ws, snap.path()).swap_remove(0).1;
    let ours = readers(cx.ws, file).swap_remove(0).1;
    let before = |side: usize, run| {
        let (f, who) = [(file, "ours"), (db.as_path(), "etcdctl snapshot save + check")][side];
        cx.progress.set(format!("{size}: side by side {run}/{}, {who}", cx.runs));
        let _ = fs::remove_file(snap.path());
        cx.prepare(f, PARTIAL)
    };
    // Ours' one run, or the snapshot and the check of the copy.
    let run = |side, _, resident| {
        let runs = if side == 0 {
            vec![cx.run(&ours, resident)?]
        } else {
            let s = cx.run(&snapshot, resident)?;
            let c = cx.run(&check, pagecache::resident_fraction(snap.path()).unwrap_or(0.0))?;
            let _ = fs::remove_file(snap.path());
            vec![s, c]
        };
        cx.progress.inc();
        Ok(runs)
    };
    let at = (file, size, ALT_INTERVAL_MS);
    cx.under_writer(m, at, "side by side with the alternative", |_, m| {
        let pairs = schedule::rotate(2, cx.runs, before, run)?;
        let commands = [&ours, &snapshot, &check].map(Cmd::shell);
        m.alts.push(Alt { size: size.to_owned(), fill, commands, pairs });
        Ok(())
    })
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = args.common.runs()?;
    let tiny = args.common.tiny;
    let sizes: &[u64] = match (tiny, args.quick) {
        (true, _) => &[boltfile::TINY_SIZE],
        (false, true) => &[256 << 20],
        (false, false) => &[256 << 20, 2 << 30],
    };
    let view_seconds = args.view_seconds.unwrap_or(if tiny { 3.0 } else { 20.0 });
    let oracle = ws.peer("bolt")?;
    let cells: usize = INTERVALS_MS.iter().map(|&ms| caches(ms).len()).sum();
    let per_size = 1 + cells * runs * 4 + INTERVALS_MS.len() + 1 + 2 * runs;
    let progress = Progress::new((3 + sizes.len() * per_size) as u64);
    let builds = [
        Cmd::cargo_release("mapwise-inspector", Some("inspector")),
        Cmd::cargo_release("mapwise-cli", Some("mapwise")),
        Cmd::new(oracle.clone()).arg("build"),
    ];
    for c in &builds {
        progress.set(format!("`{}`", c.shell()));
        c.run(&ws.root)?;
        progress.inc();
    }
    etcd::ensure_installed()?;
    let tmp = ws.bench_dir().join("tmp");
    fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let machine = Machine::describe(&tmp);
    let mut m = Measured::default();
    let mut copies = Vec::new();
    for &bytes in sizes {
        let (batch, size) = (tiny.then_some(boltfile::TINY_BATCH), format_size(bytes));
        progress.set(format!("bbolt file, {size}"));
        let f = boltfile::ensure_file(ws, &oracle, (bytes, batch), args.seed, &progress)?;
        let copy = TempPath::new(tmp.join(format!("live-{size}.db")));
        fs::copy(&f.path, copy.path()).with_context(|| format!("cannot copy {}", f.path))?;
        progress.inc();
        m.files.push(f);
        copies.push((size, copy));
    }
    let view = WatchOptions {
        size: (200, 50),
        interval_ms: None,
        window: Duration::from_secs_f64(view_seconds.max(0.5)),
        sample_every: Duration::from_millis(250),
        first_timeout: Duration::from_secs(300),
    };
    let cx = Ctx { ws, progress: &progress, runs, view, resets: std::cell::Cell::new(0) };
    for (size, copy) in &copies {
        measure_size(&cx, &mut m, copy.path(), size)?;
    }
    // The alternative: one etcd, filled size by size.
    let largest = fs::metadata(copies.last().context("no sizes")?.1.path())?.len();
    progress.set("starting etcd");
    let etcd = etcd::start(&tmp, (largest * 2).max(largest + (1 << 30)))?;
    for (size, copy) in &copies {
        alt_cell(&cx, &mut m, &etcd, copy.path(), size)?;
    }
    let etcd_command = etcd::command(&etcd);
    drop((etcd, copies));
    let largest = m.cells.last().map(|c| c.size.clone()).unwrap_or_default();
    let r = Results {
        stamp: Stamp::new("live", started, machine),
        runs,
        view_seconds,
        etcd_version: etcd::version(),
        build_commands: builds.iter().map(Cmd::shell).collect(),
        etcd_command,
        verdicts: verdicts(&m.cells, &m.alts, &largest),
        m,
    };
    drop(progress);
    output::publish(&ws.report_dir(&args.common, started), &render(&r), &r, &[])
        .map(|()| ExitCode::SUCCESS)
}

/// The verdicts, on the largest size measured (`size`): one per reader, in
/// the order they run, and one on the side-by-side cell.
fn verdicts(cells: &[Cell], alts: &[Alt], size: &str) -> Vec<Verdict> {
    let judged: Vec<&Cell> =
        cells.iter().filter(|c| c.size == size && c.cache == PARTIAL).collect();
    let goal =
        format!("p95 settle ≤ {SETTLE_P95_MAX_S} s and no exit 2 under a writer every 20–200 ms");
    let mut v = Vec::new();
    for first in judged.iter().filter(|c| c.interval_ms == INTERVALS_MS[0]) {
        let mine: Vec<&&Cell> = judged.iter().filter(|c| c.reader == first.reader).collect();
        let all = Settle::of(mine.iter().flat_map(|c| &c.runs));
        let worst = mine.iter().filter_map(|c| Some((c.settle.p95_s?, c.interval_ms)));
        let (p95, ms) = worst.max_by(|a, b| a.0.total_cmp(&b.0)).unzip();
        let settled = mine.iter().all(|c| c.settle.ok > 0);
        let pass = all.clean() && settled && p95.is_some_and(|p| p <= SETTLE_P95_MAX_S);
        let (p95, ms, exit2) = (opt_time(p95), ms.unwrap_or(0), all.exit2);
        let mut detail = format!("worst p95 {p95} (writer every {ms} ms); {exit2} exit 2");
        if all.other > 0 {
            detail.push_str(&format!(", {} other failures", all.other));
        }
        let name = format!("{}, {size}, ~90 % cached", first.reader);
        v.push(Verdict::new(name, Outcome::of(pass), detail).target(&goal));
    }
    if let Some(a) = alts.iter().find(|a| a.size == size) {
        let (ours, (total, ratio)) = (a.settle(None), a.totals());
        let all_ok = a.pairs.iter().all(|p| Settle::of(p.results.iter().flatten()).clean());
        let within = ours.p95_s.zip(total).is_some_and(|(p, t)| p <= t.median * ALT_RATIO_MAX);
        let (p95, alt, failed) =
            (opt_time(ours.p95_s), opt_median(total.as_ref()), ours.exit2 + ours.other);
        let ratio = ratio.map_or_else(|| "no ratio".to_owned(), |r| r.ratio());
        let detail =
            format!("p95 {p95} vs {alt} ({ratio} per pair; {failed} of ours exited non-zero)");
        let name = format!("inspector check vs etcdctl snapshot save + check, {size}");
        let goal = format!("ours p95 ≤ {ALT_RATIO_MAX}× the alternative's median time");
        v.push(Verdict::new(name, Outcome::of(all_ok && within), detail).target(goal));
    }
    v
}

/// The report.
fn render(r: &Results) -> Report {
    let (m, s) = (&r.m, plural(r.runs));
    let mut o = r.stamp.report();
    let runs = format!("{} run{s}", r.runs);
    o.text(say(NOTES, "intro", &[("runs", &runs), ("finished", &r.stamp.finished_utc)]));
    r.stamp.add_to(&mut o, "the files", &[("etcd", r.etcd_version.clone())]);
    o.section("Verdicts").verdicts(r.verdicts.clone()).text(
        "The targets are for 2 GiB; a run without the 2 GiB file (`--quick`, `--tiny`) judges its \
         largest file.",
    );
    files_and_writers(&mut o, m);
    settle(&mut o, &m.cells);
    live_view(&mut o, &m.views, r.view_seconds);
    alternative(&mut o, &m.alts);
    let mut commands = r.build_commands.clone();
    commands.extend(m.files.iter().map(|f| f.gen_cmd.clone()));
    commands.extend(
        m.writers.first().map(|w| format!("{}   # and every other --interval-ms", w.command)),
    );
    let last = m.cells.last().map_or("", |l| l.size.as_str());
    let first = |c: &&Cell| c.size == last && c.interval_ms == INTERVALS_MS[0] && c.cache == FULL;
    commands.extend(m.cells.iter().filter(first).map(|c| c.command.clone()));
    let pane = |v: &View| format!("tmux new-session -d -x 200 -y 50 '{}'", v.watched.command);
    commands.extend(m.views.last().map(pane).into_iter().chain([r.etcd_command.clone()]));
    commands.extend(m.alts.last().into_iter().flat_map(|a| a.commands[1..].to_vec()));
    o.commands(&commands);
    o
}

/// The files, the writers, and what the writers said.
fn files_and_writers(o: &mut Report, m: &Measured) {
    let mut t = Table::of("file | >bytes | >keys | made by");
    for f in &m.files {
        let made = format!("`{}`", f.gen_cmd);
        t.row([f.path.clone(), human_size(f.bytes), opt_count(f.expected_keys), made]);
    }
    o.section("Files and writers").table(t).text(say(NOTES, "files", &[]));
    let mut t = Table::of("file | during | >writer every | >commits | >seconds | >commits/s");
    for w in &m.writers {
        let want = 1000.0 / w.interval_ms as f64;
        let short =
            |r| if r < 0.8 * want { format!(", short of {want:.0}") } else { String::new() };
        let rate = or_dash(w.commits, |c| {
            let r = c as f64 / w.seconds;
            format!("{r:.1}{}", short(r))
        });
        let (ms, secs) = (format!("{} ms", w.interval_ms), format!("{:.1}", w.seconds));
        t.row([w.size.clone(), w.during.to_owned(), ms, opt_count(w.commits), secs, rate]);
    }
    o.table(t);
    for w in m.writers.iter().filter(|w| !w.notes.is_empty()) {
        let (size, ms, notes) = (&w.size, w.interval_ms, w.notes.replace('\n', " / "));
        o.text(format!("The writer on {size} every {ms} ms also said: `{notes}`"));
    }
}

/// One settle table per size.
fn settle(o: &mut Report, cells: &[Cell]) {
    let mut sizes: Vec<&str> = cells.iter().map(|c| c.size.as_str()).collect();
    sizes.dedup();
    for size in sizes {
        let mut t = Table::of(
            "reader | >writer every | cache | >p50 | >p95 | >slowest | >exit 0 / 2 / other \
             | >peak RSS median [max] | >resident before",
        );
        for c in cells.iter().filter(|c| c.size == size) {
            let s = &c.settle;
            let rss = |k: Summary| format!("{} [{}]", kib(k.median), kib(k.max));
            t.row([
                c.reader.clone(),
                format!("{} ms", c.interval_ms),
                c.cache.label.to_owned(),
                opt_median(s.wall.as_ref()),
                opt_time(s.p95_s),
                opt_time(s.wall.map(|w| w.max)),
                format!("{} / {} / {}", s.ok, s.exit2, s.other),
                or_dash(s.rss_kib, rss),
                or_dash(s.resident_before, |x| pct(x.median)),
            ]);
        }
        o.section(format!("Settle time, {size}")).table(t);
    }
    o.text(say(NOTES, "settle", &[]));
}

/// The live view's table, and a note on each view whose writer stalled or that warned.
fn live_view(o: &mut Report, views: &[View], seconds: f64) {
    let mut t = Table::of(
        "file | >writer every | >first screen | >first settled | >age p50 | >age p95 \
         | >commits behind p50 / p95 | >samples without a settled age \
         | >file's commits in the window | >peak RSS | >CPU, window | >CPU, from start",
    );
    let cpu = |c| fixed(c, 1, " %");
    let mut notes = Vec::new();
    for v in views {
        let (w, ms) = (&v.watched, v.interval_ms);
        let (ages, behind, n) = (w.ages(), w.behind(), w.samples.len());
        let [b50, b95] = [0.5, 0.95].map(|q| fixed(nearest_rank(&behind, q), 0, ""));
        t.row([
            v.size.clone(),
            format!("{ms} ms"),
            fmt_secs(w.first_screen_s),
            opt_time(w.first_settled_s),
            opt_time(nearest_rank(&ages, 0.5)),
            opt_time(nearest_rank(&ages, 0.95)),
            format!("{b50} / {b95}"),
            format!("{} of {n}", n - ages.len()),
            opt_count(w.window_commits()),
            or_dash(w.vm_hwm_kib.map(|k| k as f64), kib),
            cpu(w.cpu_pct_window),
            cpu(w.cpu_pct_total),
        ]);
        let at = format!("{} under a writer every {ms} ms", v.size);
        if let Some(state) = &v.writer_state {
            notes.push(format!("{at}: no commit in the window (writer stuck: `{state}`)"));
        }
        if let Some(first) = &w.first_warning {
            let warned = w.samples.iter().filter(|s| s.warned).count();
            notes.push(format!("{at}: {warned} of {n} samples warned; the first: `{first}`"));
        }
    }
    let command = views.first().map_or("inspector open FILE", |v| &v.watched.command);
    let vars = [("command", command), ("seconds", &format!("{seconds:.0}"))];
    o.section("The live view").table(t).text(say(NOTES, "view", &vars));
    if !notes.is_empty() {
        o.list(notes);
    }
}

/// The side-by-side table, its method and etcd's fills.
fn alternative(o: &mut Report, alts: &[Alt]) {
    let mut t = Table::of(
        "file | >ours p50 | >ours p95 | >etcdctl snapshot save | >inspector check SNAP \
         | >etcdctl + check total | >bytes written by snapshot save \
         | >per-pair ratio ours/alternative | >p95 ours / median alternative",
    )
    .compares(&[1, 2], &[3, 4, 5])
    .roles(Role::Ratio, &[7, 8]);
    for a in alts {
        let (ours, (total, ratio)) = (a.settle(None), a.totals());
        let [snapshot, check] = [0, 1].map(|i| opt_secs(a.settle(Some(i)).wall.as_ref()));
        let snapshots = a.pairs.iter().map(|p| &p.results[1][0]).filter(|r| r.code == Some(0));
        let written: Vec<f64> = snapshots.filter_map(|r| Some(r.written_bytes? as f64)).collect();
        let share = ours.p95_s.zip(total).map(|(p, s)| p / s.median);
        let f = &a.fill;
        let (db, value) = (human_size(f.db_bytes), human_size(f.value_bytes as u64));
        let fill = format!("etcd's db {db}, {} puts of {value} in {:.1} s", f.puts, f.seconds);
        t.row([
            format!("{} ({fill})", a.size),
            opt_median(ours.wall.as_ref()),
            opt_time(ours.p95_s),
            snapshot,
            check,
            opt_secs(total.as_ref()),
            or_dash(Summary::of(&written), |s| kib(s.median / 1024.0)),
            opt_ratio(ratio.as_ref()),
            fixed(share, 3, "×"),
        ]);
    }
    o.section("Beside the alternative: etcdctl snapshot save, then an offline check");
    o.table(t).text(say(NOTES, "alt", &[]));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(size: &str, interval_ms: u64, cache: Cache, runs: &[(i32, f64)]) -> Cell {
        let run = |&(code, wall_s): &(i32, f64)| Run { wall_s, code: Some(code), ..Run::default() };
        let runs: Vec<Run> = runs.iter().map(run).collect();
        let (size, reader, command) =
            (size.to_owned(), "inspector check".to_owned(), String::new());
        Cell { size, interval_ms, cache, reader, command, settle: Settle::of(&runs), runs }
    }

    #[test]
    fn settle_counts_exits_and_takes_percentiles_of_the_settled() {
        let s = cell("2GiB", 20, FULL, &[(0, 1.0), (2, 9.0), (0, 3.0), (0, 2.0), (1, 0.1)]).settle;
        assert_eq!((s.ok, s.exit2, s.other), (3, 1, 1));
        assert_eq!((s.wall.map(|w| w.median), s.p95_s), (Some(2.0), Some(3.0)));
        assert_eq!(
            (block_for(2 << 30), block_for(8 << 20), block_for(4096)),
            (2 << 20, 128 << 10, 4096)
        );
    }

    #[test]
    fn verdicts_judge_the_largest_file_at_90_percent() {
        let mut cells = vec![
            cell("2GiB", 20, PARTIAL, &[(0, 1.5)]),
            cell("2GiB", 50, PARTIAL, &[(0, 1.9)]),
            // Not judged: another size, another cache state.
            cell("256MiB", 20, PARTIAL, &[(2, 9.0)]),
            cell("2GiB", 20, FULL, &[(0, 9.0)]),
        ];
        let v = verdicts(&cells, &[], "2GiB");
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].outcome, v[0].detail.as_str()),
            (Outcome::Pass, "worst p95 1.90 s (writer every 50 ms); 0 exit 2")
        );
        cells[1] = cell("2GiB", 50, PARTIAL, &[(2, 0.5)]);
        let v = verdicts(&cells, &[], "2GiB");
        assert_eq!(v[0].outcome, Outcome::Fail);
        assert_eq!(v[0].detail, "worst p95 1.50 s (writer every 20 ms); 1 exit 2");
    }
}
