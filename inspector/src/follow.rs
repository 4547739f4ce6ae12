//! Every page run of one bbolt snapshot, each read once and handed to the
//! caller's digest as it arrives, from a file a writer commits to: for
//! reports that need every page's bytes (keys and values, not only the
//! structure), as `inspector etcd` does. Only what the digest keeps of a
//! run stays in memory, never the run's bytes.
//!
//! It rests on the two rules of bbolt's writer the settling reader
//! ([`mapwise_native::observe::settle`]) states: (1) a page the newest
//! snapshot `s` uses is not written before commit `s + 2` begins, after
//! meta `s + 1` is on disk; (2) a page that snapshots `s` and `s + 1`
//! both use has the same bytes in both. And on bbolt's copy-on-write:
//! a commit writes every page it changes, and each of its ancestors, to a
//! new page id, so a page id that both snapshots reach heads the same
//! subtree in both.
//!
//! [`follow`] follows the writer snapshot by snapshot. Each round takes
//! the newest snapshot `s` and walks its tree from the root: a run
//! digested in snapshot `s - 1` or `s` is taken as it was (rule 2), any
//! other is read from the file ([`QuietPages`]: copied out of the page
//! cache when cached, else `O_DIRECT`; neither changes the cache), in
//! batches, each followed by a look at the meta pages; a batch is
//! digested only when the look still finds `s` (rule 1). When a look
//! finds a newer snapshot the round ends and the next starts from it,
//! keeping what it digested (a commit changes a handful of pages, so the
//! next round reads only those). A round that reaches every run of its
//! snapshot gives its [`Tree`]. No lock is taken and nothing is written.
//!
//! [`tree_of`] makes the same walk over a file that holds still (an open
//! [`BoltFile`] of one snapshot), so both give the digest the same runs.

use foldhash::{HashMap, HashMapExt as _, HashSet, HashSetExt as _};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::time::{Duration, Instant};

use mapwise_core::PageSource;
use mapwise_core::bolt::{
    BoltFile, BucketHeader, LeafElement, Page, PageHeader, PageType, Snapshot,
};
use mapwise_core::error::At;
use mapwise_native::os::io::{QuietPages, QuietSource};

/// Pages read from the file between two looks at the meta pages, at
/// first: each batch that the writer let stand doubles the next, up to
/// [`MAX_BATCH`] (a quiet file is read in few round trips, one in a
/// hurry in small batches, each at little risk of a commit landing
/// during it).
pub const BATCH: usize = 1024;

/// Pages of the largest batch. Larger batches read a cold file no faster,
/// and each of the few batches in flight holds a buffer whose pages are
/// faulted in at first use: on a 1 GiB etcd db, warm, 64 MiB batches
/// took 0.55 s to follow and 16 MiB batches 0.48 s, with 270 MB and
/// 140 MB peak RSS.
pub const MAX_BATCH: usize = 4 * BATCH;

/// How long [`follow`] follows a writer before it gives up.
pub const TRY_FOR: Duration = Duration::from_secs(60);

/// The tree a page run belongs to, as the walk reached it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'a> {
    /// The freelist page (meta `freelist`).
    Freelist,
    /// A page of the top-level bucket so named: its own tree and those of
    /// buckets nested in it. The root bucket's pages, whose leaves hold
    /// the top-level buckets, have the empty name.
    Bucket(&'a [u8]),
}

/// One page run of a [`Tree`]: what the digest made of it, and where it
/// leads.
#[derive(Debug)]
pub struct Node<T> {
    /// The digest's answer for the run.
    pub digest: T,
    /// Pages after the first (its header's `overflow`).
    pub overflow: u32,
    /// The runs it points to, in key order: a branch page's children, a
    /// leaf page's page-backed bucket roots.
    pub children: Vec<u64>,
}

/// Every page run one snapshot reaches, each digested once.
#[derive(Debug)]
pub struct Tree<T> {
    /// The snapshot walked.
    pub snapshot: Snapshot,
    nodes: HashMap<u64, Node<T>>,
    /// Faults of the structure met on the walk: a reference outside
    /// `[2, high-water mark)`, a run reached twice, a run that could not
    /// be read. Faults inside a run are the digest's to find.
    pub problems: Vec<mapwise_core::Error>,
}

