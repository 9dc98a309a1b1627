#!/bin/sh
# A scripted producer: keeps the revision prompt it got on stdin as producer-prompt-N.txt and
# answers with $SCRIPT_DIR/revision-N (N = this call's number).
set -eu
n=$(($(cat "$SCRIPT_DIR/producer-calls" 2>/dev/null || echo 0) + 1))
echo "$n" > "$SCRIPT_DIR/producer-calls"
cat > "$SCRIPT_DIR/producer-prompt-$n.txt"
echo "${WIGGUM_TEMPERATURE:-unset}" > "$SCRIPT_DIR/producer-temperature-$n"
cat "$SCRIPT_DIR/revision-$n"
