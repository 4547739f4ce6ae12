//! What `etcdctl compaction REV` keeps of the `key` bucket.

use alloc::vec;
use alloc::vec::Vec;

use super::RevisionKey;

/// Whether each revision of `revs` survives `etcdctl compaction rev`, in
/// `revs` order. `revs` pairs each revision key with the index of its user
/// key (below `keys`), in revision order as the `key` bucket sorts them.
///
/// etcd keeps, for each user key, the newest revision at or below `rev`
/// unless it is a tombstone, and every revision above `rev` (3.4
/// `mvcc/key_index.go`, `keyIndex.compact` and `doCompact`: the
/// generations whose tombstone is at or below `rev` are dropped whole, and
/// in the generation that remains the newest revision at or below `rev` is
/// kept; `mvcc/kvstore_compaction.go`, `scheduleCompaction`, deletes every
/// revision key up to `rev` not kept). A user key index at or past `keys`
/// keeps only its revisions above `rev`.
#[must_use]
pub fn kept_by_compaction(revs: &[(usize, RevisionKey)], keys: usize, rev: i64) -> Vec<bool> {
    let mut newest: Vec<Option<usize>> = vec![None; keys];
    for (i, (user, key)) in revs.iter().enumerate() {
        if key.revision.main <= rev
            && let Some(n) = newest.get_mut(*user)
        {
            *n = Some(i);
        }
    }
    revs.iter()
        .enumerate()
        .map(|(i, (user, key))| {
            key.revision.main > rev
                || (newest.get(*user).copied().flatten() == Some(i) && !key.tombstone)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::Revision;

    fn rev(user: usize, main: i64, tombstone: bool) -> (usize, RevisionKey) {
        (user, RevisionKey { revision: Revision { main, sub: 0 }, tombstone })
    }

    /// `keyIndex.compact`'s rule on one key deleted and put again, and
    /// one key put once.
    #[test]
    fn compaction_keeps_the_newest_put_at_or_below_rev() {
        let revs = [
            rev(0, 2, false),
            rev(0, 3, false),
            rev(0, 4, true),
            rev(1, 5, false),
            rev(0, 6, false),
        ];
        // The newest at or below 5 of key 0 is its tombstone: all gone.
        assert_eq!(kept_by_compaction(&revs, 2, 5), [false, false, false, true, true]);
        assert_eq!(kept_by_compaction(&revs, 2, 3), [false, true, true, true, true]);
        assert_eq!(kept_by_compaction(&revs, 2, 4), [false, false, false, true, true]);
        assert_eq!(kept_by_compaction(&revs, 2, 6), [false, false, false, true, true]);
        assert_eq!(kept_by_compaction(&revs, 2, 1), [true; 5]);
    }
}
