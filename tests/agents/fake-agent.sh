#!/bin/sh
# Scripted agent for the integration tests: behaves like a real agent CLI (reads its prompt,
# plans, edits files, ticks fix_plan.md, writes review.md), plus misbehaviours on demand.
# FAKE is a comma list of behaviours:
#   echo         print the prompt back (as codex does)
#   promise      print the completion promise after working
#   idle         change nothing
#   crash        exit 3 without changing anything
#   crash-once   crash on the first attempt of each iteration only
#   spawn        start a child (same group) that ignores TERM, and a setsid'd grandchild
#   hang         never finish on its own
#   ignore-term  ignore SIGTERM itself
#   log-term     note each SIGTERM in $FAKE_PIDS and keep running
#   slow         sleep FAKE_SLEEP seconds before working (default 1)
#   block        wait until the file $FAKE_RELEASE exists before working (only at iteration
#                $FAKE_BLOCK_AT when that is set)
#   edit-notes   also append a line to $ARTIFACT_PATH/notes.md in each iteration
#   discard-user iteration 1: throw away the user's uncommitted work (`git checkout -- .` of
#                notes.md, rm draft.md), as an agent tidying the tree might
#   reshape      iteration 1: a new nested directory written at once, a tracked directory
#                renamed, a tracked file deleted, an exec bit set; iteration 2: edit inside
#                the new directory (now watched)
#   tamper-revision  in a revision round, append an alias to the repository's .git/config
#   delete-plan  delete fix_plan.md instead of ticking an item (iteration $FAKE_AT, default all)
#   bloat-plan   append 17 MB to fix_plan.md instead of ticking an item (iteration $FAKE_AT)
#   fifo-plan    put a FIFO in fix_plan.md's place instead of ticking an item (iteration $FAKE_AT)
#   delete-plan-revision  delete fix_plan.md in each revision round (after the iteration's
#                run ticked its item)
#   rm-iteration-revision  delete the iteration's directory in each revision round
#   rm-wiggum-revision  delete the loop's wiggum/ directory in a revision round
#   revise-in-place  in revision rounds, edit the iteration's artifact.md and print a sentence
#   silent-revision  in revision rounds, print nothing and edit nothing
#   bad-bytes    print bytes that are not UTF-8
#   spew         print without end (a runaway test suite's output); spew-revision: in
#                revision rounds (their stdout is the answer)
#   envi         start a grandchild with a cleared environment (env -i), same process group
#   lock-delete  delete wiggum/.lock;  lock-garble  fill it with garbage
#   dump-env     write its environment to env-$ITERATION beside $FAKE_PIDS
#   escape       try to write outside the repository ($HOME, /tmp) and inside; results in
#                $ARTIFACT_PATH/escape.log
#   tamper       write a git hook and a config.worktree naming a command, garble
#                wiggum/state.json (iteration $FAKE_AT, default all)
#   net          connect to each TCP port of $FAKE_PORTS on 127.0.0.1; results (errno, 0 = ok)
#                in $ARTIFACT_PATH/net.log
#   attack       run the script $FAKE_ATTACK with sh (iteration $FAKE_AT, default all): what a
#                confused agent does to its supervisor, written by the test
#   escapee      start a setsid + env -i + double-fork helper marked $FAKE_MARKER
#   hog          hold $FAKE_MB (default 300) MB of memory for a while
#   rm-wiggum    delete the loop's wiggum/ directory
#   limit        on an iteration's first attempt (of iteration $FAKE_AT only, when set), print Claude's usage limit with a reset
#                $FAKE_RESET seconds ahead (default 3) and exit 1
#   limit429     on an iteration's first attempt, print an HTTP 429 and exit 1
#   limit-plan   on planning's first attempt, print Claude's usage limit (as `limit`) and exit 1
#   err          print an error line whose numbers change from run to run
#   idle-iterations  plan, then change nothing in iterations
#   shrink       print 3000 bytes in iterations 1-3, nothing from iteration 4 on
#   linger       stay 60 s after everything (after the promise, with `promise`)
#   claude-cost  end with claude's JSON result line costing $FAKE_COST (default 0.40)
#   codex-tokens end with codex's "tokens used" lines on stderr reporting $FAKE_TOKENS (default 12,000)
#   marker       print MARKER-$ITERATION-secret; then search the workspace for iteration 1's
#                marker, the count in found-$ITERATION beside $FAKE_PIDS
# FAKE_ITEMS: how many plan items to write (default 3). FAKE_PIDS: file to append "role pid" to.
set -u
has() { case ",${FAKE:-}," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
pids="${FAKE_PIDS:-/dev/null}"
echo "agent $$ $WIGGUM_PHASE $ITERATION" >> "$pids"
prompt=$(cat)
has echo && printf '%s\n' "$prompt"
has ignore-term && trap '' TERM
if has log-term; then
    trap 'echo "term $$" >> "$pids"' TERM
    echo "trapped $$" >> "$pids"
fi
# escapee: a helper that leaves the session, clears its environment and forks again, its
# command line carrying $FAKE_MARKER
if has escapee; then
    setsid env -i /usr/bin/python3 -c 'import os, time
if os.fork() == 0:
    time.sleep(300)
time.sleep(300)' "$FAKE_MARKER" >/dev/null 2>&1 &
fi
has bad-bytes && printf 'before \377\376\375 after\n\200\n'
has lock-delete && rm -f "$WIGGUM_DIR/.lock"
has lock-garble && printf '\000\001garbage{{{' > "$WIGGUM_DIR/.lock"
at() { [ -z "${FAKE_AT:-}" ] || [ "$ITERATION" = "${FAKE_AT:-}" ]; }
if [ "$WIGGUM_PHASE" = planning ] && has limit-plan && [ ! -e "${FAKE_PIDS%/*}/.fake-limited-0" ]; then
    : > "${FAKE_PIDS%/*}/.fake-limited-0"
    echo "Claude AI usage limit reached|$(( $(date +%s) + ${FAKE_RESET:-3} ))"
    exit 1
fi
if [ "$WIGGUM_PHASE" = iteration ]; then
    limited="${FAKE_PIDS%/*}/.fake-limited-$ITERATION"
    if has limit && at && [ ! -e "$limited" ]; then
        : > "$limited"
        echo "Claude AI usage limit reached|$(( $(date +%s) + ${FAKE_RESET:-3} ))"
        exit 1
    fi
    if has limit429 && [ ! -e "$limited" ]; then
        : > "$limited"
        echo "API Error: 429 Too Many Requests"
        exit 1
    fi
    has err && echo "Error: upstream request $$ failed after ${ITERATION}0 ms (/tmp/req-$$)"
    if has shrink && [ "$ITERATION" -lt 4 ]; then head -c 3000 /dev/zero | tr '\0' 'x'; echo; fi
    has dump-env && env > "${FAKE_PIDS%/*}/env-$ITERATION"
    if has escape; then
        { echo x > "$HOME/outside.txt" && echo "home: written" || echo "home: denied"
          echo x > "/tmp/outside-$$" && echo "tmp: written" || echo "tmp: denied"
          echo x > "$TMPDIR/scratch" && echo "tmpdir: written" || echo "tmpdir: denied"
          echo x > "$ARTIFACT_PATH/inside.txt" && echo "inside: written" || echo "inside: denied"
        } > "$ARTIFACT_PATH/escape.log" 2>&1
    fi
    if has tamper && at; then
        mkdir -p "$ARTIFACT_PATH/.git/hooks"
        printf '#!/bin/sh\necho owned\n' > "$ARTIFACT_PATH/.git/hooks/pre-commit"
        chmod +x "$ARTIFACT_PATH/.git/hooks/pre-commit"
        printf '[core]\n\tfsmonitor = echo owned\n' > "$ARTIFACT_PATH/.git/config.worktree"
        echo '{"status": "completed"}' > "$WIGGUM_DIR/state.json"
    fi
    if has net; then
        for port in ${FAKE_PORTS:-}; do
            python3 -c "
import socket, sys
try:
    s = socket.socket(); s.settimeout(2); print(sys.argv[1], s.connect_ex(('127.0.0.1', int(sys.argv[1]))))
except OSError as e:
    print(sys.argv[1], e.errno)" "$port"
        done > "$ARTIFACT_PATH/net.log" 2>&1
    fi
    has spew && yes "runaway output of iteration $ITERATION"
    has hog && python3 -c "import time; b = bytearray(${FAKE_MB:-300} * 1024 * 1024); time.sleep(30)"
    if has rm-wiggum; then rm -rf "$WIGGUM_DIR"; exit 0; fi
    if has marker; then
        echo "MARKER-$ITERATION-secret"
        grep -rl "MARKER-1-secret" "$ARTIFACT_PATH" 2>/dev/null | wc -l > "${FAKE_PIDS%/*}/found-$ITERATION"
    fi
fi
if has envi; then
    env -i sh -c 'echo "envi $$" >> "$0"; exec sleep 1000' "$pids" &
fi
if has spawn; then
    sh -c 'trap "" TERM; echo "child $$" >> "$0"; exec sleep 1000' "$pids" &
    setsid sh -c 'echo "setsid $$" >> "$0"; exec sleep 1000' "$pids" &
fi
if has hang; then
    while :; do sleep 1; done
fi
has slow && sleep "${FAKE_SLEEP:-1}"
if has block && { [ -z "${FAKE_BLOCK_AT:-}" ] || [ "$ITERATION" = "${FAKE_BLOCK_AT:-}" ]; }; then
    echo "blocked $$" >> "$pids"
    while [ ! -e "$FAKE_RELEASE" ]; do sleep 0.05; done
fi
marker="${FAKE_PIDS%/*}/.fake-attempted-$ITERATION"
if has crash || { has crash-once && [ ! -e "$marker" ]; }; then
    : > "$marker"
    echo "fatal: simulated crash" >&2
    exit 3
fi
has idle && exit 0
has idle-iterations && [ "$WIGGUM_PHASE" != planning ] && exit 0
plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning)
    {
        echo "# Improvement Plan"
        echo
        echo "## Incomplete Items"
        i=1
        while [ "$i" -le "${FAKE_ITEMS:-3}" ]; do echo "- [ ] Improve part $i"; i=$((i + 1)); done
    } > "$plan"
    ;;
