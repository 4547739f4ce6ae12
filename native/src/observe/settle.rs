//! Reading a bbolt file while a writer commits to it, without a lock: the
//! one place every quiet reader of a bbolt file goes through
//! (`watch`'s live view, `inspector check|layout|pages|residency|page`,
//! `mapwise bolt check|pages|info`).
//!
//! The quiet readers take no lock (a running etcd must not wait for them),
//! so a commit can land while they read. Two rules of bbolt's writer make
//! that safe to follow (`tx.go` `Commit`, `freelist.go`, `db.go`
//! `freePages`):
//!
//! 1. A commit writes only pages that were free when it began, all of them
//!    before its meta page. A page the newest snapshot `s` uses is
//!    therefore never written before commit `s + 2` begins, which is after
//!    meta `s + 1` is on disk. (A reader in another process is invisible to
//!    the writer, so commit `s + 2` may reuse what `s + 1` freed.)
//! 2. A page that snapshots `s` and `s + 1` both use was not written by
//!    commit `s + 1` (it was not free when that commit began): it has the
//!    same bytes in both.
//!
//! Small reads ([`read_bolt`]: the meta pages, a few pages) read, then
//! check that both meta pages are still what they were, and read again
//! when they are not.
//!
//! Whole-tree walks ([`read_bolt_walked`]) use a [`Follower`]: it keeps a
//! [`Digest`] of every tree page it has read, and follows the writer
//! commit by commit. Every batch of reads is bracketed by two looks at the
//! meta pages; a batch is kept only when both found them as the snapshot
//! being followed, `s`, so by rule 1 its pages are `s`'s. When a look
//! finds commit `s + 1`, the follower reads the new snapshot's pages that
//! it does not hold (the pages the commit wrote: its changed paths, read
//! down from the new root), and by rule 2 every held page the new tree
//! still reaches is held for `s + 1` too; those it no longer reaches are
//! dropped (they are the pages `s + 1` freed: the previous snapshot's own,
//! which the walk shows as pending). The walk then carries on where it was,
//! in the new snapshot. When every page the snapshot reaches is held, the
//! walk is replayed from the digests ([`mapwise_core::bolt::walk_with`]),
//! reading nothing: the layout is of that one snapshot.
//!
//! Reads go through [`QuietPages`]: copied out of the page cache where it
//! holds the page, `O_DIRECT` elsewhere, so residency stays as it was.
//!
//! The follower cannot keep up with a writer that commits twice between
//! two of its looks (it then cannot tell which pages the missed commit
//! freed), or that commits while the follower reads a commit's pages;
//! it then starts over, and after [`MAX_RESTARTS`] restarts and [`TRY_FOR`] the result says
//! it did not settle ([`Settled::settled`]), with what was seen
//! ([`Struggle`]); `check` then exits 2 (could not run), never 1.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mapwise_core::bolt::{
    BoltFile, BoltLayout, Bound, Digest, Fetched, META_END, Snapshot, TreePages, WalkOptions,
    context,
};
use mapwise_core::{At, PageSource};

use crate::os::io::{QuietPages, QuietSource};

/// Reads of the file [`read_bolt`] makes before giving up on a writer
/// that commits during every one of them.
pub const ATTEMPTS: u32 = 5;

/// Pause before the second attempt of [`read_bolt`]; it doubles before
/// each further one (20, 40, 80, 160 ms: 300 ms in all before giving up).
pub const FIRST_PAUSE: Duration = Duration::from_millis(20);

/// How long a file must have gone unwritten (its modification time) for
/// the previous snapshot's own pages to be read from it, when the reader
/// saw no commit land and some of the file's cached pages are dirty.
///
/// Those pages are the ones the current snapshot's commit freed, and the
/// next commit may write them before its meta page lands (rule 1 protects
/// only the current snapshot's pages), so no look at the meta pages can
/// tell whether they still hold the previous tree. On a file a writer is
/// seen committing to, the follower instead follows one more commit with
/// every page held: the pages it drops are exactly the new snapshot's
/// pending pages. On a file where it saw no commit, a commit under way
/// would show as written pages not yet synced (bbolt syncs a commit's
/// pages before it writes the meta page), or as a write within this long;
/// with neither, and the modification time unchanged after the read, no
/// commit touched the previous tree while it was read.
pub const QUIET_FOR: Duration = Duration::from_millis(100);

/// How long a follower holding every page waits for a commit that tells
/// it the pending pages before it reads the previous tree anyway (a
/// writer that stopped, a clock behind the file's times); the read is
/// still kept only when the file's modification time did not change
/// during it.
const PENDING_WAIT: Duration = Duration::from_secs(2);

/// What a settling read gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled<T> {
    /// What the caller's read returned.
    pub value: T,
    /// Attempts: reads for [`read_bolt`]; for [`read_bolt_walked`], 1 plus
    /// the times the follower started over.
    pub attempts: u32,
    /// `true` when `value` describes one snapshot. `false` when a writer
    /// committed faster than the reader could follow: `value` is of an
    /// incomplete or mixed read, and any problem it reports may be
    /// transient.
    pub settled: bool,
    /// What the reader saw of the writer.
    pub struggle: Struggle,
}

/// What a settling read saw of the writer while it read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Struggle {
    /// The file, as given.
    pub path: PathBuf,
    /// Transaction id of the snapshot read first, and of the last one.
    pub txids: (u64, u64),
    /// Commits followed (each one's changed pages read).
    pub followed: u64,
    /// Times the reader started over, and why the last time.
    pub restarts: u32,
    /// Why the reader last started over (or gave up).
    pub last_reason: Option<String>,
    /// How long the read took.
    pub took: Duration,
    /// Bytes of the largest batch of reads between two looks at the meta
    /// pages, past the pages a commit followed replaced (those are read in
    /// one batch each, however long).
    pub largest_batch: usize,
}

impl Struggle {
    /// Average time between two commits seen, when some were.
    #[must_use]
    pub fn commit_gap(&self) -> Option<Duration> {
        let commits = self.txids.1.saturating_sub(self.txids.0);
        (commits > 0).then(|| self.took / u32::try_from(commits).unwrap_or(u32::MAX))
    }
}

impl<T> Settled<T> {
    /// The value when it settled; else [`Error::Unsettled`], counting the
    /// `problems(value)` seen.
    ///
    /// # Errors
    /// [`Error::Unsettled`] when the read did not settle.
    pub fn or_unsettled(self, problems: impl FnOnce(&T) -> u64) -> Result<T, Error> {
        if self.settled {
            Ok(self.value)
        } else {
            Err(Error::Unsettled {
                problems: problems(&self.value),
                struggle: Box::new(self.struggle),
            })
        }
    }
}

/// Why a settling read could not read the file.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened or stat'ed.
    #[error("cannot open {}", path.display())]
    Open {
        /// The path as given.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not open as bbolt (neither meta page validates).
    // `reason` is part of the message, not a `source`: an error chain
    // printed whole (`{:#}`) would say it twice.
    #[error("{}: cannot open as a bbolt database: {reason}", path.display())]
    NotBolt {
        /// The path as given.
        path: PathBuf,
        /// Why, naming the meta pages' faults.
        reason: mapwise_core::Error,
    },
    /// A writer committed faster than the read could follow
    /// ([`unsettled_message`]).
    #[error("{}", unsettled_message(struggle, *problems))]
    Unsettled {
        /// Problems the last (incomplete) read reported.
        problems: u64,
        /// What was seen of the writer.
        struggle: Box<Struggle>,
    },
}

/// What front ends say when a read did not settle: the file, what was
/// seen of its writer, the problems seen (maybe transient) and what to do.
#[must_use]
pub fn unsettled_message(s: &Struggle, problems: u64) -> String {
    let seen = match problems {
        0 => "no problem seen".to_string(),
        1 => "1 problem seen may be transient".to_string(),
        n => format!("{n} problems seen may be transient"),
    };
    let pace = match s.commit_gap() {
        Some(gap) => format!(
            "{} commits in {:.1} s (one every {:.0} ms)",
            s.txids.1.saturating_sub(s.txids.0),
            s.took.as_secs_f64(),
            gap.as_secs_f64() * 1e3
        ),
        None => "commits".to_string(),
    };
    let why = s.last_reason.as_deref().map(|r| format!(", last because {r}")).unwrap_or_default();
    format!(
        "{}: no read was of one snapshot: a writer made {pace}, faster than this reader can \
         follow (it started over {} times{why}); {seen}. {READ_A_COPY}",
        s.path.display(),
        s.restarts
    )
}

/// What [`unsettled_message`] ends with: what to do instead.
pub const READ_A_COPY: &str = "Read a copy instead: `etcdctl snapshot save COPY` for etcd, or \
     copy the file while its writer is stopped, then inspect COPY";

