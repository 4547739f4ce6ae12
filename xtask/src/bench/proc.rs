//! Child processes: run, capture, time, and print exactly what ran.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

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
}

/// What a finished child left.
#[derive(Debug)]
pub struct Output {
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// Spawn to exit, as seen from here (includes process start-up).
    pub wall_s: f64,
    /// Exit status zero.
    pub success: bool,
    /// Exit status as printed (`exit status: 1`, `signal: 9`).
    pub status: String,
    /// Peak resident set size of the child in KiB (`ru_maxrss` from
    /// `wait4`; not its children). Never below xtask's own peak RSS at
    /// spawn time: Linux counts in `ru_maxrss` the RSS of the image a
    /// process replaced at `exec`, and std spawns with vfork semantics, so
    /// that image is xtask's (measured 7 MiB by `cargo xtask limits`,
    /// which therefore meters through GNU time instead). Fine for the
    /// hundreds of MiB the benches compare; not for small processes.
    pub max_rss_kib: Option<u64>,
}

impl Cmd {
    /// A command running `program`.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            env: Vec::new(),
            program: program.into(),
            shown: None,
            args: Vec::new(),
        }
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
        let c = Self::new("cargo")
            .arg("build")
            .arg("--release")
            .arg("-p")
            .arg(package);
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
                format!(
                    "{k}={}",
                    if v.is_empty() {
                        String::new()
                    } else {
                        shell_quote(v)
                    }
                )
            })
            .chain(std::iter::once(
                self.shown
                    .clone()
                    .unwrap_or_else(|| shell_quote(&self.program)),
            ))
            .chain(self.args.iter().map(|a| shell_quote(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs to completion in `cwd` with stdin closed, capturing both
    /// streams. A failing exit status is not an error here (see
    /// [`Cmd::run`]); a signal that reached xtask meanwhile is.
    pub fn output(&self, cwd: &Path) -> Result<Output> {
        interrupt::check()?;
        let start = Instant::now();
        let mut child = std::process::Command::new(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", self.program))?;
        let drain = |r: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_end(&mut buf);
                }
                buf
            })
        };
        let err_reader = drain(
            child
                .stderr
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
        );
        let out_reader = drain(
            child
                .stdout
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
        );
        let stdout = out_reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        let (status, max_rss_kib) = wait_rusage(&mut child)?;
        let wall_s = start.elapsed().as_secs_f64();
        interrupt::check()?;
        Ok(Output {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            wall_s,
            success: status.success(),
            status: status.to_string(),
            max_rss_kib,
        })
    }

    /// Like [`Cmd::output`], but a failing exit status is an error that
    /// quotes the end of the child's stderr.
    pub fn run(&self, cwd: &Path) -> Result<Output> {
        let out = self.output(cwd)?;
        if !out.success {
            bail!(
                "`{}` failed ({}):\n{}",
                self.shell(),
                out.status,
                tail(&out.stderr, 20)
            );
        }
        Ok(out)
    }
}

/// Waits for `child` with `wait4(2)`, which also returns its resource
/// usage: the exit status and the peak RSS in KiB (Linux reports
/// `ru_maxrss` in KiB).
fn wait_rusage(child: &mut std::process::Child) -> Result<(ExitStatus, Option<u64>)> {
    let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped (std has not
        // waited for it); `status` and `ru` are valid for writes.
        let r = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4");
        }
    }
    let rss = u64::try_from(ru.ru_maxrss).ok().filter(|&k| k > 0);
    Ok((ExitStatus::from_raw(status), rss))
}

/// The last `lines` lines of a text.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Quotes one word for a POSIX shell, leaving plain words bare.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
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
        assert_eq!(
            c.shell(),
            r"HGRCPATH= HGPLAIN=1 X='a b' hg log -T '{rev}\n'"
        );
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
    fn tails() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
