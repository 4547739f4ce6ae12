//! `mapwise rrd …`: rrdtool's commands with rrdtool's syntax and output,
//! so a script switches by changing the binary name. Errors are printed
//! as rrdtool prints them (`ERROR: …` on stderr, exit status 1), and
//! stdout is buffered as rrdtool's stdio buffers it, so both streams
//! interleave as rrdtool's do in one pipe ([`StdioOut`]).
//!
//! With rrdcached (`--daemon ADDRESS`, else a non-empty
//! `RRDCACHED_ADDRESS`) every command does what rrdtool 1.7.2 does
//! (`src/rrd_*.c`, through `src/rrd_client.c`; [`rrd::cached`]):
//! `update` queues the values in the daemon (`UPDATE`); `info`, `last`,
//! `first` and `fetch` ask the daemon (`INFO`, `LAST`, `FIRST`, `FETCH`),
//! `info` after a `FLUSH` unless `--noflush`; `dump` and `lastupdate` read
//! the file after a `FLUSH`; `create` has the daemon create the file;
//! `flushcached` flushes. A daemon that cannot be reached fails `update`
//! and `flushcached` (nothing is written); the read commands then read the
//! file and still fail with the connection error, and `create` creates
//! the file itself, as rrdtool does. `updatev` refuses to run while a
//! daemon is named in the environment (it would write behind the daemon's
//! back: rrdtool 1.7.2 means to refuse too, but tests the variable the
//! wrong way round and refuses only when it is empty).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{ArgAction, Args, Subcommand};
use mapwise_core::rrd::dump::DumpHeader;
use mapwise_core::rrd::fetch::write_fetch_rows;
use mapwise_core::rrd::info::{InfoValue, write_info};
use mapwise_native::engine::rrd::cached::{self, Client};
use mapwise_native::engine::rrd::{self, CreateOptions, FetchOptions, IoMode, UpdateOptions};
use mapwise_native::os::usage::Usage;

use crate::out::{Out, StdioOut};

#[derive(Debug, Subcommand)]
pub enum RrdCommand {
    /// Create a new RRD: `create FILE [-s STEP] [-b START] [-O] [-d ADDR] DS:… RRA:…`.
    Create(CreateArgs),
    /// Feed samples: `update FILE [-t DS:DS…] [-s] [-d ADDR] TIME:V:V…`.
    Update(UpdateArgs),
    /// `update`, then print every value written (`return_value = 0`, then
    /// `[T]RRA[CF][PDPs]DS[name] = value`); never through rrdcached.
    Updatev(UpdateCore),
    /// Print the values of one consolidation function:
    /// `fetch FILE CF [-r RES] [-s START] [-e END] [-a] [-d ADDR]`.
    Fetch(FetchArgs),
    /// Print the whole file as XML: `dump FILE [OUT.xml] [-h none|xsd|dtd] [-n] [-d ADDR]`.
    Dump(DumpArgs),
    /// Print the header as `key = value` lines: `info FILE [-d ADDR [-F]]`.
    Info(InfoArgs),
    /// Print the time of the last update.
    Last(FileArgs),
    /// Print the time of the oldest row of an archive.
    First(FirstArgs),
    /// Print the last input of each data source.
    Lastupdate(FileArgs),
    /// Have rrdcached write the updates it holds for each FILE:
    /// `flushcached [-d ADDR] FILE…`.
    Flushcached(FlushcachedArgs),
    /// Time update calls in this process (for `cargo xtask bench rrd`; not
    /// an rrdtool command).
    #[command(hide = true)]
    BenchInproc(BenchInprocArgs),
}

/// How to read and write the file.
#[derive(Debug, Args)]
pub struct IoArg {
    /// I/O mode: mmap (default: MADV_RANDOM, WILLNEED on the hot pages),
    /// mmap-2pages, fd (pread/pwrite), direct (O_DIRECT).
    #[arg(long = "io", value_name = "MODE", default_value = "mmap", value_parser = parse_io)]
    io: IoMode,
}