impl<T> Tree<T> {
    /// The run starting at `pgid`, if the snapshot reaches it.
    #[must_use]
    pub fn node(&self, pgid: u64) -> Option<&Node<T>> {
        self.nodes.get(&pgid)
    }

    /// Every run reached, by first page id (in no order).
    pub fn nodes(&self) -> impl Iterator<Item = (u64, &Node<T>)> {
        self.nodes.iter().map(|(&p, n)| (p, n))
    }

    /// The runs of the tree under `root` (one bucket's, nested buckets
    /// not entered), depth first: its leaves come in key order. A run met
    /// twice is given once.
    #[must_use]
    pub fn in_order(&self, root: u64, is_leaf: impl Fn(&T) -> bool) -> Vec<u64> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![root];
        while let Some(p) = stack.pop() {
            let Some(n) = self.nodes.get(&p) else { continue };
            if !seen.insert(p) {
                continue;
            }
            out.push(p);
            if !is_leaf(&n.digest) {
                stack.extend(n.children.iter().rev());
            }
        }
        out
    }
}

/// What a follow saw of the writer, for the message when it gives up.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// Rounds (snapshots tried).
    pub rounds: u32,
    /// Transaction ids of the first and the last snapshot tried.
    pub txids: (u64, u64),
    /// Pages read from the file.
    pub pages_read: u64,
}

/// Why [`follow`] has no snapshot to give.
#[derive(Debug)]
pub enum Error {
    /// The file cannot be opened or read.
    Open(PathBuf, std::io::Error),
    /// It does not open as bbolt (neither meta page validates).
    NotBolt(PathBuf, mapwise_core::Error),
    /// A writer committed faster than the reads could follow for
    /// [`TRY_FOR`].
    Unsettled(PathBuf, Seen),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Open(p, e) => write!(f, "cannot open {}: {e}", p.display()),
            Error::NotBolt(p, e) => {
                write!(f, "{}: cannot open as a bbolt database: {e}", p.display())
            }
            Error::Unsettled(p, s) => write!(
                f,
                "{}: no read was of one snapshot: a writer committed from txid {} to {} over {} \
                 tries ({} pages read), faster than this reader can follow. {}",
                p.display(),
                s.txids.0,
                s.txids.1,
                s.rounds,
                s.pages_read,
                mapwise_native::observe::settle::READ_A_COPY
            ),
        }
    }
}

impl std::error::Error for Error {}

/// The runs the page run `bytes` points to, read by core's page parser:
/// a branch page's children; a leaf page's page-backed sub-buckets, each
/// with its name. Elements core refuses are skipped (the digest, reading
/// the same run, names them).
fn children(bytes: &[u8]) -> Vec<(u64, Option<&[u8]>)> {
    let at = At::Offset(0);
    let Ok(page) = Page::new(at, 0, Cow::Borrowed(bytes)) else { return Vec::new() };
    let n = page.count();
    match page.header.page_type() {
        PageType::Branch => (0..n).filter_map(|i| Some((page.branch_child(i)?, None))).collect(),
        PageType::Leaf => (0..n)
            .filter_map(|i| page.leaf(i).ok())
            .filter(LeafElement::is_bucket)
            .filter_map(|e| {
                let h = BucketHeader::parse(bytes.get(e.value)?, at).ok()?;
                Some((h.root, Some(bytes.get(e.key)?)))
            })
            .filter(|&(root, _)| root != 0)
            .collect(),
        _ => Vec::new(),
    }
}

/// `ENODATA`: the code of a run a read did not bring.
const ENODATA: i32 = 61;

/// The tree a run belongs to, kept for its children: `None` for the
/// freelist, else the top-level bucket's name.
type Tag = Option<Arc<[u8]>>;

/// A run read: what it points to, the tree of each child, and the newest
/// snapshot known to use it.
struct Held {
    overflow: u32,
    children: Vec<u64>,
    tag: Tag,
    child_tags: Vec<Tag>,
    used_at: u64,
}

