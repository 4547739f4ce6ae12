//! `cargo xtask limits`: resource limits of the inspector on huge files
//! (issue 8 item 5). Memory must stay bounded by what is shown, not by the
//! file: the page map is aggregated into cells, and structure is walked
//! with a few bits per page, never a copy of the file.
//!
//! (Not to be confused with `bench/limits.rs`, the device and memory-copy
//! limits each benchmark prints beside its times.)

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use mapwise_core::bolt::Meta;

use crate::bench::proc::{shell_quote, tail};

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
bytes. Output goes to /dev/null but is counted. Times are printed, never
judged. Not part of `cargo test`: it needs a release build, tmux and GNU
time (Debian packages tmux and time).";

/// Arguments of `cargo xtask limits`.
#[derive(Debug, Args)]
pub struct LimitsArgs {
    /// Size of the sparse files in GiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    size: u64,
    /// Keep the files in target/limits/ afterwards.
    #[arg(long)]
    keep: bool,
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

/// GNU time, the peak-RSS meter (Debian package `time`).
const GNU_TIME: &str = "/usr/bin/time";

/// Runs `program args` with stdout counted and discarded, and returns
/// what it did with its peak RSS.
///
/// The peak comes from GNU time (`/usr/bin/time -f %M`), which reads its
/// child's `ru_maxrss` with `wait4`, not from our own `wait4`: Linux
/// counts in a process's `ru_maxrss` the RSS of the image it replaced at
/// `exec`, and std spawns children sharing xtask's memory until the
/// `exec`, so our own `wait4` never reports less than xtask's peak (7 MiB
/// here, above most of the values measured). GNU time is a small C
/// program: its children start from about 1 MiB.
fn measure(
    file: &str,
    what: &str,
    program: &Path,
    args: &[&str],
    rss_out: &Path,
) -> Result<Measured> {
    let start = Instant::now();
    let _ = fs::remove_file(rss_out);
    let mut child = Command::new(GNU_TIME)
        .arg("-q")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(rss_out)
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {GNU_TIME} (apt-get install time)"))?;
    let mut out = child.stdout.take().context("stdout")?;
    let mut err = child.stderr.take().context("stderr")?;
    let counter = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        while let Ok(k) = out.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        n
    });
    let errs = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let out_bytes = counter.join().unwrap_or(0);
    let stderr = errs.join().unwrap_or_default();
    let status = child.wait().context("wait for GNU time")?;
    // GNU time writes "Command terminated by signal N" before the number
    // when the child was killed; the number is always the last line.
    let meter = fs::read_to_string(rss_out).unwrap_or_default();
    let rss_kib = meter.lines().last().and_then(|l| l.trim().parse().ok());
    let signalled = meter.lines().find(|l| l.starts_with("Command terminated"));
    Ok(Measured {
        file: file.into(),
        what: what.into(),
        status: signalled.map_or_else(|| status.to_string(), str::to_owned),
        code: if signalled.is_some() {
            None
        } else {
            status.code()
        },
        rss_kib,
        wall: start.elapsed(),
        out_bytes,
        err_tail: tail(&stderr, 3),
    })
}

/// A tmux server of our own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Result<std::process::Output> {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .context("cannot run tmux (apt-get install tmux)")
    }

    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "limits"])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// `VmHWM` (peak RSS) of a live process, in KiB.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The TUI on `path` in a 200 x 50 tmux pane: wait (up to 5 minutes) for