/// rrdtool's `-d/--daemon ADDRESS`.
#[derive(Debug, Args)]
pub struct DaemonArg {
    /// Go through rrdcached at ADDRESS (`unix:/path`, `/path`, `host`,
    /// `host:port`, `[v6]:port`; TCP port 42217 by default); without it,
    /// `RRDCACHED_ADDRESS` if set and not empty. `--daemon ""` means no
    /// daemon. Each exchange gives up after MAPWISE_RRDCACHED_TIMEOUT
    /// seconds (default 60).
    #[arg(short = 'd', long = "daemon", value_name = "ADDRESS")]
    daemon: Option<String>,
}

impl DaemonArg {
    /// No daemon, a connection, or rrdtool's error for the failed connect.
    fn connect(&self) -> Option<Result<Client, rrd::Error>> {
        cached::daemon_address(self.daemon.as_deref()).map(|a| Client::connect(&a))
    }
}

fn parse_io(s: &str) -> Result<IoMode, String> {
    IoMode::from_name(s)
        .ok_or_else(|| format!("unknown I/O mode '{s}' (mmap, mmap-2pages, fd, direct)"))
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct CreateArgs {
    /// The new file.
    file: PathBuf,
    /// Seconds per primary data point (or a duration: 5m, 1h).
    #[arg(short = 's', long = "step", allow_hyphen_values = true)]
    step: Option<String>,
    /// Time of the (virtual) last update: seconds or an at-style time.
    #[arg(short = 'b', long = "start", allow_hyphen_values = true)]
    start: Option<String>,
    /// Refuse to replace an existing file.
    #[arg(short = 'O', long = "no-overwrite")]
    no_overwrite: bool,
    /// Seed of the random initial row pointers (not an rrdtool option;
    /// for reproducible files; not with a daemon, which creates the file).
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    daemon: DaemonArg,
    /// `DS:name:TYPE:heartbeat:min:max`, `DS:name:COMPUTE:rpn`,
    /// `RRA:CF:xff:steps:rows`, `RRA:HWPREDICT:rows:alpha:beta:period`, …
    #[arg(num_args = 0..)]
    defs: Vec<String>,
}

/// What `update` and `updatev` take.
#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct UpdateCore {
    /// The RRD.
    file: PathBuf,
    /// The data sources the values are for, `name:name…`.
    #[arg(short = 't', long = "template")]
    template: Option<String>,
    /// Skip arguments that are not after the last update.
    #[arg(short = 's', long = "skip-past-updates")]
    skip_past: bool,
    #[command(flatten)]
    io: IoArg,
    /// `TIME:V1:V2…` or `TIME@V1:…` (`N` is now, `U` unknown).
    #[arg(num_args = 0..)]
    values: Vec<String>,
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct UpdateArgs {
    #[command(flatten)]
    core: UpdateCore,
    #[command(flatten)]
    daemon: DaemonArg,
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct FetchArgs {
    /// The RRD.
    file: PathBuf,
    /// AVERAGE, MIN, MAX, LAST, HWPREDICT, …
    #[arg(required = false)]
    cf: Option<String>,
    /// Wished seconds per row (the closest archive is used; a daemon
    /// chooses by itself, as rrdtool sends it no resolution).
    #[arg(short = 'r', long = "resolution", allow_hyphen_values = true)]
    resolution: Option<String>,
    /// Start (default `end-24h`).
    #[arg(short = 's', long = "start", allow_hyphen_values = true)]
    start: Option<String>,
    /// End (default `now`).
    #[arg(short = 'e', long = "end", allow_hyphen_values = true)]
    end: Option<String>,
    /// Move the window so that it starts on a multiple of the resolution.
    #[arg(short = 'a', long = "align-start")]
    align_start: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    io: IoArg,
    #[command(flatten)]
    daemon: DaemonArg,
    /// Words after FILE and CF: ignored, as rrdtool's fetch ignores them.
    #[arg(hide = true, num_args = 0..)]
    ignored: Vec<String>,
}

#[derive(Debug, Args)]
#[command(disable_help_flag = true, args_override_self = true)]
pub struct DumpArgs {
    /// The RRD.
    file: PathBuf,
    /// Write the XML here instead of stdout.
    out: Option<PathBuf>,
    /// The XML prologue: dtd (default), xsd or none.
    #[arg(short = 'h', long = "header", value_name = "none|xsd|dtd")]
    header: Option<String>,
    /// No prologue (`--header none`).
    #[arg(short = 'n', long = "no-header")]
    no_header: bool,
    #[command(flatten)]
    io: IoArg,
    #[command(flatten)]
    daemon: DaemonArg,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

/// `info`: one file, `--noflush` (the one command here that takes it, as
/// in rrdtool).
#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct InfoArgs {
    /// The RRD (exactly one, as rrdtool wants).
    #[arg(num_args = 0..)]
    files: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// rrdtool's `-F/--noflush`: do not ask rrdcached to flush the file
    /// first (the daemon reads the file as it is on disk).
    #[arg(short = 'F', long = "noflush")]
    noflush: bool,
    #[command(flatten)]
    io: IoArg,
    #[command(flatten)]
    daemon: DaemonArg,
}

/// `last`, `lastupdate`: one file.
#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct FileArgs {
    /// The RRD (exactly one, as rrdtool wants).
    #[arg(num_args = 0..)]
    files: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    io: IoArg,
    #[command(flatten)]
    daemon: DaemonArg,
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct FirstArgs {
    /// The RRD (words after it are ignored, as by rrdtool).
    file: PathBuf,
    /// The archive (0-based).
    #[arg(long = "rraindex", default_value_t = 0, allow_negative_numbers = true)]
    rraindex: i64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    io: IoArg,
    #[command(flatten)]
    daemon: DaemonArg,
    #[arg(hide = true, num_args = 0..)]
    ignored: Vec<String>,
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct FlushcachedArgs {
    #[command(flatten)]
    daemon: DaemonArg,
    /// The RRDs whose queued updates the daemon is to write.
    #[arg(num_args = 0..)]
    files: Vec<PathBuf>,
}

/// `bench-inproc FILE --calls CALLS [--io MODE] [--cold]`: the workload of
/// `peers/rrd/peer bench-inproc` (librrd's `rrd_update_r` timed call by call)
/// through our engine, without process start-up.
#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct BenchInprocArgs {
    /// The RRD, updated in place.
    file: PathBuf,
    /// The calls: one `update` call per line, its arguments separated by
    /// white space (`TIME:V:V TIME:V:V …`).
    #[arg(long, value_name = "FILE")]
    calls: PathBuf,
    /// Before every call (untimed): fsync the file and drop it from the
    /// page cache (POSIX_FADV_DONTNEED), as `peers/rrd/peer bench-inproc --cold`;
    /// the resident pages after each call are reported.
    #[arg(long)]
    cold: bool,
    /// Keep one handle open for the whole run (`rrd::update::Rrd::open`,
    /// `update` per call, `close` at the end) instead of one open per call
    /// as `rrd_update_r`; the open and close are timed apart
    /// (`open_s`, `close_s`), each call's time is the update alone.
    #[arg(long, conflicts_with = "cold")]
    handle: bool,
    #[command(flatten)]
    io: IoArg,
}

/// Print rrdtool's error line and give its exit status.
fn fail(e: &rrd::Error) -> ExitCode {
    eprintln!("ERROR: {e}");
    ExitCode::from(1)
}

/// The exit of a command whose result was printed: rrdtool's error line
/// for a failure that did not stop the output (a daemon that could not be
/// reached before the file was read).
fn done(late: Option<rrd::Error>) -> ExitCode {
    late.map_or(ExitCode::SUCCESS, |e| fail(&e))
}

fn json_text(v: &serde_json::Value) -> Result<String> {
    Ok(format!("{}\n", serde_json::to_string_pretty(v)?))
}

/// The one-file commands' usage line when not given exactly one file.
fn one_file<'a>(files: &'a [PathBuf], usage: &str) -> Result<&'a Path, rrd::Error> {
    match files {
        [f] => Ok(f),
        _ => Err(rrd::Error::Rrdtool(usage.into())),
    }
}

