//! `cargo xtask limits`: resource limits of the inspector on huge files
//! and under a busy writer. Memory must stay bounded by what is shown, not
//! by the file: the page map is aggregated into cells, and structure is
//! walked with a few bits per page, never a copy of the file; and the live
//! view must stay cheap while a writer commits.
//!
//! (Not to be confused with `bench/limits.rs`, the device and memory-copy
//! limits each benchmark prints beside its times.) The processes are
//! metered as the benches meter them (`bench::proc`, GNU time) and the
//! TUI driven as `bench live` drives it (`bench::tui`).

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use mapwise_core::bolt::Meta;
use mapwise_testkit::install::{self, Need};

use mapwise_bench::proc::{Cmd, GNU_TIME, shell_quote, tail};
use mapwise_bench::tui::{self, Tmux, WatchOptions};
use mapwise_bench::writer::Running;
use mapwise_bench::{Progress, Workspace, boltfile, pagecache};

/// Long help of `cargo xtask limits`.
pub const HELP: &str = "\
Builds the release `inspector` and `mapwise`, makes three sparse files of
--size GiB (default 64) in target/limits/ (they take almost no disk):

  zeros.bin     nothing but a hole (no format)
  bolt-long.db  Go bbolt's etcd-small.db (testdata/bolt), extended: 55
                pages of B+tree, then 64 GiB of pages past the high-water
                mark
  bolt-hwm.db   the same file with both meta pages claiming every page
                (hwm = size / 4096, checksums resealed): 16 Mi pages that
                the walk must label without a bucket reaching them

and runs, on each, `inspector residency|pages|layout|check --json`,
`mapwise bolt check|pages` (bbolt files), `inspector record --duration 1`,
and the TUI (`inspector open` under tmux: it waits for the first screen,
moves to the end of the map and zooms, then quits). It measures each
process's peak resident set size (ru_maxrss through GNU time's wait4:
xtask's own wait4 would include xtask's memory, which Linux counts in a
child's ru_maxrss when the child execs; for the TUI, VmHWM from /proc just
before it quits) and fails when one exceeds its bound:

  24 MiB  each command (measured: 5.5 to 14.4 MiB; `pages` on bolt-hwm.db
          is the most, reading every page's header through the 8 MiB
          chunk cache of the O_DIRECT reader, which had been 64 MiB)
  30 MiB  the TUI at 200 x 50 cells (measured: 13.1 to 14.9 MiB)

