//! Watching a file: its structure (a [`Layout`]) kept current as the file
//! changes, and its residency sampled on demand. The engine of
//! `inspector open`; front ends draw what it holds.
//!
//! **Architecture invariant: watching never changes what it watches.**
//! Structure is read through [`QuietSource`] (`O_DIRECT`), residency
//! through mincore on a mapping that is never touched, and no lock is
//! taken, so a watched bbolt file's writer (etcd) is never blocked and its
//! page cache is never warmed by the watcher. A file truncated, grown or
//! replaced (renamed over) under the watch is noticed at the next
//! [`Watch::refresh`] by its identity (device, inode, size, mtime) and
//! re-read; nothing ever touches a mapped byte, so there is no SIGBUS.
//!
//! Re-reading the structure of a large file takes a while, so it runs on a
//! background thread; until it finishes the previous layout stays on show.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use mapwise_core::PageSource;
use mapwise_core::bolt::{BoltFile, PageDetail, WalkOptions, page_detail};
use mapwise_core::detect::{detect, is_foreign_endian_bolt};
use mapwise_core::layout::{Format, Layout};
use mapwise_view::fmt::human_size;

use crate::os::io::QuietSource;
use crate::os::residency::{self, FileAdvice, Locked, Residency, TO_EOF};
use crate::report::{BoltInfo, RevlogInfo, RraSummary, RrdInfo};

/// Identity of one version of the file on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Device number.
    pub dev: u64,
    /// Inode number (changes when the file is replaced by a rename).
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// One reading of the file's structure.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The file version read.
    pub stamp: Stamp,
    /// Detected format.
    pub format: Format,
    /// Labelled regions (a single `data` region when the format is
    /// unknown or unreadable); shared, so front ends hold it without a copy.
    pub layout: Arc<Layout>,
    /// bbolt facts, when the file opened as bbolt.
    pub bolt: Option<BoltInfo>,
    /// revlog facts, when the file is a readable revlog index.
    pub revlog: Option<RevlogInfo>,
    /// RRD facts, when the file is a readable RRD.
    pub rrd: Option<RrdInfo>,
    /// Why the structure could not be read, when it could not.
    pub error: Option<String>,
    /// Set when a writer committed during every attempt to read the
    /// structure ([`crate::observe::settle`]): the layout may mix two snapshots and
    /// its problems may be transient. Says so in one sentence.
    pub unsettled: Option<String>,
    /// Bytes the format's own header says the file spans (bbolt: the
    /// current meta page's high-water mark times the page size; RRD: the
    /// header, then every archive's rows, as rrdtool lays them out); 0 when
    /// it claims nothing (revlog, unknown, a header that cannot be read).
    /// A file shorter than this was truncated: front ends draw the
    /// missing part as past the end of the file.
    pub expected_len: u64,
    /// `true` when reads bypassed the page cache (`O_DIRECT`).
    pub quiet: bool,
    /// How long reading the structure took.
    pub took: Duration,
    /// When the structure was of the file as it was on disk (a bbolt
    /// file a writer changes: the moment its snapshot was whole in
    /// memory); `None` when not known.
    pub as_of: Option<Instant>,
    /// No structure has been read yet ([`Watch::start`]): the layout is
    /// the whole file as one `data` region while the first read runs.
    pub reading: bool,
}

/// Read the structure of the file at `path` once, quietly.
///
/// # Errors
/// Only when the file cannot be opened or stat'ed; format faults are
/// reported inside the snapshot.
pub fn read_snapshot(path: &Path, opts: WalkOptions) -> std::io::Result<Snapshot> {
    read_snapshot_from(path, &QuietSource::open(path)?, opts)
}

