#!/usr/bin/env bash
# Supervisor memory under runaway output, measured against a baseline loop in the same script.
# Peak RSS (GNU time's maximum resident set size of `start --foreground`, which includes the
# largest of its waited-for children) of one-iteration loops whose:
#   baseline:  agent prints a line, heuristic evaluator
#   output:    agent prints AGENT_BYTES (default 1 GB) of text, heuristic evaluator
#   command:   command evaluator answers ANSWER_BYTES (default 200 MB)
#   http:      OpenAI-compatible evaluator on loopback answers ANSWER_BYTES
# Target: every peak under 50 MB. Usage: benches/memory.sh   (release build; prints, asserts nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
agent_bytes=${AGENT_BYTES:-1000000000}
answer_bytes=${ANSWER_BYTES:-200000000}
cargo build --release --quiet
bin=$PWD/target/release/studio-agents
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
export STUDIO_AGENTS_HOME=$work/home
edit='echo "- [x] one" > "$WIGGUM_DIR/fix_plan.md"; printf "\n## More\ntext\n" >> "$ITERATION_DIR/artifact.md"'

peak() { # name agent-command settings-file → peak RSS in KiB
    local art=$work/$1
    mkdir -p "$art/wiggum"
    printf '# Doc\n\n## Summary\nSome text.\n' > "$art/artifact.md"
    printf -- '- [ ] one\n' > "$art/wiggum/fix_plan.md"
    /usr/bin/time -f %M -o "$work/$1.rss" "$bin" wiggum start "$1" --artifact-path "$art" \
        --agent-cmd "$2" --config "$3" --max-iterations 1 --foreground >/dev/null 2>&1 || true
    cat "$work/$1.rss"
}

printf '' > "$work/none.toml"
cat > "$work/command.toml" <<TOML
[defaults]
evaluator = "big"
[evaluators.big]
kind = "command"
command = "cat >/dev/null; yes 'an evaluator that will not stop talking' | head -c $answer_bytes"
TOML
port_file=$work/port
python3 - "$answer_bytes" "$port_file" <<'PY' &
import http.server, sys
size, port_file = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(size))
        self.end_headers()
        chunk = b"x" * 65536
        left = size
        try:
            while left > 0:
                n = min(left, len(chunk)); self.wfile.write(chunk[:n]); left -= n
        except (BrokenPipeError, ConnectionResetError):
            pass  # the supervisor stops reading at its cap
    def log_message(self, *a): pass
class S(http.server.HTTPServer):
    def handle_error(self, *a): pass
s = S(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
for _ in range(8):
    s.handle_request()
PY
server=$!
until [ -s "$port_file" ]; do sleep 0.05; done
cat > "$work/http.toml" <<TOML
[defaults]
evaluator = "big"
[evaluators.big]
kind = "openai"
url = "http://127.0.0.1:$(cat "$port_file")/v1"
model = "m"
TOML

base=$(peak baseline "echo working; $edit" "$work/none.toml")
out=$(peak output "yes 'a line of agent output, again and again' | head -c $agent_bytes; $edit" "$work/none.toml")
cmd=$(peak command "$edit" "$work/command.toml")
http=$(peak http "$edit" "$work/http.toml")
date -u +"%Y-%m-%d %H:%M UTC, $(nproc) cores"
awk -v b="$base" -v o="$out" -v c="$cmd" -v h="$http" -v ab="$agent_bytes" -v nb="$answer_bytes" 'BEGIN {
    printf "baseline loop:                          %6.1f MiB\n", b/1024
    printf "agent output %5.0f MB:                  %6.1f MiB (%.2fx baseline)\n", ab/1e6, o/1024, o/b
    printf "command evaluator answer %4.0f MB:       %6.1f MiB (%.2fx baseline)\n", nb/1e6, c/1024, c/b
    printf "HTTP evaluator answer %4.0f MB:          %6.1f MiB (%.2fx baseline)\n", nb/1e6, h/1024, h/b
}'
