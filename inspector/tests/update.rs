//! App behaviour on fixed data: the evict question, touch and lock, map
//! ↔ tree selection, zoom, focus and overlays.

use mapwise_inspector::app::{Focus, Overlay, Residence, TreeRow};
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
    assert_eq!(a.message().unwrap().text, "evicted 28 of 28 resident pages; none left");
    assert!(a.totals().iter().all(|k| k.resident_bytes == Some(0)));
}

#[test]
fn touch_and_lock() {
    let mut t = fixed(&testdata("small.db"));
    let mut a = app("small.db", &t, 80, 24);
    a.update(Action::Touch, &mut t);
    let r = a.data().residency.as_ref().unwrap();
    assert_eq!(r.resident_pages, r.total_pages);
    assert_eq!(a.message().unwrap().text, "touched the file: 16 of 16 pages resident (was 8)");

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
    let TreeRow::Group(g) = row else { panic!("cursor on {row:?}") };
    assert_eq!(a.layout().groups[g as usize].path, "wide");

    // Enter in the map expands the bucket and lands on the page's run.
    a.update(Action::Enter, &mut t);
    assert_eq!(a.focus(), Focus::Tree);
    let TreeRow::Run(ri) = a.tree_rows()[a.tree_cursor()] else { panic!("cursor not on a run") };
    assert_eq!(a.layout().regions.get(ri).map(|r| r.id), Some(6));

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
    assert_eq!(a.overlay(), Overlay::Help, "keys other than Esc/? keep help open");
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
    use mapwise_native::os::residency::Trust;
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

#[test]
fn evict_says_what_stayed_resident() {
    // Pages another process maps or locks (or tmpfs, or dirty pages) stay
    // resident: the message counts them instead of claiming an eviction.
    let mut t = fixed(&testdata("etcd-small.db"));
    t.held = vec![0, 2, 4];
    let mut a = app("etcd-small.db", &t, 80, 24);
    a.update(Action::Evict, &mut t);
    a.update(Action::Yes, &mut t);
    assert_eq!(
        a.message().unwrap().text,
        "evicted 25 of 28 resident pages; 3 still resident \
         (mapped or locked by a process, dirty, or on tmpfs)"
    );
    assert_eq!(a.data().residency.as_ref().unwrap().resident_pages, 3);
    a.update(Action::Evict, &mut t);
    a.update(Action::Yes, &mut t);
    assert_eq!(
        a.message().unwrap().text,
        "evicted 0 of 3 resident pages; 3 still resident \
         (mapped or locked by a process, dirty, or on tmpfs)"
    );
}

#[test]
fn advise_menu_applies_to_the_cell_or_the_file() {
    let mut t = fixed(&testdata("small.db"));
    let mut a = app("small.db", &t, 120, 40);
    assert_eq!(a.pages_per_cell(), 1);
    for _ in 0..4 {
        a.update(Action::Right, &mut t);
    }
    a.update(Action::Advise, &mut t);
    assert_eq!(a.overlay(), Overlay::Advise);
    // Keys other than the menu's are ignored while it is open.
    a.update(Action::Touch, &mut t);
    assert_eq!(a.overlay(), Overlay::Advise);
    a.update(Action::Down, &mut t);
    a.update(Action::Enter, &mut t);
    assert_eq!(a.overlay(), Overlay::None);
    assert_eq!(
        a.message().unwrap().text,
        "DONTNEED on page 4 (bytes 16384..20480): resident 1 → 0 of 1 OS pages"
    );
    assert_eq!(a.cell(4).unwrap().residence, Residence::None);
    assert_eq!(a.cell(6).unwrap().residence, Residence::All);

    // The menu remembers the advice; ↑ goes back to WILLNEED, → picks the
    // whole file.
    a.update(Action::Advise, &mut t);
    a.update(Action::Up, &mut t);
    a.update(Action::Right, &mut t);
    a.update(Action::Enter, &mut t);
    assert_eq!(
        a.message().unwrap().text,
        "WILLNEED on the whole file: resident 7 → 16 of 16 OS pages"
    );

    // Read-ahead advice changes no residency and says whom it affects.
    a.update(Action::Advise, &mut t);
    a.update(Action::Down, &mut t);
    a.update(Action::Down, &mut t);
    a.update(Action::Enter, &mut t);
    let m = &a.message().unwrap().text;
    assert!(
        m.starts_with("SEQUENTIAL on the whole file: resident 16 → 16 of 16 OS pages; Linux keeps"),
        "{m}"
    );

    a.update(Action::Advise, &mut t);
    a.update(Action::Back, &mut t);
    assert_eq!(a.overlay(), Overlay::None);
    assert_eq!(a.message().unwrap().text, "advise cancelled");
    assert!(a.running());
}

#[test]
fn dontneed_on_a_cell_names_large_folios_among_the_reasons() {
    // DONTNEED on a range drops only the folios wholly inside it
    // (docs/residency.md, "Large folios"): a page that stays may belong
    // to a multi-page folio, which the whole-file evict never leaves.
    let mut t = fixed(&testdata("small.db"));
    t.held = vec![4];
    let mut a = app("small.db", &t, 120, 40);
    for _ in 0..4 {
        a.update(Action::Right, &mut t);
    }
    a.update(Action::Advise, &mut t);
    a.update(Action::Down, &mut t);
    a.update(Action::Enter, &mut t);
    assert_eq!(
        a.message().unwrap().text,
        "DONTNEED on page 4 (bytes 16384..20480): resident 1 → 1 of 1 OS pages; 1 still \
         resident (mapped or locked by a process, dirty, on tmpfs, or part of a multi-page \
         folio reaching past the range)"
    );
}

// ----- the same actions on real files, through the live `Watch` -----

/// vmtouch's resident page count of `path`.
fn vmtouch(path: &std::path::Path) -> u64 {
    crate::common::need(&[crate::common::Need::Vmtouch]);
    let out = std::process::Command::new("vmtouch").arg(path).output().expect("vmtouch");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.contains("Resident Pages:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|c| c.split('/').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no totals in {text}"))
}

