//! Integration tests of `mapwise-native` and the `mapwise` command line,
//! against the real Go bbolt (through the oracle scripts in
//! `shared/oracles`).

mod support;

mod bolt_cli;
mod bolt_corrupt;
mod bolt_cursor;
mod bolt_interop;
mod mmaptest;
mod revlog;
mod rrd;
