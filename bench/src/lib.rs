//! `cargo xtask bench …`: benchmarks that write a report.
//!
//! Each bench is a sibling module (`bolt_scan`; later `rrd`, `revlog`,
//! `mmaptest`) built from the shared pieces here: [`alternate`] (A/B runs
//! with a cache reset before each), [`pagecache`] (evict, warm, residency,
//! O_DIRECT), [`stats`], [`machine`] (the report header), [`proc`] (child
//! processes and their exact command lines), [`output`] (atomic report
//! files, markdown tables), [`traces`] (residency traces of timed runs),
//! [`charts`] (SVG ratio and residency charts), [`interrupt`] (Ctrl-C),
//! [`tui`] (the live view under tmux, peak RSS and CPU from /proc),
//! [`etcd`] (a real etcd to compare with) and [`units`]. [`check`] is the
//! harness's own test: it checks a report directory after the fact.

pub mod all;
pub mod bolt;
pub mod bolt_scan;
pub mod cell;
pub mod charts;
pub mod check;
pub mod etcd;
pub mod interrupt;
pub mod limits;
pub mod live;
pub mod machine;
pub mod mmaptest;
pub mod output;
pub mod pagecache;
pub mod proc;
pub mod report;
pub mod revlog;
pub mod rrd;
pub mod schedule;
pub mod stats;
pub mod traces;
pub mod tui;
pub mod units;
pub mod writer;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mapwise_testkit::install::{self, Need};

/// Long help of `cargo xtask bench`.
pub const HELP: &str = "\
Every bench prints a markdown report on stdout and writes it to
target/bench/<UTC timestamp>/REPORT.md (--out DIR overrides the directory),
with results.json beside it holding every raw sample, the machine
description and the exact commands. The header describes the machine: CPU,
cores, memory, kernel, file system and read_ahead_kb of the device under
the bench file, THP setting, tool versions. Nothing is written before the
end (temporary names renamed into place), so Ctrl-C leaves no half-written
report; it also removes temporary files. Progress goes to stderr.

Benches run from the workspace root, build what they measure in release
mode first, take the peers from peers/ in the workspace (installing what
they need as the tests do, through mapwise-testkit), and compare ours with
the reference implementation alternately
in the same loop (A B, B A, A B, …: the order turns every pair, so what a
run leaves behind lands on both sides), so drift on a shared machine hits
both sides.
Ratios are ours/reference computed pair by pair: median [min–max].
Nothing here asserts a time: a verdict is a line in the report.

bolt: our bbolt engine beside Go bbolt 1.3.6: the bbolt peer's
  seeded `bench` workload (1M batched puts, seq and rnd, then seq and rnd
  gets; --quick 100k) and full scans of a 2 GiB Go-made file (--quick
  256 MiB) cold/warm, with and without MAP_POPULATE, plus our prefetching
  cursor (--prefetch) against Go's plain cold scan, and the residency a
  prefetching range scan leaves. Peak RSS per process (wait4). Verdicts:
  puts >= 1.0x bbolt ops/s, random gets >= 1.5x, warm scan <= 0.7x bbolt's
  time, prefetching cold scan <= 0.5x bbolt's plain cold scan. Beside the
  scans, the seed's published figures and the scan file's physical limits.

  cargo xtask bench bolt [--quick | --tiny] [--count N] [--size SIZE]
                         [--prefetch BYTES] [--runs 5] [--warmup 1]
                         [--no-puts] [--no-scans] [--out DIR]

