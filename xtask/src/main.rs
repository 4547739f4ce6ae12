//! `cargo xtask`: chores for the mapwise workspace.

mod bench;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    about = "Chores for the mapwise workspace",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmarks: ours vs the reference implementation, written up as a
    /// markdown report.
    #[command(after_long_help = bench::HELP)]
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) if bench::interrupt::is_interrupted(&e) => {
            eprintln!("xtask: interrupted; no report written, temporary files removed");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
