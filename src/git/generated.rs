//! Build output and caches: files a test run or a build leaves in the work tree, which a loop
//! does not commit unless the repository tracks them already. Pure.

use std::path::{Component, Path};

/// Directories whose contents are build output or caches, wherever they lie.
const DIRS: [&str; 11] = [
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    "node_modules",
    "target",
    "dist",
    "build",
    ".gradle",
    ".venv",
];

/// File extensions of compiled output.
const EXTENSIONS: [&str; 7] = ["pyc", "pyo", "o", "obj", "class", "so", "dylib"];

/// Whether `rel` is build output or a cache by its name.
#[must_use]
pub fn is_generated(rel: &Path) -> bool {
    let in_dir = rel.parent().is_some_and(|p| {
        p.components().any(|c| match c {
            Component::Normal(n) => n.to_str().is_some_and(|n| DIRS.contains(&n)),
            _ => false,
        })
    });
    let named = rel
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| DIRS.contains(&n) && n != "target" && n != "build" && n != "dist");
    in_dir
        || named
        || rel
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| EXTENSIONS.contains(&x))
        || rel.file_name().is_some_and(|n| n == ".coverage")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_output_and_caches_are_known_by_their_names() {
        for (path, generated) in [
            ("__pycache__/calc.cpython-311.pyc", true),
            ("pkg/__pycache__/x.pyc", true),
            ("calc.pyc", true),
            ("target/debug/app", true),
            ("web/node_modules/left-pad/index.js", true),
            (".pytest_cache/v/cache/nodeids", true),
            ("src/main.o", true),
            ("dist/app.tar.gz", true),
            (".coverage", true),
            ("calc.py", false),
            ("src/target.rs", false),
            ("docs/build.md", false),
            ("target", false),
            ("pkg/__pycache__", true),
            ("web/node_modules", true),
        ] {
            assert_eq!(is_generated(Path::new(path)), generated, "{path}");
        }
    }
}
