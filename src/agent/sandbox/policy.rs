//! What one agent run may write, read and connect to, and its per-process limits: built from
//! `[safety]`, the repository and the agent's CLI, handed to the helper as JSON. Pure.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{Safety, SandboxMode};

/// The confinement of one agent run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// `landlock`, `off` or `required`.
    pub mode: SandboxMode,
    /// Where it may write (existing paths only; missing ones are left out).
    pub writable: Vec<PathBuf>,
    /// Where it may read, when narrowed (`None`: everywhere).
    pub readable: Option<Vec<PathBuf>>,
    /// The TCP ports it may connect to (`None`: any).
    pub ports: Option<Vec<u16>>,
    /// CPU seconds per process (0: no limit).
    pub max_cpu_secs: u64,
    /// Open files per process (0: inherited).
    pub max_open_files: u64,
    /// Protected files and directories inside the writable roots, made read-only in a private
    /// mount namespace where the kernel allows it (as root).
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// Directories it may not even read (`$STUDIO_AGENTS_HOME`: every agent's log and prompt,
    /// other loops' records, the copies of the user's work): Landlock's read rules then cover
    /// everything else ([`cover_except`]).
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// Whether Unix sockets may be made (the seccomp filter refuses them otherwise).
    #[serde(default)]
    pub unix_sockets: bool,
    /// The run's cgroup, which the helper joins first (everything the run starts follows).
    #[serde(default)]
    pub cgroup: Option<PathBuf>,
    /// Variables the helper sets for the command only when the filesystem confinement is in
    /// force, and only where the environment has none (`IS_SANDBOX=1` for claude as root).
    #[serde(default)]
    pub when_enforced: Vec<(String, String)>,
    /// The user's home seen through an overlay whose upper layer is the loop's own, where a
    /// mount namespace can be made: what the run writes in its home (its CLI's state, caches)
    /// lands in the layer, never in the user's files.
    #[serde(default)]
    pub home_layer: Option<HomeLayer>,
    /// TCP ports it may never connect to, whatever `ports` says (a running dashboard's).
    #[serde(default)]
    pub closed_ports: Vec<u16>,
    /// The size of the run's private `/dev/shm` (its memory ceiling; 0: the kernel's default).
    #[serde(default)]
    pub shm_bytes: u64,
    /// Make no mount namespace (`STUDIO_AGENTS_NO_NAMESPACE` set): the run gets what a machine
    /// without them gets — to see it, and to test it.
    #[serde(default)]
    pub no_namespace: bool,
    /// Where the helper writes how long its own steps took (only while step timings are
    /// logged: `sys::timing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<PathBuf>,
}

impl Policy {
    /// Whether the helper has anything to do: confinement or a per-process limit. Without it
    /// the job's shell is executed directly (core dumps are off in the supervisor already, and
    /// children inherit that).
    #[must_use]
    pub fn needs_helper(&self) -> bool {
        self.mode != SandboxMode::Off || self.max_cpu_secs > 0 || self.max_open_files > 0
    }
}

/// The variable that moves a CLI's state directory, and where under it the state lives:
/// `CODEX_HOME` is codex's state itself, `GEMINI_CLI_HOME` stands in for the home gemini keeps
/// `.gemini` in.
fn moved_by(program: &str) -> Option<(&'static str, &'static str)> {
    match program {
        "claude" => Some(("CLAUDE_CONFIG_DIR", "")),
        "codex" => Some(("CODEX_HOME", "")),
        "gemini" => Some(("GEMINI_CLI_HOME", ".gemini")),
        _ => None,
    }
}

/// Where the agent's environment `env` moved the CLI's state, if it did.
fn moved_state(program: &str, env: &[(String, String)]) -> Option<PathBuf> {
    let (var, under) = moved_by(program)?;
    let (_, v) = env.iter().find(|(k, v)| k == var && !v.is_empty())?;
    let base = PathBuf::from(v);
    base.is_absolute().then(|| base.join(under))
}

/// A CLI's own state under the home: directories (made when missing) and files.
fn home_state(program: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match program {
        "claude" => (
            &[".claude", ".config/claude"],
            &[".claude.json", ".claude.json.backup"],
        ),
        "codex" => (&[".codex"], &[]),
        "gemini" => (&[".gemini"], &[]),
        "aider" => (
            &[".aider"],
            &[".aider.chat.history.md", ".aider.input.history"],
        ),
        "kiro-cli" => (&[".kiro", ".local/share/kiro-cli"], &[]),
        "opencode" => (
            &[
                ".local/share/opencode",
                ".config/opencode",
                ".local/state/opencode",
            ],
            &[],
        ),
        "amp" => (&[".amp", ".config/amp", ".local/share/amp"], &[]),
        _ => (&[], &[]),
    }
}