/// Let the touch, evict or advise that the live target runs on a worker
/// finish, and apply its result as the next tick would.
fn finish(a: &mut mapwise_inspector::app::App, w: &mut mapwise_native::observe::watch::Watch) {
    let start = std::time::Instant::now();
    while a.busy() {
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "the worker did not finish");
        std::thread::sleep(std::time::Duration::from_millis(5));
        a.poll_jobs(w);
    }
}

fn live(
    path: &std::path::Path,
) -> (mapwise_native::observe::watch::Watch, mapwise_inspector::app::App) {
    use mapwise_core::bolt::WalkOptions;
    use mapwise_inspector::app::{App, Data};
    let w =
        mapwise_native::observe::watch::Watch::open(path, WalkOptions::default()).expect("watch");
    let mut a = App::new("live", Data::from_target(&w), std::time::Duration::from_millis(500));
    a.resize(120, 40);
    (w, a)
}

#[test]
fn evict_of_a_file_another_process_locks_says_nothing_was_evicted() {
    crate::common::need(&[crate::common::Need::Vmtouch]);
    let dir = crate::common::tmpdir();
    let path = crate::common::copy_to(dir.path(), "etcd-small.db");
    // `vmtouch -l`: another process maps, touches and locks every page.
    let mut locker = std::process::Command::new("vmtouch")
        .arg("-l")
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("vmtouch -l");
    for _ in 0..100 {
        if vmtouch(&path) == 55 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (mut w, mut a) = live(&path);
    a.update(Action::Evict, &mut w);
    a.update(Action::Yes, &mut w);
    finish(&mut a, &mut w);
    let text = a.message().unwrap().text.clone();
    let still = vmtouch(&path);
    let _ = locker.kill();
    let _ = locker.wait();
    assert_eq!(still, 55, "vmtouch: the locked pages stayed");
    assert_eq!(
        text,
        "evicted 0 of 55 resident pages; 55 still resident \
         (mapped or locked by a process, dirty, or on tmpfs)"
    );
    assert_eq!(a.data().residency.as_ref().unwrap().resident_pages, 55);

    // Unlocked, the same key evicts everything, and says so (memory
    // pressure may have taken some pages meanwhile: n of n).
    a.update(Action::Evict, &mut w);
    a.update(Action::Yes, &mut w);
    finish(&mut a, &mut w);
    let m = a.message().unwrap().text.clone();
    assert!(m.starts_with("evicted ") && m.ends_with(" resident pages; none left"), "{m}");
    assert_eq!(vmtouch(&path), 0);
}

#[test]
fn evict_on_tmpfs_keeps_every_page_and_says_so() {
    let shm = std::path::Path::new("/dev/shm");
    assert!(shm.is_dir(), "/dev/shm (tmpfs) is needed");
    let dir = tempfile::tempdir_in(shm).expect("tmpdir in /dev/shm");
    let path = dir.path().join("etcd-small.db");
    std::fs::copy(testdata("etcd-small.db"), &path).unwrap();
    let (mut w, mut a) = live(&path);
    a.update(Action::Evict, &mut w);
    a.update(Action::Yes, &mut w);
    // The evict runs on a worker; until its result is applied the status
    // line says it is under way, and a second one waits its turn.
    assert!(a.busy());
    assert_eq!(a.message().unwrap().text, "evicting…");
    a.update(Action::Touch, &mut w);
    assert_eq!(a.message().unwrap().text, "still evicting…");
    finish(&mut a, &mut w);
    assert_eq!(
        a.message().unwrap().text,
        "evicted 0 of 55 resident pages; 55 still resident \
         (mapped or locked by a process, dirty, or on tmpfs)"
    );
}

#[test]
fn quitting_during_an_evict_finishes_it_first() {
    crate::common::need(&[crate::common::Need::Vmtouch]);
    let dir = crate::common::tmpdir();
    let path = crate::common::copy_to(dir.path(), "etcd-small.db");
    let (mut w, mut a) = live(&path);
    a.update(Action::Evict, &mut w);
    a.update(Action::Yes, &mut w);
    assert!(a.busy());
    a.update(Action::Quit, &mut w);
    assert!(!a.running());
    // What the event loop does once the user has quit.
    assert!(a.finishing());
    assert_eq!(a.message().unwrap().text, "evicting… quitting when it is done");
    assert!(a.wait_jobs(&mut w));
    assert!(!a.busy() && !a.finishing());
    assert!(a.message().unwrap().text.starts_with("evicted "), "{:?}", a.message());
    assert_eq!(vmtouch(&path), 0, "the evict went through");
}

#[test]
fn willneed_makes_an_evicted_range_resident() {
    crate::common::need(&[crate::common::Need::Vmtouch]);
    let dir = crate::common::tmpdir();
    let path = crate::common::copy_to(dir.path(), "etcd-small.db");
    let (mut w, mut a) = live(&path);
    a.update(Action::Evict, &mut w);
    a.update(Action::Yes, &mut w);
    finish(&mut a, &mut w);
    assert_eq!(vmtouch(&path), 0);
    // WILLNEED on the selected cell: page 20 (one OS page; the file's
    // pages are 4 KiB).
    assert_eq!(a.pages_per_cell(), 1);
    for _ in 0..20 {
        a.update(Action::Right, &mut w);
    }
    a.update(Action::Advise, &mut w);
    a.update(Action::Enter, &mut w);
    finish(&mut a, &mut w);
    assert_eq!(
        a.message().unwrap().text,
        "WILLNEED on page 20 (bytes 81920..86016): resident 0 → 1 of 1 OS pages"
    );
    assert_eq!(a.cell(20).unwrap().residence, Residence::All);
    let shown = a.data().residency.as_ref().unwrap().resident_pages;
    assert_eq!(vmtouch(&path), shown, "vmtouch agrees with the map");
    // And on the whole file.
    a.update(Action::Advise, &mut w);
    a.update(Action::Right, &mut w);
    a.update(Action::Enter, &mut w);
    finish(&mut a, &mut w);
    let m = a.message().unwrap().text.clone();
    assert!(
        m.starts_with("WILLNEED on the whole file: resident ")
            && m.ends_with(" → 55 of 55 OS pages"),
        "{m}"
    );
    assert_eq!(vmtouch(&path), 55);
}

#[test]
fn lock_runs_on_a_worker_and_unlock_at_once() {
    let dir = crate::common::tmpdir();
    let path = crate::common::copy_to(dir.path(), "etcd-small.db");
    let (mut w, mut a) = live(&path);
    a.update(Action::Lock, &mut w);
    assert_eq!(a.message().unwrap().text, "locking…");
    finish(&mut a, &mut w);
    assert_eq!(a.message().unwrap().text, "locked 55 pages in memory (mlock); L again to unlock");
    assert!(a.data().locked);
    a.update(Action::Lock, &mut w);
    assert!(!a.busy());
    assert_eq!(a.message().unwrap().text, "unlocked (pages stay cached until evicted)");
    assert!(!a.data().locked);
}