/// Read the bbolt file at `path` quietly (`O_DIRECT`, no lock, through a
/// fresh [`QuietSource`] each attempt) with `read`, retrying while a
/// commit lands during the read. For reads of a few pages (`info`,
/// `page`): a whole-tree walk is [`read_bolt_walked`]'s.
///
/// `read` gets the file opened at its current meta page; it runs once per
/// attempt, so it should only compute, not print.
///
/// # Errors
/// [`Error::Open`] when the file cannot be opened or stat'ed;
/// [`Error::NotBolt`] when neither meta page validates (on the first
/// attempt). Never [`Error::Unsettled`]: an unsettled read returns
/// `settled: false` (see [`Settled::or_unsettled`]).
pub fn read_bolt<T>(
    path: &Path,
    mut read: impl FnMut(&BoltFile<'_, QuietSource>) -> T,
) -> Result<Settled<T>, Error> {
    let open_err = |source| Error::Open { path: path.to_owned(), source };
    let start = Instant::now();
    let mut pause = FIRST_PAUSE;
    let mut attempts = 0;
    let mut first_txid = None;
    loop {
        attempts += 1;
        let src = QuietSource::open(path).map_err(open_err)?;
        let file = match BoltFile::open(&src) {
            Ok(f) => f,
            Err(reason) => {
                return Err(Error::NotBolt { path: path.to_owned(), reason });
            }
        };
        let before = file.snapshot();
        let txid = before.meta.txid;
        let first = *first_txid.get_or_insert(txid);
        let value = read(&file);
        let settled = unchanged(&src, &before);
        if settled || attempts >= ATTEMPTS {
            return Ok(Settled {
                value,
                attempts,
                settled,
                struggle: Struggle {
                    path: path.to_owned(),
                    txids: (first, txid),
                    followed: 0,
                    restarts: attempts - 1,
                    last_reason: (!settled).then(|| "a commit landed during every read".into()),
                    took: start.elapsed(),
                    largest_batch: 0,
                },
            });
        }
        std::thread::sleep(pause);
        pause = pause.saturating_mul(2);
    }
}

/// Whether the file still stands at `before`: both meta pages read again
/// now (past the chunk cache) are the same, and the snapshot's pages lie
/// inside the length `src` was read with, or the file's length is still
/// that length (a file truncated below its high-water mark stays so).
fn unchanged(src: &QuietSource, before: &Snapshot) -> bool {
    src.forget();
    let Ok(now) = BoltFile::open(src) else {
        return false;
    };
    if now.snapshot() != *before {
        return false;
    }
    let claimed = before.meta.hwm.saturating_mul(u64::from(before.page_size));
    let size = src.file().metadata().map(|m| m.len()).ok();
    claimed <= src.len() || size == Some(src.len())
}

/// Bytes of digests a [`Follower`] of a one-shot command (`check`,
/// `pages`, `layout`) holds at most: 32 bytes a page, 16 a branch element
/// and a page's rarer facts, so files of 4 GiB of 4 KiB pages and more.
pub const CARRY_BUDGET: usize = 256 << 20;

/// The same for the live view, which stays running: 1.3 GiB of 4 KiB
/// pages and more. A bigger file shows an unsettled structure, said so.
pub const LIVE_CARRY_BUDGET: usize = 64 << 20;

/// Times a [`Follower`] starts over before [`read_bolt_walked`] gives up
/// (once it has also tried for [`TRY_FOR`]).
pub const MAX_RESTARTS: u32 = 8;

/// How long [`read_bolt_walked`] keeps starting over before it gives up,
/// however many restarts that takes: a reader starved of CPU (a busy
/// host, a test suite beside it) misses commits it would follow on an
/// idle one, and a later attempt usually settles.
pub const TRY_FOR: Duration = Duration::from_secs(10);

/// How long the meta pages may look half written before the follower
/// starts over from what they say then.
const MOVING_LIMIT: Duration = Duration::from_secs(1);

/// Bytes of a batch buffer kept for the next batch at most.
const ARENA_MAX: usize = 8 << 20;

/// Open branch pages whose children are read ahead of need (with 12, a
/// 2 GiB file's walk waited for its reads a third of the time).
const AHEAD_PARENTS: usize = 48;

/// Page runs read in one batch at most (bounds the time between the two
/// looks at the meta pages that bracket it).
const BATCH_RUNS: usize = 256;

/// Bytes one batch reads at most (one run at least): the batch takes fewer
/// pages when the last ones had overflow pages, and of the pages it took,
/// reads whole only the runs that fit (it knows a page's overflow only from
/// its first page), so that a batch of an etcd db holding 1 MiB values
/// still ends long before the next commit.
pub const BATCH_BYTES: usize = 2 << 20;

/// While the follower waits for reads started ahead, it looks at the meta
/// pages this often: often enough to follow a commit long before the next
/// one lands (etcd commits at most every 100 ms, the bench's writer every
/// 20), rarely enough that the looks cost little (each maps, copies and
/// unmaps the meta pages).
const WAIT_LOOK: Duration = Duration::from_millis(2);

/// Raw bytes of both meta pages, as a look compares them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MetaBytes([Vec<u8>; 2]);

/// The snapshot a [`Follower`] is at.
#[derive(Debug, Clone)]
struct Current {
    metas: MetaBytes,
    snapshot: Snapshot,
    /// The file's length when the snapshot was first seen.
    len: u64,
}

impl Current {
    fn txid(&self) -> u64 {
        self.snapshot.meta.txid
    }
}

/// What a look at the meta pages found.
enum Look {
    /// Both as the snapshot followed.
    Same,
    /// The next commit, whole.
    Next(Current),
    /// A commit being written (a meta page changed but the newest valid
    /// one is still ours), or unreadable meta pages: look again soon.
    Moving,
    /// Some other snapshot (commits missed, an older file put back): the
    /// follower must start over.
    Elsewhere(Current),
}

/// A page the [`Follower`] holds.
#[derive(Debug, Clone)]
enum Slot {
    /// Reached from a held page, not read yet.
    Frontier,
    /// Read and digested.
    Known(Digest),
    /// Read, and refused as a tree page ([`BoltFile::tree_page`]'s fault).
    Fault(Box<mapwise_core::Error>),
}

/// Page ids to slots, in chunks of [`CHUNK`] consecutive ids, each
/// allocated when one of its pages is first held: dense where a tree is
/// (32 bytes a page), nothing where none is (the 16 Mi pages a damaged
/// meta page may claim cost 8 bytes per chunk).
#[derive(Debug, Default, Clone)]
struct Table {
    chunks: Vec<Option<Arc<Vec<Option<Slot>>>>>,
    len: usize,
}

/// Page ids per chunk of a [`Table`].
const CHUNK: usize = 1024;

impl Table {
    fn split(pgid: u64) -> Option<(usize, usize)> {
        let c = usize::try_from(pgid / CHUNK as u64).ok()?;
        Some((c, usize::try_from(pgid % CHUNK as u64).ok()?))
    }

    fn get(&self, pgid: &u64) -> Option<&Slot> {
        let (c, i) = Table::split(*pgid)?;
        self.chunks.get(c)?.as_ref()?.get(i)?.as_ref()
    }

    fn contains_key(&self, pgid: &u64) -> bool {
        self.get(pgid).is_some()
    }

    /// The chunk holding slot `c`, for writing: copied first when a
    /// [`Frozen`] view still shares it.
    fn chunk_mut(&mut self, c: usize) -> &mut Vec<Option<Slot>> {
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        let chunk = self.chunks[c]
            .get_or_insert_with(|| Arc::new(std::iter::repeat_with(|| None).take(CHUNK).collect()));
        Arc::make_mut(chunk)
    }

    fn insert(&mut self, pgid: u64, slot: Slot) -> Option<Slot> {
        let (c, i) = Table::split(pgid)?;
        let old = self.chunk_mut(c).get_mut(i)?.replace(slot);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    fn remove(&mut self, pgid: &u64) -> Option<Slot> {
        let (c, i) = Table::split(*pgid)?;
        if self.chunks.get(c)?.as_ref()?.get(i)?.is_none() {
            return None;
        }
        let old = self.chunk_mut(c).get_mut(i)?.take();
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    fn len(&self) -> usize {
        self.len
    }

    fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }

    /// Bytes the table itself takes (not the digests' heap).
    fn bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Option<Arc<Vec<Option<Slot>>>>>()
            + self.chunks.iter().flatten().count() * CHUNK * std::mem::size_of::<Option<Slot>>()
    }
}

/// A held branch page whose children are not all read yet.
#[derive(Debug, Clone)]
struct Open {
    /// The page run's bytes (its keys bound the children).
    bytes: Box<[u8]>,
    /// The page's upper bound (inherited by its last child).
    hi: Option<Box<[u8]>>,
}

/// Why a follower starts over.
#[derive(Debug)]
struct Restart(String);

/// Follows a bbolt file's writer commit by commit and holds a digest of
/// every page of the newest snapshot it has read (see the module
/// documentation). [`Follower::advance`] reads; [`Follower::layout`]
/// replays the walk once every page is held.
#[derive(Debug)]
pub struct Follower {
    reader: QuietPages,
    opts: WalkOptions,
    budget: usize,
    cur: Current,
    slots: Table,
    frontier: usize,
    heap: usize,
    /// Open branch pages, and the order to read their children in (last
    /// first; stale entries skipped).
    open: HashMap<u64, Open>,
    order: Vec<u64>,
    /// Frontier pages read on their own: the root and bucket roots, with
    /// the element that names them.
    roots: Vec<(u64, At, &'static str)>,
    /// The freelist run: page id, and its bytes once read.
    freelist: Option<(u64, Option<Vec<u8>>)>,
    /// The previous snapshot's pages the current one does not use, when
    /// the last commit was followed with every page held.
    previous: Option<Vec<u64>>,
    /// Without `previous`: the file's modification time when it was found
    /// quiet enough to read the previous tree from ([`QUIET_FOR`]).
    quiet: Option<SystemTime>,
    /// Since when every page has been held without `previous` known.
    waiting: Option<Instant>,
    struggle: Struggle,
    start: Instant,
    /// Pages read since the test hook last ran.
    hook_reads: u64,
    /// Since when the looks have found a commit half written.
    moving_since: Option<Instant>,
    /// Direct reads of pages to read next, started ahead of need.
    ahead: Option<crate::os::io::Ahead>,
    /// Bumped at every commit followed and every start: reads started
    /// ahead at an older epoch are not used.
    epoch: u64,
    /// The last batch's buffer, reused by the next.
    arena: Vec<u8>,
    /// Open pages whose children were read ahead at this epoch.
    asked_ahead: std::cell::RefCell<HashSet<u64>>,
    /// The last look found the snapshot followed, and nothing was read
    /// since: the next batch's opening look.
    looked: bool,
    /// Bytes a page run of the last batches took, on average (a page and
    /// its overflow pages): sizes the next batch ([`BATCH_BYTES`]).
    run_bytes: usize,
}

impl Follower {
    /// Open the bbolt file at `path` and start reading its current
    /// snapshot: `opts` as for [`mapwise_core::bolt::walk`], `budget` the
    /// digest bytes to hold at most.
    ///
    /// # Errors
    /// [`Error::Open`], [`Error::NotBolt`].
    pub fn open(path: &Path, opts: WalkOptions, budget: usize) -> Result<Follower, Error> {
        let reader = QuietPages::open(path)
            .map_err(|source| Error::Open { path: path.to_owned(), source })?;
        let file = BoltFile::open(&reader)
            .map_err(|reason| Error::NotBolt { path: path.to_owned(), reason })?;
        let mut snapshot = file.snapshot();
        let ps = u64::from(snapshot.page_size);
        let len = reader.len();
        // The snapshot is the one these bytes hold (a commit may land
        // between the open and this read); a few tries while one is
        // being written.
        let mut metas = MetaBytes([Vec::new(), Vec::new()]);
        for _ in 0..50 {
            if let Some(m) = read_metas(&reader, ps)
                && let Ok(f) = BoltFile::open(&MetaSource { metas: &m, ps, len })
                && f.page_size() == snapshot.page_size
            {
                snapshot = f.snapshot();
                metas = m;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let txid = snapshot.meta.txid;
        let mut f = Follower {
            reader,
            opts,
            budget,
            cur: Current { metas, snapshot, len },
            slots: Table::default(),
            frontier: 0,
            heap: 0,
            open: HashMap::new(),
            order: Vec::new(),
            roots: Vec::new(),
            freelist: None,
            previous: None,
            quiet: None,
            waiting: None,
            struggle: Struggle {
                path: path.to_owned(),
                txids: (txid, txid),
                ..Struggle::default()
            },
            start: Instant::now(),
            hook_reads: 0,
            moving_since: None,
            ahead: None,
            epoch: 0,
            asked_ahead: std::cell::RefCell::new(HashSet::new()),
            looked: false,
            run_bytes: 0,
            arena: Vec::new(),
        };
        // A page's overflow pages are read with it, ahead of need.
        let ps = f.ps();
        let extend: crate::os::io::Extend = Box::new(move |first, len| {
            mapwise_core::bolt::PageHeader::parse(first)
                .and_then(|h| (u64::from(h.overflow) + 1).checked_mul(ps))
                .and_then(|run| usize::try_from(run).ok())
                .map_or(len, |run| run.max(len))
        });
        f.ahead = crate::os::io::Ahead::new(&f.reader, extend).ok();
        f.begin();
        Ok(f)
    }

    /// The transaction id of the snapshot followed.
    #[must_use]
    pub fn txid(&self) -> u64 {
        self.cur.txid()
    }

    /// `true` once every page of the snapshot followed is held.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.frontier == 0
            && self.roots.is_empty()
            && self.freelist.as_ref().is_none_or(|(_, b)| b.is_some())
    }

    /// `true` when the pending pages of the snapshot followed can be told
    /// from the free ones: the last commit was followed with every page
    /// held, or the file is quiet enough to read the previous tree from
    /// ([`QUIET_FOR`], [`PENDING_WAIT`]; its modification time is then
    /// noted, for [`Follower::stands`]).
    fn pending_known(&mut self) -> bool {
        if self.previous.is_some() || !self.opts.previous_snapshot {
            self.waiting = None;
            return true;
        }
        let waited = self.waiting.get_or_insert_with(Instant::now).elapsed();
        let Some(mtime) = file_mtime(&self.reader) else {
            return false;
        };
        let busy = self.struggle.followed > 0 || self.struggle.restarts > 0;
        let quiet = !busy
            && (SystemTime::now().duration_since(mtime).is_ok_and(|d| d >= QUIET_FOR)
                || crate::os::residency::cachestat(
                    self.reader.file(),
                    0,
                    crate::os::residency::TO_EOF,
                )
                .is_ok_and(|c| c.dirty == 0 && c.writeback == 0));
        if quiet || waited >= PENDING_WAIT {
            self.quiet = Some(mtime);
            return true;
        }
        false
    }

    /// `true` when a layout made now still describes the snapshot
    /// followed: the pending pages came from a followed commit, or the
    /// file was not written since it was found quiet.
    #[must_use]
    pub fn stands(&self) -> bool {
        stands(self.previous.as_deref(), self.opts, self.quiet, Some(&self.reader))
    }

    /// What has been seen of the writer so far.
    #[must_use]
    pub fn struggle(&self) -> Struggle {
        let mut s = self.struggle.clone();
        s.took = self.start.elapsed();
        s
    }

    /// Pages held (read, or known to be reached and not read yet).
    #[must_use]
    pub fn held(&self) -> usize {
        self.slots.len()
    }

    /// The reader's counts.
    #[must_use]
    pub fn read_stats(&self) -> crate::os::io::ReadStats {
        self.reader.stats()
    }

    /// The snapshot's file: its page size, meta pages and length.
    fn file_of<'a, S: PageSource + ?Sized>(&self, src: &'a S) -> BoltFile<'a, S> {
        BoltFile::at(src, &self.cur.snapshot)
    }

    fn ps(&self) -> u64 {
        u64::from(self.cur.snapshot.page_size)
    }

    /// Forget every page and start reading the current snapshot afresh.
    fn begin(&mut self) {
        self.bump_epoch();
        self.looked = false;
        self.slots.clear();
        self.frontier = 0;
        self.heap = 0;
        self.open.clear();
        self.order.clear();
        self.roots.clear();
        self.previous = None;
        self.quiet = None;
        self.waiting = None;
        let meta = self.cur.snapshot.meta;
        self.freelist = meta.has_freelist().then_some((meta.freelist, None));
        let at = At::Meta(self.cur.snapshot.current);
        if self.add_frontier(meta.root, at, "root") {
            self.roots.push((meta.root, at, "root"));
        }
    }

    fn restart(&mut self, why: Restart, to: Option<Current>) {
        self.struggle.restarts += 1;
        self.struggle.last_reason = Some(why.0);
        if let Some(c) = to {
            self.struggle.txids.1 = c.txid();
            self.cur = c;
        }
        let _ = self.reader.refresh();
        self.cur.len = self.reader.len();
        self.begin();
    }

    /// After following a commit: keep the reads started ahead of pages
    /// the new snapshot still reaches and has not read (by rules 1 and 2,
    /// a page reachable in both snapshots has the same bytes in both and
    /// no commit before the next but one writes it), and forget the rest,
    /// among them pages the commit freed, which a later commit may reuse.
    fn keep_reached_ahead(&mut self) {
        let ps = self.ps();
        let slots = &self.slots;
        self.asked_ahead.get_mut().retain(|p| matches!(slots.get(p), Some(Slot::Known(_))));
        if let Some(a) = &self.ahead {
            a.retain(|offset| {
                ps > 0
                    && offset % ps == 0
                    && matches!(slots.get(&(offset / ps)), Some(Slot::Frontier))
            });
        }
    }

    fn bump_epoch(&mut self) {
        self.epoch += 1;
        self.asked_ahead.get_mut().clear();
        if let Some(a) = &self.ahead {
            a.set_epoch(self.epoch);
        }
    }

    /// Have `pgids` read ahead (those not asked for already) and wait for
    /// them, looking at the meta pages meanwhile, so a slow read (behind a
    /// writer's fsync) never keeps the follower from seeing a commit:
    /// `false` when a look found the meta pages changed (the caller then
    /// puts the batch back; the next look follows the commit).
    fn wait_ahead(&mut self, pgids: &[u64]) -> bool {
        let Some(ahead) = &self.ahead else {
            return true;
        };
        let ps = self.ps();
        let psz = usize::try_from(ps).unwrap_or(0);
        let runs: Vec<(u64, usize)> = pgids
            .iter()
            .filter_map(|p| p.checked_mul(ps))
            .filter(|o| o.saturating_add(ps) <= self.cur.len)
            .map(|o| (o, psz))
            .collect();
        // Cached pages are copied where they are needed; only those the
        // disk must give are read on the background threads.
        let runs = self.reader.uncached(&runs);
        if runs.is_empty() {
            return true;
        }
        ahead.submit_now(self.epoch, &runs);
        let offsets: Vec<u64> = runs.iter().map(|r| r.0).collect();
        loop {
            let Some(ahead) = &self.ahead else {
                return true;
            };
            if ahead.wait_ready(self.epoch, &offsets, WAIT_LOOK) {
                return true;
            }
            let same = read_metas(&self.reader, ps).is_some_and(|m| m == self.cur.metas);
            if !same {
                return false;
            }
        }
    }

    /// Start reading, ahead of need, the children of the next open branch
    /// pages (those the next batches read).
    fn read_ahead(&self) {
        let Some(ahead) = &self.ahead else { return };
        let ps = self.ps();
        let psz = usize::try_from(ps).unwrap_or(0);
        let mut runs: Vec<(u64, usize)> = Vec::new();
        let mut asked = self.asked_ahead.borrow_mut();
        for p in self.order.iter().rev().take(AHEAD_PARENTS) {
            let Some(Slot::Known(d)) = self.slots.get(p) else {
                continue;
            };
            if !self.open.contains_key(p) || !asked.insert(*p) {
                continue;
            }
            for (i, c) in d.children().iter().enumerate() {
                if d.descends(i)
                    && matches!(self.slots.get(&c.pgid), Some(Slot::Frontier))
                    && let Some(o) = c.pgid.checked_mul(ps)
                    && o.saturating_add(ps) <= self.cur.len
                {
                    runs.push((o, psz));
                }
            }
        }
        drop(asked);
        let runs = self.reader.uncached(&runs);
        if !runs.is_empty() {
            ahead.submit(self.epoch, &runs);
        }
    }

    /// Mark `pgid`, which `referrer`'s `field` names, as reached: `true`
    /// when it is new to the follower (and in the file, so worth reading).
    fn add_frontier(&mut self, pgid: u64, referrer: At, field: &'static str) -> bool {
        let src = Empty(self.cur.len);
        if self.file_of(&src).tree_page_id(pgid, referrer, field).is_err()
            || self.slots.contains_key(&pgid)
        {
            return false;
        }
        self.slots.insert(pgid, Slot::Frontier);
        self.frontier += 1;
        true
    }

    fn set(&mut self, pgid: u64, slot: Slot) {
        self.heap += slot_heap(&slot);
        if matches!(slot, Slot::Frontier) {
            self.frontier += 1;
        }
        if let Some(old) = self.slots.insert(pgid, slot) {
            self.forget_slot(&old);
        }
    }

    fn remove(&mut self, pgid: u64) -> Option<Slot> {
        let old = self.slots.remove(&pgid)?;
        self.forget_slot(&old);
        Some(old)
    }

    fn forget_slot(&mut self, old: &Slot) {
        if matches!(old, Slot::Frontier) {
            self.frontier -= 1;
        }
        self.heap = self.heap.saturating_sub(slot_heap(old));
    }

    /// Bytes held: digests and open pages.
    #[must_use]
    pub fn held_bytes(&self) -> usize {
        self.heap
            + self.slots.bytes()
            + self
                .open
                .values()
                .map(|o| o.bytes.len() + o.hi.as_ref().map_or(0, |h| h.len()) + 64)
                .sum::<usize>()
    }

    /// Look at the meta pages.
    fn look(&mut self) -> Look {
        let ps = self.ps();
        let Some(metas) = read_metas(&self.reader, ps) else {
            return Look::Moving;
        };
        if metas == self.cur.metas {
            return Look::Same;
        }
        let src = MetaSource { metas: &metas, ps, len: self.reader.len() };
        let Ok(file) = BoltFile::open(&src) else {
            return Look::Moving;
        };
        let snapshot = file.snapshot();
        let ours = self.cur.txid();
        let theirs = snapshot.meta.txid;
        if snapshot.page_size != self.cur.snapshot.page_size {
            return self.elsewhere(metas, snapshot);
        }
        if theirs == ours {
            return Look::Moving;
        }
        // The next commit leaves the meta page holding ours as it was.
        let mine = usize::from(self.cur.snapshot.current);
        if theirs == ours + 1 && metas.0[mine] == self.cur.metas.0[mine] {
            let _ = self.reader.refresh();
            return Look::Next(Current { metas, snapshot, len: self.reader.len() });
        }
        self.elsewhere(metas, snapshot)
    }

    fn elsewhere(&mut self, metas: MetaBytes, snapshot: Snapshot) -> Look {
        let _ = self.reader.refresh();
        Look::Elsewhere(Current { metas, snapshot, len: self.reader.len() })
    }

    /// Read and follow for about `slice`: follow every commit seen, read
    /// pages not held yet. Returns `true` when every page of the snapshot
    /// followed is held.
    pub fn advance(&mut self, slice: Duration) -> bool {
        let until = Instant::now() + slice;
        loop {
            // The look that closed the last batch opens this one, when
            // nothing was read since.
            let look = if std::mem::take(&mut self.looked) { Look::Same } else { self.look() };
            if !matches!(look, Look::Moving) {
                self.moving_since = None;
            }
            match look {
                Look::Same => {}
                Look::Next(next) => {
                    if let Err(why) = self.follow(next.clone()) {
                        self.restart(why, Some(next));
                    }
                    continue;
                }
                Look::Moving => {
                    let since = *self.moving_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > MOVING_LIMIT {
                        self.moving_since = None;
                        let why = "the meta pages could not be read as one snapshot for a while";
                        self.restart(Restart(why.into()), None);
                        if let Ok(f) = BoltFile::open(&self.reader) {
                            self.cur.snapshot = f.snapshot();
                            if let Some(m) = read_metas(&self.reader, self.ps()) {
                                self.cur.metas = m;
                            }
                            self.begin();
                        }
                        continue;
                    }
                    if Instant::now() >= until {
                        return false;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                Look::Elsewhere(c) => {
                    let why = format!(
                        "the file went from txid {} to {} between two looks",
                        self.cur.txid(),
                        c.txid()
                    );
                    self.restart(Restart(why), Some(c));
                    continue;
                }
            }
            if self.complete() {
                if self.pending_known() {
                    return true;
                }
                // Every page is held; the next commit tells the pending ones.
                if Instant::now() >= until {
                    return false;
                }
                std::thread::sleep(Duration::from_micros(500));
                continue;
            }
            if Instant::now() >= until {
                return false;
            }
            self.batch();
        }
    }

    /// The number of times the follower started over.
    #[must_use]
    pub fn restarts(&self) -> u32 {
        self.struggle.restarts
    }

    /// Read pages, bracketed by two looks; `None` when a commit landed
    /// (or the meta pages could not be read) meanwhile.
    fn bracketed(&mut self, pgids: &[u64], most: usize) -> Option<Batch> {
        let ahead = self.ahead.as_ref().map(|a| (a, self.epoch));
        let buf = std::mem::take(&mut self.arena);
        let batch = read_pages(&self.reader, ahead, self.ps(), self.cur.len, pgids, most, buf);
        if most < usize::MAX {
            let bytes = batch.runs.iter().map(|r| r.1.len()).sum::<usize>();
            self.struggle.largest_batch = self.struggle.largest_batch.max(bytes);
        }
        if !batch.runs.is_empty() {
            let read: usize = batch.runs.iter().map(|r| r.1.len()).sum();
            let now = read / batch.runs.len();
            self.run_bytes =
                if self.run_bytes == 0 { now } else { usize::midpoint(self.run_bytes, now) };
        }
        let ps = self.ps();
        let same = read_metas(&self.reader, ps).is_some_and(|m| m == self.cur.metas);
        self.hook_reads += pgids.len() as u64;
        if same {
            // A test's commit after the look makes it stale.
            self.looked = !testing::after_reads(&mut self.hook_reads);
            Some(batch)
        } else {
            self.recycle(batch);
            None
        }
    }

    /// Keep a batch's buffer for the next one.
    fn recycle(&mut self, batch: Batch) {
        if batch.buf.capacity() <= ARENA_MAX {
            self.arena = batch.buf;
        }
    }

    /// One batch of reads of pages not held yet.
    fn batch(&mut self) {
        if !self.roots.is_empty() {
            let take = self.roots.len().min(BATCH_RUNS);
            let items: Vec<_> = self.roots.split_off(self.roots.len() - take);
            let items: Vec<_> = items
                .into_iter()
                .filter(|(p, ..)| matches!(self.slots.get(p), Some(Slot::Frontier)))
                .collect();
            let pgids: Vec<u64> = items.iter().map(|(p, ..)| *p).collect();
            let Some(batch) = self.bracketed(&pgids, BATCH_BYTES) else {
                self.roots.extend(items);
                return;
            };
            for (pgid, at, field) in items {
                if batch.deferred(pgid.saturating_mul(self.ps())) {
                    self.roots.push((pgid, at, field));
                    continue;
                }
                self.take_page(&batch, pgid, at, field, Bound::NONE, Bound::NONE, None);
            }
            self.recycle(batch);
            return;
        }
        if let Some((pgid, None)) = self.freelist {
            let len = usize::try_from(self.ps()).unwrap_or(0);
            let run = read_run(&self.reader, pgid, self.ps(), self.cur.len, len);
            let same = read_metas(&self.reader, self.ps()).is_some_and(|m| m == self.cur.metas);
            if same {
                self.freelist = Some((pgid, Some(run.unwrap_or_default())));
            }
            return;
        }
        // Children of open branch pages, newest first.
        let mut parents: Vec<(u64, Open)> = Vec::new();
        let mut want: Vec<(u64, usize, usize)> = Vec::new(); // (child, parent index, element)
        let run = self.run_bytes.max(usize::try_from(self.ps()).unwrap_or(4096));
        let most = (BATCH_BYTES / run).clamp(8, BATCH_RUNS);
        while want.len() < most {
            let Some(p) = self.order.pop() else { break };
            let Some(open) = self.open.remove(&p) else {
                continue;
            };
            let Some(Slot::Known(d)) = self.slots.get(&p) else {
                continue;
            };
            let before = want.len();
            let mut more = false;
            for (i, c) in d.children().iter().enumerate() {
                if d.descends(i) && matches!(self.slots.get(&c.pgid), Some(Slot::Frontier)) {
                    if want.len() >= most {
                        // The rest of its children go in the next batch.
                        more = true;
                        break;
                    }
                    want.push((c.pgid, parents.len(), i));
                }
            }
            if more {
                self.order.push(p);
                self.open.insert(p, open.clone());
            }
            if want.len() > before {
                parents.push((p, open));
            }
        }
        if want.is_empty() {
            return;
        }
        let pgids: Vec<u64> = want.iter().map(|w| w.0).collect();
        self.read_ahead();
        let ready = self.wait_ahead(&pgids);
        let batch = if ready { self.bracketed(&pgids, BATCH_BYTES) } else { None };
        let Some(batch) = batch else {
            for (p, open) in parents {
                self.order.push(p);
                self.open.insert(p, open);
            }
            return;
        };
        // Parents of children the batch left for later (over its bytes).
        let mut again: Vec<usize> = Vec::new();
        for (child, pi, i) in want {
            let Some((ppgid, open)) = parents.get(pi) else {
                continue;
            };
            if batch.deferred(child.saturating_mul(self.ps())) {
                if !again.contains(&pi) {
                    again.push(pi);
                }
                continue;
            }
            let page = mapwise_core::bolt::Page::new(
                At::Page(*ppgid),
                *ppgid,
                Cow::Borrowed(&open.bytes[..]),
            );
            let Ok(page) = page else { continue };
            let (lo, hi) = child_bounds(&page, i, open.hi.as_deref());
            let referrer =
                At::Element { pgid: *ppgid, index: u32::try_from(i).unwrap_or(u32::MAX) };
            self.take_page(&batch, child, referrer, "pgid", lo, hi, hi_key(hi));
        }
        // Their children still reached and not read, read from them next.
        for pi in again {
            if let Some((p, open)) = parents.get(pi)
                && !self.open.contains_key(p)
            {
                self.open.insert(*p, open.clone());
                self.order.push(*p);
            }
        }
        self.recycle(batch);
    }

    /// Hold page `pgid` as read in `batch` (bounds `lo`, `hi`), and mark
    /// what it points to as reached.
    #[expect(clippy::too_many_arguments)]
    fn take_page(
        &mut self,
        batch: &Batch,
        pgid: u64,
        referrer: At,
        field: &'static str,
        lo: Bound<'_>,
        hi: Bound<'_>,
        hi_bytes: Option<Box<[u8]>>,
    ) {
        let slot = {
            let file = self.file_of(batch);
            match file.tree_page(pgid, referrer, field) {
                Ok(page) => {
                    let d = Digest::of(&page, lo, hi, self.opts.check_keys);
                    if d.is_branch() {
                        self.open.insert(pgid, Open { bytes: page.bytes().into(), hi: hi_bytes });
                        self.order.push(pgid);
                    }
                    Slot::Known(d)
                }
                Err(e) => Slot::Fault(Box::new(e)),
            }
        };
        if let Slot::Known(d) = &slot {
            self.reach_from(pgid, d);
        }
        self.set(pgid, slot);
    }

    /// Mark the pages `d` (page `pgid`'s digest) points to as reached.
    fn reach_from(&mut self, pgid: u64, d: &Digest) {
        for (i, c) in d.children().iter().enumerate() {
            if d.descends(i) {
                let at = At::Element { pgid, index: u32::try_from(i).unwrap_or(u32::MAX) };
                self.add_frontier(c.pgid, at, "pgid");
            }
        }
        let mut refs = Vec::new();
        d.bucket_refs(&mut refs);
        for (root, at) in refs {
            if self.add_frontier(root, at, "root") {
                self.roots.push((root, at, "root"));
            }
        }
    }

    /// Follow commit `next` (the snapshot after ours): read the pages it
    /// wrote, keep the held pages its tree still reaches, drop the rest.
    fn follow(&mut self, next: Current) -> Result<(), Restart> {
        let was_complete = self.complete();
        let old = std::mem::replace(&mut self.cur, next);
        let mut fresh: HashMap<u64, Slot> = HashMap::new();
        let mut kept: HashSet<u64> = HashSet::new();
        let mut opened: Vec<(u64, Open)> = Vec::new();
        let mut new_roots: Vec<(u64, At, &'static str)> = Vec::new();
        let ck = self.opts.check_keys;
        let meta = self.cur.snapshot.meta;
        // Pages to reach in the new tree, each with the page it took the
        // place of in the old one, when known (the old root; the old
        // child with the same key; the old bucket of the same name).
        let mut level: Vec<Reach> = vec![Reach {
            pgid: meta.root,
            referrer: At::Meta(self.cur.snapshot.current),
            field: "root",
            lo: None,
            hi: None,
            was: Some(old.snapshot.meta.root),
        }];
        // Level by level, each level's pages read in one batch.
        while !level.is_empty() {
            let mut next: Vec<Reach> = Vec::new();
            let mut to_read: Vec<Reach> = Vec::new();
            for r in std::mem::take(&mut level) {
                let pgid = r.pgid;
                if to_read.iter().any(|t| t.pgid == pgid) {
                    continue;
                }
                if fresh.contains_key(&pgid) && !kept.contains(&pgid) {
                    continue;
                }
                let lo_b = r.lo.as_deref().map_or(Bound::NONE, Bound::of);
                let hi_b = r.hi.as_deref().map_or(Bound::NONE, Bound::of);
                let want_ctx = context(lo_b.hash, hi_b.hash, ck);
                // The page it replaced, when that one was read: then this is
                // its new copy (a changed path), read now to keep what lies
                // below both.
                let was_known = r.was.and_then(|w| match self.slots.get(&w) {
                    Some(Slot::Known(d)) => Some(w).filter(|_| !d.is_branch() || d.count > 0),
                    _ => None,
                });
                match self.slots.get(&pgid) {
                    Some(Slot::Frontier | Slot::Fault(_)) => {
                        kept.insert(pgid);
                        continue;
                    }
                    Some(Slot::Known(d)) if d.context == want_ctx => {
                        kept.insert(pgid);
                        continue;
                    }
                    Some(Slot::Known(_)) => {
                        // Kept, but under new bounds: read it again (same
                        // bytes, rule 2) to check it under them.
                        kept.insert(pgid);
                    }
                    None => {
                        let src = Empty(self.cur.len);
                        if self.file_of(&src).tree_page_id(pgid, r.referrer, r.field).is_err() {
                            continue;
                        }
                        if was_known.is_none() {
                            // New to us below a page we had not read: reached,
                            // read later (the page above keeps its bounds).
                            fresh.insert(pgid, Slot::Frontier);
                            if r.field == "root" {
                                new_roots.push((pgid, r.referrer, r.field));
                            }
                            continue;
                        }
                    }
                }
                to_read.push(r);
            }
            if to_read.is_empty() {
                break;
            }
            let pgids: Vec<u64> = to_read.iter().map(|r| r.pgid).collect();
            let batch = self.bracketed(&pgids, usize::MAX).ok_or_else(|| {
                Restart("a commit landed while a commit's pages were read".into())
            })?;
            for r in to_read {
                let Reach { pgid, referrer, field, lo, hi, was } = r;
                let lo_b = lo.as_deref().map_or(Bound::NONE, Bound::of);
                let hi_b = hi.as_deref().map_or(Bound::NONE, Bound::of);
                let was_known = was.filter(|w| matches!(self.slots.get(w), Some(Slot::Known(_))));
                let file = self.file_of(&batch);
                let page = match file.tree_page(pgid, referrer, field) {
                    Ok(p) => p,
                    Err(e) => {
                        fresh.insert(pgid, Slot::Fault(Box::new(e)));
                        continue;
                    }
                };
                let d = Digest::of(&page, lo_b, hi_b, ck);
                let refreshed = kept.contains(&pgid);
                let old_d = was_known.and_then(|w| match self.slots.get(&w) {
                    Some(Slot::Known(d)) => Some(d),
                    _ => None,
                });
                if d.is_branch() {
                    let n = d.children().len();
                    for (i, c) in d.children().iter().enumerate() {
                        if !d.descends(i) {
                            continue;
                        }
                        if refreshed
                            && (i + 1 != n
                                || !matches!(self.slots.get(&c.pgid), Some(Slot::Known(_))))
                        {
                            // Only the last child inherits the new bound.
                            continue;
                        }
                        let was = old_d.and_then(|o| {
                            o.children()
                                .iter()
                                .enumerate()
                                .find(|(j, oc)| o.descends(*j) && oc.key == c.key)
                                .map(|(_, oc)| oc.pgid)
                        });
                        let (clo, chi) = child_bounds(&page, i, hi.as_deref());
                        next.push(Reach {
                            pgid: c.pgid,
                            referrer: At::Element {
                                pgid,
                                index: u32::try_from(i).unwrap_or(u32::MAX),
                            },
                            field: "pgid",
                            lo: clo.key.map(Into::into),
                            hi: hi_key(chi),
                            was,
                        });
                    }
                    opened.push((pgid, Open { bytes: page.bytes().into(), hi: hi.clone() }));
                } else {
                    let mut refs = Vec::new();
                    d.bucket_refs(&mut refs);
                    let old_buckets: Vec<(&[u8], u64)> =
                        old_d.map(|o| bucket_roots(o)).unwrap_or_default();
                    for (root, at) in refs {
                        let name = bucket_name(&d, at);
                        let was =
                            old_buckets.iter().find(|(n, _)| Some(*n) == name).map(|(_, r)| *r);
                        next.push(Reach {
                            pgid: root,
                            referrer: at,
                            field: "root",
                            lo: None,
                            hi: None,
                            was,
                        });
                    }
                }
                fresh.insert(pgid, Slot::Known(d));
            }
            self.recycle(batch);
            level = next;
        }
        // Drop what the new tree no longer reaches: walk the old tree from
        // its root, through pages not kept.
        let mut freed: Vec<u64> = Vec::new();
        let mut down = vec![old.snapshot.meta.root];
        let mut seen: HashSet<u64> = HashSet::new();
        while let Some(p) = down.pop() {
            if kept.contains(&p) || !seen.insert(p) {
                continue;
            }
            let Some(slot) = self.remove(p) else { continue };
            self.open.remove(&p);
            freed.push(p);
            if let Slot::Known(d) = &slot {
                down.extend(d.edges());
            }
        }
        if let Some((fl, _)) = self.freelist.take() {
            freed.push(fl);
        }
        for (pgid, slot) in fresh {
            if let Slot::Known(d) = &slot {
                let d = d.clone();
                self.set(pgid, slot);
                self.reach_from(pgid, &d);
            } else {
                self.set(pgid, slot);
            }
        }
        for (p, o) in opened {
            self.open.insert(p, o);
            self.order.push(p);
        }
        for (root, at, field) in new_roots {
            if matches!(self.slots.get(&root), Some(Slot::Frontier)) {
                self.roots.push((root, at, field));
            }
        }
        if meta.has_freelist() {
            self.freelist = Some((meta.freelist, None));
        }
        self.previous = was_complete.then_some(freed);
        self.quiet = None;
        self.keep_reached_ahead();
        self.struggle.followed += 1;
        self.struggle.txids.1 = self.cur.txid();
        if self.held_bytes() > self.budget {
            return Err(Restart(format!(
                "holding the tree needs more than {} MiB",
                self.budget >> 20
            )));
        }
        Ok(())
    }

    /// The walk of the snapshot followed, replayed from the held digests
    /// (reading only pages of the previous snapshot, which tell pending
    /// pages from free ones, when the last commit was not followed whole),
    /// handed to `read` with the file it describes. Pages not held show as
    /// `unknown`, and are listed in [`BoltLayout::missing`]: a layout of a
    /// snapshot every page of which is held ([`Follower::complete`]) has
    /// none.
    pub fn layout<T>(&self, read: impl FnOnce(&BoltFile<'_, Held<'_>>, BoltLayout) -> T) -> T {
        self.freeze().layout(read)
    }

    /// What the follower holds now, to replay the walk from (on another
    /// thread, while the follower goes on): the held pages are shared
    /// until the follower changes them.
    #[must_use]
    pub fn freeze(&self) -> Frozen {
        Frozen {
            reader: self.reader.try_clone().ok(),
            opts: self.opts,
            cur: self.cur.clone(),
            slots: self.slots.clone(),
            freelist: self.freelist.clone(),
            previous: self.previous.clone(),
            quiet: self.quiet,
            taken: Instant::now(),
        }
    }
}

/// A [`Follower`]'s held pages at one moment ([`Follower::freeze`]).
#[derive(Debug)]
pub struct Frozen {
    /// For the pages the follower does not hold (the previous snapshot's);
    /// `None` when the file could not be opened again.
    reader: Option<QuietPages>,
    opts: WalkOptions,
    cur: Current,
    slots: Table,
    freelist: Option<(u64, Option<Vec<u8>>)>,
    previous: Option<Vec<u64>>,
    quiet: Option<SystemTime>,
    taken: Instant,
}

impl Frozen {
    /// When it was taken: what it holds was of the file on disk then.
    #[must_use]
    pub fn taken(&self) -> Instant {
        self.taken
    }

    /// The file's metadata now (`None` when it cannot be had).
    #[must_use]
    pub fn metadata(&self) -> Option<std::fs::Metadata> {
        self.reader.as_ref()?.file().metadata().ok()
    }

    /// `true` when the file is read with `O_DIRECT` where not cached.
    #[must_use]
    pub fn is_direct(&self) -> bool {
        self.reader.as_ref().is_some_and(QuietPages::is_direct)
    }

    /// The transaction id of the snapshot held.
    #[must_use]
    pub fn txid(&self) -> u64 {
        self.cur.txid()
    }

    /// `true` when a layout made now describes the snapshot held (see
    /// [`Follower::stands`]).
    #[must_use]
    pub fn stands(&self) -> bool {
        stands(self.previous.as_deref(), self.opts, self.quiet, self.reader.as_ref())
    }

    /// `true` when every page of the snapshot is held.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.slots
            .chunks
            .iter()
            .flatten()
            .all(|c| c.iter().all(|s| !matches!(s, Some(Slot::Frontier))))
            && self.freelist.as_ref().is_none_or(|(_, b)| b.is_some())
    }

    fn ps(&self) -> u64 {
        u64::from(self.cur.snapshot.page_size)
    }

    fn file_of<'a, S: PageSource + ?Sized>(&self, src: &'a S) -> BoltFile<'a, S> {
        BoltFile::at(src, &self.cur.snapshot)
    }

    /// The walk of the snapshot, replayed from the held digests (reading
    /// only pages of the previous snapshot, which tell pending pages from
    /// free ones, when the last commit was not followed with every page
    /// held), handed to `read` with the file it describes. Pages not held
    /// show as `unknown`, and are listed in [`BoltLayout::missing`].
    pub fn layout<T>(&self, read: impl FnOnce(&BoltFile<'_, Held<'_>>, BoltLayout) -> T) -> T {
        let held = Held { f: self };
        let file = self.file_of(&held);
        let walked =
            mapwise_core::bolt::walk_with(&file, &held, self.opts, self.previous.as_deref());
        // Pages not held are not of this snapshot for sure: no verdicts.
        let walked = if self.complete() { walked } else { walked.unsure() };
        read(&file, walked)
    }
}

/// The file's modification time.
fn file_mtime(reader: &QuietPages) -> Option<SystemTime> {
    reader.file().metadata().ok()?.modified().ok()
}

/// Whether a layout with these pending pages (`previous`), or read from a
/// file found quiet at modification time `quiet`, describes its snapshot.
fn stands(
    previous: Option<&[u64]>,
    opts: WalkOptions,
    quiet: Option<SystemTime>,
    reader: Option<&QuietPages>,
) -> bool {
    previous.is_some()
        || !opts.previous_snapshot
        || quiet.is_some_and(|m| reader.and_then(file_mtime) == Some(m))
}

/// A page [`Follower::follow`] reaches in the new tree.
struct Reach {
    pgid: u64,
    referrer: At,
    field: &'static str,
    lo: Option<Box<[u8]>>,
    hi: Option<Box<[u8]>>,
    /// The page of the old tree it took the place of, when known.
    was: Option<u64>,
}

/// The page-backed sub-buckets a leaf digest names: name and root.
fn bucket_roots(d: &Digest) -> Vec<(&[u8], u64)> {
    d.rare()
        .iter()
        .filter_map(|(_, r)| match r {
            mapwise_core::bolt::Rare::Bucket(b) if b.header.root != 0 && b.inline.is_none() => {
                Some((&b.key[..], b.header.root))
            }
            _ => None,
        })
        .collect()
}

/// The name of the sub-bucket entry of `d` at `at`.
fn bucket_name(d: &Digest, at: At) -> Option<&[u8]> {
    d.rare().iter().find_map(|(_, r)| match r {
        mapwise_core::bolt::Rare::Bucket(b) if b.at == at => Some(&b.key[..]),
        _ => None,
    })
}

/// The bounds of child `i` of branch `page`: its own key, and the next
/// element's key (none when that element cannot be read), or `hi` for the
/// last child.
fn child_bounds<'a>(
    page: &'a mapwise_core::bolt::Page<'_>,
    i: usize,
    hi: Option<&'a [u8]>,
) -> (Bound<'a>, Bound<'a>) {
    let key = |i: usize| -> Option<&'a [u8]> {
        let e = page.branch(i).ok()?;
        page.bytes().get(e.key)
    };
    let lo = match key(i) {
        Some(k) => Bound::of(k),
        None => Bound::NONE,
    };
    let next = if i + 1 < page.count() {
        match key(i + 1) {
            Some(k) => Bound::of(k),
            None => Bound::NONE,
        }
    } else {
        hi.map_or(Bound::NONE, Bound::of)
    };
    (lo, next)
}

