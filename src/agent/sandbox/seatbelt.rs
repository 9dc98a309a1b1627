//! The policy as a macOS Seatbelt profile (`sandbox-exec -p PROFILE -D NAME=VALUE … -- CMD`),
//! the way macOS confines a process and everything it starts: deny by default; reads everywhere
//! (or only under the readable roots), except the hidden directories; writes only under the
//! writable roots, the protected files there read-only; TCP out to any port or only to the
//! policy's ports; Unix sockets refused unless allowed. Paths travel as parameters (`-D`),
//! never spliced into the profile's text, so no path can change its meaning. Generated here as
//! data, pure, and golden-tested on every platform; applied by the helper on macOS only.
//!
//! In Seatbelt's language a later rule wins over an earlier one for the same operation, so the
//! narrowing rules (read-only, hidden) come after the rules they narrow.

use std::path::{Path, PathBuf};

use super::policy::Policy;

/// The program that applies a profile (a fixed path: never one found on `PATH`).
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A profile and the parameters its rules name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The profile's text.
    pub text: String,
    /// `(NAME, path)` for each `(param "NAME")` in the text.
    pub params: Vec<(String, PathBuf)>,
}

impl Profile {
    /// The arguments of `sandbox-exec` that run `command` under this profile.
    #[must_use]
    pub fn args(&self, command: &[String]) -> Vec<String> {
        let mut out = vec!["-p".to_string(), self.text.clone()];
        for (name, path) in &self.params {
            out.push("-D".into());
            out.push(format!("{name}={}", path.display()));
        }
        out.extend(command.iter().cloned());
        out
    }
}