Then, unless --no-writer, the same readers on a busy file: Go bbolt's
`peers/bolt/peer gen FILE --shape big --seed 1 --size 2GiB` (--writer-size;
cached in target/bench/files/ as `bench live` caches it), copied to
target/limits/live.db and written by `cargo xtask writer` (etcd's shape:
a fdatasync'd commit per interval) every 100 ms and then every 20 ms. Under
each writer, the file read whole first: `inspector check|layout
--json|pages|residency` and `mapwise bolt check|pages|info` (peak RSS
through GNU time), then the live view (`inspector open`, its default
500 ms refresh, 200 x 50) for --view-seconds after its first settled
structure (its steady state; the first whole read is measured above): its
VmHWM and its CPU over that window (utime+stime from /proc/PID/stat, % of
one core). Bounds:

  128 MiB  each command under the writer (a walk that settles while the
           writer commits keeps the pages of the commits it follows)
   64 MiB  the live view under the writer
   10 %    of a core: the live view's CPU under the writer

Why these: one byte per page of a 64 GiB file is 16 MiB, so each bound sits
below the measured peak plus 16 MiB (a structure of a byte per page, let
alone a row or a region per page, fails it) and about twice the measured
peak (room for allocator and library changes). The walk's three bits per
page (6 MiB for 16 Mi pages) are allocated zeroed, so only the memory
pages holding bits it sets become resident; the residency bitmap is one bit per page (2 MiB). Before
`bbolt pages` rows were held as runs, `pages` on bolt-hwm.db peaked at
1.3 GiB (a row of about 80 bytes per free page). The bounds are for the
default --size 64.

Prints a table: file, command, exit status, peak RSS, wall time, output
bytes (and, under the writer, the bound and the live view's CPU). Output
goes to /dev/null but is counted. Times are printed, never judged. PASS or
FAIL at the end, exit status 1 on FAIL. Not part of `cargo test`: it
needs a release build, tmux, GNU time (Debian packages tmux and time)
and, for the writer part, the bbolt oracle.

  cargo xtask limits [--size 64] [--keep] [--no-writer]
                     [--writer-size 2GiB] [--view-seconds 20]";

/// Arguments of `cargo xtask limits`.
#[derive(Debug, Args)]
pub struct LimitsArgs {
    /// Size of the sparse files in GiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    size: u64,
    /// Keep the files in target/limits/ afterwards.
    #[arg(long)]
    keep: bool,
    /// Skip the measurements under a writer.
    #[arg(long)]
    no_writer: bool,
    /// Size of the bbolt file the writer commits to (oracle `gen --size`).
    #[arg(long, value_name = "SIZE", default_value = "2GiB", value_parser = mapwise_bench::units::parse_size)]
    writer_size: u64,
    /// Seconds the live view is watched under each writer.
    #[arg(long, value_name = "S", default_value_t = 20.0)]
    view_seconds: f64,
}

/// One measured process.
#[derive(Debug)]
struct Measured {
    file: String,
    what: String,
    status: String,
    /// Exit code as a number, when it exited (not signalled).
    code: Option<i32>,
    rss_kib: Option<u64>,
    wall: Duration,
    out_bytes: u64,
    err_tail: String,
    /// Peak RSS allowed, KiB.
    bound_kib: u64,
    /// CPU of the live view over its window, % of a core, and the bound.
    cpu: Option<(Option<f64>, f64)>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => root.join(d),
        _ => root.join("target"),
    }
}

/// Runs `program args` with stdout counted and discarded, and returns
/// what it did with its peak RSS, allowed `bound_kib`.
///
/// The peak comes from GNU time ([`Cmd::metered`]), not from our own
/// `wait4`: Linux counts in a process's `ru_maxrss` the RSS of the image
/// it replaced at `exec`, and std spawns children sharing xtask's memory
/// until the `exec`, so our own `wait4` never reports less than xtask's
/// peak (7 MiB here, above most of the values measured).
fn measure(
    file: &str,
    what: &str,
    (program, args): (&Path, &[&str]),
    bound_kib: u64,
) -> Result<Measured> {
    let start = Instant::now();
    let out = Cmd::new(program.to_string_lossy().into_owned())
        .args(args.iter().copied())
        .metered()
        .counting_stdout()
        .output(Path::new("."))?;
    Ok(Measured {
        file: file.into(),
        what: what.into(),
        status: out.status,
        code: out.code,
        rss_kib: out.max_rss_kib,
        wall: start.elapsed(),
        out_bytes: out.stdout_bytes,
        err_tail: tail(&out.stderr, 3),
        bound_kib,
        cpu: None,
    })
}

/// The TUI on `path` in a 200 x 50 tmux pane: wait (up to 5 minutes) for
/// the first screen, go to the end of the map, zoom in and out, read the
/// peak RSS, quit.
fn tui(file: &str, inspector: &Path, path: &Path) -> Result<Measured> {
    let start = Instant::now();
    let line = format!(
        "exec {} open {} --interval 200",
        shell_quote(&inspector.to_string_lossy()),
        shell_quote(&path.to_string_lossy())
    );
    let t = Tmux::start("limits", (200, 50), &line)?;
    let pid = t.pane_pid()?;
    let first = Duration::from_secs(300);
    t.wait_for("Resident ", first).with_context(|| format!("the TUI on {file}"))?;
    for keys in [&["End"][..], &["+"], &["+"], &["-"], &["Home"], &["Tab"]] {
        t.send_keys(keys)?;
        std::thread::sleep(Duration::from_millis(300));
    }
    let screen = t.wait_for("Resident ", first).with_context(|| format!("the TUI on {file}"))?;
    let rss_kib = tui::vm_hwm_kib(pid);
    t.quit(pid)?;
    let status =
        screen.lines().find(|l| l.contains("Resident ")).unwrap_or_default().trim().to_owned();
    Ok(Measured {
        file: file.into(),
        what: "inspector open (TUI)".into(),
        status: "quit".into(),
        code: Some(0),
        rss_kib,
        wall: start.elapsed(),
        out_bytes: 0,
        err_tail: status,
        bound_kib: TUI_BOUND_KIB,
        cpu: None,
    })
}

/// Copies Go bbolt's etcd-small.db to `to`, optionally claiming every
/// page of `size` bytes in both meta pages, and extends it (sparse) to
/// `size` bytes.
fn bolt_file(root: &Path, to: &Path, size: u64, claim_all: bool) -> Result<()> {
    let from = root.join("testdata/bolt/etcd-small.db");
    let mut bytes = fs::read(&from).with_context(|| format!("cannot read {}", from.display()))?;
    if claim_all {
        for index in 0..2u8 {
            let ps = 4096usize;
            let at = usize::from(index) * ps;
            let page =
                bytes.get_mut(at..at + ps).context("etcd-small.db is shorter than two pages")?;
            let mut m = Meta::parse(page, index).context("meta page does not parse")?;
            m.hwm = size / u64::from(m.page_size);
            m.write_page(page).map_err(|e| anyhow::anyhow!("meta page {index}: {e:?}"))?;
        }
    }
    let _ = fs::remove_file(to);
    let f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(to)
        .with_context(|| format!("cannot create {}", to.display()))?;
    f.write_all_at(&bytes, 0)?;
    f.set_len(size)?;
    f.sync_all()?;
    Ok(())
}

/// Peak RSS allowed for each command, in KiB (see [`HELP`] for why).
const COMMAND_BOUND_KIB: u64 = 24 * 1024;

/// Peak RSS allowed for the TUI at 200 x 50 cells, in KiB.
const TUI_BOUND_KIB: u64 = 30 * 1024;

/// Peak RSS allowed for each command under the writer, in KiB.
const WRITER_COMMAND_BOUND_KIB: u64 = 128 * 1024;

/// Peak RSS allowed for the live view under the writer, in KiB.
const WRITER_TUI_BOUND_KIB: u64 = 64 * 1024;

/// CPU allowed for the live view under the writer, % of a core.
const WRITER_TUI_CPU_PCT: f64 = 10.0;

/// The writer's commit intervals, in ms.
const WRITER_INTERVALS_MS: [u64; 2] = [100, 20];

/// The readers, one-shot and live, on a bbolt file `copy` (made from
/// Go bbolt's `gen --shape big`, `args.writer_size`) while the etcd-shaped
/// writer commits to it, at each of [`WRITER_INTERVALS_MS`].
fn under_writer(
    (inspector, mapwise): (&Path, &Path),
    args: &LimitsArgs,
    dir: &Path,
) -> Result<Vec<Measured>> {
    // Entered, as the benches enter it: the cached file's record then
    // names it relative to the root.
    let ws = Workspace::here()?;
    std::env::set_current_dir(&ws.root)
        .with_context(|| format!("cannot enter {}", ws.root.display()))?;
    let oracle = ws.peer("bolt")?;
    let progress = Progress::new(0);
    let made = boltfile::ensure_file(&ws, &oracle, (args.writer_size, None), 1, &progress)?;
    drop(progress);
    let copy = dir.join("live.db");
    let _ = fs::remove_file(&copy);
    fs::copy(&made.path, &copy)
        .with_context(|| format!("cannot copy {} to {}", made.path, copy.display()))?;
    let name = format!(
        "{} (Go bbolt's, {})",
        copy.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        mapwise_bench::units::format_size(args.writer_size)
    );
    let p = copy.to_str().context("non-UTF-8 path")?;
    let mut rows = Vec::new();
    for ms in WRITER_INTERVALS_MS {
        eprintln!("xtask limits: {name} under a writer every {ms} ms");
        let writer = Running::start(&copy, Duration::from_millis(ms), "fake-bucket")?;
        pagecache::read_whole(&copy, false)?;
        let file = format!("{name}, writer every {ms} ms");
        let runs: [(&str, &Path, Vec<&str>); 7] = [
            ("inspector check", inspector, vec!["check", p]),
            ("inspector layout --json", inspector, vec!["layout", p, "--json"]),
            ("inspector pages", inspector, vec!["pages", p]),
            ("inspector residency", inspector, vec!["residency", p]),
            ("mapwise bolt check", mapwise, vec!["bolt", "check", p]),
            ("mapwise bolt pages", mapwise, vec!["bolt", "pages", p]),
            ("mapwise bolt info", mapwise, vec!["bolt", "info", p]),
        ];
        for (what, program, a) in runs {
            let m = measure(&file, what, (program, &a), WRITER_COMMAND_BOUND_KIB)?;
            eprintln!(
                "  {what}: {} {} KiB {:.1} s",
                m.status,
                m.rss_kib.unwrap_or(0),
                m.wall.as_secs_f64()
            );
            rows.push(m);
        }
        pagecache::read_whole(&copy, false)?;
        let w = tui::watch(
            inspector,
            &copy,
            &WatchOptions {
                size: (200, 50),
                interval_ms: None,
                window: Duration::from_secs_f64(args.view_seconds.max(1.0)),
                sample_every: Duration::from_millis(250),
                first_timeout: Duration::from_secs(300),
            },
        )?;
        let commits = writer.stop()?.commits;
        let unaged = w.samples.iter().filter(|s| s.age_s.is_none()).count();
        let m = Measured {
            file,
            what: format!("inspector open (TUI), {:.0} s, default interval", w.window_s),
            status: "quit".into(),
            code: Some(0),
            rss_kib: w.vm_hwm_kib,
            wall: Duration::from_secs_f64(w.window_s),
            out_bytes: 0,
            err_tail: format!(
                "first settled structure after {}; {unaged} of {} samples without one; writer: {} commits",
                w.first_settled_s.map_or_else(|| "never".to_owned(), |s| format!("{s:.1} s")),
                w.samples.len(),
                commits.map_or_else(|| "?".to_owned(), |c| c.to_string())
            ),
            bound_kib: WRITER_TUI_BOUND_KIB,
            cpu: Some((w.cpu_pct_window, WRITER_TUI_CPU_PCT)),
        };
        eprintln!(
            "  TUI: {} KiB, CPU {}; {}",
            m.rss_kib.unwrap_or(0),
            w.cpu_pct_window.map_or_else(|| "?".to_owned(), |c| format!("{c:.1} %")),
            m.err_tail
        );
        rows.push(m);
    }
    if !args.keep {
        let _ = fs::remove_file(&copy);
    }
    Ok(rows)
}

/// Runs `cargo xtask limits`.
pub fn run(args: &LimitsArgs) -> Result<ExitCode> {
    let root = root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (package, bin) in [("mapwise-inspector", "inspector"), ("mapwise-cli", "mapwise")] {
        let st = Command::new(&cargo)
            .current_dir(&root)
            .args(["build", "--release", "-p", package, "--bin", bin])
            .status()
            .context("cannot run cargo build")?;
        if !st.success() {
            bail!("cargo build --release -p {package} --bin {bin} failed ({st})");
        }
    }
    let target = target_dir(&root);
    let inspector = target.join("release/inspector");
    let mapwise = target.join("release/mapwise");
    let dir = target.join("limits");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let size = args.size << 30;

    let zeros = dir.join("zeros.bin");
    let _ = fs::remove_file(&zeros);
    File::create(&zeros)?.set_len(size)?;
    let long = dir.join("bolt-long.db");
    bolt_file(&root, &long, size, false)?;
    let hwm = dir.join("bolt-hwm.db");
    bolt_file(&root, &hwm, size, true)?;
    let trace = dir.join("record.trace");
    // GNU time meters each child's peak RSS, tmux drives the TUI: the
    // workspace's installer puts in what is missing, as for the tests.
    install::try_ensure(&[Need::GnuTime, Need::Tmux]).map_err(anyhow::Error::msg)?;
    if !Path::new(GNU_TIME).is_file() {
        bail!("{GNU_TIME} is missing: apt-get install time (it measures each child's peak RSS)");
    }
    eprintln!("xtask limits: three sparse files of {} GiB in {}", args.size, dir.display());

    let mut rows = Vec::new();
    for (name, path, bolt) in
        [("zeros.bin", &zeros, false), ("bolt-long.db", &long, true), ("bolt-hwm.db", &hwm, true)]
    {
        let p = path.to_str().context("non-UTF-8 path")?;
        let t = trace.to_str().context("non-UTF-8 path")?;
        let mut runs: Vec<(&str, &Path, Vec<&str>)> = vec![
            ("inspector residency --json", inspector.as_path(), vec!["residency", p, "--json"]),
            ("inspector pages --json", inspector.as_path(), vec!["pages", p, "--json"]),
            ("inspector layout --json", inspector.as_path(), vec!["layout", p, "--json"]),
            ("inspector check --json", inspector.as_path(), vec!["check", p, "--json"]),
            (
                "inspector record --duration 1",
                inspector.as_path(),
                vec!["record", p, "-o", t, "--interval", "50", "--duration", "1"],
            ),
        ];
        if bolt {
            runs.push(("mapwise bolt check", mapwise.as_path(), vec!["bolt", "check", p]));
            runs.push(("mapwise bolt pages", mapwise.as_path(), vec!["bolt", "pages", p]));
        }
        for (what, program, a) in runs {
            let m = measure(name, what, (program, &a), COMMAND_BOUND_KIB)?;
            eprintln!(
                "  {name}: {what}: {} {} KiB {:.1} s",
                m.status,
                m.rss_kib.unwrap_or(0),
                m.wall.as_secs_f64()
            );
            rows.push(m);
        }
        let m = tui(name, &inspector, path)?;
        eprintln!("  {name}: TUI: {} KiB; {}", m.rss_kib.unwrap_or(0), m.err_tail);
        rows.push(m);
    }
    if !args.keep {
        for f in [&zeros, &long, &hwm, &trace] {
            let _ = fs::remove_file(f);
        }
    }
    let busy =
        if args.no_writer { Vec::new() } else { under_writer((&inspector, &mapwise), args, &dir)? };

    let mut fails = Vec::new();
    println!(
        "\n| file ({} GiB, sparse) | command | status | peak RSS | wall | stdout |",
        args.size
    );
    println!("|---|---|---|---:|---:|---:|");
    for m in &rows {
        println!(
            "| {} | {} | {} | {} | {:.2} s | {} B |",
            m.file,
            m.what,
            m.status,
            mib(m.rss_kib),
            m.wall.as_secs_f64(),
            m.out_bytes
        );
        judge(m, &mut fails);
    }
    println!(
        "\nbounds: {} MiB peak RSS per command, {} MiB for the TUI",
        COMMAND_BOUND_KIB / 1024,
        TUI_BOUND_KIB / 1024
    );
    if !busy.is_empty() {
        println!("\n| file | command | status | peak RSS | bound | CPU | wall | stdout |");
        println!("|---|---|---|---:|---:|---:|---:|---:|");
        for m in &busy {
            println!(
                "| {} | {} | {} | {} | {} MiB | {} | {:.2} s | {} B |",
                m.file,
                m.what,
                m.status,
                mib(m.rss_kib),
                m.bound_kib / 1024,
                m.cpu.map_or_else(
                    || "—".to_owned(),
                    |(c, b)| format!(
                        "{} (≤ {b:.0} %)",
                        c.map_or_else(|| "?".to_owned(), |c| format!("{c:.1} %"))
                    )
                ),
                m.wall.as_secs_f64(),
                m.out_bytes
            );
            judge(m, &mut fails);
        }
        for m in busy.iter().filter(|m| m.cpu.is_some()) {
            println!("{}: {}", m.file, m.err_tail);
        }
        println!(
            "\nbounds under the writer: {} MiB peak RSS per command, {} MiB and {WRITER_TUI_CPU_PCT:.0} % of a core for the live view",
            WRITER_COMMAND_BOUND_KIB / 1024,
            WRITER_TUI_BOUND_KIB / 1024
        );
    }
    if fails.is_empty() {
        println!("PASS: every process stayed under the bound");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("FAIL:\n  {}", fails.join("\n  "));
        Ok(ExitCode::FAILURE)
    }
}

/// KiB as MiB with one decimal, `?` when unknown.
fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

/// Adds to `fails` what is wrong with `m`: a peak RSS over its bound or
/// unmeasured, CPU over its bound, a signal or a panic.
fn judge(m: &Measured, fails: &mut Vec<String>) {
    let bound_kib = m.bound_kib;
    match m.rss_kib {
        Some(k) if k <= bound_kib => {}
        Some(k) => {
            fails.push(format!("{} on {}: peak RSS {k} KiB > {bound_kib} KiB", m.what, m.file))
        }
        None => fails.push(format!("{} on {}: no peak RSS measured", m.what, m.file)),
    }
    match m.cpu {
        Some((Some(c), b)) if c > b => {
            fails.push(format!("{} on {}: CPU {c:.1} % of a core > {b:.0} %", m.what, m.file))
        }
        Some((None, _)) => fails.push(format!("{} on {}: no CPU time measured", m.what, m.file)),
        _ => {}
    }
    // 0 fine, 1 problems found, 2 could not run (pages of a file that
    // is not bbolt; a writer that outran every read); a signal or a panic
    // is a failure.
    if !matches!(m.code, Some(0..=2)) || m.err_tail.contains("panicked") {
        fails.push(format!("{} on {}: {} {}", m.what, m.file, m.status, m.err_tail));
    }
}
