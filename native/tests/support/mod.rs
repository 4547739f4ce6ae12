//! The library tests' helpers: this crate's target's temporary directory
//! and the names the tests use, over `mapwise-testkit` (repository and
//! peer paths, the installer, running commands with a timeout).

pub use mapwise_testkit::corpus::{
    bolt as testdata, revlog as revlog_testdata, rrd as rrd_testdata,
};
pub use mapwise_testkit::peers::{bolt_out as oracle, hg_python, rrd_out as rrd_oracle_out};
pub use mapwise_testkit::{assert_same_text, churn, install, run_limited};

/// A fresh temporary directory under the target dir (on disk, not tmpfs).
pub fn tempdir() -> tempfile::TempDir {
    mapwise_testkit::tempdir_in(env!("CARGO_TARGET_TMPDIR").as_ref())
}