/// the first screen, go to the end of the map, zoom in and out, read the
/// peak RSS, quit.
fn tui(file: &str, inspector: &Path, path: &Path) -> Result<Measured> {
    let t = Tmux {
        socket: format!("mapwise-limits-{}", std::process::id()),
    };
    let start = Instant::now();
    let line = format!(
        "exec {} open {} --interval 200",
        shell_quote(&inspector.to_string_lossy()),
        shell_quote(&path.to_string_lossy())
    );
    let o = t.cmd(&[
        "new-session",
        "-d",
        "-s",
        "limits",
        "-x",
        "200",
        "-y",
        "50",
        &line,
    ])?;
    if !o.status.success() {
        bail!("tmux: {}", String::from_utf8_lossy(&o.stderr));
    }
    let pid: u32 = String::from_utf8_lossy(
        &t.cmd(&["display-message", "-p", "-t", "limits", "#{pane_pid}"])?
            .stdout,
    )
    .trim()
    .parse()
    .context("no pane pid")?;
    let wait = |text: &str| -> Result<String> {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let s = t.screen();
            if s.contains(text) {
                return Ok(s);
            }
            if Instant::now() > deadline {
                bail!("the TUI on {file} did not show {text:?} within 5 minutes:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    wait("Resident ")?;
    for keys in [&["End"][..], &["+"], &["+"], &["-"], &["Home"], &["Tab"]] {
        let mut a = vec!["send-keys", "-t", "limits"];
        a.extend_from_slice(keys);
        t.cmd(&a)?;
        std::thread::sleep(Duration::from_millis(300));
    }
    let screen = wait("Resident ")?;
    let rss_kib = vm_hwm_kib(pid);
    t.cmd(&["send-keys", "-t", "limits", "q"])?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while Path::new(&format!("/proc/{pid}")).exists() {
        if Instant::now() > deadline {
            bail!("the TUI on {file} did not quit");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = screen
        .lines()
        .find(|l| l.contains("Resident "))
        .unwrap_or_default()
        .trim()
        .to_owned();
    Ok(Measured {
        file: file.into(),
        what: "inspector open (TUI)".into(),
        status: "quit".into(),
        code: Some(0),
        rss_kib,
        wall: start.elapsed(),
        out_bytes: 0,
        err_tail: status,
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
            let page = bytes
                .get_mut(at..at + ps)
                .context("etcd-small.db is shorter than two pages")?;
            let mut m = Meta::parse(page, index).context("meta page does not parse")?;
            m.hwm = size / u64::from(m.page_size);
            m.write_page(page)
                .map_err(|e| anyhow::anyhow!("meta page {index}: {e:?}"))?;
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

/// Runs `cargo xtask limits`.
pub fn run(args: &LimitsArgs) -> Result<ExitCode> {
    let root = root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (package, bin) in [
        ("mapwise-inspector", "inspector"),
        ("mapwise-native", "mapwise"),
    ] {
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
    let rss_out = dir.join("peak-rss.txt");
    if !Path::new(GNU_TIME).is_file() {
        bail!("{GNU_TIME} is missing: apt-get install time (it measures each child's peak RSS)");
    }
    eprintln!(
        "xtask limits: three sparse files of {} GiB in {}",
        args.size,
        dir.display()
    );

    let mut rows = Vec::new();
    for (name, path, bolt) in [
        ("zeros.bin", &zeros, false),
        ("bolt-long.db", &long, true),
        ("bolt-hwm.db", &hwm, true),
    ] {
        let p = path.to_str().context("non-UTF-8 path")?;
        let t = trace.to_str().context("non-UTF-8 path")?;
        let mut runs: Vec<(&str, &Path, Vec<&str>)> = vec![
            (
                "inspector residency --json",
                inspector.as_path(),
                vec!["residency", p, "--json"],
            ),
            (
                "inspector pages --json",
                inspector.as_path(),
                vec!["pages", p, "--json"],
            ),
            (
                "inspector layout --json",
                inspector.as_path(),
                vec!["layout", p, "--json"],
            ),
            (
                "inspector check --json",
                inspector.as_path(),
                vec!["check", p, "--json"],
            ),
            (
                "inspector record --duration 1",
                inspector.as_path(),
                vec!["record", p, "-o", t, "--interval", "50", "--duration", "1"],
            ),
        ];
        if bolt {
            runs.push((
                "mapwise bolt check",
                mapwise.as_path(),
                vec!["bolt", "check", p],
            ));
            runs.push((
                "mapwise bolt pages",
                mapwise.as_path(),
                vec!["bolt", "pages", p],
            ));
        }
        for (what, program, a) in runs {
            let m = measure(name, what, program, &a, &rss_out)?;
            eprintln!(
                "  {name}: {what}: {} {} KiB {:.1} s",
                m.status,
                m.rss_kib.unwrap_or(0),
                m.wall.as_secs_f64()
            );
            rows.push(m);
        }
        let m = tui(name, &inspector, path)?;
        eprintln!(
            "  {name}: TUI: {} KiB; {}",
            m.rss_kib.unwrap_or(0),
            m.err_tail
        );
        rows.push(m);
    }
    if !args.keep {
        for f in [&zeros, &long, &hwm, &trace, &rss_out] {
            let _ = fs::remove_file(f);
        }
    }

    println!(
        "\n| file ({} GiB, sparse) | command | status | peak RSS | wall | stdout |",
        args.size
    );
    println!("|---|---|---|---:|---:|---:|");
    let mut fails = Vec::new();
    for m in &rows {
        println!(
            "| {} | {} | {} | {} | {:.2} s | {} B |",
            m.file,
            m.what,
            m.status,
            m.rss_kib
                .map_or_else(|| "?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
            m.wall.as_secs_f64(),
            m.out_bytes
        );
        let bound_kib = if m.what.contains("TUI") {
            TUI_BOUND_KIB
        } else {
            COMMAND_BOUND_KIB
        };
        match m.rss_kib {
            Some(k) if k <= bound_kib => {}
            Some(k) => fails.push(format!(
                "{} on {}: peak RSS {k} KiB > {bound_kib} KiB",
                m.what, m.file
            )),
            None => fails.push(format!("{} on {}: no peak RSS measured", m.what, m.file)),
        }
        // 0 fine, 1 problems found, 2 could not run (pages of a file that
        // is not bbolt); a signal or a panic is a failure.
        if !matches!(m.code, Some(0..=2)) || m.err_tail.contains("panicked") {
            fails.push(format!(
                "{} on {}: {} {}",
                m.what, m.file, m.status, m.err_tail
            ));
        }
    }
    println!(
        "\nbounds: {} MiB peak RSS per command, {} MiB for the TUI",
        COMMAND_BOUND_KIB / 1024,
        TUI_BOUND_KIB / 1024
    );
    if fails.is_empty() {
        println!("PASS: every process stayed under the bound");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("FAIL:\n  {}", fails.join("\n  "));
        Ok(ExitCode::FAILURE)
    }
}
