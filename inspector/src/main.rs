//! `inspector`: live page-cache residency of a bbolt file, overlaid on
//! its B+tree structure.
//!
//! `inspector open [FILE]` runs the terminal UI; `residency`, `pages`,
//! `page`, `check`, `layout` and `etcd` print reports (text, or JSON with
//! `--json`). This file holds the command line, the terminal's setup and
//! teardown, and the event loop; everything else is in the library.
#![forbid(unsafe_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use mapwise_core::bolt::WalkOptions;
use mapwise_inspector::app::{App, Data, Target};
use mapwise_inspector::replay::Replay;
use mapwise_inspector::{cli, demo, etcd, event, export, many, top, ui, warm};
use mapwise_native::observe::trace::Recorder;
use mapwise_native::observe::watch::Watch;
use ratatui::DefaultTerminal;

/// Which pages of a storage file (bbolt, RRDtool, Mercurial revlog) are
/// in the page cache, on its structure.
#[derive(Debug, Parser)]
#[command(name = "inspector", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Watch a file live in the terminal: a bbolt, RRD or revlog file's
    /// structure, any file's residency (default: a bundled etcd file).
    Open {
        /// The file; a directory lists the files of its tree (Enter opens
        /// one, Esc comes back); without it, a bundled etcd database.
        file: Option<PathBuf>,
        /// Milliseconds between residency samples.
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
        interval: u64,
    },
    /// Resident pages of files and trees (vmtouch's numbers) and, for
    /// bbolt, RRD and revlog files, resident bytes per page kind.
    ///
    /// One file: its report. Several paths, a directory or `--top`: one
    /// line per file, then totals. Exit status 1 when a file or directory
    /// was skipped (unreadable, or its residency hidden by the kernel), so
    /// that the totals are a lower bound, as du and fincore do; sockets,
    /// FIFOs, devices, links and other file systems are listed and pass, as
    /// du and vmtouch pass over them.
    Residency(many::Args),
    /// Read files into the page cache, as `vmtouch -t` does; with `--hot`,
    /// only the pages an RRD file's next update touches (its header and
    /// each archive's current and next rows). Says what changed, per file.
    Warm {
        /// Only RRD files' hot sets; other files are left alone.
        #[arg(long)]
        hot: bool,
        #[command(flatten)]
        args: warm::Args,
    },
    /// Drop files from the page cache, as `vmtouch -e` does; with
    /// `--cold`, all of an RRD file but its hot set (what the next update
    /// touches), so the cache keeps only what updates need. Says what
    /// changed, per file.
    Evict {
        /// Only RRD files' cold pages; other files are left alone.
        #[arg(long)]
        cold: bool,
        #[command(flatten)]
        args: warm::Args,
    },
    /// Serve the residency of files and trees as Prometheus metrics at
    /// `/metrics` (OpenMetrics text): per file its size and resident
    /// bytes, per page kind, RRD hot sets, bbolt free and in-use bytes.
    /// The paths are walked every interval; scrapes get the last walk.
    /// Only reads. Loopback only unless `--allow-remote`.
    Export(export::Args),
    /// The files processes hold open or mapped, by page cache, most
    /// first (from /proc): all processes, `--pid`, or a cgroup's, with its
    /// memory.stat `file` counter beside.
    Top(top::Args),
    /// The page table of a bbolt file, as `bbolt pages` prints it.
    Pages(FileArgs),
    /// Decode pages (bbolt pages by page id; OS pages of RRD and revlog
    /// files), as the detail pane shows them.
    Page {
        /// The bbolt, RRD or revlog file.
        file: PathBuf,
        /// Page ids.
        #[arg(required = true)]
        ids: Vec<u64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check the structure of a bbolt, RRD or revlog file: one line per
    /// problem (exit 1), or `OK`.
    Check(FileArgs),
    /// Page kinds and buckets (bbolt), sections and archives (RRD),
    /// entries (revlog), as text, or the whole layout (JSON).
    Layout(FileArgs),
    /// An etcd backend db (`member/snap/db`, live or not): dbSize and
    /// dbSizeInUse, free space, revisions, per key prefix live keys,
    /// revisions and bytes (history and resident), the largest keys, and
    /// forecasts of dbSize after `etcdctl defrag` and after `etcdctl
    /// compaction REV` + defrag, against the quota. Reads without a lock
    /// and writes nothing.
    Etcd {
        /// The db file (`DATA_DIR/member/snap/db`).
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Group keys by their first N `/` segments (`/registry/pods`).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
        depth: u64,
        /// The revision of the compaction forecast (default: the newest).
        #[arg(long, value_name = "REV")]
        compact_at: Option<i64>,
        /// The quota the headroom is measured against (etcd's
        /// `--quota-backend-bytes`; 0 means etcd's default, 2 GiB), bytes.
        #[arg(long, value_name = "BYTES", default_value_t = mapwise_inspector::etcd::DEFAULT_QUOTA)]
        quota: u64,
    },
    /// Record a file's residency every interval into a trace file, while
    /// a command runs (`-- CMD ARGS…`), for `--duration` seconds, or
    /// until Ctrl-C (the trace stays readable when interrupted). With a
    /// command, exits with its status (128 + N when signal N killed it).
    Record {
        /// The file to watch (it may not exist yet).
        file: PathBuf,
        /// The trace file to write.
        #[arg(short, long)]
        out: PathBuf,
        /// Milliseconds between samples.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
        interval: u64,
        /// Stop after this many seconds.
        #[arg(long)]
        duration: Option<f64>,
        /// Free text stored in the trace (default: the command line).
        #[arg(long)]
        label: Option<String>,
        /// The command to run while recording.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Play a recorded residency trace in the page map (Space pause,
    /// `,` `.` step, `[` `]` speed).
    Replay {
        /// The trace file (`inspector record`, or `cargo xtask bench`'s
        /// traces).
        trace: PathBuf,
        /// Read the structure from this copy of the traced file instead
        /// of the path recorded in the trace.
        #[arg(long)]
        file: Option<PathBuf>,
        /// Milliseconds between frames on screen (trace time advances by
        /// as much, times the speed); default: the trace's interval.
        #[arg(long, value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
        tick: Option<u64>,
    },
}

#[derive(Debug, Args)]
struct FileArgs {
    /// The file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Cli::parse();
    // `etcd` keeps what it reads for the whole run and reuses its read
    // buffers: bounding its peaks would only make each large buffer and
    // table a fresh mapping, faulted in page by page (a 1 GiB db: 1.0 s
    // with the bound, 0.85 s without, warm).
    if !matches!(args.command, Command::Etcd { .. }) {
        mapwise_native::os::heap::bound_peaks();
    }
    let json = match &args.command {
        Command::Open { .. } | Command::Record { .. } | Command::Replay { .. } => false,
        Command::Pages(a) | Command::Check(a) | Command::Layout(a) => a.json,
        Command::Residency(a) => a.json,
        Command::Export(_) => false,
        Command::Top(a) => a.json,
        Command::Warm { args, .. } | Command::Evict { args, .. } => args.json,
        Command::Page { json, .. } | Command::Etcd { json, .. } => *json,
    };
    let result = match args.command {
        Command::Open { file, interval } => open(file, Duration::from_millis(interval)),
        Command::Residency(a) => match a.one_file() {
            Some(file) => print(cli::residency(file, a.json)),
            None => stream_bytes(|out| many::run(&a, out)),
        },
        Command::Warm { hot, args } => {
            let act = if hot { warm::Act::WarmHot } else { warm::Act::Warm };
            stream_bytes(|out| warm::run(act, &args, out))
        }
        Command::Evict { cold, args } => {
            let act = if cold { warm::Act::EvictCold } else { warm::Act::Evict };
            stream_bytes(|out| warm::run(act, &args, out))
        }
        Command::Export(a) => export::serve(&a).map(|()| ExitCode::SUCCESS),
        Command::Top(a) => print(top::top(&a)),
        Command::Pages(a) => stream(|out| cli::pages(&a.file, a.json, out)),
        Command::Page { file, ids, json } => print(cli::page(&file, &ids, json)),
        Command::Check(a) => print(cli::check(&a.file, a.json)),
        Command::Layout(a) => print(cli::layout(&a.file, a.json)),
        Command::Etcd { file, json, depth, compact_at, quota } => {
            let args = etcd::EtcdArgs {
                depth: usize::try_from(depth).unwrap_or(usize::MAX),
                compact_at,
                quota,
            };
            print(etcd::etcd(&file, json, &args))
        }
        Command::Record { file, out, interval, duration, label, command } => {
            record(&file, &out, Duration::from_millis(interval), duration, label, &command)
        }
        Command::Replay { trace, file, tick } => replay(&trace, file.as_deref(), tick),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Exit 1 when the error is about the file (not a format the
            // command reads), else 2: the command could not run. Scripts
            // asking for JSON get JSON here too.
            if json {
                println!("{}", serde_json::json!({ "error": format!("{e:#}") }));
            }
            eprintln!("inspector: {e:#}");
            ExitCode::from(if cli::is_file_problem(&e) { 1 } else { 2 })
        }
    }
}

/// Standard output as a `fmt::Write` that keeps the first I/O error.
struct Stdout {
    w: std::io::BufWriter<std::io::StdoutLock<'static>>,
    error: Option<std::io::Error>,
}

impl std::fmt::Write for Stdout {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.w.write_all(s.as_bytes()).map_err(|e| {
            self.error.get_or_insert(e);
            std::fmt::Error
        })
    }
}

