#!/usr/bin/env bash
# The toolchain that checks and builds studio-agents for macOS on a Debian (bookworm) machine,
# installed where it is missing; prints the environment to `eval`. It fails — never skips — when
# a part cannot be installed.
#
# - Debian's rustc-web/cargo-web (1.96, bookworm-security) with the exact standard-library source
#   (rust-web-src), so std is built for the Apple targets from source (-Zbuild-std);
# - zig and cargo-zigbuild from PyPI (pinned), which compile the C parts (libgit2, zlib, ring)
#   for Darwin and link.
set -euo pipefail
cd "$(dirname "$0")/.."

ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
tools="$PWD/target/macos-tools"

RUST_PACKAGES="rustc-web cargo-web rust-web-src libstd-rust-web-dev rust-web-clippy"

# Every part the check uses, not just rustc: a machine with rustc-web and its std source but no
# rust-web-clippy would run another clippy (rustup's, found later on PATH) against this rustc.
rust_complete() {
    local pkg minor
    for pkg in $RUST_PACKAGES; do
        [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || return 1
    done
    minor=$(/usr/bin/rustc --version 2>/dev/null | sed -n 's/^rustc 1\.\([0-9]*\)\..*/\1/p')
    [ -n "$minor" ] && [ "$minor" -ge 96 ] || return 1
    /usr/bin/cargo --version 2>/dev/null | grep -q "^cargo 1\.$minor\." || return 1
    [ -x /usr/bin/cargo-clippy ] || return 1
    /usr/bin/clippy-driver --version 2>/dev/null | grep -q "0\.1\.$minor\b" || return 1
    [ -d /usr/lib/rustlib/src/rust/library ] || return 1
}

if ! rust_complete; then
    apt-get update -qq >&2
    # shellcheck disable=SC2086 # the list is words
    apt-get install -y -qq $RUST_PACKAGES >&2
    rust_complete || { echo "the Rust toolchain for macOS is incomplete after installing: $RUST_PACKAGES (need 1.96 or later, with clippy)" >&2; exit 1; }
fi
/usr/bin/rustc --version >&2
/usr/bin/clippy-driver --version >&2

if [ ! -x "$tools/venv/bin/cargo-zigbuild" ]; then
    python3 -m venv "$tools/venv" >&2
    "$tools/venv/bin/pip" install -q "ziglang==$ZIG_VERSION" "cargo-zigbuild==$ZIGBUILD_VERSION" >&2
fi
"$tools/venv/bin/cargo-zigbuild" --version >&2

cat <<ENV
export PATH="$tools/venv/bin:/usr/bin:\$PATH"
export RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 MACOSX_DEPLOYMENT_TARGET=11.0
export CARGO_TARGET_DIR="$PWD/target/macos"
ENV
