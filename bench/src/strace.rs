//! The system calls a command makes on one file, from an `strace` log.

use std::path::Path;

use anyhow::{Context, Result};

use crate::path_arg;
use crate::proc::Cmd;

/// Whether `strace` runs here.
pub fn available() -> bool {
    crate::machine::first_line_of("strace", &["-V"]).is_some()
}

/// The system calls `cmd` makes on the file `name` ([`file_syscalls`]), run once from `root`
/// under `strace -o log`.
pub fn file_calls(cmd: &Cmd, root: &Path, log: &Path, name: &str) -> Result<Vec<String>> {
    cmd.under("strace", ["-o".to_owned(), path_arg(log)]).run(root)?;
    let text = std::fs::read_to_string(log).with_context(|| format!("no {}", log.display()))?;
    Ok(file_syscalls(&text, name))
}

/// The system calls of an `strace` log that act on the file `name`: its
/// opens, calls on its descriptors (`F_DUPFD` copies and second opens
/// included, until closed), `mmap` of them, and calls on an address inside
/// such a mapping (`madvise`, `process_madvise`, `msync`, `munmap`).
pub fn file_syscalls(trace: &str, name: &str) -> Vec<String> {
    let quoted = format!("\"{name}\"");
    let hex = |t: &str| u64::from_str_radix(t.trim().strip_prefix("0x")?, 16).ok();
    let (mut fds, mut maps, mut out) = (Vec::<i64>::new(), Vec::<(u64, u64)>::new(), Vec::new());
    for line in trace.lines() {
        let Some((call, args)) = line.split_once('(') else { continue };
        if call.is_empty() || !call.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let result = line.rsplit_once(" = ").map(|(_, r)| r.split(' ').next().unwrap_or(""));
        let ret = result.and_then(|r| r.parse::<i64>().ok()).filter(|&fd| fd >= 0);
        let parts: Vec<&str> = args.split([',', ')']).map(str::trim).collect();
        let fd = parts[0].parse::<i64>().ok().filter(|fd| fds.contains(fd));
        let mapped = |a: u64| maps.iter().any(|&(s, l)| a >= s && a < s.saturating_add(l));
        let touches = if (call == "openat" || call == "open") && args.contains(&quoted) {
            fds.extend(ret);
            true
        } else if let Some(fd) = fd {
            if call == "fcntl" && args.contains("F_DUPFD") {
                fds.extend(ret);
            }
            fds.retain(|&f| call != "close" || f != fd);
            true
        } else if call == "mmap" {
            let on_file =
                parts.get(4).and_then(|f| f.parse().ok()).is_some_and(|f| fds.contains(&f));
            let len = parts.get(1).and_then(|l| l.parse().ok());
            if let (true, Some(len), Some(addr)) = (on_file, len, result.and_then(hex)) {
                maps.push((addr, len));
            }
            on_file
        } else if call == "process_madvise" {
            // On the file when an iovec entry lies in one of its mappings.
            let base = |t: &str| hex(t.split([',', '}']).next().unwrap_or(""));
            args.split("iov_base=").skip(1).any(|t| base(t).is_some_and(mapped))
        } else if let Some(a) = hex(parts[0]).filter(|&a| mapped(a)) {
            maps.retain(|&(s, _)| call != "munmap" || s != a);
            true
        } else {
            false
        };
        if touches {
            out.push(call.to_owned());
        }
    }
    out
}

/// `openat, fcntl, statx ×2, madvise ×7` (consecutive repeats counted).
pub fn run_length(names: &[String]) -> String {
    let mut parts: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match parts.last_mut() {
            Some((last, k)) if last == n => *k += 1,
            _ => parts.push((n, 1)),
        }
    }
    let part = |&(n, k): &(&str, usize)| if k > 1 { format!("{n} ×{k}") } else { n.to_owned() };
    parts.iter().map(part).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real strace lines (trimmed) of ours `--io mmap` and `--io direct`.
    #[test]
    fn syscalls_on_the_file() {
        let mmap = r#"openat(AT_FDCWD, "/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY|O_CLOEXEC) = 3
mmap(NULL, 1974096, PROT_READ, MAP_PRIVATE|MAP_DENYWRITE, 3, 0) = 0x7f0980301000
close(3)                                = 0
openat(AT_FDCWD, "big.rrd", O_RDWR|O_CLOEXEC) = 3
fcntl(3, F_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=0, l_len=0}) = 0
mmap(NULL, 1794048, PROT_READ|PROT_WRITE, MAP_SHARED, 3, 0) = 0x7f0980149000
madvise(0x7f0980149000, 1794048, MADV_RANDOM) = 0
process_madvise(5, [{iov_base=0x7f098016b000, iov_len=4096}], 1, MADV_WILLNEED, 0) = 4096
close(3)                                = 0
munmap(0x7f0980149000, 1794048)         = 0
mmap(NULL, 1052672, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f09801fe000
munmap(0x7f09801fe000, 1052672)         = 0
"#;
        let got = run_length(&file_syscalls(mmap, "big.rrd"));
        assert_eq!(got, "openat, fcntl, mmap, madvise, process_madvise, close, munmap");
        let direct = r#"openat(AT_FDCWD, "big.rrd", O_RDWR|O_CLOEXEC) = 3
fcntl(3, F_DUPFD_CLOEXEC, 3)            = 4
open("big.rrd", O_RDWR|O_DIRECT|O_LARGEFILE|O_CLOEXEC) = 5
pread64(5, "RRD 0003   "..., 4096, 0) = 4096
close(3)                                = 0
close(5)                                = 0
close(4)                                = 0
read(4, "", 10) = 0
openat(AT_FDCWD, "x/big.rrd", O_RDWR) = 3
"#;
        let got = run_length(&file_syscalls(direct, "big.rrd"));
        assert_eq!(got, "openat, fcntl, open, pread64, close ×3");
    }
}
