//! What a run that asked does to the loop: go on with other items, or pause until the question
//! is answered — because `[safety] on_question = "pause"`, or because `max_questions` runs in a
//! row asked. Pure.

use crate::config::OnQuestion;

/// What follows a run that asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterAsking {
    /// The loop goes on; the question stays open.
    GoOn,
    /// The loop pauses before the next iteration, for this reason (shown by `status`).
    Pause(String),
}

/// Decide after a run that asked; `in_row`: the runs in a row that asked, this one included.
#[must_use]
pub fn after_asking(on_question: OnQuestion, max_questions: u32, in_row: u32) -> AfterAsking {
    if max_questions > 0 && in_row >= max_questions {
        let runs = if in_row == 1 { "run" } else { "runs" };
        return AfterAsking::Pause(format!(
            "{in_row} {runs} in a row asked instead of working ([safety] max_questions = {max_questions}); answer the question"
        ));
    }
    match on_question {
        OnQuestion::Continue => AfterAsking::GoOn,
        OnQuestion::Pause => AfterAsking::Pause("a question waits for an answer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_asked_run_pauses_the_loop_when_told_to_or_after_too_many_in_a_row() {
        let many = |n: u32, max: u32| {
            AfterAsking::Pause(format!(
                "{n} runs in a row asked instead of working ([safety] max_questions = {max}); answer the question"
            ))
        };
        let waits = AfterAsking::Pause("a question waits for an answer".into());
        let cases = [
            ((OnQuestion::Continue, 3, 1), AfterAsking::GoOn),
            ((OnQuestion::Continue, 3, 2), AfterAsking::GoOn),
            ((OnQuestion::Continue, 3, 3), many(3, 3)),
            ((OnQuestion::Continue, 3, 7), many(7, 3)),
            ((OnQuestion::Continue, 0, 50), AfterAsking::GoOn),
            ((OnQuestion::Pause, 3, 1), waits.clone()),
            ((OnQuestion::Pause, 0, 9), waits),
            (
                (OnQuestion::Pause, 1, 1),
                AfterAsking::Pause(
                    "1 run in a row asked instead of working ([safety] max_questions = 1); answer the question"
                        .into(),
                ),
            ),
        ];
        for ((on, max, in_row), want) in cases {
            assert_eq!(after_asking(on, max, in_row), want, "{on:?} {max} {in_row}");
        }
    }
}
