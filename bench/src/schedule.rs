//! The one scheduler (any number of contenders, rotated round by round;
//! ABBA for two) and the page cache reset before every single run.
//!
//! Tools measured in separate blocks see different machines (a build
//! starts, the host gets busy); one loop spreads such drift over all, and
//! pairing run *i* of each gives per-round ratios whose spread shows the
//! noise. The order turns every round, so whatever a run leaves behind for
//! the next one lands on each side equally often.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::pagecache;

/// Page-cache state every run of a cell starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    /// Evicted: fsync + posix_fadvise(DONTNEED) over the whole file.
    Cold,
    /// Evicted, then the whole file read once with read(2): every warm
    /// run starts from the page cache (and folio sizes) one sequential read
    /// leaves, not from the previous run's access pattern; a mapping faults
    /// a folio at a time (a warm 2 GiB scan: 1.4k faults and ~60 ms after a
    /// read, 33k and ~140 ms after a `MADV_RANDOM` scan).
    Warm,
    /// Warm, then each RRD file's cold pages evicted by the cell's
    /// `after_reset` command (`inspector evict --cold`): only each RRD
    /// file's hot set stays, the cache a host updating them keeps.
    HotSet,
}

impl CacheState {
    /// `cold` / `warm` / `hot set`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cold => "cold",
            Self::Warm => "warm",
            Self::HotSet => "hot set",
        }
    }
}

/// `--cold`, `--warm`, `--both`: the cache states of the cells that have both (the default).
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct Caches {
    /// Only the cold cells (`bench all`: where a bench can choose).
    #[arg(long, conflicts_with_all = ["warm", "both"])]
    pub cold: bool,
    /// Only the warm cells (`bench all`: where a bench can choose).
    #[arg(long, conflicts_with = "both")]
    pub warm: bool,
    /// Cold and warm cells (the default).
    #[arg(long)]
    pub both: bool,
}

impl Caches {
    /// `cold`, `warm` or `both`.
    #[must_use]
    pub fn word(self) -> &'static str {
        match (self.cold, self.warm) {
            (true, _) => "cold",
            (_, true) => "warm",
            _ => "both",
        }
    }

    /// The states chosen, cold first.
    #[must_use]
    pub fn states(self) -> &'static [CacheState] {
        let both = &[CacheState::Cold, CacheState::Warm];
        &both[usize::from(self.warm)..2 - usize::from(self.cold)]
    }
}

/// What the preparation before one run did and found.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Prepared {
    /// The state asked for.
    pub state: CacheState,
    /// Seconds the eviction or the warming read took.
    pub prep_s: f64,
    /// Fraction of the file's pages resident right after (mincore), 0–1.
    pub resident: f64,
    /// The files' resident OS pages right after, summed.
    pub pages: u64,
}

/// Puts `files` into `state` (each evicted; warm and hot set: then read whole once)
/// and checks the result with mincore. Pages still under I/O (read-ahead
/// a run started just before it ended) cannot be dropped yet, so a cold
/// reset that leaves more than 1 % resident waits a little and evicts
/// again (up to 4 times).
///
/// # Errors
/// When a file cannot be evicted, read or measured, or on Ctrl-C.
pub fn prepare<P: AsRef<Path>>(files: &[P], state: CacheState) -> Result<Prepared> {
    let start = Instant::now();
    let mut attempt = 1;
    loop {
        for f in files {
            pagecache::evict(f.as_ref())?;
            if state != CacheState::Cold {
                pagecache::read_whole(f.as_ref(), false)?;
            }
        }
        let (resident, pages) = resident(files)?;
        if state != CacheState::Cold || resident <= 0.01 || attempt == 4 {
            let prep_s = start.elapsed().as_secs_f64();
            return Ok(Prepared { state, prep_s, resident, pages });
        }
        std::thread::sleep(std::time::Duration::from_millis(10 << attempt));
        crate::interrupt::check()?;
        attempt += 1;
    }
}