/// Run a report that writes as it goes; a closed pipe (`| head`) is not
/// an error.
fn stream(f: impl FnOnce(&mut Stdout) -> Result<()>) -> Result<ExitCode> {
    let mut out = Stdout {
        w: std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock()),
        error: None,
    };
    f(&mut out)?;
    let result = match out.error.take() {
        Some(e) => Err(e),
        None => out.w.flush(),
    };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Run a report that writes bytes as it goes and returns its exit
/// status; a closed pipe (`| head`) is not an error.
fn stream_bytes(
    f: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<u8>,
) -> Result<ExitCode> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match f(&mut out) {
        Ok(code) => Ok(ExitCode::from(code)),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
    }
}

/// Print a report; a closed pipe (`| head`) is not an error.
fn print(out: Result<cli::Output>) -> Result<ExitCode> {
    let out = out?;
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let written = stdout.write_all(out.text.as_bytes()).and_then(|()| {
        if let Some(rep) = &out.layout_json {
            let mut ser = serde_json::Serializer::with_formatter(&mut stdout, Lines::new());
            serde::Serialize::serialize(rep, &mut ser)?;
            stdout.write_all(b"\n")?;
        }
        stdout.flush()
    });
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok(ExitCode::from(out.code))
}

/// JSON indented as `serde_json`'s pretty printer indents it, but every
/// object from the third level of nesting on (and every array from the
/// fourth) on one line: each region of `layout --json` (a 2 GiB file has
/// half a million) is one line, in half the bytes.
struct Lines {
    pretty: serde_json::ser::PrettyFormatter<'static>,
    depth: usize,
    /// The depth of the container written on one line, while one is.
    flat_at: Option<usize>,
}

