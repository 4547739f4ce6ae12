//! A/B alternation with the page cache reset before every single run.
//!
//! Two tools measured in separate blocks see different machines (another
//! build starts, the host gets busy, the disk cache of the hypervisor
//! warms). Alternating in one loop spreads such drift over both, and
//! pairing run *i* of A with run *i* of B gives per-pair ratios whose
//! spread shows how much of a difference is noise. The order within a pair
//! turns every run (A B, B A, A B, …): whatever a run leaves behind for the
//! next one (reclaim, compaction, a busy device queue) lands on each side
//! equally often instead of always on the side that follows.

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
    /// run starts from the page cache one sequential read leaves (its
    /// folio sizes included), not from whatever the previous run's access
    /// pattern left. The folio sizes matter to a mapping: a file cached
    /// by single-page faults (a bbolt `MADV_RANDOM` scan) is mapped 16
    /// pages per fault, one cached by read-ahead in large folios a folio
    /// at a time (seen here: a warm scan of 2 GiB, 33k faults and ~140 ms
    /// against 1.4k faults and ~60 ms).
    Warm,
}

impl CacheState {
    /// `cold` / `warm`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cold => "cold",
            Self::Warm => "warm",
        }
    }
}

/// Which side of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Ours (first in odd-numbered pairs).
    A,
    /// The reference.
    B,
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
}

/// Puts `file` into `state` and checks the result with mincore.
pub fn prepare(file: &Path, state: CacheState) -> Result<Prepared> {
    let start = Instant::now();
    match state {
        CacheState::Cold => pagecache::evict(file)?,
        CacheState::Warm => {
            pagecache::evict(file)?;
            pagecache::read_whole(file, false)?;
        }
    }
    let prep_s = start.elapsed().as_secs_f64();
    let resident = pagecache::resident_fraction(file)?;
    Ok(Prepared {
        state,
        prep_s,
        resident,
    })
}

/// Re-measures a cache state another run just prepared, without
/// resetting it: for the second run of a pair that shares the first one's
/// reset (`prep_s` is 0).
pub fn recheck(file: &Path, state: CacheState) -> Result<Prepared> {
    Ok(Prepared {
        state,
        prep_s: 0.0,
        resident: pagecache::resident_fraction(file)?,
    })
}

/// The side that runs first in pair `run` (from 1): A in odd pairs, B in
/// even ones.
pub fn first_in_pair(run: usize) -> Side {
    if run % 2 == 1 { Side::A } else { Side::B }
}

/// One pair of runs.
#[derive(Debug, Serialize)]
pub struct Pair<T> {
    /// Run number, from 1.
    pub run: usize,
    /// Side A's result.
    pub a: T,
    /// Side B's result.
    pub b: T,
}

/// Runs `a` and `b` alternately, `runs` times each, in the order A B, B A,
/// A B, … (odd runs A first, even runs B first), calling `before(side,
/// run)` right before every single run (the cache reset) and handing its
/// result to that run.
pub fn alternate<P, T>(
    runs: usize,
    mut before: impl FnMut(Side, usize) -> Result<P>,
    mut a: impl FnMut(usize, P) -> Result<T>,
    mut b: impl FnMut(usize, P) -> Result<T>,
) -> Result<Vec<Pair<T>>> {
    let mut pairs = Vec::with_capacity(runs);
    for run in 1..=runs {
        let (ra, rb) = if first_in_pair(run) == Side::A {
            let p = before(Side::A, run)?;
            let ra = a(run, p)?;
            let p = before(Side::B, run)?;
            (ra, b(run, p)?)
        } else {
            let p = before(Side::B, run)?;
            let rb = b(run, p)?;
            let p = before(Side::A, run)?;
            (a(run, p)?, rb)
        };
        pairs.push(Pair { run, a: ra, b: rb });
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn runs_alternate_and_turn_order_with_a_reset_before_each() {
        let log = RefCell::new(Vec::new());
        let pairs = alternate(
            3,
            |side, run| {
                log.borrow_mut().push(format!("prep {side:?}{run}"));
                Ok(run * 10)
            },
            |run, p| {
                log.borrow_mut().push(format!("A{run}"));
                Ok(p + 1)
            },
            |run, p| {
                log.borrow_mut().push(format!("B{run}"));
                Ok(p + 2)
            },
        )
        .unwrap();
        assert_eq!(
            log.into_inner(),
            [
                "prep A1", "A1", "prep B1", "B1", "prep B2", "B2", "prep A2", "A2", "prep A3",
                "A3", "prep B3", "B3"
            ]
        );
        let got: Vec<_> = pairs.iter().map(|p| (p.run, p.a, p.b)).collect();
        assert_eq!(got, [(1, 11, 12), (2, 21, 22), (3, 31, 32)]);
    }

    #[test]
    fn an_error_stops_the_loop() {
        let mut calls = 0;
        let r = alternate(
            5,
            |_, _| Ok(()),
            |run, ()| {
                calls += 1;
                if run == 2 {
                    anyhow::bail!("boom")
                } else {
                    Ok(())
                }
            },
            |_, ()| Ok(()),
        );
        assert!(r.is_err());
        assert_eq!(calls, 2);
    }
}
