//! `cargo xtask writer`: the command line of the etcd-shaped writer
//! (`mapwise_bench::writer::write`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use mapwise_testkit::writer::Shape;

/// `cargo xtask writer FILE`.
#[derive(Debug, clap::Args)]
pub struct WriterArgs {
    /// The bbolt file (created when missing).
    file: PathBuf,
    /// Milliseconds between two commits.
    #[arg(long, default_value_t = 100)]
    interval_ms: u64,
    /// The bucket written.
    #[arg(long, default_value = "key")]
    bucket: String,
    /// Keys appended per commit.
    #[arg(long, default_value_t = 2)]
    appends: u32,
    /// Random existing keys rewritten per commit.
    #[arg(long, default_value_t = 1)]
    rewrites: u32,
    /// Value bytes.
    #[arg(long, default_value_t = 512)]
    value_size: usize,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
}

/// Runs the writer until `--seconds` pass or a SIGINT, SIGTERM or SIGHUP
/// arrives (then after the commit under way).
pub fn run(a: &WriterArgs) -> Result<()> {
    let shape = Shape {
        bucket: a.bucket.as_bytes().to_vec(),
        appends: a.appends,
        rewrites: a.rewrites,
        value_size: a.value_size,
        interval: Duration::from_millis(a.interval_ms),
    };
    mapwise_bench::writer::write(&a.file, &shape, Duration::from_secs_f64(a.seconds))
}
