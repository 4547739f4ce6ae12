//! Integration tests of `mapwise-native`, against the real peers (Go
//! bbolt, rrdtool, Mercurial: the repository's `peers/`, through
//! `mapwise-testkit`). The `mapwise` command line is tested in `cli/`.

mod support;

/// The fuzz harness (`fuzz/src/lib.rs`), shared by the fuzz regressions
/// and the hostile-file suite.
#[expect(clippy::pedantic)]
#[path = "../../fuzz/src/lib.rs"]
mod harness;

mod bolt_badinput;
mod bolt_bench;
mod bolt_concurrency;
mod bolt_crash;
mod bolt_cursor;
mod bolt_freelist;
mod bolt_props;
mod bolt_reverse;
mod bolt_settle;
mod bolt_tools;
mod bolt_write;
mod fuzz_regressions;
mod hostile;
mod revlog;
mod rrd;
