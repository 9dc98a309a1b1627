//! `wiggum watch <topic>`: the live view. On a terminal, a full-screen view redrawn every half
//! second with keys to stop, pause, resume and add a sign; elsewhere (a pipe, a log), one line
//! each time the status changes. Either way it ends when the loop stops; the loop never depends
//! on it.

pub mod keys;
pub mod view;

use std::io::IsTerminal;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};

use crate::disk::handle::Handle;
use crate::error::{Error, Result};
use crate::view::model::{self, Want};
use keys::{Action, Key, Mode};

const TICK: Duration = Duration::from_millis(500);

/// What one frame shows besides the state.
const FRAME: Want = Want {
    usage: false,
    recent: 8,
    plan: true,
    log_lines: 12,
};

/// How the view asks a loop to stop (`supervisor::control::request_stop`: the view reads, the
/// supervisor's part signals).
pub type Stop = fn(&Handle, u64) -> Result<crate::disk::lock::Holder>;

/// Run the view until the user quits or the loop stops.
pub fn run(topic: &str, stop: Stop) -> Result<i32> {
    let h = Handle::open(topic)?;
    if std::io::stdout().is_terminal() {
        interactive(&h, stop)
    } else {
        lines(&h)
    }
}

fn lines(h: &Handle) -> Result<i32> {
    let mut last = String::new();
    loop {
        let s = model::load(h, Want::default())?;
        // The loop's line, and the question waiting for an answer when there is one.
        let line = match s.question() {
            Some(q) => format!("{}\n  question: {q}", s.line()),
            None => s.line(),
        };
        if line != last {
            println!("{}", crate::sys::term::printable(&line));
            last = line;
        }
        if !s.running() {
            return Ok(0);
        }
        std::thread::sleep(TICK); // allow: the view polls the disk, never spins
    }
}

fn key_of(code: KeyCode) -> Option<Key> {
    match code {
        KeyCode::Char(c) => Some(Key::Char(c)),
        KeyCode::Enter => Some(Key::Enter),
        KeyCode::Backspace => Some(Key::Backspace),
        KeyCode::Esc => Some(Key::Esc),
        _ => None,
    }
}

fn act(h: &Handle, a: Action, stop: Stop) -> Result<String> {
    Ok(match a {
        Action::None | Action::Quit => String::new(),
        Action::Stop => {
            let holder = stop(h, 10)?;
            format!(
                "stop sent to pid {}; the agent gets 10 s to finish",
                holder.pid
            )
        }
        Action::Pause => {
            h.set_pause(true)?;
            "pausing at the next iteration boundary".into()
        }
        Action::Resume => {
            h.set_pause(false)?;
            "resumed".into()
        }
        Action::AddSign(what, fix) => {
            let path = h.layout.memory("AGENT.md");
            let text = crate::sys::fsutil::read_opt(&path)?.unwrap_or_default();
            crate::sys::fsutil::atomic_write(
                &path,
                crate::ralph::signs::add(&text, &what, &fix).as_bytes(),
            )?;
            "sign added to AGENT.md (the next iteration reads it)".into()
        }
    })
}

fn interactive(h: &Handle, stop: Stop) -> Result<i32> {
    let mut term = ratatui::try_init()
        .map_err(|e| Error::runtime(format!("cannot open the terminal: {e}")))?;
    let result = (|| -> Result<i32> {
        let mut mode = Mode::Normal;
        let mut note = String::new();
        loop {
            let s = model::load(h, FRAME)?;
            let prompt = keys::prompt(&mode);
            let msg = if prompt.is_empty() {
                note.clone()
            } else {
                prompt
            };
            term.draw(|f| view::draw(f, &s, &msg))
                .map_err(|e| Error::runtime(format!("draw: {e}")))?;
            if !event::poll(TICK).map_err(|e| Error::runtime(format!("terminal: {e}")))? {
                continue;
            }
            let Event::Key(k) =
                event::read().map_err(|e| Error::runtime(format!("terminal: {e}")))?
            else {
                continue;
            };
            if k.kind != KeyEventKind::Press {
                continue;
            }
            let Some(key) = key_of(k.code) else { continue };
            let (next, action) = keys::on_key(mode, key);
            mode = next;
            if action == Action::Quit {
                return Ok(0);
            }
            note = match act(h, action, stop) {
                Ok(n) => n,
                Err(e) => format!("error: {e}"),
            };
        }
    })();
    ratatui::restore();
    result
}
