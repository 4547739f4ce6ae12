//! Integration tests of the `mapwise` command line, against the real
//! peers (Go bbolt, rrdtool, Mercurial, the mmaptest C reconstruction:
//! the repository's `peers/`, through `mapwise-testkit`).

mod support;

mod bolt_badinput;
mod bolt_bench;
mod bolt_cli;
mod bolt_cli_commands;
mod bolt_corrupt;
mod bolt_cursor;
mod bolt_interop;
mod hostile;
mod mmaptest;
mod revlog;
mod revlog_hidden;
mod rrd;
