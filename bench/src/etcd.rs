//! The etcd of `bench live` and `bench etcd`: the tests' starter ([`mapwise_testkit::etcd`]:
//! Debian's etcd 3.4 on loopback ports of its own, in a temporary data
//! directory, killed and removed on drop) with room for a 2 GiB db, filled
//! through its v3 JSON gateway, and its command lines as a report shows
//! them.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use mapwise_testkit::etcd::{Config, Limits};
use serde::Serialize;

use super::interrupt;
use super::proc::Cmd;

pub use mapwise_testkit::etcd::Etcd;

/// What [`fill_to`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Fill {
    /// Puts made in this call.
    pub puts: u64,
    /// Value bytes of each.
    pub value_bytes: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Seconds the call took.
    pub seconds: f64,
    /// The db file's length afterwards.
    pub db_bytes: u64,
}

/// Installs Debian's etcd-server and etcd-client when missing, through
/// `mapwise_testkit::install` as the tests do.
pub fn ensure_installed() -> Result<()> {
    mapwise_testkit::install::try_ensure(&[mapwise_testkit::install::Need::Etcd])
        .map_err(anyhow::Error::msg)
}

/// `etcd --version`'s first line (`etcd Version: 3.4.23`).
pub fn version() -> Option<String> {
    super::machine::first_line_of("etcd", &["--version"])
}

/// Starts etcd with its data directory under `parent`, a backend quota of
/// `quota` bytes and requests of up to 8 MiB (room for a 1 MiB value);
/// an error quotes its log.
pub fn start(parent: &Path, quota: u64) -> Result<Etcd> {
    ensure_installed()?;
    let cfg = Config { parent: Some(parent.to_owned()), ..Config::default() };
    let limits = Limits { quota_backend_bytes: Some(quota), max_request_bytes: Some(8 << 20) };
    Etcd::try_start(&cfg, limits).map_err(anyhow::Error::msg)
}

/// The command line `etcd` was started with, as a shell takes it.
pub fn command(etcd: &Etcd) -> String {
    Cmd::new(&etcd.command[0]).args(&etcd.command[1..]).shell()
}

/// Puts new keys (`/bench/BYTES/N`) with values of `value_bytes` bytes,
/// `concurrency` requests at a time, until the db file is at least `bytes`
/// long; the first failed put (quoting etcd's reply) or Ctrl-C stops them
/// all.
pub fn fill_to(etcd: &Etcd, bytes: u64, value_bytes: usize, concurrency: usize) -> Result<Fill> {
    let (start, db) = (Instant::now(), etcd.db());
    let value: Vec<u8> = (0..value_bytes).map(|i| u8::try_from(i % 251).unwrap_or(0)).collect();
    let (next, failed) = (AtomicU64::new(0), AtomicBool::new(false));
    let db_len = || fs::metadata(&db).map_or(0, |m| m.len());
    let put = || -> Result<()> {
        while !failed.load(Relaxed) && !interrupt::raised() && db_len() < bytes {
            let key = format!("/bench/{bytes}/{:08}", next.fetch_add(1, Relaxed));
            etcd.try_put(&key, &value, 0)
                .map_err(anyhow::Error::msg)
                .inspect_err(|_| failed.store(true, Relaxed))?;
        }
        Ok(())
    };
    let result: Result<()> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..concurrency.max(1)).map(|_| s.spawn(put)).collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or_else(|_| Err(anyhow!("a put thread panicked"))))
    });
    interrupt::check()?;
    result.with_context(|| format!("filling etcd:\n{}", etcd.log_tail()))?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Fill { puts: next.load(Relaxed), value_bytes, concurrency, seconds, db_bytes: db_len() })
}

/// `ETCDCTL_API=3 etcdctl --endpoints URL snapshot save COPY`.
pub fn snapshot_cmd(etcd: &Etcd, copy: &Path) -> Cmd {
    let args = ["--endpoints", &etcd.endpoint, "snapshot", "save", &copy.to_string_lossy()];
    Cmd::new("etcdctl").env("ETCDCTL_API", "3").args(args)
}