impl Lines {
    fn new() -> Lines {
        Lines { pretty: serde_json::ser::PrettyFormatter::new(), depth: 0, flat_at: None }
    }

    /// Enter a container, flat from `from` levels down.
    fn open<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        from: usize,
        bracket: &[u8],
        pretty: impl FnOnce(
            &mut serde_json::ser::PrettyFormatter<'static>,
            &mut W,
        ) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.depth += 1;
        if self.flat_at.is_none() && self.depth >= from {
            self.flat_at = Some(self.depth);
        }
        if self.flat_at.is_some() { w.write_all(bracket) } else { pretty(&mut self.pretty, w) }
    }

    /// Leave a container.
    fn close<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
        pretty: impl FnOnce(
            &mut serde_json::ser::PrettyFormatter<'static>,
            &mut W,
        ) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let done =
            if self.flat_at.is_some() { w.write_all(bracket) } else { pretty(&mut self.pretty, w) };
        if self.flat_at == Some(self.depth) {
            self.flat_at = None;
        }
        self.depth -= 1;
        done
    }
}

impl serde_json::ser::Formatter for Lines {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, 4, b"[", |p, w| p.begin_array(w))
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]", |p, w| p.end_array(w))
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        match (self.flat_at, first) {
            (Some(_), true) => Ok(()),
            (Some(_), false) => w.write_all(b","),
            (None, _) => self.pretty.begin_array_value(w, first),
        }
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match self.flat_at {
            Some(_) => Ok(()),
            None => self.pretty.end_array_value(w),
        }
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, 3, b"{", |p, w| p.begin_object(w))
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}", |p, w| p.end_object(w))
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        match (self.flat_at, first) {
            (Some(_), true) => Ok(()),
            (Some(_), false) => w.write_all(b","),
            (None, _) => self.pretty.begin_object_key(w, first),
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match self.flat_at {
            Some(_) => w.write_all(b":"),
            None => self.pretty.begin_object_value(w),
        }
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        match self.flat_at {
            Some(_) => Ok(()),
            None => self.pretty.end_object_value(w),
        }
    }
}

