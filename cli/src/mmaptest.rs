//! `mapwise mmaptest …`: the read()-vs-mmap microbenchmark.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use mapwise_native::engine::mmaptest::{
    self, DEFAULT_ITERATIONS, Files, Mode, ModeResult, ReadSize,
};

/// Long help: where the streams go, and what the numbers mean.
const AFTER_HELP: &str = "\
Streams: stdout carries the data, as in the original (every byte of every
file, every iteration, written with plain write(2) calls, no buffering):
redirect it, normally to /dev/null. mapwise refuses to write it to a
terminal. The results go to stderr, one line per mode: time of the loop,
bytes delivered and GB/s (10^9 B/s), then files, bytes per iteration,
iterations, setup time and, with --touch, checksum=SUM. With --json the
stderr lines are JSON objects instead (one per mode); --json=PATH writes
them to PATH and keeps the text lines on stderr.

Faithful by default: write(2) to /dev/null never reads the buffer, so the
mmap modes never look at the data (they compare copying with nothing).
--touch makes every mode read every byte (summed into checksum=, equal in
all modes): the fair comparison.

Timing as the original: files are opened, the buffer allocated and, for
mmap-once, the files mapped before the clock starts (that is `setup`,
which also runs the loop's code once without file data: a zero-length
write, a zero-length pread or one untouched mmap+munmap).
--cold fsyncs and evicts every file from the page cache before each mode
(not timed); only the first iteration is then cold, so use --iterations 1
over a list of files for a cold pass.

Do not truncate the files while this runs: the mmap modes would die of
SIGBUS, as the original would.

Example (the original's 72 KiB × 100000 matrix, fair version):
  mapwise mmaptest --touch f72k > /dev/null";

/// Which mode(s) to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// pread(2) into a buffer of --read-size bytes.
    Read,
    /// Map every file once before the loop.
    MmapOnce,
    /// mmap + munmap every file on every iteration.
    MmapEach,
    /// read, mmap-once and mmap-each in turn.
    All,
}

#[derive(Debug, Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct MmaptestArgs {
    /// The files, read in this order on every iteration.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// Access mode.
    #[arg(long, value_enum, default_value = "all")]
    mode: ModeArg,
    /// Bytes per read() in read mode (65536, 64K, 64KiB, 1MiB), or
    /// `whole` for one read() per file into a buffer as large as the
    /// largest file.
    #[arg(long, value_name = "BYTES|whole", default_value = "65536")]
    read_size: ReadSize,
    /// Map with MAP_POPULATE (mmap modes).
    #[arg(long)]
    populate: bool,
    /// Read every byte in every mode and print the sum of all bytes
    /// (checksum=, equal in every mode).
    #[arg(long)]
    touch: bool,
    /// Passes over the file list.
    #[arg(long, short = 'n', value_name = "N", default_value_t = DEFAULT_ITERATIONS,
          value_parser = clap::value_parser!(u64).range(1..))]
    iterations: u64,
    /// fsync and evict every file from the page cache before each mode.
    #[arg(long)]
    cold: bool,
    /// Results as JSON objects, one line per mode: on stderr instead of
    /// the text lines, or with --json=PATH into PATH.
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true,
          default_missing_value = "-")]
    json: Option<PathBuf>,
}

pub fn run(a: &MmaptestArgs) -> Result<ExitCode> {
    let stdout = io::stdout();
    if stdout.is_terminal() {
        bail!(
            "stdout is a terminal; the data goes to stdout, so redirect it (> /dev/null) as the original did"
        );
    }
    // A duplicate of fd 1 as a File: every write is one write(2) of the
    // whole buffer, with no buffering and no newline scan (std's stdout is
    // line-buffered and would read the data looking for '\n').
    let mut out =
        File::from(stdout.as_fd().try_clone_to_owned().context("cannot duplicate stdout")?);
    let mut json_file = match a.json.as_deref() {
        Some(p) if p.as_os_str() != "-" => {
            Some(File::create(p).with_context(|| format!("cannot create {}", p.display()))?)
        }
        _ => None,
    };
    let json_on_stderr = a.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let modes: Vec<Mode> = match a.mode {
        ModeArg::Read => vec![Mode::Read(a.read_size)],
        ModeArg::MmapOnce => vec![Mode::MmapOnce],
        ModeArg::MmapEach => vec![Mode::MmapEach],
        ModeArg::All => vec![Mode::Read(a.read_size), Mode::MmapOnce, Mode::MmapEach],
    };
    let opts = mmaptest::Options {
        iterations: a.iterations,
        populate: a.populate,
        touch: a.touch,
        cold: a.cold,
    };
    let files = Files::open(&a.files)?;
    for mode in modes {
        let r =
            mmaptest::run(&files, mode, &opts, &mut out).with_context(|| format!("mode {mode}"))?;
        report(&r, json_on_stderr, json_file.as_mut())?;
    }
    if let Some(f) = json_file.as_mut() {
        f.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One result line on stderr (text or JSON), and JSON into the file.
fn report(r: &ModeResult, json_on_stderr: bool, json_file: Option<&mut File>) -> Result<()> {
    let json = serde_json::to_string(r)?;
    let mut err = io::stderr().lock();
    if json_on_stderr {
        writeln!(err, "{json}")?;
    } else {
        writeln!(err, "{r}")?;
    }
    if let Some(f) = json_file {
        writeln!(f, "{json}")?;
    }
    Ok(())
}
