// stat, lstat, access, realpath and readdir, differential against node:fs: the same fs.Stats and
// BigIntStats (prototype, own fields in order, values, Dates), the same errors field
// by field, the same argument errors, in callback and promise forms; and install()
// routes node:fs's own functions (and fs.realpath and fs.exists, which call them).
import test from 'ava'
import fs from 'node:fs'
import path from 'node:path'
import { execFileSync, execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { fairfs, isNative, nativeOnly, emulated, portable, makeFile, tmpPath, describeError, viaPromise as viaPromiseWith, posixOnly, windows, noByteNames, noPoolMetadata, noProc } from './helpers.mjs'

// Taken before any install() in this file.
const node = { stat: fs.stat, lstat: fs.lstat, access: fs.access, readdir: fs.readdir, realpath: fs.realpath, realpathNative: fs.realpath.native, promises: { ...fs.promises } }
/** The callback fs.realpath install() puts in place of node:fs's on Node 20 and 22 (lib/realpath.js). */
const { realpath: realpathWalk } = createRequire(import.meta.url)('../lib/realpath.js')
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/** Everything a user can observe of a Stats object, or of an error. */
function describe(value) {
  if (value instanceof Error) return { error: describeError(value) }
  if (value === undefined || value === null) return { value }
  const proto = Object.getPrototypeOf(value)
  const fields = Object.keys(value).map((k) => [k, typeof value[k] === 'bigint' ? `${value[k]}n` : value[k]])
  const dates = ['atime', 'mtime', 'ctime', 'birthtime'].map((k) => value[k].getTime())
  const kinds = ['isFile', 'isDirectory', 'isSymbolicLink', 'isFIFO'].map((k) => value[k]())
  return { proto: proto === fs.Stats.prototype ? 'Stats' : proto.constructor.name, fields, dates, kinds, ownAfter: Object.keys(value) }
}

/** The outcome of `call(cb)`: a synchronous throw, or what the callback was given. */
function viaCallback(call) {
  return new Promise((resolve) => {
    try {
      call(function (...args) {
        const [err, value] = args
        resolve({ args: args.length, thisIsUndefined: this === undefined, ...(err ? describe(err) : describe(value)) })
      })
    } catch (err) {
      resolve({ threw: describeError(err) })
    }
  })
}

/** The outcome of a promise call, its value as `describe` tells it. */
const viaPromise = (call) => viaPromiseWith(call, describe)

const dir = fs.mkdtempSync(tmpPath('meta'))
const { path: file } = makeFile(12_345, 'meta-file')
const targets = {
  file,
  dir,
  'link to file': path.join(dir, 'to-file'),
  'link to dir': path.join(dir, 'to-dir'),
  'dangling link': path.join(dir, 'dangling'),
  'link loop': path.join(dir, 'loop-a'),
  missing: path.join(dir, 'missing'),
  'file as a dir': path.join(file, 'x'),
  'non-UTF-8 name (Buffer)': Buffer.concat([Buffer.from(dir + '/'), Buffer.from([0xff, 0xfe, 0x41])]),
  'a file URL': new URL(`file://${file}`),
}
fs.symlinkSync(file, targets['link to file'])
fs.symlinkSync(dir, targets['link to dir'])
fs.symlinkSync(path.join(dir, 'nowhere'), targets['dangling link'])
fs.symlinkSync(path.join(dir, 'loop-b'), targets['link loop'])
fs.symlinkSync(targets['link loop'], path.join(dir, 'loop-b'))
// Windows takes a path's bytes as UTF-8 (its names are UTF-16): there is no such name.
const byteNamed = 'non-UTF-8 name (Buffer)'
if (!windows) fs.writeFileSync(targets[byteNamed], 'odd name')
/** `test`, or skipped on Windows for the cases of the target named `what`. */
const testOf = (what) => (what === byteNamed ? posixOnly(noByteNames, test) : test)
// Times before 1970 (utimes takes them as Dates: negative numbers mean "now"), and one
// with a fraction of a millisecond, which a Date rounds.
const old = makeFile(10, 'old-file').path
fs.utimesSync(old, new Date(-1234568), new Date(-98765432))
targets['times before 1970'] = old
const fraction = makeFile(10, 'fraction-file').path
// 1969-12-31 23:59:59.9993 UTC: utimes takes a numeric string as seconds as it is.
fs.utimesSync(fraction, '-0.0007', '-0.0007')
targets['a time 0.7 ms before 1970'] = fraction
// A millisecond before 1970, which a Date made by rounding half up would put at 0.
const justBefore = makeFile(10, 'just-before-1970').path
fs.utimesSync(justBefore, new Date(-1), new Date(-40691))
targets['1 ms before 1970'] = justBefore

for (const kind of ['stat', 'lstat']) {
  for (const [what, target] of Object.entries(targets)) {
    for (const bigint of [false, true]) {
      const options = bigint ? { bigint: true } : undefined
      testOf(what)(`${kind} of ${what}${bigint ? ', bigint' : ''}: callback as node:fs`, async (t) => {
        const args = options ? [target, options] : [target]
        const theirs = await viaCallback((cb) => node[kind](...args, cb))
        const ours = await viaCallback((cb) => fairfs[kind](...args, cb))
        t.deepEqual(ours, theirs)
      })
      testOf(what)(`${kind} of ${what}${bigint ? ', bigint' : ''}: promise as node:fs`, async (t) => {
        const theirs = await viaPromise(() => node.promises[kind](target, options))
        const ours = await viaPromise(() => fairfs.promises[kind](target, options))
        t.deepEqual(ours, theirs)
      })
    }
  }
}

const { F_OK, R_OK, W_OK, X_OK } = fs.constants
for (const [what, target] of Object.entries({ file, dir, missing: targets.missing, 'dangling link': targets['dangling link'], 'file as a dir': targets['file as a dir'] })) {
  for (const mode of [undefined, F_OK, R_OK, W_OK | X_OK, X_OK]) {
    test(`access of ${what}, mode ${mode}: callback and promise as node:fs`, async (t) => {
      const args = mode === undefined ? [target] : [target, mode]
      t.deepEqual(await viaCallback((cb) => fairfs.access(...args, cb)), await viaCallback((cb) => node.access(...args, cb)))
      t.deepEqual(await viaPromise(() => fairfs.promises.access(...args)), await viaPromise(() => node.promises.access(...args)))
    })
  }
}

const encodings = { default: undefined, buffer: 'buffer', latin1: 'latin1', '{ encoding: hex }': { encoding: 'hex' }, 'a bad encoding': 'nope', 'options 123': 123 }
for (const [what, target] of Object.entries({ ...targets, 'a number': 123, 'a NUL byte': 'a\u0000b' })) {
  for (const [name, options] of Object.entries(encodings)) {
    testOf(what)(`promises.realpath of ${what}, encoding ${name}: as node:fs`, async (t) => {
      const describePath = async (call) => {
        try {
          const p = await call()
          return { value: Buffer.isBuffer(p) ? `buffer ${p.toString('hex')}` : p }
        } catch (e) {
          return describe(e)
        }
      }
      t.deepEqual(await describePath(() => fairfs.promises.realpath(target, options)), await describePath(() => node.promises.realpath(target, options)))
    })
  }
}

/** The outcome of a callback realpath `fn(...args, cb)`: a synchronous throw, or what the callback was given. */
function realpathOutcome(fn, ...args) {
  return new Promise((resolve) => {
    try {
      fn(...args, function (...given) {
        const [e, p] = given
        const outcome = e ? describe(e) : { value: Buffer.isBuffer(p) ? `buffer ${p.toString('hex')}` : p }
        resolve({ args: given.length, thisIsUndefined: this === undefined, ...outcome })
      })
    } catch (e) {
      resolve({ threw: describeError(e) })
    }
  })
}
const realpathCallOptions = { none: [], ...Object.fromEntries(Object.entries(encodings).map(([name, options]) => [name, [options]])) }
for (const [what, target] of Object.entries({ ...targets, 'a number': 123, 'a NUL byte': 'a\u0000b', 'a relative path': '.', root: '/', 'an http URL': new URL('http://example.com/') })) {
  testOf(what)(`callback realpath of ${what}: the walk install() may put in its place is node:fs's`, async (t) => {
    for (const [name, options] of Object.entries(realpathCallOptions)) {
      t.deepEqual(await realpathOutcome(realpathWalk, target, ...options), await realpathOutcome(node.realpath, target, ...options), name)
    }
  })
}
test('callback realpath without a callback, or with a bad one: the walk throws as node:fs', (t) => {
  for (const args of [[file], [file, {}], [file, 'utf8', 'not a function'], [file, { encoding: 'nope' }, () => {}]]) {
    t.deepEqual(describeError(t.throws(() => realpathWalk(...args))), describeError(t.throws(() => node.realpath(...args))))
  }
})

/**
 * What `fs.realpath('/proc/self/fd/0')` gives in a child process whose stdin is `stdin`
 * ('a pipe': `echo |`, or 'a socket': what child_process makes for stdio 'pipe'), with
 * fairfs installed by `-r fairfs/register` or not: node:fs's realpathSync names the pipe
 * `/proc/<pid>/fd/pipe:[N]`, and Node's test-fs-realpath-pipe.js asks the callback form
 * for the same.
 */
function realpathOfStdin(stdin, installed) {
  const code = `const fs = require('node:fs')
    fs.realpath('/proc/self/fd/0', (err, p) => {
      const sync = fs.realpathSync('/proc/self/fd/0')
      const kind = /^\\/proc\\/\\d+\\/fd\\/(pipe|socket):\\[\\d+\\]$/.exec(sync)?.[1]
      console.log(JSON.stringify({ error: err?.message, kind, sameAsSync: p === sync, installed: require(${JSON.stringify(path.join(root, 'index.js'))}).isInstalled() }))
    })`
  const nodeArgs = [...(installed ? ['-r', path.join(root, 'register.js')] : []), '-e', code]
  const [file, args] = stdin === 'a pipe' ? ['sh', ['-c', 'echo x | exec "$0" "$@"', process.execPath, ...nodeArgs]] : [process.execPath, nodeArgs]
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))))
  })
}
for (const stdin of ['a pipe', 'a socket']) {
  posixOnly(noProc, test)(`install(): callback fs.realpath of /proc/self/fd/0 with stdin ${stdin} is node:fs's (test-fs-realpath-pipe)`, async (t) => {
    const [theirs, ours] = await Promise.all([realpathOfStdin(stdin, false), realpathOfStdin(stdin, true)])
    t.like(theirs, { error: undefined, kind: stdin.slice(2), sameAsSync: true, installed: false })
    t.deepEqual(ours, { ...theirs, installed: isNative && !windows })
  })
}