bolt-scan: the MAP_POPULATE experiment boltdb/bolt's maintainers reported, ours vs Go
  bbolt 1.3.6 (the bbolt peer, peers/bolt). A bbolt file made by
  Go bbolt (`peers/bolt/peer gen FILE --shape big --seed 1 --size 256MiB`, cached
  in target/bench/files/ by size and seed, made again only when missing),
  bucket `fake-bucket`, read-only cursor scan over every key. Four cells:
    cold  before every single run xtask itself fsyncs the file and calls
          posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) over the whole file
          (checked with mincore: the resident fraction is reported)
    warm  before every pair xtask evicts the file, then reads it whole
          once (read(2), 1 MiB buffer): both runs of a pair scan the same
          page cache, folio sizes and host backing included
  each with and without MAP_POPULATE. Commands timed:
    ours  target/release/mapwise bolt traverse FILE [--populate] --json
    Go    peers/bolt/peer traverse FILE [--populate]
  Headline: `took` = open + scan as each tool times it (Go prints ms);
  the open/scan split and process wall times are shown too, and the key
  counts of both must agree (exit status 1 otherwise). Beside the table,
  the physical limits: a cold sequential O_DIRECT read of the file (1 MiB
  aligned buffer) and a cached read() of it (1 MiB buffer), in seconds and
  MB/s (10^6 B/s); and `target/release/inspector residency FILE --json` on
  a 64 GiB sparse file (truncate -s 64G in target/bench/, deleted after;
  target < 0.5 s; reported as missing while the inspector does not build
  or has no such subcommand). One verdict line per cell against the target
  \"ours ≤ 1.0× Go bbolt\" (median of the per-pair ratios).

  Each cell starts with --warmup untimed pairs (default 1): the first run
  after a change of cell pays for the previous cell's leftovers, and ours,
  first in the first pair, would pay it alone.

  cargo xtask bench bolt-scan [--size 256MiB | --tiny] [--seed 1] [--runs 5]
                              [--warmup 1] [--cold | --warm | --both]
                              [--out DIR]
  --size 2GiB is the full run (generating takes ~15 s, a cold plain-mmap
  scan ~30 s per run); --runs 3 on 256MiB takes a few minutes.

mmaptest: the read()-vs-mmap microbenchmark of the 2003 PostgreSQL-list
  \"mmap-test\", ours (`mapwise mmaptest`) vs the C reconstruction in
  peers/mmaptest (built with cc into target/bench/mmaptest-c/),
  stdout to /dev/null as in the original. Modes read() 64 KiB, read() whole
  file, mmap+munmap per iteration (plain and MAP_POPULATE), mmap once; each
  untouched (faithful) and touching every byte (fair). Cells: warm (a
  72 KiB file, 20000 iterations, or the seed's 100000 with --full) and cold
  (a list of 16 MiB files, evicted by xtask before every run, one pass).
  Headline: each program's own loop time; the limits are memcpy (in cache
  and large) and a cached and an O_DIRECT read of the cold list. Every
  timed run traces each file it reads (traces/); charts: ours/C per cell
  and the cold list's residency, read() vs mmap; the seed's quoted
  (unverified) 2003 totals beside this run's ratios. One verdict per cell
  against \"ours ≤ 1.2× C\", and a data check (bytes = sizes × iterations,
  checksums equal in every mode); exit status 1 when the data check fails.

  cargo xtask bench mmaptest [--quick | --full | --tiny] [--runs 5]
                             [--warmup 1] [--warm | --cold] [--out DIR]

