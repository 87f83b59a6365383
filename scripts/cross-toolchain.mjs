// Puts napi-rs's prebuilt gcc cross toolchain for `triple` (glibc 2.17 sysroot) where
// `napi build --use-napi-cross` looks for it, so the build does not download it itself.
//
// Why not let napi do it: @napi-rs/cross-toolchain fetches the target package at its
// own version, and not every target package is published at every version (1.0.5
// has none), so the download fails. The versions below are the newest published
// ones; the archive inside is the same format at each.
//
//   node scripts/cross-toolchain.mjs x86_64-unknown-linux-gnu
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** The newest published toolchain package for each target we build on an x64 host. */
const packages = {
  'x86_64-unknown-linux-gnu': '@napi-rs/cross-toolchain-x64-target-x86_64@1.0.0',
  'aarch64-unknown-linux-gnu': '@napi-rs/cross-toolchain-x64-target-aarch64@1.0.3',
}

const triple = process.argv[2]
if (!packages[triple]) {
  console.error(`usage: cross-toolchain.mjs <${Object.keys(packages).join('|')}>`)
  process.exit(2)
}
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.error('cross-toolchain.mjs: the prebuilt toolchains used here run on linux-x64 hosts')
  process.exit(2)
}

// The same path napi's `pickCrossToolchain` uses; it skips the download when
// package.json is there.
const { version } = require('@napi-rs/cross-toolchain/package.json')
const dest = path.join(os.homedir(), '.napi-rs', 'cross-toolchain', version, triple)
if (fs.existsSync(path.join(dest, 'package.json'))) process.exit(0)

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-toolchain-'))
try {
  const out = execFileSync('npm', ['pack', '--json', packages[triple]], { cwd: work, encoding: 'utf8' })
  const tgz = path.join(work, JSON.parse(out)[0].filename)
  execFileSync('tar', ['-xzf', tgz, '-C', work])
  const xz = path.join(work, 'package', `${triple}.tar.xz`)
  fs.mkdirSync(dest, { recursive: true })
  execFileSync('tar', ['-xJf', xz, '-C', dest])
  if (!fs.existsSync(path.join(dest, 'package.json'))) throw new Error(`unexpected archive layout in ${xz}`)
  console.log(`fairfs: ${packages[triple]} ready in ${dest}`)
} finally {
  fs.rmSync(work, { recursive: true, force: true })
}
