//! `mapwise rrd …`: rrdtool's commands with rrdtool's syntax and output,
//! so a script switches by changing the binary name. Errors are printed
//! as rrdtool prints them (`ERROR: …` on stderr, exit status 1).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{ArgAction, Args, Subcommand};
use mapwise_core::rrd::dump::DumpHeader;
use mapwise_core::rrd::info::{InfoValue, write_info};
use mapwise_native::rrd::{self, CreateOptions, FetchOptions, IoMode, UpdateOptions};

use crate::out::Out;

#[derive(Debug, Subcommand)]
pub enum RrdCommand {
    /// Create a new RRD: `create FILE [-s STEP] [-b START] [-O] DS:… RRA:…`.
    Create(CreateArgs),
    /// Feed samples: `update FILE [-t DS:DS…] [-s] TIME:V:V…`.
    Update(UpdateArgs),
    /// `update`, then print every value written (`return_value = 0`, then
    /// `[T]RRA[CF][PDPs]DS[name] = value`).
    Updatev(UpdateArgs),
    /// Print the values of one consolidation function:
    /// `fetch FILE CF [-r RES] [-s START] [-e END] [-a]`.
    Fetch(FetchArgs),
    /// Print the whole file as XML: `dump FILE [OUT.xml] [-h none|xsd|dtd] [-n]`.
    Dump(DumpArgs),
    /// Print the header as `key = value` lines.
    Info(FileArgs),
    /// Print the time of the last update.
    Last(FileArgs),
    /// Print the time of the oldest row of an archive.
    First(FirstArgs),
    /// Print the last input of each data source.
    Lastupdate(FileArgs),
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
    /// rrdtool's `-d/--daemon ADDRESS` (go through rrdcached): refused,
    /// since mapwise reads and writes the file itself and would bypass
    /// what the daemon holds. `RRDCACHED_ADDRESS` is refused alike.
    #[arg(short = 'd', long = "daemon", value_name = "ADDRESS")]
    daemon: Option<String>,
    /// rrdtool's `-F/--noflush` (do not ask rrdcached to flush first):
    /// accepted; without a daemon there is nothing to flush.
    #[arg(short = 'F', long = "noflush")]
    noflush: bool,
}

impl IoArg {
    /// rrdtool would hand this command to rrdcached (`--daemon`, or a
    /// non-empty `RRDCACHED_ADDRESS` in the environment, as
    /// `rrdc_connect` reads it); mapwise refuses instead of writing
    /// behind the daemon's back.
    fn daemon_refusal(&self) -> Option<String> {
        let env = std::env::var("RRDCACHED_ADDRESS")
            .ok()
            .filter(|a| !a.is_empty());
        let (how, addr) = match (&self.daemon, env) {
            (Some(a), _) => ("--daemon", a.clone()),
            (None, Some(a)) => ("RRDCACHED_ADDRESS", a),
            (None, None) => return None,
        };
        Some(format!(
            "mapwise does not talk to rrdcached ({how} {addr}): flush the daemon \
             (rrdtool flushcached) and run without it, so the file holds every update"
        ))
    }
}