/// Runs of a batch that stood, for the digest: page id, tree, bytes.
type Batch = Vec<(u64, Tag, Shared)>;

/// What a round that reached every run of its snapshot leaves: the
/// snapshot, each run's overflow and children, and the problems met.
struct Skeleton {
    snapshot: Snapshot,
    nodes: HashMap<u64, (u32, Vec<u64>)>,
    problems: Vec<mapwise_core::Error>,
}

impl Skeleton {
    /// The tree, each run with its digest (every run kept went to the
    /// digest, in the batch that kept it).
    fn with<T>(self, mut digests: HashMap<u64, T>) -> Tree<T> {
        let nodes = self
            .nodes
            .into_iter()
            .filter_map(|(p, (overflow, children))| {
                Some((p, Node { digest: digests.remove(&p)?, overflow, children }))
            })
            .collect();
        Tree { snapshot: self.snapshot, nodes, problems: self.problems }
    }
}

/// The tree of a run's child: a bucket root named in a leaf of the root
/// bucket starts its own; any other child stays in its parent's.
fn child_tag(parent: &Tag, name: Option<&[u8]>) -> Tag {
    match (parent, name) {
        (Some(t), Some(name)) if t.is_empty() => Some(Arc::from(name)),
        _ => parent.clone(),
    }
}

/// Runs to reach, taken level by level and, within a level, in file
/// order: the bulk of a tree, its leaves, is read as one sweep from the
/// start of the file to the end (runs close together in one read)
/// rather than in key order, all over the file.
#[derive(Default)]
struct Todo {
    /// By depth, page id and a count (a page met twice is queued twice):
    /// its tree and what points to it.
    runs: std::collections::BTreeMap<(u32, u64, u64), (Tag, At)>,
    count: u64,
}

impl Todo {
    fn push(&mut self, depth: u32, pgid: u64, tag: Tag, from: At) {
        self.count += 1;
        self.runs.insert((depth, pgid, self.count), (tag, from));
    }

    fn pop(&mut self) -> Option<(u32, u64, Tag, At)> {
        self.runs.pop_first().map(|((d, p, _), (t, f))| (d, p, t, f))
    }
}

/// Where a walk reads runs from, and whether its snapshot still stands.
trait Reads {
    /// Start reading the runs starting at `ids` (ascending), as the file
    /// holds them now: each whole, as its header says, cut at the
    /// high-water mark.
    fn start(&mut self, ids: Vec<u64>);
    /// The runs the oldest [`Reads::start`] asked for.
    fn wait(&mut self) -> Vec<(u64, Result<Shared, mapwise_core::Error>)>;
    /// Whether the snapshot walked still stands (no commit since).
    fn stands(&mut self) -> bool;
}

/// A run's bytes: a range of the buffer one batch of reads filled.
struct Shared {
    buf: Arc<Vec<u8>>,
    at: std::ops::Range<usize>,
}

impl Shared {
    fn bytes(&self) -> &[u8] {
        self.buf.get(self.at.clone()).unwrap_or_default()
    }
}

/// A live file: reads on a thread of their own ([`Fetcher`]), so the
/// next batch is read while the last is kept, and a look at the meta
/// pages after each batch.
struct Live<'a> {
    probe: &'a QuietSource,
    ask: mpsc::Sender<(Vec<u64>, Vec<Batch>)>,
    got: Receiver<Vec<(u64, Result<Shared, mapwise_core::Error>)>>,
    snap: &'a Snapshot,
    /// Batches the digest is done with, for their buffers.
    back: &'a Receiver<Batch>,
}

impl Reads for Live<'_> {
    fn start(&mut self, ids: Vec<u64>) {
        // The fetcher has gone only if it panicked: `wait` says so.
        let _ = self.ask.send((ids, self.back.try_iter().collect()));
    }

    fn wait(&mut self) -> Vec<(u64, Result<Shared, mapwise_core::Error>)> {
        self.got.recv().unwrap_or_default()
    }

    fn stands(&mut self) -> bool {
        look(self.probe).ok().as_ref() == Some(self.snap)
    }
}

