//! The structure tree pane's own state: the buckets expanded, their page
//! runs, the rows listed, the cursor and the scroll. Which page a row
//! stands for, and following the map's selection, stay in
//! [`super::App`], which knows the selection and the file's format.

use std::collections::{HashMap, HashSet};

use mapwise_core::layout::{Kind, Layout};

use super::TreeRow;

/// The structure tree pane.
#[derive(Debug, Default)]
pub(super) struct TreePane {
    /// Paths of the buckets whose page runs are listed.
    pub(super) expanded: HashSet<String>,
    /// Page runs of the expanded buckets ([`super::App::runs_of`]).
    pub(super) runs: HashMap<u32, Vec<usize>>,
    /// Whether each bucket (by group index) has a branch or leaf run.
    pub(super) has_runs: Vec<bool>,
    /// The rows listed.
    pub(super) rows: Vec<TreeRow>,
    /// The row under the cursor.
    pub(super) cursor: usize,
    /// The first row on screen.
    pub(super) offset: usize,
}

impl TreePane {
    /// The page runs of the expanded buckets, each by depth then offset: one
    /// pass over the regions (already in offset order), then a counting
    /// sort by depth. Buckets not expanded cost nothing, so a new snapshot
    /// of a 2 GiB file with its main bucket folded sorts no 500k-run list.
    pub(super) fn expanded_runs(&self, layout: &Layout) -> HashMap<u32, Vec<usize>> {
        let mut runs: HashMap<u32, Vec<usize>> = layout
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| self.expanded.contains(&g.path))
            .filter_map(|(i, _)| Some((u32::try_from(i).ok()?, Vec::new())))
            .collect();
        if runs.is_empty() {
            return runs;
        }
        for (i, r) in layout.regions.iter().enumerate() {
            if let (Some(g), Kind::Branch | Kind::Leaf) = (r.group, r.kind)
                && let Some(list) = runs.get_mut(&g)
            {
                list.push(i);
            }
        }
        let depth = |i: usize| layout.regions.get(i).map_or(0, |r| usize::from(r.depth));
        for list in runs.values_mut() {
            let mut by_depth: Vec<Vec<usize>> = Vec::new();
            for &i in list.iter() {
                let d = depth(i);
                if by_depth.len() <= d {
                    by_depth.resize_with(d + 1, Vec::new);
                }
                by_depth[d].push(i);
            }
            *list = by_depth.concat();
        }
        runs
    }

    /// The page runs of an expanded bucket (indices into the regions), by
    /// depth then offset; empty for a bucket not expanded.
    pub(super) fn runs_of(&self, group: u32) -> &[usize] {
        self.runs.get(&group).map_or(&[], Vec::as_slice)
    }

    /// List the buckets of `layout` again, each expanded one followed by
    /// its runs; the cursor stays on its row when that row is still there.
    pub(super) fn rebuild(&mut self, layout: &Layout) {
        let keep = self.rows.get(self.cursor).copied();
        let mut rows = Vec::new();
        for (i, g) in layout.groups.iter().enumerate() {
            let Ok(gi) = u32::try_from(i) else { break };
            rows.push(TreeRow::Group(gi));
            if self.expanded.contains(&g.path) {
                rows.extend(self.runs_of(gi).iter().map(|&r| TreeRow::Run(r)));
            }
        }
        self.rows = rows;
        self.cursor = keep
            .and_then(|k| self.rows.iter().position(|r| *r == k))
            .unwrap_or_else(|| self.cursor.min(self.rows.len().saturating_sub(1)));
    }

    /// Scroll the least that shows the cursor, with `height` rows on
    /// screen.
    pub(super) fn show_cursor(&mut self, height: usize) {
        if self.cursor < self.offset {
            self.offset = self.cursor;
        } else if self.cursor >= self.offset + height {
            self.offset = self.cursor + 1 - height;
        }
        self.offset = self.offset.min(self.rows.len().saturating_sub(height));
    }
}
