#!/usr/bin/env bash
# Type-check and lint the crate, every target of it, for both Apple targets (`cargo check` and
# `cargo clippy -D warnings` in one pass: clippy checks). About 5 minutes a target the first time
# (std is built from source), a minute after.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(packaging/toolchain-macos.sh)"
for target in aarch64-apple-darwin x86_64-apple-darwin; do
    echo "== clippy for $target"
    cargo-zigbuild clippy --locked --target "$target" -Zbuild-std=std,panic_abort \
        --all-targets --all-features -- -D warnings
done
