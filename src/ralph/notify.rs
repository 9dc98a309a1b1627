//! Notifications: `[hooks]` commands run on the loop's events — the end of an iteration, the
//! end of the loop, a budget or a breaker, a wait, a review checkpoint — with the event as JSON
//! on stdin and in the environment, and the `[notify]` sinks that want the event are sent its
//! message (`sinks`, delivered by `deliver`). A hook has a timeout and a capped log; one that
//! fails, like a message that cannot be delivered, is logged and never stops the loop.

use std::time::Duration;

use super::event::{Event, Fields};
use super::runner::Runner;
use crate::agent::process::{self, Job};
use crate::config::Hooks;
use crate::sys::fsutil;

/// The most of a hook's output kept in its log.
const LOG_CAP: u64 = 64 * 1024;

/// The hook command for `event`, if one is set.
fn command_for<'a>(hooks: &'a Hooks, event: &str) -> Option<&'a str> {
    match event {
        "iteration_end" => hooks.on_iteration_end.as_deref(),
        "stop" => hooks.on_stop.as_deref(),
        "budget" => hooks.on_budget.as_deref(),
        "waiting" => hooks.on_waiting.as_deref(),
        "breaker" => hooks.on_breaker.as_deref(),
        "needs_human" => hooks.on_needs_human.as_deref(),
        _ => None,
    }
}

impl Runner {
    /// Tell the `event` hook and sinks, if there are any, with `fields` in the event.
    pub async fn notify(
        &mut self,
        event: &'static str,
        iteration: u32,
        reason: &str,
        fields: Fields,
    ) {
        let ev = Event {
            event,
            topic: self.topic.clone(),
            iteration,
            reason: reason.to_string(),
            status: self.state.status().as_str(),
            at: chrono::Utc::now().to_rfc3339(),
            fields,
        };
        self.send_to_sinks(&ev);
        let Some(command) = command_for(&self.hooks, event).map(str::to_string) else {
            return;
        };
        if let Err(e) = self.run_hook(&ev, &command).await {
            tracing::warn!("the {event} hook failed: {e}");
        }
    }

    /// Send `event`'s message to every `[notify]` sink that wants it, in the background; say
    /// what could not be delivered since the last time.
    fn send_to_sinks(&mut self, ev: &Event) {
        for what in self.deliveries.failures() {
            self.state.last_event = Some(what);
        }
        let Some(kind) = super::sinks::event_of(ev.event) else {
            return;
        };
        let wanted: Vec<(usize, crate::config::NotifySink)> = self
            .sinks
            .sinks
            .iter()
            .enumerate()
            .filter(|(_, s)| s.events.contains(&kind))
            .map(|(n, s)| (n, s.clone()))
            .collect();
        if wanted.is_empty() {
            return;
        }
        let st = &self.state;
        let figures = super::sinks::Figures {
            topic: self.topic.clone(),
            host: host(),
            iterations: (ev.iteration, st.max_iterations),
            quality: (ev.quality_before(), st.last_quality),
            gate: (self.first_gate_r1(), st.last_gate_score),
            cost: st.spend.shown(),
            program: super::progress::program(crate::config::home_to_name().as_deref()),
        };
        // A stop is told in words (`every item in fix_plan.md is done`), its code in the event.
        let message = super::sinks::message(ev.event, ev.said(), &figures, &ev.to_value());
        let within = Duration::from_secs(self.sinks.deliver_within_secs.max(1));
        for (n, sink) in &wanted {
            self.deliveries.send(*n, sink, message.clone(), within);
        }
    }

    /// The first gated iteration's first-round score, from the run records (streamed).
    fn first_gate_r1(&self) -> Option<f64> {
        let mut first = None;
        let _read = crate::disk::runlog::for_each(&self.layout.runs(), |r| {
            if first.is_none() && r.record == crate::disk::records::RecordKind::Iteration {
                first = r.gate.as_ref().and_then(|g| g.wiggum_r1);
            }
        });
        first
    }

    /// Wait for the notifications still on their way, at most `deliver_within_secs` (a sink
    /// that refused the connection gave up at once), and say what could not be delivered.
    pub async fn finish_notifications(&mut self) {
        let within = Duration::from_secs(self.sinks.deliver_within_secs.max(1));
        self.deliveries.finish(within).await;
        for what in self.deliveries.failures() {
            self.state.last_event = Some(what);
        }
    }

    async fn run_hook(&mut self, ev: &Event, command: &str) -> crate::error::Result<()> {
        let (event, iteration, reason) = (ev.event, ev.iteration, ev.reason.as_str());
        let dir = self.layout.records().join("hooks");
        fsutil::create_dir_all(&dir)?;
        let json = ev.to_value().to_string();
        let input = dir.join(format!("{event}.json"));
        fsutil::atomic_write(&input, json.as_bytes())?;
        let log = dir.join(format!("{event}.log"));
        let job = Job::trusted(
            command,
            self.layout.root().to_path_buf(),
            vec![
                ("WIGGUM_EVENT".into(), event.into()),
                ("WIGGUM_EVENT_JSON".into(), json),
                ("TOPIC".into(), self.topic.clone()),
                ("ITERATION".into(), iteration.to_string()),
                ("REASON".into(), reason.into()),
            ],
            log.clone(),
            Duration::from_secs(self.hooks.timeout_secs.max(1)),
            Duration::from_secs(2),
            "hook",
        )
        .with_stdin(input);
        let out = process::run(&job, &mut self.stops, |_| true).await?;
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > LOG_CAP)
            && let Ok(f) = std::fs::OpenOptions::new().write(true).open(&log)
        {
            let _kept = f.set_len(LOG_CAP);
        }
        if !out.ending.success() {
            tracing::warn!(
                "the {event} hook `{command}` {} (log: {})",
                out.ending,
                log.display()
            );
        }
        Ok(())
    }
}

/// This machine's name, for messages read elsewhere.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "this machine".into())
}
