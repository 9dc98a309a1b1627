#!/bin/sh
# Install studio-agents and run one loop on a temporary copy of the bundled example, with the
# built-in heuristic evaluator and the stand-in agent script (no model, no API key needed).
# Nothing is committed outside the temporary directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cargo install --locked --path "$here/.."
work=$(mktemp -d)
cp -r "$here/research" "$work/research"
echo "demo loop in $work/research"
studio-agents wiggum start demo-$$ --artifact-path "$work/research" \
    --agent-cmd "$here/example-agent.sh" --foreground
studio-agents wiggum status demo-$$
echo
echo "history:"
git -C "$work/research" log --format='  %h %an: %s'
