// Test suites that mock the file system, under fairfs (lib/mocked.js, lib/install.js).
//
// mock-fs mocks node:fs's binding: while a mock is on, every fairfs call goes to
// node:fs's own functions, so the mock's files are read, stat'ed and listed through
// fairfs's API and through install() exactly as through node:fs alone; one warning
// (FAIRFS_FS_MOCKED) says so, and fairfs serves again after mock.restore(). Each case
// runs a suite's use of mock-fs in a child process (fixtures/mock-fs-app.cjs), loaded
// before or after fairfs/register, against the same run without fairfs at all.
//
// memfs/unionfs-style patches replace node:fs's functions themselves: install() leaves
// a function a caller replaced in place, and uninstall() one a caller put over
// fairfs's (in-process cases below).
import test from 'ava'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fairfs, isNative, nativeOnly, makeFile, windows } from './helpers.mjs'

const require = createRequire(import.meta.url)
const root = fileURLToPath(new URL('..', import.meta.url))
const app = fileURLToPath(new URL('./fixtures/mock-fs-app.cjs', import.meta.url))
const register = path.join(root, 'register.js')
const mockFs = require.resolve('mock-fs')
const mockFsVersion = require('mock-fs/package.json').version

/** The environment, without what would load or silence anything on its own (FAIRFS_BACKEND stays). */
function childEnv() {
  const env = { ...process.env }
  for (const name of ['NODE_OPTIONS', 'NODE_NO_WARNINGS', 'NODE_PENDING_DEPRECATION']) delete env[name]
  return env
}

/** Runs `node ...args` and resolves with its exit code, stdout and stderr. */
function run(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: root, env: childEnv(), timeout: 60_000, maxBuffer: 1 << 22 }, (err, stdout, stderr) =>
      resolve({ code: err ? (err.code ?? err.signal) : 0, stdout, stderr }),
    )
  })
}

const { path: realFile } = makeFile(5_000, 'real.txt')
fs.writeFileSync(realFile, 'on the real disk\n'.repeat(300))

/** The app's outcome with `flags` before it, parsed; or `{ failed }`. */
async function runApp(flags, order) {
  const r = await run([...flags, app, order, realFile])
  if (r.code !== 0) return { failed: `exit ${r.code}: ${r.stderr.slice(0, 2000)}` }
  return JSON.parse(r.stdout)
}

// What mock-fs does on this Node line without fairfs: the reference, and whether there
// is anything to test (mock-fs patches Node internals that change between lines).
const baseline = await runApp([], 'baseline')
const unsupported = baseline.failed
  ? `mock-fs ${mockFsVersion} fails on Node ${process.versions.node} without fairfs: ${baseline.failed.split('\n')[0]}`
  : baseline.fs['readFile cb'].value !== 'hello from the mock'
    ? `mock-fs ${mockFsVersion} does not mock fs.readFile on Node ${process.versions.node}`
    : null
/** `testFn`, or registering the test as skipped, with the reason in its title, where mock-fs does not run. */
function withMockFs(testFn) {
  if (!unsupported) return testFn
  const skip = (title, ...rest) => testFn.skip(`${title} [${unsupported}]`, ...rest)
  skip.skip = skip
  return skip
}

test('the reference run (node:fs and mock-fs alone) reads, stats and lists the mock', (t) => {
  if (unsupported) {
    // Visible in the output; the cases below are registered as skipped with the reason.
    t.log(unsupported)
    t.pass()
    return
  }
  const { fs: node } = baseline
  t.like(node, {
    'readFile cb': { value: 'hello from the mock' },
    'promises.readFile through a link': { value: 'hello from the mock' },
    'createReadStream range': { buffer: 'from' },
    'readFile cb of a real file the mock hides': { error: { code: 'ENOENT' } },
    'readdir withFileTypes': { array: ['b.json:file', 'dir:dir', 'link:link'] },
  })
  t.regex(node['promises.realpath'].value, /[\\/]mocked[\\/]dir[\\/]a\.txt$/)
  t.true(node.stat.stats.file)
  t.is(baseline.warnings.length, 0)
})

const scenarios = {
  'mock-fs loaded after fairfs/register (-r)': { flags: ['-r', register], order: 'installed' },
  'mock-fs loaded before fairfs/register': { flags: ['-r', mockFs, '-r', register], order: 'installed' },
  'fairfs/register by --import, mock-fs loaded after': { flags: ['--import', pathToFileURL(path.join(root, 'register.mjs')).href], order: 'installed' },
  "fairfs's API, not installed": { flags: [], order: 'api' },
  'install() called while a mock is on': { flags: [], order: 'during' },
}
const outcomes = new Map()
const outcomeOf = (name) => {
  if (!outcomes.has(name)) outcomes.set(name, runApp(scenarios[name].flags, scenarios[name].order))
  return outcomes.get(name)
}

