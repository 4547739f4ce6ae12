//! Child processes: run, capture, time, meter, and print exactly what ran.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use mapwise_native::os::process::{ChildUsage, wait_with_usage};

use super::interrupt;

/// A command line. Arguments are strings so the report can show the exact
/// command (benches run from the workspace root with relative paths, so
/// the shown line can be pasted there as is).
#[derive(Clone, Debug)]
pub struct Cmd {
    /// Variables set for the child only (shown before the program).
    env: Vec<(String, String)>,
    program: String,
    /// How [`Cmd::shell`] writes the program when its path is this
    /// machine's (e.g. `"$BOLT_ORACLE"/boltoracle` for a binary in a cache
    /// directory); `None`: the program as run.
    shown: Option<String>,
    args: Vec<String>,
    /// Peak RSS through GNU time ([`Cmd::metered`]) instead of our own
    /// `wait4`.
    metered: bool,
    /// Standard output counted and dropped ([`Cmd::counting_stdout`]).
    count_only: bool,
    /// Standard output to /dev/null ([`Cmd::stdout_to_null`]).
    to_null: bool,
}

/// GNU time (Debian package `time`): the peak-RSS meter of
/// [`Cmd::metered`].
pub const GNU_TIME: &str = "/usr/bin/time";

/// What a finished child left.
#[derive(Debug)]
pub struct Output {
    /// Standard output, lossily decoded.
    /// (empty with [`Cmd::counting_stdout`]: see `stdout_bytes`).
    pub stdout: String,
    /// Bytes written to standard output.
    pub stdout_bytes: u64,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// Spawn to exit, as seen from here (includes process start-up).
    pub wall_s: f64,
    /// Exit status zero.
    pub success: bool,
    /// Exit status as printed (`exit status: 1`, `signal: 9`; `Command
    /// terminated by signal 9` when metered).
    pub status: String,
    /// Exit code, when the child exited (was not killed by a signal).
    pub code: Option<i32>,
    /// Peak resident set size of the child in KiB (`ru_maxrss` from
    /// `wait4`; not its children). Never below xtask's own peak RSS at
    /// spawn time: Linux counts in `ru_maxrss` the RSS of the image a
    /// process replaced at `exec`, and std spawns with vfork semantics, so
    /// that image is xtask's (measured 7 MiB by `cargo xtask limits`,
    /// which therefore meters through GNU time instead). Fine for the
    /// hundreds of MiB the benches compare; not for small processes: those
    /// are [`Cmd::metered`], which reads the child's own peak.
    pub max_rss_kib: Option<u64>,
    /// Bytes the child wrote to files (`ru_oublock` × 512: what it
    /// dirtied in the page cache or wrote with `O_DIRECT`, whether or not
    /// it reached the disk yet; pipes and sockets not counted).
    pub written_bytes: Option<u64>,
}

