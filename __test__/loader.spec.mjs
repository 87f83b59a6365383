// The generated loader (binding.js) on each platform we ship, run against a stand-in
// `process` and `require`: it must ask first for the binary we build for that platform,
// as a file beside it, then as the platform package (the loader's fallback to node:fs
// when that fails is backend.spec.mjs's), and that package must exist and
// declare the same os, cpu and libc that npm installs it by.
import test from 'ava'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { platforms } from '../scripts/platforms.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const loaderSource = fs.readFileSync(path.join(root, 'binding.js'), 'utf8')
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))

/** The module ids binding.js tries, in order, when none of them loads. */
function attempts({ os, cpu, libc }) {
  const tried = []
  const fakeProcess = {
    platform: os,
    arch: cpu,
    env: {},
    versions: process.versions,
    config: { variables: {} }, // official Node: not a mingw (shlib_suffix dll.a) build
    report: {
      getReport: () => ({
        header: libc === 'glibc' ? { glibcVersionRuntime: '2.36' } : {},
        sharedObjects: libc === 'musl' ? ['/lib/ld-musl-x86_64.so.1'] : [],
      }),
    },
  }
  const fakeRequire = (id) => {
    if (id === 'fs') return { readFileSync: () => (libc === 'musl' ? 'musl libc (x86_64)' : 'ldd (GNU libc) 2.36') }
    if (id === 'child_process') return { execSync: () => '' }
    tried.push(id)
    throw new Error(`stand-in: cannot load ${id}`)
  }
  const run = new Function('require', 'process', 'module', 'exports', '__dirname', '__filename', loaderSource)
  const module = { exports: {} }
  try {
    run(fakeRequire, fakeProcess, module, module.exports, root, path.join(root, 'binding.js'))
  } catch {}
  return tried
}

for (const [triple, platform] of Object.entries(platforms)) {
  test(`${platform.name}: the loader asks for the ${triple} binary first, then its package`, (t) => {
    // On macOS it asks for a universal binary first, which we do not ship; WASI last.
    const tried = attempts(platform).filter((id) => !/darwin-universal/.test(id))
    t.deepEqual(tried.slice(0, 2), [`./fairfs.${platform.name}.node`, `fairfs-${platform.name}`])
  })

  test(`${platform.name}: its package is an optional dependency and declares ${platform.os}, ${platform.cpu}${platform.libc ? `, ${platform.libc}` : ''}`, (t) => {
    t.is(pkg.optionalDependencies[`fairfs-${platform.name}`], pkg.version)
    const sub = JSON.parse(fs.readFileSync(path.join(root, 'npm', platform.name, 'package.json'), 'utf8'))
    t.is(sub.name, `fairfs-${platform.name}`)
    t.is(sub.version, pkg.version)
    t.deepEqual(sub.os, [platform.os])
    t.deepEqual(sub.cpu, [platform.cpu])
    t.deepEqual(sub.libc, platform.libc ? [platform.libc] : undefined)
    t.is(sub.main, `fairfs.${platform.name}.node`)
    t.deepEqual(sub.files, [`fairfs.${platform.name}.node`])
  })
}

test('every platform package in npm/ is one we build', (t) => {
  const built = Object.values(platforms).map((p) => p.name).sort()
  t.deepEqual(fs.readdirSync(path.join(root, 'npm')).sort(), built)
  t.deepEqual(Object.keys(pkg.optionalDependencies).sort(), built.map((n) => `fairfs-${n}`))
})
