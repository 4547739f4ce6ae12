//! Which changesets `hg log` hides: the repository view hg calls
//! `visible`.
//!
//! Facts from Mercurial 6.3: `mercurial/repoview.py` (`hideablerevs`,
//! `pinnedrevs`, `_revealancestors`, `computehidden`),
//! `mercurial/obsolete.py` (`getrevs`, `_computeobsoleteset`,
//! `obsstore.__nonzero__`), `mercurial/phases.py` (`_readroots`,
//! `mutablephases`, `localhiddenphases`), `mercurial/bookmarks.py`
//! (`bmstore.__init__`, `bookmarksvfs`), `mercurial/tags.py`
//! (`readlocaltags`, `_readtaghist`), `mercurial/mergestate.py`
//! (`_readrecordsv1`, `_readrecordsv2`, `_read`, `active`, `unresolved`),
//! `mercurial/dirstatemap.py` (`parents`) and
//! `mercurial/dirstateutils/docket.py` (the v2 header). The rules:
//!
//! * a changeset's phase is the highest phase of the `phaseroots` entries
//!   among its ancestors and itself (public when none); *mutable* means
//!   not public;
//! * *hideable*: mutable and either the predecessor of some obsolescence
//!   marker (rewritten or pruned) or in phase archived/internal;
//! * *pinned* (never hidden): the working directory's parents, bookmarked
//!   changesets, local tags, and, during a merge with unresolved files,
//!   its local and other sides;
//! * hidden = hideable − pinned, minus every ancestor of a mutable
//!   changeset that is not hidden (an obsolete changeset with a live
//!   descendant stays; so do the ancestors of a pinned one).
//!
//! Cost: nothing beyond `phaseroots` and a `stat` of the obsstore when
//! nothing can be hidden (no marker and no archived/internal root, or no
//! mutable changeset). Otherwise the obsstore is read whole (as hg reads
//! it) and the changelog index from the tip down to the oldest phase root
//! (public changesets below it cannot be hidden), one entry each:
//! memory is one byte-sized record per revision of that range plus the
//! obsstore and its predecessor set.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use mapwise_core::PageSource;
use mapwise_core::revlog::obsstore::{self, phase};
use mapwise_core::revlog::{Index, NULL_NODE, NULL_REV, Node, Rev};

use super::{Error, Repo};

/// Largest obsstore read (bytes). hg reads the file whole; a larger one
/// is refused with [`Error::TooLarge`] rather than exhausting memory.
pub const MAX_OBSSTORE: u64 = 1 << 30;
/// Largest `phaseroots`, `bookmarks`, `localtags` or merge state read
/// (bytes).
pub const MAX_SMALL_FILE: u64 = 64 << 20;

/// The hidden changesets of a repository (hg's `visible` filter).
#[derive(Debug, Clone, Default)]
pub struct Hidden {
    revs: HashSet<Rev>,
}

impl Hidden {
    /// `true` when `rev` is hidden.
    #[must_use]
    pub fn contains(&self, rev: Rev) -> bool {
        self.revs.contains(&rev)
    }

    /// How many changesets are hidden.
    #[must_use]
    pub fn len(&self) -> usize {
        self.revs.len()
    }

    /// `true` when nothing is hidden.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.revs.is_empty()
    }

    /// The hidden revisions, ascending.
    #[must_use]
    pub fn sorted(&self) -> Vec<Rev> {
        let mut v: Vec<Rev> = self.revs.iter().copied().collect();
        v.sort_unstable();
        v
    }
}

