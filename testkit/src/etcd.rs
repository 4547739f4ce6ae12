//! etcd for tests: a real etcd of the test's own ([`Etcd`]: Debian's
//! etcd-server 3.4) on loopback ports that were free a moment ago, with a
//! temporary data directory, killed and reaped on drop whatever the test's
//! outcome; a small client of its v3 JSON gateway (put, delete, leases,
//! compaction, status), `etcdctl` for defrag and snapshots, a preload to a
//! chosen db size, and a bounded load generator of Kubernetes-like traffic
//! (`Load`). Install the Debian packages before starting one
//! (`install::ensure(&[Need::Etcd])`). The live bench starts its etcd here
//! too ([`Etcd::try_start`], with [`Limits`] for a 2 GiB db).
//!
//! The db file is `DATA_DIR/member/snap/db` ([`Etcd::db`]), a bbolt file
//! etcd commits to every `--backend-batch-interval` while writes come in.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

/// How to start an [`Etcd`].
#[derive(Debug, Clone)]
pub struct Config {
    /// `--backend-batch-interval`: how often etcd commits its bbolt
    /// transaction while writes come in (etcd's default: 100 ms).
    pub batch_interval: Duration,
    /// Where the temporary data directory is made (it must be on a disk
    /// file system, not tmpfs, for `O_DIRECT` and eviction to mean
    /// anything); the system's temporary directory when `None`.
    pub parent: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config { batch_interval: Duration::from_millis(100), parent: None }
    }
}

/// etcd's size limits, beyond what [`Config`] sets; `None` leaves etcd's
/// default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// `--quota-backend-bytes`: the db size past which etcd refuses writes
    /// (default 2 GiB, which a 2 GiB db goes over).
    pub quota_backend_bytes: Option<u64>,
    /// `--max-request-bytes`: the largest request etcd takes (default
    /// 1.5 MiB).
    pub max_request_bytes: Option<u64>,
}

/// `etcdctl endpoint status`'s numbers, from the gateway's
/// `/v3/maintenance/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// bbolt's `Tx.Size()`: the high-water mark times the page size (not
    /// the file's length).
    pub db_size: u64,
    /// `db_size` less the free pages.
    pub db_size_in_use: u64,
    /// The store's current revision.
    pub revision: i64,
    /// Raft's applied index.
    pub raft_applied_index: u64,
}

/// The Kubernetes resource kinds the keys are named after
/// (`/registry/<kind>/<ns>/<name>`), with the share of preloaded keys
/// each gets (out of 100).
pub const KINDS: [(&str, u64); 5] =
    [("pods", 40), ("configmaps", 20), ("events", 15), ("services", 10), ("leases", 15)];

/// Namespaces keys are spread over.
pub const NAMESPACES: u64 = 16;

/// One etcd process, killed and waited for on drop (with its load
/// threads stopped and joined first). etcd is also started with
/// `PR_SET_PDEATHSIG` = `SIGKILL`, so it dies with the thread that
/// started it even when the test process is killed outright: start it on
/// the thread that owns it.
pub struct Etcd {
    child: Child,
    /// `http://127.0.0.1:PORT`, the client URL.
    pub endpoint: String,
    /// etcd's `--data-dir`.
    pub data_dir: PathBuf,
    /// The command line etcd was started with, program first.
    pub command: Vec<String>,
    log: PathBuf,
    agent: ureq::Agent,
    keys: Arc<Mutex<Keyspace>>,
    load: Option<Load>,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        // Killed first, so that load threads waiting on a reply (from a
        // paused etcd, say) fail at once and see the stop flag.
        if let Some(load) = &self.load {
            load.stop.store(true, Ordering::Relaxed);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(load) = self.load.take() {
            load.finish();
        }
    }
}

