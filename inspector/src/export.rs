//! `inspector export --listen ADDR PATH... [-R] [--interval S]`: the
//! residency of files and trees as Prometheus metrics, served at
//! `/metrics` in the OpenMetrics text format Prometheus scrapes.
//!
//! A worker walks the paths as `inspector residency` does ([`Walker`],
//! [`cli::measure`]) every interval and keeps the encoded text; a scrape
//! is served that text, so scrapes cost no file I/O and any number of
//! them see the same sample until the next walk. A file's structure is
//! read again only when it changed since the last walk ([`Structures`]);
//! its residency is sampled every walk. The endpoint only reads: nothing
//! is touched, evicted or written.
//!
//! Metrics, each labelled by `file` (the path as walked):
//!
//! | metric | what |
//! |---|---|
//! | `mapwise_file_size_bytes{file,format}` | the file's size |
//! | `mapwise_file_resident_bytes{file,format}` | resident OS pages × page size |
//! | `mapwise_kind_bytes{file,kind}`, `mapwise_kind_resident_bytes{file,kind}` | per page kind of a bbolt, RRD or revlog file |
//! | `mapwise_rrd_hot_bytes{file}`, `mapwise_rrd_hot_resident_ratio{file}`, `mapwise_rrd_cold_resident_bytes{file}` | an RRD file's hot set ([`cli::HotSetReport`]) |
//! | `mapwise_bolt_size_bytes{file}`, `mapwise_bolt_free_bytes{file}`, `mapwise_bolt_in_use_bytes{file}` | a bbolt file as etcd names it: `dbSize`, free pages (`ResidencyReport::bolt_free`), `dbSizeInUse` |
//! | `mapwise_etcd_revision{file}`, `mapwise_etcd_compact_revision{file}`, `mapwise_etcd_revisions{file}`, `mapwise_etcd_live_keys{file}` | an etcd db's store revision, `finishedCompactRev`, revisions stored, live keys ([`etcd::EtcdReport`]) |
//! | `mapwise_etcd_after_defrag_bytes{file}`, `mapwise_etcd_after_compact_defrag_bytes{file}`, `mapwise_etcd_forecast_timestamp_seconds{file}` | the `dbSize` forecast after `etcdctl defrag`, and after a compaction at the newest revision plus defrag, and when they were made (made on a thread of their own) |
//! | `mapwise_export_files`, `mapwise_export_skipped_files`, `mapwise_export_scan_seconds`, `mapwise_export_scan_timestamp_seconds` | the last walk |
//!
//! What the kernel does not say (a hidden residency) or a read did not
//! settle on (a bbolt file under a writer faster than the walk) is left
//! out, never given as 0.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use mapwise_native::observe::watch::Snapshot;

use crate::cli::{self, ResidencyReport};
use crate::etcd::{self, EtcdReport};
use crate::many::{Found, TreeArgs, Walker};

/// The command line of `inspector export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The address to serve `/metrics` on: `127.0.0.1:9901`,
    /// `localhost:9901`, `[::1]:9901`; `:9901` is every interface (which
    /// needs `--allow-remote`).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// The paths.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Seconds between two walks of the paths (scrapes in between are
    /// served the last walk's numbers).
    #[arg(long, default_value_t = 15.0, value_name = "S")]
    pub interval: f64,
    /// Allow an address other than loopback: the metrics name every file
    /// walked.
    #[arg(long)]
    pub allow_remote: bool,
}

/// A metric family of the walk: its name, help and samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fam {
    Size,
    Resident,
    KindBytes,
    KindResident,
    Hot,
    HotRatio,
    Cold,
    BoltSize,
    BoltFree,
    BoltInUse,
    EtcdRevision,
    EtcdCompactRevision,
    EtcdRevisions,
    EtcdLiveKeys,
    EtcdAfterDefrag,
    EtcdAfterCompactDefrag,
    EtcdForecastAt,
}

impl Fam {
    /// Every family, in the order `/metrics` lists them.
    const ALL: [Fam; 17] = [
        Fam::Size,
        Fam::Resident,
        Fam::KindBytes,
        Fam::KindResident,
        Fam::Hot,
        Fam::HotRatio,
        Fam::Cold,
        Fam::BoltSize,
        Fam::BoltFree,
        Fam::BoltInUse,
        Fam::EtcdRevision,
        Fam::EtcdCompactRevision,
        Fam::EtcdRevisions,
        Fam::EtcdLiveKeys,
        Fam::EtcdAfterDefrag,
        Fam::EtcdAfterCompactDefrag,
        Fam::EtcdForecastAt,
    ];