fn hi_key(b: Bound<'_>) -> Option<Box<[u8]>> {
    b.key.filter(|_| b.hash != mapwise_core::bolt::NO_BOUND).map(Into::into)
}

fn slot_heap(s: &Slot) -> usize {
    match s {
        Slot::Known(d) => d.heap_bytes(),
        Slot::Fault(_) => 128,
        Slot::Frontier => 0,
    }
}

/// Both meta pages' first [`META_END`] bytes (what the file holds of
/// them: none past its end); `None` when a read failed.
fn read_metas(reader: &QuietPages, ps: u64) -> Option<MetaBytes> {
    let len = reader.len();
    let want =
        |at: u64| (at, usize::try_from(len.saturating_sub(at).min(META_END as u64)).unwrap_or(0));
    let runs = [want(0), want(ps)];
    let mut out = [Vec::new(), Vec::new()];
    let asked: Vec<(u64, usize)> = runs.iter().copied().filter(|r| r.1 > 0).collect();
    let mut got = reader.read_runs(&asked).into_iter();
    for (i, r) in runs.iter().enumerate() {
        if r.1 > 0 {
            out[i] = got.next()?.ok()?;
        }
    }
    Some(MetaBytes(out))
}

/// Page runs read for a batch: each page's first page, then the whole
/// run of those with `overflow > 0`, by file offset, in one buffer.
#[derive(Debug, Default)]
struct Batch {
    /// The bytes read.
    buf: Vec<u8>,
    /// Offset of each run and where its bytes are in `buf`, by offset.
    runs: Vec<(u64, std::ops::Range<usize>)>,
    /// Offsets of runs left unread to keep the batch within its bytes, by
    /// offset: their pages are read by a later batch.
    later: Vec<u64>,
    len: u64,
}

