//! A bench cell as data: a cache state, the files it resets and traces,
//! and its contenders (a command and a parser of its output each, or work
//! done in-process). One runner takes any cell through
//! [`schedule::rotate`]: warm-up rounds, then timed rounds, the cache
//! reset before every run, every timed command traced, and per-contender
//! metrics and round-by-round ratios after.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::proc::{Cmd, Output};
use crate::schedule::{self, CacheState, Prepared, Round};
use crate::stats::{Summary, opt_median, opt_ratio, opt_secs, or_dash, pair_ratios};
use crate::traces::Traces;
use crate::units::{kib, pct};
use crate::{Progress, Workspace};

/// What one run measured, by metric name (`took_s`, `keys`, …).
pub type Metrics = BTreeMap<String, f64>;

/// Metrics from (name, value) pairs.
pub fn metrics<'a>(kv: impl IntoIterator<Item = (&'a str, f64)>) -> Metrics {
    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Reads a contender's output into its metrics; `Err` says what is missing.
pub type Parser = fn(&Output) -> Result<Metrics, String>;

/// In-process work: its metrics, `wall_s` among them when it times itself (else the call is timed).
pub type Work = Rc<dyn Fn() -> Result<Metrics>>;

/// What a contender runs.
#[derive(Clone)]
pub enum Job {
    /// A command, run from the workspace root, and how its output is read.
    Cmd(Cmd, Parser),
    /// Work inside xtask, described for the report; never traced (a
    /// sampling thread would be part of what it times).
    InProcess(String, Work),
}

impl Job {
    /// The command as a shell shows it, or what the work does.
    #[must_use]
    pub fn shell(&self) -> String {
        match self {
            Self::Cmd(cmd, _) => cmd.shell(),
            Self::InProcess(what, _) => what.clone(),
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shell())
    }
}

/// One side of a cell.
#[derive(Clone, Debug)]
pub struct Contender {
    /// Its name in the report (`ours`, `Go`).
    pub name: String,
    /// What it runs.
    pub job: Job,
    /// Its own files to reset and trace, when not the cell's.
    pub files: Vec<PathBuf>,
    /// Files removed before each of its runs (what it writes; what its last
    /// run wrote stays, for the bench to check or remove).
    pub fresh: Vec<PathBuf>,
}

impl Contender {
    /// A contender named `name` running `cmd`.
    #[must_use]
    pub fn new(name: &str, cmd: Cmd, parse: Parser) -> Self {
        let (files, fresh) = (Vec::new(), Vec::new());
        Self { name: name.to_owned(), job: Job::Cmd(cmd, parse), files, fresh }
    }

    /// A contender named `name` doing `work` (described as `what`) in-process.
    #[must_use]
    pub fn in_process(name: &str, what: String, work: Work) -> Self {
        let (files, fresh) = (Vec::new(), Vec::new());
        Self { name: name.to_owned(), job: Job::InProcess(what, work), files, fresh }
    }

    /// The same on its own `files` instead of the cell's.
    #[must_use]
    pub fn on(mut self, files: Vec<PathBuf>) -> Self {
        self.files = files;
        self
    }

    /// The same, removing `files` before each of its runs.
    #[must_use]
    pub fn writing(mut self, files: Vec<PathBuf>) -> Self {
        self.fresh = files;
        self
    }
}

/// A cell: what runs, against which cache state, how often.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Its row label (`cold, plain mmap`).
    pub label: String,
    /// The cache state every run starts from.
    pub cache: CacheState,
    /// The files reset to `cache` before each run and traced during it;
    /// none for a cell whose runs make their own files.
    pub files: Vec<PathBuf>,
    /// The files traced instead of all of `files`, when some (a tree of
    /// thousands: a recorder per file would be the load measured).
    pub traced: Vec<PathBuf>,
    /// A command run after each reset, untimed, that makes the state
    /// (`inspector evict --cold` for [`CacheState::HotSet`]).
    pub after_reset: Option<Cmd>,
    /// The contenders, in the order of the first round.
    pub contenders: Vec<Contender>,
    /// Untimed rounds first, not in the statistics.
    pub warmup: usize,
    /// Timed rounds.
    pub runs: usize,
    /// A warm (or hot-set) round shares one reset (the later runs re-check
    /// only), so each round compares the contenders on the same memory.
    pub shared_warm_reset: bool,
    /// Every warm run follows an untimed run of the same command, so it
    /// is a repeated run against a cache that command just used.
    pub untimed_warm_first: bool,
    /// Wait after a cold reset (a VM that hands freed pages back).
    pub cold_settle: Option<Duration>,
}

