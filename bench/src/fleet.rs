//! `cargo xtask bench fleet`: the inspector over a fleet's tree of RRD files (collectd's
//! shapes, written by Debian's collectd and copied under one directory per host) and a
//! Go-made bbolt file: `residency -R` beside `vmtouch` and util-linux `fincore`, `warm --hot`
//! beside `vmtouch -t`, and the CPU and scrape times of `inspector export`.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use mapwise_testkit::install::{self, Need};
use serde::Serialize;
use serde_json::Value;

use super::boltfile::{self, FileInfo, TINY_BATCH, TINY_SIZE};
use super::cell::{self, Cell, CellRuns, Contender, Metrics, Tracing, metrics};
use super::charts::{self, ChartFile};
use super::machine::{self, Machine, Stamp};
use super::output::{self, TempPath};
use super::proc::{Cmd, Output, tail};
use super::report::Role::{Other, Ours, Peer, Ratio};
use super::report::{Bound, Outcome, Report, Verdict, cell_table, fill, judge, say, vars};
use super::schedule::CacheState::{Cold, HotSet, Warm};
use super::stats::{Summary, median, opt_ratio, opt_secs, or_dash};
use super::traces::TraceInfo;
use super::units::kib;
use super::{CommonArgs, Progress, Workspace, interrupt, path_arg, tui, writer};

/// Long help of `cargo xtask bench fleet`.
pub const HELP: &str = include_str!("text/fleet-help.txt");
/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/fleet-notes.md");
/// collectd's configuration; `{dir}` is the scratch directory it writes in.
const COLLECTD_CONF: &str = include_str!("text/fleet-collectd.conf");
/// Debian's collectd (package collectd-core).
const COLLECTD: &str = "/usr/sbin/collectd";
/// How long collectd runs: at `Interval 1` every plugin has written its files.
const COLLECTD_RUN: Duration = Duration::from_secs(6);
/// The exporter's target: at most this % of one core (10k files, 15 s interval).
const CPU_TARGET: f64 = 5.0;

/// `bench fleet` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// 100 000 RRD files instead of 10 000.
    #[arg(long, conflicts_with = "tiny")]
    full: bool,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// A child of ours, stopped (SIGTERM, then SIGKILL) and reaped when dropped, on every way out.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        writer::reap(&mut self.0, Duration::from_secs(10));
    }
}

/// A byte count carried as a metric, for people.
fn bytes(b: f64) -> String {
    kib(b / 1024.0)
}

/// The regular files under `dir`, depth first, names sorted.
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    let mut names: Vec<PathBuf> = rd.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    names.sort();
    let mut out = Vec::new();
    for p in names {
        let mut below = if p.is_dir() { walk(&p)? } else { vec![p] };
        out.append(&mut below);
    }
    Ok(out)
}

