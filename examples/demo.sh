#!/bin/sh
# Build studio-agents and run one loop on a temporary copy of the bundled example, with the
# built-in heuristic evaluator and the stand-in agent script (no model, no API key needed).
# Everything it writes — the binary aside, built in this checkout's target/ — stays in one
# temporary directory: the artifact copy, its git history, and the loop's own home.
# STUDIO_AGENTS_BIN=/path/to/studio-agents runs that binary instead of building one.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${STUDIO_AGENTS_BIN:-}" ]; then
    bin=$STUDIO_AGENTS_BIN
else
    echo "building studio-agents (the first build takes 2-5 minutes on 2 cores)..."
    cargo build --release --locked --quiet --manifest-path "$here/../Cargo.toml"
    bin="$here/../target/release/studio-agents"
fi
work=$(mktemp -d)
export STUDIO_AGENTS_HOME="$work/home"
# The runs' temp dirs and the home's layer of the loop go there too.
mkdir -p "$work/tmp"
export TMPDIR="$work/tmp"
cp -r "$here/research" "$work/research"
echo "demo loop in $work/research"
"$bin" wiggum start demo --artifact-path "$work/research" \
    --agent-cmd "$here/example-agent.sh" --foreground

echo
echo "history:"
git -C "$work/research" log --format='  %h %an: %s'
echo
if ! command -v studio-agents >/dev/null 2>&1; then
    echo "studio-agents is not on PATH: install it with  cargo install --locked --path $(cd "$here/.." && pwd)"
fi
echo "look closer: STUDIO_AGENTS_HOME=$work/home studio-agents wiggum summary demo   (or diff, logs)"
echo "everything is in $work (remove it with: rm -rf $work)"