/// [`read_snapshot`] of `path` opened already as `src` (so that its
/// residency can be sampled through the same descriptor); the stamp is
/// `src`'s metadata at open.
///
/// # Errors
/// As [`read_snapshot`].
pub fn read_snapshot_from(
    path: &Path,
    src: &QuietSource,
    opts: WalkOptions,
) -> std::io::Result<Snapshot> {
    let start = Instant::now();
    let stamp = Stamp::of(src.metadata());
    let mut snap = Snapshot {
        stamp,
        format: Format::Unknown,
        layout: Arc::new(Layout::unknown(src.len())),
        bolt: None,
        revlog: None,
        rrd: None,
        error: None,
        unsettled: None,
        expected_len: 0,
        quiet: src.is_direct(),
        took: Duration::ZERO,
        as_of: None,
        reading: false,
    };
    match detect(src) {
        Format::Bolt if is_foreign_endian_bolt(src) => {
            snap.format = Format::Bolt;
            snap.error = Some("bbolt file written on a big-endian host: not readable on this (little-endian) machine".into());
        }
        Format::Bolt => {
            snap.format = Format::Bolt;
            // Walked through `settle`: retried while a writer commits.
            let budget = crate::observe::settle::LIVE_CARRY_BUDGET;
            let read =
                crate::observe::settle::read_bolt_walked(path, opts, budget, |file, walked| {
                    (BoltInfo::of(file, walked.freelist), walked.layout)
                });
            match read {
                Ok(s) => {
                    let (info, layout) = s.value;
                    if !s.settled {
                        snap.unsettled = Some(crate::observe::settle::unsettled_message(
                            &s.struggle,
                            layout.problem_count(),
                        ));
                    }
                    snap.expected_len = info.hwm.saturating_mul(u64::from(info.page_size));
                    snap.bolt = Some(info);
                    snap.layout = Arc::new(layout);
                    snap.as_of = s.settled.then(Instant::now);
                }
                Err(crate::observe::settle::Error::NotBolt { reason, .. }) => {
                    snap.error = Some(reason.to_string());
                }
                Err(crate::observe::settle::Error::Open { source, .. }) => return Err(source),
                Err(e) => snap.error = Some(e.to_string()),
            }
        }
        Format::Rrd => {
            snap.format = Format::Rrd;
            let walked = mapwise_core::rrd::layout(src, crate::os::residency::os_page_size());
            snap.error = match (walked.arch, &walked.fatal) {
                (Some(a), Some(_)) if a != mapwise_core::rrd::Arch::Native => {
                    Some(a.refusal().into())
                }
                (_, fatal) => fatal.as_ref().map(ToString::to_string),
            };
            if let Ok(h) = mapwise_core::rrd::Header::parse_header(src) {
                snap.expected_len = h.geometry().file_len;
                snap.rrd = Some(RrdInfo {
                    version: h.version_str().to_owned(),
                    step: h.pdp_step(),
                    last_update: h.last_up(),
                    ds: h.dss().iter().map(|d| d.name.clone()).collect(),
                    rras: walked
                        .rras
                        .iter()
                        .map(|a| RraSummary {
                            cf: a.cf.name(),
                            rows: a.rows,
                            pdp_per_row: a.pdp_cnt,
                            cur_row: a.cur_row,
                        })
                        .collect(),
                    hot: walked.hot.clone(),
                });
            }
            snap.layout = Arc::new(walked.layout);
        }
        Format::Revlog => {
            snap.format = Format::Revlog;
            // A non-inline index's chunks are checked against its `.d`.
            let data_len = crate::engine::revlog::data_path(path)
                .and_then(|d| std::fs::metadata(d).ok())
                .map(|m| m.len());
            let walked = mapwise_core::revlog::layout(
                &src,
                mapwise_core::revlog::LayoutOptions { data_len },
            );
            snap.revlog = walked.header.map(|h| RevlogInfo {
                version: h.version.number(),
                inline: h.is_inline(),
                generaldelta: h.is_generaldelta(),
                revisions: walked.revisions,
                data_bytes: walked.data_bytes,
            });
            snap.layout = Arc::new(walked.layout);
            snap.error = walked.fatal.map(|e| e.to_string());
        }
        _ => {
            if src.is_empty() {
                snap.error = Some("empty file".into());
            }
        }
    }
    snap.took = start.elapsed();
    Ok(snap)
}

/// Samples [`Watch`]'s actions take, at most, waiting for residency to
/// settle after them.
const SETTLE_SAMPLES: u32 = 20;
/// Pause between those samples.
const SETTLE_PAUSE: Duration = Duration::from_millis(25);

/// What a residency action (touch, evict, advise) did to a byte range,
/// from samples taken just before it and once residency settled after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    /// First byte of the range asked for.
    pub offset: u64,
    /// Bytes asked for ([`TO_EOF`]: to the end of the file).
    pub len: u64,
    /// OS pages of the range inside the file now.
    pub pages: u64,
    /// Resident OS pages of the range before; `None` when the kernel does
    /// not tell this user (or there was no sample).
    pub before: Option<u64>,
    /// Resident OS pages of the range after; `None` as for `before`.
    pub after: Option<u64>,
    /// Our own lock (`L`) was released first.
    pub released_lock: bool,
}

impl Effect {
    /// OS pages of `[offset, offset + len)` inside the sampled file, and
    /// how many are resident (`None` when the sample is not trusted).
    #[must_use]
    pub fn count(r: &Residency, offset: u64, len: u64) -> (u64, Option<u64>) {
        let ps = r.page_size.max(1);
        let start = offset.max(r.offset);
        let end = offset.saturating_add(len).min(r.offset.saturating_add(r.len));
        let pages =
            if start >= end { 0 } else { (end - 1 - r.offset) / ps - (start - r.offset) / ps + 1 };
        let resident = r.trust.is_known().then(|| r.resident_in(offset, len));
        (pages, resident)
    }

    /// [`Effect::count`] summed over the byte ranges `(offset, len)`
    /// (which must not overlap).
    #[must_use]
    pub fn count_all(r: &Residency, ranges: &[(u64, u64)]) -> (u64, Option<u64>) {
        ranges.iter().fold((0, Some(0)), |(n, res), &(offset, len)| {
            let (pages, resident) = Effect::count(r, offset, len);
            (n + pages, res.zip(resident).map(|(a, b)| a + b))
        })
    }
}

/// After a structure read that took `t`, the same file is not read again
/// for `REREAD_PAUSE × t` (at most [`REREAD_PAUSE_MAX`]), however often a
/// writer commits: the inspector then spends at most a quarter of the time
/// reading the file. A busy production file (etcd commits every ~100 ms)
/// would otherwise be re-read back to back, a whole-file `O_DIRECT` read
/// each time. A replaced file (new inode), a file whose size changed
/// (grown or truncated: rare, and what the view must show) and a refresh
/// the user asks for (`Watch::refresh_now`) are read at once.
pub const REREAD_PAUSE: u32 = 3;

