//! Child processes: run, capture, time, meter, and print exactly what ran.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use mapwise_native::os::process::{ChildUsage, wait_with_usage};

use super::interrupt;

/// A command line, kept as strings so the report can show the exact command
/// (to paste in the workspace root, where benches run).
#[derive(Clone, Debug, Default)]
pub struct Cmd {
    /// Variables set for the child only (shown before the program).
    env: Vec<(String, String)>,
    program: String,
    /// How [`Cmd::shell`] writes the program instead ([`Cmd::shown_as`]).
    shown: Option<String>,
    args: Vec<String>,
    /// Peak RSS through GNU time ([`Cmd::metered`]).
    metered: bool,
    /// Standard output counted and dropped ([`Cmd::counting_stdout`]).
    count_only: bool,
    /// Standard output to /dev/null ([`Cmd::stdout_to_null`]).
    to_null: bool,
    /// Its own working directory ([`Cmd::in_dir`]).
    dir: Option<PathBuf>,
}

/// GNU time (Debian package `time`): the peak-RSS meter of [`Cmd::metered`].
pub const GNU_TIME: &str = "/usr/bin/time";

/// What a finished child left.
#[derive(Debug, Default)]
pub struct Output {
    /// Standard output, lossily decoded (empty with [`Cmd::counting_stdout`]).
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
    /// Peak RSS of the child in KiB (`ru_maxrss`); unmetered never below
    /// xtask's own (Linux counts the image replaced at `exec`).
    pub max_rss_kib: Option<u64>,
    /// Bytes the child wrote to files (`ru_oublock` × 512; not pipes).
    pub written_bytes: Option<u64>,
}

impl Cmd {
    /// A command running `program`.
    pub fn new(program: impl Into<String>) -> Self {
        Self { program: program.into(), ..Self::default() }
    }

    /// Meters peak RSS and file writes with [`GNU_TIME`] (its children start
    /// from about 1 MiB); [`Cmd::shell`] still shows the command alone.
    #[must_use]
    pub fn metered(mut self) -> Self {
        self.metered = true;
        self
    }

    /// Drops standard output as it comes, counting its bytes.
    #[must_use]
    pub fn counting_stdout(mut self) -> Self {
        self.count_only = true;
        self
    }

    /// Sends standard output to /dev/null (as the 2003 mmap-test ran);
    /// [`Cmd::shell`] shows the redirection.
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

    /// Shows the program as `text` in [`Cmd::shell`], unquoted (it may name
    /// a shell variable the report defines).
    #[must_use]
    pub fn shown_as(mut self, text: impl Into<String>) -> Self {
        self.shown = Some(text.into());
        self
    }

    /// Runs in `dir` (relative to the directory given to [`Cmd::output`]), which
    /// [`Cmd::shell`] shows as `(cd DIR && …)`.
    #[must_use]
    pub fn in_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Sets `key` to `value` for the child (an empty value is set: `HGRCPATH=`).
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
    pub fn arg(self, a: impl Into<String>) -> Self {
        self.args([a])
    }

    /// `hg` as the revlog peer runs it: no user configuration, plain output.
    pub fn hg() -> Self {
        Self::new("hg").env("HGRCPATH", "").env("HGPLAIN", "1")
    }

    /// `cargo build --release -p PACKAGE [--bin BIN]`: how every bench builds what it measures.
    pub fn cargo_release(package: &str, bin: Option<&str>) -> Self {
        let c = Self::new("cargo").args(["build", "--release", "-p", package]);
        match bin {
            Some(b) => c.args(["--bin", b]),
            None => c,
        }
    }

    /// The same command run under `program` with `args` first (`strace -o LOG …`), in the
    /// same directory and environment.
    #[must_use]
    pub fn under<S: Into<String>>(&self, program: &str, args: impl IntoIterator<Item = S>) -> Self {
        let args = args.into_iter().map(Into::into).chain([self.program.clone()]);
        let args = args.chain(self.args.iter().cloned()).collect();
        Self { program: program.to_owned(), shown: None, args, ..self.clone() }
    }