impl Cell {
    /// A cell of `contenders` on `files` in `cache`, each run reset on its
    /// own, no settle wait.
    #[must_use]
    pub fn new(
        label: String,
        cache: CacheState,
        files: Vec<PathBuf>,
        contenders: Vec<Contender>,
        (warmup, runs): (usize, usize),
    ) -> Self {
        Self {
            label,
            cache,
            files,
            traced: Vec::new(),
            after_reset: None,
            contenders,
            warmup,
            runs,
            shared_warm_reset: false,
            untimed_warm_first: false,
            cold_settle: None,
        }
    }
}

/// One run of one contender.
#[derive(Debug, Serialize)]
pub struct Run {
    /// What its parser read.
    pub metrics: Metrics,
    /// Spawn to exit as seen by the harness, seconds.
    pub wall_s: f64,
    /// Peak RSS of the process, KiB (wait4).
    pub max_rss_kib: Option<u64>,
    /// The cache reset before it.
    pub prep: Option<Prepared>,
    /// Fraction of the files resident right after it (mincore, the mean over the files).
    pub resident_after: Option<f64>,
    /// The files' resident OS pages right after it, summed.
    pub pages_after: Option<u64>,
    /// What it printed (first 4 KiB).
    pub stdout: String,
    /// What it printed on stderr (first 4 KiB).
    pub stderr: String,
}

impl Run {
    /// A metric, `wall_s`, `rss_kib` and `resident_after` included.
    #[must_use]
    pub fn get(&self, metric: &str) -> Option<f64> {
        match metric {
            "wall_s" => Some(self.wall_s),
            #[expect(clippy::cast_precision_loss)]
            "rss_kib" => self.max_rss_kib.map(|k| k as f64),
            "resident_after" => self.resident_after,
            "resident_before" => self.prep.map(|p| p.resident),
            #[expect(clippy::cast_precision_loss)]
            "pages_before" => self.prep.map(|p| p.pages as f64),
            #[expect(clippy::cast_precision_loss)]
            "pages_after" => self.pages_after.map(|p| p as f64),
            m => self.metrics.get(m).copied(),
        }
    }
}

/// A cell's runs.
#[derive(Debug, Serialize)]
pub struct CellRuns {
    /// The cell's label.
    pub label: String,
    /// Its cache state.
    pub cache: CacheState,
    /// The contenders' names and commands.
    pub contenders: Vec<(String, String)>,
    /// Untimed rounds.
    pub warmup: Vec<Round<Run>>,
    /// Timed rounds.
    pub rounds: Vec<Round<Run>>,
}

impl CellRuns {
    /// Contender `c`'s values of `metric` over the timed rounds.
    #[must_use]
    fn values(&self, c: usize, metric: &str) -> Vec<f64> {
        self.rounds.iter().filter_map(|r| r.results.get(c)?.get(metric)).collect()
    }

    /// Contender `c`'s median of `metric`.
    #[must_use]
    pub fn median(&self, c: usize, metric: &str) -> Option<f64> {
        Some(self.summary(c, metric)?.median)
    }

    /// Contender `c`'s median share of the files resident after a run as pages of
    /// `total`: `2/1563 (0.1 %)`.
    #[must_use]
    pub fn resident_pages(&self, c: usize, total: u64) -> String {
        #[expect(clippy::cast_precision_loss)]
        let of = |f: Summary| format!("{:.0}/{total} ({})", f.median * total as f64, pct(f.median));
        or_dash(self.summary(c, "resident_after"), of)
    }

    /// Median and range of contender `c`'s `metric`.
    #[must_use]
    pub fn summary(&self, c: usize, metric: &str) -> Option<Summary> {
        Summary::of(&self.values(c, metric))
    }

