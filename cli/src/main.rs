//! `mapwise`: the command line of the mapwise engines.
//!
//! `mapwise bolt …` reads and writes bbolt files with the commands, output
//! and errors of bbolt's own CLI (`info`, `buckets`, `keys`, `get`, `put`,
//! `del`, `dump`, `check`, `stats`, `pages`, `page`, `compact`); every
//! subcommand takes `--json`.

#![forbid(unsafe_code)]

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
    /// Mercurial revlog indexes (`hg log -l N`, `hg debugindex`); `-R
    /// REPO` before or after the subcommand, as hg takes it.
    Revlog(revlog::RevlogArgs),
    /// RRDtool round-robin databases, with rrdtool's syntax and output
    /// (`create`, `update`, `updatev`, `fetch`, `dump`, `info`, `last`,
    /// `first`, `lastupdate`, `flushcached`), through rrdcached as rrdtool
    /// goes through it (`--daemon`, `RRDCACHED_ADDRESS`).
    #[command(subcommand)]
    Rrd(rrd::RrdCommand),
}

fn main() -> ExitCode {
    mapwise_native::os::map::exit_cleanly_on_sigbus();
    mapwise_native::os::heap::bound_peaks();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_failure(&e),
    };
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

/// A command line clap refuses. Help and version print as usual; so do
/// the failures of `bolt`, `revlog` and `mmaptest` (clap's text, exit 2).
/// Under `mapwise rrd` a script written for rrdtool expects rrdtool's
/// shape for every failure, usage included (`rrd_tool.c` prints
/// `ERROR: Usage: …` or `ERROR: invalid option …` and exits 1): one
/// `ERROR: ` line with clap's reason, exit status 1.
fn usage_failure(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let rrd = std::env::args_os().nth(1).is_some_and(|a| a == "rrd");
    let shown = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if !rrd || shown {
        e.exit();
    }
    // An option rrdtool does not know: getopt's words, naming the first
    // letter of a short option (`-1@…` is the option `1`) or the long
    // option's name.
    if e.kind() == ErrorKind::UnknownArgument
        && let Some(clap::error::ContextValue::String(arg)) =
            e.get(clap::error::ContextKind::InvalidArg)
    {
        // clap names `--bogus=3` as `--bogus`; getopt names all of it.
        let raw = std::env::args()
            .find(|a| a.starts_with(&format!("{arg}=")))
            .unwrap_or_else(|| arg.clone());
        let name = match raw.strip_prefix("--") {
            Some(long) => long.to_owned(),
            None => arg
                .strip_prefix('-')
                .and_then(|a| a.chars().next())
                .map_or_else(|| arg.clone(), String::from),
        };
        if arg.starts_with('-') {
            match std::env::args().nth(2).as_deref() {
                // rrd_dump.c answers any bad option with its usage.
                Some("dump") => eprintln!(
                    "ERROR: usage rrdtool dump [--header|-h {{none,xsd,dtd}}]\n\
                     [--no-header|-n]\n[--daemon|-d address]\nfile.rrd [file.xml]"
                ),
                // rrd_tool.c prints the (failed) result of last and first,
                // -1, before the error.
                // stdout is buffered as rrdtool's stdio buffers it, so the
                // error comes first in a shared pipe, as rrdtool's does.
                Some("last" | "first") => {
                    let mut out = out::StdioOut::new();
                    out.write_bytes(b"-1\n");
                    eprintln!("ERROR: invalid option -- '{name}'");
                    let _ = out.finish();
                }
                _ => eprintln!("ERROR: invalid option -- '{name}'"),
            }
            return ExitCode::from(1);
        }
    }
    // clap's text: "error: REASON" (possibly continued on indented lines),
    // a blank line, then the usage and a hint.
    let text = e.render().to_string();
    let reason: Vec<&str> =
        text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let reason = reason.join(" ");
    let usage = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map_or_else(String::new, |u| format!(" (usage: {u})"));
    eprintln!("ERROR: {}{usage}", reason.strip_prefix("error: ").unwrap_or(&reason));
    ExitCode::from(1)
}
