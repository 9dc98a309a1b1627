//! A delegation run (`delegate start`): one agent, one shot, on a task file, under the same
//! harness, signals and record lifecycle as a loop's runs. `metadata.json` is written `running`
//! before the agent starts and `done`, `failed` or `stopped` after, never left `running` by an
//! error. `cli/delegate` parses and prints; this runs.

use chrono::Utc;
use tokio::sync::watch;

use crate::agent::launch::{self, AgentPhase, Launch};
use crate::agent::process::StopLevel;
use crate::agent::spec::AgentSpec;
use crate::config::Settings;
use crate::disk::delegation::{self, Delegation, DelegationStatus};
use crate::disk::layout::Layout;
use crate::disk::registry;
use crate::error::{Error, Result};
use crate::quality::types::ArtifactType;
use crate::ralph::templates;
use crate::sys::fsutil;

/// What to run.
pub struct Request<'a> {
    /// The topic it registers.
    pub topic: &'a str,
    /// The task, in Markdown.
    pub task: String,
    /// The artifact type.
    pub kind: &'a ArtifactType,
    /// The agent.
    pub agent: &'a AgentSpec,
    /// The settings (the harness's).
    pub settings: &'a Settings,
    /// `$STUDIO_AGENTS_HOME`.
    pub home: &'a std::path::Path,
    /// The artifact's paths.
    pub layout: &'a Layout,
}

/// Run the delegation to its end: the artifact written (or the agent's answer kept as it), the
/// record saying how it ended. An error after the record exists leaves it `failed` with why.
pub fn run(r: &Request<'_>) -> Result<()> {
    let mut rec = begin(r)?;
    let outcome = run_agent(r);
    rec.pid = None;
    rec.ended_at = Some(Utc::now());
    let run = match outcome {
        Ok(run) => run,
        Err(e) => {
            rec.status = DelegationStatus::Failed;
            rec.note = Some(e.to_string());
            delegation::write(&r.layout.metadata(), &rec)?;
            return Err(e);
        }
    };
    rec.exit = Some(run.outcome.ending.to_string());
    rec.cost_usd = run.report.cost_usd;
    if let Some(why) = failure(r, &run) {
        rec.status = if run.outcome.ending == crate::disk::records::Ending::Stopped {
            DelegationStatus::Stopped
        } else {
            DelegationStatus::Failed
        };
        rec.note = Some(why.clone());
        delegation::write(&r.layout.metadata(), &rec)?;
        return Err(Error::runtime(why));
    }
    if !r.layout.original_artifact().exists() {
        fsutil::atomic_write(
            &r.layout.original_artifact(),
            run.report.text.trim_start().as_bytes(),
        )?;
    }
    rec.status = DelegationStatus::Done;
    delegation::write(&r.layout.metadata(), &rec)
}

/// The task and the record written, the topic registered: from now on `status`, `stop` and
/// `wiggum start <topic>` know it.
fn begin(r: &Request<'_>) -> Result<Delegation> {
    fsutil::create_dir_all(r.layout.root())?;
    fsutil::atomic_write(&r.layout.task(), r.task.as_bytes())?;
    let rec = Delegation {
        topic: r.topic.to_string(),
        agent_type: r.kind.name.clone(),
        agent: r.agent.name.clone(),
        agent_command: r.agent.table.command.clone(),
        task_file: "task.md".into(),
        created_at: Utc::now(),
        status: DelegationStatus::Running,
        pid: Some(std::process::id()),
        ended_at: None,
        exit: None,
        cost_usd: None,
        note: None,
    };
    delegation::write(&r.layout.metadata(), &rec)?;
    registry::register(r.home, r.topic, r.layout.root())?;
    Ok(rec)
}

/// The agent's one run, under the loop's own signal handling (SIGTERM from `delegate stop`, or
/// SIGINT, stops its tree; a second one forces).
fn run_agent(r: &Request<'_>) -> Result<crate::agent::launch::AgentRun> {
    let prompt = templates::render(
        include_str!("../../templates/DELEGATE_PROMPT.md"),
        &[
            ("topic", r.topic.to_string()),
            ("task", r.task.clone()),
            ("artifact_path", r.layout.root().display().to_string()),
            ("type_requirements", r.kind.requirements()),
        ],
    );
    let work = r.layout.delegation_dir();
    fsutil::create_dir_all(&work)?;
    let launch = Launch {
        stdout: Some(work.join("answer.md")),
        repo_wide: r.kind.writes_repository(),
        ..Launch::for_phase(
            AgentPhase::Delegation,
            r.topic,
            r.layout.root().to_path_buf(),
            work.clone(),
            &r.settings.safety,
            &format!("delegate-{}", r.topic),
        )
    };
    crate::agent::kill::become_supervisor();
    let rt = crate::sys::runtime::runtime()?;
    rt.block_on(async {
        let (tx, mut rx) = watch::channel(StopLevel::None);
        super::signals::spawn_handler(tx, None)?;
        launch::run(r.agent, &launch, &prompt, "", &mut rx, |_| true).await
    })
}

/// Why the run did not deliver, if it did not: stopped, failed, or nothing written or said.
fn failure(r: &Request<'_>, run: &crate::agent::launch::AgentRun) -> Option<String> {
    let log = run.log.display();
    if run.outcome.ending == crate::disk::records::Ending::Stopped {
        Some(format!("the delegation was stopped; see {log}"))
    } else if !run.outcome.ending.success() {
        Some(format!("the agent {}; see {log}", run.outcome.ending))
    } else if !r.layout.original_artifact().exists() && run.report.text.trim().is_empty() {
        Some(format!(
            "the agent wrote no artifact.md and printed nothing; see {log}"
        ))
    } else {
        None
    }
}