/** A readdir result as a user can observe it: names, or Dirents with their fields and kinds. */
function describeEntries(entries) {
  const show = (v) => (Buffer.isBuffer(v) ? `buffer ${v.toString('hex')}` : v)
  return entries.map((e) =>
    typeof e === 'object' && !Buffer.isBuffer(e)
      ? { ctor: e.constructor.name, keys: Object.keys(e), name: show(e.name), parentPath: show(e.parentPath), path: show(e.path),
          kinds: ['isFile', 'isDirectory', 'isSymbolicLink', 'isFIFO'].map((k) => e[k]()) }
      : show(e))
}
// A directory of its own: reading a directory changes its atime, which the stat cases compare.
const rdir = fs.mkdtempSync(tmpPath('listed'))
fs.writeFileSync(path.join(rdir, 'b-file'), 'b')
fs.mkdirSync(path.join(rdir, 'a-dir'))
fs.symlinkSync(path.join(rdir, 'b-file'), path.join(rdir, 'c-link'))
fs.symlinkSync(path.join(rdir, 'nowhere'), path.join(rdir, 'd-dangling'))
// Windows has neither FIFOs nor names that are not UTF-8: its listing goes without them.
if (!windows) {
  execFileSync('mkfifo', [path.join(rdir, 'e-fifo')])
  fs.writeFileSync(Buffer.concat([Buffer.from(rdir + '/'), Buffer.from([0xff, 0x41])]), 'odd name')
}
const rdirLink = path.join(fs.mkdtempSync(tmpPath('listed-link')), 'to-listed')
fs.symlinkSync(rdir, rdirLink)
const readdirTargets = { dir: rdir, 'link to dir': rdirLink, 'dir as Buffer': Buffer.from(rdir), 'dir as URL': new URL(`file://${rdir}`),
  'empty dir': fs.mkdtempSync(tmpPath('empty')), missing: targets.missing, file, 'link loop': targets['link loop'], 'a number': 123 }
