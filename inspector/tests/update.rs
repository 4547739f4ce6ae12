//! App behaviour on fixed data: the evict question, touch and lock, map
//! ↔ tree selection, zoom, focus and overlays.

use mapwise_inspector::app::{Focus, Overlay, TreeRow};
use mapwise_inspector::event::Action;

use crate::common::{app, fixed, testdata};

#[test]
fn evict_asks_first() {
    let mut t = fixed(&testdata("etcd-small.db"));
    let mut a = app("etcd-small.db", &t, 80, 24);
    let before = a.data().residency.as_ref().unwrap().resident_pages;
    assert!(before > 0);

    a.update(Action::Evict, &mut t);
    assert_eq!(a.overlay(), Overlay::ConfirmEvict);
    a.update(Action::No, &mut t);
    assert_eq!(a.overlay(), Overlay::None);
    assert_eq!(a.message().unwrap().text, "evict cancelled");
    assert_eq!(a.data().residency.as_ref().unwrap().resident_pages, before);

    // Any other key cancels too, and is not acted on.
    a.update(Action::Evict, &mut t);
    a.update(Action::Down, &mut t);
    assert_eq!(a.overlay(), Overlay::None);
    assert_eq!(a.selected(), 0);
    // Esc cancels without quitting.
    a.update(Action::Evict, &mut t);
    a.update(Action::Back, &mut t);
    assert!(a.running());

    a.update(Action::Evict, &mut t);
    a.update(Action::Yes, &mut t);
    assert_eq!(a.data().residency.as_ref().unwrap().resident_pages, 0);
    assert!(a.message().unwrap().text.contains("evicted"));
    assert!(a.totals().iter().all(|k| k.resident_bytes == Some(0)));
}

#[test]
fn touch_and_lock() {
    let mut t = fixed(&testdata("small.db"));
    let mut a = app("small.db", &t, 80, 24);
    a.update(Action::Touch, &mut t);
    let r = a.data().residency.as_ref().unwrap();
    assert_eq!(r.resident_pages, r.total_pages);
    assert_eq!(
        a.message().unwrap().text,
        "touched 16 pages (whole file read into the cache)"
    );

    a.update(Action::Lock, &mut t);
    assert!(a.data().locked);
    assert!(a.message().unwrap().text.starts_with("locked 16 pages"));
    a.update(Action::Lock, &mut t);
    assert!(!a.data().locked);
    assert!(a.message().unwrap().text.starts_with("unlocked"));
}

#[test]
fn map_and_tree_follow_each_other() {
    let mut t = fixed(&testdata("small.db"));
    let mut a = app("small.db", &t, 120, 40);
    // Page 6 is the leaf of bucket `wide`: moving there in the map moves
    // the tree cursor to that bucket.
    for _ in 0..6 {
        a.update(Action::Right, &mut t);
    }
    assert_eq!(a.selected(), 6);
    let row = a.tree_rows()[a.tree_cursor()];
    let TreeRow::Group(g) = row else {
        panic!("cursor on {row:?}")
    };
    assert_eq!(a.layout().groups[g as usize].path, "wide");

    // Enter in the map expands the bucket and lands on the page's run.
    a.update(Action::Enter, &mut t);
    assert_eq!(a.focus(), Focus::Tree);
    let TreeRow::Run(ri) = a.tree_rows()[a.tree_cursor()] else {
        panic!("cursor not on a run")
    };
    assert_eq!(a.layout().regions[ri].id, 6);

    // Moving in the tree moves the map: up to `wide`'s sibling buckets.
    a.update(Action::Home, &mut t);
    assert_eq!(a.tree_cursor(), 0);
    assert_eq!(a.selected(), 10, "the root bucket's root page");
    a.update(Action::End, &mut t);
    assert_eq!(a.selected(), 6);
    // Left on a run goes to its bucket; Left again collapses it.
    a.update(Action::Left, &mut t);
    assert!(matches!(a.tree_rows()[a.tree_cursor()], TreeRow::Group(_)));
    let rows = a.tree_rows().len();
    a.update(Action::Left, &mut t);
    assert_eq!(a.tree_rows().len(), rows - 1);
}

#[test]
fn map_keys_move_by_cells_rows_and_screens() {
    let mut t = fixed(&testdata("etcd-small.db"));
    let mut a = app("etcd-small.db", &t, 80, 24);
    let cols = a.grid().cols;
    a.update(Action::Down, &mut t);
    assert_eq!(a.selected(), cols);
    a.update(Action::Up, &mut t);
    a.update(Action::Up, &mut t);
    assert_eq!(a.selected(), 0, "clamped at the top");
    a.update(Action::End, &mut t);
    assert_eq!(a.selected(), 54);
    a.update(Action::Right, &mut t);
    assert_eq!(a.selected(), 54, "clamped at the end");
    a.update(Action::PageUp, &mut t);
    assert_eq!(a.selected(), 0);
    a.update(Action::PageDown, &mut t);
    assert_eq!(a.selected(), 54);
    a.update(Action::Home, &mut t);
    assert_eq!(a.selected(), 0);
}

