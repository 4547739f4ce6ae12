//! The writer's free-page list: bbolt's default "array" freelist
//! (1.3.6 `freelist.go`; later `internal/freelist/array.go` and
//! `shared.go`).
//!
//! * `ids`: free page ids, sorted. Allocation takes the lowest run of `n`
//!   contiguous ids (first fit), else the caller takes pages at the
//!   high-water mark.
//! * `pending`: pages freed by transaction `txid`, keyed by that txid.
//!   They stay unusable while a read transaction that may still see them
//!   is open, and move to `ids` when every open reader is newer
//!   ([`Freelist::release`]).
//! * What the file stores is free ∪ pending, sorted (a crash makes every
//!   pending page free again, since no reader survives it).

use std::collections::{BTreeMap, HashSet};

/// Free and pending page ids of a database opened read-write.
#[derive(Debug, Default, Clone)]
pub(crate) struct Freelist {
    ids: Vec<u64>,
    pending: BTreeMap<u64, Vec<u64>>,
    /// free ∪ pending, to refuse freeing a page twice (bbolt panics with
    /// "page N already freed").
    cache: HashSet<u64>,
}

impl Freelist {
    /// A freelist holding `ids` (sorted and free of duplicates).
    pub(crate) fn from_sorted(ids: Vec<u64>) -> Freelist {
        let cache = ids.iter().copied().collect();
        Freelist { ids, pending: BTreeMap::new(), cache }
    }

    /// Free ids (allocatable now).
    pub(crate) fn free_count(&self) -> usize {
        self.ids.len()
    }

    /// Pending ids (freed, waiting for older readers).
    pub(crate) fn pending_count(&self) -> usize {
        self.pending.values().map(Vec::len).sum()
    }

    /// Ids the freelist page lists: free + pending.
    pub(crate) fn count(&self) -> usize {
        self.free_count() + self.pending_count()
    }

    /// `true` when `pgid` is free or pending.
    pub(crate) fn contains(&self, pgid: u64) -> bool {
        self.cache.contains(&pgid)
    }

    /// Take the lowest run of `n` contiguous free ids (bbolt
    /// `arrayAllocate`); `None` when no run is long enough.
    pub(crate) fn allocate(&mut self, n: usize) -> Option<u64> {
        if n == 0 || self.ids.len() < n {
            return None;
        }
        let mut start = 0usize; // index of the run's first id
        for i in 0..self.ids.len() {
            if i > 0 && self.ids[i] != self.ids[i - 1] + 1 {
                start = i;
            }
            if i + 1 - start == n {
                let first = self.ids[start];
                self.ids.drain(start..=i);
                for p in first..first + n as u64 {
                    self.cache.remove(&p);
                }
                return Some(first);
            }
        }
        None
    }

    /// Put a run taken by [`Freelist::allocate`] back (a failed commit).
    pub(crate) fn unallocate(&mut self, first: u64, n: usize) {
        let run: Vec<u64> = (first..first + n as u64).collect();
        self.cache.extend(run.iter().copied());
        self.merge(run);
    }

    /// Record pages freed by transaction `txid` as pending under it.
    ///
    /// # Errors
    /// The first id that is already free or pending (a page referenced
    /// twice in the file).
    pub(crate) fn free_pending(&mut self, txid: u64, ids: &[u64]) -> Result<(), u64> {
        if let Some(&dup) = ids.iter().find(|id| self.cache.contains(id)) {
            return Err(dup);
        }
        self.cache.extend(ids.iter().copied());
        self.pending.entry(txid).or_default().extend_from_slice(ids);
        Ok(())
    }

    /// Forget the pages transaction `txid` freed (a failed commit).
    pub(crate) fn rollback(&mut self, txid: u64) {
        if let Some(ids) = self.pending.remove(&txid) {
            for id in ids {
                self.cache.remove(&id);
            }
        }
    }

    /// Move the pages freed by transactions older than `oldest_reader` to
    /// the free ids (bbolt `DB.freePages` → `freelist.release(minid - 1)`:
    /// a reader at txid r may use pages freed by transaction r or later).
    pub(crate) fn release(&mut self, oldest_reader: u64) {
        let keep = self.pending.split_off(&oldest_reader);
        let released = std::mem::replace(&mut self.pending, keep);
        let ids: Vec<u64> = released.into_values().flatten().collect();
        if !ids.is_empty() {
            self.merge(ids);
        }
    }

    fn merge(&mut self, mut more: Vec<u64>) {
        more.sort_unstable();
        let mut out = Vec::with_capacity(self.ids.len() + more.len());
        let (mut a, mut b) = (self.ids.iter().peekable(), more.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) => {
                    if x <= y {
                        out.push(x);
                        a.next();
                    } else {
                        out.push(y);
                        b.next();
                    }
                }
                (Some(&&x), None) => {
                    out.push(x);
                    a.next();
                }
                (None, Some(&&y)) => {
                    out.push(y);
                    b.next();
                }
                (None, None) => break,
            }
        }
        self.ids = out;
    }

    /// free ∪ pending, sorted: what the freelist page lists (bbolt
    /// `freelist.copyall`).
    pub(crate) fn all_sorted(&self) -> Vec<u64> {
        let mut all = Vec::with_capacity(self.count());
        all.extend_from_slice(&self.ids);
        for ids in self.pending.values() {
            all.extend_from_slice(ids);
        }
        all.sort_unstable();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_takes_the_lowest_run() {
        let mut f = Freelist::from_sorted(vec![3, 5, 6, 8, 9, 10, 12]);
        assert_eq!(f.allocate(2), Some(5));
        assert_eq!(f.allocate(3), Some(8));
        assert_eq!(f.allocate(2), None);
        assert_eq!(f.allocate(1), Some(3));
        assert_eq!(f.ids, vec![12]);
        f.unallocate(8, 3);
        assert_eq!(f.ids, vec![8, 9, 10, 12]);
    }

    #[test]
    fn pending_waits_for_older_readers() {
        let mut f = Freelist::from_sorted(vec![2]);
        f.free_pending(5, &[7, 8]).unwrap();
        f.free_pending(6, &[4]).unwrap();
        assert_eq!(f.free_pending(6, &[7]), Err(7));
        assert_eq!(f.all_sorted(), vec![2, 4, 7, 8]);
        // A reader at txid 5 may still use pages freed by transaction 5.
        f.release(5);
        assert_eq!(f.ids, vec![2]);
        f.release(6);
        assert_eq!(f.ids, vec![2, 7, 8]);
        f.rollback(6);
        assert_eq!(f.count(), 3);
        assert!(!f.contains(4));
    }
}