iteration)
    has edit-notes && echo "notes of iteration $ITERATION" >> "$ARTIFACT_PATH/notes.md"
    if has discard-user && [ "$ITERATION" = 1 ]; then
        git -C "$ARTIFACT_PATH" checkout -q -- notes.md
        rm -f "$ARTIFACT_PATH/draft.md"
    fi
    if has reshape; then
        case "$ITERATION" in
        1)
            mkdir -p "$ARTIFACT_PATH/gen/deep/er"
            echo "generated" > "$ARTIFACT_PATH/gen/deep/er/file.md"
            mv "$ARTIFACT_PATH/docs" "$ARTIFACT_PATH/moved"
            rm "$ARTIFACT_PATH/notes.md"
            chmod +x "$ARTIFACT_PATH/run.sh"
            ;;
        2) echo "again" >> "$ARTIFACT_PATH/gen/deep/er/file.md" ;;
        esac
    fi
    if has fifo-plan && [ "$ITERATION" = "${FAKE_AT:-}" ]; then
        rm -f "$plan" && mkfifo "$plan"
        exit 0
    fi
    if has bloat-plan && [ "$ITERATION" = "${FAKE_AT:-}" ]; then
        head -c 17000000 /dev/zero | tr '\0' 'a' >> "$plan"
        exit 0
    fi
    if has delete-plan && { [ -z "${FAKE_AT:-}" ] || [ "$ITERATION" = "${FAKE_AT:-}" ]; }; then
        rm -f "$plan"
        exit 0
    fi
    item=$(grep -m1 -- '- \[ \] ' "$plan" | sed 's/^- \[ \] //')
    if [ -n "$item" ]; then
        # Each iteration says something of its own (a judge marks copied lines as gamed).
        case $((ITERATION % 4)) in
        1) body='The first pass read the request log and found the failing call in `api/roles.go`; it is denied for the projects that moved to the new role.' ;;
        2) body='We measured the page before and after: with the cache it loads in 0.8 s instead of 4.1 s, as the benchmark in `bench/roles.txt` shows.' ;;
        3) body='A test now covers the denial, so a later change to the policy fails `make check` before it can reach the users of the panel.' ;;
        *) body='Operators can roll it back by setting `roles.cache = false`; the old path still works and is tested every night.' ;;
        esac
        printf '\n## %s\n\nDone for %s in iteration %s. %s\n' "$item" "$TOPIC" "$ITERATION" "$body" >> "$ITERATION_DIR/artifact.md"
        awk -v it="$item" '!d && $0 == "- [ ] " it { print "- [x] " it; d = 1; next } { print }' "$plan" > "$plan.tmp"
        mv "$plan.tmp" "$plan"
        printf '%s\n\nbecause the plan said so\n' "$item" > "$ITERATION_DIR/review.md"
    fi
    ;;
