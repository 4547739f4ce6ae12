//! The advise menu's own state (the advice chosen, and whether it applies
//! to the whole file) and its keys. What the selected cell covers, and
//! giving the advice, stay in [`super::App`].

use mapwise_native::os::residency::FileAdvice;

use crate::event::Action;

/// What a key does in the advise menu, beyond moving its own choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AdviseKey {
    /// Nothing more (the choice may have moved).
    Stay,
    /// Give the advice chosen.
    Apply,
    /// Close the menu without advising.
    Cancel,
    /// Quit the inspector.
    Quit,
}

/// The advise menu.
#[derive(Debug, Default)]
pub(super) struct AdvisePane {
    /// The advice chosen, an index into [`FileAdvice::ALL`].
    advice: usize,
    /// Whether it applies to the whole file rather than the selected cell.
    whole: bool,
}

impl AdvisePane {
    /// The advice chosen and whether it applies to the whole file.
    pub(super) fn choice(&self) -> (FileAdvice, bool) {
        let a = FileAdvice::ALL.get(self.advice).copied().unwrap_or(FileAdvice::WillNeed);
        (a, self.whole)
    }

    /// Apply `action` to the menu's choice; says what else it asks for.
    pub(super) fn key(&mut self, action: Action) -> AdviseKey {
        let n = FileAdvice::ALL.len();
        match action {
            Action::Quit => return AdviseKey::Quit,
            Action::Up => self.advice = (self.advice + n - 1) % n,
            Action::Down => self.advice = (self.advice + 1) % n,
            Action::Left | Action::Right | Action::FocusNext | Action::FocusPrev => {
                self.whole = !self.whole;
            }
            Action::Enter | Action::Yes => return AdviseKey::Apply,
            Action::Back | Action::No | Action::Advise => return AdviseKey::Cancel,
            _ => {}
        }
        AdviseKey::Stay
    }
}
