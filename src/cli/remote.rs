//! Beyond one machine: `wiggum manifest <topic> --kubernetes` renders a loop as a Job and a
//! ConfigMap; `wiggum run-remote` is the pod's entrypoint; `list --remote` / `status --remote`
//! read loops back from the records their runs push (`refs/studio-agents/<topic>`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::config;
use crate::disk::handle::Handle;
use crate::error::{Error, Result};
use crate::supervisor::remote::{self, RemoteRun};
use crate::sys::fsutil;
use crate::view::kube::{self, Request};
use crate::view::model::LoopView;

/// Flags of `manifest`.
#[derive(Debug, Args)]
pub struct ManifestArgs {
    /// The loop's topic (registered: started or delegated before).
    pub topic: String,
    /// Render Kubernetes objects (the one target so far).
    #[arg(long, required = true)]
    pub kubernetes: bool,
    /// The image: studio-agents, git and the agent's CLI (see the Dockerfile).
    #[arg(long, value_name = "IMG", default_value = "studio-agents:latest")]
    pub image: String,
    /// The namespace.
    #[arg(long, value_name = "NS", default_value = "default")]
    pub namespace: String,
    /// The repository the pod clones and pushes the loop's commits to.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// The branch the loop's commits go to (default wiggum/<topic>).
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// The Secret holding the agent's API keys (its keys become environment variables).
    #[arg(long, value_name = "NAME")]
    pub secret: Option<String>,
    /// Write <dir>/<name>.yaml instead of printing.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// Flags of `run-remote`.
#[derive(Debug, Args)]
pub struct RunRemoteArgs {
    /// The loop's topic.
    pub topic: String,
    /// A fresh directory to lay the loop out in (default $STUDIO_AGENTS_HOME/remote/<topic>).
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// The repository to clone and push to.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// Its branch (default wiggum/<topic>).
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// Where the loop's files are mounted (a ConfigMap): used for what the branch lacks.
    #[arg(long, value_name = "DIR")]
    pub files: Option<PathBuf>,
    /// The artifact dir inside the repository.
    #[arg(long, value_name = "REL", default_value = ".")]
    pub path: PathBuf,
    /// A run whose heartbeat is older than this many seconds is dead; a new one takes over.
    #[arg(long, value_name = "SECS", default_value_t = 90)]
    pub stale_after: u64,
    /// Seconds between pushes of the loop's records.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub heartbeat: u64,
}

fn branch_of(topic: &str, b: Option<&String>) -> String {
    b.cloned().unwrap_or_else(|| format!("wiggum/{topic}"))
}

/// `manifest`.
pub fn manifest(a: &ManifestArgs) -> Result<i32> {
    let h = Handle::open(&a.topic)?;
    let layout = &h.layout;
    // The pod runs with the shipped file as its settings: the Job is built from that very text
    // (one resolution), and a file changed since it was last allowed is refused as `start`
    // refuses it.
    crate::ralph::start::check_allowed(&h.home, layout, &a.topic)?;
    let (settings, settings_toml) = match fsutil::read_opt(&layout.config())? {
        Some(t) => (config::parse_text(&layout.config(), &t)?, t),
        None => {
            let s = h.settings();
            let t = config::to_toml(&s)?;
            (s, t)
        }
    };
    let mut files = Vec::new();
    let candidates = [
        ("artifact.md", layout.original_artifact()),
        ("task.md", layout.task()),
        ("metadata.json", layout.metadata()),
        ("PROMPT.md", layout.memory("PROMPT.md")),
        ("PLANNING_PROMPT.md", layout.memory("PLANNING_PROMPT.md")),
        ("AGENT.md", layout.memory("AGENT.md")),
        ("fix_plan.md", layout.memory("fix_plan.md")),
    ];
    for (name, path) in candidates {
        if let Some(text) = fsutil::read_opt(&path)? {
            files.push((name.to_string(), text));
        }
    }
    // Where the artifact dir sits in its repository: the pod clones the whole repository.
    let path = crate::git::Repo::open(layout.root())
        .ok()
        .and_then(|repo| {
            let root = layout.root().canonicalize().ok()?;
            let rel = root
                .strip_prefix(repo.workdir())
                .ok()?
                .display()
                .to_string();
            Some(if rel.is_empty() { ".".into() } else { rel })
        })
        .unwrap_or_else(|| ".".into());
    let r = Request {
        path,
        topic: a.topic.clone(),
        image: a.image.clone(),
        namespace: a.namespace.clone(),
        remote: a.remote.clone(),
        branch: branch_of(&a.topic, a.branch.as_ref()),
        secret: a.secret.clone(),
    };
    let docs = kube::documents(&r, &settings, &settings_toml, &files)
        .map_err(|e| Error::input(format!("{}: {e}", a.topic)))?;
    let text = kube::to_yaml(&docs);
    match &a.output {
        Some(dir) => {
            fsutil::create_dir_all(dir)?;
            let path = dir.join(format!("{}.yaml", kube::object_name(&a.topic)));
            fsutil::atomic_write(&path, text.as_bytes())?;
            println!("{}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(0)
}

/// `run-remote`.
pub fn run_remote(a: &RunRemoteArgs) -> Result<i32> {
    crate::disk::registry::check_topic(&a.topic)?;
    let work = match &a.work {
        Some(w) => w.clone(),
        None => config::home_dir()?.join("remote").join(&a.topic),
    };
    remote::run(&RemoteRun {
        topic: a.topic.clone(),
        work: std::path::absolute(&work)
            .map_err(|e| Error::input(format!("--work {}: {e}", work.display())))?,
        remote: a.remote.clone(),
        branch: branch_of(&a.topic, a.branch.as_ref()),
        files: a.files.clone(),
        path: a.path.clone(),
        stale_after: Duration::from_secs(a.stale_after),
        heartbeat: Duration::from_secs(a.heartbeat.max(1)),
    })
}

/// The loops a remote's records show, as `list` shows local ones.
pub fn remote_views(url: &str, stale_after: Duration) -> Result<Vec<LoopView>> {
    let now = chrono::Utc::now();
    Ok(crate::view::remote::remote_records(url)?
        .into_iter()
        .map(|r| {
            let fresh = r.state.as_ref().is_some_and(|s| s.fresh(now, stale_after));
            LoopView::remote(&r.topic, r.state, fresh)
        })
        .collect())
}
