//! A whole bbolt snapshot held in memory, read quietly from a file a
//! writer commits to: for reports that need every page's bytes (keys and
//! values, not only the structure), as `inspector etcd` does.
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
//! [`read_frozen`] follows the writer snapshot by snapshot. Each round
//! takes the newest snapshot `s` and walks its tree from the root: a page
//! held from snapshot `s - 1` or `s` is taken from memory (rule 2), any
//! other is read from the file ([`QuietPages`]: copied out of the page
//! cache when cached, else `O_DIRECT`; neither changes the cache), in
//! batches, each followed by a look at the meta pages; a batch is kept
//! only when the look still finds `s` (rule 1). When a look finds a newer
//! snapshot the round ends and the next starts from it, keeping what it
//! held (a commit changes a handful of pages, so the next round reads
//! only those). A round that reaches every page of its snapshot gives a
//! [`Frozen`] copy of it, which the caller reads at leisure: nothing it
//! holds can change under it. No lock is taken and nothing is written.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;
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

/// Pages of the largest batch.
pub const MAX_BATCH: usize = 16 * BATCH;

/// How long [`read_frozen`] follows a writer before it gives up.
pub const TRY_FOR: Duration = Duration::from_secs(60);

/// `ENODATA`: what a [`Frozen`] says of bytes it does not hold.
const ENODATA: i32 = 61;

/// One snapshot of a bbolt file, every page its tree reaches held in
/// memory (with both meta pages as they were when it was taken).
#[derive(Debug)]
pub struct Frozen {
    snap: Snapshot,
    len: u64,
    page_size: u64,
    metas: Vec<u8>,
    /// Page runs by first page id.
    runs: BTreeMap<u64, Shared>,
}

/// A page run's bytes: a range of the buffer one batch of reads filled
/// (shared by the batch's runs: one allocation, no copy per page).
#[derive(Debug, Clone)]
struct Shared {
    buf: Rc<Vec<u8>>,
    at: std::ops::Range<usize>,
}

impl Shared {
    fn bytes(&self) -> &[u8] {
        self.buf.get(self.at.clone()).unwrap_or_default()
    }
}

impl Frozen {
    /// The snapshot held.
    #[must_use]
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// The file opened at the snapshot held.
    #[must_use]
    pub fn file(&self) -> BoltFile<'_, Frozen> {
        BoltFile::at(self, &self.snap)
    }
}

impl PageSource for Frozen {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        let missing = || mapwise_core::Error::Read { offset, len: len as u64, code: ENODATA };
        let at = usize::try_from(offset).map_err(|_| missing())?;
        if let Some(b) = at.checked_add(len).and_then(|end| self.metas.get(at..end)) {
            return Ok(Cow::Borrowed(b));
        }
        let pgid = offset / self.page_size;
        let (&head, bytes) = self.runs.range(..=pgid).next_back().ok_or_else(missing)?;
        let start = usize::try_from(offset - head * self.page_size).map_err(|_| missing())?;
        start
            .checked_add(len)
            .and_then(|stop| bytes.bytes().get(start..stop))
            .map(Cow::Borrowed)
            .ok_or_else(missing)
    }
}

