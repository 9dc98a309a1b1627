//! `answer`: the answer to the question a loop's agent asked, for the next run's prompt
//! (`disk::questions`); `--sign` also keeps it in the loop's `AGENT.md` for every run after.

use clap::Args;

use crate::disk::handle::Handle;
use crate::error::Result;
use crate::sys::fsutil;

/// `answer` arguments.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The loop's topic.
    pub topic: String,
    /// The answer.
    pub answer: String,
    /// Also keep the question and its answer as a sign in AGENT.md (read by every iteration).
    #[arg(long)]
    pub sign: bool,
    /// Answer the question iteration N asked (one a newer question replaced, still open)
    /// instead of the latest.
    #[arg(long, value_name = "N")]
    pub iteration: Option<u32>,
}

/// `answer`.
pub fn run(a: &AnswerArgs) -> Result<i32> {
    let h = Handle::open_present(&a.topic)?;
    let waiting = fsutil::read_opt(&h.layout.answer())?
        .and_then(|t| crate::disk::questions::parse_answers(&t).ok())
        .unwrap_or_default();
    let q = h.answer(&a.answer, a.iteration)?;
    println!(
        "answered {}'s question \"{}\" (the next run's prompt carries it)",
        q.asker(),
        crate::sys::term::printable(&q.text)
    );
    // One answer a question: a second replaces the first — for the runs to come, when a run took
    // the first already.
    if let Some(taken) = &q.answer {
        println!(
            "it replaces the answer a run was given: \"{}\" (the runs after it are told this one)",
            crate::sys::term::printable(taken)
        );
    } else if let Some(before) = waiting
        .iter()
        .find(|w| w.question == q.text && w.iteration == q.iteration)
    {
        println!(
            "it replaces the answer given before: \"{}\"",
            crate::sys::term::printable(&before.text)
        );
    }
    let path = h.layout.memory("AGENT.md");
    let text = fsutil::read_opt(&path)?.unwrap_or_default();
    let what = format!("An agent asked: {}", q.text);
    // A sign an earlier answer left says this answer now, `--sign` or not: AGENT.md must not
    // contradict the prompt.
    let signed = crate::ralph::signs::has(&text, &what);
    if a.sign || signed {
        // Answered again: the sign says the new answer, not both.
        let new = crate::ralph::signs::set(&text, &what, &a.answer);
        fsutil::atomic_write(&path, new.as_bytes())?;
        if signed {
            println!("the sign in {} says this answer now", path.display());
        } else {
            println!("kept as a sign in {}", path.display());
        }
    }
    Ok(0)
}
