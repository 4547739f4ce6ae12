//! `cargo xtask fuzz`: build the cargo-fuzz targets (`fuzz/`) and run each
//! for a while, one after the other.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;

/// Long help of `cargo xtask fuzz`.
pub const HELP: &str = "\
Builds every fuzz target of fuzz/ with cargo-fuzz (`cargo fuzz build
--sanitizer none`, which works on the stable toolchain; `--sanitizer
address` builds with AddressSanitizer through RUSTC_BOOTSTRAP=1) and runs
the named targets (all by default) one after the other for --time seconds
each (--jobs N runs N processes of each target side by side, one per core,
sharing its corpus). Each run starts from the checked-in seeds (fuzz/seeds/TARGET) and the
local corpus (fuzz/corpus/TARGET, kept between runs, not in git), with
libFuzzer's limits: -rss_limit_mb, -malloc_limit_mb, -timeout per input,
-max_len per target. Prints the executions reached per target and, on a
crash, hang or out-of-memory, the path of the reproducer
(fuzz/artifacts/TARGET/...) and how to replay it; exits non-zero when any
target failed. Logs: target/fuzz-logs/TARGET.log (TARGET.2.log … for the
other jobs); every run also adds a
line to target/fuzz-logs/ledger.tsv, and the summary ends with the
executions per target summed over it (the lifetime count of this
checkout).

A reproducer becomes a regression test by copying it (minimised with
`cargo fuzz tmin -s none TARGET FILE` where possible) into
native/tests/regressions/TARGET/: `cargo test --workspace` replays every
file there through the same harness (native/tests/fuzz_regressions.rs).

Needs cargo-fuzz (`cargo install cargo-fuzz`); the machine's other work is
left alone only if you ask: run it under `nice -n 19` on a shared machine.";

/// The targets, each with its `-max_len` (bytes of one input): enough for
/// the small seed files, small enough to keep executions fast.
const TARGETS: &[(&str, usize)] = &[
    ("bolt_file", 65_536),
    ("rrd_file", 40_960),
    ("revlog_index", 40_960),
    ("detect_layout", 40_960),
    ("bolt_ops", 512),
    ("rrd_ops", 4_096),
    ("etcd_model", 65_536),
];

/// Arguments of `cargo xtask fuzz`.
#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Seconds to fuzz each target.
    #[arg(long, default_value_t = 60)]
    time: u64,
    /// Sanitizer: `none` (stable Rust) or `address` (RUSTC_BOOTSTRAP=1).
    #[arg(long, default_value = "none")]
    sanitizer: String,
    /// libFuzzer's RSS limit per process, in MiB.
    #[arg(long, default_value_t = 2048)]
    rss_limit_mb: u64,
    /// Processes per target, run side by side on one shared corpus (each
    /// with its own log: TARGET.log, TARGET.2.log, …, and ledger line).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    jobs: u32,
    /// Targets to run (default: all).
    targets: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn host_triple() -> Result<String> {
    let out = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .context("no host line in rustc -vV")
}

/// What one run reported.
#[derive(Debug, Default)]
struct Outcome {
    execs: u64,
    seconds: f64,
    artifact: Option<String>,
    reason: Option<String>,
    /// libFuzzer stopped on SIGINT/SIGTERM ("run interrupted"): the
    /// executions count, and nothing was found.
    interrupted: bool,
}

fn parse_log(log: &str) -> Outcome {
    let mut o = Outcome::default();
    let mut lines = log.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(v) = line.strip_prefix("stat::number_of_executed_units:") {
            o.execs = v.trim().parse().unwrap_or(o.execs);
        } else if let Some(rest) = line.strip_prefix("Done ") {
            // "Done 123 runs in 60 second(s)"
            let mut w = rest.split_whitespace();
            if let Some(n) = w.next().and_then(|n| n.parse().ok()) {
                o.execs = o.execs.max(n);
            }
        } else if line.starts_with("==") && line.contains("libFuzzer: run interrupted") {
            o.interrupted = true;
        } else if let Some(i) = line.find("Test unit written to ") {
            o.artifact = Some(line[i + "Test unit written to ".len()..].trim().to_owned());
        } else if line.starts_with("==") && line.contains("ERROR: libFuzzer:") {
            // A Rust panic aborts, which libFuzzer reports as a "deadly
            // signal" after the panic line: keep the panic, it says more.
            if o.reason.is_none() {
                o.reason = line.split("ERROR: libFuzzer:").nth(1).map(|s| s.trim().to_owned());
            }
        } else if line.starts_with("thread '") && line.contains("panicked at") {
            let mut msg = line.trim().to_owned();
            // The panic message is on the next line.
            if let Some(next) = lines.peek() {
                msg.push(' ');
                msg.push_str(next.trim());
            }
            o.reason = Some(msg);
        }
    }
    o
}

/// The ledger of every run in this checkout: one tab-separated line per
/// run (unix time, target, executions, seconds, `ok`/`failed`/`interrupted`), so the
/// executions reached per target add up across sessions.
const LEDGER: &str = "ledger.tsv";

fn ledger_append(logs: &Path, target: &str, execs: u64, seconds: f64, status: RunStatus) {
    use std::io::Write;
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let line = format!("{when}\t{target}\t{execs}\t{seconds:.1}\t{}\n", status.name());
    let file = std::fs::OpenOptions::new().create(true).append(true).open(logs.join(LEDGER));
    if let Ok(mut f) = file {
        // One write per line: concurrent runs append whole lines.
        let _ = f.write_all(line.as_bytes());
    }
}

/// Per target: (runs, executions, seconds) summed over the ledger's lines;
/// malformed lines are skipped.
fn ledger_totals(text: &str) -> std::collections::BTreeMap<String, (u64, u64, f64)> {
    let mut m = std::collections::BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [_, target, execs, secs, _] = f.as_slice() else {
            continue;
        };
        let (Ok(execs), Ok(secs)) = (execs.parse::<u64>(), secs.parse::<f64>()) else {
            continue;
        };
        let e: &mut (u64, u64, f64) = m.entry((*target).to_owned()).or_default();
        e.0 += 1;
        e.1 += execs;
        e.2 += secs;
    }
    m
}

/// How a fuzzer process ended, as the ledger records it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RunStatus {
    Ok,
    /// Stopped with SIGINT (libFuzzer exits 72): nothing was found.
    Interrupted,
    /// A crash, hang, OOM or any other non-zero exit.
    Failed,
}

impl RunStatus {
    /// The ledger's word.
    fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
        }
    }
}

/// One finished fuzzer process.
struct Run<'a> {
    target: &'a str,
    log_path: &'a Path,
    started: Instant,
    status: std::process::ExitStatus,
    logs: &'a Path,
    fuzz: &'a Path,
    sanitizer: &'a str,
}

/// Read a finished run's log: print its summary row, add its ledger line
/// and, when it failed, say why and where the reproducer is.
fn finish_run(r: &Run<'_>, rows: &mut Vec<String>, failed: &mut Vec<String>) {
    let (t, st) = (r.target, r.status);
    let mut o = parse_log(&std::fs::read_to_string(r.log_path).unwrap_or_default());
    o.seconds = r.started.elapsed().as_secs_f64();
    #[expect(clippy::cast_precision_loss)]
    let rate = o.execs as f64 / o.seconds.max(1e-9);
    // An interrupted run (Ctrl-C, or SIGINT to stop a long run early)
    // exits non-zero without having found anything.
    let status = if st.success() {
        RunStatus::Ok
    } else if o.interrupted && o.artifact.is_none() {
        RunStatus::Interrupted
    } else {
        RunStatus::Failed
    };
    let line = format!(
        "{t:<14} {:>12} execs in {:>6.1} s ({rate:>9.0}/s){}",
        o.execs,
        o.seconds,
        match status {
            RunStatus::Ok => "",
            RunStatus::Interrupted => "  (interrupted)",
            RunStatus::Failed => "  FAILED",
        }
    );
    println!("{line}");
    rows.push(line);
    ledger_append(r.logs, t, o.execs, o.seconds, status);
    if status != RunStatus::Failed {
        return;
    }
    let what = o.reason.clone().unwrap_or_else(|| format!("exit {st}"));
    match &o.artifact {
        Some(a) => {
            eprintln!(
                "xtask: {t} failed: {what}\n  reproducer: {a}\n  replay: (cd fuzz && cargo fuzz run -s {} {t} {a})",
                r.sanitizer
            );
            // The artifact dies with a CI checkout: print it, so the log
            // alone is enough to rebuild the regression test.
            if let Ok(bytes) = std::fs::read(r.fuzz.join(a)) {
                eprintln!(
                    "  input ({} bytes, Rust byte-string escapes): b\"{}\"",
                    bytes.len(),
                    bytes.escape_ascii()
                );
            }
        }
        None => eprintln!("xtask: {t} failed: {what} (see {})", r.log_path.display()),
    }
    failed.push(format!("{t}: {what}: {}", o.artifact.unwrap_or_default()));
}

/// Build and run the targets.
///
/// # Errors
/// When cargo-fuzz is missing, the build fails, or a target cannot start.
pub fn run(args: &FuzzArgs) -> Result<ExitCode> {
    let root = root();
    let fuzz = root.join("fuzz");
    let chosen: Vec<(&str, usize)> = if args.targets.is_empty() {
        TARGETS.to_vec()
    } else {
        let mut v = Vec::new();
        for t in &args.targets {
            match TARGETS.iter().find(|(n, _)| n == t) {
                Some(x) => v.push(*x),
                None => bail!(
                    "unknown fuzz target {t:?}; targets: {}",
                    TARGETS.iter().map(|t| t.0).collect::<Vec<_>>().join(" ")
                ),
            }
        }
        v
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let have = Command::new(&cargo)
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        bail!("cargo-fuzz is not installed: cargo install cargo-fuzz");
    }
    let target_dir = fuzz.join("target");
    // `cargo fuzz build` takes one target or all; build each chosen one
    // (the second and later builds reuse everything but the final link).
    for (t, _) in &chosen {
        let mut b = Command::new(&cargo);
        b.current_dir(&fuzz)
            .args(["fuzz", "build", "--sanitizer", &args.sanitizer, "--target-dir"])
            .arg(&target_dir)
            .arg(t);
        if args.sanitizer != "none" {
            b.env("RUSTC_BOOTSTRAP", "1");
        }
        let st = b.status().context("running cargo fuzz build")?;
        if !st.success() {
            bail!("cargo fuzz build {t} failed ({st})");
        }
    }
    let bin_dir = target_dir.join(host_triple()?).join("release");
    let logs = root.join("target/fuzz-logs");
    std::fs::create_dir_all(&logs)?;
    let mut failed = Vec::new();
    let mut rows = Vec::new();
    for (t, max_len) in &chosen {
        let corpus = fuzz.join("corpus").join(t);
        let artifacts = fuzz.join("artifacts").join(t);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&artifacts)?;
        // Spawn every job of this target, then wait for them all.
        let mut running = Vec::new();
        for job in 1..=args.jobs {
            let log_path = if job == 1 {
                logs.join(format!("{t}.log"))
            } else {
                logs.join(format!("{t}.{job}.log"))
            };
            let log = std::fs::File::create(&log_path)?;
            let mut cmd = Command::new(bin_dir.join(t));
            cmd.current_dir(&fuzz)
                .arg(format!("-max_total_time={}", args.time))
                .arg(format!("-rss_limit_mb={}", args.rss_limit_mb))
                .arg(format!("-malloc_limit_mb={}", args.rss_limit_mb))
                .arg("-timeout=20")
                .arg(format!("-max_len={max_len}"))
                .arg("-print_final_stats=1")
                .arg(format!("-artifact_prefix={}/", artifacts.display()));
            let dict = fuzz.join("dicts").join(format!("{t}.dict"));
            if dict.exists() {
                cmd.arg(format!("-dict={}", dict.display()));
            }
            cmd.arg(&corpus).arg(fuzz.join("seeds").join(t));
            cmd.stdout(log.try_clone()?).stderr(log);
            eprintln!("xtask: fuzzing {t} for {} s (log {})", args.time, log_path.display());
            let child =
                cmd.spawn().with_context(|| format!("running {}", bin_dir.join(t).display()))?;
            running.push((child, log_path, Instant::now()));
        }
        for (mut child, log_path, started) in running {
            let st = child.wait().context("waiting for a fuzzer")?;
            finish_run(
                &Run {
                    target: t,
                    log_path: &log_path,
                    started,
                    status: st,
                    logs: &logs,
                    fuzz: &fuzz,
                    sanitizer: &args.sanitizer,
                },
                &mut rows,
                &mut failed,
            );
        }
    }
    println!("\nfuzz summary ({} s per target, sanitizer {}):", args.time, args.sanitizer);
    for r in &rows {
        println!("  {r}");
    }
    let totals = ledger_totals(&std::fs::read_to_string(logs.join(LEDGER)).unwrap_or_default());
    println!("\nexecutions in this checkout so far (target/fuzz-logs/{LEDGER}):");
    for (t, _) in TARGETS {
        let (runs, execs, secs) = totals.get(*t).copied().unwrap_or_default();
        println!("  {t:<14} {execs:>12} execs in {runs:>4} runs, {:>8.0} s", secs);
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for f in &failed {
            eprintln!("xtask: FAILED {f}");
        }
        Ok(ExitCode::FAILURE)
    }
}

/// Long help of `cargo xtask hostile`.
pub const HOSTILE_HELP: &str = "\
Runs the full hostile-file sweep (native/tests/hostile.rs and
cli/tests/hostile.rs, ignored in the normal test run): every truncation at a
page boundary and mid-page of the corpus files, every header byte inverted,
every page's header and elements damaged; each case through core's parsers
and the writers, and through the mapwise command line, in release mode.";

/// Run the full hostile-file sweep.
///
/// # Errors
/// When the sweep fails or cannot start.
pub fn hostile() -> Result<ExitCode> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root()).args([
        "test",
        "--release",
        "-p",
        "mapwise-native",
        "-p",
        "mapwise-cli",
        "--test",
        "main",
        "--",
        "--ignored",
        "--exact",
        "hostile::hostile_files_full_sweep",
        "--nocapture",
    ]);
    eprintln!("xtask: {cmd:?}");
    let st = cmd.status().context("running cargo test")?;
    if !st.success() {
        bail!("the hostile-file sweep failed ({st})");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_libfuzzer_stats_and_artifacts() {
        let log = "\
#1234\tDONE   cov: 10 ft: 20 corp: 3/4b exec/s: 100 rss: 50Mb
Done 1234 runs in 11 second(s)
stat::number_of_executed_units: 1234
";
        let o = parse_log(log);
        assert_eq!(o.execs, 1234);
        assert!(o.artifact.is_none());
        let crash = "\
thread '<unnamed>' (1) panicked at src/lib.rs:49:9:
index out of bounds: the len is 3 but the index is 7
==77== ERROR: libFuzzer: deadly signal
artifact_prefix='/x/'; Test unit written to /x/crash-abc
";
        let o = parse_log(crash);
        assert_eq!(o.artifact.as_deref(), Some("/x/crash-abc"));
        assert_eq!(
            o.reason.as_deref(),
            Some(
                "thread '<unnamed>' (1) panicked at src/lib.rs:49:9: \
                 index out of bounds: the len is 3 but the index is 7"
            )
        );
        let signal = "==77== ERROR: libFuzzer: deadly signal\n";
        let ledger = "1\tbolt_file\t100\t60.0\tok\nbad line\n2\tbolt_file\t50\t30.5\tfailed\n3\trrd_ops\tx\t1\tok\n";
        let t = ledger_totals(ledger);
        assert_eq!(t.len(), 1);
        assert_eq!(t["bolt_file"], (2, 150, 90.5));
        assert_eq!(parse_log(signal).reason.as_deref(), Some("deadly signal"));
        assert!(!parse_log(signal).interrupted);
        // SIGINT: libFuzzer prints this, its final stats, and exits 72.
        let stopped = "==77== libFuzzer: run interrupted; exiting\n\
stat::number_of_executed_units: 99\n";
        let o = parse_log(stopped);
        assert!(o.interrupted && o.artifact.is_none() && o.reason.is_none());
        assert_eq!(o.execs, 99);
    }
}