/// Refuse to start the TUI unless standard input and output are both
/// terminals, before anything is written to either: a TUI on a pipe
/// (`echo | inspector open F | head`) would only leave escape codes there.
fn require_terminal() -> Result<()> {
    use std::io::IsTerminal as _;
    let missing: Vec<&str> = [
        ("standard input", std::io::stdin().is_terminal()),
        ("standard output", std::io::stdout().is_terminal()),
    ]
    .into_iter()
    .filter_map(|(name, tty)| (!tty).then_some(name))
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "the live view needs a terminal, but {} {} not one; for scripts use \
         `inspector residency|layout|check|pages FILE` (add --json)",
        missing.join(" and "),
        if missing.len() == 1 { "is" } else { "are" }
    )
}

fn open(file: Option<PathBuf>, interval: Duration) -> Result<ExitCode> {
    if let Some(dir) = file.as_ref().filter(|p| p.is_dir()) {
        return open_dir(dir.clone(), interval);
    }
    let (path, label) = match file {
        Some(p) => {
            let label = p.display().to_string();
            (p, label)
        }
        None => demo::demo_file().context("cannot write the bundled demo file")?,
    };
    let mut watch = Watch::start(&path, WalkOptions::default())
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut app = App::new(label, Data::from_target(&watch), interval);
    app.watch_rrdcached(path);
    run_tui(&mut app, &mut watch)
}

/// `inspector open DIR`: the list of files, and each file's view opened
/// from it in the same terminal.
fn open_dir(dir: PathBuf, interval: Duration) -> Result<ExitCode> {
    in_terminal(|terminal| run_dir(terminal, dir, interval))
}

fn run_dir(terminal: &mut DefaultTerminal, dir: PathBuf, interval: Duration) -> Result<()> {
    let mut list = mapwise_inspector::dir::DirList::new(dir);
    while list.running {
        list.tick();
        terminal.draw(|frame| ui::dir::draw(frame, &list))?;
        if crossterm::event::poll(Duration::from_millis(200))? {
            let ev = crossterm::event::read()?;
            if let Some(action) = event::from_event(&ev) {
                let height = ui::dir::list_height(terminal.size()?.height);
                list.update(action, height);
            }
        }
        if let Some(path) = list.open.take() {
            let mut watch = match Watch::start(&path, WalkOptions::default()) {
                Ok(w) => w,
                // Gone since the walk, say: the next walk drops it.
                Err(e) => {
                    list.message = Some(format!("cannot open {}: {e}", path.display()));
                    continue;
                }
            };
            let mut app = App::new(path.display().to_string(), Data::from_target(&watch), interval);
            app.watch_rrdcached(path);
            run(terminal, &mut app, &mut watch)?;
            terminal.clear()?;
            if app.quit_all() {
                break;
            }
        }
    }
    Ok(())
}

/// Set the terminal up, run the loop, restore the terminal.
fn run_tui(app: &mut App, target: &mut dyn Target) -> Result<ExitCode> {
    in_terminal(|terminal| run(terminal, app, target))
}

/// Set the terminal up, run `body` in it, restore the terminal.
fn in_terminal(body: impl FnOnce(&mut DefaultTerminal) -> Result<()>) -> Result<ExitCode> {
    // Before anything reaches the terminal (even the restore sequence).
    require_terminal()?;
    // Installs a panic hook that restores the terminal before the panic
    // message is printed.
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            // Undo whatever part of the setup succeeded.
            ratatui::restore();
            return Err(anyhow::Error::new(e).context("cannot set up the terminal"));
        }
    };
    let result = body(&mut terminal);
    ratatui::restore();
    result.map(|()| ExitCode::SUCCESS)
}

/// `inspector replay`: play a trace in the TUI.
fn replay(trace: &Path, file: Option<&Path>, tick: Option<u64>) -> Result<ExitCode> {
    let t = mapwise_native::observe::trace::read(trace)
        .with_context(|| format!("cannot read the trace {}", trace.display()))?;
    let tick = tick.map_or_else(
        || Duration::from_micros(t.header.interval_us).max(Duration::from_millis(20)),
        Duration::from_millis,
    );
    let label = mapwise_inspector::replay::title(&t.header.path, trace, file);
    let mut target = Replay::new(t, file, tick);
    let mut app = App::new(label, Data::from_target(&target), tick);
    run_tui(&mut app, &mut target)
}