const readdirOptions = { default: undefined, buffer: 'buffer', latin1: { encoding: 'latin1' }, hex: 'hex', 'UTF-8': { encoding: 'UTF-8' }, withFileTypes: { withFileTypes: true },
  'withFileTypes, buffer': { withFileTypes: true, encoding: 'buffer' }, recursive: { recursive: true }, 'recursive: "yes"': { recursive: 'yes' },
  'a bad encoding': 'nope' }
for (const [what, target] of Object.entries(readdirTargets)) {
  for (const [name, options] of Object.entries(readdirOptions)) {
    // Node 22 and 24 themselves throw an uncaught TypeError for a recursive readdir of a Buffer path.
    if (Buffer.isBuffer(target) && name.startsWith('recursive')) continue
    test(`readdir of ${what}, options ${name}: callback and promise as node:fs`, async (t) => {
      const viaCb = (fn) => new Promise((resolve) => {
        try {
          fn(target, options, (e, entries) => resolve(e ? describe(e) : describeEntries(entries)))
        } catch (e) {
          resolve({ threw: describeError(e) })
        }
      })
      const viaP = async (fn) => {
        try {
          return describeEntries(await fn(target, options))
        } catch (e) {
          return describe(e)
        }
      }
      t.deepEqual(await viaCb(fairfs.readdir), await viaCb(node.readdir))
      t.deepEqual(await viaP(fairfs.promises.readdir), await viaP(node.promises.readdir))
    })
  }
}

