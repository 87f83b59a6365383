#!/usr/bin/env bash
# Installs what building the non-Linux-gnu binaries needs, from the registries only,
# once (later calls only check), and prints the directory to put first in PATH:
#
#   * zig and cargo-zigbuild (PyPI: ziglang, cargo-zigbuild) into target/tools/py:
#     the linker for macOS, FreeBSD and linux musl, with those platforms' libc stubs;
#   * Debian's Rust with its library source (scripts/debian-rust.sh), for -Zbuild-std;
#   * Debian's mingw-w64 (the Windows linker, dlltool), llvm (readers of Mach-O and ELF
#     for the checks) and musl-tools (musl's libc.so, the checks' list of its symbols).
#
#   PATH="$(bash scripts/cross-tools.sh):$PATH"
#
# Also leaves target/tools/libnode, the LIBNODE_PATH of windows-gnu builds (below).
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$PWD/target/tools"
{
  bash scripts/debian-rust.sh
  need=()
  command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(gcc-mingw-w64-x86-64)
  command -v x86_64-w64-mingw32-dlltool >/dev/null || need+=(binutils-mingw-w64-x86-64)
  command -v llvm-readobj >/dev/null || need+=(llvm)
  [ -e /usr/lib/x86_64-linux-musl/libc.so ] || need+=(musl-tools)
  if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt_get() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }
    apt_get install -y --no-install-recommends "${need[@]}" >/dev/null ||
      { apt_get update >/dev/null && apt_get install -y --no-install-recommends "${need[@]}" >/dev/null; }
  fi
  if [ ! -x "$tools/bin/cargo-zigbuild" ] || [ ! -x "$tools/bin/zig" ]; then
    rm -rf "$tools/py"
    python3 -m pip install --quiet --disable-pip-version-check --target "$tools/py" \
      'ziglang==0.17.1' 'cargo-zigbuild==0.24.1'
    mkdir -p "$tools/bin"
    # cargo-zigbuild looks for `zig` on PATH; the ziglang wheel keeps it inside the package.
    ln -sf "$tools/py/ziglang/zig" "$tools/bin/zig"
    ln -sf "$tools/py/bin/cargo-zigbuild" "$tools/bin/cargo-zigbuild"
  fi
  # napi's build script, for a windows-gnu target, insists on a libnode.dll in
  # LIBNODE_PATH and links `-lnode`. With napi/dyn-symbols (Cargo.toml) the addon
  # imports nothing from node.exe at link time, so an import library with no symbols
  # satisfies it (the linker takes libnode.dll.a before the empty libnode.dll), and
  # the DLL ends up with no import of node.exe at all.
  if [ ! -e "$tools/libnode/libnode.dll.a" ]; then
    mkdir -p "$tools/libnode"
    printf 'LIBRARY node.exe\nEXPORTS\n' >"$tools/libnode/node.def"
    x86_64-w64-mingw32-dlltool -d "$tools/libnode/node.def" -l "$tools/libnode/libnode.dll.a"
    : >"$tools/libnode/libnode.dll"
  fi
} >&2
echo "$tools/bin"
