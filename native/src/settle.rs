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
//! The previous snapshot (the other meta page) is *not* protected this
//! way: its pages are reused by the next commit. Walks use it only to tell
//! pending pages from free ones, never to find problems.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mapwise_core::PageSource;
use mapwise_core::bolt::{BoltFile, Snapshot};

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