revlog: `log -l 5` over a Mercurial changelog whose index is read
  whole or mapped, ours (`mapwise revlog log -l 5 REPO --config …`) vs
  `hg log -l 5 -T '{rev}\\n'` (HGRCPATH= HGPLAIN=1, the same --config:
  storage.revlog.mmap.index=no for read, experimental.mmapindexthreshold=0
  for mmap, or 6.9's keys with hg >= 6.9), warm and cold (xtask reads or
  evicts the changelog files before every run; index residency after each
  run is reported), on 1k and 100k revisions made by the revlog peer's
  gen-repo and 1M revisions synthesised by xtask in the v1 format (checked
  with hg debugindex/debugdata/log/verify), all cached in
  target/bench/files/. Process wall times; hg's are mostly Python start-up
  (a start-up floor is measured and subtracted). Verdicts: ours mmap at 1M
  <= 1.2x ours at 1k (alternated pair by pair, warm and cold), and the
  read-vs-mmap crossover of ours across synthetic index sizes (16 KiB to
  61 MiB; also modelled in xtask at µs resolution, which decides where
  ours' process times tie), printed as the recommended
  `--config experimental.mmapindexthreshold=` beside hg 6.9's 1 MB. Every
  timed process run traces 00changelog.i (traces/); charts: ours/hg per
  cell and the index's residency over each cold run, read vs mmap; the
  seed's published figures (D477's `hg log -l 5` table, the 2018 1 MB
  proposal's perfindex on a 60 MB index) beside ours and hg's; the
  physical limits of the largest index. Exit status 1 when an output or
  check is wrong. --tiny: hg's 1k and a 5000-revision synthetic
  changelog only (CI smoke run).

  cargo xtask bench revlog [--quick | --full | --tiny] [--runs 5]
                           [--warmup 1] [--sweep-runs N] [--out DIR]

rrd: the seed experiment re-run: the seed's `create` (ours vs
  rrdtool, dumps compared), then N separate `updatev` processes (3 samples
  each, `peers/rrd/peer bench-updatev`'s stream) into a fresh copy of a 1.7 MB
  2-DS file (`peers/rrd/peer gen --shape big --seed 1`, cached in
  target/bench/files/), rrdtool 1.7.2 and `mapwise rrd updatev --io M` for
  M = mmap, mmap-2pages, fd, direct, rotated round by round; warm, and cold
  (xtask fsyncs and posix_fadvise(DONTNEED)s the file before every call and
  counts the pages each call pulled in). Then the same N×3 updates in one
  process: ours (hidden `mapwise rrd bench-inproc`) vs librrd
  (`peers/rrd/peer bench-inproc`), warm and cold. Every final file must be
  byte-identical to rrdtool's and every updatev output equal. Verdicts:
  process level ≤ 0.5× rrdtool's total; in-process ≥ 1.5× librrd's
  updates/s warm and ≤ 1.0× its time cold by one mode (which ones do, and
  each mode's own verdicts); whether the mode table shows
  the seed's finding (direct far slower, mmap and fd close), and why not.
  Every timed loop's residency is traced (traces/, `inspector replay`);
  charts: ours/rrdtool and ours/librrd ratios per cell and mode, and the
  file's resident pages over the cold loops; the 2007 figures published
  for the seed's work beside ours; the physical limits of the file.

  cargo xtask bench rrd [--quick | --full | --tiny] [--calls N] [--runs 5]
                        [--inproc-runs N] [--warmup 1] [--out DIR]
  --quick (default): 200 calls per loop, a few minutes; --full: 1000;
  --tiny: shape gauge (9 KB), 5 calls per loop, 1 in-process round.

live: the quiet readers on a bbolt file an etcd-shaped writer commits to
  (every 20, 50, 100 and 200 ms), on Go-made files of 256 MiB and 2 GiB
  (--quick 256 MiB): settle time p50/p95, exit-2 runs and peak RSS of
  `inspector check|layout --json|pages` and `mapwise bolt check`, fully
  and ~90 % cached; the live view `inspector open` under tmux: time to the
  first settled structure, the age it shows (staleness), peak RSS and CPU;
  beside `etcdctl snapshot save` from a real etcd of the same size and an
  offline check of the copy, side by side. Verdicts: p95 <= 2 s and no
  exit 2 at 2 GiB ~90 % cached; p95 <= 0.25x the alternative's time.

  cargo xtask bench live [--quick | --tiny] [--runs 5] [--view-seconds 20]
                         [--seed 1] [--out DIR]

check: the harness's own test of a report directory (one bench's, or `all`'s
  with every sub-directory): well-formed tables, ours' and the peer's
  columns filled, results.json parses, the charts and traces it names are
  there; one line per problem, exit status 1 when there is any. CI runs
  `bench all --tiny --runs 1` and then this.

  cargo xtask bench check DIR";

/// `cargo xtask bench` arguments.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    bench: BenchCommand,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Our bbolt engine vs Go bbolt — batched puts, gets,
    /// cold/warm scans with and without MAP_POPULATE, the prefetching
    /// cursor, peak RSS.
    #[command(after_long_help = bolt::HELP)]
    Bolt(bolt::Args),
    /// MAP_POPULATE experiment (bbolt#455): cursor scan of a bbolt file,
    /// ours vs Go bbolt, cold/warm × with/without MAP_POPULATE.
    #[command(after_long_help = bolt_scan::HELP)]
    BoltScan(bolt_scan::Args),
    /// read()-vs-mmap microbenchmark (the 2003 "mmap-test"), ours vs the C
    /// reconstruction, warm and cold, untouched and touching.
    #[command(after_long_help = mmaptest::HELP)]
    Mmaptest(mmaptest::Args),
    /// `log -l 5` over a changelog index read vs mapped, ours vs
    /// hg, warm and cold, 1k/100k/1M revisions, and the mmap threshold.
    #[command(after_long_help = revlog::HELP)]
    Revlog(revlog::Args),
    /// The seed experiment: N separate `updatev` processes into
    /// a 1.7 MB RRD, ours in each I/O mode vs rrdtool, warm and cold, and
    /// in-process update throughput vs librrd.
    #[command(after_long_help = rrd::HELP)]
    Rrd(rrd::Args),
    /// The quiet readers under an etcd-shaped writer: settle time of the
    /// one-shot readers, staleness, RSS and CPU of the live view, beside
    /// `etcdctl snapshot save` and an offline check.
    #[command(after_long_help = live::HELP)]
    Live(live::Args),
    /// Every bench above, one after the other, and an index report of
    /// their verdicts.
    #[command(after_long_help = all::HELP)]
    All(all::Args),
    /// Checks a report directory: well-formed tables, ours' and the
    /// peer's columns filled, results.json parses, linked charts and
    /// traces present (the harness's own test; exit 1 on a problem).
    #[command(after_long_help = check::HELP)]
    Check(check::Args),
}