/// The longest pause [`REREAD_PAUSE`] makes.
pub const REREAD_PAUSE_MAX: Duration = Duration::from_secs(60);

/// The first structure of the file at `path`, and for a bbolt file the
/// follower that keeps it current (waited for until its first layout).
fn first_snapshot(
    path: &Path,
    opts: WalkOptions,
    wait: Option<Duration>,
) -> std::io::Result<(Snapshot, Option<Live>)> {
    let (is_bolt, stamp) = {
        let src = QuietSource::open(path)?;
        let stamp = Stamp::of(src.metadata());
        (detect(&src) == Format::Bolt && !is_foreign_endian_bolt(&src), stamp)
    };
    if !is_bolt {
        return Ok((read_snapshot(path, opts)?, None));
    }
    let live = Live::start(path, opts);
    let first = match wait {
        Some(wait) => live.rx.recv_timeout(wait).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => None,
            mpsc::RecvTimeoutError::Disconnected => Some(()),
        }),
        None => live.rx.recv().map_err(|_| Some(())),
    };
    match first {
        Ok(Ok(snap)) => Ok((snap, Some(live))),
        Ok(Err(e)) => Err(e),
        Err(None) => Ok((reading_snapshot(stamp), Some(live))),
        Err(Some(())) => Ok((read_snapshot(path, opts)?, None)),
    }
}

/// The snapshot of a bbolt file whose first structure is still being read
/// ([`Snapshot::reading`]).
fn reading_snapshot(stamp: Stamp) -> Snapshot {
    let mut layout = Layout::unknown(stamp.size);
    layout.format = Format::Bolt;
    Snapshot {
        stamp,
        format: Format::Bolt,
        layout: Arc::new(layout),
        bolt: None,
        revlog: None,
        rrd: None,
        error: None,
        unsettled: None,
        expected_len: 0,
        quiet: true,
        took: Duration::ZERO,
        as_of: None,
        reading: true,
    }
}

/// How long [`Watch::start`] waits for a bbolt file's first structure
/// before it shows the file as being read.
const FIRST_WAIT: Duration = Duration::from_millis(250);

/// When the next re-read may start after one that took `took` ended now.
fn after_pause(took: Duration) -> Instant {
    Instant::now() + took.saturating_mul(REREAD_PAUSE).min(REREAD_PAUSE_MAX)
}

/// A file under watch.
#[derive(Debug)]
pub struct Watch {
    path: PathBuf,
    opts: WalkOptions,
    snapshot: Snapshot,
    source: Option<QuietSource>,
    pending: Option<Receiver<std::io::Result<Snapshot>>>,
    /// Earliest start of the next re-read of the same inode
    /// ([`REREAD_PAUSE`]).
    next_reread: Instant,
    /// The file changed since the snapshot and its re-read waits for
    /// `next_reread`.
    waiting: bool,
    residency: Option<Residency>,
    problem: Option<String>,
    locked: Option<Locked>,
    /// The follower of a bbolt file ([`Live`]), which replaces re-reads.
    live: Option<Live>,
    /// Why the follower last could not keep up, while the structure shown
    /// is an older settled one.
    live_note: Option<String>,
    /// A new follower was started (the file was replaced or resized) and
    /// has not sent its first structure yet.
    restarting: bool,
}

/// Pause between two looks at the meta pages of a followed bbolt file
/// once every page is held: a commit is noticed within it (etcd commits
/// every 100 ms at most; a writer committing twice between two looks
/// makes the follower start over).
const LOOK_EVERY: Duration = Duration::from_millis(8);

/// After a layout of a followed file that took `t`, the next is made no
/// sooner than `LAYOUT_PAUSE × t` later (and [`LAYOUT_MIN`]): the replay,
/// and the main thread's index of each new layout, then cost at most
/// ~2.5 % of a core however often the writer commits, within the live
/// view's 10 % with residency sampled at every interval; a 2 GiB file's
/// structure is then about a second old.
const LAYOUT_PAUSE: u32 = 39;

/// Niceness of the live view's layout thread: below the follower and its
/// readers, which must not miss a commit, but not so low that a busy host
/// starves it (weight 110 against 1024 at nice 0).
const LAYOUT_NICE: i32 = 10;

/// After an attempt of the live view's follower is lost (it started
/// over), it rests this many times as long as the attempt took before the
/// next: a writer it cannot follow, or a host too busy for it to look in
/// time, then costs a quarter of a core at most, not all of one.
const RETRY_REST: u32 = 3;

/// The longest rest of [`RETRY_REST`].
const RETRY_REST_MAX: Duration = Duration::from_secs(10);

/// Txids whose first sighting [`Live`] keeps, to age the structure shown.
const SEEN_KEPT: usize = 256;

/// The shortest time between two layouts of a followed file.
const LAYOUT_MIN: Duration = Duration::from_millis(400);

