// The published shape works, installed from tarballs into empty projects as a user
// installs it:
// * the main package alone (every platform without a prebuilt binary): the install
//   succeeds and fairfs runs on its node:fs backend, saying so once;
// * the main package with this platform's package: the native backend;
// * the binary we ship stays within the glibc floor.
import test from 'ava'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFileSync, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { windows, posixOnly, noGlibc } from './helpers.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const platform = { 'linux-x64': 'linux-x64-gnu', 'linux-arm64': 'linux-arm64-gnu', 'win32-x64': 'win32-x64-msvc' }[`${process.platform}-${process.arch}`]
const binary = path.join(root, `fairfs.${platform}.node`)
// On Windows npm is npm.cmd, which only a shell runs (the arguments quoted for cmd.exe).
const npm = (args, cwd) =>
  windows
    ? execFileSync('npm.cmd', args.map((a) => `"${a}"`), { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], shell: true })
    : execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
/** scripts/test-windows.sh installs node.exe alone: there these tests have no npm to run. */
const npmMissing = windows && (() => {
  try {
    npm(['--version'], root)
    return false
  } catch {
    return true
  }
})()
const withNpm = npmMissing ? (title, fn) => test.skip(`${title} [needs npm, which this Windows machine lacks]`, fn) : test
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-pack-'))
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }))

// What a user's process sees: no test-suite switches.
const env = { ...process.env }
delete env.FAIRFS_BACKEND
delete env.NAPI_RS_NATIVE_LIBRARY_PATH

let main
test.before(() => {
  if (npmMissing) return
  main = JSON.parse(npm(['pack', '--json', '--pack-destination', work], root))[0]
})

/** An empty project with `tarballs` installed; returns its directory. */
function app(name, tarballs) {
  const dir = path.join(work, name)
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, private: true }))
  npm(['install', '--no-audit', '--no-fund', ...tarballs], dir)
  fs.writeFileSync(path.join(dir, 'data.txt'), 'hello from fairfs')
  fs.writeFileSync(
    path.join(dir, 'cjs.cjs'),
    `const fairfs = require('fairfs'); require('fairfs/register'); const fs = require('node:fs')
     fairfs.readFile(__dirname + '/data.txt', 'utf8').then((s) => fs.readFile(__dirname + '/data.txt', 'utf8', (e, t) => {
       const chunks = []
       fairfs.createReadStream(__dirname + '/data.txt').on('data', (c) => chunks.push(c)).on('end', () =>
         console.log(JSON.stringify({ s, same: t === s, stream: Buffer.concat(chunks).toString(), backend: fairfs.stats().backend,
           exported: fairfs.backend, nativeError: fairfs.nativeError === null ? null : String(fairfs.nativeError.message),
           installed: fairfs.isInstalled() })))
     }))`,
  )
  fs.writeFileSync(
    path.join(dir, 'esm.mjs'),
    `import fairfs, { readFiles, promises } from 'fairfs'; import 'fairfs/register'
     const [b] = await readFiles([new URL('./data.txt', import.meta.url)])
     const p = await promises.readFile(new URL('./data.txt', import.meta.url), 'utf8')
     console.log(JSON.stringify({ s: b.toString(), p, backend: fairfs.stats().backend }))`,
  )
  fs.writeFileSync(
    path.join(dir, 'main.ts'),
    `import { readFile, backend, stats } from 'fairfs'\nconst s: Promise<string> = readFile('data.txt', 'utf8')\n` +
      `const b: Promise<Buffer> = readFile('data.txt')\nconst k: 'native' | 'node' = backend\nconst t: 'native' | 'node' = stats().backend\nvoid [s, b, k, t]\n`,
  )
  return dir
}

function run(dir, file) {
  const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${file} exited ${r.status}: ${r.stderr}`)
  return { out: JSON.parse(r.stdout), warnings: r.stderr.match(/FAIRFS_NATIVE_UNAVAILABLE/g)?.length ?? 0, stderr: r.stderr }
}

function typecheck(dir) {
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
  const types = path.join(root, 'node_modules/@types')
  execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--typeRoots', types, '--types', 'node', 'main.ts'], { cwd: dir })
}

withNpm('the package is lean and has no install script', (t) => {
  t.true(main.files.every((f) => !/^(target|benches|__test__|src|scripts|npm)\//.test(f.path)), 'no target/, sources, scripts or tests')
  t.true(main.size < 100_000, `package is ${main.size} bytes`)
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
  for (const hook of ['preinstall', 'install', 'postinstall']) t.is(manifest.scripts[hook], undefined, hook)
  // Every platform package we list is one we build, and the other way round.
  const listed = Object.keys(manifest.optionalDependencies).sort()
  const dirs = fs.readdirSync(path.join(root, 'npm')).map((d) => JSON.parse(fs.readFileSync(path.join(root, 'npm', d, 'package.json'), 'utf8')))
  t.deepEqual(listed, dirs.map((p) => p.name).sort())
  for (const p of dirs) t.is(manifest.optionalDependencies[p.name], manifest.version, `${p.name} is pinned to this version`)
  t.is(manifest.napi.targets.length, dirs.length)
})

withNpm('the main package alone installs cleanly and runs on node:fs, saying so once', (t) => {
  const dir = app('alone', [path.join(work, main.filename)])
  t.false(fs.existsSync(path.join(dir, 'node_modules', `fairfs-${platform}`)), 'no platform package was found')
  const cjs = run(dir, 'cjs.cjs')
  t.like(cjs.out, { s: 'hello from fairfs', same: true, stream: 'hello from fairfs', backend: 'node', exported: 'node', installed: false })
  t.is(typeof cjs.out.nativeError, 'string')
  t.is(cjs.warnings, 1, cjs.stderr)
  t.regex(cjs.stderr, new RegExp(`${process.platform}-${process.arch}`), 'the warning names the platform')
  const esm = run(dir, 'esm.mjs')
  t.deepEqual(esm.out, { s: 'hello from fairfs', p: 'hello from fairfs', backend: 'node' })
  t.is(esm.warnings, 1, esm.stderr)
  typecheck(dir)
})

withNpm('with the platform package it runs on the native backend', (t) => {
  if (!fs.existsSync(binary)) return t.fail(`this check needs the ${platform} build (npm run build)`)
  const pkg = path.join(work, 'platform')
  fs.mkdirSync(pkg)
  fs.copyFileSync(path.join(root, `npm/${platform}/package.json`), path.join(pkg, 'package.json'))
  fs.copyFileSync(binary, path.join(pkg, path.basename(binary)))
  const platformTgz = JSON.parse(npm(['pack', '--json', '--pack-destination', work], pkg))[0].filename
  const dir = app('native', [path.join(work, platformTgz), path.join(work, main.filename)])
  const cjs = run(dir, 'cjs.cjs')
  t.deepEqual(cjs.out, { s: 'hello from fairfs', same: true, stream: 'hello from fairfs', backend: 'native', exported: 'native', nativeError: null, installed: true })
  t.is(cjs.warnings, 0, cjs.stderr)
  t.deepEqual(run(dir, 'esm.mjs').out, { s: 'hello from fairfs', p: 'hello from fairfs', backend: 'native' })
  typecheck(dir)
})

posixOnly(noGlibc, test)('the binary we build needs no glibc newer than 2.17', (t) => {
  if (!fs.existsSync(binary)) return t.fail(`this check needs the ${platform} build (npm run build)`)
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/check-glibc-floor.mjs'), binary, '--floor', '2.17'], { encoding: 'utf8' })
  t.is(r.status, 0, r.stderr)
})
