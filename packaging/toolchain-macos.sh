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

if [ ! -x /usr/bin/rustc ] || ! /usr/bin/rustc --version | grep -q '^rustc 1\.9[6-9]' \
    || [ ! -d /usr/lib/rustlib/src/rust/library ]; then
    apt-get update -qq >&2
    apt-get install -y -qq rustc-web cargo-web rust-web-src libstd-rust-web-dev rust-web-clippy >&2
fi
/usr/bin/rustc --version >&2

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
