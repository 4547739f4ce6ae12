//! `mapwise`: the command line of the mapwise engines.
//!
//! `mapwise bolt dump|pages|check|info FILE` read bbolt files the way Go
//! bbolt does; every subcommand takes `--json`.

mod bolt;
mod out;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bolt(cmd) => bolt::run(cmd),
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