    /// Name and help.
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Fam::Size => ("mapwise_file_size_bytes", "File size in bytes"),
            Fam::Resident => (
                "mapwise_file_resident_bytes",
                "Bytes of the file in the page cache (resident OS pages x page size, as vmtouch)",
            ),
            Fam::KindBytes => ("mapwise_kind_bytes", "Bytes of the file of each page kind"),
            Fam::KindResident => {
                ("mapwise_kind_resident_bytes", "Bytes of each page kind in the page cache")
            }
            Fam::Hot => (
                "mapwise_rrd_hot_bytes",
                "Bytes of the pages an RRD file's next update touches (its hot set)",
            ),
            Fam::HotRatio => (
                "mapwise_rrd_hot_resident_ratio",
                "Share of an RRD file's hot set in the page cache (0 to 1)",
            ),
            Fam::Cold => (
                "mapwise_rrd_cold_resident_bytes",
                "Bytes of an RRD file in the page cache outside its hot set",
            ),
            Fam::BoltSize => (
                "mapwise_bolt_size_bytes",
                "A bbolt file's size as bbolt counts it (high-water mark x page size; etcd's dbSize)",
            ),
            Fam::BoltFree => (
                "mapwise_bolt_free_bytes",
                "Bytes of free pages below a bbolt file's high-water mark, as its writer counts them",
            ),
            Fam::BoltInUse => (
                "mapwise_bolt_in_use_bytes",
                "A bbolt file's size less its free pages (etcd's dbSizeInUse)",
            ),
            Fam::EtcdRevision => (
                "mapwise_etcd_revision",
                "An etcd db's store revision (the newest stored, or a compaction above it)",
            ),
            Fam::EtcdCompactRevision => (
                "mapwise_etcd_compact_revision",
                "An etcd db's last finished compaction (finishedCompactRev)",
            ),
            Fam::EtcdRevisions => {
                ("mapwise_etcd_revisions", "Revisions an etcd db stores (puts and tombstones)")
            }
            Fam::EtcdLiveKeys => {
                ("mapwise_etcd_live_keys", "Keys of an etcd db whose newest revision is a put")
            }
            Fam::EtcdAfterDefrag => (
                "mapwise_etcd_after_defrag_bytes",
                "Forecast dbSize of an etcd db after etcdctl defrag",
            ),
            Fam::EtcdAfterCompactDefrag => (
                "mapwise_etcd_after_compact_defrag_bytes",
                "Forecast dbSize of an etcd db after a compaction at its revision and etcdctl defrag",
            ),
            Fam::EtcdForecastAt => (
                "mapwise_etcd_forecast_timestamp_seconds",
                "When the etcd forecasts were made (Unix time)",
            ),
        }
    }
}

/// A sample's value.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

/// One sample: its family, the file, a second label, the value.
#[derive(Debug)]
struct Sample {
    fam: Fam,
    file: Arc<str>,
    /// `format` or `kind`, and its value.
    label: Option<(&'static str, &'static str)>,
    value: Num,
}

/// One walk's samples, encoded family by family by prometheus-client
/// (a [`Collector`]): no map of label sets is built, so a walk of 100k
/// files costs no hashing of their paths.
#[derive(Debug, Default)]
struct Metrics {
    samples: Vec<Sample>,
}