impl Batch {
    /// `true` when the run at `offset` was left for a later batch.
    fn deferred(&self, offset: u64) -> bool {
        self.later.binary_search(&offset).is_ok()
    }
}

impl PageSource for Batch {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        let run =
            self.runs.binary_search_by_key(&offset, |r| r.0).ok().and_then(|i| self.runs.get(i));
        match run.and_then(|(_, r)| self.buf.get(r.start..r.end)) {
            Some(b) if b.len() >= len => Ok(Cow::Borrowed(&b[..len])),
            _ => Err(mapwise_core::Error::Read { offset, len: len as u64, code: libc::EIO }),
        }
    }
}

/// Read pages `pgids` (page size `ps`, file length `len`) for a batch,
/// into `buf` (reused): every first page, then whole runs while they come
/// to at most `most` bytes (one at least); the runs left out are
/// [`Batch::deferred`], so that a batch of long runs still ends long
/// before the next commit.
fn read_pages(
    reader: &QuietPages,
    ahead: Option<(&crate::os::io::Ahead, u64)>,
    ps: u64,
    len: u64,
    pgids: &[u64],
    most: usize,
    mut buf: Vec<u8>,
) -> Batch {
    let psz = usize::try_from(ps).unwrap_or(0);
    let mut firsts: Vec<(u64, usize)> = pgids
        .iter()
        .filter_map(|p| p.checked_mul(ps))
        .filter(|o| o.saturating_add(ps) <= len)
        .map(|o| (o, psz))
        .collect();
    firsts.sort_unstable_by_key(|r| r.0);
    firsts.dedup_by_key(|r| r.0);
    let mut runs: Vec<(u64, std::ops::Range<usize>)> = Vec::with_capacity(firsts.len());
    let mut longer: Vec<(u64, usize)> = Vec::new();
    for ((offset, _), r) in firsts.iter().zip(reader.read_into(&firsts, ahead, &mut buf)) {
        let Ok(r) = r else { continue };
        if let Some(h) = buf.get(r.clone()).and_then(mapwise_core::bolt::PageHeader::parse)
            && h.overflow > 0
        {
            let run = (u64::from(h.overflow) + 1).saturating_mul(ps);
            if offset.saturating_add(run) <= len
                && let Ok(run) = usize::try_from(run)
            {
                longer.push((*offset, run));
            }
        }
        runs.push((*offset, r));
    }
    // The longer runs (by offset) that fit in `most` with the first pages,
    // one at least; the rest are left for a later batch.
    let mut bytes = runs.iter().map(|r| r.1.len()).sum::<usize>();
    let fit = longer
        .iter()
        .position(|&(_, run)| {
            bytes = bytes.saturating_add(run.saturating_sub(psz));
            bytes > most
        })
        .map_or(longer.len(), |i| i.max(1));
    let later: Vec<u64> = longer.split_off(fit).into_iter().map(|r| r.0).collect();
    runs.retain(|r| later.binary_search(&r.0).is_err());
    if !longer.is_empty() {
        // Whole runs of the pages with overflow, after the first pages.
        let from = runs.iter().map(|r| r.1.end).max().unwrap_or(0);
        let got = reader.read_into_from(&longer, ahead, &mut buf, from);
        for ((offset, _), r) in longer.iter().zip(got) {
            if let Ok(r) = r
                && let Ok(i) = runs.binary_search_by_key(offset, |r| r.0)
            {
                runs[i].1 = r;
            }
        }
    }
    Batch { buf, runs, later, len }
}

