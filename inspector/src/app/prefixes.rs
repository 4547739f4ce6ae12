//! The etcd prefix pane's own state: the key prefixes of an etcd db
//! ([`crate::etcd::prefixes`]), the one under the cursor, and the
//! computation under way. What it marks on the map and how it is drawn
//! stay in [`super::App`] and `ui`.

use std::time::Duration;

use crate::etcd::{PrefixReport, Prefixes};
use crate::event::Action;
use crate::worker::Repeated;

/// The least time between two counts of a changing file: a count reads
/// the whole `key` bucket, so a busy db is not re-read non-stop.
pub(super) const RECOUNT_AFTER: Duration = Duration::from_secs(5);

/// The prefix pane.
#[derive(Debug)]
pub(super) struct PrefixPane {
    /// `true` while the pane replaces the structure tree.
    pub(super) open: bool,
    /// The last prefixes computed (`None` before the first).
    pub(super) rows: Option<Prefixes>,
    /// The row under the cursor.
    pub(super) cursor: usize,
    /// The first row on screen.
    pub(super) offset: usize,
    /// The counts, at most every [`RECOUNT_AFTER`].
    pub(super) count: Repeated<Prefixes>,
    /// The structure changed since `rows` were computed.
    pub(super) stale: bool,
}

impl Default for PrefixPane {
    fn default() -> Self {
        PrefixPane {
            open: false,
            rows: None,
            cursor: 0,
            offset: 0,
            count: Repeated::new(RECOUNT_AFTER),
            stale: false,
        }
    }
}

impl PrefixPane {
    /// The prefixes, when computed.
    pub(super) fn list(&self) -> &[PrefixReport] {
        match &self.rows {
            Some(Ok(rows)) => rows,
            _ => &[],
        }
    }

    /// The prefix under the cursor.
    pub(super) fn selected(&self) -> Option<&PrefixReport> {
        self.list().get(self.cursor)
    }

    /// Take a finished computation, keeping the cursor on the same prefix;
    /// `true` when one arrived.
    pub(super) fn poll(&mut self) -> bool {
        let Some(answer) = self.count.poll() else {
            return false;
        };
        let rows = answer.unwrap_or_else(|| Err("the prefix count stopped".into()));
        let name = self.selected().map(|p| p.prefix.clone());
        self.rows = Some(rows);
        let list = self.list();
        self.cursor = name
            .and_then(|n| list.iter().position(|p| p.prefix == n))
            .unwrap_or(self.cursor)
            .min(list.len().saturating_sub(1));
        true
    }

    /// Move the cursor for `action` with `height` rows on screen; `false`
    /// when `action` does not move it.
    pub(super) fn key(&mut self, action: Action, height: usize) -> bool {
        let last = self.list().len().saturating_sub(1);
        self.cursor = match action {
            Action::Up => self.cursor.saturating_sub(1),
            Action::Down => self.cursor.saturating_add(1).min(last),
            Action::PageUp => self.cursor.saturating_sub(height.max(1)),
            Action::PageDown => self.cursor.saturating_add(height.max(1)).min(last),
            Action::Home => 0,
            Action::End => last,
            _ => return false,
        };
        self.show_cursor(height);
        true
    }

    /// Scroll so the cursor is among the `height` rows on screen.
    pub(super) fn show_cursor(&mut self, height: usize) {
        let height = height.max(1);
        if self.cursor < self.offset {
            self.offset = self.cursor;
        } else if self.cursor >= self.offset + height {
            self.offset = self.cursor + 1 - height;
        }
    }
}
