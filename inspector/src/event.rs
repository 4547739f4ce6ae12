//! Terminal events to [`Action`]s: a pure mapping, no state and no I/O.
//!
//! What an action *does* depends on the app's state (a `y` only means
//! something while a question is asked); that is decided in
//! [`crate::app::App::update`].

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::Playback;

/// Something the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Leave the inspector (`q`, `Ctrl-C`).
    Quit,
    /// Close the overlay, cancel the question, else quit (`Esc`).
    Back,
    /// Focus the next pane (`Tab`): map → structure → detail.
    FocusNext,
    /// Focus the previous pane (`Shift-Tab`).
    FocusPrev,
    /// Move up (`↑`, `k`).
    Up,
    /// Move down (`↓`, `j`).
    Down,
    /// Move left (`←`, `h`).
    Left,
    /// Move right (`→`, `l`).
    Right,
    /// One screen up (`PgUp`).
    PageUp,
    /// One screen down (`PgDn`).
    PageDown,
    /// To the start (`Home`, `g`).
    Home,
    /// To the end (`End`, `G`).
    End,
    /// Expand/collapse or select (`Enter`).
    Enter,
    /// Bring the whole file into the page cache (`t`, like `vmtouch -t`).
    Touch,
    /// Ask to drop the file from the page cache (`e`, like `vmtouch -e`).
    Evict,
    /// Open the advise menu (`a`): `posix_fadvise` WILLNEED, DONTNEED,
    /// SEQUENTIAL, RANDOM or NORMAL on the selected cell or the file.
    Advise,
    /// Lock or unlock the file's pages in memory (`L`, like `vmtouch -l`).
    Lock,
    /// Re-sample now (`r`).
    Refresh,
    /// Fewer pages per map cell (`+`).
    ZoomIn,
    /// More pages per map cell (`-`).
    ZoomOut,
    /// Show or hide the help overlay (`?`, `F1`).
    Help,
    /// Show or hide an etcd db's key prefixes in place of the tree (`p`).
    Prefixes,
    /// Sort the list of files by the next column (`s`, `inspector open
    /// DIR`).
    Sort,
    /// Answer yes (`y`).
    Yes,
    /// Answer no (`n`).
    No,
    /// Steer a replayed trace: `Space` play/pause, `,` `.` step back /
    /// forward, `[` `]` slower / faster.
    Play(Playback),
    /// The terminal now has this many columns and rows.
    Resize(u16, u16),
}

/// The action for a terminal event, if any.
#[must_use]
pub fn from_event(event: &Event) -> Option<Action> {
    match event {
        Event::Key(key) => from_key(*key),
        Event::Resize(w, h) => Some(Action::Resize(*w, *h)),
        _ => None,
    }
}

/// The action for a key press, if any. Releases are ignored; keys with
/// `Ctrl` or `Alt` mean nothing except `Ctrl-C` (quit).
#[must_use]
pub fn from_key(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char('c' | 'C') => Some(Action::Quit),
            _ => None,
        };
    }
    if key.modifiers.contains(KeyModifiers::ALT) {
        return None;
    }
    Some(match key.code {
        KeyCode::Char('q' | 'Q') => Action::Quit,
        KeyCode::Esc => Action::Back,
        KeyCode::Tab => Action::FocusNext,
        KeyCode::BackTab => Action::FocusPrev,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::Left | KeyCode::Char('h') => Action::Left,
        KeyCode::Right | KeyCode::Char('l') => Action::Right,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Enter => Action::Enter,
        KeyCode::Char('t') => Action::Touch,
        KeyCode::Char('e') => Action::Evict,
        KeyCode::Char('a') => Action::Advise,
        KeyCode::Char('L') => Action::Lock,
        KeyCode::Char('r') => Action::Refresh,
        KeyCode::Char('+' | '=') => Action::ZoomIn,
        KeyCode::Char('-' | '_') => Action::ZoomOut,
        KeyCode::Char('?') | KeyCode::F(1) => Action::Help,
        KeyCode::Char('p') => Action::Prefixes,
        KeyCode::Char('s') => Action::Sort,
        KeyCode::Char('y' | 'Y') => Action::Yes,
        KeyCode::Char('n' | 'N') => Action::No,
        KeyCode::Char(' ') => Action::Play(Playback::Toggle),
        KeyCode::Char(',' | '<') => Action::Play(Playback::StepBack),
        KeyCode::Char('.' | '>') => Action::Play(Playback::StepForward),
        KeyCode::Char('[') => Action::Play(Playback::Slower),
        KeyCode::Char(']') => Action::Play(Playback::Faster),
        _ => return None,
    })
}

