//! Integration tests of `mapwise-native` and the `mapwise` command line,
//! against the real peers (Go bbolt, rrdtool, Mercurial, the mmaptest C
//! reconstruction: the repository's `peers/`, through `mapwise-testkit`).

mod support;

/// The fuzz harness (`fuzz/src/lib.rs`), shared by the fuzz regressions
/// and the hostile-file suite.
#[allow(dead_code, clippy::pedantic)]
#[path = "../../fuzz/src/lib.rs"]
mod harness;

mod bolt_badinput;
mod bolt_bench;
mod bolt_cli;
mod bolt_cli_commands;
mod bolt_concurrency;
mod bolt_corrupt;
mod bolt_crash;
mod bolt_cursor;
mod bolt_freelist;
mod bolt_interop;
mod bolt_model;
mod bolt_props;
mod bolt_reverse;
mod bolt_tools;
mod bolt_write;
mod fuzz_regressions;
mod hostile;
mod mmaptest;
mod revlog;
mod revlog_hidden;
mod rrd;
