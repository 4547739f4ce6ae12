//! The live view (`inspector open`) driven in a [`Tmux`] pane of our own,
//! and what `/proc` says of it (peak RSS, CPU time): the one place
//! `cargo xtask limits` and `bench live` drive the TUI from.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::proc::shell_quote;

/// A tmux server of our own (its own socket, no configuration: the user's
/// tmux untouched) running one session, killed with the TUI when dropped.
#[derive(Debug)]
pub struct Tmux {
    socket: String,
}

/// The session's name on our server.
const SESSION: &str = "mapwise";

impl Tmux {
    /// Starts a server (socket `mapwise-NAME-PID`) with one detached session
    /// of `cols` x `rows` cells running the shell command `line` (`exec` it
    /// to make the program the pane's process).
    pub fn start(name: &str, (cols, rows): (u16, u16), line: &str) -> Result<Tmux> {
        let t = Tmux { socket: format!("mapwise-{name}-{}", std::process::id()) };
        let (x, y) = (cols.to_string(), rows.to_string());
        t.cmd(&["new-session", "-d", "-s", SESSION, "-x", &x, "-y", &y, line])?;
        Ok(t)
    }

    /// `tmux ARGS` against our server; its stdout, or an error quoting its stderr.
    fn cmd(&self, args: &[&str]) -> Result<String> {
        let o = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .context("cannot run tmux (apt-get install tmux)")?;
        if !o.status.success() {
            bail!("tmux {}: {}", args[0], String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// The pane's text as it is now (empty when it cannot be captured).
    pub fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", SESSION]).unwrap_or_default()
    }

    /// The pid of the pane's process.
    pub fn pane_pid(&self) -> Result<u32> {
        let o = self.cmd(&["display-message", "-p", "-t", SESSION, "#{pane_pid}"])?;
        o.trim().parse().context("no pane pid")
    }

    /// Types `keys` (tmux key names: `End`, `q`, `+`) into the pane.
    pub fn send_keys(&self, keys: &[&str]) -> Result<()> {
        self.cmd(&[&["send-keys", "-t", SESSION], keys].concat()).map(drop)
    }

    /// Waits (polling every 100 ms, up to `timeout`) until the screen
    /// shows `text`, and returns that screen; the error quotes the last.
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
    let v = s.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    v.trim().trim_end_matches("kB").trim().parse().ok()
}

/// CPU time of a process so far, every thread's: `utime + stime` of a
/// `/proc/PID/stat` line (fields 14 and 15, counted from the closing
/// parenthesis of the command name, which may hold spaces and parentheses).
pub(crate) fn cpu_time(stat: &str) -> Option<Duration> {
    let mut f = stat[stat.rfind(')')? + 1..].split_whitespace().skip(11);
    let (utime, stime): (u64, u64) = (f.next()?.parse().ok()?, f.next()?.parse().ok()?);
    let hz = Some(mapwise_native::os::process::clock_ticks_per_second()).filter(|&h| h > 0)?;
    Some(Duration::from_secs_f64((utime + stime) as f64 / hz as f64))
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
    /// The file's own txid then ([`file_txid`]): how many commits the view was behind.
    pub file_txid: Option<u64>,
    /// `re-reading…` was shown (a new follower had not sent its first structure yet).
    pub rereading: bool,
    /// A warning about the structure was shown (older, or unsettled).
    pub warned: bool,
}

/// What [`watch`] saw.
#[derive(Debug, Clone, Serialize)]
pub struct Watched {
    /// The command line run in the pane.
    pub command: String,
    /// Seconds from start to the first screen (any structure).
    pub first_screen_s: f64,
    /// Seconds from start to the first settled structure (`as of txid`), if any.
    pub first_settled_s: Option<f64>,
    /// The status line, read every [`WatchOptions::sample_every`] over the window.
    pub samples: Vec<Sample>,
    /// Peak RSS (`VmHWM`) at the end of the window, KiB.
    pub vm_hwm_kib: Option<u64>,
    /// CPU over the window (the steady state after the first settled structure), % of a core.
    pub cpu_pct_window: Option<f64>,
    /// CPU from start to the end of the window (the first read included), % of a core.
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
    pub fn ages(&self) -> Vec<f64> {
        self.samples.iter().filter_map(|s| s.age_s).collect()
    }

    /// How many commits the view was behind the file, per sample.
    pub fn behind(&self) -> Vec<f64> {
        let behind = |s: &Sample| Some(s.file_txid?.saturating_sub(s.txid?) as f64);
        self.samples.iter().filter_map(behind).collect()
    }

    /// Commits the file took during the window (its txid at the last sample minus at the first).
    pub fn window_commits(&self) -> Option<u64> {
        let txid = |s: Option<&Sample>| s?.file_txid;
        Some(txid(self.samples.last())?.saturating_sub(txid(self.samples.first())?))
    }
}

/// `as of txid N, X s ago` in a status line (`as of txid N, now` is age 0).
fn parse_age(screen: &str) -> Option<(u64, f64)> {
    let rest = &screen[screen.find("as of txid ")? + "as of txid ".len()..];
    let (txid, rest) = rest.split_once(", ")?;
    let age = if rest.starts_with("now") {
        0.0
    } else {
        rest.split_once(" s ago")?.0.trim().parse().ok()?
    };
    Some((txid.trim().parse().ok()?, age))
}

/// The txid of the newer valid meta page of a bbolt file (read through
/// the page cache: two pages the writer keeps hot anyway).
pub fn file_txid(file: &fs::File) -> Option<u64> {
    let mut buf = vec![0u8; 2 * 65536];
    let n = file.read_at(&mut buf, 0).ok()?;
    let ps = usize::try_from(mapwise_core::bolt::Meta::parse(&buf[..n], 0)?.page_size).ok()?;
    let meta = |i: u8| {
        let m = mapwise_core::bolt::Meta::parse(buf.get(usize::from(i) * ps..)?.get(..ps)?, i)?;
        m.validate().is_ok().then_some(m.txid)
    };
    meta(0).max(meta(1))
}

/// Runs `inspector open FILE` in a tmux pane for `opts.window` after its
/// first settled structure (`as of txid N, X s ago`), reading the status
/// line every `opts.sample_every`, then reads its peak RSS and CPU time
/// and quits it.
pub fn watch(inspector: &Path, file: &Path, opts: &WatchOptions) -> Result<Watched> {
    let quote = |p: &Path| shell_quote(&p.to_string_lossy());
    let interval = opts.interval_ms.map(|ms| format!(" --interval {ms}")).unwrap_or_default();
    let line = format!("exec {} open {}{interval}", quote(inspector), quote(file));
    let cpu = |pid| cpu_time(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?);
    let start = Instant::now();
    let t = Tmux::start("live", opts.size, &line)?;
    let pid = t.pane_pid()?;
    let f = fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let (mut first_screen, mut first_settled, mut first_warning) = (None, None, None);
    let (mut samples, mut last, mut window) = (Vec::new(), String::new(), None);
    loop {
        let screen = t.screen();
        let now = start.elapsed();
        let shown = screen.contains("Resident ");
        let age = parse_age(&screen);
        first_screen = first_screen.or(shown.then_some(now));
        first_settled = first_settled.or(age.map(|_| now));
        // The window is the view's steady state: it opens at the first settled
        // structure, or, for a view that shows none, a first timeout after its first screen.
        let steady = first_settled.is_some()
            || first_screen.is_some_and(|s| now.saturating_sub(s) > opts.first_timeout);
        if steady && window.is_none() {
            window = Some((Instant::now(), cpu(pid)));
        }
        if shown {
            let warning = screen.lines().map(str::trim).find(|l| {
                l.starts_with("structure shown is older") || l.starts_with("structure: ")
            });
            first_warning = first_warning.or(warning.map(str::to_owned));
            samples.push(Sample {
                at_s: now.as_secs_f64(),
                txid: age.map(|a| a.0),
                age_s: age.map(|a| a.1),
                file_txid: file_txid(&f),
                rereading: screen.contains("re-reading…"),
                warned: warning.is_some(),
            });
            let status = screen.lines().find(|l| l.contains("Resident "));
            last = status.unwrap_or_default().trim().to_owned();
        } else if now > opts.first_timeout {
            bail!("`{line}` showed no first screen within {:?}:\n{screen}", opts.first_timeout);
        }
        if window.is_some_and(|(w, _)| w.elapsed() >= opts.window) {
            break;
        }
        // Until the first screen, look often: that time is measured.
        std::thread::sleep(if shown { opts.sample_every } else { Duration::from_millis(50) });
    }
    let window_s = window.map_or(0.0, |(w, _)| w.elapsed().as_secs_f64());
    let (vm_hwm_kib, cpu_end, total) = (vm_hwm_kib(pid), cpu(pid), start.elapsed());
    t.quit(pid)?;
    let pct =
        |cpu: Duration, wall: f64| if wall > 0.0 { 100.0 * cpu.as_secs_f64() / wall } else { 0.0 };
    let cpu_at_window = window.and_then(|(_, c)| c);
    Ok(Watched {
        command: line.trim_start_matches("exec ").to_owned(),
        first_screen_s: first_screen.map_or(0.0, |d| d.as_secs_f64()),
        first_settled_s: first_settled.map(|d| d.as_secs_f64()),
        samples,
        vm_hwm_kib,
        cpu_pct_window: cpu_end.zip(cpu_at_window).map(|(e, s)| pct(e.saturating_sub(s), window_s)),
        cpu_pct_total: cpu_end.map(|e| pct(e, total.as_secs_f64())),
        window_s,
        status_line: last,
        first_warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_cpu_times_parse() {
        let s = "Resident 1971/76547 pages 3%  as of txid 39, 0.4 s ago  meta 2/2 100%";
        assert_eq!(parse_age(s), Some((39, 0.4)));
        assert_eq!(parse_age("Resident 1/2  as of txid 40, now  meta"), Some((40, 0.0)));
        assert_eq!(parse_age("Resident 1/2 pages  re-reading…"), None);
        assert_eq!(parse_age("as of txid x, 1 s ago"), None);
        let hz = mapwise_native::os::process::clock_ticks_per_second() as f64;
        // A command name with spaces and a parenthesis.
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 5 0 0";
        let t = cpu_time(stat).unwrap();
        assert!((t.as_secs_f64() - 300.0 / hz).abs() < 1e-9, "{t:?}");
        assert!(vm_hwm_kib(std::process::id()).unwrap() > 0);
    }
}