const badCalls = {
  'a number as path': [123],
  'null as path': [null],
  'a path with a NUL byte': ['a\u0000b'],
  'an http URL': [new URL('http://example.com/')],
  'null options': [file, null],
}
for (const kind of ['stat', 'lstat']) {
  for (const [what, args] of Object.entries(badCalls)) {
    test(`${kind} with ${what}: the same error as node:fs`, async (t) => {
      t.deepEqual(await viaCallback((cb) => fairfs[kind](...args, cb)), await viaCallback((cb) => node[kind](...args, cb)))
      t.deepEqual(await viaPromise(() => fairfs.promises[kind](...args)), await viaPromise(() => node.promises[kind](...args)))
    })
  }
  test(`${kind} without a callback throws as node:fs`, (t) => {
    const theirs = t.throws(() => node[kind](file))
    const ours = t.throws(() => fairfs[kind](file))
    t.deepEqual(describeError(ours), describeError(theirs))
  })
}
for (const [what, mode] of Object.entries({ 'mode 8': 8, 'mode -1': -1, 'mode 1.5': 1.5, "mode 'r'": 'r', 'mode NaN': NaN })) {
  test(`access with ${what}: the same error as node:fs`, async (t) => {
    t.deepEqual(await viaCallback((cb) => fairfs.access(file, mode, cb)), await viaCallback((cb) => node.access(file, mode, cb)))
    t.deepEqual(await viaPromise(() => fairfs.promises.access(file, mode)), await viaPromise(() => node.promises.access(file, mode)))
  })
}
test('access without a callback throws as node:fs', (t) => {
  t.deepEqual(describeError(t.throws(() => fairfs.access(file, F_OK))), describeError(t.throws(() => node.access(file, F_OK))))
})

