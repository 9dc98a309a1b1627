//! The tree is the architecture (docs/architecture.md): each part of `src/` imports only parts
//! below it, and no module imports another that imports it back. Read from the source itself, so
//! a change that breaks the plan fails here, not in a review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The parts, bottom first; a part may import the parts of a lower rank (`error` is shared).
const RANKS: [(&str, u32); 11] = [
    ("sys", 0),
    ("config", 1),
    ("disk", 2),
    ("quality", 3),
    ("agent", 4),
    ("git", 4),
    ("gate", 5),
    ("ralph", 6),
    ("supervisor", 7),
    ("view", 7),
    ("cli", 8),
];

fn rank(part: &str) -> Option<u32> {
    RANKS.iter().find(|(p, _)| *p == part).map(|(_, r)| *r)
}

/// Every `.rs` file under `src/`, test modules left out (`tests.rs`, and the text after
/// `#[cfg(test)]`).
fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs")
                && p.file_name().is_some_and(|n| n != "tests.rs")
            {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap().to_string();
                out.push((p, code));
            }
        }
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&src, &mut out);
    out.into_iter()
        .map(|(p, t)| (p.strip_prefix(&src).unwrap().to_path_buf(), t))
        .collect()
}

/// `cli/status.rs` → `cli::status`, `gate/mod.rs` → `gate`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|c| c.to_string_lossy().to_string())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// Modules a file names: `crate::a::b` and `super::b` paths (with `use super::{a, b}` groups),
/// resolved to the longest known module.
fn imports(module: &str, code: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let parent: Vec<&str> = module.split("::").collect();
    let parent = parent[..parent.len().saturating_sub(1)].join("::");
    let mut out = BTreeSet::new();
    let mut add = |path: String| {
        let segs: Vec<&str> = path.split("::").collect();
        for n in (1..=segs.len()).rev() {
            let cand = segs[..n].join("::");
            if known.contains(&cand) {
                if cand != module {
                    out.insert(cand);
                }
                return;
            }
        }
    };
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        add(ident(&code[i + 7..]).trim_end_matches(':').to_string());
    }
    for (i, _) in code.match_indices("super::") {
        let rest = &code[i + 7..];
        let base = |p: &str| {
            if parent.is_empty() {
                p.to_string()
            } else {
                format!("{parent}::{p}")
            }
        };
        if let Some(group) = rest.strip_prefix('{') {
            for item in group.split('}').next().unwrap().split(',') {
                let item = ident(item.trim());
                if !item.is_empty() && item != "self" {
                    add(base(item.trim_end_matches(':')));
                }
            }
        } else {
            add(base(ident(rest).trim_end_matches(':')));
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let files = sources();
    let known: BTreeSet<String> = files.iter().map(|(p, _)| module_of(p)).collect();
    files
        .iter()
        .map(|(p, code)| {
            let m = module_of(p);
            let deps = imports(&m, code, &known);
            (m, deps)
        })
        .collect()
}

#[test]
fn every_part_imports_only_parts_below_it() {
    let mut wrong = Vec::new();
    for (module, deps) in graph() {
        let part = module.split("::").next().unwrap().to_string();
        let Some(r) = rank(&part) else {
            // The crate's root files and its binaries' (`bin/`); any other part must have its
            // place in the plan.
            if !["lib", "main", "error", "bin"].contains(&part.as_str()) {
                wrong.push(format!(
                    "{module}: `{part}` has no place in the house plan (add it to RANKS and docs/architecture.md)"
                ));
            }
            continue;
        };
        for d in deps {
            let dpart = d.split("::").next().unwrap();
            if dpart == part {
                continue;
            }
            if let Some(dr) = rank(dpart)
                && dr >= r
            {
                wrong.push(format!("{module} imports {d}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the house plan:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let g = graph();
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            // A parent module (`mod.rs`) declaring its children is not an import.
            if d.split("::").count() > m.split("::").count() && d.starts_with(m) {
                continue;
            }
            if let Some(c) = visit(d, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in g.keys() {
        if let Some(cycle) = visit(m, &g, &mut Vec::new(), &mut done) {
            panic!("import cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn the_checker_sees_imports() {
    let known: BTreeSet<String> = [
        "ralph",
        "ralph::accept",
        "ralph::commit",
        "ralph::decide",
        "disk",
        "disk::lock",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let got = imports(
        "ralph::accept",
        "use super::{commit, decide};\nuse crate::disk::lock::{self, Holder};",
        &known,
    );
    assert_eq!(
        got,
        ["disk::lock", "ralph::commit", "ralph::decide"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}

#[test]
fn every_file_the_architecture_page_names_exists() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut missing = Vec::new();
    for quoted in page.split('`').skip(1).step_by(2) {
        if !quoted.contains('/') || !quoted.ends_with(".rs") {
            continue;
        }
        if !root.join("src").join(quoted).exists() && !root.join(quoted).exists() {
            missing.push(quoted.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md names missing files: {missing:?}"
    );
}

/// Signals are sent by the supervisor's part (to a supervisor, a delegation) and the agent's
/// (an agent's tree), through the kernel mechanisms of `sys/` (a cgroup's members); a reader in
/// `view/` or `cli/`, or the on-disk contract in `disk/`, asks them.
#[test]
fn only_the_supervisor_and_the_agent_send_signals() {
    let mut found = Vec::new();
    for (rel, code) in sources() {
        let top = rel.iter().next().unwrap().to_string_lossy().to_string();
        if matches!(top.as_str(), "supervisor" | "agent" | "sys") {
            continue;
        }
        // `kill(…)` and `killpg(…)` as functions (a `child.kill()` is a process's own child).
        for (at, _) in code.match_indices("kill") {
            let before = code[..at].chars().next_back().unwrap_or(' ');
            let after = &code[at + 4..];
            let called = after.starts_with('(') || after.starts_with("pg(");
            if called && before != '.' && !before.is_alphanumeric() && before != '_' {
                found.push(format!("{} at byte {at}", rel.display()));
            }
        }
    }
    assert!(found.is_empty(), "signals sent from {found:?}");
}

/// The loop's state changes through its owner's methods (`ralph/books.rs`), named for what
/// happened, never by field writes from the modules that hold the loop.
#[test]
fn the_loops_state_is_written_only_by_its_owner() {
    let write = regex::Regex::new(
        r"runner\s*\.state\s*\.[a-z_]+(\s*\.[a-z_]+)*\s*(=[^=]|\.(insert|push|clear|extend|clone_from|add|remove|step)\()|&mut\s+[a-z_.]*runner\.state\b",
    )
    .unwrap();
    let mut found = Vec::new();
    for (rel, code) in sources() {
        for m in write.find_iter(&code) {
            found.push(format!("{}: {}", rel.display(), m.as_str()));
        }
    }
    assert!(
        found.is_empty(),
        "state written outside its owner: {found:#?}"
    );
    // The check sees a write where there is one.
    assert!(write.is_match("lp.runner.state.last_event = Some(x);"));
    assert!(
        write.is_match(
            "self.runner\n        .state\n        .limited_agents\n        .insert(a, b);"
        )
    );
    assert!(!write.is_match("let n = lp.runner.state.current_iteration;"));
}
