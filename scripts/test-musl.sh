#!/usr/bin/env bash
# Loads the linux-x64-musl binary in a musl runtime and reads through it: no musl
# build of Node exists on the npm registry or in Debian, so the runtime is Bun's musl
# build (@oven/bun-linux-x64-musl, npm), which implements N-API.
#
#   bash scripts/test-musl.sh
#
# Bun's musl build needs a musl libstdc++ and libgcc_s. Debian has neither; the ones
# here come from a musllinux_1_1 wheel on PyPI (pyzmq vendors both). That libstdc++ is
# older than the one Bun was linked with and lacks two functions Bun only calls to
# abort (std::__throw_bad_array_new_length, std::__glibcxx_assert_fail), so a two-
# function library preloaded beside it aborts in their place. Debian's musl provides
# the dynamic loader. None of this is fairfs's: only the addon is under test.
#
# The runtime's libc is musl, but this host's /usr/bin/ldd is glibc's, so napi-rs's
# loader would pick the gnu binary; NAPI_RS_NATIVE_LIBRARY_PATH points it at the musl one.
set -euo pipefail
cd "$(dirname "$0")/.."
bun_version=1.4.5
pyzmq_version=26.4.0
dir="$PWD/target/musl-runtime"
mkdir -p "$dir/lib"

if [ ! -e /lib/ld-musl-x86_64.so.1 ] || ! command -v musl-gcc >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends musl musl-tools >/dev/null ||
    { apt-get update >/dev/null && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends musl musl-tools >/dev/null; }
fi
if [ ! -x "$dir/package/bin/bun" ]; then
  tgz="$(cd "$dir" && npm pack --silent "@oven/bun-linux-x64-musl@$bun_version" | tail -1)"
  tar -xzf "$dir/$tgz" -C "$dir"
fi
if [ ! -e "$dir/lib/libstdc++.so.6" ]; then
  python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: --no-deps \
    --platform musllinux_1_1_x86_64 --python-version 3.11 "pyzmq==$pyzmq_version" -d "$dir/wheel"
  unzip -o -q -j "$dir"/wheel/pyzmq-*.whl 'pyzmq.libs/libstdc++-*' 'pyzmq.libs/libgcc_s-*' -d "$dir/lib"
  (cd "$dir/lib" && ln -sf libstdc++-*.so.6.* libstdc++.so.6 && ln -sf libgcc_s-*.so.1 libgcc_s.so.1)
  cat >"$dir/cxxshim.c" <<'C'
#include <stdlib.h>
void _ZSt28__throw_bad_array_new_lengthv(void) { abort(); }
void _ZSt21__glibcxx_assert_failPKciS0_S0_(const char *file, int line, const char *fn, const char *cond) { abort(); }
C
  musl-gcc -shared -fPIC -o "$dir/lib/libcxxshim.so" "$dir/cxxshim.c"
fi

node scripts/build.mjs --target x86_64-unknown-linux-musl
addon="$PWD/npm/linux-x64-musl/fairfs.linux-x64-musl.node"
echo "== $(LD_LIBRARY_PATH="$dir/lib" LD_PRELOAD="$dir/lib/libcxxshim.so" "$dir/package/bin/bun" -p '`Bun ${Bun.version}, ${process.report.getReport().header.glibcVersionRuntime ? "glibc" : "musl"}`')"
NAPI_RS_NATIVE_LIBRARY_PATH="$addon" LD_LIBRARY_PATH="$dir/lib" LD_PRELOAD="$dir/lib/libcxxshim.so" \
  "$dir/package/bin/bun" scripts/smoke.cjs