/// Options every bench takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Runs per tool in each cell (A B, B A, …: this many pairs).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub runs: u64,
    /// Tiny inputs for a smoke run of the harness (CI): each bench picks
    /// the smallest sizes and counts that still exercise every cell, table,
    /// chart and trace. Times measured this way mean nothing. A cap: it
    /// wins over --quick and is refused beside --full or an explicit size
    /// or count (--size, --count, --calls, --iterations, …).
    #[arg(long)]
    pub tiny: bool,
    /// Directory for REPORT.md and results.json (default:
    /// `target/bench/<UTC timestamp>`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Where things are: every bench runs with the workspace root as its
/// working directory and names files relative to it.
#[derive(Debug)]
pub struct Workspace {
    /// Absolute workspace root.
    pub root: PathBuf,
    /// Cargo's target directory, relative to the root unless
    /// CARGO_TARGET_DIR says otherwise.
    pub target: PathBuf,
}

impl Workspace {
    /// This workspace: its root (the parent of this crate's directory) and
    /// its target directory, `target` or `$CARGO_TARGET_DIR` (relative to
    /// the root unless absolute: whoever runs benches enters the root
    /// first, so no report names this machine's directories).
    ///
    /// # Errors
    /// When xtask's manifest has no parent directory.
    pub fn here() -> Result<Workspace> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .context("the bench crate has no parent directory")?
            .to_path_buf();
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| PathBuf::from("target"), PathBuf::from);
        Ok(Workspace { root, target })
    }

    /// `target/release/<name>`.
    pub fn release_bin(&self, name: &str) -> PathBuf {
        self.target.join("release").join(name)
    }

    /// Where a bench started at `started` writes its report: `--out`, else
    /// `target/bench/<UTC timestamp>`.
    pub fn report_dir(&self, common: &CommonArgs, started: std::time::SystemTime) -> PathBuf {
        common
            .out
            .clone()
            .unwrap_or_else(|| self.bench_dir().join(units::utc_stamp(started)))
    }

    /// `p` relative to the root when under it ([`rel_to`]).
    pub fn rel(&self, p: &Path) -> String {
        rel_to(&self.root, p)
    }

    /// `target/bench`.
    pub fn bench_dir(&self) -> PathBuf {
        self.target.join("bench")
    }

    /// The peer `name` (`bolt`, `rrd`, `revlog`) as a command run from the
    /// root, `peers/<name>/peer`, with what it needs installed first
    /// (`mapwise_testkit::install`, as the tests install it).
    ///
    /// # Errors
    /// When there is no such peer, or what it needs cannot be installed.
    pub fn peer(&self, name: &str) -> Result<String> {
        let needs: &[Need] = match name {
            "bolt" => &[Need::GoBbolt],
            "rrd" => &[Need::Rrdtool, Need::Python],
            "revlog" => &[Need::Mercurial, Need::Python],
            _ => &[],
        };
        install::try_ensure(needs).map_err(anyhow::Error::msg)?;
        self.peer_file(&format!("{name}/peer"))
    }

    /// `peers/<tail>`, named relative to the root (benches run from it).
    ///
    /// # Errors
    /// When there is no such file.
    pub fn peer_file(&self, tail: &str) -> Result<String> {
        let rel = Path::new("peers").join(tail);
        anyhow::ensure!(
            self.root.join(&rel).is_file(),
            "no {} in {}",
            rel.display(),
            self.root.display()
        );
        Ok(path_arg(&rel))
    }
}