impl Cmd {
    /// A command running `program`.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            env: Vec::new(),
            program: program.into(),
            shown: None,
            args: Vec::new(),
            metered: false,
            count_only: false,
            to_null: false,
        }
    }

    /// Meters the child's peak RSS and file writes with GNU time
    /// ([`GNU_TIME`] `-f '%M %O'`, which reads them with its own `wait4`),
    /// not with ours: Linux counts in a process's `ru_maxrss` the image it
    /// replaced at `exec`, so our `wait4` never reports less than xtask's
    /// own peak (see [`Output::max_rss_kib`]); GNU time is a small C
    /// program whose children start from about 1 MiB. [`Cmd::shell`]
    /// still shows the command alone.
    #[must_use]
    pub fn metered(mut self) -> Self {
        self.metered = true;
        self
    }

    /// Drops the child's standard output as it comes, counting its bytes
    /// ([`Output::stdout_bytes`]), for commands that print more than is
    /// worth keeping.
    #[must_use]
    pub fn counting_stdout(mut self) -> Self {
        self.count_only = true;
        self
    }

    /// Sends the child's standard output to /dev/null (a data stream
    /// nobody reads, as the 2003 mmap-test ran); [`Cmd::shell`] shows the
    /// redirection.
    #[must_use]
    pub fn stdout_to_null(mut self) -> Self {
        self.to_null = true;
        self
    }

    /// The program, as run.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The arguments, as run.
    pub fn arguments(&self) -> &[String] {
        &self.args
    }

    /// Show the program as `text` in [`Cmd::shell`] (written as is, not
    /// quoted: it may name a shell variable the report defines).
    #[must_use]
    pub fn shown_as(mut self, text: impl Into<String>) -> Self {
        self.shown = Some(text.into());
        self
    }

    /// Sets the environment variable `key` to `value` for the child (an
    /// empty value is set, not removed: `HGRCPATH=`).
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Appends several arguments.
    #[must_use]
    pub fn args<S: Into<String>>(mut self, a: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(a.into_iter().map(Into::into));
        self
    }

    /// Appends one argument.
    #[must_use]
    pub fn arg(mut self, a: impl Into<String>) -> Self {
        self.args.push(a.into());
        self
    }

    /// `cargo build --release -p PACKAGE [--bin BIN]`: how every bench
    /// builds what it measures.
    pub fn cargo_release(package: &str, bin: Option<&str>) -> Self {
        let c = Self::new("cargo").arg("build").arg("--release").arg("-p").arg(package);
        match bin {
            Some(b) => c.arg("--bin").arg(b),
            None => c,
        }
    }

    /// Appends one argument when `cond` holds.
    #[must_use]
    pub fn arg_if(self, cond: bool, a: impl Into<String>) -> Self {
        if cond { self.arg(a) } else { self }
    }

    /// The command as a shell would need it typed, its environment
    /// first (`HGRCPATH= HGPLAIN=1 hg …`).
    pub fn shell(&self) -> String {
        self.env
            .iter()
            .map(|(k, v)| {
                format!("{k}={}", if v.is_empty() { String::new() } else { shell_quote(v) })
            })
            .chain(std::iter::once(
                self.shown.clone().unwrap_or_else(|| shell_quote(&self.program)),
            ))
            .chain(self.args.iter().map(|a| shell_quote(a)))
            .chain(self.to_null.then(|| "> /dev/null".to_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs to completion in `cwd` with stdin closed, capturing both
    /// streams. A failing exit status is not an error here (see
    /// [`Cmd::run`]); a signal that reached xtask meanwhile is.
    pub fn output(&self, cwd: &Path) -> Result<Output> {
        interrupt::check()?;
        let meter = self.metered.then(MeterFile::new);
        let start = Instant::now();
        let mut command = match &meter {
            Some(m) => {
                let mut c = std::process::Command::new(GNU_TIME);
                c.args(["-q", "-f", "%M %O", "-o"]).arg(&m.0).arg(&self.program).args(&self.args);
                c
            }
            None => {
                let mut c = std::process::Command::new(&self.program);
                c.args(&self.args);
                c
            }
        };
        let mut child = command
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(if self.to_null {
                Stdio::from(std::fs::File::create("/dev/null").context("cannot open /dev/null")?)
            } else {
                Stdio::piped()
            })
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| {
                if self.metered {
                    format!("cannot start {GNU_TIME} (apt-get install time)")
                } else {
                    format!("cannot start {}", self.program)
                }
            })?;
        let drain = |r: Option<Box<dyn Read + Send>>, keep: bool| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut n = 0u64;
                if let Some(mut r) = r {
                    let mut chunk = vec![0u8; 1 << 16];
                    while let Ok(k) = r.read(&mut chunk) {
                        if k == 0 {
                            break;
                        }
                        n += k as u64;
                        if keep {
                            buf.extend_from_slice(&chunk[..k]);
                        }
                    }
                }
                (buf, n)
            })
        };
        let err_reader =
            drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>), true);
        let out_reader = drain(
            child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>),
            !self.count_only,
        );
        let (stdout, stdout_bytes) = out_reader.join().unwrap_or_default();
        let (stderr, _) = err_reader.join().unwrap_or_default();
        let (status, mut usage) = wait_with_usage(&mut child).context("wait4")?;
        let wall_s = start.elapsed().as_secs_f64();
        let mut shown = status.to_string();
        let mut code = status.code();
        if let Some(m) = &meter {
            let text = std::fs::read_to_string(&m.0).unwrap_or_default();
            usage = parse_gnu_time(&text);
            // GNU time writes "Command terminated by signal N" before its
            // numbers when the child was killed.
            if let Some(l) = text.lines().find(|l| l.starts_with("Command terminated")) {
                l.clone_into(&mut shown);
                code = None;
            }
        }
        interrupt::check()?;
        Ok(Output {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stdout_bytes,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            wall_s,
            success: code == Some(0),
            status: shown,
            code,
            max_rss_kib: usage.max_rss_kib,
            written_bytes: usage.written_bytes,
        })
    }

    /// Like [`Cmd::output`], but a failing exit status is an error that
    /// quotes the end of the child's stderr.
    pub fn run(&self, cwd: &Path) -> Result<Output> {
        let out = self.output(cwd)?;
        if !out.success {
            bail!("`{}` failed ({}):\n{}", self.shell(), out.status, tail(&out.stderr, 20));
        }
        Ok(out)
    }
}