revision)
    has spew-revision && yes "a runaway revision"
    has delete-plan-revision && rm -f "$plan"
    has rm-iteration-revision && rm -rf "$ITERATION_DIR"
    has rm-wiggum-revision && rm -rf "$WIGGUM_DIR"
    has tamper-revision && printf '[alias]\n\tst = !touch planted\n' >> "$ARTIFACT_PATH/.git/config"
    if has revise-in-place; then
        printf '\nChecked again in revision round %s: the permission is the only one missing.\n' "$$" >> "$ITERATION_DIR/artifact.md"
        echo "I updated artifact.md in place."
    elif ! has silent-revision; then
        cat "$ITERATION_DIR/artifact.md"
    fi
    ;;
esac
# After the iteration's own work: the attack sees (and may replace) what the agent wrote.
if [ "$WIGGUM_PHASE" = iteration ] && has attack && at; then sh "$FAKE_ATTACK"; fi
has promise && echo "<promise>COMPLETE</promise>"
# linger: keep running after the promise (real CLIs keep helpers or sockets open)
has linger && sleep 60
has claude-cost && printf '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":%s}\n' "${FAKE_COST:-0.40}"
# codex prints its usage on stderr, after the answer on stdout.
has codex-tokens && printf 'tokens used\n%s\n' "${FAKE_TOKENS:-12,000}" >&2
exit 0