/// Runs collectd ([`COLLECTD_CONF`] in `dir`) for [`COLLECTD_RUN`], then stops it: the
/// directory of the RRD files it wrote (`dir/rrd/host0`) and their paths under it.
fn collectd(dir: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (conf, host, log) = (dir.join("collectd.conf"), dir.join("rrd/host0"), dir.join("log"));
    let abs = path_arg(&std::path::absolute(dir)?);
    fs::write(&conf, fill(COLLECTD_CONF, &[("dir", &abs)]) + "\n")?;
    let cmd = Cmd::new(COLLECTD).args(["-f", "-C", &path_arg(&conf)]);
    let ready = || host.is_dir();
    let mut child = Reaped(writer::spawn_until(&cmd, &log, Duration::from_secs(30), ready)?);
    let until = Instant::now() + COLLECTD_RUN;
    while Instant::now() < until {
        interrupt::check()?;
        if let Some(st) = child.0.try_wait()? {
            let log = tail(&fs::read_to_string(&log).unwrap_or_default(), 10);
            anyhow::bail!("`{}` exited ({st}) early:\n{log}", cmd.shell());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(child); // SIGTERM: collectd writes what its rrdtool plugin holds, then exits
    let under = |p: PathBuf| Some(p.strip_prefix(&host).ok()?.to_owned());
    let seed: Vec<PathBuf> = walk(&host)?.into_iter().filter_map(under).collect();
    anyhow::ensure!(!seed.is_empty(), "collectd wrote no RRD file into {}", host.display());
    Ok((host, seed))
}

/// A tree's files.
type Files = Vec<PathBuf>;

/// The tree, as results.json keeps it.
#[derive(Debug, Serialize)]
struct Tree {
    dir: String,
    rrd_files: usize,
    /// Size → count of the files collectd wrote (those of `host0000/`).
    seed_sizes: BTreeMap<u64, usize>,
    /// Bytes of every file of the tree.
    bytes: u64,
    made_now: bool,
    bolt: FileInfo,
    /// The bbolt file's name in the tree (a hard link to the cached file).
    bolt_in_tree: String,
}

/// The tree of `n` RRD files and the bbolt file `bolt`, made once into
/// `target/bench/files/fleet-N` (its record `fleet-N.txt`, valid while its first line names
/// the same), and its files, listed in `fleet-N.list` too.
fn ensure_tree(ws: &Workspace, n: usize, bolt: FileInfo, p: &Progress) -> Result<(Tree, Files)> {
    let dir = ws.bench_dir().join("files").join(format!("fleet-{n}"));
    let record = dir.with_extension("txt");
    let name = Path::new(&bolt.path).file_name().context("the bbolt file has no name")?;
    let head = format!("# {n} RRD files, copies of what collectd wrote (below), and {name:?}");
    let valid = fs::read_to_string(&record).is_ok_and(|t| t.starts_with(&head));
    let made_now = output::make_once(&dir, valid, |tmp| {
        p.note(&format!("xtask: making {} (cached for later runs)", dir.display()));
        let scratch =
            TempPath::new(ws.bench_dir().join(format!("scratch/collectd-{}", std::process::id())));
        let (host0, seed) = collectd(scratch.path())?;
        for (i, rel) in seed.iter().cycle().take(n).enumerate() {
            let to = tmp.join(format!("host{:04}", i / seed.len())).join(rel);
            fs::create_dir_all(to.parent().unwrap_or(tmp))?;
            fs::copy(host0.join(rel), &to).with_context(|| format!("cannot copy to {to:?}"))?;
            interrupt::check()?;
        }
        let link = tmp.join("bbolt").join(name);
        fs::create_dir_all(tmp.join("bbolt"))?;
        if fs::hard_link(&bolt.path, &link).is_err() {
            fs::copy(&bolt.path, &link).context("cannot copy the bbolt file into the tree")?;
        }
        Cmd::new("sync").run(&ws.root)?;
        let conf = fs::read_to_string(scratch.path().join("collectd.conf"))?;
        Ok(fs::write(&record, format!("{head}\n{conf}"))?)
    })?;
    let bolt_in_tree = path_arg(&dir.join("bbolt").join(name));
    let files = walk(&dir)?;
    let list: String = files.iter().map(|f| path_arg(f) + "\n").collect();
    fs::write(dir.with_extension("list"), list)?;
    let (mut seed_sizes, mut bytes) = (BTreeMap::new(), 0);
    for f in &files {
        let len = fs::metadata(f)?.len();
        bytes += len;
        if f.starts_with(dir.join("host0000")) {
            *seed_sizes.entry(len).or_insert(0) += 1;
        }
    }
    let dir = path_arg(&dir);
    Ok((Tree { dir, rrd_files: n, seed_sizes, bytes, made_now, bolt, bolt_in_tree }, files))
}

/// The `totals` fields `keys` (space-separated) of ours' `--json` as metrics of their names,
/// and the document.
fn totals(o: &Output, keys: &str) -> Result<(Value, Metrics), String> {
    let v: Value = serde_json::from_str(&o.stdout).map_err(|e| format!("not JSON: {e}"))?;
    let t = v.get("totals").ok_or("no `totals`")?;
    let mut m = Metrics::new();
    for k in keys.split(' ') {
        let x = t.get(k).and_then(Value::as_f64).ok_or(format!("no `totals.{k}`"))?;
        m.insert(k.to_owned(), x);
    }
    Ok((v, m))
}

/// `inspector residency -R --json`: its totals, and per page kind the bytes (`bytes:KIND`)
/// and resident bytes (`res:KIND`) over all files.
fn parse_residency(o: &Output) -> Result<Metrics, String> {
    let keys = "files resident_pages total_pages hot_pages hot_resident_pages cold_resident_bytes";
    let (v, mut m) = totals(o, keys)?;
    let files = v.get("files").and_then(Value::as_array).ok_or("no `files`")?;
    for k in files.iter().filter_map(|f| f.get("kinds")?.as_array()).flatten() {
        let kind = k.get("kind").and_then(Value::as_str).ok_or("a kind without a name")?;
        for (key, field) in [("bytes", "bytes"), ("res", "resident_bytes")] {
            let x = k.get(field).and_then(Value::as_f64).ok_or(format!("{kind}: no `{field}`"))?;
            *m.entry(format!("{key}:{kind}")).or_default() += x;
        }
    }
    Ok(m)
}

/// `inspector warm --hot -R --json`'s totals: `files` acted on, `pages` (their hot sets),
/// resident `before` and `after`.
fn parse_warm(o: &Output) -> Result<Metrics, String> {
    Ok(totals(o, "files pages before after")?.1)
}

/// `vmtouch`'s `Files: N` and `Resident Pages: R/T` (`files`, `resident_pages`,
/// `total_pages`), or with `-t` its `Touched Pages: N` (`touched`).
fn parse_vmtouch(o: &Output) -> Result<Metrics, String> {
    let lines = || o.stdout.lines().map(str::trim);
    let word = |key| lines().find_map(|l| l.strip_prefix(key)?.split_whitespace().next());
    let num = |w: &str| w.parse::<f64>().ok();
    let rt = word("Resident Pages:").and_then(|w| w.split_once('/'));
    let rt = rt.and_then(|(r, t)| Some([("resident_pages", num(r)?), ("total_pages", num(t)?)]));
    let touched = word("Touched Pages:").and_then(num).map(|t| ("touched", t));
    let found = rt.into_iter().flatten().chain(touched);
    match word("Files:").and_then(num) {
        Some(f) if rt.is_some() || touched.is_some() => Ok(metrics(found.chain([("files", f)]))),
        _ => Err(format!("no `Files:`, `Resident Pages:` or `Touched Pages:` in {:?}", o.stdout)),
    }
}

/// `fincore --bytes --raw --noheadings -o PAGES,SIZE,FILE`'s lines, summed (`files`,
/// `resident_pages`, `total_pages`).
fn parse_fincore(o: &Output) -> Result<Metrics, String> {
    let page = mapwise_native::os::residency::os_page_size().max(1);
    let mut sum = [0u64; 3];
    for l in o.stdout.lines() {
        let mut w = l.split_whitespace().map(str::parse::<u64>);
        let (Some(Ok(pages)), Some(Ok(size))) = (w.next(), w.next()) else {
            return Err(format!("not `PAGES SIZE FILE`: {l:?}"));
        };
        sum = [sum[0] + 1, sum[1] + pages, sum[2] + size.div_ceil(page)];
    }
    let [files, resident, total] = sum.map(|x| x as f64);
    let m = metrics([("files", files), ("resident_pages", resident), ("total_pages", total)]);
    if sum[0] == 0 { Err("no file listed".to_owned()) } else { Ok(m) }
}

/// One `GET /metrics` (HTTP/1.0: answered, then closed): status, body and seconds.
fn scrape(port: u16) -> Result<(u16, String, f64), String> {
    let start = Instant::now();
    let io = |e: std::io::Error| format!("GET /metrics on port {port}: {e}");
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(300))).map_err(io)?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").map_err(io)?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(io)?;
    let secs = start.elapsed().as_secs_f64();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok());
    let status = status.ok_or_else(|| format!("no HTTP status in {:?}", tail(&text, 2)))?;
    Ok((status, text.split_once("\r\n\r\n").map_or("", |b| b.1).to_owned(), secs))
}

