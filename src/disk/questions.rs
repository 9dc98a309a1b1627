//! A question an agent asked instead of working, and its answer. The supervisor keeps the open
//! question in `state.json`; `wiggum answer` (and the dashboard) write the answer into the
//! loop's records, out of the agent's reach (`Handle::answer`), where the next run's prompt
//! takes it from.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest answer kept, in bytes.
pub const MAX_ANSWER: usize = 4096;

/// A question an agent asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The iteration whose run asked it.
    pub iteration: u32,
    /// What it asked (bounded, on one line).
    pub text: String,
    /// When.
    pub asked_at: DateTime<Utc>,
    /// The answer, once the next run's prompt carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl Question {
    /// Who asked it: `planning`, `iteration 3`.
    #[must_use]
    pub fn asker(&self) -> String {
        asker_of(self.iteration)
    }
}

/// `planning` for iteration 0 (the planning runs'), else `iteration N`.
#[must_use]
pub fn asker_of(iteration: u32) -> String {
    if iteration == 0 {
        "planning".into()
    } else {
        format!("iteration {iteration}")
    }
}

/// The open question and the answered ones as the supervisor keeps them, out of the agents'
/// reach (`question.json` in the loop's records): what `status`, the dashboard and `watch` show
/// and what `answer` answers. `state.json` holds them too, but an agent can write that file
/// while it runs (or another loop's agent, in the same tree): no reader trusts its copy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// The question no run has been told the answer to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<Question>,
    /// Questions a newer one replaced while their answer was on its way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<Question>,
    /// Questions a newer one replaced before anyone answered them: still open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<Question>,
}

impl Kept {
    /// Write it to `path` (an empty record too: its presence says this version keeps them).
    ///
    /// # Errors
    /// When it cannot be written.
    pub fn write(&self, path: &std::path::Path) -> crate::error::Result<()> {
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| crate::error::Error::runtime(format!("serialise the questions: {e}")))?;
        if let Some(dir) = path.parent() {
            crate::sys::fsutil::create_dir_all(dir)?;
        }
        crate::sys::fsutil::atomic_write(path, json.as_bytes())
    }
}

/// `text` on one line, without control sequences or characters, at most 200 characters (as a
/// run's question is kept).
#[must_use]
pub fn tidy(text: &str) -> String {
    crate::sys::term::one_line(&crate::sys::term::printable(text), 200)
}

/// The most questions kept open besides the latest.
pub const MAX_EARLIER: usize = 10;

/// `a` taken for the next run's prompt: as the answer of the open `question` it answers; of the
/// `earlier` open question it answers (which closes there, answered); else as an answered
/// question of its own in `answered` (one a newer question replaced). Pure.
pub fn take(
    question: &mut Option<Question>,
    earlier: &mut Vec<Question>,
    answered: &mut Vec<Question>,
    a: Answer,
) {
    // The open question's answer — or, given again, its new answer (a run that had the first
    // has it; the runs after have this one).
    if let Some(q) = question
        .as_mut()
        .filter(|q| q.text == a.question && q.iteration == a.iteration)
    {
        q.answer = Some(a.text);
        return;
    }
    let asked_at = match earlier
        .iter()
        .position(|q| q.text == a.question && q.iteration == a.iteration)
    {
        Some(i) => earlier.remove(i).asked_at,
        None => a.at,
    };
    answered.push(Question {
        iteration: a.iteration,
        text: a.question,
        asked_at,
        answer: Some(a.text),
    });
}

/// `new` becomes the open question; one still unanswered that it replaces stays open among the
/// `earlier` ones (the same question asked again is one question; at most [`MAX_EARLIER`] are
/// kept, the oldest let go). Pure.
pub fn replace(question: &mut Option<Question>, earlier: &mut Vec<Question>, new: Question) {
    if let Some(old) = question.take()
        && old.answer.is_none()
        && old.text != new.text
    {
        earlier.retain(|q| q.text != old.text);
        earlier.push(old);
        if earlier.len() > MAX_EARLIER {
            earlier.remove(0);
        }
    }
    earlier.retain(|q| q.text != new.text);
    *question = Some(new);
}

/// The question an answer is for: iteration `n`'s when given (the latest or an earlier one),
/// else the latest — open, or answered with no run after it told (an answer given again
/// replaces the first for the runs to come).
#[must_use]
pub fn to_answer<'a>(
    question: Option<&'a Question>,
    earlier: &'a [Question],
    n: Option<u32>,
) -> Option<&'a Question> {
    let latest = question;
    match n {
        None => latest,
        Some(n) => latest
            .filter(|q| q.iteration == n)
            .or_else(|| earlier.iter().rev().find(|q| q.iteration == n)),
    }
}