/// The state directories a known CLI needs to exist before it runs (it writes inside them, and
/// a path that does not exist cannot be granted): its own under `home` (or, for the one its
/// variable moved, that place instead) and `~/.cache`.
#[must_use]
pub fn state_dirs_to_make(program: &str, home: &Path, env: &[(String, String)]) -> Vec<PathBuf> {
    let (dirs, _) = home_state(program);
    if dirs.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = match moved_state(program, env) {
        Some(moved) => vec![moved],
        None => dirs.iter().map(|d| home.join(d)).collect(),
    };
    out.push(home.join(".cache"));
    out
}

/// Directories (and files) an agent CLI keeps its own state in, writable to it: under `home`,
/// and where its variable in the agent's environment `env` moved it (`CODEX_HOME`, ...).
#[must_use]
pub fn state_dirs(program: &str, home: &Path, env: &[(String, String)]) -> Vec<PathBuf> {
    let (dirs, files) = home_state(program);
    let mut out: Vec<PathBuf> = dirs.iter().chain(files).map(|r| home.join(r)).collect();
    out.push(home.join(".cache"));
    out.extend(moved_state(program, env));
    out
}

/// The secret places under the home no agent reads unless `[safety] readable` names them: keys,
/// cloud and registry credentials, and each known CLI's own credentials file (its own CLI's is
/// left readable to it).
const SECRETS: [&str; 10] = [
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".pgpass",
];

/// Each known CLI's credentials, as it keeps them under the home.
const CLI_CREDENTIALS: [(&str, &str); 4] = [
    ("claude", ".claude/.credentials.json"),
    ("codex", ".codex/auth.json"),
    ("gemini", ".gemini/oauth_creds.json"),
    ("opencode", ".local/share/opencode/auth.json"),
];

/// The credentials file `program` keeps under the home, if it is a known CLI.
#[must_use]
pub fn credentials_of(program: &str) -> Option<&'static str> {
    CLI_CREDENTIALS
        .iter()
        .find(|(cli, _)| *cli == program)
        .map(|(_, path)| *path)
}

/// Whether `refreshed` may replace `current` as a CLI's credentials: both JSON objects of the
/// same shape — the same keys at every level, each value of the same kind (a token rotated, a
/// time moved on; not a file of another kind, nor one whose values became something else).
#[must_use]
pub fn same_kind_of_credentials(current: &[u8], refreshed: &[u8]) -> bool {
    fn same_shape(a: &serde_json::Value, b: &serde_json::Value) -> bool {
        use serde_json::Value as V;
        match (a, b) {
            (V::Object(x), V::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| same_shape(v, w)))
            }
            (V::Array(_), V::Array(_))
            | (V::String(_), V::String(_))
            | (V::Number(_), V::Number(_))
            | (V::Bool(_), V::Bool(_))
            | (V::Null, V::Null) => true,
            _ => false,
        }
    }
    let parse = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).ok();
    match (parse(current), parse(refreshed)) {
        (Some(a), Some(b)) => a.as_object().is_some_and(|o| !o.is_empty()) && same_shape(&a, &b),
        _ => false,
    }
}

/// The layer of the loop on `root`: under the temp dir when that lies outside the home (an
/// overlay's upper layer cannot lie inside its lower one), else under `/var/tmp`.
#[must_use]
pub fn layer_dir(home: &Path, temp: &Path, key: &str, uid: u32) -> PathBuf {
    let base = if temp.starts_with(home) {
        PathBuf::from(format!("/var/tmp/studio-agents-homes-{uid}"))
    } else {
        temp.join(format!("studio-agents-homes-{uid}"))
    };
    base.join(key)
}