/// A bbolt file followed on two background threads: one follows the
/// writer's commits ([`crate::observe::settle::Follower`]) and never stops to
/// replay the walk; the other replays it from what the first held at a
/// moment ([`crate::observe::settle::Frozen`]) and sends each layout as a
/// [`Snapshot`] of one snapshot of the file (settled), or, when the
/// follower cannot keep up, one that says so.
#[derive(Debug)]
struct Live {
    rx: Receiver<std::io::Result<Snapshot>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// The txid the follower is at.
    txid: Arc<std::sync::atomic::AtomicU64>,
    /// When the follower first saw each of the last [`SEEN_KEPT`] txids:
    /// a structure of txid N is current until N + 1 lands.
    seen: Arc<std::sync::Mutex<std::collections::VecDeque<(u64, Instant)>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Live {
    fn start(path: &Path, opts: WalkOptions) -> Live {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let (tx, rx) = mpsc::channel::<std::io::Result<Snapshot>>();
        let (job_tx, job_rx) =
            mpsc::sync_channel::<(crate::observe::settle::Frozen, Option<String>)>(0);
        let stop = Arc::new(AtomicBool::new(false));
        let took_ns = Arc::new(AtomicU64::new(0));
        let txid = Arc::new(AtomicU64::new(u64::MAX));
        let seen = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let follow = {
            let (path, stop, tx, took_ns) =
                (path.to_owned(), Arc::clone(&stop), tx.clone(), Arc::clone(&took_ns));
            let txid = Arc::clone(&txid);
            let seen = Arc::clone(&seen);
            named("follow", move || {
                let budget = crate::observe::settle::LIVE_CARRY_BUDGET;
                let mut f = match crate::observe::settle::Follower::open(&path, opts, budget) {
                    Ok(f) => f,
                    Err(crate::observe::settle::Error::Open { source, .. }) => {
                        let _ = tx.send(Err(source));
                        return;
                    }
                    Err(_) => {
                        // Not (or no longer) bbolt: read as what it is.
                        let _ = tx.send(read_snapshot(&path, opts));
                        return;
                    }
                };
                let mut sent = None;
                let mut next_layout = Instant::now();
                let mut reported = 0;
                let mut attempt = (f.restarts(), Instant::now());
                while !stop.load(Ordering::Relaxed) {
                    let whole = f.advance(Duration::from_millis(50));
                    if f.restarts() != attempt.0 {
                        // An attempt was lost (a writer too fast, or a host
                        // too busy to look in time): rest before the next,
                        // so that retrying takes at most a share of a core.
                        let lost = attempt.1.elapsed();
                        let until =
                            Instant::now() + lost.saturating_mul(RETRY_REST).min(RETRY_REST_MAX);
                        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        attempt = (f.restarts(), Instant::now());
                    }
                    if whole {
                        // Nothing read so far is lost by a later restart.
                        attempt.1 = Instant::now();
                    }
                    if txid.swap(f.txid(), Ordering::Relaxed) != f.txid()
                        && let Ok(mut seen) = seen.lock()
                    {
                        if seen.len() >= SEEN_KEPT {
                            // Keep the oldest: the view prunes what it no
                            // longer needs, so the oldest is the commit that
                            // superseded the structure shown, whose time is
                            // that structure's age however far behind it is.
                            seen.remove(1);
                        }
                        seen.push_back((f.txid(), Instant::now()));
                    }
                    if whole {
                        let due = Instant::now() >= next_layout;
                        if sent != Some(f.txid())
                            && due
                            && job_tx.try_send((f.freeze(), None)).is_ok()
                        {
                            sent = Some(f.txid());
                            let took = Duration::from_nanos(took_ns.load(Ordering::Relaxed));
                            next_layout =
                                Instant::now() + took.saturating_mul(LAYOUT_PAUSE).max(LAYOUT_MIN);
                        }
                        std::thread::sleep(LOOK_EVERY);
                    } else if f.restarts() >= reported + crate::observe::settle::MAX_RESTARTS {
                        reported = f.restarts();
                        let note = crate::observe::settle::unsettled_message(&f.struggle(), 0);
                        let _ = job_tx.try_send((f.freeze(), Some(note)));
                    }
                }
            })
        };
        let layout = {
            let stop = Arc::clone(&stop);
            named("layout", move || {
                crate::os::io::lower_priority(LAYOUT_NICE);
                while let Ok((frozen, note)) = job_rx.recv() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let start = Instant::now();
                    let settled = note.is_none();
                    let snap = live_snapshot(&frozen, note);
                    if settled && !frozen.stands() {
                        // Written while the previous tree was read: the
                        // follower's next commit tells the pending pages.
                        continue;
                    }
                    took_ns.store(
                        u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
                        Ordering::Relaxed,
                    );
                    drop(frozen);
                    crate::os::heap::release_freed();
                    if tx.send(Ok(snap)).is_err() {
                        break;
                    }
                }
            })
        };
        Live { rx, stop, txid, seen, threads: vec![follow, layout] }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A thread named `name` (what `ps -L` and `top -H` show), as
/// [`std::thread::spawn`] starts one.
fn named<F>(name: &str, f: F) -> std::thread::JoinHandle<()>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new().name(name.to_owned()).spawn(f).expect("failed to spawn thread")
}

/// The [`Snapshot`] of what a follower held: settled when every page
/// was held (`note` is then `None`), else an incomplete one saying why.
fn live_snapshot(frozen: &crate::observe::settle::Frozen, note: Option<String>) -> Snapshot {
    let start = Instant::now();
    let (info, layout) =
        frozen.layout(|file, walked| (BoltInfo::of(file, walked.freelist), walked.layout));
    let stamp = frozen.metadata().map(|m| Stamp::of(&m));
    let quiet = frozen.is_direct();
    Snapshot {
        stamp: stamp.unwrap_or(Stamp { dev: 0, ino: 0, size: layout.source_len, mtime_ns: 0 }),
        format: Format::Bolt,
        expected_len: info.hwm.saturating_mul(u64::from(info.page_size)),
        bolt: Some(info),
        layout: Arc::new(layout),
        revlog: None,
        rrd: None,
        error: None,
        as_of: note.is_none().then(|| frozen.taken()),
        unsettled: note,
        quiet,
        took: start.elapsed(),
        reading: false,
    }
}

/// What a refresh found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Refreshed {
    /// A new structure snapshot arrived.
    pub new_snapshot: bool,
    /// The file changed and a re-read started.
    pub reread_started: bool,
    /// The path now names another file (another inode: etcd's defrag and
    /// a restore rename a new file over the old), which is read afresh.
    pub replaced: bool,
}