/// Every key binding, as the help overlay lists it: (keys, what they do).
pub const BINDINGS: &[(&str, &str)] = &[
    ("q  Ctrl-C", "quit"),
    ("Esc", "close overlay / cancel question / quit"),
    ("Tab  S-Tab", "focus map → structure → detail"),
    ("←↓↑→  hjkl", "move (map cell, tree row, detail line)"),
    ("PgUp  PgDn", "one screen up / down"),
    ("Home End g G", "first / last"),
    ("Enter", "map: show in tree · tree: expand/collapse"),
    ("h l (detail)", "previous / next page run"),
    ("+  -", "zoom map in / out (pages per cell)"),
    ("t", "touch: read the whole file into cache"),
    ("e", "evict the file from the cache (asks y/n)"),
    ("a", "advise: WILLNEED DONTNEED SEQUENTIAL RANDOM NORMAL"),
    ("L", "lock / unlock the file in memory (mlock)"),
    ("r", "refresh now"),
    ("p", "etcd db: key prefixes (Enter: a prefix's next page)"),
    ("Space , . [ ]", "replay: play/pause, step, slower/faster"),
    ("?  F1", "this help"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyEventState, MouseEvent, MouseEventKind};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ch(c: char) -> Option<Action> {
        from_key(key(KeyCode::Char(c)))
    }

    #[test]
    fn letters() {
        assert_eq!(ch('q'), Some(Action::Quit));
        assert_eq!(ch('t'), Some(Action::Touch));
        assert_eq!(ch('e'), Some(Action::Evict));
        assert_eq!(ch('a'), Some(Action::Advise));
        assert_eq!(ch('r'), Some(Action::Refresh));
        assert_eq!(ch('?'), Some(Action::Help));
        assert_eq!(ch('y'), Some(Action::Yes));
        assert_eq!(ch('n'), Some(Action::No));
        assert_eq!(ch('+'), Some(Action::ZoomIn));
        assert_eq!(ch('='), Some(Action::ZoomIn));
        assert_eq!(ch('-'), Some(Action::ZoomOut));
        assert_eq!(ch(' '), Some(Action::Play(Playback::Toggle)));
        assert_eq!(ch(','), Some(Action::Play(Playback::StepBack)));
        assert_eq!(ch('.'), Some(Action::Play(Playback::StepForward)));
        assert_eq!(ch('['), Some(Action::Play(Playback::Slower)));
        assert_eq!(ch(']'), Some(Action::Play(Playback::Faster)));
        assert_eq!(ch('x'), None);
    }

    #[test]
    fn lock_is_capital_l_and_l_is_right() {
        assert_eq!(ch('l'), Some(Action::Right));
        // Terminals report Shift+l as 'L' with SHIFT set; both mean lock.
        assert_eq!(ch('L'), Some(Action::Lock));
        let shifted = KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT);
        assert_eq!(from_key(shifted), Some(Action::Lock));
    }

    #[test]
    fn movement() {
        assert_eq!(ch('h'), Some(Action::Left));
        assert_eq!(ch('j'), Some(Action::Down));
        assert_eq!(ch('k'), Some(Action::Up));
        assert_eq!(from_key(key(KeyCode::Up)), Some(Action::Up));
        assert_eq!(from_key(key(KeyCode::Down)), Some(Action::Down));
        assert_eq!(from_key(key(KeyCode::Left)), Some(Action::Left));
        assert_eq!(from_key(key(KeyCode::Right)), Some(Action::Right));
        assert_eq!(from_key(key(KeyCode::PageUp)), Some(Action::PageUp));
        assert_eq!(from_key(key(KeyCode::PageDown)), Some(Action::PageDown));
        assert_eq!(from_key(key(KeyCode::Home)), Some(Action::Home));
        assert_eq!(from_key(key(KeyCode::End)), Some(Action::End));
        assert_eq!(from_key(key(KeyCode::Enter)), Some(Action::Enter));
        assert_eq!(from_key(key(KeyCode::Tab)), Some(Action::FocusNext));
        assert_eq!(from_key(key(KeyCode::BackTab)), Some(Action::FocusPrev));
        assert_eq!(from_key(key(KeyCode::Esc)), Some(Action::Back));
        assert_eq!(from_key(key(KeyCode::F(1))), Some(Action::Help));
    }

    #[test]
    fn modifiers_and_releases() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(from_key(ctrl_c), Some(Action::Quit));
        let ctrl_e = KeyEvent::new(KeyCode::Char('e'), KeyModifiers::CONTROL);
        assert_eq!(from_key(ctrl_e), None);
        let alt_q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::ALT);
        assert_eq!(from_key(alt_q), None);
        let release = KeyEvent {
            code: KeyCode::Char('q'),
            modifiers: KeyModifiers::NONE,
            kind: KeyEventKind::Release,
            state: KeyEventState::NONE,
        };
        assert_eq!(from_key(release), None);
        let repeat = KeyEvent {
            kind: KeyEventKind::Repeat,
            ..KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)
        };
        assert_eq!(from_key(repeat), Some(Action::Down));
    }

    #[test]
    fn other_events() {
        assert_eq!(from_event(&Event::Resize(100, 30)), Some(Action::Resize(100, 30)));
        assert_eq!(from_event(&Event::FocusGained), None);
        let mouse = Event::Mouse(MouseEvent {
            kind: MouseEventKind::Moved,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        });
        assert_eq!(from_event(&mouse), None);
        assert_eq!(from_event(&Event::Key(key(KeyCode::Char('q')))), Some(Action::Quit));
    }

    #[test]
    fn every_binding_is_documented() {
        // Each action a key produces appears in the help list.
        let help: String = BINDINGS.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        for needle in [
            "quit",
            "Esc",
            "Tab",
            "PgUp",
            "Home",
            "Enter",
            "zoom",
            "touch",
            "evict",
            "lock",
            "refresh",
            "help",
            "replay",
            "advise",
            "WILLNEED",
            "DONTNEED",
            "SEQUENTIAL",
            "RANDOM",
            "NORMAL",
        ] {
            assert!(help.contains(needle), "help lacks {needle}");
        }
    }
}