/// The directories that hold the loops' home layers (`layer_dir`'s two places), hidden from
/// every run on Linux: another loop's layer holds what its runs wrote in their home, a refreshed
/// credential among it. A run's own layer is its home's (the overlay is mounted before the
/// masks) or its seeded home, which a rule of its own grants. (macOS's profile denies what is
/// hidden over what it grants: there the layers stay in sight.)
#[must_use]
pub fn layer_bases(temp: &Path, uid: u32) -> Vec<PathBuf> {
    if cfg!(not(target_os = "linux")) {
        return Vec::new();
    }
    let name = format!("studio-agents-homes-{uid}");
    let mut out = Vec::new();
    for base in [temp.join(&name), Path::new("/var/tmp").join(&name)] {
        let base = base.canonicalize().unwrap_or(base);
        if !out.contains(&base) {
            out.push(base);
        }
    }
    out
}

/// The secret places under `home` a run of `program` may not read: [`SECRETS`] and the other
/// CLIs' credentials, less what `readable` names (the place, or a directory holding it).
#[must_use]
pub fn secret_places(home: &Path, program: &str, readable: &[PathBuf]) -> Vec<PathBuf> {
    SECRETS
        .iter()
        .copied()
        .chain(
            CLI_CREDENTIALS
                .iter()
                .filter(|(cli, _)| *cli != program)
                .map(|(_, path)| *path),
        )
        .map(|r| home.join(r))
        .filter(|p| {
            !readable
                .iter()
                .any(|r| p.starts_with(r) && r != Path::new("/"))
        })
        .collect()
}

/// Directories every process needs to read when reads are narrowed.
const SYSTEM_READS: [&str; 10] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/dev", "/proc", "/sys", "/opt",
];

/// The devices an agent's tools write to: the null devices, `/dev/ptmx` — it makes a
/// pseudo-terminal, as CLIs that run commands in one do; the run's own `/dev/pts` is added
/// where it has a private one, and no other terminal of the machine is in its sight
/// ([`is_terminal`]) —, shared memory (the run's own where a mount namespace can be made).
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/ptmx",
    "/dev/shm",
    "/dev/full",
];

/// Whether the entry `name` of `/dev` is a terminal of the machine: the controlling terminal
/// (`tty`), the consoles and virtual terminals (`console`, `tty1`, `vcs…`), serial lines
/// (`ttyS0`, `ttyUSB0`) and every pseudo-terminal (`pts`).
#[must_use]
#[cfg_attr(
    not(target_os = "linux"),
    allow(
        dead_code,
        reason = "Landlock's device rules use it; macOS's profile has its own"
    )
)]
pub fn is_terminal(name: &str) -> bool {
    name == "console" || name == "pts" || name.starts_with("tty") || name.starts_with("vcs")
}

/// The policy of one run: the work tree (or the artifact dir without a repository), its
/// private temp dir, the devices, the CLI's state dirs and `[safety] writable`.
#[must_use]
pub fn build(safety: &Safety, work_root: &Path, tmp: &Path, state: &[PathBuf]) -> Policy {
    let mut writable = vec![work_root.to_path_buf(), tmp.to_path_buf()];
    writable.extend(DEVICES.iter().map(PathBuf::from));
    writable.extend(state.iter().cloned());
    writable.extend(safety.writable.iter().cloned());
    let readable = (!safety.readable.is_empty()).then(|| {
        let mut r: Vec<PathBuf> = safety.readable.clone();
        r.extend(SYSTEM_READS.iter().map(PathBuf::from));
        r.extend(writable.iter().cloned());
        r
    });
    Policy {
        mode: safety.sandbox,
        writable,
        readable,
        ports: safety.network.allowed_ports(),
        max_cpu_secs: safety.max_cpu_secs,
        max_open_files: safety.max_open_files,
        read_only: Vec::new(),
        hidden: Vec::new(),
        unix_sockets: safety.unix_sockets == crate::config::UnixSockets::Allow,
        cgroup: None,
        when_enforced: Vec::new(),
        shm_bytes: safety.max_memory_mb.saturating_mul(1 << 20),
        closed_ports: Vec::new(),
        home_layer: None,
        no_namespace: std::env::var_os(NO_NAMESPACE).is_some_and(|v| !v.is_empty()),
        timings: None,
    }
}

/// The variable that switches mount namespaces off (docs/security.md).
pub const NO_NAMESPACE: &str = "STUDIO_AGENTS_NO_NAMESPACE";

/// A home seen through a layer of the loop's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HomeLayer {
    /// The user's home (the overlay's lower layer and where it is mounted).
    pub home: PathBuf,
    /// The loop's layer: `upper/` (what runs wrote, kept across its iterations) and `work/`.
    pub layer: PathBuf,
    /// The real directories under the home the run works in (the repository, its temp dir,
    /// `[safety] writable`): bound back over the overlay, so they are the user's own.
    pub pass_through: Vec<PathBuf>,
}

