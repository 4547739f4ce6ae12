//! Child processes: stopping one, reaping one with what it used, and
//! tying one's life to ours. The test kit and the benches start real
//! peers (etcd, rrdcached, the tools they time) with these.

use std::io;
use std::process::{Child, Command, ExitStatus};

/// What a reaped child used, from `wait4(2)`'s `struct rusage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChildUsage {
    /// Peak resident set size in KiB (`ru_maxrss`, which Linux gives in
    /// KiB); `None` when the kernel reported none.
    pub max_rss_kib: Option<u64>,
    /// Blocks written to file systems (`ru_oublock`), in bytes (× 512).
    pub written_bytes: Option<u64>,
}

/// Send SIGTERM to `child` (by its pid; a child not yet reaped keeps it).
///
/// # Errors
/// `kill(2)`'s, e.g. `ESRCH` once the child has been reaped.
pub fn terminate(child: &Child) -> io::Result<()> {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).map_err(io::Error::from)
}

/// Wait for `child` to exit and reap it with `wait4(2)`, which also
/// gives what it used. Interrupted waits are retried.
///
/// # Errors
/// `wait4(2)`'s, e.g. `ECHILD` when the child was already reaped.
pub fn wait_with_usage(child: &mut Child) -> io::Result<(ExitStatus, ChildUsage)> {
    use std::os::unix::process::ExitStatusExt as _;
    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, which std has not reaped (it
        // reaps only in `wait`/`try_wait`, which take `&mut Child` too);
        // `status` and `ru` are valid for writes.
        let r = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut ru) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let usage = ChildUsage {
        max_rss_kib: u64::try_from(ru.ru_maxrss).ok().filter(|&k| k > 0),
        written_bytes: u64::try_from(ru.ru_oublock).ok().map(|b| b * 512),
    };
    Ok((ExitStatus::from_raw(status), usage))
}

/// Have the child `cmd` starts get SIGKILL when the thread that started
/// it dies (`PR_SET_PDEATHSIG`), so a test killed midway leaves no peer
/// running.
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure runs in the forked child before exec and makes
    // one async-signal-safe system call (prctl); it allocates nothing and
    // takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(io::Error::from)
        });
    }
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`): the unit of the CPU
/// times in `/proc/PID/stat`.
#[must_use]
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_child_reports_its_status_and_memory() {
        let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn().expect("sh");
        let (status, usage) = wait_with_usage(&mut child).expect("wait4");
        assert_eq!(status.code(), Some(3));
        assert!(usage.max_rss_kib.is_some_and(|k| k > 0));
    }

    #[test]
    fn a_terminated_child_dies_of_sigterm() {
        use std::os::unix::process::ExitStatusExt as _;
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
        terminate(&child).expect("kill");
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn clock_ticks_are_those_of_the_kernel() {
        // Linux has reported USER_HZ = 100 to user space on every
        // architecture since 2.6.
        assert_eq!(clock_ticks_per_second(), 100);
    }
}