impl Watch {
    /// Start watching `path`: read its structure (blocking) and sample
    /// its residency.
    ///
    /// # Errors
    /// When the file cannot be opened.
    pub fn open(path: impl AsRef<Path>, opts: WalkOptions) -> std::io::Result<Watch> {
        Watch::with_first(path.as_ref(), opts, None)
    }

    /// [`Watch::open`], returning at once: a bbolt file whose first
    /// structure takes longer than a moment (a large file, a busy writer)
    /// is shown as being read ([`Snapshot::reading`], and
    /// [`Watch::rereading`] until it arrives), with its residency sampled
    /// from the start.
    ///
    /// # Errors
    /// As [`Watch::open`].
    pub fn start(path: impl AsRef<Path>, opts: WalkOptions) -> std::io::Result<Watch> {
        Watch::with_first(path.as_ref(), opts, Some(FIRST_WAIT))
    }

    fn with_first(
        path: &Path,
        opts: WalkOptions,
        wait: Option<Duration>,
    ) -> std::io::Result<Watch> {
        let path = path.to_owned();
        let (snapshot, live) = first_snapshot(&path, opts, wait)?;
        let reading = snapshot.reading;
        let source = QuietSource::open(&path).ok();
        let next_reread = after_pause(snapshot.took);
        let mut w = Watch {
            path,
            opts,
            snapshot,
            source,
            pending: None,
            next_reread,
            waiting: false,
            residency: None,
            problem: None,
            locked: None,
            live,
            live_note: None,
            restarting: reading,
        };
        w.sample();
        Ok(w)
    }

    /// The watched path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The latest structure snapshot.
    #[must_use]
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The latest residency sample (of the file as it is now, which may
    /// be newer than the snapshot).
    #[must_use]
    pub fn residency(&self) -> Option<&Residency> {
        self.residency.as_ref()
    }

    /// A problem with the file right now (vanished, unreadable), if any.
    #[must_use]
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// `true` while the structure shown is older than the file: a re-read
    /// runs, or waits its turn ([`REREAD_PAUSE`]).
    #[must_use]
    pub fn rereading(&self) -> bool {
        if self.live.is_some() {
            return self.restarting;
        }
        self.pending.is_some() || self.waiting
    }

    /// `true` while this watch holds the file's pages locked in memory.
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.locked.is_some()
    }

    /// Open the path again (a replaced or re-read file): samples of the
    /// old inode say nothing of the new one.
    fn reopen(&mut self) {
        self.source = QuietSource::open(&self.path).ok();
        self.residency = None;
    }

    /// Sample residency, asking `mincore(2)` only about what may have
    /// changed since the last sample ([`residency::resample`]).
    fn sample(&mut self) {
        let Some(src) = &self.source else { return };
        sample_into(src.file(), &mut self.residency, &mut self.problem);
    }

