//! An etcd-shaped bbolt writer (`mapwise_testkit::writer`) on a file
//! ([`write()`], what `cargo xtask writer` runs), and [`Running`], the same
//! writer as a child process of a bench or of `cargo xtask limits`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mapwise_testkit::writer::Shape;

use crate::output::TempPath;
use crate::proc::{Cmd, tail};
use crate::tui::file_txid;

/// Writes to the bbolt file `file` (created when missing) in `shape` until
/// `limit` passes or a SIGINT, SIGTERM or SIGHUP arrives (then after the
/// commit under way, so the file is left as a finished commit left it),
/// and says how many commits it made on stderr, where [`Running::stop`]
/// reads it: what `cargo xtask writer` runs.
pub fn write(file: &Path, shape: &Shape, limit: Duration) -> Result<()> {
    crate::interrupt::install();
    let opts = mapwise_native::engine::bolt::Options::read_write();
    let db = mapwise_native::engine::bolt::Db::open(file, &opts)
        .with_context(|| format!("open {}", file.display()))?;
    let n = mapwise_testkit::writer::run(&db, shape, limit, crate::interrupt::raised)?;
    eprintln!("writer: {n} commits");
    Ok(())
}

/// Starts `cmd` (stdin closed, stdout and stderr to `log`) and waits up to
/// `within` until `ready()`; an error when it exits first (quoting the
/// end of `log`), on timeout, or on Ctrl-C.
pub(crate) fn spawn_until(
    cmd: &Cmd,
    log: &Path,
    within: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<Child> {
    let out = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut child = Command::new(cmd.program())
        .args(cmd.arguments())
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("cannot start `{}`", cmd.shell()))?;
    let deadline = Instant::now() + within;
    while !ready() {
        let log = || tail(&std::fs::read_to_string(log).unwrap_or_default(), 20);
        if let Some(st) = child.try_wait()? {
            bail!("`{}` exited ({st}) before it was ready:\n{}", cmd.shell(), log());
        }
        if Instant::now() > deadline || crate::interrupt::raised() {
            reap(&mut child, Duration::ZERO);
            crate::interrupt::check()?;
            bail!("`{}` was not ready within {within:?}:\n{}", cmd.shell(), log());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(child)
}

/// SIGTERM to our own `child`, up to `grace` for it to exit, then SIGKILL; reaped.
pub(crate) fn reap(child: &mut Child, grace: Duration) {
    // Only while not reaped: a reaped child's pid may be another process's.
    if matches!(child.try_wait(), Ok(None)) {
        let _ = mapwise_native::os::process::terminate(child);
    }
    let deadline = Instant::now() + grace;
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The writer as a child process (`xtask writer FILE --interval-ms N
/// --bucket B`), stopped with SIGTERM when dropped or [`Running::stop`]ped.
#[derive(Debug)]
pub struct Running {
    child: Child,
    /// Its stderr (`FILE.writer.txt`), removed with it.
    log: TempPath,
    /// The command as a report shows it (`cargo xtask writer …`).
    pub shown: String,
}

/// What a stopped writer said.
#[derive(Debug, Clone, Default)]
pub struct Stopped {
    /// Commits made (its last line, `writer: N commits`), when it said.
    pub commits: Option<u64>,
    /// Its other stderr lines (the last 20).
    pub notes: String,
}

/// How long a SIGTERMed writer may take to finish its commit.
const GRACE: Duration = Duration::from_secs(60);

impl Running {
    /// Starts the writer on the bbolt file `file`, committing every
    /// `interval` into `bucket` (etcd's shape otherwise), and waits up to
    /// two minutes until its first commit is on disk.
    pub fn start(file: &Path, interval: Duration, bucket: &str) -> Result<Running> {
        let exe = std::env::current_exe().context("cannot find the xtask binary")?;
        let (path, ms) = (file.to_string_lossy(), interval.as_millis().to_string());
        let args =
            ["writer", &path, "--interval-ms", &ms, "--bucket", bucket, "--seconds", "86400"];
        let cmd = Cmd::new(exe.to_string_lossy()).shown_as("cargo xtask").args(args);
        let f = File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        let before = file_txid(&f);
        let log = TempPath::new(PathBuf::from(format!("{}.writer.txt", file.display())));
        let wait = Duration::from_secs(120);
        let child = spawn_until(&cmd, log.path(), wait, || file_txid(&f) != before)?;
        Ok(Running { child, log, shown: cmd.shell() })
    }

    /// Where the writer is now as the kernel says (`/proc/PID/stat`'s
    /// state, `wchan`, the kernel stack where readable), for a report to
    /// say where a writer that stopped committing waits.
    pub fn kernel_state(&self) -> String {
        let pid = self.child.id();
        let read =
            |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_default();
        let stat = read("stat");
        let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
        let stack: Vec<String> = read("stack")
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
            .take(8)
            .collect();
        let stack =
            if stack.is_empty() { String::new() } else { format!(", stack {}", stack.join(" < ")) };
        format!("state {}, wchan {}{stack}", state.unwrap_or("?"), read("wchan").trim())
    }

    /// Stops the writer (SIGTERM: it finishes the commit under way) and returns what it said.
    pub fn stop(mut self) -> Result<Stopped> {
        reap(&mut self.child, GRACE);
        let text = std::fs::read_to_string(self.log.path()).context("the writer's stderr")?;
        let count = |l: &str| l.strip_prefix("writer: ")?.strip_suffix(" commits")?.parse().ok();
        let notes: Vec<&str> = text.lines().filter(|l| count(l).is_none()).collect();
        Ok(Stopped {
            commits: text.lines().rev().find_map(count),
            notes: notes[notes.len().saturating_sub(20)..].join("\n"),
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        reap(&mut self.child, GRACE);
    }
}
