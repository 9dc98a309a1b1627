#!/usr/bin/env bash
# Release binaries for Linux (x86_64, aarch64; glibc 2.28 and later) and macOS (x86_64,
# aarch64; 11.0 and later), each checked with `file`, in target/dist/. The Linux x86_64 one is
# built by the usual toolchain; the others by Debian's rustc-web with std built from source and
# zig as the C compiler and linker (packaging/toolchain-macos.sh). macOS's frameworks are linked
# against text stubs (packaging/macos-sdk/), which name the symbols the binary uses.
set -euo pipefail
cd "$(dirname "$0")/.."
dist="$PWD/target/dist"
mkdir -p "$dist"

echo "== x86_64-unknown-linux-gnu"
cargo build --locked --release
cp target/release/studio-agents "$dist/studio-agents-x86_64-linux"

eval "$(packaging/toolchain-macos.sh)"
sdk="$PWD/packaging/macos-sdk"
for target in aarch64-unknown-linux-gnu.2.28 aarch64-apple-darwin x86_64-apple-darwin; do
    echo "== $target"
    triple="${target%.2.28}"
    extra=()
    case "$triple" in
        *apple*) extra=(--config "target.$triple.rustflags=['-C','link-arg=-F$sdk/System/Library/Frameworks','-C','link-arg=-L$sdk/usr/lib']")
                 export SDKROOT="$sdk" ;;
    esac
    # No objcopy for Debian's rustc: release builds are not stripped by cargo.
    CARGO_PROFILE_RELEASE_STRIP=false cargo-zigbuild zigbuild --locked --release \
        --target "$target" -Zbuild-std=std,panic_abort "${extra[@]}"
    case "$triple" in
        aarch64-unknown-linux-gnu) name=aarch64-linux ;;
        aarch64-apple-darwin) name=aarch64-macos ;;
        x86_64-apple-darwin) name=x86_64-macos ;;
    esac
    cp "$CARGO_TARGET_DIR/$triple/release/studio-agents" "$dist/studio-agents-$name"
done

echo "== what was built"
cd "$dist"
file studio-agents-* | tee files.txt
# `file` pads the names to one width.
grep -Eq 'studio-agents-x86_64-linux: +ELF 64-bit LSB .*x86-64' files.txt
grep -Eq 'studio-agents-aarch64-linux: +ELF 64-bit LSB .*ARM aarch64' files.txt
grep -Eq 'studio-agents-aarch64-macos: +Mach-O 64-bit .*arm64' files.txt
grep -Eq 'studio-agents-x86_64-macos: +Mach-O 64-bit .*x86_64' files.txt
echo "all four binaries are what their names say"
