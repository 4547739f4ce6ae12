//! `mapwise rrd` and `mapwise_native::engine::rrd` against rrdtool 1.7.2,
//! the judge: the corpus rrdtool made (`testdata/rrd`, rrdtool's own outputs
//! beside each file), rrdtool run live on the same inputs (through the
//! rrd peer, `peers/rrd/peer`, or the `rrdtool` binary),
//! with TZ=UTC so that dump comments agree.
//!
//! * [`corpus`]: every read command on the corpus; every corpus update
//!   sequence replayed from `NAME.empty.rrd` in every I/O mode,
//!   byte-identical to rrdtool's `NAME.rrd`.
//! * [`create`]: `create` against `rrdtool create` with the same name and
//!   start (bytes equal once the random row pointers are aligned).
//! * [`prop`]: random definitions and random update sequences applied by
//!   rrdtool and by mapwise to the same file.
//! * [`bad`]: malformed input, past times, truncated, foreign and locked
//!   files: rrdtool's error, a non-zero exit and an unchanged file.
//! * [`cached`]: every command through a real rrdcached, against rrdtool
//!   through the same daemon; a daemon that is down or misbehaves.

// Offsets and counts of small test files are cast freely.
#![expect(clippy::cast_possible_truncation)]

mod bad;
mod cached;
mod corpus;
mod create;
mod prop;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::support::{mapwise, rrdtool, run_limited};

/// Run `mapwise rrd args…` in `dir` with TZ=UTC.
pub fn mw(dir: &Path, args: &[&str]) -> Output {
    let mut c = mapwise();
    c.arg("rrd").args(args).current_dir(dir).env("TZ", "UTC").env("LC_ALL", "C");
    run_limited(&mut c, Duration::from_secs(120))
}

/// Run `rrdtool args…` in `dir` (TZ=UTC).
pub fn rt(dir: &Path, args: &[&str]) -> Output {
    let mut c: Command = rrdtool();
    c.args(args).current_dir(dir);
    run_limited(&mut c, Duration::from_secs(120))
}

/// Stdout of a command that must succeed.
pub fn ok(what: &str, o: &Output) -> Vec<u8> {
    assert!(
        o.status.success(),
        "{what} failed ({:?}): {}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout.clone()
}