/// The reads of one round of [`follow`]: quiet reads of the runs asked
/// for, in the order asked, each batch into buffers of batches given back.
struct Fetcher {
    pages: QuietPages,
    page_size: u64,
    hwm: u64,
    /// Buffers of earlier batches' cached runs, no longer shared, for the
    /// next: a fresh one costs a fault per page it fills.
    spare: Vec<Vec<u8>>,
}

/// Buffers of cached runs a [`Fetcher`] keeps, at most: a batch's first
/// pages, its longer runs, and those of the batch read ahead.
const SPARE_ARENAS: usize = 8;

/// Buffers smaller than this go back to the direct reads, not the arenas.
const ARENA_MIN: usize = 2 << 20;

impl Fetcher {
    /// Answer each request on `ask` (runs to read, batches to take the
    /// buffers of) on `got`, until either side goes.
    fn serve(
        mut self,
        ask: &Receiver<(Vec<u64>, Vec<Batch>)>,
        got: &mpsc::Sender<Vec<(u64, Result<Shared, mapwise_core::Error>)>>,
    ) {
        for (ids, done) in ask {
            self.recycle(done);
            if got.send(self.fetch(&ids)).is_err() {
                break;
            }
        }
    }

    /// Take back the buffers of batches the digest is done with: the
    /// largest (a batch's cached runs') for the next batch, the others for
    /// the direct reads.
    fn recycle(&mut self, done: Vec<Batch>) {
        let mut bufs: Vec<Arc<Vec<u8>>> = Vec::new();
        for (_, _, s) in done.into_iter().flatten() {
            if !bufs.last().is_some_and(|b| Arc::ptr_eq(b, &s.buf)) {
                bufs.push(s.buf);
            }
        }
        let mut bufs: Vec<Vec<u8>> =
            bufs.into_iter().filter_map(|b| Arc::try_unwrap(b).ok()).collect();
        bufs.sort_by_key(|b| std::cmp::Reverse(b.len()));
        let arenas = bufs
            .iter()
            .take_while(|b| Vec::len(b) >= ARENA_MIN)
            .count()
            .min(SPARE_ARENAS.saturating_sub(self.spare.len()));
        self.spare.extend(bufs.drain(..arenas));
        self.pages.recycle(bufs);
    }

    /// `runs` read as [`QuietPages::read_parts`] leaves them (the cached
    /// ones in the spare buffer), each a range of one of its buffers, with
    /// the end of what its buffer holds of the file contiguously.
    fn read_shared(
        &mut self,
        runs: &[(u64, usize)],
    ) -> Vec<Result<(Shared, usize), mapwise_core::Error>> {
        // The smallest spare that holds the runs, else the largest (to be
        // replaced by a larger one).
        let need: usize = runs.iter().map(|r| r.1).sum();
        let pick = (0..self.spare.len())
            .filter(|&i| self.spare[i].len() >= need)
            .min_by_key(|&i| self.spare[i].len())
            .or_else(|| (0..self.spare.len()).max_by_key(|&i| self.spare[i].len()));
        let arena = pick.map(|i| self.spare.swap_remove(i)).unwrap_or_default();
        let parts = self.pages.read_parts(runs, arena);
        let bufs: Vec<Arc<Vec<u8>>> = parts.bufs.into_iter().map(Arc::new).collect();
        let shared = |(b, at): (usize, std::ops::Range<usize>)| {
            let buf = Arc::clone(bufs.get(b)?);
            let end = parts.windows.get(b).map_or(0, |w| w.end);
            Some((Shared { buf, at }, end))
        };
        let gone = |r: &(u64, usize)| mapwise_core::Error::Read {
            offset: r.0,
            len: r.1 as u64,
            code: ENODATA,
        };
        parts.at.into_iter().zip(runs).map(|(a, r)| shared(a?).ok_or_else(|| gone(r))).collect()
    }