/// A byte count as a gauge's value.
fn v(n: u64) -> Num {
    Num::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

impl Metrics {
    fn push(&mut self, fam: Fam, file: &Arc<str>, value: Num) {
        self.push_labelled(fam, file, None, value);
    }

    fn push_labelled(
        &mut self,
        fam: Fam,
        file: &Arc<str>,
        label: Option<(&'static str, &'static str)>,
        value: Num,
    ) {
        self.samples.push(Sample { fam, file: Arc::clone(file), label, value });
    }

    fn add(&mut self, r: &ResidencyReport) {
        let file: Arc<str> = Arc::from(r.file.as_str());
        let format = Some(("format", r.format));
        self.push_labelled(Fam::Size, &file, format, v(r.size));
        if let Some(b) = r.resident_bytes {
            self.push_labelled(Fam::Resident, &file, format, v(b));
        }
        for k in &r.kinds {
            let kind = Some(("kind", k.kind));
            self.push_labelled(Fam::KindBytes, &file, kind, v(k.bytes));
            if let Some(b) = k.resident_bytes {
                self.push_labelled(Fam::KindResident, &file, kind, v(b));
            }
        }
        if let Some(h) = &r.hot_set {
            self.push(Fam::Hot, &file, v(h.hot_bytes));
            if let (Some(res), true) = (h.hot_resident_pages, h.hot_pages > 0) {
                #[expect(clippy::cast_precision_loss, reason = "page counts far below 2^52")]
                let ratio = res as f64 / h.hot_pages as f64;
                self.push(Fam::HotRatio, &file, Num::Float(ratio));
            }
            if let Some(c) = h.cold_resident_bytes {
                self.push(Fam::Cold, &file, v(c));
            }
        }
        if let (Some(size), Some(free)) = (r.bolt_size, r.bolt_free) {
            self.push(Fam::BoltSize, &file, v(size));
            self.push(Fam::BoltFree, &file, v(free));
            self.push(Fam::BoltInUse, &file, v(size.saturating_sub(free)));
        }
    }

    fn add_etcd(&mut self, r: &EtcdReport, made_at: f64) {
        let file: Arc<str> = Arc::from(r.file.as_str());
        self.push(Fam::EtcdRevision, &file, Num::Int(r.newest_rev));
        if let Some(c) = r.compact_rev {
            self.push(Fam::EtcdCompactRevision, &file, Num::Int(c));
        }
        self.push(Fam::EtcdRevisions, &file, v(r.revisions));
        self.push(Fam::EtcdLiveKeys, &file, v(r.live_keys));
        self.push(Fam::EtcdAfterDefrag, &file, v(r.after_defrag_bytes));
        self.push(Fam::EtcdAfterCompactDefrag, &file, v(r.after_compact_defrag_bytes));
        self.push(Fam::EtcdForecastAt, &file, Num::Float(made_at));
    }
}

impl Collector for Metrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let mut by_fam: Vec<Vec<&Sample>> = vec![Vec::new(); Fam::ALL.len()];
        for s in &self.samples {
            by_fam[s.fam as usize].push(s);
        }
        for (fam, samples) in Fam::ALL.iter().zip(by_fam) {
            if samples.is_empty() {
                continue;
            }
            let (name, help) = fam.describe();
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for s in samples {
                let both = [("file", &*s.file), s.label.unwrap_or_default()];
                let labels: &[(&str, &str)] = if s.label.is_some() { &both } else { &both[..1] };
                let metric = family.encode_family(&labels)?;
                match s.value {
                    Num::Int(n) => ConstGauge::new(n).encode(metric)?,
                    Num::Float(x) => ConstGauge::new(x).encode(metric)?,
                }
            }
        }
        Ok(())
    }
}

/// What identifies a version of a file: device, inode, size and
/// modification time (ns). A file whose key is unchanged keeps its
/// structure, so a walk re-reads only files written since the last.
type FileKey = (u64, u64, u64, i64, i64);

fn file_key(m: &std::fs::Metadata) -> FileKey {
    use std::os::unix::fs::MetadataExt as _;
    (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec())
}

/// The structures read by earlier walks, by path, with the walk that last
/// saw each (entries of files gone are dropped).
#[derive(Default)]
pub struct Structures {
    walk: u64,
    by_path: HashMap<PathBuf, (FileKey, u64, Snapshot)>,
    /// The etcd dbs found, and their forecasts.
    forecasts: Arc<Forecasts>,
    /// The forecasts' thread runs.
    forecasting: bool,
}

impl Structures {
    /// `path`'s residency measured, its structure read again only when the
    /// file changed since the last walk; with the file's version when it
    /// is an etcd db.
    fn measure(&mut self, path: &Path) -> Result<(cli::Measured, Option<FileKey>)> {
        let key = file_key(&std::fs::metadata(path)?);
        let walk = self.walk;
        let (m, snap) = match self.by_path.get_mut(path) {
            Some((k, seen, snap)) if *k == key && snap.unsettled.is_none() => {
                *seen = walk;
                (cli::measure_with(path, snap)?, &*snap)
            }
            _ => {
                let (m, snap) = cli::measure_structure(path)?;
                let entry = self.by_path.entry(path.to_path_buf()).insert_entry((key, walk, snap));
                (m, &entry.into_mut().2)
            }
        };
        let etcd = mapwise_view::describe::is_etcd(&snap.layout).then_some(key);
        Ok((m, etcd))
    }