fn info_json(pairs: &[(String, InfoValue)]) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = pairs
        .iter()
        .map(|(k, v)| {
            let j = match v {
                InfoValue::Val(x) if x.is_finite() => serde_json::json!(x),
                // Unknown (NaN) is null, as in `fetch --json`; ±inf keep
                // rrdtool's text.
                InfoValue::Val(x) if x.is_nan() => serde_json::Value::Null,
                InfoValue::Val(x) => serde_json::json!(mapwise_core::rrd::cfmt::c_e10(*x)),
                InfoValue::Cnt(n) => serde_json::json!(n),
                InfoValue::Str(s) => serde_json::json!(s),
                InfoValue::Int(n) => serde_json::json!(n),
            };
            (k.clone(), j)
        })
        .collect();
    serde_json::Value::Object(map)
}

/// A fetch result from the file or from the daemon.
struct Rows {
    names: Vec<String>,
    start: i64,
    end: i64,
    step: u64,
    /// The archive read (`None`: chosen by the daemon).
    rra: Option<usize>,
    values: Vec<f64>,
}

impl Rows {
    fn text(&self) -> String {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let mut s = String::new();
        let _ = write_fetch_rows(&mut s, &names, self.start, self.end, self.step, &self.values);
        s
    }

    fn json(&self) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .values
            .chunks(self.names.len().max(1))
            .enumerate()
            .map(|(i, r)| {
                let t = self.start + (i as i64 + 1) * self.step as i64;
                let vals: Vec<serde_json::Value> =
                    r.iter()
                        .map(|v| {
                            if v.is_finite() {
                                serde_json::json!(v)
                            } else {
                                serde_json::Value::Null
                            }
                        })
                        .collect();
                serde_json::json!({"time": t, "values": vals})
            })
            .collect();
        serde_json::json!({
            "start": self.start, "end": self.end, "step": self.step,
            "rra": self.rra, "ds": self.names, "rows": rows,
        })
    }
}

