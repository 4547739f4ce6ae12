//! The page map pane's own state (zoom, scroll, the kinds of the cells
//! last drawn) and the arithmetic of its keys. The selected page is not
//! here: the tree and the detail pane follow it too, so [`super::App`]
//! holds it.

use std::cell::RefCell;

use mapwise_core::layout::Kind;

use crate::event::Action;

/// Byte ranges of map cells, and the kind of each.
pub(super) type CellKinds = (Vec<(u64, u64)>, Vec<Kind>);

/// What a key does in the map pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MapKey {
    /// Move the selection by this many cells.
    Cells(i64),
    /// Select this page (clamped to the last).
    Page(u64),
    /// Open the selected page's bucket in the tree.
    Open,
}

/// The page map pane.
#[derive(Debug, Default)]
pub(super) struct MapPane {
    /// Pages per cell chosen by zooming; `None`: the whole file fits.
    pub(super) zoom: Option<u64>,
    /// First map row on screen.
    pub(super) scroll_row: u64,
    /// The kinds of the cells last drawn (their byte ranges, and each
    /// one's kind), until the layout or the cells change: the map is
    /// drawn at every sample, its kinds change only with the structure.
    pub(super) cell_kinds: RefCell<CellKinds>,
}

impl MapPane {
    /// Pages per cell now, given how many fit the whole file on screen.
    pub(super) fn pages_per_cell(&self, fit: u64) -> u64 {
        self.zoom.map_or(fit, |z| z.clamp(1, fit))
    }

    /// Half the pages per cell (`ppc` now), down to one.
    pub(super) fn zoom_in(&mut self, ppc: u64) {
        if ppc > 1 {
            self.zoom = Some((ppc / 2).max(1));
        }
    }

    /// Twice the pages per cell (`ppc` now), until the whole file fits
    /// (`fit`).
    pub(super) fn zoom_out(&mut self, ppc: u64, fit: u64) {
        let p = ppc.saturating_mul(2);
        self.zoom = (p < fit).then_some(p);
    }

    /// Scroll the least that shows map row `row` of `total_rows`, with
    /// `rows` on screen.
    pub(super) fn show_row(&mut self, row: u64, rows: u64, total_rows: u64) {
        if row < self.scroll_row {
            self.scroll_row = row;
        } else if row >= self.scroll_row.saturating_add(rows) {
            self.scroll_row = row + 1 - rows;
        }
        self.scroll_row = self.scroll_row.min(total_rows.saturating_sub(rows));
    }

    /// Put map row `row` in the middle of `rows` on screen (after a zoom).
    pub(super) fn centre_row(&mut self, row: u64, rows: u64) {
        self.scroll_row = row.saturating_sub(rows / 2);
    }

    /// Forget the cell kinds (the structure changed).
    pub(super) fn forget_kinds(&mut self) {
        *self.cell_kinds.get_mut() = CellKinds::default();
    }

    /// What `action` does in a map of `cols` by `rows` cells on screen.
    pub(super) fn key(action: Action, cols: u64, rows: u64) -> Option<MapKey> {
        let cols = i64::try_from(cols).unwrap_or(i64::MAX);
        let screen = cols.saturating_mul(i64::try_from(rows).unwrap_or(1));
        Some(match action {
            Action::Up => MapKey::Cells(-cols),
            Action::Down => MapKey::Cells(cols),
            Action::Left => MapKey::Cells(-1),
            Action::Right => MapKey::Cells(1),
            Action::PageUp => MapKey::Cells(-screen),
            Action::PageDown => MapKey::Cells(screen),
            Action::Home => MapKey::Page(0),
            Action::End => MapKey::Page(u64::MAX),
            Action::Enter => MapKey::Open,
            _ => return None,
        })
    }

    /// The cell `delta` cells from cell `cur`, within `cells`.
    pub(super) fn step(cur: u64, delta: i64, cells: u64) -> u64 {
        if delta < 0 {
            cur.saturating_sub(delta.unsigned_abs())
        } else {
            cur.saturating_add(delta.unsigned_abs()).min(cells.saturating_sub(1))
        }
    }
}