/// An answer to the open question, waiting for the next run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The iteration whose question it answers.
    #[serde(default)]
    pub iteration: u32,
    /// The question it answers, as asked.
    pub question: String,
    /// The answer.
    pub text: String,
    /// When it was given.
    pub at: DateTime<Utc>,
}

/// The answers waiting for the next run (`answer.json`): one per question, the latest given.
/// Unreadable text reads as an error naming nothing: the caller names the file.
pub fn parse_answers(text: &str) -> Result<Vec<Answer>, serde_json::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Many(Vec<Answer>),
        One(Answer),
    }
    Ok(match serde_json::from_str::<Stored>(text)? {
        Stored::Many(all) => all,
        Stored::One(a) => vec![a],
    })
}

/// `answers` with `answer` added: an earlier answer to the same question is replaced.
#[must_use]
pub fn with_answer(mut answers: Vec<Answer>, answer: Answer) -> Vec<Answer> {
    answers.retain(|a| !(a.question == answer.question && a.iteration == answer.iteration));
    answers.push(answer);
    answers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(iteration: u32, question: &str, text: &str) -> Answer {
        Answer {
            iteration,
            question: question.into(),
            text: text.into(),
            at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    #[test]
    fn answers_are_kept_one_per_question_and_read_in_either_form() {
        let one = with_answer(Vec::new(), a(1, "Q1?", "yes"));
        let two = with_answer(one.clone(), a(2, "Q2?", "no"));
        assert_eq!(two, vec![a(1, "Q1?", "yes"), a(2, "Q2?", "no")]);
        let again = with_answer(two.clone(), a(1, "Q1?", "yes, both"));
        assert_eq!(again, vec![a(2, "Q2?", "no"), a(1, "Q1?", "yes, both")]);
        let text = serde_json::to_string(&two).unwrap();
        assert_eq!(parse_answers(&text).unwrap(), two);
        // The single answer an earlier version wrote, without its iteration.
        let old = r#"{"question":"Q1?","text":"yes","at":"1970-01-01T00:00:00Z"}"#;
        assert_eq!(parse_answers(old).unwrap(), vec![a(0, "Q1?", "yes")]);
        assert!(parse_answers("{").is_err());
    }
}

#[cfg(test)]
mod open_questions {
    use super::*;

    fn q(n: u32, text: &str) -> Question {
        Question {
            iteration: n,
            text: text.into(),
            asked_at: chrono::DateTime::UNIX_EPOCH,
            answer: None,
        }
    }

    fn a(n: u32, question: &str, text: &str) -> Answer {
        Answer {
            iteration: n,
            question: question.into(),
            text: text.into(),
            at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_newer_question_keeps_the_unanswered_one_open_and_each_is_answered_by_its_iteration() {
        let (mut open, mut earlier, mut answered) = (None, Vec::new(), Vec::new());
        replace(&mut open, &mut earlier, q(1, "A?"));
        replace(&mut open, &mut earlier, q(2, "B?"));
        // Asked again: one question, the latest asking.
        replace(&mut open, &mut earlier, q(3, "A?"));
        assert_eq!(open.as_ref().map(|q| q.iteration), Some(3));
        assert_eq!(earlier, [q(2, "B?")]);
        assert_eq!(to_answer(open.as_ref(), &earlier, None), open.as_ref());
        assert_eq!(
            to_answer(open.as_ref(), &earlier, Some(2)),
            Some(&q(2, "B?"))
        );
        assert_eq!(to_answer(open.as_ref(), &earlier, Some(1)), None);
        take(&mut open, &mut earlier, &mut answered, a(2, "B?", "yes"));
        assert!(earlier.is_empty());
        assert_eq!(answered[0].answer.as_deref(), Some("yes"));
        take(&mut open, &mut earlier, &mut answered, a(3, "A?", "no"));
        assert_eq!(open.as_ref().and_then(|q| q.answer.as_deref()), Some("no"));
        // An answered question a newer one replaces is not open any more.
        replace(&mut open, &mut earlier, q(4, "C?"));
        assert!(earlier.is_empty());
        // At most ten earlier ones, the oldest let go.
        for n in 5..20 {
            replace(&mut open, &mut earlier, q(n, &format!("Q{n}?")));
        }
        assert_eq!(earlier.len(), MAX_EARLIER);
        assert_eq!(earlier[0].iteration, 9);
    }
}
