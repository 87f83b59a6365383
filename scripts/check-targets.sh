# Type-checks what no build here checks, failing on any error or warning:
#
# * the crate without the `node` feature (the core that `cargo test` and `cargo bench`
#   use) once per OS we ship: macOS, Windows and FreeBSD (Linux is clippy's). The code
#   has no `target_arch` or `target_env` cfg, so what compiles and what warns differ
#   only by OS: aarch64-apple-darwin's core is x86_64-apple-darwin's, windows-gnu's is
#   msvc's, linux musl's is linux gnu's;
# * Windows msvc with the `node` feature, which no script here builds.
#
# Every other shipped target is built with the `node` feature (a superset of the core)
# by scripts/build-platforms.sh and scripts/test-arm64.sh, which .ci/run runs with
# RUSTFLAGS=-Dwarnings: the build checks what `cargo check` would, and std is built
# once per target, not twice.
#
# rustup here has only the x86_64-linux std, so this uses Debian's Rust
# (rustc-web, cargo-web, rust-web-src: a Rust with its library source), whose
# `cargo -Zbuild-std` (allowed by RUSTC_BOOTSTRAP=1) builds the std of any target
# LLVM knows. `cargo check` needs no linker or SDK for the target.
#
# Cargo.lock is left alone: `--locked` works with build-std (std is resolved from
# its own lock file in rust-web-src), and the script checks the file afterwards.
#
# Usage: scripts/check-targets.sh [target[:features]...]   (default: the four below)
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

checks=("$@")
if [ ${#checks[@]} -eq 0 ]; then
  checks=(x86_64-apple-darwin: x86_64-pc-windows-msvc: x86_64-pc-windows-msvc:node x86_64-unknown-freebsd:)
fi
# napi's build script wants an import library of node.exe for windows-gnu (see there).
case " ${checks[*]} " in *windows-gnu*) bash scripts/cross-tools.sh >/dev/null ;; esac
export LIBNODE_PATH="$PWD/target/tools/libnode"

lock_before=$(sha256sum Cargo.lock)
for check in "${checks[@]}"; do
  target=${check%%:*}
  features=${check#"$target"}
  features=${features#:}
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
if [ "$(sha256sum Cargo.lock)" != "$lock_before" ]; then
  echo "Cargo.lock changed" >&2
  exit 1
fi
