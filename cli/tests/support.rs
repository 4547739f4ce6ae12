//! The command line tests' helpers: what needs this crate's build (the
//! `mapwise` binary, its target's temporary directory) and the names the
//! tests use, over `mapwise-testkit` (repository and peer paths, the
//! installer, running commands with a timeout).

use std::process::{Command, Output};
use std::time::Duration;

pub use mapwise_testkit::corpus::{
    bolt as testdata, revlog as revlog_testdata, rrd as rrd_testdata,
};
pub use mapwise_testkit::peers::{
    bolt as bolt_oracle, bolt_out as oracle, hg, hg_python, revlog_out as revlog_oracle_out,
    rrd_out as rrd_oracle_out, rrdtool,
};
pub use mapwise_testkit::{assert_same_text, churn, install, rrdcached, run_limited, which};

/// A fresh temporary directory under the target dir (on disk, not tmpfs).
pub fn tempdir() -> tempfile::TempDir {
    mapwise_testkit::tempdir_in(env!("CARGO_TARGET_TMPDIR").as_ref())
}

/// The `mapwise` binary under test.
pub fn mapwise() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mapwise"))
}

/// Run `mapwise args…` with a 60 s limit.
pub fn run_mapwise(args: &[&str]) -> Output {
    run_limited(mapwise().args(args), Duration::from_secs(60))
}