    /// Ask for the forecasts of `dbs` (and of no other), starting their
    /// thread the first time.
    fn forecast(&mut self, dbs: Vec<(PathBuf, FileKey)>) {
        if dbs.is_empty() && !self.forecasting {
            return;
        }
        if let Ok(mut w) = self.forecasts.wanted.lock() {
            *w = dbs;
        }
        if !self.forecasting {
            let f = Arc::clone(&self.forecasts);
            self.forecasting = std::thread::Builder::new()
                .name("inspector-etcd".into())
                .spawn(move || {
                    loop {
                        f.round();
                        std::thread::sleep(Duration::from_secs(1));
                    }
                })
                .is_ok();
        }
    }
}

/// Least time between two forecasts of one db.
const FORECAST_PAUSE: Duration = Duration::from_secs(60);
/// A forecast is made again no sooner than this many times its last
/// duration after it: at most 5 % of a core.
const FORECAST_SHARE: u32 = 20;

/// The etcd forecasts ([`etcd::report_of`]) of the dbs the walks find,
/// made on a thread of their own. A forecast packs the whole db again in
/// memory (about 170 MB/s of db), so one is made again only when the db
/// changed, and no sooner than [`FORECAST_PAUSE`] or [`FORECAST_SHARE`]
/// times the last one's duration after it; a scrape gets the latest with
/// the time it was made. A forecast that fails (a writer committing
/// through every attempt to read) keeps the one before.
#[derive(Default)]
struct Forecasts {
    /// The dbs the last walk found, with their version.
    wanted: Mutex<Vec<(PathBuf, FileKey)>>,
    /// The latest forecast of each.
    made: Mutex<HashMap<PathBuf, Forecast>>,
}

/// One db's latest forecast.
struct Forecast {
    /// The db's version when it was tried.
    key: FileKey,
    /// When it was tried, and how long it took.
    at: Instant,
    took: Duration,
    /// The report and when it was made (Unix time); `None` while none
    /// succeeded.
    report: Option<(EtcdReport, f64)>,
}

impl Forecasts {
    /// Forecast every db that is due.
    fn round(&self) {
        let wanted = self.wanted.lock().map(|w| w.clone()).unwrap_or_default();
        if let Ok(mut made) = self.made.lock() {
            made.retain(|p, _| wanted.iter().any(|(w, _)| w == p));
        }
        for (path, key) in wanted {
            let due = self.made.lock().ok().is_some_and(|made| {
                made.get(&path).is_none_or(|f| {
                    f.key != key && f.at.elapsed() >= FORECAST_PAUSE.max(f.took * FORECAST_SHARE)
                })
            });
            if !due {
                continue;
            }
            let at = Instant::now();
            let made_now = etcd::report_of(&path).ok().map(|r| (r, unix_now()));
            if let Ok(mut made) = self.made.lock() {
                let before = made.remove(&path).and_then(|f| f.report);
                let report = made_now.or(before);
                made.insert(path, Forecast { key, at, took: at.elapsed(), report });
            }
        }
    }

    /// Add the forecasts made to `metrics`.
    fn add_to(&self, metrics: &mut Metrics) {
        if let Ok(made) = self.made.lock() {
            for (r, at) in made.values().filter_map(|f| f.report.as_ref()) {
                metrics.add_etcd(r, *at);
            }
        }
    }
}

/// Seconds since the Unix epoch now.
fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Walk `tree` once and encode what was found, as `/metrics` serves it;
/// `known` keeps the files' structures from one walk to the next.
///
/// # Errors
/// When encoding fails (it writes to a `String`, so it does not).
pub fn scan(tree: &TreeArgs, known: &mut Structures) -> Result<String> {
    let start = Instant::now();
    let mut metrics = Metrics::default();
    let (mut files, mut skipped) = (0i64, 0i64);
    known.walk += 1;
    let mut dbs = Vec::new();
    let mut walker = Walker::new(tree);
    walker.run(&mut |found| {
        match found {
            Found::File(p) => match known.measure(p) {
                Ok((m, etcd)) => {
                    files += 1;
                    metrics.add(&m.report);
                    dbs.extend(etcd.map(|key| (p.to_path_buf(), key)));
                }
                Err(e) => {
                    skipped += 1;
                    if known.walk == 1 {
                        eprintln!("inspector: {}: not measured: {e:#}", p.display());
                    }
                }
            },
            Found::Other(e) if e.status == crate::many::Status::Skipped => {
                skipped += 1;
                if known.walk == 1 {
                    let why = e.reason.as_deref().unwrap_or("skipped");
                    eprintln!("inspector: {}: {why}", e.file.as_deref().unwrap_or_default());
                }
            }
            Found::Other(_) => {}
        }
        Ok(())
    })?;
    let walk = known.walk;
    known.by_path.retain(|_, (_, seen, _)| *seen == walk);
    known.forecast(dbs);
    known.forecasts.add_to(&mut metrics);
    let mut reg = Registry::default();
    reg.register_collector(Box::new(metrics));
    let gauge = |n: i64| {
        let g: Gauge = Gauge::default();
        g.set(n);
        g
    };
    reg.register("mapwise_export_files", "Regular files measured by the last walk", gauge(files));
    reg.register(
        "mapwise_export_skipped_files",
        "Files the last walk could not measure (unreadable, residency hidden)",
        gauge(skipped),
    );
    type Ratio = Gauge<f64, std::sync::atomic::AtomicU64>;
    let seconds: Ratio = Gauge::default();
    seconds.set(start.elapsed().as_secs_f64());
    reg.register("mapwise_export_scan_seconds", "How long the last walk took", seconds);
    let at: Ratio = Gauge::default();
    at.set(unix_now());
    reg.register(
        "mapwise_export_scan_timestamp_seconds",
        "When the last walk ended (Unix time)",
        at,
    );
    let mut text = String::new();
    encode(&mut text, &reg).context("cannot encode the metrics")?;
    Ok(text)
}

