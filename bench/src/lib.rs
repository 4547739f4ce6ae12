//! `cargo xtask bench …`: benchmarks that write a report. Each bench
//! declares its cells ([`cell`]) and builds its [`report`] model; the rest
//! is the harness around them, [`check`] validates a report directory and
//! [`all`] runs every bench.

pub mod all;
pub mod bolt;
pub mod bolt_scan;
pub mod boltfile;
pub mod cell;
pub mod charts;
pub mod check;
pub mod etcd;
pub mod etcd_space;
pub mod fleet;
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
pub mod strace;
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
pub const HELP: &str = include_str!("text/bench-help.txt");

/// `cargo xtask bench` arguments.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    bench: BenchCommand,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Our bbolt engine vs Go bbolt: puts, gets, scans, the prefetching cursor, peak RSS.
    #[command(after_long_help = bolt::HELP)]
    Bolt(bolt::Args),
    /// MAP_POPULATE experiment: cursor scan of a bbolt file, ours vs Go bbolt.
    #[command(after_long_help = bolt_scan::HELP)]
    BoltScan(bolt_scan::Args),
    /// read()-vs-mmap microbenchmark (the 2003 "mmap-test"), ours vs the C reconstruction.
    #[command(after_long_help = mmaptest::HELP)]
    Mmaptest(mmaptest::Args),
    /// `log -l 5` over a changelog index read vs mapped, ours vs hg.
    #[command(after_long_help = revlog::HELP)]
    Revlog(revlog::Args),
    /// The seed experiment: `updatev` into a 1.7 MB RRD, ours in each I/O mode vs rrdtool.
    #[command(after_long_help = rrd::HELP)]
    Rrd(rrd::Args),
    /// The quiet readers under an etcd-shaped writer, beside `etcdctl snapshot save`.
    #[command(after_long_help = live::HELP)]
    Live(live::Args),
    /// `inspector etcd` on a running etcd's 2 GiB db, beside `etcdctl snapshot save` plus
    /// `bbolt compact`, and its forecasts against a real defrag.
    #[command(after_long_help = etcd_space::HELP)]
    Etcd(etcd_space::Args),
    /// A tree of collectd's RRD files and a bbolt file: residency -R vs vmtouch and fincore,
    /// warm --hot vs vmtouch -t, export's CPU.
    #[command(after_long_help = fleet::HELP)]
    Fleet(fleet::Args),
    /// Every bench above, one after the other, and an index report of their verdicts.
    #[command(after_long_help = all::HELP)]
    All(all::Args),
    /// Checks a report directory against its results.json (exit 1 on a problem).
    #[command(after_long_help = check::HELP)]
    Check(check::Args),
}

/// Options every bench takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Runs per tool in each cell (A B, B A, …: this many pairs).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub runs: u64,
    /// Tiny inputs for a smoke run of the harness (CI): the smallest sizes and counts that
    /// still exercise every cell, table, chart and trace (times mean nothing). Wins over
    /// --quick; refused beside --full or an explicit size or count.
    #[arg(long)]
    pub tiny: bool,
    /// Directory for REPORT.md and results.json (default: `target/bench/<UTC timestamp>`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl CommonArgs {
    /// `--runs` as a count.
    pub fn runs(&self) -> Result<usize> {
        usize::try_from(self.runs).context("--runs too large")
    }
}

/// Where things are: every bench runs from the workspace root and names files relative to it.
#[derive(Debug)]
pub struct Workspace {
    /// Absolute workspace root.
    pub root: PathBuf,
    /// Cargo's target directory, relative to the root unless `$CARGO_TARGET_DIR` is absolute.
    pub target: PathBuf,
}

impl Workspace {
    /// This workspace: the parent of this crate's directory, and `target`
    /// or `$CARGO_TARGET_DIR` (so no report names this machine's directories).
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

    /// Builds ours (`mapwise`, release), one progress step: the build command and the binary.
    pub fn build_mapwise(&self, progress: &Progress) -> Result<(proc::Cmd, String)> {
        let build = proc::Cmd::cargo_release("mapwise-cli", Some("mapwise"));
        progress.set("building mapwise (release)");
        build.run(&self.root).context("cannot build ours")?;
        let bin = self.release_bin("mapwise");
        anyhow::ensure!(bin.is_file(), "{} missing after the build", bin.display());
        progress.inc();
        Ok((build, path_arg(&bin)))
    }