    /// Appends one argument when `cond` holds.
    #[must_use]
    pub fn arg_if(self, cond: bool, a: impl Into<String>) -> Self {
        if cond { self.arg(a) } else { self }
    }

    /// The command as a shell needs it typed, its environment first (`HGRCPATH= HGPLAIN=1 hg …`),
    /// an argument or [`Cmd::in_dir`] under the current directory (the workspace root every
    /// bench runs from) relative to it, so no report names this machine's directories.
    pub fn shell(&self) -> String {
        let env = self.env.iter().map(|(k, v)| {
            format!("{k}={}", if v.is_empty() { String::new() } else { shell_quote(v) })
        });
        let here = std::env::current_dir().unwrap_or_default();
        let rel = |a: &String| match Path::new(a).strip_prefix(&here) {
            Ok(r) if here.is_absolute() && !r.as_os_str().is_empty() => r.to_string_lossy().into(),
            _ => a.clone(),
        };
        let line = env
            .chain([self.shown.clone().unwrap_or_else(|| shell_quote(&self.program))])
            .chain(self.args.iter().map(|a| shell_quote(&rel(a))))
            .chain(self.to_null.then(|| "> /dev/null".to_owned()))
            .collect::<Vec<_>>()
            .join(" ");
        match self.dir.as_deref().map(|d| d.strip_prefix(&here).unwrap_or(d)) {
            Some(d) if !matches!(d.to_str(), Some("" | ".")) => {
                format!("(cd {} && {line})", shell_quote(&d.to_string_lossy()))
            }
            _ => line,
        }
    }

    /// Runs to completion in `cwd` with stdin closed, capturing both
    /// streams. A failing exit status is not an error here (see
    /// [`Cmd::run`]); a signal that reached xtask meanwhile is.
    pub fn output(&self, cwd: &Path) -> Result<Output> {
        interrupt::check()?;
        let meter = self.metered.then(tempfile::NamedTempFile::new).transpose()?;
        let start = Instant::now();
        let mut command = match &meter {
            Some(m) => {
                let mut c = std::process::Command::new(GNU_TIME);
                c.args(["-q", "-f", "%M %O", "-o"]).arg(m.path()).arg(&self.program);
                c
            }
            None => std::process::Command::new(&self.program),
        };
        let stdout = if self.to_null { Stdio::null() } else { Stdio::piped() };
        let mut child = command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.dir.as_ref().map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| match self.metered {
                true => format!("cannot start {GNU_TIME} (apt-get install time)"),
                false => format!("cannot start {}", self.program),
            })?;
        let err_reader = drain(child.stderr.take(), true);
        let (stdout, stdout_bytes) =
            drain(child.stdout.take(), !self.count_only).join().unwrap_or_default();
        let (stderr, _) = err_reader.join().unwrap_or_default();
        let (status, mut usage) = wait_with_usage(&mut child).context("wait4")?;
        let wall_s = start.elapsed().as_secs_f64();
        let (mut shown, mut code) = (status.to_string(), status.code());
        if let Some(m) = &meter {
            let text = std::fs::read_to_string(m.path()).unwrap_or_default();
            usage = parse_gnu_time(&text);
            // GNU time writes "Command terminated by signal N" before its
            // numbers when the child was killed.
            if let Some(l) = text.lines().find(|l| l.starts_with("Command terminated")) {
                (shown, code) = (l.to_owned(), None);
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

/// A thread reading `r` to its end: (what it kept, bytes read).
fn drain<R: Read + Send + 'static>(
    r: Option<R>,
    keep: bool,
) -> std::thread::JoinHandle<(Vec<u8>, u64)> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let n = match r {
            Some(mut r) if keep => {
                let _ = r.read_to_end(&mut buf);
                buf.len() as u64
            }
            Some(mut r) => std::io::copy(&mut r, &mut std::io::sink()).unwrap_or(0),
            None => 0,
        };
        (buf, n)
    })
}

