//! `cargo xtask crash`: the long runs of the bbolt engine's crash harness
//! and property test (the normal test run does 100 kills and 200
//! sequences).

use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::Args;

/// Long help of `cargo xtask crash`.
pub const HELP: &str = "\
Runs the bbolt engine's crash harness (native/tests/bolt_crash.rs) in
release mode with --kills SIGKILLs: a child process commits numbered
transactions and is killed at random moments; after each kill the file must
open, pass our check and Go bbolt's check (the bbolt peer,
peers/bolt/peer), and hold exactly the transactions acknowledged
before the kill, or one more, never part of one. It prints
`crash harness: K kills, T acknowledged transactions, 0 failures` and exits
non-zero on the first inconsistency (the failing files stay in the test's
temporary directory only while it runs; rerun with the same --seed to
reproduce).

With --proptest-cases N it also runs the property test
(native/tests/bolt_props.rs) with N random operation sequences, each judged
by the model and by Go bbolt (check and dump).";

/// Arguments of `cargo xtask crash`.
#[derive(Debug, Args)]
pub struct CrashArgs {
    /// SIGKILLs to deliver.
    #[arg(long, default_value_t = 2000)]
    kills: u64,
    /// Seed of the kill delays (the same seed gives the same schedule of
    /// delays, not the same kill points).
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// Also run the property test with this many sequences.
    #[arg(long)]
    proptest_cases: Option<u64>,
}

fn cargo_test(filter: &str, env: &[(&str, String)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "test",
        "--release",
        "-p",
        "mapwise-native",
        "--test",
        "main",
        "--",
        "--exact",
        filter,
        "--nocapture",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    eprintln!("xtask: {cmd:?}");
    let status = cmd.status().context("running cargo test")?;
    if !status.success() {
        bail!("{filter} failed ({status})");
    }
    Ok(())
}

/// Run the harness (and optionally the property test).
///
/// # Errors
/// When a run fails or cannot start.
pub fn run(args: &CrashArgs) -> Result<ExitCode> {
    cargo_test(
        "bolt_crash::sigkill_at_random_moments_never_loses_or_tears_a_commit",
        &[
            ("MAPWISE_CRASH_KILLS", args.kills.to_string()),
            ("MAPWISE_CRASH_SEED", args.seed.to_string()),
        ],
    )?;
    if let Some(n) = args.proptest_cases {
        cargo_test(
            "bolt_props::random_operation_sequences_match_the_model_and_go_bbolt",
            &[("MAPWISE_PROPTEST_CASES", n.to_string())],
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
