//! A loop addressed by topic from any shell: where it lives (the registry), who runs it (its
//! locks), and the requests other shells may make of it (pause by request file; the stop's signal
//! is `supervisor::control`'s).
//! `cli` and `view` act on loops only through this.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::layout::Layout;
use super::lock::{self, Holder};
use super::{registry, requests, state};
use crate::error::{Error, Result};

/// One registered loop.
#[derive(Debug, Clone)]
pub struct Handle {
    /// The topic.
    pub topic: String,
    /// `$STUDIO_AGENTS_HOME`.
    pub home: PathBuf,
    /// Its paths.
    pub layout: Layout,
}

/// What to say of a loop whose artifact directory `dir` is gone, and how to go on.
#[must_use]
pub fn gone(topic: &str, dir: &std::path::Path) -> String {
    format!(
        "its artifact directory {} is gone (moved or deleted?); `studio-agents wiggum start {topic} --artifact-path <where it is now>` takes the loop up there",
        dir.display()
    )
}

impl Handle {
    /// The registered loop `topic` (exit 2 when unknown).
    pub fn open(topic: &str) -> Result<Handle> {
        let home = crate::config::home_dir()?;
        let root = registry::require(&home, topic)?;
        Ok(Handle::at(&home, topic, root))
    }

    /// [`Handle::open`] for a command that reads or writes the loop's directory: one whose
    /// directory is gone (moved or deleted) is refused saying so (exit 2).
    pub fn open_present(topic: &str) -> Result<Handle> {
        let h = Handle::open(topic)?;
        let root = h.layout.root();
        if !root.is_dir() {
            return Err(Error::input(format!(
                "loop `{topic}`: {}",
                gone(topic, root)
            )));
        }
        Ok(h)
    }

    /// The loop `topic` on `root`, under `home`.
    #[must_use]
    pub fn at(home: &std::path::Path, topic: &str, root: PathBuf) -> Handle {
        // A command that writes into the loop (`pause`, `sign add`) follows no link there.
        crate::sys::beneath::guard(&root);
        Handle {
            topic: topic.to_string(),
            home: home.to_path_buf(),
            layout: Layout::for_loop(home, root),
        }
    }

    /// The loop's settings as its supervisor reads them (home, then the loop's `wiggum.toml`);
    /// the defaults where they no longer parse (a reader must not fail on them).
    #[must_use]
    pub fn settings(&self) -> crate::config::Settings {
        // The settings the loop was started with, pinned out of the agent's reach.
        let pinned = self.layout.pinned_settings();
        if pinned.is_file() {
            return crate::config::load(&crate::config::Sources {
                home: None,
                loop_file: Some(pinned),
                explicit: None,
            })
            .unwrap_or_default();
        }
        crate::config::load(&crate::config::Sources {
            home: Some(self.home.join("wiggum.toml")),
            loop_file: Some(self.layout.config()),
            explicit: None,
        })
        .unwrap_or_default()
    }

    /// Who runs the loop, by its locks (the home lock first: the agent cannot reach it).
    pub fn holder(&self) -> Result<Option<Holder>> {
        lock::find(&self.home, &self.layout)
    }

    /// [`Handle::holder`] for a reader that has read the state: when it says the loop ended,
    /// only the home lock is asked (a supervisor of this home takes it before anything else;
    /// one of another home writes a live state at its start), one lock probe instead of two.
    pub fn holder_after(&self, ended: bool) -> Result<Option<Holder>> {
        if ended {
            lock::holder(&lock::home_lock(&self.home, self.layout.root()))
        } else {
            self.holder()
        }
    }

    /// The live holder, or exit 3 saying what the state shows.
    pub fn running(&self) -> Result<Holder> {
        if let Some(h) = self.holder()? {
            // Another topic started on the same directory since: never act on its loop.
            if !h.topic.is_empty() && h.topic != self.topic {
                return Err(Error::NotRunning(format!(
                    "loop `{}` is not running; loop `{}` runs on its artifact directory (pid {}): studio-agents wiggum stop {}",
                    self.topic, h.topic, h.pid, h.topic
                )));
            }
            return Ok(h);
        }
        let st = state::read(&self.layout.state()).ok().flatten();
        let shown = st.map_or_else(
            || "never started".to_string(),
            |s| {
                let status = state::shown_status(Some(&s), false);
                match s.stop_reason() {
                    Some(r) => format!("status {status}, stop reason {}", r.as_str()),
                    None => format!("status {status}"),
                }
            },
        );
        Err(Error::NotRunning(format!(
            "loop `{}` is not running ({shown})",
            self.topic
        )))
    }

