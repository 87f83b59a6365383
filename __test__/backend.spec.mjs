// The backend choice (lib/backend.js), in child processes so that each loads fairfs
// afresh: FAIRFS_BACKEND, and the package as a user without a fitting binary has it,
// copied into an app's node_modules with no .node file. These run the same whichever
// backend the rest of the suite uses.
import test from 'ava'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { makeFile, posixOnly, noUlimit } from './helpers.mjs'
import { platforms } from '../scripts/platforms.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))

/** The environment without anything that picks a backend or a binary, or hides warnings. */
function cleanEnv(extra = {}) {
  const env = { ...process.env }
  for (const name of ['FAIRFS_BACKEND', 'NAPI_RS_NATIVE_LIBRARY_PATH', 'NAPI_RS_FORCE_WASI', 'NAPI_RS_WASI_FLAVOR', 'NODE_NO_WARNINGS', 'NODE_OPTIONS']) delete env[name]
  return { ...env, ...extra }
}

function run(args, { cwd = root, env = {}, shell = false } = {}) {
  const [file, argv] = shell ? ['sh', ['-c', args]] : [process.execPath, args]
  return new Promise((resolve) => {
    execFile(file, argv, { cwd, env: cleanEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}

/**
 * An app with the package installed as node_modules/fairfs from what `npm pack`
 * would put in it (package.json's `files`), but no binary: the situation of a user on
 * a platform fairfs has no binary for.
 */
function binarylessApp() {
  const app = fs.mkdtempSync(path.join(os.tmpdir(), 'fairfs-nobinary-'))
  const pkg = path.join(app, 'node_modules', 'fairfs')
  fs.mkdirSync(pkg, { recursive: true })
  const { files } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))
  for (const entry of ['package.json', ...files]) {
    // As npm pack does, an entry that matches nothing is left out.
    if (fs.existsSync(path.join(root, entry))) fs.cpSync(path.join(root, entry), path.join(pkg, entry), { recursive: true })
  }
  for (const fixture of ['backend-app.cjs', 'backend-app.mjs']) fs.copyFileSync(path.join(fixtures, fixture), path.join(app, fixture))
  return app
}

const app = binarylessApp()
process.on('exit', () => fs.rmSync(app, { recursive: true, force: true }))

const kWarningCode = '[FAIRFS_NATIVE_UNAVAILABLE]'
const occurrences = (text, what) => text.split(what).length - 1
const platform = `${process.platform}-${process.arch}`

test('the binary-less copy really has no binary', (t) => {
  const all = fs.readdirSync(app, { recursive: true })
  t.deepEqual(all.filter((f) => f.endsWith('.node')), [])
  t.true(all.includes(path.join('node_modules', 'fairfs', 'lib', 'fallback.js')))
})

/** This platform's entry in scripts/platforms.mjs: the name the loader asks for here. */
function ownPlatform() {
  const glibc = process.report.getReport().header.glibcVersionRuntime !== undefined
  return Object.values(platforms).find((p) => p.os === process.platform && p.cpu === process.arch && (p.libc === undefined || p.libc === (glibc ? 'glibc' : 'musl')))
}

test('a binary that fails to load: node:fs with one warning that names the failure', async (t) => {
  // The name the loader asks for here, holding what no platform can load.
  const own = ownPlatform()
  const broken = binarylessApp()
  t.teardown(() => fs.rmSync(broken, { recursive: true, force: true }))
  fs.writeFileSync(path.join(broken, 'node_modules', 'fairfs', `fairfs.${own.name}.node`), 'not a shared library')
  const r = await run(['backend-app.cjs'], { cwd: broken })
  t.is(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  t.is(out.backend, 'node')
  t.deepEqual(Object.entries(out.checks).filter(([, ok]) => !ok), [], 'APIs that differ from node:fs')
  t.is(out.warnings.length, 1)
  t.is(out.warnings[0].code, 'FAIRFS_NATIVE_UNAVAILABLE')
  t.true(out.warnings[0].detail.includes(`fairfs.${own.name}.node`), out.warnings[0].detail)
  // The cause: the file is there and failed to load, with the loader's error for it.
  t.regex(out.nativeError.message, new RegExp(`: fairfs\\.${own.name}\\.node is there, but its binary failed to load: .*fairfs\\.${own.name}\\.node\\b`))
  t.true(out.warnings[0].message.startsWith(out.nativeError.message), out.warnings[0].message)
})

/** What `fairfs.nativeError` and the warning say in `cwd`, with `preload` run first. */
async function explanation(cwd, preload) {
  const code = `${preload ?? ''}
    const warnings = []
    process.on('warning', (w) => warnings.push({ message: w.message, detail: w.detail }))
    const f = require('fairfs')
    setImmediate(() => console.log(JSON.stringify({ backend: f.backend, nativeError: f.nativeError.message, warnings })))`
  const r = await run(['-e', code], { cwd })
  return JSON.parse(r.stdout)
}

test('the warning tells apart no platform package, a platform package whose binary fails, and no binary for the platform', async (t) => {
  const own = ownPlatform()
  const notInstalled = await explanation(app)
  t.regex(notInstalled.nativeError, new RegExp(`^fairfs: the native addon does not load on ${platform}\\S*: its platform package fairfs-${own.name} is not installed$`))
  t.regex(notInstalled.warnings[0].detail, /--omit=optional/)
  t.regex(notInstalled.warnings[0].detail, /npm run pack:local/, 'a tarball packed from a clone: what to do instead')

  const broken = binarylessApp()
  t.teardown(() => fs.rmSync(broken, { recursive: true, force: true }))
  const pkg = path.join(broken, 'node_modules', `fairfs-${own.name}`)
  fs.mkdirSync(pkg)
  fs.copyFileSync(path.join(root, 'npm', own.name, 'package.json'), path.join(pkg, 'package.json'))
  fs.writeFileSync(path.join(pkg, `fairfs.${own.name}.node`), 'not a shared library')
  const failed = await explanation(broken)
  t.is(failed.backend, 'node')
  t.regex(failed.nativeError, new RegExp(`: fairfs-${own.name} is installed, but its binary failed to load: .*fairfs-${own.name}.*fairfs\\.${own.name}\\.node\\b`))
  t.is(failed.warnings.length, 1)

  // An architecture fairfs has no binary for (as the loader sees it).
  const unsupported = await explanation(app, "Object.defineProperty(process, 'arch', { value: 'mips' })")
  t.regex(unsupported.nativeError, /-mips\S*: fairfs has no binary for this platform$/)
  const listed = unsupported.warnings[0].detail.match(/^Prebuilt binaries exist for (.*)\. Elsewhere/)?.[1].split(', ')
  t.deepEqual(listed?.sort(), Object.values(platforms).map((p) => p.name).sort(), 'lists the platforms there are binaries for')
})

const probe = `const f = require(process.argv[1]);
  console.log(JSON.stringify({ backend: f.backend, nativeError: f.nativeError && f.nativeError.message, stats: f.stats().backend,
    addonLoaded: Object.keys(require.cache).some((k) => k.endsWith('binding.js') || k.endsWith('.node')) }))`

test('FAIRFS_BACKEND=node: node:fs, without loading the addon or warning', async (t) => {
  for (const [where, cwd] of [['the repository (with a binary)', root], ['the binary-less copy', app]]) {
    const r = await run(['-e', probe, 'fairfs'], { cwd, env: { FAIRFS_BACKEND: 'node' } })
    t.is(r.code, 0, r.stderr)
    t.deepEqual(JSON.parse(r.stdout), { backend: 'node', nativeError: null, stats: 'node', addonLoaded: false }, where)
    t.is(r.stderr, '', `${where}: no warning`)
  }
  // Case and surrounding spaces do not matter.
  const r = await run(['-e', probe, 'fairfs'], { env: { FAIRFS_BACKEND: ' Node ' } })
  t.is(JSON.parse(r.stdout).backend, 'node')
})

test('unset or auto, with a binary: native, no warning', async (t) => {
  for (const env of [{}, { FAIRFS_BACKEND: 'auto' }, { FAIRFS_BACKEND: '' }, { FAIRFS_BACKEND: 'native' }]) {
    const r = await run(['-e', probe, 'fairfs'], { env })
    t.is(r.code, 0, r.stderr)
    t.deepEqual(JSON.parse(r.stdout), { backend: 'native', nativeError: null, stats: 'native', addonLoaded: true }, JSON.stringify(env))
    t.is(r.stderr, '')
  }
})

test('FAIRFS_BACKEND=native without a binary: require() and import throw, saying why', async (t) => {
  const code = `try { require('fairfs'); console.log('loaded') } catch (e) {
    import('fairfs').then(() => console.log('imported'), (e2) => console.log(JSON.stringify({ code: e.code, message: e.message,
      cause: e.cause instanceof Error && e.cause.message, esm: e2.code })))
  }`
  const r = await run(['-e', code], { cwd: app, env: { FAIRFS_BACKEND: 'native' } })
  const out = JSON.parse(r.stdout)
  t.is(out.code, 'ERR_FAIRFS_NATIVE_UNAVAILABLE')
  t.is(out.esm, 'ERR_FAIRFS_NATIVE_UNAVAILABLE')
  t.true(out.message.startsWith(`fairfs: FAIRFS_BACKEND=native, but the native addon does not load on ${platform}`), out.message)
  t.regex(out.message, /: its platform package fairfs-\S+ is not installed$/, 'says why')
  t.regex(out.cause, /Cannot find native binding/, 'the cause is the loader\'s error')
  t.is(occurrences(r.stderr, kWarningCode), 0, 'an error, not a warning')
})

test('any other FAIRFS_BACKEND is an error at require()', async (t) => {
  const r = await run(['-e', `try { require('fairfs') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`], { env: { FAIRFS_BACKEND: 'fallback' } })
  t.deepEqual(JSON.parse(r.stdout), {
    code: 'ERR_FAIRFS_INVALID_BACKEND',
    message: `fairfs: FAIRFS_BACKEND must be 'auto', 'native' or 'node' (or unset); got "fallback"`,
  })
})

for (const entry of ['backend-app.cjs', 'backend-app.mjs']) {
  test(`no binary, no FAIRFS_BACKEND (${entry}): node:fs with one warning, and every API works`, async (t) => {
    const r = await run([entry], { cwd: app })
    t.is(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    t.is(out.backend, 'node')
    t.regex(out.nativeError.message, new RegExp(`^fairfs: the native addon does not load on ${platform}\\S*: its platform package fairfs-\\S+ is not installed$`))
    t.true(out.nativeError.hasCause, 'nativeError says why, with the loader\'s error as its cause')
    t.true(out.esmSameModule, 'import and require give the same module')
    t.true(out.requireSameModule)
    t.deepEqual(Object.entries(out.checks).filter(([, ok]) => !ok), [], 'APIs that differ from node:fs')
    t.is(out.configureError, 'ERR_OUT_OF_RANGE', 'configure() validates as on the native backend')
    t.true(out.installChangedNothing)
    t.deepEqual(out.stats, { backend: 'node', maxLength: 2 ** 31 - 1, configured: { threads: 2, maxLength: 100 } })
    // Exactly one warning, printed and seen by listeners, though fairfs was loaded
    // through require, import and fairfs/register.
    t.is(occurrences(r.stderr, kWarningCode), 1, r.stderr)
    t.is(out.warnings.length, 1)
    const [warning] = out.warnings
    t.is(warning.code, 'FAIRFS_NATIVE_UNAVAILABLE')
    t.is(warning.name, 'Warning')
    t.true(warning.message.startsWith(`fairfs: the native addon does not load on ${platform}`), warning.message)
    if (process.platform === 'linux') t.regex(warning.message, new RegExp(`on ${platform}-(gnu|musl): `))
    t.true(warning.message.startsWith(out.nativeError.message), 'says why, as nativeError does')
    t.notRegex(warning.message, /npm has a bug/, 'not napi-rs\'s guess')
    t.regex(warning.message, /readFile, promises\.readFile, readFiles and createReadStream still work/)
    t.regex(warning.detail, /Cannot find module '\.\/fairfs\..*\.node'/, 'detail lists what was tried')
    t.regex(warning.detail, /FAIRFS_BACKEND=node/)
  })
}

test('two copies of fairfs in one process (say, nested node_modules) warn once between them', async (t) => {
  const second = path.join(app, 'vendor', 'node_modules', 'fairfs')
  if (!fs.existsSync(second)) fs.cpSync(path.join(app, 'node_modules', 'fairfs'), second, { recursive: true })
  const code = `const a = require('fairfs'); const b = require(${JSON.stringify(second)});
    console.log(a !== b, a.backend, b.backend, a.nativeError !== b.nativeError)`
  const r = await run(['-e', code], { cwd: app })
  t.is(r.stdout, 'true node node true\n')
  t.is(occurrences(r.stderr, kWarningCode), 1, r.stderr)
})

test('worker_threads in the binary-less copy read through node:fs; each thread warns once', async (t) => {
  const code = `const { Worker } = require('node:worker_threads')
    const main = require('fairfs').backend
    const w = new Worker("const f = require('fairfs'); f.readFile(require.resolve('fairfs')).then(() => require('node:worker_threads').parentPort.postMessage(f.backend))", { eval: true })
    let seen
    w.on('message', (m) => (seen = m)).on('exit', () => console.log(main, seen))`
  const r = await run(['-e', code], { cwd: app })
  t.is(r.stdout, 'node node\n')
  // A worker is a JS environment of its own, with its own process object: nothing in
  // JS alone can tell it that the main thread has warned already.
  t.is(occurrences(r.stderr, kWarningCode), 2, r.stderr)
})

for (const backend of ['native', 'node']) {
  posixOnly(noUlimit, test)(`readFiles on the ${backend} backend: 2,000 paths under ulimit -n 64 need no more fds than there are`, async (t) => {
    const { path: file } = makeFile(20_000)
    const child = path.join(fixtures, 'child.mjs')
    const r = await run(`ulimit -n 64 && exec "${process.execPath}" "${child}" readfiles-many "${file}"`, { shell: true, env: { FAIRFS_BACKEND: backend } })
    t.is(r.code, 0, r.stderr)
    // Promise.all over fs.promises.readFile opens them all at once and runs out.
    t.deepEqual(JSON.parse(r.stdout), { backend, batch: true, promiseAll: 'EMFILE' })
  })
}
