//! Whole-file locks, both kinds the engines' reference tools take:
//! bbolt's `flock` (one writer process or many readers) and rrdtool's
//! `fcntl` record lock (`rrd_open.c: rrd_rwlock`). Both are non-blocking:
//! a busy file is `Ok(false)`, and waiting is the caller's policy.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use rustix::fs::FlockOperation;

/// `flock(LOCK_EX | LOCK_NB)` (`exclusive`) or `flock(LOCK_SH | LOCK_NB)`
/// of `file`: `true` when taken, `false` when another open file
/// description holds a conflicting lock.
///
/// # Errors
/// Any other `flock` failure.
pub fn try_flock(file: &File, exclusive: bool) -> io::Result<bool> {
    let op = if exclusive {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    match rustix::fs::flock(file, op) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `flock(LOCK_UN)`: release what [`try_flock`] took.
///
/// # Errors
/// The `flock` failure.
pub fn unflock(file: &File) -> io::Result<()> {
    rustix::fs::flock(file, FlockOperation::Unlock).map_err(io::Error::from)
}

/// `fcntl(F_SETLK)` of the whole file, a write lock (`write`) or a read
/// lock: `true` when taken, `false` when another process holds a
/// conflicting lock. The lock lasts until the process closes any
/// descriptor of the file.
///
/// # Errors
/// Any other `fcntl` failure.
pub fn try_record_lock(file: &File, write: bool) -> io::Result<bool> {
    // SAFETY: `flock` is a plain C struct; zero is a valid value of every
    // field, and the fields rrdtool sets are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type =
        libc::c_short::try_from(if write { libc::F_WRLCK } else { libc::F_RDLCK }).unwrap_or(0);
    fl.l_whence = libc::c_short::try_from(libc::SEEK_SET).unwrap_or(0);
    fl.l_start = 0;
    fl.l_len = 0;
    // SAFETY: the descriptor is open for the life of `file` and `fl` is a
    // valid `struct flock` that fcntl only reads.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// `true` when some process holds a `flock` write lock (`LOCK_EX`) on the
/// file `meta` describes, as bbolt's writer does on its file (etcd's
/// db while etcd runs): read from `/proc/locks`, so nothing is locked,
/// tried or waited for. `None` when `/proc/locks` cannot be read.
///
/// A line of `/proc/locks` (proc(5)): `ID: FLOCK ADVISORY WRITE PID
/// MAJOR:MINOR:INODE START END`, the device in hex.
#[must_use]
pub fn flock_writer(meta: &std::fs::Metadata) -> Option<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    let (major, minor) = (rustix::fs::major(meta.dev()), rustix::fs::minor(meta.dev()));
    let want = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    Some(text.lines().any(|l| {
        let mut f = l.split_whitespace().skip(1);
        f.next() == Some("FLOCK")
            && f.next() == Some("ADVISORY")
            && f.next() == Some("WRITE")
            && f.nth(1) == Some(want.as_str())
    }))
}