    /// `a`/`b` of `metric`, round by round, and how many rounds had no ratio (`b` was 0).
    #[must_use]
    pub fn ratio(&self, a: usize, b: usize, metric: &str) -> (Option<Summary>, usize) {
        let pair =
            |r: &Round<Run>| Some((r.results.get(a)?.get(metric)?, r.results.get(b)?.get(metric)?));
        let pairs: Vec<(f64, f64)> = self.rounds.iter().filter_map(pair).collect();
        let (ratios, skipped) = pair_ratios(&pairs);
        (Summary::of(&ratios), skipped)
    }

    /// Every distinct value of `metric` over all runs, warm-up included
    /// (a count both tools must agree on).
    #[must_use]
    pub fn distinct(&self, metric: &str) -> Vec<u64> {
        let runs = self.warmup.iter().chain(&self.rounds).flat_map(|r| &r.results);
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let v: std::collections::BTreeSet<u64> =
            runs.filter_map(|run| run.get(metric)).map(|x| x as u64).collect();
        v.into_iter().collect()
    }

    /// Contender `c`'s `metric` as a time, median [min–max], `—` for none.
    #[must_use]
    pub fn time(&self, c: usize, metric: &str) -> String {
        opt_secs(self.summary(c, metric).as_ref())
    }

    /// Contender `c`'s median time of `metric` alone.
    #[must_use]
    pub fn median_time(&self, c: usize, metric: &str) -> String {
        opt_median(self.summary(c, metric).as_ref())
    }

    /// Contender 0 / contender 1 of `metric`, round by round, with how many rounds had no ratio.
    #[must_use]
    pub fn ratio_text(&self, metric: &str) -> String {
        let (ratio, skipped) = self.ratio(0, 1, metric);
        let note = format!(" ({skipped} pair(s) without ratio)");
        opt_ratio(ratio.as_ref()) + if skipped > 0 { &note } else { "" }
    }

    /// The median peak RSS of the first two contenders, `a / b`.
    #[must_use]
    pub fn rss(&self) -> String {
        both(|i| or_dash(self.summary(i, "rss_kib"), |s| kib(s.median)))
    }

    /// Contender `c`'s median share of the files resident after a run.
    #[must_use]
    pub fn resident_after(&self, c: usize) -> String {
        or_dash(self.summary(c, "resident_after"), |x| pct(x.median))
    }

    /// The files' resident share at the start of the runs of the first
    /// two contenders: one value or the range.
    #[must_use]
    pub fn resident_at_start(&self) -> String {
        let v: Vec<f64> = [0, 1].iter().flat_map(|&i| self.values(i, "resident_before")).collect();
        let range = |x: Summary| match x.max - x.min < 5e-4 {
            true => pct(x.min),
            false => format!("{}–{}", pct(x.min), pct(x.max)),
        };
        or_dash(Summary::of(&v), range)
    }

    /// Every distinct value of `metric` ([`CellRuns::distinct`]), `a / b`.
    #[must_use]
    pub fn distinct_text(&self, metric: &str) -> String {
        self.distinct(metric).iter().map(u64::to_string).collect::<Vec<_>>().join(" / ")
    }
}

/// `f(0) / f(1)`: the first two contenders in one table cell.
pub fn both(f: impl Fn(usize) -> String) -> String {
    format!("{} / {}", f(0), f(1))
}

/// Where a bench's cells put their traces: the bench's traces and a scratch directory.
pub struct Tracing {
    /// The bench's traces.
    pub traces: std::cell::RefCell<Traces>,
    /// Scratch space for the recorder.
    pub scratch: PathBuf,
}

impl Tracing {
    /// No traces yet, the scratch directory in `target/bench`.
    #[must_use]
    pub fn new(ws: &Workspace) -> Self {
        Self { traces: std::cell::RefCell::default(), scratch: ws.bench_dir().join("scratch") }
    }
}