test('a rejected promise shows its async caller in the stack, as node:fs does', async (t) => {
  async function callerOfOurs() {
    await fairfs.promises.access(targets.missing)
  }
  async function callerOfNodes() {
    await node.promises.access(targets.missing)
  }
  const ours = await callerOfOurs().catch((e) => e)
  const theirs = await callerOfNodes().catch((e) => e)
  t.regex(theirs.stack, /at async callerOfNodes/)
  t.regex(ours.stack, /at async callerOfOurs/)
})

test.serial("a callback's error has node:fs's stack, the message alone, whatever Error.stackTraceLimit is, and leaves it as it was", async (t) => {
  // A name of its own: a later test needs targets.missing unknown to the dentry cache.
  const missing = `${targets.missing}-for-stacks`
  const viaCb = (fn) => new Promise((resolve) => fn((e) => resolve(e)))
  const limit = Error.stackTraceLimit
  t.teardown(() => Object.defineProperty(Error, 'stackTraceLimit', { value: limit, writable: true, configurable: true, enumerable: true }))
  for (const setting of [limit, 50, 0, 'frozen']) {
    if (setting === 'frozen') Object.defineProperty(Error, 'stackTraceLimit', { value: 7, writable: false, configurable: true })
    else Error.stackTraceLimit = setting
    const before = Error.stackTraceLimit
    for (const call of [(cb) => fairfs.stat(missing, cb), (cb) => fairfs.access(missing, cb), (cb) => fairfs.readdir(missing, cb)]) {
      const ours = await viaCb(call)
      t.is(ours.stack, `Error: ${ours.message}`, `stackTraceLimit ${setting}`)
      t.is(Error.stackTraceLimit, before, 'left as it was')
    }
    const theirs = await viaCb((cb) => node.stat(missing, cb))
    const ours = await viaCb((cb) => fairfs.stat(missing, cb))
    t.deepEqual({ ...describeError(ours), stack: ours.stack }, { ...describeError(theirs), stack: theirs.stack })
  }
})

posixOnly(noPoolMetadata, nativeOnly(test.serial))('a cached stat is answered on the calling thread where Linux can; fastPath: false, a miss and an error go to the pool', async (t) => {
  const [major, minor] = (await import('node:os')).release().split('.').map(Number)
  // qemu-user does not emulate openat2, and a portable build has no fast path.
  const fastPath = (major > 5 || (major === 5 && minor >= 12)) && !emulated && !portable
  fs.statSync(file)
  let before = fairfs.stats().completed
  await fairfs.promises.stat(file)
  await new Promise((resolve) => fairfs.lstat(file, resolve))
  t.is(fairfs.stats().completed - before, fastPath ? 0 : 2)
  fairfs.configure({ fastPath: false })
  t.teardown(() => fairfs.configure({ fastPath: true }))
  before = fairfs.stats().completed
  await fairfs.promises.stat(file)
  t.is(fairfs.stats().completed - before, 1, 'fastPath: false asks the pool')
  fairfs.configure({ fastPath: true })
  before = fairfs.stats().completed
  await fairfs.promises.stat(targets.missing).catch(() => {})
  t.is(fairfs.stats().completed - before, 1, 'an error comes from the pool')
})

test.serial('a loop of cached stats does not starve timers', async (t) => {
  let timerFired = false
  const timer = setTimeout(() => (timerFired = true), 20)
  const started = Date.now()
  let stats = 0
  while (!timerFired && Date.now() - started < 5000) {
    await fairfs.promises.stat(file)
    stats++
  }
  clearTimeout(timer)
  t.true(timerFired, `the timer fired after ${stats} stats`)
})

