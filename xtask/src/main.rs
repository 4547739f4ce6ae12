//! `cargo xtask`: chores for the mapwise workspace.

mod crash;
mod fuzz;
mod limits;
#[cfg(test)]
mod tidy;
mod wasm;
mod writer;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mapwise_bench as bench;

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Chores for the mapwise workspace", version)]
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
    /// The bbolt engine's crash harness (SIGKILL loop) and property test, long runs.
    #[command(after_long_help = crash::HELP)]
    Crash(crash::CrashArgs),
    /// Build and run the cargo-fuzz targets (fuzz/) for --time seconds each.
    #[command(after_long_help = fuzz::HELP)]
    Fuzz(fuzz::FuzzArgs),
    /// The full hostile-file sweep (damaged corpus files through every reader).
    #[command(after_long_help = fuzz::HOSTILE_HELP)]
    Hostile,
    /// Peak memory of the inspector on 64 GiB sparse files, and memory and
    /// CPU of the readers and the live view under a busy writer, against
    /// bounds (resource limits).
    #[command(after_long_help = limits::HELP)]
    Limits(limits::LimitsArgs),
    /// Build the browser viewer (wasm module + static page) into
    /// target/wasm/site.
    #[command(after_long_help = wasm::WASM_HELP)]
    Wasm(wasm::WasmArgs),
    /// Build the browser viewer and serve it on 127.0.0.1.
    #[command(after_long_help = wasm::SERVE_HELP)]
    Serve(wasm::ServeArgs),
    /// Write to a bbolt file the way etcd does (a commit per interval),
    /// for trying readers against a busy file.
    Writer(writer::WriterArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Crash(args) => crash::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::Hostile => fuzz::hostile(),
        Command::Limits(args) => limits::run(&args),
        Command::Wasm(args) => wasm::build(&args).map(|_| ExitCode::SUCCESS),
        Command::Serve(args) => wasm::serve(&args).map(|()| ExitCode::SUCCESS),
        Command::Writer(args) => writer::run(&args).map(|()| ExitCode::SUCCESS),
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