/// Runs `cell`: its warm-up rounds, then its timed rounds, each run after
/// the cache reset and (timed ones) traced.
///
/// # Errors
/// When a reset, a command or a parser fails.
pub fn run(
    ws: &Workspace,
    progress: &Progress,
    cell: &Cell,
    tracing: &Tracing,
) -> Result<CellRuns> {
    let k = cell.contenders.len();
    let files = |i: usize| {
        let own = &cell.contenders[i].files;
        if own.is_empty() { &cell.files } else { own }
    };
    let before = |name: &str, n: usize, i: usize, round: usize| -> Result<Option<Prepared>> {
        let who = &cell.contenders[i].name;
        progress.set(format!("{}: {name} {round}/{n}, {who}", cell.label));
        let fresh = &cell.contenders[i].fresh;
        fresh.iter().for_each(|f| _ = std::fs::remove_file(ws.root.join(f)));
        let files = files(i);
        if files.is_empty() {
            return Ok(None);
        }
        let first = schedule::order(k, round)[0] == i;
        let prep = if cell.cache != CacheState::Cold && cell.shared_warm_reset && !first {
            let (resident, pages) = schedule::resident(files)?;
            Prepared { state: cell.cache, prep_s: 0.0, resident, pages }
        } else {
            let mut p = schedule::prepare(files, cell.cache)?;
            if let Some(cmd) = &cell.after_reset {
                let start = Instant::now();
                cmd.run(&ws.root)?;
                (p.resident, p.pages) = schedule::resident(files)?;
                p.prep_s += start.elapsed().as_secs_f64();
            }
            p
        };
        if cell.cache == CacheState::Cold
            && let Some(wait) = cell.cold_settle
        {
            std::thread::sleep(wait);
        }
        if cell.cache == CacheState::Warm && cell.untimed_warm_first {
            measure(&cell.contenders[i], &ws.root, &[], None)?;
        }
        let off = match cell.cache {
            CacheState::Cold => prep.resident > 0.01,
            CacheState::Warm => prep.resident < 0.99,
            CacheState::HotSet => false,
        };
        if off {
            progress.note(&format!(
                "xtask: warning: {} {name} {round} ({who}) starts with {} of the files resident",
                cell.label,
                pct(prep.resident)
            ));
        }
        Ok(Some(prep))
    };
    let phase = |name: &str, n: usize| {
        schedule::rotate(
            k,
            n,
            |i, round| before(name, n, i, round),
            |i, round, prep| {
                let c = &cell.contenders[i];
                let go = || measure(c, &ws.root, files(i), prep);
                let traced = if cell.traced.is_empty() { files(i) } else { &cell.traced };
                let r = if name == "run" && !traced.is_empty() && matches!(c.job, Job::Cmd(..)) {
                    let mut traces = tracing.traces.borrow_mut();
                    traces.record_files(&tracing.scratch, traced, &cell.label, &c.name, round, go)
                } else {
                    go()
                };
                progress.inc();
                r
            },
        )
    };
    let warmup = phase("warm-up", cell.warmup)?;
    let rounds = phase("run", cell.runs)?;
    Ok(CellRuns {
        label: cell.label.clone(),
        cache: cell.cache,
        contenders: cell.contenders.iter().map(|c| (c.name.clone(), c.job.shell())).collect(),
        warmup,
        rounds,
    })
}

/// Runs `c` once and reads its metrics and the files' residency after.
fn measure(c: &Contender, cwd: &Path, files: &[PathBuf], prep: Option<Prepared>) -> Result<Run> {
    let first = |s: &str| s.chars().take(4096).collect();
    let (metrics, wall_s, max_rss_kib, stdout, stderr) = match &c.job {
        Job::Cmd(cmd, parse) => {
            let out = cmd.run(cwd)?;
            let m = parse(&out).map_err(|e| anyhow::anyhow!("`{}`: {e}", cmd.shell()))?;
            (m, out.wall_s, out.max_rss_kib, first(&out.stdout), first(&out.stderr))
        }
        Job::InProcess(_, work) => {
            let start = Instant::now();
            let mut m = work()?;
            let wall_s = m.remove("wall_s").unwrap_or_else(|| start.elapsed().as_secs_f64());
            (m, wall_s, None, String::new(), String::new())
        }
    };
    let after = if files.is_empty() { None } else { Some(schedule::resident(files)?) };
    let (resident_after, pages_after) = (after.map(|a| a.0), after.map(|a| a.1));
    Ok(Run { metrics, wall_s, max_rss_kib, prep, resident_after, pages_after, stdout, stderr })
}