/// The freelist run at `pgid`, read as [`read_pages`] reads a page.
fn read_run(reader: &QuietPages, pgid: u64, ps: u64, len: u64, _first: usize) -> Option<Vec<u8>> {
    let b = read_pages(reader, None, ps, len, &[pgid], usize::MAX, Vec::new());
    let (_, r) = b.runs.first()?;
    b.buf.get(r.clone()).map(<[u8]>::to_vec)
}

/// A source of nothing but a length (for the checks of page ids).
struct Empty(u64);

impl PageSource for Empty {
    fn len(&self) -> u64 {
        self.0
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        Err(mapwise_core::Error::Read { offset, len: len as u64, code: libc::EIO })
    }
}

/// The meta pages as a look read them, for opening them.
struct MetaSource<'a> {
    metas: &'a MetaBytes,
    ps: u64,
    len: u64,
}

impl PageSource for MetaSource<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        let b: &[u8] = if offset == 0 {
            &self.metas.0[0]
        } else if offset == self.ps {
            &self.metas.0[1]
        } else {
            &[]
        };
        match b.get(..len) {
            Some(s) if !s.is_empty() || len == 0 => Ok(Cow::Borrowed(s)),
            _ => Err(mapwise_core::Error::Read { offset, len: len as u64, code: libc::EIO }),
        }
    }
}