/// A page held: its run's bytes, the pages it points to (branch children,
/// roots of sub-buckets), and the newest snapshot known to use it.
#[derive(Debug)]
struct Held {
    bytes: Shared,
    children: Vec<u64>,
    used_at: u64,
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

/// Why [`read_frozen`] has no snapshot to give.
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

/// The page ids the page run `bytes` points to, read by core's page
/// parser: a branch page's children, a leaf page's page-backed sub-bucket
/// roots. Elements core refuses are skipped (the caller's checked reads of
/// the copy report them).
fn children(bytes: &[u8]) -> Vec<u64> {
    let at = At::Offset(0);
    let Ok(page) = Page::new(at, 0, Cow::Borrowed(bytes)) else { return Vec::new() };
    let n = page.count();
    match page.header.page_type() {
        PageType::Branch => (0..n).filter_map(|i| page.branch_child(i)).collect(),
        PageType::Leaf => (0..n)
            .filter_map(|i| page.leaf(i).ok())
            .filter(LeafElement::is_bucket)
            .filter_map(|e| BucketHeader::parse(page.bytes().get(e.value)?, at).ok())
            .map(|h| h.root)
            .filter(|&root| root != 0)
            .collect(),
        _ => Vec::new(),
    }
}

/// The current snapshot of `probe`'s file, read past its chunk cache.
fn look(probe: &QuietSource) -> Result<Snapshot, mapwise_core::Error> {
    probe.forget();
    BoltFile::open(probe).map(|f| f.snapshot())
}

/// Follow the bbolt file at `path` until one snapshot is held whole (see
/// the module documentation), or for at most `try_for`.
///
/// # Errors
/// [`Error::Open`], [`Error::NotBolt`] (on the first look), or
/// [`Error::Unsettled`].
pub fn read_frozen(path: &Path, try_for: Duration) -> Result<Frozen, Error> {
    let start = Instant::now();
    let mut held: HashMap<u64, Held> = HashMap::new();
    let mut seen = Seen::default();
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
        let pages = QuietPages::open(path).map_err(|e| Error::Open(path.to_owned(), e))?;
        if let Some(frozen) = round(&probe, &pages, &snap, &mut held, &mut seen) {
            return Ok(frozen);
        }
        if start.elapsed() >= try_for {
            return Err(Error::Unsettled(path.to_owned(), seen));
        }
    }
}

/// The page runs at `ids` read from the file now: each first page, then
/// the rest of the runs whose headers say they are longer. Through
/// [`QuietPages`]: a page the cache holds is copied out of it (no disk
/// read, no read-ahead, page ages unchanged), the others are read with
/// `O_DIRECT`, those close together in one read. A page that cannot be
/// read is left out.
fn fetch_many(pages: &QuietPages, ids: &[u64], ps: u64, hwm: u64) -> Vec<(u64, Shared)> {
    let page = usize::try_from(ps).unwrap_or(0);
    let runs: Vec<(u64, usize)> = ids.iter().map(|&p| (p * ps, page)).collect();
    let mut out = Vec::with_capacity(ids.len());
    let mut longer = Vec::new();
    for (&p, first) in ids.iter().zip(read_shared(pages, &runs)) {
        let Some(first) = first else { continue };
        match PageHeader::parse(first.bytes()).map_or(0, |h| h.overflow) {
            0 => out.push((p, first)),
            overflow => longer.push((p, (u64::from(overflow) + 1).min(hwm - p))),
        }
    }
    let runs: Vec<(u64, usize)> = longer
        .iter()
        .map(|&(p, n)| (p * ps, usize::try_from(n * ps).unwrap_or(usize::MAX)))
        .collect();
    if !runs.is_empty() {
        let read = longer.iter().zip(read_shared(pages, &runs));
        out.extend(read.filter_map(|(&(p, _), run)| Some((p, run?))));
    }
    out
}

/// `runs` read into one buffer, kept as it is: each run a range of it
/// (`None` for a run that could not be read).
fn read_shared(pages: &QuietPages, runs: &[(u64, usize)]) -> Vec<Option<Shared>> {
    let mut buf = Vec::new();
    let at = pages.read_into(runs, None, &mut buf);
    let buf = Rc::new(buf);
    at.into_iter()
        .map(|r| {
            let r = r.ok().filter(|r| buf.get(r.clone()).is_some())?;
            Some(Shared { buf: Rc::clone(&buf), at: r })
        })
        .collect()
}