/// An HTTP agent for the gateway: no proxy (loopback), bounded waits,
/// error statuses returned as responses (etcd puts its reason in the body).
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// `POST endpoint+path` with a JSON body; the JSON reply, or the error
/// etcd (or the connection) gave.
fn call(agent: &ureq::Agent, endpoint: &str, path: &str, body: &Value) -> Result<Value, String> {
    let url = format!("{endpoint}{path}");
    let mut resp = agent
        .post(&url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .map_err(|e| format!("POST {path}: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("POST {path}: reading the reply: {e}"))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("POST {path}: {e}: {text:.200}"))?;
    if status != 200 || v.get("error").is_some() {
        return Err(format!("POST {path}: HTTP {status}: {text:.300}"));
    }
    Ok(v)
}

/// A JSON field etcd's gateway prints as a decimal string (int64 and
/// uint64 fields), or as a number; 0 when absent (protobuf's default).
fn num(v: &Value, field: &str) -> u64 {
    match &v[field] {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

/// The revision in a reply's header.
fn revision(v: &Value) -> i64 {
    i64::try_from(num(&v["header"], "revision")).unwrap_or(i64::MAX)
}

impl Etcd {
    /// [`Etcd::try_start`] with etcd's default limits; panics when etcd
    /// does not come up.
    pub fn start_with(cfg: &Config) -> Etcd {
        Etcd::try_start(cfg, Limits::default()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// An etcd started as `cfg` and `limits` say, once it reports healthy
    /// (tried again on other ports when it does not come up).
    ///
    /// # Errors
    /// When five tries failed; the message quotes etcd's last log.
    pub fn try_start(cfg: &Config, limits: Limits) -> Result<Etcd, String> {
        let mut last = String::new();
        for _ in 0..5 {
            match Etcd::start_once(cfg, limits) {
                Ok(e) => return Ok(e),
                Err(log) => last = log,
            }
        }
        Err(format!("etcd did not come up on loopback; its last log:\n{last}"))
    }

    /// Two loopback ports that were free a moment ago (both bound at
    /// once, so they differ).
    fn free_ports() -> (u16, u16) {
        let bind = || std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        let (a, b) = (bind(), bind());
        let port = |l: &std::net::TcpListener| l.local_addr().expect("local addr").port();
        (port(&a), port(&b))
    }

    /// One try of [`Etcd::try_start`]: the directory under `cfg.parent`
    /// (relative when it is, so a command line shown from there reads
    /// the same everywhere).
    fn start_once(cfg: &Config, limits: Limits) -> Result<Etcd, String> {
        let parent = cfg.parent.clone().unwrap_or_else(std::env::temp_dir);
        let dir = tempfile::Builder::new()
            .prefix("mw-etcd")
            .tempdir_in(&parent)
            .map_err(|e| format!("a directory in {}: {e}", parent.display()))?;
        let (data_dir, log) = (dir.path().join("data"), dir.path().join("etcd.log"));
        let (client, peer) = Etcd::free_ports();
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut command: Vec<String> = [
            "etcd",
            "--name",
            "t",
            "--data-dir",
            &data_dir.to_string_lossy(),
            "--listen-client-urls",
            &endpoint,
            "--advertise-client-urls",
            &endpoint,
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
            "--initial-cluster",
            &format!("t={peer_url}"),
            &format!("--backend-batch-interval={}ms", cfg.batch_interval.as_millis()),
            "--logger",
            "zap",
            "--log-level",
            "warn",
        ]
        .map(str::to_owned)
        .into();
        let flags = [
            ("--quota-backend-bytes", limits.quota_backend_bytes),
            ("--max-request-bytes", limits.max_request_bytes),
        ];
        for (flag, v) in flags {
            command.extend(v.map(|v| format!("{flag}={v}")));
        }
        let err = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(err);
        mapwise_native::os::process::die_with_parent(&mut cmd);
        let child = cmd.spawn().map_err(|e| format!("spawn etcd: {e}"))?;
        let mut e = Etcd {
            child,
            endpoint,
            data_dir,
            command,
            log,
            agent: agent(),
            keys: Arc::new(Mutex::new(Keyspace::default())),
            load: None,
            _dir: dir,
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if e.child.try_wait().ok().flatten().is_some() {
                return Err(e.log_tail());
            }
            if e.healthy() {
                return Ok(e);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("not healthy within 30 s\n{}", e.log_tail()))
    }

    /// `GET /health` says `{"health":"true"}`.
    pub fn healthy(&self) -> bool {
        self.agent
            .get(format!("{}/health", self.endpoint))
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .is_some_and(|t| t.contains("\"health\":\"true\""))
    }

    /// The last lines etcd logged (for failure messages).
    pub fn log_tail(&self) -> String {
        let mut s = String::new();
        let _ = File::open(&self.log).and_then(|mut f| f.read_to_string(&mut s));
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// etcd's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The temporary directory the data directory and the log are in
    /// (removed on drop).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// The bbolt file: `DATA_DIR/member/snap/db`.
    pub fn db(&self) -> PathBuf {
        self.data_dir.join("member/snap/db")
    }

    /// One gateway call (`/v3/...`); panics with etcd's reason on error.
    pub fn call(&self, path: &str, body: &Value) -> Value {
        call(&self.agent, &self.endpoint, path, body).unwrap_or_else(|e| panic!("etcd: {e}"))
    }

    /// Put `key` = `value` (attached to `lease` when not 0); the new
    /// revision.
    pub fn put(&self, key: &str, value: &[u8], lease: i64) -> i64 {
        self.try_put(key, value, lease).unwrap_or_else(|e| panic!("etcd: {e}"))
    }

    /// [`Etcd::put`], returning etcd's reason instead of panicking.
    ///
    /// # Errors
    /// When etcd refuses the put or does not answer.
    pub fn try_put(&self, key: &str, value: &[u8], lease: i64) -> Result<i64, String> {
        call(&self.agent, &self.endpoint, "/v3/kv/put", &put_body(key, value, lease))
            .map(|v| revision(&v))
    }

    /// Delete `key`; the revision after.
    pub fn delete(&self, key: &str) -> i64 {
        revision(&self.call("/v3/kv/deleterange", &json!({ "key": B64.encode(key) })))
    }

    /// Grant a lease of `ttl` seconds; its id.
    pub fn grant(&self, ttl: i64) -> i64 {
        let v = self.call("/v3/lease/grant", &json!({ "TTL": ttl.to_string() }));
        i64::try_from(num(&v, "ID")).expect("lease id")
    }

    /// Revoke lease `id` (its keys are deleted).
    pub fn revoke(&self, id: i64) {
        self.call("/v3/lease/revoke", &json!({ "ID": id.to_string() }));
    }

    /// Compact the key space to `rev`; with `physical`, the reply waits
    /// until the compaction has reached the backend (the bbolt file).
    pub fn compact(&self, rev: i64, physical: bool) {
        self.call(
            "/v3/kv/compaction",
            &json!({ "revision": rev.to_string(), "physical": physical }),
        );
    }

    /// `etcdctl endpoint status`'s numbers.
    pub fn status(&self) -> Status {
        let v = self.call("/v3/maintenance/status", &json!({}));
        Status {
            db_size: num(&v, "dbSize"),
            db_size_in_use: num(&v, "dbSizeInUse"),
            revision: revision(&v),
            raft_applied_index: num(&v, "raftAppliedIndex"),
        }
    }

    /// `etcdctl` with `ETCDCTL_API=3` and this etcd's endpoint, and
    /// `args`; what it printed.
    pub fn etcdctl(&self, args: &[&str]) -> Output {
        Command::new("etcdctl")
            .arg("--endpoints")
            .arg(&self.endpoint)
            .args(["--command-timeout", "120s"])
            .args(args)
            .env("ETCDCTL_API", "3")
            .stdin(Stdio::null())
            .output()
            .expect("run etcdctl")
    }

    /// `etcdctl defrag`: etcd copies every bucket into a new bbolt file
    /// and renames it over the db. Panics unless etcdctl says it finished.
    pub fn defrag(&self) {
        let out = self.etcdctl(&["defrag"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("Finished defragmenting"),
            "etcdctl defrag: {:?}\n{text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `etcdctl snapshot save TO`: a consistent copy of the db made by
    /// etcd (bbolt's `Tx.WriteTo`: the file's pages byte for byte up to
    /// the high-water mark, page ids unchanged; etcd appends a 32-byte
    /// hash after them).
    pub fn snapshot(&self, to: &Path) {
        let to_s = to.to_str().expect("utf-8 path");
        let out = self.etcdctl(&["snapshot", "save", to_s]);
        assert!(
            out.status.success(),
            "etcdctl snapshot save: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Put Kubernetes-like keys (`/registry/<kind>/<ns>/<name>`, values
    /// of 256 B–2 KiB) in transactions of 100 until etcd's dbSize reaches
    /// `db_size` bytes; the keys are remembered for the load generator to
    /// overwrite and delete. Returns the first and the last revision
    /// written.
    pub fn preload(&self, db_size: u64, seed: u64) -> (i64, i64) {
        let mut rng = Rng::new(seed);
        let (mut first, mut last) = (0, 0);
        let mut n = 0u64;
        let started = Instant::now();
        while self.status().db_size < db_size {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "preload: dbSize {} after 120 s, wanted {db_size}",
                self.status().db_size
            );
            let mut ops = Vec::new();
            let mut keys = Vec::new();
            for _ in 0..100 {
                let kind = pick_kind(&mut rng);
                let key = key_name(kind, rng.below(NAMESPACES), n);
                n += 1;
                let value = rng.value();
                ops.push(txn_put(&key, &value));
                keys.push(key);
            }
            let v = self.call("/v3/kv/txn", &json!({ "success": ops }));
            let rev = revision(&v);
            if first == 0 {
                first = rev;
            }
            last = rev;
            self.keys.lock().unwrap().live.extend(keys);
        }
        self.keys.lock().unwrap().next = n;
        (first, last)
    }

    /// Kubernetes-like history until etcd's dbSize reaches `db_size`
    /// bytes: `threads` clients, each sending transactions of 100 writes
    /// of its own keys, each write a create (60 %), an overwrite of a live
    /// key (30 %) or a delete of one (10 %), no key twice in a
    /// transaction; values as [`Etcd::preload`]'s. The keys left live are
    /// remembered for the load generator. Returns the transactions sent
    /// and the last revision; `stop()` (asked between transactions) ends
    /// it early.
    ///
    /// # Errors
    /// etcd's reason for the first transaction it refused.
    pub fn churn_to(
        &self,
        db_size: u64,
        seed: u64,
        threads: usize,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<(u64, i64), String> {
        let threads = threads.max(1) as u64;
        let (done, txns, last) = (AtomicBool::new(false), AtomicU64::new(0), AtomicU64::new(0));
        let client = |t: u64| -> Result<(Vec<String>, u64), String> {
            let mut rng = Rng::new(seed ^ t.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let (mut live, mut next) = (Vec::<String>::new(), t);
            while !done.load(Ordering::Relaxed) && !stop() {
                let (mut ops, mut touched) = (Vec::new(), std::collections::HashSet::new());
                for _ in 0..100 {
                    let r = rng.below(100);
                    if r < 60 || live.is_empty() {
                        let key = key_name(pick_kind(&mut rng), rng.below(NAMESPACES), next);
                        next += threads;
                        ops.push(txn_put(&key, &rng.value()));
                        touched.insert(key.clone());
                        live.push(key);
                    } else {
                        let i = usize::try_from(rng.below(live.len() as u64)).unwrap_or(0);
                        if !touched.insert(live[i].clone()) {
                            continue;
                        }
                        ops.push(if r < 90 {
                            txn_put(&live[i], &rng.value())
                        } else {
                            let key = live.swap_remove(i);
                            json!({ "request_delete_range": { "key": B64.encode(key) } })
                        });
                    }
                }
                let body = json!({ "success": ops });
                let v = call(&self.agent, &self.endpoint, "/v3/kv/txn", &body)
                    .inspect_err(|_| done.store(true, Ordering::Relaxed))?;
                last.fetch_max(u64::try_from(revision(&v)).unwrap_or(0), Ordering::Relaxed);
                if txns.fetch_add(1, Ordering::Relaxed) % 16 == 15 {
                    let s =
                        call(&self.agent, &self.endpoint, "/v3/maintenance/status", &json!({}))?;
                    if num(&s, "dbSize") >= db_size {
                        done.store(true, Ordering::Relaxed);
                    }
                }
            }
            Ok((live, next))
        };
        let lives: Vec<Result<(Vec<String>, u64), String>> = std::thread::scope(|s| {
            let each: Vec<_> = (0..threads).map(|t| s.spawn(move || client(t))).collect();
            each.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into())))
                .collect()
        });
        let mut keys = self.keys.lock().unwrap();
        for each in lives {
            let (live, next) = each?;
            keys.live.extend(live);
            keys.next = keys.next.max(next);
        }
        let last = i64::try_from(last.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        Ok((txns.load(Ordering::Relaxed), last))
    }

    /// Keys the preload and the load generator have put and not deleted.
    pub fn key_count(&self) -> usize {
        self.keys.lock().unwrap().live.len()
    }

    /// Start the load generator (one at a time); it runs until
    /// [`Etcd::stop_load`], its time limit, or drop.
    pub fn start_load(&mut self, cfg: &LoadConfig) {
        assert!(self.load.is_none(), "a load is already running");
        self.load = Some(Load::spawn(
            self.agent.clone(),
            self.endpoint.clone(),
            Arc::clone(&self.keys),
            cfg.clone(),
        ));
    }

    /// The load generator's counts so far.
    pub fn load_stats(&self) -> LoadStats {
        self.load.as_ref().map(Load::stats).unwrap_or_default()
    }

    /// Stop the load generator and wait for its threads; its counts.
    pub fn stop_load(&mut self) -> LoadStats {
        self.load.take().map(Load::finish).unwrap_or_default()
    }

    /// Stop etcd with `SIGSTOP` until the guard is dropped (`SIGCONT`):
    /// no commit lands meanwhile (the load's requests wait).
    pub fn paused(&self) -> Paused<'_> {
        self.signal(rustix::process::Signal::STOP);
        Paused(self)
    }

    fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"))
            .expect("pid");
        rustix::process::kill_process(pid, sig).expect("signal etcd");
    }
}

/// A stopped etcd ([`Etcd::paused`]), continued on drop.
pub struct Paused<'a>(&'a Etcd);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.0.signal(rustix::process::Signal::CONT);
    }
}

fn put_body(key: &str, value: &[u8], lease: i64) -> Value {
    let mut body = json!({ "key": B64.encode(key), "value": B64.encode(value) });
    if lease != 0 {
        body["lease"] = Value::String(lease.to_string());
    }
    body
}

/// One put of a `/v3/kv/txn` request.
fn txn_put(key: &str, value: &[u8]) -> Value {
    json!({ "request_put": { "key": B64.encode(key), "value": B64.encode(value) } })
}

/// `/registry/<kind>/ns-<ns>/<kind>-<n>`.
fn key_name(kind: &str, ns: u64, n: u64) -> String {
    format!("/registry/{kind}/ns-{ns}/{kind}-{n}")
}

fn pick_kind(rng: &mut Rng) -> &'static str {
    let mut r = rng.below(100);
    for (kind, share) in KINDS {
        if r < share {
            return kind;
        }
        r -= share;
    }
    KINDS[0].0
}

/// The load's draws, from the project's one random stream.
#[derive(Debug, Clone)]
struct Rng(mapwise_native::engine::rng::SplitMix64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(mapwise_native::engine::rng::SplitMix64::new(seed))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n.max(1)
    }

    /// A value of 256 B–2 KiB of pseudo-random bytes (incompressible, as
    /// Kubernetes' protobuf values mostly are).
    fn value(&mut self) -> Vec<u8> {
        let len = 256 + usize::try_from(self.below(2048 - 256 + 1)).expect("small");
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.0.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

/// The keys that exist (for overwrites and deletes) and the next name
/// number (for creates).
#[derive(Debug, Default)]
struct Keyspace {
    live: Vec<String>,
    next: u64,
}

/// What the load generator does.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Puts and deletes per second, over all workers (lease grants and
    /// revokes come on top).
    pub rate: f64,
    /// Stop after this long.
    pub duration: Duration,
    /// Threads sending requests (each waits for etcd's reply, so more
    /// than one keeps the rate while a commit's fsync is slow).
    pub workers: usize,
    /// Lease TTL in seconds (etcd's minimum is about 2).
    pub lease_ttl: i64,
    /// Seed of the choices (keys, sizes, operations).
    pub seed: u64,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            rate: 100.0,
            duration: Duration::from_secs(60),
            workers: 4,
            lease_ttl: 3,
            seed: 0x6574_6364,
        }
    }
}

/// The load generator's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Overwrites of existing keys.
    pub overwrites: u64,
    /// Puts of new keys without a lease.
    pub creates: u64,
    /// Deletes (`deleterange` of one key).
    pub deletes: u64,
    /// Puts of new keys attached to a lease (events).
    pub lease_puts: u64,
    /// Leases granted.
    pub grants: u64,
    /// Leases revoked by the generator (the others expire).
    pub revokes: u64,
    /// Requests etcd refused or that failed.
    pub errors: u64,
    /// The first of them.
    pub first_error: Option<String>,
    /// The highest revision a reply carried.
    pub last_revision: i64,
}

impl LoadStats {
    /// Puts and deletes done.
    pub fn writes(&self) -> u64 {
        self.overwrites + self.creates + self.deletes + self.lease_puts
    }
}

#[derive(Default)]
struct Counters {
    overwrites: AtomicU64,
    creates: AtomicU64,
    deletes: AtomicU64,
    lease_puts: AtomicU64,
    grants: AtomicU64,
    revokes: AtomicU64,
    errors: AtomicU64,
    last_revision: AtomicU64,
    first_error: Mutex<Option<String>>,
}

/// A lease the generator granted: id, when, TTL.
#[derive(Debug, Clone, Copy)]
struct Lease {
    id: i64,
    granted: Instant,
    ttl: Duration,
}

/// A running load: worker threads taking numbered slots at `rate` per
/// second from one clock, a stop flag, and their counts.
struct Load {
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    agent: ureq::Agent,
    endpoint: String,
    keys: Arc<Mutex<Keyspace>>,
    cfg: LoadConfig,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    slot: AtomicU64,
    start: Instant,
    leases: Mutex<Vec<Lease>>,
}

impl Load {
    fn spawn(
        agent: ureq::Agent,
        endpoint: String,
        keys: Arc<Mutex<Keyspace>>,
        cfg: LoadConfig,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Shared {
            agent,
            endpoint,
            keys,
            cfg: cfg.clone(),
            stop: Arc::clone(&stop),
            counters: Arc::clone(&counters),
            slot: AtomicU64::new(0),
            start: Instant::now(),
            leases: Mutex::new(Vec::new()),
        });
        let threads = (0..cfg.workers.max(1))
            .map(|_| {
                let s = Arc::clone(&shared);
                std::thread::spawn(move || s.work())
            })
            .collect();
        Load { stop, counters, threads }
    }

    fn stats(&self) -> LoadStats {
        let c = &self.counters;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LoadStats {
            overwrites: n(&c.overwrites),
            creates: n(&c.creates),
            deletes: n(&c.deletes),
            lease_puts: n(&c.lease_puts),
            grants: n(&c.grants),
            revokes: n(&c.revokes),
            errors: n(&c.errors),
            first_error: c.first_error.lock().unwrap().clone(),
            last_revision: i64::try_from(n(&c.last_revision)).unwrap_or(i64::MAX),
        }
    }

    fn finish(mut self) -> LoadStats {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.stats()
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn over(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.start.elapsed() >= self.cfg.duration
    }

    /// Take slots until stopped: slot `i` is due at `start + i / rate`;
    /// a late worker does its slot at once (no burst beyond the backlog).
    fn work(&self) {
        while !self.over() {
            let i = self.slot.fetch_add(1, Ordering::Relaxed);
            #[expect(clippy::cast_precision_loss)]
            let due = self.start + Duration::from_secs_f64(i as f64 / self.cfg.rate.max(0.001));
            while Instant::now() < due {
                if self.over() {
                    return;
                }
                std::thread::sleep((due - Instant::now()).min(Duration::from_millis(20)));
            }
            if self.over() {
                return;
            }
            let mut rng = Rng::new(self.cfg.seed ^ i.wrapping_mul(0x2545_F491_4F6C_DD1D));
            let r = self.one(i, &mut rng);
            self.count(r);
        }
    }

    fn count(&self, r: Result<Option<i64>, String>) {
        match r {
            Ok(Some(rev)) => {
                let rev = u64::try_from(rev).unwrap_or(0);
                self.counters.last_revision.fetch_max(rev, Ordering::Relaxed);
            }
            Ok(None) => {}
            Err(e) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                self.counters.first_error.lock().unwrap().get_or_insert(e);
            }
        }
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        call(&self.agent, &self.endpoint, path, body)
    }

    /// A lease young enough to put keys on (granted less than half its
    /// TTL ago); grants one when there is none. Every fourth lease is
    /// revoked once it is past half its TTL, the others expire on their
    /// own (etcd deletes their keys).
    fn lease(&self) -> Result<i64, String> {
        let now = Instant::now();
        let (usable, to_revoke) = {
            let mut ls = self.leases.lock().unwrap();
            let usable =
                ls.iter().find(|l| now.duration_since(l.granted) < l.ttl / 2).map(|l| l.id);
            let to_revoke: Vec<i64> = ls
                .iter()
                .filter(|l| l.id % 4 == 0 && now.duration_since(l.granted) >= l.ttl / 2)
                .map(|l| l.id)
                .collect();
            // Leases past their TTL are etcd's to expire.
            ls.retain(|l| !to_revoke.contains(&l.id) && now.duration_since(l.granted) < l.ttl * 2);
            (usable, to_revoke)
        };
        for id in to_revoke {
            match self.post("/v3/lease/revoke", &json!({ "ID": id.to_string() })) {
                Ok(_) => {
                    self.counters.revokes.fetch_add(1, Ordering::Relaxed);
                }
                // It expired first.
                Err(e) if e.contains("requested lease not found") => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(id) = usable {
            return Ok(id);
        }
        let v = self.post("/v3/lease/grant", &json!({ "TTL": self.cfg.lease_ttl.to_string() }))?;
        let id = i64::try_from(num(&v, "ID")).map_err(|e| e.to_string())?;
        self.counters.grants.fetch_add(1, Ordering::Relaxed);
        let ttl = Duration::from_secs(u64::try_from(self.cfg.lease_ttl.max(1)).unwrap_or(1));
        self.leases.lock().unwrap().push(Lease { id, granted: Instant::now(), ttl });
        Ok(id)
    }

    /// Slot `i`'s operation: 72 % overwrites of an existing key, 10 %
    /// creates, 6 % deletes, 12 % new events attached to a lease.
    fn one(&self, _i: u64, rng: &mut Rng) -> Result<Option<i64>, String> {
        let c = &self.counters;
        let op = rng.below(100);
        let value = rng.value();
        if op < 72 {
            let key = {
                let ks = self.keys.lock().unwrap();
                if ks.live.is_empty() {
                    None
                } else {
                    let at = usize::try_from(rng.below(ks.live.len() as u64)).unwrap_or(0);
                    Some(ks.live[at].clone())
                }
            };
            if let Some(key) = key {
                let v = self.post("/v3/kv/put", &put_body(&key, &value, 0))?;
                c.overwrites.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(revision(&v)));
            }
        }
        if op < 82 {
            let kind = pick_kind(rng);
            let key = {
                let mut ks = self.keys.lock().unwrap();
                ks.next += 1;
                key_name(kind, rng.below(NAMESPACES), ks.next)
            };
            let v = self.post("/v3/kv/put", &put_body(&key, &value, 0))?;
            self.keys.lock().unwrap().live.push(key);
            c.creates.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(revision(&v)));
        }
        if op < 88 {
            let key = {
                let mut ks = self.keys.lock().unwrap();
                let n = ks.live.len() as u64;
                (n > 0).then(|| {
                    let at = usize::try_from(rng.below(n)).unwrap_or(0);
                    ks.live.swap_remove(at)
                })
            };
            let Some(key) = key else { return Ok(None) };
            let v = self.post("/v3/kv/deleterange", &json!({ "key": B64.encode(&key) }))?;
            c.deletes.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(revision(&v)));
        }
        let lease = self.lease()?;
        let key = {
            let mut ks = self.keys.lock().unwrap();
            ks.next += 1;
            key_name("events", rng.below(NAMESPACES), ks.next)
        };
        let v = self.post("/v3/kv/put", &put_body(&key, &value, lease));
        match v {
            Ok(v) => {
                c.lease_puts.fetch_add(1, Ordering::Relaxed);
                Ok(Some(revision(&v)))
            }
            // The lease expired between the choice and the put (etcd's
            // lessor checks every 500 ms): not a failure of etcd's.
            Err(e) if e.contains("requested lease not found") => Ok(None),
            Err(e) => Err(e),
        }
    }
}
