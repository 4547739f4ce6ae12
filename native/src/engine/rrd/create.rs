//! `rrdtool create` on a file: the options, the random row pointers, and
//! the file itself — written to a temporary name beside the target, fully
//! allocated first (`posix_fallocate`, so a full disk is an error here and
//! never a SIGBUS in a later mapping), then renamed over the target with
//! its mode (rrdtool's `write_rrd`).

use std::fs::{File, OpenOptions, Permissions};
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use mapwise_core::rrd::create::{self, Plan};
use mapwise_core::rrd::num;

use super::{Error, time};

/// The options of `rrdtool create`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateOptions {
    /// `-s/--step` (default 300 s).
    pub step: Option<String>,
    /// `-b/--start` (default now − 10 s).
    pub start: Option<String>,
    /// `-O/--no-overwrite`.
    pub no_overwrite: bool,
    /// Seed of the random initial `cur_row`s (rrdtool seeds with time + pid;
    /// tests fix it).
    pub seed: Option<u64>,
}

/// `-b/--start` as `rrd_create` reads it: `None` when not given, else the
/// time (at-style specs resolved in local time).
///
/// # Errors
/// rrdtool's message for a bad time, a time relative to start or end, or
/// one before 1980.
pub fn start_time(o: &CreateOptions) -> Result<Option<i64>, Error> {
    let rr = Error::Rrdtool;
    let Some(s) = &o.start else {
        return Ok(None);
    };
    let tv = time::parse(s).map_err(|e| rr(format!("start time: {e}")))?;
    if matches!(tv.kind, time::TimeKind::RelativeToEnd | time::TimeKind::RelativeToStart) {
        return Err(rr(
            "specifying time relative to the 'start' or 'end' makes no sense here".into()
        ));
    }
    let t = tv.resolve();
    if t < 3600 * 24 * 365 * 10 {
        return Err(rr("the first entry to the RRD should be after 1980".into()));
    }
    Ok(Some(t))
}

/// What rrdtool sends rrdcached for `create` (`rrd_create`, then
/// `rrd_client_create_r2`): the start when given and the step, 0 when
/// `-s` is not given (the daemon's librrd then takes 300 s).
///
/// # Errors
/// As [`start_time`]; `step size: …` for a bad `-s`.
pub fn daemon_options(o: &CreateOptions) -> Result<(Option<i64>, u64), Error> {
    let start = start_time(o)?;
    let step = match o.step.as_deref() {
        None => 0,
        Some(s) => create::parse_step(Some(s)).map_err(Error::Rrdtool)?,
    };
    Ok((start, step))
}

/// Resolve the options and definitions into a plan (`rrd_create`'s
/// checks, in its order). `name` is the file name as given: its FNV-1
/// hash places the seasonal smoothing.
///
/// # Errors
/// rrdtool's message.
pub fn plan(name: &str, o: &CreateOptions, defs: &[String]) -> Result<Plan, Error> {
    let last_up = match start_time(o)? {
        Some(t) => t,
        None => time::now().0 - 10,
    };
    let step = create::parse_step(o.step.as_deref()).map_err(Error::Rrdtool)?;
    let defs: Vec<&str> = defs.iter().map(String::as_str).collect();
    create::plan(step, last_up, num::fnv_hash(name.as_bytes()), &defs).map_err(Error::Rrdtool)
}

fn temp_name(path: &Path, salt: u64) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut st = crate::engine::rng::SplitMix64::new(salt);
    let suffix: String = (0..6)
        .map(|_| {
            char::from(
                CHARS
                    .get(usize::try_from(st.next_u64() % CHARS.len() as u64).unwrap_or(0))
                    .copied()
                    .unwrap_or(b'X'),
            )
        })
        .collect();
    s.push(suffix);
    PathBuf::from(s)
}

/// `rrdtool create FILE [-s] [-b] [-O] DEF…`: write the new file.
///
/// # Errors
/// rrdtool's message for bad options or definitions, an existing file with
/// `no_overwrite`, or a failed allocation, write or rename (the target is
/// then untouched).
pub fn create(path: &Path, o: &CreateOptions, defs: &[String]) -> Result<(), Error> {
    let name = path.display().to_string();
    if o.no_overwrite && std::fs::symlink_metadata(path).is_ok() {
        return Err(Error::Rrdtool(format!("creating '{name}': File exists")));
    }
    let plan = plan(&name, o, defs)?;
    let (secs, usec) = time::now();
    // The random initial row of each archive.
    let mut state = crate::engine::rng::SplitMix64::new(o.seed.unwrap_or_else(|| {
        (secs as u64).wrapping_add(u64::from(std::process::id())) ^ (usec as u64) << 32
    }));
    let rows: Vec<u64> = plan.rra.iter().map(|r| state.next_u64() % r.rows.max(1)).collect();
    let header = plan.header(&rows);
    let geo = plan.geometry();
    let io_err = |what: &str, e: std::io::Error| {
        Error::Rrdtool(format!("{what} '{name}': {}", super::strerror(&e)))
    };

    let salt = state.next_u64();
    let mut attempt = 0u64;
    let (tmp, file) = loop {
        let tmp = temp_name(path, salt ^ attempt);
        match OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1
            }
            Err(_) => return Err(Error::Rrdtool("Cannot create temporary file".into())),
        }
    };
    let result =
        write_image(&file, &header, geo.file_len).map_err(|e| io_err("posix_fallocate", e));
    let result = result.and_then(|()| {
        let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
        std::fs::set_permissions(&tmp, Permissions::from_mode(mode))
            .map_err(|_| Error::Rrdtool("Cannot chmod temporary file!".into()))?;
        drop(file);
        std::fs::rename(&tmp, path)
            .map_err(|_| Error::Rrdtool("Cannot rename temporary file to final file!".into()))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Allocate `len` bytes, then write the header and NaN values.
fn write_image(file: &File, header: &[u8], len: u64) -> std::io::Result<()> {
    if len > 0 {
        match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len) {
            Ok(()) => {}
            // A file system without fallocate: the writes below allocate.
            Err(rustix::io::Errno::OPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
    }
    file.write_all_at(header, 0)?;
    let nan = num::DNAN.to_le_bytes();
    let chunk: Vec<u8> = nan.iter().copied().cycle().take(1 << 16).collect();
    let mut off = header.len() as u64;
    while off < len {
        let n = usize::try_from((len - off).min(chunk.len() as u64)).unwrap_or(chunk.len());
        file.write_all_at(chunk.get(..n).unwrap_or_default(), off)?;
        off += n as u64;
    }
    Ok(())
}
