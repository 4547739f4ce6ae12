//! `hg log` without a revision argument: every revision from the tip
//! down (`logcmdutil._initialrevs`: `spanset(repo)` reversed), at most
//! `-l N` of them (`logcmdutil.getlimit`), in the `visible` view unless
//! `--hidden` (`mercurial/repoview.py`).

use mapwise_core::PageSource;
use mapwise_core::revlog::{Index, NULL_REV, Node, Rev};

use super::visible::Hidden;

/// One changeset as `hg log` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRow {
    /// `{rev}`.
    pub rev: Rev,
    /// `{node}`.
    pub node: Node,
    /// The entry's link revision (equal to `rev` in a changelog).
    pub linkrev: Rev,
    /// First parent revision (-1 for none).
    pub p1: Rev,
    /// Second parent revision (-1 for none).
    pub p2: Rev,
    /// `{parents}` as `hg log -Tjson` prints it: the first parent's node
    /// (the null node for a root), then the second's when there is one.
    pub parents: Vec<Node>,
}

/// The newest `limit` revisions of the changelog `index` not in `hidden`,
/// newest first (all of them for `None`). Reads only those entries (and
/// the hidden ones between them) and their parents' nodes, so a mapped
/// non-inline changelog is touched at its first page (the header) and
/// its tail.
///
/// Pass [`super::hidden`]'s set for what `hg log` prints (its `visible`
/// view), or an empty [`Hidden`] for `hg log --hidden`.
///
/// # Errors
/// The first damaged entry (bad read, negative length, parent that is not
/// older than its child).
pub fn log<S: PageSource + ?Sized>(
    index: &Index<'_, S>,
    limit: Option<u64>,
    hidden: &Hidden,
) -> Result<Vec<LogRow>, mapwise_core::Error> {
    let count = u64::from(index.len());
    let n = limit.map_or(count, |l| l.min(count));
    let mut rows = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut rev = index.tip();
    while rev > NULL_REV && (rows.len() as u64) < n {
        if hidden.contains(rev) {
            rev -= 1;
            continue;
        }
        let e = index.entry(rev)?;
        let (p1, p2) = index.checked_parents(&e)?;
        let mut parents = vec![index.node(p1)?];
        if p2 != NULL_REV {
            parents.push(index.node(p2)?);
        }
        rows.push(LogRow { rev, node: *e.node(), linkrev: e.link_rev(), p1, p2, parents });
        rev -= 1;
    }
    Ok(rows)
}
