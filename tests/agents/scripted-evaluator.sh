#!/bin/sh
# A scripted evaluator CLI: reads its prompt on stdin (kept as prompt-N.txt), answers with
# $SCRIPT_DIR/answer-N (N = this call's number; the last answer repeats), counts calls.
set -eu
n=$(($(cat "$SCRIPT_DIR/eval-calls" 2>/dev/null || echo 0) + 1))
echo "$n" > "$SCRIPT_DIR/eval-calls"
cat > "$SCRIPT_DIR/eval-prompt-$n.txt"
f="$SCRIPT_DIR/answer-$n"
[ -e "$f" ] || f=$(ls "$SCRIPT_DIR"/answer-* | sort -t- -k2 -n | tail -n 1)
cat "$f"
