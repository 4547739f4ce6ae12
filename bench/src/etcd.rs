//! A real etcd for a bench: Debian's etcd 3.4 on loopback ports of its
//! own, in a temporary data directory, filled through its v3 JSON gateway
//! (`POST /v3/kv/put`, base64 keys and values), and stopped (SIGTERM,
//! then SIGKILL) and removed whatever happens ([`Drop`]).

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Serialize;

use super::interrupt;
use super::proc::{Cmd, tail};

/// The largest request etcd is started to accept (`--max-request-bytes`):
/// room for a 1 MiB value, base64'd in JSON by the gateway's client.
const MAX_REQUEST: u64 = 8 << 20;

/// How long etcd may take to answer after it starts.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// A running etcd, stopped and its directory removed when dropped.
#[derive(Debug)]
pub struct Etcd {
    child: Option<Child>,
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

/// A free loopback port (bound and released: another process could take
/// it before etcd does, which then fails to start and says so).
fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot bind a loopback port")?;
    Ok(l.local_addr()?.port())
}

/// Installs Debian's etcd-server and etcd-client when `etcd` or `etcdctl`
/// is missing (as root, or with passwordless sudo), through the
/// workspace's installer (`mapwise_testkit::install`), as the tests do.
///
/// # Errors
/// When the install fails.
pub fn ensure_installed() -> Result<()> {
    mapwise_testkit::install::try_ensure(&[mapwise_testkit::install::Need::Etcd])
        .map_err(anyhow::Error::msg)
}

/// `etcd --version`'s first line (`etcd Version: 3.4.23`).
pub fn version() -> Option<String> {
    super::machine::first_line_of("etcd", &["--version"])
}

impl Etcd {
    /// Starts etcd with its data directory under `parent` (a fresh
    /// `etcd-PID/`), a backend quota of `quota` bytes
    /// (`--quota-backend-bytes`) and requests of up to 8 MiB, and waits
    /// until it answers.
    ///
    /// # Errors
    /// When it cannot start or does not answer within a minute (the error
    /// quotes its log).
    pub fn start(parent: &Path, quota: u64) -> Result<Etcd> {
        ensure_installed()?;
        let dir = parent.join(format!("etcd-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let (client, peer) = (free_port()?, free_port()?);
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let data = dir.join("data").to_string_lossy().into_owned();
        let (cluster, quota) = (format!("bench={peer_url}"), quota.to_string());
        let max_request = MAX_REQUEST.to_string();
        let flags = [
            ("--name", "bench"),
            ("--data-dir", &data),
            ("--listen-client-urls", &endpoint),
            ("--advertise-client-urls", &endpoint),
            ("--listen-peer-urls", &peer_url),
            ("--initial-advertise-peer-urls", &peer_url),
            ("--initial-cluster", &cluster),
            ("--quota-backend-bytes", &quota),
            ("--max-request-bytes", &max_request),
            ("--log-level", "error"),
        ];
        let cmd = Cmd::new("etcd").args(flags.iter().flat_map(|&(k, v)| [k, v]));
        let log = fs::File::create(dir.join("etcd.log"))?;
        let child = Command::new(cmd.program())
            .args(cmd.arguments())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start etcd")?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut e =
            Etcd { child: Some(child), dir, endpoint, command: cmd.shell(), agent, next_key: 0 };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if e.post("/v3/maintenance/status", "{}").is_ok() {
                return Ok(e);
            }
            if let Some(c) = e.child.as_mut()
                && let Some(st) = c.try_wait()?
            {
                bail!("etcd exited ({st}) at start:\n{}", e.log_tail());
            }
            if Instant::now() > deadline {
                bail!("etcd did not answer within a minute:\n{}", e.log_tail());
            }
            interrupt::check()?;
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_tail(&self) -> String {
        tail(&fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default(), 20)
    }

    /// POSTs `body` to `path` of the gateway; the reply's text, or an
    /// error for a status other than 200.
    fn post(&self, path: &str, body: &str) -> Result<String> {
        post(&self.agent, &self.endpoint, path, body)
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
    /// requests at a time, until the db file is at least `bytes` long.
    ///
    /// # Errors
    /// A put that fails (etcd's reply is quoted), or Ctrl-C.
    pub fn fill_to(&mut self, bytes: u64, value_bytes: usize, concurrency: usize) -> Result<Fill> {
        let start = Instant::now();
        let db = self.db_path();
        let value = B64.encode(
            (0..value_bytes).map(|i| u8::try_from(i % 251).unwrap_or(0)).collect::<Vec<u8>>(),
        );
        let next = AtomicU64::new(self.next_key);
        let done = AtomicBool::new(false);
        let first = self.next_key;
        let result: Result<()> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..concurrency.max(1))
                .map(|_| {
                    s.spawn(|| -> Result<()> {
                        while !done.load(Ordering::Relaxed) {
                            if interrupt::raised()
                                || fs::metadata(&db).map_or(0, |m| m.len()) >= bytes
                            {
                                done.store(true, Ordering::Relaxed);
                                break;
                            }
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            let body = format!(
                                "{{\"key\":\"{}\",\"value\":\"{value}\"}}",
                                B64.encode(format!("/bench/{k:08}"))
                            );
                            if let Err(e) = post(&self.agent, &self.endpoint, "/v3/kv/put", &body) {
                                done.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|w| {
                w.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a put thread panicked")))
            })
        });
        interrupt::check()?;
        result.with_context(|| format!("filling etcd:\n{}", self.log_tail()))?;
        self.next_key = next.load(Ordering::Relaxed);
        Ok(Fill {
            puts: self.next_key - first,
            value_bytes,
            concurrency,
            seconds: start.elapsed().as_secs_f64(),
            db_bytes: fs::metadata(&db).map_or(0, |m| m.len()),
        })
    }

    /// `ETCDCTL_API=3 etcdctl --endpoints URL snapshot save COPY`.
    pub fn snapshot_cmd(&self, copy: &Path) -> Cmd {
        Cmd::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(self.endpoint.clone())
            .arg("snapshot")
            .arg("save")
            .arg(copy.to_string_lossy().into_owned())
    }
}

/// One POST to the gateway at `endpoint`.
fn post(agent: &ureq::Agent, endpoint: &str, path: &str, body: &str) -> Result<String> {
    let mut r = agent
        .post(format!("{endpoint}{path}"))
        .header("Content-Type", "application/json")
        .send(body)
        .with_context(|| format!("POST {path}"))?;
    let status = r.status();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    if status != 200 {
        bail!("POST {path}: {status}: {}", text.trim());
    }
    Ok(text)
}

impl Drop for Etcd {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = mapwise_native::os::process::terminate(&c);
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}