    /// Check the file's identity, start a background re-read of its
    /// structure when it changed, collect a finished re-read, and sample
    /// residency again. Call once per interval.
    pub fn refresh(&mut self) -> Refreshed {
        if self.live.is_some() {
            return self.refresh_live();
        }
        let mut out = Refreshed::default();
        if let Some(rx) = &self.pending {
            match rx.try_recv() {
                Ok(Ok(snap)) => {
                    self.next_reread = after_pause(snap.took);
                    self.snapshot = snap;
                    self.reopen();
                    self.pending = None;
                    out.new_snapshot = true;
                }
                Ok(Err(e)) => {
                    self.problem = Some(format!("{}: {e}", self.path.display()));
                    self.pending = None;
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => self.pending = None,
            }
        }
        match std::fs::metadata(&self.path) {
            Ok(meta) => {
                self.problem = None;
                let now = Stamp::of(&meta);
                let replaced =
                    now.dev != self.snapshot.stamp.dev || now.ino != self.snapshot.stamp.ino;
                let resized = now.size != self.snapshot.stamp.size;
                let changed = now != self.snapshot.stamp && self.pending.is_none();
                self.waiting =
                    changed && !replaced && !resized && Instant::now() < self.next_reread;
                if changed && !self.waiting {
                    if replaced {
                        // Replaced: sample the new inode from now on.
                        self.reopen();
                        out.replaced = true;
                    }
                    let (tx, rx) = mpsc::channel();
                    let path = self.path.clone();
                    let opts = self.opts;
                    named("reread", move || {
                        let snap = read_snapshot(&path, opts);
                        crate::os::heap::release_freed();
                        let _ = tx.send(snap);
                    });
                    self.pending = Some(rx);
                    out.reread_started = true;
                }
            }
            Err(e) => self.problem = Some(format!("{}: {e}", self.path.display())),
        }
        self.sample();
        out
    }

    /// [`Watch::refresh`] of a followed bbolt file: take the newest layout
    /// the follower made, follow a replacement file.
    fn refresh_live(&mut self) -> Refreshed {
        let mut out = Refreshed::default();
        let mut gone = false;
        if let Some(live) = &self.live {
            loop {
                match live.rx.try_recv() {
                    Ok(Ok(snap)) => {
                        self.restarting = false;
                        if snap.format != Format::Bolt {
                            // Replaced by a file of another kind.
                            self.snapshot = snap;
                            out.new_snapshot = true;
                            gone = true;
                            break;
                        }
                        if snap.unsettled.is_none() || self.snapshot.as_of.is_none() {
                            self.live_note = None;
                            self.snapshot = snap;
                            out.new_snapshot = true;
                        } else {
                            // Keep the settled structure; say why no newer one.
                            self.live_note = snap.unsettled;
                        }
                    }
                    Ok(Err(e)) => {
                        self.problem = Some(format!("{}: {e}", self.path.display()));
                        gone = true;
                        break;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        gone = true;
                        break;
                    }
                }
            }
        }
        if gone {
            self.live = None;
            self.sample();
            return out;
        }
        match std::fs::metadata(&self.path) {
            Ok(meta) => {
                self.problem = None;
                let now = Stamp::of(&meta);
                let replaced =
                    now.dev != self.snapshot.stamp.dev || now.ino != self.snapshot.stamp.ino;
                // A size change no commit explains (a commit that grows
                // the file brings a newer structure by itself): someone
                // truncated or extended the file behind bbolt's back.
                let shown = self.snapshot.bolt.as_ref().map(|b| b.txid);
                let followed =
                    self.live.as_ref().map(|l| l.txid.load(std::sync::atomic::Ordering::Relaxed));
                let resized = now.size != self.snapshot.stamp.size && shown == followed;
                if (replaced || resized) && !self.restarting {
                    if replaced {
                        self.reopen();
                        out.replaced = true;
                    }
                    self.live = Some(Live::start(&self.path, self.opts));
                    self.restarting = true;
                    out.reread_started = true;
                }
            }
            Err(e) => self.problem = Some(format!("{}: {e}", self.path.display())),
        }
        self.sample();
        out
    }

    /// How current the structure shown is, for a followed bbolt file:
    /// "as of txid N, now" while N is the file's newest commit the follower
    /// has seen, else "as of txid N, 0.8 s ago", the time since the next
    /// commit landed (when the follower first saw it).
    #[must_use]
    pub fn structure_age(&self) -> Option<String> {
        let live = self.live.as_ref()?;
        let txid = self.snapshot.bolt.as_ref()?.txid;
        let as_of = self.snapshot.as_of?;
        let newest = live.txid.load(std::sync::atomic::Ordering::Relaxed);
        if newest == txid || newest == u64::MAX {
            return Some(format!("as of txid {txid}, now"));
        }
        let superseded = live.seen.lock().ok().and_then(|mut seen| {
            // Commits up to the one shown tell nothing any more.
            while seen.front().is_some_and(|(t, _)| *t <= txid) {
                seen.pop_front();
            }
            seen.front().map(|(_, at)| *at).filter(|at| *at >= as_of)
        });
        let age = superseded.unwrap_or(as_of).elapsed().as_secs_f64();
        Some(format!("as of txid {txid}, {age:.1} s ago"))
    }

    /// Why the follower of a bbolt file could not settle a newer structure
    /// than the one shown, if it could not.
    #[must_use]
    pub fn live_note(&self) -> Option<&str> {
        self.live_note.as_deref()
    }

    /// [`Watch::refresh`], starting a re-read of a changed file at once
    /// instead of after its [`REREAD_PAUSE`] (the user asked for it).
    pub fn refresh_now(&mut self) -> Refreshed {
        self.next_reread = Instant::now();
        self.refresh()
    }

    /// Wait (up to `timeout`) for a running re-read to finish.
    pub fn settle(&mut self, timeout: Duration) {
        let start = Instant::now();
        while self.rereading() && start.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(5));
            self.refresh();
        }
    }

    /// Decode page `pgid` of the current file for display (at most
    /// `limit` elements).
    ///
    /// # Errors
    /// When the file is not an openable bbolt file or the page is
    /// unreadable.
    pub fn page_detail(&self, pgid: u64, limit: usize) -> Result<PageDetail, String> {
        // Opened afresh: a writer grows the file, and a page it added since
        // the file was opened is past the length a source fixed then.
        let src = QuietSource::open(&self.path).map_err(|e| e.to_string())?;
        let file = BoltFile::open(&src).map_err(|e| e.to_string())?;
        page_detail(&file, pgid, limit).map_err(|e| e.to_string())
    }

    /// The structures overlapping `[offset, offset + len)` of the current
    /// file, described (an etcd db's records, other formats' structures;
    /// see [`crate::describe`]).
    ///
    /// # Errors
    /// When the file is not open or the structures cannot be decoded.
    pub fn describe(&self, offset: u64, len: u64) -> Result<Vec<crate::describe::Item>, String> {
        if self.snapshot.format == Format::Bolt {
            // Opened afresh, as for `page_detail`: an etcd db's newest
            // pages lie past the length a source opened earlier fixed.
            let src = QuietSource::open(&self.path).map_err(|e| e.to_string())?;
            return crate::describe::describe(&self.snapshot.layout, &src, offset, len);
        }
        let src = self.source.as_ref().ok_or("file not open")?;
        crate::describe::describe(&self.snapshot.layout, src, offset, len)
    }

    /// Bring `[offset, offset + len)` (`len` = [`TO_EOF`] for all) into the
    /// page cache (vmtouch -t). Refused for a file larger than the memory
    /// available now. Returns what it did, re-sampled ([`Effect`]).
    ///
    /// # Errors
    /// The residency layer's error, as text.
    pub fn touch(&mut self, offset: u64, len: u64) -> Result<Effect, String> {
        let job = self.job(JobKind::Touch, offset, len)?;
        self.finish(job.run())
    }

    /// Drop `[offset, offset + len)` from the page cache (vmtouch -e), after
    /// releasing our own lock if we hold one. Returns what it did,
    /// re-sampled ([`Effect`]): pages mapped or locked by a process, dirty
    /// pages and tmpfs pages stay resident.
    ///
    /// # Errors
    /// The residency layer's error, as text.
    pub fn evict(&mut self, offset: u64, len: u64) -> Result<Effect, String> {
        let job = self.job(JobKind::Evict, offset, len)?;
        self.finish(job.run())
    }

    /// Give the kernel `advice` about `[offset, offset + len)`
    /// ([`residency::advise`], `posix_fadvise(2)`); DONTNEED releases our
    /// own lock first, as [`Watch::evict`] does. Returns the range's
    /// residency before and after, re-sampled once it settles
    /// ([`Effect`]).
    ///
    /// # Errors
    /// The residency layer's error, as text.
    pub fn advise(&mut self, offset: u64, len: u64, advice: FileAdvice) -> Result<Effect, String> {
        let job = self.job(JobKind::Advise(advice), offset, len)?;
        self.finish(job.run())
    }

    /// A touch, evict, advise or lock of `[offset, offset + len)` that can run on
    /// another thread ([`Job::run`]; [`Watch::finish`] takes its result
    /// back). What must happen here happens now: the memory check of a
    /// touch or lock, and the release of our own lock before an evict or
    /// DONTNEED.
    ///
    /// # Errors
    /// The file is not open, or too large to touch.
    pub fn job(&mut self, kind: JobKind, offset: u64, len: u64) -> Result<Job, String> {
        let file = self.source.as_ref().ok_or("file not open")?.file();
        match kind {
            JobKind::Touch => {
                fits_in_memory(Some(file), 1, "reading it in would only churn the page cache")?
            }
            JobKind::Lock if self.locked.is_some() => return Err("already locked".into()),
            JobKind::Lock => {
                fits_in_memory(Some(file), 2, "locking it could starve the system")?;
            }
            JobKind::Evict | JobKind::Advise(_) => {}
        }
        let file = file.try_clone().map_err(|e| e.to_string())?;
        let releases = matches!(kind, JobKind::Evict | JobKind::Advise(FileAdvice::DontNeed));
        let released_lock = releases && self.locked.take().is_some();
        Ok(Job {
            file,
            residency: self.residency.clone(),
            problem: None,
            kind,
            offset,
            len,
            released_lock,
        })
    }

    /// Take back a finished [`Job`]: its last residency sample (or the
    /// sampling problem) becomes the watch's; returns its effect.
    ///
    /// # Errors
    /// The job's failure, as text.
    pub fn finish(&mut self, done: Done) -> Result<Effect, String> {
        if let Some(r) = done.residency {
            self.residency = Some(r);
        }
        if let Some(p) = done.problem {
            self.problem = Some(p);
        }
        if let Some(l) = done.locked {
            self.locked = Some(l);
        }
        done.effect
    }

    /// Lock the whole file in memory (vmtouch -l) until unlocked or the
    /// watch ends; a second call unlocks. Returns whether it is locked now.
    /// Refused for a file larger than half the memory available now.
    ///
    /// # Errors
    /// The residency layer's error (typically `mlock` refused by
    /// RLIMIT_MEMLOCK), as text.
    pub fn toggle_lock(&mut self) -> Result<bool, String> {
        if self.locked.take().is_some() {
            self.sample();
            return Ok(false);
        }
        let job = self.job(JobKind::Lock, 0, TO_EOF)?;
        self.finish(job.run()).map(|_| true)
    }

    /// The open file (fstat and residency calls on the watched inode).
    #[must_use]
    pub fn file(&self) -> Option<&File> {
        self.source.as_ref().map(QuietSource::file)
    }
}