posixOnly(noPoolMetadata, nativeOnly(test.serial))('install() routes fs.stat, lstat, access, realpath and exists through fairfs; uninstall() restores them', async (t) => {
  const originals = [fs.stat, fs.lstat, fs.access, fs.promises.stat, fs.promises.lstat, fs.promises.access, fs.readdir, fs.promises.readdir]
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  t.is(fs.stat, fairfs.stat)
  t.is(fs.promises.access, fairfs.promises.access)
  // Through fairfs: the pool, or the fast paths on the calling thread.
  const handled = () => fairfs.stats().completed + fairfs.stats().fastPathHits
  const before = handled()
  const viaNode = {
    stat: await fs.promises.stat(file),
    realpath: await new Promise((resolve, reject) => fs.realpath(targets['link to file'], (e, p) => (e ? reject(e) : resolve(p)))),
    exists: await new Promise((resolve) => fs.exists(targets['link to dir'], resolve)),
    missing: await new Promise((resolve) => fs.exists(targets.missing, resolve)),
  }
  t.true(handled() >= before + 4, 'they went through fairfs')
  t.is(viaNode.stat.size, 12_345)
  t.is(viaNode.realpath, fs.realpathSync(file))
  t.true(viaNode.exists)
  t.false(viaNode.missing)
  t.not(fs.realpath.native, node.realpathNative)
  // Where node:fs's fs.realpath reads the stat array only its own stats fill (Node 20
  // and 22), install() replaces it; either way it gives node:fs's answers.
  const readsSharedStats = Function.prototype.toString.call(node.realpath).includes('statValues')
  t.is(fs.realpath, readsSharedStats ? realpathWalk : node.realpath)
  for (const target of [file, targets['link to file'], targets['link to dir'], targets.missing, targets['dangling link'], targets['link loop'], targets['file as a dir']]) {
    for (const options of [[], ['buffer'], [{ encoding: 'latin1' }]]) {
      t.deepEqual(await realpathOutcome(fs.realpath, target, ...options), await realpathOutcome(node.realpath, target, ...options), `fs.realpath ${target} ${options}`)
    }
  }
  for (const target of [file, targets['link to dir'], targets.missing, targets['link loop'], targets['non-UTF-8 name (Buffer)']]) {
    for (const options of [undefined, 'buffer', { encoding: 'latin1' }, 'nope']) {
      const call = (fn) => new Promise((resolve) => {
        try {
          fn(target, options, (e, p) => resolve(e ? describe(e) : { value: Buffer.isBuffer(p) ? p.toString('hex') : p }))
        } catch (e) {
          resolve({ threw: describeError(e) })
        }
      })
      t.deepEqual(await call(fs.realpath.native), await call(node.realpathNative), `${target} ${options}`)
    }
  }
  fairfs.uninstall()
  t.deepEqual([fs.stat, fs.lstat, fs.access, fs.promises.stat, fs.promises.lstat, fs.promises.access, fs.readdir, fs.promises.readdir], originals)
  t.is(fs.realpath, node.realpath)
  t.is(fs.realpath.native, node.realpathNative)
})

posixOnly(noPoolMetadata, nativeOnly(test.serial))("install(): a FileHandle's stat() is node:fs's, read on the pool; a closed handle fails as node:fs", async (t) => {
  const theirs = await fs.promises.open(file)
  const expected = [describe(await theirs.stat()), describe(await theirs.stat({ bigint: true }))]
  await theirs.close()
  const closedExpected = describe(await theirs.stat().catch((e) => e))
  fairfs.install()
  t.teardown(() => fairfs.uninstall())
  const handle = await fs.promises.open(file)
  const before = fairfs.stats().completed
  const got = [describe(await handle.stat()), describe(await handle.stat({ bigint: true }))]
  t.true(fairfs.stats().completed >= before + 2, 'both went through the pool')
  t.deepEqual(got, expected)
  await handle.close()
  t.deepEqual(describe(await handle.stat().catch((e) => e)), closedExpected)
})

const nodeBackendOnly = isNative ? (title, fn) => test.skip(`${title} [node backend]`, fn) : test
nodeBackendOnly('on the node backend they are node:fs\'s own', (t) => {
  t.is(fairfs.stat, fs.stat)
  t.is(fairfs.promises.access, fs.promises.access)
})