#[test]
fn zoom_halves_and_doubles_pages_per_cell() {
    let mut t = fixed(&testdata("freelist.db"));
    // A small screen: 128 pages do not fit one per cell.
    let mut a = app("freelist.db", &t, 40, 12);
    let fit = a.pages_per_cell();
    assert!(fit > 1, "fit {fit}");
    a.update(Action::ZoomIn, &mut t);
    assert_eq!(a.pages_per_cell(), (fit / 2).max(1));
    while a.pages_per_cell() > 1 {
        a.update(Action::ZoomIn, &mut t);
    }
    a.update(Action::ZoomIn, &mut t);
    assert_eq!(a.pages_per_cell(), 1);
    // Scrolling keeps the selection on screen.
    a.update(Action::End, &mut t);
    assert!(a.cell_position(a.selected()).is_some());
    assert!(a.scroll_row() > 0);
    a.update(Action::Home, &mut t);
    assert_eq!(a.scroll_row(), 0);
    for _ in 0..10 {
        a.update(Action::ZoomOut, &mut t);
    }
    assert_eq!(a.pages_per_cell(), fit, "never coarser than the fit");
    assert_eq!(a.scroll_row(), 0);
}

#[test]
fn focus_cycles_and_detail_scrolls() {
    let mut t = fixed(&testdata("small.db"));
    let mut a = app("small.db", &t, 80, 24);
    assert_eq!(a.focus(), Focus::Map);
    a.update(Action::FocusNext, &mut t);
    assert_eq!(a.focus(), Focus::Tree);
    a.update(Action::FocusNext, &mut t);
    assert_eq!(a.focus(), Focus::Detail);
    // Right in the detail pane: next page run (meta 1, then the pending
    // stretch 2–3).
    a.update(Action::Right, &mut t);
    assert_eq!(a.selected(), 1);
    a.update(Action::Right, &mut t);
    a.update(Action::Right, &mut t);
    assert_eq!(a.selected(), 4);
    a.fetch_details(&t);
    a.update(Action::End, &mut t);
    assert!(a.detail_scroll() > 0, "page 4's elements overflow the pane");
    a.update(Action::Home, &mut t);
    assert_eq!(a.detail_scroll(), 0);
    a.update(Action::FocusNext, &mut t);
    assert_eq!(a.focus(), Focus::Map);
    a.update(Action::FocusPrev, &mut t);
    assert_eq!(a.focus(), Focus::Detail);
}

#[test]
fn esc_closes_help_then_quits() {
    let mut t = fixed(&testdata("small.db"));
    let mut a = app("small.db", &t, 80, 24);
    a.update(Action::Help, &mut t);
    a.update(Action::Down, &mut t);
    assert_eq!(
        a.overlay(),
        Overlay::Help,
        "keys other than Esc/? keep help open"
    );
    a.update(Action::Back, &mut t);
    assert_eq!(a.overlay(), Overlay::None);
    assert!(a.running());
    a.update(Action::Back, &mut t);
    assert!(!a.running());
    // q quits from anywhere, even with an overlay.
    let mut a = crate::common::app("small.db", &t, 80, 24);
    a.update(Action::Help, &mut t);
    a.update(Action::Quit, &mut t);
    assert!(!a.running());
}

#[test]
fn resize_keeps_selection_visible() {
    let mut t = fixed(&testdata("etcd-small.db"));
    let mut a = app("etcd-small.db", &t, 120, 40);
    a.update(Action::End, &mut t);
    a.update(Action::Resize(40, 12), &mut t);
    assert_eq!(a.area().width, 40);
    // Zoomed in to one page per cell on a small screen, the last page is
    // still on screen.
    while a.pages_per_cell() > 1 {
        a.update(Action::ZoomIn, &mut t);
    }
    assert!(a.cell_position(54).is_some());
    a.update(Action::Resize(200, 60), &mut t);
    assert!(a.cell_position(54).is_some());
}

#[test]
fn cells_clip_to_a_shrunken_file() {
    // The structure says 16 pages; the file now has 10 (truncated under
    // the watch): cells past the end are drawn as past-EOF, never resident.
    use mapwise_inspector::app::Residence;
    use mapwise_native::residency::Trust;
    let mut t = fixed(&testdata("small.db"));
    t.residency = Some(crate::common::synthetic(10 * 4096, Trust::Known, |_| true));
    let a = app("small.db", &t, 120, 40);
    assert_eq!(a.pages(), 16);
    assert_eq!(a.cell(9).unwrap().residence, Residence::All);
    assert_eq!(a.cell(10).unwrap().residence, Residence::PastEof);
    assert_eq!(a.cell(15).unwrap().residence, Residence::PastEof);
    assert!(a.cell(16).is_none());
    crate::common::draw(&a);
}
