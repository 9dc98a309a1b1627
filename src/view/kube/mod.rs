//! A loop as Kubernetes objects: a `batch/v1` Job whose pod runs `studio-agents wiggum
//! run-remote` (the loop in the foreground, its commits pushed to a branch), a ConfigMap with the
//! loop's effective settings and memory files, and a reference to a Secret holding the agent's
//! API keys (never the keys). Pure: settings and files in, documents out.

pub mod yaml;

use serde_json::{Value, json};

use crate::config::{Safety, Settings};

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct Request {
    /// The loop's topic.
    pub topic: String,
    /// The image (with `studio-agents`, git and the agent CLI).
    pub image: String,
    /// The namespace.
    pub namespace: String,
    /// The repository the pod clones and pushes to (`None`: the ConfigMap's files are the
    /// artifact, and nothing leaves the pod but its logs).
    pub remote: Option<String>,
    /// The branch the loop's commits go to.
    pub branch: String,
    /// The artifact dir inside the repository (`.` for its root).
    pub path: String,
    /// The Secret whose keys become the agent's environment.
    pub secret: Option<String>,
}

/// The most a ConfigMap holds (the API server's limit).
pub const CONFIG_MAP_MAX: usize = 1024 * 1024;

/// Where the pod keeps its work and the ConfigMap's files.
const WORK: &str = "/work";
const CONFIG: &str = "/etc/studio-agents/loop";

/// A DNS-1123 label for the loop's objects: `wiggum-<topic>`, lowercase, at most 63 characters.
#[must_use]
pub fn object_name(topic: &str) -> String {
    let mut s: String = format!("wiggum-{topic}")
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.truncate(63);
    s.trim_end_matches('-').to_string()
}

/// The documents, in apply order (ConfigMap, Job). `files` are (name, content) for the
/// ConfigMap; an error names what does not fit.
pub fn documents(
    r: &Request,
    settings: &Settings,
    settings_toml: &str,
    files: &[(String, String)],
) -> Result<Vec<Value>, String> {
    let name = object_name(&r.topic);
    let labels = json!({
        "app.kubernetes.io/name": "studio-agents",
        "app.kubernetes.io/component": "wiggum-loop",
        "studio-agents/topic": name.trim_start_matches("wiggum-"),
    });
    let config_map = config_map(r, &name, &labels, settings_toml, files)?;
    let container = container(r, &settings.safety);
    let job = job(r, &name, &labels, &settings.safety, container);
    Ok(vec![config_map, job])
}

/// The ConfigMap: the settings file and the loop's files, refused when over the API server's
/// limit.
fn config_map(
    r: &Request,
    name: &str,
    labels: &Value,
    settings_toml: &str,
    files: &[(String, String)],
) -> Result<Value, String> {
    let mut data = serde_json::Map::new();
    data.insert(
        "wiggum.toml".into(),
        Value::String(settings_toml.to_string()),
    );
    for (f, text) in files {
        data.insert(f.clone(), Value::String(text.clone()));
    }
    let size: usize = data
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > CONFIG_MAP_MAX {
        return Err(format!(
            "the loop's files are {size} bytes, over a ConfigMap's {CONFIG_MAP_MAX}: give --remote so the pod clones them instead"
        ));
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": r.namespace, "labels": labels},
        "data": data,
    }))
}

/// The entrypoint's arguments: `wiggum run-remote <topic>` with the mounted files, and the
/// repository, branch and path when there is one.
fn entrypoint(r: &Request) -> Vec<String> {
    let mut args = vec![
        "wiggum".to_string(),
        "run-remote".into(),
        r.topic.clone(),
        "--files".into(),
        CONFIG.into(),
        "--work".into(),
        format!("{WORK}/loop"),
    ];
    if let Some(remote) = &r.remote {
        args.extend([
            "--remote".into(),
            remote.clone(),
            "--branch".into(),
            r.branch.clone(),
        ]);
    }
    if r.path != "." {
        args.extend(["--path".into(), r.path.clone()]);
    }
    args
}