pub fn run(cmd: RrdCommand) -> Result<ExitCode> {
    if let RrdCommand::BenchInproc(a) = &cmd {
        return bench_inproc(a);
    }
    let mut out = StdioOut::new();
    let code = command(cmd, &mut out)?;
    out.finish()?;
    Ok(code)
}

fn command(cmd: RrdCommand, out: &mut StdioOut) -> Result<ExitCode> {
    match cmd {
        RrdCommand::Create(a) => Ok(create(&a)),
        RrdCommand::Update(a) => update(&a.core, Some(&a.daemon), out),
        RrdCommand::Updatev(a) => update(&a, None, out),
        RrdCommand::Fetch(a) => fetch(a, out),
        RrdCommand::Dump(a) => dump(&a, out),
        RrdCommand::Info(a) => info(&a, out),
        RrdCommand::Last(a) => {
            let usage = "Usage: rrdtool last [--daemon|-d <addr>] <file>";
            let r = one_file(&a.files, usage).map(|file| match a.daemon.connect() {
                None => (rrd::last(file, a.io.io), None),
                Some(Err(e)) => (rrd::last(file, a.io.io), Some(e)),
                Some(Ok(mut c)) => (c.last(file), None),
            });
            time_result(r, a.json, out)
        }
        RrdCommand::First(a) => {
            let r = if a.rraindex < 0 {
                Err(rrd::Error::Rrdtool("invalid rraindex number".into()))
            } else {
                Ok(match a.daemon.connect() {
                    None => (rrd::first(&a.file, a.io.io, a.rraindex), None),
                    Some(Err(e)) => (rrd::first(&a.file, a.io.io, a.rraindex), Some(e)),
                    Some(Ok(mut c)) => (c.first(&a.file, a.rraindex as u64), None),
                })
            };
            time_result(r, a.json, out)
        }
        RrdCommand::Lastupdate(a) => lastupdate(&a, out),
        RrdCommand::Flushcached(a) => Ok(flushcached(&a)),
        RrdCommand::BenchInproc(a) => bench_inproc(&a),
    }
}

