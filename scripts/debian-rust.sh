#!/usr/bin/env bash
# Debian's Rust (rustc-web, cargo-web, rust-web-src: Rust 1.96 with the library
# source), for targets whose std rustup has not got here: with it,
# `RUSTC_BOOTSTRAP=1 cargo -Zbuild-std` builds the std for any target LLVM knows.
# Installs it once; later calls only check.
set -euo pipefail
if [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] && [ -d /usr/lib/rustlib/src/rust/library ]; then exit 0; fi
export DEBIAN_FRONTEND=noninteractive
apt_get() { apt-get -o DPkg::Lock::Timeout=300 "$@"; }
apt_get install -y rustc-web cargo-web rust-web-src >/dev/null || { apt_get update >/dev/null && apt_get install -y rustc-web cargo-web rust-web-src >/dev/null; }