impl Policy {
    /// Keep the run from `closed` ports: left out of a list of ports, and where any port was
    /// open, every port but those (`allowed_but`).
    pub fn close_ports(&mut self, closed: &[u16]) {
        if let Some(p) = self.ports.as_mut() {
            p.retain(|port| !closed.contains(port));
        }
        self.closed_ports = closed.to_vec();
    }
}

/// Every TCP port but `closed`, for a run that may connect anywhere else.
#[must_use]
#[cfg_attr(
    not(target_os = "linux"),
    allow(
        dead_code,
        reason = "Landlock's port rules use it; macOS's profile has its own"
    )
)]
pub fn allowed_but(closed: &[u16]) -> Vec<u16> {
    (1..=u16::MAX).filter(|p| !closed.contains(p)).collect()
}

/// Landlock grants, it cannot deny: to keep `hidden` out of sight, read rules go on every entry
/// of each directory on the way from `/` to a hidden one, except the entries on that way and the
/// hidden ones themselves. Everything else stays readable; the directories on the way can be
/// passed through but not listed (`ls ~` fails when the store is `~/.studio-agents`), and entries
/// made there after the run started are not readable. `list` names a directory's entries.
#[must_use]
#[cfg(any(target_os = "linux", test))]
pub fn cover_except(hidden: &[PathBuf], list: impl Fn(&Path) -> Vec<PathBuf>) -> Vec<PathBuf> {
    use std::collections::BTreeSet;
    let on_the_way: BTreeSet<&Path> = hidden.iter().flat_map(|h| h.ancestors().skip(1)).collect();
    let hidden: BTreeSet<&Path> = hidden.iter().map(PathBuf::as_path).collect();
    let mut out: BTreeSet<PathBuf> = BTreeSet::new();
    for dir in &on_the_way {
        for entry in list(dir) {
            if !on_the_way.contains(entry.as_path()) && !hidden.contains(entry.as_path()) {
                out.insert(entry);
            }
        }
    }
    out.into_iter().collect()
}

/// `roots` to read, less `hidden`: a root holding a hidden path is replaced by the cover of
/// its part of the tree ([`cover_except`]); a root inside a hidden path is dropped.
#[must_use]
#[cfg(any(target_os = "linux", test))]
pub fn reads_without(
    roots: &[PathBuf],
    hidden: &[PathBuf],
    list: impl Fn(&Path) -> Vec<PathBuf>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        if hidden.iter().any(|h| root.starts_with(h)) {
            continue;
        }
        let inside: Vec<PathBuf> = hidden
            .iter()
            .filter(|h| h.starts_with(root))
            .cloned()
            .collect();
        if inside.is_empty() {
            out.push(root.clone());
            continue;
        }
        out.extend(
            cover_except(&inside, &list)
                .into_iter()
                .filter(|e| e.starts_with(root)),
        );
    }
    out
}

/// The protected paths of a loop that can be made read-only: the repository's whole `.git`
/// (objects, refs, `packed-refs`, `info/`, hooks, config: the supervisor commits, the agent
/// reads; a gitfile of a linked worktree is bound read-only as it is), and the control files written in place (`runs.jsonl`, `control.json`, `daemon.log`, `wiggum.toml`). The
/// supervisor replaces `state.json` and `.lock` by rename, which would undo a bind mount: those
/// two are checked after each run instead (`state.json`) or re-established (`.lock`).
#[must_use]
pub fn protected(work_root: &Path, wiggum: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = vec![work_root.join(".git")];
    if let Some(w) = wiggum {
        out.extend(
            ["runs.jsonl", "control.json", "daemon.log", "wiggum.toml"]
                .iter()
                .map(|f| w.join(f)),
        );
    }
    out
}

