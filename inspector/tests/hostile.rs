//! The hostile-file table (`mapwise_testkit::hostile`) through the
//! inspector's subcommands: `layout`, `check`, `pages` and `etcd` on a sample of
//! the cases end within a time limit with exit 0, 1 or 2, never a panic,
//! and a failure names the structure and where it is. (The native suite
//! runs every case through core and the writers, the cli suite through
//! `mapwise`.)

use std::path::Path;
use std::time::{Duration, Instant};

use mapwise_testkit::hostile as cases;

use crate::common::run;

#[test]
fn hostile_files_through_inspector_subcommands() {
    let started = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace");
    let all = cases::cases(root, false);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut fails = Vec::new();
    let mut ran = 0;
    for c in all.iter().step_by(13) {
        let path = dir.path().join("case");
        std::fs::write(&path, &c.bytes).expect("write");
        let p = path.to_str().expect("utf-8");
        for sub in ["layout", "check", "pages", "etcd"] {
            if matches!(sub, "pages" | "etcd") && c.fmt != cases::Fmt::Bolt {
                continue;
            }
            ran += 1;
            let r = run(&[sub, p], Duration::from_secs(30));
            if !matches!(r.code, Some(0..=2)) || r.stderr.contains("panicked") {
                fails
                    .push(format!("{}: inspector {sub} exited {:?}: {}", c.name, r.code, r.stderr));
            } else if r.code != Some(0) {
                let text = format!("{}{}", r.stderr, r.stdout);
                if !cases::names_a_place(&text) {
                    fails.push(format!(
                        "{}: inspector {sub} failed without naming a place: {}",
                        c.name,
                        text.lines().next().unwrap_or_default()
                    ));
                }
            }
        }
    }
    eprintln!(
        "hostile files through the inspector: {ran} runs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    cases::assert_no_failures("hostile files through the inspector", &fails);
}

/// The same table in the TUI as `inspector open` builds it (a live
/// [`Watch`] of the file, the app, a terminal): every case is drawn at
/// two sizes while the keys walk the map, the structure and the detail
/// pane of every page, within a time limit and without a panic. A file
/// whose structure cannot be read says so on screen in a line naming the
/// place; one read with problems says how many and where to list them.
#[test]
fn hostile_files_in_the_tui() {
    use mapwise_core::bolt::WalkOptions;
    use mapwise_inspector::app::{App, Data};
    use mapwise_inspector::event::Action;
    use mapwise_native::observe::watch::Watch;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    const PER_CASE: Duration = Duration::from_secs(20);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace");
    let all = cases::cases(root, false);
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let mut fails = Vec::new();
    let mut shown_errors = 0;
    for c in &all {
        let case_started = Instant::now();
        let path = dir.path().join("case");
        std::fs::write(&path, &c.bytes).expect("write");
        let mut watch = match Watch::open(&path, WalkOptions::default()) {
            Ok(w) => w,
            Err(e) => {
                // `inspector open` stops here with this message.
                if !cases::names_a_place(&e.to_string()) {
                    fails.push(format!("{}: open failed without a place: {e}", c.name));
                }
                continue;
            }
        };
        watch.settle(Duration::from_secs(10));
        let mut app = App::new("case", Data::from_target(&watch), Duration::from_millis(500));
        let mut screens = Vec::new();
        for (w, h) in [(120u16, 40u16), (60, 16)] {
            app.resize(w, h);
            app.fetch_details(&watch);
            let mut keys = vec![Action::Home];
            // Every map cell's detail (bounded: the cases are small files).
            let cells = app.cell_count().min(64);
            keys.extend(std::iter::repeat_n(Action::Right, usize::try_from(cells).unwrap_or(0)));
            keys.extend([
                Action::End,
                Action::FocusNext,
                Action::Enter,
                Action::Down,
                Action::Enter,
                Action::PageDown,
                Action::FocusNext,
                Action::PageDown,
                Action::Home,
                Action::ZoomOut,
                Action::ZoomIn,
            ]);
            for a in keys {
                app.update(a, &mut watch);
                app.fetch_details(&watch);
            }
            let area = app.area();
            let mut t = Terminal::new(TestBackend::new(area.width, area.height)).expect("terminal");
            t.draw(|f| mapwise_inspector::ui::draw(f, &app)).expect("draw");
            screens.push(format!("{}", t.backend()));
        }
        let text = &screens[0];
        let snap = &app.data().snapshot;
        if let Some(e) = &snap.error {
            shown_errors += 1;
            if !cases::names_a_place(e) {
                fails.push(format!("{}: structure error without a place: {e}", c.name));
            }
            if !text.contains("structure:") {
                fails.push(format!("{}: the structure error is not on screen", c.name));
            }
        } else if snap.layout.problem_count() > 0
            && snap.unsettled.is_none()
            && !text.contains("structural problem")
        {
            fails.push(format!("{}: problems found but not said on screen", c.name));
        }
        if case_started.elapsed() > PER_CASE {
            fails.push(format!(
                "{}: took {:.1} s in the TUI",
                c.name,
                case_started.elapsed().as_secs_f64()
            ));
        }
    }
    eprintln!(
        "hostile files in the TUI: {} cases ({shown_errors} with a structure error on screen) in {:.1} s",
        all.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(shown_errors > 0, "no case showed a structure error: the table lost its teeth");
    cases::assert_no_failures("hostile files in the TUI", &fails);
}