    /// Where a bench started at `started` writes its report: `--out`, else
    /// `target/bench/<UTC timestamp>`.
    pub fn report_dir(&self, common: &CommonArgs, started: std::time::SystemTime) -> PathBuf {
        common.out.clone().unwrap_or_else(|| self.bench_dir().join(units::utc_stamp(started)))
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
    /// root, `peers/<name>/peer`, with what it needs installed first.
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
    pub fn peer_file(&self, tail: &str) -> Result<String> {
        let rel = Path::new("peers").join(tail);
        let (file, root) = (rel.display(), self.root.display());
        anyhow::ensure!(self.root.join(&rel).is_file(), "no {file} in {root}");
        Ok(path_arg(&rel))
    }
}

/// A path as a command-line string (benches' paths in target/ and peers/ are
/// UTF-8 in any sane checkout).
pub fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `p` as a report prints it: relative to the absolute workspace root `root`
/// when under it, as every command in a report runs from the root.
pub fn rel_to(root: &Path, p: &Path) -> String {
    path_arg(p.strip_prefix(root).unwrap_or(p))
}

/// Runs `cargo xtask bench …`.
pub fn run(args: BenchArgs) -> Result<ExitCode> {
    use BenchCommand as B;
    interrupt::install();
    let ws = Workspace::here()?;
    // What every bench runs besides its peer (which `Workspace::peer`
    // installs): GNU time for peak RSS, tmux for the live view.
    if !matches!(args.bench, B::Check(_)) {
        install::try_ensure(&[Need::GnuTime, Need::Tmux]).map_err(anyhow::Error::msg)?;
    }
    // Resolve --out against the caller's directory, then move to the root.
    let enter = |out: &mut Option<PathBuf>| -> Result<()> {
        if let Some(o) = out {
            *o = std::path::absolute(&*o).with_context(|| format!("bad --out {}", o.display()))?;
        }
        std::env::set_current_dir(&ws.root)
            .with_context(|| format!("cannot enter {}", ws.root.display()))
    };
    match args.bench {
        B::Bolt(mut a) => enter(&mut a.common.out).and_then(|()| bolt::run(&ws, &a)),
        B::BoltScan(mut a) => enter(&mut a.common.out).and_then(|()| bolt_scan::run(&ws, &a)),
        B::Mmaptest(mut a) => enter(&mut a.common.out).and_then(|()| mmaptest::run(&ws, &a)),
        B::Revlog(mut a) => enter(&mut a.common.out).and_then(|()| revlog::run(&ws, &a)),
        B::Rrd(mut a) => enter(&mut a.common.out).and_then(|()| rrd::run(&ws, &a)),
        B::Live(mut a) => enter(&mut a.common.out).and_then(|()| live::run(&ws, &a)),
        B::Fleet(mut a) => enter(&mut a.common.out).and_then(|()| fleet::run(&ws, &a)),
        B::Etcd(mut a) => enter(&mut a.common.out).and_then(|()| etcd_space::run(&ws, &a)),
        B::All(mut a) => enter(&mut a.out).and_then(|()| all::run(&ws, &a)),
        B::Check(a) => check::run(&a),
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
        let template = "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}";
        let style =
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style.progress_chars("=> "));
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
        assert!(parses(&["bolt-scan", "--tiny"]) && parses(&["rrd", "--tiny", "--quick"]));
        for refused in [
            "bolt-scan --tiny --size 2GiB",
            "bolt --tiny --count 1000000",
            "bolt --tiny --size 2GiB",
            "rrd --tiny --calls 1000",
            "rrd --tiny --full",
            "revlog --tiny --full",
            "mmaptest --tiny --iterations 100000",
            "all --tiny --full",
            "live --tiny --quick --view-seconds",
            "fleet --tiny --full",
        ] {
            let words: Vec<&str> = refused.split(' ').collect();
            assert!(!parses(&words), "{refused:?} was accepted");
        }
    }
}
