#!/bin/sh
# A STAND-IN for a real agent CLI (claude, codex, aider, ...), for demos and tests only.
# It follows the loop's contract like a real agent would, without any model:
#   planning:  writes three unchecked items into fix_plan.md
#   iteration: takes the first unchecked item, adds a section for it to the iteration's
#              artifact, ticks the item, writes review.md; prints the promise when none is left
#   revision:  answers with the current artifact on stdout (a real agent would revise it)
#   delegation: writes a first artifact.md for the task (`delegate start`)
#   (the contract of each phase for an agent command of your own: docs/agents.md)
set -eu
plan="${WIGGUM_DIR:-.}/fix_plan.md"
cat > /dev/null   # read the prompt from stdin, as a real agent does
echo "example agent: phase=$WIGGUM_PHASE iteration=${ITERATION:-0} pid=$$" >&2
case "$WIGGUM_PHASE" in
delegation)
    cat > artifact.md <<ARTIFACT
# ${TOPIC:-Findings}

## Summary
Users of the Monarch UI see an empty tags panel since the 4.2 release. The role the UI assumes
seems to lack a permission.

## Findings
- Errors in the logs.
- Customers report problems.
ARTIFACT
    ;;
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
    # A real agent would research and write; the stand-in adds a prepared section per item.
    case "$item" in
    *Evidence*) cat >> "$art" <<'SECTION'

## Evidence

The Monarch UI role calls `iam:ListRoleTags` when it renders the tags panel. Since release 4.2
on 2024-03-12 every such call is denied, which is why the panel is empty rather than failing
with an error page. The denials start within 5 minutes of the 4.2 deployment and affect all 3
production regions (us-east-1, eu-west-1, ap-southeast-2).

- CloudTrail shows 14,212 `AccessDenied` events for `iam:ListRoleTags` from the role
  `monarch-ui-prod` between 2024-03-12 and 2024-03-19 ([query](https://logs.monarch-corp.net/q/monarch-denied)).
- The 4.2 release replaced the inline policy with `monarch-ui-readonly` v3, which dropped the
  `iam:List*` actions ([diff](https://git.monarch-corp.net/infra/policies/commit/4f2a9c1)).
- Support tickets SUP-4411, SUP-4418 and SUP-4420 report the empty panel from the same day
  ([tickets](https://support.monarch-corp.net/search?q=monarch+tags)).
- The UI's request log in `logs/monarch-ui/2024-03-12.log` shows the denial for every user:

```text
2024-03-12T09:41:07Z WARN tags-panel: AccessDenied: User: arn:aws:sts::123456789012:assumed-role/monarch-ui-prod/ui
  is not authorized to perform: iam:ListRoleTags on resource: role/monarch-*
```
SECTION
    ;;
*Recommendations*) cat >> "$art" <<'SECTION'

## Recommendations

Restore the one permission the tags panel needs, scoped to the roles the UI shows, and guard
the policy with a test so the next release cannot drop it again.

1. Add `iam:ListRoleTags` on `arn:aws:iam::*:role/monarch-*` to `monarch-ui-readonly` (v4).
2. Run `make policy-test` in `infra/policies` to check the policy against the 12 recorded UI calls.
3. Deploy v4 to staging, open the tags panel for 2 roles, and confirm no `AccessDenied` in 10 minutes.
4. Deploy to the 3 production regions and close SUP-4411, SUP-4418 and SUP-4420.
5. Add `iam:ListRoleTags` to the UI's contract test in `tests/contract/monarch_ui_test.py`.

```json
{
  "Effect": "Allow",
  "Action": ["iam:ListRoleTags"],
  "Resource": "arn:aws:iam::*:role/monarch-*"
}
```
SECTION
    ;;
*) cat >> "$art" <<'SECTION'

## References

- AWS IAM API reference, ListRoleTags: <https://docs.aws.amazon.com/IAM/latest/APIReference/API_ListRoleTags.html>
- Monarch UI 4.2 release notes: <https://git.monarch-corp.net/monarch/ui/releases/tag/v4.2.0>
- The policy change: <https://git.monarch-corp.net/infra/policies/commit/4f2a9c1>
- CloudTrail query of the denials: <https://logs.monarch-corp.net/q/monarch-denied>
- Support tickets SUP-4411, SUP-4418, SUP-4420: <https://support.monarch-corp.net/search?q=monarch+tags>
SECTION
    ;;
    esac
    tmp="$plan.tmp.$$"
    awk -v it="$item" '!done && $0 == "- [ ] " it { print "- [x] " it; done = 1; next } { print }' "$plan" > "$tmp"
    mv "$tmp" "$plan"
    printf '%s\n\nOne section added for the plan item "%s".\n' "$item" "$item" > "$ITERATION_DIR/review.md"
    ;;
revision)
    cat "$ITERATION_DIR/artifact.md"
    ;;
esac
