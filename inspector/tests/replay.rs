//! `inspector record` and `inspector replay`: a trace recorded around a
//! real read of a real bbolt file, played back into a `TestBackend`.

use std::time::Duration;

use mapwise_inspector::app::{App, Data, Playback, Target};
use mapwise_inspector::event::Action;
use mapwise_inspector::replay::Replay;
use mapwise_native::os::residency::{TO_EOF, evict};

use crate::common::{copy_to, draw, run, tmpdir};

/// The glyph drawn in the map cell of `page`.
fn glyph(app: &App, t: &ratatui::Terminal<ratatui::backend::TestBackend>, page: u64) -> String {
    let pos = app.cell_position(page).expect("page on screen");
    t.backend().buffer()[(pos.x, pos.y)].symbol().to_string()
}

/// `record -- CMD` exits with CMD's status, as `time` does: its own
/// code, or 128 + N when signal N killed it; the trace is written still.
#[test]
fn record_passes_on_the_commands_exit_status() {
    let dir = tmpdir();
    let db = copy_to(dir.path(), "small.db");
    let trace = dir.path().join("status.trace");
    for (script, want) in [("exit 0", 0), ("exit 7", 7), ("kill -TERM $$", 128 + 15)] {
        let r = run(
            &[
                "record",
                db.to_str().unwrap(),
                "-o",
                trace.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                script,
            ],
            Duration::from_secs(30),
        );
        assert_eq!(r.code, Some(want), "{script}: {}", r.stderr);
        assert!(r.stderr.contains("frames"), "{script}: {}", r.stderr);
    }
    // A command that cannot be found: 127, as `time` says.
    let r = run(
        &[
            "record",
            db.to_str().unwrap(),
            "-o",
            trace.to_str().unwrap(),
            "--",
            "/nonexistent/command",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(127), "{}", r.stderr);
    assert!(r.stderr.contains("cannot run /nonexistent/command"), "{}", r.stderr);
}

#[test]
fn a_recorded_read_plays_back_frame_by_frame() {
    let dir = tmpdir();
    let db = copy_to(dir.path(), "small.db");
    let trace = dir.path().join("cat.trace");
    let file = std::fs::File::open(&db).unwrap();
    evict(&file, 0, TO_EOF).unwrap();
    let script = format!("sleep 0.1; cat '{}' > /dev/null; sleep 0.1", db.display());
    let r = run(
        &[
            "record",
            db.to_str().unwrap(),
            "-o",
            trace.to_str().unwrap(),
            "--interval",
            "10",
            "--",
            "sh",
            "-c",
            &script,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("frames"), "{}", r.stderr);

    let t = mapwise_native::observe::trace::read(&trace).unwrap();
    let pages = t.frames[0].total_pages(t.header.os_page_size);
    assert!(t.frames.len() >= 5, "{} frames", t.frames.len());
    assert_eq!(t.frames[0].resident_pages(), 0, "evicted before the read");
    assert_eq!(t.frames.last().unwrap().resident_pages(), pages, "cat read the whole file");
    assert!(t.header.label.contains("cat"), "{}", t.header.label);

    // Replayed over another file, the replay says the structure may not
    // be the traced file's; over the traced file it says nothing.
    let other = copy_to(dir.path(), "etcd-small.db");
    let elsewhere = Replay::new(t.clone(), Some(&other), Duration::from_millis(10));
    let said = elsewhere.problem().unwrap_or_default();
    assert!(said.contains("may not be the traced file's"), "{said:?}");
    drop(elsewhere);

    let mut target = Replay::new(t, None, Duration::from_millis(10));
    assert_eq!(target.problem(), None);
    let mut app = App::new("replay", Data::from_target(&target), Duration::from_millis(10));
    app.resize(120, 40);
    assert_eq!(target.frame(), 0);
    let screen = draw(&app);
    assert_eq!(glyph(&app, &screen, 2), "░", "page 2 not yet resident");
    let text = format!("{:?}", screen.backend());
    assert!(text.contains("frame 1/"), "{text}");

    // Pause, then step to the last frame: every page resident.
    app.update(Action::Play(Playback::Toggle), &mut target);
    assert!(!target.is_playing());
    let frames = target.trace().frames.len();
    for _ in 0..frames {
        app.update(Action::Play(Playback::StepForward), &mut target);
    }
    assert_eq!(target.frame(), frames - 1);
    let screen = draw(&app);
    assert_eq!(glyph(&app, &screen, 2), "█", "page 2 resident at the end");
    let text = format!("{:?}", screen.backend());
    assert!(text.contains(&format!("frame {frames}/{frames}")), "{text}");

    // Stepping back shows earlier frames again; touch is refused.
    for _ in 0..frames {
        app.update(Action::Play(Playback::StepBack), &mut target);
    }
    assert_eq!(target.frame(), 0);
    assert!(target.touch().is_err());
    app.update(Action::Touch, &mut target);
    assert!(app.message().is_some_and(|m| m.error));

    // Playing advances with the ticks and stops at the end.
    app.update(Action::Play(Playback::Toggle), &mut target);
    for _ in 0..10_000 {
        if !target.is_playing() {
            break;
        }
        app.tick(&mut target);
    }
    assert_eq!(target.frame(), frames - 1);
    assert!(!target.is_playing());
    let said = app.message().map(|m| m.text.clone()).unwrap_or_default();
    assert!(said.contains("last frame"), "message after the end: {said:?}");
}

#[test]
fn damaged_and_foreign_traces_are_refused_clearly() {
    let dir = tmpdir();
    let not_trace = copy_to(dir.path(), "small.db");
    let r = run(&["replay", not_trace.to_str().unwrap()], Duration::from_secs(10));
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("not a mapwise residency trace"), "{}", r.stderr);
    let newer = dir.path().join("newer.trace");
    let mut bytes = b"MWTRACE\0".to_vec();
    bytes.extend_from_slice(&9u32.to_le_bytes());
    std::fs::write(&newer, &bytes).unwrap();
    let r = run(&["replay", newer.to_str().unwrap()], Duration::from_secs(10));
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("trace version 9"), "{}", r.stderr);
}