    /// The runs starting at `ids`: each first page, then the rest of the
    /// runs whose headers say they are longer, taken from the read that
    /// brought the first page when it spans them, else read again.
    fn fetch(&mut self, ids: &[u64]) -> Vec<(u64, Result<Shared, mapwise_core::Error>)> {
        use PageType::{Branch, Freelist, Leaf};
        let (ps, hwm) = (self.page_size, self.hwm);
        let page = usize::try_from(ps).unwrap_or(0);
        let runs: Vec<(u64, usize)> = ids.iter().map(|&p| (p * ps, page)).collect();
        let mut out = Vec::with_capacity(ids.len());
        let mut longer = Vec::new();
        let firsts = self.read_shared(&runs);
        for (k, (&p, first)) in ids.iter().zip(firsts).enumerate() {
            let (first, end) = match first {
                Ok(f) => f,
                Err(e) => {
                    out.push((p, Err(e)));
                    continue;
                }
            };
            // Only a page that is what it claims to be gets its overflow
            // pages read: the overflow of a page of random bytes would read
            // up to the rest of the file for each such page. The digest
            // names the damaged page.
            let overflow = PageHeader::parse(first.bytes())
                .filter(|h| h.id == p && matches!(h.page_type(), Branch | Leaf | Freelist))
                .map_or(0, |h| h.overflow);
            if overflow == 0 {
                out.push((p, Ok(first)));
                continue;
            }
            // A run ends before the next run asked for begins (runs of a
            // file are disjoint), and at the high-water mark: the bytes a
            // batch reads stay within the file's, whatever its headers say.
            let next = ids.get(k + 1).copied().unwrap_or(hwm).min(hwm).max(p + 1);
            let n = (u64::from(overflow) + 1).min(next - p);
            let len = usize::try_from(n * ps).unwrap_or(usize::MAX);
            // Read with its neighbours already: the whole run is there.
            let whole = first.at.start.saturating_add(len);
            if whole <= end {
                out.push((p, Ok(Shared { at: first.at.start..whole, buf: first.buf })));
            } else {
                longer.push((p, n));
            }
        }
        if !longer.is_empty() {
            let runs: Vec<(u64, usize)> = longer
                .iter()
                .map(|&(p, n)| (p * ps, usize::try_from(n * ps).unwrap_or(usize::MAX)))
                .collect();
            let read = self.read_shared(&runs).into_iter().map(|r| r.map(|(s, _)| s));
            out.extend(longer.iter().map(|l| l.0).zip(read));
        }
        out
    }
}

/// A file that holds still, read through its [`BoltFile`].
struct Still<'f, 's, S: PageSource + ?Sized>(
    &'f BoltFile<'s, S>,
    std::collections::VecDeque<Vec<u64>>,
);

impl<S: PageSource + ?Sized> Reads for Still<'_, '_, S> {
    fn start(&mut self, ids: Vec<u64>) {
        self.1.push_back(ids);
    }

    fn wait(&mut self) -> Vec<(u64, Result<Shared, mapwise_core::Error>)> {
        let ids = self.1.pop_front().unwrap_or_default();
        ids.iter()
            .map(|&p| {
                let run = self.0.read_page(p).map(|page| {
                    let bytes = page.bytes().to_vec();
                    Shared { at: 0..bytes.len(), buf: Arc::new(bytes) }
                });
                (p, run)
            })
            .collect()
    }

    fn stands(&mut self) -> bool {
        true
    }
}

/// The current snapshot of `probe`'s file, read past its chunk cache.
fn look(probe: &QuietSource) -> Result<Snapshot, mapwise_core::Error> {
    probe.forget();
    BoltFile::open(probe).map(|f| f.snapshot())
}