/// Read a whole regular file of at most `limit` bytes; `None` when it
/// does not exist. FIFOs and devices are refused (they could block).
fn read_file(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, Error> {
    let io = |source| Error::Io { path: path.to_owned(), source };
    let f = match crate::os::io::open_regular(path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let size = f.metadata().map_err(io)?.len();
    if size > limit {
        return Err(Error::TooLarge { path: path.to_owned(), size, limit });
    }
    let mut v = Vec::new();
    v.try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
        .map_err(|_| io(std::io::ErrorKind::OutOfMemory.into()))?;
    // `take`: a file growing under us is read up to the limit only.
    f.take(limit).read_to_end(&mut v).map_err(io)?;
    Ok(Some(v))
}

fn format_error(path: &Path, source: mapwise_core::Error) -> Error {
    Error::Format { path: path.to_owned(), source }
}

/// A 40-digit hex node.
fn unhex(s: &[u8]) -> Option<Node> {
    if s.len() != 40 {
        return None;
    }
    let mut n = [0u8; 20];
    for (i, p) in s.chunks_exact(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        n[i] = u8::try_from(d(p[0])? * 16 + d(p[1])?).ok()?;
    }
    Some(n)
}

/// `"<hex node> <name>"` lines (bookmarks, localtags): the node of each
/// name, the last line of a name winning; lines hg would warn about and
/// skip are skipped.
fn node_lines(text: &[u8]) -> HashMap<Vec<u8>, Node> {
    let mut out = HashMap::new();
    for line in text.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        let Some(sp) = line.iter().position(|&b| b == b' ') else {
            continue;
        };
        if let Some(n) = unhex(&line[..sp]) {
            out.insert(line[sp + 1..].trim_ascii().to_vec(), n);
        }
    }
    out
}

/// The working directory's parents from `.hg/dirstate`: the first 40
/// bytes (p1, p2) of a v1 dirstate; after the 12-byte marker
/// `dirstate-v2\n`, two 32-byte fields whose first 20 bytes are the
/// nodes, for a v2 docket. A missing or empty file means no parents.
///
/// # Errors
/// [`Error::Dirstate`] for a file too short to hold them (hg: "working
/// directory state appears damaged!").
pub fn dirstate_parents(dot_hg: &Path, v2: bool) -> Result<[Node; 2], Error> {
    let path = dot_hg.join("dirstate");
    let io = |source| Error::Io { path: path.clone(), source };
    let f = match crate::os::io::open_regular(&path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok([NULL_NODE; 2]),
        Err(e) => return Err(io(e)),
    };
    let mut head = Vec::with_capacity(76);
    f.take(76).read_to_end(&mut head).map_err(io)?;
    if head.is_empty() {
        return Ok([NULL_NODE; 2]);
    }
    const MARKER: &[u8] = b"dirstate-v2\n";
    let (p1, p2) = if head.starts_with(MARKER) {
        (MARKER.len(), MARKER.len() + 32)
    } else if v2 {
        return Err(Error::Dirstate { path });
    } else {
        (0, 20)
    };
    match (head.get(p1..p1 + 20), head.get(p2..p2 + 20)) {
        (Some(a), Some(b)) => {
            let mut out = [NULL_NODE; 2];
            out[0].copy_from_slice(a);
            out[1].copy_from_slice(b);
            Ok(out)
        }
        _ => Err(Error::Dirstate { path }),
    }
}

/// The local and other nodes of a merge in progress with unresolved
/// files (`.hg/merge/state2`, records `[type u8][length u32][data]`, a
/// `t` record wrapping another; or the v1 `.hg/merge/state`: the local
/// node on the first line, file records after it, the other side being
/// the working directory's last parent). Empty when no merge is in
/// progress or every file is resolved.
///
/// Simplification: when both files exist hg cross-checks them and may
/// prefer v1; this reads v2 when present.
fn merge_pins(dot_hg: &Path, wdir: &[Node; 2]) -> Result<Vec<Node>, Error> {
    let mut local = None;
    let mut other = None;
    // file name → state (`u`, `r`, `pu`, `pr`, ...), the last record wins.
    let mut state: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut record = |rtype: u8, data: &[u8]| match rtype {
        b'L' => local = unhex(data).or(Some(NULL_NODE)),
        b'O' => other = unhex(data),
        b'F' | b'C' | b'P' | b'D' | b'R' => {
            let mut bits = data.split(|&b| b == 0);
            if let (Some(f), Some(s)) = (bits.next(), bits.next())
                && s != b"o"
            {
                state.insert(f.to_vec(), s.to_vec());
            }
        }
        _ => {}
    };
    let v2 = dot_hg.join("merge").join("state2");
    let v1 = dot_hg.join("merge").join("state");
    if let Some(data) = read_file(&v2, MAX_SMALL_FILE)? {
        let mut off = 0usize;
        while off < data.len() {
            let mut rtype = data[off];
            let Some(len) = data
                .get(off + 1..off + 5)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            else {
                break;
            };
            let start = off + 5;
            let end = start.saturating_add(len).min(data.len());
            let mut body = &data[start..end];
            off = end;
            if rtype == b't' {
                let Some((&t, rest)) = body.split_first() else {
                    continue;
                };
                rtype = t;
                body = rest;
            }
            record(rtype, body);
        }
    } else if let Some(data) = read_file(&v1, MAX_SMALL_FILE)? {
        for (i, line) in data.split_inclusive(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            record(if i == 0 { b'L' } else { b'F' }, line);
        }
        other = Some(if wdir[1] == NULL_NODE { wdir[0] } else { wdir[1] });
    } else {
        return Ok(Vec::new());
    }
    let active = local.is_some_and(|n| n != NULL_NODE) || !state.is_empty();
    let unresolved = state.values().any(|s| s.as_slice() == b"u" || s.as_slice() == b"pu");
    if !(active && unresolved) {
        return Ok(Vec::new());
    }
    Ok(local.into_iter().chain(other).collect())
}

/// The nodes hg pins (`pinnedrevs`): working-directory parents,
/// bookmarks, local tags and the sides of a conflicted merge. Nodes not
/// in the changelog are harmless (they match no revision).
///
/// # Errors
/// Unreadable files; a damaged dirstate.
pub fn pinned_nodes(repo: &Repo) -> Result<HashSet<Node>, Error> {
    let mut pinned = HashSet::new();
    let Some(dot_hg) = repo.dot_hg() else {
        return Ok(pinned);
    };
    let reqs = repo.requirements();
    let wdir = dirstate_parents(dot_hg, reqs.contains("dirstate-v2"))?;
    pinned.extend(wdir.iter().copied().filter(|n| *n != NULL_NODE));
    // Bookmarks: in the store with `bookmarksinstore`; in the share
    // source's `.hg` when the share was made with `-B` (hgext/share.py:
    // `shared` lists `bookmarks`); else in this `.hg`.
    let shared_bookmarks = read_file(&dot_hg.join("shared"), MAX_SMALL_FILE)?
        .is_some_and(|t| t.split(|&b| b == b'\n').any(|l| l == b"bookmarks"));
    let bookmarks: PathBuf = if reqs.contains("bookmarksinstore") {
        repo.store().join("bookmarks")
    } else if shared_bookmarks {
        repo.source_hg().unwrap_or(dot_hg).join("bookmarks")
    } else {
        dot_hg.join("bookmarks")
    };
    if let Some(t) = read_file(&bookmarks, MAX_SMALL_FILE)? {
        pinned.extend(node_lines(&t).into_values());
    }
    if let Some(t) = read_file(&dot_hg.join("localtags"), MAX_SMALL_FILE)? {
        pinned.extend(node_lines(&t).into_values());
    }
    pinned.extend(merge_pins(dot_hg, &wdir)?);
    Ok(pinned)
}

/// The changesets hg's `visible` view hides in `repo`, whose changelog is
/// `index`.
///
/// # Errors
/// [`Error::Format`] for a damaged obsstore, `phaseroots` or changelog
/// entry; [`Error::TooLarge`] for an obsstore over [`MAX_OBSSTORE`];
/// [`Error::Io`]; [`Error::Dirstate`].
pub fn hidden<S: PageSource + ?Sized>(repo: &Repo, index: &Index<'_, S>) -> Result<Hidden, Error> {
    let store = repo.store();
    let roots_path = store.join("phaseroots");
    let roots = match read_file(&roots_path, MAX_SMALL_FILE)? {
        Some(t) => obsstore::phase_roots(&t).map_err(|e| format_error(&roots_path, e))?,
        None => Vec::new(),
    };
    let mut root_phase: HashMap<Node, u32> = HashMap::new();
    for (p, n) in roots {
        if p != phase::PUBLIC {
            let e = root_phase.entry(n).or_insert(p);
            *e = (*e).max(p);
        }
    }
    if root_phase.is_empty() || index.is_empty() {
        return Ok(Hidden::default());
    }
    // `obsstore.__nonzero__`: markers only when more than the version byte.
    let obs_path = store.join("obsstore");
    let obs_size = match std::fs::metadata(&obs_path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(source) => {
            return Err(Error::Io { path: obs_path, source });
        }
    };
    let any_local_hidden = root_phase.values().any(|&p| phase::is_local_hidden(p));
    if obs_size <= 1 && !any_local_hidden {
        return Ok(Hidden::default());
    }
    let mut precursors: HashSet<Node> = HashSet::new();
    if obs_size > 1 {
        if obs_size > MAX_OBSSTORE {
            return Err(Error::TooLarge { path: obs_path, size: obs_size, limit: MAX_OBSSTORE });
        }
        let data = read_file(&obs_path, MAX_OBSSTORE)?.unwrap_or_default();
        if obsstore::has_markers(&data) {
            for m in obsstore::markers(&data).map_err(|e| format_error(&obs_path, e))? {
                let m = m.map_err(|e| format_error(&obs_path, e))?;
                if let Some(n) = m.predecessor.sha1() {
                    precursors.insert(n);
                }
            }
        }
    }
    if precursors.is_empty() && !any_local_hidden {
        return Ok(Hidden::default());
    }
    let pinned = pinned_nodes(repo)?;

    // One pass from the tip down until every phase root is found (or
    // rev 0): below the oldest root everything is public.
    let cl_err = |e| Error::Format { path: repo.store().join("00changelog.i"), source: e };
    struct Rec {
        parents: (Rev, Rev),
        root: u32,
        precursor: bool,
        pinned: bool,
    }
    let tip = index.tip();
    let mut recs: Vec<Rec> = Vec::new();
    let mut missing = root_phase.len();
    let mut low = tip + 1;
    let mut rev = tip;
    while rev > NULL_REV && missing > 0 {
        let e = index.entry(rev).map_err(cl_err)?;
        let parents = index.checked_parents(&e).map_err(cl_err)?;
        let node = e.node();
        let root = root_phase.get(node).copied().unwrap_or(phase::PUBLIC);
        if root_phase.contains_key(node) {
            missing -= 1;
            low = rev;
        }
        recs.push(Rec {
            parents,
            root,
            precursor: precursors.contains(node),
            pinned: pinned.contains(node),
        });
        rev -= 1;
    }
    if low > tip {
        return Ok(Hidden::default());
    }
    // recs[i] is rev tip - i; keep [low, tip] in ascending order.
    recs.truncate(usize::try_from(tip - low + 1).unwrap_or(0));
    recs.reverse();
    let at = |r: Rev| usize::try_from(r - low).ok();
    let n = recs.len();
    let mut phases = vec![phase::PUBLIC; n];
    for i in 0..n {
        let (p1, p2) = recs[i].parents;
        let inherited = [p1, p2]
            .into_iter()
            .filter(|&p| p >= low)
            .filter_map(|p| at(p).map(|j| phases[j]))
            .max()
            .unwrap_or(phase::PUBLIC);
        phases[i] = recs[i].root.max(inherited);
    }
    let mut hidden = vec![false; n];
    for i in 0..n {
        let mutable = phases[i] != phase::PUBLIC;
        let hideable = mutable && (recs[i].precursor || phase::is_local_hidden(phases[i]));
        hidden[i] = hideable && !recs[i].pinned;
    }
    // `_revealancestors` from every mutable changeset left visible.
    for i in (0..n).rev() {
        if phases[i] != phase::PUBLIC && !hidden[i] {
            let (p1, p2) = recs[i].parents;
            for p in [p1, p2] {
                if p >= low
                    && let Some(j) = at(p)
                {
                    hidden[j] = false;
                }
            }
        }
    }
    let revs = (low..=tip).zip(hidden).filter_map(|(rev, h)| h.then_some(rev)).collect();
    Ok(Hidden { revs })
}