/// The loop's container: non-root, read-only root, no capabilities, its memory from the harness
/// ceiling, the Secret as its environment.
fn container(r: &Request, s: &Safety) -> Value {
    // The agent's tree is bounded by the harness ceiling; the supervisor and git need a little.
    let memory = if s.max_memory_mb > 0 {
        format!("{}Mi", s.max_memory_mb + 256)
    } else {
        "4Gi".into()
    };
    let mut container = json!({
        "name": "loop",
        "image": r.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["studio-agents"],
        "args": entrypoint(r),
        "env": [
            {"name": "STUDIO_AGENTS_HOME", "value": format!("{WORK}/home")},
            {"name": "HOME", "value": format!("{WORK}/home")},
        ],
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"cpu": "2", "memory": memory},
        },
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "work", "mountPath": WORK},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "loop-files", "mountPath": CONFIG, "readOnly": true},
        ],
    });
    if let Some(secret) = &r.secret {
        container["envFrom"] = json!([{"secretRef": {"name": secret}}]);
    }
    container
}

/// The Job around `container`: retries resume from the branch, the grace from the harness, the
/// deadline from the loop's time budget.
fn job(r: &Request, name: &str, labels: &Value, s: &Safety, container: Value) -> Value {
    let mut job_spec = json!({
        // A new pod resumes from the branch like `start` after a crash.
        "backoffLimit": 3,
        "ttlSecondsAfterFinished": 86_400,
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "restartPolicy": "Never",
                // SIGTERM is a graceful stop: the agent's grace, then the record and the push.
                "terminationGracePeriodSeconds": s.kill_grace_secs + 30,
                "securityContext": {
                    "runAsNonRoot": true,
                    "runAsUser": 1000,
                    "runAsGroup": 1000,
                    "fsGroup": 1000,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [container],
                "volumes": [
                    {"name": "work", "emptyDir": {}},
                    {"name": "tmp", "emptyDir": {}},
                    {"name": "loop-files", "configMap": {"name": name}},
                ],
            },
        },
    });
    if s.max_time_per_loop > 0 {
        job_spec["activeDeadlineSeconds"] = json!(s.max_time_per_loop);
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": r.namespace, "labels": labels},
        "spec": job_spec,
    })
}

/// The documents as one YAML stream.
#[must_use]
pub fn to_yaml(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| format!("---\n{}", yaml::document(d)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_are_dns_labels() {
        let cases = [
            ("research", "wiggum-research"),
            ("Monarch_UI.v2", "wiggum-monarch-ui-v2"),
            (&*"x".repeat(80), &*format!("wiggum-{}", "x".repeat(56))),
        ];
        for (topic, want) in cases {
            assert_eq!(object_name(topic), want, "{topic}");
        }
    }

    #[test]
    fn the_rendered_objects_match_the_golden_file() {
        let mut settings = Settings::default();
        settings.safety.max_time_per_loop = 28_800;
        settings.safety.max_memory_mb = 3072;
        settings.safety.kill_grace_secs = 15;
        let r = Request {
            topic: "monarch".into(),
            image: "registry.example.com/studio-agents:claude".into(),
            namespace: "loops".into(),
            remote: Some("git@example.com:team/monarch.git".into()),
            branch: "wiggum/monarch".into(),
            path: "docs/monarch".into(),
            secret: Some("agent-keys".into()),
        };
        let files = vec![
            (
                "artifact.md".to_string(),
                "# Monarch\n\nA first draft.\n".to_string(),
            ),
            (
                "fix_plan.md".to_string(),
                "# Plan\n\n- [ ] Add the findings\n".to_string(),
            ),
        ];
        let toml = "[defaults]\nagent = \"claude\"\ntype = \"research\"\n";
        let docs = documents(&r, &settings, toml, &files).unwrap();
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/manifest/monarch.yaml");
        let got = to_yaml(&docs);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&golden, &got).unwrap();
        }
        assert_eq!(
            got,
            std::fs::read_to_string(&golden).unwrap(),
            "rerun with UPDATE_GOLDEN=1 after a deliberate change, and review the diff"
        );
    }

    #[test]
    fn files_too_big_for_a_config_map_are_refused_naming_the_way_out() {
        let r = Request {
            topic: "t".into(),
            image: "i".into(),
            namespace: "n".into(),
            remote: None,
            branch: "b".into(),
            path: ".".into(),
            secret: None,
        };
        let big = vec![("artifact.md".to_string(), "x".repeat(CONFIG_MAP_MAX))];
        let err = documents(&r, &Settings::default(), "", &big).unwrap_err();
        assert!(err.contains("give --remote"), "{err}");
    }
}
