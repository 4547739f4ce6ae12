//! The detail pane's own state: its scroll and the pages decoded for it.
//! What it shows of the selection (the lines) stays in [`super::App`],
//! which knows the selection and the layout.

use std::collections::HashMap;

use mapwise_core::bolt::PageDetail;
use mapwise_view::describe::Item;

use super::DETAIL_CACHE;
use crate::event::Action;

/// The detail pane.
#[derive(Debug, Default)]
pub(super) struct DetailPane {
    /// The first line on screen.
    pub(super) scroll: usize,
    /// Decoded bbolt pages by page id.
    pub(super) details: HashMap<u64, Result<PageDetail, String>>,
    /// Described structures by map page (formats other than bbolt).
    pub(super) items: HashMap<u64, Result<Vec<Item>, String>>,
}

impl DetailPane {
    /// Forget what was decoded (the structure changed).
    pub(super) fn forget(&mut self) {
        self.details.clear();
        self.items.clear();
    }

    /// Scroll for `action` with `height` lines on screen; `false` when
    /// `action` is not a scrolling key.
    pub(super) fn scroll_key(&mut self, action: Action, height: usize) -> bool {
        self.scroll = match action {
            Action::Up => self.scroll.saturating_sub(1),
            Action::Down => self.scroll.saturating_add(1),
            Action::PageUp => self.scroll.saturating_sub(height),
            Action::PageDown => self.scroll.saturating_add(height),
            Action::Home => 0,
            Action::End => usize::MAX,
            _ => return false,
        };
        true
    }

    /// Keep the scroll within `lines` lines shown `height` at a time.
    pub(super) fn clamp(&mut self, lines: usize, height: usize) {
        self.scroll = self.scroll.min(lines.saturating_sub(height));
    }

    /// Decode the pages `want` with `decode`, first emptying the cache
    /// when they would overfill it.
    pub(super) fn keep_details(
        &mut self,
        want: Vec<u64>,
        decode: impl Fn(u64) -> Result<PageDetail, String>,
    ) {
        if want.is_empty() {
            return;
        }
        if self.details.len() + want.len() > DETAIL_CACHE {
            self.details.clear();
        }
        for p in want {
            self.details.insert(p, decode(p));
        }
    }

    /// Describe map page `page` with `describe` unless already done,
    /// first emptying a full cache.
    pub(super) fn keep_items(
        &mut self,
        page: u64,
        describe: impl FnOnce() -> Result<Vec<Item>, String>,
    ) {
        if self.items.contains_key(&page) {
            return;
        }
        if self.items.len() >= DETAIL_CACHE {
            self.items.clear();
        }
        self.items.insert(page, describe());
    }
}