/// `inspector record`: sample `file` into the trace `out`.
fn record(
    file: &Path,
    out: &Path,
    interval: Duration,
    duration: Option<f64>,
    label: Option<String>,
    command: &[String],
) -> Result<ExitCode> {
    let label = label.unwrap_or_else(|| {
        if command.is_empty() {
            format!("inspector record {}", file.display())
        } else {
            command.join(" ")
        }
    });
    let limit = match duration {
        Some(d) if d.is_finite() && d >= 0.0 => Some(Duration::from_secs_f64(d)),
        Some(d) => anyhow::bail!("--duration must be a number of seconds ≥ 0, not {d}"),
        None => None,
    };
    let rec = Recorder::start(file, out, &label, interval)
        .with_context(|| format!("cannot write the trace {}", out.display()))?;
    let mut code = ExitCode::SUCCESS;
    if let Some((prog, args)) = command.split_first() {
        let mut child = match std::process::Command::new(prog).args(args).spawn() {
            Ok(c) => c,
            Err(e) => {
                // As `time` and the shell: 127 when the command is not
                // found, 126 when it cannot be run.
                let code = if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
                eprintln!("inspector: cannot run {prog}: {e}");
                drop(rec);
                return Ok(ExitCode::from(code));
            }
        };
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait()? {
                if !status.success() {
                    eprintln!("inspector: {prog} exited with {status}");
                    code = ExitCode::from(passed_on(status));
                }
                break;
            }
            if limit.is_some_and(|l| start.elapsed() >= l) {
                let _ = child.kill();
                let _ = child.wait();
                eprintln!("inspector: --duration reached; {prog} was killed");
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    } else {
        match limit {
            Some(l) => std::thread::sleep(l),
            None => {
                eprintln!("inspector: recording {}; Ctrl-C stops", file.display());
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
        }
    }
    let sum = rec.stop().context("the trace could not be written")?;
    eprintln!(
        "inspector: {} frames, {} bytes in {} (most resident: {} pages)",
        sum.frames,
        sum.bytes,
        out.display(),
        sum.max_resident_pages
    );
    if sum.stretched > 0 && sum.frames > 1 {
        #[expect(clippy::cast_precision_loss)]
        let (every, one) = (
            sum.span.as_secs_f64() * 1e3 / (sum.frames - 1) as f64,
            sum.sampling.as_secs_f64() * 1e3 / sum.frames as f64,
        );
        eprintln!(
            "inspector: sampled every {every:.0} ms on average, not every {} ms: one sample of \
             this file took {one:.1} ms, and sampling is kept under {:.0} % of a core",
            interval.as_millis(),
            mapwise_native::observe::trace::MAX_DUTY * 100.0
        );
    }
    Ok(code)
}

/// The exit status `record` passes on for its command's `status`, as
/// `time` and `strace` do: the command's own code, or 128 + N when signal
/// N killed it (the shell's convention); 1 when neither fits in a byte.
fn passed_on(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(1),
        (None, None) => 1,
    }
}

/// The loop: draw, wait for a key until the next tick, take in what a worker finished,
/// refresh on ticks.
fn run(terminal: &mut DefaultTerminal, app: &mut App, watch: &mut dyn Target) -> Result<()> {
    let size = terminal.size()?;
    app.resize(size.width, size.height);
    let mut next_tick = Instant::now() + app.interval();
    while app.running() {
        app.fetch_details(watch);
        terminal.draw(|frame| ui::draw(frame, app))?;
        let mut timeout = next_tick.saturating_duration_since(Instant::now());
        if app.busy() {
            // A touch, evict or advise runs on a worker: show its result
            // soon after it comes, not at the next tick.
            timeout = timeout.min(Duration::from_millis(50));
        }
        if crossterm::event::poll(timeout)? {
            let ev = crossterm::event::read()?;
            if let Some(action) = event::from_event(&ev) {
                app.update(action, watch);
            }
        }
        app.poll_jobs(watch);
        if Instant::now() >= next_tick {
            app.tick(watch);
            // While a re-read runs, look for its result more often.
            let step = if app.data().rereading {
                app.interval().min(Duration::from_millis(100))
            } else {
                app.interval()
            };
            next_tick = Instant::now() + step;
        }
    }
    // A job the user started finishes before the view goes: quitting
    // never leaves a touch, evict or advise half done.
    if app.finishing() {
        terminal.draw(|frame| ui::draw(frame, app))?;
        app.wait_jobs(watch);
    }
    Ok(())
}