/// Follow the bbolt file at `path` until every run of one snapshot has
/// been digested (see the module documentation), or for at most
/// `try_for`. `digest` is called once for each run read, with its first
/// page id, its tree and its bytes (cut at the high-water mark); a run
/// digested in a round that a commit ended may be digested again.
/// Three threads share the work: the caller's digests each batch; a
/// walker looks at the meta pages and queues each batch's children; a
/// fetcher reads the next batch meanwhile. At most one
/// batch waits for the digest and one is read ahead.
///
/// # Errors
/// [`Error::Open`], [`Error::NotBolt`] (on the first look), or
/// [`Error::Unsettled`].
pub fn follow<T>(
    path: &Path,
    try_for: Duration,
    mut digest: impl FnMut(u64, Owner<'_>, &[u8]) -> T,
) -> Result<Tree<T>, Error> {
    // One batch read ahead of the one being digested, at most.
    let (batches, ready) = mpsc::sync_channel::<Batch>(1);
    let (done, back) = mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("inspector-follow".into())
            .spawn_scoped(scope, move || walk_live(path, try_for, &batches, &back))
            .map_err(|e| Error::Open(path.to_owned(), e))?;
        let mut digests = HashMap::new();
        for batch in ready {
            for (p, tag, run) in &batch {
                let owner = tag.as_deref().map_or(Owner::Freelist, Owner::Bucket);
                digests.insert(*p, digest(*p, owner, run.bytes()));
            }
            // The reader may be done: nothing to give back then.
            let _ = done.send(batch);
        }
        let skeleton = reader.join().unwrap_or_else(|e| std::panic::resume_unwind(e))?;
        Ok(skeleton.with(digests))
    })
}

/// [`follow`]'s reading side: rounds until one reaches every run of its
/// snapshot, each batch that stands sent to `batches`.
fn walk_live(
    path: &Path,
    try_for: Duration,
    batches: &SyncSender<Batch>,
    back: &Receiver<Batch>,
) -> Result<Skeleton, Error> {
    let start = Instant::now();
    let mut held: HashMap<u64, Held> = HashMap::new();
    let mut seen = Seen::default();
    let mut sink = |b: Batch| {
        // The digest side has gone only if it panicked: stop reading.
        let _ = batches.send(b);
    };
    loop {
        let probe = QuietSource::open(path).map_err(|e| Error::Open(path.to_owned(), e))?;
        let snap = match look(&probe) {
            Ok(s) => s,
            Err(e) if seen.rounds == 0 => return Err(Error::NotBolt(path.to_owned(), e)),
            // A meta page torn by a write in progress: look again.
            Err(_) if start.elapsed() < try_for => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(_) => return Err(Error::Unsettled(path.to_owned(), seen)),
        };
        let txid = snap.meta.txid;
        seen.rounds += 1;
        if seen.rounds == 1 {
            seen.txids.0 = txid;
        }
        seen.txids.1 = txid;
        let ps = u64::from(snap.page_size);
        // A file grown after the probe opened it (its length is fixed at
        // open): try again with a fresh one. One shorter than its
        // snapshot and still so is truncated: its missing runs are
        // problems of the tree.
        let grown = snap.meta.hwm.saturating_mul(ps) > probe.len()
            && probe.file().metadata().map(|m| m.len()).ok() != Some(probe.len());
        if !grown {
            let pages = QuietPages::open(path).map_err(|e| Error::Open(path.to_owned(), e))?;
            let fetcher = Fetcher { pages, page_size: ps, hwm: snap.meta.hwm, spare: Vec::new() };
            let done = std::thread::scope(|scope| {
                let (ask, asked) = mpsc::channel();
                let (answer, got) = mpsc::channel();
                std::thread::Builder::new()
                    .name("inspector-fetch".into())
                    .spawn_scoped(scope, move || fetcher.serve(&asked, &answer))
                    .map_err(|e| Error::Open(path.to_owned(), e))?;
                let mut live = Live { probe: &probe, ask, got, snap: &snap, back };
                Ok(round(&mut live, &snap, &mut held, &mut seen, &mut sink))
                // `live` dropped here: the fetcher's requests end, and it.
            })?;
            if let Some(skeleton) = done {
                return Ok(skeleton);
            }
        }
        if start.elapsed() >= try_for {
            return Err(Error::Unsettled(path.to_owned(), seen));
        }
    }
}