/// What a [`Job`] does to its range of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// Read it into the page cache (vmtouch -t).
    Touch,
    /// Drop it from the page cache (vmtouch -e).
    Evict,
    /// Give the kernel this advice about it (`posix_fadvise(2)`).
    Advise(FileAdvice),
    /// Lock the whole file in memory (vmtouch -l); the range is ignored.
    Lock,
}

/// A touch, evict, advise or lock of a watched file, made by [`Watch::job`] and
/// free to run on another thread: it holds its own handle of the file and
/// the last residency sample, and measures its effect as the watch would.
#[derive(Debug)]
pub struct Job {
    file: File,
    residency: Option<Residency>,
    problem: Option<String>,
    kind: JobKind,
    offset: u64,
    len: u64,
    released_lock: bool,
}

/// A finished [`Job`], for [`Watch::finish`].
#[derive(Debug)]
pub struct Done {
    /// What the job did, re-sampled; or its failure, as text.
    pub effect: Result<Effect, String>,
    /// The residency sample it settled on.
    pub residency: Option<Residency>,
    /// Why sampling failed, when it did.
    pub problem: Option<String>,
    /// The lock a [`JobKind::Lock`] took, for the watch to hold.
    pub locked: Option<Locked>,
}

impl Job {
    /// What this job does.
    #[must_use]
    pub fn kind(&self) -> JobKind {
        self.kind
    }

