//! A real etcd for a bench: Debian's etcd 3.4 on loopback ports of its
//! own, in a temporary data directory, filled through its v3 JSON gateway,
//! and stopped and removed whatever happens ([`Drop`]). Not
//! `mapwise_testkit::etcd`, which takes no backend quota or request limit
//! (a 2 GiB db needs both), does not say its command line, and panics.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Serialize;

use super::interrupt;
use super::proc::{Cmd, tail};
use super::writer::{reap, spawn_until};

/// A running etcd, stopped and its directory removed when dropped.
#[derive(Debug)]
pub struct Etcd {
    child: Child,
    dir: PathBuf,
    /// `http://127.0.0.1:PORT`, the client URL (gRPC and the JSON gateway).
    pub endpoint: String,
    /// The command that started it, as a report shows it.
    pub command: String,
    agent: ureq::Agent,
    /// Keys put so far (`/bench/NNNNNNNN`).
    next_key: u64,
}

/// What [`Etcd::fill_to`] did.
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

/// One POST of `body` to `path` of the gateway at `endpoint`; an error for a status but 200.
fn post(agent: &ureq::Agent, endpoint: &str, path: &str, body: &str) -> Result<()> {
    let mut r = agent
        .post(format!("{endpoint}{path}"))
        .header("Content-Type", "application/json")
        .send(body)
        .with_context(|| format!("POST {path}"))?;
    if r.status() != 200 {
        let text = r.body_mut().read_to_string().unwrap_or_default();
        bail!("POST {path}: {}: {}", r.status(), text.trim());
    }
    Ok(())
}

impl Etcd {
    /// Starts etcd with its data directory under `parent` (a fresh
    /// `etcd-PID/`), a backend quota of `quota` bytes and requests of up
    /// to 8 MiB (room for a 1 MiB value), and waits up to a minute until
    /// it answers (an error quotes its log).
    pub fn start(parent: &Path, quota: u64) -> Result<Etcd> {
        ensure_installed()?;
        let dir = parent.join(format!("etcd-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // Free a moment ago: if another process takes one first, etcd says so.
        let url = || -> Result<String> {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            Ok(format!("http://127.0.0.1:{port}"))
        };
        let (endpoint, peer) = (url()?, url()?);
        let data = dir.join("data").to_string_lossy().into_owned();
        let (cluster, quota) = (format!("bench={peer}"), quota.to_string());
        let flags = [
            ("--name", "bench"),
            ("--data-dir", &data),
            ("--listen-client-urls", &endpoint),
            ("--advertise-client-urls", &endpoint),
            ("--listen-peer-urls", &peer),
            ("--initial-advertise-peer-urls", &peer),
            ("--initial-cluster", &cluster),
            ("--quota-backend-bytes", &quota),
            ("--max-request-bytes", "8388608"),
            ("--log-level", "error"),
        ];
        let cmd = Cmd::new("etcd").args(flags.iter().flat_map(|&(k, v)| [k, v]));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .http_status_as_error(false)
            .build()
            .into();
        let up = || post(&agent, &endpoint, "/v3/maintenance/status", "{}").is_ok();
        let child = spawn_until(&cmd, &dir.join("etcd.log"), Duration::from_secs(60), up)?;
        Ok(Etcd { child, dir, endpoint, command: cmd.shell(), agent, next_key: 0 })
    }

    /// The backend file, `DATA_DIR/member/snap/db`.
    pub fn db_path(&self) -> PathBuf {
        self.dir.join("data/member/snap/db")
    }

    /// The directory its data and log live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Puts new keys with values of `value_bytes` bytes, `concurrency`
    /// requests at a time, until the db file is at least `bytes` long; the
    /// first failed put (quoting etcd's reply) or Ctrl-C stops them all.
    pub fn fill_to(&mut self, bytes: u64, value_bytes: usize, concurrency: usize) -> Result<Fill> {
        let (start, db, first) = (Instant::now(), self.db_path(), self.next_key);
        let value: Vec<u8> = (0..value_bytes).map(|i| u8::try_from(i % 251).unwrap_or(0)).collect();
        let value = B64.encode(value);
        let (next, failed) = (AtomicU64::new(first), AtomicBool::new(false));
        let db_len = || fs::metadata(&db).map_or(0, |m| m.len());
        let (agent, endpoint) = (&self.agent, self.endpoint.as_str());
        let put = || -> Result<()> {
            while !failed.load(Relaxed) && !interrupt::raised() && db_len() < bytes {
                let key = B64.encode(format!("/bench/{:08}", next.fetch_add(1, Relaxed)));
                let body = format!("{{\"key\":\"{key}\",\"value\":\"{value}\"}}");
                post(agent, endpoint, "/v3/kv/put", &body)
                    .inspect_err(|_| failed.store(true, Relaxed))?;
            }
            Ok(())
        };
        let result: Result<()> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..concurrency.max(1)).map(|_| s.spawn(put)).collect();
            workers.into_iter().try_for_each(|w| {
                w.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a put thread panicked")))
            })
        });
        interrupt::check()?;
        let log = || tail(&fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default(), 20);
        result.with_context(|| format!("filling etcd:\n{}", log()))?;
        self.next_key = next.load(Relaxed);
        let seconds = start.elapsed().as_secs_f64();
        Ok(Fill {
            puts: self.next_key - first,
            value_bytes,
            concurrency,
            seconds,
            db_bytes: db_len(),
        })
    }

    /// `ETCDCTL_API=3 etcdctl --endpoints URL snapshot save COPY`.
    pub fn snapshot_cmd(&self, copy: &Path) -> Cmd {
        let (endpoint, copy) = (self.endpoint.as_str(), copy.to_string_lossy());
        Cmd::new("etcdctl").env("ETCDCTL_API", "3").args([
            "--endpoints",
            endpoint,
            "snapshot",
            "save",
            &*copy,
        ])
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        reap(&mut self.child, Duration::from_secs(10));
        let _ = fs::remove_dir_all(&self.dir);
    }
}