/// [`follow`]'s walk over `file`, which holds still (one snapshot, read
/// through its source): the same runs, given to `digest` the same way.
pub fn tree_of<S: PageSource + ?Sized, T>(
    file: &BoltFile<'_, S>,
    mut digest: impl FnMut(u64, Owner<'_>, &[u8]) -> T,
) -> Tree<T> {
    let snap = file.snapshot();
    let mut held = HashMap::new();
    let mut seen = Seen::default();
    let mut digests = HashMap::new();
    let mut sink = |batch: Batch| {
        for (p, tag, run) in &batch {
            let owner = tag.as_deref().map_or(Owner::Freelist, Owner::Bucket);
            digests.insert(*p, digest(*p, owner, run.bytes()));
        }
    };
    // A file that holds still always stands: the round ends.
    let skeleton =
        round(&mut Still(file, Default::default()), &snap, &mut held, &mut seen, &mut sink)
            .unwrap_or(Skeleton { snapshot: snap, nodes: HashMap::new(), problems: Vec::new() });
    skeleton.with(digests)
}

/// A walk's state in one round.
struct Walk<'h> {
    txid: u64,
    held: &'h mut HashMap<u64, Held>,
    todo: Todo,
    reached: HashSet<u64>,
    problems: Vec<mapwise_core::Error>,
}

impl Walk<'_> {
    /// Keep the batch `fetched` (read for the runs `tags` names): queue
    /// what each run points to, and give the runs to the digest (`sink`).
    /// A run that could not be read is a problem.
    fn keep(
        &mut self,
        fetched: Vec<(u64, Result<Shared, mapwise_core::Error>)>,
        tags: &mut HashMap<u64, (Tag, u32)>,
        sink: &mut impl FnMut(Batch),
    ) {
        let mut batch = Vec::with_capacity(fetched.len());
        for (p, shared) in fetched {
            let (tag, depth) = tags.remove(&p).unwrap_or((None, 0));
            let shared = match shared {
                Ok(r) => r,
                Err(e) => {
                    self.problems.push(e);
                    continue;
                }
            };
            let run = shared.bytes();
            let kids = if tag.is_some() { children(run) } else { Vec::new() };
            let overflow = PageHeader::parse(run).map_or(0, |h| h.overflow);
            let child_tags: Vec<Tag> = kids.iter().map(|&(_, n)| child_tag(&tag, n)).collect();
            let children: Vec<u64> = kids.iter().map(|k| k.0).collect();
            for (&c, t) in children.iter().zip(&child_tags) {
                self.todo.push(depth + 1, c, t.clone(), At::Page(p));
            }
            let held =
                Held { overflow, children, tag: tag.clone(), child_tags, used_at: self.txid };
            self.held.insert(p, held);
            batch.push((p, tag, shared));
        }
        sink(batch);
    }

    /// Take queued runs: those held from this snapshot or the one before
    /// are reached as they are; up to `batch` others are returned, each
    /// with its tree, to be read.
    fn take(&mut self, batch: usize, hwm: u64) -> HashMap<u64, (Tag, u32)> {
        let mut misses: HashMap<u64, (Tag, u32)> = HashMap::new();
        while let Some((depth, p, tag, from)) = self.todo.pop() {
            if p < 2 || p >= hwm {
                self.problems.push(mapwise_core::Error::Invalid {
                    at: from,
                    field: "pgid",
                    value: p,
                    expected: "a page id in [2, high-water mark)",
                });
                continue;
            }
            if self.reached.contains(&p) {
                self.problems.push(mapwise_core::Error::Reused {
                    at: from,
                    field: "pgid",
                    pgid: p,
                });
                continue;
            }
            match self.held.get_mut(&p) {
                // Rule 2: used by `s - 1` and reached by `s`: the same run.
                Some(h) if h.used_at + 1 >= self.txid && h.used_at <= self.txid && h.tag == tag => {
                    h.used_at = self.txid;
                    for (&c, t) in h.children.iter().zip(&h.child_tags) {
                        self.todo.push(depth + 1, c, t.clone(), At::Page(p));
                    }
                }
                _ if misses.len() >= batch => {
                    self.todo.push(depth, p, tag, from);
                    break;
                }
                _ => {
                    misses.insert(p, (tag, depth));
                }
            }
            self.reached.insert(p);
        }
        misses
    }
}