fn create(a: &CreateArgs) -> ExitCode {
    let o = CreateOptions {
        step: a.step.clone(),
        start: a.start.clone(),
        no_overwrite: a.no_overwrite,
        seed: a.seed,
    };
    let local = || match rrd::create(&a.file, &o, &a.defs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    };
    // rrd_create reads every option before it connects.
    let (start, step) = match rrd::create::daemon_options(&o) {
        Ok(v) => v,
        Err(e) => return fail(&e),
    };
    match a.daemon.connect() {
        None => local(),
        // rrdtool creates the file itself when the daemon cannot be
        // reached (and the connection error is forgotten).
        Some(Err(_)) => local(),
        Some(Ok(_)) if a.seed.is_some() => fail(&rrd::Error::Rrdtool(
            "--seed cannot be used with rrdcached: the daemon creates the file".into(),
        )),
        Some(Ok(mut c)) => match c.create(&a.file, start, step, a.no_overwrite, &a.defs) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        },
    }
}

fn info(a: &InfoArgs, out: &mut StdioOut) -> Result<ExitCode> {
    let usage = "Usage: rrdtool info [--daemon |-d <addr> [--noflush|-F]] <file>";
    let file = match one_file(&a.files, usage) {
        Ok(f) => f,
        Err(e) => return Ok(fail(&e)),
    };
    let name = file.display().to_string();
    let (r, late) = match a.daemon.connect() {
        None => (rrd::info(file, a.io.io, &name), None),
        Some(Err(e)) => (rrd::info(file, a.io.io, &name), Some(e)),
        Some(Ok(mut c)) => {
            let r = if a.noflush { Ok(()) } else { c.flush_for_read(file) };
            (r.and_then(|()| c.info(file)), None)
        }
    };
    match r {
        Ok(pairs) if a.json => {
            let _ = out.write_str(&json_text(&info_json(&pairs))?);
            Ok(done(late))
        }
        Ok(pairs) => {
            let _ = write_info(out, &pairs);
            Ok(done(late))
        }
        Err(e) => Ok(fail(&e)),
    }
}

/// `last` and `first`: rrdtool prints the time, or `-1` and the error.
fn time_result(
    r: Result<(Result<i64, rrd::Error>, Option<rrd::Error>), rrd::Error>,
    json: bool,
    out: &mut StdioOut,
) -> Result<ExitCode> {
    let (t, late) = match r {
        Ok(v) => v,
        Err(e) => (Err(e), None),
    };
    match t {
        Ok(t) if json => {
            let _ = out.write_str(&json_text(&serde_json::json!({ "time": t }))?);
            Ok(done(late))
        }
        Ok(t) => {
            let _ = writeln!(out, "{t}");
            Ok(done(late))
        }
        Err(e) => {
            if !json {
                let _ = out.write_str("-1\n");
            }
            Ok(fail(&e))
        }
    }
}

/// `dump` and `lastupdate` with a daemon: flush the file first
/// (`rrdc_flush_if_daemon`), then read it. The error of a daemon that
/// could not be reached comes after the output.
fn flush_first(daemon: &DaemonArg, file: &Path) -> Result<Option<rrd::Error>, rrd::Error> {
    match daemon.connect() {
        None => Ok(None),
        Some(Err(e)) => Ok(Some(e)),
        Some(Ok(mut c)) => c.flush_for_read(file).map(|()| None),
    }
}

