//! Reading a bbolt file while a writer may be committing to it, without a
//! lock: the one place every quiet reader of a bbolt file goes through
//! (`watch::read_snapshot` for the inspector's view, `inspector
//! check|layout|pages`, `mapwise bolt check|pages|info`).
//!
//! The quiet readers take no lock (a running etcd must not wait for them),
//! so a commit can land while they walk the file. bbolt never overwrites a
//! page reachable from the current meta page before a later commit has
//! replaced that meta page (freed pages stay pending until the next write
//! transaction, which writes its pages before its meta). So a walk is
//! consistent exactly when both meta pages read *after* it are the ones
//! read *before* it. [`read_bolt`] reads the meta pages, runs the caller's
//! walk, reads the meta pages again (past every cached chunk), and when
//! they changed, retries with a fresh source after a short pause, at most
//! [`ATTEMPTS`] times. When no attempt settles, the result says so, and
//! callers report that instead of the problems the mixed walk saw
//! ([`unsettled_message`]); `check` then exits 2 (could not run), never 1.
//!
//! A whole-tree walk of a big file takes longer than the time between two
//! commits of a busy writer (etcd commits every ~100 ms), so it would
//! never settle that way. [`read_bolt_walked`] (the walks of `check`,
//! `pages`, `layout` and the live view) settles it over several attempts:
//! each one carries forward the pages it read before the next commit
//! landed, which the next snapshot still uses unchanged, and reads only
//! the rest.
//!
//! The previous snapshot (the other meta page) is *not* protected this
//! way: its pages are reused by the next commit. Walks use it only to tell
//! pending pages from free ones, never to find problems.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mapwise_core::PageSource;
use mapwise_core::bolt::{BoltFile, BoltLayout, META_END, Snapshot, WalkOptions};
use mapwise_core::layout::Kind;

use crate::io::QuietSource;

/// Reads of the file [`read_bolt`] makes before giving up on a writer
/// that commits during every one of them.
pub const ATTEMPTS: u32 = 5;

/// Pause before the second attempt; it doubles before each further one
/// (20, 40, 80, 160 ms: 300 ms in all before giving up).
pub const FIRST_PAUSE: Duration = Duration::from_millis(20);

/// What [`read_bolt`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled<T> {
    /// What the caller's read returned on the last attempt.
    pub value: T,
    /// Attempts made, 1..=[`ATTEMPTS`] (1: nothing was committed meanwhile).
    pub attempts: u32,
    /// `true` when the meta pages were the same before and after the last
    /// attempt: `value` describes one snapshot. `false` when a writer
    /// committed during every attempt: `value` may mix snapshots, and any
    /// problem it reports may be transient.
    pub settled: bool,
}

impl<T> Settled<T> {
    /// The value when it settled; else [`Error::Unsettled`], counting the
    /// `problems(value)` seen on the last attempt.
    ///
    /// # Errors
    /// [`Error::Unsettled`] when no attempt settled.
    pub fn or_unsettled(self, problems: impl FnOnce(&T) -> u64) -> Result<T, Error> {
        if self.settled {
            Ok(self.value)
        } else {
            Err(Error::Unsettled {
                attempts: self.attempts,
                problems: problems(&self.value),
            })
        }
    }
}

/// Why [`read_bolt`] could not read the file.
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
    /// A writer committed during every attempt ([`unsettled_message`]).
    #[error("{}", unsettled_message(*attempts, *problems))]
    Unsettled {
        /// Attempts made.
        attempts: u32,
        /// Problems the last (mixed) walk reported.
        problems: u64,
    },
}

/// What front ends say when no read settled: `attempts` reads, each
/// overlapped by a commit, the last one reporting `problems` problems.
#[must_use]
pub fn unsettled_message(attempts: u32, problems: u64) -> String {
    let seen = match problems {
        0 => "no problem seen, but no read was of one snapshot".to_string(),
        1 => "1 problem seen may be transient".to_string(),
        n => format!("{n} problems seen may be transient"),
    };
    format!(
        "the file changed during every read ({attempts} attempts): a writer is committing; {seen}"
    )
}

