//! The live view (`inspector open`) driven in a tmux pane of our own, and
//! what `/proc` says of a process while it runs (peak RSS, CPU time): the
//! one place `cargo xtask limits` and `bench live` drive the TUI from.
//!
//! A [`Tmux`] server has its own socket and no configuration, so nothing
//! of the user's tmux is touched, and it is killed when dropped (the TUI
//! with it). [`watch`] runs the live view on a file for a while and reads
//! its status line every few hundred milliseconds: when the first settled
//! structure appeared, and how old the structure shown was (`as of txid
//! N, X s ago`).

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::proc::shell_quote;

/// A tmux server of our own running one session, killed when dropped.
#[derive(Debug)]
pub struct Tmux {
    socket: String,
}

/// The session's name on our server.
const SESSION: &str = "mapwise";

impl Tmux {
    /// Starts a server (socket `mapwise-NAME-PID`) with one detached
    /// session of `cols` x `rows` cells running the shell command `line`
    /// (start it with `exec` to make the program the pane's process).
    ///
    /// # Errors
    /// When tmux cannot be run or refuses the session.
    pub fn start(name: &str, (cols, rows): (u16, u16), line: &str) -> Result<Tmux> {
        let t = Tmux { socket: format!("mapwise-{name}-{}", std::process::id()) };
        let (x, y) = (cols.to_string(), rows.to_string());
        let o = t.cmd(&["new-session", "-d", "-s", SESSION, "-x", &x, "-y", &y, line])?;
        if !o.status.success() {
            bail!("tmux: {}", String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(t)
    }

    /// Runs `tmux ARGS` against our server.
    ///
    /// # Errors
    /// When tmux cannot be run.
    pub fn cmd(&self, args: &[&str]) -> Result<std::process::Output> {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .context("cannot run tmux (apt-get install tmux)")
    }

    /// The pane's text as it is now (empty when it cannot be captured).
    pub fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", SESSION])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// The pid of the pane's process.
    ///
    /// # Errors
    /// When tmux does not say.
    pub fn pane_pid(&self) -> Result<u32> {
        let o = self.cmd(&["display-message", "-p", "-t", SESSION, "#{pane_pid}"])?;
        String::from_utf8_lossy(&o.stdout).trim().parse().context("no pane pid")
    }

    /// Types `keys` (tmux key names: `End`, `q`, `+`) into the pane.
    ///
    /// # Errors
    /// When tmux cannot be run.
    pub fn send_keys(&self, keys: &[&str]) -> Result<()> {
        let mut a = vec!["send-keys", "-t", SESSION];
        a.extend_from_slice(keys);
        self.cmd(&a).map(drop)
    }

    /// Waits (polling every 100 ms, up to `timeout`) until the screen
    /// shows `text`, and returns that screen.
    ///
    /// # Errors
    /// When it does not within `timeout` (the error quotes the screen).
    pub fn wait_for(&self, text: &str, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.screen();
            if s.contains(text) {
                return Ok(s);
            }
            if Instant::now() > deadline {
                bail!("the screen did not show {text:?} within {} s:\n{s}", timeout.as_secs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends `q` and waits up to a minute for process `pid` to exit.
    ///
    /// # Errors
    /// When it is still there after a minute.
    pub fn quit(&self, pid: u32) -> Result<()> {
        self.send_keys(&["q"])?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Path::new(&format!("/proc/{pid}")).exists() {
            if Instant::now() > deadline {
                bail!("the TUI (pid {pid}) did not quit within a minute");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// `VmHWM` (peak RSS) of a live process, in KiB.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time a process has used so far, every thread's (`utime + stime`
/// of `/proc/PID/stat`).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    cpu_time_of_stat(&s)
}

/// `utime + stime` of a `/proc/PID/stat` line. The fields after the
/// command name (which may hold spaces and parentheses) are counted from
/// its closing parenthesis: utime and stime are fields 14 and 15.
fn cpu_time_of_stat(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    let hz = Some(mapwise_native::os::process::clock_ticks_per_second()).filter(|&h| h > 0)?;
    Some(Duration::from_secs_f64((utime + stime) as f64 / hz as f64))
}

/// CPU use as a percentage of one core: `cpu` over `wall`.
pub fn core_pct(cpu: Duration, wall: Duration) -> f64 {
    if wall.is_zero() { 0.0 } else { 100.0 * cpu.as_secs_f64() / wall.as_secs_f64() }
}

/// How [`watch`] runs the live view.
#[derive(Debug, Clone, Copy)]
pub struct WatchOptions {
    /// Pane size in cells.
    pub size: (u16, u16),
    /// `inspector open --interval MS`; `None`: its default (500 ms).
    pub interval_ms: Option<u64>,
    /// How long to watch once the first settled structure is on screen.
    pub window: Duration,
    /// Time between two reads of the screen.
    pub sample_every: Duration,
    /// How long to wait for the first screen.
    pub first_timeout: Duration,
}

/// One read of the status line.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the view was started.
    pub at_s: f64,
    /// `as of txid N`, when shown.
    pub txid: Option<u64>,
    /// `X s ago`, when shown.
    pub age_s: Option<f64>,
    /// The file's own txid then (its newer valid meta page, read by
    /// xtask): how many commits the view was behind.
    pub file_txid: Option<u64>,
    /// `re-reading…` was shown (a new follower had not sent its first
    /// structure yet).
    pub rereading: bool,
    /// A warning about the structure was shown (`structure shown is
    /// older: …`, or an unsettled structure).
    pub warned: bool,
}

/// What [`watch`] saw.
#[derive(Debug, Clone, Serialize)]
pub struct Watched {
    /// The command line run in the pane.
    pub command: String,
    /// Seconds from start to the first screen (any structure).
    pub first_screen_s: f64,
    /// Seconds from start to the first screen showing a settled
    /// structure (`as of txid`); `None` when none appeared.
    pub first_settled_s: Option<f64>,
    /// The status line, read every [`WatchOptions::sample_every`] over
    /// the window.
    pub samples: Vec<Sample>,
    /// Peak RSS (`VmHWM`) at the end of the window, KiB.
    pub vm_hwm_kib: Option<u64>,
    /// CPU over the window (from the first settled structure to its
    /// end: the steady state), % of a core.
    pub cpu_pct_window: Option<f64>,
    /// CPU from start to the end of the window (the first read
    /// included), % of a core.
    pub cpu_pct_total: Option<f64>,
    /// The window's length, seconds.
    pub window_s: f64,
    /// The last status line seen.
    pub status_line: String,
    /// The first warning seen on screen, if any.
    pub first_warning: Option<String>,
}

impl Watched {
    /// The ages shown (`X s ago`), from the samples that showed one.
    #[must_use]
    pub fn ages(&self) -> Vec<f64> {
        self.samples.iter().filter_map(|s| s.age_s).collect()
    }

    /// How many commits the view was behind the file, per sample.
    #[must_use]
    pub fn behind(&self) -> Vec<f64> {
        let behind = |s: &Sample| Some(s.file_txid?.saturating_sub(s.txid?) as f64);
        self.samples.iter().filter_map(behind).collect()
    }

    /// Commits the file took during the window (its txid at the last
    /// sample minus at the first).
    #[must_use]
    pub fn window_commits(&self) -> Option<u64> {
        let txid = |s: Option<&Sample>| s?.file_txid;
        Some(txid(self.samples.last())?.saturating_sub(txid(self.samples.first())?))
    }
}

/// `as of txid N, X s ago` in a status line (`as of txid N, now`, the
/// newest commit the view has seen, is age 0).
pub fn parse_age(screen: &str) -> Option<(u64, f64)> {
    let at = screen.find("as of txid ")?;
    let rest = &screen[at + "as of txid ".len()..];
    let (txid, rest) = rest.split_once(", ")?;
    if rest.starts_with("now") {
        return Some((txid.trim().parse().ok()?, 0.0));
    }
    let age = rest.split_once(" s ago")?.0;
    Some((txid.trim().parse().ok()?, age.trim().parse().ok()?))
}

/// The txid of the newer valid meta page of a bbolt file (read through
/// the page cache: two pages the writer keeps hot anyway).
pub fn file_txid(file: &fs::File) -> Option<u64> {
    let mut buf = vec![0u8; 2 * 65536];
    let n = file.read_at(&mut buf, 0).ok()?;
    let first = mapwise_core::bolt::Meta::parse(&buf[..n], 0)?;
    let ps = usize::try_from(first.page_size).ok()?;
    [0u8, 1]
        .iter()
        .filter_map(|&i| {
            let page = buf.get(usize::from(i) * ps..(usize::from(i) + 1) * ps)?;
            let m = mapwise_core::bolt::Meta::parse(page, i)?;
            m.validate().is_ok().then_some(m.txid)
        })
        .max()
}

/// The status line of a screen (the one with `Resident `).
fn status_line(screen: &str) -> String {
    screen.lines().find(|l| l.contains("Resident ")).unwrap_or_default().trim().to_owned()
}

/// A warning about the structure on screen, if any.
fn warning(screen: &str) -> Option<String> {
    screen
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("structure shown is older") || l.starts_with("structure: "))
        .map(str::to_owned)
}

/// Runs `inspector open FILE` in a tmux pane for `opts.window` after its
/// first settled structure, reading the status line every `opts.sample_every`, then
/// reads its peak RSS and CPU time and quits it.
///
/// # Errors
/// When tmux fails, no first screen appears in time, or the view does
/// not quit.
pub fn watch(inspector: &Path, file: &Path, opts: &WatchOptions) -> Result<Watched> {
    let mut line = format!(
        "exec {} open {}",
        shell_quote(&inspector.to_string_lossy()),
        shell_quote(&file.to_string_lossy())
    );
    if let Some(ms) = opts.interval_ms {
        line.push_str(&format!(" --interval {ms}"));
    }
    let start = Instant::now();
    let t = Tmux::start("live", opts.size, &line)?;
    let pid = t.pane_pid()?;
    let f = fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let mut first_screen = None;
    let mut first_settled = None;
    let mut first_warning = None;
    let mut samples = Vec::new();
    let mut last = String::new();
    let mut window_start = None;
    let mut cpu_at_window = None;
    loop {
        let screen = t.screen();
        let now = start.elapsed();
        let shown = screen.contains("Resident ");
        if shown && first_screen.is_none() {
            first_screen = Some(now);
        }
        let age = parse_age(&screen);
        if age.is_some() && first_settled.is_none() {
            first_settled = Some(now);
        }
        // The window is the view's steady state: it opens at the first
        // settled structure (the first whole read is behind it), or, for a
        // view that shows none, a first timeout after its first screen.
        let steady = first_settled.is_some()
            || first_screen.is_some_and(|s| now.saturating_sub(s) > opts.first_timeout);
        if steady && window_start.is_none() {
            window_start = Some(Instant::now());
            cpu_at_window = cpu_time(pid);
        }
        if shown {
            let w = warning(&screen);
            if first_warning.is_none() {
                first_warning.clone_from(&w);
            }
            samples.push(Sample {
                at_s: now.as_secs_f64(),
                txid: age.map(|a| a.0),
                age_s: age.map(|a| a.1),
                file_txid: file_txid(&f),
                rereading: screen.contains("re-reading…"),
                warned: w.is_some(),
            });
            last = status_line(&screen);
        } else if now > opts.first_timeout {
            bail!(
                "`{line}` showed no first screen within {} s:\n{screen}",
                opts.first_timeout.as_secs()
            );
        }
        if window_start.is_some_and(|w| w.elapsed() >= opts.window) {
            break;
        }
        // Until the first screen, look often: that time is measured.
        let pause = if shown { opts.sample_every } else { Duration::from_millis(50) };
        std::thread::sleep(pause);
    }
    let window = window_start.map_or(Duration::ZERO, |w| w.elapsed());
    let vm_hwm_kib = vm_hwm_kib(pid);
    let cpu_end = cpu_time(pid);
    let total = start.elapsed();
    t.quit(pid)?;
    Ok(Watched {
        command: line.trim_start_matches("exec ").to_owned(),
        first_screen_s: first_screen.map_or(0.0, |d| d.as_secs_f64()),
        first_settled_s: first_settled.map(|d| d.as_secs_f64()),
        samples,
        vm_hwm_kib,
        cpu_pct_window: cpu_end
            .zip(cpu_at_window)
            .map(|(e, s)| core_pct(e.saturating_sub(s), window)),
        cpu_pct_total: cpu_end.map(|e| core_pct(e, total)),
        window_s: window.as_secs_f64(),
        status_line: last,
        first_warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_from_the_status_line() {
        let s = "Resident 1971/76547 pages 3%  as of txid 39, 0.4 s ago  meta 2/2 100%";
        assert_eq!(parse_age(s), Some((39, 0.4)));
        assert_eq!(parse_age("Resident 1/2  as of txid 40, now  meta"), Some((40, 0.0)));
        assert_eq!(parse_age("Resident 1/2 pages  re-reading…"), None);
        assert_eq!(parse_age("as of txid x, 1 s ago"), None);
    }

    #[test]
    fn cpu_time_counts_user_and_system() {
        let hz = mapwise_native::os::process::clock_ticks_per_second() as f64;
        // A command name with spaces and a parenthesis.
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 5 0 0";
        let t = cpu_time_of_stat(stat).unwrap();
        assert!((t.as_secs_f64() - 300.0 / hz).abs() < 1e-9, "{t:?}");
        assert!(cpu_time(std::process::id()).is_some());
        assert!(vm_hwm_kib(std::process::id()).unwrap() > 0);
        assert!((core_pct(Duration::from_secs(1), Duration::from_secs(4)) - 25.0).abs() < 1e-9);
    }
}
