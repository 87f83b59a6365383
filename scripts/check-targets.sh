#!/usr/bin/env bash
# Type-checks the crate for every platform we ship but x86_64 linux gnu (which
# clippy checks): macOS (both arches), Windows (msvc, and gnu, which we build), FreeBSD,
# linux musl (both arches) and arm64 linux gnu, with and without the `node` feature,
# failing on any error or warning.
#
# rustup here has only the x86_64-linux std, so this uses Debian's Rust
# (rustc-web, cargo-web, rust-web-src: a Rust with its library source), whose
# `cargo -Zbuild-std` (allowed by RUSTC_BOOTSTRAP=1) builds the std of any target
# LLVM knows. `cargo check` needs no linker or SDK for the target.
#
# Cargo.lock is left alone: `--locked` works with build-std (std is resolved from
# its own lock file in rust-web-src), and the script checks the file afterwards.
#
# Usage: scripts/check-targets.sh [target...]   (default: the eight below)
# Builds into target/cross, or $CHECK_TARGETS_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(rustc-web cargo-web rust-web-src)
installed() {
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || return 1
  done
}
if ! installed; then
  echo "== installing ${packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y "${packages[@]}" >/dev/null
fi
# The binaries the packages install (rustup's cargo and rustc come first in PATH).
cargo_bin=$(dpkg -L cargo-web | grep -m1 '/bin/cargo$')
rustc_bin=$(dpkg -L rustc-web | grep -m1 '/bin/rustc$')

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-msvc x86_64-pc-windows-gnu
    x86_64-unknown-freebsd x86_64-unknown-linux-musl aarch64-unknown-linux-musl aarch64-unknown-linux-gnu)
fi
# napi's build script wants an import library of node.exe for windows-gnu (see there).
case " ${targets[*]} " in *windows-gnu*) bash scripts/cross-tools.sh >/dev/null ;; esac
export LIBNODE_PATH="$PWD/target/tools/libnode"

lock_before=$(sha256sum Cargo.lock)
for target in "${targets[@]}"; do
  for features in "" node; do
    echo "== cargo check --target $target ${features:+--features $features}"
    start=$SECONDS
    # -Dwarnings also applies to the std being built, which has none. On musl the
    # cdylib needs the dynamic C runtime, as scripts/platforms.mjs builds it.
    flags="-Dwarnings"
    case "$target" in *-musl) flags="$flags -Ctarget-feature=-crt-static" ;; esac
    RUSTC="$rustc_bin" RUSTC_BOOTSTRAP=1 RUSTFLAGS="$flags" CARGO_TARGET_DIR="${CHECK_TARGETS_DIR:-target/cross}" \
      "$cargo_bin" check --locked --quiet -Zbuild-std=std,panic_abort --target "$target" \
      ${features:+--features "$features"}
    echo "   ok in $((SECONDS - start)) s"
  done
done
if [ "$(sha256sum Cargo.lock)" != "$lock_before" ]; then
  echo "Cargo.lock changed" >&2
  exit 1
fi