/// What every process needs to start and run at all: exec and fork, its own signals, the
/// system's read-only state, the terminal and null devices, and the services a shell, git and
/// a TLS client look up.
const BASE: &str = "\
(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm)
(allow ipc-posix-sem)
(allow user-preference-read)
(allow file-ioctl (literal \"/dev/tty\") (literal \"/dev/null\"))
(allow file-write-data
  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\") (literal \"/dev/stdout\")
  (literal \"/dev/stderr\") (regex #\"^/dev/ttys[0-9]+$\") (regex #\"^/dev/fd/[0-9]+$\"))
";

/// The profile of `p`. `canonical` resolves a path the way macOS names it (`/var` is
/// `/private/var`): rules match the resolved path, so each root is given resolved.
#[must_use]
pub fn profile(p: &Policy, canonical: impl Fn(&Path) -> PathBuf) -> Profile {
    let mut text = String::from(BASE);
    let mut params: Vec<(String, PathBuf)> = Vec::new();
    let mut param = |prefix: &str, path: &Path| -> String {
        let name = format!(
            "{prefix}_{}",
            params.iter().filter(|(n, _)| n.starts_with(prefix)).count()
        );
        params.push((name.clone(), canonical(path)));
        format!("(subpath (param \"{name}\"))")
    };
    match &p.readable {
        None => text.push_str("(allow file-read*)\n"),
        Some(roots) => {
            let rules: Vec<String> = roots.iter().map(|r| param("READABLE", r)).collect();
            // The root directory itself is listed by every program that resolves a path.
            text.push_str(&format!(
                "(allow file-read-metadata)\n(allow file-read* (literal \"/\") {})\n",
                rules.join(" ")
            ));
        }
    }
    if !p.writable.is_empty() {
        let rules: Vec<String> = p.writable.iter().map(|w| param("WRITABLE", w)).collect();
        text.push_str(&format!(
            "(allow file-read* file-write* {})\n",
            rules.join(" ")
        ));
    }
    if !p.read_only.is_empty() {
        let rules: Vec<String> = p.read_only.iter().map(|r| param("READ_ONLY", r)).collect();
        text.push_str(&format!("(deny file-write* {})\n", rules.join(" ")));
    }
    if !p.hidden.is_empty() {
        let rules: Vec<String> = p.hidden.iter().map(|h| param("HIDDEN", h)).collect();
        text.push_str(&format!(
            "(deny file-read* file-write* {})\n",
            rules.join(" ")
        ));
    }
    match &p.ports {
        None => text.push_str(
            "(allow network-outbound)\n(allow network-inbound (local ip))\n(allow system-socket)\n",
        ),
        Some(ports) => {
            text.push_str("(allow system-socket)\n");
            for port in ports {
                text.push_str(&format!(
                    "(allow network-outbound (remote tcp \"*:{port}\"))\n"
                ));
            }
        }
    }
    if p.unix_sockets {
        text.push_str("(allow network-outbound (remote unix-socket))\n(allow network-bind (local unix-socket))\n");
    } else {
        text.push_str("(deny network-outbound (remote unix-socket))\n(deny network-bind (local unix-socket))\n");
    }
    Profile { text, params }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxMode;

    fn policy() -> Policy {
        Policy {
            mode: SandboxMode::Required,
            writable: vec!["/Users/me/art".into(), "/var/folders/x/T".into()],
            readable: None,
            ports: Some(vec![443, 8080]),
            max_cpu_secs: 0,
            max_open_files: 0,
            read_only: vec!["/Users/me/art/wiggum/wiggum.toml".into()],
            hidden: vec!["/Users/me/.studio-agents".into()],
            unix_sockets: false,
            cgroup: None,
            when_enforced: Vec::new(),
            shm_bytes: 0,
            closed_ports: Vec::new(),
            home_layer: None,
            no_namespace: false,
            timings: None,
        }
    }

    /// macOS names `/var` `/private/var`.
    fn mac(p: &Path) -> PathBuf {
        match p.strip_prefix("/var") {
            Ok(rest) => Path::new("/private/var").join(rest),
            Err(_) => p.to_path_buf(),
        }
    }

    #[test]
    fn a_required_sandbox_with_ports_and_protected_files() {
        let p = profile(&policy(), mac);
        insta::assert_snapshot!(p.text);
        assert_eq!(
            p.params,
            [
                ("WRITABLE_0".to_string(), PathBuf::from("/Users/me/art")),
                (
                    "WRITABLE_1".to_string(),
                    PathBuf::from("/private/var/folders/x/T")
                ),
                (
                    "READ_ONLY_0".to_string(),
                    PathBuf::from("/Users/me/art/wiggum/wiggum.toml")
                ),
                (
                    "HIDDEN_0".to_string(),
                    PathBuf::from("/Users/me/.studio-agents")
                ),
            ]
        );
    }

    #[test]
    fn narrowed_reads_any_network_and_unix_sockets() {
        let mut p = policy();
        p.readable = Some(vec!["/usr".into(), "/Users/me/art".into()]);
        p.ports = None;
        p.unix_sockets = true;
        p.read_only.clear();
        p.hidden.clear();
        insta::assert_snapshot!(profile(&p, mac).text);
    }

    #[test]
    fn a_path_never_enters_the_text() {
        let mut p = policy();
        p.writable = vec!["/tmp/x\") (allow default) (\"".into()];
        let prof = profile(&p, |x| x.to_path_buf());
        assert!(!prof.text.contains("allow default"), "{}", prof.text);
        assert_eq!(
            prof.params[0].1,
            PathBuf::from("/tmp/x\") (allow default) (\"")
        );
        let args = prof.args(&["sh".into(), "-c".into(), "true".into()]);
        assert_eq!(args[0], "-p");
        assert_eq!(args[2], "-D");
        assert!(args[3].starts_with("WRITABLE_0=/tmp/x"));
        assert_eq!(args[args.len() - 3..], ["sh", "-c", "true"]);
        // The program that applies it is named by its full path, never looked up on PATH.
        assert!(Path::new(SANDBOX_EXEC).is_absolute());
    }
}
