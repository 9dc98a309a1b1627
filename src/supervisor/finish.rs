//! `[finish] pull_request = true`: a loop that ends done runs `wiggum pr <topic>` (this binary,
//! as any shell would), and says its one line where the loop's lines go. Its failure leaves the
//! loop's ending as it was: the line says what to do, and `wiggum pr` can be run again.

use std::time::Duration;

use crate::config::Finish;
use crate::disk::state::StopReason;

/// How long the push and the forge's answers may take.
const WITHIN: Duration = Duration::from_secs(300);

/// Whether a loop that ended for `reason` opens its pull request: only one that ended done
/// (its plan done, its threshold met, its promise kept), not one out of iterations.
#[must_use]
pub fn wanted(f: &Finish, reason: StopReason) -> bool {
    f.pull_request
        && matches!(
            reason,
            StopReason::PlanEmpty | StopReason::ThresholdMet | StopReason::Promise
        )
}

/// Run `wiggum pr <topic>` and say what it answered.
pub async fn pull_request(topic: &str) {
    let line = match run(topic).await {
        Ok(line) => line,
        Err(why) => {
            tracing::warn!("pull request: {why}");
            format!("pull request not opened: {why} (studio-agents wiggum pr {topic} tries again)")
        }
    };
    crate::ralph::progress::say(&line);
}

async fn run(topic: &str) -> Result<String, String> {
    let exe = super::spawn_self::own_exe().map_err(|e| e.to_string())?;
    let child = tokio::process::Command::new(exe)
        .args(["wiggum", "pr", topic])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WITHIN, child)
        .await
        .map_err(|_| format!("no answer within {}s", WITHIN.as_secs()))?
        .map_err(|e| format!("cannot run it: {e}"))?;
    let said = |b: &[u8]| {
        let text = String::from_utf8_lossy(b);
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        line.trim_start_matches("error: ").to_string()
    };
    if out.status.success() {
        Ok(said(&out.stdout))
    } else {
        Err(said(&out.stderr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loop_that_ended_done_opens_its_pull_request() {
        let on = Finish {
            pull_request: true,
            ..Finish::default()
        };
        let cases = [
            (StopReason::PlanEmpty, true),
            (StopReason::ThresholdMet, true),
            (StopReason::Promise, true),
            (StopReason::MaxIterations, false),
            (StopReason::UserStop, false),
            (StopReason::Budget, false),
            (StopReason::Breaker, false),
            (StopReason::ValidationFailed, false),
        ];
        for (reason, want) in cases {
            assert_eq!(wanted(&on, reason), want, "{reason:?}");
            assert!(!wanted(&Finish::default(), reason), "{reason:?}");
        }
    }
}
