//! A run that asked instead of working, carried out: the question kept open in the loop's state,
//! said, sent as `needs_human`, and the loop paused when `decide::after_asking` says so; the
//! answer taken from the requests for the next run's prompt, which carries both.

use super::context::Loop;
use super::decide::{AfterAsking, after_asking};
use super::event::Fields;
use crate::disk::questions::Question;
use crate::disk::requests;
use crate::error::Result;
use crate::sys::fsutil;

/// The command that answers `topic`'s question, as people type it (naming the store when it is
/// not the default one, so it works from any shell).
#[must_use]
pub fn answer_command(topic: &str) -> String {
    let program = super::progress::program(crate::config::home_to_name().as_deref());
    format!("{program} wiggum answer {topic} \"…\"")
}

/// Iteration `n`'s run asked `question`: keep it open, tell whoever listens, pause if due.
pub async fn asked(lp: &mut Loop, n: u32, question: String) -> Result<()> {
    let in_row = lp.runner.asked(Question {
        iteration: n,
        text: question.clone(),
        asked_at: chrono::Utc::now(),
        answer: None,
    });
    let topic = lp.runner.topic.clone();
    let answer = answer_command(&topic);
    let then = after_asking(
        lp.settings.safety.on_question,
        lp.settings.safety.max_questions,
        in_row,
    );
    if let AfterAsking::Pause(why) = &then {
        let shown = format!("{why}: {answer}");
        requests::update(&lp.runner.layout.requests(), |r| {
            r.pause = true;
            r.pause_reason = Some(shown.clone());
            r.paused_for_question = true;
        })?;
        super::progress::say(&format!("Paused: {shown}"));
    }
    lp.runner.save()?;
    let fields = Fields::Asked {
        question: question.clone(),
        detail: format!("answer it: {answer}"),
    };
    let reason = format!(
        "{} asked: \"{question}\"",
        crate::disk::questions::asker_of(n)
    );
    lp.runner.notify("needs_human", n, &reason, fields).await;
    Ok(())
}

/// Take the answers given since the last run (`wiggum answer`, the dashboard) into the loop's
/// state: the open question's as its answer; one to a question a newer one replaced as an
/// answered question of its own, so the next prompt carries it too. A file that cannot be read
/// as answers is said, not silently dropped. The state is saved before the file is removed (a
/// supervisor killed in between finds the answer again at its next start).
pub fn take_answer(lp: &mut Loop) -> Result<()> {
    let path = lp.runner.layout.answer();
    let Some(text) = fsutil::read_opt(&path)? else {
        return Ok(());
    };
    match crate::disk::questions::parse_answers(&text) {
        Ok(answers) => {
            for a in answers {
                lp.runner.answer_taken(a);
            }
        }
        Err(e) => {
            let what = format!("the answers in {} could not be read ({e})", path.display());
            super::progress::say(&format!("Warning: {what}"));
            lp.runner.note_event(what);
        }
    }
    lp.runner.save()?;
    fsutil::remove_file_opt(&path)
}

/// What the next prompt says of the question: its answer, or that none came yet. Pure.
#[must_use]
pub fn prompt_section(q: &Question) -> String {
    let asker = q.asker();
    let mut who = asker.chars();
    let who: String = who
        .next()
        .map(|c| c.to_uppercase().chain(who).collect())
        .unwrap_or_default();
    match &q.answer {
        Some(a) => format!(
            "\n\n## Your question was answered\n\n{who} asked: {}\n\nThe answer: {}\n",
            q.text,
            a.trim()
        ),
        None => format!(
            "\n\n## A question is open\n\n{who} asked: {}\n\nNo answer yet: work on another item of fix_plan.md meanwhile.\n",
            q.text
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_the_question_and_its_answer_or_that_none_came() {
        let mut q = Question {
            iteration: 2,
            text: "Should I also update the migration?".into(),
            asked_at: chrono::Utc::now(),
            answer: None,
        };
        assert_eq!(
            prompt_section(&q),
            "\n\n## A question is open\n\nIteration 2 asked: Should I also update the migration?\n\nNo answer yet: work on another item of fix_plan.md meanwhile.\n"
        );
        q.answer = Some("Yes, and add a down step.\n".into());
        assert_eq!(
            prompt_section(&q),
            "\n\n## Your question was answered\n\nIteration 2 asked: Should I also update the migration?\n\nThe answer: Yes, and add a down step.\n"
        );
    }
}