    /// Sample, act on the file, sample again until the count settles, and
    /// say what changed in the range. Blocks for as long as the kernel
    /// takes (seconds for gigabytes).
    #[must_use]
    pub fn run(mut self) -> Done {
        if self.kind == JobKind::Lock {
            (self.offset, self.len) = (0, TO_EOF);
        }
        let (offset, len) = (self.offset, self.len);
        self.sample();
        let before = self.residency.as_ref().map(|r| Effect::count(r, offset, len));
        let mut locked = None;
        let result = match self.kind {
            JobKind::Touch => residency::touch(&self.file, offset, len).map(|_| ()),
            JobKind::Evict => residency::evict(&self.file, offset, len),
            JobKind::Advise(advice) => residency::advise(&self.file, offset, len, advice),
            JobKind::Lock => residency::lock(&self.file, offset, len).map(|l| locked = Some(l)),
        }
        .map_err(|e| chain(&e));
        self.settle();
        let effect = result.map(|()| {
            let after = self.residency.as_ref().map(|r| Effect::count(r, offset, len));
            let (pages, after) = after.unwrap_or((0, None));
            Effect {
                offset,
                len,
                pages,
                before: before.and_then(|(_, b)| b),
                after,
                released_lock: self.released_lock,
            }
        });
        Done { effect, residency: self.residency, problem: self.problem, locked }
    }

    fn sample(&mut self) {
        sample_into(&self.file, &mut self.residency, &mut self.problem);
    }

    /// Sample until two samples a short pause apart count the same
    /// resident pages (at most about half a second): read-ahead started by
    /// an action lands after it returns.
    fn settle(&mut self) {
        self.sample();
        for _ in 0..SETTLE_SAMPLES {
            let last = self.residency.as_ref().map(|r| r.resident_pages);
            std::thread::sleep(SETTLE_PAUSE);
            self.sample();
            if self.residency.as_ref().map(|r| r.resident_pages) == last {
                break;
            }
        }
    }
}

/// Sample `file`'s residency into `last` (resampling from the last sample
/// when there is one), or say why it failed in `problem`: the one sampling
/// step of a [`Watch`] and of a [`Job`].
fn sample_into(file: &File, last: &mut Option<Residency>, problem: &mut Option<String>) {
    let sampled = match last.as_ref() {
        Some(prev) => residency::resample(file, prev),
        None => residency::sample(file),
    };
    match sampled {
        Ok(r) => *last = Some(r),
        Err(e) => *problem = Some(chain(&e)),
    }
}

/// Refuse to touch or lock a file larger than `1/divisor` of the memory
/// available now (`MemAvailable` in `/proc/meminfo`); no limit when that
/// cannot be read.
fn fits_in_memory(file: Option<&File>, divisor: u64, why: &str) -> Result<(), String> {
    let size = file.and_then(|f| f.metadata().ok()).map_or(0, |m| m.len());
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib.saturating_mul(1024))
    });
    match available {
        Some(avail) if size > avail / divisor.max(1) => Err(format!(
            "the file ({}) is larger than {} of the memory available ({}); {why}",
            human_size(size),
            if divisor == 1 { "all" } else { "half" },
            human_size(avail)
        )),
        _ => Ok(()),
    }
}

/// An error and its causes as one line (`mlock(2) of ... failed: Cannot
/// allocate memory`): the residency errors keep the OS error as their
/// source, which `to_string` alone would drop.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
