//! The loop opened once `start` has checked everything: its directory laid out and registered
//! (`init`), its repository, state and runner made (`open`).

use super::*;

/// Lay out `wiggum/`: memory files (existing ones kept), the effective `wiggum.toml`, the registry.
pub fn init(p: &Prepared) -> Result<()> {
    fsutil::create_dir_all(&p.layout.wiggum())?;
    templates::write_missing(
        &p.layout,
        &p.start_vars(),
        p.own_templates().as_deref(),
        p.kind(),
    )?;
    let effective = config::to_toml(&p.settings)?;
    fsutil::atomic_write(&p.layout.config(), effective.as_bytes())?;
    // What the supervisor wrote is allowed, and the effective settings pinned, out of the
    // agent's reach.
    fsutil::create_dir_all(p.layout.records())?;
    fsutil::atomic_write(&p.layout.allowed_settings(), effective.as_bytes())?;
    fsutil::atomic_write(&p.layout.pinned_settings(), effective.as_bytes())?;
    registry::register(&p.home, &p.topic, p.layout.root())
}

fn describe_task(
    layout: &Layout,
    topic: &str,
    kind: &ArtifactType,
    settings: &Settings,
) -> Result<(String, String)> {
    let task_type = kind.task_type.clone();
    if let Some(t) = fsutil::read_opt(&layout.task())? {
        return Ok((t.chars().take(2000).collect(), task_type));
    }
    // A code change is judged against its spec: the task is the spec's text (its start).
    if kind.writes_repository() {
        let spec: Vec<std::path::PathBuf> = if settings.defaults.spec.is_empty() {
            vec![layout.original_artifact()]
        } else {
            settings
                .defaults
                .spec
                .iter()
                .map(|s| layout.root().join(s))
                .collect()
        };
        let text: String = spec
            .iter()
            .filter_map(|f| fsutil::read_capped(f, 64 << 10).ok())
            .collect::<Vec<_>>()
            .join("\n\n");
        if !text.trim().is_empty() {
            let text: String = text.chars().take(4000).collect();
            return Ok((format!("{topic}: {}", text.trim()), task_type));
        }
    }
    let title = fsutil::read_opt(&layout.original_artifact())?
        .and_then(|a| {
            a.lines()
                .find(|l| l.starts_with('#'))
                .map(|l| l.trim_start_matches('#').trim().to_string())
        })
        .unwrap_or_default();
    Ok((
        format!("{topic}: {title}")
            .trim_end_matches(": ")
            .to_string(),
        task_type,
    ))
}

/// Open the loop for running: recovery, fresh state, repository.
pub async fn open(p: Prepared, control_rx: watch::Receiver<StopLevel>) -> Result<Loop> {
    let layout = p.layout.clone();
    let (prev, completed) = crate::ralph::recover::recover(&layout).await?;
    crate::ralph::original::restore_after_crash(&layout)?;
    // Requests were for the previous run (a pause, a stop after its iteration): a start is fresh.
    requests::clear(&layout.requests())?;
    let repo = open_repository(&p)?;
    let state = fresh_state(&p, prev, completed);
    let (task, task_type) = describe_task(&layout, &p.topic, &p.artifact_type, &p.settings)?;
    let mut runner = runner_of(&p, &repo, state, control_rx);
    let tracker = crate::ralph::changes::Tracker::start(&repo, &runner.layout);
    runner.activity = tracker.shared();
    runner.save()?;
    let work = crate::ralph::work::Kind::of(&p.artifact_type);
    Ok(Loop {
        tracker,
        work,
        validation: crate::ralph::work::Tracked::default(),
        left_out: Vec::new(),
        revision_tampered: Vec::new(),
        revision_notes: Vec::new(),
        revision_costs: Vec::new(),
        spec: crate::ralph::work::SpecCopy::take(
            work,
            &crate::ralph::work::setup::spec_files(&p.settings, p.layout.root()),
        ),
        runner,
        run_id: format!("{}-{}", p.topic, Utc::now().timestamp_millis()),
        settings: p.settings,
        primary: p.agent.clone(),
        agent: p.agent,
        producer: p.producer,
        fallbacks: p.fallbacks,
        planning: p.planning,
        evaluator: p.evaluator,
        repo,
        task_type,
        task,
        artifact_type: p.artifact_type,
        breaker: Breaker::default(),
        promise_taken: None,
        promise_rejected: None,
        done: completed,
    })
}

