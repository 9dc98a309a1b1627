#!/usr/bin/env bash
# Install the agent CLIs of package.json into DEST at the versions package-lock.json pins: npm
# checks each package it fetches against the sha512 there, and `--no-save` leaves the lockfile as
# it is (`npm ci` would refuse it: opencode-ai names its platform packages without versions).
# Install scripts are not run, but two (below). Prints the bin directory. Exit 75 when
# the registry cannot be reached at all; any other failure fails.
set -euo pipefail
dest=$1
here=$(cd "$(dirname "$0")" && pwd)
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ -f "$dest/.installed" ] && [ "$(cat "$dest/.installed")" = "$want" ] \
    && [ -x "$dest/node_modules/.bin/codex" ]; then
    echo "$dest/node_modules/.bin"
    exit 0
fi
command -v npm >/dev/null || { echo "npm is not installed (Node.js 20 or later is needed)" >&2; exit 1; }
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
if ! out=$(cd "$dest" && npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error 2>&1); then
    if grep -qE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ENETUNREACH|ETIMEDOUT|EHOSTUNREACH' <<<"$out"; then
        tail -n 3 <<<"$out" >&2
        exit 75
    fi
    echo "$out" >&2
    exit 1
fi
# The install scripts we run: Claude Code's and opencode's, each of which copies its native
# binary (from the platform package npm just checked) over a placeholder; neither makes a
# network request.
(cd "$dest/node_modules/@anthropic-ai/claude-code" && node install.cjs >/dev/null)
(cd "$dest/node_modules/opencode-ai" && node postinstall.mjs >/dev/null)
echo "$want" > "$dest/.installed"
echo "$dest/node_modules/.bin"
