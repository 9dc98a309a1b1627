#!/bin/sh
# A STAND-IN for a real agent CLI (claude, codex, aider, ...), for demos and tests only.
# It follows the loop's contract like a real agent would, without any model:
#   planning:  writes three unchecked items into fix_plan.md
#   iteration: takes the first unchecked item, adds a section for it to the iteration's
#              artifact, ticks the item, writes review.md; prints the promise when none is left
#   revision:  answers with the current artifact on stdout (a real agent would revise it)
set -eu
plan="$WIGGUM_DIR/fix_plan.md"
cat > /dev/null   # read the prompt from stdin, as a real agent does
echo "example agent: phase=$WIGGUM_PHASE iteration=$ITERATION pid=$$" >&2
case "$WIGGUM_PHASE" in
planning)
    cat > "$plan" <<PLAN
# Improvement Plan

## Incomplete Items
- [ ] Add an Evidence section with links to the logs
- [ ] Add Recommendations with concrete steps
- [ ] Add References

## Completed Items
PLAN
    ;;
iteration)
    item=$(grep -m1 -- '- \[ \] ' "$plan" | sed 's/^- \[ \] //' || true)
    if [ -z "$item" ]; then
        echo "nothing left to do"
        echo "<promise>COMPLETE</promise>"
        exit 0
    fi
    art="$ITERATION_DIR/artifact.md"
    {
        echo
        echo "## ${item#Add }"
        echo
        echo "- Checked \`iam:ListRoleTags\` failures in the logs ([query](https://logs.example.com/q/$ITERATION))."
        echo "- Run \`make policy-test\` to verify the change before deploying."
    } >> "$art"
    tmp="$plan.tmp.$$"
    awk -v it="$item" '!done && $0 == "- [ ] " it { print "- [x] " it; done = 1; next } { print }' "$plan" > "$tmp"
    mv "$tmp" "$plan"
    printf '%s\n\nOne section added for the plan item "%s".\n' "$item" "$item" > "$ITERATION_DIR/review.md"
    ;;
revision)
    cat "$ITERATION_DIR/artifact.md"
    ;;
esac
