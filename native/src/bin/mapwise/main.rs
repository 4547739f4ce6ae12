//! `mapwise`: the command line of the mapwise engines.
//!
//! `mapwise bolt …` reads and writes bbolt files with the commands, output
//! and errors of bbolt's own CLI (`info`, `buckets`, `keys`, `get`, `put`,
//! `del`, `dump`, `check`, `stats`, `pages`, `page`, `compact`); every
//! subcommand takes `--json`.

mod bolt;
mod bolt_bench;
mod mmaptest;
mod out;
mod revlog;
mod rrd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Engines and tools for mmap-backed storage files.
#[derive(Debug, Parser)]
#[command(name = "mapwise", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// bbolt (Go) database files.
    #[command(subcommand)]
    Bolt(bolt::BoltCommand),
    /// The read()-vs-mmap microbenchmark (the 2003 "mmap-test").
    ///
    /// Data to stdout (redirect it to /dev/null), one result line per mode
    /// on stderr.
    Mmaptest(mmaptest::MmaptestArgs),
    /// Mercurial revlog indexes (`hg log -l N`, `hg debugindex`).
    #[command(subcommand)]
    Revlog(revlog::RevlogCommand),
    /// RRDtool round-robin databases, with rrdtool's syntax and output
    /// (`create`, `update`, `updatev`, `fetch`, `dump`, `info`, `last`,
    /// `first`, `lastupdate`).
    #[command(subcommand)]
    Rrd(rrd::RrdCommand),
}

fn main() -> ExitCode {
    mapwise_native::map::exit_cleanly_on_sigbus();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bolt(cmd) => bolt::run(cmd),
        Command::Mmaptest(args) => mmaptest::run(&args),
        Command::Revlog(cmd) => revlog::run(cmd),
        Command::Rrd(cmd) => rrd::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) if out::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mapwise: {e:#}");
            ExitCode::from(2)
        }
    }
}