impl RrdCommand {
    fn io(&self) -> Option<&IoArg> {
        match self {
            RrdCommand::Create(_) => None,
            RrdCommand::Update(a) | RrdCommand::Updatev(a) => Some(&a.io),
            RrdCommand::Fetch(a) => Some(&a.io),
            RrdCommand::Dump(a) => Some(&a.io),
            RrdCommand::Info(a) | RrdCommand::Last(a) | RrdCommand::Lastupdate(a) => Some(&a.io),
            RrdCommand::First(a) => Some(&a.io),
            RrdCommand::BenchInproc(a) => Some(&a.io),
        }
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
    /// for reproducible files).
    #[arg(long)]
    seed: Option<u64>,
    /// `DS:name:TYPE:heartbeat:min:max`, `DS:name:COMPUTE:rpn`,
    /// `RRA:CF:xff:steps:rows`, `RRA:HWPREDICT:rows:alpha:beta:period`, …
    #[arg(num_args = 0..)]
    defs: Vec<String>,
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct UpdateArgs {
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
pub struct FetchArgs {
    /// The RRD.
    file: PathBuf,
    /// AVERAGE, MIN, MAX, LAST, HWPREDICT, …
    #[arg(required = false)]
    cf: Option<String>,
    /// Wished seconds per row (the closest archive is used).
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
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct FileArgs {
    /// The RRD.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    io: IoArg,
}

#[derive(Debug, Args)]
// A repeated option: the last one wins, as with rrdtool's getopt.
#[command(args_override_self = true)]
pub struct FirstArgs {
    /// The RRD.
    file: PathBuf,
    /// The archive (0-based).
    #[arg(long = "rraindex", default_value_t = 0, allow_negative_numbers = true)]
    rraindex: i64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    io: IoArg,
}

/// `bench-inproc FILE --calls CALLS [--io MODE] [--cold]`: the workload of
/// `oracle.sh bench-inproc` (librrd's `rrd_update_r` timed call by call)
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
    /// page cache (POSIX_FADV_DONTNEED), as `oracle.sh bench-inproc --cold`;
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

fn print(text: &str) -> Result<()> {
    let mut out = Out::new();
    let _ = out.write_str(text);
    out.finish()?;
    Ok(())
}

fn json_line(v: &serde_json::Value) -> Result<()> {
    print(&format!("{}\n", serde_json::to_string_pretty(v)?))
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

pub fn run(cmd: RrdCommand) -> Result<ExitCode> {
    if let Some(why) = cmd.io().and_then(IoArg::daemon_refusal) {
        eprintln!("ERROR: {why}");
        return Ok(ExitCode::from(1));
    }
    match cmd {
        RrdCommand::Create(a) => {
            let o = CreateOptions {
                step: a.step,
                start: a.start,
                no_overwrite: a.no_overwrite,
                seed: a.seed,
            };
            Ok(match rrd::create(&a.file, &o, &a.defs) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            })
        }
        RrdCommand::Update(a) | RrdCommand::Updatev(a) if a.values.is_empty() => {
            Ok(fail(&rrd::Error::Rrdtool("Not enough arguments".into())))
        }
        RrdCommand::Update(a) => update(a, false),
        RrdCommand::Updatev(a) => update(a, true),
        RrdCommand::Fetch(a) => {
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
            match rrd::fetch(&a.file, &cf, &o) {
                Ok(f) if a.json => {
                    let rows: Vec<serde_json::Value> = f
                        .values
                        .chunks(f.names.len().max(1))
                        .enumerate()
                        .map(|(i, r)| {
                            let t = f.plan.start + (i as i64 + 1) * f.plan.step as i64;
                            let vals: Vec<serde_json::Value> = r
                                .iter()
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
                    json_line(&serde_json::json!({
                        "start": f.plan.start, "end": f.plan.end, "step": f.plan.step,
                        "rra": f.plan.rra, "ds": f.names, "rows": rows,
                    }))?;
                    Ok(ExitCode::SUCCESS)
                }
                Ok(f) => {
                    print(&f.text)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => Ok(fail(&e)),
            }
        }
        RrdCommand::Dump(a) => dump(&a),
        RrdCommand::Info(a) => {
            let name = a.file.display().to_string();
            match rrd::info(&a.file, a.io.io, &name) {
                Ok(pairs) if a.json => {
                    json_line(&info_json(&pairs))?;
                    Ok(ExitCode::SUCCESS)
                }
                Ok(pairs) => {
                    let mut s = String::new();
                    let _ = write_info(&mut s, &pairs);
                    print(&s)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => Ok(fail(&e)),
            }
        }
        RrdCommand::Last(a) => time_result(rrd::last(&a.file, a.io.io), a.json),
        RrdCommand::First(a) => time_result(rrd::first(&a.file, a.io.io, a.rraindex), a.json),
        RrdCommand::BenchInproc(a) => bench_inproc(&a),
        RrdCommand::Lastupdate(a) => match rrd::lastupdate(&a.file, a.io.io) {
            Ok(l) if a.json => {
                let ds: serde_json::Map<String, serde_json::Value> =
                    l.ds.iter()
                        .map(|(k, v)| (k.clone(), serde_json::json!(v)))
                        .collect();
                json_line(&serde_json::json!({"time": l.time, "last_ds": ds}))?;
                Ok(ExitCode::SUCCESS)
            }
            Ok(l) => {
                print(&l.text)?;
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => Ok(fail(&e)),
        },
    }
}

/// `last` and `first`: rrdtool prints the time, or `-1` and the error.
fn time_result(r: Result<i64, rrd::Error>, json: bool) -> Result<ExitCode> {
    match r {
        Ok(t) if json => {
            json_line(&serde_json::json!({ "time": t }))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok(t) => {
            print(&format!("{t}\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if !json {
                print("-1\n")?;
            }
            Ok(fail(&e))
        }
    }
}

fn update(a: UpdateArgs, verbose: bool) -> Result<ExitCode> {
    let o = UpdateOptions {
        template: a.template,
        skip_past: a.skip_past,
        verbose,
        io: a.io.io,
    };
    match rrd::update(&a.file, &o, &a.values) {
        Ok(out) => {
            if verbose {
                print(&rrd::update::updatev_text(&out))?;
            }
            Ok(match &out.error {
                Some(e) => fail(e),
                None => ExitCode::SUCCESS,
            })
        }
        Err(e) => {
            if verbose {
                print("return_value = -1\n")?;
            }
            Ok(fail(&e))
        }
    }
}

fn dump(a: &DumpArgs) -> Result<ExitCode> {
    let header = if a.no_header {
        DumpHeader::None
    } else {
        match a.header.as_deref() {
            Some("xsd") => DumpHeader::Xsd,
            Some("none") => DumpHeader::None,
            _ => DumpHeader::Dtd,
        }
    };
    match &a.out {
        None => {
            let mut out = Out::new();
            let r = rrd::dump_to(&a.file, a.io.io, header, &mut out);
            let flushed = out.finish();
            match r {
                Err(rrd::Error::Output) => {
                    flushed?;
                    Ok(fail(&rrd::Error::Output))
                }
                Err(e) => Ok(fail(&e)),
                Ok(()) => {
                    flushed?;
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
        Some(path) => {
            let mut s = String::new();
            match rrd::dump_to(&a.file, a.io.io, header, &mut s) {
                Ok(()) => match std::fs::write(path, s) {
                    Ok(()) => Ok(ExitCode::SUCCESS),
                    Err(e) => {
                        let _ = std::fs::remove_file(path);
                        Ok(fail(&rrd::Error::Rrdtool(format!(
                            "error writing output file: {e}"
                        ))))
                    }
                },
                Err(e) => Ok(fail(&e)),
            }
        }
    }
}

/// fsync + `POSIX_FADV_DONTNEED` over the whole file (what the oracle's
/// `--cold` does before every call).
fn evict(path: &std::path::Path) -> Result<()> {
    use anyhow::Context as _;
    use mapwise_native::residency;
    let f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    f.sync_all()
        .with_context(|| format!("{}: fsync", path.display()))?;
    residency::evict(&f, 0, residency::TO_EOF)?;
    Ok(())
}

/// Resident OS pages of the file (mincore; touches nothing).
fn resident_pages(path: &std::path::Path) -> Result<u64> {
    let f = std::fs::File::open(path)?;
    Ok(mapwise_native::residency::sample(&f)?.resident_pages)
}

/// The in-process driver of `cargo xtask bench rrd`: every call of
/// `--calls` through [`rrd::update`] (as `rrd_update_r`: no `updatev`
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
    let opts = UpdateOptions {
        template: None,
        skip_past: false,
        verbose: false,
        io: a.io.io,
    };
    let usage_start = rusage();
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
    let usage = rusage().delta(&usage_start);
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
        "file_pages": file_bytes.div_ceil(mapwise_native::residency::os_page_size()),
        "resident_pages_after": resident_after,
        "user_s": usage.user_s,
        "sys_s": usage.sys_s,
        "minor_faults": usage.minflt,
        "major_faults": usage.majflt,
    }))?;
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// CPU time and page faults of this process so far (`getrusage`).
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    user_s: f64,
    sys_s: f64,
    minflt: i64,
    majflt: i64,
}

impl Usage {
    fn delta(&self, from: &Usage) -> Usage {
        Usage {
            user_s: self.user_s - from.user_s,
            sys_s: self.sys_s - from.sys_s,
            minflt: self.minflt - from.minflt,
            majflt: self.majflt - from.majflt,
        }
    }
}

// `i64::from` keeps this building where `c_long` is 32 bits.
#[allow(clippy::useless_conversion)]
fn rusage() -> Usage {
    // SAFETY: `rusage` is plain data; zero is a valid value of every field.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `struct rusage`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Usage::default();
    }
    #[allow(clippy::cast_precision_loss)]
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Usage {
        user_s: secs(ru.ru_utime),
        sys_s: secs(ru.ru_stime),
        minflt: i64::from(ru.ru_minflt),
        majflt: i64::from(ru.ru_majflt),
    }
}