/// The loop's repository (made where there is none), its file size limit, and the `git`
/// commands it runs confined as an agent is.
fn open_repository(p: &Prepared) -> Result<Repo> {
    let mut repo = Repo::open_or_init(p.layout.root())?;
    repo.limit_file_size(p.settings.safety.max_file_mb.saturating_mul(1 << 20));
    if p.settings.safety.sandbox != config::SandboxMode::Off {
        let common = repo.git().commondir().to_path_buf();
        let (argv, env) =
            crate::agent::launch::git_confinement(&p.settings.safety, p.layout.root(), &common)?;
        repo.confine(crate::git::filters::Confine { argv, env });
    }
    Ok(repo)
}

/// A fresh state (planning), carrying what outlives a run of the supervisor from `prev`.
fn fresh_state(p: &Prepared, prev: Option<LoopState>, completed: u32) -> LoopState {
    let earlier_ms = prev.as_ref().map_or(0, LoopState::ran_ms);
    let prev = prev.unwrap_or_default();
    let mut state = LoopState::default();
    state.earlier_ms = earlier_ms;
    state.best = prev.best.filter(|b| b.iteration <= completed);
    state.topic = p.topic.clone();
    state.artifact_path = p.layout.root().to_path_buf();
    state.current_iteration = completed;
    state.last_committed_iteration = prev.last_committed_iteration.min(completed);
    state.max_iterations = p.settings.defaults.max_iterations;
    state.quality_threshold = p.settings.defaults.quality_threshold;
    state.last_quality = prev.last_quality;
    state.pid = std::process::id();
    state.pid_start_ticks =
        crate::sys::procs::stat(std::process::id().cast_signed()).map(|s| s.start_ticks);
    state.agent = p.agent.name.clone();
    state.planning_agent = p.planning.as_ref().map(|a| a.name.clone());
    state.last_scores = prev.last_scores;
    state.last_gate_score = prev.last_gate_score;
    // What the state says was spent, never less than the supervisor kept out of reach.
    let kept = crate::disk::ledger::Ledger::read(&p.layout.spend()).unwrap_or_default();
    (state.cost_usd, state.spend) = kept.merged(prev.cost_usd, prev.spend);
    state.trends = if p.reset_breaker {
        crate::disk::state::Trends::default()
    } else {
        prev.trends
    };
    state.reviewed = prev.reviewed;
    state.carried_paths = prev.carried_paths;
    // A question still open (or answered, its answer not yet told) stays so across a stop, a
    // crash and a start: as the supervisor kept it, out of the agents' reach.
    let kept = crate::disk::state::questions(&p.layout);
    state.question = kept.question;
    state.answered = kept.answered;
    state.earlier = kept.earlier;
    state.harness = Some(p.harness.clone());
    state
}

/// The runner: the loop's places, settings and state, and the protected files as `start`
/// found them.
fn runner_of(
    p: &Prepared,
    repo: &Repo,
    state: LoopState,
    control_rx: watch::Receiver<StopLevel>,
) -> Runner {
    Runner {
        topic: p.topic.clone(),
        layout: p.layout.clone(),
        safety: p.settings.safety.clone(),
        activity: None,
        head: repo
            .head_ref()
            .map(|h| (repo.git().path().to_path_buf(), h)),
        last_accepted: repo.head().map(|o| o.to_string()),
        kept_questions: None,
        kept_spend: None,
        repo_wide: p.artifact_type.writes_repository(),
        stops: control_rx,
        state,
        promise: p.settings.defaults.promise.clone(),
        prices: p.settings.prices.clone(),
        hooks: p.settings.hooks.clone(),
        sinks: p.settings.notify.clone(),
        deliveries: crate::ralph::deliver::Deliveries::default(),
        awake: crate::sys::awake::Awake::new(p.settings.defaults.keep_awake),
        protected: crate::ralph::guard::Protected {
            git_configs: crate::git::preflight::config_files(repo.git(), repo.workdir()),
            hooks_dir: Some(crate::git::preflight::hooks_dir(repo.git(), repo.workdir())),
            loop_config: Some(p.layout.config()),
            git_layout: crate::git::preflight::layout_files(
                repo.git(),
                repo.workdir(),
                p.layout.root(),
            ),
        },
    }
}
