#!/usr/bin/env bash
# Builds the binaries for every platform this machine cannot run Node on natively
# (macOS x64 and arm64, Windows x64, linux musl x64 and arm64, FreeBSD x64) into
# npm/<platform>/, checks each as far as this machine allows, and packs every
# platform package:
#
#   * scripts/check-macos.mjs: Mach-O load commands, minimum macOS, code signature,
#     exports, and N-API imports against Node's own macOS binaries;
#   * scripts/check-elf.mjs: musl and FreeBSD libraries, exports and imports;
#   * scripts/check-packages.mjs: each platform tarball holds one binary of its format
#     (the linux gnu binaries must be built already: npm run build, build:arm64).
#
# Windows and musl are also run: scripts/test-windows.sh, scripts/test-musl.sh.
#
#   bash scripts/build-platforms.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(bash scripts/cross-tools.sh):$PATH"
for target in aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-gnu \
  x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-unknown-freebsd; do
  echo "== build $target"
  start=$SECONDS
  node scripts/build.mjs --target "$target" 2>&1 | grep -v '^ *Compiling '
  echo "   built in $((SECONDS - start)) s"
done
echo "== check the binaries"
node scripts/check-macos.mjs
node scripts/check-elf.mjs
node scripts/check-packages.mjs