/// The file as a [`Follower`] holds it: the snapshot's meta pages, its
/// freelist run, the tree pages' digests (and their headers, for the
/// pages table); anything else is read from the file as it is now (only
/// the previous snapshot's pages, and pages no snapshot uses, are asked
/// for).
#[derive(Debug)]
pub struct Held<'a> {
    f: &'a Frozen,
}

impl PageSource for Held<'_> {
    fn len(&self) -> u64 {
        self.f.cur.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        let ps = self.f.ps();
        let metas = &self.f.cur.metas.0;
        if (offset == 0 || offset == ps) && len <= META_END {
            let m = &metas[usize::from(offset == ps)];
            if let Some(b) = m.get(..len) {
                return Ok(Cow::Borrowed(b));
            }
        }
        if let Some((fl, Some(bytes))) = &self.f.freelist
            && fl.checked_mul(ps) == Some(offset)
            && let Some(b) = bytes.get(..len)
        {
            return Ok(Cow::Borrowed(b));
        }
        if len == mapwise_core::bolt::PAGE_HEADER_SIZE
            && offset.is_multiple_of(ps)
            && let Some(Slot::Known(d)) = self.f.slots.get(&(offset / ps))
        {
            let h = d.header(offset / ps);
            let mut b = Vec::with_capacity(len);
            b.extend_from_slice(&h.id.to_le_bytes());
            b.extend_from_slice(&h.flags.to_le_bytes());
            b.extend_from_slice(&h.count.to_le_bytes());
            b.extend_from_slice(&h.overflow.to_le_bytes());
            return Ok(Cow::Owned(b));
        }
        match &self.f.reader {
            Some(r) => r.read(offset, len).map(Cow::Owned),
            None => Err(mapwise_core::Error::Read { offset, len: len as u64, code: libc::EBADF }),
        }
    }
}

