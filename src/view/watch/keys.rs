//! The live view's keys as a pure state machine: (mode, key) → (mode, action). Stopping asks for
//! confirmation; adding a sign asks two questions.

/// Where the keyboard input goes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Single-key commands.
    #[default]
    Normal,
    /// "Stop the loop? [y/N]".
    ConfirmStop,
    /// Typing what went wrong.
    SignWhat(String),
    /// Typing the fix (what went wrong is kept).
    SignFix(String, String),
}

/// A key, reduced to what the view uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Enter.
    Enter,
    /// Backspace.
    Backspace,
    /// Escape.
    Esc,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing but redraw.
    None,
    /// Leave the view (the loop continues).
    Quit,
    /// Stop the loop.
    Stop,
    /// Pause at the next boundary.
    Pause,
    /// Resume.
    Resume,
    /// Append a sign to AGENT.md.
    AddSign(String, String),
}

/// Apply a key.
#[must_use]
pub fn on_key(mode: Mode, key: Key) -> (Mode, Action) {
    match (mode, key) {
        (Mode::Normal, Key::Char('q') | Key::Esc) => (Mode::Normal, Action::Quit),
        (Mode::Normal, Key::Char('s')) => (Mode::ConfirmStop, Action::None),
        (Mode::Normal, Key::Char('p')) => (Mode::Normal, Action::Pause),
        (Mode::Normal, Key::Char('r')) => (Mode::Normal, Action::Resume),
        (Mode::Normal, Key::Char('a')) => (Mode::SignWhat(String::new()), Action::None),
        (Mode::ConfirmStop, Key::Char('y' | 'Y')) => (Mode::Normal, Action::Stop),
        (Mode::ConfirmStop, _) => (Mode::Normal, Action::None),
        (Mode::SignWhat(_) | Mode::SignFix(..), Key::Esc) => (Mode::Normal, Action::None),
        (Mode::SignWhat(w), Key::Enter) if !w.trim().is_empty() => {
            (Mode::SignFix(w, String::new()), Action::None)
        }
        (Mode::SignWhat(mut w), Key::Char(c)) => {
            w.push(c);
            (Mode::SignWhat(w), Action::None)
        }
        (Mode::SignWhat(mut w), Key::Backspace) => {
            w.pop();
            (Mode::SignWhat(w), Action::None)
        }
        (Mode::SignFix(w, f), Key::Enter) if !f.trim().is_empty() => {
            (Mode::Normal, Action::AddSign(w, f))
        }
        (Mode::SignFix(w, mut f), Key::Char(c)) => {
            f.push(c);
            (Mode::SignFix(w, f), Action::None)
        }
        (Mode::SignFix(w, mut f), Key::Backspace) => {
            f.pop();
            (Mode::SignFix(w, f), Action::None)
        }
        (m, _) => (m, Action::None),
    }
}

/// The prompt shown for a mode (empty in normal mode).
#[must_use]
pub fn prompt(mode: &Mode) -> String {
    match mode {
        Mode::Normal => String::new(),
        Mode::ConfirmStop => "Stop the loop? [y/N]".into(),
        Mode::SignWhat(w) => {
            format!("New sign — what went wrong? > {w}_   (Enter next, Esc cancel)")
        }
        Mode::SignFix(_, f) => {
            format!("What should the agent do differently? > {f}_   (Enter saves)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(keys: &[Key]) -> (Mode, Vec<Action>) {
        let mut m = Mode::Normal;
        let mut acts = Vec::new();
        for k in keys {
            let (nm, a) = on_key(m, *k);
            m = nm;
            if a != Action::None {
                acts.push(a);
            }
        }
        (m, acts)
    }

    fn typed(s: &str) -> Vec<Key> {
        s.chars().map(Key::Char).collect()
    }

    #[test]
    fn stop_needs_confirmation() {
        assert_eq!(feed(&[Key::Char('s'), Key::Char('n')]).1, vec![]);
        assert_eq!(
            feed(&[Key::Char('s'), Key::Char('y')]).1,
            vec![Action::Stop]
        );
    }

    #[test]
    fn a_sign_takes_two_answers() {
        let mut keys = vec![Key::Char('a')];
        keys.extend(typed("broke lonks"));
        keys.extend([
            Key::Backspace,
            Key::Backspace,
            Key::Backspace,
            Key::Backspace,
        ]);
        keys.extend(typed("inks"));
        keys.push(Key::Enter);
        keys.extend(typed("test links"));
        keys.push(Key::Enter);
        let (m, acts) = feed(&keys);
        assert_eq!(m, Mode::Normal);
        assert_eq!(
            acts,
            vec![Action::AddSign("broke links".into(), "test links".into())]
        );
    }

    #[test]
    fn typing_q_in_a_sign_does_not_quit_and_esc_cancels() {
        let (m, acts) = feed(&[Key::Char('a'), Key::Char('q'), Key::Esc]);
        assert_eq!((m, acts), (Mode::Normal, vec![]));
        assert_eq!(
            feed(&[Key::Char('a'), Key::Enter]).0,
            Mode::SignWhat(String::new())
        );
    }

    #[test]
    fn single_keys() {
        assert_eq!(
            feed(&[Key::Char('p'), Key::Char('r'), Key::Char('q')]).1,
            vec![Action::Pause, Action::Resume, Action::Quit]
        );
    }
}