fn lastupdate(a: &FileArgs, out: &mut StdioOut) -> Result<ExitCode> {
    let usage = "Usage: rrdtool lastupdate [--daemon|-d <addr>] <file>";
    let file = match one_file(&a.files, usage) {
        Ok(f) => f,
        Err(e) => return Ok(fail(&e)),
    };
    let late = match flush_first(&a.daemon, file) {
        Ok(l) => l,
        Err(e) => return Ok(fail(&e)),
    };
    match rrd::lastupdate(file, a.io.io) {
        Ok(l) if a.json => {
            let ds: serde_json::Map<String, serde_json::Value> =
                l.ds.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect();
            let _ = out.write_str(&json_text(&serde_json::json!({"time": l.time, "last_ds": ds}))?);
            Ok(done(late))
        }
        Ok(l) => {
            let _ = out.write_str(&l.text);
            Ok(done(late))
        }
        Err(e) => Ok(fail(&e)),
    }
}

fn fetch(a: FetchArgs, out: &mut StdioOut) -> Result<ExitCode> {
    let Some(cf) = a.cf else {
        // rrd_fetch.c's words for a missing CF.
        eprintln!("ERROR: Usage: rrdtool fetch <file> <CF> [options]");
        return Ok(ExitCode::from(1));
    };
    let o = FetchOptions {
        start: a.start,
        end: a.end,
        resolution: a.resolution,
        align_start: a.align_start,
        io: a.io.io,
    };
    let local = |o: &FetchOptions| {
        rrd::fetch(&a.file, &cf, o).map(|f| Rows {
            names: f.names,
            start: f.plan.start,
            end: f.plan.end,
            step: f.plan.step,
            rra: Some(f.plan.rra),
            values: f.values,
        })
    };
    let (r, late) = match a.daemon.connect() {
        None => (local(&o), None),
        Some(Err(e)) => (local(&o), Some(e)),
        Some(Ok(mut c)) => {
            let r = rrd::fetch_window(&o).and_then(|(start, end)| {
                c.fetch(&a.file, &cf, start, end).map(|f| Rows {
                    names: f.names,
                    start: f.start,
                    end: f.end,
                    step: f.step,
                    rra: None,
                    values: f.values,
                })
            });
            (r, None)
        }
    };
    match r {
        Ok(rows) if a.json => {
            let _ = out.write_str(&json_text(&rows.json())?);
            Ok(done(late))
        }
        Ok(rows) => {
            let _ = out.write_str(&rows.text());
            Ok(done(late))
        }
        Err(e) => Ok(fail(&e)),
    }
}

fn update(a: &UpdateCore, daemon: Option<&DaemonArg>, out: &mut StdioOut) -> Result<ExitCode> {
    let verbose = daemon.is_none();
    if verbose && std::env::var_os(cached::ENV_ADDRESS).is_some() {
        // rrd_update_v refuses before counting its arguments. rrdtool
        // 1.7.2 refuses only an empty variable (its test is inverted) and
        // with a daemon named writes behind the daemon's back, which loses
        // what the daemon has queued: mapwise refuses both.
        return Ok(fail(&rrd::Error::Rrdtool(format!(
            "The \"{}\" environment variable is defined, but \"updatev\" cannot work \
             with rrdcached. Either unset the environment variable or use \"update\" instead.",
            cached::ENV_ADDRESS
        ))));
    }
    if a.values.is_empty() {
        return Ok(fail(&rrd::Error::Rrdtool("Not enough arguments".into())));
    }
    if let Some(d) = daemon {
        match d.connect() {
            None => {}
            Some(Err(e)) => return Ok(fail(&e)),
            Some(Ok(mut c)) => return Ok(update_through(&mut c, a)),
        }
    }
    let o = UpdateOptions {
        template: a.template.clone(),
        skip_past: a.skip_past,
        verbose,
        io: a.io.io,
    };
    match rrd::update(&a.file, &o, &a.values) {
        Ok(res) => {
            if verbose {
                let _ = out.write_str(&rrd::update::updatev_text(&res));
            }
            Ok(match &res.error {
                Some(e) => fail(e),
                None => ExitCode::SUCCESS,
            })
        }
        Err(e) => {
            if verbose {
                let _ = out.write_str("return_value = -1\n");
            }
            Ok(fail(&e))
        }
    }
}