/// What `wait4` (ours or GNU time's) says a child used.
type Usage = ChildUsage;

/// GNU time's `-f '%M %O'` line (the last line of its output file).
fn parse_gnu_time(text: &str) -> Usage {
    let mut words =
        text.lines().last().unwrap_or_default().split_whitespace().map(|w| w.parse::<u64>().ok());
    Usage {
        max_rss_kib: words.next().flatten().filter(|&k| k > 0),
        written_bytes: words.next().flatten().map(|b| b * 512),
    }
}

/// A file GNU time writes its numbers to, removed on drop.
struct MeterFile(PathBuf);

impl MeterFile {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Self(std::env::temp_dir().join(format!("xtask-meter-{}-{n}.txt", std::process::id())))
    }
}

impl Drop for MeterFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The last `lines` lines of a text.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Quotes one word for a POSIX shell, leaving plain words bare.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_lines_quote_only_what_needs_it() {
        let c = Cmd::new("target/release/mapwise")
            .arg("bolt")
            .arg("traverse")
            .arg("target/bench/files/a b.db")
            .arg_if(true, "--populate")
            .arg_if(false, "--cold")
            .arg("it's")
            .arg("");
        assert_eq!(
            c.shell(),
            r"target/release/mapwise bolt traverse 'target/bench/files/a b.db' --populate 'it'\''s' ''"
        );
    }

    #[test]
    fn a_machine_path_program_shows_as_given() {
        let c = Cmd::new("/some/build/cache/boltoracle")
            .shown_as("\"$BOLT_ORACLE\"/boltoracle")
            .arg("traverse");
        assert_eq!(c.shell(), "\"$BOLT_ORACLE\"/boltoracle traverse");
    }

    #[test]
    fn environments_show_before_the_program() {
        let c = Cmd::new("hg")
            .env("HGRCPATH", "")
            .env("HGPLAIN", "1")
            .env("X", "a b")
            .args(["log", "-T", "{rev}\\n"]);
        assert_eq!(c.shell(), r"HGRCPATH= HGPLAIN=1 X='a b' hg log -T '{rev}\n'");
    }

    #[test]
    fn the_environment_reaches_the_child() {
        let out = Cmd::new("sh")
            .env("MAPWISE_PROC_TEST", "seen")
            .args(["-c", "printf %s \"$MAPWISE_PROC_TEST\""])
            .run(Path::new("."))
            .unwrap();
        assert_eq!(out.stdout, "seen");
    }

    #[test]
    fn a_metered_child_reports_its_own_peak_and_writes() {
        if !Path::new(GNU_TIME).is_file() {
            eprintln!("skipped: no {GNU_TIME}");
            return;
        }
        let dir = std::env::temp_dir().join(format!("xtask-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("w.bin");
        let out = Cmd::new("sh")
            .args([
                "-c",
                &format!(
                    "head -c 1048576 /dev/zero > {} && sync && printf abc && exit 3",
                    f.display()
                ),
            ])
            .metered()
            .counting_stdout()
            .output(Path::new("."))
            .unwrap();
        assert_eq!(out.code, Some(3));
        assert!(!out.success);
        assert_eq!(out.stdout, "");
        assert_eq!(out.stdout_bytes, 3);
        // sh and head: a few MiB at most, well below xtask's own image.
        let rss = out.max_rss_kib.unwrap();
        assert!(rss > 0 && rss < 64 * 1024, "{rss} KiB");
        assert!(out.written_bytes.unwrap() >= 1 << 20, "{:?}", out.written_bytes);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn gnu_time_lines_parse() {
        let u = parse_gnu_time("Command terminated by signal 9\n1234 16\n");
        assert_eq!((u.max_rss_kib, u.written_bytes), (Some(1234), Some(8192)));
        let u = parse_gnu_time("");
        assert_eq!((u.max_rss_kib, u.written_bytes), (None, None));
    }

    #[test]
    fn tails() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
