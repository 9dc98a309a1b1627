#!/usr/bin/env bash
# Control-plane figures, measured against a baseline run in the same script:
#   stop latency: `studio-agents wiggum stop` (agent tree stopped, state written, lock released)
#                 vs. SIGTERM + wait of a bare process (the floor any supervisor pays)
#   daemon RSS:   the supervisor's VmRSS while an agent runs vs. a bare `sleep`'s
# Usage: benches/control_plane.sh [runs]   (release build; prints ratios, asserts nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cargo build --release --quiet
bin=$PWD/target/release/studio-agents
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STUDIO_AGENTS_HOME=$work/home
now_ms() { date +%s%3N; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

base_total=0; stop_total=0; rss_total=0; base_rss_total=0
for i in $(seq "$runs"); do
    # Baseline: a bare process, TERM and reap.
    sleep 1000 & p=$!
    base_rss_total=$((base_rss_total + $(rss_kb "$p")))
    t0=$(now_ms); kill -TERM "$p"; wait "$p" 2>/dev/null || true; t1=$(now_ms)
    base_total=$((base_total + t1 - t0))

    # studio-agents: a loop whose agent is running, stopped from another shell.
    art=$work/art$i; mkdir -p "$art/wiggum"
    printf '# Doc\n' > "$art/artifact.md"; printf -- '- [ ] one\n' > "$art/wiggum/fix_plan.md"
    "$bin" wiggum start "bench$i" --artifact-path "$art" --agent-cmd "sleep 1000" >/dev/null
    until grep -q '"agent_pid": [0-9]' "$art/wiggum/state.json" 2>/dev/null; do sleep 0.02; done
    pid=$(sed -n 's/^  "pid": \([0-9]*\),/\1/p' "$art/wiggum/state.json")
    rss_total=$((rss_total + $(rss_kb "$pid")))
    t0=$(now_ms); "$bin" wiggum stop "bench$i" >/dev/null; t1=$(now_ms)
    stop_total=$((stop_total + t1 - t0))
done
awk -v b="$base_total" -v s="$stop_total" -v r="$rss_total" -v br="$base_rss_total" -v n="$runs" 'BEGIN {
    printf "stop latency: %.1f ms (baseline kill+wait %.1f ms), ratio %.1fx\n", s/n, b/n, (b > 0 ? s/b : 0)
    printf "daemon RSS:   %.1f MiB (baseline sleep %.1f MiB), ratio %.1fx\n", r/n/1024, br/n/1024, r/br
}'