/// The mean resident fraction (mincore) of `files`, 0–1, and their resident OS pages.
///
/// # Errors
/// When a file cannot be measured.
pub fn resident<P: AsRef<Path>>(files: &[P]) -> Result<(f64, u64)> {
    let (mut sum, mut pages) = (0.0, 0);
    for f in files {
        let (resident, total) = pagecache::resident_count(f.as_ref())?;
        #[expect(clippy::cast_precision_loss)]
        let fraction = if total == 0 { 1.0 } else { resident as f64 / total as f64 };
        (sum, pages) = (sum + fraction, pages + resident);
    }
    #[expect(clippy::cast_precision_loss)]
    Ok((sum / files.len().max(1) as f64, pages))
}

/// The order of `k` contenders in round `round` (from 1): a rotation, so
/// each starts a round as often as the others. For two it is A B, B A,
/// A B, … (ABBA).
#[must_use]
pub fn order(k: usize, round: usize) -> Vec<usize> {
    (0..k).map(|i| (i + round.saturating_sub(1)) % k.max(1)).collect()
}

/// One round of every contender.
#[derive(Debug, Serialize)]
pub struct Round<T> {
    /// Round number, from 1.
    pub round: usize,
    /// The contenders' indices in the order they ran.
    pub order: Vec<usize>,
    /// Each contender's result, indexed like the contenders.
    pub results: Vec<T>,
}

/// The one scheduler: `rounds` rounds of `k` contenders in [`order`],
/// calling `before(contender, round)` right before every single run (the
/// cache reset) and handing its result to `run(contender, round, prep)`.
/// An error stops the loop.
///
/// # Errors
/// The first error of `before` or `run`.
pub fn rotate<P, T>(
    k: usize,
    rounds: usize,
    mut before: impl FnMut(usize, usize) -> Result<P>,
    mut run: impl FnMut(usize, usize, P) -> Result<T>,
) -> Result<Vec<Round<T>>> {
    let mut out = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        let order = order(k, round);
        let mut results: Vec<Option<T>> = (0..k).map(|_| None).collect();
        for &i in &order {
            let p = before(i, round)?;
            results[i] = Some(run(i, round, p)?);
        }
        out.push(Round { round, order, results: results.into_iter().flatten().collect() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn two_contenders_go_abba_with_a_reset_before_each_run() {
        let log = RefCell::new(Vec::new());
        let rounds = rotate(
            2,
            3,
            |i, round| {
                log.borrow_mut().push(format!("prep {i}{round}"));
                Ok(round * 10)
            },
            |i, round, p| {
                log.borrow_mut().push(format!("{i}{round}"));
                Ok(p + i)
            },
        )
        .unwrap();
        let want = ["prep 01", "01", "prep 11", "11", "prep 12", "12", "prep 02", "02"];
        assert_eq!(log.into_inner()[..8], want);
        let got: Vec<_> = rounds.iter().map(|r| (r.round, r.results.clone())).collect();
        assert_eq!(got, [(1, vec![10, 11]), (2, vec![20, 21]), (3, vec![30, 31])]);
    }

    #[test]
    fn more_contenders_rotate_keep_their_index_and_an_error_stops_the_loop() {
        let mut log = Vec::new();
        let rounds = rotate(
            3,
            4,
            |_, _| Ok(()),
            |i, r, ()| {
                log.push(i);
                Ok(i * 100 + r)
            },
        )
        .unwrap();
        assert_eq!(log, [0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2]);
        assert_eq!((&rounds[1].order, &rounds[1].results), (&vec![1, 2, 0], &vec![2, 102, 202]));
        let mut calls = 0;
        let r = rotate(
            2,
            5,
            |_, _| Ok(()),
            |i, r, ()| {
                calls += 1;
                if (i, r) == (1, 2) { anyhow::bail!("boom") } else { Ok(()) }
            },
        );
        assert!(r.is_err() && calls == 3);
    }
}