/// GNU time's `-f '%M %O'` line (the last line of its output file).
fn parse_gnu_time(text: &str) -> ChildUsage {
    let mut words =
        text.lines().last().unwrap_or_default().split_whitespace().map(|w| w.parse::<u64>().ok());
    ChildUsage {
        max_rss_kib: words.next().flatten().filter(|&k| k > 0),
        written_bytes: words.next().flatten().map(|b| b * 512),
    }
}

/// The last `lines` lines of a text.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The last line of `text` that is a JSON object, read as `T`.
pub fn json_line<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let line = text.lines().rev().map(str::trim).find(|l| l.starts_with('{'));
    let line = line.ok_or_else(|| format!("no JSON object in output {:?}", tail(text, 3)))?;
    serde_json::from_str(line).map_err(|e| format!("bad JSON from mapwise: {e}: {line}"))
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
            .args(["bolt", "target/bench/a b.db"])
            .arg_if(true, "--populate")
            .arg_if(false, "--cold")
            .args(["it's", ""]);
        assert_eq!(
            c.shell(),
            r"target/release/mapwise bolt 'target/bench/a b.db' --populate 'it'\''s' ''"
        );
        let here = std::env::current_dir().expect("cwd");
        let abs = Cmd::new("hg").arg("init").arg(here.join("target/x").to_string_lossy());
        assert_eq!(abs.shell(), "hg init target/x");
        let c = Cmd::new("rrdtool").env("TZ", "UTC").arg("last").in_dir(here.join("t/d"));
        assert_eq!(c.shell(), "(cd t/d && TZ=UTC rrdtool last)");
        let c = Cmd::new("/cache/boltoracle").shown_as("\"$BOLT_ORACLE\"/boltoracle").arg("x");
        assert_eq!(c.shell(), "\"$BOLT_ORACLE\"/boltoracle x");
        let c = Cmd::new("hg").env("HGRCPATH", "").env("X", "a b").args(["log", "-T", "{rev}\\n"]);
        assert_eq!(c.shell(), r"HGRCPATH= X='a b' hg log -T '{rev}\n'");
        let c = Cmd::cargo_release("mapwise-cli", Some("mapwise")).stdout_to_null();
        assert_eq!(c.shell(), "cargo build --release -p mapwise-cli --bin mapwise > /dev/null");
        assert_eq!((tail("a\nb\nc\n", 2), tail("a", 5)), ("b\nc".to_owned(), "a".to_owned()));
    }

    #[test]
    fn children_get_their_environment_and_fail_loudly() {
        let sh = |s: &str| Cmd::new("sh").env("X", "seen").args(["-c", s]).run(Path::new("."));
        assert_eq!(sh("printf %s \"$X\"").unwrap().stdout, "seen");
        let e = sh("echo oops >&2; exit 2").unwrap_err().to_string();
        assert!(e.contains("failed (exit status: 2)") && e.ends_with("oops"), "{e}");
    }

    #[test]
    fn a_metered_child_reports_its_own_peak_and_writes() {
        let u = parse_gnu_time("Command terminated by signal 9\n1234 16\n");
        assert_eq!((u.max_rss_kib, u.written_bytes), (Some(1234), Some(8192)));
        if !Path::new(GNU_TIME).is_file() {
            eprintln!("skipped: no {GNU_TIME}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("w.bin");
        let script =
            format!("head -c 1048576 /dev/zero > {} && sync && printf abc && exit 3", f.display());
        let out = Cmd::new("sh").args(["-c", &script]).metered().counting_stdout();
        let out = out.output(Path::new(".")).unwrap();
        assert_eq!(
            (out.code, out.success, out.stdout.as_str(), out.stdout_bytes),
            (Some(3), false, "", 3)
        );
        // sh and head: a few MiB at most, well below xtask's own image.
        let rss = out.max_rss_kib.unwrap();
        assert!(rss > 0 && rss < 64 * 1024, "{rss} KiB");
        assert!(out.written_bytes.unwrap() >= 1 << 20, "{:?}", out.written_bytes);
    }
}