impl<'s> TreePages<'s> for Held<'_> {
    fn fetch(
        &self,
        pgid: u64,
        referrer: At,
        field: &'static str,
        lo: Bound<'_>,
        hi: Bound<'_>,
        check_keys: bool,
    ) -> Fetched<'_, 's> {
        if let Err(e) = self.f.file_of(&Empty(self.f.cur.len)).tree_page_id(pgid, referrer, field) {
            return Fetched::Fault(e);
        }
        match self.f.slots.get(&pgid) {
            Some(Slot::Known(d)) if d.context == context(lo.hash, hi.hash, check_keys) => {
                Fetched::Page(Cow::Borrowed(d), None)
            }
            Some(Slot::Fault(e)) => Fetched::Fault((**e).clone()),
            _ => Fetched::Missing,
        }
    }

    fn pages_hint(&self) -> usize {
        self.f.slots.len()
    }
}

/// Walk the bbolt file at `path` ([`mapwise_core::bolt::walk`] with
/// `opts`) while a writer may be committing, and hand `read` the file and
/// the walk's layout: a [`Follower`] reads until it holds every page of
/// one snapshot (see the module documentation). `budget` bounds the bytes
/// it holds ([`CARRY_BUDGET`], [`LIVE_CARRY_BUDGET`]).
///
/// When the follower starts over more than [`MAX_RESTARTS`] times and for
/// at least [`TRY_FOR`], the result is not settled: `read` gets the incomplete walk of the last
/// snapshot (pages not read are `unknown`).
///
/// # Errors
/// [`Error::Open`] when the file cannot be opened or stat'ed;
/// [`Error::NotBolt`] when neither meta page validates.
pub fn read_bolt_walked<T>(
    path: &Path,
    opts: WalkOptions,
    budget: usize,
    mut read: impl FnMut(&BoltFile<'_, Held<'_>>, BoltLayout) -> T,
) -> Result<Settled<T>, Error> {
    let mut f = Follower::open(path, opts, budget)?;
    loop {
        let done = f.advance(Duration::from_millis(100));
        if done {
            let settled =
                f.layout(|file, walked| (walked.missing_count == 0).then(|| read(file, walked)));
            if !f.stands() {
                let why = "the file was written while the previous snapshot's pages were read";
                f.restart(Restart(why.into()), None);
                continue;
            }
            if let Some(value) = settled {
                return Ok(Settled {
                    value,
                    attempts: f.restarts() + 1,
                    settled: true,
                    struggle: f.struggle(),
                });
            }
            f.restart(Restart("a page was held under other bounds than the walk's".into()), None);
        }
        if f.restarts() > MAX_RESTARTS && f.start.elapsed() >= TRY_FOR {
            let value = f.layout(&mut read);
            return Ok(Settled {
                value,
                attempts: f.restarts() + 1,
                settled: false,
                struggle: f.struggle(),
            });
        }
    }
}