/// One round at snapshot `snap`: `Some` when every run it reaches is
/// digested, `None` when the writer moved on first.
fn round(
    reads: &mut impl Reads,
    snap: &Snapshot,
    held: &mut HashMap<u64, Held>,
    seen: &mut Seen,
    sink: &mut impl FnMut(Batch),
) -> Option<Skeleton> {
    let txid = snap.meta.txid;
    let meta = At::Meta(snap.current);
    let mut todo = Todo::default();
    todo.push(0, snap.meta.root, Some(Arc::from(&[][..])), meta);
    if snap.meta.has_freelist() {
        todo.push(0, snap.meta.freelist, None, meta);
    }
    let mut walk = Walk { txid, held, todo, reached: HashSet::new(), problems: Vec::new() };
    let mut batch = BATCH;
    // The batch being read: the runs asked for, each with its tree.
    let mut reading: Option<HashMap<u64, (Tag, u32)>> = None;
    let ids = |tags: &HashMap<u64, (Tag, u32)>| {
        let mut ids: Vec<u64> = tags.keys().copied().collect();
        ids.sort_unstable();
        ids
    };
    loop {
        if reading.is_none() {
            let tags = walk.take(batch, snap.meta.hwm);
            if tags.is_empty() {
                // Nothing left to read, nothing queued: every run reached.
                break;
            }
            reads.start(ids(&tags));
            reading = Some(tags);
        }
        let Some(mut tags) = reading.take() else { break };
        // Read the batch, then look: kept only if `s` still stands.
        let fetched = reads.wait();
        seen.pages_read += fetched.len() as u64;
        if !reads.stands() {
            return None;
        }
        batch = (batch * 2).min(MAX_BATCH);
        // The next batch is read while this one is kept: the runs queued
        // now (a level's later runs; the children this batch adds are a
        // level down, read after).
        let next = walk.take(batch, snap.meta.hwm);
        if !next.is_empty() {
            reads.start(ids(&next));
            reading = Some(next);
        }
        walk.keep(fetched, &mut tags, sink);
    }
    // Every run `s` reaches is digested: drop the rest.
    let Walk { held, problems, .. } = walk;
    held.retain(|_, h| h.used_at == txid);
    let nodes = std::mem::take(held).into_iter().map(|(p, h)| (p, (h.overflow, h.children)));
    Some(Skeleton { snapshot: *snap, nodes: nodes.collect(), problems })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapwise_core::bolt::{BRANCH_PAGE, BUCKET_LEAF_FLAG, LEAF_PAGE};

    #[test]
    fn children_of_branch_and_leaf_pages() {
        let mut b = vec![0u8; 4096];
        b[8..10].copy_from_slice(&BRANCH_PAGE.to_le_bytes());
        b[10..12].copy_from_slice(&2u16.to_le_bytes());
        b[16 + 8..16 + 16].copy_from_slice(&7u64.to_le_bytes());
        b[32 + 8..32 + 16].copy_from_slice(&9u64.to_le_bytes());
        assert_eq!(children(&b), vec![(7, None), (9, None)]);
        let mut l = vec![0u8; 4096];
        l[8..10].copy_from_slice(&LEAF_PAGE.to_le_bytes());
        l[10..12].copy_from_slice(&1u16.to_le_bytes());
        l[16..20].copy_from_slice(&BUCKET_LEAF_FLAG.to_le_bytes());
        l[20..24].copy_from_slice(&16u32.to_le_bytes()); // pos from the element
        l[24..28].copy_from_slice(&3u32.to_le_bytes()); // ksize
        l[28..32].copy_from_slice(&16u32.to_le_bytes()); // vsize: a bucket header
        l[32..35].copy_from_slice(b"abc");
        let v = 16 + 16 + 3;
        l[v..v + 8].copy_from_slice(&42u64.to_le_bytes());
        assert_eq!(children(&l), vec![(42, Some(&b"abc"[..]))]);
        assert!(children(&[1, 2, 3]).is_empty());
    }
}