/// The value of the unlabelled metric `name` in a scrape.
fn gauge(body: &str, name: &str) -> Result<f64> {
    let v = body.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok());
    v.with_context(|| format!("no `{name}` in the scrape"))
}

/// One exporter run: `cmd` (given its `--listen` address) started, `/metrics` asked until it
/// answers, then every `interval` s for `window` s; its CPU time over that window.
fn export_run(
    cmd: &dyn Fn(&str) -> Cmd,
    (interval, window): (u64, u64),
    log: &Path,
) -> Result<Metrics> {
    fs::create_dir_all(log.parent().unwrap_or(Path::new(".")))?;
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let cmd = cmd(&format!("127.0.0.1:{port}"));
    let (start, mut first) = (Instant::now(), None);
    let ready = || {
        first = scrape(port).ok().filter(|s| s.0 == 200);
        first.is_some()
    };
    let child = Reaped(writer::spawn_until(&cmd, log, Duration::from_secs(3600), ready)?);
    let first_s = start.elapsed().as_secs_f64();
    let (_, body, _) = first.context("no first answer")?;
    let pid = child.0.id();
    let stat = || fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let cpu = || tui::cpu_time(&stat()).context("no CPU time in /proc/PID/stat");
    let (cpu0, w0, mut gets, mut last) = (cpu()?, Instant::now(), Vec::new(), String::new());
    for k in 0..=window / interval.max(1) {
        let at = w0 + Duration::from_secs(k * interval);
        while let Some(left) = at.checked_duration_since(Instant::now()) {
            interrupt::check()?;
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
        let (status, b, secs) = scrape(port).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(status == 200, "GET /metrics: status {status}");
        gets.push(secs);
        last = b;
    }
    let cpu_s = (cpu()? - cpu0).as_secs_f64();
    let wall = w0.elapsed().as_secs_f64();
    let mut m = metrics([
        ("first_s", first_s),
        ("first_cpu_s", cpu0.as_secs_f64()),
        ("first_walk_s", gauge(&body, "mapwise_export_scan_seconds")?),
        ("files", gauge(&body, "mapwise_export_files")?),
        ("get_s", median(&gets).unwrap_or_default()),
        ("walk_s", gauge(&last, "mapwise_export_scan_seconds")?),
        ("cpu_pct", 100.0 * cpu_s / wall.max(1e-9)),
        ("window_s", wall),
        ("body_bytes", last.len() as f64),
    ]);
    m.extend(tui::vm_hwm_kib(pid).map(|k| ("hwm_kib".to_owned(), k as f64)));
    Ok(m)
}

/// Everything results.json holds; the report is rendered from it.
#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    size: &'static str,
    runs: usize,
    tools: Vec<(&'static str, Option<String>)>,
    tree: Tree,
    collectd_conf: &'static str,
    interval_s: u64,
    window_s: u64,
    commands: Vec<String>,
    /// Residency warm, residency hot set, warm --hot, export.
    cells: Vec<CellRuns>,
    traces: Vec<TraceInfo>,
    charts: Vec<ChartFile>,
    #[serde(skip)]
    traces_paragraph: Option<String>,
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let (size, n, interval, window) = match (args.common.tiny, args.full) {
        (true, _) => ("tiny", 300, 2, 4),
        (_, true) => ("full", 100_000, 15, 60),
        _ => ("default", 10_000, 15, 60),
    };
    let runs = args.common.runs()?;
    let needs = [Need::Collectd, Need::Vmtouch, Need::Fincore];
    install::try_ensure(&needs).map_err(anyhow::Error::msg)?;
    let peer = ws.peer("bolt")?;
    let progress = Progress::new((3 + (1 + runs) * 8 + runs) as u64);
    let build = Cmd::cargo_release("mapwise-inspector", None);
    let build_peer = Cmd::new(&peer).arg("build");
    for (what, cmd) in [("inspector (release)", &build), ("the bbolt peer", &build_peer)] {
        progress.set(format!("building {what}"));
        cmd.run(&ws.root).with_context(|| format!("cannot build {what}"))?;
        progress.inc();
    }
    let bolt_size = if size == "tiny" { (TINY_SIZE, Some(TINY_BATCH)) } else { (1 << 30, None) };
    let bolt = boltfile::ensure_file(ws, &peer, bolt_size, 1, &progress)?;
    progress.set(format!("the tree of {n} RRD files"));
    let (tree, files) = ensure_tree(ws, n, bolt, &progress)?;
    let machine = Machine::describe(Path::new(&tree.dir)); // its load before the runs
    progress.inc();
    let (inspector, dir) = (path_arg(&ws.release_bin("inspector")), tree.dir.clone());
    let ours = |verb: &[&str]| Cmd::new(&inspector).args(verb.iter().copied()).args(["-R", &dir]);
    let evict_cold = ours(&["evict", "--cold"]);
    let vmtouch = |touch| Cmd::new("vmtouch").arg_if(touch, "-t").args(["-F", &dir]);
    let list = dir.clone() + ".list";
    let fincore = Cmd::new("xargs").args(["-d", "\\n", "-a", &list, "fincore", "--bytes"]);
    let fincore = fincore.args(["--raw", "--noheadings", "-o", "PAGES,SIZE,FILE"]);
    // Traced: the first RRD file and the bbolt file (a recorder per file would be the load).
    let rrd = files.iter().find(|f| f.extension().is_some_and(|x| x == "rrd")).cloned();
    let traced: Vec<PathBuf> = rrd.into_iter().chain([tree.bolt_in_tree.clone().into()]).collect();
    let settle = machine::reports_free_pages() && size != "tiny";
    let cell = |label: &str, cache, contenders, warmup| Cell {
        traced: traced.clone(),
        shared_warm_reset: true,
        after_reset: (cache == HotSet).then(|| evict_cold.clone()),
        cold_settle: settle.then_some(super::bolt_scan::COLD_SETTLE),
        ..Cell::new(label.to_owned(), cache, files.clone(), contenders, (warmup, runs))
    };
    let mut specs: Vec<Cell> = Vec::new();
    for cache in [Warm, HotSet] {
        let contenders = vec![
            Contender::new("ours", ours(&["residency"]).arg("--json"), parse_residency),
            Contender::new("vmtouch", vmtouch(false), parse_vmtouch),
            Contender::new("fincore", fincore.clone(), parse_fincore),
        ];
        specs.push(cell(&format!("residency, {}", cache.name()), cache, contenders, 1));
    }
    let warm = vec![
        Contender::new("ours", ours(&["warm", "--hot"]).arg("--json"), parse_warm),
        Contender::new("vmtouch -t", vmtouch(true), parse_vmtouch),
    ];
    specs.push(cell("warm --hot, from cold", Cold, warm, 1));
    let (ins, d, every) = (inspector.clone(), dir.clone(), interval.to_string());
    let export = move |addr: &str| {
        Cmd::new(&ins).args(["export", "--listen", addr, "-R", &d, "--interval", &every])
    };
    let what = export("127.0.0.1:PORT").shell();
    let what =
        format!("{what}; GET /metrics until it answers, then every {interval} s for {window} s");
    let log =
        TempPath::new(ws.bench_dir().join(format!("scratch/export-{}.log", std::process::id())));
    let path = log.path().to_owned();
    let work = Rc::new(move || export_run(&export, (interval, window), &path));
    specs.push(cell("export", HotSet, vec![Contender::in_process("ours", what, work)], 0));
    let tracing = Tracing::new(ws);
    let run = |c| cell::run(ws, &progress, c, &tracing);
    let cells: Vec<CellRuns> = specs.iter().map(run).collect::<Result<_>>()?;
    drop(log);
    let (bolt, linked) = (&tree.bolt.path, &tree.bolt_in_tree);
    let mut commands = vec![build.shell(), build_peer.shell(), tree.bolt.gen_cmd.clone()];
    commands.push(format!("{COLLECTD} -f -C collectd.conf  # {COLLECTD_RUN:?}, then copied"));
    commands.push(format!("ln {bolt} {linked}"));
    commands.push(evict_cold.shell() + "  # after the warm read: the hot-set state");
    for (_, cmd) in cells.iter().flat_map(|c| &c.contenders) {
        if !commands.contains(cmd) {
            commands.push(cmd.clone());
        }
    }
    let out = ws.report_dir(&args.common, started);
    let traces = tracing.traces.into_inner();
    let what = ("fleet: time, ours / vmtouch", "time, ours / vmtouch, per cell");
    let chart = ChartFile::ratios(&cells[..3], "wall_s", what, Some(1.0))?;
    let dpkg = |p| machine::first_line_of("dpkg-query", &["-W", "-f=${Version}", p]);
    let traced = "the first RRD file of the tree and the bbolt file";
    let results = Results {
        stamp: Stamp::new("fleet", started, machine),
        size,
        runs,
        tools: ["collectd-core", "vmtouch", "util-linux-extra"].map(|p| (p, dpkg(p))).into(),
        tree,
        collectd_conf: COLLECTD_CONF,
        interval_s: interval,
        window_s: window,
        commands,
        cells,
        traces: traces.list().to_vec(),
        traces_paragraph: traces.paragraph(traced, Path::new(&ws.rel(&out))),
        charts: vec![chart],
    };
    drop(progress);
    output::publish_traced(&out, &render(&results), &results, &traces, &results.charts)?;
    let agree = counts(&results.cells[..2])[1].is_empty();
    Ok(output::exit(agree, "ours, vmtouch and fincore counted different resident pages"))
}

/// The rounds (warm-ups too) of `cells`, each named: (those compared, those where the tools
/// counted different resident pages or files, those not compared because pages left or
/// entered the cache during the round: the harness's mincore counts before and after its
/// runs differ, as when a reclaimer drops pages a run has just counted).
fn counts(cells: &[CellRuns]) -> [Vec<String>; 3] {
    let mut out = [Vec::new(), Vec::new(), Vec::new()];
    for c in cells {
        for (kind, rounds) in [("warm-up", &c.warmup), ("round", &c.rounds)] {
            for r in rounds {
                let get = |m| r.results.iter().map(|x| x.get(m)).collect::<Vec<_>>();
                let same = |v: &[Option<f64>]| v.iter().all(|x| x.is_some() && *x == v[0]);
                let mincore = [get("pages_before"), get("pages_after")].concat();
                let (p, f, name) = (get("resident_pages"), get("files"), &c.label);
                let nums = |v: &[Option<f64>]| {
                    let each = v.iter().map(|x| or_dash(*x, |x| format!("{x:.0}")));
                    each.collect::<Vec<_>>().join(" / ")
                };
                let (i, what) = match (same(&mincore), same(&p) && same(&f)) {
                    (false, _) => (2, format!("mincore {} pages", nums(&mincore))),
                    (true, true) => (0, String::new()),
                    (true, false) => (1, format!("pages {}, files {}", nums(&p), nums(&f))),
                };
                out[i].push(format!("{name}, {kind} {}: {what}", r.round));
            }
        }
    }
    out
}

/// Pages contender `i` of `c` read in each timed run: the files' resident pages after it
/// less before.
fn pages_read(c: &CellRuns, i: usize) -> Vec<f64> {
    let each = c.rounds.iter().filter_map(|r| r.results.get(i));
    each.filter_map(|x| Some(x.get("pages_after")? - x.get("pages_before")?)).collect()
}

fn render(r: &Results) -> Report {
    let (mut o, t) = (r.stamp.report(), &r.tree);
    let [res_warm, res_hot, warm, export] = [0, 1, 2, 3].map(|i| &r.cells[i]);
    let (size, runs, finished) = (r.size, r.runs.to_string(), &r.stamp.finished_utc);
    o.text(say(NOTES, "intro", vars![size, runs, finished]));
    r.stamp.add_to(&mut o, "the tree", &r.tools);
    let seed = t.seed_sizes.values().sum::<usize>().max(1);
    let (tree, files, hosts) = (&t.dir, t.rrd_files.to_string(), t.rrd_files.div_ceil(seed));
    let sizes = t.seed_sizes.iter().map(|(b, k)| format!("{k} of {b} bytes"));
    let (sizes, seed, hosts) =
        (sizes.collect::<Vec<_>>().join(", "), seed.to_string(), hosts.to_string());
    let (bolt, bolt_bytes, all) =
        (&t.bolt_in_tree, bytes(t.bolt.bytes as f64), bytes(t.bytes as f64));
    let made = if t.made_now { "made by this run" } else { "taken from the cache" };
    let secs = COLLECTD_RUN.as_secs().to_string();
    let v = vars![tree, files, hosts, seed, sizes, bolt, bolt_bytes, all, made, secs];
    o.section("The tree").text(say(NOTES, "tree", v)).code("", r.collectd_conf);
    let (interval, window) = (r.interval_s.to_string(), r.window_s.to_string());
    o.section("Method").text(say(NOTES, "method", vars![interval, window]));
    o.commands(&r.commands);
    o.section("Results: `inspector residency -R` beside vmtouch and fincore").table(cell_table(
        &r.cells[..2],
        &[
            ("cell", Other, &|c| c.label.clone()),
            (">ours", Ours, &|c| c.time(0, "wall_s")),
            (">vmtouch", Peer, &|c| c.time(1, "wall_s")),
            (">fincore", Peer, &|c| c.time(2, "wall_s")),
            (">ours/vmtouch (per round)", Ratio, &|c| c.ratio_text("wall_s")),
            (">fincore/vmtouch", Ratio, &|c| opt_ratio(c.ratio(2, 1, "wall_s").0.as_ref())),
            (">resident pages", Other, &|c| c.distinct_text("resident_pages")),
            (">of pages", Other, &|c| c.distinct_text("total_pages")),
            (">files", Other, &|c| c.distinct_text("files")),
        ],
    ));
    o.text("What ours printed besides the counts (first timed run, summed over the files):");
    o.list([split(res_warm), split(res_hot)]);
    let read = |i| move |c: &CellRuns| or_dash(Summary::of(&pages_read(c, i)), |s| s.counts());
    o.section("Results: `inspector warm --hot` beside `vmtouch -t`, from cold").table(cell_table(
        std::slice::from_ref(warm),
        &[
            ("cell", Other, &|c| c.label.clone()),
            (">ours", Ours, &|c| c.time(0, "wall_s")),
            (">vmtouch -t", Peer, &|c| c.time(1, "wall_s")),
            (">ours/vmtouch (per round)", Ratio, &|c| c.ratio_text("wall_s")),
            (">pages read, ours", Ours, &read(0)),
            (">pages read, vmtouch -t", Peer, &read(1)),
            (">hot set (residency)", Other, &|_| res_hot.distinct_text("hot_pages")),
            (">resident at start", Other, &CellRuns::resident_at_start),
        ],
    ));
    let secs = |k: &'static str| move |c: &CellRuns| opt_secs(c.summary(0, k).as_ref());
    let pct = |c: &CellRuns| or_dash(c.summary(0, "cpu_pct"), |s| s.shown(|x| format!("{x:.2} %")));
    o.section(format!("Results: `inspector export`, scraped every {interval} s")).table(
        cell_table(
            std::slice::from_ref(export),
            &[
                (">files", Other, &|c| c.distinct_text("files")),
                (">first answer", Ours, &secs("first_s")),
                (">first walk", Ours, &secs("first_walk_s")),
                (">CPU by then", Ours, &secs("first_cpu_s")),
                (">scrape", Ours, &secs("get_s")),
                (">walk, steady", Ours, &secs("walk_s")),
                (">CPU, % of a core", Ours, &pct),
                (">peak RSS", Ours, &|c| or_dash(c.median(0, "hwm_kib"), kib)),
                (">/metrics", Ours, &|c| or_dash(c.median(0, "body_bytes"), bytes)),
            ],
        ),
    );
    o.text(say(NOTES, "export", vars![interval, window]));
    charts::section(&mut o, &r.charts, r.traces_paragraph.clone());
    o.section("Verdicts").verdicts(verdicts(r));
    o
}

/// The hot-set and per-kind split ours printed in its first timed run of `c`, in words.
fn split(c: &CellRuns) -> String {
    let m = c.rounds.first().and_then(|r| r.results.first()).map(|x| x.metrics.clone());
    let m = m.unwrap_or_default();
    let get = |k: &str, f: fn(f64) -> String| or_dash(m.get(k).copied(), f);
    let count = |x: f64| format!("{x:.0}");
    let kinds = m.keys().filter_map(|k| k.strip_prefix("bytes:"));
    let kind = |k| {
        format!("{k} {}/{}", get(&format!("res:{k}"), bytes), get(&format!("bytes:{k}"), bytes))
    };
    let (hot, of) = (get("hot_resident_pages", count), get("hot_pages", count));
    let (cold, kinds) = (get("cold_resident_bytes", bytes), kinds.map(kind).collect::<Vec<_>>());
    let label = &c.label;
    let kinds = kinds.join(", ");
    say(NOTES, "split", vars![label, hot, of, cold, kinds])
}

/// The verdicts: time per residency state, the counts, the pages `warm --hot` read, export's CPU.
fn verdicts(r: &Results) -> Vec<Verdict> {
    let [res_warm, res_hot, warm, export] = [0, 1, 2, 3].map(|i| &r.cells[i]);
    let time = |c: &CellRuns| {
        let ratio = c.ratio(0, 1, "wall_s").0;
        let v = judge(&c.label, ratio.as_ref(), (1.0, Bound::AtMost), ("ours ", " vmtouch's time"));
        v.target("ours ≤ 1.0× vmtouch, the per-kind and hot-set split included")
    };
    let mut v: Vec<Verdict> = [res_warm, res_hot].map(time).into();
    let [same, differ, moved] = counts(&r.cells[..2]);
    let (n, all) = (same.len().to_string(), (same.len() + differ.len() + moved.len()).to_string());
    let (warm_pages, files) =
        (res_warm.distinct_text("resident_pages"), res_warm.distinct_text("files"));
    let (hot_pages, moved) = (res_hot.distinct_text("resident_pages"), moved.join("; "));
    let moved = if moved.is_empty() { "none".to_owned() } else { moved };
    let (first, k) = (differ.first().cloned().unwrap_or_default(), differ.len().to_string());
    let agree = match differ.is_empty() {
        true => say(NOTES, "agree", vars![n, all, warm_pages, hot_pages, files, moved]),
        false => say(NOTES, "differ", vars![k, first, moved]),
    };
    let ok = differ.is_empty() && !same.is_empty();
    let counts = Verdict::new("resident page counts", Outcome::of(ok), agree);
    v.push(counts.target("all three count the same"));
    // Ours' own count (its JSON: the hot pages resident after its touches, less before) must
    // be the hot set; the harness's count, later, no more (a reclaimer may have dropped some).
    let hot = res_hot.distinct("hot_pages");
    let own: Vec<f64> = warm
        .rounds
        .iter()
        .filter_map(|r| r.results.first())
        .filter_map(|x| Some(x.get("after")? - x.get("before")?))
        .collect();
    let hot_f = hot.first().map_or(f64::NAN, |&h| h as f64);
    let ours = pages_read(warm, 0);
    let exact = hot.len() == 1
        && !own.is_empty()
        && own.iter().all(|&p| p == hot_f)
        && ours.iter().all(|&p| p <= hot_f);
    let counts = |v: &[f64]| or_dash(Summary::of(v), |s| s.counts());
    let (own, ours, hot) = (counts(&own), counts(&ours), res_hot.distinct_text("hot_pages"));
    let (theirs, total) = (counts(&pages_read(warm, 1)), res_warm.distinct_text("total_pages"));
    let read = say(NOTES, "read", vars![own, ours, hot, theirs, total]);
    let read = Verdict::new("warm --hot, pages read", Outcome::of(exact), read);
    v.push(read.target("exactly the hot set"));
    let (cpu, files) = (export.summary(0, "cpu_pct"), r.tree.rrd_files);
    let (outcome, note) = match cpu {
        Some(_) if r.size == "full" => (Outcome::None, format!("{files} files: no target")),
        Some(s) => (Outcome::of(s.median <= CPU_TARGET), format!("{files} files")),
        None => (Outcome::None, String::new()),
    };
    let text = |s: Summary| {
        format!("{} % of a core (median [min–max]); {note}", s.shown(|x| format!("{x:.2}")))
    };
    let target = format!("≤ {CPU_TARGET} % of a core at 10k files, every {} s", r.interval_s);
    v.push(Verdict::new("export CPU", outcome, or_dash(cpu, text)).target(target));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(stdout: &str) -> Output {
        Output { stdout: stdout.to_owned(), ..Output::default() }
    }

    #[test]
    fn the_tools_outputs_parse() {
        let v = "  Files: 129\n  Directories: 22\n  Resident Pages: 3848/3850  15M/15M  99.9%\n";
        let want = [("files", 129.0), ("resident_pages", 3848.0), ("total_pages", 3850.0)];
        assert_eq!(parse_vmtouch(&out(v)).unwrap(), metrics(want));
        let m = parse_vmtouch(&out("  Files: 2\n   Touched Pages: 3848 (15M)\n")).unwrap();
        assert_eq!(m, metrics([("files", 2.0), ("touched", 3848.0)]));
        assert!(parse_vmtouch(&out("Files: 2\n")).is_err() && parse_vmtouch(&out("")).is_err());
        let m = parse_fincore(&out("25 99496 a/b.rrd\n0 8192 c\n")).unwrap();
        assert_eq!(m, metrics([("files", 2.0), ("resident_pages", 25.0), ("total_pages", 27.0)]));
        assert!(parse_fincore(&out("")).is_err() && parse_fincore(&out("x 1 a\n")).is_err());
        let json = r#"{"files": [{"kinds": [{"kind": "header", "bytes": 2048, "resident_bytes": 1024}]},
            {"kinds": [{"kind": "header", "bytes": 2048, "resident_bytes": 2048}]}], "totals":
            {"files": 2, "resident_pages": 5, "total_pages": 50, "hot_pages": 14,
            "hot_resident_pages": 3, "cold_resident_bytes": 8192}}"#;
        let m = parse_residency(&out(json)).unwrap();
        assert_eq!((m["files"], m["resident_pages"], m["hot_pages"]), (2.0, 5.0, 14.0));
        assert_eq!((m["bytes:header"], m["res:header"]), (4096.0, 3072.0));
        assert!(parse_residency(&out("{\"totals\": {\"files\": 1}}")).is_err());
        let warm = r#"{"files": [], "totals": {"files": 1, "pages": 7, "before": 0, "after": 7}}"#;
        assert_eq!(parse_warm(&out(warm)).unwrap()["pages"], 7.0);
        let body = "# TYPE mapwise_export_files gauge\nmapwise_export_files 301\n";
        assert_eq!(gauge(body, "mapwise_export_files").unwrap(), 301.0);
        assert!(gauge(body, "mapwise_export_scan_seconds").is_err());
    }
}