/// One round at snapshot `snap`: `Some` when every page it reaches is
/// held (a page that cannot be read is left out, for the caller's reads
/// to name), `None` only when the writer moved on first (or grew the
/// file since `probe` opened it).
fn round(
    probe: &QuietSource,
    pages: &QuietPages,
    snap: &Snapshot,
    held: &mut HashMap<u64, Held>,
    seen: &mut Seen,
) -> Option<Frozen> {
    let txid = snap.meta.txid;
    let ps = u64::from(snap.page_size);
    let hwm = snap.meta.hwm;
    // A file grown after the probe opened it (its length is fixed at
    // open): try again with a fresh one. One shorter than its snapshot
    // and still so is truncated: its missing pages are the caller's to
    // report.
    if hwm.saturating_mul(ps) > probe.len()
        && probe.file().metadata().map(|m| m.len()).ok() != Some(probe.len())
    {
        return None;
    }
    // Both meta pages as they are (short only in a damaged file, whose
    // faults the caller's reads name).
    let want = usize::try_from(ps.saturating_mul(2).min(probe.len())).unwrap_or(0);
    let metas = probe.read_fresh(0, want).unwrap_or_default();
    let mut stack = vec![snap.meta.root];
    if snap.meta.has_freelist() {
        stack.push(snap.meta.freelist);
    }
    let mut reached: Vec<u64> = Vec::new();
    let mut batch = BATCH;
    loop {
        let mut misses = Vec::new();
        while let Some(p) = stack.pop() {
            if p < 2 || p >= hwm {
                continue;
            }
            match held.get_mut(&p) {
                // Rule 2: used by `s - 1` and reached by `s`: the same page.
                Some(h) if h.used_at + 1 >= txid && h.used_at <= txid => {
                    if h.used_at != txid {
                        h.used_at = txid;
                        stack.extend_from_slice(&h.children);
                    }
                    reached.push(p);
                }
                _ => {
                    if misses.len() < batch {
                        misses.push(p);
                    } else {
                        stack.push(p);
                        break;
                    }
                }
            }
        }
        if misses.is_empty() && stack.is_empty() {
            break;
        }
        // Read the batch, then look: kept only if `s` still stands.
        // A page that cannot be read is left out: if the look below finds
        // the snapshot standing, the fault is the file's, and the caller's
        // checked reads of the copy name it.
        let fetched = fetch_many(pages, &misses, ps, hwm);
        seen.pages_read += fetched.len() as u64;
        if look(probe).ok().as_ref() != Some(snap) {
            return None;
        }
        batch = (batch * 2).min(MAX_BATCH);
        for (p, run) in fetched {
            let kids = children(run.bytes());
            stack.extend_from_slice(&kids);
            held.insert(p, Held { bytes: run, children: kids, used_at: txid });
            reached.push(p);
        }
    }
    // Every page `s` reaches is held: drop the rest, freeze a copy.
    held.retain(|_, h| h.used_at == txid);
    let runs = reached.iter().filter_map(|p| held.get(p).map(|h| (*p, h.bytes.clone())));
    Some(Frozen { snap: *snap, len: probe.len(), page_size: ps, metas, runs: runs.collect() })
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
        assert_eq!(children(&b), vec![7, 9]);
        let mut l = vec![0u8; 4096];
        l[8..10].copy_from_slice(&LEAF_PAGE.to_le_bytes());
        l[10..12].copy_from_slice(&1u16.to_le_bytes());
        l[16..20].copy_from_slice(&BUCKET_LEAF_FLAG.to_le_bytes());
        l[20..24].copy_from_slice(&16u32.to_le_bytes()); // pos from the element
        l[24..28].copy_from_slice(&3u32.to_le_bytes()); // ksize
        l[28..32].copy_from_slice(&16u32.to_le_bytes()); // vsize: a bucket header
        let v = 16 + 16 + 3;
        l[v..v + 8].copy_from_slice(&42u64.to_le_bytes());
        assert_eq!(children(&l), vec![42]);
        assert!(children(&[1, 2, 3]).is_empty());
    }
}