/// The content type of OpenMetrics' text format (what `encode` writes).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serve `/metrics` on `args.listen` until killed. A loopback address is
/// required unless `--allow-remote`; then a warning goes to stderr.
///
/// # Errors
/// An address other than loopback without `--allow-remote`, a bad
/// interval, or the address cannot be bound.
pub fn serve(args: &Args) -> Result<()> {
    let given = if args.listen.starts_with(':') {
        format!("0.0.0.0{}", args.listen)
    } else {
        args.listen.clone()
    };
    let listen: SocketAddr = std::net::ToSocketAddrs::to_socket_addrs(&given)
        .with_context(|| format!("--listen {}: not an address (HOST:PORT)", args.listen))?
        .next()
        .with_context(|| format!("--listen {}: no address", args.listen))?;
    if !listen.ip().is_loopback() {
        if !args.allow_remote {
            bail!(
                "{} is not a loopback address: the metrics name every file walked; \
                 --allow-remote serves them there",
                listen
            );
        }
        eprintln!(
            "inspector: warning: serving on {}, beyond this host: the metrics name every file \
             walked",
            listen
        );
    }
    if !(args.interval.is_finite() && args.interval >= 1.0) {
        bail!("--interval must be at least 1 second");
    }
    let server = tiny_http::Server::http(listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    eprintln!("inspector: serving http://{}/metrics", server.server_addr());
    let latest: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let (tree, interval) = (args.tree.clone(), Duration::from_secs_f64(args.interval));
    let shared = Arc::clone(&latest);
    std::thread::Builder::new().name("inspector-export".into()).spawn(move || {
        let mut known = Structures::default();
        loop {
            let start = Instant::now();
            match scan(&tree, &mut known) {
                Ok(text) => {
                    if let Ok(mut l) = shared.lock() {
                        *l = Some(text);
                    }
                }
                Err(e) => eprintln!("inspector: {e:#}"),
            }
            std::thread::sleep(interval.saturating_sub(start.elapsed()));
        }
    })?;
    for req in server.incoming_requests() {
        let response = answer(req.method(), req.url(), &latest);
        // A client gone before its answer is no failure of ours.
        let _ = req.respond(response);
    }
    Ok(())
}

/// The answer to one request.
fn answer(
    method: &tiny_http::Method,
    url: &str,
    latest: &Mutex<Option<String>>,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let text = |code: u16, body: String, kind: &str| {
        let mut r = tiny_http::Response::from_string(body).with_status_code(code);
        if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", kind) {
            r.add_header(h);
        }
        r
    };
    let plain = "text/plain; charset=utf-8";
    if !matches!(method, tiny_http::Method::Get | tiny_http::Method::Head) {
        return text(405, "only GET\n".into(), plain);
    }
    let path = url.split('?').next().unwrap_or(url);
    if path != "/metrics" {
        let mut s = String::from("mapwise inspector export: the metrics are at /metrics\n");
        let _ = writeln!(s);
        return text(404, s, plain);
    }
    match latest.lock().ok().and_then(|l| l.clone()) {
        Some(body) => text(200, body, CONTENT_TYPE),
        None => text(503, "the first walk is under way; try again shortly\n".into(), plain),
    }
}
