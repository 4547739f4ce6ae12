//! `cargo xtask writer`: an etcd-shaped bbolt writer (`testkit/writer.rs`)
//! on a file, for trying the quiet readers against a busy file by hand.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

#[path = "../../testkit/writer.rs"]
mod shape;

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

/// Run the writer.
///
/// # Errors
/// Opening or committing.
pub fn run(a: &WriterArgs) -> anyhow::Result<()> {
    let opts = mapwise_native::bolt::Options::read_write();
    let db = mapwise_native::bolt::Db::open(&a.file, &opts)
        .with_context(|| format!("open {}", a.file.display()))?;
    let s = shape::Shape {
        bucket: a.bucket.as_bytes().to_vec(),
        appends: a.appends,
        rewrites: a.rewrites,
        value_size: a.value_size,
        interval: Duration::from_millis(a.interval_ms),
    };
    let n = shape::run(&db, &s, Duration::from_secs_f64(a.seconds), || false)?;
    eprintln!("writer: {n} commits");
    Ok(())
}