/// What the kernel enforces of a policy, for `start`, `status` and the run records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Enforcement {
    /// The sandbox mode asked for.
    pub mode: String,
    /// The Landlock ABI the kernel offers (0: none).
    pub abi: u8,
    /// Filesystem writes confined.
    pub filesystem: bool,
    /// TCP connections confined (ABI ≥ 4), when a rule asked for it.
    pub network: bool,
    /// Protected files made read-only (a private mount namespace: as root, or in a user
    /// namespace of the run's own).
    #[serde(default)]
    pub read_only: bool,
    /// `/dev/shm` the run's own (a private tmpfs, at most its memory ceiling, gone with it).
    #[serde(default)]
    pub private_shm: bool,
    /// `/dev/pts` the run's own (a private devpts instance): only the terminals it made.
    #[serde(default)]
    pub private_ptys: bool,
    /// `/dev` the run's own: the common devices only, no terminal, disk or console of the
    /// machine.
    #[serde(default)]
    pub private_dev: bool,
    /// The home seen through the loop's layer (an overlay): the user's files never change.
    #[serde(default)]
    pub home_layer: bool,
    /// Where no layer could be laid: the run's home is the loop's own, seeded from the user's
    /// (`seeded`); the user's home is read-only to it.
    #[serde(default)]
    pub home_seeded: bool,
    /// Signals and abstract Unix sockets scoped to the run's own processes (Landlock ABI ≥ 6):
    /// it cannot signal its supervisor, nor reach an abstract socket outside.
    #[serde(default)]
    pub scoped: bool,
    /// The seccomp filter installed (Unix sockets, terminal injection, datagrams).
    #[serde(default)]
    pub seccomp: bool,
    /// Every capability dropped from the bounding and ambient sets (as root: the run executes
    /// with none).
    #[serde(default)]
    pub no_capabilities: bool,
    /// Why something is not enforced.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Enforcement {
    /// `sandbox: landlock ABI 7, enforced` / `sandbox: NOT enforced — kernel has no Landlock`.
    #[must_use]
    pub fn line(&self) -> String {
        if self.mode == "off" {
            return "sandbox: off ([safety] sandbox = \"off\")".into();
        }
        if !self.filesystem {
            return format!("sandbox: NOT enforced — {}", self.note);
        }
        let mut s = format!("sandbox: landlock ABI {}, enforced", self.abi);
        if self.read_only {
            s.push_str("; .git and control files read-only");
        }
        if self.private_shm {
            s.push_str("; private /dev/shm");
        }
        if self.private_ptys {
            s.push_str("; private terminals");
        }
        if self.private_dev {
            s.push_str("; a /dev of its own");
        }
        if self.home_layer {
            s.push_str("; home through the loop's layer");
        } else if self.home_seeded {
            s.push_str("; a home of the loop's own, seeded from yours");
        }
        if self.scoped {
            s.push_str("; signals scoped");
        }
        if self.seccomp {
            s.push_str("; seccomp");
        }
        if self.no_capabilities {
            s.push_str("; no capabilities");
        }
        if !self.note.is_empty() {
            s.push_str(&format!(" ({})", self.note));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cover_reads_everything_but_the_hidden_store_and_the_way_to_it() {
        let tree = |d: &Path| -> Vec<PathBuf> {
            let names: &[&str] = match d.to_str().unwrap() {
                "/" => &["usr", "home", "tmp"],
                "/home" => &["me", "other"],
                "/home/me" => &[".studio-agents", ".claude", "project"],
                _ => &[],
            };
            names.iter().map(|n| d.join(n)).collect()
        };
        let got = cover_except(&[PathBuf::from("/home/me/.studio-agents")], tree);
        let want: Vec<PathBuf> = [
            "/home/me/.claude",
            "/home/me/project",
            "/home/other",
            "/tmp",
            "/usr",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(got, want);
        assert!(cover_except(&[], tree).is_empty());
    }
    #[test]
    fn the_machines_terminals_are_named_and_the_null_devices_are_not() {
        for name in [
            "tty", "tty0", "tty63", "ttyS0", "ttyUSB1", "console", "pts", "vcs1", "vcsa",
        ] {
            assert!(is_terminal(name), "{name}");
        }
        for name in [
            "null", "zero", "ptmx", "shm", "full", "urandom", "fd", "stdin",
        ] {
            assert!(!is_terminal(name), "{name}");
        }
        assert!(!DEVICES.iter().any(|d| is_terminal(&d["/dev/".len()..])));
    }

    #[test]
    fn a_dashboards_port_is_closed_whatever_the_network_rule() {
        let mut listed = build(
            &Safety {
                network: Network::Ports(vec![443, 8765]),
                ..Safety::default()
            },
            Path::new("/r"),
            Path::new("/t"),
            &[],
        );
        listed.close_ports(&[8765]);
        assert_eq!(listed.ports, Some(vec![443]));
        let mut any = build(&Safety::default(), Path::new("/r"), Path::new("/t"), &[]);
        any.close_ports(&[8765]);
        assert_eq!((any.ports, any.closed_ports), (None, vec![8765]));
        let open = allowed_but(&[8765, 1]);
        assert_eq!(open.len(), usize::from(u16::MAX) - 2);
        assert!(!open.contains(&8765) && open.contains(&8766) && open.contains(&443));
    }

    #[test]
    fn only_a_rotated_token_of_the_same_kind_is_written_back() {
        let cur = br#"{"claudeAiOauth":{"accessToken":"a"}}"#;
        assert!(same_kind_of_credentials(
            cur,
            br#"{"claudeAiOauth":{"accessToken":"b"}}"#
        ));
        assert!(!same_kind_of_credentials(cur, br#"{"hooks":{}}"#));
        // The same keys, a value of another kind (a string where an object was).
        assert!(!same_kind_of_credentials(
            cur,
            br#"{"claudeAiOauth":"$(id > /tmp/x)"}"#
        ));
        // A key more or less, however deep.
        assert!(!same_kind_of_credentials(
            cur,
            br#"{"claudeAiOauth":{"accessToken":"b","hook":"x"}}"#
        ));
        assert!(!same_kind_of_credentials(cur, b"not json"));
        assert!(!same_kind_of_credentials(b"{}", b"{}"));
        assert_eq!(credentials_of("codex"), Some(".codex/auth.json"));
        assert_eq!(credentials_of("sh"), None);
        let home = Path::new("/home/u");
        assert_eq!(
            layer_dir(home, Path::new("/tmp"), "k", 7),
            Path::new("/tmp/studio-agents-homes-7/k")
        );
        assert_eq!(
            layer_dir(home, Path::new("/home/u/tmp"), "k", 7),
            Path::new("/var/tmp/studio-agents-homes-7/k")
        );
    }

    #[test]
    fn secret_places_are_hidden_unless_readable_names_them() {
        let home = Path::new("/home/u");
        let s = secret_places(home, "claude", &[]);
        for p in [
            ".ssh",
            ".aws",
            ".netrc",
            ".docker/config.json",
            ".codex/auth.json",
        ] {
            assert!(s.contains(&home.join(p)), "{p}");
        }
        // Its own CLI's credentials stay readable to it.
        assert!(!s.contains(&home.join(".claude/.credentials.json")));
        assert!(
            secret_places(home, "codex", &[]).contains(&home.join(".claude/.credentials.json"))
        );
        let named = secret_places(home, "sh", &[home.join(".aws"), home.join(".docker")]);
        assert!(!named.contains(&home.join(".aws")));
        assert!(!named.contains(&home.join(".docker/config.json")));
        assert!(named.contains(&home.join(".ssh")));
    }

    #[test]
    fn narrowed_reads_leave_out_what_is_hidden() {
        let tree = |d: &Path| -> Vec<PathBuf> {
            let names: &[&str] = match d.to_str().unwrap() {
                "/" => &["dev", "usr", "home"],
                "/dev" => &["null", "pts", "tty", "shm"],
                "/home" => &["me"],
                "/home/me" => &[".studio-agents", "src"],
                _ => &[],
            };
            names.iter().map(|n| d.join(n)).collect()
        };
        let paths = |v: &[&str]| -> Vec<PathBuf> { v.iter().map(PathBuf::from).collect() };
        let hidden = paths(&["/dev/pts", "/dev/tty", "/home/me/.studio-agents"]);
        let got = reads_without(
            &paths(&["/usr", "/dev", "/home/me", "/dev/pts/3"]),
            &hidden,
            tree,
        );
        assert_eq!(
            got,
            paths(&["/usr", "/dev/null", "/dev/shm", "/home/me/src"])
        );
    }

    use crate::config::{Network, NetworkRule};

    #[test]
    fn a_clis_variable_moves_its_state_and_what_must_exist() {
        let home = Path::new("/home/u");
        let env = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        type Env = Vec<(String, String)>;
        let cases: [(&str, Env, Option<&str>, &str); 6] = [
            (
                "codex",
                env("CODEX_HOME", "/data/codex"),
                Some("/data/codex"),
                "/data/codex",
            ),
            ("codex", vec![], None, "/home/u/.codex"),
            ("claude", env("CLAUDE_CONFIG_DIR", "/c"), Some("/c"), "/c"),
            (
                "gemini",
                env("GEMINI_CLI_HOME", "/g"),
                Some("/g/.gemini"),
                "/g/.gemini",
            ),
            // A relative or empty value is no place the harness can grant.
            ("codex", env("CODEX_HOME", "rel"), None, "/home/u/.codex"),
            (
                "gemini",
                env("GEMINI_CLI_HOME", ""),
                None,
                "/home/u/.gemini",
            ),
        ];
        for (program, env, moved, make) in cases {
            let dirs = state_dirs(program, home, &env);
            assert!(dirs.contains(&home.join(".cache")), "{program}");
            assert_eq!(
                moved.is_some_and(|m| dirs.contains(&PathBuf::from(m))),
                moved.is_some(),
                "{program} {env:?}"
            );
            let made = state_dirs_to_make(program, home, &env);
            assert_eq!(made[0], PathBuf::from(make), "{program}");
            assert_eq!(made.last(), Some(&home.join(".cache")), "{program}");
        }
        assert_eq!(
            state_dirs_to_make("opencode", home, &[]),
            [
                "/home/u/.local/share/opencode",
                "/home/u/.config/opencode",
                "/home/u/.local/state/opencode",
                "/home/u/.cache"
            ]
            .map(PathBuf::from)
        );
        assert!(state_dirs_to_make("sh", home, &[]).is_empty());
    }

    #[test]
    fn a_policy_grants_the_work_tree_the_temp_dir_and_the_clis_state() {
        let safety = Safety {
            writable: vec!["/srv/cache".into()],
            network: Network::Ports(vec![443]),
            ..Safety::default()
        };
        let state = state_dirs("claude", Path::new("/home/u"), &[]);
        let p = build(&safety, Path::new("/repo"), Path::new("/tmp/run"), &state);
        for w in [
            "/repo",
            "/tmp/run",
            "/dev/null",
            "/home/u/.claude",
            "/home/u/.cache",
            "/srv/cache",
        ] {
            assert!(p.writable.contains(&PathBuf::from(w)), "{w}");
        }
        assert!(!p.writable.contains(&PathBuf::from("/home/u")));
        assert_eq!(p.ports, Some(vec![443]));
        assert_eq!(p.readable, None);
        // No terminal of the machine is writable: the run makes its own through /dev/ptmx.
        for t in ["/dev/tty", "/dev/pts", "/dev/console"] {
            assert!(!p.writable.contains(&PathBuf::from(t)), "{t}");
        }
        assert!(p.writable.contains(&PathBuf::from("/dev/ptmx")));
        // The whole .git is bound read-only, with the loop's control files.
        let prot = protected(Path::new("/repo"), Some(Path::new("/repo/art/wiggum")));
        assert!(prot.contains(&PathBuf::from("/repo/.git")));
        assert!(prot.contains(&PathBuf::from("/repo/art/wiggum/runs.jsonl")));
        let none = Safety {
            network: Network::Rule(NetworkRule::None),
            readable: vec!["/data".into()],
            ..Safety::default()
        };
        let p = build(&none, Path::new("/repo"), Path::new("/tmp/run"), &[]);
        assert_eq!(p.ports, Some(vec![]));
        let r = p.readable.unwrap();
        assert!(r.contains(&PathBuf::from("/data")) && r.contains(&PathBuf::from("/usr")));
        assert!(r.contains(&PathBuf::from("/repo")));
    }

    #[test]
    fn the_status_line_says_what_is_enforced() {
        let e = Enforcement {
            mode: "landlock".into(),
            abi: 7,
            filesystem: true,
            network: true,
            read_only: false,
            note: String::new(),
            ..Enforcement::default()
        };
        assert_eq!(e.line(), "sandbox: landlock ABI 7, enforced");
        let all = Enforcement {
            read_only: true,
            private_shm: true,
            private_ptys: true,
            scoped: true,
            seccomp: true,
            no_capabilities: true,
            ..e.clone()
        };
        assert_eq!(
            all.line(),
            "sandbox: landlock ABI 7, enforced; .git and control files read-only; private /dev/shm; private terminals; signals scoped; seccomp; no capabilities"
        );
        let none = Enforcement {
            mode: "landlock".into(),
            note: "kernel has no Landlock".into(),
            ..Enforcement::default()
        };
        assert_eq!(
            none.line(),
            "sandbox: NOT enforced — kernel has no Landlock"
        );
    }
}
