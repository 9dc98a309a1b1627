#!/usr/bin/env bash
# `report` over a long run log, against a baseline streaming script in the same run:
# a runs.jsonl of LINES lines (default 1,000,000) in the exact shape the loop writes (the pinned
# v0.1.0 records repeated: planning, crashed and accepted iterations, gate rounds).
# Targets: under 2 s and under 100 MB peak RSS. Usage: benches/report.sh   (prints, asserts nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${LINES:-1000000}
cargo build --release --quiet
bin=$PWD/target/release/studio-agents
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STUDIO_AGENTS_HOME=$work/home
art=$work/art
mkdir -p "$art/wiggum" "$STUDIO_AGENTS_HOME/loops"
printf 'artifact_path = "%s"\n' "$art" > "$STUDIO_AGENTS_HOME/loops/long.toml"
python3 - "$lines" "$art/wiggum/runs.jsonl" <<'PY'
import sys
n, out = int(sys.argv[1]), sys.argv[2]
src = open("tests/fixtures/v0.1.0/runs.jsonl").read().splitlines()
with open(out, "w") as f:
    for i in range(n):
        f.write(src[i % len(src)] + "\n")
PY
measure() { /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null; cat "$work/t"; }
ours=$(measure "$bin" wiggum report long)
base=$(measure python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("record") == "iteration":
        n += 1
print(n)' "$art/wiggum/runs.jsonl")
date -u +"%Y-%m-%d %H:%M UTC, $(nproc) cores, $lines lines ($(du -h "$art/wiggum/runs.jsonl" | cut -f1))"
read -r os om <<<"$ours"; read -r bs bm <<<"$base"
awk -v os="$os" -v om="$om" -v bs="$bs" -v bm="$bm" 'BEGIN {
    printf "report:           %5.2f s, %6.1f MiB peak\n", os, om/1024
    printf "streaming script: %5.2f s, %6.1f MiB peak (baseline)\n", bs, bm/1024
}'