/// `update` through rrdcached (`rrd_update`'s connected branch): the
/// values are queued by the daemon, a template mapped onto the file's data
/// sources first (`rrd_template_update`).
fn update_through(c: &mut Client, a: &UpdateCore) -> ExitCode {
    let values = match &a.template {
        None => Ok(a.values.clone()),
        Some(_) if a.skip_past => Err(rrd::Error::Rrdtool(
            "The caching daemon cannot be used together with templates and \
             skip-past-updates yet."
                .into(),
        )),
        Some(t) => rrd::ds_names(&a.file, a.io.io).and_then(|names| {
            a.values.iter().map(|v| cached::map_template(t, &names, v)).collect()
        }),
    };
    match values.and_then(|v| c.update(&a.file, &v)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn flushcached(a: &FlushcachedArgs) -> ExitCode {
    if a.files.is_empty() {
        return fail(&rrd::Error::Rrdtool(
            "Usage: rrdtool flushcached [--daemon|-d <addr>] <file> [<file> ...]".into(),
        ));
    }
    let mut c = match a.daemon.connect() {
        Some(Ok(c)) => c,
        Some(Err(e)) => return fail(&e),
        None => {
            return fail(&rrd::Error::Rrdtool(format!(
                "Daemon address \"{}\" unknown. Please use the \"--daemon\" option to set an \
                 address on the command line or set the \"{}\" environment variable.",
                a.daemon.daemon.as_deref().unwrap_or("(null)"),
                cached::ENV_ADDRESS
            )));
        }
    };
    // rrdtool counts every file but the first as skipped, wherever it
    // stops.
    let remaining = a.files.len() - 1;
    for f in &a.files {
        let cause = match c.flush(f) {
            Ok(0) => continue,
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        };
        let name = f.display().to_string();
        return fail(&rrd::Error::Rrdtool(cached::flushcached_failure(
            &name,
            cause.as_deref(),
            remaining,
        )));
    }
    ExitCode::SUCCESS
}

fn dump(a: &DumpArgs, out: &mut StdioOut) -> Result<ExitCode> {
    let header = if a.no_header {
        DumpHeader::None
    } else {
        match a.header.as_deref() {
            Some("xsd") => DumpHeader::Xsd,
            Some("none") => DumpHeader::None,
            _ => DumpHeader::Dtd,
        }
    };
    let late = match flush_first(&a.daemon, &a.file) {
        Ok(l) => l,
        Err(e) => return Ok(fail(&e)),
    };
    match &a.out {
        None => match rrd::dump_to(&a.file, a.io.io, header, out) {
            Err(rrd::Error::Output) => {
                if let Some(e) = out.error.take() {
                    return Err(e.into());
                }
                Ok(fail(&rrd::Error::Output))
            }
            Err(e) => Ok(fail(&e)),
            // rrd_dump_opt_r flushes stdout before the command's error
            // is printed.
            Ok(()) => {
                out.flush();
                Ok(done(late))
            }
        },
        Some(path) => {
            let mut s = String::new();
            match rrd::dump_to(&a.file, a.io.io, header, &mut s) {
                Ok(()) => match std::fs::write(path, s) {
                    Ok(()) => Ok(done(late)),
                    Err(e) => {
                        let _ = std::fs::remove_file(path);
                        Ok(fail(&rrd::Error::Rrdtool(format!("error writing output file: {e}"))))
                    }
                },
                Err(e) => Ok(fail(&e)),
            }
        }
    }
}

fn json_line(v: &serde_json::Value) -> Result<()> {
    let mut out = Out::new();
    let _ = out.write_str(&json_text(v)?);
    out.finish()?;
    Ok(())
}

/// fsync + `POSIX_FADV_DONTNEED` over the whole file (what the peer's
/// `--cold` does before every call).
fn evict(path: &std::path::Path) -> Result<()> {
    use anyhow::Context as _;
    use mapwise_native::os::residency;
    let f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    f.sync_all().with_context(|| format!("{}: fsync", path.display()))?;
    residency::evict(&f, 0, residency::TO_EOF)?;
    Ok(())
}

/// Resident OS pages of the file (mincore; touches nothing).
fn resident_pages(path: &std::path::Path) -> Result<u64> {
    let f = std::fs::File::open(path)?;
    Ok(mapwise_native::os::residency::sample(&f)?.resident_pages)
}

/// The in-process driver of `cargo xtask bench rrd`: every call of
/// `--calls` through [`rrd::update()`] (as `rrd_update_r`: no `updatev`
/// text), timed one by one; one JSON object on stdout. Exit status 1 when
/// a call failed.
fn bench_inproc(a: &BenchInprocArgs) -> Result<ExitCode> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(&a.calls)
        .with_context(|| format!("cannot read {}", a.calls.display()))?;
    let calls: Vec<Vec<String>> = text
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|c| !c.is_empty())
        .collect();
    let opts = UpdateOptions { template: None, skip_past: false, verbose: false, io: a.io.io };
    let usage_start = Usage::now();
    let mut times_s = Vec::with_capacity(calls.len());
    let mut resident_after = Vec::new();
    let mut failures = 0u64;
    let mut first_error: Option<String> = None;
    let (mut handle, open_s) = if a.handle {
        let start = std::time::Instant::now();
        let h = rrd::update::Rrd::open(&a.file, a.io.io).map_err(|e| anyhow::anyhow!("{e}"))?;
        (Some(h), Some(start.elapsed().as_secs_f64()))
    } else {
        (None, None)
    };
    for args in &calls {
        if a.cold {
            evict(&a.file)?;
        }
        let start = std::time::Instant::now();
        let r = match handle.as_mut() {
            Some(h) => h.update(&opts, args),
            None => rrd::update(&a.file, &opts, args),
        };
        let secs = start.elapsed().as_secs_f64();
        times_s.push(secs);
        let err = match r {
            Ok(out) => out.error.map(|e| e.to_string()),
            Err(e) => Some(e.to_string()),
        };
        if let Some(e) = err {
            failures += 1;
            first_error.get_or_insert(e);
        }
        if a.cold {
            resident_after.push(resident_pages(&a.file)?);
        }
    }
    let close_s = match handle {
        Some(h) => {
            let start = std::time::Instant::now();
            h.close().map_err(|e| anyhow::anyhow!("{e}"))?;
            Some(start.elapsed().as_secs_f64())
        }
        None => None,
    };
    let usage = Usage::now().since(&usage_start);
    let file_bytes = std::fs::metadata(&a.file)?.len();
    json_line(&serde_json::json!({
        "file": a.file.display().to_string(),
        "io": a.io.io.name(),
        "cold": a.cold,
        "handle": a.handle,
        "open_s": open_s,
        "close_s": close_s,
        "calls": calls.len(),
        "values": calls.iter().map(Vec::len).sum::<usize>(),
        "failures": failures,
        "first_error": first_error,
        "total_s": times_s.iter().sum::<f64>(),
        "times_s": times_s,
        "file_pages": file_bytes.div_ceil(mapwise_native::os::residency::os_page_size()),
        "resident_pages_after": resident_after,
        "user_s": usage.user_s,
        "sys_s": usage.sys_s,
        "minor_faults": usage.minflt,
        "major_faults": usage.majflt,
    }))?;
    Ok(if failures == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