/// Relative paths as strings for command lines (benches keep their paths
/// in target/ and peers/, which are UTF-8 in any sane checkout).
pub fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `p` as a report prints it: relative to the workspace root `root` (an
/// absolute path) when it lies under it, since every command in a report
/// runs from the root, so no report names this machine's directories.
pub fn rel_to(root: &Path, p: &Path) -> String {
    path_arg(p.strip_prefix(root).unwrap_or(p))
}

/// Runs `cargo xtask bench …`.
pub fn run(args: BenchArgs) -> Result<ExitCode> {
    interrupt::install();
    // Resolve --out against the caller's directory before moving to the root.
    let fix_out = |c: &mut CommonArgs| -> Result<()> {
        if let Some(o) = &c.out {
            c.out =
                Some(std::path::absolute(o).with_context(|| format!("bad --out {}", o.display()))?);
        }
        Ok(())
    };
    let ws = Workspace::here()?;
    // What every bench runs besides its peer (which `Workspace::peer`
    // installs): GNU time for peak RSS, tmux for the live view; etcd for
    // `live`'s alternative (`etcd::ensure_installed`).
    if !matches!(args.bench, BenchCommand::Check(_)) {
        install::try_ensure(&[Need::GnuTime, Need::Tmux]).map_err(anyhow::Error::msg)?;
    }
    match args.bench {
        BenchCommand::Bolt(mut a) => {
            fix_out(&mut a.common)?;
            std::env::set_current_dir(&ws.root)
                .with_context(|| format!("cannot enter {}", ws.root.display()))?;
            bolt::run(&ws, &a)
        }
        BenchCommand::BoltScan(mut a) => {
            fix_out(&mut a.common)?;
            std::env::set_current_dir(&ws.root)
                .with_context(|| format!("cannot enter {}", ws.root.display()))?;
            bolt_scan::run(&ws, &a)
        }
        BenchCommand::Mmaptest(mut a) => {
            fix_out(&mut a.common)?;
            std::env::set_current_dir(&ws.root)
                .with_context(|| format!("cannot enter {}", ws.root.display()))?;
            mmaptest::run(&ws, &a)
        }
        BenchCommand::Revlog(mut a) => {
            fix_out(&mut a.common)?;
            std::env::set_current_dir(&ws.root)
                .with_context(|| format!("cannot enter {}", ws.root.display()))?;
            revlog::run(&ws, &a)
        }
        BenchCommand::Rrd(mut a) => {
            fix_out(&mut a.common)?;
            std::env::set_current_dir(&ws.root)
                .with_context(|| format!("cannot enter {}", ws.root.display()))?;
            rrd::run(&ws, &a)
        }
        BenchCommand::Live(mut a) => {
            fix_out(&mut a.common)?;
            std::env::set_current_dir(&ws.root)
                .with_context(|| format!("cannot enter {}", ws.root.display()))?;
            live::run(&ws, &a)
        }
        BenchCommand::All(mut a) => {
            a.fix_out()?;
            std::env::set_current_dir(&ws.root)
                .with_context(|| format!("cannot enter {}", ws.root.display()))?;
            all::run(&ws, &a)
        }
        BenchCommand::Check(a) => check::run(&a),
    }
}

/// A progress bar on stderr (drawn only on a terminal), cleared on drop.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `len` steps.
    pub fn new(len: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(250));
        Self { bar }
    }

    /// Says what is running now.
    pub fn set(&self, msg: impl Into<Cow<'static, str>>) {
        self.bar.set_message(msg);
    }

    /// One step done.
    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// A line on stderr above the bar (also when no bar is drawn).
    pub fn note(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::BenchArgs;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: BenchArgs,
    }

    fn parses(v: &[&str]) -> bool {
        Cli::try_parse_from(std::iter::once("bench").chain(v.iter().copied())).is_ok()
    }

    #[test]
    fn tiny_is_a_cap() {
        assert!(parses(&["bolt-scan", "--tiny"]));
        assert!(parses(&["rrd", "--tiny", "--quick"]));
        for refused in [
            &["bolt-scan", "--tiny", "--size", "2GiB"][..],
            &["bolt", "--tiny", "--count", "1000000"],
            &["bolt", "--tiny", "--size", "2GiB"],
            &["rrd", "--tiny", "--calls", "1000"],
            &["rrd", "--tiny", "--full"],
            &["revlog", "--tiny", "--full"],
            &["mmaptest", "--tiny", "--iterations", "100000"],
            &["all", "--tiny", "--full"],
            &["live", "--tiny", "--quick", "--view-seconds"],
        ] {
            assert!(!parses(refused), "{refused:?} was accepted");
        }
    }
}