/// A hook for tests: commits landed at chosen moments of a follow.
#[doc(hidden)]
pub mod testing {
    use std::cell::RefCell;

    type Hook = (u64, Box<dyn FnMut()>);

    thread_local! {
        static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// On this thread, call `f` each time a [`super::Follower`] has read
    /// `every` more pages, right after a batch was found whole (a writer
    /// committing between two batches, as a real one does).
    pub fn after_every(every: u64, f: impl FnMut() + 'static) {
        HOOK.with(|h| *h.borrow_mut() = Some((every.max(1), Box::new(f))));
    }

    /// Remove the hook.
    pub fn clear() {
        HOOK.with(|h| *h.borrow_mut() = None);
    }

    /// Run the hook when it is due; `true` when it ran.
    pub(super) fn after_reads(reads: &mut u64) -> bool {
        HOOK.with(|h| {
            let mut h = h.borrow_mut();
            if let Some((every, f)) = h.as_mut()
                && *reads >= *every
            {
                *reads = 0;
                f();
                return true;
            }
            false
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held page costs its digest and nothing more: the slot's variants
    /// and the table's empty slots fit in the digest's spare values.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_held_page_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Option<Slot>>(), 32);
    }

    #[test]
    fn message_names_the_file_and_what_to_do() {
        let s = Struggle {
            path: PathBuf::from("/x/db"),
            txids: (10, 60),
            followed: 40,
            restarts: 9,
            last_reason: Some("a commit landed while a commit's pages were read".into()),
            took: Duration::from_secs(2),
            largest_batch: 0,
        };
        let m = unsettled_message(&s, 1);
        assert!(m.starts_with("/x/db: no read was of one snapshot"), "{m}");
        assert!(m.contains("50 commits in 2.0 s (one every 40 ms)"), "{m}");
        assert!(m.contains("started over 9 times, last because a commit landed"), "{m}");
        assert!(m.contains("1 problem seen may be transient"), "{m}");
        assert!(m.contains("etcdctl snapshot save"), "{m}");
        let e = Settled { value: 7u64, attempts: 5, settled: false, struggle: s.clone() }
            .or_unsettled(|v| *v)
            .unwrap_err();
        assert_eq!(e.to_string(), unsettled_message(&s, 7));
    }
}
