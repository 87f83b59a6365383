#!/usr/bin/env bash
# What the tests need beyond Node and Rust, on Debian or Ubuntu: fuse3 (fusermount, and
# the kernel's FUSE device in use) and python3-fusepy, with which
# __test__/fixtures/slowfs.py mounts a slow FUSE file system for
# __test__/calling-thread.spec.mjs. Run as root on a fresh machine (.ci/run does); it
# installs only what is missing. Where apt-get is missing or we are not root it does
# nothing and exits 0: those specs then report their cases as skipped, with the reason.
set -euo pipefail

have_fusepy() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import fusepy' 2>/dev/null; }
have_fusermount() { command -v fusermount3 >/dev/null || command -v fusermount >/dev/null; }

missing=()
have_fusermount || missing+=(fuse3)
have_fusepy || missing+=(python3-fusepy)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-test-deps: fuse3 and python3-fusepy are here; nothing to do"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-test-deps: missing ${missing[*]}, and no apt-get; the FUSE tests will be skipped"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-test-deps: missing ${missing[*]}; not root, so not installing (the FUSE tests will be skipped)"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-test-deps: apt-get install -y ${missing[*]}"
if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
  # A fresh machine may have no package lists yet.
  echo "install-test-deps: install failed; apt-get update, then again"
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
echo "install-test-deps: installed ${missing[*]}"
