//! A bench cell as data: a cache state, the files it resets and traces,
//! and its contenders (a command and a parser of its output each). One
//! runner takes any cell through [`schedule::rotate`]: warm-up rounds,
//! then timed rounds, the cache reset before every run, every timed run
//! traced, and per-contender metrics and round-by-round ratios after.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::proc::{Cmd, Output};
use crate::schedule::{self, CacheState, Prepared, Round};
use crate::stats::{Summary, pair_ratios};
use crate::traces::Traces;
use crate::units::pct;
use crate::{Progress, Workspace};

/// What one run measured, by metric name (`took_s`, `keys`, …).
pub type Metrics = BTreeMap<String, f64>;

/// Reads a contender's output into its metrics; `Err` says what is
/// missing.
pub type Parser = fn(&Output) -> Result<Metrics, String>;

/// One side of a cell.
#[derive(Clone, Debug)]
pub struct Contender {
    /// Its name in the report (`ours`, `Go`).
    pub name: String,
    /// What runs, from the workspace root.
    pub cmd: Cmd,
    /// How its output is read.
    pub parse: Parser,
}

impl Contender {
    /// A contender named `name`.
    #[must_use]
    pub fn new(name: &str, cmd: Cmd, parse: Parser) -> Self {
        Self { name: name.to_owned(), cmd, parse }
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
    /// Files removed before each run (what the runs write).
    pub fresh: Vec<PathBuf>,
    /// The contenders, in the order of the first round.
    pub contenders: Vec<Contender>,
    /// Untimed rounds first, not in the statistics.
    pub warmup: usize,
    /// Timed rounds.
    pub runs: usize,
    /// A warm round shares one reset (the later runs re-check only), so
    /// each round compares the contenders on the same memory.
    pub shared_warm_reset: bool,
    /// Every warm run follows an untimed run of the same command, so it
    /// is a repeated run against a cache that command just used.
    pub untimed_warm_first: bool,
    /// Wait after a cold reset (a VM that hands freed pages back).
    pub cold_settle: Option<Duration>,
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
    /// Fraction of the files resident right after it (mincore, the mean
    /// over the files).
    pub resident_after: Option<f64>,
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
    pub fn values(&self, c: usize, metric: &str) -> Vec<f64> {
        self.rounds.iter().filter_map(|r| r.results.get(c)?.get(metric)).collect()
    }

    /// Median and range of contender `c`'s `metric`.
    #[must_use]
    pub fn summary(&self, c: usize, metric: &str) -> Option<Summary> {
        Summary::of(&self.values(c, metric))
    }

    /// `a`/`b` of `metric`, round by round, and how many rounds had no
    /// ratio (`b` was 0).
    #[must_use]
    pub fn ratio(&self, a: usize, b: usize, metric: &str) -> (Option<Summary>, usize) {
        let pairs: Vec<(f64, f64)> = self
            .rounds
            .iter()
            .filter_map(|r| Some((r.results.get(a)?.get(metric)?, r.results.get(b)?.get(metric)?)))
            .collect();
        let (ratios, skipped) = pair_ratios(&pairs);
        (Summary::of(&ratios), skipped)
    }

    /// Every distinct value of `metric` over all runs, warm-up included
    /// (a count both tools must agree on).
    #[must_use]
    pub fn distinct(&self, metric: &str) -> Vec<u64> {
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let mut v: Vec<u64> = self
            .warmup
            .iter()
            .chain(&self.rounds)
            .flat_map(|r| &r.results)
            .filter_map(|run| run.get(metric))
            .map(|x| x as u64)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Where a cell's traces go: the bench's traces and a scratch directory.
pub struct Tracing<'a> {
    /// The bench's traces.
    pub traces: &'a std::cell::RefCell<Traces>,
    /// Scratch space for the recorder.
    pub scratch: &'a Path,
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
    tracing: &Tracing<'_>,
) -> Result<CellRuns> {
    let k = cell.contenders.len();
    let before = |name: &str, n: usize, i: usize, round: usize| -> Result<Option<Prepared>> {
        let who = &cell.contenders[i].name;
        progress.set(format!("{}: {name} {round}/{n}, {who}", cell.label));
        for f in &cell.fresh {
            let _ = std::fs::remove_file(ws.root.join(f));
        }
        if cell.files.is_empty() {
            return Ok(None);
        }
        let first = schedule::order(k, round)[0] == i;
        let prep = if cell.cache == CacheState::Warm && cell.shared_warm_reset && !first {
            schedule::recheck(&cell.files, cell.cache)?
        } else {
            schedule::prepare(&cell.files, cell.cache)?
        };
        if cell.cache == CacheState::Cold
            && let Some(wait) = cell.cold_settle
        {
            std::thread::sleep(wait);
        }
        if cell.cache == CacheState::Warm && cell.untimed_warm_first {
            cell.contenders[i].cmd.run(&ws.root)?;
        }
        let off = match cell.cache {
            CacheState::Cold => prep.resident > 0.01,
            CacheState::Warm => prep.resident < 0.99,
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
                let go = || measure(c, &ws.root, &cell.files, prep);
                let r = if name == "run" && !cell.files.is_empty() {
                    let mut traces = tracing.traces.borrow_mut();
                    traces.record_files(
                        tracing.scratch,
                        &cell.files,
                        &cell.label,
                        &c.name,
                        round,
                        go,
                    )
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
    for f in &cell.fresh {
        let _ = std::fs::remove_file(ws.root.join(f));
    }
    Ok(CellRuns {
        label: cell.label.clone(),
        cache: cell.cache,
        contenders: cell.contenders.iter().map(|c| (c.name.clone(), c.cmd.shell())).collect(),
        warmup,
        rounds,
    })
}

/// Runs `c` once and reads its output and the files' residency after.
fn measure(c: &Contender, cwd: &Path, files: &[PathBuf], prep: Option<Prepared>) -> Result<Run> {
    let out = c.cmd.run(cwd)?;
    let metrics = (c.parse)(&out).map_err(|e| anyhow::anyhow!("`{}`: {e}", c.cmd.shell()))?;
    Ok(Run {
        metrics,
        wall_s: out.wall_s,
        max_rss_kib: out.max_rss_kib,
        prep,
        resident_after: if files.is_empty() { None } else { Some(schedule::resident(files)?) },
        stdout: out.stdout.chars().take(4096).collect(),
        stderr: out.stderr.chars().take(4096).collect(),
    })
}