/// Read the bbolt file at `path` quietly (`O_DIRECT`, no lock, through a
/// fresh [`QuietSource`] each attempt) with `read`, retrying while a
/// commit lands during the read (see the module documentation).
///
/// `read` gets the file opened at its current meta page; it runs once per
/// attempt, so it should only compute (walk, collect rows), not print.
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
    let open_err = |source| Error::Open {
        path: path.to_owned(),
        source,
    };
    let mut pause = FIRST_PAUSE;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let src = QuietSource::open(path).map_err(open_err)?;
        let file = match BoltFile::open(&src) {
            Ok(f) => f,
            Err(reason) => {
                return Err(Error::NotBolt {
                    path: path.to_owned(),
                    reason,
                });
            }
        };
        let before = file.snapshot();
        let value = read(&file);
        let settled = unchanged(&src, &before);
        if settled || attempts >= ATTEMPTS {
            return Ok(Settled {
                value,
                attempts,
                settled,
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

/// Longest time between two checks of the meta pages while a walk of
/// [`read_bolt_walked`] reads the file.
const CHECK_EVERY: Duration = Duration::from_millis(2);

/// Page bytes [`read_bolt_walked`] carries from one attempt to the next,
/// at most, for a command that reads once and exits (`check`, `pages`,
/// `layout`). A file whose live pages exceed it still settles when what
/// is left can be read between two commits.
pub const CARRY_BUDGET: usize = 256 << 20;

/// The same for the live view, which stays running: a busy file whose
/// live pages exceed it by more than one commit gap's reading shows an
/// unsettled structure (said so) instead of holding more.
pub const LIVE_CARRY_BUDGET: usize = 64 << 20;

/// Attempts [`read_bolt_walked`] makes at most, however much each one
/// carries forward.
pub const MAX_ATTEMPTS: u32 = 64;

/// Pages of one snapshot (txid), by the file offset of their run's first
/// page, each read while that snapshot was the newest on disk.
#[derive(Debug, Default)]
struct Carried {
    txid: u64,
    pages: HashMap<u64, Rc<Vec<u8>>>,
    bytes: usize,
}

/// One read a walk made of a page run: where, what, and the epoch of the
/// file read it came from (`None`: served from the carried pages).
#[derive(Debug)]
struct Logged {
    offset: u64,
    bytes: Rc<Vec<u8>>,
    epoch: Option<u64>,
}

#[derive(Debug)]
struct Watchdog {
    /// Page size, and both meta pages' bytes as the walk's file opened them.
    base: Option<(u64, Vec<u8>, Vec<u8>)>,
    last_check: Instant,
    /// Checks that found the meta pages as they were.
    epoch: u64,
    /// A check found them changed: reads from `epoch` on may be of pages
    /// a later commit rewrote.
    changed: bool,
    log: Vec<Logged>,
    log_bytes: usize,
    /// The longest run read at each offset this attempt (what `log`
    /// holds), served again when asked again (`pages` reads each page's
    /// header after the walk).
    again: HashMap<u64, Rc<Vec<u8>>>,
}

/// The source a walk of [`read_bolt_walked`] reads through: `O_DIRECT`
/// reads ([`QuietSource`]) of the file, checked against the meta pages
/// every [`CHECK_EVERY`] so each read is known to have happened before or
/// after the next commit landed, and page runs of the previous attempt's
/// snapshot served from memory when this attempt's snapshot is that one
/// or the next (see [`read_bolt_walked`]).
#[derive(Debug)]
pub struct SettlingSource {
    quiet: QuietSource,
    carried: Rc<Carried>,
    dog: RefCell<Watchdog>,
    /// Once a commit has landed, fail the reads still to make instead of
    /// reading on: the attempt is spent, and the next one is best begun
    /// at once, while the commit that just landed is the newest.
    give_up_on_change: bool,
    /// Keep what the reads return, to carry forward. Off for a first
    /// attempt: a quiet file then costs no more memory than the walk.
    keep: bool,
    /// Bytes carried at most ([`CARRY_BUDGET`]).
    budget: usize,
}

impl SettlingSource {
    fn open(path: &Path) -> std::io::Result<SettlingSource> {
        Ok(SettlingSource {
            quiet: QuietSource::open(path)?,
            carried: Rc::new(Carried::default()),
            give_up_on_change: false,
            keep: false,
            budget: CARRY_BUDGET,
            dog: RefCell::new(Watchdog {
                base: None,
                last_check: Instant::now(),
                epoch: 0,
                changed: false,
                log: Vec::new(),
                log_bytes: 0,
                again: HashMap::new(),
            }),
        })
    }

    /// The underlying reader.
    #[must_use]
    pub fn quiet(&self) -> &QuietSource {
        &self.quiet
    }

    fn metas_now(&self, ps: u64) -> Option<(Vec<u8>, Vec<u8>)> {
        let m0 = self.quiet.read_fresh(0, META_END).ok()?;
        let m1 = self.quiet.read_fresh(ps, META_END).ok()?;
        Some((m0, m1))
    }

    /// Start the walk of snapshot `txid` (page size `ps`), serving the
    /// pages of `carried` when they are of that snapshot or the one before.
    fn start(&mut self, ps: u64, txid: u64, carried: Rc<Carried>) {
        // The meta pages as the open read them: still in the chunk cache.
        let metas = self
            .quiet
            .read_at(0, META_END)
            .ok()
            .zip(self.quiet.read_at(ps, META_END).ok())
            .map(|(a, b)| (a.into_owned(), b.into_owned()));
        let dog = self.dog.get_mut();
        match metas {
            Some((m0, m1)) => dog.base = Some((ps, m0, m1)),
            None => dog.changed = true,
        }
        dog.last_check = Instant::now();
        if carried.txid == txid || carried.txid.checked_add(1) == Some(txid) {
            self.carried = carried;
        }
    }

    /// Check the meta pages if it is time to.
    fn check(&self) {
        let mut dog = self.dog.borrow_mut();
        if dog.changed || dog.last_check.elapsed() < CHECK_EVERY {
            return;
        }
        self.check_now(&mut dog);
    }

    fn check_now(&self, dog: &mut Watchdog) {
        let Some((ps, m0, m1)) = &dog.base else {
            return;
        };
        if dog.changed {
            return;
        }
        match self.metas_now(*ps) {
            Some((n0, n1)) if n0 == *m0 && n1 == *m1 => {
                dog.epoch += 1;
                self.quiet.set_epoch(dog.epoch);
            }
            _ => dog.changed = true,
        }
        dog.last_check = Instant::now();
    }

    /// The page runs this attempt read before the next commit could have
    /// rewritten them, limited to the runs whose first page the walk found
    /// in use by the snapshot's tree (`heads`, file offsets), and within
    /// [`CARRY_BUDGET`].
    fn carry(&self, txid: u64, heads: &HashSet<u64>) -> Carried {
        let mut dog = self.dog.borrow_mut();
        if !dog.changed {
            self.check_now(&mut dog);
        }
        let confirmed = dog.epoch;
        let mut out = Carried {
            txid,
            ..Carried::default()
        };
        for l in &dog.log {
            let valid = l.epoch.is_none_or(|e| e < confirmed);
            if !valid || !heads.contains(&l.offset) || out.bytes >= self.budget {
                continue;
            }
            match out.pages.entry(l.offset) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    out.bytes += l.bytes.len();
                    v.insert(Rc::clone(&l.bytes));
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    if o.get().len() < l.bytes.len() {
                        out.bytes += l.bytes.len() - o.get().len();
                        o.insert(Rc::clone(&l.bytes));
                    }
                }
            }
        }
        out
    }
}

impl PageSource for SettlingSource {
    fn len(&self) -> u64 {
        self.quiet.len()
    }

    fn interrupted(&self) -> bool {
        self.give_up_on_change && self.dog.borrow().changed
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, mapwise_core::Error> {
        let meta_end = {
            let dog = self.dog.borrow();
            match &dog.base {
                Some((ps, ..)) => ps.saturating_mul(2),
                // Before `start`: the meta pages being opened.
                None => u64::MAX,
            }
        };
        if offset < meta_end {
            return self.quiet.read_at(offset, len);
        }
        if self.keep
            && offset.saturating_add(len as u64) <= self.quiet.len()
            && let Some(b) = self.carried.pages.get(&offset)
            && b.len() >= len
        {
            self.dog.borrow_mut().log.push(Logged {
                offset,
                bytes: Rc::clone(b),
                epoch: None,
            });
            return Ok(Cow::Borrowed(b.get(..len).unwrap_or_default()));
        }
        if self.keep
            && let Some(b) = self.dog.borrow().again.get(&offset)
            && b.len() >= len
        {
            return Ok(Cow::Owned(b.get(..len).unwrap_or_default().to_vec()));
        }
        self.check();
        if self.give_up_on_change && self.dog.borrow().changed {
            return Err(mapwise_core::Error::Read {
                offset,
                len: len as u64,
                code: libc::EAGAIN,
            });
        }
        let (bytes, epoch) = self.quiet.read_at_epoch(offset, len)?;
        testing::after_read(|| self.check_now(&mut self.dog.borrow_mut()));
        if testing::is_set() {
            // The hook may have committed: notice it now, as a real
            // writer's commit is noticed within CHECK_EVERY.
            self.check_now(&mut self.dog.borrow_mut());
        }
        let mut dog = self.dog.borrow_mut();
        if self.keep
            && !dog.changed
            && dog.log_bytes.saturating_add(self.carried.bytes) < self.budget
        {
            dog.log_bytes += bytes.len();
            let kept = Rc::new(bytes.clone());
            let slot = dog.again.entry(offset).or_insert_with(|| Rc::clone(&kept));
            if slot.len() < kept.len() {
                *slot = Rc::clone(&kept);
            }
            dog.log.push(Logged {
                offset,
                bytes: kept,
                epoch: Some(epoch),
            });
        }
        Ok(Cow::Owned(bytes))
    }
}

/// A hook for tests: commits landed at chosen moments of a walk.
#[doc(hidden)]
pub mod testing {
    use std::cell::RefCell;

    type Hook = (u64, u64, Box<dyn FnMut()>);

    thread_local! {
        static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// On this thread, call `f` after every `every` reads that
    /// [`super::read_bolt_walked`]'s walks make from the file (reads of
    /// carried pages and of the meta pages do not count), the meta pages
    /// checked just before and after every read while the hook is set: a
    /// test commits there, as a writer racing the walk would.
    pub fn after_every(every: u64, f: impl FnMut() + 'static) {
        HOOK.with(|h| *h.borrow_mut() = Some((every.max(1), 0, Box::new(f))));
    }

    pub(super) fn is_set() -> bool {
        HOOK.with(|h| h.borrow().is_some())
    }

    /// Remove the hook.
    pub fn clear() {
        HOOK.with(|h| *h.borrow_mut() = None);
    }

    pub(super) fn after_read(check: impl FnOnce()) {
        HOOK.with(|h| {
            let mut h = h.borrow_mut();
            if let Some((every, n, f)) = h.as_mut() {
                *n += 1;
                if *n % *every == 0 {
                    check();
                    f();
                }
            }
        });
    }
}

/// File offsets of the first pages of the runs `layout` finds in use by
/// the snapshot: its freelist, branch and leaf pages.
fn claimed_heads(layout: &mapwise_core::layout::Layout) -> HashSet<u64> {
    layout
        .regions
        .iter()
        .filter(|r| matches!(r.kind, Kind::Freelist | Kind::Branch | Kind::Leaf))
        .map(|r| r.offset)
        .collect()
}

/// Walk the bbolt file at `path` ([`mapwise_core::bolt::walk`] with
/// `opts`) while a writer may be committing, and hand `read` the file and
/// the walk's layout; like [`read_bolt`], but a walk longer than the time
/// between two commits still settles. `budget` bounds the page bytes held
/// between attempts ([`CARRY_BUDGET`], [`LIVE_CARRY_BUDGET`]).
///
/// Why it can: bbolt never writes a page the newest snapshot `s` uses
/// until commit `s + 2` has begun, which is after commit `s + 1`'s meta
/// page is on disk (commit `s + 1` writes only pages free before it, and
/// pages it frees stay pending until the next write transaction). So a
/// read made before meta `s + 1` appears is of snapshot `s`'s bytes; and a
/// page snapshot `s` uses that snapshot `s + 1` still uses has the same
/// bytes in both. The walk checks both meta pages every [`CHECK_EVERY`]:
/// reads made before a check that found them unchanged are sound. When a
/// commit lands mid-walk, the sound reads of pages the walk found in use
/// are carried to the next attempt, which walks the snapshot then newest;
/// if that is `s` or `s + 1`, the carried pages are served from memory and
/// only the rest is read from the file. Each attempt so reads less, until
/// one reads everything it needs between two commits: it settles, and its
/// layout is of one snapshot. Attempts continue while each carries more
/// than the last (at most [`MAX_ATTEMPTS`]); after [`ATTEMPTS`] that carry
/// nothing new the result is unsettled, as [`read_bolt`]'s.
///
/// # Errors
/// As [`read_bolt`].
pub fn read_bolt_walked<T>(
    path: &Path,
    opts: WalkOptions,
    budget: usize,
    mut read: impl FnMut(&BoltFile<'_, SettlingSource>, BoltLayout) -> T,
) -> Result<Settled<T>, Error> {
    let open_err = |source| Error::Open {
        path: path.to_owned(),
        source,
    };
    let mut carried = Rc::new(Carried::default());
    let mut pause = FIRST_PAUSE;
    let mut attempts = 0;
    let mut stalls = 0;
    loop {
        attempts += 1;
        let mut src = SettlingSource::open(path).map_err(open_err)?;
        let (before, txid) = match BoltFile::open(&src) {
            Ok(f) => (f.snapshot(), f.meta().txid),
            Err(reason) => {
                return Err(Error::NotBolt {
                    path: path.to_owned(),
                    reason,
                });
            }
        };
        src.start(u64::from(before.page_size), txid, Rc::clone(&carried));
        // Every attempt but one that may be the last stops at a commit;
        // every attempt but the first keeps its reads to carry forward.
        src.give_up_on_change = stalls + 1 < ATTEMPTS && attempts < MAX_ATTEMPTS;
        src.keep = attempts > 1;
        src.budget = budget;
        let file = BoltFile::at(&src, &before);
        let walked = mapwise_core::bolt::walk(&file, opts);
        let heads = claimed_heads(&walked.layout);
        let value = read(&file, walked);
        let settled = unchanged(src.quiet(), &before);
        let next = (!settled).then(|| src.carry(txid, &heads));
        // A first attempt carries nothing (it keeps nothing): the second
        // begins at once, as one that made progress.
        let progress = attempts == 1
            || next
                .as_ref()
                .is_some_and(|n| n.pages.len() > carried.pages.len());
        if !progress {
            stalls += 1;
        }
        if settled || attempts >= MAX_ATTEMPTS || stalls >= ATTEMPTS {
            return Ok(Settled {
                value,
                attempts,
                settled,
            });
        }
        carried = Rc::new(next.unwrap_or_default());
        if progress {
            continue;
        }
        std::thread::sleep(pause);
        pause = pause.saturating_mul(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_counts() {
        assert_eq!(
            unsettled_message(5, 1),
            "the file changed during every read (5 attempts): a writer is committing; \
             1 problem seen may be transient"
        );
        assert!(unsettled_message(5, 300).ends_with("300 problems seen may be transient"));
        assert!(
            unsettled_message(5, 0).ends_with("no problem seen, but no read was of one snapshot")
        );
        let e = Settled {
            value: 7u64,
            attempts: 5,
            settled: false,
        }
        .or_unsettled(|v| *v)
        .unwrap_err();
        assert_eq!(e.to_string(), unsettled_message(5, 7));
        let ok = Settled {
            value: 7u64,
            attempts: 2,
            settled: true,
        };
        assert_eq!(ok.or_unsettled(|_| 0).unwrap(), 7);
    }
}