for (const [name, { order }] of Object.entries(scenarios)) {
  withMockFs(test)(`${name}: every call through node:fs and fairfs sees the mock, as node:fs alone does`, async (t) => {
    const child = await outcomeOf(name)
    // mock-fs loads (it threw at load after fairfs/register: it watches fs.readFile reach
    // node:fs's binding to find ReadFileContext).
    t.is(child.failed, undefined)
    t.is(child.backend, fairfs.backend)
    t.is(child.installed, isNative && order !== 'api', 'fairfs/register or install() ran')
    t.deepEqual(child.fs, baseline.fs, 'node:fs (patched by install() or not) gives what it gives without fairfs')
    // fairfs's API: each call gives what node:fs's counterpart gives.
    for (const [call, outcome] of Object.entries(child.fairfs)) {
      if (call in baseline.fs) t.deepEqual(outcome, baseline.fs[call], `fairfs ${call}`)
    }
    t.like(child.fairfs, {
      'readFile promise': baseline.fs['readFile cb'],
      'readFile promise fd': baseline.fs['readFile cb fd'],
      readFiles: { array: [baseline.fs['readFile cb'], baseline.fs['readFile cb fd']] },
      'readFiles settle': { array: [{ value: 'ENOENT' }, baseline.fs['readFile cb fd']] },
    })
    t.deepEqual(child.secondMock, { value: 'hello from the mock' }, 'a second mock() after restore()')
    t.true(child.bypass, 'mock.bypass() reads the real disk')
    t.deepEqual(Object.values(child.realAfterRestore).filter((ok) => ok !== true), [], 'the real disk after mock.restore()')
    if (isNative) {
      // Once, however many calls and mocks: the second mock() warns no more.
      t.deepEqual(child.warnings.map((w) => w.code), ['FAIRFS_FS_MOCKED'])
      const [warning] = child.warnings
      t.is(warning.name, 'Warning')
      t.regex(warning.message, /^fairfs: node:fs's file system binding is mocked \(mock-fs\); node:fs serves every fairfs call while it is/)
      t.regex(warning.detail, /mock\.restore\(\).*--disable-warning=FAIRFS_FS_MOCKED/s)
    } else {
      // The node backend is node:fs already: nothing differs, nothing to say.
      t.deepEqual(child.warnings, [])
    }
  })

  withMockFs(nativeOnly(test))(`${name}: fairfs serves nothing while a mock is on, and serves again in mock.bypass() and after mock.restore()`, async (t) => {
    const child = await outcomeOf(name)
    t.is(child.failed, undefined)
    t.is(child.servedWhileMocked, 0, 'no call reached the pool or the fast paths while mocked')
    t.true(child.servedInBypass >= 1, 'a read in mock.bypass() is fairfs\'s')
    // Installed: fs.readFile, fs.promises.readFile, fs.createReadStream and
    // fairfs.readFile at least (fs.stat and fs.promises.readdir too, where the pool
    // answers them); else fairfs.readFile alone.
    t.true(child.servedAfterRestore >= (order === 'api' ? 1 : 4), `served after restore: ${child.servedAfterRestore}`)
  })
}

test('--pending-deprecation --throw-deprecation: fairfs does not reach for process.binding (DEP0111), and reads', async (t) => {
  const script = `
    const warnings = []
    process.on('warning', (w) => warnings.push(w.code))
    require('node:fs').readFile(${JSON.stringify(realFile)}, 'utf8', (err, text) => {
      setImmediate(() => console.log(JSON.stringify({ err: err?.code, length: text?.length, warnings })))
    })`
  for (const flags of [['--pending-deprecation', '--throw-deprecation'], ['--pending-deprecation']]) {
    const r = await run([...flags, '-r', register, '-e', script])
    t.is(r.code, 0, r.stderr)
    t.deepEqual(JSON.parse(r.stdout), { length: fs.statSync(realFile).size, warnings: [] }, flags.join(' '))
    t.notRegex(r.stderr, /DEP0111/)
  }
})

// install() and uninstall() around patches of node:fs's functions themselves (memfs with
// fs-monkey's patchFs, unionfs, a test's stub): see atLoad in lib/install.js.

/** A replacement as a test would put it: reads from memory. */
function inMemory(text) {
  return {
    readFile(p, options, callback) {
      process.nextTick(typeof options === 'function' ? options : callback, null, text)
    },
  }.readFile
}
const readVia = (fn) => new Promise((resolve, reject) => fn((err, data) => (err ? reject(err) : resolve(String(data)))))

const node = {
  readFile: fs.readFile,
  promisesReadFile: fs.promises.readFile,
  stat: fs.stat,
  createReadStream: fs.createReadStream,
  realpath: fs.realpath,
  realpathNative: fs.realpath.native,
  promisesOpen: fs.promises.open,
}
/** Puts node:fs back as it was, whatever a test left. */
function restoreNode() {
  fairfs.uninstall()
  fs.readFile = node.readFile
  fs.promises.readFile = node.promisesReadFile
  fs.stat = node.stat
  fs.createReadStream = node.createReadStream
  fs.realpath = node.realpath
  fs.realpath.native = node.realpathNative
  fs.promises.open = node.promisesOpen
}

nativeOnly(test.serial)("install() leaves a function a caller replaced in place, and uninstall() leaves it too", async (t) => {
  t.teardown(restoreNode)
  const { path: file } = makeFile(100)
  const memory = inMemory('from memory')
  fs.readFile = memory
  fairfs.install()
  t.true(fairfs.isInstalled())
  t.is(fs.readFile, memory, "the caller's fs.readFile still serves")
  t.is(await readVia((cb) => fs.readFile(file, cb)), 'from memory')
  t.not(fs.promises.readFile, node.promisesReadFile, 'what was still node:fs\'s is fairfs\'s')
  t.not(fs.createReadStream, node.createReadStream)
  fairfs.uninstall()
  t.is(fs.readFile, memory, "uninstall() leaves the caller's in place")
  t.is(fs.promises.readFile, node.promisesReadFile)
  t.is(fs.createReadStream, node.createReadStream)
  // The caller restores what they replaced; install() then patches it as ever.
  fs.readFile = node.readFile
  fairfs.install()
  t.not(fs.readFile, node.readFile)
})

nativeOnly(test.serial)("a patch a caller put over fairfs's survives uninstall(); their own restore puts back what they replaced", async (t) => {
  t.teardown(restoreNode)
  const { path: file, data } = makeFile(100)
  fairfs.install()
  const ours = { readFile: fs.readFile, promisesReadFile: fs.promises.readFile }
  // fs-monkey's patchFs keeps what it replaced and puts it back on unpatch.
  const memory = inMemory('from memory')
  fs.readFile = memory
  fairfs.uninstall()
  t.false(fairfs.isInstalled())
  t.is(fs.readFile, memory, 'dropping the caller\'s patch midway would read the real disk')
  t.is(await readVia((cb) => fs.readFile(file, cb)), 'from memory')
  t.is(fs.promises.readFile, node.promisesReadFile, 'what was still fairfs\'s is node:fs\'s again')
  t.not(ours.promisesReadFile, node.promisesReadFile)
  // The unpatch puts fairfs's readFile back: it still reads, as fairfs.readFile does.
  fs.readFile = ours.readFile
  t.is(await readVia((cb) => fs.readFile(file, 'latin1', cb)), data.toString('latin1'))
})

nativeOnly(test.serial)("install() leaves a caller's fs.realpath, and its .native, in place", (t) => {
  t.teardown(restoreNode)
  const theirs = function realpath(p, options, callback) {
    return node.realpath(p, options, callback)
  }
  const theirsNative = function native(p, options, callback) {
    return node.realpathNative(p, options, callback)
  }
  theirs.native = theirsNative
  fs.realpath = theirs
  fairfs.install()
  t.is(fs.realpath, theirs)
  t.is(fs.realpath.native, theirsNative)
  fairfs.uninstall()
  t.is(fs.realpath, theirs)
  t.is(fs.realpath.native, theirsNative)
})

nativeOnly(test.serial)("install() does not wrap a caller's fs.promises.open, nor patch the handles it gives", async (t) => {
  t.teardown(restoreNode)
  const { path: file, data } = makeFile(100)
  // memfs's handles are of a class of its own, with an fd of its own.
  class MemoryHandle {
    fd = 12345
    readFile() {
      return Promise.resolve('from memory')
    }
  }
  const memoryReadFile = MemoryHandle.prototype.readFile
  const probe = await node.promisesOpen(file)
  const handleProto = Object.getPrototypeOf(probe)
  const nodeHandleReadFile = handleProto.readFile
  await probe.close()
  const theirs = async () => new MemoryHandle()
  fs.promises.open = theirs
  fairfs.install()
  t.is(fs.promises.open, theirs)
  const handle = await fs.promises.open(file)
  t.is(MemoryHandle.prototype.readFile, memoryReadFile, 'a handle of another kind is not patched')
  t.is(await handle.readFile(), 'from memory')
  // node:fs's own FileHandle is still learnt (from node:fs's own open) and read through
  // fairfs (by node:fs on Windows: callerFds).
  for (let waited = 0; handleProto.readFile === nodeHandleReadFile && waited < 10_000; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.not(handleProto.readFile, nodeHandleReadFile, "node:fs's FileHandle.prototype is patched")
  if (windows) return
  const real = await node.promisesOpen(file)
  t.teardown(() => real.close())
  const before = fairfs.stats().completed + fairfs.stats().fastPathHits
  t.true((await real.readFile()).equals(data))
  t.true(fairfs.stats().completed + fairfs.stats().fastPathHits > before, "node:fs's handle read through fairfs")
})