    /// Set or clear the pause request of the running loop.
    pub fn set_pause(&self, on: bool) -> Result<Holder> {
        let h = self.running()?;
        requests::update(&self.layout.requests(), |r| {
            r.pause = on;
            r.pause_reason = on.then(|| "paused by the user".into());
            // The user's own pause (or resume) takes over one that waited for an answer: an
            // answer then lifts nothing the user asked for.
            r.paused_for_question = false;
        })?;
        Ok(h)
    }

    /// Record `text` as the answer to the loop's open question — iteration `n`'s when given,
    /// else the latest — beside the answers still waiting for a run; a pause that waited for it
    /// is lifted. Refused (exit 2) when the answer is empty or too long, or no such question is
    /// open.
    pub fn answer(&self, text: &str, n: Option<u32>) -> Result<super::questions::Question> {
        use super::questions::{Answer, MAX_ANSWER};
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::input("answer: the answer is empty"));
        }
        if text.len() > MAX_ANSWER {
            return Err(Error::input(format!(
                "answer: the answer is longer than {MAX_ANSWER} bytes"
            )));
        }
        // The questions as the supervisor keeps them, out of the agents' reach (`state.json`'s
        // copy is in it).
        let kept = state::questions(&self.layout);
        let open = super::questions::to_answer(kept.question.as_ref(), &kept.earlier, n)
            .cloned()
            .ok_or_else(|| self.nothing_to_answer(&kept, n))?;
        let answer = Answer {
            iteration: open.iteration,
            question: open.text.clone(),
            text: text.to_string(),
            at: chrono::Utc::now(),
        };
        // An answer still waiting for a run (to a question a newer one replaced) stays.
        let waiting = crate::sys::fsutil::read_opt(&self.layout.answer())?
            .and_then(|t| super::questions::parse_answers(&t).ok())
            .unwrap_or_default();
        let all = super::questions::with_answer(waiting, answer);
        let json = serde_json::to_string_pretty(&all)
            .map_err(|e| Error::runtime(format!("serialise the answer: {e}")))?;
        crate::sys::fsutil::create_dir_all(self.layout.records())?;
        crate::sys::fsutil::atomic_write(&self.layout.answer(), json.as_bytes())?;
        requests::update(&self.layout.requests(), |r| {
            if r.paused_for_question {
                r.pause = false;
                r.pause_reason = None;
                r.paused_for_question = false;
            }
        })?;
        Ok(open)
    }

    /// Why there is no open question to answer (for iteration `n`, when given).
    fn nothing_to_answer(&self, kept: &super::questions::Kept, n: Option<u32>) -> Error {
        let t = &self.topic;
        let others: Vec<String> = kept
            .earlier
            .iter()
            .map(|q| format!("--iteration {}", q.iteration))
            .collect();
        let also = if others.is_empty() {
            String::new()
        } else {
            format!(" (open: {})", others.join(", "))
        };
        Error::input(match n {
            Some(n) => format!("loop `{t}` has no open question iteration {n} asked{also}"),
            None => format!("loop `{t}` has no open question to answer{also}"),
        })
    }

    /// Wait until nobody holds the loop's locks; `false` when `deadline` passed first. The
    /// kernel says when: a thread blocks on the home lock (released the instant the supervisor
    /// exits); the artifact lock is checked after it.
    pub fn wait_released(&self, deadline: Option<Instant>) -> Result<bool> {
        let home_lock = lock::home_lock(&self.home, self.layout.root());
        let (tx, rx) = std::sync::mpsc::channel();
        if let Ok(f) = std::fs::File::open(&home_lock) {
            std::thread::spawn(move || {
                // Blocks until the supervisor's lock is gone, then lets it go at once.
                let _got = f.lock();
                drop(f);
                let _sent = tx.send(());
            });
        } else {
            drop(tx);
        }
        let mut pause = Duration::from_millis(1);
        // Once the home lock is free, the supervisor is gone or going: look closely after it.
        let mut home_free = false;
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let wait = left.map_or(pause, |l| l.min(pause));
            match rx.recv_timeout(wait) {
                Ok(()) => {
                    home_free = true;
                    pause = Duration::from_millis(1);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                // Nothing left to wake this thread (the waiter is done, or never was): pause.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(wait), // allow: poll
            }
            let late = deadline.is_some_and(|d| Instant::now() >= d);
            if (home_free || late || pause >= Duration::from_millis(25)) && self.holder()?.is_none()
            {
                return Ok(true);
            }
            if late {
                return Ok(false);
            }
            pause = (pause * 2).min(Duration::from_millis(25));
        }
    }
}

/// Whether the holder is suspended (stopped by Ctrl-Z or SIGSTOP): alive, doing nothing.
#[must_use]
pub fn suspended(h: &Holder) -> bool {
    crate::sys::procs::stat(h.pid.cast_signed()).is_some_and(|s| matches!(s.state, 'T' | 't'))
}
